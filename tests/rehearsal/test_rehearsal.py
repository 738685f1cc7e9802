"""The paper and colab profiles, rehearsed end to end: ``python -m sinkframes_build build --profile <p>`` against the
stand-in hub (two layers per model, ``HF_HUB_OFFLINE=1``) with three sentences per page
(``SINKFRAMES_MAX_SENTENCES``), every page executed on the CPU into a scratch folder. Any page error fails.

Cost (bench/README.md, "What the rehearsal of the paper and colab profiles costs", has the measurement): the paper
profile about 2.7 minutes, the colab profile about 2.4, on the idle 2-core machine with two pages at a time."""

from __future__ import annotations

import nbformat
import pytest

from sinkframes.manifest import load_manifest
from sinkframes_build.execute import failed_models, has_error_output

from .conftest import REHEARSAL_SENTENCES, run_build

pytestmark = pytest.mark.slow


def _text(path) -> str:
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            parts.append(str(o.get("text", "")) + str(data.get("text/markdown", "")) + str(data.get("text/plain", "")))
    return "\n".join(parts)


@pytest.mark.parametrize("profile", ["paper", "colab"])
def test_every_page_of_the_profile_runs_to_the_end_against_the_stand_in_hub(profile, standin_home, tmp_path):
    proc = run_build(profile, standin_home, tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-6000:]
    pages = [p for p in load_manifest().pages if profile in p.parameters]
    for page in pages:
        out = tmp_path / "pages" / f"{page.output.rsplit('/', 1)[-1]}"
        assert out.exists(), page.id
        assert has_error_output(out) == [] and failed_models(out) == [], page.id
        text = _text(out)
        if page.id != "scorecard":
            assert f"with the `{profile}` profile" in text, page.id
        if page.parameters[profile].get("models"):  # not the scorecard, not chapter 9 (the package's own grid)
            assert f"capped at {REHEARSAL_SENTENCES} by `SINKFRAMES_MAX_SENTENCES`" in text, page.id
            # the memory estimate printed before each hub model loads
            assert "weights" in text and "of attention" in text and "batch_size=" in text, page.id
    scorecard = _text(tmp_path / "pages" / "00_scorecard.ipynb")
    assert f"`{profile}` profile" in scorecard
    appendix_j = _text(tmp_path / "pages" / "appendix_j_pythia.ipynb")
    assert "EleutherAI/pythia" in appendix_j and "Pipeline check only" not in appendix_j  # real (random) numbers
    # the ALiBi family through the hook, with its published check; Pythia-1B's heads beside the published counts
    appendix_k = _text(tmp_path / "pages" / "appendix_k_bloom.ipynb")
    assert "bigscience/bloom-560m" in appendix_k and "Beside published counts" in appendix_k
    assert "share (arXiv 2603.09616)" in appendix_k and "Pipeline check only" not in appendix_k
    emergence = _text(tmp_path / "pages" / "07_emergence.ipynb")
    assert "heads (arXiv 2606.02378)" in emergence and "heads (ours)" in emergence
