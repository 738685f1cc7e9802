"""Where the library keeps its on-disk cache, and the environment switches it reads."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "SINKFRAMES_CACHE"


def cache_root() -> Path:
    """Root folder of the cache: ``$SINKFRAMES_CACHE`` or ``~/.cache/sinkframes``.

    ``make book`` points it at ``.cache/sinkframes`` inside the repository (gitignored).
    """
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sinkframes"


def hub_offline() -> bool:
    """True when the Hugging Face hub must not be contacted (``HF_HUB_OFFLINE=1``)."""
    return os.environ.get("HF_HUB_OFFLINE", "0").strip().lower() in {"1", "true", "yes", "on"}


MODELS_ENV = "SINKFRAMES_MODELS"


def models_root() -> Path:
    """Folder of converted model copies (fp32 from GGUF): ``$SINKFRAMES_MODELS`` or ``<cache>/models``."""
    env = os.environ.get(MODELS_ENV)
    return Path(env).expanduser().resolve() if env else cache_root() / "models"
