"""The options every session command takes, declared once.

A command that reads or changes what kalends holds runs in a session: local, on a
database (``--database``, acting as ``--as``), or against a server (``--server``), and
prints text or ``--json``. :func:`session_command` registers such a command: the function
takes the open session first and its own arguments after, and the command line gets
``--as``, ``--database``, ``--server`` and ``--json`` after the command's own options,
worded the same on every command. The session's output mode is ``s.json_output``.

A kalends error raised anywhere in the command (its parsing, its calls, its printing)
ends it with its exit code (:func:`~kalends.cli.session.report_error`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from kalends.cli.remote import Remote, ServerOption, local_or_remote
from kalends.cli.session import ActorOption, DatabaseOption, JsonOption, Session

__all__ = ["session_command"]

F = TypeVar("F", bound=Callable[..., None])

_KEYWORD = inspect.Parameter.KEYWORD_ONLY
_ACTOR = inspect.Parameter("actor", _KEYWORD, default=None, annotation=ActorOption)
_REST = (
    inspect.Parameter("database", _KEYWORD, default=None, annotation=DatabaseOption),
    inspect.Parameter("server", _KEYWORD, default=None, annotation=ServerOption),
    inspect.Parameter("json_output", _KEYWORD, default=False, annotation=JsonOption),
)


def session_command(
    app: typer.Typer,
    name: str,
    *,
    anonymous: bool = False,
    passage: bool = False,
    **settings: Any,
) -> Callable[[F], F]:
    """Registers ``fn(session, **its options)`` as ``name`` in ``app`` (``settings`` go to
    ``app.command``), with the session options after its own; ``anonymous``: a command
    that acts as nobody (no ``--as``); ``passage``: a command that, run inside a passage,
    speaks for it with its own token (:func:`~kalends.cli.remote.passage_server`).
    Returns ``fn`` itself, unchanged."""

    def register(fn: F) -> F:
        app.command(name, **settings)(as_command(fn, anonymous=anonymous, passage=passage))
        return fn

    return register


def as_command(
    fn: Callable[..., None], *, anonymous: bool = False, passage: bool = False
) -> Callable[..., None]:
    """``fn`` as typer calls it: its own parameters after the session, then the session's."""
    # The session goes by the name of the first parameter: ``fn`` may be a command another
    # decorator rebuilt to take keywords only (:func:`~kalends.cli.schedule_options.field_flags`).
    first, *own = inspect.signature(fn, eval_str=True).parameters.values()
    common = _REST if anonymous else (_ACTOR, *_REST)
    clash = {p.name for p in common}.intersection(p.name for p in own)
    if clash:
        raise TypeError(f"{fn.__qualname__}: the session declares {sorted(clash)} already")

    @functools.wraps(fn)
    def command(**options: Any) -> None:
        actor: str | None = None if anonymous else options.pop("actor")
        database: str | None = options.pop("database")
        server: str | None = options.pop("server")
        json_output: bool = options.pop("json_output")
        opened: Session | Remote
        with local_or_remote(
            database, server, json_output, actor=actor, anonymous=anonymous, passage=passage
        ) as opened:
            fn(**{first.name: opened}, **options)

    signature = inspect.Signature([*own, *common], return_annotation=None)
    command.__signature__ = signature  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    return command
