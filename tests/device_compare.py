"""Whether two runs of one analysis on two devices give the same numbers (round-off only) and the same verdicts.

The tolerances are per quantity: attention and everything read off it (shares, graph metrics at a threshold,
divergences, spectra) is float32 arithmetic whose order of summation differs between a CPU and a GPU kernel, so
values agree to a few units in the sixth significant digit; counts and labels must be equal unless a value sits on
a threshold within that round-off, which the comparison reports instead of hiding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

#: relative and absolute tolerance of float32 round-off between two devices, per analysis (the Fisher norms are
#: sums of squared gradients over millions of weights, whose order of summation differs more)
TOLERANCE: dict[str, tuple[float, float]] = {
    "information": (1e-3, 1e-6), "geometry_values": (1e-4, 1e-5), "positions": (1e-4, 1e-5),
}
#: the tolerance of every other analysis
DEFAULT_TOLERANCE = (1e-4, 1e-6)


def tolerance(analysis: str) -> tuple[float, float]:
    """``(rtol, atol)`` of ``analysis``'s CPU/CUDA comparison."""
    return TOLERANCE.get(analysis, DEFAULT_TOLERANCE)


def _numbers(result: Any) -> dict[str, np.ndarray]:
    """Every number of a result: its tables under both modes, its per-head and per-sentence arrays."""
    out: dict[str, np.ndarray] = {}
    for mode in ("faithful", "corrected"):
        for name, table in result.tables(mode).items():
            numeric = table.select_dtypes(include="number") if isinstance(table, pd.DataFrame) else pd.DataFrame()
            for col in numeric.columns:
                out[f"{mode}:{name}:{col}"] = numeric[col].to_numpy(dtype=float)
    for kind in ("heads", "samples"):
        for name, value in getattr(result, kind).items():
            arr = np.asarray(value)
            if arr.dtype.kind in "fiub":
                out[f"{kind}:{name}"] = arr.astype(float)
    return out


def differences(a: Any, b: Any, rtol: float, atol: float) -> list[str]:
    """The quantities of results ``a`` and ``b`` that differ beyond the tolerance (NaN equals NaN)."""
    na, nb = _numbers(a), _numbers(b)
    found = [f"{k}: only on one device" for k in sorted(set(na) ^ set(nb))]
    for key in sorted(set(na) & set(nb)):
        x, y = na[key], nb[key]
        if x.shape != y.shape:
            found.append(f"{key}: shapes {x.shape} and {y.shape}")
        elif not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            worst = np.nanmax(np.abs(x - y))
            found.append(f"{key}: largest difference {worst:.3g}")
    return found


def verdict_differences(a: Sequence[Any], b: Sequence[Any]) -> list[str]:
    """``claim model question: status -> status`` for every verdict that two runs decide differently."""
    from sinkframes.verdicts.evaluate import evaluate

    key = lambda v: (v.claim, v.model, v.question)  # noqa: E731
    sa, sb = {key(v): v.status for v in evaluate(a)}, {key(v): v.status for v in evaluate(b)}
    return [f"{' '.join(k)}: {sa.get(k)} -> {sb.get(k)}" for k in sorted(set(sa) | set(sb)) if sa.get(k) != sb.get(k)]
