"""The background loops of ``kalends serve``: the mission scheduler and the reminder
delivery, each in a thread of its own, both stopped by one event.

They are the loops ``kalends worker`` runs too (see :mod:`kalends.cli.worker`), started
here beside a server: the scheduler shares the server's process runtime, and each
loop reports through ``on_state`` when it runs and when it ended, so that
``/readyz`` can tell. On stop the scheduler releases its wakes and the delivery
finishes the send in progress, acknowledges it and releases the rest of its claims.

A scheduler with a process runtime runs as a worker node (issue 23 §3,
:mod:`kalends.missions.node_runtime`): the node is registered under the identity kept in
its runtime directory, its loop beats, answers other nodes and publishes what it
observes of its passages in a thread beside the scheduler, and it is recorded stopped
on a graceful stop. Given the service's URL, its passages' shims report there too.

Both commands log the same lines at INFO: the scheduler one per passage admitted,
started and settled (:func:`kalends.missions.scheduler.log_passage`), the delivery one
per busy batch (:func:`log_batch`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kalends.bootstrap import Store, open_waker
from kalends.clock import FileClock
from kalends.collector import tune_collector
from kalends.missions.runtime.process import ProcessRuntime
from kalends.reminders.transports import Transport
from kalends.reminders.worker import WORKER_BATCH, BatchReport, DeliveryWorker

__all__ = [
    "REMINDERS",
    "SCHEDULER",
    "LoopState",
    "log_batch",
    "report_line",
    "start_reminders",
    "start_scheduler",
]

# The names the loops go by, in logs and in /readyz.
SCHEDULER = "scheduler"
# The help panel of the options that choose which loops run (apart, so that the main
# options table keeps its width at 80 columns).
LOOPS_PANEL = "What runs"
REMINDERS = "reminders"

# Called with a loop's name and whether it runs: True once started, False once ended.
LoopState = Callable[[str, bool], None]

_log = logging.getLogger("kalends.loops")
_batches = logging.getLogger("kalends.reminders")


def report_line(report: BatchReport) -> str:
    """A batch in words: ``claimed 3: delivered 1, retried 1, dead 1, closed 0, released 0``."""
    parts = [
        f"delivered {report.delivered}",
        f"retried {report.retried}",
        f"dead {report.dead}",
        f"closed {report.closed}",
        f"released {report.released}",
    ]
    if report.closed_reasons:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(report.closed_reasons.items()))
        parts[3] += f" ({reasons})"
    if report.lost_acks:
        parts.append(f"lost acknowledgements {report.lost_acks}")
    return f"claimed {report.claimed}: " + ", ".join(parts)


def log_batch(report: BatchReport) -> None:
    """The INFO line of one busy reminder batch: its counts, in words and as fields."""
    _batches.info(
        "reminders %s",
        report_line(report),
        extra={"fields": {"event": "reminder-batch", **report.to_json()}},
    )


def start_scheduler(
    store: Store,
    runtime: ProcessRuntime,
    owner: str,
    stop: threading.Event,
    on_state: LoopState,
    *,
    api_url: str | None = None,
) -> threading.Thread:
    """Runs the mission scheduler as a worker node in a thread until ``stop``; it
    releases its wakes then, and its node is recorded stopped. ``api_url``: the
    service's base URL, where the passages' shims report (none: the node's loop alone
    publishes them). Raises :class:`~kalends.errors.KalendsError` when the node cannot
    be registered (before any thread starts)."""
    from kalends.missions.node_runtime import NodeLoop, open_node  # noqa: PLC0415
    from kalends.missions.scheduler import Scheduler  # noqa: PLC0415
    from kalends.missions.wakes import MISSIONS_CHANNEL  # noqa: PLC0415

    node = open_node(store, runtime, api_url=api_url)
    scheduler = Scheduler(store, node, owner=f"{owner}/{SCHEDULER}")
    node_loop = NodeLoop(node)
    _log.info(
        f"node {node.node_id} (runtime {runtime.root}); passages report to "
        + (api_url or "the database only"),
        extra={"fields": {"event": "node-started", "node_id": node.node_id}},
    )

    def target() -> None:
        beating = node_loop.start(stop)
        try:
            waker = open_waker(store.engine, MISSIONS_CHANNEL)
            try:
                on_state(SCHEDULER, True)
                wait: Callable[[float, threading.Event], bool] = waker.wait
                if isinstance(store.clock, FileClock):  # (a testing and simulation aid)
                    wait = store.clock.waiting(wait)
                scheduler.run(stop, wait=wait)
            finally:
                waker.close()
        except Exception:
            _log.exception("the mission scheduler stopped on an error")
        finally:
            on_state(SCHEDULER, False)
            # The node keeps publishing its passages until the stop, then records it.
            beating.join()

    tune_collector()  # (start-up done: see kalends.collector)
    thread = threading.Thread(target=target, name=f"kalends-{SCHEDULER}", daemon=True)
    thread.start()
    return thread


def start_reminders(
    store: Store,
    transport: Transport,
    owner: str,
    stop: threading.Event,
    on_state: LoopState,
    *,
    batch: int = WORKER_BATCH,
) -> threading.Thread:
    """Delivers due reminders in a thread until ``stop``; each busy batch is logged."""
    worker = DeliveryWorker(store, transport, owner=owner, batch=batch)

    def target() -> None:
        try:
            waker = open_waker(store.engine)
            try:
                on_state(REMINDERS, True)
                worker.run(stop, on_batch=log_batch, waker=waker)
            finally:
                waker.close()
        except Exception:
            _log.exception("the reminder delivery stopped on an error")
        finally:
            on_state(REMINDERS, False)

    thread = threading.Thread(target=target, name=f"kalends-{REMINDERS}", daemon=True)
    thread.start()
    return thread
