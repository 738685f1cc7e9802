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
# Information geometry (sections 5.1-5.3, appendices C, E-J): KL change on sink removal, sink
# concentration and Fisher information, as the paper reports them.

KL_DEFINITION = "official KL notebook: inter-head divergence before minus after removing percentile sinks, 20 rows"
CONCENTRATION_DEFINITION = "attention mass of heads 0-3 on percentile sinks (official KL notebook)"
FISHER_DEFINITION = "squared gradient norms of the LM loss per layer (official fisher notebook, pads in the loss)"

INFORMATION_CLAIMS: list[Reported] = [
    Reported("llama", "KL reduction profile", "negative throughout (centralized frame)", "Sec. 5.1", KL_DEFINITION),
    Reported("llama", "KL reduction values", "-0.07 to -0.13", "App. E", KL_DEFINITION),
    Reported("llama", "sink concentration", "77-89 %, 96 % at layer 25", "App. E", CONCENTRATION_DEFINITION),
    Reported("llama", "Fisher information in early layers", "about 60 %", "Sec. 5.1", FISHER_DEFINITION + "; share derived by hand"),
    Reported("gemma", "KL reduction profile", "U-shaped", "App. G", KL_DEFINITION),
    Reported("gemma", "sink concentration", "73.59 % to 80.75 %, max 95.44 % at layer 21", "App. G", CONCENTRATION_DEFINITION),
    Reported("mistral", "KL reduction profile", "U-shaped", "App. G", KL_DEFINITION),
    Reported("mistral", "sink concentration", "max 91.57 % at layer 21", "App. G", CONCENTRATION_DEFINITION),
    Reported("qwen", "KL reduction profile", "three phases: early +0.078 to +0.109, middle -0.026 to -0.051, late -0.008 to -0.018", "Sec. 5.2, App. F", KL_DEFINITION + "; regions derived by hand"),
    Reported("qwen", "most negative KL reduction", "layer 5", "App. F", KL_DEFINITION),
    Reported("qwen", "sink concentration", "84-92 % in layers 23-25", "App. F", CONCENTRATION_DEFINITION),
    Reported("qwen", "Fisher information by layer", "multiple peaks (distributed frame)", "Sec. 5.2", FISHER_DEFINITION),
    Reported("phi", "KL reduction values", "+0.1416 (early) to -0.2787 (late)", "App. I", KL_DEFINITION),
    Reported("phi", "sink concentration", "35.23 % (layer 0) to 97.19 %", "App. I", CONCENTRATION_DEFINITION),
    Reported("phi", "Fisher by parameter group", "37.4 % attention, 32.7 % MLP; layers 29-31 hold 49.6 %", "App. I", FISHER_DEFINITION),
    Reported("bert", "KL reduction", "+0.0392; U-shaped profile (bidirectional frame)", "Sec. 5.3, App. H", KL_DEFINITION),
    Reported("bert", "sink concentration", "32.07 %", "App. H", CONCENTRATION_DEFINITION),
    Reported("bert", "Fisher information by layer", "peaks in the middle layers (encoders)", "Sec. 5.3", FISHER_DEFINITION + "; masked-LM loss"),
    Reported("xlm-roberta", "KL reduction", "+0.0635; U-shaped profile", "Sec. 5.3, App. H", KL_DEFINITION),
    Reported("xlm-roberta", "sink concentration", "28.19 %", "App. H", CONCENTRATION_DEFINITION),
    Reported("all", "sink concentration (range over models)", "77-97 % for decoders", "Sec. 5", CONCENTRATION_DEFINITION),
    Reported("all", "effect of removing the sink on the model's outputs", "argued to hurt; not measured", "Sec. 1, 5", "no ablation of model outputs in the official code"),
]


def information_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The paper's KL, sink-concentration and Fisher claims, optionally for some families only
    (claims about all models are always included)."""
    rows = [c.__dict__ for c in INFORMATION_CLAIMS if families is None or c.family in families or c.family == "all"]
    return pd.DataFrame(rows, columns=["family", "quantity", "value", "where", "definition"])

#: the paper's sink-concentration values as numeric ranges (fractions) per family, for verdicts;
#: single values get +-0.10 around them
CONCENTRATION_RANGES: dict[str, tuple[float, float]] = {
    "llama": (0.77, 0.96), "gemma": (0.7359, 0.9544), "mistral": (0.7359, 0.9157), "qwen": (0.84, 0.92),
    "phi": (0.3523, 0.9719), "bert": (0.2207, 0.4207), "xlm-roberta": (0.1819, 0.3819),
}

#: the KL-reduction profile shape the paper reports per family
KL_SHAPES: dict[str, str] = {
    "llama": "negative", "gemma": "u_shaped", "mistral": "u_shaped", "qwen": "three_phase",
    "phi": "decreasing", "bert": "u_shaped", "xlm-roberta": "u_shaped",
}

#: where the paper puts the Fisher information per family: "early" (about 60 % in the early
#: layers), "middle" (peaks in the middle layers) or "multiple" (several peaks)
FISHER_SHAPES: dict[str, str] = {
    "llama": "early", "gemma": "early", "mistral": "early", "qwen": "multiple", "phi": "multiple",
    "bert": "middle", "xlm-roberta": "middle",
}

#: the sign of the mean KL reduction the paper reports per family (+1 positive, -1 negative)
KL_SIGNS: dict[str, int] = {"llama": -1, "phi": -1, "bert": 1, "xlm-roberta": 1}
