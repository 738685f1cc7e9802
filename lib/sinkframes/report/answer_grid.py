"""The answer as one grid: the paper's central claims (rows) against the families that were tested on them
(columns), each cell the family's verdict on the corrected computation with our value beside the paper's.

A family's verdict is *supported* only where every model of the family tested on the claim supports it, *mixed*
where they disagree (the rule of ``report.inference.family_lines``, per family instead of per subject); its
value is the one model's estimate, or the span of several models' intervals.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..paper import CLAIMS_BY_ID
from ..paper.central import CENTRAL_IDS
from ..verdicts import NOT_EVALUATED, SUPPORTED, PageVerdicts, Verdict
from .inference import MIXED, group_status, span_text

#: the families as a reader knows them, in the order the columns take (pretrained first, then trained here)
FAMILY_NAMES: dict[str, str] = {
    "llama": "Llama", "gemma": "Gemma", "qwen": "Qwen2.5", "bert": "BERT", "xlm-roberta": "XLM-R",
    "nomic-bert": "rotary encoder", "training": "trained: App. B", "controlled-decoder": "trained: decoders",
    "controlled-encoder": "trained: encoders", "controlled-text": "trained: text LMs",
}
#: each central claim in a few words (the rows), in the order of the scorecard's "What this book finds"
SHORT: dict[str, str] = {
    "3.1.centralized": "RoPE decoders: centralized", "3.1.distributed": "modified RoPE: distributed",
    "3.1.bidirectional": "absolute encoders: bidirectional", "1.bos_share": "first token gets 30-40 %",
    "5.1.star": "star-like graphs", "5.1.kl_negative": "sink removal lowers KL",
    "5.1.fisher_early": "Fisher early", "1.removal_hurts": "removal hurts the outputs",
    "B.early_emergence": "frames emerge early", "B.early_emergence.trained": "... trained on a task",
    "B.early_emergence.text": "... trained on text", "3.4.encoding_decides": "encoding decides (fixed weights)",
    "3.4.encoding_decides.trained": "encoding decides (trained)", "3.4.encoding_decides.text": "... on text",
    "3.4.scaled_rope_bias.trained": "scaled RoPE lowers the bias",
    "3.4.sink_forms.text": "only RoPE forms a sink", "3.4.rope_origin": "sink follows id 0",
    "later.first_physical": "sink stays on token 0",
}


@dataclass(frozen=True)
class Cell:
    """One family's verdict on one claim: its status, the models behind it, and our value as text."""

    status: str
    models: tuple[str, ...]
    value: str


def _value(vs: list[Verdict]) -> str:
    ests = [v.estimate for v in vs if v.estimate is not None]
    if not ests:
        return ""
    if any(isinstance(e.value, str) for e in ests):
        return ", ".join(sorted({str(e.value) for e in ests}))
    if len(ests) == 1:
        return f"{float(ests[0].value):.3g}"
    return span_text(ests)


def grid(saved: dict[str, PageVerdicts]) -> dict[tuple[str, str], Cell]:
    """``(claim, family) -> Cell`` for the central claims, from the *holds?* verdicts of ``saved``."""
    central = list(CENTRAL_IDS)
    by: dict[tuple[str, str], list[Verdict]] = {}
    for pv in saved.values():
        for v in pv.verdicts:
            if v.question != "holds" or v.status == NOT_EVALUATED or v.claim not in central:
                continue
            family = str(pv.models.get(v.model, {}).get("family", ""))
            if family:
                by.setdefault((v.claim, family), []).append(v)
    out = {}
    for key, vs in by.items():
        out[key] = Cell(group_status(v.status for v in vs), tuple(v.model for v in vs), _value(vs))
    return out


def table(cells: dict[tuple[str, str], Cell]) -> pd.DataFrame:
    """The grid as a table: one row per central claim that some family was tested on, the value the paper prints,
    then one column per family."""
    claims = [cid for cid in CENTRAL_IDS if any(c == cid for c, _ in cells)]
    families = [f for f in FAMILY_NAMES if any(fam == f for _, fam in cells)]
    families += sorted({fam for _, fam in cells} - set(families))
    rows = {}
    for cid in claims:
        rows[SHORT.get(cid, cid)] = {"paper": CLAIMS_BY_ID[cid].printed, **{
            FAMILY_NAMES.get(f, f): (f"{cells[cid, f].status}: {cells[cid, f].value}" if (cid, f) in cells else "")
            for f in families}}
    return pd.DataFrame.from_dict(rows, orient="index")


def takeaway(cells: dict[tuple[str, str], Cell]) -> str:
    """One sentence: how many claim-family cells hold, how many are mixed and how many do not."""
    if not cells:
        return "No family of this profile was tested on a central claim."
    n = len(cells)
    held = sum(c.status == SUPPORTED for c in cells.values())
    mixed = sum(c.status == MIXED for c in cells.values())
    refuted = sum(c.status == "not supported" for c in cells.values())
    order = list(CENTRAL_IDS)
    whole = [cid for cid in order if any(k == cid for k, _ in cells)
             and all(c.status == SUPPORTED for (k, _), c in cells.items() if k == cid)]
    named = ", ".join(SHORT.get(c, c) for c in whole) if whole else "none"
    return (f"Of {n} claim-family cells, {held} hold, {refuted} do not, {mixed} are mixed within the family and "
            f"{n - held - refuted - mixed} cannot be told from a null or are undecided; the claims that hold in "
            f"every family tested on them: {named}.")

