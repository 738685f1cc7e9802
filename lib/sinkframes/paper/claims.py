"""Every claim of the paper, once, as data: where it is printed, what it says, how it is decided.

Values are those printed in arXiv 2508.02546 (section, appendix and table as given), checked against
the reference specification of the official code (``official_code_spec.md``, section 11, which maps
each of the paper's parts to the notebook that produced it). One :class:`Claim` per statement:

- ``subject`` is the family (``llama``, ``qwen``, ``gemma``, ``mistral``, ``phi``, ``pythia``, ``bert``,
  ``xlm-roberta``), the frame type (``centralized``, ``distributed``, ``bidirectional``), ``decoders``,
  ``encoders`` or ``all``. A model is tested against the claims of the family and frame type the paper
  assigns to its architecture (``models.registry.FAMILIES``), never against the frame type its own
  attention happens to show.
- ``measure`` names the quantity (declared at the end of its analysis module, ``analyses/<prefix>.py``;
  ``softmax.`` in ``softmax_geometry``, ``values.`` in ``geometry_values``) and ``rule``/``params`` the
  decision (``verdicts.rules``); ``why`` says why the threshold is what it is, ``null`` what structureless input
  it must beat. A new or changed rule is committed before the page that evaluates it is executed, and
  every page names the registry commit it was decided with. Where the book adds a tolerance to a printed
  value, ``bare`` holds the rule's parameters without it and ``tolerance`` says why it is what it is, so
  that a verdict that hangs on the tolerance says so. A claim without a rule says in ``untestable``
  why no profile of this book can test it.
- ``page`` is the book page that tests it.
- A claim that compares models (frame types, or the sizes of one family) holds in ``compares`` the models it
  compares, by role, and the per-model measure; its ``measure`` is then a comparison of
  ``verdicts.compare`` that turns the per-model estimates into one, its ``subject`` the group
  (:data:`GROUPS`), and it is decided once per page, on every model of the group the page ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

#: the paper's arXiv id, and the section under which claims of later work are kept
PAPER = "2508.02546"
LATER = "later accounts"

#: the paper's numbered parts, in reading order (then the accounts of later work)
SECTIONS: tuple[str, ...] = (
    "1", "3.1", "3.2", "3.3", "3.4", "4", "5.1", "5.2", "5.3", "5.4",
    "A", "B", "B.1", "C.1", "C.2", "E", "F", "G", "H", "I", "J", LATER,
)

FAMILIES = ("llama", "qwen", "gemma", "mistral", "phi", "pythia", "bert", "xlm-roberta")
FRAMES = ("centralized", "distributed", "bidirectional")
#: ``training``: a model's training checkpoints (Pythia's in the paper; App. B)
#: the controlled grids (chapter 9): the sink task's (both architectures, or one), and the natural-text language
#: model's (``controlled-text``: decoders on the Python documentation)
CONTROLLED = ("controlled", "controlled-decoder", "controlled-encoder", "controlled-text")
#: the groups a comparison claim is about (``Claim.compares``)
GROUPS = ("centralized vs distributed vs bidirectional", "pythia sizes")
SUBJECTS = (*FAMILIES, *FRAMES, "decoders", "encoders", "rotary", "training", *CONTROLLED, *GROUPS, "all")

FRAME_BY_FAMILY: dict[str, str] = {
    "llama": "centralized",
    "mistral": "centralized",
    "gemma": "centralized",
    "qwen": "distributed",
    "phi": "distributed",
    "bert": "bidirectional",
    "xlm-roberta": "bidirectional",
}

#: families whose models are encoders: the paper's two and the RoPE encoder this book adds (no paper family)
ENCODER_FAMILIES = ("bert", "xlm-roberta", "nomic-bert")
#: the families whose positions are learned absolute ones (every other family here has a rotary code)
ABSOLUTE_FAMILIES = ("bert", "xlm-roberta")

#: the paper's family appendices: page key -> appendix letter
APPENDIX_OF: dict[str, str] = {"llama": "E", "qwen": "F", "gemma_mistral": "G", "encoders": "H", "phi": "I",
                               "pythia": "J"}


@dataclass(frozen=True)
class Claim:
    """One statement of the paper and how this book decides it (see the module docstring)."""

    id: str
    section: str
    where: str  # table, figure or paragraph
    subject: str
    quantity: str
    printed: str  # the paper's value(s), as printed
    notebook: str  # the official notebook that produced it ("" if none)
    page: str = ""  # the book page (manifest id) that tests it
    measure: str = ""  # a measure name (see the module docstring for where it is declared)
    rule: str = ""  # verdicts.rules name
    params: Mapping[str, Any] = field(default_factory=dict)
    why: str = ""  # why the rule's threshold is what it is
    null: str = ""  # the structureless input the model must beat
    untestable: str = ""  # why no profile can test it (then no rule)
    definition: str = ""  # what the paper's number measures, where it differs from the name
    bare: Mapping[str, Any] = field(default_factory=dict)  # the rule's parameters without the book's tolerance
    tolerance: str = ""  # the tolerance added to the printed value, and why
    source: str = PAPER  # the arXiv id of the work that makes the claim (later accounts sit beside the paper's)
    #: a comparison across models: ``by`` ("frame": the paper's frame types in ``groups``; "size": the sizes of
    #: ``family``, smallest first), the per-model ``measure``, ``min_models`` and, for the size order of a
    #: training run, ``models_param`` (the page parameter that lists the runs)
    compares: Mapping[str, Any] = field(default_factory=dict)

    def applies_to(self, family: str, frame: str, causal: bool, rotary: bool = False) -> bool:
        """Whether a model of ``family`` (paper frame ``frame``; ``rotary``: its positions are a rotary code) is
        tested against this claim."""
        s = self.subject
        if self.compares:
            return False  # decided once for the group, not per model
        return (s == "all" or s in (family, frame) or s == "decoders" and causal or s == "encoders" and not causal
                or s == "rotary" and rotary)

    @property
    def testable(self) -> bool:
        return bool(self.rule) and not self.untestable


# ----------------------------------------------------------------------------- building blocks

_TOPO, _KL, _LAP, _FIED, _FISH, _RMT = "topology", "KL", "laplacian", "fiedler", "fisher", "rmt"
_AV, _RP = "attention_value", "reference_point"
KL_DEFINITION = "inter-head divergence before minus after removing percentile sinks, layers sampled (KL.ipynb)"
CONCENTRATION_DEFINITION = "attention mass of heads 0-3 on 90th-percentile sinks (KL.ipynb)"
FISHER_DEFINITION = "squared gradient norms of the LM loss per layer, pads in the loss (fisher.ipynb)"
FIEDLER_DEFINITION = "laplacian.ipynb Fiedler value of (B + B^T)/2 with self-loops; scales with sentence length"

#: tolerances: the paper prints no uncertainty for these values. A single printed value is met "within five
#: percentage points" because the models run here are other members of the family (other sizes, tuning,
#: quantization) than the paper's, and five points is the smallest difference the book interprets; a printed
#: range is widened only by half its last printed digit (the paper's own precision). Every verdict that hangs
#: on a tolerance says so.
PCT_TOL = 0.05
SHARE_ALL = 0.9  # "100 % of heads" read as at least 90 % of them
PCT_WHY = "+-5 percentage points: another member of the family than the paper's model"
THEORY = "a mathematical statement (true by derivation), not a measurement"
METHOD = "a statement of method, not a finding about models"


def _near(value: float, tol: float = PCT_TOL) -> dict[str, float]:
    return {"low": value - tol, "high": value + tol}


def _point(value: float) -> dict[str, float]:
    """The printed value alone, as a ``within`` range (the bare form of :func:`_near`)."""
    return {"low": value, "high": value}


def _pct(value: float) -> dict[str, Any]:
    """Claim fields for a printed share met within :data:`PCT_TOL`, with its bare form."""
    return {"params": _near(value), "bare": _point(value), "tolerance": PCT_WHY}


INF = float("inf")


U_NULL = "uniform attention of the same shapes"
DENSE_NULL = "a dense graph of the same sizes at every threshold"
RANDOM_KEY = "a second random key in place of the sink (its paired difference with the first random key)"
EQUAL_FISHER = "the same Fisher norm in every layer"

_C = Claim

CLAIMS: tuple[Claim, ...] = (
    # --------------------------------------------------------------------------- 1 introduction
    _C("1.bos_share", "1", "Introduction", "all", "share of attention on the beginning-of-sequence token", "30-40 %",
       "", page="reference_frames", measure="frames.first_token_share", rule="within",
       params={"low": 0.30, "high": 0.40},
       why=("the printed range, taken as it stands, on models whose position 0 holds a start token (an encoder's "
            "[CLS] or <s>, a decoder's BOS); a tokenizer that puts the first word there gives the claim no subject "
            "(not evaluated)"), null=U_NULL,
       definition="no official notebook computes it; measured as the mean received share of position 0"),
    _C("1.removal_hurts", "1", "Introduction", "all", "removing the sink harms the model", "argued, not measured", "",
       page="information_geometry", measure="information.output_sink_minus_random", rule="above",
       params={"threshold": 0.0},
       why="the sink's removal must change the outputs more than a random key's (paired difference > 0)",
       null=RANDOM_KEY, definition="no ablation of model outputs in the official code"),
    # --------------------------------------------------------------------------- 3.1 frame types
    _C("3.1.centralized", "3.1", "Sec. 3.1, Fig. 1", "centralized", "frame type", "centralized (one sink)", _TOPO,
       page="reference_frames", measure="frames.frame_type", rule="equals", params={"expected": "centralized"},
       why=("the frame instrument (metrics.frames, validated on planted frames): per layer and sentence, the sink "
            "positions are the keys whose head-mean received share exceeds uniform attention's by 0.1; a layer is "
            "centralized when one sink's excess is at least twice the next position's; the model's label is the kind "
            "of at least 60 % of its framed layers (none when under a third of its layers have a frame, mixed when "
            "no kind has 60 %), and decides only when at least 90 % of resamples of the sentences give it "
            "(inconclusive otherwise)"), null=U_NULL),
    _C("3.1.distributed", "3.1", "Sec. 3.1, Fig. 1", "distributed", "frame type", "distributed (several anchors)",
       _TOPO, page="reference_frames", measure="frames.frame_type", rule="equals",
       params={"expected": "distributed"},
       why="as for 3.1.centralized: a layer is distributed when it has several sink positions and none dominates",
       null=U_NULL),
    _C("3.1.bidirectional", "3.1", "Sec. 3.1, Fig. 1", "bidirectional", "frame type",
       "bidirectional (beginning and end)", _TOPO, page="reference_frames", measure="frames.frame_type",
       rule="equals", params={"expected": "bidirectional"},
       why=("as for 3.1.centralized: a layer is bidirectional when both ends are sink positions, and a model when "
            "both ends anchor its layers (the last end in at least a quarter of its framed layers) and end-anchored "
            "layers make 60 % of them: the frame that shifts between the ends across layers"), null=U_NULL),
    # --------------------------------------------------------------------------- 3.2 softmax geometry
    _C("3.2.near_vertex", "3.2", "Sec. 3.2", "all", "attention rows settle near a simplex vertex on a reference token",
       "qualitative", "", page="softmax_geometry", measure="softmax.near_vertex_on_first", rule="at_least",
       params={"share": 0.5},
       why="in at least half the layers most rows put a majority on one key, mostly position 0 (the smaller share)",
       null=U_NULL),
    _C("3.2.fisher_rao", "3.2", "Sec. 3.2", "all", "the Fisher-Rao metric makes vertex concentration cheap",
       "derivation", "", page="softmax_geometry", untestable=THEORY),
    # --------------------------------------------------------------------------- 3.3 emergence
    _C("3.3.small_key", "3.3", "Sec. 3.3", "centralized", "the sink's key has a small norm (standard RoPE)",
       "qualitative", "",
       page="sink_geometry_values", measure="values.key_norm_ratio", rule="below", params={"threshold": 1.0},
       why="position 0's key norm below the mean of the other keys' (ratio < 1)",
       null="a random key (ratio 1 by construction)"),
    _C("3.3.aligned_key", "3.3", "Sec. 3.3", "centralized",
       "the sink's key points along the queries (standard RoPE)",
       "high query-key cosine", "", page="sink_geometry_values", measure="values.sink_cosine_excess", rule="above",
       params={"threshold": 0.0}, why="queries' cosine with the sink key above their cosine with the other keys",
       null="a random key (excess 0 by construction)"),
    # --------------------------------------------------------------------------- 3.4 position encodings
    _C("3.4.rope_identity", "3.4", "Sec. 3.4", "centralized", "RoPE leaves position 0 unrotated",
       "the first token's identity rotation", "", untestable=THEORY),
    _C("3.4.encoding_decides", "3.4", "Sec. 3.4", "all", "the position encoding decides the frame type",
       "standard RoPE -> centralized, modified RoPE -> distributed, absolute -> bidirectional", "",
       page="position_interventions", measure="positions.frame_moves_as_predicted", rule="above",
       params={"threshold": 0.5},
       why=("changed at fixed weights, the encoding must move the frame (the frame instrument, metrics.frames) the way "
            "the paper's typology says: in a rotary model read centralized, at least one modified rotary code (another "
            "base, NTK-aware or linear scaling, partial rotation) that leaves the model working reads distributed; in "
            "an absolute model read bidirectional, removing the absolute positions (table averaged or zeroed) moves "
            "it to another frame; in the whole bootstrap interval. Offsets and shuffled ids are not a change of kind "
            "(they stay on the page as checks and as the placement experiment); a model whose own frame is not the "
            "one the paper ties to its encoding has no predicted direction and is not evaluated"),
       null=f"{U_NULL}, and the model's random-initialized twin, under the same interventions"),
    _C("3.4.scaled_rope_bias", "3.4", "Sec. 3.4", "centralized", "scaled RoPE reduces the first-token bias",
       "reduced first-token positional bias under scaled RoPE", "", page="position_interventions",
       measure="positions.scaled_rope_first_share_change", rule="every_below", params={"threshold": 0.0},
       why=("the first-token share (layer and head mean) falls under both modified-RoPE schemes (NTK-aware scaling "
            "and linear interpolation, at Qwen2.5's published factor 4), each paired by sentence"),
       null=f"{U_NULL}, and the random-initialized twin, under the same scaling"),
    _C("3.4.absolute_bidirectional", "3.4", "Sec. 3.4", "bidirectional",
       "absolute position embeddings support the bidirectional anchors",
       "absolute embeddings support bidirectional anchors", "", page="position_interventions",
       measure="positions.absolute_last_share_change", rule="every_below", params={"threshold": 0.0},
       why=("if the absolute positions carry the end anchor, taking them out (table zeroed, or every row replaced "
            "by the table's mean) lowers the last-token share, each paired by sentence"),
       null=f"{U_NULL}, and the random-initialized twin, with the same table edits"),
    _C("3.4.rope_origin", "3.4", "Sec. 3.3-3.4", "rotary", "the sink follows position 0 of the rotary code",
       "the first token's identity rotation makes it the sink", "", page="position_interventions",
       measure="positions.sink_on_position_id0", rule="above", params={"threshold": 0.5},
       why=("if the identity rotation makes the sink, then with the position ids shuffled (tokens and mask kept) "
            "the sink of most sink layers moves to the token that now carries id 0; decided on the shuffled pass "
            "itself (where the sink goes does not need the model to keep working), its function check stated "
            "beside it"),
       null=f"{U_NULL} (no sink), and the random-initialized twin"),
    # --------------------------------------------------------------------------- 4 methodology
    _C("4.thresholds", "4", "Sec. 4", "all", "graphs thresholded at seven values", "seven, from 0.001 to 0.2", _LAP,
       page="spectral_graphs", untestable=METHOD),
    _C("4.samples", "4", "Sec. 4", "all", "sentences analysed", "500 (50 for KL, 100 for RMT)", _TOPO,
       untestable=METHOD),
    # --------------------------------------------------------------------------- 5.1 centralized frames
    _C("5.1.star", "5.1", "Sec. 5.1", "centralized", "threshold graphs are star-like", "star-like", _LAP,
       page="spectral_graphs", measure="spectral.star_likeness", rule="above", params={"threshold": 0.53},
       why="App. G's printed bound for the centralized family", null=DENSE_NULL),
    _C("5.1.corr_negative", "5.1", "Sec. 5.1", "centralized", "connectivity-centralization correlation", "negative",
       _LAP, page="spectral_graphs", measure="spectral.r_fiedler_centralization_by_threshold", rule="every_below",
       params={"threshold": 0.0, "at": ["0.001", "0.005", "0.01", "0.02", "0.05", "0.1"]},
       why=("negative at every paper threshold below 0.2, where App. E puts the centralized family's sign flip; "
            "each threshold decided on its own interval (Bonferroni over the seven)"),
       null=DENSE_NULL),
    _C("5.1.fisher_early", "5.1", "Sec. 5.1", "centralized", "Fisher information in the early third",
       "about 60 %", _FISH, page="information_geometry", measure="information.fisher_early_share", rule="within",
       params={"low": 0.5, "high": 0.7}, why="'about 60 %' read as 50-70 %", null=EQUAL_FISHER,
       definition=FISHER_DEFINITION + "; the share is derived by hand"),
    _C("5.1.kl_negative", "5.1", "Sec. 5.1; App. C.1", "centralized", "KL reduction in every region",
       "consistently negative", _KL,
       page="information_geometry", measure="information.kl_regions", rule="every_below", params={"threshold": 0.0},
       why="each region's (early, middle, late) mean reduction below 0, each on its own interval", null=U_NULL,
       definition=KL_DEFINITION),
    # --------------------------------------------------------------------------- 5.2 distributed frames
    _C("5.2.sign_flip", "5.2", "Sec. 5.2", "distributed", "Fiedler correlations change sign with the threshold",
       "sign flips", _LAP, page="spectral_graphs", measure="spectral.flip_threshold", rule="flip_within",
       params={"low": 0.001, "high": 0.2},
       why="a sign change anywhere on the paper's threshold grid, as Sec. 5.2 states it (App. F places it for Qwen)",
       null=DENSE_NULL),
    _C("5.2.kl_three_phase", "5.2", "Sec. 5.2", "distributed", "KL reduction profile",
       "three phases: positive early, negative middle and late", _KL, page="information_geometry",
       measure="information.kl_regions", rule="each_within",
       params={"ranges": {"early": [0.0, INF], "middle": [-INF, 0.0], "late": [-INF, 0.0]}},
       why="signs only: the early region's mean above 0, the middle and late regions' below 0, each on its own "
           "interval", null=U_NULL, definition=KL_DEFINITION),
    _C("5.2.fisher_peaks", "5.2", "Sec. 5.2", "distributed", "Fisher information by layer", "multiple peaks", _FISH,
       page="information_geometry",
       untestable="'multiple peaks' has no stated criterion (height, separation), so no rule can be fixed from it"),
    # --------------------------------------------------------------------------- 5.3 bidirectional frames
    _C("5.3.early_topology", "5.3", "Sec. 5.3; App. H", "bidirectional", "early-layer topological complexity",
       "high early-layer Betti1 (15.40 and 19.69, against 0.00 in decoders)", _TOPO, page="topology",
       measure="topology.betti1_early", rule="above", params={"threshold": 0.0},
       why="the early third's mean H1 count above the decoders' 0.00", null=U_NULL),
    _C("5.3.connectivity_u", "5.3", "Sec. 5.3; App. H, Table 28", "bidirectional", "algebraic connectivity over depth",
       "U-shaped", _LAP, page="spectral_graphs", measure="spectral.lambda2_dip_ratio", rule="above",
       params={"threshold": 1.0},
       why=("min(early / middle, late / middle) above 1: a ratio per threshold, so that the lowest threshold's "
            "larger values do not decide; their geometric mean over the thresholds (a mean of log-ratios, so "
            "that 2 and 1/2 cancel), each threshold shown on its own"),
       null=DENSE_NULL),
    _C("5.3.kl_u", "5.3", "Sec. 5.3; App. H", "bidirectional", "KL reduction profile", "U-shaped", _KL,
       page="information_geometry", measure="information.kl_u_contrast", rule="above", params={"threshold": 0.0},
       why="min(early, late) minus middle region mean > 0", null=U_NULL, definition=KL_DEFINITION),
    _C("5.3.fisher_middle", "5.3", "Sec. 5.3", "bidirectional", "Fisher information peak", "middle layers", _FISH,
       page="information_geometry", measure="information.fisher_peak_region", rule="equals",
       params={"expected": "middle"}, why="the layer with the largest share lies in the middle third",
       null=EQUAL_FISHER, definition=FISHER_DEFINITION + "; masked-LM loss"),
    # --------------------------------------------------------------------------- 5.4 value space
    _C("5.4.entropy", "5.4", "Sec. 5.4", "all", "attention entropy with depth", "decreases", _AV,
       page="sink_geometry_values", measure="values.entropy_last_minus_first", rule="below", params={"threshold": 0.0},
       why="last-layer minus first-layer mean entropy < 0", null=U_NULL),
    _C("5.4.magnitude", "5.4", "Sec. 5.4", "all", "transformation magnitude with depth", "increases", _AV,
       page="sink_geometry_values", measure="values.magnitude_last_minus_first", rule="above",
       params={"threshold": 0.0}, why="last-layer minus first-layer mean |X^{l+1} - X^l| > 0",
       null="no change between layers"),
    _C("5.4.alignment", "5.4", "Sec. 5.4", "all", "geometric-semantic alignment in deep layers",
       "becomes negative", _AV, page="sink_geometry_values", measure="values.alignment_last", rule="below",
       params={"threshold": 0.0}, why="last-layer Pearson of attention and hidden-state cosine < 0", null=U_NULL),
    # --------------------------------------------------------------------------- A
    _C("A.jacobian", "A", "App. A", "all", "softmax Jacobian and Fisher metric on the simplex", "derivation", "",
       page="softmax_geometry", untestable=THEORY),
    _C("A.optimal_frames", "A", "App. A", "all", "reference frames as optimal solutions for stable coordinates",
       "argued", "", page="softmax_geometry",
       untestable="an optimality argument with no stated objective to measure; chapter 2 shows what a small sink "
                  "key buys on the simplex"),
    # --------------------------------------------------------------------------- B, B.1 (Pythia checkpoints)
    _C("B.early_emergence", "B", "App. B", "training", "reference frames emerge early in training",
       "in the first checkpoints", _RMT, page="emergence", measure="rmt.sink_formed_fraction", rule="below",
       params={"threshold": 0.25},
       why=("a first-token sink (some layer's head-mean first-token share with its lower 95 % bound above 0.5) has "
            "formed within the first quarter of the run's steps: 'early' read generously, because the runs this "
            "book can train or load are far shorter than Pythia's 143000 steps"),
       null="an untrained run (every checkpoint equal to step 0)",
       definition=("rmt.ipynb sorts checkpoints as strings, so its 'last' checkpoint is step8; the paper's own "
                   "comparison is step 0 against step 8")),
    # ------------------------------------------------- the controlled grid (trained here, on the sink task)
    _C("3.4.encoding_decides.trained", "3.4", "Sec. 3.4", "controlled",
       "the position encoding decides the frame type (models trained alike, one switch apart)",
       "standard RoPE -> centralized, modified RoPE -> distributed, absolute -> bidirectional", "",
       page="controlled_emergence", measure="controlled.label_changes", rule="every_above", params={"threshold": 0.5},
       why=("trained from the same initial weights on the same batches, softmax models that differ only in their "
            "position encoding must end with different frame labels: in every seed, at least one encoding gives "
            "another label than the architecture's standard one (RoPE in the decoder, a learned table in the "
            "encoder)"),
       null=("the label changes between seeds of one encoding (if the seed alone moves the label, a change across "
             "encodings says nothing), and the same grid at step 0 (random initialization)")),
    _C("3.4.scaled_rope_bias.trained", "3.4", "Sec. 3.4", "controlled-decoder",
       "scaled RoPE reduces the first-token bias (models trained alike)",
       "reduced first-token positional bias under scaled RoPE", "", page="controlled_emergence",
       measure="controlled.scaled_first_share_change", rule="every_below", params={"threshold": 0.0},
       why=("each modified-RoPE scheme (base 1e6 as Qwen2.5, NTK-aware x4, half and quarter rotation as Phi-2) ends "
            "with a lower layer-mean first-token share than standard RoPE, paired by seed, in every seed"),
       null="the same grid at step 0 (random initialization, the encodings already switched)"),
    _C("3.4.absolute_bidirectional.trained", "3.4", "Sec. 3.4", "controlled-encoder",
       "absolute position embeddings support the bidirectional anchors (models trained alike)",
       "absolute embeddings support bidirectional anchors", "", page="controlled_emergence",
       untestable=("not on the sink task: its inputs have a start token and no end token, so no encoder trained on "
                   "it can anchor the last position by a token it always finds there, and a bidirectional frame "
                   "cannot form by construction (whatever the position encoding); a task with an end token the "
                   "encoder can use would test it")),
    _C("B.early_emergence.trained", "B", "App. B", "controlled", "reference frames emerge early in training",
       "in the first checkpoints", "", page="controlled_emergence", measure="controlled.sink_lag", rule="every_below",
       params={"threshold": 0.5},
       why=("'early' read against the loss curve, since a toy run's length is arbitrary: in every softmax run that "
            "forms a sink (some layer's first-token share with its lower 95 % bound above 0.5, the rule of "
            "B.early_emergence) and learns the task (loss under half the zero-prediction loss), the sink forms no "
            "later than the loss drops: log2(sink step / loss step) below 0.5, so that a tie at the checkpoints' "
            "resolution counts as no later"),
       null="the same grid at step 0 (an untrained run forms no sink)"),
    # ------------------------------- the controlled grid on natural text (a small language model, chapter 9)
    _C("3.4.encoding_decides.text", "3.4", "Sec. 3.4", "controlled-text",
       "the position encoding decides the frame type (language models trained alike on natural text)",
       "standard RoPE -> centralized, modified RoPE -> distributed, absolute -> bidirectional", "",
       page="controlled_emergence", measure="controlled.label_changes", rule="every_above", params={"threshold": 0.5},
       why=("the rule of 3.4.encoding_decides.trained on the language-model grid (training.text_lm.GRID: one recipe, "
            "one data order, the runs of a seed from the same initial weights, stopped at the same step): in every "
            "seed at least one encoding ends with another frame label than standard RoPE, the labels read on the "
            "32 held-out windows of the run's probe by the frame instrument (metrics.frames); the grid's labels were "
            "logged while it trained, by the earlier rule, and its weights are not kept, so the claim is not "
            "evaluated until the runs are retrained"),
       null=("the label changes between the two seeds of one encoding, and the same grid at step 0 (random "
             "initialization)")),
    _C("3.4.scaled_rope_bias.text", "3.4", "Sec. 3.4", "controlled-text",
       "scaled RoPE reduces the first-token bias (language models trained alike on natural text)",
       "reduced first-token positional bias under scaled RoPE", "", page="controlled_emergence",
       measure="controlled.scaled_first_share_change", rule="every_below", params={"threshold": 0.0},
       why=("the rule of 3.4.scaled_rope_bias.trained on the language-model grid: each modified-RoPE scheme ends "
            "with a lower layer-mean first-token share than standard RoPE, paired by seed, in every seed"),
       null="the same grid at step 0 (random initialization, the encodings already switched)"),
    _C("3.4.sink_forms.text", "3.4", "Sec. 3.4 (whether a sink forms at all)", "controlled-text",
       "the position encoding decides whether a sink forms (language models trained alike on natural text)",
       "standard RoPE forms a first-token sink where no positions and a learned table do not", "",
       page="controlled_emergence", measure="formation.rotary_forms_more", rule="below", params={"threshold": 0.05},
       why=("Sec. 3.4 ties the sink to the rotary code; the natural-text grid formed a sink in 5 of its 10 rotary runs "
            "and none of its 4 non-rotary ones, which two seeds cannot tell from chance. Fixed before any new run "
            "(analyses.formation): five seeds each of standard RoPE, no positions and the learned table, trained "
            "alike; a run formed a sink when by step 8000 some layer's first-token share has its lower 95 % bound "
            "above 0.5; Fisher's exact test, one-sided, p < 0.05; decided once all 15 runs are in. Gu et al. "
            "(arXiv 2410.10781, Table 3) found a sink under every encoding at 60M parameters and 5B tokens"),
       null="none: Fisher's exact test is itself the test against an encoding that does not matter (equal odds)",
       definition="not printed by the paper: the book's question, on its own grid"),
    _C("B.early_emergence.text", "B", "App. B", "controlled-text", "reference frames emerge early in training",
       "in the first checkpoints", "", page="controlled_emergence", measure="controlled.sink_lag", rule="every_below",
       params={"threshold": 0.5},
       why=("the rule of B.early_emergence.trained on the language-model grid, with the held-out loss in place of "
            "the task loss: in every run that forms a sink (some layer's first-token share with its lower 95 % "
            "bound above 0.5) the sink forms no later than the loss drops, the loss having dropped at the first "
            "probe where it has made half of its fall from step 0 to the run's last probe; log2(sink step / loss "
            "step) below 0.5"),
       null="the same grid at step 0 (an untrained run forms no sink)"),
    _C("B.spectral_gap", "B.1", "App. B.1", "pythia sizes", "spectral-gap change across model scales",
       "non-monotonic across Pythia sizes", _RMT, page="emergence", measure="compare.rise_and_fall",
       compares={"by": "size", "family": "pythia", "measure": "rmt.gap_change", "min_models": 3,
                 "models_param": "checkpoint_models"},
       rule="above", params={"threshold": 0.0},
       why=("per Pythia size, the spectral gap's change from the first to the last checkpoint; across at least "
            "three sizes in order, non-monotonic when some step between neighbouring sizes rises and another "
            "falls, each with the two sizes' intervals apart (min(largest rise, largest fall) above 0); not "
            "supported when every step goes one way, intervals apart"),
       null=("each run untrained (no change), and the sizes in other orders (if three unrelated numbers are as "
             "non-monotonic, the size order says nothing)"),
       definition="for causal attention the 'eigenvalues' are the self-attention weights"),
    _C("B.1.phase_transition", "B.1", "App. B.1", "pythia", "participation-ratio change across sizes",
       "geometric phase transition between 6.9B and 12B", _RMT,
       untestable="needs Pythia's 6.9B and 12B checkpoints from the hub (too large for any profile of this book)"),
    _C("B.1.mp_distance", "B", "App. B", "training", "distance to the Marchenko-Pastur law",
       "deviations indicate non-random structure", _RMT,
       untestable="a method (deviation from the law read as structure) with no stated value to test; the emergence "
                  "page shows it per checkpoint",
       definition="top-10 eigenvalues only, infinite values dropped before averaging"),
    _C("B.1.uniform_with_scale", "B.1", "App. B.1", "pythia", "attention with model scale",
       "more uniform across tokens, with more pronounced sinks and more specialized layers", _RMT,
       untestable=("no measure is stated for 'more uniform', 'more pronounced sinks' or 'more specialized layers', "
                   "and the first two pull in opposite directions on any one measure of the attention rows; "
                   "J.stronger_reference and J.specialized_heads test the sink and head trends across sizes")),
    # --------------------------------------------------------------------------- C.1, C.2 statistics
    _C("C.1.frames_differ", "C.1", "App. C.1", "centralized vs distributed vs bidirectional",
       "frame types differ in topology (Welch tests)", "significant", _TOPO, page="topology",
       measure="compare.groups_differ",
       compares={"by": "frame", "groups": ["centralized", "distributed", "bidirectional"],
                 "measure": "topology.persistence_late_minus_early"},
       rule="every_above", params={"threshold": 0.0},
       why=("each pair of frame types differs in the change of H0 persistence with depth (late third minus early "
            "third, the topological change App. E, F and J print per family): the absolute difference above 0 "
            "with the pair's intervals apart, every model of one type against every model of the other"),
       null="each model's uniform attention and its layers in random order, and the frame labels permuted "
            "across the same models",
       definition="the official tests are Welch tests between layers of one model; the paper does not say which "
                  "topological statistic separates the frame types"),
    _C("C.1.kl_differs", "C.1", "App. C.1", "centralized vs distributed vs bidirectional",
       "frame types differ in KL reduction", "significant", _KL, page="information_geometry",
       measure="compare.groups_differ",
       compares={"by": "frame", "groups": ["centralized", "distributed", "bidirectional"],
                 "measure": "information.kl_regions"},
       rule="every_above", params={"threshold": 0.0},
       why=("each pair of frame types differs in the mean KL reduction over layers: the absolute difference above "
            "0 with the pair's intervals apart, every model of one type against every model of the other"),
       null="each model's uniform attention, and the frame labels permuted across the same models",
       definition=KL_DEFINITION),
    _C("C.2.refs_centralized", "C.2", "App. C.2", "centralized", "reference tokens per sample", "1.0006", _RP,
       page="reference_frames", measure="frames.reference_count", rule="within", params=_near(1.0006, 0.1),
       why="+-0.1 tokens: about half the gap between the centralized and distributed values printed (1.0006, 1.23)",
       null=U_NULL, definition="official rule: column mean of head-averaged attention > 0.1"),
    _C("C.2.refs_distributed", "C.2", "App. C.2", "distributed", "reference tokens per sample", "1.23", _RP,
       page="reference_frames", measure="frames.reference_count", rule="within", params=_near(1.23, 0.1),
       why="as C.2.refs_centralized", null=U_NULL, definition="official reference_point rule"),
    _C("C.2.refs_bidirectional", "C.2", "App. C.2", "bidirectional", "reference tokens per sample", "1.58", _RP,
       page="reference_frames", measure="frames.reference_count", rule="within", params=_near(1.58, 0.1),
       why="as C.2.refs_centralized", null=U_NULL, definition="official reference_point rule"),
    _C("C.2.magnitude_fold", "C.2", "App. C.2", "all", "transformation magnitude 'fold' increase",
       "81.61 (centralized), 206.33 (distributed), 4.08 (bidirectional)", _AV, page="sink_geometry_values",
       untestable=("the printed 'fold' is the difference of the official first- and last-layer values, not a "
                   "ratio; the direction is tested by 5.4.magnitude"),
       definition="last-layer minus first-layer mean |X^{l+1} - X^l|"),
    _C("C.2.distributed_alignment", "C.2", "App. C.2", "distributed", "layerwise geometric-semantic alignment",
       "from strongly negative toward near zero", _AV, page="sink_geometry_values",
       measure="values.alignment_last_minus_first", rule="above", params={"threshold": 0.0},
       why="direction only: the last layer's alignment above the first's", null="no change between layers"),
    _C("C.2.bidirectional_alignment", "C.2", "App. C.2", "bidirectional", "layerwise geometric-semantic alignment",
       "from negative to positive", _AV, page="sink_geometry_values", measure="values.alignment_first_last",
       rule="each_within", params={"ranges": {"first layer": [-INF, 0.0], "last layer": [0.0, INF]}},
       why="the first layer's alignment below 0 and the last layer's above 0, each on its own interval",
       null="no alignment in any layer"),
    # --------------------------------------------------------------------------- E Llama
    _C("E.betti0_stable", "E", "App. E", "llama", "Betti0 across layers", "stable", _TOPO, page="topology",
       measure="topology.betti0_range", rule="below", params={"threshold": 1.0},
       why="the official 'fragmentation' rule: a change of more than one component", null=U_NULL),
    _C("E.persistence_rises", "E", "App. E", "llama", "H0 persistence with depth", "rises toward later layers", _TOPO,
       page="topology", measure="topology.persistence_late_minus_early", rule="above", params={"threshold": 0.0},
       why="late-third minus early-third persistence > 0", null=U_NULL),
    _C("E.bos_heads", "E", "App. E", "llama", "heads specialized on the BOS token", "100 %", _TOPO, page="topology",
       measure="topology.first_token_heads", rule="at_least", params={"share": SHARE_ALL},
       why="'100 %' read as at least 90 % of heads", null=U_NULL),
    _C("E.betti1_zero", "E", "App. E", "llama", "Betti1", "0.00 at every layer", _TOPO, page="topology",
       measure="topology.betti1_max", rule="below", params={"threshold": 0.005}, why="the paper prints 0.00",
       null=U_NULL),
    _C("E.concentration", "E", "App. E, Table 12", "llama", "sink concentration across network depths", "77-89 %",
       _KL, page="information_geometry", measure="information.concentration_regions", rule="every_within",
       params={"low": 0.765, "high": 0.895}, bare={"low": 0.77, "high": 0.89},
       tolerance="half a printed percentage point, the paper's own precision",
       why="each region's (early, middle, late) mean concentration within the printed range, each on its own "
           "interval", null=U_NULL, definition=CONCENTRATION_DEFINITION),
    _C("E.concentration_max", "E", "App. E", "llama", "reference-point concentration at layer 25",
       "96+ % in layer 25, for three models", _KL, page="information_geometry",
       measure="information.concentration_at_llama_layer25", rule="at_least", params={"share": 0.96 - PCT_TOL},
       bare={"share": 0.96}, tolerance=PCT_WHY,
       why="the largest layer mean at or above 96 % among the layers at layer 25's relative depth (of the official "
           "Llama's 28 layers, +-0.1 of depth), not the largest over all layers", null=U_NULL,
       definition=CONCENTRATION_DEFINITION),
    _C("E.connectivity_peak", "E", "App. E, Table 10", "llama", "algebraic-connectivity peak in middle layers",
       "1.01x-1.61x", _LAP, page="spectral_graphs", measure="spectral.lambda2_peak_ratio", rule="within",
       params={"low": 1.005, "high": 1.615}, bare={"low": 1.01, "high": 1.61},
       tolerance="half the last printed digit, the paper's own precision",
       why="min(middle / early, middle / late) of the layer-mean algebraic connectivity, per threshold, "
           "geometric mean over the thresholds, within the printed range of ratios",
       null=DENSE_NULL, definition="min(middle/early, middle/late) of layer-mean Fiedler values, per threshold"),
    _C("E.effective_thresholds", "E", "App. E, Table 10", "llama", "effective thresholds", "<= 0.05", _LAP,
       page="spectral_graphs", measure="spectral.largest_effective_threshold", rule="below",
       params={"threshold": 0.05 + 1e-9}, why="the largest threshold at which most layers' density is in [0.05, 0.95]",
       null=DENSE_NULL),
    _C("E.sign_flip", "E", "App. E, Table 11", "llama", "Fiedler-centralization correlation changes sign",
       "near t = 0.2", _LAP, page="spectral_graphs", measure="spectral.flip_threshold", rule="flip_within",
       params={"low": 0.1, "high": 0.2}, why="near 0.2: between the paper's two largest thresholds, 0.1 and 0.2",
       null=DENSE_NULL),
    _C("E.kl_negative", "E", "App. E", "llama", "KL reduction by network region",
       "negative in every region except layer 0", _KL,
       page="information_geometry", measure="information.kl_regions_after_first", rule="every_below",
       params={"threshold": 0.0},
       why="each region's mean (the early region without layer 0, the middle, the late) below 0, each on its own "
           "interval", null=U_NULL, definition=KL_DEFINITION),
    _C("E.kl_values", "E", "App. E, Table 12", "llama", "KL reduction averages across regions except layer 0",
       "-0.07 to -0.13", _KL, page="information_geometry", measure="information.kl_regions_after_first",
       rule="every_within", params={"low": -0.135, "high": -0.065}, bare={"low": -0.13, "high": -0.07},
       tolerance="half the last printed digit, the paper's own precision",
       why="each region's mean within the printed range, each on its own interval", null=U_NULL,
       definition=KL_DEFINITION),
    # --------------------------------------------------------------------------- F Qwen
    _C("F.specialization", "F", "App. F, Table 15", "qwen", "head specialization on common words, not BOS",
       "36.6-65.4 %, unlike Llama's 100 % BOS", _TOPO, page="topology", measure="topology.word_over_first_heads",
       rule="above", params={"threshold": 0.0},
       why=("'rather than BOS': more heads specialize on the most common word than fix on the first token (the "
            "word's share of heads minus the first token's, with the first token's interval over sentences, above "
            "0); the printed 36.6-65.4 % itself is F.word_specialization's"),
       null=U_NULL),
    _C("F.word_specialization", "F", "App. F, Table 15", "qwen", "head specialization on one common word",
       "36.6-65.4 %", _TOPO, page="topology", measure="topology.common_word_heads", rule="within",
       params={"low": 0.3655, "high": 0.6545}, bare={"low": 0.366, "high": 0.654},
       tolerance="half the last printed digit, the paper's own precision",
       why=("the other half of the claim: the share of heads (official layers) on the most common specialized "
            "token that is not a first token, within the range printed across the Qwen models"),
       null=U_NULL),
    _C("F.persistence_falls", "F", "App. F", "qwen", "H0 persistence with depth", "decreases", _TOPO, page="topology",
       measure="topology.persistence_late_minus_early", rule="below", params={"threshold": 0.0},
       why="late-third minus early-third persistence < 0", null=U_NULL),
    _C("F.instruct_integration", "F", "App. F", "qwen", "component integration, instruct vs base", "-9.27 vs -8.19",
       _TOPO, untestable=("a Betti0 change the official code cannot produce for a decoder (Betti0 = min(n, 30) at "
                          "every layer); needs both 7B models")),
    _C("F.star_peak", "F", "App. F, Table 16", "qwen", "star-likeness peak in middle layers", "1.00-1.05x", _LAP,
       page="spectral_graphs", measure="spectral.star_peak_ratio", rule="within",
       params={"low": 0.995, "high": 1.055}, bare={"low": 1.00, "high": 1.05},
       tolerance="half the last printed digit, the paper's own precision",
       why="min(middle / early, middle / late) of the layer-mean star-likeness, per threshold, geometric mean "
           "over the thresholds, within the printed range of ratios", null=DENSE_NULL),
    _C("F.connectivity_peak", "F", "App. F", "qwen", "algebraic-connectivity peak at thresholds 0.1-0.2",
       "only at 0.1-0.2 (7B); 1.08-1.26x (3B)", _LAP, page="spectral_graphs",
       measure="spectral.lambda2_peak_ratio", rule="every_above", params={"threshold": 1.0, "at": ["0.1", "0.2"]},
       why="a middle-layer peak (ratio above 1) at both thresholds 0.1 and 0.2, each on its own interval; the "
           "ratios at the other thresholds are shown", null=DENSE_NULL),
    _C("F.centralization_peak", "F", "App. F", "qwen", "degree-centralization peak in middle layers",
       "peaks in middle layers", _LAP, page="spectral_graphs", measure="spectral.centralization_peak_ratio",
       rule="above", params={"threshold": 1.0},
       why="min(middle / early, middle / late) of the layer-mean centralization, per threshold, geometric mean "
           "over the thresholds, above 1", null=DENSE_NULL),
    _C("F.sign_flip", "F", "App. F, Table 17", "qwen", "Fiedler correlation changes sign", "near t = 0.05", _FIED,
       page="spectral_graphs", measure="spectral.flip_threshold", rule="flip_within",
       params={"low": 0.02, "high": 0.1}, why="near 0.05: between the neighbouring thresholds 0.02 and 0.1",
       null=DENSE_NULL,
       definition="fiedler.ipynb ships 0.5 for 0.05, so this is not from its list as shipped"),
    _C("F.kl_three_phase", "F", "App. F, Table 18", "qwen", "KL reduction by region",
       "early +0.078 to +0.109, middle -0.026 to -0.051, late -0.008 to -0.018", _KL, page="information_geometry",
       measure="information.kl_regions", rule="each_within",
       params={"ranges": {"early": [0.0775, 0.1095], "middle": [-0.0515, -0.0255], "late": [-0.0185, -0.0075]}},
       bare={"ranges": {"early": [0.078, 0.109], "middle": [-0.051, -0.026], "late": [-0.018, -0.008]}},
       tolerance="half the last printed digit, the paper's own precision",
       why="each region's mean within its printed range, each on its own interval", null=U_NULL,
       definition=KL_DEFINITION),
    _C("F.kl_most_negative", "F", "App. F, Table 18", "qwen", "most negative KL reduction", "layer 5", _KL,
       page="information_geometry", measure="information.kl_argmin_layer", rule="equals", params={"expected": 5},
       why="the printed layer", null=U_NULL, definition=KL_DEFINITION),
    _C("F.concentration", "F", "App. F, Table 18", "qwen", "maximum sink concentration (deep layers 23-25)",
       "84-92 %", _KL, page="information_geometry", measure="information.concentration_at_qwen_layers23_25",
       rule="within", params={"low": 0.84 - PCT_TOL, "high": 0.92 + PCT_TOL}, bare={"low": 0.84, "high": 0.92},
       tolerance=PCT_WHY,
       why="the largest layer mean within the printed range, among the layers at the relative depth of layers 23-25 "
           "of Qwen2.5-7B's 28 (+-0.1 of depth)", null=U_NULL,
       definition=CONCENTRATION_DEFINITION),
    _C("F.early_concentration", "F", "App. E", "qwen", "early-layer sink concentration", "39-48 %", _KL,
       page="information_geometry", measure="information.concentration_regions", rule="every_within",
       params={"low": 0.385, "high": 0.485, "at": ["early"]}, bare={"low": 0.39, "high": 0.48, "at": ["early"]},
       tolerance="half a printed percentage point, the paper's own precision",
       why="the early region's mean concentration within the printed range", null=U_NULL,
       definition=CONCENTRATION_DEFINITION),
    # --------------------------------------------------------------------------- G Gemma and Mistral
    _C("G.gemma_betti1_zero", "G", "App. G, Table 21", "gemma", "Betti1", "0.00 at every layer", _TOPO,
       page="topology", measure="topology.betti1_max", rule="below", params={"threshold": 0.005},
       why="the paper prints 0.00", null=U_NULL),
    _C("G.mistral_betti1_zero", "G", "App. G, Table 21", "mistral", "Betti1", "0.00 at every layer", _TOPO,
       page="topology", measure="topology.betti1_max", rule="below", params={"threshold": 0.005},
       why="the paper prints 0.00", null=U_NULL),
    _C("G.gemma_bos_heads", "G", "App. G, Table 21", "gemma", "heads specialized on <bos>", "100 %", _TOPO,
       page="topology", measure="topology.first_token_heads", rule="at_least", params={"share": SHARE_ALL},
       why="'100 %' read as at least 90 % of heads", null=U_NULL),
    _C("G.gemma_persistence", "G", "App. G, Table 21", "gemma", "H0 persistence, early -> late",
       "+0.3163 (0.2015 -> 0.5179)", _TOPO, page="topology", measure="topology.persistence_late_minus_early",
       rule="above", params={"threshold": 0.0},
       why="direction only: late third minus early third > 0 (the values depend on the filtration)", null=U_NULL),
    _C("G.mistral_persistence", "G", "App. G, Table 21", "mistral", "H0 persistence, early -> late", "+0.0796",
       _TOPO, page="topology", measure="topology.persistence_late_minus_early", rule="above",
       params={"threshold": 0.0}, why="as G.gemma_persistence", null=U_NULL),
    _C("G.gemma_betti0_stable", "G", "App. G", "gemma", "Betti0 from early to late layers", "stable", _TOPO,
       page="topology", measure="topology.betti0_range", rule="below", params={"threshold": 1.0},
       why="as E.betti0_stable", null=U_NULL),
    _C("G.mistral_betti0_stable", "G", "App. G", "mistral", "Betti0 from early to late layers", "stable", _TOPO,
       page="topology", measure="topology.betti0_range", rule="below", params={"threshold": 1.0},
       why="as E.betti0_stable", null=U_NULL),
    _C("G.mistral_bos_heads", "G", "App. G, Table 21", "mistral", "heads specialized on <s>", "100 %", _TOPO,
       page="topology", measure="topology.first_token_heads", rule="at_least", params={"share": SHARE_ALL},
       why="'100 %' read as at least 90 % of heads", null=U_NULL),
    _C("G.mistral_connectivity", "G", "App. G, Table 22", "mistral", "algebraic-connectivity peak in middle layers",
       "13.3343", _LAP,
       untestable="a Fiedler value that scales with sentence length (about n/2 for a decoder), not a model property",
       definition=FIEDLER_DEFINITION),
    _C("G.gemma_connectivity_falls", "G", "App. G, Table 22", "gemma", "algebraic connectivity, early -> late",
       "13.0545 -> 9.9455", _LAP, page="spectral_graphs", measure="spectral.lambda2_late_over_early", rule="below",
       params={"threshold": 1.0},
       why="direction only: late / early below 1, a ratio per threshold, geometric mean over the thresholds (the "
           "values scale with n)", null=DENSE_NULL, definition=FIEDLER_DEFINITION),
    _C("G.mistral_corr_centralization", "G", "App. G, Table 24", "mistral",
       "r(connectivity, degree centralization) across layers", "-0.9405", _LAP, page="spectral_graphs",
       measure="spectral.r_fiedler_centralization_by_threshold", rule="every_below", params={"threshold": 0.0},
       why=("sign only, at every paper threshold (the official table has one r per threshold and the paper does "
            "not say which it prints), each on its own Bonferroni-widened interval, never their mean"),
       null=DENSE_NULL),
    _C("G.mistral_corr_variance", "G", "App. G, Table 24", "mistral", "r(Fiedler, degree variance) across layers",
       "0.9481", _LAP, page="spectral_graphs", measure="spectral.r_fiedler_degree_variance_by_threshold",
       rule="every_above", params={"threshold": 0.0},
       why=("sign only, at every paper threshold (the official table has one r per threshold), each on its own "
            "Bonferroni-widened interval"),
       null=DENSE_NULL),
    _C("G.star", "G", "App. G, Table 24", "gemma", "composite star-likeness across layers", "above 0.53", _LAP,
       page="spectral_graphs", measure="spectral.star_likeness_layers", rule="every_above", params={"threshold": 0.53},
       why="every layer's mean (over the paper's thresholds) above the printed bound, each on its own interval",
       null=DENSE_NULL + "; uniform attention thresholded like the model's",
       definition="0.3 basic + 0.7 Gini of in-degrees (laplacian.ipynb)"),
    _C("G.mistral_star", "G", "App. G, Table 24", "mistral", "composite star-likeness across layers", "above 0.53",
       _LAP, page="spectral_graphs", measure="spectral.star_likeness_layers", rule="every_above",
       params={"threshold": 0.53}, why="as G.star",
       null=DENSE_NULL + "; uniform attention thresholded like the model's",
       definition="0.3 basic + 0.7 Gini of in-degrees (laplacian.ipynb)"),
    _C("G.gemma_kl_u", "G", "App. G, Table 23", "gemma", "KL reduction: first, middle and final layers",
       "negative through middle layers (-0.0590), positive in first and final layers", _KL,
       page="information_geometry", measure="information.kl_first_middle_last", rule="each_within",
       params={"ranges": {"first layer": [0.0, INF], "middle": [-INF, 0.0], "last layer": [0.0, INF]}},
       why="signs as printed: the first and the last layer above 0, the middle region's mean below 0, each on "
           "its own interval", null=U_NULL, definition=KL_DEFINITION),
    _C("G.mistral_kl_u", "G", "App. G, Table 23", "mistral", "KL reduction: first, middle and final layers",
       "negative through middle layers (-0.0557), positive in first and final layers", _KL,
       page="information_geometry", measure="information.kl_first_middle_last", rule="each_within",
       params={"ranges": {"first layer": [0.0, INF], "middle": [-INF, 0.0], "last layer": [0.0, INF]}},
       why="as G.gemma_kl_u", null=U_NULL, definition=KL_DEFINITION),
    _C("G.gemma_concentration", "G", "App. G, Table 23", "gemma", "sink concentration by region at t = 0.8",
       "73.59 % early, 80.28 % middle, 80.75 % late", _KL, page="information_geometry",
       measure="information.concentration_regions_p80", rule="each_within",
       params={"ranges": {k: [v - PCT_TOL, v + PCT_TOL] for k, v in
                          (("early", 0.7359), ("middle", 0.8028), ("late", 0.8075))}},
       bare={"ranges": {k: [v, v] for k, v in (("early", 0.7359), ("middle", 0.8028), ("late", 0.8075))}},
       tolerance=PCT_WHY, why="each region's mean (80th-percentile sinks) near its printed value", null=U_NULL,
       definition=CONCENTRATION_DEFINITION.replace("90th", "80th")),
    _C("G.mistral_concentration", "G", "App. G, Table 23", "mistral", "sink concentration by region at t = 0.8",
       "89.62 % early, 81.55 % middle, 84.90 % late", _KL, page="information_geometry",
       measure="information.concentration_regions_p80", rule="each_within",
       params={"ranges": {k: [v - PCT_TOL, v + PCT_TOL] for k, v in
                          (("early", 0.8962), ("middle", 0.8155), ("late", 0.8490))}},
       bare={"ranges": {k: [v, v] for k, v in (("early", 0.8962), ("middle", 0.8155), ("late", 0.8490))}},
       tolerance=PCT_WHY, why="as G.gemma_concentration", null=U_NULL,
       definition=CONCENTRATION_DEFINITION.replace("90th", "80th")),
    _C("G.gemma_concentration_max", "G", "App. G, Table 23", "gemma", "maximum sink concentration",
       "91.57 % at layer 21", _KL, page="information_geometry", measure="information.concentration_at_gemma_layer21",
       rule="within", **_pct(0.9157),
       why="the largest layer mean near the printed value among the layers at layer 21's relative depth (+-0.1), "
           "the paper's unnamed Gemma read as gemma-7b's 28 layers", null=U_NULL,
       definition=CONCENTRATION_DEFINITION),
    _C("G.mistral_concentration_max", "G", "App. G, Table 23", "mistral", "maximum sink concentration",
       "95.44 % at layer 21", _KL, page="information_geometry",
       measure="information.concentration_at_mistral_layer21", rule="within", **_pct(0.9544),
       why="the largest layer mean near the printed value among the layers at layer 21's relative depth of "
           "Mistral-7B's 32 (+-0.1)", null=U_NULL,
       definition=CONCENTRATION_DEFINITION),
    # --------------------------------------------------------------------------- H encoders
    _C("H.bert_betti1", "H", "App. H, Table 27", "bert", "Betti1 decrease with depth", "12.61 (from 15.40)", _TOPO,
       page="topology", measure="topology.betti1_late_minus_early", rule="below", params={"threshold": 0.0},
       why="direction only: late third minus early third < 0", null=U_NULL),
    _C("H.xlmr_betti1", "H", "App. H, Table 27", "xlm-roberta", "Betti1 decrease with depth",
       "16.58 (from 19.69; 22.68 -> 1.69)", _TOPO, page="topology", measure="topology.betti1_late_minus_early",
       rule="below",
       params={"threshold": 0.0}, why="as H.bert_betti1", null=U_NULL,
       definition="22.68 -> 1.69 matches Betti0 in the official Results_sample"),
    _C("H.end_tokens", "H", "App. H, Table 27", "bidirectional",
       "heads on the beginning token early and on the ending token in middle and late layers",
       "100 % beginning early, 100 % ending middle and late", _TOPO, page="topology",
       measure="topology.end_anchor_regions", rule="every_within", params={"low": SHARE_ALL, "high": 1.0},
       why="'100 %' read as at least 90 % of heads: the early layers' heads on the first token and the middle "
           "and late layers' heads on the last token, each share on its own interval",
       null=U_NULL),
    _C("H.star", "H", "App. H, Table 28", "bidirectional", "composite star-likeness", "0.33-0.39", _LAP,
       page="spectral_graphs", measure="spectral.star_likeness", rule="within", params={"low": 0.33, "high": 0.39},
       why="the printed range", null=DENSE_NULL),
    _C("H.bert_centralization", "H", "App. H, Table 28", "bert", "peak middle-layer degree centralization", "0.1579",
       _LAP, page="spectral_graphs", measure="spectral.centralization_middle_max", rule="within",
       params=_near(0.1579), bare=_point(0.1579), tolerance="+-0.05: another encoder than the paper's",
       why="the largest middle-layer mean (over the paper's thresholds) near the printed value", null=DENSE_NULL,
       definition="laplacian.ipynb, in-degrees with self-loops"),
    _C("H.xlmr_centralization", "H", "App. H, Table 28", "xlm-roberta", "peak middle-layer degree centralization",
       "0.1274", _LAP, page="spectral_graphs", measure="spectral.centralization_middle_max", rule="within",
       params=_near(0.1274), bare=_point(0.1274), tolerance="+-0.05: another encoder than the paper's",
       why="as H.bert_centralization", null=DENSE_NULL, definition="laplacian.ipynb, in-degrees with self-loops"),
    _C("H.bert_connectivity", "H", "App. H, Table 28", "bert", "algebraic connectivity, early -> middle",
       "46.69 -> 23.79", _LAP, page="spectral_graphs", measure="spectral.lambda2_middle_over_early", rule="below",
       params={"threshold": 1.0},
       why="direction only: middle / early below 1, a ratio per threshold, geometric mean over the thresholds (the "
           "values scale with n)", null=DENSE_NULL, definition=FIEDLER_DEFINITION),
    _C("H.xlmr_connectivity", "H", "App. H, Table 28", "xlm-roberta", "algebraic connectivity, early -> middle",
       "38.27 -> 31.25", _LAP, page="spectral_graphs", measure="spectral.lambda2_middle_over_early", rule="below",
       params={"threshold": 1.0}, why="as H.bert_connectivity", null=DENSE_NULL, definition=FIEDLER_DEFINITION),
    _C("H.bert_kl_first", "H", "App. H", "bert", "first layer's KL reduction", "+0.0392", _KL,
       page="information_geometry", measure="information.kl_first_layer", rule="above", params={"threshold": 0.0},
       why="sign of the first layer's reduction", null=U_NULL, definition=KL_DEFINITION),
    _C("H.xlmr_kl_first", "H", "App. H", "xlm-roberta", "first layer's KL reduction", "+0.0635", _KL,
       page="information_geometry", measure="information.kl_first_layer", rule="above", params={"threshold": 0.0},
       why="sign of the first layer's reduction", null=U_NULL, definition=KL_DEFINITION),
    _C("H.bert_kl_most_negative", "H", "App. H", "bert", "most negative KL reduction", "layer 5", _KL,
       page="information_geometry", measure="information.kl_argmin_layer", rule="equals", params={"expected": 5},
       why="the printed layer", null=U_NULL, definition=KL_DEFINITION),
    _C("H.xlmr_kl_most_negative", "H", "App. H", "xlm-roberta", "most negative KL reduction", "layer 9", _KL,
       page="information_geometry", measure="information.kl_argmin_layer", rule="equals", params={"expected": 9},
       why="the printed layer", null=U_NULL, definition=KL_DEFINITION),
    _C("H.bert_kl_percentile_drop", "H", "App. H", "bert", "early-layer KL reduction, t = 0.8 -> 0.95",
       "drops by 45.2 %", _KL, page="information_geometry", measure="information.kl_early_drop_p80_p95",
       rule="above", params={"threshold": 0.0},
       why="direction only: 1 - early(p95) / early(p80) above 0", null="none: a contrast of two sink rules",
       definition=KL_DEFINITION),
    _C("H.xlmr_kl_percentile_drop", "H", "App. H", "xlm-roberta", "early-layer KL reduction, t = 0.8 -> 0.95",
       "drops by 58.1 %", _KL, page="information_geometry", measure="information.kl_early_drop_p80_p95",
       rule="above", params={"threshold": 0.0}, why="as H.bert_kl_percentile_drop",
       null="none: a contrast of two sink rules", definition=KL_DEFINITION),
    _C("H.bert_concentration", "H", "App. H", "bert", "first-layer sink concentration", "32.07 %", _KL,
       page="information_geometry", measure="information.concentration_first_layer", rule="within",
       **_pct(0.3207), why="the first layer's mean concentration near the printed value", null=U_NULL,
       definition=CONCENTRATION_DEFINITION),
    _C("H.xlmr_concentration", "H", "App. H", "xlm-roberta", "first-layer sink concentration", "28.19 %", _KL,
       page="information_geometry", measure="information.concentration_first_layer", rule="within",
       **_pct(0.2819), why="as H.bert_concentration", null=U_NULL, definition=CONCENTRATION_DEFINITION),
    # --------------------------------------------------------------------------- I Phi
    _C("I.kl_early_late", "I", "App. I, Table 30", "phi", "KL reduction, layer 0 -> middle layers",
       "+0.1416 -> -0.1525 to -0.1995", _KL, page="information_geometry",
       measure="information.kl_first_middle_last", rule="each_within",
       params={"ranges": {"first layer": [0.0, INF], "middle": [-INF, 0.0]}},
       why="signs as printed: the first layer above 0 and the middle region's mean below 0, each on its own "
           "interval", null=U_NULL, definition=KL_DEFINITION),
    _C("I.concentration_first", "I", "App. I, Table 30", "phi", "sink concentration at layer 0", "35.23 %", _KL,
       page="information_geometry", measure="information.concentration_first_layer", rule="within",
       **_pct(0.3523), why="the first layer's mean near the printed value", null=U_NULL,
       definition=CONCENTRATION_DEFINITION),
    _C("I.concentration_max", "I", "App. I, Table 30", "phi", "maximum sink concentration", "97.19 %", _KL,
       page="information_geometry", measure="information.concentration_max", rule="within", **_pct(0.9719),
       why="the largest layer mean near the printed value", null=U_NULL, definition=CONCENTRATION_DEFINITION),
    _C("I.fisher_groups", "I", "App. I, Table 31", "phi", "Fisher share of attention vs MLP", "37.4 % vs 32.7 %",
       _FISH, page="information_geometry", measure="information.fisher_attention_share", rule="within",
       **_pct(0.374), why="the attention group's share near the printed value", null=EQUAL_FISHER,
       definition=FISHER_DEFINITION),
    _C("I.fisher_late", "I", "App. I, Table 31", "phi", "Fisher share of layers 29-31", "49.6 %", _FISH,
       page="information_geometry", measure="information.fisher_last3_share", rule="within", **_pct(0.496),
       why="the last three layers' share near the printed value", null=EQUAL_FISHER, definition=FISHER_DEFINITION),
    _C("I.corr_flip", "I", "App. I", "phi", "Fiedler correlation across thresholds",
       "-0.4518 at 0.001 -> +0.6009 at 0.1", _LAP, page="spectral_graphs", measure="spectral.flip_threshold",
       rule="flip_within", params={"low": 0.001, "high": 0.1},
       why="a sign change between 0.001 and 0.1 (the printed endpoints)", null=DENSE_NULL,
       definition="kind of correlation not stated"),
    _C("I.betti0", "I", "App. I", "phi", "Betti0 by layer", "0.0 (layer 0) to 25.99 (layer 31)", _TOPO,
       untestable="0.0 is what the official report prints for a layer without data, so the range is an artefact"),
    # --------------------------------------------------------------------------- J Pythia
    _C("J.persistence_change", "J", "App. J, Table 35", "pythia", "persistence change", "-0.1065 to -0.1671", _TOPO,
       page="topology", measure="topology.persistence_late_minus_early", rule="below", params={"threshold": 0.0},
       why="sign only", null=U_NULL),
    _C("J.betti0", "J", "App. J", "pythia", "Betti0", "about 25.7", _TOPO,
       untestable="min(tokens, 30) for any decoder under the official code: a sentence-length statistic"),
    _C("J.betti1_zero", "J", "App. J", "pythia", "Betti1", "0", _TOPO, page="topology", measure="topology.betti1_max",
       rule="below", params={"threshold": 0.005}, why="the paper prints 0", null=U_NULL),
    _C("J.attention_std", "J", "App. J", "pythia", "maximum attention standard deviation", "0.1342-0.1471", _TOPO,
       untestable=("a dispersion of the head-averaged matrix that shrinks with sentence length (about 1/n for a "
                   "one-hot row), so its printed range is a property of the paper's sentences, not of the models")),
    _C("J.the_specialization", "J", "App. J, Table 35", "pythia", "heads specialized on the token 'the'",
       "31.0 % to 42.2 %", _TOPO, page="topology", measure="topology.the_heads", rule="within",
       params={"low": 0.3095, "high": 0.4225}, bare={"low": 0.31, "high": 0.422},
       tolerance="half the last printed digit, the paper's own precision",
       why="the share of heads of the official layers whose official specialized token is 'the', within the range "
           "printed across the three sizes", null=U_NULL),
    _C("J.specialized_heads", "J", "App. J", "pythia sizes", "specialized heads across sizes", "1 -> 4", _TOPO,
       page="appendix_j_pythia", measure="compare.end_to_end",
       compares={"by": "size", "family": "pythia", "measure": "topology.specialized_heads", "min_models": 2},
       rule="above", params={"threshold": 0.0},
       why=("more specialized heads (the official report's rule: the same token at the argmax in at least 30 % of "
            "the sentences) in the largest Pythia size than in the smallest, as printed from 2.8B to 12B; a count "
            "of heads has no interval, so the counts decide as they are"),
       null="each model's uniform attention (what the head counts alone give), and the sizes in other orders"),
    _C("J.stronger_reference", "J", "App. J", "pythia sizes", "reference points with model size",
       "stronger in larger models", _TOPO, page="appendix_j_pythia", measure="compare.end_to_end",
       compares={"by": "size", "family": "pythia", "measure": "information.concentration_max", "min_models": 2},
       rule="above", params={"threshold": 0.0},
       why=("a stronger reference point read as a higher reference-point (sink) concentration, App. E's measure "
            "of it: the largest layer mean higher in the largest Pythia size than in the smallest, the two "
            "intervals apart"),
       null="each model's uniform attention, and the sizes in other orders",
       definition=CONCENTRATION_DEFINITION),
    # --------------------------------------------------------------------------- accounts published after the paper
    _C("later.first_physical", LATER, "arXiv 2509.21042", "rotary", "the sink stays on the first physical token",
       "the causal mask, not the rotary code, places the sink", "", page="position_interventions",
       measure="positions.sink_on_physical0", rule="above", params={"threshold": 0.5},
       why=("with the position ids shuffled, the sink of most sink layers stays on physical position 0; decided on "
            "the shuffled pass itself, its function check stated beside it"),
       null=f"{U_NULL} (no sink), and the random-initialized twin", source="2509.21042"),
    _C("later.norm_spike", LATER, "arXiv 2510.06477", "decoders",
       "the sink forms where the first token's residual norm spikes", "the same layers", "",
       page="position_interventions", measure="positions.onset_minus_norm_spike", rule="within",
       params={"low": -1.0, "high": 1.0},
       why=("the layer where the first-token share rises (halfway to its maximum) within one layer of the layer "
            "where the first token's relative residual norm does"),
       null="the norm profile with its layers shuffled", source="2510.06477"),
    _C("later.no_early_attractors", LATER, "arXiv 2606.02378", "decoders",
       "the first two layers have no first-token-attractor heads", "none", "", page="position_interventions",
       measure="positions.early_attractor_heads", rule="below", params={"threshold": 0.5},
       why="no head of layers 0-1 with a mean first-token share of 0.5 or more, in the whole bootstrap interval",
       null="the model's own layers in random order", source="2606.02378"),
    _C("later.noop_sinks", LATER, "arXiv 2606.08105", "all", "sink heads are no-ops: a short sink value",
       "the sink token's value vector is short relative to the others", "", page="position_interventions",
       measure="positions.sink_value_ratio", rule="below", params={"threshold": 1.0},
       why="the median, over sink heads, of the first token's value norm over the other tokens' median stays under 1",
       null="the random-initialized twin", source="2606.08105"),
)

CLAIMS_BY_ID: dict[str, Claim] = {c.id: c for c in CLAIMS}

_FRAMES3 = ("3.1.centralized", "3.1.distributed", "3.1.bidirectional")
_REFS3 = ("C.2.refs_centralized", "C.2.refs_distributed", "C.2.refs_bidirectional")

#: the paper's findings as the reference claim list gives them (``shared/reference/paper_claims.txt``), one
#: entry per bullet in its order: the bullet's first words and the registry claims that state it
BULLETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Beginning-of-sequence tokens receive", ("1.bos_share", "1.removal_hurts")),
    ("The paper proposes that attention sinks act as reference frames", _FRAMES3),
    ("The paper identifies centralized, distributed, and bidirectional", (*_FRAMES3, "A.optimal_frames")),
    ("Xiao et al. [2023] identified", ("1.bos_share",)),
    ("Attention sinks can occur beyond sequence beginnings", ("3.3.small_key", "3.3.aligned_key")),
    ("Prior studies associate positional-encoding choices", ("3.4.encoding_decides",)),
    ("Reference frames are modeled as distinguished points", _FRAMES3),
    ("Centralized frames use one dominant anchor", _FRAMES3),
    ("Softmax constrains attention to the probability simplex", ("3.2.near_vertex", "3.2.fisher_rao")),
    ("With standard RoPE, the first token", ("3.3.small_key", "3.3.aligned_key", "3.4.rope_identity",
                                             "3.4.rope_origin")),
    ("Position encodings guide distinct reference-frame geometries", ("3.4.encoding_decides", "5.1.star",
                                                                       "3.4.scaled_rope_bias",
                                                                       "3.4.absolute_bidirectional",
                                                                       "3.4.encoding_decides.trained",
                                                                       "3.4.scaled_rope_bias.trained",
                                                                       "3.4.absolute_bidirectional.trained",
                                                                       "3.4.encoding_decides.text",
                                                                       "3.4.scaled_rope_bias.text",
                                                                       "3.4.sink_forms.text")),
    ("Persistent homology tracks connected components", ("4.thresholds",)),
    ("Information-theoretic and value-space analyses", ("4.samples",)),
    ("The study analyzes decoder-only and encoder-only models", ("4.samples",)),
    ("Each reference-frame type exhibits characteristic", ("C.1.frames_differ",)),
    ("Centralized frames in decoder-only models", ("5.1.star", "5.1.corr_negative", "5.1.fisher_early",
                                                   "5.1.kl_negative")),
    ("Distributed frames in modified-position-encoding models", ("5.2.sign_flip", "5.2.kl_three_phase",
                                                                 "5.2.fisher_peaks")),
    ("Bidirectional frames in encoder models", ("5.3.early_topology", "5.3.connectivity_u", "5.3.kl_u",
                                                "5.3.fisher_middle")),
    ("Value-space analysis distinguishes", _REFS3),
    ("Topological and spectral analyses examine", ("B.early_emergence", "B.early_emergence.trained",
                                                   "B.early_emergence.text")),
    ("Softmax maps unbounded logits", ("A.jacobian",)),
    ("Because attention weights sum to one", ("A.jacobian", "3.2.near_vertex")),
    ("The paper argues that softmax geometry", ("A.optimal_frames",)),
    ("Random Matrix Theory tracks", ("B.early_emergence", "B.1.mp_distance")),
    ("Across Pythia model scales", ("B.spectral_gap", "B.1.phase_transition")),
    ("As models scale, attention generally", ("B.1.uniform_with_scale",)),
    ("Statistical analyses distinguish the frame types", ("C.1.frames_differ", "C.1.kl_differs")),
    ("Centralized frames maintain about one dominant reference token", _REFS3),
    ("Across architectures, attention entropy decreases", ("5.4.entropy", "5.4.magnitude", "5.4.alignment",
                                                           "C.2.magnitude_fold")),
    ("Layerwise correlations vary by frame type", ("C.2.distributed_alignment", "C.2.bidirectional_alignment")),
    ("Betti0 counts remain stable across layers", ("E.betti0_stable", "E.persistence_rises", "E.concentration_max")),
    ("All Llama variants show 100% specialization", ("E.bos_heads",)),
    ("Algebraic-connectivity peaks are", ("E.connectivity_peak",)),
    ("Meaningful graph structures emerge", ("E.effective_thresholds", "E.sign_flip")),
    ("Removing sinks reduces attention-distribution uniformity", ("E.kl_negative", "E.kl_values")),
    ("Sink concentration remains", ("E.concentration", "F.early_concentration")),
    ("Qwen models show moderate specialization", ("F.specialization", "F.word_specialization")),
    ("All Qwen models show decreasing persistence", ("F.persistence_falls", "F.instruct_integration")),
    ("Star-likeness peaks in middle layers", ("F.star_peak",)),
    ("Algebraic-connectivity peaks occur only", ("F.connectivity_peak",)),
    ("Fiedler-value correlations sign-flip around threshold 0.05", ("F.sign_flip",)),
    ("Degree centralization peaks in middle layers", ("F.centralization_peak",)),
    ("KL reduction follows a three-phase pattern", ("F.kl_three_phase",)),
    ("Maximum sink concentration occurs in deep layers", ("F.concentration", "F.kl_most_negative")),
    ("Persistence increases by", ("G.gemma_persistence", "G.mistral_persistence", "G.gemma_betti1_zero",
                                  "G.mistral_betti1_zero", "G.gemma_betti0_stable", "G.mistral_betti0_stable")),
    ("100% specialization on <s>", ("G.gemma_bos_heads", "G.mistral_bos_heads")),
    ("Mistral’s algebraic connectivity peaks", ("G.mistral_connectivity", "G.gemma_connectivity_falls")),
    ("Mistral’s algebraic connectivity and degree centralization", ("G.mistral_corr_centralization",
                                                                    "G.mistral_corr_variance", "G.star",
                                                                    "G.mistral_star")),
    ("Removing sinks yields negative KL reduction", ("G.gemma_kl_u", "G.mistral_kl_u")),
    ("Gemma’s sink concentration rises", ("G.gemma_concentration", "G.mistral_concentration")),
    ("95.44% for Mistral", ("G.gemma_concentration_max", "G.mistral_concentration_max")),
    ("Initial Betti1 values", ("5.3.early_topology", "H.bert_betti1", "H.xlmr_betti1", "E.betti1_zero")),
    ("Betti1 decreases by", ("H.bert_betti1", "H.xlmr_betti1")),
    ("Early layers show 100% specialization", ("H.end_tokens",)),
    ("BERT’s U-shaped algebraic connectivity", ("5.3.connectivity_u", "H.star", "H.bert_centralization",
                                               "H.xlmr_centralization")),
    ("KL reduction is positive in first layers", ("5.3.kl_u", "H.bert_kl_first", "H.xlmr_kl_first",
                                                  "H.bert_kl_most_negative", "H.xlmr_kl_most_negative")),
    ("Connectivity peaks after the initial layer", ("H.bert_connectivity", "H.xlmr_connectivity")),
    ("Early-layer KL reduction drops", ("H.bert_kl_percentile_drop", "H.xlmr_kl_percentile_drop",
                                        "H.bert_concentration", "H.xlmr_concentration")),
    ("KL reduction shifts from", ("I.kl_early_late", "I.concentration_first", "I.concentration_max")),
    ("Phi-2 allocates", ("I.fisher_groups", "I.fisher_late")),
    ("Fiedler-value and centralization correlations flip", ("I.corr_flip",)),
    ("Betti0 rises from", ("I.betti0",)),
    ("Persistence changes become more negative", ("J.persistence_change",)),
    ("Larger Pythia models show stronger reference points", ("J.stronger_reference",)),
    ("All three models maintain Betti0", ("J.betti0", "J.betti1_zero")),
    ("Maximum attention standard deviation", ("J.attention_std",)),
    ("Token specialization on", ("J.the_specialization", "J.specialized_heads")),
)


def claims_for(family: str, frame: str, causal: bool, page: str | None = None, rotary: bool = False) -> list[Claim]:
    """The claims a model of ``family`` (paper frame ``frame``; ``rotary``: rotary positions) is tested against,
    optionally on one page."""
    return [c for c in CLAIMS if c.applies_to(family, frame, causal, rotary) and (page is None or c.page == page)]


def is_rotary(record: dict[str, Any]) -> bool:
    """Whether a model record's positions are a rotary code (its position encoding reads ``RoPE...``)."""
    return str(record.get("position_encoding", "")).startswith("RoPE")


CLAIM_COLUMNS = ["id", "section", "where", "subject", "quantity", "printed", "notebook", "definition"]


def claims_table(page: str | None = None, subjects: list[str] | None = None) -> pd.DataFrame:
    """The paper's claims as a table, optionally those a page tests and those about some subjects
    (claims about ``all`` always stay)."""
    rows = [
        {k: getattr(c, k) for k in CLAIM_COLUMNS}
        for c in CLAIMS
        if (page is None or c.page == page) and (subjects is None or c.subject in subjects or c.subject == "all")
    ]
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def subjects_of(families: list[str]) -> list[str]:
    """The subjects whose claims concern models of these families: the families and their frame types."""
    frames = [FRAME_BY_FAMILY[f] for f in families if f in FRAME_BY_FAMILY]
    causal = any(f not in ENCODER_FAMILIES for f in families)
    encoders = any(f in ENCODER_FAMILIES for f in families)
    rotary = any(f not in ABSOLUTE_FAMILIES for f in families)
    return [*families, *frames, *(["decoders"] if causal else []), *(["encoders"] if encoders else []),
            *(["rotary"] if rotary else [])]


def _page_table(page: str, families: list[str] | None) -> pd.DataFrame:
    return claims_table(page, subjects_of(families) if families is not None else None)


def sink_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The claims chapter 1 (reference frames) tests."""
    return _page_table("reference_frames", families)


def spectral_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The claims chapter 4 (spectral graphs) tests."""
    return _page_table("spectral_graphs", families)


def topology_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The claims chapter 3 (topology) tests."""
    return _page_table("topology", families)


def information_claims(families: list[str] | None = None) -> pd.DataFrame:
    """The claims chapter 5 (information geometry) tests."""
    return _page_table("information_geometry", families)


def value_space_claims() -> pd.DataFrame:
    """The claims chapter 6 (sink geometry and value space) tests."""
    return claims_table("sink_geometry_values")


#: mean reference tokens per sample by frame type (App. C.2), from the registry
REFERENCE_COUNTS: dict[str, float] = {
    c.subject: float(c.printed) for c in CLAIMS if c.id.startswith("C.2.refs_")
}

#: first- and last-layer mean transformation magnitude of the official reports (spec section 10.4)
#: and the number the paper prints as "fold": (frame, model, first, last, printed fold)
MAGNITUDE_FOLDS: list[tuple[str, str, float, float, float]] = [
    ("centralized", "meta-llama/Llama-3.2-3B", 2.4574, 84.0645, 81.61),
    ("distributed", "Qwen/Qwen2.5-7B", 14.9950, 221.3231, 206.33),
    ("bidirectional", "FacebookAI/xlm-roberta-large", 19.7318, 23.8098, 4.08),
]


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
