"""The add-a-model recipe's last step: no template's prose names an offline model.

What a page says of the models it ran (stored bits, start token, stand-in, tuning, size) is written from their
records and the offline registry (``report.confounds``), so adding an offline model touches no template, and a page
run on the ``paper`` profile does not repeat the offline models' caveats.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from sinkframes.models.registry import OFFLINE_MODELS

TEMPLATES = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def model_mentions(text: str) -> list[str]:
    """The offline models ``text`` names: by key (a whole word, as written) or by a name the registry lists."""
    found = []
    for key, model in OFFLINE_MODELS.items():
        if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", text):
            found.append(key)
        found += [name for name in model.names if name in text]
    return found


def test_model_mentions_finds_keys_and_names_and_nothing_else():
    assert model_mentions("run `smollm2` and MiniLM") == ["MiniLM", "smollm2"]
    assert model_mentions("the Qwen2.5-Coder model") == ["Qwen2.5-Coder", "Qwen2.5-Coder"]  # qwen05 and qwen15
    assert model_mentions("Qwen2.5 and MPNet and Gemma3 are architectures or paper families") == []
    assert model_mentions("gemma3_text and nomic_bert are model types") == []


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_no_template_prose_names_an_offline_model(path):
    nb = nbformat.read(path, as_version=4)
    named = {k: model_mentions(c.source) for k, c in enumerate(nb.cells) if c.cell_type == "markdown"}
    assert not {k: v for k, v in named.items() if v}, (
        f"{path.name}: markdown cells name offline models; write what the page says of its models from their "
        "records (sinkframes.report.confounds) instead")
