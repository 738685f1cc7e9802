"""Seeded statistics shared by every chapter: bootstrap intervals and layer regions."""

from __future__ import annotations

import numpy as np

REGIONS = ("early", "middle", "late")


def layer_regions(n_layers: int) -> dict[str, list[int]]:
    """Thirds by layer index: early ``[0, L//3)``, middle ``[L//3, 2L//3)``, late ``[2L//3, L)``.

    The one definition of early/middle/late used everywhere in the library.
    """
    if n_layers < 1:
        raise ValueError("n_layers must be >= 1")
    a, b = n_layers // 3, (2 * n_layers) // 3
    return {"early": list(range(0, a)), "middle": list(range(a, b)), "late": list(range(b, n_layers))}


def region_of(layer: int, n_layers: int) -> str:
    for name, layers in layer_regions(n_layers).items():
        if layer in layers:
            return name
    raise ValueError(f"layer {layer} outside 0..{n_layers - 1}")


def bootstrap_ci(
    values: np.ndarray,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean of ``values`` (axis 0 = independent units, e.g. sentences) and a percentile bootstrap
    interval for it. NaNs are ignored. Returns ``(mean, low, high)``."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    if x.size == 1:
        return float(x[0]), float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    means = x[idx].mean(1)
    alpha = (1 - level) / 2
    return float(x.mean()), float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))
