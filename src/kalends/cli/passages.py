"""``kalends passage``: what the process runtime on this machine recorded of passages.

Each passage lives in ``RUNTIME/passages/<session ID>/`` (see
:mod:`kalends.missions.runtime.process`): its start, the shim that ran its command, the
exit, the report, kalends' interrupt, and the command's output. These commands only
read them; they open no database. The runtime directory is ``--runtime-dir``, else
``KALENDS_RUNTIME_DIR``, else ``runtime`` in the user data directory, like
``kalends worker``; it must be the one on the machine that ran the passage.

In server mode (``--server URL``, or ``KALENDS_SERVER`` when no ``--runtime-dir`` is
given) they read the server's runtime directory over its HTTP API instead, which shows
the passages of schedules in the caller's workspaces only.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from kalends.cli.output import console, emit_json
from kalends.cli.remote import (
    SERVER_MODE_HELP,
    Remote,
    ServerOption,
    path_part,
    remote_session,
    server_url,
)
from kalends.cli.session import ActorOption, group_help, report_error
from kalends.cli.tables import Cell, Column, Fitted, WideOption, table
from kalends.config import ENV_RUNTIME_DIR, resolve_runtime_dir
from kalends.errors import InvalidInput, KalendsError
from kalends.missions.runtime.passages import (
    DEFAULT_LIST_LIMIT,
    MAX_LIST_LIMIT,
    Passage,
    env_names,
    find_passage,
    newest_passages,
    parse_instant,
    read_passage,
    status_text,
)
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.runtime.shim import (
    OUTPUT,
)

__all__ = ["RuntimeDirOption", "passage_app", "runtime_root"]

FOLLOW_POLL_SECONDS = 0.5
EXIT_STOPPED = 130  # --follow stopped by Ctrl-C (128 + SIGINT)

passage_app = typer.Typer(
    help=group_help(
        "Passages as the runtime recorded them: output logs, exit status, reports.",
        "Reads the runtime directory of this machine only (--runtime-dir, else "
        f"{ENV_RUNTIME_DIR}, else the user data directory's runtime/). `passage log` and "
        "`passage ls` also ask a server for the passages it ran.",
        SERVER_MODE_HELP,
        "Exit codes: 0 done; 1 no such passage here; 2 bad input.",
    ),
    no_args_is_help=True,
)

RuntimeDirOption = Annotated[
    str | None,
    typer.Option(
        "--runtime-dir",
        metavar="DIR",
        envvar=ENV_RUNTIME_DIR,
        help="The runtime directory `kalends worker` uses (default: the user data "
        "directory's runtime/); local to the machine that ran the passages.",
        show_default=False,
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
PassageArgument = Annotated[
    str,
    typer.Argument(
        metavar="PASSAGE",
        help="A passage ID (psg_…) or its session ID (ses_…), as `kalends schedule show` "
        "names them.",
    ),
]


def runtime_root(explicit: str | None) -> Path:
    """The runtime directory (``--runtime-dir``, else the environment, else the default)."""
    return resolve_runtime_dir(explicit)


def _runtime(root: Path) -> ProcessRuntime:
    """The runtime of ``root``, whose passages directory exists (so nothing is created)."""
    return ProcessRuntime(root)


def _read_log(path: Path, offset: int = 0) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read()
    except FileNotFoundError:
        return b""


# --- readable text -------------------------------------------------------------------------


def _local(value: object, *, lines: bool = False) -> str:
    """An instant in this machine's local time, ``—`` when absent; ``lines``: the zone on
    a line of its own."""
    found = parse_instant(value)
    if found is None:
        return "—"
    local = found.astimezone()
    return local.strftime("%Y-%m-%d %H:%M:%S" + ("\n%Z" if lines else " %Z")).strip()


def _grid() -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


def _records_view(p: Passage) -> Table:
    grid = _grid()

    def row(label: str, value: str) -> None:
        grid.add_row(label, Text(value))

    start = p.start
    row("passage", str(start.get("passageId") or "—"))
    row("session", p.session_id)
    if start.get("scheduleId"):
        row("schedule", str(start["scheduleId"]))
    row("status", p.status_text())
    if start.get("command"):
        row("command", shlex.join(str(a) for a in start["command"]))
    names = env_names(start)
    if names:
        row("environment", ", ".join(names) + " (values hidden)")
    if start.get("workspace"):
        cwd = start.get("cwd") or "."
        row("workspace", str(start["workspace"]) + ("" if cwd == "." else f" (in {cwd})"))
    row("admitted", _local(start.get("createdAt")))
    if p.shim:
        row("started", f"{_local(p.shim.get('startedAt'))} (pid {p.shim.get('commandPid')})")
    if p.exit is not None:
        row("ended", _local(p.exit.get("endedAt")))
    _end_rows(p, row)
    row("records", str(p.directory))
    return grid


def _end_rows(p: Passage, row: Callable[[str, str], None]) -> None:
    if p.report is not None:
        row(
            "report",
            f"{p.report.get('outcome')} at {_local(p.report.get('at'))}: "
            f"{p.report.get('summary') or '(no summary)'}",
        )
    else:
        row("report", "none")
    if p.interrupt is not None:
        row(
            "interrupted",
            f"by kalends at {_local(p.interrupt.get('at'))} "
            f"(KILL after {p.interrupt.get('grace')} s)",
        )
    if p.problem and p.status != "unreadable":
        row("problem", p.problem)


def _write_raw(data: bytes) -> None:
    """Output as the command wrote it (never read as markup)."""
    if data:
        sys.stdout.write(data.decode("utf-8", errors="replace"))
        sys.stdout.flush()


def _end_line(last: bytes) -> None:
    """Ends output that did not end its last line, so what follows starts on its own."""
    if last and not last.endswith(b"\n"):
        _write_raw(b"\n")


# --- the commands --------------------------------------------------------------------------


def log_command(
    passage: PassageArgument,
    runtime_dir: RuntimeDirOption = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="Keep printing the output as it grows until the passage exits.",
        ),
    ] = False,
    schedule: Annotated[
        str | None,
        typer.Option(
            "--schedule",
            metavar="SCHEDULE",
            help="Server mode: the schedule the passage belongs to (its ID; needed there).",
            show_default=False,
        ),
    ] = None,
    server: ServerOption = None,
    actor: ActorOption = None,
    json_output: JsonFlag = False,
) -> None:
    """Print a passage's records and its whole output log.

    The records: its start, exit status or signal, report and interrupt.

    With --follow: print the output as it grows until the command exits, then its end.
    With --json: {"passageId", "sessionId", "status", "exitStatus", "signal", "report",
    "interrupted", …, "log"} (with --follow, once the command exited).

    Server mode (--server URL with --schedule SCHEDULE, or KALENDS_SERVER when no
    --runtime-dir is given): the records and the end of the output that the server's
    runtime keeps; --follow waits until the passage ends, then prints them.
    """
    url = server_url(server, runtime_dir)
    if url is not None:
        _remote_log(url, passage, schedule, follow, actor, json_output)
        return
    try:
        root = runtime_root(runtime_dir)
        directory = find_passage(root, passage)
        runtime = _runtime(root)
        if json_output:
            if follow:
                _wait_for_exit(runtime, directory)
            p = read_passage(runtime, directory)
            log = _read_log(directory / OUTPUT).decode("utf-8", errors="replace")
            emit_json(p.to_json(log=log))
            return
        p = read_passage(runtime, directory)
        console.print(_records_view(p), soft_wrap=True)
        console.print(Text(f"── {OUTPUT} ──", style="dim"))
        data = _read_log(directory / OUTPUT)
        _write_raw(data)
        if not follow or p.status in ("exited", "lost", "unreadable"):
            _end_line(data)
            if not data:
                console.print(Text("(no output)", style="dim"))
            return
        offset, last = len(data), data[-1:]
        try:
            while True:
                ended = _exited(runtime, directory)
                data = _read_log(directory / OUTPUT, offset)
                offset += len(data)
                last = data[-1:] or last
                _write_raw(data)
                if ended:
                    break
                time.sleep(FOLLOW_POLL_SECONDS)
        except KeyboardInterrupt:
            raise typer.Exit(EXIT_STOPPED) from None
        _end_line(last)
        p = read_passage(runtime, directory)
        grid = _grid()
        grid.add_row("status", Text(p.status_text()))
        _end_rows(p, lambda label, value: grid.add_row(label, Text(value)))
        console.print(Text("── end ──", style="dim"))
        console.print(grid, soft_wrap=True)
    except KalendsError as exc:
        report_error(exc, json_output)


_ENDED = ("exited", "lost", "unreadable")


def _remote_log(
    url: str,
    passage: str,
    schedule: str | None,
    follow: bool,
    actor: str | None,
    json_output: bool,
) -> None:
    """``passage log`` in server mode: the server's records of one of the schedule's
    passages and the end of its output."""
    with remote_session(url, json_output, actor=actor) as r:
        if schedule is None:
            raise InvalidInput(
                "schedule: in server mode give --schedule SCHEDULE, the schedule that ran "
                "the passage (`kalends schedule show` names its passages)",
                field="schedule",
            )
        # GET /api/missions/{id}: the schedule's detail names its workspace.
        detail = r.schedules.detail(r.actor, schedule)
        route = f"/api/workspaces/{detail['workspaceId']}/missions/{detail['id']}"
        found = _remote_records(r, route, passage)
        try:
            while follow and found.get("status") not in _ENDED:
                time.sleep(FOLLOW_POLL_SECONDS)
                found = _remote_records(r, route, passage)
        except KeyboardInterrupt:
            raise typer.Exit(EXIT_STOPPED) from None
    if json_output:
        emit_json(found)
        return
    console.print(_remote_view(found), soft_wrap=True)
    console.print(Text(f"── {OUTPUT} (its end, as the server keeps it) ──", style="dim"))
    data = str(found.get("log") or "").encode()
    _write_raw(data)
    _end_line(data)
    if not data:
        console.print(Text("(no output)", style="dim"))


def _remote_records(r: Remote, route: str, passage: str) -> dict[str, Any]:
    """The records of ``passage`` under the mission ``route`` (``/api/workspaces/W/missions/M``)."""
    found: dict[str, Any] = r.get(f"{route}/passages/{path_part(passage.strip())}/log")
    return found


def _remote_view(p: Mapping[str, Any]) -> Table:
    """The records a server answers, drawn like the local ones."""
    grid = _grid()

    def row(label: str, value: str) -> None:
        grid.add_row(label, Text(value))

    row("passage", str(p.get("passageId") or "—"))
    row("session", str(p.get("sessionId")))
    if p.get("scheduleId"):
        row("schedule", str(p["scheduleId"]))
    status = str(p.get("status"))
    if status == "exited":
        if p.get("signal") is not None:
            status = f"killed by signal {p['signal']}"
        elif p.get("exitStatus") is not None:
            status = f"exited {p['exitStatus']}"
    if p.get("error"):
        status += f" ({p['error']})"
    row("status", status)
    row("admitted", _local(p.get("createdAt")))
    if p.get("startedAt"):
        row("started", _local(p["startedAt"]))
    if p.get("endedAt"):
        row("ended", _local(p["endedAt"]))
    report, interrupted = p.get("report"), p.get("interrupted")
    if isinstance(report, Mapping):
        row(
            "report",
            f"{report.get('outcome')} at {_local(report.get('at'))}: "
            f"{report.get('summary') or '(no summary)'}",
        )
    else:
        row("report", "none")
    if isinstance(interrupted, Mapping):
        row(
            "interrupted",
            f"by kalends at {_local(interrupted.get('at'))} "
            f"(KILL after {interrupted.get('grace')} s)",
        )
    return grid


def _exited(runtime: ProcessRuntime, directory: Path) -> bool:
    return runtime.observe(directory.name).exited


def _wait_for_exit(runtime: ProcessRuntime, directory: Path) -> None:
    try:
        while not _exited(runtime, directory):
            time.sleep(FOLLOW_POLL_SECONDS)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_STOPPED) from None


def ls_command(
    runtime_dir: RuntimeDirOption = None,
    limit: Annotated[
        str | None,
        typer.Option(
            "--limit",
            metavar="N",
            help=f"At most N, newest first (default {DEFAULT_LIST_LIMIT}; 0: all).",
            show_default=False,
        ),
    ] = None,
    wide: WideOption = False,
    server: ServerOption = None,
    actor: ActorOption = None,
    json_output: JsonFlag = False,
) -> None:
    """Show the passages of the runtime directory, newest first, with their status.

    Status: admitted (not launched yet), running, exited (with its exit status or
    signal), lost or unreadable. At 80 columns the session ID is left out (`passage
    log` takes the passage ID) and the report's outcome goes under the status; --wide
    shows every column. With --json: {"runtimeDir", "total", "items": [...]}.

    Server mode (--server URL, or KALENDS_SERVER when no --runtime-dir is given): the
    passages of the server's runtime directory that belong to schedules of your
    workspaces.
    """
    url = server_url(server, runtime_dir)
    try:
        size = _limit(limit)
    except KalendsError as exc:
        report_error(exc, json_output)
    if url is not None:
        with remote_session(url, json_output, actor=actor) as r:
            # Past what a JSON number holds exactly, N is all of them.
            found = r.get("/api/passages", limit=size if size <= MAX_LIST_LIMIT else 0)
        _print_listing(found, json_output, wide)
        return
    try:
        root = runtime_root(runtime_dir)
        total, dirs = newest_passages(root, size)
        runtime = _runtime(root) if dirs else None
        items = [read_passage(runtime, d) for d in dirs] if runtime is not None else []
    except KalendsError as exc:
        report_error(exc, json_output)
    listing = {"runtimeDir": str(root), "total": total, "items": [p.to_json() for p in items]}
    _print_listing(listing, json_output, wide)


_LISTING = (
    Column("admitted"),
    Column("passage"),
    Column("session"),
    Column("status"),
    Column("report", wrap=True),
)
_LISTING_COMPACT = (Column("admitted"), Column("passage", whole=True), Column("status"))


def _print_listing(listing: Mapping[str, Any], json_output: bool, wide: bool) -> None:
    """A listing's JSON ({"runtimeDir", "total", "items"}, local or a server's) as JSON or
    as a table."""
    if json_output:
        emit_json(listing)
        return
    items: list[Mapping[str, Any]] = listing["items"]
    total = int(listing["total"])
    if not items:
        console.print(Text(f"no passages in {listing['runtimeDir']}", style="dim"), soft_wrap=True)
        return
    full: list[list[Cell]] = []
    compact: list[list[Cell]] = []
    for p in items:
        report = p.get("report")
        outcome = report.get("outcome") if isinstance(report, Mapping) else None
        status = status_text(p)
        full.append(
            [
                _local(p.get("createdAt")),
                p.get("passageId") or "—",
                p["sessionId"],
                status,
                outcome or "—",
            ]
        )
        compact.append(
            [
                _local(p.get("createdAt"), lines=True),
                # A passage without its ID (its start record unreadable): `passage log`
                # takes the session ID too.
                p.get("passageId") or p["sessionId"],
                status + (f"\nreport: {outcome}" if outcome else ""),
            ]
        )
    small = table(_LISTING_COMPACT, compact, compact=True, caption="--wide: session IDs too")
    console.print(Fitted.of(_LISTING, full, small, wide=wide), soft_wrap=True)
    if total > len(items):
        console.print(
            Text(f"{total - len(items)} older: --limit {total} (or 0) shows them", style="dim"),
            soft_wrap=True,
        )


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIST_LIMIT
    value = text.strip()
    if re.fullmatch(r"[0-9]+", value) is None:
        raise InvalidInput(f"limit: a whole number (0: all), got {text!r}", field="limit")
    return int(value)


passage_app.command("ls")(ls_command)
passage_app.command("log")(log_command)
