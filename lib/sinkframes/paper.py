"""What the paper reports, as data with its location, for side-by-side tables.

Values are quoted from arXiv 2508.02546 (section or appendix as given). ``definition`` says what
was measured, because several of the paper's quantities are computed differently from this
book's measures of the same name (see the official-code notes in each chapter).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Reported:
    family: str
    quantity: str
    value: str
    where: str
    definition: str


FRAME_BY_FAMILY: dict[str, str] = {
    "llama": "centralized", "mistral": "centralized", "gemma": "centralized",
    "qwen": "distributed", "phi": "distributed",
    "bert": "bidirectional", "xlm-roberta": "bidirectional",
}

SINK_CLAIMS: list[Reported] = [
    Reported("llama", "frame type", "centralized (one BOS sink)", "Sec. 3.1, App. E", "qualitative"),
    Reported("llama", "heads specialized on the BOS token", "100 %", "App. E", "string of the most-received token, official topology notebook"),
    Reported("llama", "sink concentration", "77-89 %, 96 % at layer 25", "App. E", "attention mass of heads 0-3 on percentile sinks (official KL notebook)"),
    Reported("llama", "reference tokens per sample", "1.0006 (centralized frames)", "App. C.2", "official rule: column mean of head-averaged attention > 0.1"),
    Reported("gemma", "frame type", "centralized", "Sec. 3.1, App. G", "qualitative"),
    Reported("gemma", "heads specialized on <bos>", "100 %", "App. G", "string of the most-received token"),
    Reported("gemma", "sink concentration", "73.59 % to 80.75 %, max 95.44 % at layer 21", "App. G", "heads 0-3 on percentile sinks"),
    Reported("mistral", "frame type", "centralized", "Sec. 3.1, App. G", "qualitative"),
    Reported("mistral", "sink concentration", "max 91.57 % at layer 21", "App. G", "heads 0-3 on percentile sinks"),
    Reported("qwen", "frame type", "distributed (several weaker anchors)", "Sec. 3.1, App. F", "qualitative"),
    Reported("qwen", "head specialization", "36.6-65.4 %", "App. F", "string of the most-received token"),
    Reported("qwen", "sink concentration", "84-92 % in layers 23-25", "App. F", "heads 0-3 on percentile sinks"),
    Reported("qwen", "reference tokens per sample", "1.23 (distributed frames)", "App. C.2", "official rule"),
    Reported("phi", "frame type", "distributed", "Sec. 3.1, App. I", "qualitative"),
    Reported("phi", "sink concentration", "35.23 % (layer 0) to 97.19 %", "App. I", "heads 0-3 on percentile sinks"),
    Reported("bert", "frame type", "bidirectional (beginning and end tokens)", "Sec. 3.1, App. H", "qualitative"),
    Reported("bert", "sink concentration", "32.07 %", "App. H", "heads 0-3 on percentile sinks"),
    Reported("bert", "reference tokens per sample", "1.58 (bidirectional frames)", "App. C.2", "official rule"),
    Reported("xlm-roberta", "frame type", "bidirectional", "Sec. 3.1, App. H", "qualitative"),
    Reported("xlm-roberta", "sink concentration", "28.19 %", "App. H", "heads 0-3 on percentile sinks"),
    Reported("pythia", "specialization on the token 'the'", "31.0 % to 42.2 %", "App. J", "string of the most-received token"),
]


def sink_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The paper's sink and frame claims, optionally for some families only."""
    rows = [c.__dict__ for c in SINK_CLAIMS if families is None or c.family in families]
    return pd.DataFrame(rows, columns=["family", "quantity", "value", "where", "definition"])


# ---------------------------------------------------------------------------------------------
# Sink geometry and value space (Sec. 3.3-3.4, Sec. 5.4, App. C.2)

VALUE_SPACE_CLAIMS: list[Reported] = [
    Reported("all", "sink key", "small key norm, high cosine to the queries", "Sec. 3.3",
             "qualitative; no official notebook computes key norms or query-key cosines"),
    Reported("all", "standard RoPE and the first position", "position 0 gets the identity rotation, so it becomes the centralized sink", "Sec. 3.4", "qualitative"),
    Reported("all", "attention entropy", "decreases with depth", "Sec. 5.4, App. C.2",
             "official attention_value: entropy of head-averaged rows, entries > 1.19e-5 renormalized"),
    Reported("llama", "transformation magnitude", "81.61-fold increase (centralized)", "Sec. 5.4, App. C.2",
             "official: last-layer minus first-layer mean |X^{l+1} - X^l| on hidden states (a difference; ratio x34.2)"),
    Reported("qwen", "transformation magnitude", "206.33-fold increase (distributed)", "Sec. 5.4, App. C.2",
             "same difference (ratio x14.8)"),
    Reported("xlm-roberta", "transformation magnitude", "4.08-fold increase (bidirectional)", "Sec. 5.4, App. C.2",
             "same difference (ratio x1.21)"),
    Reported("all", "geometric-semantic alignment", "becomes negative in deeper layers", "Sec. 5.4, App. C.2",
             "official: Pearson of head-averaged attention and hidden-state cosine over all pairs i != j"),
    Reported("llama", "reference tokens per sample", "1.0006 (centralized)", "App. C.2", "official reference_point rule"),
    Reported("qwen", "reference tokens per sample", "1.23 (distributed)", "App. C.2", "official reference_point rule"),
    Reported("bert", "reference tokens per sample", "1.58 (bidirectional)", "App. C.2", "official reference_point rule"),
]

#: mean reference tokens per sample by frame type (App. C.2)
REFERENCE_COUNTS: dict[str, float] = {"centralized": 1.0006, "distributed": 1.23, "bidirectional": 1.58}

#: first- and last-layer mean transformation magnitude of the official reports (spec section 10.4)
#: and the number the paper prints as "fold": (frame, model, first, last, printed fold)
MAGNITUDE_FOLDS: list[tuple[str, str, float, float, float]] = [
    ("centralized", "meta-llama/Llama-3.2-3B", 2.4574, 84.0645, 81.61),
    ("distributed", "Qwen/Qwen2.5-7B", 14.9950, 221.3231, 206.33),
    ("bidirectional", "FacebookAI/xlm-roberta-large", 19.7318, 23.8098, 4.08),
]


def value_space_claims() -> pd.DataFrame:
    """The paper's sink-geometry and value-space claims."""
    return pd.DataFrame([c.__dict__ for c in VALUE_SPACE_CLAIMS], columns=["family", "quantity", "value", "where", "definition"])


def reference_count_by_frame() -> dict[str, float]:
    return dict(REFERENCE_COUNTS)


def magnitude_folds() -> pd.DataFrame:
    """The paper's "fold" numbers beside the difference and the ratio of the official first/last values."""
    rows = [{"frame": f, "model (official report)": m, "first layer": a, "last layer": b, "paper's 'fold'": fold,
             "difference last - first": round(b - a, 4), "ratio last / first": round(b / a, 2)}
            for f, m, a, b, fold in MAGNITUDE_FOLDS]
    return pd.DataFrame(rows)
