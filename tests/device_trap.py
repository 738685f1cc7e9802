"""A guard against tensors made on the default device by the library, for machines without a GPU.

On a GPU a tensor the library makes without naming a device lands on the CPU and fails the first time it meets a
tensor of the model (``Expected all tensors to be on the same device``). On a CPU-only machine the two devices are
the same and nothing fails. :class:`DefaultDeviceTrap` makes the mistake visible here: while it is active, a tensor
factory (``torch.zeros``, ``torch.tensor``, ``torch.arange``, ...) called from the library's own code without a
``device`` raises :class:`DefaultDeviceError` naming the file and line. A tensor meant for the CPU names it
(``device="cpu"``: tokenized ids padded on the host, then moved to the model once); every other one is made on the
device of the tensors it meets (``device=x.device``).

Factories called from torch, transformers or other packages are left alone: they are not the library's to fix.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

import sinkframes

LIBRARY = Path(sinkframes.__file__).resolve().parent
_FACTORIES = _device_constructors()


class DefaultDeviceError(AssertionError):
    """A tensor factory in the library was called without a device."""


def _library_caller() -> str | None:
    """``file:line`` of the innermost frame of the library's code below the factory call, if it is the caller."""
    frame = sys._getframe(2)
    while frame is not None and Path(frame.f_code.co_filename).resolve().is_relative_to(Path(torch.__file__).parent):
        frame = frame.f_back  # torch's own wrappers
    if frame is None:
        return None
    path = Path(frame.f_code.co_filename).resolve()
    if not path.is_relative_to(LIBRARY):
        return None
    return f"{path.relative_to(LIBRARY.parent)}:{frame.f_lineno}"


class DefaultDeviceTrap(TorchFunctionMode):
    """Raise (or, with ``record``, collect) every factory call of the library's code that names no device."""

    def __init__(self, record: list[str] | None = None) -> None:
        super().__init__()
        self.record = record

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func in _FACTORIES and kwargs.get("device") is None:
            where = _library_caller()
            if where is not None:
                message = f"torch.{func.__name__} without a device at {where}"
                if self.record is None:
                    raise DefaultDeviceError(message)
                self.record.append(message)
        return func(*args, **kwargs)
