"""A stand-in for the Hugging Face hub: a local cache, in the hub's own layout, of every model the
``paper`` and ``colab`` profiles name, shrunk and with random weights.

Those profiles load hub ids (gated Llama, Gemma and Mistral repositories, Pythia's ``stepN`` revisions)
through code paths the offline build never executes. With ``HF_HOME`` pointing at the folder this module
writes and ``HF_HUB_OFFLINE=1``, transformers and huggingface_hub resolve those ids exactly as they resolve
a real cache (``hub/models--ORG--NAME/refs/<revision>`` -> ``snapshots/<commit>/<file>`` -> ``blobs/``),
so every page of both profiles can run end to end on a CPU.

Each stand-in keeps what decides the code paths and the attention pattern's shape: the real configuration
class and architecture, the grouped-query ratio, sliding window, partial rotary factor, rope scaling,
absolute positions (and their offset), biases, a head dimension decoupled from the width where the real
model has one, tied or untied embeddings, the stored dtype, and a tokenizer of the right kind with the
family's special tokens and BOS/EOS behaviour (the offline models' own tokenizers where the family matches:
Qwen2.5's from the Qwen GGUF, XLM-R's from multilingual-e5, BERT's from MiniLM; the first two cut to their first
32,000 entries, which load in a fraction of a second where the whole vocabularies take seconds each time).
Depth and width are shrunk and the weights are seeded random numbers: the pages' numbers mean nothing, their
execution does.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch

from sinkframes.models.errors import ModelLoadError

#: the seed every stand-in's weights derive from (with the model id and the revision)
STANDIN_SEED = 36
#: layers of a stand-in (the smoke size); ``write_standin_hub(layers=...)`` changes it
STANDIN_LAYERS = 2
#: head dimension of the stand-ins (real models: 64 to 256)
HEAD_DIM = 8
#: vocabulary of the small trained tokenizers (families without an offline tokenizer)
TRAINED_VOCAB = 4000
#: vocabulary kept of the large offline tokenizers the stand-ins reuse (Qwen2.5: about 150,000 entries, XLM-R:
#: 250,002), about BERT's size: their first entries, then their special tokens
KEPT_VOCAB = 32000
#: the profiles whose models the stand-in holds
PROFILES = ("paper", "colab")


@dataclass(frozen=True)
class StandIn:
    """One hub model as the stand-in writes it: its real configuration class and attention settings
    (``attention``, passed to the config as they are), its real head counts (shrunk keeping their ratio),
    its tokenizer kind and how its real weights are stored."""

    repo: str
    config_cls: str
    architecture: str  # the ``architectures`` entry of its config.json (the class the weights belong to)
    heads: int  # real query heads
    kv_heads: int  # real key/value heads
    head_dim_ratio: float  # real head_dim * heads / hidden (1.0 for most; Gemma-7B: 4/3)
    tokenizer: str  # a key of TOKENIZER_KINDS
    stored_dtype: str  # how the real checkpoint stores its weights
    attention: dict[str, Any] = field(default_factory=dict)
    instruct: bool = False
    gated: bool = False
    #: a sliding window (in tokens) the stand-in scales down with its context
    encoder: bool = False

    @property
    def org(self) -> str:
        return self.repo.split("/", 1)[0]


def _llama3(repo: str, heads: int, kv: int, factor: float, tied: bool, instruct: bool = False) -> StandIn:
    rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": factor, "high_freq_factor": 4.0,
            "low_freq_factor": 1.0, "original_max_position_embeddings": 8192}
    return StandIn(repo, "LlamaConfig", "LlamaForCausalLM", heads, kv, 1.0, "llama3", "bfloat16",
                   {"rope_parameters": rope, "max_position_embeddings": 131072, "tie_word_embeddings": tied,
                    "attention_bias": False, "mlp_bias": False, "rms_norm_eps": 1e-5}, instruct=instruct, gated=True)


def _qwen25(repo: str, heads: int, kv: int, tied: bool, instruct: bool = False) -> StandIn:
    return StandIn(repo, "Qwen2Config", "Qwen2ForCausalLM", heads, kv, 1.0, "qwen", "bfloat16",
                   {"rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
                    "max_position_embeddings": 32768, "sliding_window": 32768, "use_sliding_window": False,
                    "tie_word_embeddings": tied, "rms_norm_eps": 1e-6}, instruct=instruct)


def _bloom(repo: str, heads: int) -> StandIn:
    # ALiBi: no position embedding at all, so no rope or table settings; a layer norm on the embeddings
    return StandIn(repo, "BloomConfig", "BloomForCausalLM", heads, heads, 1.0, "bloom", "float16",
                   {"layer_norm_epsilon": 1e-5, "apply_residual_connection_post_layernorm": False,
                    "tie_word_embeddings": True})


def _pythia(repo: str, heads: int) -> StandIn:
    return StandIn(repo, "GPTNeoXConfig", "GPTNeoXForCausalLM", heads, heads, 1.0, "pythia", "float16",
                   {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
                    "max_position_embeddings": 2048, "use_parallel_residual": True, "attention_bias": True,
                    "tie_word_embeddings": False, "layer_norm_eps": 1e-5})


def _gemma(repo: str, heads: int, kv: int, ratio: float) -> StandIn:
    return StandIn(repo, "GemmaConfig", "GemmaForCausalLM", heads, kv, ratio, "gemma", "bfloat16",
                   {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}, "max_position_embeddings": 8192,
                    "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True, "attention_bias": False},
                   gated=True)


def _xlmr(repo: str, heads: int) -> StandIn:
    return StandIn(repo, "XLMRobertaConfig", "XLMRobertaForMaskedLM", heads, heads, 1.0, "xlm-roberta", "float32",
                   {"max_position_embeddings": 514, "type_vocab_size": 1, "position_embedding_type": "absolute",
                    "layer_norm_eps": 1e-5}, encoder=True)


#: every hub model of the ``paper`` and ``colab`` profiles (a test checks the manifest names no other)
STANDINS: dict[str, StandIn] = {s.repo: s for s in [
    _llama3("meta-llama/Llama-3.2-1B", 32, 8, 32.0, True),
    _llama3("meta-llama/Llama-3.2-1B-Instruct", 32, 8, 32.0, True, instruct=True),
    _llama3("meta-llama/Llama-3.2-3B", 24, 8, 32.0, True),
    _llama3("meta-llama/Llama-3.2-3B-Instruct", 24, 8, 32.0, True, instruct=True),
    _llama3("meta-llama/Llama-3.1-8B", 32, 8, 8.0, False),
    _llama3("meta-llama/Llama-3.1-8B-Instruct", 32, 8, 8.0, False, instruct=True),
    StandIn("mistralai/Mistral-7B-v0.1", "MistralConfig", "MistralForCausalLM", 32, 8, 1.0, "mistral", "bfloat16",
            {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}, "max_position_embeddings": 32768,
             "sliding_window": 4096, "tie_word_embeddings": False, "rms_norm_eps": 1e-5}, gated=True),
    _gemma("google/gemma-7b", 16, 16, 4 / 3),
    _gemma("google/gemma-2b", 8, 1, 1.0),
    _qwen25("Qwen/Qwen2.5-0.5B", 14, 2, True),
    _qwen25("Qwen/Qwen2.5-1.5B", 12, 2, True),
    _qwen25("Qwen/Qwen2.5-1.5B-Instruct", 12, 2, True, instruct=True),
    _qwen25("Qwen/Qwen2.5-3B", 16, 2, True),
    _qwen25("Qwen/Qwen2.5-7B", 28, 4, False),
    _qwen25("Qwen/Qwen2.5-7B-Instruct", 28, 4, False, instruct=True),
    StandIn("microsoft/phi-2", "PhiConfig", "PhiForCausalLM", 32, 32, 1.0, "phi", "float16",
            {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.4},
             "max_position_embeddings": 2048, "qk_layernorm": False, "tie_word_embeddings": False,
             "hidden_act": "gelu_new", "layer_norm_eps": 1e-5}),
    _bloom("bigscience/bloom-560m", 16),
    _pythia("EleutherAI/pythia-70m", 8),
    _pythia("EleutherAI/pythia-160m", 12),
    _pythia("EleutherAI/pythia-410m", 16),
    _pythia("EleutherAI/pythia-1b", 8),
    _pythia("EleutherAI/pythia-1.4b", 16),
    _pythia("EleutherAI/pythia-2.8b", 32),
    _pythia("EleutherAI/pythia-6.9b", 32),
    _pythia("EleutherAI/pythia-12b", 40),
    StandIn("google-bert/bert-base-uncased", "BertConfig", "BertForPreTraining", 12, 12, 1.0, "bert", "float32",
            {"max_position_embeddings": 512, "type_vocab_size": 2, "position_embedding_type": "absolute",
             "layer_norm_eps": 1e-12}, encoder=True),
    _xlmr("FacebookAI/xlm-roberta-base", 12),
    _xlmr("FacebookAI/xlm-roberta-large", 16),
]}


def shrunk_heads(spec: StandIn) -> tuple[int, int]:
    """``(query heads, key/value heads)`` of the stand-in: few heads, the real grouped-query ratio kept
    (multi-head stays multi-head, multi-query stays multi-query)."""
    ratio = spec.heads // spec.kv_heads
    if ratio == 1:
        return 4, 4
    kv = 1 if ratio >= 4 or spec.kv_heads == 1 else 2
    return kv * ratio, kv


def standin_config(spec: StandIn, vocab_size: int, special: dict[str, int | None], layers: int = STANDIN_LAYERS):
    """The transformers config of the stand-in of ``spec``: the real class and attention settings, shrunk."""
    import transformers

    heads, kv = shrunk_heads(spec)
    head_dim = 10 if spec.tokenizer == "phi" else HEAD_DIM  # phi-2: 0.4 of 10 dims rotate (an even 4)
    hidden = int(round(heads * head_dim / spec.head_dim_ratio))
    kwargs: dict[str, Any] = dict(spec.attention)
    kwargs.update(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=2 * hidden, architectures=[spec.architecture], dtype=spec.stored_dtype,
                  **{k: v for k, v in special.items() if v is not None})
    if not spec.encoder:
        kwargs["num_key_value_heads"] = kv
        if spec.config_cls not in ("PhiConfig", "GPTNeoXConfig", "BloomConfig"):
            kwargs["head_dim"] = head_dim
    if spec.config_cls in ("PhiConfig", "BloomConfig"):  # multi-head attention: no key/value head count
        kwargs.pop("num_key_value_heads", None)
    if "sliding_window" in kwargs and kwargs.get("use_sliding_window", True):
        kwargs["sliding_window"] = 16  # 4096 of 32768 positions, scaled to sentences of a few dozen tokens
    cfg = getattr(transformers, spec.config_cls)(**kwargs)
    return cfg


# ---------------------------------------------------------------------------------------------
# tokenizers


@dataclass(frozen=True)
class TokenizerKind:
    """A family's tokenizer: the algorithm, its special tokens, which of them open and close a text."""

    algorithm: str  # "byte-bpe" (GPT-2, Llama 3, NeoX) or "metaspace-bpe" (sentencepiece with byte fallback)
    specials: tuple[str, ...]  # in id order, first ids
    bos: str | None
    eos: str
    unk: str | None
    pad: str | None
    adds_bos: bool
    tokenizer_class: str
    instruct_eos: str | None = None
    dummy_prefix: bool = True  # sentencepiece: a "▁" put before the text (Gemma's vocabulary has none)


TOKENIZER_KINDS: dict[str, TokenizerKind] = {
    "llama3": TokenizerKind("byte-bpe", ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                         "<|end_header_id|>", "<|eot_id|>", "<|finetune_right_pad_id|>"),
                            "<|begin_of_text|>", "<|end_of_text|>", None, None, True, "PreTrainedTokenizerFast",
                            instruct_eos="<|eot_id|>"),
    "mistral": TokenizerKind("metaspace-bpe", ("<unk>", "<s>", "</s>"), "<s>", "</s>", "<unk>", None, True,
                             "LlamaTokenizer"),
    "gemma": TokenizerKind("metaspace-bpe", ("<pad>", "<eos>", "<bos>", "<unk>", "<mask>"), "<bos>", "<eos>",
                           "<unk>", "<pad>", True, "GemmaTokenizer", dummy_prefix=False),
    "phi": TokenizerKind("byte-bpe", ("<|endoftext|>",), "<|endoftext|>", "<|endoftext|>", "<|endoftext|>", None,
                         False, "CodeGenTokenizer"),
    "pythia": TokenizerKind("byte-bpe", ("<|endoftext|>", "<|padding|>"), "<|endoftext|>", "<|endoftext|>",
                            "<|endoftext|>", None, False, "GPTNeoXTokenizer"),
    "bloom": TokenizerKind("byte-bpe", ("<unk>", "<s>", "</s>", "<pad>"), "<s>", "</s>", "<unk>", "<pad>", False,
                           "BloomTokenizer"),
}
#: families whose tokenizer comes from an offline model: family -> offline key
OFFLINE_TOKENIZERS = {"qwen": "qwen05", "bert": "minilm", "xlm-roberta": "e5small"}
#: the offline tokenizers whose vocabulary the stand-ins cut (BERT's WordPiece, 30,522 entries, loads fast)
CUT_VOCABULARIES = ("qwen", "xlm-roberta")
#: the ``tokenizer_class`` each family's tokenizer_config.json names on the hub (what AutoTokenizer builds)
TOKENIZER_CLASSES = {**{name: k.tokenizer_class for name, k in TOKENIZER_KINDS.items()}, "qwen": "Qwen2Tokenizer",
                     "bert": "BertTokenizer", "xlm-roberta": "XLMRobertaTokenizer"}


@cache
def _trained_tokenizer_json(kind: str) -> str:
    """A small tokenizer of ``kind`` trained on the embedded sentences (deterministic), as JSON."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    from sinkframes.corpus import embedded_sentences

    k = TOKENIZER_KINDS[kind]
    texts = embedded_sentences()["text"].tolist()
    if k.algorithm == "byte-bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    else:  # sentencepiece BPE as Llama 2 / Mistral / Gemma tokenizer.json files spell it
        tok = Tokenizer(models.BPE(unk_token=k.unk, byte_fallback=True, fuse_unk=True))
        steps = [normalizers.Prepend("▁")] if k.dummy_prefix else []
        tok.normalizer = normalizers.Sequence([*steps, normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
        alphabet = [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=TRAINED_VOCAB, special_tokens=list(k.specials),
                                  initial_alphabet=[] if k.algorithm != "byte-bpe" else alphabet,
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    if k.algorithm != "byte-bpe":
        tok.add_tokens([a for a in alphabet if tok.token_to_id(a) is None])
    if k.adds_bos and k.bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{k.bos} $A", pair=f"{k.bos} $A {k.bos} $B", special_tokens=[(k.bos, tok.token_to_id(k.bos))])
    elif k.algorithm == "byte-bpe":
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok.to_str()


def _trained_tokenizer(kind: str, instruct: bool) -> Any:
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    k = TOKENIZER_KINDS[kind]
    tokens = {"bos_token": k.bos, "eos_token": (k.instruct_eos if instruct and k.instruct_eos else k.eos),
              "unk_token": k.unk, "pad_token": k.pad}
    fast = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(_trained_tokenizer_json(kind)),
                                   **{n: t for n, t in tokens.items() if t is not None})
    fast.model_max_length = 131072 if kind == "llama3" else 2048
    return fast


def _offline_tokenizer(key: str) -> Any:
    """The tokenizer of offline model ``key`` (its package; the Qwen GGUF's converted copy)."""
    from transformers import AutoTokenizer

    from sinkframes.models.gguf import offline_folder, package_dir
    from sinkframes.models.registry import OFFLINE_MODELS

    om = OFFLINE_MODELS[key]
    if om.fmt == "e5s1":
        from sinkframes.models.e5s1 import build_tokenizer, read_e5s1
        from sinkframes.models.parts import checked_single_file

        f = read_e5s1(checked_single_file(om))
        return build_tokenizer(f.vocab, 512)
    folder = package_dir(om) / "model" if not om.converted else offline_folder(om)[0]
    return AutoTokenizer.from_pretrained(str(folder))


def _renumbered(spec: dict[str, Any], keep: int) -> dict[str, int]:
    """Renumber the added (special) tokens of tokenizer.json ``spec`` whose ids are ``keep`` or more to ``keep``,
    ``keep + 1``, ... (in their order); return ``content -> new id`` of those."""
    moved = {a["content"]: keep + k for k, a in enumerate(a for a in spec["added_tokens"] if a["id"] >= keep)}
    for a in spec["added_tokens"]:
        a["id"] = moved.get(a["content"], a["id"])
    for st in ((spec.get("post_processor") or {}).get("special_tokens") or {}).values():
        st["ids"] = [moved.get(t, i) for t, i in zip(st["tokens"], st["ids"], strict=True)]
    return moved


def _cut_model(model: dict[str, Any], keep: int, moved: dict[str, int]) -> None:
    """Keep the first ``keep`` entries of a BPE (its bytes and the tokens of its first merges) or Unigram (its
    most probable pieces) tokenizer model, and the renumbered added tokens ``moved``."""
    if model["type"] == "BPE":
        vocab = {t: i for t, i in model["vocab"].items() if i < keep}
        pairs = [m if isinstance(m, list) else m.split(" ") for m in model["merges"]]
        model["merges"] = [m for m in pairs if m[0] in vocab and m[1] in vocab and m[0] + m[1] in vocab]
        model["vocab"] = {**vocab, **moved}
    elif model["type"] == "Unigram":
        by_piece = {p[0]: p for p in model["vocab"]}
        model["vocab"] = model["vocab"][:keep] + [by_piece[t] for t in sorted(moved, key=moved.__getitem__)]
    else:
        raise ValueError(f"cannot cut a {model['type']} vocabulary")


def cut_vocabulary(tok: Any, keep: int = KEPT_VOCAB) -> Any:
    """``tok`` (a fast tokenizer) with its vocabulary cut to its first ``keep`` entries and its special tokens
    renumbered after them, in its own class; ``tok`` itself when it is not larger. A vocabulary of 150,000 to
    250,000 entries takes seconds to load each time a page loads the model, and as many embedding rows."""
    from transformers import AutoTokenizer

    if len(tok) <= keep:
        return tok
    with tempfile.TemporaryDirectory() as tmp:
        tok.save_pretrained(tmp)
        path = Path(tmp) / "tokenizer.json"
        spec = json.loads(path.read_text(encoding="utf-8"))
        moved = _renumbered(spec, keep)
        _cut_model(spec["model"], keep, moved)
        path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
        config = Path(tmp) / "tokenizer_config.json"
        tc = json.loads(config.read_text(encoding="utf-8"))
        if "added_tokens_decoder" in tc:
            tc["added_tokens_decoder"] = {str(moved.get(a["content"], int(i))): a
                                          for i, a in tc["added_tokens_decoder"].items()}
            config.write_text(json.dumps(tc, ensure_ascii=False), encoding="utf-8")
        return AutoTokenizer.from_pretrained(tmp)


@cache
def _cut_offline_tokenizer(key: str) -> Any:
    """The tokenizer of offline model ``key``, its vocabulary cut (once per process: each stand-in gets a copy)."""
    return cut_vocabulary(_offline_tokenizer(key))


def standin_tokenizer(spec: StandIn) -> Any:
    """The tokenizer the stand-in of ``spec`` ships: an offline model's where the family matches (Qwen's and
    XLM-R's vocabularies cut to :data:`KEPT_VOCAB` entries), else a small trained one with the family's special
    tokens and start-token behaviour."""
    family = spec.tokenizer
    if family in OFFLINE_TOKENIZERS:
        key = OFFLINE_TOKENIZERS[family]
        tok = copy.deepcopy(_cut_offline_tokenizer(key)) if family in CUT_VOCABULARIES else _offline_tokenizer(key)
        if family == "qwen":  # Qwen2.5 base: <|endoftext|> ends and pads; the instruct models end on <|im_end|>
            tok.eos_token = "<|im_end|>" if spec.instruct else "<|endoftext|>"
            tok.pad_token = "<|endoftext|>"
            tok.bos_token = None
        if family == "xlm-roberta":
            tok.model_max_length = 512
        return tok
    return _trained_tokenizer(family, spec.instruct)


def _special_ids(spec: StandIn, tok: Any) -> dict[str, int | None]:
    if spec.encoder:
        return {"pad_token_id": tok.pad_token_id}
    ids = {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}
    if spec.tokenizer == "qwen":
        ids["bos_token_id"] = tok.convert_tokens_to_ids("<|endoftext|>")  # as Qwen2.5's config.json says
    if spec.tokenizer == "pythia":
        ids["bos_token_id"] = ids["eos_token_id"] = 0
    return ids


def _padded_vocab(spec: StandIn, n: int) -> int:
    """The embedding rows of the stand-in: like Qwen2.5 and Pythia, decoders pad the vocabulary to a multiple
    of 64 (rows no token uses); encoders and the Llama 3 family use exactly the tokenizer's size."""
    if spec.tokenizer in ("qwen", "pythia", "phi"):
        return -(-n // 64) * 64
    return n


# ---------------------------------------------------------------------------------------------
# the cache layout


def _seed(repo: str, revision: str) -> int:
    digest = hashlib.sha256(f"{STANDIN_SEED}:{repo}:{revision}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _commit(repo: str, revision: str, files: dict[str, str]) -> str:
    """A 40-hex commit id for one snapshot, from the repository, the revision and the files' hashes."""
    text = json.dumps([repo, revision, sorted(files.items())])
    return hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - an id, as git's, not a security hash


def _store_snapshot(repo_dir: Path, files: Path) -> tuple[dict[str, str], Path]:
    """Move the files of folder ``files`` into ``repo_dir/blobs`` (named by sha256, as the hub names LFS
    blobs); return ``name -> blob hash`` and the blob folder."""
    blobs = repo_dir / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    out: dict[str, str] = {}
    for path in sorted(p for p in files.iterdir() if p.is_file()):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        target = blobs / digest
        if not target.exists():
            shutil.move(str(path), target)
        out[path.name] = digest
    return out, blobs


def _link_snapshot(repo_dir: Path, commit: str, files: dict[str, str]) -> None:
    snap = repo_dir / "snapshots" / commit
    snap.mkdir(parents=True, exist_ok=True)
    for name, digest in files.items():
        link = snap / name
        if link.is_symlink() or link.exists():
            link.unlink()
        os.symlink(os.path.join("..", "..", "blobs", digest), link)


def _write_ref(repo_dir: Path, revision: str, commit: str) -> None:
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / revision).write_text(commit)  # the hub writes the bare commit, no newline


def _model_files(spec: StandIn, tok: Any, revision: str, layers: int, out: Path) -> None:
    """Write config, weights and tokenizer files of one revision of ``spec`` into the folder ``out``."""
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForPreTraining

    cfg = standin_config(spec, _padded_vocab(spec, len(tok)), _special_ids(spec, tok), layers)
    factory = (AutoModelForPreTraining if spec.architecture == "BertForPreTraining"
               else AutoModelForMaskedLM if spec.encoder else AutoModelForCausalLM)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_seed(spec.repo, revision))
        model: Any = factory.from_config(cfg, dtype=torch.float32)
    model = model.to(getattr(torch, spec.stored_dtype))
    model.save_pretrained(out)
    if not spec.encoder:
        (out / "generation_config.json").write_text(json.dumps(
            {"bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_id, "do_sample": False}, indent=2))
    tok.save_pretrained(out)
    kind = TOKENIZER_KINDS.get(spec.tokenizer)
    path = out / "tokenizer_config.json"
    tc = json.loads(path.read_text())
    tc["tokenizer_class"] = TOKENIZER_CLASSES[spec.tokenizer]
    if kind is not None:
        tc["add_bos_token"] = kind.adds_bos
        tc["add_eos_token"] = False
    path.write_text(json.dumps(tc, indent=2))


@dataclass
class HubSummary:
    """What :func:`write_standin_hub` wrote: the ``HF_HOME`` folder, and per model its revisions."""

    home: Path
    models: dict[str, list[str]]
    tokenizers: dict[str, str]

    @property
    def hub(self) -> Path:
        return self.home / "hub"


def profile_models(profiles: tuple[str, ...] = PROFILES) -> dict[str, list[str]]:
    """Every hub id the pages of ``profiles`` name (``models``, ``bos_comparison``, ``checkpoint_models``,
    ``published_check_model``), with the ``stepN`` revisions the emergence page reads from it (``main`` always)."""
    from sinkframes.manifest import load_manifest

    found: dict[str, list[str]] = {}
    for page in load_manifest().pages:
        for profile in profiles:
            params = page.parameters.get(profile) or {}
            for ref in [*(params.get("models") or []), *(params.get("bos_comparison") or [])]:
                found.setdefault(ref, ["main"])
            for ref in params.get("checkpoint_models") or []:
                revs = found.setdefault(ref, ["main"])
                revs += [s for s in params.get("checkpoint_steps") or [] if s not in revs]
            if params.get("published_check_model"):
                revs = found.setdefault(params["published_check_model"], ["main"])
                revs += [s for s in params.get("published_check_steps") or [] if s not in revs]
    return found


def write_standin_hub(home: Path, *, layers: int = STANDIN_LAYERS, models: dict[str, list[str]] | None = None,
                      profiles: tuple[str, ...] = PROFILES, progress: bool = False) -> HubSummary:
    """Write the stand-in of every model of ``profiles`` (or of ``models``: id -> revisions) under
    ``home/hub``, the cache ``HF_HOME=home`` makes transformers read. Existing snapshots are rewritten."""
    wanted = models if models is not None else profile_models(profiles)
    unknown = sorted(set(wanted) - set(STANDINS))
    if unknown:
        raise ModelLoadError(f"no stand-in for {', '.join(unknown)}; add its real settings to "
                             "sinkframes_build.standin_hub.STANDINS")
    hub = Path(home) / "hub"
    hub.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[str]] = {}
    sources: dict[str, str] = {}
    for repo, revisions in wanted.items():
        spec = STANDINS[repo]
        tok = standin_tokenizer(spec)
        sources[repo] = (f"trained {spec.tokenizer} ({len(tok)} tokens)" if spec.tokenizer not in OFFLINE_TOKENIZERS
                         else f"offline {OFFLINE_TOKENIZERS[spec.tokenizer]}"
                         + (f" (cut to {len(tok)} tokens)" if spec.tokenizer in CUT_VOCABULARIES else ""))
        org, name = repo.split("/", 1)
        repo_dir = hub / f"models--{org}--{name}"
        final = revisions[-1] if any(r.startswith("step") for r in revisions) else "main"
        ordered = [r for r in revisions if r != "main"] + (["main"] if "main" in revisions else [])
        commits: dict[str, str] = {}
        for revision in ordered:
            if progress:
                print(f"[sinkframes] stand-in {repo}@{revision}", file=sys.stderr)
            if revision == "main" and final != "main" and final in commits:
                _write_ref(repo_dir, "main", commits[final])  # Pythia: main is the last checkpoint
                continue
            with tempfile.TemporaryDirectory(dir=hub) as tmp:
                _model_files(spec, tok, revision, layers, Path(tmp))
                files, _ = _store_snapshot(repo_dir, Path(tmp))
            commit = _commit(repo, revision, files)
            _link_snapshot(repo_dir, commit, files)
            _write_ref(repo_dir, revision, commit)
            commits[revision] = commit
        written[repo] = ordered
    return HubSummary(Path(home), written, sources)
