"""Shape helpers shared by extraction and metrics (pure tensor code, no model)."""

from __future__ import annotations

import torch


def expand_kv(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``[..., kv_head, token, dim]`` -> ``[..., head, token, dim]``: query head h reads KV head h // (H/KV).

    The grouped-query mapping of transformers' ``repeat_kv``; the identity when ``kv_head == n_heads``.
    """
    kv = x.shape[-3]
    if n_heads % kv:
        raise ValueError(f"{n_heads} query heads cannot share {kv} KV heads evenly")
    return x if kv == n_heads else x.repeat_interleave(n_heads // kv, dim=-3)


class NonFiniteInputError(ValueError):
    """A metric was given NaN or infinite values: it refuses rather than turn them into a number."""


def require_finite(x: torch.Tensor, what: str = "attention") -> None:
    """Raise :class:`NonFiniteInputError` when ``x`` (``[layer, ...]``) holds NaN or inf, naming the layers.

    Reductions such as ``argmax`` or a comparison with a threshold would silently turn NaN into a
    definite answer (an argmax of NaN is position 0), so every reducer checks its input first.
    """
    finite = torch.isfinite(x)
    if bool(finite.all()):
        return
    bad = sorted({int(i) for i in torch.nonzero(~finite.reshape(x.shape[0], -1).all(-1)).flatten()})
    raise NonFiniteInputError(f"{what} holds NaN or infinite values in layers {bad}; nothing was computed from it "
                              "(a float16 overflow is the usual cause: rerun with dtype='float32')")
