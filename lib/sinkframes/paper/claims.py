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


CLAIM_COLUMNS = ["family", "quantity", "value", "where", "definition"]


def claims_table(claims: list[Reported], families: list[str] | None = None) -> pd.DataFrame:
    """Reported values as a table, optionally for some families only (claims for "all" always stay)."""
    rows = [c.__dict__ for c in claims if families is None or c.family in families or c.family == "all"]
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


FRAME_BY_FAMILY: dict[str, str] = {
    "llama": "centralized",
    "mistral": "centralized",
    "gemma": "centralized",
    "qwen": "distributed",
    "phi": "distributed",
    "bert": "bidirectional",
    "xlm-roberta": "bidirectional",
}

SINK_CLAIMS: list[Reported] = [
    Reported("llama", "frame type", "centralized (one BOS sink)", "Sec. 3.1, App. E", "qualitative"),
    Reported(
        "llama",
        "heads specialized on the BOS token",
        "100 %",
        "App. E",
        "string of the most-received token, official topology notebook",
    ),
    Reported(
        "llama",
        "sink concentration",
        "77-89 %, 96 % at layer 25",
        "App. E",
        "attention mass of heads 0-3 on percentile sinks (official KL notebook)",
    ),
    Reported(
        "llama",
        "reference tokens per sample",
        "1.0006 (centralized frames)",
        "App. C.2",
        "official rule: column mean of head-averaged attention > 0.1",
    ),
    Reported("gemma", "frame type", "centralized", "Sec. 3.1, App. G", "qualitative"),
    Reported("gemma", "heads specialized on <bos>", "100 %", "App. G", "string of the most-received token"),
    Reported(
        "gemma",
        "sink concentration",
        "73.59 % to 80.75 %, max 95.44 % at layer 21",
        "App. G",
        "heads 0-3 on percentile sinks",
    ),
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
    Reported(
        "pythia", "specialization on the token 'the'", "31.0 % to 42.2 %", "App. J", "string of the most-received token"
    ),
]


def sink_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The paper's sink and frame claims, optionally for some families only."""
    return claims_table(SINK_CLAIMS, families)


# ----------------------------------------------------------------------------- spectral graphs (Sec. 4-5, App. E-J)

SPECTRAL_CLAIMS: list[Reported] = [
    Reported(
        "llama",
        "algebraic connectivity peaks in middle layers",
        "1.01x-1.61x",
        "App. E, Table 10",
        "laplacian.ipynb: min(middle/early, middle/late) of layer-mean Fiedler values on trend lists, per threshold",
    ),
    Reported(
        "llama",
        "effective thresholds",
        "<= 0.05",
        "App. E, Table 10",
        "laplacian.ipynb: share of layers whose mean density sum(B)/n^2 lies in [0.05, 0.95]",
    ),
    Reported(
        "llama",
        "Fiedler-centralization correlation changes sign",
        "near t = 0.2",
        "App. E, Table 11",
        "across-layer (laplacian.ipynb) or across-sample (fiedler.ipynb) Pearson; ambiguous",
    ),
    Reported(
        "qwen",
        "Fiedler correlation changes sign",
        "near t = 0.05",
        "App. F, Table 17",
        "fiedler.ipynb ships 0.5 instead of 0.05, so not from its list as shipped",
    ),
    Reported(
        "mistral",
        "algebraic connectivity",
        "13.33",
        "App. G, Table 22",
        "laplacian.ipynb Fiedler value; scales with n (about n/2 at low t for a decoder)",
    ),
    Reported(
        "mistral",
        "r(connectivity, degree centralization)",
        "-0.9405",
        "App. G, Table 24",
        "across-layer Pearson of layer means",
    ),
    Reported(
        "mistral", "r(Fiedler, degree variance)", "0.9481", "App. G, Table 24", "across-layer Pearson of layer means"
    ),
    Reported(
        "gemma",
        "algebraic connectivity",
        "13.05 -> 9.95",
        "App. G, Table 22",
        "laplacian.ipynb Fiedler value, early -> late",
    ),
    Reported(
        "gemma", "star-likeness", "above 0.53", "App. G, Table 22", "laplacian.ipynb composite 0.3 basic + 0.7 Gini"
    ),
    Reported(
        "phi",
        "Fiedler correlation across thresholds",
        "-0.4518 at 0.001 -> +0.6009 at 0.1",
        "App. I",
        "Pearson; kind not stated",
    ),
    Reported(
        "bert",
        "algebraic connectivity",
        "46.69 -> 23.79 (U-shaped)",
        "App. H, Table 28",
        "laplacian.ipynb Fiedler value; about n at low t for an encoder",
    ),
    Reported("bert", "star-likeness", "0.33-0.39", "App. H, Table 28", "laplacian.ipynb composite"),
    Reported(
        "bert", "degree centralization", "0.1579", "App. H, Table 28", "laplacian.ipynb, in-degrees with self-loops"
    ),
    Reported(
        "xlm-roberta", "algebraic connectivity", "38.27 -> 31.25", "App. H, Table 28", "laplacian.ipynb Fiedler value"
    ),
    Reported("xlm-roberta", "degree centralization", "0.1274", "App. H, Table 28", "laplacian.ipynb"),
]


def spectral_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The paper's threshold-graph claims, optionally for some families only."""
    return claims_table(SPECTRAL_CLAIMS, families)


# =============================================================================
# Topology (paper sections 4, 5.1-5.3, appendices E-J) and the official Results_sample/ runs
# =============================================================================

TOPOLOGY_CLAIMS: list[Reported] = [
    Reported(
        "llama",
        "Betti0 across layers",
        "stable",
        "App. E",
        "number of H0 diagram points of ripser on 1 - A (official topology notebook)",
    ),
    Reported(
        "llama",
        "persistence",
        "rises toward later layers",
        "App. E",
        "mean H0 bar length on 1 - A (= self-attention for decoders)",
    ),
    Reported(
        "llama",
        "heads specialized on the BOS token",
        "100 %",
        "App. E",
        "string of the column-mean argmax, consistency over samples",
    ),
    Reported("llama", "Betti1", "0.00 at every layer", "App. E, G, J", "number of H1 diagram points"),
    Reported("gemma", "Betti1", "0.00 at every layer", "App. G", "number of H1 diagram points"),
    Reported("gemma", "heads specialized on <bos>", "100 %", "App. G", "string of the column-mean argmax"),
    Reported("mistral", "Betti1", "0.00 at every layer", "App. G", "number of H1 diagram points"),
    Reported("qwen", "head specialization", "36.6-65.4 %", "App. F", "string of the column-mean argmax"),
    Reported("qwen", "persistence", "decreases with depth", "App. F", "mean H0 bar length"),
    Reported(
        "qwen",
        "component integration, instruct vs base",
        "-9.27 vs -8.19",
        "App. F",
        "Betti0 change (cannot arise from the official code for a decoder)",
    ),
    Reported("bert", "Betti1", "15.40, decreasing with depth", "App. H", "number of H1 diagram points"),
    Reported("bert", "specialization", "beginning and end tokens", "App. H", "string of the column-mean argmax"),
    Reported(
        "xlm-roberta",
        "Betti1",
        "19.69; falls from 22.68 to 1.69",
        "App. H",
        "number of H1 diagram points (22.68 -> 1.69 matches Betti0 in Results_sample)",
    ),
    Reported(
        "phi",
        "Betti0",
        "0.0 (layer 0) to 25.99 (layer 31)",
        "App. I",
        "0.0 is what the report prints for a layer with no data",
    ),
    Reported(
        "pythia", "Betti0", "about 25.7", "App. J", "number of H0 diagram points (= min(tokens, 30) for decoders)"
    ),
    Reported("pythia", "Betti1", "0", "App. J", "number of H1 diagram points"),
    Reported("pythia", "attention std", "0.1342-0.1471", "App. J", "std of the head-averaged matrix"),
    Reported("pythia", "persistence change", "-0.1065 to -0.1671", "App. J", "change of mean H0 bar length"),
    Reported(
        "pythia",
        "specialization on 'Ġthe'",
        "31.0 % to 42.2 %; specialized heads 1 -> 4",
        "App. J",
        "string of the column-mean argmax",
    ),
]


def topology_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The paper's topology claims, optionally for some families only."""
    return claims_table(TOPOLOGY_CLAIMS, families)


# ---------------------------------------------------------------------------------------------
# Sink geometry and value space (Sec. 3.3-3.4, Sec. 5.4, App. C.2)

VALUE_SPACE_CLAIMS: list[Reported] = [
    Reported(
        "all",
        "sink key",
        "small key norm, high cosine to the queries",
        "Sec. 3.3",
        "qualitative; no official notebook computes key norms or query-key cosines",
    ),
    Reported(
        "all",
        "standard RoPE and the first position",
        "position 0 gets the identity rotation, so it becomes the centralized sink",
        "Sec. 3.4",
        "qualitative",
    ),
    Reported(
        "all",
        "attention entropy",
        "decreases with depth",
        "Sec. 5.4, App. C.2",
        "official attention_value: entropy of head-averaged rows, entries > 1.19e-5 renormalized",
    ),
    Reported(
        "llama",
        "transformation magnitude",
        "81.61-fold increase (centralized)",
        "Sec. 5.4, App. C.2",
        "official: last-layer minus first-layer mean |X^{l+1} - X^l| on hidden states (a difference; ratio x34.2)",
    ),
    Reported(
        "qwen",
        "transformation magnitude",
        "206.33-fold increase (distributed)",
        "Sec. 5.4, App. C.2",
        "same difference (ratio x14.8)",
    ),
    Reported(
        "xlm-roberta",
        "transformation magnitude",
        "4.08-fold increase (bidirectional)",
        "Sec. 5.4, App. C.2",
        "same difference (ratio x1.21)",
    ),
    Reported(
        "all",
        "geometric-semantic alignment",
        "becomes negative in deeper layers",
        "Sec. 5.4, App. C.2",
        "official: Pearson of head-averaged attention and hidden-state cosine over all pairs i != j",
    ),
    Reported(
        "llama", "reference tokens per sample", "1.0006 (centralized)", "App. C.2", "official reference_point rule"
    ),
    Reported("qwen", "reference tokens per sample", "1.23 (distributed)", "App. C.2", "official reference_point rule"),
    Reported(
        "bert", "reference tokens per sample", "1.58 (bidirectional)", "App. C.2", "official reference_point rule"
    ),
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
    return claims_table(VALUE_SPACE_CLAIMS)


def reference_count_by_frame() -> dict[str, float]:
    return dict(REFERENCE_COUNTS)


def magnitude_folds() -> pd.DataFrame:
    """The paper's "fold" numbers beside the difference and the ratio of the official first/last values."""
    rows = [
        {
            "frame": f,
            "model (official report)": m,
            "first layer": a,
            "last layer": b,
            "paper's 'fold'": fold,
            "difference last - first": round(b - a, 4),
            "ratio last / first": round(b / a, 2),
        }
        for f, m, a, b, fold in MAGNITUDE_FOLDS
    ]
    return pd.DataFrame(rows)


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
    Reported(
        "llama",
        "Fisher information in early layers",
        "about 60 %",
        "Sec. 5.1",
        FISHER_DEFINITION + "; share derived by hand",
    ),
    Reported("gemma", "KL reduction profile", "U-shaped", "App. G", KL_DEFINITION),
    Reported(
        "gemma", "sink concentration", "73.59 % to 80.75 %, max 95.44 % at layer 21", "App. G", CONCENTRATION_DEFINITION
    ),
    Reported("mistral", "KL reduction profile", "U-shaped", "App. G", KL_DEFINITION),
    Reported("mistral", "sink concentration", "max 91.57 % at layer 21", "App. G", CONCENTRATION_DEFINITION),
    Reported(
        "qwen",
        "KL reduction profile",
        "three phases: early +0.078 to +0.109, middle -0.026 to -0.051, late -0.008 to -0.018",
        "Sec. 5.2, App. F",
        KL_DEFINITION + "; regions derived by hand",
    ),
    Reported("qwen", "most negative KL reduction", "layer 5", "App. F", KL_DEFINITION),
    Reported("qwen", "sink concentration", "84-92 % in layers 23-25", "App. F", CONCENTRATION_DEFINITION),
    Reported(
        "qwen", "Fisher information by layer", "multiple peaks (distributed frame)", "Sec. 5.2", FISHER_DEFINITION
    ),
    Reported("phi", "KL reduction values", "+0.1416 (early) to -0.2787 (late)", "App. I", KL_DEFINITION),
    Reported("phi", "sink concentration", "35.23 % (layer 0) to 97.19 %", "App. I", CONCENTRATION_DEFINITION),
    Reported(
        "phi",
        "Fisher by parameter group",
        "37.4 % attention, 32.7 % MLP; layers 29-31 hold 49.6 %",
        "App. I",
        FISHER_DEFINITION,
    ),
    Reported(
        "bert", "KL reduction", "+0.0392; U-shaped profile (bidirectional frame)", "Sec. 5.3, App. H", KL_DEFINITION
    ),
    Reported("bert", "sink concentration", "32.07 %", "App. H", CONCENTRATION_DEFINITION),
    Reported(
        "bert",
        "Fisher information by layer",
        "peaks in the middle layers (encoders)",
        "Sec. 5.3",
        FISHER_DEFINITION + "; masked-LM loss",
    ),
    Reported("xlm-roberta", "KL reduction", "+0.0635; U-shaped profile", "Sec. 5.3, App. H", KL_DEFINITION),
    Reported("xlm-roberta", "sink concentration", "28.19 %", "App. H", CONCENTRATION_DEFINITION),
    Reported(
        "all", "sink concentration (range over models)", "77-97 % for decoders", "Sec. 5", CONCENTRATION_DEFINITION
    ),
    Reported(
        "all",
        "effect of removing the sink on the model's outputs",
        "argued to hurt; not measured",
        "Sec. 1, 5",
        "no ablation of model outputs in the official code",
    ),
]


def information_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The paper's KL, sink-concentration and Fisher claims, optionally for some families only
    (claims about all models are always included)."""
    return claims_table(INFORMATION_CLAIMS, families)


#: the paper's sink-concentration values as numeric ranges (fractions) per family, for verdicts;
#: single values get +-0.10 around them
CONCENTRATION_RANGES: dict[str, tuple[float, float]] = {
    "llama": (0.77, 0.96),
    "gemma": (0.7359, 0.9544),
    "mistral": (0.7359, 0.9157),
    "qwen": (0.84, 0.92),
    "phi": (0.3523, 0.9719),
    "bert": (0.2207, 0.4207),
    "xlm-roberta": (0.1819, 0.3819),
}

#: the KL-reduction profile shape the paper reports per family
KL_SHAPES: dict[str, str] = {
    "llama": "negative",
    "gemma": "u_shaped",
    "mistral": "u_shaped",
    "qwen": "three_phase",
    "phi": "decreasing",
    "bert": "u_shaped",
    "xlm-roberta": "u_shaped",
}

#: where the paper puts the Fisher information per family: "early" (about 60 % in the early
#: layers), "middle" (peaks in the middle layers) or "multiple" (several peaks)
FISHER_SHAPES: dict[str, str] = {
    "llama": "early",
    "gemma": "early",
    "mistral": "early",
    "qwen": "multiple",
    "phi": "multiple",
    "bert": "middle",
    "xlm-roberta": "middle",
}

#: the sign of the mean KL reduction the paper reports per family (+1 positive, -1 negative)
KL_SIGNS: dict[str, int] = {"llama": -1, "phi": -1, "bert": 1, "xlm-roberta": 1}
