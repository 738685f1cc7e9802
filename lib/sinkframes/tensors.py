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
