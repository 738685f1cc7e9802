"""The official topology truncation: a cut of the attention for decoders, a second, truncated forward
pass for encoders (whose attention depends on every token), with the tokenizer's end token kept."""

from __future__ import annotations

import numpy as np

from sinkframes import corpus, verdicts
from sinkframes.analyses import topology


def test_encoder_faithful_topology_runs_on_tokenizer_truncated_texts():
    texts = corpus.sample_sentences(4, seed=2)["text"].tolist()
    r = topology.analyse_model("tiny:bert", texts, max_tokens=8, device="cpu", progress=False, use_cache=False)
    full, cut = r.data["tokens"], r.data["faithful_tokens"]
    assert all(len(c) == min(8, len(f)) and c[0] == "[CLS]" and c[-1] == "[SEP]" for f, c in zip(full, cut,
                                                                                                   strict=True))
    assert max(len(f) for f in full) > 8  # the corrected numbers keep the whole sentence
    # faithful labels name tokens of the truncated texts
    spec = topology.head_specialization(r)
    assert set(spec["faithful token"]) <= {t for c in cut for t in c}
    # the null follows the same split: its faithful fields have the truncated texts' shapes
    null = verdicts.null_result(r)
    assert null.data["faithful_tokens"] == cut and np.isfinite(null.samples["faithful"]).any()


def test_decoder_faithful_topology_needs_no_second_pass():
    texts = corpus.sample_sentences(2, seed=2)["text"].tolist()
    r = topology.analyse_model("tiny:llama", texts, max_tokens=8, device="cpu", progress=False, use_cache=False)
    assert "faithful_tokens" not in r.data
