"""Errors raised while resolving or loading a model; each message says what to do."""


class ModelLoadError(RuntimeError):
    """A model reference that cannot be resolved or loaded; the message says what to do."""


class AttentionUnavailableError(RuntimeError):
    """The model returned no attention weights (e.g. an SDPA or flash implementation)."""


class UnsupportedArchitectureError(ValueError):
    """The model's attention modules are not known to the attention hook."""
