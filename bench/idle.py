"""Idle benchmark: the CPU time and the wakes of a real ``kalends serve`` that is given no
work at all.

A fresh SQLite database in a temporary directory (``sqlite:///...``: WAL,
``synchronous=NORMAL``, kalends' default), then ``kalends serve --port 0`` on it, started
as ``bench/api.py`` starts it (``bench.api.running``: stdout and stderr to files, ready
when it prints ``kalends serving on http://HOST:PORT``), in two configurations one after
the other: as shipped (the HTTP API, the mission scheduler and the reminder delivery),
and with ``--no-schedules --no-reminders`` (the HTTP API and, on SQLite, the thread that
checkpoints the write-ahead log). No request is sent.

Once it serves, ``--settle`` seconds (default 3) pass untimed (startup's own writes, the
owner's account and the base URL, are checkpointed then), and then over ``--seconds``
seconds (default 30) this reads, from ``/proc``:

- CPU: user + system time of the whole process (``/proc/PID/stat``, in clock ticks of
  10 ms), and the same to the nanosecond, summed over its threads
  (``/proc/PID/task/*/schedstat``, where the kernel has it);
- wakes: context switches summed over its threads (``voluntary_ctxt_switches`` +
  ``nonvoluntary_ctxt_switches`` of ``/proc/PID/task/*/status``): every time a thread
  slept and ran again, which is what an idle process costs the machine beyond its CPU
  time (a core kept out of its deeper sleep states). Threads that started or ended
  inside the window count from zero or are missed.

The figures are per second of the window. The machine's load average is printed at the
start and the end: other work on the machine slows a thread down, but a polling thread
wakes as often either way.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("kalends") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC))
if importlib.util.find_spec("bench") is None:  # pragma: no cover - direct script run
    sys.path.insert(0, str(SRC.parent))

from bench.api import HOST, KALENDS, Server, running  # noqa: E402
from bench.common import grid, log, positive  # noqa: E402

DEFAULT_SECONDS = 30
DEFAULT_SETTLE_S = 3
READY = r"kalends serving on (http://\S+)"

CONFIGURATIONS: dict[str, tuple[str, ...]] = {
    "serve (as shipped)": (),
    "serve --no-schedules --no-reminders": ("--no-schedules", "--no-reminders"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """What ``/proc`` says of a process at one instant."""

    at: float
    cpu_ticks_s: float
    cpu_ns: int | None
    switches: int
    threads: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    name: str
    seconds: float
    threads: int
    cpu_ms_per_s: float
    """CPU milliseconds per second from ``/proc/PID/stat`` (10 ms ticks)."""
    cpu_ns_ms_per_s: float | None
    """The same from the threads' ``schedstat`` (nanoseconds), where the kernel has it."""
    wakes_per_s: float

    @property
    def cpu_share(self) -> float:
        """The share of one CPU, in percent."""
        return (self.cpu_ns_ms_per_s or self.cpu_ms_per_s) / 10


def sample(server: Server) -> Sample:
    cpu_ns: int | None = 0
    switches = 0
    tasks = list(Path(f"/proc/{server.pid}/task").iterdir())
    for task in tasks:
        try:
            schedstat = task / "schedstat"
            if cpu_ns is not None and schedstat.exists():
                cpu_ns += int(schedstat.read_text().split()[0])
            else:
                cpu_ns = None
            for line in (task / "status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                    switches += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return Sample(
        at=time.monotonic(),
        cpu_ticks_s=server.cpu_s(),
        cpu_ns=cpu_ns,
        switches=switches,
        threads=len(tasks),
    )


def measure(name: str, extra: Sequence[str], directory: Path, seconds: int, settle: int) -> Result:
    directory.mkdir()
    url = f"sqlite:///{directory / 'kalends.sqlite3'}"
    argv = [
        str(KALENDS),
        "serve",
        "--host",
        HOST,
        "--port",
        "0",
        "--database",
        url,
        "--log-level",
        "warning",
        "--runtime-dir",
        str(directory / "runtime"),
        *extra,
    ]
    with running("kalends", argv, directory, READY) as server:
        time.sleep(settle)
        first = sample(server)
        log(f"  {name}: {first.threads} threads; measuring {seconds} s with no traffic")
        time.sleep(seconds)
        last = sample(server)
    elapsed = last.at - first.at
    cpu_ns = (
        (last.cpu_ns - first.cpu_ns) / 1e6 / elapsed
        if last.cpu_ns is not None and first.cpu_ns is not None
        else None
    )
    return Result(
        name=name,
        seconds=elapsed,
        threads=last.threads,
        cpu_ms_per_s=(last.cpu_ticks_s - first.cpu_ticks_s) * 1000 / elapsed,
        cpu_ns_ms_per_s=cpu_ns,
        wakes_per_s=(last.switches - first.switches) / elapsed,
    )


def print_table(results: Sequence[Result], loads: Sequence[tuple[float, float, float]]) -> None:
    header = [
        "configuration",
        "seconds",
        "threads",
        "CPU ms/s (stat)",
        "CPU ms/s (schedstat)",
        "% of a CPU",
        "wakes/s",
    ]
    body = [
        [
            r.name,
            f"{r.seconds:.1f}",
            str(r.threads),
            f"{r.cpu_ms_per_s:.2f}",
            "-" if r.cpu_ns_ms_per_s is None else f"{r.cpu_ns_ms_per_s:.2f}",
            f"{r.cpu_share:.2f}",
            f"{r.wakes_per_s:.1f}",
        ]
        for r in results
    ]
    print("\n".join(grid(header, body, right={1, 2, 3, 4, 5, 6})))
    print(
        "CPU: user + system time of the whole process per second of the window;"
        " wakes: context switches of all its threads per second"
    )
    start, end = loads
    print(
        f"load average (1, 5, 15 min) at the start {start[0]:.2f} {start[1]:.2f} {start[2]:.2f},"
        f" at the end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f} on {os.cpu_count()} CPUs"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--seconds",
        type=positive,
        default=DEFAULT_SECONDS,
        help=f"the measured window per configuration (default {DEFAULT_SECONDS})",
    )
    parser.add_argument(
        "--settle",
        type=int,
        default=DEFAULT_SETTLE_S,
        help=f"untimed seconds once the server serves (default {DEFAULT_SETTLE_S})",
    )
    parser.add_argument(
        "--only-api",
        action="store_true",
        help="only the configuration without the scheduler and the reminder delivery",
    )
    args = parser.parse_args(argv)
    if not KALENDS.exists():
        print(
            f"{KALENDS} is missing: install the project (`make run` or pip install -e .)",
            file=sys.stderr,
        )
        return 2
    load_before = os.getloadavg()
    configurations = list(CONFIGURATIONS.items())
    if args.only_api:
        configurations = configurations[1:]
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="kalends-bench-idle-") as tmp:
        for i, (name, extra) in enumerate(configurations):
            results.append(
                measure(name, extra, Path(tmp) / f"run-{i}", args.seconds, max(0, args.settle))
            )
    loads = (load_before, os.getloadavg())
    if args.json:
        rows = [asdict(r) | {"cpu_share": r.cpu_share} for r in results]
        print(json.dumps({"results": rows, "load_average": loads}, indent=2))
    else:
        print_table(results, loads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
