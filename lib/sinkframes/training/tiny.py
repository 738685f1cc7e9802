"""A tiny transformer whose position encoding, attention normalization and mask are switches.

Everything but the switch is the same module for every variant: pre-norm blocks (RMSNorm,
attention, GELU MLP), a token embedding and a linear read-out. Parameters are created in a fixed
order with the learned position table last, so that one seed gives every variant the same
initial weights except for the parts a variant adds (the table, the output gate).

Position encodings (:data:`POSITIONS`): standard RoPE (base 10000), RoPE at Qwen2.5's base of one
million, NTK-aware scaled RoPE (base 10000 stretched for a factor 4), partial rotary (half or a
quarter of each head's dimensions rotated, the rest left alone, as in Phi-2 and GPT-NeoX), none
(NoPE), and a learned absolute table added to the embeddings.

Attention normalizations (:data:`ATTENTIONS`): softmax; softmax with a per-head output gate (a
sigmoid of the query token's input scales each head's output, so a head can switch itself off);
sigmoid attention (each weight a sigmoid of its logit minus log(length), rows not normalized).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

#: name -> (rope base or None, fraction of each head's dimensions rotated, learned absolute table)
POSITIONS: dict[str, tuple[float | None, float, bool]] = {
    "rope": (10000.0, 1.0, False),
    "rope_1e6": (1.0e6, 1.0, False),
    "rope_ntk4": (10000.0 * 4.0 ** (16 / 14), 1.0, False),  # NTK-aware: base * factor^(d/(d-2)), head width 16
    "partial_0.5": (10000.0, 0.5, False),
    "partial_0.25": (10000.0, 0.25, False),
    "nope": (None, 0.0, False),
    "learned": (None, 0.0, True),
}
#: each position encoding as a figure or caption names it (the keys above are configuration names)
POSITION_NAMES: dict[str, str] = {
    "rope": "RoPE", "rope_1e6": "RoPE, base 10^6", "rope_ntk4": "RoPE, NTK x4", "partial_0.5": "RoPE on 1/2 of dims",
    "partial_0.25": "RoPE on 1/4 of dims", "nope": "no positions", "learned": "learned table",
}
ATTENTIONS = ("softmax", "gated", "sigmoid")


@dataclass(frozen=True)
class TinyConfig:
    """The architecture: the switches and the sizes every variant shares."""

    vocab_size: int
    content_dim: int
    position: str = "rope"
    attention: str = "softmax"
    causal: bool = True
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    d_mlp: int = 64
    max_len: int = 32

    def __post_init__(self) -> None:
        if self.position not in POSITIONS:
            raise ValueError(f"unknown position encoding {self.position!r}; choose from {sorted(POSITIONS)}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"unknown attention {self.attention!r}; choose from {ATTENTIONS}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not a multiple of n_heads {self.n_heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)


def rope_angles(cfg: TinyConfig, n: int, device: torch.device) -> torch.Tensor | None:
    """``[position, rotated_dim // 2]`` rotation angles of the positions ``0..n-1`` (None without RoPE)."""
    base, fraction, _ = POSITIONS[cfg.position]
    rotated = int(round(cfg.head_dim * fraction)) // 2 * 2
    if base is None or rotated == 0:
        return None
    inv_freq = base ** (-torch.arange(0, rotated, 2, dtype=torch.float64, device=device) / rotated)  # [rotated // 2]
    return (torch.arange(n, dtype=torch.float64, device=device)[:, None] * inv_freq[None]).float()


def apply_rope(x: torch.Tensor, angles: torch.Tensor | None) -> torch.Tensor:
    """Rotate the first ``2 * angles.shape[-1]`` dimensions of ``x [batch, head, position, head_dim]`` in
    pairs (half-split layout); the rest pass unchanged. Position 0's angle is 0: it is never rotated."""
    if angles is None:
        return x
    r = angles.shape[-1]
    x1, x2, rest = x[..., :r], x[..., r : 2 * r], x[..., 2 * r :]
    cos, sin = angles.cos(), angles.sin()  # [position, r]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos, rest], -1)


class RMSNorm(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Attention(nn.Module):
    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def weights(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """``[batch, head, query, key]`` attention weights (softmax rows sum to 1; sigmoid rows need not)."""
        n = q.shape[-2]
        logits = q @ k.transpose(-1, -2) / math.sqrt(self.cfg.head_dim)
        if self.cfg.attention == "sigmoid":
            w = torch.sigmoid(logits - math.log(self.cfg.max_len))
            return w * torch.tril(torch.ones(n, n, device=w.device)) if self.cfg.causal else w
        if self.cfg.causal:
            logits = logits.masked_fill(torch.ones(n, n, dtype=torch.bool, device=logits.device).triu(1), float("-inf"))
        return logits.softmax(-1)

    def forward(self, x: torch.Tensor, angles: torch.Tensor | None, gate: torch.Tensor | None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        b, n, _ = x.shape
        h, hd = self.cfg.n_heads, self.cfg.head_dim
        q, k, v = self.qkv(x).view(b, n, 3, h, hd).permute(2, 0, 3, 1, 4)  # each [batch, head, position, hd]
        w = self.weights(apply_rope(q, angles), apply_rope(k, angles))  # [batch, head, query, key]
        y = w @ v  # [batch, head, query, hd]
        if gate is not None:
            y = y * gate.transpose(1, 2).unsqueeze(-1)  # gate [batch, position, head]
        return self.out(y.transpose(1, 2).reshape(b, n, -1)), w


class Block(nn.Module):
    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.norm1, self.attn = RMSNorm(cfg.d_model), Attention(cfg)
        self.norm2 = RMSNorm(cfg.d_model)
        self.mlp = (nn.Sequential(nn.Linear(cfg.d_model, cfg.d_mlp), nn.GELU(), nn.Linear(cfg.d_mlp, cfg.d_model))
                    if cfg.d_mlp else None)

    def forward(self, x: torch.Tensor, angles: torch.Tensor | None, gate: nn.Linear | None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        hx = self.norm1(x)
        g = None if gate is None else torch.sigmoid(gate(hx))  # [batch, position, head]
        a, w = self.attn(hx, angles, g)
        x = x + a
        return (x if self.mlp is None else x + self.mlp(self.norm2(x))), w


class TinyTransformer(nn.Module):
    """``forward(ids, content) -> (prediction [batch, position, content_dim], attention
    [batch, layer, head, query, key])``: a token is its type's embedding plus a projection of its content."""

    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.content = nn.Linear(cfg.content_dim, cfg.d_model, bias=False)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model)
        self.readout = nn.Linear(cfg.d_model, cfg.content_dim)
        # the parts only some variants have come last, so that the shared ones start equal for one seed
        self.gates = (nn.ModuleList(nn.Linear(cfg.d_model, cfg.n_heads) for _ in range(cfg.n_layers))
                      if cfg.attention == "gated" else None)
        self.table = nn.Embedding(cfg.max_len, cfg.d_model) if POSITIONS[cfg.position][2] else None

    def forward(self, ids: torch.Tensor, content: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = ids.shape[1]
        if n > self.cfg.max_len:
            raise ValueError(f"sequence of {n} tokens is longer than the model's {self.cfg.max_len} positions")
        x = self.embed(ids) + self.content(content)  # [batch, position, d_model]
        if self.table is not None:
            x = x + self.table.weight[:n]
        angles = rope_angles(self.cfg, n, x.device)
        weights = []
        for i, block in enumerate(self.blocks):
            x, w = block(x, angles, None if self.gates is None else self.gates[i])
            weights.append(w)
        return self.readout(self.norm(x)), torch.stack(weights, 1)


def build(cfg: TinyConfig, seed: int) -> TinyTransformer:
    """The model of ``cfg`` initialized after ``torch.manual_seed(seed)``."""
    torch.manual_seed(seed)
    return TinyTransformer(cfg)
