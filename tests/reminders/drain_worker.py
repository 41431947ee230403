"""One delivery worker process for ``test_worker_concurrency.py`` in this directory.

    python tests/reminders/drain_worker.py --url URL [--schema S] --owner NAME \\
        --record FILE --lease-seconds N [--batch B] [--go FILE] [--stall-after K]

It opens its own engine and :class:`Store` on the real clock and drains the outbox with a
:class:`DeliveryWorker` (its :class:`Outbox` leasing for ``--lease-seconds``) until no
intent is pending or leased any more: a crashed worker's leases keep it waiting until they
expire and can be claimed again. Then it prints its totals as JSON and exits 0, or exits 3
when that takes longer than ``--deadline-seconds``.

Its transport is the record file: one line per event, each one ``os.write`` on a
descriptor opened with ``O_APPEND`` (far below ``PIPE_BUF``, so the lines of concurrent
workers never mix):

``<intent id> <owner>``
    a delivery the transport accepted (before the worker acknowledges it)
``ready <owner>``
    the worker is set up, and waits for the file ``--go`` if given
``stall <owner>``
    with ``--stall-after K``: the K-th delivery was recorded and the transport now hangs
    until the process is killed (a worker dying between sends and their acknowledgement)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import timedelta

from kalends.clock import SystemClock
from kalends.reminders.outbox import Outbox
from kalends.reminders.transports import Delivery
from kalends.reminders.worker import BatchReport, DeliveryWorker
from kalends.storage.engine import create_engine_for
from kalends.storage.unit_of_work import Store

# How often an idle worker looks again for leases that expired meanwhile.
IDLE_POLL_SECONDS = 0.1
GO_POLL_SECONDS = 0.01
STALL_SECONDS = 3600.0
EXIT_TIMEOUT = 3


class Record:
    """The shared record file: whole lines, each appended with one write."""

    def __init__(self, path: str, owner: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.owner = owner

    def line(self, *fields: str) -> None:
        data = (" ".join(fields) + "\n").encode()
        if os.write(self.fd, data) != len(data):  # pragma: no cover - a full disk
            raise OSError("short write to the record file")

    def close(self) -> None:
        os.close(self.fd)


class FileTransport:
    """Delivers by appending ``<job id> <owner>`` to the record file."""

    def __init__(self, record: Record, stall_after: int | None) -> None:
        self.record = record
        self.stall_after = stall_after
        self.sent = 0

    def send(self, delivery: Delivery) -> None:
        self.record.line(delivery.job_id, self.record.owner)
        self.sent += 1
        if self.stall_after is not None and self.sent >= self.stall_after:
            self.record.line("stall", self.record.owner)
            time.sleep(STALL_SECONDS)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="One reminder delivery worker process.")
    parser.add_argument("--url", required=True)
    parser.add_argument("--schema")
    parser.add_argument("--owner", required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--lease-seconds", type=float, required=True)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--go", help="wait for this file to exist before claiming anything")
    parser.add_argument("--stall-after", type=int)
    parser.add_argument("--deadline-seconds", type=float, default=120.0)
    args = parser.parse_args(argv)

    clock = SystemClock()
    engine = create_engine_for(args.url, schema=args.schema)
    store = Store(engine, clock)
    record = Record(args.record, args.owner)
    outbox = Outbox(store, lease=timedelta(seconds=args.lease_seconds))
    worker = DeliveryWorker(
        store,
        FileTransport(record, args.stall_after),
        owner=args.owner,
        batch=args.batch,
        outbox=outbox,
    )
    deadline = time.monotonic() + args.deadline_seconds
    total = BatchReport()
    try:
        record.line("ready", args.owner)
        if args.go is not None:
            while not os.path.exists(args.go):
                if time.monotonic() > deadline:
                    return EXIT_TIMEOUT
                time.sleep(GO_POLL_SECONDS)
        while True:
            total.add(worker.drain())
            due = outbox.next_due()
            if due is None:  # nothing pending or leased: every intent is settled
                break
            if time.monotonic() > deadline:
                print(json.dumps({"owner": args.owner, "timeout": True, **total.to_json()}))
                return EXIT_TIMEOUT
            wait = (due - clock.now()).total_seconds()
            time.sleep(min(max(wait, 0.0), IDLE_POLL_SECONDS))
    finally:
        record.close()
        engine.dispose()
    print(json.dumps({"owner": args.owner, **total.to_json()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
