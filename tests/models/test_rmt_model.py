"""The Appendix B analysis on a tiny model: the page's seed draws the per-layer intervals."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sinkframes.analyses import rmt as R


def test_analyse_model_uses_its_seed_for_the_layer_intervals() -> None:
    from sinkframes import corpus

    texts = corpus.sample_sentences(16, seed=0)["text"].tolist()
    a = R.analyse_model("tiny:llama", texts, seed=0, use_cache=False, progress=False)
    b = R.analyse_model("tiny:llama", texts, seed=3, use_cache=False, progress=False)
    assert np.allclose(a.layers["participation_ratio"], b.layers["participation_ratio"])
    assert not np.allclose(a.layers["participation_ratio_lo"], b.layers["participation_ratio_lo"], rtol=0, atol=1e-12)


def test_text_loss_is_the_mean_next_token_cross_entropy_and_is_cached(monkeypatch) -> None:
    from sinkframes.extraction import batching
    from sinkframes.types import RunOptions

    texts = ["the cat sat on the mat", "a b"]
    opts = RunOptions(device="cpu", progress=False)
    lm = batching.get_model("tiny:llama", opts)
    nll, count = 0.0, 0
    with torch.no_grad():
        for t in texts:
            ids = lm.tokenizer(t, return_tensors="pt")["input_ids"]  # [1, n]
            logits = lm.model(input_ids=ids).logits[0]  # [n, vocab]
            logp = torch.log_softmax(logits.double(), -1)
            nll -= float(logp[torch.arange(ids.shape[1] - 1), ids[0, 1:]].sum())
            count += ids.shape[1] - 1
    assert R.text_loss("tiny:llama", texts, opts) == pytest.approx(nll / count, rel=1e-5)

    def no_model(*_: object, **__: object) -> None:
        raise AssertionError("a cached loss loads no model")

    monkeypatch.setattr(batching, "get_model", no_model)
    assert R.text_loss("tiny:llama", texts, opts) == pytest.approx(nll / count, rel=1e-5)
