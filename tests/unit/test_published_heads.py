"""Pythia's first-token heads beside the counts published with arXiv 2606.02378 (report.emergence)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from sinkframes.analyses.rmt import Checkpoint
from sinkframes.book.params import parameter_problems
from sinkframes.report import emergence as er


def _result(shares: np.ndarray) -> SimpleNamespace:
    return SimpleNamespace(heads={"first_token_share": shares})


def _run(source: str, steps: dict[int, np.ndarray]) -> SimpleNamespace:
    named = {f"step{s}": (Checkpoint(f"step{s}", source, f"step{s}"), _result(x), 0.0) for s, x in steps.items()}
    return SimpleNamespace(source=source, series=SimpleNamespace(by_name=lambda: named))


def test_heads_are_counted_at_the_threshold_with_those_of_the_first_two_layers():
    shares = np.full((16, 8), 0.1)  # [layer, head]
    shares[0, 0] = 0.5  # exactly at the threshold: counted
    shares[1, 3] = 0.7
    shares[5, :3] = 0.9
    shares[6, 0] = 0.4999
    assert er.first_token_heads(_result(shares)) == (5, 2, 128)


def test_only_the_published_model_and_steps_are_compared():
    none = np.zeros((16, 8))
    some = np.zeros((16, 8))
    some[8:, :2] = 0.8  # 16 heads, none early
    runs = [_run("EleutherAI/pythia-1b", {512: none, 1000: some, 3000: some}),
            _run("EleutherAI/pythia-410m", {3000: some})]
    table = er.published_heads_check(runs)
    assert table["step"].tolist() == [512, 3000]
    assert table["heads (ours)"].tolist() == ["0 of 128", "16 of 128"]
    assert table["heads (arXiv 2606.02378)"].tolist() == ["0 of 128", "14 of 128"]
    assert table["in layers 0-1 (ours)"].tolist() == [0, 0]
    assert er.published_heads_check(runs[1:]).empty


def test_the_note_says_why_a_page_has_no_counts():
    empty = er.published_heads_check([])
    assert "this profile does not" in er.published_heads_note(empty, None)
    assert "No checkpoint of `EleutherAI/pythia-410m`" in er.published_heads_note(empty, "EleutherAI/pythia-410m")


def test_a_published_check_needs_its_steps():
    assert any("published_check_steps" in p for p in parameter_problems(
        {"published_check_model": "EleutherAI/pythia-1b", "published_check_steps": None}))
    assert not any("published_check" in p for p in parameter_problems(
        {"published_check_model": "EleutherAI/pythia-1b", "published_check_steps": ["step512", "step3000"]}))
    assert not any("published_check" in p for p in parameter_problems({"published_check_model": None}))
