"""`kalends actor notify set|add|rm|ls`: notification settings from the command line.

In-process (CliRunner) on a SQLite file for the many cases; one real process checks
that URLs read from standard input work and that no listing ever shows a secret.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.main import get_command
from typer.testing import CliRunner, Result

from kalends.bootstrap import open_services
from kalends.cli.main import app
from kalends.reminders.destinations import MAX_DESTINATIONS, MAX_URL_LENGTH
from kalends.storage.schema import metadata

runner = CliRunner()
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "COLUMNS": "200",
}

# URLs with secrets in every place Apprise URLs keep them.
SECRETS = ("pa55word", "uQiRzpo4DXghDmr9QzzfQu27cmVRsG", "azGDORePK8gMaC0QOYAMyEEuzJnyUi",
           "hunter2", "Bearer", "k3y-abcdef", "tk_abcdefghijklmnopqrstuvwxyz")  # fmt: skip
NTFYS = "ntfys://reader:pa55word@ntfy.example.com/alice-phone"
POVER = "pover://uQiRzpo4DXghDmr9QzzfQu27cmVRsG@azGDORePK8gMaC0QOYAMyEEuzJnyUi"
HOOK = "json://hooks.example.com/kalends?+Authorization=Bearer%20k3y-abcdef"
NTFY_TOKEN = "ntfy://tk_abcdefghijklmnopqrstuvwxyz@ntfy.example.com/desk?auth=token"
MAIL = "mailto://alice:hunter2@example.com"
PLAIN = "ntfy://ntfy.example.com/plain"


@dataclass(frozen=True)
class World:
    url: str

    def invoke(self, args: list[str], *, stdin: str | None = None) -> Result:
        return runner.invoke(app, [*args, "--database", self.url], env=CLEAN_ENV, input=stdin)

    def json(self, args: list[str], *, stdin: str | None = None) -> Any:
        result = self.invoke([*args, "--json"], stdin=stdin)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def snapshot(self) -> dict[str, list[tuple[str, ...]]]:
        services = open_services(self.url)
        try:
            with services.store.engine.connect() as conn:
                return {
                    table.name: sorted(
                        tuple(str(v) for v in row) for row in conn.execute(select(table))
                    )
                    for table in metadata.sorted_tables
                }
        finally:
            services.store.close()


def notify(command: str, *args: str, actor: str = "alice") -> list[str]:
    return ["actor", "notify", command, *args, "--as", actor]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    url = f"sqlite:///{tmp_path / 'kalends.sqlite3'}"
    services = open_services(url)
    for handle in ("alice", "bob"):
        services.directory.add_actor(handle, handle.title())
    services.store.close()
    yield World(url=url)


class TestJourney:
    def test_set_add_ls_rm_clear(self, world: World) -> None:
        written = world.json(
            notify("set", "alice", "--channel", "push", "--url", NTFYS, "--url", POVER)
        )
        assert [(d["channel"], d["position"]) for d in written] == [("push", 1), ("push", 2)]
        assert written[0]["display"] == "ntfys://reader:****@ntfy.example.com/****"

        added = world.json(notify("add", "alice", "--channel", "email", "--url", MAIL))
        assert added["display"] == "mailto://alice:****@example.com/"
        assert set(added) == {"channel", "position", "display", "created_at"}

        listed = world.json(notify("ls", "alice"))
        assert [(d["channel"], d["position"]) for d in listed] == [
            ("email", 1),
            ("push", 1),
            ("push", 2),
        ]
        assert world.json(notify("ls", "alice", "--channel", "email")) == [added]

        removed = world.json(notify("rm", "alice", "--channel", "push", "--url", NTFYS))
        assert removed == {
            "removed": {
                "channel": "push",
                "display": "ntfys://reader:****@ntfy.example.com/****",
            }
        }
        assert [d["position"] for d in world.json(notify("ls", "alice", "--channel", "push"))] == [
            2
        ]

        assert world.json(notify("set", "alice", "--channel", "push", "--clear")) == []
        assert [d["channel"] for d in world.json(notify("ls", "alice"))] == ["email"]

    def test_people_get_tables_and_notes_without_secrets(self, world: World) -> None:
        result = world.invoke(notify("set", "alice", "--channel", "push", "--url", NTFYS))
        assert result.exit_code == 0, result.output
        assert "alice now has 1 push destination(s)" in result.stdout
        assert "local mode: acting as alice" in result.stdout

        listed = world.invoke(notify("ls", "alice"))
        assert listed.exit_code == 0
        assert "ntfys://reader:****@ntfy.example.com/****" in listed.stdout
        assert "pa55word" not in listed.stdout

        empty = world.invoke(notify("ls", "bob", actor="bob"))
        assert "bob has no destination yet" in empty.stdout

    def test_ls_masks_a_web_hooks_path_token_in_tables_and_json(self, world: World) -> None:
        token = "Wh00kT0ken-9f2c4e"
        hook = f"jsons://hooks.example.com/webhook/{token}"
        slack = "https://hooks.slack.com/services/T0ABCDEF/B0GHIJKL/xoxbSeCrEtToKeN123"
        done = world.invoke(
            notify("set", "alice", "--channel", "push", "--url", hook, "--url", slack)
        )
        assert done.exit_code == 0, done.output

        table = world.invoke(notify("ls", "alice"))
        listed = world.json(notify("ls", "alice"))

        assert table.exit_code == 0, table.output
        assert "jsons://hooks.example.com/****/****" in table.stdout
        assert [d["display"] for d in listed] == [
            "jsons://hooks.example.com/****/****",
            "slack://T...F/B...L/x...3//",
        ]
        for secret in (token, "xoxbSeCrEtToKeN123"):
            assert secret not in table.stdout + json.dumps(listed) + done.stdout

    def test_urls_can_come_from_standard_input(self, world: World) -> None:
        written = world.json(
            notify("set", "alice", "--channel", "push", "--url", "-"),
            stdin=f"{NTFYS}\n\n  {POVER}  \n",
        )
        assert [d["position"] for d in written] == [1, 2]

        added = world.json(notify("add", "alice", "--channel", "push", "--url", "-"), stdin=PLAIN)
        assert added["position"] == 3
        world.json(notify("rm", "alice", "--channel", "push", "--url", "-"), stdin=PLAIN + "\n")
        assert len(world.json(notify("ls", "alice"))) == 2

    def test_the_actor_may_be_named_by_id(self, world: World) -> None:
        alice_id = world.json(["actor", "ls"])[0]["id"]
        world.json(notify("add", alice_id, "--channel", "push", "--url", PLAIN))
        assert len(world.json(notify("ls", "alice"))) == 1


class TestNoSecretsShown:
    def test_ls_json_and_every_answer_hide_passwords_tokens_and_header_values(
        self, world: World
    ) -> None:
        every_url = [a for url in (NTFYS, POVER, HOOK, NTFY_TOKEN) for a in ("--url", url)]
        outputs = [
            world.invoke(notify("set", "alice", "--channel", "push", *every_url, "--json")),
            world.invoke(notify("add", "alice", "--channel", "email", "--url", MAIL, "--json")),
            world.invoke(notify("ls", "alice", "--json")),
            world.invoke(notify("ls", "alice")),
            world.invoke(notify("rm", "alice", "--channel", "push", "--url", HOOK)),
            world.invoke(notify("rm", "alice", "--channel", "push", "--url", HOOK, "--json")),
        ]
        listed = json.loads(outputs[2].stdout)
        assert len(listed) == 5
        for result in outputs:
            for secret in SECRETS:
                assert secret not in result.stdout
                assert secret not in result.stderr


# (arguments, stdin, exit code, a fragment of the one-line error)
CASES: list[tuple[list[str], str | None, int, str]] = [
    # a channel kalends does not deliver on
    (notify("set", "alice", "--channel", "sms", "--url", PLAIN), None, 2,
     "channel: unknown channel 'sms'; use email or push"),
    (notify("ls", "alice", "--channel", "fax"), None, 2, "unknown channel 'fax'"),
    # not a URL at all
    (notify("add", "alice", "--channel", "push", "--url", "my phone"), None, 2,
     "url: not an Apprise URL"),
    # a scheme Apprise does not know, with a password in it
    (notify("add", "alice", "--channel", "push", "--url", "sms://u:s3cret@gw"), None, 2,
     "url: Apprise cannot use this sms:// URL"),
    # a known scheme in a form Apprise cannot use
    (notify("set", "alice", "--channel", "push", "--url", PLAIN, "--url", "gotify://"), None, 2,
     "urls[1]: Apprise cannot use this gotify:// URL"),
    # e-mail on the push channel
    (notify("add", "alice", "--channel", "push", "--url", MAIL), None, 2,
     "a push destination cannot be an e-mail (mailto://) URL"),
    # push on the email channel
    (notify("add", "alice", "--channel", "email", "--url", NTFYS), None, 2,
     "an email destination is a mailto:// or mailtos:// URL, got ntfys://"),
    # too many
    (notify("set", "alice", "--channel", "push",
            *[a for i in range(MAX_DESTINATIONS + 1) for a in ("--url", f"{PLAIN}{i}")]),
     None, 2, f"urls: at most {MAX_DESTINATIONS} push destinations, got {MAX_DESTINATIONS + 1}"),
    # too long
    (notify("add", "alice", "--channel", "push", "--url", PLAIN + "x" * MAX_URL_LENGTH), None, 2,
     f"url: at most {MAX_URL_LENGTH} characters"),
    # the same URL twice
    (notify("set", "alice", "--channel", "push", "--url", PLAIN, "--url", PLAIN), None, 2,
     "urls[1]: the same URL as urls[0]"),
    # neither --url nor --clear, or both
    (notify("set", "alice", "--channel", "push"), None, 2, "give --url URL"),
    (notify("set", "alice", "--channel", "push", "--url", PLAIN, "--clear"), None, 2, "not both"),
    # standard input holds two URLs where one is expected
    (notify("add", "alice", "--channel", "push", "--url", "-"), f"{PLAIN}\n{NTFYS}\n", 2,
     "url: expected one URL on standard input, got 2"),
    # nobody says who acts
    (["actor", "notify", "ls", "alice"], None, 2, "say who is acting"),
    # another actor's settings
    (notify("ls", "alice", actor="bob"), None, 1,
     "you may only see your own notification settings"),
    (notify("add", "alice", "--channel", "push", "--url", PLAIN, actor="bob"), None, 1,
     "you may only change your own notification settings"),
    # an unknown acting actor, an unknown target
    (notify("ls", "alice", actor="ghost"), None, 1, "actor: no actor 'ghost'"),
    (notify("ls", "ghost"), None, 1, "target: no actor 'ghost'"),
    # removing what is not there
    (notify("rm", "alice", "--channel", "push", "--url", NTFYS), None, 1,
     "url: no such push destination"),
    # adding what is there
    (notify("add", "alice", "--channel", "push", "--url", PLAIN + "0"), None, 1, "already set"),
]  # fmt: skip


class TestBadInput:
    @pytest.mark.parametrize(("args", "stdin", "exit_code", "fragment"), CASES)
    def test_bad_input_is_one_clear_line_and_writes_nothing(
        self, world: World, args: list[str], stdin: str | None, exit_code: int, fragment: str
    ) -> None:
        world.json(notify("set", "alice", "--channel", "push", "--url", PLAIN + "0"))
        before = world.snapshot()

        result = world.invoke(args, stdin=stdin)

        assert result.exception is None or isinstance(result.exception, SystemExit), (
            result.exception
        )
        assert result.exit_code == exit_code, result.output
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("error: ")
        assert fragment in lines[0]
        for secret in ("s3cret", "pa55word", "hunter2"):
            assert secret not in lines[0]
        assert world.snapshot() == before


class TestJsonErrors:
    def test_a_bad_url_is_a_json_error_naming_the_field_without_the_secret(
        self, world: World
    ) -> None:
        result = world.invoke(
            notify("add", "alice", "--channel", "push", "--url", "sms://u:s3cret@gw", "--json")
        )
        assert result.exit_code == 2
        assert json.loads(result.stdout) == {
            "error": {
                "code": "invalid-input",
                "message": "url: Apprise cannot use this sms:// URL; check it against the "
                "service's Apprise documentation",
                "details": {"field": "url"},
            }
        }
        assert "s3cret" not in result.stderr

    def test_another_actors_settings_are_forbidden(self, world: World) -> None:
        result = world.invoke(notify("ls", "alice", "--json", actor="bob"))
        assert result.exit_code == 1
        assert json.loads(result.stdout) == {
            "error": {
                "code": "forbidden",
                "message": "you may only see your own notification settings",
                "details": {},
            }
        }

    def test_an_unknown_channel(self, world: World) -> None:
        result = world.invoke(notify("set", "alice", "--channel", "sms", "--clear", "--json"))
        assert result.exit_code == 2
        error = json.loads(result.stdout)["error"]
        assert (error["code"], error["details"]) == ("invalid-input", {"field": "channel"})


class TestHelp:
    def test_every_notify_command_documents_itself_and_takes_json_database_and_as(self) -> None:
        root: Any = get_command(app)
        notify_group = root.commands["actor"].commands["notify"]
        assert sorted(notify_group.commands) == ["add", "ls", "rm", "set"]
        for name, command in notify_group.commands.items():
            options = {o for p in command.params for o in getattr(p, "opts", [])}
            assert {"--json", "--database", "--as", "--channel"} <= options, name
            assert command.help, name

    def test_the_group_help_says_urls_are_never_printed(self) -> None:
        result = runner.invoke(app, ["actor", "notify", "--help"], env=CLEAN_ENV)
        assert result.exit_code == 0
        assert "never printed back" in result.stdout
        assert "Exit codes: 0 done; 1 refused" in result.stdout


def test_a_real_process_reads_urls_from_stdin_and_lists_them_redacted(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"KALENDS_ACTOR"}}
    env["KALENDS_DATABASE_URL"] = str(tmp_path / "kalends.sqlite3")
    env["KALENDS_ACTOR"] = "alice"

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kalends", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )

    assert run("actor", "add", "alice", "--name", "Alice").returncode == 0
    done = run(
        "actor", "notify", "set", "alice", "--channel", "push", "--url", "-", "--json",
        stdin=f"{NTFYS}\n{POVER}\n{HOOK}\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""

    listed = run("actor", "notify", "ls", "alice", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [d["display"] for d in json.loads(listed.stdout)] == [
        "ntfys://reader:****@ntfy.example.com/****",
        "pover://u...G@a...i//",
        "json://hooks.example.com/****?%2BAuthorization=****",
    ]
    for secret in SECRETS:
        assert secret not in done.stdout + listed.stdout + listed.stderr
