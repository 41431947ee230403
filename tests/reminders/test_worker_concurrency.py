"""Four worker processes drain 10,000 reminder intents from one database, and one is killed.

Each worker is its own process (``drain_worker.py``) with its own engine and store on the
real clock, delivering through a transport that appends ``<intent id> <owner>`` to a shared
record file. A trigger records every update of an intent row in the updating transaction,
so the claims, acknowledgements and releases that committed are known exactly, whichever
code path made them. One worker starts first; its transport hangs in its third batch,
after sending half of it and before the acknowledgement. Then the three others start, and
once the workers together have recorded a thousand deliveries the test kills the hung
one with SIGKILL. Then:

* every intent is delivered in the database and recorded at least once;
* no intent was held by two live leases at once: an intent is claimed again only after the
  previous lease was released by its holder or had expired (only the killed worker's do),
  and never after its acknowledgement;
* the only intents delivered twice are those the killed worker sent and never acknowledged,
  and none more than twice;
* attempts are 1, and 2 exactly for the intents the killed worker held when it died.

The leases are short, but longer than the worker's :data:`LEASE_MARGIN` (a claim with less
left than that is released unsent); the default of 60 seconds is tested elsewhere.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, Uuid, insert, select

from kalends.clock import SystemClock
from kalends.reminders.worker import LEASE_MARGIN
from kalends.storage.identity_tables import actors
from kalends.storage.migrate import open_store
from kalends.storage.schema import UTCDateTime
from kalends.storage.task_tables import (
    actor_destinations,
    list_members,
    lists,
    reminder_intents,
    tasks,
)
from kalends.storage.testing import StorageTarget
from kalends.storage.unit_of_work import Store

SCRIPT = Path(__file__).with_name("drain_worker.py")
TASKS = 100
INTENTS_PER_TASK = 100
INTENTS = TASKS * INTENTS_PER_TASK
WORKERS = ("w0", "w1", "w2", "w3")
VICTIM = "w1"
BATCH = 50
# Mid-way through the victim's third batch: half of it sent, none of it acknowledged.
STALL_AFTER = 2 * BATCH + BATCH // 2
# Deliveries recorded by all workers before the victim is killed.
KILL_AFTER = 1_000
LEASE = LEASE_MARGIN + timedelta(seconds=5)
START_SECONDS = 30.0
RUN_SECONDS = 90.0
POLL_SECONDS = 0.05

ri = reminder_intents


# --------------------------------------------------------------------------- the database


def seed(store: Store) -> set[UUID]:
    """10,000 due, pending intents for one member of an active list; returns their IDs."""
    now = store.clock.now()
    actor_id, list_id = uuid.uuid4(), uuid.uuid4()
    task_ids = [uuid.uuid4() for _ in range(TASKS)]
    ids = {task_id: [uuid.uuid4() for _ in range(INTENTS_PER_TASK)] for task_id in task_ids}
    # Due a minute ago and earlier: one instant per intent of a task (they are unique).
    due = [now - timedelta(minutes=1, seconds=j) for j in range(INTENTS_PER_TASK)]
    intents = [
        {
            "id": intent_id,
            "task_id": task_id,
            "schedule_revision": 1,
            "channel": "push" if j % 2 else "email",
            "at": due[j],
            "recipient_id": actor_id,
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": due[j],
            "created_at": now,
            "updated_at": now,
        }
        for task_id in task_ids
        for j, intent_id in enumerate(ids[task_id])
    ]
    with store.transaction() as conn:
        conn.execute(
            insert(actors).values(
                id=actor_id,
                handle="ada",
                display_name="Ada",
                email="ada@example.com",
                created_at=now,
            )
        )
        conn.execute(
            insert(lists).values(
                id=list_id, name="Chores", status="active", revision=1, created_at=now
            )
        )
        conn.execute(insert(list_members).values(list_id=list_id, actor_id=actor_id, role="owner"))
        conn.execute(
            insert(actor_destinations),
            [
                {
                    "id": uuid.uuid4(),
                    "actor_id": actor_id,
                    "channel": channel,
                    "position": 1,
                    "url": url,
                    "created_at": now,
                }
                for channel, url in (
                    ("email", "mailto://ada:secret@example.com"),
                    ("push", "ntfy://ntfy.example.com/ada"),
                )
            ],
        )
        conn.execute(
            insert(tasks),
            [
                {
                    "id": task_id,
                    "ref": f"C{i:04d}",
                    "list_id": list_id,
                    "position": i,
                    "title": f"Chore {i}",
                    "status": "open",
                    "revision": 1,
                    "schedule_revision": 1,
                    "created_by": actor_id,
                    "created_at": now,
                    "updated_at": now,
                }
                for i, task_id in enumerate(task_ids)
            ],
        )
        conn.execute(insert(ri), intents)
    return {intent_id for task_id in task_ids for intent_id in ids[task_id]}


# --------------------------------------------------------------------------- the audit

# Every change of an intent row, written by a trigger in the changing transaction, so it
# holds exactly the committed claims, acknowledgements and releases, whoever made them.
audit_metadata = MetaData()
lease_audit = Table(
    "test_lease_audit",
    audit_metadata,
    Column("seq", Integer(), primary_key=True, autoincrement=True),
    Column("intent_id", Uuid(), nullable=False),
    Column("old_status", String(16), nullable=False),
    Column("new_status", String(16), nullable=False),
    Column("old_token", String(64)),
    Column("new_token", String(64)),
    Column("old_owner", String(200)),
    Column("new_owner", String(200)),
    Column("old_expires", UTCDateTime()),
    Column("new_expires", UTCDateTime()),
    Column("attempts", Integer(), nullable=False),
    Column("at", UTCDateTime(), nullable=False),
)
_AUDITED = (
    "intent_id, old_status, new_status, old_token, new_token, old_owner, new_owner,"
    " old_expires, new_expires, attempts, at"
)
_AUDIT_VALUES = (
    "NEW.id, OLD.status, NEW.status, OLD.lease_token, NEW.lease_token, OLD.lease_owner,"
    " NEW.lease_owner, OLD.lease_expires_at, NEW.lease_expires_at, NEW.attempts, NEW.updated_at"
)
_AUDIT_TRIGGER = {
    "sqlite": [
        "CREATE TRIGGER test_lease_audit AFTER UPDATE ON reminder_intents BEGIN"
        f" INSERT INTO test_lease_audit ({_AUDITED}) VALUES ({_AUDIT_VALUES}); END"
    ],
    "postgresql": [
        "CREATE FUNCTION test_lease_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        f" INSERT INTO test_lease_audit ({_AUDITED}) VALUES ({_AUDIT_VALUES});"
        " RETURN NULL; END $$",
        "CREATE TRIGGER test_lease_audit AFTER UPDATE ON reminder_intents"
        " FOR EACH ROW EXECUTE FUNCTION test_lease_audit()",
    ],
}


def audit(store: Store) -> None:
    """Starts recording every update of ``reminder_intents`` in ``test_lease_audit``."""
    with store.transaction() as conn:
        audit_metadata.create_all(conn)
        for statement in _AUDIT_TRIGGER[conn.dialect.name]:
            conn.exec_driver_sql(statement)


@dataclass(frozen=True, slots=True)
class Change:
    """One audited update of an intent."""

    seq: int
    intent_id: UUID
    old_status: str
    new_status: str
    old_token: str | None
    new_token: str | None
    old_owner: str | None
    new_owner: str | None
    old_expires: datetime | None
    new_expires: datetime | None
    attempts: int
    at: datetime

    @property
    def is_claim(self) -> bool:
        return self.new_status == "leased" and self.new_token != self.old_token

    @property
    def ends_lease(self) -> bool:
        """Acknowledged, released, retried or closed by the lease's holder."""
        return self.old_status == "leased" and self.new_status != "leased"


def changes(store: Store) -> dict[UUID, list[Change]]:
    """The audited changes of each intent, in order."""
    found: dict[UUID, list[Change]] = defaultdict(list)
    with store.transaction(write=False) as conn:
        for row in conn.execute(select(lease_audit).order_by(lease_audit.c.seq)):
            found[row.intent_id].append(Change(**row._mapping))
    return found


# --------------------------------------------------------------------------- the record


@dataclass
class Record:
    sends: list[tuple[UUID, str]] = field(default_factory=list)
    ready: set[str] = field(default_factory=set)
    stalled: set[str] = field(default_factory=set)


def read_record(path: Path) -> Record:
    text = path.read_text() if path.exists() else ""
    record = Record()
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):  # a line being written right now
            break
        match line.split():
            case ["ready", owner]:
                record.ready.add(owner)
            case ["stall", owner]:
                record.stalled.add(owner)
            case [intent, owner]:
                record.sends.append((UUID(intent), owner))
            case _:
                raise AssertionError(f"unexpected record line {line!r}")
    return record


# --------------------------------------------------------------------------- the workers


@contextmanager
def workers(target: StorageTarget, directory: Path) -> Iterator[dict[str, subprocess.Popen[str]]]:
    """The worker processes, started; any still running at the end are killed."""
    started: dict[str, subprocess.Popen[str]] = {}
    try:
        for owner in WORKERS:
            command = [
                sys.executable,
                str(SCRIPT),
                "--url",
                target.url,
                "--owner",
                owner,
                "--record",
                str(directory / "record.txt"),
                "--lease-seconds",
                str(LEASE.total_seconds()),
                "--batch",
                str(BATCH),
                "--go",
                # The victim starts first: the others could otherwise drain everything
                # before it reaches its stall (SQLite's busy handler shares the write lock
                # unevenly under load).
                str(directory / ("go-victim" if owner == VICTIM else "go")),
                "--deadline-seconds",
                str(RUN_SECONDS),
            ]
            if target.schema is not None:
                command += ["--schema", target.schema]
            if owner == VICTIM:
                command += ["--stall-after", str(STALL_AFTER)]
            with (
                (directory / f"{owner}.out").open("w") as out,
                (directory / f"{owner}.err").open("w") as err,
            ):
                started[owner] = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        yield started
    finally:
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.wait()


def wait_for(condition: str, seconds: float, check: Iterator[bool]) -> None:
    deadline = time.monotonic() + seconds
    for done in check:
        if done:
            return
        assert time.monotonic() < deadline, f"timed out waiting for {condition}"
        time.sleep(POLL_SECONDS)


def outputs(directory: Path, owner: str) -> str:
    return "\n".join(
        (directory / f"{owner}.{kind}").read_text().strip() for kind in ("out", "err")
    ).strip()


def none_exited(processes: dict[str, subprocess.Popen[str]], directory: Path) -> None:
    for owner, process in processes.items():
        assert process.poll() is None, (
            f"worker {owner} exited early ({process.returncode}): {outputs(directory, owner)}"
        )


# --------------------------------------------------------------------------- the test


def test_four_workers_deliver_every_intent_and_only_a_killed_one_causes_duplicates(
    storage_target: StorageTarget, tmp_path: Path
) -> None:
    store = open_store(storage_target.engine(), SystemClock())
    audit(store)
    ids = seed(store)
    record_path = tmp_path / "record.txt"

    with workers(storage_target, tmp_path) as processes:

        def ready() -> Iterator[bool]:
            while True:
                none_exited(processes, tmp_path)
                yield read_record(record_path).ready == set(WORKERS)

        wait_for("the workers to start", START_SECONDS, ready())
        (tmp_path / "go-victim").touch()

        def victim_stalled() -> Iterator[bool]:
            while True:
                none_exited(processes, tmp_path)
                yield VICTIM in read_record(record_path).stalled

        wait_for("the victim to stall", RUN_SECONDS, victim_stalled())
        (tmp_path / "go").touch()

        def enough_sent() -> Iterator[bool]:
            while True:
                none_exited(processes, tmp_path)
                yield len(read_record(record_path).sends) >= KILL_AFTER

        wait_for("the others to deliver", RUN_SECONDS, enough_sent())
        os.kill(processes[VICTIM].pid, signal.SIGKILL)
        assert processes[VICTIM].wait(RUN_SECONDS) == -signal.SIGKILL
        assert len(read_record(record_path).sends) < INTENTS, "killed too late to matter"

        reports: dict[str, dict[str, object]] = {}
        for owner, process in processes.items():
            if owner != VICTIM:
                try:
                    code = process.wait(RUN_SECONDS)
                except subprocess.TimeoutExpired:
                    pytest.fail(f"worker {owner} did not finish: {outputs(tmp_path, owner)}")
                assert code == 0, f"worker {owner} failed ({code}): {outputs(tmp_path, owner)}"
                reports[owner] = json.loads((tmp_path / f"{owner}.out").read_text())

    record = read_record(record_path)
    history = changes(store)
    with store.transaction(write=False) as conn:
        rows = {
            row.id: row
            for row in conn.execute(
                select(ri.c.id, ri.c.status, ri.c.attempts, ri.c.lease_token, ri.c.lease_owner)
            )
        }

    # Every intent delivered in the database, and recorded at least once.
    assert {row.status for row in rows.values()} == {"delivered"}
    assert set(rows) == ids
    sent = Counter(intent for intent, _ in record.sends)
    assert set(sent) == ids
    assert {owner for _, owner in record.sends} == set(WORKERS), "the work did not interleave"
    for owner, report in reports.items():
        assert report["lost_acks"] == 0, f"{owner} acknowledged after its lease expired"
        assert report["closed"] == report["retried"] == 0, report

    # No intent held by two live leases at once; each acknowledged once, by its last holder.
    victim_held: set[UUID] = set()
    victim_acked: set[UUID] = set()
    for intent in ids:
        holder: Change | None = None
        claims = 0
        delivered: list[Change] = []
        for change in history[intent]:
            if change.is_claim:
                claims += 1
                if holder is not None:
                    assert holder.new_expires is not None and holder.new_expires <= change.at, (
                        f"{intent}: claimed by {change.new_owner} at {change.at.isoformat()} "
                        f"while {holder.new_owner} held it until {holder.new_expires}"
                    )
                    # Only the dead worker leaves a lease to expire.
                    assert holder.new_owner == VICTIM, f"{intent}: {holder.new_owner} lost it"
                    victim_held.add(intent)
                assert change.old_status != "leased" or change.old_owner == VICTIM
                holder = change
            elif change.ends_lease:
                assert holder is not None and change.old_token == holder.new_token, intent
                if change.new_status == "pending":  # released unsent: the attempt undone
                    claims -= 1
                else:
                    assert change.new_status == "delivered", change
                    delivered.append(change)
                    if holder.new_owner == VICTIM:
                        victim_acked.add(intent)
                holder = None
            else:
                raise AssertionError(f"{intent}: unexpected change {change}")
        assert len(delivered) == 1, f"{intent}: acknowledged {len(delivered)} times"
        assert history[intent][-1] == delivered[0], f"{intent}: changed after delivery"
        assert rows[intent].lease_token == delivered[0].old_token
        assert rows[intent].attempts == claims, intent

    # Duplicates only where the killed worker sent without acknowledging; none sent thrice.
    victim_sent = {intent for intent, owner in record.sends if owner == VICTIM}
    duplicated = {intent for intent, count in sent.items() if count > 1}
    assert duplicated, "the killed worker left nothing sent and unacknowledged"
    assert duplicated == victim_sent - victim_acked
    assert max(sent.values()) == 2
    senders: dict[UUID, list[str]] = defaultdict(list)
    for intent, owner in record.sends:
        senders[intent].append(owner)
    assert all(senders[intent].count(VICTIM) == 1 for intent in duplicated)

    # Attempts: two for what the killed worker held when it died, one for every other intent.
    assert duplicated <= victim_held
    assert {i for i in ids if rows[i].attempts == 2} == victim_held
    assert {rows[i].attempts for i in ids - victim_held} == {1}
