"""Models: resolve a reference, load it with eager attention, and describe it.

``load`` returns a ``LoadedModel`` (module, tokenizer, ``ModelRecord``); ``registry`` is the one
table of families, frame types and attention layouts; ``gguf`` turns the offline packages into
local folders; ``tiny`` builds seeded random-weight models of every supported architecture.
"""

from .errors import AttentionUnavailableError, ModelLoadError, UnsupportedArchitectureError
from .loading import (
    LoadedModel,
    ModelRecord,
    known_refs,
    load,
    load_masked_lm,
    position_encoding_of,
    resolve_device,
    source_fingerprint,
)
from .registry import ARCHITECTURES, ENCODER_TYPES, FAMILIES, OFFLINE_MODELS, PAPER_MODELS, ArchSpec, OfflineModel

__all__ = [
    "ARCHITECTURES",
    "ENCODER_TYPES",
    "FAMILIES",
    "OFFLINE_MODELS",
    "PAPER_MODELS",
    "ArchSpec",
    "AttentionUnavailableError",
    "LoadedModel",
    "ModelLoadError",
    "ModelRecord",
    "OfflineModel",
    "UnsupportedArchitectureError",
    "known_refs",
    "load",
    "load_masked_lm",
    "position_encoding_of",
    "resolve_device",
    "source_fingerprint",
]
