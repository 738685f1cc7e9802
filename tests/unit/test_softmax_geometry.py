"""The softmax-geometry analysis: synthetic tables with analytic answers, aggregation of hand-built
attention, and the generated verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sinkframes.analyses import softmax_geometry as sg
from sinkframes.metrics.simplex import SimplexSummaryReducer
from sinkframes.report import softmax_geometry as sg_report
from tests.attention_cases import causal_first_sink, causal_uniform, stack


def test_margin_table_is_the_closed_form():
    t = sg.margin_table(shares=(0.9,), lengths=(2, 11), head_dim=16, cosine=0.5)
    assert t.loc[2, "margin for 90%"] == pytest.approx(math.log(9))
    assert t.loc[11, "margin for 90%"] == pytest.approx(math.log(9) + math.log(10))
    # |q| = sqrt(d) at cosine 0.5: the key norm is twice the margin
    assert t.loc[11, "key norm for 90%"] == pytest.approx(2 * t.loc[11, "margin for 90%"])


def test_sweep_summary_reads_the_crossing():
    sweep = sg.sink_sweep_table(lengths=(8,), sink_logits=np.linspace(0, 10, 101), n_draws=20, seed=1)
    row = sg.sweep_summary(sweep, shares=(0.5,)).loc[8]
    d = sweep[sweep["sink_share"] >= 0.5].iloc[0]
    assert row["sink logit for 50%"] == pytest.approx(d.sink_logit)
    assert d.distance_to_vertex <= math.pi / 2 + 1e-9


def test_key_norm_sweep_spread_grows_with_the_key_norm():
    t = sg.key_norm_sweep((0.25, 1.0, 8.0), n_keys=16, n_queries=500, seed=2)
    # the sink logit's query-specific part is r (g . u) / sqrt(d) with g . u ~ N(0, 1)
    assert np.allclose(t["sink logit (sd)"] / t["sink key norm"], 1 / 8, rtol=0.1)
    assert (np.diff(t["sink share (sd across queries)"]) > 0).all()
    assert (np.diff(t["query-sink cosine (mean)"]) < 0).all()
    assert t.equals(sg.key_norm_sweep((0.25, 1.0, 8.0), n_keys=16, n_queries=500, seed=2))


def _record(n_layers: int, causal: bool = True) -> dict:
    return {"ref": "hand-built", "n_layers": n_layers, "causal": causal}


def test_aggregation_and_verdicts_on_hand_built_attention():
    reducer = SimplexSummaryReducer()
    sink = [reducer(stack(causal_first_sink(n), layers=3, heads=2), causal=True) for n in (5, 7)]
    spread = [reducer(stack(causal_uniform(n), layers=3, heads=2), causal=True) for n in (5, 7)]
    a = sg.simplex_from_summaries(_record(3), sink)
    b = sg.simplex_from_summaries({**_record(3), "ref": "uniform"}, spread)
    assert a.analysis == "softmax_geometry" and a.n_sentences == 2 and a.heads["first_share"].shape == (3, 2)
    assert a.samples["first_share"].shape == (2, 3, 2)  # [sample, layer, head]
    assert np.allclose(a.layers["first_share"], 1) and np.allclose(a.layers["near_first_vertex"], 1)
    assert np.allclose(b.layers["normalized_entropy"], 1, atol=1e-5) and np.allclose(b.layers["near_vertex"], 0)
    table = sg.model_table([a, b])
    assert table["rows with a majority on position 0"].tolist() == pytest.approx([1.0, 0.0])
    assert sg.claim_evidence(a)["outcome"] == "supports" and sg.claim_evidence(b)["outcome"] == "does not support"
    assert "hand-built" in sg_report.geometry_notes([a])


def test_tables_are_corrected_only():
    reducer = SimplexSummaryReducer()
    r = sg.simplex_from_summaries(_record(3), [reducer(stack(causal_first_sink(5), layers=3, heads=2), causal=True)])
    assert r.tables("corrected")["layers"].equals(r.layers)
    with pytest.raises(ValueError, match="no official"):
        r.tables("faithful")


def test_no_summaries_is_a_clear_error():
    with pytest.raises(ValueError, match="no summaries"):
        sg.simplex_from_summaries(_record(2), [])
