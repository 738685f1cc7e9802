"""The book's table style: numbers, headers, token markers, index, splitting wide tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sinkframes.report import tables


@pytest.mark.parametrize("value, shown", [
    (np.float32(34.228001), "34.2"), (-0.0, "0"), (-0.0001, "-1e-4"), (0.000123, "1.23e-4"), (0.12345, "0.123"),
    (12.0, "12"), (123.456, "123"), (0.5, "0.5"), (1234567.0, "1.23e6"), (7, "7"), (np.int64(143000), "143000"),
    (float("nan"), "–"), (None, "–"), (float("inf"), "∞"), (float("-inf"), "−∞"), (True, "yes"), (0.00105, "0.00105"),
])
def test_numbers_have_three_significant_digits_and_no_noise(value, shown):
    assert tables.format_number(value) == shown


def test_token_markers_are_made_visible():
    assert tables.show_markers("Ġthe") == ("·the", True)
    assert tables.show_markers("▁in") == ("·in", True)
    assert tables.show_markers("Ċ") == ("↵", True)
    assert tables.show_markers("plain") == ("plain", False)
    out = tables.to_html(pd.DataFrame({"token": ["Ġthe", "cat"], "share": [0.5, 0.25]}))
    assert "·the" in out and "Ġ" not in out and tables.MARKER_NOTE in out


def test_no_index_column_but_a_meaningful_index_is_kept_as_columns():
    plain = tables.to_html(pd.DataFrame({"a_b": [1.0, 2.0]}))
    assert "<th>a b</th>" in plain and plain.count("<th>") == 1  # a default index is dropped
    pivot = pd.DataFrame({"x": [0.1234]}, index=pd.Index(["smollm2"], name="model"))
    out = tables.to_html(pivot)
    assert "<th>model</th>" in out and "smollm2" in out and "0.123" in out


def test_a_wide_table_is_split_and_repeats_its_label_columns():
    df = pd.DataFrame({"model": ["smollm2", "minilm"], "mode": ["faithful", "corrected"],
                       **{f"betti_{k}_at_threshold": [0.123456, 1.5] for k in range(20)}})
    widths = [tables.column_px(tables.header(c), [str(v) for v in df[c]]) for c in df.columns]
    groups = tables.column_groups(widths, 2)
    assert len(groups) > 1 and all(g[:2] == [0, 1] for g in groups)
    assert sorted({i for g in groups for i in g}) == list(range(len(df.columns)))  # every column once or as key
    assert all(sum(widths[i] for i in g) <= tables.COLUMN_PX for g in groups)
    out = tables.to_html(df)
    assert out.count("<table") == len(groups) and out.count("<td>smollm2</td>") == len(groups)
    assert "Part 1 of" in out


def test_a_narrow_table_stays_whole_and_a_long_one_is_folded():
    small = tables.to_html(pd.DataFrame({"model": ["a"], "x": [1.0]}))
    assert small.count("<table") == 1 and "<details>" not in small and "Part" not in small
    long = tables.to_html(pd.DataFrame({"x": np.arange(tables.FOLD_ROWS + 1, dtype=float)}))
    assert "<details>" in long and f"{tables.FOLD_ROWS + 1} rows" in long


def test_a_single_column_wider_than_the_page_is_its_own_part():
    widths = [100.0, 900.0, 50.0]
    assert tables.column_groups(widths, 1) == [[0, 1], [0, 2]]


def test_install_registers_the_formatter():
    class Formatter:
        def __init__(self):
            self.types = {}

        def for_type(self, t, f):
            self.types[t] = f

    class Shell:
        class display_formatter:  # noqa: N801 - the IPython attribute name
            formatters = {"text/html": Formatter()}

    shell = Shell()
    assert tables.install(shell) is True
    assert shell.display_formatter.formatters["text/html"].types[pd.DataFrame] is tables.to_html


def test_identifiers_wrap_at_their_joints_and_nowhere_else():
    from sinkframes.report.tables import breakable

    assert breakable("5.1.centralization_falls") == "5.<wbr>1.<wbr>centralization_<wbr>falls"
    assert breakable("random:minilm") == "random:<wbr>minilm"
    assert breakable("a <b> & c") == "a &lt;b&gt; &amp; c"  # escaped, and no break inside an entity
    assert breakable("end.") == "end."  # nothing to break after a final joint
    assert "overflow-wrap:anywhere" not in tables.to_html(pd.DataFrame({"model": ["random:minilm"], "x": [1.0]}))
