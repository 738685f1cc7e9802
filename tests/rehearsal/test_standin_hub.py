"""The stand-in hub: the hub's cache layout, every model of the paper and colab profiles, each with its real
configuration class, attention settings and tokenizer conventions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sinkframes_build.standin_hub import KEPT_VOCAB, STANDINS, profile_models, shrunk_heads
from tests.conftest import ROOT


def _snapshot(home: Path, repo: str, revision: str = "main") -> Path:
    repo_dir = home / "hub" / f"models--{repo.replace('/', '--')}"
    commit = (repo_dir / "refs" / revision).read_text()
    assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit)
    return repo_dir / "snapshots" / commit


def test_every_model_of_the_paper_and_colab_profiles_has_a_stand_in():
    named = profile_models()
    assert set(named) <= set(STANDINS), sorted(set(named) - set(STANDINS))
    assert "EleutherAI/pythia-2.8b" in named and "Qwen/Qwen2.5-0.5B" in named
    assert named["EleutherAI/pythia-70m"][:3] == ["main", "step0", "step1"]


def test_the_cache_has_the_hub_layout(standin_home):
    named = profile_models()
    for repo, revisions in named.items():
        for revision in revisions:
            snap = _snapshot(standin_home, repo, revision)
            for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
                link = snap / name
                assert link.is_symlink() and os.readlink(link).startswith("../../blobs/"), (repo, revision, name)
                assert link.resolve().is_file()
    # Pythia's main is its last checkpoint; the checkpoints differ from each other
    main = _snapshot(standin_home, "EleutherAI/pythia-2.8b")
    assert main == _snapshot(standin_home, "EleutherAI/pythia-2.8b", "step143000")
    assert main != _snapshot(standin_home, "EleutherAI/pythia-2.8b", "step0")


def _config(home: Path, repo: str) -> dict:
    return json.loads((_snapshot(home, repo) / "config.json").read_text())


def test_the_stand_ins_keep_the_real_attention_settings(standin_home):
    for repo, spec in STANDINS.items():
        cfg = _config(standin_home, repo)
        layers = cfg.get("num_hidden_layers", cfg.get("n_layer"))  # BLOOM's config names them n_layer, n_head
        assert cfg["architectures"] == [spec.architecture] and layers == 2
        heads, kv = shrunk_heads(spec)
        assert cfg.get("num_attention_heads", cfg.get("n_head")) == heads
        if not spec.encoder:
            assert cfg.get("num_key_value_heads", heads) == kv
            assert heads // kv == spec.heads // spec.kv_heads, repo  # the grouped-query ratio
    llama = _config(standin_home, "meta-llama/Llama-3.1-8B")
    assert llama["rope_parameters"]["rope_type"] == "llama3" and llama["rope_parameters"]["factor"] == 8.0
    assert llama["tie_word_embeddings"] is False
    assert _config(standin_home, "meta-llama/Llama-3.2-1B")["tie_word_embeddings"]
    assert _config(standin_home, "mistralai/Mistral-7B-v0.1")["sliding_window"] == 16
    assert _config(standin_home, "Qwen/Qwen2.5-7B")["use_sliding_window"] is False
    assert _config(standin_home, "microsoft/phi-2")["rope_parameters"]["partial_rotary_factor"] == 0.4
    pythia = _config(standin_home, "EleutherAI/pythia-410m")
    assert pythia["rope_parameters"]["partial_rotary_factor"] == 0.25 and pythia["use_parallel_residual"]
    gemma = _config(standin_home, "google/gemma-7b")
    assert gemma["head_dim"] * gemma["num_attention_heads"] > gemma["hidden_size"]  # as Gemma-7B: 16 x 256 > 3072
    assert _config(standin_home, "google/gemma-2b")["num_key_value_heads"] == 1  # multi-query
    assert _config(standin_home, "FacebookAI/xlm-roberta-base")["max_position_embeddings"] == 514


def test_the_large_offline_vocabularies_are_cut_with_their_special_tokens_after_them(standin_home):
    qwen = json.loads((_snapshot(standin_home, "Qwen/Qwen2.5-1.5B-Instruct") / "tokenizer.json").read_text())
    specials = {a["content"]: a["id"] for a in qwen["added_tokens"]}
    assert len(qwen["model"]["vocab"]) == KEPT_VOCAB + len(specials) and specials["<|endoftext|>"] == KEPT_VOCAB
    cfg = _config(standin_home, "Qwen/Qwen2.5-1.5B-Instruct")
    assert cfg["eos_token_id"] == specials["<|im_end|>"] and cfg["vocab_size"] >= KEPT_VOCAB + len(specials)
    xlmr = json.loads((_snapshot(standin_home, "FacebookAI/xlm-roberta-large") / "tokenizer.json").read_text())
    pieces = [p[0] for p in xlmr["model"]["vocab"]]
    assert len(pieces) == KEPT_VOCAB + 1 and pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"] and pieces[-1] == "<mask>"
    assert _config(standin_home, "FacebookAI/xlm-roberta-large")["vocab_size"] == len(pieces)


PROBE = """
import json, sys
from sinkframes.models import load
out = {}
for repo, revision in json.loads(sys.argv[1]):
    lm = load(repo, device="cpu", revision=revision)
    r = lm.record
    out[f"{repo}@{revision}"] = [type(lm.model).__name__, r.family, r.adds_bos, r.position0_token,
                                 r.position_encoding, type(lm.tokenizer).__name__, lm.tokenizer.bos_token]
print(json.dumps(out))
"""


def test_the_stand_ins_load_through_the_hub_path_with_their_family_conventions(standin_home):
    asks = [["meta-llama/Llama-3.2-1B", None], ["mistralai/Mistral-7B-v0.1", None], ["google/gemma-2b", None],
            ["Qwen/Qwen2.5-3B", None], ["microsoft/phi-2", None], ["EleutherAI/pythia-160m", "step64"],
            ["google-bert/bert-base-uncased", None], ["FacebookAI/xlm-roberta-large", None]]
    env = {**os.environ, "HF_HOME": str(standin_home), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT / "lib")}
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(asks)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    expect = {  # model class, family, adds a start token, token at position 0
        "meta-llama/Llama-3.2-1B@None": ("LlamaForCausalLM", "llama", True, "<|begin_of_text|>"),
        "mistralai/Mistral-7B-v0.1@None": ("MistralForCausalLM", "mistral", True, "<s>"),
        "google/gemma-2b@None": ("GemmaForCausalLM", "gemma", True, "<bos>"),
        "Qwen/Qwen2.5-3B@None": ("Qwen2ForCausalLM", "qwen", False, "Att"),  # the cut vocabulary has no "Attention"
        "microsoft/phi-2@None": ("PhiForCausalLM", "phi", False, "At"),
        "EleutherAI/pythia-160m@step64": ("GPTNeoXForCausalLM", "pythia", False, "At"),
        "google-bert/bert-base-uncased@None": ("BertModel", "bert", True, "[CLS]"),
        "FacebookAI/xlm-roberta-large@None": ("XLMRobertaModel", "xlm-roberta", True, "<s>"),
    }
    for key, (cls, family, adds_bos, first) in expect.items():
        assert tuple(got[key][:4]) == (cls, family, adds_bos, first), (key, got[key])
    assert "partial, 0.4" in got["microsoft/phi-2@None"][4]
    assert got["google/gemma-2b@None"][5] == "GemmaTokenizer"
