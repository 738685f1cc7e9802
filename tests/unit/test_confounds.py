"""The model caveats a page prints, written from known records and the offline registry."""

from __future__ import annotations

from sinkframes.models.registry import OFFLINE_MODELS
from sinkframes.report import confounds
from sinkframes.results import ModelResult


def result(ref: str, bos: bool, quantization: str, family: str, architecture: str = "llama") -> ModelResult:
    rec = {"ref": ref, "adds_bos": bos, "quantization": quantization, "family": family,
           "architecture": architecture}
    return ModelResult("frames", rec, 3)


def offline(ref: str, bos: bool, family: str) -> ModelResult:
    return result(ref, bos, OFFLINE_MODELS[ref].quantization, family)


def test_each_caveat_names_the_models_it_is_about():
    run = [offline("minilm", True, "bert"), offline("smollm2", False, "llama"), offline("nomic", True, "nomic-bert"),
           offline("smollm2", False, "llama")]  # a model met twice (a second draw) counts once
    assert confounds.quantized(run) == ("weights stored in fewer bits than fp32 and read back: `smollm2` (GGUF Q4_1 "
                                        "(4-bit)), `nomic` (f16 GGUF)")
    assert confounds.first_word_at_position0(run) == ("tokenizers that put the first word, not a special token, at "
                                                      "position 0: `smollm2`")
    assert confounds.stand_ins(run) == (
        "offline stand-ins, not the paper's checkpoints: `minilm` for bert, `smollm2` for llama, `nomic` for no paper "
        "family")
    assert confounds.tuned(run) == ("tuned for a task, not base weights: `minilm` (sentence embedding (contrastive)), "
                                    "`smollm2` (instruct), `nomic` (text embedding (contrastive))")
    assert confounds.sizes(run) == "sizes from 22.7 M (`minilm`) to 137 M (`nomic`) parameters"


def test_hub_models_get_only_the_caveats_their_records_carry():
    run = [result("meta-llama/Llama-3.2-1B", True, "none (bf16 upstream, run in fp32)", "llama")]
    assert confounds.model_confounds(run) == ["no weights stored in fewer bits than fp32",
                                              "every tokenizer here puts a special token at position 0"]
    text = confounds.model_caveats(run)
    assert "paper` profile" not in text and text.count("\n- ") == 2
    assert confounds.stands_for(run) == "- `meta-llama/Llama-3.2-1B`: a llama model of the llama family."


def test_the_offline_caveats_point_to_the_paper_profile_and_empty_runs_say_so():
    text = confounds.model_caveats([offline("gemma3", True, "gemma")])
    assert text.splitlines()[-1] == "The `paper` profile reruns this page on the paper's models."
    assert "- size: 268.1 M parameters (`gemma3`)." in text
    assert confounds.tuned([offline("gemma3", True, "gemma")]) is None  # a base checkpoint
    assert confounds.model_caveats([]) == "**Caveats of the models run**: no model ran."
    assert confounds.stands_for([]) == "No model ran."
    assert confounds.names(["a", "b", "c"]) == "`a`, `b` and `c`" and confounds.names([]) == ""
