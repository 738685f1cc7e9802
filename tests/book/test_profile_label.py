"""The provenance names a profile only when the page ran with that profile's parameters."""

from __future__ import annotations

import pytest

from sinkframes import manifest
from sinkframes.book import page
from sinkframes.report.provenance import provenance
from sinkframes_build.plan import template_defaults_text

M = manifest.load_manifest()


@pytest.mark.parametrize("profile", manifest.PROFILES)
def test_every_manifest_entry_is_recognised_as_its_profile(profile):
    for p in M.pages:
        received = {k: v for k, v in p.params_for(profile).items() if k != "profile"}
        assert page.profile_label(profile, received) == profile, (p.id, profile)


def test_edited_parameters_are_custom():
    params = {k: v for k, v in M.page("reference_frames").params_for("offline").items() if k != "profile"}
    assert page.profile_label("offline", {**params, "models": ["tiny:llama"]}) == page.CUSTOM
    assert page.profile_label("offline", {**params, "n_sentences": 7}) == page.CUSTOM
    assert "`custom` parameters" in provenance("custom", ["tiny:llama"], 3, "embedded", 0)


def test_setup_labels_an_edited_run_custom():
    pg = page.setup(profile="smoke", models=["tiny:bert"], n_sentences=3, dataset="embedded", show=False)
    assert pg.profile == page.CUSTOM and "`custom` parameters" in pg.provenance()
    smoke = M.page("reference_frames").params_for("smoke")
    same = page.setup(profile="smoke", models=smoke["models"], n_sentences=smoke["n_sentences"],
                      dataset=smoke["dataset"], dtype=smoke["dtype"], batch_size=smoke["batch_size"], show=False)
    assert same.profile == "smoke"


def test_an_edit_that_matches_another_page_is_still_custom():
    """The smoke 01 page edited to run tiny:qwen2 alone matches the qwen appendix's smoke entry, not its own."""
    params = {k: v for k, v in M.page("reference_frames").params_for("smoke").items() if k != "profile"}
    edited = {**params, "models": ["tiny:qwen2"]}
    assert page.profile_label("smoke", edited) == "smoke"  # some page of the profile has these values ...
    assert page.profile_label("smoke", edited, "reference_frames") == page.CUSTOM  # ... but not this page
    assert page.profile_label("smoke", params, "reference_frames") == "smoke"
    assert page.profile_label("smoke", edited, "no_such_page") == "smoke"  # unknown page: the name is kept


def test_every_template_names_its_own_page(tmp_path):
    import ast

    import nbformat

    from sinkframes.report.family import page_id
    from tests.conftest import ROOT

    for p in M.pages:
        nb = nbformat.read(ROOT / p.template, as_version=4)
        calls = [n for c in nb.cells if c.cell_type == "code" and "page.setup(" in c.source
                 for n in ast.walk(ast.parse(c.source)) if isinstance(n, ast.Call)
                 and getattr(n.func, "attr", "") == "setup"]
        if not calls:  # the scorecard runs no model; chapter 9 measures the package's own checkpoints
            assert p.run_last or f'page.save_verdicts("{p.id}"' in "".join(c.source for c in nb.cells), p.id
            continue
        (call,) = calls
        arg = next(k.value for k in call.keywords if k.arg == "page_id")
        named = arg.value if isinstance(arg, ast.Constant) else page_id(p.params_for("offline")["family"])
        assert named == p.id, (p.template, named)


def test_the_packaged_manifest_is_the_checkouts_and_serves_an_installed_copy(tmp_path, monkeypatch):
    from tests.conftest import ROOT

    assert manifest.PACKAGED_MANIFEST.read_text() == (ROOT / "notebooks" / "manifest.yml").read_text(), (
        "run `python -m sinkframes_build toc --write`")
    monkeypatch.setenv("SINKFRAMES_ROOT", str(tmp_path))  # no checkout: as on Colab
    monkeypatch.chdir(tmp_path)
    params = {k: v for k, v in M.page("reference_frames").params_for("offline").items() if k != "profile"}
    assert page.profile_label("offline", params, "reference_frames") == "offline"
    assert page.profile_label("offline", {**params, "models": ["meta-llama/Llama-3.2-1B"]},
                              "reference_frames") == page.CUSTOM


def test_an_edit_of_a_parameter_the_manifest_entry_does_not_list_is_custom():
    """``seed``, ``max_length`` and ``n_examples`` are not in the offline entry of chapter 1: the template's defaults
    (packaged) are what the profile ran with, so another value is an edit; the device changes no result."""
    from tests.conftest import ROOT

    assert manifest.PACKAGED_DEFAULTS.read_text() == template_defaults_text(M), (
        "run `python -m sinkframes_build toc --write`")
    entry = M.page("reference_frames").params_for("offline")
    defaults = manifest.packaged_defaults()["reference_frames"]
    received = {**defaults, **{k: v for k, v in entry.items() if k != "profile"}}
    assert page.profile_label("offline", received, "reference_frames") == "offline"
    for name, value in (("seed", 1), ("max_length", 64), ("bos_policy", "force")):
        assert name not in entry and name in defaults, name
        assert page.profile_label("offline", {**received, name: value}, "reference_frames") == page.CUSTOM, name
    assert page.profile_label("offline", {**received, "device": "cuda"}, "reference_frames") == "offline"
    assert (ROOT / M.page("reference_frames").template).is_file()
