"""nomic-embed-text-v1.5 from its llama.cpp GGUF (architecture ``nomic-bert``) -> a transformers folder.

transformers' own GGUF loader does not know ``nomic-bert``, but transformers has a native ``NomicBertModel``
(post-LN encoder, SwiGLU MLP, rotate-half rotary positions, no biases but in the LayerNorms). This module maps
the GGUF tensors onto its parameters, builds its config from the GGUF metadata alone, and rebuilds the BERT
WordPiece vocabulary from llama.cpp's ``▁``-marked one, so that ``AutoModel`` and ``AutoTokenizer`` load the
folder offline.

llama.cpp's converter marks word-initial pieces with U+2581 and strips ``##`` from continuation pieces, and
keeps ``[...]`` pieces (the specials and ``[unusedN]``) as they are; :func:`bert_pieces` undoes exactly that.
The fused ``attn_qkv`` is q, k, v stacked along the output dimension with no rotary permutation (llama.cpp
runs nomic-bert with NEOX-style rotate-half, the layout of HF's ``rotate_half``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

ARCH = "nomic-bert"
WORD_START = "\u2581"  # llama.cpp's mark of a word-initial WordPiece piece
CONTROL_TOKEN_TYPE = 3  # gguf.TokenType.CONTROL: the added specials ([PAD], [UNK], [CLS], [SEP], [MASK])
MASK_TOKEN = "[MASK]"  # no GGUF field names the mask token; BERT's name for it is looked up in the vocabulary
VOCAB_FILE = "vocab.txt"


@dataclass(frozen=True)
class NomicHParams:
    """The numbers of the model, all read from the GGUF metadata."""

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float
    rope_theta: float
    context_length: int
    type_vocab_size: int

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads


@dataclass(frozen=True)
class NomicVocab:
    """The tokenizer facts of the GGUF: the BERT pieces in id order and the special token ids."""

    pieces: list[str]
    cls_id: int
    sep_id: int
    pad_id: int
    unk_id: int
    mask_id: int
    do_lower_case: bool


def _field(reader: Any, key: str) -> Any:
    """The value of metadata field ``key`` (a ``ValueError`` naming it when the file lacks it)."""
    field = reader.fields.get(key)
    if field is None:
        raise ValueError(f"the GGUF has no metadata field {key!r}, which a nomic-bert conversion needs")
    return field.contents()


def _optional_field(reader: Any, key: str) -> Any:
    """The value of metadata field ``key``, or ``None`` when the file lacks it."""
    field = reader.fields.get(key)
    return None if field is None else field.contents()


def _f32(value: float) -> float:
    """The shortest decimal of a float32 metadata value (1e-12, not 9.99999996e-12's float64 spelling):
    the same float32, written as the config of the original model writes it."""
    return float(str(np.float32(value)))


def read_hparams(reader: Any) -> NomicHParams:
    """The model's numbers from the metadata; fails on an architecture or layout this module does not map."""
    arch = _field(reader, "general.architecture")
    if arch != ARCH:
        raise ValueError(f"the GGUF's architecture is {arch!r}, not {ARCH!r}")
    a = f"{ARCH}."
    hp = NomicHParams(
        vocab_size=len(_field(reader, "tokenizer.ggml.tokens")),
        hidden_size=int(_field(reader, a + "embedding_length")),
        num_layers=int(_field(reader, a + "block_count")),
        num_heads=int(_field(reader, a + "attention.head_count")),
        intermediate_size=int(_field(reader, a + "feed_forward_length")),
        layer_norm_eps=_f32(_field(reader, a + "attention.layer_norm_epsilon")),
        rope_theta=_f32(_field(reader, a + "rope.freq_base")),
        context_length=int(_field(reader, a + "context_length")),
        type_vocab_size=int(_field(reader, "tokenizer.ggml.token_type_count")),
    )
    _check_layout(reader, hp)
    return hp


def _check_layout(reader: Any, hp: NomicHParams) -> None:
    """Refuse what ``NomicBertModel`` cannot express: causal attention, grouped kv heads, partial rotary."""
    a = f"{ARCH}."
    if hp.hidden_size % hp.num_heads:
        raise ValueError(f"embedding_length {hp.hidden_size} is not a multiple of head_count {hp.num_heads}")
    if _optional_field(reader, a + "attention.causal"):
        raise ValueError("the GGUF says its attention is causal; NomicBertModel is a bidirectional encoder")
    kv_heads = _optional_field(reader, a + "attention.head_count_kv")
    if kv_heads is not None and int(kv_heads) != hp.num_heads:
        raise ValueError(f"head_count_kv {kv_heads} differs from head_count {hp.num_heads}")
    rot = _optional_field(reader, a + "rope.dimension_count")
    if rot is not None and int(rot) != hp.head_dim:
        raise ValueError(f"rope.dimension_count {rot} is not the full head dimension {hp.head_dim}")
    if _optional_field(reader, a + "rope.scaling.type") not in (None, "none"):
        raise ValueError("the GGUF asks for rope scaling, which this conversion does not map")


def _torch_tensor(tensor: Any) -> torch.Tensor:
    """One GGUF tensor as float32 in torch's dimension order (GGUF lists dims innermost first)."""
    from .gguf import import_gguf

    gguf = import_gguf()

    values = gguf.quants.dequantize(np.asarray(tensor.data), tensor.tensor_type)
    shape = tuple(int(d) for d in reversed(list(tensor.shape)))
    return torch.from_numpy(np.array(values, dtype=np.float32).reshape(shape))  # a copy: the map is read-only


class _Tensors:
    """The GGUF's tensors by name, handed out once each, with shape checks."""

    def __init__(self, reader: Any) -> None:
        self._by_name = {t.name: t for t in reader.tensors}
        self._taken: set[str] = set()

    def take(self, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        """Tensor ``name`` in torch order; a ``ValueError`` naming it when it is missing or has another shape."""
        if name not in self._by_name:
            raise ValueError(f"the GGUF has no tensor {name!r}, which a nomic-bert conversion needs")
        value = _torch_tensor(self._by_name[name])
        if tuple(value.shape) != shape:
            raise ValueError(f"tensor {name!r} has shape {tuple(value.shape)}, expected {shape}")
        self._taken.add(name)
        return value

    def check_all_taken(self) -> None:
        """Fail on tensors nothing maps (biases, say): dropping them would change the model silently."""
        left = sorted(set(self._by_name) - self._taken)
        if left:
            raise ValueError(f"the GGUF has tensors this conversion does not map: {left}")


def split_qkv(qkv: torch.Tensor, hidden: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v projections from the fused ``attn_qkv`` (stacked in that order along the output rows)."""
    if qkv.shape[0] != 3 * hidden:  # [3 * hidden, hidden]
        raise ValueError(f"attn_qkv has {qkv.shape[0]} output rows, expected 3 * {hidden}")
    q, k, v = qkv.split(hidden, dim=0)  # each [hidden, hidden]
    return q.contiguous(), k.contiguous(), v.contiguous()


def _embedding_weights(tensors: _Tensors, hp: NomicHParams) -> dict[str, torch.Tensor]:
    """Token and token-type embeddings and the embedding LayerNorm (no position embeddings: rotary)."""
    d = hp.hidden_size
    return {
        "embeddings.word_embeddings.weight": tensors.take("token_embd.weight", (hp.vocab_size, d)),  # [vocab, d]
        "embeddings.token_type_embeddings.weight": tensors.take("token_types.weight", (hp.type_vocab_size, d)),
        "embeddings.LayerNorm.weight": tensors.take("token_embd_norm.weight", (d,)),
        "embeddings.LayerNorm.bias": tensors.take("token_embd_norm.bias", (d,)),
    }


def _layer_weights(tensors: _Tensors, hp: NomicHParams, i: int) -> dict[str, torch.Tensor]:
    """One encoder block: split attention projections, SwiGLU MLP, the two post-LNs."""
    d, f, src, dst = hp.hidden_size, hp.intermediate_size, f"blk.{i}.", f"layers.{i}."
    q, k, v = split_qkv(tensors.take(src + "attn_qkv.weight", (3 * d, d)), d)  # [3d, d] -> 3 x [d, d]
    return {
        dst + "self_attn.q_proj.weight": q,
        dst + "self_attn.k_proj.weight": k,
        dst + "self_attn.v_proj.weight": v,
        dst + "self_attn.o_proj.weight": tensors.take(src + "attn_output.weight", (d, d)),  # [out, in]
        dst + "post_attention_layernorm.weight": tensors.take(src + "attn_output_norm.weight", (d,)),
        dst + "post_attention_layernorm.bias": tensors.take(src + "attn_output_norm.bias", (d,)),
        dst + "mlp.gate_proj.weight": tensors.take(src + "ffn_gate.weight", (f, d)),  # [ffn, d], silu'd
        dst + "mlp.up_proj.weight": tensors.take(src + "ffn_up.weight", (f, d)),  # [ffn, d]
        dst + "mlp.down_proj.weight": tensors.take(src + "ffn_down.weight", (d, f)),  # [d, ffn]
        dst + "post_mlp_layernorm.weight": tensors.take(src + "layer_output_norm.weight", (d,)),
        dst + "post_mlp_layernorm.bias": tensors.take(src + "layer_output_norm.bias", (d,)),
    }


def nomic_state_dict(reader: Any, hp: NomicHParams) -> dict[str, torch.Tensor]:
    """Every ``NomicBertModel`` parameter, float32, from the GGUF tensors (all of them used)."""
    tensors = _Tensors(reader)
    state = _embedding_weights(tensors, hp)
    for i in range(hp.num_layers):
        state.update(_layer_weights(tensors, hp, i))
    tensors.check_all_taken()
    return state


def bert_piece(token: str, token_type: int) -> str:
    """The BERT vocab.txt spelling of one llama.cpp WordPiece token.

    ``▁x`` is word-initial ``x``; control tokens and ``[...]`` pieces (``[unusedN]``) were never marked;
    every other unmarked piece had its ``##`` stripped. A lone character is no exception: its plain form
    carries the mark (``▁,``) and its ``##`` form does not (``,``).
    """
    if token.startswith(WORD_START):
        return token[len(WORD_START) :]
    if token_type == CONTROL_TOKEN_TYPE or (token.startswith("[") and token.endswith("]")):
        return token
    return "##" + token


def bert_pieces(tokens: list[str], token_types: list[int]) -> list[str]:
    """The BERT vocabulary in id order; fails when two tokens would become the same piece."""
    if len(tokens) != len(token_types):
        raise ValueError(f"{len(tokens)} tokens but {len(token_types)} token types in the GGUF")
    pieces = [bert_piece(t, int(ty)) for t, ty in zip(tokens, token_types, strict=True)]
    twice = sorted(p for p, n in Counter(pieces).items() if n > 1)
    if twice:
        raise ValueError(f"the GGUF vocabulary maps to repeated BERT pieces: {twice[:10]}")
    return pieces


def _is_uncased(pieces: list[str]) -> bool:
    """Whether no ordinary piece has an uppercase letter: the vocabulary then only matches lowercased text.

    The GGUF has no lowercase flag (llama.cpp's WordPiece tokenizer always lowercases), so the vocabulary
    decides, as it does between bert-base-uncased and bert-base-cased.
    """
    return not any(p != p.lower() for p in pieces if not (p.startswith("[") and p.endswith("]")))


def read_vocab(reader: Any) -> NomicVocab:
    """The BERT pieces and special ids from the tokenizer metadata."""
    model = _field(reader, "tokenizer.ggml.model")
    if model != "bert":
        raise ValueError(f"the GGUF's tokenizer model is {model!r}, not a BERT WordPiece ('bert')")
    pieces = bert_pieces(
        list(_field(reader, "tokenizer.ggml.tokens")), list(_field(reader, "tokenizer.ggml.token_type"))
    )
    if MASK_TOKEN not in pieces:
        raise ValueError(f"the GGUF vocabulary has no {MASK_TOKEN} token")
    ids = {
        key: int(_field(reader, f"tokenizer.ggml.{key}_token_id"))
        for key in ("bos", "seperator", "padding", "unknown")  # llama.cpp spells it "seperator"
    }
    for key, i in ids.items():
        if not 0 <= i < len(pieces):
            raise ValueError(f"tokenizer.ggml.{key}_token_id {i} is outside the vocabulary of {len(pieces)}")
    return NomicVocab(
        pieces=pieces,
        cls_id=ids["bos"],
        sep_id=ids["seperator"],
        pad_id=ids["padding"],
        unk_id=ids["unknown"],
        mask_id=pieces.index(MASK_TOKEN),
        do_lower_case=_is_uncased(pieces),
    )


def nomic_config(hp: NomicHParams, vocab: NomicVocab) -> Any:
    """The ``NomicBertConfig`` of the GGUF's numbers (bidirectional, SwiGLU, rotary over the full head)."""
    from transformers import NomicBertConfig

    return NomicBertConfig(
        vocab_size=hp.vocab_size,
        hidden_size=hp.hidden_size,
        num_hidden_layers=hp.num_layers,
        num_attention_heads=hp.num_heads,
        head_dim=hp.head_dim,
        intermediate_size=hp.intermediate_size,
        hidden_act="silu",
        max_position_embeddings=hp.context_length,
        type_vocab_size=hp.type_vocab_size,
        layer_norm_eps=hp.layer_norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": hp.rope_theta},
        pad_token_id=vocab.pad_id,
        bos_token_id=vocab.cls_id,
        eos_token_id=vocab.sep_id,
        architectures=["NomicBertModel"],
    )


def nomic_tokenizer(vocab: NomicVocab, max_length: int) -> Any:
    """A BERT WordPiece tokenizer ([CLS] text [SEP]) over the recovered vocabulary."""
    from transformers import BertTokenizer  # the tokenizers-backed one: BertTokenizerFast is its alias

    p = vocab.pieces
    return BertTokenizer(
        vocab={piece: i for i, piece in enumerate(p)},
        do_lower_case=vocab.do_lower_case,
        unk_token=p[vocab.unk_id],
        sep_token=p[vocab.sep_id],
        pad_token=p[vocab.pad_id],
        cls_token=p[vocab.cls_id],
        mask_token=p[vocab.mask_id],
        model_max_length=max_length,
    )


def _save_model(state: dict[str, torch.Tensor], config: Any, out: Path) -> None:
    """Load ``state`` into a ``NomicBertModel`` (every key, strictly) and save it as float32 safetensors."""
    from transformers import NomicBertModel

    model: Any = NomicBertModel(config)
    model.to(torch.float32)
    model.load_state_dict(state, strict=True)  # a missing or extra key is an error here, not at load time
    model.eval()
    model.save_pretrained(out, safe_serialization=True)


def convert_nomic_gguf(gguf_path: Path, out: Path) -> None:
    """Write a transformers folder (config.json, model.safetensors, tokenizer files) for NomicBertModel
    from the f16 GGUF of nomic-embed-text-v1.5."""
    from .gguf import import_gguf

    gguf = import_gguf()

    reader = gguf.GGUFReader(str(gguf_path))
    hp = read_hparams(reader)
    vocab = read_vocab(reader)
    if len(vocab.pieces) != hp.vocab_size:
        raise ValueError(f"{len(vocab.pieces)} tokens but a vocabulary size of {hp.vocab_size}")
    state = nomic_state_dict(reader, hp)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _save_model(state, nomic_config(hp, vocab), out)
    nomic_tokenizer(vocab, hp.context_length).save_pretrained(out)
    (out / VOCAB_FILE).write_text("".join(p + "\n" for p in vocab.pieces), encoding="utf-8")
