"""The delivery loop rides out a database it cannot write to, then delivers.

A real second connection holds SQLite's write lock (``BEGIN EXCLUSIVE``) longer than the
worker's busy timeout and retries: the worker's claims fail with ``DatabaseBusy``. The
loop logs it, waits and tries again; once the lock is released it delivers everything.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy.engine import make_url

from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.reminders.transports import Delivery
from kalends.reminders.worker import OUTAGE_FIRST_WAIT, DeliveryWorker
from kalends.storage.engine import create_engine_for
from kalends.storage.migrate import open_store
from kalends.storage.testing import StorageTarget
from kalends.storage.unit_of_work import Store

from .outbox_support import intent_rows, make_world, minutes, reminded_task, reminder

REMINDERS = 6


class Recorder:
    """A transport that keeps what it is given (a real send is not the point here)."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.lock = threading.Lock()

    def send(self, delivery: Delivery) -> None:
        with self.lock:
            self.sent.append(delivery.job_id)


def test_the_loop_waits_out_a_locked_database_and_then_delivers(
    storage_target: StorageTarget, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    if storage_target.backend != "sqlite":
        pytest.skip("a second connection holding the write lock is SQLite's way to be busy")
    setup = open_store(storage_target.engine(), fake_clock)
    services = build(setup)
    world = make_world(services)
    services.destinations.set(
        world.alice.id, world.alice.id, "email", ["mailto://localhost?to=alice@example.com"]
    )
    for n in range(REMINDERS):
        reminded_task(world, reminder(minutes(1 + n)), title=f"Task {n}")
    fake_clock.advance(timedelta(minutes=REMINDERS + 1))
    # The worker's own store, with a short busy timeout so the lock shows at once.
    store = Store(create_engine_for(storage_target.url, busy_timeout_ms=20), fake_clock)
    transport = Recorder()
    worker = DeliveryWorker(store, transport, owner="patient")

    path = make_url(storage_target.url).database
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    stop = threading.Event()
    caplog.set_level(logging.WARNING, logger="kalends.reminders")
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    try:
        thread.start()
        deadline = time.monotonic() + 10
        while not any("database unavailable" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, "the worker never met the lock"
            time.sleep(0.02)
        assert transport.sent == []  # nothing sent while the database refused the claim
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    try:
        deadline = time.monotonic() + 10 + OUTAGE_FIRST_WAIT
        while len(transport.sent) < REMINDERS:
            assert time.monotonic() < deadline, f"delivered {len(transport.sent)} only"
            time.sleep(0.02)
    finally:
        stop.set()
        thread.join(10)
        store.close()
    assert not thread.is_alive()
    rows = intent_rows(setup)
    assert sorted(str(r.id) for r in rows) == sorted(transport.sent)
    assert {r.status for r in rows} == {"delivered"}
    setup.close()
