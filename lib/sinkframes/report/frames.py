"""Chapter 1 text: the frame each model's evidence points to, depth notes, the forced-BOS comparison, and what the
evidence supports (written from the results)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import pandas as pd

from ..analyses.frames import position0_dominated, position_class
from . import confounds

if TYPE_CHECKING:
    from ..results import ModelResult


def frame_verdicts(frames: list[ModelResult]) -> str:
    """Plain statements: the frame the instrument reads for each model, how stable it is and where its layers sit,
    beside the paper's family label (the registry's 3.1 claims decide the comparison; this text only describes it)
    and the earlier rule's label."""
    lines = []
    for f in frames:
        paper = f.record["paper_frame"]
        family = f.record["family"]
        prof = f.data["profile"]
        if paper == "not assigned":
            label = f"the paper assigns no frame type to the {family} family"
        else:
            label = f"the paper's label for the {family} family is **{paper}** (claim `3.1.{paper}` below)"
        lines.append(f"- `{f.ref}` reads **{f.data['frame']}** in {prof['stability']:.0%} of resampled sentence "
                     f"sets ({f.data['reason']}); {label}; the earlier rule said {f.data['frame_earlier']}.")
    return "\n".join(lines)


def instrument_note(trials: pd.DataFrame, layers: pd.DataFrame, strength: float) -> str:
    """What the validation shows, in numbers: structureless attention read as none and each planted frame's
    recovery from ``strength`` on, sentence by sentence (``trials``) and as a layer is read (``layers``)."""
    def rates(t: pd.DataFrame) -> tuple[str, str]:
        none = t[t["planted"].isin(["uniform", "random"])]
        strong = t[(t["strength"] >= strength) & ~t["planted"].isin(["uniform", "random"])]
        by = strong.assign(ok=strong["read"] == strong["expected"]).groupby("planted")["ok"].mean()
        return (f"{int((none['read'] == 'none').sum())} of {len(none)}",
                ", ".join(f"{kind} {rate:.0%}" for kind, rate in by.items()))
    one_none, one_hit = rates(trials)
    set_none, set_hit = rates(layers)
    short = trials[(trials["planted"] == "random") & (trials["n"] < 32)]
    return (f"Sentence by sentence, uniform and random attention read **none** in {one_none} draws (the misses are "
            f"random attention under 32 tokens: {int((short['read'] != 'none').sum())} of {len(short)} such draws), "
            f"and from a planted strength of {strength:g} the planted frame is read in: {one_hit}. As a layer is read "
            f"(the frame most of ten sentences of 12 to 64 tokens read), structureless attention reads none in "
            f"{set_none} sets, and the planted frame is read in: {set_hit}.")


def depth_notes(frames: list[ModelResult]) -> str:
    """Where each model's first-token sink is weakest and strongest, and how many layers it dominates."""
    lines = []
    for f in frames:
        d = f.layers
        lo = d.loc[cast(int, d["first_token_share"].idxmin())].to_dict()  # layers has a RangeIndex
        hi = d.loc[cast(int, d["first_token_share"].idxmax())].to_dict()
        dominated = position0_dominated(d)
        dom = int(dominated.sum())
        weak = d.loc[~dominated, "layer"].astype(int).tolist()
        lines.append(
            f"- `{f.ref}`: share on position 0 from {lo['first_token_share']:.2f} (layer {int(lo['layer'])}) to "
            f"{hi['first_token_share']:.2f} (layer {int(hi['layer'])}); position 0 is the strongest key of most "
            f"queries in "
            f"{dom} of {len(d)} layers" + (f" (not in layers {weak})." if weak else ".")
        )
    return "\n".join(lines)


def bos_comparison_notes(default: list[ModelResult], forced: list[ModelResult]) -> str:
    """How the sink evidence of each model moves when a BOS token is forced at position 0."""
    by_ref = {f.ref: f for f in default}
    lines = []
    for f in forced:
        d = by_ref.get(f.ref)
        if d is None:
            continue
        before, after = d.data["evidence"], f.data["evidence"]
        lines.append(
            f"- `{f.ref}` with `{f.data.get('position0_tokens', ['?'])[0]}` forced at position 0: queries peaking on "
            f"position 0 {before['first_token_concentration']:.2f} -> {after['first_token_concentration']:.2f}, "
            f"share on position 0 {before['first_token_share']:.2f} -> {after['first_token_share']:.2f}, "
            f"reference tokens per head {before['reference_count']:.2f} -> {after['reference_count']:.2f}; "
            f"frame {d.data['frame']} -> {f.data['frame']}."
        )
    return "\n".join(lines)


def _dominated(f: ModelResult) -> tuple[int, int]:
    """(layers in which position 0 is the strongest key of most queries, layers)."""
    return int(position0_dominated(f.layers).sum()), len(f.layers)


def _frame_counts(f: ModelResult) -> str:
    """How the model's framed layers (those not read as none) split, its own label's kind first."""
    kinds = [k for k in f.data["profile"]["layer_frames"] if k != "none"]
    label = str(f.data["frame"])
    if not kinds:
        return f"`{f.ref}` reads **{label}** (no layer framed)"
    order = sorted(set(kinds), key=lambda k: (k != label, -kinds.count(k), k))
    split = ", ".join(f"{kinds.count(k)} {k}" for k in order)
    return f"`{f.ref}` reads **{label}** ({split}, of {len(kinds)} framed layers)"


def _first_position_sink(frames: list[ModelResult]) -> str:
    share = {f.ref: _dominated(f) for f in frames}
    strong = [r for r, (d, n) in share.items() if d >= n / 2]
    weak = [r for r in share if r not in strong]
    pct = [100 * share[r][0] / share[r][1] for r in strong]
    parts = []
    if strong:
        parts.append("position 0 is the strongest key of most queries in at least half the layers of "
                     f"{confounds.names(strong)} "
                     f"({min(pct):.0f} to {max(pct):.0f} % of their layers)" if len(strong) > 1 else
                     f"position 0 is the strongest key of most queries in {share[strong[0]][0]} of "
                     f"{share[strong[0]][1]} layers of `{strong[0]}`")
    if weak:
        parts.append("in fewer than half the layers of " +
                     ", ".join(f"`{r}` ({share[r][0]} of {share[r][1]})" for r in weak))
    return "- **A first-position sink**: " + "; ".join(parts) + " (the per-layer notes above)."


def _against_paper(frames: list[ModelResult]) -> str:
    same = [f.ref for f in frames if f.data["frame"] == f.record["paper_frame"]]
    other = [f for f in frames
             if f.record["paper_frame"] not in ("not assigned", f.data["frame"])]
    unassigned = [f.ref for f in frames if f.record["paper_frame"] == "not assigned"]
    parts = [f"{len(same)} of {len(frames)} models read the frame the paper gives their family"
             + (f" ({confounds.names(same)})" if same else "")]
    if other:
        parts.append("another frame: " + "; ".join(
            f"`{f.ref}` reads {f.data['frame']} where the paper gives the {f.record['family']} family "
            f"{f.record['paper_frame']}" for f in other))
    if unassigned:
        parts.append(f"the paper gives no frame to the family of {confounds.names(unassigned)}")
    return ("- **Against the paper's frame types** (the claims `3.1.*` in the table above decide them, with their "
            "nulls; this line only counts): " + "; ".join(parts) + ".")


def _by_design(frames: list[ModelResult]) -> str:
    def grouped(key: Callable[[ModelResult], str]) -> str:
        groups: dict[str, list[str]] = {}
        for f in frames:
            groups.setdefault(key(f), []).append(f"`{f.ref}` {f.data['frame']}")
        return "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items())

    return ("- **Mask and position encoding** (the design table): by mask, "
            + grouped(lambda f: "decoders" if f.record["causal"] else "encoders") + "; by position encoding, "
            + grouped(lambda f: position_class(str(f.record["position_encoding"]))) + ". With one to three models "
            "per cell, and models that differ in size, data, tokenizer and quantization, this is a first look, not a "
            "controlled test (chapters 8 and 9 change the encoding on purpose).")


def _confounds(frames: list[ModelResult]) -> str:
    return ("- **Confounds** the paper does not control: " + confounds.first_word_at_position0(frames) + "; "
            + confounds.quantized(frames) + "; model size, and the encoders' sentence-embedding training. The "
            "start-token comparison above separates the first for the models it runs; the `paper` profile reruns the "
            "page on the paper's own models.")


def evidence_summary(frames: list[ModelResult]) -> str:
    """What the page's evidence supports, written from its results (never typed): where a first-position sink is,
    the frame each model reads with its layers, how that compares with the paper's frame types, the frames by mask
    and position encoding, and the confounds of the models run. Empty results give one line saying so."""
    if not frames:
        return "No model ran on this page, so it supports no statement."
    decoders = [f for f in frames if f.record["causal"]]
    encoders = [f for f in frames if not f.record["causal"]]
    lines = [f"Written from this run's {len(frames)} model{'s' if len(frames) != 1 else ''}:", "",
             _first_position_sink(frames)]
    for name, group in (("Decoders", decoders), ("Encoders", encoders)):
        if group:
            lines.append(f"- **{name}**: " + "; ".join(_frame_counts(f) for f in group) + ".")
    lines += [_against_paper(frames), _by_design(frames)]
    if decoders:
        lines.append("- **A bidirectional frame cannot be tested on decoders**: causal attention gives the last token "
                     "no incoming weight from any other query.")
    lines.append(_confounds(frames))
    return "\n".join(lines)
