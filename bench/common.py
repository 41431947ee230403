"""What the benchmark scripts share: argument checks, progress lines, tables, statement counts."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["StatementCounter", "grid", "log", "positive"]


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def log(text: str) -> None:
    """A progress line on stderr (the results go to stdout)."""
    print(text, file=sys.stderr, flush=True)


def grid(header: Sequence[str], body: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """A plain-text table: columns padded to their widest cell, ``right`` ones right-aligned."""
    widths = [max(len(r[c]) for r in [header, *body]) for c in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if j in right else c.ljust(w)
            for j, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in body)]


class StatementCounter:
    """Counts the statements (BEGIN and PRAGMA included) and commits an engine sends."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.statements = 0
        self.commits = 0

    def _statement(self, *_args: Any) -> None:
        self.statements += 1

    def _commit(self, *_args: Any) -> None:
        self.commits += 1

    def __enter__(self) -> StatementCounter:
        event.listen(self.engine, "before_cursor_execute", self._statement)
        event.listen(self.engine, "commit", self._commit)
        return self

    def __exit__(self, *_exc: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._statement)
        event.remove(self.engine, "commit", self._commit)
