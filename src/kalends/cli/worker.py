"""``kalends worker``: run the mission scheduler and deliver due reminders until stopped.

The scheduler (in a thread of its own) holds the wakes of running schedules under
leases, admits due slots, starts passages through the process runtime, observes and
settles them; any number of workers may share a database, and a dead worker's
schedules are taken over when its leases run out. Each worker is a worker node
(:mod:`kalends.missions.node_runtime`, issue 23 §3): known by the identity in its runtime
directory, beating, and publishing what it observes of its passages in the database, so
that the worker that takes over a dead one's schedules observes its passages to
settlement. With ``--api-url`` (by default the URL the last ``kalends serve`` on the
database recorded) its passages' shims report there too, even while the worker is gone.

The worker claims due reminder intents, sends each through the transport (Apprise by
default) and records the outcome; between batches it sleeps until the next reminder
is due or another process writes one. Any number of workers may share a database.

It logs on stderr (:mod:`kalends.cli.logs`: text, or JSON with ``--log-format json``)
a line per passage admitted, started and settled and per busy reminder batch;
``--quiet`` leaves only warnings and errors.

SIGTERM or SIGINT (Ctrl-C) stops it gracefully: the send in progress finishes, what was
sent is acknowledged and the rest of its claims are released for other workers; then
it exits 0. A second signal stops it at once (exit 130): a reminder being sent then
stays leased until its lease runs out, and may be delivered again (at least once).

The delivery runs in a thread of its own while the main thread waits for it, so the
signal handlers never interrupt a thread that holds the stop event's lock.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Annotated

import typer

from kalends.bootstrap import Store, open_store, recorded_server_base_url
from kalends.cli.logs import LogFormatOption, QuietOption, check_log_format, logging_to_stderr
from kalends.cli.loops import LOOPS_PANEL, SCHEDULER, log_batch, report_line, start_scheduler
from kalends.cli.output import emit_json
from kalends.cli.passage_isolation import (
    PassageUserOption,
    RuntimeDirOption,
    SandboxOption,
    passage_isolation,
)
from kalends.cli.serve_options import check_base_url
from kalends.cli.session import DatabaseOption, report_error
from kalends.clock import clock_from_environment
from kalends.config import mask_password, resolve_runtime_dir
from kalends.errors import InvalidInput, KalendsError
from kalends.missions.runtime.process import ProcessRuntime
from kalends.reminders.outbox import MAX_CLAIM_BATCH, MAX_OWNER_LENGTH
from kalends.reminders.transports import AppriseTransport, NullTransport, Transport
from kalends.reminders.worker import WORKER_BATCH, BatchReport, DeliveryWorker

__all__ = ["EXIT_INTERRUPTED", "TRANSPORTS", "default_owner", "worker_command"]

TRANSPORTS: dict[str, Callable[[], Transport]] = {
    "apprise": AppriseTransport,
    "null": NullTransport,
}
# Stopped by a second signal, without waiting for the send in progress (128 + SIGINT).
EXIT_INTERRUPTED = 130
# How long a stopping worker waits for the scheduler to release its wakes.
_SCHEDULER_JOIN_SECONDS = 15.0
# How often the main thread looks whether the delivery thread ended.
_JOIN_SECONDS = 0.2

_log = logging.getLogger("kalends.worker")


def default_owner() -> str:
    """The lease owner a worker names itself by default: ``<hostname>:<pid>``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner(text: str | None) -> str:
    owner = default_owner() if text is None else text.strip()
    if not owner or len(owner) > MAX_OWNER_LENGTH:
        raise InvalidInput(
            f"owner: a non-empty name of at most {MAX_OWNER_LENGTH} characters", field="owner"
        )
    return owner


def _batch(text: str | None) -> int:
    if text is None:
        return WORKER_BATCH
    if re.fullmatch(r"[0-9]+", text.strip()) is None or not 1 <= int(text) <= MAX_CLAIM_BATCH:
        raise InvalidInput(
            f"batch: a whole number from 1 to {MAX_CLAIM_BATCH}, got {text!r}", field="batch"
        )
    return int(text)


def _api_url(text: str) -> str:
    """``text`` as the URL of the kalends server the passages' shims report to."""
    try:
        return check_base_url(text)
    except InvalidInput:
        raise InvalidInput(
            f"api-url: an http:// or https:// URL of the kalends server, got {text!r}",
            field="api_url",
        ) from None


def _transport(text: str) -> Transport:
    make = TRANSPORTS.get(text.strip().lower())
    if make is None:
        raise InvalidInput(f"transport: {' or '.join(TRANSPORTS)}, got {text!r}", field="transport")
    return make()


def _on_batch(json_output: bool) -> Callable[[BatchReport], None]:
    """What the loop does after each busy batch: log it, and with ``--json`` print it as a
    JSON line on stdout."""

    def on_batch(report: BatchReport) -> None:
        log_batch(report)
        if json_output:
            sys.stdout.write(json.dumps(report.to_json(), separators=(",", ":")) + "\n")
            sys.stdout.flush()

    return on_batch


class _Interrupted(Exception):
    """A second stop signal: leave without waiting for the send in progress."""


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop``; a second one raises :class:`_Interrupted`.

    Only the main thread may install handlers; elsewhere (a caller's thread) ``stop``
    is the only way to stop.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise _Interrupted
        stop.set()

    wanted = [signal.SIGTERM, signal.SIGINT]
    previous = {s: signal.signal(s, handle) for s in wanted}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _in_thread(work: Callable[[], BatchReport]) -> BatchReport:
    """Runs ``work`` in a thread while this one waits (and takes the signals)."""
    outcome: list[BatchReport] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=target, name="kalends-worker", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(_JOIN_SECONDS)
    if failure:
        raise failure[0]
    return outcome[0]


def _start_scheduler(
    store: Store,
    runtime: ProcessRuntime,
    owner: str,
    stop: threading.Event,
    once: bool,
    api_url: str | None,
) -> threading.Thread | None:
    """Runs the mission scheduler as a worker node: once now (``once``: one round of the
    node's loop before and after the scheduler's), or in a thread until ``stop``."""
    if not once:
        # The loop logs its own failure; nothing here waits on its state.
        return start_scheduler(
            store, runtime, owner, stop, lambda name, running: None, api_url=api_url
        )
    from kalends.missions.node_runtime import NodeLoop, open_node  # noqa: PLC0415
    from kalends.missions.scheduler import Scheduler  # noqa: PLC0415

    node = open_node(store, runtime, api_url=api_url)
    node_loop = NodeLoop(node)
    scheduler = Scheduler(store, node, owner=f"{owner}/{SCHEDULER}")
    try:
        node_loop.round()
        scheduler.run_once()
        node_loop.round()
    finally:
        scheduler.release()
        node_loop.close()
    return None


def worker_command(
    database: DatabaseOption = None,
    owner: Annotated[
        str | None,
        typer.Option(
            "--owner",
            metavar="NAME",
            help="The name its leases carry (default: HOSTNAME:PID).",
            show_default=False,
        ),
    ] = None,
    batch: Annotated[
        str | None,
        typer.Option(
            "--batch",
            metavar="N",
            help=f"At most N reminders claimed at a time, 1-{MAX_CLAIM_BATCH} (default "
            f"{WORKER_BATCH}); fewer when sends are slow, so a batch fits in half a lease.",
            show_default=False,
        ),
    ] = None,
    once: Annotated[
        bool,
        typer.Option(
            "--once", help="Start the passages and deliver the reminders due now, then exit."
        ),
    ] = False,
    transport: Annotated[
        str,
        typer.Option(
            "--transport",
            metavar="apprise|null",
            help="apprise: send e-mail and push; null: accept and drop (benchmarks).",
        ),
    ] = "apprise",
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="With --once: print the reminder report as JSON. Otherwise one JSON line per "
            "reminder batch on stdout.",
        ),
    ] = False,
    schedules: Annotated[
        bool,
        typer.Option(
            "--schedules/--no-schedules",
            help="Run the mission scheduler (starts passages of running schedules).",
            rich_help_panel=LOOPS_PANEL,
        ),
    ] = True,
    runtime_dir: RuntimeDirOption = None,
    passage_user: PassageUserOption = None,
    sandbox: SandboxOption = "auto",
    api_url: Annotated[
        str | None,
        typer.Option(
            "--api-url",
            metavar="URL",
            help="The kalends server the passages' heartbeats go to, so that a scheduler "
            "on another machine observes them (default: the URL the last `kalends serve` "
            "on this database recorded, if any; else only this worker publishes them).",
            show_default=False,
        ),
    ] = None,
    log_format: LogFormatOption = "text",
    quiet: QuietOption = False,
) -> None:
    """Run the mission scheduler and deliver due reminders until SIGTERM or Ctrl-C (graceful).

    The scheduler starts, watches and settles the passages of running schedules; a stop
    loses nothing half-done. Logs on stderr one line per passage admitted, started and
    settled (schedule title, slot, outcome, duration) and per reminder batch (delivered,
    retried, dead, closed, released); --quiet keeps only warnings and errors,
    --log-format json makes each line a JSON object. Failed sends are retried later (1,
    4, 16 minutes, then hourly; dead after the fifth attempt: `kalends reminders retry
    ID`). Exit codes: 0 stopped (or, with --once, done); 1 the database refused; 2 bad
    input; 130 a second signal.
    """
    try:
        checked_owner = _owner(owner)
        size = _batch(batch)
        sender = _transport(transport)
        fmt = check_log_format(log_format)
        beats_url = None if api_url is None else _api_url(api_url)
        # A testing and simulation aid: KALENDS_CLOCK_FILE names a file that sets the time.
        store = open_store(database, clock=clock_from_environment())
    except KalendsError as exc:
        report_error(exc, json_output)
    if beats_url is None and schedules:
        # By default, the server the last `kalends serve` on this database recorded.
        try:
            beats_url = recorded_server_base_url(store)
        except KalendsError as exc:
            store.close()
            report_error(exc, json_output)
    with logging_to_stderr("warning" if quiet else "info", fmt):
        _work(
            store,
            checked_owner,
            DeliveryWorker(store, sender, owner=checked_owner, batch=size),
            once=once,
            json_output=json_output,
            confinement=(runtime_dir, passage_user, sandbox) if schedules else None,
            transport=transport.strip().lower(),
            api_url=beats_url,
        )


def _work(
    store: Store,
    owner: str,
    worker: DeliveryWorker,
    *,
    once: bool,
    json_output: bool,
    confinement: tuple[str | None, str | None, str] | None,
    transport: str,
    api_url: str | None = None,
) -> None:
    """The scheduler (unless ``confinement`` is ``None``: ``--no-schedules``), as a
    worker node whose passages report to ``api_url`` (if any), and the delivery, once or
    until a stop signal; then the closing line."""
    stop = threading.Event()
    scheduler_thread: threading.Thread | None = None
    if confinement is not None:
        runtime_dir, passage_user, sandbox = confinement
        try:
            root = resolve_runtime_dir(runtime_dir)
            isolation, note = passage_isolation(
                passage_user, sandbox, root, store.engine.url.render_as_string(hide_password=False)
            )
            if note:
                _log.info(note)
            runtime = ProcessRuntime(root, isolation=isolation)
            scheduler_thread = _start_scheduler(store, runtime, owner, stop, once, api_url)
        except KalendsError as exc:
            store.close()
            report_error(exc, json_output)
    work: Callable[[], BatchReport]
    if once:

        def work() -> BatchReport:
            return worker.drain(stop)
    else:
        on_batch = _on_batch(json_output)

        def work() -> BatchReport:
            return worker.run(stop, on_batch=on_batch)

        where = mask_password(store.engine.url.render_as_string(hide_password=False))
        schedules = confinement is not None
        doing = "running the mission scheduler and delivering" if schedules else "delivering"
        _log.info(
            f"worker {owner}: {doing} reminders from {where} (transport {transport}, "
            f"batch {worker.batch}); stop with Ctrl-C or SIGTERM",
            extra={
                "fields": {
                    "event": "worker-started",
                    "owner": owner,
                    "database": where,
                    "transport": transport,
                    "batch": worker.batch,
                    "schedules": schedules,
                }
            },
        )
    try:
        with _stop_on_signals(stop):
            total = _in_thread(work)
    except _Interrupted:
        _log.warning("stopped at once: a reminder being sent stays leased until its lease runs out")
        sys.stdout.flush()
        sys.stderr.flush()
        # At once: a normal exit would wait for the send in progress (Apprise sends
        # from worker threads that the interpreter joins on exit).
        os._exit(EXIT_INTERRUPTED)
    except KalendsError as exc:
        report_error(exc, json_output)
    finally:
        stop.set()
        if scheduler_thread is not None:
            scheduler_thread.join(_SCHEDULER_JOIN_SECONDS)
        store.close()
    if once:
        if json_output:
            emit_json(total.to_json())
        else:
            typer.echo(report_line(total))
    else:
        _log.info(
            f"stopped: {report_line(total)}",
            extra={"fields": {"event": "worker-stopped", **total.to_json()}},
        )
