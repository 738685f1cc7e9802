"""Report: provenance of every page and the markdown that states verdicts."""
