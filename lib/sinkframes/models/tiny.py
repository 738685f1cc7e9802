"""Seeded random-weight models of every supported architecture, built from configs.

They exist so that tests can drive every code path (extraction, metrics, notebooks) in seconds
and with no network. Their tokenizer is a small byte-level BPE trained on the embedded sentence
set; each architecture gets the special-token convention of its real counterpart (BOS or not,
[CLS]/[SEP] or <s>/</s>), because that convention decides which token sits at position 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

TINY_SEED = 1234
HIDDEN = 64
LAYERS = 3
HEADS = 4
KV_HEADS = 2
VOCAB = 2000
MAX_POSITIONS = 256


@dataclass(frozen=True)
class TinySpec:
    """How to build one tiny architecture: its config class and its token conventions."""

    config_cls: str
    causal: bool
    prefix: tuple[str, ...]  # special tokens put before the text
    suffix: tuple[str, ...]  # special tokens put after the text
    extra: tuple[tuple[str, Any], ...] = ()


TINY_SPECS: dict[str, TinySpec] = {
    "llama": TinySpec("LlamaConfig", True, ("<bos>",), (), (("num_key_value_heads", KV_HEADS),)),
    "mistral": TinySpec(
        "MistralConfig", True, ("<bos>",), (), (("num_key_value_heads", KV_HEADS), ("sliding_window", 128))
    ),
    "qwen2": TinySpec("Qwen2Config", True, (), (), (("num_key_value_heads", KV_HEADS),)),
    "gemma": TinySpec("GemmaConfig", True, ("<bos>",), (), (("num_key_value_heads", 1), ("head_dim", 16))),
    "gemma2": TinySpec(
        "Gemma2Config",
        True,
        ("<bos>",),
        (),
        (("num_key_value_heads", KV_HEADS), ("head_dim", 16), ("sliding_window", 8), ("query_pre_attn_scalar", 16)),
    ),
    "gemma3": TinySpec(
        "Gemma3TextConfig",
        True,
        ("<bos>",),
        (),
        (("num_key_value_heads", 1), ("head_dim", 16), ("sliding_window", 8), ("query_pre_attn_scalar", 16)),
    ),
    "phi": TinySpec("PhiConfig", True, (), (), (("partial_rotary_factor", 0.5),)),
    "gpt_neox": TinySpec("GPTNeoXConfig", True, (), (), (("rotary_pct", 0.25),)),
    "bloom": TinySpec("BloomConfig", True, (), ()),
    "bert": TinySpec("BertConfig", False, ("[CLS]",), ("[SEP]",)),
    "xlm-roberta": TinySpec("XLMRobertaConfig", False, ("<s>",), ("</s>",)),
    "mpnet": TinySpec("MPNetConfig", False, ("<s>",), ("</s>",)),
    "nomic_bert": TinySpec("NomicBertConfig", False, ("[CLS]",), ("[SEP]",), (("rope_theta", 1000.0),)),
}

SPECIAL_TOKENS = ["<pad>", "<unk>", "<bos>", "<eos>", "[CLS]", "[SEP]", "<s>", "</s>", "[MASK]"]


def tiny_architectures() -> list[str]:
    """The tiny architectures whose config class the installed transformers has (NomicBERT arrived in 5.5)."""
    import transformers

    return sorted(a for a, spec in TINY_SPECS.items() if hasattr(transformers, spec.config_cls))


@lru_cache(maxsize=1)
def _base_tokenizer_json() -> str:
    """Train (once per process) a byte-level BPE on the embedded sentences; deterministic."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from ..corpus import embedded_sentences

    texts = embedded_sentences()["text"].tolist()
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok.to_str()


def tiny_tokenizer(arch: str):
    """A ``PreTrainedTokenizerFast`` with the special-token convention of ``arch``."""
    from tokenizers import Tokenizer, processors
    from transformers import PreTrainedTokenizerFast

    spec = _spec(arch)
    tok = Tokenizer.from_str(_base_tokenizer_json())
    if spec.prefix or spec.suffix:
        single = " ".join([*spec.prefix, "$A", *spec.suffix])
        pair = " ".join([*spec.prefix, "$A", *spec.suffix, "$B", *spec.suffix])
        special = [(t, tok.token_to_id(t)) for t in dict.fromkeys([*spec.prefix, *spec.suffix])]
        tok.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=special)
    kwargs: dict[str, Any] = {"pad_token": "<pad>", "unk_token": "<unk>", "eos_token": "<eos>"}
    if arch in ("bert", "nomic_bert"):
        kwargs.update(cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    elif arch in ("xlm-roberta", "mpnet"):
        kwargs.update(bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>", mask_token="[MASK]")
    else:
        kwargs.update(bos_token="<bos>")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, padding_side="right", **kwargs)
    fast.model_max_length = MAX_POSITIONS
    return fast


def _spec(arch: str) -> TinySpec:
    if arch not in TINY_SPECS:
        raise ValueError(f"unknown tiny architecture {arch!r}; choose one of: {', '.join(tiny_architectures())}")
    return TINY_SPECS[arch]


def tiny_config(arch: str):
    """The transformers config of the tiny ``arch`` model (eager attention)."""
    import transformers

    spec = _spec(arch)
    if not hasattr(transformers, spec.config_cls):
        raise ValueError(f"tiny:{arch} needs transformers' {spec.config_cls}, which transformers "
                         f"{transformers.__version__} does not have; upgrade transformers")
    cls = getattr(transformers, spec.config_cls)
    tok = tiny_tokenizer(arch)
    kwargs: dict[str, Any] = dict(
        vocab_size=len(tok),
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=2 * HIDDEN,
        max_position_embeddings=MAX_POSITIONS,
        pad_token_id=tok.pad_token_id,
    )
    if spec.causal:
        kwargs.update(
            bos_token_id=tok.convert_tokens_to_ids("<bos>"), eos_token_id=tok.eos_token_id, tie_word_embeddings=True
        )
    kwargs.update(dict(spec.extra))
    cfg = cls(**kwargs)
    cfg._attn_implementation = "eager"
    return cfg


def build_tiny(arch: str, seed: int = TINY_SEED):
    """Return ``(model, tokenizer)`` for a seeded random-weight ``arch`` model in eval mode."""
    from transformers import AutoModel, AutoModelForCausalLM

    spec = _spec(arch)
    cfg = tiny_config(arch)
    torch.manual_seed(seed)
    factory = AutoModelForCausalLM if spec.causal else AutoModel
    model = factory.from_config(cfg, attn_implementation="eager")
    model.eval()
    return model, tiny_tokenizer(arch)
