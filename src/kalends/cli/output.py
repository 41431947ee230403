"""How commands speak: JSON for machines, Rich for people, one-line errors with exit code 2."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console

from kalends.errors import KalendsError

# Bad input exits with 2, like a usage error.
EXIT_INVALID = 2
EXIT_FAILURE = 1

console = Console()
error_console = Console(stderr=True)


def emit_json(data: Any) -> None:
    """Prints ``data`` as JSON on standard output."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def fail(error: KalendsError | str, *, code: int = EXIT_INVALID) -> NoReturn:
    """Prints a one-line error on standard error and exits."""
    message = error.message if isinstance(error, KalendsError) else error
    # The message may hold user text: print it as text, never as markup.
    error_console.print("error: " + message, markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)
