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


# The files that take longest (15 s or more in a whole run: real servers, workers,
# browsers and their waits), longest first, as a whole run's junit report timed them.
# pytest-xdist hands out whole files in collection order, so a long file left to the
# end keeps one worker busy while the others have nothing left to do (the browser
# journeys, left out of this list, ran last and alone for minutes).
LONG_FIRST = (
    "integration/test_worker_conditions.py",
    "api/test_schema_fuzz.py",
    "supervision/test_play_supervision.py",
    "api/test_authorization_matrix.py",
    "missions/test_two_nodes.py",
    "integration/test_cli_doctor.py",
    "supervision/test_service_cli.py",
    "tasks/test_tree_pages.py",
    "integration/test_cli_simulate.py",
    "integration/test_cli_schedules.py",
    "api/test_conversations.py",
    "integration/test_cli_ask.py",
    "integration/test_cli_ledger.py",
    "integration/test_cli_tokens.py",
    "integration/test_cli_devices.py",
    "integration/test_worker_process.py",
    "missions/test_ledger_reads.py",
    "integration/test_cli_conversations.py",
    "integration/test_simulation_vs_worker.py",
    "api/test_tasks_files.py",
    "integration/test_cli_decide.py",
    "integration/test_cli_tasks.py",
    "missions/test_simulation.py",
    "pages/test_simulate_pages.py",
    "reminders/test_outbox.py",
    "api/test_task_pages.py",
    "missions/test_scheduler_dst.py",
    "api/test_actors_routes.py",
    "reminders/test_worker_concurrency.py",
    "integration/test_cli_remote_server.py",
    "e2e/test_watch_journey.py",
    "missions/test_scheduler_concurrency.py",
    "missions/test_journeys.py",
    "missions/test_slot_ledger.py",
    "integration/test_cli_nodes.py",
    "property/test_oracle_agreement.py",
    "web/test_mission_journeys.py",
    "web/test_task_journeys.py",
    "web/test_question_journeys.py",
    "web/test_ledger_journeys.py",
    "property/test_cron_extensions.py",
    "pages/test_editor_pages.py",
    "e2e/test_passage_checklist_journey.py",
    "web/test_simulate_journeys.py",
    "missions/test_ledger_crashes.py",
    "api/test_devices_routes.py",
    "reminders/test_destinations.py",
    "api/test_passage_questions.py",
    "storage/test_cli_db.py",
    "api/test_tasks_access.py",
    "api/test_missions_refusals.py",
    "pages/test_device_pages.py",
    "e2e/test_serve_logs.py",
    "api/test_unseen_is_not_found.py",
    "api/test_ledger_api.py",
    "missions/test_document_fits.py",
    "api/test_passage_beats_api.py",
    "auth/test_devices.py",
    "e2e/test_serve_options.py",
    "web/test_device_journeys.py",
    "missions/test_burst_sigkill.py",
    "api/test_tasks_items.py",
    "missions/test_condition_crashes.py",
    "api/test_missions_schedules.py",
    "web/test_journey_five.py",
    "integration/test_cli_series.py",
    "missions/test_controls.py",
    "integration/test_cli_questions.py",
    "missions/test_shim_beats.py",
    "series/test_state_machine.py",
    "web/test_editor_journeys.py",
    "integration/test_agent_presets.py",
    "web/test_series_journeys.py",
    "missions/test_scheduler_crashes.py",
    "integration/test_cli_notify.py",
    "api/test_missions_workspaces.py",
    "api/test_passage_checklists.py",
    "missions/test_control_machine.py",
    "e2e/test_journeys_missions.py",
    "pages/test_list_pages.py",
    "missions/test_node_runtime.py",
    "e2e/test_serve_process.py",
    "api/test_passages_list.py",
    "e2e/test_passage_confinement.py",
    "integration/test_cli_run_privilege.py",
    "api/test_run_privilege.py",
    "missions/test_scheduler_conditions.py",
    "api/test_tasks_schedule.py",
    "e2e/test_serve_shutdown.py",
    "e2e/test_fast_paths_off.py",
    "questions/test_handover_rules.py",
    "pages/test_schedule_ledger_pages.py",
    "pages/test_task_detail_pages.py",
    "integration/test_cli_finished_and_80_columns.py",
    "web/test_browser_smoke.py",
    "integration/test_cli_tasks_bad_input.py",
    "questions/test_roles.py",
    "questions/test_ui_answers.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    here = os.path.dirname(__file__)

    def key(item: pytest.Item) -> int:
        name = os.path.relpath(str(item.path), here)
        return rank.get(name, len(LONG_FIRST))

    items.sort(key=key)  # (stable: each file's tests keep their order)
