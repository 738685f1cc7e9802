"""sinkframes: attention sinks as reference frames, measured on real models.

The library behind the executable book reproducing "What are you sinking? A geometric approach
on attention sink" (Ruscio, Nanni, Silvestri, arXiv 2508.02546). Data path: sentences -> model ->
extraction (one forward pass) -> on-disk cache -> metrics -> statistics -> figures and tables.
"""

from ._version import __version__

__all__ = ["__version__"]
