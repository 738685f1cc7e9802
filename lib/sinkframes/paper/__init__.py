"""What the paper reports, once: its claims and printed values (``claims``) and what the official
notebooks printed (``official``)."""

from .claims import (
    CLAIM_COLUMNS,
    CONCENTRATION_DEFINITION,
    CONCENTRATION_RANGES,
    FISHER_DEFINITION,
    FISHER_SHAPES,
    FRAME_BY_FAMILY,
    INFORMATION_CLAIMS,
    KL_DEFINITION,
    KL_SHAPES,
    KL_SIGNS,
    MAGNITUDE_FOLDS,
    REFERENCE_COUNTS,
    SINK_CLAIMS,
    SPECTRAL_CLAIMS,
    TOPOLOGY_CLAIMS,
    VALUE_SPACE_CLAIMS,
    Reported,
    claims_table,
    information_claims,
    magnitude_folds,
    reference_count_by_frame,
    sink_claims,
    spectral_claims,
    topology_claims,
    value_space_claims,
)
from .official import RESULTS_SAMPLE_TOPOLOGY, RESULTS_SAMPLE_TOPOLOGY_COLUMNS, results_sample_topology

__all__ = [
    "CLAIM_COLUMNS", "CONCENTRATION_DEFINITION", "CONCENTRATION_RANGES", "FISHER_DEFINITION", "FISHER_SHAPES",
    "FRAME_BY_FAMILY", "INFORMATION_CLAIMS", "KL_DEFINITION", "KL_SHAPES", "KL_SIGNS", "MAGNITUDE_FOLDS",
    "REFERENCE_COUNTS", "RESULTS_SAMPLE_TOPOLOGY", "RESULTS_SAMPLE_TOPOLOGY_COLUMNS", "SINK_CLAIMS",
    "SPECTRAL_CLAIMS", "TOPOLOGY_CLAIMS", "VALUE_SPACE_CLAIMS", "Reported", "claims_table", "information_claims",
    "magnitude_folds", "reference_count_by_frame", "results_sample_topology", "sink_claims", "spectral_claims",
    "topology_claims", "value_space_claims",
]
