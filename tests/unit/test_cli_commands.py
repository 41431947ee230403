"""The session options, declared once (:mod:`kalends.cli.commands`).

A command registered with ``session_command`` gets --as, --database, --server and
--json after its own options (no --as when it acts as nobody), runs with the open
session first, and a kalends error anywhere in it ends with its exit code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from kalends.cli.commands import session_command
from kalends.cli.remote import Remote
from kalends.cli.session import Session
from kalends.errors import InvalidInput

runner = CliRunner()


def _app() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @session_command(app, "who")
    def who(
        s: Session | Remote,
        word: Annotated[str, typer.Argument()],
        loud: Annotated[bool, typer.Option("--loud")] = False,
    ) -> None:
        """Print who acts, the word, and whether the output is JSON."""
        if word == "bad":
            raise InvalidInput("word: not this one", field="word")
        text = word.upper() if loud else word
        print(json.dumps({"actor": s.actor, "word": text, "json": s.json_output}))

    @session_command(app, "nobody", anonymous=True)
    def nobody(s: Session | Remote, actor: Annotated[str, typer.Argument()]) -> None:
        """A command that acts as nobody; its own argument may be called actor."""
        print(json.dumps({"actor": s.actor, "argument": actor}))

    return app


def _options(app: typer.Typer, name: str) -> list[str]:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    command = group.commands[name]
    return [p.name for p in command.params if p.name is not None]


def test_the_session_options_follow_the_commands_own() -> None:
    app = _app()
    assert _options(app, "who") == ["word", "loud", "actor", "database", "server", "json_output"]
    assert _options(app, "nobody") == ["actor", "database", "server", "json_output"]


def test_the_command_runs_in_a_local_session(tmp_path: Path) -> None:
    database = str(tmp_path / "k.sqlite3")
    result = runner.invoke(
        _app(), ["who", "hello", "--loud", "--as", "ana", "--database", database, "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[-1]) == {
        "actor": "ana",
        "word": "HELLO",
        "json": True,
    }


def test_an_anonymous_command_acts_as_nobody_and_keeps_its_own_actor(tmp_path: Path) -> None:
    database = str(tmp_path / "k.sqlite3")
    result = runner.invoke(_app(), ["nobody", "bea", "--database", database])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[-1]) == {"actor": "", "argument": "bea"}
    refused = runner.invoke(_app(), ["nobody", "bea", "--as", "ana", "--database", database])
    assert refused.exit_code == 2
    assert "--as" in refused.output


def test_a_kalends_error_in_the_command_is_its_exit_code(tmp_path: Path) -> None:
    database = str(tmp_path / "k.sqlite3")
    result = runner.invoke(_app(), ["who", "bad", "--as", "ana", "--database", database, "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "invalid-input"
    assert error["message"] == "word: not this one"


def test_a_command_without_an_acting_actor_is_refused_before_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KALENDS_ACTOR", raising=False)
    database = tmp_path / "k.sqlite3"
    result = runner.invoke(_app(), ["who", "hello", "--database", str(database)])
    assert result.exit_code == 2
    assert not database.exists()


def test_an_option_the_session_declares_cannot_be_declared_twice() -> None:
    app = typer.Typer()

    def clash(s: Session | Remote, database: Annotated[str, typer.Option()] = "") -> None:
        """Declares --database itself."""

    with pytest.raises(TypeError, match="database"):
        session_command(app, "clash")(clash)
