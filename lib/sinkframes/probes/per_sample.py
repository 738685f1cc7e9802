"""Per-sample squared gradient norms of every parameter from one batched backward pass.

The empirical Fisher needs ``||d loss_b / d theta||^2`` for each sentence ``b`` and parameter
block. One backward pass per sentence pays for every weight gradient and then reads its norm;
here the sentences of a batch share one forward and one backward pass, the weights take no
gradient at all, and each norm is assembled from what the module saw and the gradient of its
output (the per-sample gradient is never formed):

- ``Linear`` (``y_t = W x_t + c``): the gradient of ``W`` for sample ``b`` is ``sum_t g_t x_t^T``,
  so its squared norm is ``sum_{t,t'} (g_t . g_t')(x_t . x_t')``, two ``[token, token]`` Gram
  matrices; the bias gradient is ``sum_t g_t``;
- ``Embedding`` (``y_t = s W[i_t]``): the gradient is ``sum_t e_{i_t} (s u_t)^T``, a Linear whose
  input is the one-hot row ``e_{i_t}``, so ``e_{i_t} . e_{i_t'} = [i_t = i_t']`` (positions holding
  the ``padding_idx`` row contribute nothing: that row takes no gradient);
- a weight shared by several modules (an LM head tied to the input embedding) adds the cross
  terms of every pair of uses, for example ``e_{i_t'} . g_t = g_t[i_t']``;
- norms with an elementwise weight ``w`` (``RMSNorm``, ``LayerNorm``, Gemma's ``1 + w``): the
  output is affine in ``w`` with slope ``n`` (the normalised input), found as the difference of
  the module's own output at ``w = 1`` and ``w = 0``; the gradient of ``w`` is ``sum_t g_t * n_t``.

Sentences are independent in a batch (padded positions are masked out of attention and carry no
loss), so the gradient reaching a module in sample ``b`` is that of ``loss_b`` alone when the
batch loss is ``sum_b loss_b``. Modules outside these kinds make :func:`coverage_gaps` non-empty;
callers then fall back to one backward pass per sentence.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["PerSampleNorms", "coverage_gaps", "per_sample_norms"]


@dataclass
class _Outer:
    """One use of a weight whose per-sample gradient is ``sum_t left_t right_t^T``."""

    left: torch.Tensor  # [batch, token, rows] dense, or [batch, token] integer rows (one-hot)
    right: torch.Tensor  # [batch, token, cols]


@dataclass
class PerSampleNorms:
    """What the hooks collect during one batched backward pass, keyed by parameter identity."""

    outer: dict[int, list[_Outer]] = field(default_factory=dict)
    dense: dict[int, list[torch.Tensor]] = field(default_factory=dict)  # each [batch, *param shape]

    def add_outer(self, p: object, left: torch.Tensor, right: torch.Tensor) -> None:
        self.outer.setdefault(id(p), []).append(_Outer(left, right))

    def add_dense(self, p: object, grad: torch.Tensor) -> None:
        self.dense.setdefault(id(p), []).append(grad)

    def squared_norms(self, p: torch.nn.Parameter) -> torch.Tensor | None:
        """``[batch]`` float64 squared gradient norms of ``p``, or None when no gradient reached it."""
        key = id(p)
        if key in self.outer and key in self.dense:
            raise RuntimeError("a parameter used both as a matrix and elementwise is not supported")
        if key in self.dense:
            g = torch.stack(self.dense[key]).sum(0).double()  # [batch, *shape]
            return g.flatten(1).pow(2).sum(1)
        if key in self.outer:
            uses = self.outer[key]
            total = torch.zeros(uses[0].right.shape[0], dtype=torch.float64, device=uses[0].right.device)
            for i, a in enumerate(uses):
                for j in range(i, len(uses)):
                    term = _outer_inner(a, uses[j])
                    total += term if i == j else 2 * term
            return total
        return None


def _left_gram(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``[batch, t, t']`` inner products of the left factors (dense rows or one-hot indices)."""
    a_idx, b_idx = not a.is_floating_point(), not b.is_floating_point()
    if a_idx and b_idx:
        return (a[:, :, None] == b[:, None, :]).to(torch.float32)
    if a_idx:  # e_{a_t} . b_t' = b_t'[a_t]
        return torch.gather(b, 2, a[:, None, :].expand(-1, b.shape[1], -1)).transpose(1, 2)
    if b_idx:
        return torch.gather(a, 2, b[:, None, :].expand(-1, a.shape[1], -1))
    return torch.bmm(a, b.transpose(1, 2))


def _outer_inner(a: _Outer, b: _Outer) -> torch.Tensor:
    """``[batch]``: Frobenius inner product of ``sum_t a.left_t a.right_t^T`` and the same of ``b``."""
    right = torch.bmm(a.right, b.right.transpose(1, 2))  # [batch, t, t']
    return (_left_gram(a.left, b.left).double() * right.double()).sum((1, 2))


def _is_elementwise_norm(module: torch.nn.Module) -> bool:
    params = dict(module.named_parameters(recurse=False))
    return (
        "norm" in type(module).__name__.lower()
        and set(params) in ({"weight"}, {"weight", "bias"})
        and all(p.dim() == 1 for p in params.values())
    )


def _embedding_scale(module: torch.nn.Embedding) -> float | None:
    """The constant ``s`` of ``y = s W[i]``: 1 for a plain embedding, ``embed_scale`` for a scaled one,
    None for any other subclass (its output may not be a scaled lookup)."""
    if type(module).forward is torch.nn.Embedding.forward:
        return 1.0
    scale = getattr(module, "embed_scale", None)
    if scale is None:
        return None
    return float(scale.item() if isinstance(scale, torch.Tensor) else scale)


def _handled(module: torch.nn.Module) -> bool:
    if isinstance(module, torch.nn.Linear):
        return True
    if isinstance(module, torch.nn.Embedding):
        return _embedding_scale(module) is not None and module.max_norm is None
    return _is_elementwise_norm(module)


def coverage_gaps(model: torch.nn.Module) -> list[str]:
    """Names of the trainable parameters no handler covers (empty: every norm can be computed here)."""
    covered = {id(p) for m in model.modules() if _handled(m) for p in m.parameters(recurse=False)}
    return [n for n, p in model.named_parameters() if p.requires_grad and id(p) not in covered]


def _norm_slope(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``n`` in ``y = n * w + (terms without w)``: the module's output at ``w = 1`` minus at ``w = 0``."""
    from torch.func import functional_call

    w = module.get_parameter("weight")
    params = dict(module.named_parameters(recurse=False))
    one = {**params, "weight": torch.ones_like(w)}
    zero = {**params, "weight": torch.zeros_like(w)}
    return (functional_call(module, one, (x,)) - functional_call(module, zero, (x,))).float()


@contextmanager
def per_sample_norms(model: torch.nn.Module, batch_size: int) -> Iterator[PerSampleNorms]:  # noqa: C901, PLR0915
    # long: the three hooks are closures over one accumulator, and the set-up and the restore (in ``finally``)
    # stay in one place so that the restore undoes exactly what the set-up did
    """Collect, during the backward passes run inside the block, what :class:`PerSampleNorms` needs.

    Inside the block the parameters take no gradient (they are restored on exit) and every
    embedding output requires one, so the backward pass computes activation gradients only. An
    embedding looked up once for the whole batch (BERT's position ids ``[1, token]``) is expanded
    to ``batch_size`` rows, so that each sentence's gradient reaches its own copy.
    """
    acc = PerSampleNorms()
    handles: list[Any] = []
    frozen = [p for p in model.parameters() if p.requires_grad]

    def on_output(out: torch.Tensor, store: Any) -> None:
        if isinstance(out, torch.Tensor) and out.requires_grad:
            out.register_hook(lambda g: store(g.detach()))

    def linear_hook(mod: torch.nn.Module, inp: tuple[Any, ...], out: torch.Tensor) -> None:
        if not torch.is_grad_enabled():
            return
        x = inp[0].detach().float()
        x3 = x.reshape(x.shape[0], -1, x.shape[-1])  # [batch, token, in]

        def store(g: torch.Tensor) -> None:
            g3 = g.float().reshape(g.shape[0], -1, g.shape[-1])  # [batch, token, out]
            acc.add_outer(mod.weight, g3, x3)
            if mod.bias is not None:
                acc.add_dense(mod.bias, g3.sum(1))

        on_output(out, store)

    def embedding_hook(mod: torch.nn.Module, inp: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            return out
        out = out.requires_grad_(True) if not out.requires_grad else out
        ids = inp[0].detach()
        if ids.shape[0] == 1 and batch_size > 1:  # shared by the batch: one copy per sentence
            ids = ids.expand(batch_size, *ids.shape[1:])
            out = out.expand(batch_size, *out.shape[1:])
        ids = ids.reshape(ids.shape[0], -1)  # [batch, token]
        scale = _embedding_scale(mod)  # type: ignore[arg-type]

        def store(g: torch.Tensor) -> None:
            u = float(scale or 1.0) * g.float().reshape(g.shape[0], -1, g.shape[-1])  # [batch, token, dim]
            if mod.padding_idx is not None:  # the padding row takes no gradient
                u = u.masked_fill((ids == mod.padding_idx)[..., None], 0.0)
            acc.add_outer(mod.weight, ids, u)

        on_output(out, store)
        return out

    def norm_hook(mod: torch.nn.Module, inp: tuple[Any, ...], out: torch.Tensor) -> None:
        if not torch.is_grad_enabled():
            return
        x = inp[0].detach()

        def store(g: torch.Tensor) -> None:
            with torch.no_grad():
                slope = _norm_slope(mod, x)  # [batch, ..., dim]
            gf = g.float()
            dims = tuple(range(1, gf.dim() - 1))
            acc.add_dense(mod.weight, (gf * slope).sum(dims) if dims else gf * slope)  # [batch, dim]
            if getattr(mod, "bias", None) is not None:
                acc.add_dense(mod.bias, gf.sum(dims) if dims else gf)

        on_output(out, store)

    try:
        for p in frozen:
            p.requires_grad_(False)
        for m in model.modules():
            if isinstance(m, torch.nn.Linear):
                handles.append(m.register_forward_hook(linear_hook))
            elif isinstance(m, torch.nn.Embedding) and _handled(m):
                handles.append(m.register_forward_hook(embedding_hook))
            elif _is_elementwise_norm(m):
                handles.append(m.register_forward_hook(norm_hook))
        yield acc
    finally:
        for h in handles:
            h.remove()
        for p in frozen:
            p.requires_grad_(True)
