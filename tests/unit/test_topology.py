"""Known-answer tests of the topology metrics (faithful and corrected) and their aggregation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.sparse.csgraph import connected_components

from sinkframes.analyses import topology as atopo
from sinkframes.metrics import topology as T
from sinkframes.results import ModelResult
from tests.attention_cases import causal_first_sink, causal_uniform, previous_token, stack


def block_cliques(sizes: list[int], causal: bool = False) -> torch.Tensor:
    """Disjoint groups of tokens that attend uniformly within their group only."""
    n = sum(sizes)
    a = torch.zeros(n, n)
    start = 0
    for m in sizes:
        a[start : start + m, start : start + m] = 1.0
        start += m
    if causal:
        a = torch.tril(a)
    return a / a.sum(-1, keepdim=True)


def cycle(n: int = 6, near: float = 0.35, far: float | None = None) -> torch.Tensor:
    """Each token splits its attention between its two ring neighbours (``near`` each) and the others."""
    far = (1 - 2 * near) / (n - 3) if far is None else far
    a = torch.full((n, n), far, dtype=torch.float64)
    a.fill_diagonal_(0.0)
    for i in range(n):
        a[i, (i + 1) % n] = near
        a[i, (i - 1) % n] = near
    return a


def random_attention(n: int, causal: bool, seed: int, scale: float = 2.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, n, generator=g) * scale
    if causal:
        logits = logits.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), float("-inf"))
    return logits.softmax(-1)


def betti_at(dgm: np.ndarray, t: float) -> int:
    return int(T.betti_curve(dgm, [t])[0])


# ----------------------------------------------------------------------------- helpers

def test_faithful_layers_match_the_official_selection():
    assert T.faithful_layers(28) == [0, 7, 14, 21, 27]
    assert T.faithful_layers(12) == [0, 3, 6, 9, 11]
    assert T.faithful_layers(30) == [0, 7, 14, 21, 29]
    assert T.faithful_layers(6) == [0, 1, 2, 3, 5]
    assert T.faithful_layers(2) == [0, 1]
    assert T.faithful_layers(1) == [0]
    with pytest.raises(ValueError):
        T.faithful_layers(0)


def test_subsample_keeps_thirty_evenly_spaced_tokens():
    assert T.subsample_indices(12).tolist() == list(range(12))
    idx = T.subsample_indices(48)
    assert len(idx) == 30 and idx[0] == 0 and idx[-1] == 47 and np.all(np.diff(idx) >= 1)
    assert T.subsample_indices(59).tolist() == [2 * k for k in range(30)]


def test_betti_curve_counts_bars_alive_at_each_scale():
    dgm = np.array([[0.0, 0.5], [0.2, np.inf]])
    # threshold t <-> scale 1 - t
    assert T.betti_curve(dgm, [0.9, 0.7, 0.5, 0.1]).tolist() == [1, 2, 1, 1]
    assert T.total_persistence(dgm) == pytest.approx(0.5)
    assert T.total_persistence(dgm, max_scale=0.4) == pytest.approx(0.4 + 0.2)
    assert T.betti_curve(np.zeros((0, 2)), [0.5]).tolist() == [0]


def test_truncated_filtration_keeps_the_betti_curves():
    a = random_attention(20, causal=True, seed=3)
    d = T.corrected_distance(a, causal=True)
    full, cut = T.corrected_diagrams(d), T.corrected_layer(a, causal=True)
    assert np.array_equal(T.betti_curve(full[0]), cut.betti0)
    assert np.array_equal(T.betti_curve(full[1]), cut.betti1)


def test_bad_input_is_rejected_with_a_clear_error():
    with pytest.raises(ValueError, match="square"):
        T.faithful_layer(torch.ones(3, 4))
    with pytest.raises(ValueError, match="NaN"):
        T.corrected_distance(torch.full((3, 3), float("nan")), causal=False)
    with pytest.raises(ValueError, match="symmetric"):
        T.corrected_diagrams(np.array([[0.0, 0.2], [0.4, 0.0]]))
    with pytest.raises(ValueError, match=r"\[layer, head"):
        T.TopologyReducer()(torch.ones(3, 3), causal=True)


# ----------------------------------------------------------------------------- corrected

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sizes", [[3, 4], [2, 5, 3], [4, 4, 4, 4]])
def test_disjoint_cliques_give_one_component_each(sizes, causal):
    a = block_cliques(sizes, causal)
    c = T.corrected_layer(a, causal)
    k = len(sizes)
    assert np.isinf(c.h0[:, 1]).sum() == k  # k components that never merge
    weakest = min(a[a > 0]).item()
    for t in (0.001, 0.01, weakest):
        assert betti_at(c.h0, t) == k
    assert c.betti1.max() == 0


def test_cycle_has_one_loop_over_exactly_its_scale_range():
    a = cycle(6, near=0.35)  # others get 0.1
    c = T.corrected_layer(a, causal=False)
    assert len(c.h1) == 1
    birth, death = c.h1[0]
    assert birth == pytest.approx(1 - 0.35) and death == pytest.approx(1 - 0.1)
    assert betti_at(c.h1, 0.35) == 1 and betti_at(c.h1, 0.2) == 1 and betti_at(c.h1, 0.1001) == 1
    assert betti_at(c.h1, 0.36) == 0 and betti_at(c.h1, 0.1) == 0 and betti_at(c.h1, 0.01) == 0
    assert betti_at(c.h0, 0.35) == 1 and betti_at(c.h0, 0.36) == 6


def test_cycle_without_chords_never_closes():
    a = cycle(5, near=0.5, far=0.0)
    c = T.corrected_layer(a, causal=False)
    assert len(c.h1) == 1 and np.isinf(c.h1[0, 1])
    assert betti_at(c.h1, 0.001) == 1


def test_star_is_connected_with_no_loop():
    n = 8
    a = torch.zeros(n, n, dtype=torch.float64)
    a[0] = 1.0 / n  # the centre looks everywhere
    a[1:, 0] = 0.9  # every leaf looks at the centre
    a[range(1, n), range(1, n)] = 0.1
    c = T.corrected_layer(a, causal=False)
    assert betti_at(c.h0, 0.9) == 1 and betti_at(c.h0, 0.91) == n
    assert c.betti1.max() == 0
    assert T.total_persistence(c.h0) == pytest.approx((n - 1) * (1 - 0.9))
    # area under the beta0 curve up to the smallest threshold: the leaves plus the one lasting component
    assert c.total_persistence(0) == pytest.approx((n - 1) * (1 - 0.9) + (1 - 0.001))


def test_causal_first_sink_is_a_star_with_zero_length_bars():
    c = T.corrected_layer(causal_first_sink(10), causal=True)
    assert len(c.h0) == 1 and np.isinf(c.h0[0, 1])  # every leaf joins the centre at scale 0
    assert c.betti0.tolist() == [1] * len(T.CURVE_THRESHOLDS)
    assert len(c.h1) == 0


@pytest.mark.parametrize("n", [4, 9])
def test_complete_graph_from_a_uniform_matrix(n):
    a = torch.full((n, n), 1.0 / n, dtype=torch.float64)
    c = T.corrected_layer(a, causal=False)
    assert betti_at(c.h0, 1.0 / n) == 1 and betti_at(c.h0, 1.0 / n + 1e-5) == n
    # within round-off of the threshold an edge counts as present, whichever side the float lands on
    assert betti_at(c.h0, 1.0 / n + 1e-7) == 1 and betti_at(c.h0, 1.0 / n - 1e-7) == 1
    assert c.betti1.max() == 0
    assert T.total_persistence(c.h0) == pytest.approx((n - 1) * (1 - 1.0 / n))
    assert c.total_persistence(1) == 0


def test_causal_mask_is_missing_data_not_zero_attention():
    a = causal_uniform(6)
    s = T.symmetric_similarity(a, causal=True)
    assert np.allclose(s, s.T) and np.all(np.diag(s) == 0)
    # the pair (1, 4) is seen only from query 4: its weight is used, the masked zero is not
    assert s[1, 4] == pytest.approx(1 / 5)
    d = T.corrected_distance(a, causal=True)
    assert np.isfinite(d).all()


def test_pairs_never_observed_are_absent_edges():
    # bidirectional rows that ignore each other: only the diagonal is non-zero
    d = T.corrected_distance(torch.eye(4), causal=False)
    assert np.isinf(d[~np.eye(4, dtype=bool)]).all()
    h0, h1 = T.corrected_diagrams(d)
    assert np.isinf(h0[:, 1]).sum() == 4 and len(h1) == 0


@pytest.mark.parametrize("causal", [False, True])
def test_corrected_betti0_equals_connected_components(causal):
    a = random_attention(25, causal, seed=7)
    c = T.corrected_layer(a, causal)
    s = T.symmetric_similarity(a, causal)
    for t in T.PAPER_THRESHOLDS:
        k, _ = connected_components((s >= t).astype(int), directed=False)
        assert betti_at(c.h0, t) == k


def test_corrected_top_key_removes_the_column_mean_bias():
    n = 7
    a = stack(previous_token(n), layers=1, heads=1)
    assert T.faithful_top_keys(a).item() == 0  # column 0 collects row 0's self-attention too
    assert T.corrected_top_keys(a, causal=True).item() == n - 2  # seen by one query, with weight 1
    assert T.position_label(0, n) == "first" and T.position_label(n - 1, n) == "last" and T.position_label(3, n) == "3"


# ----------------------------------------------------------------------------- faithful

def test_faithful_h0_replays_ripser_on_a_hand_computed_case():
    d = np.array([[0.5, 0.0, 0.7], [9.0, 0.2, 0.9], [9.0, 9.0, 0.3]], dtype=np.float32)
    h0, h1 = T.faithful_diagrams(d)
    # edge {0,1} is 0 -> absent; lower triangle (9.0) ignored; births on the diagonal
    expected = np.array([[0.5, 0.7], [0.3, 0.9], [0.2, np.inf]], dtype=np.float32).astype(float)
    assert np.allclose(h0, expected)
    assert len(h1) == 0


def test_faithful_reads_only_the_upper_triangle():
    a = random_attention(12, causal=False, seed=1).numpy()
    d = T.faithful_distance(a)
    d2 = d.copy()
    d2[np.tril_indices(12, -1)] = 0.5
    for x, y in zip(T.faithful_diagrams(d), T.faithful_diagrams(d2), strict=True):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("n", [12, 30, 41, 48])
def test_faithful_causal_uniform_is_the_degenerate_count(n):
    f = T.faithful_layer(causal_uniform(n))
    k = min(n, 30)
    idx = T.subsample_indices(n)[1:]
    assert f["betti0"] == k  # the capped token count
    assert f["betti1"] == 0
    # every finite H0 bar is [1 - A_ii, 1]: the persistence is the self-attention 1 / (i + 1)
    assert f["dim0_avg"] == pytest.approx(np.mean(1.0 / (idx + 1)), rel=1e-5)
    assert f["dim0_max"] == pytest.approx(0.5)
    assert f["self_attention"] == pytest.approx(f["dim0_avg"], rel=1e-5)
    assert np.isnan(f["dim1_avg"])
    assert f["attention_mean"] == pytest.approx(1.0 / n) and f["attention_max"] == 1.0


def test_faithful_betti0_counts_tokens_with_self_attention():
    f = T.faithful_layer(causal_first_sink(10))  # no token after the first attends to itself
    assert f["betti0"] == 1 and f["betti1"] == 0 and np.isnan(f["dim0_avg"])


def test_faithful_uniform_bidirectional_has_a_single_point():
    f = T.faithful_layer(torch.full((8, 8), 1 / 8))
    assert f["betti0"] == 1 and f["betti1"] == 0
    assert f["attention_std"] == pytest.approx(0.0) and f["attention_mean"] == pytest.approx(1 / 8)


def test_faithful_h1_agrees_with_corrected_on_a_symmetric_zero_diagonal_matrix():
    a = cycle(6, near=0.35)
    f = T.faithful_layer(a)
    assert f["betti1"] == 1 and f["dim1_avg"] == pytest.approx(0.25, abs=1e-6)
    assert f["betti0"] == 1  # vertex births at 1 lie above every edge: no finite H0 bar survives


def test_faithful_is_degenerate_on_any_causal_matrix_at_every_layer():
    L, H, n = 5, 3, 37
    att = torch.stack([torch.stack([random_attention(n, True, seed=10 * layer + h) for h in range(H)])
                       for layer in range(L)])
    out = T.TopologyReducer()(att, causal=True)
    f = out["faithful"].numpy()  # [layer, field]
    b0, b1 = f[:, T.FAITHFUL_FIELDS.index("betti0")], f[:, T.FAITHFUL_FIELDS.index("betti1")]
    assert (b0 == 30).all() and (b1 == 0).all()
    pers, selfatt = f[:, T.FAITHFUL_FIELDS.index("dim0_avg")], f[:, T.FAITHFUL_FIELDS.index("self_attention")]
    assert np.allclose(pers, selfatt, atol=1e-6)
    assert out["betti0_curve"].shape == (L, len(T.CURVE_THRESHOLDS))
    assert out["faithful_top"].shape == (L, H) and out["corrected_top"].shape == (L, H)


def test_reducer_truncates_causal_models_like_the_tokenizer():
    n = 60
    att = stack(causal_uniform(n), layers=1, heads=2)
    f = T.TopologyReducer(max_tokens=48)(att, causal=True)["faithful"][0]
    mean_idx = T.FAITHFUL_FIELDS.index("attention_mean")
    assert f[mean_idx].item() == pytest.approx(1 / 48)  # the 48-token prefix
    g = T.TopologyReducer(max_tokens=48)(stack(torch.full((n, n), 1 / n)), causal=False)["faithful"][0]
    assert g[mean_idx].item() == pytest.approx(1 / n)  # encoders are used whole


def test_faithful_matches_ripser():
    import ripser  # a test dependency: the reference implementation the official code called
    for seed in range(20):
        n = 5 + 2 * seed
        a = random_attention(n, causal=seed % 2 == 0, seed=seed).numpy().astype(np.float32)
        d = T.faithful_distance(a)
        ref = ripser.ripser(d, maxdim=1, distance_matrix=True)["dgms"]
        for mine, theirs in zip(T.faithful_diagrams(d), ref, strict=True):
            key = lambda x: x[np.lexsort((x[:, 1], x[:, 0]))]  # noqa: E731
            assert len(mine) == len(theirs) and np.allclose(key(mine), key(theirs), atol=1e-6)


# ----------------------------------------------------------------------------- aggregation

def _fake_model(causal: bool, tokens: list[list[str]], tops: list[int]) -> ModelResult:
    """A one-layer, one-head model whose per-sentence outputs come from the reducer on first-sink matrices."""
    summaries = []
    for toks, top in zip(tokens, tops, strict=True):
        n = len(toks)
        a = torch.zeros(n, n)
        a[:, top] = 1.0
        if causal:
            a = torch.tril(a)
            a[range(n), range(n)] += (a.sum(-1) == 0).float()
        summaries.append(T.TopologyReducer()(stack(a, layers=1, heads=1), causal))
    record = {"ref": "fake", "n_layers": 1, "causal": causal, "adds_bos": True, "position0_token": "<s>"}
    return atopo.from_summaries(record, tokens, summaries)


def test_head_specialization_by_position_and_by_string():
    tokens = [["<s>", "a", "b", "</s>"], ["<s>", "c", "d", "e", "</s>"], ["<s>", "f", "g", "</s>"]]
    mt = _fake_model(False, tokens, tops=[3, 4, 1])  # last, last, position 1
    t = atopo.head_specialization(mt)
    row = t.iloc[0]
    assert row["position"] == "last" and row["position consistency"] == pytest.approx(2 / 3)
    assert row["token"] == "</s>" and row["token consistency"] == pytest.approx(2 / 3)
    assert row["faithful token"] == "</s>"


def test_string_specialization_collapses_without_a_start_token():
    tokens = [["The", "x", "y"], ["In", "x", "y"], ["A", "x", "y"], ["It", "x", "y"]]
    mt = _fake_model(True, tokens, tops=[0, 0, 0, 0])
    row = atopo.head_specialization(mt).iloc[0]
    assert row["position"] == "first" and row["position consistency"] == 1.0
    assert row["faithful consistency"] == pytest.approx(0.25)  # four different strings at position 0


def test_degeneracy_table_detects_the_token_count():
    tokens = [["<s>"] + ["w"] * k for k in (5, 9, 40)]
    mt = _fake_model(True, tokens, tops=[0, 0, 0])
    row = atopo.degeneracy_table([mt]).iloc[0]
    assert row["faithful Betti1 (max)"] == 0
    # with several layers the same-at-every-layer share is a real test (one layer would pass by construction)
    deep = atopo.degeneracy_table([_uniform_model(True, layers=3)]).iloc[0]
    assert deep["sentences with the same Betti0 at every layer"] == 1.0 and deep["Betti0 = min(tokens, 30)"] == 1.0


def test_faithful_layer_tests_reproduce_the_constant_decoder_pattern():
    lengths = (6, 10, 15, 21, 34)
    tokens = [["<s>"] + ["w"] * (n - 1) for n in lengths]
    summaries = [T.TopologyReducer()(stack(causal_uniform(n), layers=2, heads=1), True) for n in lengths]
    mt = atopo.from_summaries({"ref": "fake", "n_layers": 2, "causal": True}, tokens, summaries)
    t = atopo.faithful_layer_tests(mt)
    by = t.set_index("metric")["p"]
    assert by["Betti0"] == pytest.approx(1.0) and by["mean attention"] == pytest.approx(1.0)
    assert np.isnan(by["Betti1"]) and np.isnan(by["max attention"])
    assert not t["significant"].any()


def _uniform_model(causal: bool, lengths: tuple[int, ...] = (6, 10, 15, 21, 34), layers: int = 3) -> ModelResult:
    """Sentences whose every layer and head is uniform attention (causal or bidirectional)."""
    tokens = [["<s>"] + ["w"] * (n - 2) + ["</s>"] for n in lengths]
    make = causal_uniform if causal else (lambda n: torch.full((n, n), 1.0 / n))
    summaries = [T.TopologyReducer()(stack(make(n), layers=layers, heads=2), causal) for n in lengths]
    record = {"ref": "uniform", "n_layers": layers, "causal": causal, "adds_bos": True, "position0_token": "<s>"}
    return atopo.from_summaries(record, tokens, summaries)


def test_analysis_result_has_a_per_layer_table_and_tables_by_mode():
    mt = _uniform_model(True, layers=4)
    assert mt.analysis == "topology" and mt.n_sentences == 5 and mt.n_layers == 4
    assert mt.samples["betti0"].shape == (5, 4, len(T.CURVE_THRESHOLDS))
    assert mt.samples["faithful_top"].shape == (5, 4, 2)
    assert atopo.analysed_layers(mt) == T.faithful_layers(4)
    assert mt.layers["layer"].tolist() == [0, 1, 2, 3]
    assert mt.layers["analysed"].tolist() == [layer in T.faithful_layers(4) for layer in range(4)]
    corrected_all = atopo.corrected_table(mt).drop(columns="model")
    pd.testing.assert_frame_equal(mt.layers[corrected_all.columns], corrected_all)
    assert mt.layers["faithful betti0"].to_numpy() == pytest.approx(atopo.faithful_field(mt, "betti0").mean(0))
    faithful, corrected = mt.tables("faithful"), mt.tables("corrected")
    assert set(faithful) == {"layers", "tests"} and set(corrected) == {"layers"}
    assert faithful["layers"]["layer"].tolist() == corrected["layers"]["layer"].tolist() == atopo.analysed_layers(mt)
    assert "Betti0" in faithful["layers"] and "β0@0.05" in corrected["layers"]
    both = atopo.layer_tables([mt, mt], "corrected")
    pd.testing.assert_frame_equal(both.iloc[: len(corrected["layers"])], corrected["layers"])
    with pytest.raises(ValueError, match="mode"):
        mt.tables("official")  # type: ignore[arg-type]


def test_record_and_summaries_must_agree_on_the_depth():
    summaries = [T.TopologyReducer()(stack(causal_uniform(6), layers=2, heads=1), True)]
    with pytest.raises(ValueError, match="layers"):
        atopo.from_summaries({"ref": "fake", "n_layers": 3, "causal": True}, [["w"] * 6], summaries)


def test_topology_claims_on_uniform_attention_are_not_diagnostic():
    from sinkframes import verdicts

    dec = _uniform_model(True)
    dec.record.update({"family": "llama", "paper_frame": "centralized", "n_heads": 2})
    by = {(v.claim, v.question): v for v in verdicts.evaluate_model(dec)}
    # the model is its own null: whatever it meets, the null meets too
    assert by[("E.betti1_zero", "reproduced")].status == "not diagnostic"
    assert by[("E.betti1_zero", "holds")].estimate.value == pytest.approx(0.0)
    # identical layers: no change of persistence with depth, in either mode
    assert by[("E.persistence_rises", "holds")].status == "not supported"
    assert by[("E.persistence_rises", "holds")].estimate.value == pytest.approx(0.0)
    # uniform causal attention: the corrected score peaks on the first token (argmax ties) in every sentence
    assert by[("E.bos_heads", "holds")].estimate.value == pytest.approx(1.0)
    assert by[("E.bos_heads", "holds")].status == "not diagnostic"



def _shortest_per_focus_word(selected: pd.DataFrame, data: pd.DataFrame, k: int) -> bool:
    """Whether the first ``k`` selected rows name ``k`` different focus words, each by its shortest text in ``data``."""
    head = selected.iloc[:k]
    shortest = data.assign(n=data["text"].str.len()).groupby("focus_word")["n"].min()
    return (head["focus_word"].nunique() == k
            and all(len(t) == shortest[w] for t, w in zip(head["text"], head["focus_word"], strict=True)))


def test_official_selection_takes_the_shortest_text_per_focus_word_then_short_and_middle_thirds():
    rows = [("a" * k, w) for k, w in [(30, "x"), (10, "x"), (20, "y"), (50, "y"), (40, "z"), (5, "z"), (25, "z")]]
    rows += [("b" * k, "solo") for k in range(60, 90)]
    data = pd.DataFrame(rows, columns=["text", "focus_word"])
    out = atopo.official_selection(data, 3, seed=0)
    # three most frequent focus words (solo: 30, z: 3, then x or y: 2) -> the shortest text of each
    assert out["text"].str.len().tolist()[:2] == [60, 5]
    big = atopo.official_selection(data, 10, seed=1)
    assert len(big) == 10
    # all four focus words fit in n = 10: the first four rows are the shortest text of each
    assert _shortest_per_focus_word(big, data, 4) and set(big["focus_word"].iloc[:4]) == {"solo", "x", "y", "z"}
    # the check can fail: a longer text of the same word, or the same word twice, is caught
    longer = big.copy()
    longer.loc[0, "text"] = "b" * 89
    twice = big.copy()
    twice.iloc[1] = twice.iloc[0]
    assert not _shortest_per_focus_word(longer, data, 4) and not _shortest_per_focus_word(twice, data, 4)
    longest_third = set(data["text"].str.len().sort_values().iloc[2 * (len(data) // 3):])
    # the random part comes from the shortest and middle thirds only
    assert not set(big["text"].str.len().iloc[4:]) & longest_third
    assert atopo.official_selection(data, 10, seed=1).equals(big)
    with pytest.raises(ValueError, match="focus_word"):
        atopo.official_selection(data.drop(columns="focus_word"), 3)


def test_official_selection_on_the_paper_csv_matches_the_spec():
    from sinkframes import corpus
    from tests.conftest import PAPER_CSV

    if not PAPER_CSV.exists():
        pytest.skip(f"paper CSV not at {PAPER_CSV}")
    data = corpus.load_paper_csv(PAPER_CSV)
    out = atopo.official_selection(data, 500, seed=0)
    assert len(out) == 500 and out["focus_word"].iloc[:438].nunique() == 438
    # the 438 shortest-per-focus-word sentences average 27.0 words (28.6 for the whole set)
    assert out["word_count"].iloc[:438].mean() == pytest.approx(27.0, abs=0.05)
    assert out["text"].str.len().iloc[438:].max() <= 222  # top-up from the shorter two thirds only


def test_betti_curves_do_not_move_with_round_off_at_a_threshold():
    # bidirectional uniform attention over 10 tokens: every share is 1/10, a paper threshold, exactly where
    # another CPU's round-off lands the shares on either side of it
    base = torch.full((1, 2, 10, 10), 0.1, dtype=torch.float32)  # [layer, head, query, key]
    curves = []
    for eps in (0.0, 3e-8, -3e-8):
        a = (base + eps).clamp_min(0)
        a = a / a.sum(-1, keepdim=True) if eps == 0.0 else a
        curves.append(T.TopologyReducer()(a, causal=False)["betti0_curve"])
    assert all(torch.equal(curves[0], c) for c in curves[1:])
