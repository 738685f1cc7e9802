"""Attention stored once per build and read by the pages (``extraction.shared``, ``sinkframes_build.plan``,
``sinkframes_build.executors``)."""

from __future__ import annotations

import torch

from sinkframes.extraction import shared
from sinkframes.manifest import Page, load_manifest
from sinkframes.types import RunOptions
from sinkframes_build import executors, plan


def test_causal_attention_is_stored_as_its_lower_triangle_and_comes_back_exactly():
    g = torch.Generator().manual_seed(0)
    causal = torch.tril(torch.rand(2, 3, 5, 5, generator=g))  # [layer, head, query, key]
    packed = shared.pack(causal)
    assert set(packed) == {"tril", "n"} and packed["tril"].shape == (2, 3, 15)
    assert torch.equal(shared.unpack(packed), causal)
    full = torch.rand(2, 3, 5, 5, generator=g)  # an encoder's: weight above the diagonal
    assert set(shared.pack(full)) == {"full"}
    assert torch.equal(shared.unpack(shared.pack(full)), full)


def test_the_store_is_not_read_without_the_result_cache_or_for_hidden_states(monkeypatch):
    monkeypatch.setenv(shared.ENV, "1")
    assert shared.active(RunOptions(), hidden_states=False)
    assert not shared.active(RunOptions(use_cache=False), hidden_states=False)
    assert not shared.active(RunOptions(), hidden_states=True)


def _page(pid, **offline):
    return Page(pid, "t.ipynb", f"{pid}.ipynb", pid, "P", {"offline": offline, "smoke": offline})


def test_the_plan_takes_each_models_largest_draw_under_each_setting():
    pages = [
        _page("a", models=["m1", "m2"], n_sentences=200),
        _page("b", models=["m1"], n_sentences=150, dtype="float32"),
        _page("c", models=["m1"], n_sentences=100, max_length=128),  # another setting: its own entry
        _page("d", models=["m2"], n_sentences=500, selection="official"),  # sentences chosen otherwise
        _page("e", models=[], n_sentences=50),
    ]
    planned = {(m, n, s["max_length"]) for m, n, s in plan.attention_plan(pages, "offline")}
    assert planned == {("m1", 200, 256), ("m2", 200, 256), ("m1", 100, 128)}


def test_a_page_that_runs_random_twins_stores_their_attention_too():
    twins = _page("t", models=["m1", "random:m2"], n_sentences=120)
    twins.random_twins = True
    pages = [twins, _page("a", models=["m1"], n_sentences=200)]
    planned = {(m, n) for m, n, _ in plan.attention_plan(pages, "offline")}
    assert planned == {("m1", 200), ("random:m1", 120), ("random:m2", 120)}
    from sinkframes.manifest import load_manifest

    marked = {p.id for p in load_manifest().pages if p.random_twins}
    assert {"topology", "spectral_graphs", "information_geometry", "appendix_h_encoders"} <= marked


def test_a_page_that_decides_again_on_a_second_draw_stores_it_once_for_its_models():
    """Each second draw is its own entry (a second draw of n is disjoint from the first n, so it is not a part of a
    larger one); two pages with the same second draw share it; the twins are not run on it."""
    one = _page("one", models=["m1", "m2"], n_sentences=200)
    two = _page("two", models=["m1"], n_sentences=200)
    small = _page("small", models=["m1"], n_sentences=100)
    for page in (one, two, small):
        page.second_draw = True
    one.random_twins = True
    planned = [(m, n, s.get("draw")) for m, n, s in plan.attention_plan([one, two, small], "offline")]
    assert sorted(planned, key=str) == sorted([("m1", 200, None), ("m2", 200, None), ("random:m1", 200, None),
                                               ("random:m2", 200, None), ("m1", 200, "second"), ("m2", 200, "second"),
                                               ("m1", 100, "second")], key=str)
    marked = {p.id for p in load_manifest().pages if p.second_draw}
    assert marked == {"reference_frames", "spectral_graphs"}  # the pages that read pg.second_texts


def test_the_page_templates_that_make_a_second_draw_are_marked():
    from sinkframes.manifest import repo_root

    for page in load_manifest().pages:
        source = (repo_root() / page.template).read_text()
        assert ("second_texts" in source) == page.second_draw, page.id


def test_only_the_offline_profile_shares_attention():
    assert not executors.prepare_models_and_attention([_page("a", models=["tiny:llama"], n_sentences=4)], "smoke", 1)


def test_the_preparation_converts_each_model_once_largest_first_then_fills(monkeypatch):
    """One pool converts the GGUF models and stores the shared attention: one task per model converts it and fills
    each of its entries, conversions go first (the larger package first), a model no page shares gets a conversion
    task of its own, and the rest keeps the plan's order when nothing tells their work apart."""
    monkeypatch.setattr(plan, "models_to_convert", lambda pages, profile: ["small", "big", "lonely"])
    monkeypatch.setattr(plan, "_package_bytes", {"small": 10, "big": 30, "lonely": 20}.get)
    pages = [
        _page("a", models=["plain", "small", "big"], n_sentences=200),
        _page("b", models=["small"], n_sentences=100, max_length=128),
        _page("c", models=["lonely"], n_sentences=10, selection="official"),
    ]
    tasks, _, _ = plan.preparation_tasks(pages, "offline")
    assert [(m, convert, [n for n, _ in fills]) for m, convert, fills in tasks] == [
        ("big", True, [200]), ("lonely", True, []), ("small", True, [200, 100]), ("plain", False, [200]),
    ]
    smoke, _, _ = plan.preparation_tasks(pages, "smoke")  # no shared attention: conversions alone
    assert [(m, convert, fills) for m, convert, fills in smoke] == [("big", True, ()), ("lonely", True, ()),
                                                                   ("small", True, ())]


def test_long_running_pages_start_first_and_the_rest_keep_the_manifest_order():
    from sinkframes.manifest import load_manifest

    numbered = list(enumerate([_page("a"), _page("b"), _page("c"), _page("d")], 1))
    numbered[2][1].long_running = True
    assert [page.id for _, page in plan.start_order(numbered)] == ["c", "a", "b", "d"]
    assert [k for k, _ in plan.start_order(numbered)] == [3, 1, 2, 4]  # the pages keep their numbers
    longest = [p.id for p in load_manifest().pages if p.long_running]
    assert longest == ["information_geometry", "emergence", "position_interventions"]


def test_pages_start_longest_first_by_the_time_they_last_took(tmp_path, monkeypatch):
    monkeypatch.setenv("SINKFRAMES_CACHE", str(tmp_path))
    numbered = list(enumerate([_page("a"), _page("b"), _page("c"), _page("d")], 1))
    numbered[0][1].long_running = True
    plan.record_duration("b", "offline", 30.0)
    plan.record_duration("c", "offline", 900.0)
    plan.record_duration("c", "smoke", 1.0)
    # a never-timed long page first, then the timed ones by their time, then the never-timed rest
    assert [page.id for _, page in plan.start_order(numbered, "offline")] == ["a", "c", "b", "d"]
    assert plan.measured_durations("smoke") == {"c": 1.0}
    assert [page.id for _, page in plan.start_order(numbered)] == ["a", "b", "c", "d"]  # no profile: the flag


def test_a_page_keeps_its_longest_time_and_a_fresh_cache_starts_from_the_packaged_cold_build(tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("SINKFRAMES_CACHE", str(tmp_path / "cache"))
    cold = tmp_path / "cold.json"
    cold.write_text(json.dumps({"offline": {"c": 1100.0, "b": 700.0}}))
    monkeypatch.setattr(plan, "COLD_DURATIONS", cold)
    numbered = list(enumerate([_page("a"), _page("b"), _page("c"), _page("d")], 1))
    assert [page.id for _, page in plan.start_order(numbered, "offline")] == ["c", "b", "a", "d"]  # a fresh clone
    plan.record_duration("c", "offline", 40.0)  # a run that reused cached results
    plan.record_duration("b", "offline", 900.0)
    plan.record_duration("b", "offline", 30.0)
    assert plan.measured_durations("offline") == {"c": 40.0, "b": 900.0}
    assert [page.id for _, page in plan.start_order(numbered, "offline")] == ["b", "c", "a", "d"]
    monkeypatch.undo()
    shipped = json.loads(plan.COLD_DURATIONS.read_text())["offline"]  # the cold build's times, every page
    assert {p.id for p in load_manifest().pages} <= set(shipped)


def test_the_plan_reads_the_values_the_template_sets(tmp_path):
    """A value the manifest leaves out comes from the template's ``parameters`` cell, else from ``page.setup``'s
    and ``RunOptions``' defaults: the plan keeps no copy of them."""
    import nbformat

    cell = nbformat.v4.new_code_cell('models = ["m1"]\nn_sentences = 30\nmax_length = 64')
    cell.metadata["tags"] = ["parameters"]
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell]
    nbformat.write(nb, tmp_path / "t.ipynb")
    page = Page("a", str(tmp_path / "t.ipynb"), "a.ipynb", "a", "P", {"offline": {"n_sentences": 40}})
    settings = {"dataset": "embedded", "csv_path": None, "seed": 0, "max_length": 64, "bos_policy": "default",
                "dtype": "float32", "device": "auto"}
    assert plan.attention_plan([page], "offline") == [("m1", 40, settings)]


def test_the_preparation_says_which_draws_a_task_stored():
    second = {"draw": "second"}
    both = executors._filled(((200, {}), (200, second)))
    assert both == "attention on 200 sentences and on the second draw of 200 ready"
    assert executors._filled(((8, {}),)) == "attention on 8 sentences ready"
    assert executors._filled(()) == ""
