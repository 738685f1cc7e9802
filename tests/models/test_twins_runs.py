"""The random-initialized twin beside a result, on tiny models: what its nulls read is kept, aligned with the model."""

from __future__ import annotations

from sinkframes.results import TWIN


def test_the_threshold_graph_twin_keeps_the_layer_metrics_its_nulls_read():
    from sinkframes import corpus
    from sinkframes.analyses import spectral

    texts = corpus.sample_sentences(3, seed=0)["text"].tolist()
    (r,) = spectral.analyse(["tiny:llama"], texts, device="cpu", progress=False, use_cache=False)
    twin = r.data[TWIN]
    assert twin.ref == "random:tiny:llama" and TWIN not in twin.data
    assert "head/centralization" in r.samples and "head/centralization" not in twin.samples
    assert {k for k in r.samples if not k.startswith("head/")} == set(twin.samples)
    assert spectral.analyse(["tiny:llama"], texts, device="cpu", progress=False, use_cache=False,
                            twin=False)[0].data.get(TWIN) is None


def test_appendix_b_reads_each_trained_models_twin_aligned_with_it():
    from sinkframes.analyses import rmt

    texts = ["The cat sat on the mat.", "A dog ran far away."]
    # the twin is the default, as in every attention analysis; the checkpoint series runs none
    trained = rmt.analyse(["tiny:llama", "tiny:bert"], texts, device="cpu", progress=False, use_cache=False)
    twins = rmt.twins_of(trained)
    assert [t.ref for t in twins] == ["random:tiny:llama", "random:tiny:bert"]
    assert all(TWIN not in t.data and t.analysis == "rmt" for t in twins)
    assert rmt.twins_of(rmt.analyse(["tiny:llama"], texts, device="cpu", progress=False, use_cache=False,
                                    twin=False)) == [None]
