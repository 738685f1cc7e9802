"""Types shared by every layer of the library: the faithful/corrected switch and the run options.

``Mode`` is the one switch between reproducing the official notebooks (``"faithful"``, bugs
included) and computing what the paper describes (``"corrected"``). ``RunOptions`` holds every
option of a forward pass once, so extraction, capture, probes and analyses take the same object
instead of repeating ten keyword arguments each.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

Mode = Literal["faithful", "corrected"]
MODES: tuple[Mode, ...] = ("faithful", "corrected")
_BY_NAME: dict[str, Mode] = {m: m for m in MODES}

BosPolicy = Literal["default", "force"]
BOS_POLICIES: tuple[BosPolicy, ...] = ("default", "force")
#: the fewest tokens a text may be cut to: a frame needs a first token, a last token and tokens between them
MIN_TOKENS = 4


def check_mode(mode: str) -> Mode:
    """``mode`` as a ``Mode``; a clear ``ValueError`` for anything else."""
    if mode not in _BY_NAME:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return _BY_NAME[mode]


@dataclass(frozen=True)
class RunOptions:
    """Every option of a forward pass over a text set.

    The fields that change a result (``max_length``, ``bos_policy``, ``truncation``, ``dtype``,
    ``revision``, ``quantization``; the device enters as its type) are part of every cache key;
    ``batch_size``, ``progress`` and ``use_cache`` change only how the work is done.
    """

    batch_size: int = 16
    max_length: int = 256
    bos_policy: BosPolicy = "default"
    truncation: bool = False
    dtype: str = "float32"
    device: str = "auto"
    revision: str | None = None
    quantization: str | None = None
    progress: bool = True
    use_cache: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {self.batch_size!r}")
        if not isinstance(self.max_length, int) or self.max_length < MIN_TOKENS:
            raise ValueError(f"max_length must be an integer >= {MIN_TOKENS}, got {self.max_length!r} (a frame needs "
                             "a first token, a last token and tokens between them to anchor)")
        if self.bos_policy not in BOS_POLICIES:
            raise ValueError(f"bos_policy must be one of {BOS_POLICIES}, got {self.bos_policy!r}")

    @classmethod
    def build(cls, opts: RunOptions | None = None, **overrides: Any) -> RunOptions:
        """``opts`` (or the defaults) with ``overrides`` applied; unknown names are an error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown run option(s) {unknown}; the run options are {sorted(known)}")
        return replace(opts or cls(), **overrides)

    def with_(self, **overrides: Any) -> RunOptions:
        """A copy with some options changed (same checks as :meth:`build`)."""
        return RunOptions.build(self, **overrides)

    def result_key(self) -> dict[str, Any]:
        """The options that change a result (device excluded: ``cache_key`` adds its type)."""
        d = asdict(self)
        for name in ("batch_size", "progress", "use_cache", "device"):
            d.pop(name)
        if d["truncation"]:
            d["truncation"] = "tokenizer"  # the tokenizer's own truncation (end token kept), not a plain cut
        return d
