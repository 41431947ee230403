"""The task journey against a real `kalends serve`, as a user goes through it.

The owner logs in with the link the first start printed, creates a list and a task,
schedules it with an e-mail reminder a few seconds ahead (the server runs on the real
clock), makes it repeat daily, receives the reminder at a local SMTP server (delivered
by the server's own reminder loop), completes the occurrence and finds its successor.

Where e-mail goes is the owner's own setting, kept in the database: it is set the way a
user sets it, with `kalends actor notify set` on the server's database while it runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from .conftest import (
    LOOP_WITHIN,
    OWNER,
    Server,
    SmtpInbox,
    finish,
    owner_session,
    poll,
    run_cli,
    start_server,
)

EMAIL = f"{OWNER}@example.org"
# How far ahead the reminder falls: room for the requests that set it up.
AHEAD = timedelta(seconds=4)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server on a fresh SQLite file, with both loops (the reminders are the point)."""
    directory = tmp_path_factory.mktemp("journey-tasks")
    found = start_server(f"sqlite:///{directory / 'kalends.sqlite3'}", directory)
    try:
        yield found
    finally:
        finish(found)


def ok(response: httpx.Response, status: int = 200) -> Any:
    """The JSON of ``response``, which must have ``status``."""
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def soon() -> datetime:
    """Real now plus :data:`AHEAD`, on a whole second, in UTC."""
    return (datetime.now(UTC) + AHEAD).replace(microsecond=0)


def wall(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S")


def test_a_repeating_task_reminds_by_email_and_its_completion_brings_the_next(
    server: Server, smtp_inbox: SmtpInbox
) -> None:
    # Where the owner's e-mail reminders go: set on the server's database while it runs.
    notify = run_cli(
        server, "actor", "notify", "set", OWNER, "--channel", "email",
        "--url", smtp_inbox.url(EMAIL), "--as", OWNER,
    )  # fmt: skip
    assert notify.returncode == 0, notify.stderr

    with owner_session(server) as client:
        me = ok(client.get("/api/auth/me"))
        assert (me["actor"]["handle"], me["kind"]) == (OWNER, "session")

        # A list, and a task in it.
        home = ok(client.post("/api/lists", json={"name": "Home"}), 201)
        assert (home["name"], home["role"], home["status"]) == ("Home", "owner", "active")
        assert [x["id"] for x in ok(client.get("/api/lists"))] == [home["id"]]
        task = ok(
            client.post(f"/api/lists/{home['id']}/tasks", json={"title": "Water plants"}), 201
        )
        ref = task["ref"]
        assert (task["status"], task["list_id"], task["reminders"]) == ("open", home["id"], [])

        # Due a few seconds from now, with an e-mail reminder then (to the caller).
        at = soon()
        scheduled = ok(
            client.put(
                f"/api/tasks/{ref}/schedule",
                json={
                    "expectedRevision": task["revision"],
                    "due": {"local": wall(at), "zone": "UTC"},
                    "priority": 1,
                    "reminders": [{"channel": "email", "local": wall(at), "zone": "UTC"}],
                },
            )
        )
        assert scheduled["due"] == {"local": wall(at), "zone": "UTC"}
        assert scheduled["revision"] > task["revision"]
        [reminder] = scheduled["reminders"]
        assert (reminder["channel"], reminder["recipient_id"]) == ("email", me["actor"]["id"])
        assert datetime.fromisoformat(reminder["at"]) == at

        # It repeats every day, from this first occurrence.
        started = ok(
            client.post(
                f"/api/tasks/{ref}/series",
                json={"expectedRevision": scheduled["revision"], "rule": {"kind": "daily"}},
            ),
            201,
        )
        series = started["series"]
        assert (series["status"], series["outstanding_task_id"]) == ("active", task["id"])
        assert (started["task"]["occurrence"], started["task"]["series_id"]) == (1, series["id"])

        # The server's reminder loop mails it when it falls due: once, to the owner.
        [mail] = poll(smtp_inbox.mails, LOOP_WITHIN, "the reminder e-mail")
        assert mail.rcpt_tos == (EMAIL,)
        assert mail.mail_from == smtp_inbox.sender
        assert mail.subject == "Reminder: Water plants"
        assert f"Task {ref} in Home" in mail.text
        [sent] = poll(
            lambda: [
                r
                for r in ok(client.get(f"/api/tasks/{ref}/reminders"))
                if r["status"] == "delivered"
            ],
            LOOP_WITHIN,
            "the reminder to be acknowledged as delivered",
        )
        assert (sent["attempts"], sent["last_error"]) == (1, None)
        assert datetime.fromisoformat(sent["delivered_at"]) >= at  # not before it fell due
        assert sent["id"] in mail.text  # the e-mail names the reminder it delivers

        # Completing the occurrence creates the next one, a day later, in one step.
        first = ok(client.get(f"/api/tasks/{ref}"))
        done = ok(
            client.post(
                f"/api/tasks/{ref}/complete",
                json={"expectedRevision": first["revision"], "completeSubtree": True},
            )
        )
        assert (done["status"], done["id"]) == ("completed", task["id"])
        series = ok(client.get(f"/api/series/{series['id']}"))
        successor_id = series["outstanding_task_id"]
        assert successor_id not in (None, task["id"])
        assert (series["outstanding_ordinal"], series["status"]) == (2, "active")
        successor = ok(client.get(f"/api/tasks/{successor_id}"))
        tomorrow = wall(at + timedelta(days=1))
        assert (successor["title"], successor["status"]) == ("Water plants", "open")
        assert (successor["occurrence"], successor["series"]["id"]) == (2, series["id"])
        assert successor["due"] == {"local": tomorrow, "zone": "UTC"}
        assert successor["priority"] == 1
        [next_reminder] = successor["reminders"]
        assert (next_reminder["channel"], next_reminder["local"]) == ("email", tomorrow)
        [pending] = ok(client.get(f"/api/tasks/{successor['ref']}/reminders"))
        assert (pending["status"], pending["attempts"]) == ("pending", 0)

        # The list shows the completed first occurrence and the open second one.
        tree = ok(client.get(f"/api/lists/{home['id']}/tasks"))
        assert sorted((n["occurrence"], n["status"]) for n in tree) == [
            (1, "completed"),
            (2, "open"),
        ]

    # Nothing else was mailed: the successor's reminder is tomorrow's.
    assert len(smtp_inbox.mails()) == 1
