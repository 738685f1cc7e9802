"""Figures of a family appendix (``report.family``): the drawings its page shows beside the tables."""

from __future__ import annotations

from matplotlib.figure import Figure

from ..analyses import information
from ..report.family import FamilyResults
from .information import information_profiles


def kl_figure(fr: FamilyResults) -> Figure | None:
    """The KL-reduction profiles of chapter 5 for the family's models (None for a pipeline check)."""
    if fr.pipeline_check or not fr.results.get("information"):
        return None
    profiles = information.kl_profiles(fr.results["information"])
    return information_profiles(profiles, "kl_reduction", "KL reduction (nats)", band=("ci_low", "ci_high"))
