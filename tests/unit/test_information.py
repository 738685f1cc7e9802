"""Known-answer tests of sink sets, KL change on sink removal and sink mass."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import entropy

from sinkframes.analyses import information as ainf
from sinkframes.metrics import information as inf
from sinkframes.types import MODES
from tests.attention_cases import causal_first_sink, causal_uniform, stack


def test_kl_rows_matches_known_values_and_scipy():
    p = torch.tensor([0.5, 0.5])
    q = torch.tensor([0.25, 0.75])
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert inf.kl_rows(p, q).item() == pytest.approx(expected)
    rng = np.random.default_rng(0)
    a, b = rng.random(7), rng.random(7)
    assert inf.kl_rows(torch.tensor(a), torch.tensor(b)).item() == pytest.approx(entropy(a, b))
    assert inf.kl_rows(p, p).item() == 0.0
    assert math.isinf(inf.kl_rows(torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0])).item())
    # 0 log 0 = 0: support of p inside support of q
    assert inf.kl_rows(torch.tensor([1.0, 0.0]), torch.tensor([0.5, 0.5])).item() == pytest.approx(math.log(2))


def test_official_layers_match_spec():
    assert inf.official_layers(6) == [0, 1, 2, 3, 4, 5]
    assert inf.official_layers(12) == [0, 1, 3, 5, 7, 9, 11]
    assert inf.official_layers(28)[:4] == [0, 1, 3, 5] and inf.official_layers(28)[-2:] == [25, 27]
    assert inf.faithful_rows(30, torch.device("cpu")).tolist() == np.floor(np.linspace(0, 29, 20)).astype(int).tolist()
    assert inf.faithful_rows(7, torch.device("cpu")).tolist() == list(range(7))


def test_percentile_sinks_on_first_sink():
    a = stack(causal_first_sink(10))  # all mass on key 0
    for q in inf.SINK_QUANTILES:
        s = inf.percentile_sinks(a, q)
        # incoming mass: key 0 gets everything, the rest 0 -> quantile is 0 for q < 0.9 and
        # every key ties at the threshold; at 0.95 only key 0 is at or above it
        assert s[:, 0].all()
    assert inf.percentile_sinks(a, 0.95).sum(-1).tolist() == [1, 1]
    assert inf.percentile_sinks(a, 0.8).sum(-1).tolist() == [10, 10]  # ties at zero: the official rule keeps all


def test_threshold_sinks_paper_rule():
    assert inf.threshold_sinks(stack(causal_first_sink(8)), causal=True)[0].tolist() == [True] + [False] * 7
    assert not inf.threshold_sinks(stack(causal_uniform(40)), causal=True).any()


def test_remove_columns_renormalizes_and_handles_empty_rows():
    a = stack(causal_uniform(4), layers=1, heads=1).double()
    cols = torch.tensor([[True, False, False, False]])
    m = inf.remove_columns(a, cols, "nan")[0, 0]
    assert torch.isnan(m[0]).all()  # query 0 saw only key 0
    torch.testing.assert_close(m[3], torch.tensor([0, 1 / 3, 1 / 3, 1 / 3], dtype=torch.float64))
    torch.testing.assert_close(m[1], torch.tensor([0, 1.0, 0, 0], dtype=torch.float64))
    u = inf.remove_columns(a, cols, "uniform")[0, 0]
    # official: the future keys are included
    torch.testing.assert_close(u[0], torch.tensor([0, 1 / 3, 1 / 3, 1 / 3], dtype=torch.float64))


def test_kl_change_two_heads_known_answer():
    # head 0 puts 0.5 on the sink and 0.5 on key 1; head 1 puts 0.5 on the sink and 0.5 on key 2.
    # Before: P0=(.5,.5,0), P1=(.5,0,.5), mean=(.5,.25,.25): KL = .5 ln 2 for both heads.
    # After removing key 0: (0,1,0) and (0,0,1), mean (0,.5,.5): KL = ln 2.  Reduction = -0.5 ln 2.
    n = 3
    a = torch.zeros(1, 2, n, n)
    a[0, 0, :, :] = torch.tensor([0.5, 0.5, 0.0])
    a[0, 1, :, :] = torch.tensor([0.5, 0.0, 0.5])
    cols = torch.tensor([[True, False, False]])
    for mode in MODES:
        ch = inf.kl_change(a, cols, mode)
        assert ch["before"].item() == pytest.approx(0.5 * math.log(2))
        assert ch["after"].item() == pytest.approx(math.log(2))
        assert ch["reduction"].item() == pytest.approx(-0.5 * math.log(2))


def test_kl_change_identical_heads_is_zero_and_no_sink_is_nan():
    a = stack(causal_uniform(6))
    cols = inf.percentile_sinks(a, 0.95)
    for mode in MODES:
        ch = inf.kl_change(a, cols, mode)
        assert torch.allclose(ch["reduction"], torch.zeros(2, dtype=torch.float64), atol=1e-12)
    none = torch.zeros(2, 6, dtype=torch.bool)
    assert torch.isnan(inf.kl_change(a, none, "corrected")["reduction"]).all()


def test_faithful_uses_twenty_rows():
    # heads differ only on query rows outside the official 20-row subset -> faithful sees 0
    n = 40
    rows = set(inf.faithful_rows(n, torch.device("cpu")).tolist())
    other = next(i for i in range(5, n) if i not in rows)
    a = stack(causal_uniform(n), layers=1, heads=2).clone()
    a[0, 1, other] = 0
    a[0, 1, other, 1] = 1.0
    cols = torch.zeros(1, n, dtype=torch.bool)
    cols[0, 0] = True
    assert inf.kl_change(a, cols, "faithful")["before"].item() == pytest.approx(0.0, abs=1e-12)
    assert inf.kl_change(a, cols, "corrected")["before"].item() > 0


def test_sink_mass_share_heads_subset():
    a = torch.zeros(1, 6, 5, 5)
    a[0, :4, :, 0] = 1.0  # heads 0-3: all on key 0
    a[0, 4:, :, 4] = 1.0  # heads 4-5: all on key 4
    cols = torch.tensor([[True, False, False, False, False]])
    assert inf.sink_mass_share(a, cols, heads=4).item() == pytest.approx(1.0)
    assert inf.sink_mass_share(a, cols).item() == pytest.approx(4 / 6)


def test_reducer_and_tables():
    rng = torch.Generator().manual_seed(0)
    summaries = []
    red = inf.InformationReducer()
    for n in (8, 12, 25, 9):
        logits = torch.randn(3, 4, n, n, generator=rng)
        logits[..., 0] += 3.0
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool))
        a = torch.softmax(logits.masked_fill(~mask, float("-inf")), -1)
        summaries.append(red(a, True))
    assert summaries[0]["p90/faithful/reduction"].shape == (3,)
    samples = ainf.stack_all(summaries)
    assert samples["p90/n_sinks"].shape == (4, 3) and samples["n_tokens"].tolist() == [8, 12, 25, 9]
    f = ainf.layer_table(samples, "faithful", "p90")
    c = ainf.layer_table(samples, "corrected", "p90", n_perm=200)
    assert list(f["layer"]) == [0, 1, 2] and (f["p_value"] == 1.0).all() and (f["combined_p"] == 1.0).all()
    assert (c["ci_low"] <= c["kl_reduction"] + 1e-12).all() and (c["kl_reduction"] <= c["ci_high"] + 1e-12).all()
    assert ((c["p_holm"] >= c["p_value"]) & (c["p_holm"] <= 1)).all()
    assert ((c["sink_mass"] > 0) & (c["sink_mass"] <= 1)).all()
    r = ainf.region_table(samples, "p90")
    assert list(r["region"]) == ["early", "middle", "late"]
    with pytest.raises(ValueError, match="mode"):
        ainf.layer_table(samples, "official", "p90")  # type: ignore[arg-type]


def _summaries(n_layers: int = 3, lengths: tuple[int, ...] = (8, 12, 25, 9)) -> list[dict[str, torch.Tensor]]:
    rng = torch.Generator().manual_seed(0)
    out = []
    for n in lengths:
        logits = torch.randn(n_layers, 4, n, n, generator=rng)
        logits[..., 0] += 3.0
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool))
        out.append(inf.InformationReducer()(torch.softmax(logits.masked_fill(~mask, float("-inf")), -1), True))
    return out


def test_result_and_tables_by_mode():
    record = {"ref": "fake", "n_layers": 3, "causal": True, "family": "llama"}
    r = ainf.from_summaries(record, _summaries(), seed=2)
    assert r.analysis == "information" and r.n_sentences == 4 and r.params["seed"] == 2
    assert r.data["output"] is None and r.data["fisher"] == {}
    pd.testing.assert_frame_equal(r.layers, ainf.layer_table(r.samples, "corrected", ainf.DEFAULT_RULE, seed=2))
    faithful, corrected = r.tables("faithful"), r.tables("corrected")
    assert set(faithful) == {"layers"} and set(corrected) == {"layers", "regions"}
    pd.testing.assert_frame_equal(faithful["layers"], ainf.layer_table(r.samples, "faithful", "p90", seed=2))
    pd.testing.assert_frame_equal(corrected["regions"], ainf.region_table(r.samples, "p90", seed=2))
    # computed once per result and mode: the same frame comes back
    assert ainf.model_layers(r, "corrected") is r.layers
    assert ainf.model_layers(r, "corrected", "p95") is ainf.model_layers(r, "corrected", "p95")
    prof = ainf.kl_profiles([r])
    assert prof.groupby("mode").size().to_dict() == {"corrected": 3, "faithful": 3}
    summary = ainf.summary_table([r])
    assert summary["mode"].tolist() == list(MODES)
    assert set(ainf.rule_table([r])["rule"]) == set(inf.rules())
    assert ainf.output_table([r]).empty and ainf.fisher_profiles([r]).empty


def test_analyse_passes_every_run_option_to_every_suite(monkeypatch):
    from sinkframes.analyses import information as module
    from sinkframes.extraction import Extraction
    from sinkframes.types import RunOptions

    seen: dict[str, list[RunOptions]] = {"summarize": [], "output": [], "fisher": []}
    refs: list[str] = []

    def summarize(ref, texts, reducer, opts):
        seen["summarize"].append(opts)
        refs.append(ref)
        record = {"ref": ref, "n_layers": 3, "causal": True, "family": "llama"}
        return Extraction(record=record, texts=texts, tokens=[], summaries=_summaries(), from_cache=True)

    def output_check(ref, texts, seed=0, opts=None):
        seen["output"].append(opts)
        return "output check"

    def fisher(ref, texts, mode, seed=0, opts=None):
        seen["fisher"].append(opts)
        return f"fisher {mode} on {len(texts)}"

    monkeypatch.setattr(module, "summarize", summarize)
    monkeypatch.setattr(module.sink_removal, "cached_output_check", output_check)
    monkeypatch.setattr(module.fisher_mod, "cached_fisher", fisher)
    options = dict(batch_size=3, max_length=64, bos_policy="force", truncation=True, dtype="float16", device="cpu",
                   revision="abc", quantization="q4", progress=False, use_cache=False)
    results = module.analyse(["a", "b"], ["x"] * 5, n_output=2, n_fisher=1, seed=1, **options)
    expected = RunOptions(**options)
    # each model and its random-initialized twin get the KL suite; the twin gets no output check and no Fisher
    assert refs == ["a", "random:a", "b", "random:b"]
    assert seen == {"summarize": [expected] * 4, "output": [expected] * 2, "fisher": [expected] * 4}
    r = results[0]
    assert r.data["twin"].ref == "random:a" and not r.data["twin"].data["fisher"]
    assert r.from_cache and r.data["output"] == "output check"
    assert r.data["fisher"] == {"faithful": "fisher faithful on 1", "corrected": "fisher corrected on 1"}
    assert r.params == {"n_output": 2, "n_fisher": 1, "seed": 1, **options}
    assert module.analyse(["a"], ["x"] * 5, n_output=0, n_fisher=0, twin=False, **options)[0].data.get("twin") is None
    with pytest.raises(TypeError, match="run option"):
        module.analyse(["a"], ["x"], batchsize=3)
    with pytest.raises(ValueError, match="n_output"):
        module.analyse(["a"], ["x"], n_output=-1)


def test_bad_input():
    with pytest.raises(ValueError, match="layer, head, query, key"):
        inf.percentile_sinks(torch.zeros(3, 3), 0.9)
    with pytest.raises(ValueError, match="mode"):
        inf.kl_change(stack(causal_uniform(4)), torch.zeros(2, 4, dtype=torch.bool), "official")


def test_reducer_agrees_with_public_functions():
    g = torch.Generator().manual_seed(1)
    n, layers = 24, 8
    mask = torch.tril(torch.ones(n, n, dtype=torch.bool))
    a = torch.softmax(torch.randn(layers, 3, n, n, generator=g).masked_fill(~mask, float("-inf")), -1)
    out = inf.InformationReducer()(a, True)
    cols = inf.percentile_sinks(a, 0.9)
    off = inf.official_layers(layers)
    f = inf.kl_change(a, cols, "faithful")["reduction"]
    c = inf.kl_change(a, cols, "corrected")["reduction"]
    torch.testing.assert_close(out["p90/faithful/reduction"][off], f[off].float())
    assert torch.isnan(out["p90/faithful/reduction"][[i for i in range(layers) if i not in off]]).all()
    torch.testing.assert_close(out["p90/corrected/reduction"], c.float(), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(out["p90/mass_first4"], inf.sink_mass_share(a, cols, 4).float())


# ---------------------------------------------------------------------------------------------
# the reducer against its first, direct implementation


def _reference_summary(attn: torch.Tensor, causal: bool, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """``InformationReducer`` as first written: one masked, renormalized copy of the attention per rule
    and mode. ``dtype`` is the precision of the corrected rows (float32 as first written; float64
    leaves only the difference in arithmetic)."""
    a = attn.float()
    n_layers, n = a.shape[0], a.shape[-1]
    out: dict[str, torch.Tensor] = {"n_tokens": torch.tensor(n)}
    probs = inf._row_probs(a, False, dtype)  # [layer, head, query, key]
    before_rows = inf.divergence_rows(probs)  # [layer, head, query]
    f_layers = torch.tensor(inf.official_layers(n_layers))
    rows = inf.faithful_rows(n, a.device)
    f_probs = inf._row_probs(a[f_layers][:, :, rows], True)  # [official layer, head, row, key]
    f_before = inf.inter_head_divergence(f_probs).mean(-1)
    colmass = a.double().sum(-2)  # [layer, head, key]
    for rule, cols in inf.sink_sets(a, causal).items():
        out[f"{rule}/n_sinks"] = cols.sum(-1)
        out[f"{rule}/has_first"] = cols[:, 0]
        out[f"{rule}/mass_all_heads"] = inf._mass_share(colmass, cols).float()
        out[f"{rule}/mass_first4"] = inf._mass_share(colmass[:, : inf.FAITHFUL_HEADS], cols).float()
        ch = inf._corrected_change(probs, cols, before_rows)
        out[f"{rule}/corrected/before"] = ch["before"].float()
        out[f"{rule}/corrected/reduction"] = ch["reduction"].float()
        fch = inf._faithful_change(f_probs, cols[f_layers], f_before)
        for name in ("before", "reduction"):
            full = torch.full((n_layers,), float("nan"))
            full[f_layers] = fch[name].float()
            out[f"{rule}/faithful/{name}"] = full
    return out


def _random_attention(seed: int, layers: int, heads: int, n: int, causal: bool) -> torch.Tensor:
    """Seeded softmax attention ``[layer, head, query, key]`` with sink-like columns (key 0 everywhere,
    key n // 2 in some heads), one head of one layer all on key 0 (rows that lose all their mass when
    key 0 is removed, float16 zeros elsewhere) and, when causal, the causal mask."""
    g = torch.Generator().manual_seed(seed)
    logits = 2.0 * torch.randn(layers, heads, n, n, generator=g)
    logits[..., 0] += 4.0
    logits[:, : max(1, heads // 2), :, n // 2] += 3.0
    if causal:
        logits = logits.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf"))
    a = torch.softmax(logits, -1)
    a[0, heads - 1] = 0.0
    a[0, heads - 1, :, 0] = 1.0
    return a


KL_KEYS = ("corrected/before", "corrected/reduction", "faithful/before", "faithful/reduction")


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("shape", [(3, 4, 5), (4, 3, 20), (8, 5, 21), (30, 9, 33), (7, 4, 70)])
def test_reducer_matches_the_direct_computation(causal, shape):
    layers, heads, n = shape
    a = _random_attention(sum(shape) + causal, layers, heads, n, causal)
    out = inf.InformationReducer()(a, causal)
    first = _reference_summary(a, causal)  # float32 corrected rows, as first written
    exact = _reference_summary(a, causal, torch.float64)
    assert list(out) == list(first)
    for key, value in out.items():
        assert value.dtype == first[key].dtype and value.shape == first[key].shape, key
        if key.endswith(KL_KEYS):  # float64 sums regrouped: equal to rounding
            torch.testing.assert_close(value, exact[key], rtol=1e-6, atol=1e-7, equal_nan=True, msg=key)
            torch.testing.assert_close(value, first[key], rtol=1e-4, atol=2e-6, equal_nan=True, msg=key)
        else:  # sink sets and masses: the same arithmetic
            assert torch.equal(value.nan_to_num(), first[key].nan_to_num()), key
            assert torch.equal(value.isnan(), first[key].isnan()) if value.is_floating_point() else True


def test_reducer_edge_cases_match_the_direct_computation():
    """All columns sinks (uniform bidirectional attention: every percentile keeps every key), rows
    without any mass, and layers without sinks give the same values (or NaN) as first written."""
    n = 24
    uniform = torch.full((3, 4, n, n), 1.0 / n)
    a = _random_attention(5, 3, 4, n, False)
    a[1, 2, 3] = 0.0  # a row with no mass: uniform before anything is removed
    a[2] = 1.0 / n  # a layer whose incoming mass is flat
    for att, causal in ((uniform, False), (a, False), (_random_attention(6, 3, 4, n, True), True)):
        out = inf.InformationReducer()(att, causal)
        exact = _reference_summary(att, causal, torch.float64)
        for key in out:
            torch.testing.assert_close(out[key], exact[key], rtol=1e-6, atol=1e-7, equal_nan=True, msg=key)
    out = inf.InformationReducer()(uniform, False)
    assert torch.isnan(out["p80/faithful/reduction"]).all() and torch.isnan(out["p80/corrected/reduction"]).all()


def test_reducer_refuses_nonfinite_attention():
    from sinkframes.tensors import NonFiniteInputError

    a = _random_attention(1, 3, 2, 6, True)
    a[1, 0, 2, 1] = float("nan")
    with pytest.raises(NonFiniteInputError, match=r"layers \[1\]"):
        inf.InformationReducer()(a, True)
    with pytest.raises(ValueError, match="layer, head, query, key"):
        inf.InformationReducer()(torch.zeros(3, 4, 5), True)
