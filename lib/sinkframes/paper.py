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


# ----------------------------------------------------------------------------- spectral graphs (Sec. 4-5, App. E-J)

SPECTRAL_CLAIMS: list[Reported] = [
    Reported("llama", "algebraic connectivity peaks in middle layers", "1.01x-1.61x", "App. E, Table 10",
             "laplacian.ipynb: min(middle/early, middle/late) of layer-mean Fiedler values on trend lists, per threshold"),
    Reported("llama", "effective thresholds", "<= 0.05", "App. E, Table 10",
             "laplacian.ipynb: share of layers whose mean density sum(B)/n^2 lies in [0.05, 0.95]"),
    Reported("llama", "Fiedler-centralization correlation changes sign", "near t = 0.2", "App. E, Table 11",
             "across-layer (laplacian.ipynb) or across-sample (fiedler.ipynb) Pearson; ambiguous"),
    Reported("qwen", "Fiedler correlation changes sign", "near t = 0.05", "App. F, Table 17",
             "fiedler.ipynb ships 0.5 instead of 0.05, so not from its list as shipped"),
    Reported("mistral", "algebraic connectivity", "13.33", "App. G, Table 22", "laplacian.ipynb Fiedler value; scales with n (about n/2 at low t for a decoder)"),
    Reported("mistral", "r(connectivity, degree centralization)", "-0.9405", "App. G, Table 24", "across-layer Pearson of layer means"),
    Reported("mistral", "r(Fiedler, degree variance)", "0.9481", "App. G, Table 24", "across-layer Pearson of layer means"),
    Reported("gemma", "algebraic connectivity", "13.05 -> 9.95", "App. G, Table 22", "laplacian.ipynb Fiedler value, early -> late"),
    Reported("gemma", "star-likeness", "above 0.53", "App. G, Table 22", "laplacian.ipynb composite 0.3 basic + 0.7 Gini"),
    Reported("phi", "Fiedler correlation across thresholds", "-0.4518 at 0.001 -> +0.6009 at 0.1", "App. I", "Pearson; kind not stated"),
    Reported("bert", "algebraic connectivity", "46.69 -> 23.79 (U-shaped)", "App. H, Table 28", "laplacian.ipynb Fiedler value; about n at low t for an encoder"),
    Reported("bert", "star-likeness", "0.33-0.39", "App. H, Table 28", "laplacian.ipynb composite"),
    Reported("bert", "degree centralization", "0.1579", "App. H, Table 28", "laplacian.ipynb, in-degrees with self-loops"),
    Reported("xlm-roberta", "algebraic connectivity", "38.27 -> 31.25", "App. H, Table 28", "laplacian.ipynb Fiedler value"),
    Reported("xlm-roberta", "degree centralization", "0.1274", "App. H, Table 28", "laplacian.ipynb"),
]


def spectral_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The paper's threshold-graph claims, optionally for some families only."""
    rows = [c.__dict__ for c in SPECTRAL_CLAIMS if families is None or c.family in families]
    return pd.DataFrame(rows, columns=["family", "quantity", "value", "where", "definition"])
