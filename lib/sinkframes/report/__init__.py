"""Report: provenance of every page (``provenance``) and the markdown that states each chapter's
verdicts (one module per page)."""

from .provenance import model_notes, provenance

__all__ = ["model_notes", "provenance"]
