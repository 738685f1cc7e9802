"""The Appendix B analysis on a tiny model: the page's seed draws the per-layer intervals."""

from __future__ import annotations

import numpy as np

from sinkframes.analyses import rmt as R


def test_analyse_model_uses_its_seed_for_the_layer_intervals() -> None:
    from sinkframes import corpus

    texts = corpus.sample_sentences(16, seed=0)["text"].tolist()
    a = R.analyse_model("tiny:llama", texts, seed=0, use_cache=False, progress=False)
    b = R.analyse_model("tiny:llama", texts, seed=3, use_cache=False, progress=False)
    assert np.allclose(a.layers["participation_ratio"], b.layers["participation_ratio"])
    assert not np.allclose(a.layers["participation_ratio_lo"], b.layers["participation_ratio_lo"], rtol=0, atol=1e-12)
