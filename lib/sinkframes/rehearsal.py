"""Smaller sentence counts for a rehearsal of a profile, without a parameter set of its own.

``SINKFRAMES_MAX_SENTENCES=N`` caps every page's sentence counts (``n_sentences``, ``n_output``,
``n_fisher``) at ``N`` for a build or a page run: the profile's other parameters (models, dtype, batch
size, data set) stay as the manifest gives them, the pages keep the profile's name, and their provenance
line says that the counts were capped. It exists to execute the ``paper`` and ``colab`` profiles end to
end in minutes (against the stand-in hub, ``sinkframes_build.standin_hub``); a build that shows numbers
leaves it unset.
"""

from __future__ import annotations

import os
from typing import Any

ENV = "SINKFRAMES_MAX_SENTENCES"
#: the page parameters that count sentences
COUNTS = ("n_sentences", "n_output", "n_fisher")


def sentence_cap() -> int | None:
    """The cap ``SINKFRAMES_MAX_SENTENCES`` sets (``None``: unset); a value that is not a positive whole
    number is an error naming the variable."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    try:
        cap = int(raw)
    except ValueError:
        cap = 0
    if cap < 1:
        raise ValueError(f"{ENV} must be a whole number of at least 1 (the most sentences a page may use), "
                         f"got {raw!r}; unset it to run the profile's own counts")
    return cap


def capped(params: dict[str, Any], cap: int | None = None) -> dict[str, Any]:
    """``params`` with every sentence count at most ``cap`` (default: :func:`sentence_cap`); counts of 0
    (a section turned off) stay 0."""
    cap = sentence_cap() if cap is None else cap
    if cap is None:
        return params
    return {k: (min(v, cap) if k in COUNTS and isinstance(v, int) and not isinstance(v, bool) else v)
            for k, v in params.items()}


def provenance_note() -> str:
    """The sentence the provenance line adds while the cap is set (empty otherwise)."""
    cap = sentence_cap()
    if cap is None:
        return ""
    return (f" Sentence counts capped at {cap} by `{ENV}` (a rehearsal of the profile's code paths: these numbers "
            "are not the profile's).")
