"""Chapter 1 text: the frame each model's evidence points to, depth notes, the forced-BOS comparison."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ..analyses.base import ModelResult


def frame_verdicts(frames: list[ModelResult]) -> str:
    """Plain statements: the frame each model's evidence points to, beside the paper's family label (the
    registry's 3.1 claims decide the comparison; this text only describes it)."""
    lines = []
    for f in frames:
        paper = f.record["paper_frame"]
        frame = f.data["frame"]
        family = f.record["family"]
        if paper == "not assigned":
            label = f"the paper assigns no frame type to the {family} family"
        else:
            label = f"the paper's label for the {family} family is **{paper}** (claim `3.1.{paper}` below)"
        if frame == "undefined":
            lines.append(f"- `{f.ref}`: no frame type ({f.data['reason']}); {label}.")
            continue
        lines.append(f"- `{f.ref}` looks **{frame}** ({f.data['reason']}); {label}.")
    return "\n".join(lines)


def depth_notes(frames: list[ModelResult]) -> str:
    """Where each model's first-token sink is weakest and strongest, and how many layers it dominates."""
    lines = []
    for f in frames:
        d = f.layers
        lo = d.loc[cast(int, d["first_token_share"].idxmin())].to_dict()  # layers has a RangeIndex
        hi = d.loc[cast(int, d["first_token_share"].idxmax())].to_dict()
        dom = int((d["first_token_concentration"] >= 0.5).sum())
        weak = d.loc[d["first_token_concentration"] < 0.5, "layer"].astype(int).tolist()
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
