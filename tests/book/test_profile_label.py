"""The provenance names a profile only when the page ran with that profile's parameters."""

from __future__ import annotations

import pytest

from sinkframes.book import manifest, page
from sinkframes.report.provenance import provenance

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
