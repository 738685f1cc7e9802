"""Empirical Fisher norms: analytic softmax gradients, finite differences, grouping, tiny models."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from sinkframes import corpus
from sinkframes import extraction as extract
from sinkframes.probes import fisher
from sinkframes.results import ModelResult
from sinkframes.types import MODES


class SoftmaxModel(torch.nn.Module):
    """A one-layer softmax classifier with a parameter named like a transformer block."""

    def __init__(self, w: torch.Tensor) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Module()])
        self.layers[0].mlp = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=w.dtype)
        with torch.no_grad():
            self.layers[0].mlp.weight.copy_(w)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers[0].mlp(x)


def test_softmax_fisher_matches_analytic_value_and_finite_differences():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(5, 3, generator=g, dtype=torch.float64)
    x = torch.randn(3, generator=g, dtype=torch.float64)
    y = 2
    model = SoftmaxModel(w)
    loss = torch.nn.functional.cross_entropy(model(x)[None], torch.tensor([y]))
    loss.backward()
    got = fisher.squared_grad_norms(model)["layers.0.mlp.weight"]
    p = torch.softmax(w @ x, 0)
    e = torch.zeros(5, dtype=torch.float64)
    e[y] = 1
    analytic = float(((p - e) ** 2).sum() * (x**2).sum())  # ||(p - e_y) x^T||_F^2
    assert got == pytest.approx(analytic, rel=1e-12)
    # central finite differences of the loss, element by element
    h = 1e-6
    fd = torch.zeros_like(w)
    for i in range(5):
        for j in range(3):
            for sgn in (1, -1):
                w2 = w.clone()
                w2[i, j] += sgn * h
                fd[i, j] += sgn * torch.nn.functional.cross_entropy((w2 @ x)[None], torch.tensor([y])) / (2 * h)
    assert float((fd**2).sum()) == pytest.approx(analytic, rel=1e-6)


@pytest.mark.parametrize(
    "name, layer, group, official",
    [
        ("model.layers.3.self_attn.q_proj.weight", 3, "attention", "attention"),
        ("model.layers.3.self_attn.q_norm.weight", 3, "attention", "attention"),
        ("model.layers.3.post_attention_layernorm.weight", 3, "norm", "attention"),
        ("model.layers.3.input_layernorm.weight", 3, "norm", None),
        ("model.layers.12.mlp.down_proj.weight", 12, "mlp", "mlp"),
        ("encoder.layer.0.attention.self.query.weight", 0, "attention", "attention"),
        ("encoder.layer.0.attention.output.LayerNorm.weight", 0, "norm", "attention"),
        ("encoder.layer.5.intermediate.dense.weight", 5, "mlp", "mlp"),
        ("encoder.layer.5.output.dense.weight", 5, "mlp", "mlp"),
        ("model.embed_tokens.weight", None, "embedding", "embedding"),
        ("model.norm.weight", None, "other", None),
        ("transformer.h.7.self_attention.query_key_value.weight", 7, "attention", "attention"),
        ("transformer.h.7.mlp.dense_4h_to_h.weight", 7, "mlp", "mlp"),
        ("transformer.h.7.post_attention_layernorm.weight", 7, "norm", "attention"),
        ("transformer.word_embeddings_layernorm.weight", None, "embedding", "embedding"),
        ("model.graph.0.weight", None, "other", None),
    ],
)
def test_grouping(name, layer, group, official):
    assert fisher.layer_index(name) == layer
    assert fisher.corrected_group(name) == group
    assert fisher.official_group(name) == official


@pytest.mark.parametrize("ref", ["tiny:llama", "tiny:bert"])
def test_fisher_on_tiny_models(ref):
    lm = extract.get_model(ref, device="cpu")
    texts = corpus.sample_sentences(3, seed=2)["text"].tolist()
    res = {m: fisher.fisher_norms(lm, texts, mode=m, seed=0, progress=False) for m in MODES}
    for r in res.values():
        by = r.by_layer()
        assert len(by) == lm.record.n_layers and (by["fisher"] > 0).all()
        assert by["share"].sum() <= 1 + 1e-9
        share, lo, hi = r.early_share(n_boot=200)
        assert 0 < share < 1 and lo <= share + 1e-12 and share <= hi + 1e-12
        assert r.groups()["share"].sum() == pytest.approx(1.0)
    assert res["corrected"].by_layer()["share"].sum() == pytest.approx(1.0)
    # seeded: the same call gives the same numbers
    again = fisher.fisher_norms(lm, texts, mode="corrected", seed=0, progress=False)
    np.testing.assert_allclose(again.per_sentence_layers(), res["corrected"].per_sentence_layers())


def test_corrected_decoder_matches_direct_gradient():
    lm = extract.get_model("tiny:llama", device="cpu")
    text = corpus.sample_sentences(1, seed=4)["text"].tolist()
    looped = fisher.fisher_norms(lm, text, mode="corrected", progress=False, engine="loop")
    batched = fisher.fisher_norms(lm, text, mode="corrected", progress=False, engine="batched")
    ids = torch.tensor([lm.tokenizer(text[0])["input_ids"]])
    lm.model.zero_grad()
    lm.model(input_ids=ids, labels=ids).loss.backward()
    direct = sum(float(p.grad.double().pow(2).sum()) for p in lm.model.parameters() if p.grad is not None)
    lm.model.zero_grad(set_to_none=True)
    assert looped.values["fisher"].sum() == pytest.approx(direct, rel=1e-6)  # the same loss, summed in another order
    assert batched.values["fisher"].sum() == pytest.approx(direct, rel=1e-5)


class ToyLM(torch.nn.Module):
    """Every kind of module the batched engine reads: an embedding with a padding row, a scaled
    position embedding looked up once for the batch, two norms (plain and ``1 + w``), a Linear with
    a bias, and an output head tied to the input embedding."""

    def __init__(self, vocab: int = 11, dim: int = 6) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.embed = torch.nn.Embedding(vocab, dim, padding_idx=0)
        self.pos = ScaledEmbedding(16, dim)
        self.norm = torch.nn.LayerNorm(dim)
        self.gnorm = OnePlusNorm(dim)
        self.mix = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1])[None])
        x = self.gnorm(torch.tanh(self.mix(self.norm(x))))
        return self.head(x)  # [batch, token, vocab]


class ScaledEmbedding(torch.nn.Embedding):
    """``y = s W[i]``, as Gemma's scaled word embedding."""

    def __init__(self, n: int, dim: int) -> None:
        super().__init__(n, dim)
        self.embed_scale = torch.tensor(1.7)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return super().forward(ids) * self.embed_scale


class OnePlusNorm(torch.nn.Module):
    """An RMS norm whose weight enters as ``1 + w`` (Gemma)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1.0 + self.weight)


def test_per_sample_norms_equal_each_sentences_own_gradient():
    from sinkframes.probes import per_sample

    model = ToyLM()
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(1, 11, (3, 7), generator=g)  # [batch, token]
    ids[1, 5:] = 0  # padding row of the embedding, as in a padded batch
    ids[2, 2] = ids[2, 4]  # a repeated token: its two rows of the embedding gradient add up
    labels = torch.randint(0, 11, (3, 7), generator=g)

    def losses(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(model(x).transpose(1, 2), y, reduction="none").mean(1)  # [batch]

    assert per_sample.coverage_gaps(model) == []
    with per_sample.per_sample_norms(model, batch_size=3) as acc:
        losses(ids, labels).sum().backward()
    assert all(p.requires_grad and p.grad is None for p in model.parameters())  # restored, untouched
    for b in range(3):
        model.zero_grad()
        losses(ids[b : b + 1], labels[b : b + 1]).sum().backward()
        for name, p in model.named_parameters():
            want = float(p.grad.double().pow(2).sum())
            got = float(acc.squared_norms(p)[b])
            assert got == pytest.approx(want, rel=1e-5, abs=1e-9), (b, name)


class Unsupported(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Module()])
        self.layers[0].scale = torch.nn.Parameter(torch.ones(3))


def test_coverage_gaps_name_the_parameters_the_batched_engine_cannot_read():
    from sinkframes.probes import per_sample

    assert per_sample.coverage_gaps(Unsupported()) == ["layers.0.scale"]


@pytest.mark.parametrize("ref", ["tiny:llama", "tiny:qwen2", "tiny:bert"])
@pytest.mark.parametrize("mode", MODES)
def test_batched_and_looped_engines_give_the_same_norms(ref, mode):
    lm = extract.get_model(ref, device="cpu")
    texts = corpus.sample_sentences(5, seed=2)["text"].tolist()
    looped = fisher.fisher_norms(lm, texts, mode=mode, seed=0, progress=False, engine="loop").values
    batched = fisher.fisher_norms(lm, texts, mode=mode, seed=0, progress=False, engine="batched").values
    pd.testing.assert_frame_equal(looped.drop(columns="fisher"), batched.drop(columns="fisher"))
    # the faithful loop takes float32 norms (as the official code); the batched engine sums in float64
    scale = looped.groupby("sentence")["fisher"].transform("max")
    np.testing.assert_array_less(np.abs(looped["fisher"] - batched["fisher"]),
                                 (1e-3 if mode == "faithful" else 1e-5) * np.abs(looped["fisher"]) + 1e-9 * scale)
    assert fisher.fisher_batches([5, 3, 9, 3], vocab=10, max_batch=2) == [[1, 3], [0, 2]]
    assert fisher.fisher_batches([5, 3, 9, 3], vocab=10, max_logits=200) == [[1, 3], [0, 2]]  # 2 x 9 x 10 fit
    assert fisher.fisher_batches([5, 3, 9, 3], vocab=10, max_logits=50) == [[1], [3], [0], [2]]


def _save_encoder(folder, with_head: bool) -> None:
    from transformers import AutoModel, AutoModelForMaskedLM

    from sinkframes.models import tiny

    torch.manual_seed(0)
    factory = AutoModelForMaskedLM if with_head else AutoModel
    factory.from_config(tiny.tiny_config("bert")).save_pretrained(folder)
    tiny.tiny_tokenizer("bert").save_pretrained(folder)


def test_encoder_fisher_uses_the_masked_lm_head_when_the_checkpoint_has_one(tmp_path):
    from sinkframes import models

    _save_encoder(tmp_path / "mlm", with_head=True)
    _save_encoder(tmp_path / "bare", with_head=False)
    with_head = models.load_masked_lm(str(tmp_path / "mlm"))
    assert with_head is not None and type(with_head.model).__name__.endswith("ForMaskedLM")
    assert models.load_masked_lm(str(tmp_path / "bare")) is None  # a head would be random: refuse it
    assert models.load_masked_lm("tiny:llama") is None
    texts = corpus.sample_sentences(2, seed=0)["text"].tolist()
    assert fisher.cached_fisher(str(tmp_path / "mlm"), texts, progress=False).objective == "masked-token cross-entropy"
    bare = fisher.cached_fisher(str(tmp_path / "bare"), texts, progress=False)
    assert bare.objective.startswith("masked-sentence embedding")


@pytest.mark.parametrize("ref", ["tiny:llama", "tiny:bert"])
def test_information_analysis_runs_every_suite_through_the_cache(ref):
    from sinkframes import verdicts
    from sinkframes.analyses import information as info

    texts = corpus.sample_sentences(4, seed=1)["text"].tolist()
    (r,) = info.analyse([ref], texts, n_output=3, n_fisher=2, seed=0, batch_size=2, device="cpu", progress=False)
    assert isinstance(r, ModelResult) and r.analysis == "information" and r.n_sentences == 4 and not r.from_cache
    assert r.params["batch_size"] == 2 and r.params["n_fisher"] == 2
    assert set(r.data["fisher"]) == set(MODES)
    assert all(fr.values["sentence"].nunique() == 2 for fr in r.data["fisher"].values())
    assert r.data["output"].per_sentence["sentence"].nunique() == 3
    assert r.layers["layer"].tolist() == list(range(r.n_layers))
    again = info.analyse([ref], texts, n_output=3, n_fisher=2, seed=0, batch_size=2, device="cpu", progress=False)[0]
    assert again.from_cache
    pd.testing.assert_frame_equal(info.fisher_table([again]), info.fisher_table([r]))
    pd.testing.assert_frame_equal(info.output_table([again]), info.output_table([r]))
    pd.testing.assert_frame_equal(verdicts.verdict_table(verdicts.evaluate([r])),
                                  verdicts.verdict_table(verdicts.evaluate([again])))


def test_faithful_and_corrected_norms_agree_up_to_rounding_and_mode_is_checked():
    g = torch.Generator().manual_seed(1)
    model = SoftmaxModel(torch.randn(5, 3, generator=g, dtype=torch.float64).float())
    loss = torch.nn.functional.cross_entropy(model(torch.randn(3, generator=g))[None], torch.tensor([1]))
    loss.backward()
    faithful = fisher.squared_grad_norms(model, "faithful")["layers.0.mlp.weight"]
    corrected = fisher.squared_grad_norms(model, "corrected")["layers.0.mlp.weight"]
    assert faithful == pytest.approx(corrected, rel=1e-5) and faithful > 0
    with pytest.raises(ValueError, match="mode must be one of"):
        fisher.squared_grad_norms(model, "official")


def test_mean_cross_entropy_is_each_rows_mean_over_its_labelled_positions():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 7, generator=g)  # [batch, token, vocab]
    labels = torch.randint(0, 7, (3, 5), generator=g)
    labels[1, 3:] = -100
    labels[2, :] = -100
    got = fisher._mean_cross_entropy(logits, labels)
    logp = torch.log_softmax(logits.double(), -1)
    for r in range(3):
        keep = [t for t in range(5) if labels[r, t] != -100]
        want = -sum(float(logp[r, t, labels[r, t]]) for t in keep) / max(1, len(keep))
        assert float(got[r]) == pytest.approx(want, rel=1e-6, abs=1e-7)
    assert float(got[2]) == 0.0  # no labelled position: zero, not NaN
