"""The command line, including the stable JSON of `sinks` and the no-forward-pass cache hit."""

from __future__ import annotations

import json

import pytest

from sinkframes import extraction as extract
from sinkframes.cli import main
from sinkframes.extraction import batching
from sinkframes_build.cli import main as build_main


def test_models_lists_every_ref(capsys):
    assert main(["models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    refs = {r["ref"] for r in rows}
    assert {"minilm", "smollm2", "gemma3", "tiny:llama", "tiny:xlm-roberta"} <= refs


def test_info_prints_the_record(capsys):
    assert main(["info", "tiny:gemma3", "--device", "cpu"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["family"] == "gemma" and rec["n_kv_heads"] == 1 and rec["adds_bos"] is True


def test_sinks_json_and_cache_hit(capsys):
    args = ["sinks", "tiny:llama", "--n", "5", "--json", "--device", "cpu"]
    assert main(args) == 0
    first = capsys.readouterr()
    out = json.loads(first.out)
    assert out["model"] == "tiny:llama" and out["n_sentences"] == 5
    assert [r["layer"] for r in out["layers"]] == [0, 1, 2]
    for r in out["layers"]:
        assert set(r) == {"layer", "first_token_share", "last_token_share", "sink_concentration"}
        assert all(0.0 <= r[k] <= 1.0 for k in r if k != "layer")
    batching._MODELS.clear()
    before = dict(extract.STATS)
    assert main(args) == 0
    second = capsys.readouterr()
    assert json.loads(second.out) == out
    assert "cache hit: no forward pass" in second.err
    assert before == extract.STATS


def test_sinks_json_is_the_analysis_result(capsys):
    from sinkframes import corpus
    from sinkframes.analyses import frames

    assert main(["sinks", "tiny:llama", "--n", "4", "--json", "--device", "cpu", "--batch-size", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    sample = corpus.sample_sentences(4, seed=0)["text"].tolist()
    res = frames.analyse_model("tiny:llama", sample, seed=0, batch_size=2, device="cpu", progress=False)
    assert res.from_cache and out == frames.to_json(res) and out["frame"] == res.data["frame"]


def test_analyse_takes_run_options_as_an_object_or_as_keywords(texts):
    from sinkframes.analyses import frames
    from sinkframes.types import RunOptions

    opts = dict(batch_size=2, bos_policy="force", device="cpu", progress=False)
    a = frames.analyse(["tiny:qwen2"], texts[:3], seed=1, **opts)[0]
    b = frames.analyse(["tiny:qwen2"], texts[:3], RunOptions(**opts), seed=1)[0]
    assert a.params["bos_policy"] == "force" and a.params["seed"] == 1 and a.params["batch_size"] == 2
    assert not a.from_cache and b.from_cache and a.layers.equals(b.layers)
    assert len(a.data["position0_tokens"]) == 1  # one forced start token for every sentence
    with pytest.raises(TypeError, match="unknown run option"):
        frames.analyse(["tiny:qwen2"], texts[:3], batch=2)


def test_errors_exit_2_with_a_message(capsys):
    assert main(["sinks", "tiny:nope", "--n", "2"]) == 2
    assert "unknown tiny architecture" in capsys.readouterr().err
    assert main(["sinks", "tiny:llama", "--n", "2", "--dataset", "paper"]) == 2
    assert "csv_path" in capsys.readouterr().err


def test_toc_write_that_cannot_write_is_a_clear_error(tmp_path, monkeypatch, capsys):
    import shutil

    from tests.conftest import ROOT

    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "_toc.yml").mkdir()  # unwritable as a file, whoever runs the test
    monkeypatch.setenv("SINKFRAMES_ROOT", str(tmp_path))
    assert build_main(["toc", "--write"]) == 2
    assert "cannot write the table of contents or a template" in capsys.readouterr().err


def test_the_installed_command_line_points_to_the_clone_for_the_build(capsys):
    # the installed package holds no build: its command line says where the build is instead of an unknown command
    for command in ("build", "toc", "standin-hub"):
        assert main([command, "--profile", "offline"]) == 2
        err = capsys.readouterr().err
        assert f"python -m sinkframes_build {command}" in err and "clone" in err
    # the installed command line names exactly the commands the build adds
    from sinkframes.cli import BUILD_COMMANDS, parser
    from sinkframes_build.cli import parser as build_parser

    def commands(p):
        return set(next(a for a in p._actions if a.dest == "command").choices)

    assert commands(build_parser()) - commands(parser()) == set(BUILD_COMMANDS)
    # the build's command line has the library's commands as well
    assert build_main(["models", "--json"]) == 0
    assert "minilm" in capsys.readouterr().out
