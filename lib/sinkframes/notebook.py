"""The notebook kernel this process runs in, if any (IPython is optional outside notebooks)."""

from __future__ import annotations

from typing import Any


def kernel_shell() -> Any | None:
    """The IPython shell when a Jupyter kernel runs this process (its ``user_ns`` is the notebook's
    namespace, and ``display`` reaches the page); ``None`` in a script, a test or a terminal IPython."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with the notebook tooling
        return None
    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None
