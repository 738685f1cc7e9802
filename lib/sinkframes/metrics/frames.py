"""The reference frame of one layer, read from positive evidence: which positions are sinks, and how many.

The paper's definition (Sec. 3): a sink is a position whose attention exceeds a threshold across many source
tokens. Here, per sentence and layer, on the head-mean attention ``[query, key]``:

- a key's *received share* is the mean weight the queries that can see it give it (``metrics.sinks``), and its
  *excess* is that share minus what uniform attention over the same mask and length gives it
  (``metrics.positions.uniform_received``): uniform attention has excess 0 everywhere, whatever the mask;
- a key is a *sink position* when its excess is at least :data:`SINK_EXCESS` and at least :data:`MIN_SOURCES`
  queries can see it (so that no single query's weight makes a sink: "many source tokens");
- the layer's frame:

  - **none**: no sink position;
  - **bidirectional**: (bidirectional masks) both the first and the last position are sink positions;
  - **centralized**: one sink dominates: the largest excess is at least :data:`DOMINANCE` times the second
    largest (clipped at 0);
  - **distributed**: several sink positions, none dominant.

  A centralized layer also records where its sink sits (:data:`ANCHORS`: first, last, or another position).

No ``argmax`` decides anything, so ties (two positions splitting attention exactly) never pick a peak: two
equal sinks are two sink positions. The thresholds are fixed here, before any model was classified with them,
and validated on attention with planted frames (:mod:`sinkframes.analyses.frame_validation`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..code_digest import reducer_version
from .positions import uniform_received
from .sinks import SinkSummaryReducer, eligible_pairs, summaries_stacked

#: a sink position receives at least this much more than uniform attention would give it (a tenth of each
#: row, on average over the queries that can see it). Random attention (Gaussian logits of standard deviation up
#: to 2) reaches it by chance in single sentences shorter than 32 tokens only, and never in the frame most of a
#: set of sentences read (the validation, :mod:`sinkframes.analyses.frame_validation`)
SINK_EXCESS = 0.1
#: a sink position needs this many queries that can see it ("many source tokens"): with fewer, one query's whole
#: weight alone lifts a key's mean share past SINK_EXCESS (1/9 > 0.1), so a previous-token head would read as a row of
#: sinks; with 10, no single query can make a sink. Causal sentences shorter than 11 tokens therefore read none
MIN_SOURCES = 10
#: one sink dominates when its excess is at least this multiple of the next position's
DOMINANCE = 2.0
#: the frame codes, in this order
FRAMES = ("none", "centralized", "distributed", "bidirectional")
#: where a centralized layer's sink sits
ANCHORS = ("first", "last", "other")
NO_ANCHOR = -1


def excess_from_received(recv: torch.Tensor, causal: bool) -> torch.Tensor:
    """``[layer, key]``: the head-mean received share ``recv [layer, key]`` minus uniform attention's, NaN for keys
    seen by fewer than :data:`MIN_SOURCES` queries."""
    n = recv.shape[-1]
    count = eligible_pairs(n, causal, recv.device).sum(0)  # [key]
    excess = recv.float() - uniform_received(n, causal, recv.device)
    return torch.where(count >= MIN_SOURCES, excess, torch.full_like(excess, float("nan")))


def excess_over_uniform(attn: torch.Tensor, causal: bool) -> torch.Tensor:
    """:func:`excess_from_received` of one sentence's attention ``[layer, head, query, key]``."""
    a = attn.float().mean(1)  # [layer, query, key]
    n = a.shape[-1]
    mask = eligible_pairs(n, causal, a.device).to(a.dtype)  # [query, key]
    recv = (a * mask).sum(-2) / mask.sum(0).clamp(min=1)  # [layer, key]
    return excess_from_received(recv, causal)


def layer_frames(attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    """Per layer of one sentence: ``frame`` (index into :data:`FRAMES`), ``anchor`` (index into :data:`ANCHORS`
    for a centralized layer, :data:`NO_ANCHOR` otherwise), ``n_sinks``, ``top`` and ``second`` (the two largest
    excesses, NaN when the sentence has fewer eligible keys), each ``[layer]``."""
    return frames_of_excess(excess_over_uniform(attn, causal), causal)


def frames_of_excess(ex: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    """:func:`layer_frames` from the excesses ``[layer, key]`` (:func:`excess_from_received`)."""
    n_layers, n = ex.shape
    dev = ex.device
    is_sink = torch.nan_to_num(ex, nan=-1.0) >= SINK_EXCESS  # [layer, key]
    ranked = torch.nan_to_num(ex, nan=-float("inf")).sort(-1, descending=True)
    top = ranked.values[:, 0] if n >= 1 else torch.full((n_layers,), float("nan"), device=dev)
    second = ranked.values[:, 1] if n >= 2 else torch.zeros(n_layers, device=dev)
    second = torch.where(torch.isfinite(second), second, torch.zeros_like(second))
    n_sinks = is_sink.sum(-1)  # [layer]
    both_ends = (~torch.tensor(causal, device=dev)) & is_sink[:, 0] & is_sink[:, -1] & (n > 1)
    dominant = top >= DOMINANCE * second.clamp(min=0)
    frame = torch.where(n_sinks == 0, 0, torch.where(both_ends, 3, torch.where(dominant, 1, 2)))
    where = ranked.indices[:, 0]  # [layer]: the dominant sink's position, read only for centralized layers
    anchor = torch.where(where == 0, 0, torch.where(where == n - 1, 1, 2))
    anchor = torch.where(frame == 1, anchor, torch.full_like(anchor, NO_ANCHOR))
    return {"frame": frame.to(torch.int8), "anchor": anchor.to(torch.int8), "n_sinks": n_sinks.to(torch.int16),
            "top": torch.where(torch.isfinite(top), top, torch.full_like(top, float("nan"))), "second": second}


@dataclass(frozen=True)
class FrameSummaryReducer:
    """The sink summary of one sentence (:class:`~sinkframes.metrics.sinks.SinkSummaryReducer`) with each layer's
    frame (``frame``, ``frame_anchor``, ``frame_n_sinks``, ``frame_top``, ``frame_second``, each ``[layer]``).
    ``version``, the digest of its code, enters cache keys."""

    name: str = "frame_summary"

    @property
    def version(self) -> str:
        """The digest of this reducer's code (``code_digest``): it enters the cache key, so changed code never
        reuses results cached by the old."""
        return reducer_version(type(self))

    def key(self) -> dict:
        return {"reducer": self.name, "version": self.version, "sinks": SinkSummaryReducer().key(),
                "instrument": {"excess": SINK_EXCESS, "sources": MIN_SOURCES, "dominance": DOMINANCE}}

    def __call__(self, attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
        out = SinkSummaryReducer()(attn, causal)
        frames = layer_frames(attn, causal)
        return {**out, **{k if k == "frame" else f"frame_{k}": v for k, v in frames.items()}}

    def each(self, attn: torch.Tensor, causal: bool) -> list[dict[str, torch.Tensor]]:
        """The summaries of samples of one length, ``attn [sample, layer, head, query, key]``, in one call."""
        return summaries_stacked(self, attn, causal)


# ----------------------------------------------------------------------------- a model's frame over depth
#: a model-level label needs this share of its framed layers (a clear majority: one layer of a 6-layer model
#: does not decide it)
CLEAR = 0.6
#: below this share of layers with a frame, the model has no frame of its own (sinks in a few layers only)
MIN_FRAMED = 1 / 3
#: a bidirectional model anchors the last position in at least this share of its framed layers
MIN_LAST_END = 0.25
#: a model-level label decides a claim only when this share of resamples of the sentences gives it too
STABLE = 0.9
#: the model-level labels: the frames, and ``mixed`` where no kind holds a clear majority
MODEL_FRAMES = (*FRAMES, "mixed")


def code_onehot(frames: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """``[sample, ..., layer, 7]``: each sentence's frame (:data:`FRAMES`, 4 columns) and, for a centralized layer,
    its anchor (:data:`ANCHORS`, 3 columns), one-hot, from codes ``[sample, ..., layer]``."""
    kinds = np.eye(len(FRAMES))[frames.astype(int)]  # [sample, ..., layer, 4]
    anchor_idx = np.where(anchors >= 0, anchors, len(ANCHORS)).astype(int)
    where = np.eye(len(ANCHORS) + 1)[anchor_idx][..., : len(ANCHORS)]  # [sample, ..., layer, 3]
    return np.concatenate([kinds, where], -1)


def code_shares(frames: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """``[..., layer, 7]``: per layer, the share of sentences reading each frame and each anchor (the mean of
    :func:`code_onehot` over sentences), so that a bootstrap of sentence means reads labels too."""
    return code_onehot(frames, anchors).mean(0)


def labels_from_shares(shares: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(frame [layer], anchor [layer])`` from :func:`code_shares` ``[layer, 7]``: the frame most sentences read
    (a tie reads ``none`` when none is among the tied, else ``distributed``: a tie is not a frame), and for a
    centralized layer the anchor most of its centralized sentences read (ties: ``other``)."""
    kinds, where = shares[:, : len(FRAMES)], shares[:, len(FRAMES):]
    if not len(shares):
        return np.zeros(0, dtype=int), np.full(0, NO_ANCHOR, dtype=int)
    tied = _at_max(kinds)  # [layer, frame]
    n_tied = tied.sum(1)
    frame = np.where(n_tied == 1, tied.argmax(1), np.where(tied[:, 0], 0, FRAMES.index("distributed")))
    top = _at_max(where)  # [layer, anchor]
    centralized = frame == FRAMES.index("centralized")
    anchor = np.where(centralized, np.where(top.sum(1) == 1, top.argmax(1), ANCHORS.index("other")), NO_ANCHOR)
    return frame.astype(int), anchor.astype(int)


def _at_max(rows: np.ndarray) -> np.ndarray:
    """``[row, column]``: whether each entry is its row's maximum within 1e-9 (``np.isclose`` with ``rtol=0``, one
    row at a time as the comparison ``|x - max| <= 1e-9``; a NaN is never at the maximum)."""
    with np.errstate(invalid="ignore"):
        return np.abs(rows - rows.max(1, keepdims=True)) <= 1e-9


def layer_labels(frames: np.ndarray, anchors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(frame [layer], anchor [layer])`` from per-sentence codes ``[sample, layer]`` (:func:`labels_from_shares`)."""
    return labels_from_shares(code_shares(frames, anchors))


def model_frame(frame: np.ndarray, anchor: np.ndarray, causal: bool) -> tuple[str, str]:
    """``(label, reason)`` of a model from its layers' frames and anchors (:func:`layer_labels`):

    - ``none`` when fewer than :data:`MIN_FRAMED` of the layers have a frame;
    - ``bidirectional`` (bidirectional masks) when both ends anchor layers (bidirectional layers, or centralized
      layers at the first and at the last position), the last end in at least :data:`MIN_LAST_END` of the framed
      layers, and end-anchored layers make at least :data:`CLEAR` of them: the paper's frame that shifts between
      the ends across layers;
    - ``centralized`` / ``distributed`` when that kind holds at least :data:`CLEAR` of the framed layers;
    - ``mixed`` otherwise.
    """
    n = len(frame)
    framed = frame != 0
    k = int(framed.sum())
    if n == 0 or k < MIN_FRAMED * n:
        return "none", f"a frame in {k} of {n} layers"
    cent, dist, bidi = (frame == FRAMES.index(x) for x in ("centralized", "distributed", "bidirectional"))
    at_first, at_last = cent & (anchor == 0), cent & (anchor == 1)
    first_end, last_end = int((at_first | bidi).sum()), int((at_last | bidi).sum())
    ends = int((at_first | at_last | bidi).sum())
    where = f"{k} of {n} layers framed: {int(cent.sum())} centralized, {int(dist.sum())} distributed, " \
            f"{int(bidi.sum())} bidirectional"
    if not causal and first_end and last_end >= MIN_LAST_END * k and ends >= CLEAR * k:
        return "bidirectional", f"{where}; the first position anchors {first_end}, the last {last_end}"
    if cent.sum() >= CLEAR * k:
        return "centralized", f"{where}; {int(at_first.sum())} of the centralized layers anchor the first position"
    if dist.sum() >= CLEAR * k:
        return "distributed", where
    return "mixed", f"{where}; no kind holds {CLEAR:.0%} of them"


def frame_profile(frames: np.ndarray, anchors: np.ndarray, causal: bool, n_boot: int = 200,
                  seed: int = 0) -> dict[str, object]:
    """A model's frame as a profile over depth, from per-sentence codes ``[sample, layer]``: each layer's label and
    anchor, the share of layers of each kind, the model-level label with its reason, and its stability (the share of
    bootstrap resamples of the sentences that give the same model-level label)."""
    frame, anchor = layer_labels(frames, anchors)
    label, reason = model_frame(frame, anchor, causal)
    rng = np.random.default_rng(seed)
    onehot = code_onehot(frames, anchors)  # [sample, layer, 7], once: a resample's rows are rows of it
    same = 0
    for _ in range(n_boot):
        pick = rng.integers(0, frames.shape[0], frames.shape[0])
        f, a = labels_from_shares(onehot[pick].mean(0))
        same += model_frame(f, a, causal)[0] == label
    shares = {name: float(np.mean(frame == i)) for i, name in enumerate(FRAMES)}
    return {"layer_frames": [FRAMES[i] for i in frame],
            "layer_anchors": [ANCHORS[i] if i >= 0 else "" for i in anchor],
            "shares": shares, "label": label, "reason": reason, "stability": same / n_boot if n_boot else float("nan")}
