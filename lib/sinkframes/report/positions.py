"""The position-intervention chapter's statements, written from its computed results."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..probes.positions import ENCODING_GROUPS
from ..results import TWIN, ModelResult


def _pct(x: float) -> str:
    return "undefined" if not math.isfinite(x) else f"{x:.0%}"


def model_findings(results: Sequence[ModelResult]) -> str:
    """Per model: its unmodified frame, the interventions on the encoding that change it (and those that broke
    the model instead), and where the sink goes when the position ids are shuffled."""
    lines = []
    for r in results:
        runs = r.data["runs"]
        base = runs["unmodified"]["frame"]
        enc = [n for n, run in runs.items() if run["group"] in ENCODING_GROUPS]
        broken = [n for n in enc if runs[n]["check"]["broken"]]
        changed = [f"{n} ({runs[n]['frame']})" for n in enc if n not in broken and runs[n]["frame"] != base]
        text = (f"- **{r.ref}** ({r.record['position_encoding']}): unmodified frame **{base}**; "
                f"{len(enc) - len(broken)} of {len(enc)} encoding interventions keep the model working")
        text += f", and of those {'; '.join(changed)} change the label" if changed else ", and none changes the label"
        if broken:
            text += f". Broken (not scored): {', '.join(broken)}"
        perm = runs.get("ids permuted")
        if perm is not None and r.data["sink_layers"]:
            w = perm["where"]
            text += (f". With the ids shuffled, the sink of its {len(r.data['sink_layers'])} sink layers stays on "
                     f"physical position 0 in {_pct(w['physical 0'])} of cases and moves to the id-0 token in "
                     f"{_pct(w['position id 0'])}")
            if w.get("tied", 0) and w["tied"] > 0:
                text += f"; in {_pct(w['tied'])} two keys share it within round-off (a tie, counted as neither)"
        elif not r.data["sink_layers"]:
            text += (". No layer has its unmodified sink on position 0 in half the sentences, so where it goes is "
                     "not read")
        if r.data.get("skipped"):
            text += f". Not run: {'; '.join(f'{k} ({v})' for k, v in r.data['skipped'].items())}"
        lines.append(text + ".")
    return "\n".join(lines)


def twin_findings(results: Sequence[ModelResult]) -> str:
    """The random-initialized twins: their frame, and how many encoding interventions change it."""
    lines = []
    for r in results:
        twin = r.data.get(TWIN)
        if twin is None:
            continue
        runs = twin.data["runs"]
        base = runs["unmodified"]["frame"]
        changed = [n for n, run in runs.items() if run["group"] in ENCODING_GROUPS and run["frame"] != base]
        which = f" ({', '.join(changed)})" if changed else ""
        lines.append(f"- `{twin.ref}`: frame {base}; {len(changed)} encoding interventions change it{which}; "
                     f"{len(twin.data['sink_layers'])} sink layers.")
    return "\n".join(lines) or "No twin was run."
