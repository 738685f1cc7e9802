"""Every tensor the library makes names its device, so that no page fails on a GPU with a CPU tensor.

On a machine without a GPU a tensor made on the default device and one made on the model's device are the same
thing, so no run here can show the mistake. Two guards that need no GPU:

- a static one: every call of a tensor factory in the computing folders of the library passes ``device=``
  (``device="cpu"`` for what is meant to stay on the host: token ids padded before they go to the model, draws
  with a CPU generator, gudhi's and numpy's results);
- a dynamic one (``tests/device_trap.py``): the analyses and probes run on tiny models while any factory the
  library calls without a device raises, naming the line; it also covers helpers outside those folders.
"""

from __future__ import annotations

import ast

import pytest
import torch
from torch.utils._device import _device_constructors

from tests.device_trap import LIBRARY, DefaultDeviceError, DefaultDeviceTrap

FOLDERS = ("extraction", "probes", "metrics", "analyses", "training")
FACTORIES = {f.__name__ for f in _device_constructors()}


def _factory_calls_without_device(source: str) -> list[tuple[int, str]]:
    """``(line, factory)`` of every ``torch.<factory>(...)`` call without ``device=``; a factory that makes a module's
    parameter (``nn.Parameter(torch.ones(d))``) is left out: parameters follow ``module.to(device)``."""
    tree = ast.parse(source)
    parameters = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and getattr(node.func, "attr", getattr(node.func, "id", None)) == "Parameter" for arg in node.args}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or id(node) in parameters:
            continue
        owner = node.func.value
        named = any(k.arg == "device" for k in node.keywords)
        if isinstance(owner, ast.Name) and owner.id == "torch" and node.func.attr in FACTORIES and not named:
            found.append((node.lineno, f"torch.{node.func.attr}"))
    return found


def test_the_static_check_finds_a_factory_without_a_device():
    bad = ("import torch\nx = torch.zeros(3, dtype=torch.float64)\ny = torch.arange(4, device=x.device)\n"
           "w = torch.nn.Parameter(torch.ones(3))\nz = torch.tensor([1, 2])\n")
    assert _factory_calls_without_device(bad) == [(2, "torch.zeros"), (5, "torch.tensor")]


def test_every_factory_in_the_computing_folders_names_its_device():
    missing = [f"{path.relative_to(LIBRARY.parent)}:{line} {name}"
               for folder in FOLDERS for path in sorted((LIBRARY / folder).rglob("*.py"))
               for line, name in _factory_calls_without_device(path.read_text())]
    assert not missing, "tensor factories without a device (pass device=..., see tests/device_trap.py):\n" + \
        "\n".join(missing)


def test_the_trap_raises_on_a_library_factory_without_a_device_and_leaves_other_code_alone():
    from sinkframes.metrics import positions

    with DefaultDeviceTrap():
        torch.zeros(2)  # this test's own call: not the library's
        positions.uniform_received(4, causal=True, device=torch.device("cpu"))
    with DefaultDeviceTrap(), pytest.raises(DefaultDeviceError, match=r"metrics/positions.py:2"):
        _call_library_without_device()


def _call_library_without_device() -> None:
    """Run a library line that makes a tensor without a device (compiled as if it were in the library)."""
    code = compile("import torch\ntorch.full((2,), 1.0)\n", str(LIBRARY / "metrics" / "positions.py"), "exec")
    exec(code, {})  # noqa: S102 - a fixed snippet, to show the trap names the library file and line
