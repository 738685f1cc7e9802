"""nomic-bert GGUF -> NomicBertModel folder, on a tiny seeded GGUF written in llama.cpp's layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(not hasattr(transformers, "NomicBertConfig"),
                                reason=f"transformers {transformers.__version__} has no NomicBERT (it arrived in 5.5)")

from sinkframes.models.nomic import bert_piece, convert_nomic_gguf  # noqa: E402

SEED = 20240
LAYERS, HIDDEN, HEADS, FFN, TYPES = 2, 16, 2, 24, 2
EPS, THETA, CONTEXT = 1e-5, 500.0, 64
CONTROL, NORMAL = int(gguf.TokenType.CONTROL), int(gguf.TokenType.NORMAL)
# (GGUF token, token type, BERT piece it must become)
VOCAB = [
    ("[PAD]", CONTROL, "[PAD]"),
    ("[unused0]", NORMAL, "[unused0]"),
    ("[UNK]", CONTROL, "[UNK]"),
    ("[CLS]", CONTROL, "[CLS]"),
    ("[SEP]", CONTROL, "[SEP]"),
    ("[MASK]", CONTROL, "[MASK]"),
    ("▁the", NORMAL, "the"),
    ("▁cat", NORMAL, "cat"),
    ("▁play", NORMAL, "play"),
    ("ing", NORMAL, "##ing"),
    ("▁s", NORMAL, "s"),
    ("s", NORMAL, "##s"),
    ("▁,", NORMAL, ","),
    (",", NORMAL, "##,"),
]
PAD, UNK, CLS, SEP = 0, 2, 3, 4


def _weights() -> dict[str, np.ndarray]:
    """Seeded GGUF tensors by name, in torch order (the writer reverses the dims): f16 matrices, f32 norms."""
    rng = np.random.default_rng(SEED)

    def mat(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float16)

    def vec() -> np.ndarray:
        return rng.standard_normal(HIDDEN).astype(np.float32)

    w = {
        "token_embd.weight": mat(len(VOCAB), HIDDEN),  # [vocab, d]
        "token_types.weight": rng.standard_normal((TYPES, HIDDEN)).astype(np.float32),
        "token_embd_norm.weight": vec(),
        "token_embd_norm.bias": vec(),
    }
    for i in range(LAYERS):
        b = f"blk.{i}."
        w[b + "attn_qkv.weight"] = mat(3 * HIDDEN, HIDDEN)  # [3d, d]: q, k, v rows
        w[b + "attn_output.weight"] = mat(HIDDEN, HIDDEN)
        w[b + "attn_output_norm.weight"] = vec()
        w[b + "attn_output_norm.bias"] = vec()
        w[b + "ffn_up.weight"] = mat(FFN, HIDDEN)  # [ffn, d]
        w[b + "ffn_gate.weight"] = mat(FFN, HIDDEN)
        w[b + "ffn_down.weight"] = mat(HIDDEN, FFN)  # [d, ffn]
        w[b + "layer_output_norm.weight"] = vec()
        w[b + "layer_output_norm.bias"] = vec()
    return w


def _write_gguf(path: Path, weights: dict[str, np.ndarray], skip_field: str | None = None) -> Path:
    """A nomic-bert GGUF with the metadata keys llama.cpp writes (``skip_field``: one key left out)."""
    writer = gguf.GGUFWriter(str(path), "nomic-bert")
    setters = {
        "nomic-bert.block_count": lambda: writer.add_block_count(LAYERS),
        "nomic-bert.context_length": lambda: writer.add_context_length(CONTEXT),
        "nomic-bert.embedding_length": lambda: writer.add_embedding_length(HIDDEN),
        "nomic-bert.feed_forward_length": lambda: writer.add_feed_forward_length(FFN),
        "nomic-bert.attention.head_count": lambda: writer.add_head_count(HEADS),
        "nomic-bert.attention.layer_norm_epsilon": lambda: writer.add_layer_norm_eps(EPS),
        "nomic-bert.attention.causal": lambda: writer.add_causal_attention(False),
        "nomic-bert.pooling_type": lambda: writer.add_pooling_type(gguf.PoolingType.MEAN),
        "nomic-bert.rope.freq_base": lambda: writer.add_rope_freq_base(THETA),
        "tokenizer.ggml.token_type_count": lambda: writer.add_token_type_count(TYPES),
        "tokenizer.ggml.bos_token_id": lambda: writer.add_bos_token_id(CLS),
        "tokenizer.ggml.eos_token_id": lambda: writer.add_eos_token_id(SEP),
        "tokenizer.ggml.model": lambda: writer.add_tokenizer_model("bert"),
        "tokenizer.ggml.tokens": lambda: writer.add_token_list([t for t, _, _ in VOCAB]),
        "tokenizer.ggml.scores": lambda: writer.add_token_scores([-1000.0] * len(VOCAB)),
        "tokenizer.ggml.token_type": lambda: writer.add_token_types([ty for _, ty, _ in VOCAB]),
        "tokenizer.ggml.unknown_token_id": lambda: writer.add_unk_token_id(UNK),
        "tokenizer.ggml.seperator_token_id": lambda: writer.add_sep_token_id(SEP),
        "tokenizer.ggml.padding_token_id": lambda: writer.add_pad_token_id(PAD),
    }
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for key, set_field in setters.items():
        if key != skip_field:
            set_field()
    for name, value in weights.items():
        writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> tuple[dict[str, np.ndarray], Path]:
    """The seeded weights and the folder converted from their GGUF."""
    tmp = tmp_path_factory.mktemp("nomic")
    weights = _weights()
    out = tmp / "hf"
    convert_nomic_gguf(_write_gguf(tmp / "tiny.gguf", weights), out)
    return weights, out


@pytest.fixture(scope="module")
def loaded(converted):
    """The converted model (eager attention) and its loading report, read back offline."""
    from transformers import AutoModel

    _, out = converted
    model, info = AutoModel.from_pretrained(out, attn_implementation="eager", output_loading_info=True)
    return model.eval(), info


def _f32(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a.astype(np.float32))


def test_the_folder_loads_with_every_key_matched(converted, loaded):
    _, out = converted
    model, info = loaded
    assert {p.name for p in out.iterdir()} >= {"config.json", "model.safetensors", "tokenizer.json", "vocab.txt"}
    assert type(model).__name__ == "NomicBertModel"
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_q_k_v_are_the_three_slices_of_the_fused_tensor(converted, loaded):
    weights, _ = converted
    model, _ = loaded
    for i, layer in enumerate(model.layers):
        fused = _f32(weights[f"blk.{i}.attn_qkv.weight"])  # [3d, d]
        attn = layer.self_attn
        torch.testing.assert_close(attn.q_proj.weight, fused[:HIDDEN], rtol=0, atol=0)
        torch.testing.assert_close(attn.k_proj.weight, fused[HIDDEN : 2 * HIDDEN], rtol=0, atol=0)
        torch.testing.assert_close(attn.v_proj.weight, fused[2 * HIDDEN :], rtol=0, atol=0)


def test_every_other_weight_is_its_gguf_tensor(converted, loaded):
    weights, _ = converted
    model, _ = loaded
    params = dict(model.named_parameters())
    mapped = {
        "embeddings.word_embeddings.weight": "token_embd.weight",
        "embeddings.token_type_embeddings.weight": "token_types.weight",
        "embeddings.LayerNorm.weight": "token_embd_norm.weight",
        "embeddings.LayerNorm.bias": "token_embd_norm.bias",
    }
    for i in range(LAYERS):
        for hf, gg in {
            "self_attn.o_proj.weight": "attn_output.weight",
            "post_attention_layernorm.weight": "attn_output_norm.weight",
            "post_attention_layernorm.bias": "attn_output_norm.bias",
            "mlp.gate_proj.weight": "ffn_gate.weight",
            "mlp.up_proj.weight": "ffn_up.weight",
            "mlp.down_proj.weight": "ffn_down.weight",
            "post_mlp_layernorm.weight": "layer_output_norm.weight",
            "post_mlp_layernorm.bias": "layer_output_norm.bias",
        }.items():
            mapped[f"layers.{i}.{hf}"] = f"blk.{i}.{gg}"
    for hf, gg in mapped.items():
        torch.testing.assert_close(params[hf].detach(), _f32(weights[gg]), rtol=0, atol=0, msg=hf)
    qkv = {f"layers.{i}.self_attn.{p}_proj.weight" for i in range(LAYERS) for p in "qkv"}
    assert set(params) == set(mapped) | qkv  # no parameter left at its random init


def test_the_config_numbers_are_the_metadata(loaded):
    c = loaded[0].config
    assert (c.model_type, c.vocab_size, c.hidden_size) == ("nomic_bert", len(VOCAB), HIDDEN)
    assert (c.num_hidden_layers, c.num_attention_heads, c.head_dim) == (LAYERS, HEADS, HIDDEN // HEADS)
    assert c.intermediate_size == FFN
    assert (c.max_position_embeddings, c.type_vocab_size, c.pad_token_id) == (CONTEXT, TYPES, PAD)
    assert c.layer_norm_eps == EPS  # the float32 field written back as its shortest decimal
    assert c.rope_parameters == {"rope_type": "default", "rope_theta": THETA}
    assert c.hidden_act == "silu"


def test_the_vocab_is_the_bert_pieces(converted):
    _, out = converted
    assert (out / "vocab.txt").read_text(encoding="utf-8").splitlines() == [piece for _, _, piece in VOCAB]


def test_the_tokenizer_splits_words_as_bert_does(converted):
    from transformers import AutoTokenizer

    _, out = converted
    tok = AutoTokenizer.from_pretrained(out)
    ids = tok("The cats, playing")["input_ids"]
    assert tok.convert_ids_to_tokens(ids) == ["[CLS]", "the", "cat", "##s", ",", "play", "##ing", "[SEP]"]
    assert (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.unk_token_id) == (CLS, SEP, PAD, UNK)
    assert tok.model_max_length == CONTEXT


def test_attentions_come_out_of_every_layer(loaded):
    model, _ = loaded
    with torch.no_grad():
        out = model(torch.tensor([[CLS, 6, 7, 11, SEP]]), output_attentions=True)
    assert len(out.attentions) == LAYERS
    for a in out.attentions:  # [batch, heads, query, key]
        assert a.shape == (1, HEADS, 5, 5)
        torch.testing.assert_close(a.sum(-1), torch.ones(1, HEADS, 5))


@pytest.mark.parametrize(
    ("token", "token_type", "piece"),
    [("▁a", NORMAL, "a"), ("a", NORMAL, "##a"), ("[unused7]", NORMAL, "[unused7]"), ("[CLS]", CONTROL, "[CLS]")],
)
def test_one_piece(token, token_type, piece):
    assert bert_piece(token, token_type) == piece


def test_a_missing_tensor_is_named(tmp_path):
    weights = _weights()
    del weights["blk.1.ffn_down.weight"]
    with pytest.raises(ValueError, match=r"blk\.1\.ffn_down\.weight"):
        convert_nomic_gguf(_write_gguf(tmp_path / "t.gguf", weights), tmp_path / "hf")


def test_a_missing_field_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"nomic-bert\.rope\.freq_base"):
        convert_nomic_gguf(_write_gguf(tmp_path / "t.gguf", _weights(), "nomic-bert.rope.freq_base"), tmp_path / "hf")


def test_an_unmapped_tensor_is_an_error(tmp_path):
    weights = _weights()
    weights["blk.0.attn_qkv.bias"] = np.zeros(3 * HIDDEN, dtype=np.float32)
    with pytest.raises(ValueError, match=r"blk\.0\.attn_qkv\.bias"):
        convert_nomic_gguf(_write_gguf(tmp_path / "t.gguf", weights), tmp_path / "hf")
