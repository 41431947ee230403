"""`kalends reminders ls|show|retry`: the reminder intents of the acting actor's lists.

In-process (CliRunner) on a fresh SQLite file per test. The intents are brought to
their states by the real outbox on the same database, driven by a fake clock set in
2040, when the reminders fall due: alice's e-mail is delivered, bob's push is dead
after five failed attempts, and the reminder of a second task is still pending.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from kalends.bootstrap import Services, build
from kalends.cli.main import app
from kalends.clock import FakeClock
from kalends.reminders.outbox import MAX_ATTEMPTS, Outbox
from kalends.storage.migrate import open_store
from kalends.storage.testing import nothing_written
from kalends.tasks import Task, parse_schedule

runner = CliRunner()
# Keep the caller's environment from choosing the database or the actor.
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "COLUMNS": "200",
}
ZONE = "Europe/Paris"
# 2040-01-02 08:45 in Paris: past the water reminders (08:00, 08:30), before the rent one.
DUE_TIME = datetime(2040, 1, 2, 7, 45, tzinfo=UTC)
INTENT_KEYS = {
    "id",
    "task",
    "schedule_revision",
    "channel",
    "at",
    "local",
    "zone",
    "recipient",
    "status",
    "attempts",
    "max_attempts",
    "next_attempt_at",
    "lease_owner",
    "lease_expires_at",
    "last_error",
    "closed_reason",
    "delivered_at",
    "created_at",
    "updated_at",
}


@dataclass
class Db:
    url: str
    services: Services
    clock: FakeClock
    water: Task
    rent: Task

    @property
    def outbox(self) -> Outbox:
        return Outbox(self.services.store)

    def invoke(self, *args: str, actor: str | None = "alice") -> Result:
        who = ["--as", actor] if actor is not None else []
        return runner.invoke(app, ["reminders", *args, *who, "--database", self.url], env=CLEAN_ENV)

    def ok(self, *args: str, actor: str = "alice") -> str:
        result = self.invoke(*args, actor=actor)
        assert result.exit_code == 0, result.output
        return result.stdout

    def json(self, *args: str, actor: str = "alice") -> Any:
        return json.loads(self.ok(*args, "--json", actor=actor))

    def refused(self, *args: str, actor: str = "alice", code: int) -> dict[str, Any]:
        """Runs a command that must be refused; returns its JSON error (one stderr line too)."""
        result = self.invoke(*args, "--json", actor=actor)
        assert result.exit_code == code, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        error: dict[str, Any] = json.loads(result.stdout)["error"]
        assert set(error) == {"code", "message", "details"}
        assert lines[0] == f"error: {error['message']}"
        return error

    def by_channel(self, task: Task) -> dict[str, uuid.UUID]:
        return {i.channel: i.id for i in self.outbox.list("alice", task=task.id)}


def schedule(services: Services, task: Task, due: str, reminders: list[dict[str, str]]) -> Task:
    handles = {a.handle: a.id for a in services.directory.actors()}
    parsed = parse_schedule(
        {"due": {"local": due, "zone": ZONE}, "reminders": reminders},
        lambda value, field: handles["alice" if value is None else str(value)],
    )
    return services.tasks.set_schedule("alice", task.ref, task.revision, parsed)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Db]:
    url = f"sqlite:///{tmp_path / 'kalends.sqlite3'}"
    clock = FakeClock(datetime(2039, 12, 1, tzinfo=UTC))
    services = build(open_store(url, clock))
    directory = services.directory
    for handle in ("alice", "bob", "carol", "nora"):
        directory.add_actor(handle, handle.title())
    directory.create_list("alice", "Home")
    directory.share("alice", "Home", "bob", "editor")
    directory.share("alice", "Home", "carol", "viewer")
    directory.create_list("nora", "Elsewhere")  # nora is in no list of alice's
    water = schedule(
        services,
        services.tasks.create("alice", "Home", "Water the plants"),
        "2040-01-02T09:00:00",
        [
            {"channel": "email", "local": "2040-01-02T08:00:00", "zone": ZONE},
            {"channel": "push", "local": "2040-01-02T08:30:00", "zone": ZONE, "recipient": "bob"},
        ],
    )
    rent = schedule(
        services,
        services.tasks.create("alice", "Home", "Pay the rent"),
        "2040-01-05T09:00:00",
        [{"channel": "email", "local": "2040-01-05T08:00:00", "zone": ZONE}],
    )
    # The water reminders fall due: the e-mail is delivered, the push fails five times.
    outbox = Outbox(services.store)
    clock.set(DUE_TIME)
    claims = {c.channel: c for c in outbox.claim("test-worker")}
    assert set(claims) == {"email", "push"}
    outbox.ack(claims["email"].token)
    outbox.retry(claims["push"].token, "push: destination 1 (JSON): error=500")
    for attempt in range(2, MAX_ATTEMPTS + 1):
        clock.advance(timedelta(hours=1))
        [claim] = outbox.claim("test-worker")
        outbox.retry(claim.token, f"push: destination 1 (JSON): error=500 (attempt {attempt})")
    yield Db(url=url, services=services, clock=clock, water=water, rent=rent)
    services.store.close()


class TestLs:
    def test_json_lists_every_reminder_of_the_actors_lists_earliest_first(self, db: Db) -> None:
        listed = db.json("ls")

        assert [(i["task"]["ref"], i["channel"], i["status"]) for i in listed] == [
            (db.water.ref, "email", "delivered"),
            (db.water.ref, "push", "dead"),
            (db.rent.ref, "email", "pending"),
        ]
        assert all(set(i) == INTENT_KEYS for i in listed)
        email, push, rent = listed
        assert email["task"] == {
            "id": str(db.water.id),
            "ref": db.water.ref,
            "title": "Water the plants",
        }
        assert email["at"] == "2040-01-02T07:00:00Z"
        assert (email["local"], email["zone"]) == ("2040-01-02T08:00:00", ZONE)
        assert email["recipient"]["handle"] == "alice"
        assert (email["attempts"], email["max_attempts"]) == (1, MAX_ATTEMPTS)
        assert email["delivered_at"] == "2040-01-02T07:45:00Z"
        assert email["next_attempt_at"] is None
        assert push["recipient"]["handle"] == "bob"
        assert (push["attempts"], push["last_error"]) == (
            MAX_ATTEMPTS,
            f"push: destination 1 (JSON): error=500 (attempt {MAX_ATTEMPTS})",
        )
        assert push["next_attempt_at"] is None and push["delivered_at"] is None
        assert rent["next_attempt_at"] == "2040-01-05T07:00:00Z"
        assert (rent["attempts"], rent["lease_owner"], rent["closed_reason"]) == (0, None, None)
        # Every member of the list sees the same reminders.
        assert db.json("ls", actor="carol") == listed

    def test_filters_by_status_task_and_limit(self, db: Db) -> None:
        dead = db.json("ls", "--status", "dead")
        assert [(i["task"]["ref"], i["channel"]) for i in dead] == [(db.water.ref, "push")]
        assert db.json("ls", "--status", "leased") == []
        by_ref = db.json("ls", "--task", db.water.ref.lower())
        assert [i["channel"] for i in by_ref] == ["email", "push"]
        assert db.json("ls", "--task", str(db.water.id)) == by_ref
        assert [i["task"]["ref"] for i in db.json("ls", "--task", db.rent.ref)] == [db.rent.ref]
        both = db.json("ls", "--task", db.water.ref, "--status", "delivered")
        assert [i["channel"] for i in both] == ["email"]
        assert [i["channel"] for i in db.json("ls", "--limit", "1")] == ["email"]

    def test_someone_in_none_of_the_lists_sees_nothing(self, db: Db) -> None:
        assert db.json("ls", actor="nora") == []
        assert "no reminders" in db.ok("ls", actor="nora")

    def test_the_human_table_shows_ids_tasks_statuses_and_what_comes_next(self, db: Db) -> None:
        ids = db.by_channel(db.water)
        out = db.ok("ls")
        for column in ("id", "task", "title", "channel", "at", "recipient", "status", "attempts"):
            assert re.search(rf"\b{column}\b", out.splitlines()[1]), out
        assert re.search(rf"{ids['email']} +{db.water.ref} +Water the plants +email", out)
        # Times as the recipient reads them: in the reminder's zone.
        assert re.search(r"email +2040-01-02 08:00 Europe/Paris +alice", out)
        assert re.search(r"delivered +1/5 +delivered 2040-01-02 08:45 Europe/Paris", out)
        assert re.search(r"bob +dead +5/5 +push: destination 1 \(JSON\)", out)
        assert re.search(r"pending +0/5 +next attempt 2040-01-05 08:00 Europe/Paris", out)

    def test_cancelled_and_leased_reminders_say_why_and_by_whom(self, db: Db) -> None:
        # A new schedule cancels the rent reminder of the old one and makes a new one.
        schedule(
            db.services,
            db.rent,
            "2040-01-06T09:00:00",
            [{"channel": "email", "local": "2040-01-02T08:40:00", "zone": ZONE}],
        )
        [claim] = db.outbox.claim("night-shift")  # the new one is due at once
        cancelled = db.json("ls", "--status", "cancelled")
        assert [(i["task"]["ref"], i["closed_reason"]) for i in cancelled] == [
            (db.rent.ref, "schedule-changed")
        ]
        leased = db.json("show", str(claim.id))
        assert (leased["status"], leased["lease_owner"]) == ("leased", "night-shift")
        assert leased["lease_expires_at"] is not None

        out = db.ok("ls", "--task", db.rent.ref)
        assert re.search(r"cancelled +0/5 +schedule-changed", out)
        assert re.search(r"leased +1/5 +sending \(night-shift\)", out)
        shown = db.ok("show", str(claim.id))
        assert re.search(r"^leased to +night-shift *$", shown, re.MULTILINE)
        assert re.search(r"^lease ends +2040-01-02 ", shown, re.MULTILINE)

    @pytest.mark.parametrize(
        ("args", "field"),
        [
            (("--status", "sent"), "status"),
            (("--limit", "0"), "limit"),
            (("--limit", "10001"), "limit"),
            (("--limit", "ten"), "limit"),
        ],
    )
    def test_bad_input_exits_2(self, db: Db, args: tuple[str, ...], field: str) -> None:
        error = db.refused("ls", *args, code=2)
        assert error["code"] == "invalid-input"
        assert error["message"].startswith(f"{field}: ")
        assert error["details"]["field"] == field

    def test_an_unknown_task_or_actor_is_not_found(self, db: Db) -> None:
        error = db.refused("ls", "--task", "ZZZZZZ", code=1)
        assert error["code"] == "not-found"
        # nora may not read alice's task: not found for her, as `kalends task show` says.
        hidden = db.refused("ls", "--task", db.water.ref, actor="nora", code=1)
        assert hidden["code"] == "not-found"
        shown = runner.invoke(
            app,
            ["task", "show", db.water.ref, "--json", "--as", "nora", "--database", db.url],
            env=CLEAN_ENV,
        )
        assert json.loads(shown.stdout)["error"] == hidden
        assert db.refused("ls", actor="zed", code=1)["code"] == "not-found"

    def test_without_an_actor_it_asks_for_one(self, db: Db) -> None:
        result = db.invoke("ls", "--json", actor=None)
        assert result.exit_code == 2
        assert json.loads(result.stdout)["error"]["details"]["field"] == "actor"


class TestShow:
    def test_json_is_the_listed_reminder(self, db: Db) -> None:
        listed = db.json("ls")
        for item in listed:
            assert db.json("show", item["id"]) == item

    def test_the_human_view_shows_the_details(self, db: Db) -> None:
        ids = db.by_channel(db.water)
        out = db.ok("show", str(ids["push"]))
        assert re.search(rf"^reminder +{ids['push']} *$", out, re.MULTILINE)
        assert re.search(rf"^task +{db.water.ref}  Water the plants *$", out, re.MULTILINE)
        assert re.search(r"^recipient +bob *$", out, re.MULTILINE)
        assert re.search(r"^status +dead *$", out, re.MULTILINE)
        assert re.search(r"^attempts +5 of 5 *$", out, re.MULTILINE)
        assert re.search(r"^last error +push: destination 1 \(JSON\): error=500", out, re.M)
        delivered = db.ok("show", str(ids["email"]))
        assert re.search(r"^delivered +2040-01-02 08:45 Europe/Paris *$", delivered, re.M)

    def test_unknown_and_hidden_reminders_get_the_same_not_found(self, db: Db) -> None:
        real = db.by_channel(db.water)["push"]
        unknown = uuid.uuid4()
        missing = db.refused("show", str(unknown), code=1)
        hidden = db.refused("show", str(real), actor="nora", code=1)
        assert missing == {
            "code": "not-found",
            "message": f"reminder: no intent {unknown}",
            "details": {"field": "reminder"},
        }
        assert hidden == {**missing, "message": f"reminder: no intent {real}"}

    # A task reference is not a reminder ID either.
    @pytest.mark.parametrize("bad", ["not-a-uuid", "1234", "K7Q2XW"])
    def test_a_malformed_id_is_bad_input(self, db: Db, bad: str) -> None:
        error = db.refused("show", bad, code=2)
        assert (error["code"], error["details"]["field"]) == ("invalid-input", "reminder")


class TestRetry:
    def test_the_recipient_retries_a_dead_reminder_and_it_is_pending_now(self, db: Db) -> None:
        push = db.by_channel(db.water)["push"]
        before = datetime.now(UTC)

        retried = db.json("retry", str(push), actor="bob")

        assert set(retried) == INTENT_KEYS
        assert (retried["id"], retried["status"], retried["attempts"]) == (str(push), "pending", 0)
        # The CLI runs on the real clock: due now.
        due = datetime.fromisoformat(retried["next_attempt_at"].replace("Z", "+00:00"))
        assert before - timedelta(seconds=1) <= due <= datetime.now(UTC) + timedelta(seconds=1)
        # The last error stays, for the record, until the next attempt.
        assert retried["last_error"].startswith("push: destination 1 (JSON)")
        assert db.json("show", str(push)) == retried
        # A worker can claim it again (on the fake clock, it is due too).
        db.clock.set(due)
        assert [c.id for c in db.outbox.claim("w")] == [push]

    def test_an_editor_may_retry_it_too_and_the_human_line_says_so(self, db: Db) -> None:
        push = db.by_channel(db.water)["push"]
        out = db.ok("retry", str(push), actor="alice")
        assert f"reminder {push} is pending again: 0 of 5 attempts used, next attempt now" in out
        assert "local mode: acting as alice" in out

    def test_a_delivered_reminder_is_refused_and_nothing_is_written(self, db: Db) -> None:
        email = db.by_channel(db.water)["email"]
        with nothing_written(db.services.store):
            error = db.refused("retry", str(email), code=1)
        assert error["code"] == "conflict"
        assert "a delivered reminder cannot be retried" in error["message"]

    def test_a_reminder_whose_time_has_not_come_is_not_sent_early(self, db: Db) -> None:
        # The rent reminder is pending for 2040-01-05 and has never failed: "retrying" it
        # would deliver it days early.
        rent = db.by_channel(db.rent)["email"]
        with nothing_written(db.services.store):
            error = db.refused("retry", str(rent), code=1)
        assert error["code"] == "conflict"

    def test_a_viewer_who_is_not_the_recipient_is_refused(self, db: Db) -> None:
        push = db.by_channel(db.water)["push"]
        with nothing_written(db.services.store):
            error = db.refused("retry", str(push), actor="carol", code=1)
        assert error["code"] == "forbidden"

    def test_unknown_hidden_and_malformed_ids_write_nothing(self, db: Db) -> None:
        push = db.by_channel(db.water)["push"]
        unknown = uuid.uuid4()
        with nothing_written(db.services.store):
            missing = db.refused("retry", str(unknown), code=1)
            hidden = db.refused("retry", str(push), actor="nora", code=1)
            malformed = db.refused("retry", "nope", code=2)
        assert missing["message"] == f"reminder: no intent {unknown}"
        assert hidden["message"] == f"reminder: no intent {push}"
        assert missing["code"] == hidden["code"] == "not-found"
        assert malformed["code"] == "invalid-input"
