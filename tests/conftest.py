"""Plugins for the whole test-suite: the storage backends and their fixtures."""

import os

import pytest
import typer.testing
from typer import Typer
from typer._click import Command
from typer.main import get_command

# pytest-xdist gives its workers COLUMNS=80 and LINES=24, and the CLI's consoles would
# fix that width when first imported; the tests that print set COLUMNS per invocation.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

# As root, `kalends serve` and `kalends worker` run passages as kalends-passage, which
# they create. Tests that are not about confinement run them as the server's own user and
# leave the machine's users alone; tests/runtime/test_isolation.py and
# tests/e2e/test_passage_confinement.py name the user they confine passages to.
os.environ.setdefault("KALENDS_PASSAGE_USER", "root")

# A human Play turns service supervision on through systemd's user manager. No test
# reaches the machine's own manager (systemctl --user finds it through these two), so no
# test installs a unit into the real home; the supervision tests put stand-ins first on
# PATH instead (tests/supervision).
os.environ.pop("XDG_RUNTIME_DIR", None)
os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)

pytest_plugins = ["kalends.storage.testing"]


# Typer's CliRunner builds the whole command tree again for every invocation (each of the
# ~100 commands' parameters read from its function's signature and type hints): 55 of the
# 65 ms an in-process `kalends list ls` took. The tests invoke a handful of command lines
# thousands of times; each is built once here. A command line is never changed once
# built, and click makes a new context for every invocation.
_BUILT: dict[int, tuple[Typer, Command]] = {}


def _built_once(app: Typer) -> Command:
    found = _BUILT.get(id(app))
    if found is None or found[0] is not app:
        found = _BUILT[id(app)] = (app, get_command(app))
    return found[1]


def pytest_configure(config: pytest.Config) -> None:
    pytest.MonkeyPatch().setattr(typer.testing, "_get_command", _built_once)


# The files that take longest (tens of seconds: real servers, workers, browsers and
# their waits), first. pytest-xdist hands out whole files in collection order, so a long
# file left to the end keeps one worker busy while the others have nothing left to do.
LONG_FIRST = (
    "missions/test_two_nodes.py",
    "integration/test_worker_conditions.py",
    "api/test_authorization_matrix.py",
    "integration/test_cli_schedules.py",
    "supervision/test_play_supervision.py",
    "integration/test_cli_doctor.py",
    "api/test_schema_fuzz.py",
    "supervision/test_service_cli.py",
    "integration/test_cli_simulate.py",
    "integration/test_cli_devices.py",
    "integration/test_cli_tokens.py",
    "tasks/test_tree_pages.py",
    "integration/test_cli_ledger.py",
    "integration/test_cli_conversations.py",
    "integration/test_cli_ask.py",
    "pages/test_simulate_pages.py",
    "integration/test_worker_process.py",
    "integration/test_cli_remote_server.py",
    "api/test_task_pages.py",
    "missions/test_condition_crashes.py",
    "api/test_actors_routes.py",
    "api/test_tasks_files.py",
    "api/test_conversations.py",
    "integration/test_simulation_vs_worker.py",
    "missions/test_scheduler_dst.py",
    "missions/test_slot_ledger.py",
    "integration/test_cli_tasks.py",
    "integration/test_cli_decide.py",
    "missions/test_ledger_reads.py",
    "missions/test_journeys.py",
    "missions/test_control_machine.py",
    "missions/test_scheduler_concurrency.py",
    "missions/test_simulation.py",
    "missions/test_document_fits.py",
    "reminders/test_worker_concurrency.py",
    "e2e/test_watch_journey.py",
    "web/test_mission_journeys.py",
    "web/test_ledger_journeys.py",
    "series/test_state_machine.py",
    "property/test_oracle_agreement.py",
    "reminders/test_outbox.py",
    "integration/test_cli_nodes.py",
    "api/test_devices_routes.py",
    "integration/test_cli_series.py",
    "pages/test_editor_pages.py",
    "e2e/test_serve_logs.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    here = os.path.dirname(__file__)

    def key(item: pytest.Item) -> int:
        name = os.path.relpath(str(item.path), here)
        return rank.get(name, len(LONG_FIRST))

    items.sort(key=key)  # (stable: each file's tests keep their order)
