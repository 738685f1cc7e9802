"""On a CUDA machine: every analysis gives the CPU's numbers on the GPU (round-off only) and the same verdicts,
and every page of the paper and colab profiles runs to the end on the GPU against the stand-in hub.

Run with ``make test-gpu`` (any CUDA machine, a Colab GPU runtime included: the README says how)."""

from __future__ import annotations

import nbformat
import pytest

from sinkframes.manifest import load_manifest
from sinkframes.types import RunOptions
from sinkframes_build.execute import failed_models, has_error_output
from tests.device_compare import differences, tolerance, verdict_differences
from tests.models.test_device_trap_runs import RUNS
from tests.rehearsal.conftest import run_build

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("arch", ["llama", "qwen2", "gemma3", "phi", "bert", "xlm-roberta"])
@pytest.mark.parametrize("analysis", sorted(RUNS))
def test_the_analysis_gives_the_cpu_numbers_and_verdicts_on_cuda(arch, analysis, texts):
    ref = f"tiny:{arch}"
    cpu = RUNS[analysis](ref, texts[:4], RunOptions(device="cpu", progress=False))
    gpu = RUNS[analysis](ref, texts[:4], RunOptions(device="cuda", progress=False))
    rtol, atol = tolerance(analysis)
    assert [r.ref for r in cpu] == [r.ref for r in gpu]
    for a, b in zip(cpu, gpu, strict=True):
        assert differences(a, b, rtol, atol) == [], f"{analysis} on {ref}"
    assert verdict_differences(cpu, gpu) == []


@pytest.mark.parametrize("profile", ["paper", "colab"])
def test_every_page_of_the_profile_runs_on_cuda(profile, standin_home, tmp_path):  # noqa: F811
    proc = run_build(profile, standin_home, tmp_path, jobs=1)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-6000:]
    for page in [p for p in load_manifest().pages if profile in p.parameters]:
        out = tmp_path / "pages" / page.output.rsplit("/", 1)[-1]
        assert has_error_output(out) == [] and failed_models(out) == [], page.id
        if page.parameters[profile].get("models"):
            nb = nbformat.read(out, as_version=4)
            text = "".join(str(o.get("data", {}).get("text/markdown", "")) for c in nb.cells
                           for o in c.get("outputs", []))
            assert " on cuda" in text, f"{page.id} did not run on the GPU"
