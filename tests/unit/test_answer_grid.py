"""The answer grid: one cell per central claim and family, the family's verdict by the family-line rule."""

from __future__ import annotations

from sinkframes import verdicts as V
from sinkframes.report import answer_grid

E = V.Estimate
BERT = {"family": "bert"}
LLAMA = {"family": "llama"}


def _saved() -> dict[str, V.PageVerdicts]:
    vs = [V.Verdict("1.bos_share", "minilm", "holds", V.SUPPORTED, E(0.35, 0.33, 0.37)),
          V.Verdict("1.bos_share", "mpnet", "holds", V.NOT_SUPPORTED, E(0.2, 0.18, 0.22)),
          V.Verdict("1.bos_share", "smollm2", "holds", V.SUPPORTED, E(0.36, 0.34, 0.38)),
          V.Verdict("1.bos_share", "smollm2", "reproduced", V.NOT_SUPPORTED, E(0.1, 0.0, 0.2)),
          V.Verdict("5.4.entropy", "smollm2", "holds", V.SUPPORTED, E(-1.0, -1.1, -0.9))]  # not a central claim
    return {"p": V.PageVerdicts("p", "offline", vs, {"minilm": BERT, "mpnet": BERT, "smollm2": LLAMA})}


def test_a_family_whose_models_disagree_is_mixed_and_one_model_gives_its_value():
    cells = answer_grid.grid(_saved())
    assert set(cells) == {("1.bos_share", "bert"), ("1.bos_share", "llama")}  # holds? only, central claims only
    assert cells["1.bos_share", "bert"].status == "mixed" and cells["1.bos_share", "bert"].value == "[0.18, 0.37]"
    assert cells["1.bos_share", "llama"] == answer_grid.Cell(V.SUPPORTED, ("smollm2",), "0.36")
    t = answer_grid.table(cells)
    assert list(t.columns) == ["paper", "Llama", "BERT"]
    assert t.loc["first token gets 30-40 %", "BERT"].startswith("mixed")
    assert t.loc["first token gets 30-40 %", "paper"] == "30-40 %"
    text = answer_grid.takeaway(cells)
    assert text.startswith("Of 2 claim-family cells, 1 hold, 0 do not, 1 are mixed") and text.endswith(": none.")


def test_the_figure_draws_a_cell_per_family_verdict():
    from sinkframes.figures.answer import verdict_grid

    fig = verdict_grid(answer_grid.grid(_saved()))
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert sorted(labels) == ["0.36", "\u00b1"]
    assert verdict_grid({}) is None


def test_every_central_claim_has_a_row_label():
    from sinkframes.paper.central import CENTRAL

    assert {cid for _, ids in CENTRAL for cid in ids} <= set(answer_grid.SHORT)
