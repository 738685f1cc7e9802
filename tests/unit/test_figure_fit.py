"""Figures fit the text column with labels of at least 9 points (figures.style.finish)."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from sinkframes.figures.style import COLUMN_IN, DPI, MIN_FONT_PT, finish, saved_width_in  # noqa: E402


def _overlaps(fig) -> list[tuple[int, int]]:
    """Pairs of panels whose drawn extents (with titles, labels and tick labels) overlap."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    boxes = [ax.get_tightbbox(r) for ax in fig.axes if ax.get_label() != "<colorbar>"]
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i].overlaps(boxes[j])]


def _smallest_font(fig) -> float:
    fig.canvas.draw()
    return min(t.get_fontsize() for t in fig.findobj(Text) if t.get_text() and t.get_visible())


def test_a_wide_row_of_panels_is_laid_out_in_rows_that_fit():
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.6), sharey=True)
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="a line")
        ax.set_title("t", fontsize=6)
        ax.set_xlabel("relative depth")
        ax.legend(fontsize=7)
    fig.tight_layout()  # as many figure functions do before finish
    finish(fig)
    w, h = fig.get_size_inches()
    assert w <= COLUMN_IN and h > 3.6 and fig.dpi == DPI
    assert saved_width_in(fig) <= COLUMN_IN + 1e-2  # as the notebook saves it
    assert not _overlaps(fig)
    rows = {round(ax.get_position().y0, 3) for ax in axes}
    assert len(rows) == 2  # three panels of 4.5 in: two rows (the third panel alone)
    assert _smallest_font(fig) >= MIN_FONT_PT
    plt.close(fig)


def test_a_grid_of_rows_and_columns_is_scaled_not_wrapped():
    fig, axes = plt.subplots(2, 3, figsize=(12.9, 6.2), sharey=True)
    for ax in axes.flat:
        ax.set_title("a model")
        ax.set_xlabel("relative depth")
    fig.tight_layout()  # as many figure functions do before finish
    finish(fig)
    assert fig.get_size_inches()[0] <= COLUMN_IN and not _overlaps(fig)
    pos = [[ax.get_position() for ax in row] for row in axes]
    assert pos[0][0].y0 == pos[0][2].y0 > pos[1][0].y0  # rows stay rows
    plt.close(fig)


def test_a_wrapped_panel_that_starts_a_row_shows_its_y_ticks():
    fig, axes = plt.subplots(1, 3, figsize=(12.9, 3.4), sharey=True)
    finish(fig)
    assert [ax.yaxis.get_tick_params()["labelleft"] for ax in axes] == [True, False, True]
    plt.close(fig)


def test_a_figure_with_a_colorbar_is_scaled_to_the_column_and_a_narrow_one_is_left_alone():
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    im = ax[0].imshow(np.eye(3))
    fig.colorbar(im, ax=ax[0])
    finish(fig)
    w, h = fig.get_size_inches()
    assert w <= COLUMN_IN + 1e-6 and abs(h / w - 4 / 11) < 1e-6  # the same shape, within the column
    plt.close(fig)
    narrow, _ = plt.subplots(figsize=(6, 3))
    finish(narrow)
    assert tuple(narrow.get_size_inches()) == (6, 3)
    plt.close(narrow)


def test_a_legend_outside_the_axes_still_fits():
    fig, ax = plt.subplots(figsize=(6.8, 3))
    ax.plot([0, 1], [0, 1], label="a rather long legend entry for one model")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    finish(fig)
    assert saved_width_in(fig) <= COLUMN_IN + 1e-2
    plt.close(fig)


def test_a_constrained_figure_with_colorbars_fits_as_saved(tmp_path):
    fig, axes = plt.subplots(2, 3, figsize=(13.2, 6.2), squeeze=False, layout="constrained")
    for c in range(3):
        for r in range(2):
            axes[r, c].plot([0.001, 1], [0, 1])
            axes[r, c].set_xscale("log")
            axes[r, c].set_ylabel("β0 (components)")
        sm = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(0, 5))
        fig.colorbar(sm, ax=axes[:, c], shrink=0.5, label="layer", pad=0.01)
    finish(fig)
    fig.savefig(tmp_path / "f.png", bbox_inches="tight", dpi=fig.dpi)  # as the notebook (IPython) saves it
    from matplotlib.image import imread

    width_px = imread(tmp_path / "f.png").shape[1]
    assert width_px <= COLUMN_IN * DPI + 2
    plt.close(fig)


def test_each_model_keeps_one_colour_across_the_book():
    from sinkframes.figures.style import model_colour

    assert model_colour("smollm2") != model_colour("gemma3") != model_colour("minilm")
    from sinkframes.models.registry import OFFLINE_MODELS

    offline = list(OFFLINE_MODELS)
    assert len(offline) >= 8 and all(re.fullmatch(r"#[0-9a-f]{6}", OFFLINE_MODELS[m].colour) for m in offline)
    assert len({model_colour(m) for m in offline}) == len(offline)  # no two offline models share a colour
    assert model_colour("random:smollm2") == model_colour("smollm2")  # a twin: the same colour, dashed
    assert model_colour("smollm2 (force BOS)") == model_colour("smollm2")
    assert model_colour("random:google/gemma-2b") == model_colour("google/gemma-2b")
    # a model outside the manifest: a palette colour by hash, and not one colour for every such model
    import seaborn as sns

    palette = [tuple(c) for c in sns.color_palette("colorblind", 10)]
    others = [f"someone/model-{i}" for i in range(20)]
    assert all(model_colour(m) in palette for m in others)
    assert len({model_colour(m) for m in others}) > 3


@pytest.mark.parametrize("profile", ["colab", "paper"])
def test_every_page_of_the_hub_profiles_shows_its_models_in_distinct_colours(profile):
    from sinkframes.figures.style import model_colour
    from sinkframes.manifest import load_manifest

    checked = 0
    for page in load_manifest().pages:
        params = page.parameters.get(profile) or {}
        refs = list(dict.fromkeys(m for key, value in params.items() if "model" in key and isinstance(value, list)
                                  for m in value))
        assert len({model_colour(m) for m in refs}) == len(refs), f"{page.id}: {refs}"
        checked += len(refs) > 1
    assert checked >= 8


def _lab(rgb: tuple[float, float, float]) -> np.ndarray:
    """CIELAB (D65) of an sRGB colour in [0, 1]: the standard formulas, written out for the test."""
    c = np.asarray(rgb, dtype=float)
    c = np.where(c > 0.04045, ((c + 0.055) / 1.055) ** 2.4, c / 12.92)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ c
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_the_lab_conversion_matches_known_values():
    assert np.allclose(_lab((1.0, 1.0, 1.0)), [100, 0, 0], atol=0.05)
    assert np.allclose(_lab((0.0, 0.0, 0.0)), [0, 0, 0], atol=0.05)
    assert np.allclose(_lab((1.0, 0.0, 0.0)), [53.24, 80.09, 67.20], atol=0.1)  # sRGB red, D65


def test_the_seven_default_models_are_told_apart_in_one_plot():
    # the colour-blind palette's orange and tan (delta E 37) were read as one colour in a seven-line plot
    import itertools

    from sinkframes.figures.style import model_colour
    from sinkframes.models.registry import DEFAULT_OFFLINE

    default = list(DEFAULT_OFFLINE)
    assert len(default) == 7
    closest = min(float(np.linalg.norm(_lab(model_colour(a)) - _lab(model_colour(b))))
                  for a, b in itertools.combinations(default, 2))
    assert closest > 40


def test_overlapping_labels_are_found_and_a_clean_figure_has_none():
    from sinkframes.figures.style import overlapping_labels

    crowded, ax = plt.subplots(figsize=(3, 2))
    ax.set_xticks(range(40), [f"label{i}" for i in range(40)])
    assert any(o == "panel 1 x tick 'label0' / panel 1 x tick 'label1'" for o in overlapping_labels(crowded))
    titles, (a, b) = plt.subplots(1, 2, figsize=(3, 2))
    a.set_title("a very long title that runs")
    b.set_title("into this one")
    assert "panel 1 title 'a very long title that runs' / panel 2 title 'into this one'" in overlapping_labels(titles)
    clean, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1], label="line")
    ax.set(title="a title", xlabel="x", ylabel="y")
    ax.legend()
    ax.text(0.5, 0.5, "at a data point")  # in the data area: not a label
    clean.tight_layout()
    assert overlapping_labels(clean) == []
    for f in (crowded, titles, clean):
        plt.close(f)


def test_a_caption_says_when_its_figures_labels_overlap(monkeypatch):
    from sinkframes.book import figure_caption

    monkeypatch.setattr("IPython.display.display", lambda *a, **k: None)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_xticks(range(40), [f"label{i}" for i in range(40)])
    text = figure_caption.show(fig, "Crowded ticks.")
    assert f"{figure_caption.OVERLAP_NOTE} panel 1 x tick 'label0' / panel 1 x tick 'label1'" in text
    clean, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1])
    assert figure_caption.OVERLAP_NOTE not in figure_caption.show(clean, "A line.")



def test_slanted_tick_labels_that_stand_apart_are_not_an_overlap():
    from sinkframes.figures.style import overlapping_labels

    names = ["rotary encoder", "trained: App. B", "trained: decoders", "trained: encoders", "trained: text LMs"]
    apart, ax = plt.subplots(figsize=(5, 3))
    ax.set_xticks(range(len(names)), names, rotation=40, ha="right")
    apart.tight_layout()
    assert overlapping_labels(apart) == []  # their upright boxes meet, the slanted lines do not
    crowded, ax = plt.subplots(figsize=(0.6, 3))
    ax.set_xticks(range(len(names)), names, rotation=40, ha="right")
    assert overlapping_labels(crowded)  # five slanted labels in half an inch do overlap
    for f in (apart, crowded):
        plt.close(f)
