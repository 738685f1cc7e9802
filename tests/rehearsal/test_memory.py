"""Before a model loads: its weights' size in the chosen dtype and one batch's attention, and a refusal naming
batch_size, dtype and max_length when the device cannot hold them."""

from __future__ import annotations

import pytest
import torch

from sinkframes.extraction import batching
from sinkframes.models import ModelLoadError
from sinkframes.models.memory import FREE_ENV, check, estimate
from sinkframes.types import RunOptions

CPU = torch.device("cpu")


def test_the_estimate_counts_weights_in_the_chosen_dtype_and_one_batch_of_attention():
    est32 = estimate("tiny:llama", dtype="float32", device=CPU, batch_size=8, max_length=256)
    est16 = estimate("tiny:llama", dtype="float16", device=CPU, batch_size=8, max_length=256)
    assert est32 is not None and est16 is not None
    model = batching.models.load("tiny:llama", device="cpu").model
    assert est32.parameters == sum(p.numel() for p in model.parameters())
    assert est32.weights == 4 * est32.parameters and est16.weights == 2 * est16.parameters
    # 8 sentences x 4 heads x 256 x 256, for 3 layers kept in float32 plus one layer's float32 scores and softmax
    assert est32.attention == 8 * 4 * 256 * 256 * (3 * 4 + 8)
    half = estimate("tiny:llama", dtype="float32", device=CPU, batch_size=4, max_length=256)
    assert half is not None and half.attention * 2 == est32.attention


def test_a_model_the_device_cannot_hold_is_refused_before_it_loads(monkeypatch):
    monkeypatch.setenv(FREE_ENV, "0.001")  # 1 MB free
    loads = []
    monkeypatch.setattr(batching.models, "load", lambda *a, **k: loads.append(a))
    with pytest.raises(ModelLoadError) as err:
        batching.get_model("tiny:qwen2", RunOptions(batch_size=8, max_length=256, dtype="float32", device="cpu"))
    text = str(err.value)
    assert "batch_size=8" in text and "max_length=256" in text and "float32" in text and "Lower batch_size" in text
    assert loads == []


def test_the_estimate_is_printed_for_hub_models_and_folders(capsys, monkeypatch):
    monkeypatch.delenv(FREE_ENV, raising=False)
    check("tiny:bert", dtype="float32", device=CPU, batch_size=2, max_length=32, show=True)
    line = capsys.readouterr().out
    assert "tiny:bert" in line and "weights" in line and "in float32" in line and "batch_size=2" in line
    assert "of attention" in line and "logits" not in line  # an encoder has no language-model head here
    check("tiny:bert", dtype="float32", device=CPU, batch_size=2, max_length=32)
    assert capsys.readouterr().out == ""  # the book's own small models are not announced


def test_the_checkpoints_the_library_ships_are_not_announced(tmp_path):
    from sinkframes.models.memory import announced
    from sinkframes.training.emergence import CHECKPOINT_DIR

    step = sorted(p for p in CHECKPOINT_DIR.iterdir() if p.is_dir())[0]
    assert not announced(str(step)) and not announced("random:" + str(step))  # cold and cached pages read alike
    assert announced(str(tmp_path)) and announced("EleutherAI/pythia-70m")  # a reader's folder, a hub id


def test_on_a_gpu_auto_picks_cuda_and_the_check_reads_the_gpus_free_memory(monkeypatch):
    """The GPU path with CUDA mocked (no GPU is reachable where the book is built): ``device="auto"`` resolves
    to CUDA, the free memory is the CUDA allocator's, and a model that does not fit is refused before loading."""
    from sinkframes.models.loading import resolve_device

    monkeypatch.delenv(FREE_ENV, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    asked = []
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda dev: asked.append(dev) or (10**6, 16 * 10**9))
    gpu = resolve_device("auto")
    assert gpu.type == "cuda"
    est = estimate("tiny:llama", dtype="float16", device=gpu, batch_size=8, max_length=256)
    assert est is not None and est.free == 10**6 and asked == [gpu]
    with pytest.raises(ModelLoadError, match="batch_size=8"):
        check("tiny:llama", dtype="float16", device=gpu, batch_size=8, max_length=256)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda dev: (16 * 10**9, 16 * 10**9))  # a T4's 16 GB
    fits = check("tiny:llama", dtype="float16", device=gpu, batch_size=8, max_length=256, show=False)
    assert fits is not None and fits.fits


def test_logits_are_counted_only_where_the_head_runs(monkeypatch):
    """The attention pages run the backbone: a decoder's vocabulary-sized output is not theirs to hold."""
    plain = estimate("tiny:llama", dtype="float32", device=CPU, batch_size=8, max_length=256)
    head = estimate("tiny:llama", dtype="float32", device=CPU, batch_size=8, max_length=256, logits=True)
    assert plain is not None and head is not None and plain.logits == 0
    vocab = batching.models.load("tiny:llama", device="cpu").model.config.vocab_size
    assert head.logits == 8 * 256 * vocab * 4 and head.needed == plain.needed + head.logits
    # a device with room for the weights and attention but not for the logits: refused only for the head's callers
    monkeypatch.setenv(FREE_ENV, str((plain.needed + head.logits / 2) / 0.8 / 1e9))
    check("tiny:llama", dtype="float32", device=CPU, batch_size=8, max_length=256, show=False)
    with pytest.raises(ModelLoadError, match="logits"):
        check("tiny:llama", dtype="float32", device=CPU, batch_size=8, max_length=256, show=False, logits=True)
