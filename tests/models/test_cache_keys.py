"""The Fisher and output-check caches are keyed by cache_key: a revision or a software version
that differs is a cache miss, the same inputs a hit."""

from __future__ import annotations

import pytest

from sinkframes import cache
from sinkframes.extraction import STATS
from sinkframes.models import loading
from sinkframes.probes import fisher, sink_removal


def _passes(run) -> int:
    before = STATS["forward_passes"]
    run()
    return STATS["forward_passes"] - before


@pytest.mark.parametrize("probe", ["output_check", "fisher"])
def test_probe_caches_follow_revision_and_versions(probe, texts, monkeypatch):
    calls = {"n": 0}
    real_fisher = fisher.fisher_norms

    def counting_fisher(*a, **k):
        calls["n"] += 1
        return real_fisher(*a, **k)

    monkeypatch.setattr(fisher, "fisher_norms", counting_fisher)
    # a tiny model has no revisions (loading one is refused); lifted here to see the key follow a revision
    monkeypatch.setattr(loading, "_check_revision", lambda ref, revision: None)

    def run(**opts):
        if probe == "fisher":
            before = calls["n"]
            fisher.cached_fisher("tiny:llama", texts[:2], "corrected", progress=False, device="cpu", **opts)
            return calls["n"] - before
        return _passes(
            lambda: sink_removal.cached_output_check("tiny:llama", texts[:2], progress=False, device="cpu", **opts)
        )

    assert run() > 0
    assert run() == 0  # same inputs: a hit
    assert run(revision="other") > 0  # another checkpoint of the same model: a miss
    real = cache.software_versions()
    monkeypatch.setattr(cache, "software_versions", lambda: {**real, "transformers": "0.0.1"})
    assert run() > 0  # another transformers: a miss
