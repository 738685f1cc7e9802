"""The README's models table, written from the registry (``models.registry.OFFLINE_MODELS``) by ``toc --write``.

A model's facts are typed once, in its registry record; the README shows them between two marker lines, so that adding
an offline model needs no edit of the README's table (``tests/unit/test_recipes.py`` holds the committed README to
what this writes).
"""

from __future__ import annotations

from sinkframes.models.registry import OFFLINE_MODELS, OfflineModel

START = ("<!-- the models table: written from lib/sinkframes/models/registry.py by python -m sinkframes_build toc "
         "--write -->")
END = "<!-- end of the models table -->"
COLUMNS = ("key", "checkpoint", "architecture", "position encoding", "parameters", "weights", "tuning", "licence",
           "stands in for")


def _row(m: OfflineModel) -> str:
    cells = (f"`{m.key}`", m.upstream, m.architecture, m.position, m.params, m.quantization, m.tuning, m.licence,
             m.stands_for)
    empty = [c for c, v in zip(COLUMNS, cells, strict=True) if not v]
    if empty:
        raise ValueError(f"{m.key}: its registry record leaves {', '.join(empty)} empty; the README's table prints it")
    return "| " + " | ".join(cells) + " |"


def models_table() -> str:
    """The markdown table of every offline model, in the registry's order."""
    head = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS)
    return "\n".join([head, *(_row(m) for m in OFFLINE_MODELS.values())])


def with_models_table(readme: str) -> str:
    """``readme`` with the text between its two marker lines replaced by :func:`models_table`."""
    if readme.count(START) != 1 or readme.count(END) != 1 or readme.index(START) > readme.index(END):
        raise ValueError(f"the README needs one marker line {START!r} and, after it, one line {END!r} around its "
                         "models table")
    before, rest = readme.split(START, 1)
    _, after = rest.split(END, 1)
    return f"{before}{START}\n{models_table()}\n{END}{after}"
