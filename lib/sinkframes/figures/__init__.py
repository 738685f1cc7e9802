"""Figures: computed results -> matplotlib figures, one module per page, one style (``style``)."""
