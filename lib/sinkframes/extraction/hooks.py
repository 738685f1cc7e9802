"""The one attention patch: read what every eager attention call computes, or edit its weights.

Every supported architecture (``models.registry.ARCHITECTURES``) computes attention in a
module-level ``eager_attention_forward(module, query, key, value, attention_mask, scaling=...,
...)`` (transformers 5.x, ``attn_implementation="eager"``). :func:`attention_hook` replaces that
function, for the duration of a ``with`` block, in the Python modules that define the model's
attention layers:

- ``edit(weights, module) -> weights`` replaces the post-softmax weights ``[batch, head, query,
  key]``; the output is then recomputed as ``weights @ values`` (grouped-query values expanded
  by :func:`expand_kv`), so the change reaches every later layer;
- ``read(call)`` receives an :class:`AttentionCall` per layer and batch: queries and keys after
  RoPE (and after any query/key norm), values, mask, scaling, the weights and the output before
  the output projection (after the edit, if there is one).

The original functions are restored on exit, also when the block raises.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch

from ..models import ARCHITECTURES, ArchSpec, AttentionUnavailableError, UnsupportedArchitectureError
from ..tensors import expand_kv

__all__ = ["AttentionCall", "attention_hook", "attention_layers", "arch_of", "spec_of", "expand_kv"]


@dataclass
class AttentionCall:
    """What one eager attention call of one layer saw and produced (a whole batch)."""

    layer: int
    module: torch.nn.Module
    query: torch.Tensor  # [batch, head, token, dim]     after RoPE: what is scored
    key: torch.Tensor  # [batch, kv_head, token, dim]
    value: torch.Tensor  # [batch, kv_head, token, dim]
    mask: torch.Tensor | None  # additive mask as the model built it
    scaling: float  # the factor applied to q.k
    softcap: float | None
    weights: torch.Tensor  # [batch, head, query, key]   post-softmax (after the edit)
    output: torch.Tensor  # [batch, token, head, dim]    weights @ values, before the output projection


Read = Callable[[AttentionCall], None]
Edit = Callable[[torch.Tensor, torch.nn.Module], torch.Tensor]  # weights [batch, head, query, key] -> weights


def arch_of(model: torch.nn.Module) -> str:
    """The transformers ``model_type`` of the (text) model."""
    cfg: Any = model.config
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    return str(cfg.model_type)


def spec_of(model: torch.nn.Module) -> ArchSpec:
    """Where the model's attention lives; ``UnsupportedArchitectureError`` for unknown types."""
    mt = arch_of(model)
    if mt not in ARCHITECTURES:
        raise UnsupportedArchitectureError(
            f"the attention hook does not know model_type {mt!r}; supported: {', '.join(sorted(ARCHITECTURES))}. "
            "Chapters that only read attention weights (1-4, and 5 without the output check) still work."
        )
    return ARCHITECTURES[mt]


def attention_layers(model: torch.nn.Module) -> list[tuple[torch.nn.Module, torch.nn.Module]]:
    """``(attention module, output projection)`` per layer, in layer order."""
    spec = spec_of(model)
    named = dict(model.named_modules())
    found = []
    depth = spec.attention_suffix.count(".")
    for name, mod in named.items():
        if name.endswith(spec.attention_suffix) and name.rsplit(".", depth)[0].split(".")[-1].isdigit():
            base = name.rsplit(".", 1)[0] if spec.output_from_parent else name
            proj = named.get(f"{base}.{spec.output_projection}")
            if proj is None:
                raise UnsupportedArchitectureError(
                    f"no output projection {base}.{spec.output_projection} in {arch_of(model)}"
                )
            found.append((mod, proj))
    if not found:
        raise UnsupportedArchitectureError(
            f"no attention modules ending in {spec.attention_suffix!r} in {arch_of(model)}"
        )
    return found


def _eager_modules(layers: list[tuple[torch.nn.Module, torch.nn.Module]], model: torch.nn.Module) -> list[ModuleType]:
    impl = getattr(model.config, "_attn_implementation", None)
    if impl not in (None, "eager"):
        raise AttentionUnavailableError(
            f"the attention hook needs attn_implementation='eager', this model uses {impl!r}; load it with "
            "sinkframes.models.load"
        )
    if arch_of(model) == "bloom":
        from ..models.alibi import install

        install()  # BLOOM computes attention inline: give it the eager function this hook wraps
    found: dict[str, ModuleType] = {}
    for att, _ in layers:
        mod = sys.modules[type(att).__module__]
        if not hasattr(mod, "eager_attention_forward"):
            raise UnsupportedArchitectureError(
                f"{mod.__name__} has no eager_attention_forward (this transformers version computes {arch_of(model)} "
                "attention another way); use transformers >= 5"
            )
        found[mod.__name__] = mod
    return list(found.values())


@contextmanager
def attention_hook(
    model: torch.nn.Module,
    *,
    read: Read | None = None,
    edit: Edit | None = None,
) -> Iterator[list[tuple[torch.nn.Module, torch.nn.Module]]]:
    """Within the block, every eager attention call of ``model`` is read and/or edited.

    Yields the ``(attention module, output projection)`` pairs, in layer order.
    """
    layers = attention_layers(model)
    index = {id(att): k for k, (att, _) in enumerate(layers)}
    patched: list[tuple[ModuleType, Callable[..., Any]]] = []

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def eager(
            module: torch.nn.Module,
            query: torch.Tensor,
            key: torch.Tensor,
            value: torch.Tensor,
            attention_mask: torch.Tensor | None,
            *args: Any,
            **kwargs: Any,
        ) -> tuple[torch.Tensor, torch.Tensor]:
            out, weights = original(module, query, key, value, attention_mask, *args, **kwargs)
            if edit is not None:
                weights = edit(weights, module)
                v = expand_kv(value, weights.shape[1])  # [batch, head, key, dim]
                out = torch.matmul(weights.to(v.dtype), v).transpose(1, 2).contiguous()
            layer = index.get(id(module))
            if read is not None and layer is not None:
                scaling = kwargs.get("scaling")
                if scaling is None:
                    scaling = getattr(module, "scaling", query.shape[-1] ** -0.5)
                read(
                    AttentionCall(
                        layer=layer,
                        module=module,
                        query=query.detach(),
                        key=key.detach(),
                        value=value.detach(),
                        mask=None if attention_mask is None else attention_mask.detach(),
                        scaling=float(scaling),
                        softcap=kwargs.get("softcap"),
                        weights=weights.detach(),
                        output=out.detach(),
                    )
                )
            return out, weights

        return eager

    try:
        for mod in _eager_modules(layers, model):
            original = mod.eager_attention_forward
            mod.eager_attention_forward = wrap(original)  # type: ignore[attr-defined]
            patched.append((mod, original))
        yield layers
    finally:
        for mod, original in patched:
            mod.eager_attention_forward = original  # type: ignore[attr-defined]
