"""The emergence run: byte tokenizer, seeded batches, bit-for-bit retraining and its checks, random-init twins."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sinkframes.training import emergence as em

PLAN = em.TrainingPlan(steps=4, batch_size=2, seq_len=16, warmup=2, checkpoints=(0, 2, 4))


def _text_dir(root: Path, extra: str = "") -> Path:
    d = root / "text"
    d.mkdir()
    for i in range(25):
        (d / f"doc{i:02d}.rst.txt").write_text(f"Document {i}. The attention sink takes weight. {extra}" * 5)
    return d


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, Path]:
    """One short training run shared by the tests that only read it: ``(checkpoint folder, text folder)``."""
    root = tmp_path_factory.mktemp("emergence")
    text = _text_dir(root)
    em.run_training(root / "run", PLAN, text_dir=text)
    return root / "run", text


def test_byte_tokenizer_ids_are_bytes_after_bos() -> None:
    tok = em.byte_tokenizer()
    text = "Sink: naïve — 3 ≥ 2\nend"
    ids = tok(text)["input_ids"]
    assert ids == [em.BOS_ID, *text.encode("utf-8")]
    assert tok.decode(ids, skip_special_tokens=True) == text


def test_batches_are_seeded_and_start_with_bos() -> None:
    data = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz" * 10, dtype=np.uint8)
    a = em.sample_batch(data, torch.Generator().manual_seed(1), 3, 8)
    b = em.sample_batch(data, torch.Generator().manual_seed(1), 3, 8)
    assert torch.equal(a, b) and a.shape == (3, 8) and (a[:, 0] == em.BOS_ID).all() and (a[:, 1:] < 256).all()


def test_holdout_split_and_text_hash(tmp_path) -> None:
    docs = em.read_text_dir(_text_dir(tmp_path))
    train, held, sha = em.split_documents(docs, 20)
    assert held.size == len(docs[19][1].encode()) and train.size + held.size == sum(len(t.encode()) for _, t in docs)
    assert em.split_documents(docs, 20)[2] == sha
    assert em.split_documents([(n, t + "x") for n, t in docs], 20)[2] != sha


def test_retraining_matches_bit_for_bit_and_a_change_is_caught(tmp_path) -> None:
    text = _text_dir(tmp_path)
    out = tmp_path / "run"
    log = em.run_training(out, PLAN, text_dir=text)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["step0", "step2", "step4"]
    assert len(log.train_loss) == 4 and set(log.heldout_loss) == {"0", "2", "4"}
    assert json.loads((out / "training_log.json").read_text())["text_sha256"] == log.text_sha256
    assert em.check_training(out, PLAN, upto=1, text_dir=text) == (2, 0.0)
    # a damaged committed checkpoint is reported, with the size of the difference
    from safetensors.torch import load_file, save_file

    path = out / "step2" / "model.safetensors"
    tensors = load_file(str(path))
    first = sorted(tensors)[0]
    tensors[first] = tensors[first] + 1.0
    save_file(tensors, str(path))
    with pytest.raises(em.TrainingError, match="step2 differs"):
        em.check_training(out, PLAN, upto=1, text_dir=text)


def test_a_different_text_is_refused_by_the_check(run, tmp_path) -> None:
    out = run[0]
    other = tmp_path / "other"
    other.mkdir()
    for i in range(20):
        (other / f"a{i}.txt").write_text("something else entirely " * 50)
    with pytest.raises(em.TrainingError, match="different package version or text folder"):
        em.check_training(out, PLAN, upto=1, text_dir=other)


def test_checkpoints_load_as_models(run) -> None:
    from sinkframes.models import load

    out = run[0]
    lm = load(str(out / "step4"))
    assert lm.record.architecture == "llama" and lm.record.causal and lm.record.position0_token == "<s>"
    ref = em.checkpoint_tensors(out / "step4")["model.embed_tokens.weight"].float()
    assert torch.equal(lm.model.get_input_embeddings().weight.detach(), ref)


def test_random_init_twin_of_a_folder(run) -> None:
    from sinkframes.models import ModelLoadError, load, source_fingerprint

    out = run[0]
    ref = f"random:{out / 'step4'}"
    a, b = load(ref), load(ref)
    trained = load(str(out / "step4"))
    wa = a.model.get_input_embeddings().weight
    assert torch.equal(wa, b.model.get_input_embeddings().weight)  # seeded
    assert not torch.equal(wa, trained.model.get_input_embeddings().weight)
    assert a.record.n_layers == trained.record.n_layers and "random initialization" in a.record.source
    assert source_fingerprint(ref)["kind"] == "random-init"
    with pytest.raises(ModelLoadError, match="needs a model reference"):
        load("random:")
