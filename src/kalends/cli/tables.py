"""Tables laid out for the terminal: every column where it fits, a compact layout where not.

Squeezed into 80 columns, a table of six columns cuts each one until IDs and times
end in ``…`` and nobody can copy them. A command therefore draws two layouts of the
same rows: the full table, chosen when every one-line column fits whole, and a compact
one of fewer, wider columns that stacks related facts in one cell and keeps each ID on
a line of its own. ``--wide`` always draws the full table, wider than the terminal if
need be (a terminal wraps those lines; a pager or a file keeps them). The choice is
made when the table is drawn, from the width it is drawn in, so a table inside a
larger view (``schedule show``) fits too. Cells fold rather than end in ``…`` when even
the compact layout is too wide: an ID then continues on the next line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated

import typer
from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.segment import Segments
from rich.table import Table
from rich.text import Text

__all__ = ["WIDE_HELP", "Cell", "Column", "Fitted", "WideOption", "table", "width_needed"]

WIDE_HELP = (
    "Show every column, even wider than the terminal (default: all of them when they fit, "
    "else fewer, wider ones)."
)
WideOption = Annotated[bool, typer.Option("--wide", help=WIDE_HELP)]

# A column of free text (titles, summaries) counts this wide when deciding whether the
# full table fits; it wraps within whatever it gets.
WRAP_FLOOR = 16


@dataclass(frozen=True, slots=True)
class Column:
    """A column: its header; ``wrap`` for free text that may wrap (an ID, a time or a
    status stays on one line in the full table); ``whole`` for one holding IDs people
    copy, which a compact table keeps as wide as its longest word (up to
    :data:`WHOLE_LIMIT`) while the other columns wrap first."""

    name: str
    wrap: bool = False
    whole: bool = False
    justify: JustifyMethod = "left"


# The widest a ``whole`` column is kept for its longest word: kalends' IDs are at most 36
# characters (a UUID); a longer word (a URL in a summary) folds.
WHOLE_LIMIT = 40


Cell = str | Text


def _lines(cell: Cell) -> list[str]:
    return (cell.plain if isinstance(cell, Text) else cell).split("\n")


def table(
    columns: Sequence[Column],
    rows: Iterable[Sequence[Cell]],
    *,
    compact: bool = False,
    title: str | None = None,
    caption: str | None = None,
) -> Table:
    """A table of ``rows`` (text never read as markup). ``compact``: every cell may wrap
    (an ID folds, last, rather than being cut) and rows are set apart by a blank line (a
    row takes several lines there)."""
    rows = list(rows)
    drawn = Table(
        box=box.SIMPLE_HEAD,
        title=title,
        title_justify="left",
        caption=caption,
    )
    for i, column in enumerate(columns):
        drawn.add_column(
            column.name,
            no_wrap=not (compact or column.wrap),
            overflow="fold",
            justify=column.justify,
            width=_longest_word(column, (row[i] for row in rows))
            if compact and column.whole
            else None,
        )
    for i, row in enumerate(rows):
        cells = (c if isinstance(c, Text) else Text(c) for c in row)
        # (SIMPLE_HEAD draws a section's end as a blank line)
        drawn.add_row(*cells, end_section=compact and i < len(rows) - 1)
    return drawn


def _widest(column: Column, cells: Iterable[Cell]) -> int:
    return max([cell_len(column.name), *(cell_len(line) for c in cells for line in _lines(c))])


def _longest_word(column: Column, cells: Iterable[Cell]) -> int:
    words = (word for c in cells for line in _lines(c) for word in line.split())
    return min(WHOLE_LIMIT, max([cell_len(column.name), *(cell_len(w) for w in words)]))


def width_needed(columns: Sequence[Column], rows: Iterable[Sequence[Cell]]) -> int:
    """How wide :func:`table` draws ``rows`` with every one-line column whole and each
    free-text column at most :data:`WRAP_FLOOR` wide."""
    rows = list(rows)
    widths = [_widest(column, (row[i] for row in rows)) for i, column in enumerate(columns)]
    for i, column in enumerate(columns):
        if column.wrap:
            widths[i] = min(widths[i], max(WRAP_FLOOR, cell_len(column.name)))
    # SIMPLE_HEAD with its edges: one space either side of a cell, one between columns
    # and one at each edge.
    return sum(widths) + 3 * len(columns) + 1


class Fitted:
    """The full table where it fits the width it is drawn in, else the compact one;
    with ``wide``, the full table however wide it is."""

    def __init__(self, full: Table, need: int, compact: Table, *, wide: bool = False) -> None:
        self.full = full
        self.need = need
        self.compact = compact
        self.wide = wide

    @classmethod
    def of(
        cls,
        columns: Sequence[Column],
        rows: Sequence[Sequence[Cell]],
        compact: Table,
        *,
        wide: bool = False,
        title: str | None = None,
        caption: str | None = None,
    ) -> Fitted:
        """Both layouts of ``rows``: the full one drawn from ``columns``."""
        full = table(columns, rows, title=title, caption=caption)
        return cls(full, width_needed(columns, rows), compact, wide=wide)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width >= self.need:
            yield self.full
        elif self.wide:
            # Drawn at the width it needs; printed uncropped (soft wrap), the lines keep it.
            yield Segments(console.render(self.full, options.update_width(self.need)))
        else:
            yield self.compact
