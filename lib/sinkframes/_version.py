"""Single source of the library version (it enters every cache key)."""

__version__ = "0.1.0"
