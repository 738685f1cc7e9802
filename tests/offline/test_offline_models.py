"""The real offline models (minilm, smollm2, gemma3, qwen05, mpnet, nomic, e5small): records, CLI, the hook.

Slow: each loads a real pretrained model (GGUF ones are converted to fp32 once and reused).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from sinkframes import corpus
from sinkframes.extraction import capture, get_model, tokenize
from sinkframes.types import RunOptions

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("ref,layers", [("minilm", 6), ("smollm2", 30)])
def test_real_offline_models_through_the_module_entry_point(ref, layers, tmp_path):
    cmd = [sys.executable, "-m", "sinkframes", "sinks", ref, "--n", "20", "--json"]
    env = {**os.environ, "SINKFRAMES_CACHE": str(tmp_path / "c")}
    run1 = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert run1.returncode == 0, run1.stderr[-2000:]
    out = json.loads(run1.stdout)
    assert out["n_sentences"] == 20 and len(out["layers"]) == layers
    assert all(
        0.0 <= r[k] <= 1.0
        for r in out["layers"]
        for k in ("first_token_share", "last_token_share", "sink_concentration")
    )
    assert "forward passes" in run1.stderr
    run2 = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert run2.returncode == 0 and json.loads(run2.stdout) == out
    assert "cache hit: no forward pass" in run2.stderr


def test_gemma3_record():
    from sinkframes import models

    r = models.load("gemma3", device="cpu").record
    assert (r.n_layers, r.n_heads, r.n_kv_heads, r.adds_bos, r.position0_token) == (18, 4, 1, True, "<bos>")
    assert "GGUF" in r.quantization and r.family == "gemma"


@pytest.mark.parametrize("ref", ["minilm", "smollm2", "gemma3"])
def test_the_attention_hook_reproduces_each_real_models_attention(ref, batch_size=3):
    """Captured weights equal the attention the model itself returns (the hook reads, never changes)."""
    lm = get_model(ref, device="cpu")
    texts = corpus.sample_sentences(3, seed=1)["text"].tolist()
    ids = tokenize(lm.tokenizer, texts, 256)
    opts = RunOptions(batch_size=batch_size, progress=False)
    for i, cap in capture.iterate_captures(lm, ids, opts, hidden_states=False):
        n = len(ids[i])
        out = lm.model(input_ids=torch.tensor([ids[i]]), output_attentions=True, use_cache=False)
        own = torch.stack([a[0].float() for a in out.attentions])  # [layer, head, query, key]
        torch.testing.assert_close(cap.attention, own[..., :n, :n], atol=1e-5, rtol=1e-4)


def test_the_cache_key_follows_the_offline_weight_files():
    """A reinstalled or replaced weight file (new mtime) is a new cache key."""
    import os

    from sinkframes.models import OFFLINE_MODELS, source_fingerprint
    from sinkframes.models.gguf import weights_fingerprint

    rows = weights_fingerprint(OFFLINE_MODELS["minilm"])
    assert rows and rows[0][0].endswith("model.safetensors")
    before = source_fingerprint("minilm")
    path = next(p for p in (os.path.join(d, rows[0][0].split("/", 1)[1]) for d in _package_roots("minilm")))
    st = os.stat(path)
    try:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        assert source_fingerprint("minilm") != before
    finally:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert source_fingerprint("minilm") == before


def _package_roots(key: str) -> list[str]:
    from sinkframes.models import OFFLINE_MODELS
    from sinkframes.models.gguf import package_dir

    return [str(package_dir(OFFLINE_MODELS[key]))]


def test_a_damaged_converted_copy_is_converted_again(tmp_path, monkeypatch):
    from sinkframes.models import OFFLINE_MODELS
    from sinkframes.models.gguf import converted_copy_problem, offline_folder

    monkeypatch.setenv("SINKFRAMES_MODELS", str(tmp_path / "models"))
    om = OFFLINE_MODELS["smollm2"]
    folder, _ = offline_folder(om)  # converts into the empty folder
    assert converted_copy_problem(om, folder) is None
    weights = next(folder.glob("*.safetensors"))
    with weights.open("ab") as fh:  # a truncated or appended file: the size no longer matches the record
        fh.write(b"\0")
    assert converted_copy_problem(om, folder) == "its files changed or are damaged since the conversion"
    again, _ = offline_folder(om)
    assert again == folder and converted_copy_problem(om, folder) is None


#: the five models added from split packages: (key, model_type, layers, heads, kv heads, causal, family, frame,
#: the token at position 0 of a sentence)
NEW_MODELS = [
    ("qwen05", "qwen2", 24, 14, 2, True, "qwen", "distributed", "Attention"),
    ("mpnet", "mpnet", 12, 12, 12, False, "bert", "bidirectional", "<s>"),
    ("nomic", "nomic_bert", 12, 12, 12, False, "nomic-bert", "not assigned", "[CLS]"),
    ("e5small", "bert", 12, 12, 12, False, "xlm-roberta", "bidirectional", "<s>"),
]


@pytest.mark.parametrize("key,mt,layers,heads,kv,causal,family,frame,first", NEW_MODELS)
def test_each_new_offline_model_loads_with_its_record_and_real_attention(key, mt, layers, heads, kv, causal, family,
                                                                        frame, first):
    """Each split-package model loads offline, says what it is, and gives row-stochastic attention with a sink:
    the first token takes more than a uniform share in some layer (random weights would not)."""
    from sinkframes import models
    from sinkframes.models import OFFLINE_MODELS

    lm = models.load(key, device="cpu")
    r = lm.record
    assert (r.architecture, r.n_layers, r.n_heads, r.n_kv_heads, r.causal) == (mt, layers, heads, kv, causal)
    assert (r.family, r.paper_frame, r.position0_token) == (family, frame, first)
    assert r.extra["stands_for"] == OFFLINE_MODELS[key].stands_for
    ids = lm.tokenizer("The river flows north through the old city to the sea.", return_tensors="pt")
    with torch.no_grad():
        out = lm.model(**ids, output_attentions=True)
    att = torch.stack([a[0] for a in out.attentions])  # [layer, head, query, key]
    n = att.shape[-1]
    assert att.shape == (layers, heads, n, n)
    torch.testing.assert_close(att.sum(-1), torch.ones(layers, heads, n))
    first_share = att[..., 1:, 0].mean(dim=(1, 2))  # [layer]
    assert float(first_share.max()) > 3.0 / n


def test_the_rope_encoder_and_the_xlmr_stand_in_tokenize_as_their_upstream():
    from sinkframes import models

    assert models.load("e5small", device="cpu").tokenizer("hello world")["input_ids"] == [0, 33600, 31, 8999, 2]
    assert models.load("nomic", device="cpu").tokenizer("hello world")["input_ids"] == [101, 7592, 2088, 102]


@pytest.mark.parametrize("ref", ["qwen05", "nomic", "e5small"])
def test_the_attention_hook_reproduces_each_new_models_attention(ref):
    """One sentence per batch, as the single-sentence pass it is compared with: a padded batch of Qwen's larger
    activations differs from it by round-off above the tolerance (3.6e-5 on one weight in 1.25 million)."""
    test_the_attention_hook_reproduces_each_real_models_attention(ref, batch_size=1)


def test_every_installed_offline_model_matches_its_pinned_hash():
    cmd = [sys.executable, "-m", "sinkframes", "models", "--verify"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    for key in ("qwen05", "mpnet", "nomic", "e5small"):
        assert f"{key:<10} ok: sha256" in run.stdout
