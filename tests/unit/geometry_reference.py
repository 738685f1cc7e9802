"""The sink-geometry and value-space reductions as they were before they were fused: the reference the
fast ``GeometryValuesReducer`` is checked against (tests/unit/test_geometry_fast.py).

Plain compositions of the per-measure functions, each measure computed on its own (GQA keys and values
copied per query head, cosines and norms recomputed where a measure needs them).
"""

from __future__ import annotations

import torch

from sinkframes.extraction.capture import SampleCapture
from sinkframes.metrics import geometry, values
from sinkframes.metrics.sinks import eligible_pairs, reference_tokens
from sinkframes.tensors import expand_kv, require_finite


def reference_geometry_summary(
    query_pre: torch.Tensor,
    query: torch.Tensor,
    key_pre: torch.Tensor,
    key: torch.Tensor,
    scaling: torch.Tensor | float,
    causal: bool,
) -> dict[str, torch.Tensor]:
    """All geometry measures of one sample; ``[layer, head]`` (key norms ``[layer, kv_head]``)."""
    out: dict[str, torch.Tensor] = dict(geometry.key_norms(key, causal))
    for tag, (q, k) in {"pre": (query_pre, key_pre), "post": (query, key)}.items():
        for name, v in geometry.sink_alignment(q, k, causal).items():
            out[f"{name}_{tag}"] = v
    out.update(geometry.logit_decomposition(query, key, scaling, causal))
    return out


def reference_faithful_magnitude(pre: torch.Tensor, post: torch.Tensor) -> torch.Tensor:
    """``[layer, token]``: official transformation magnitude, both states cleaned and rescaled separately."""
    pre = torch.nan_to_num(pre.double(), nan=0.0, posinf=0.0, neginf=0.0)
    post = torch.nan_to_num(post.double(), nan=0.0, posinf=0.0, neginf=0.0)
    m = torch.maximum(pre.abs().amax((-1, -2)), post.abs().amax((-1, -2)))  # [layer]
    f = torch.where(m > 1e3, 1e3 / m.clamp_min(1e-300), torch.ones_like(m)).view(-1, 1, 1)
    delta = (post * f - pre * f).clamp(-1e3, 1e3)
    return delta.norm(dim=-1).clamp(0, 1e6).float()


def reference_corrected_alignment(attn: torch.Tensor, value: torch.Tensor, causal: bool) -> torch.Tensor:
    """``[layer, head]``: Pearson of (``A^h_ij``, ``cos(v_i, v_j)``) on value vectors copied per query head."""
    v = expand_kv(value, attn.shape[1])  # [layer, head, token, dim]
    n = attn.shape[-1]
    s = values.cosine_matrix(v)  # [layer, head, token, token]
    return values.pearson(attn.flatten(-2), s.flatten(-2), eligible_pairs(n, causal, attn.device).flatten())


def reference_faithful_decomposition(avg_attn: torch.Tensor, hidden_in: torch.Tensor) -> dict[str, torch.Tensor]:
    """Official reference-point decomposition per ``[layer]``, one matmul per mixture."""
    a = torch.nan_to_num(avg_attn.double(), nan=0.0, posinf=1.0)
    x = torch.nan_to_num(hidden_in.double(), nan=0.0, posinf=0.0, neginf=0.0)
    mx = x.abs().amax((-1, -2), keepdim=True)  # [layer, 1, 1]
    x = torch.where(mx > 1e5, x * (1e5 / mx.clamp_min(1e-300)), x)
    refs = values.faithful_reference_set(a)  # [layer, token]
    rs = a.sum(-1, keepdim=True)
    at = torch.where(rs > 1e-10, a / rs.clamp_min(1e-300), torch.zeros_like(a))  # [layer, query, key]
    y = at @ x  # [layer, token, hidden]
    r = (at * refs.unsqueeze(-2)) @ x
    u = (at * (~refs).unsqueeze(-2)) @ x
    ny, nr = y.norm(dim=-1), r.norm(dim=-1)
    rel = torch.where(ny < 1e-10, torch.where(nr < 1e-10, 0.0, 1.0), (nr / ny.clamp_min(1e-300)).clamp(0, 1))
    cos = (r * y).sum(-1) / (nr * ny).clamp_min(1e-300)
    direc = torch.where((nr < 1e-10) | (ny < 1e-10), 0.5, (cos + 1) / 2)
    info = (y - u).norm(dim=-1).clamp(max=1e6)
    rel = torch.where(refs, values.PLACEHOLDERS[0], rel)
    direc = torch.where(refs, values.PLACEHOLDERS[1], direc)
    info = torch.where(refs, values.PLACEHOLDERS[2], info)

    def mean(v: torch.Tensor) -> torch.Tensor:
        ok = torch.isfinite(v)
        return (torch.where(ok, v, 0.0).sum(-1) / ok.sum(-1).clamp_min(1)).float()

    return {
        "relative_magnitude": mean(rel),
        "directional_guidance": mean(direc),
        "information_change": mean(info),
        "reference_count": refs.sum(-1).float(),
    }


def reference_corrected_decomposition(
    attn: torch.Tensor, value: torch.Tensor, output_heads: torch.Tensor, causal: bool
) -> dict[str, torch.Tensor]:
    """Per ``[layer, head]``: reference part of each head's output, value vectors copied per query head."""
    refs = reference_tokens(attn, causal)  # [layer, head, token]
    v = expand_kv(value.float(), attn.shape[1])  # [layer, head, token, dim]
    n = attn.shape[-1]
    r = (attn.float() * refs.unsqueeze(-2)) @ v  # [layer, head, token, dim]
    o = output_heads.float()
    nr, no = r.norm(dim=-1), o.norm(dim=-1)  # [layer, head, token]
    ok = (~refs) & values.query_rows(n, causal, attn.device) & refs.any(-1, keepdim=True) & (no > 1e-12)
    rel = nr / no.clamp_min(1e-12)
    cos = (r * o).sum(-1) / (nr * no).clamp_min(1e-12)
    cnt = ok.sum(-1)

    def mean(x: torch.Tensor) -> torch.Tensor:
        m = torch.where(ok, x, 0.0).sum(-1) / cnt.clamp_min(1)
        return torch.where(cnt > 0, m, torch.full_like(m, float("nan")))

    return {
        "relative_magnitude": mean(rel),
        "directional_guidance": mean((cos + 1) / 2),
        "reference_count": refs.sum(-1).float(),
    }


def reference_faithful_summary(attn: torch.Tensor, hidden: torch.Tensor) -> dict[str, torch.Tensor]:
    """All faithful measures of one sample, each ``[layer]``."""
    avg = torch.nan_to_num(attn.float().mean(1), nan=0.0)  # [layer, query, key]
    h_tok = values.row_entropy(avg, "faithful")  # [layer, query]
    mag = reference_faithful_magnitude(hidden[:-1], hidden[1:])  # [layer, token]
    out = {
        "entropy": h_tok.mean(-1),
        "magnitude": mag.mean(-1),
        "alignment": values.faithful_alignment(avg, hidden[:-1]),
        "entropy_magnitude": values.pearson(h_tok, mag),
    }
    out.update(reference_faithful_decomposition(avg, hidden[:-1]))
    return out


def reference_corrected_summary(
    attn: torch.Tensor, value: torch.Tensor, output_heads: torch.Tensor, output: torch.Tensor, causal: bool
) -> dict[str, torch.Tensor]:
    """All corrected measures of one sample: ``[layer, head]`` per head, ``[layer]`` per token mix."""
    n = attn.shape[-1]
    rows = values.query_rows(n, causal, attn.device)
    h = values.row_entropy(attn, "corrected")  # [layer, head, query]
    mag = values.output_magnitude(output)  # [layer, token]
    out = {
        "entropy": h[..., rows].mean(-1),
        "magnitude": mag[..., rows].mean(-1),
        "alignment": reference_corrected_alignment(attn, value, causal),
        "entropy_magnitude": values.pearson(h.mean(1)[..., rows], mag[..., rows]),
    }
    out.update(reference_corrected_decomposition(attn, value, output_heads, causal))
    return out


def reference_reduce(cap: SampleCapture, causal: bool) -> dict[str, torch.Tensor]:
    """What ``GeometryValuesReducer`` version 1 returned for one capture."""
    for name in ("attention", "query", "key", "value", "output_heads", "output"):
        require_finite(getattr(cap, name), name)
    if cap.hidden is not None:
        require_finite(cap.hidden, "hidden states")
    out: dict[str, torch.Tensor] = {"n_tokens": torch.tensor(cap.n_tokens)}
    if cap.n_tokens >= 3:
        out.update(reference_geometry_summary(cap.query_pre, cap.query, cap.key_pre, cap.key, cap.scaling, causal))
    if cap.hidden is None:
        raise ValueError("the faithful value-space measures need hidden states (capture with hidden_states=True)")
    for k, v in reference_faithful_summary(cap.attention, cap.hidden).items():
        out[f"faithful_{k}"] = v
    for k, v in reference_corrected_summary(cap.attention, cap.value, cap.output_heads, cap.output, causal).items():
        out[f"corrected_{k}"] = v
    return out


def assert_same(expected: dict[str, torch.Tensor], got: dict[str, torch.Tensor]) -> None:
    """Same keys in the same order, same dtypes and shapes, NaN where the reference has NaN, and every
    value equal up to the rounding of its dtype: the fused code takes its sums in another order (means
    over other keys as ``[n, n] @ [n, dim]`` products, reference columns gathered), so float32 values may
    differ in the last bits. The tolerance is relative to the largest entry of the measure, since a
    measure that is a difference (the logit parts) can be near zero where its terms are not."""
    assert list(got) == list(expected)
    for name, want in expected.items():
        have = got[name]
        assert have.dtype == want.dtype and have.shape == want.shape, name
        rtol = 1e-12 if want.dtype == torch.float64 else 2e-5
        finite = want[torch.isfinite(want)]
        scale = float(finite.abs().max()) if finite.numel() else 1.0
        torch.testing.assert_close(have, want, rtol=rtol, atol=rtol * max(scale, 1e-6), equal_nan=True,
                                   msg=lambda m, k=name: f"{k}: {m}")
