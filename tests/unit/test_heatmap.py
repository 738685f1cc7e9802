"""The one-pass heatmap (``figures.heatmap``): layout, labels, colours and rotation on known inputs."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sinkframes.figures.heatmap import heatmap, recentred  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_rows_run_top_down_with_labels_at_cell_centres_and_axis_names_from_the_frame():
    frame = pd.DataFrame(np.arange(6.0).reshape(2, 3), index=pd.Index([10, 11], name="layer"),
                         columns=pd.Index(["a", "b", "c"], name="head"))
    fig, ax = plt.subplots(figsize=(4, 3))
    mesh = heatmap(ax, frame, cmap="viridis", xticklabels=True, yticklabels=True)
    assert ax.get_ylim() == (2.0, 0.0) and ax.get_xlim() == (0.0, 3.0)  # row 0 on top
    assert list(ax.get_xticks()) == [0.5, 1.5, 2.5] and list(ax.get_yticks()) == [0.5, 1.5]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["10", "11"]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("head", "layer")
    assert mesh.norm.vmin == 0.0 and mesh.norm.vmax == 5.0  # the data's range by default
    assert len(fig.axes) == 2  # the colorbar


def test_no_colorbar_when_not_asked_and_nan_cells_stay_empty():
    fig, ax = plt.subplots()
    data = np.array([[0.0, np.nan], [0.5, 1.0]])
    mesh = heatmap(ax, data, vmin=0, vmax=1, cbar=False)
    assert len(fig.axes) == 1
    assert np.ma.getmaskarray(mesh.get_array()).reshape(2, 2).tolist() == [[False, True], [False, False]]


def test_a_centred_map_gives_the_centre_the_middle_colour_of_the_map():
    base = matplotlib.colormaps["coolwarm"]
    cmap = recentred(base, vmin=-1.0, vmax=3.0, center=0.0)
    # [-1, 3] is the part [-3, 3] -> [1/3, 1] of the map stretched around 0; value 0 sits 1/4 of the way
    np.testing.assert_allclose(cmap(0.25), base(0.5), atol=0.01)
    np.testing.assert_allclose(cmap(0.0), base(1 / 3), atol=0.01)
    np.testing.assert_allclose(cmap(1.0), base(1.0), atol=0.01)


def test_auto_labels_are_thinned_to_fit_and_an_int_keeps_every_kth():
    fig, ax = plt.subplots(figsize=(3, 1.5))
    heatmap(ax, np.zeros((100, 4)), yticklabels="auto", xticklabels=2)
    shown = [int(t.get_text()) for t in ax.get_yticklabels()]
    step = shown[1] - shown[0]
    assert 1 < len(shown) < 100 and shown == list(range(0, 100, step))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "2"]


def test_column_labels_wider_than_their_cells_turn_and_narrow_ones_do_not():
    fig, ax = plt.subplots(figsize=(3, 3))
    words = [f"a_long_token_{i}" for i in range(12)]
    heatmap(ax, np.zeros((12, 12)), xticklabels=words, yticklabels=words)
    assert {t.get_rotation() for t in ax.get_xticklabels()} == {90.0}
    assert {t.get_rotation() for t in ax.get_yticklabels()} == {0.0}  # row labels always read across
    fig, ax = plt.subplots(figsize=(6, 6))
    heatmap(ax, np.zeros((3, 3)), xticklabels=["a", "b", "c"], yticklabels=["a", "b", "c"])
    assert {t.get_rotation() for t in ax.get_xticklabels()} == {0.0}
    assert {t.get_rotation() for t in ax.get_yticklabels()} == {0.0}


def test_unknown_label_option_is_refused():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="tick labels must be"):
        heatmap(ax, np.zeros((2, 2)), xticklabels="some")
