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


# The files that take longest (10 s or more: real servers, workers, browsers and their
# waits), longest first, as two whole runs' junit reports timed them (their mean).
# pytest-xdist hands out whole files (--dist loadfile) in collection order when told not
# to reorder them (--no-loadscope-reorder, in the Makefile; by default it sends the files
# with the most tests first, and a long file of one test went last: test_two_nodes, 95 s,
# ran while the other workers had nothing left to do).
LONG_FIRST = (
    "integration/test_worker_conditions.py",
    "supervision/test_play_supervision.py",
    "supervision/test_service_cli.py",
    "integration/test_cli_doctor.py",
    "missions/test_two_nodes.py",
    "api/test_schema_fuzz.py",
    "integration/test_cli_simulate.py",
    "api/test_authorization_matrix.py",
    "integration/test_cli_tasks.py",
    "missions/test_scheduler_dst.py",
    "integration/test_cli_ask.py",
    "integration/test_simulation_vs_worker.py",
    "tasks/test_tree_pages.py",
    "missions/test_simulation.py",
    "integration/test_worker_process.py",
    "missions/test_control_machine.py",
    "integration/test_cli_decide.py",
    "missions/test_scheduler_concurrency.py",
    "pages/test_simulate_pages.py",
    "missions/test_slot_ledger.py",
    "api/test_task_pages.py",
    "integration/test_cli_remote_server.py",
    "api/test_tasks_files.py",
    "api/test_conversations.py",
    "reminders/test_worker_concurrency.py",
    "integration/test_cli_schedules.py",
    "web/test_mission_journeys.py",
    "api/test_actors_routes.py",
    "missions/test_journeys.py",
    "integration/test_cli_ledger.py",
    "web/test_ledger_journeys.py",
    "e2e/test_passage_checklist_journey.py",
    "property/test_oracle_agreement.py",
    "storage/test_cli_db.py",
    "e2e/test_serve_logs.py",
    "missions/test_document_fits.py",
    "missions/test_ledger_reads.py",
    "e2e/test_watch_journey.py",
    "series/test_state_machine.py",
    "web/test_task_journeys.py",
    "integration/test_cli_nodes.py",
    "missions/test_ledger_crashes.py",
    "web/test_simulate_journeys.py",
    "integration/test_zone_rules_changed.py",
    "missions/test_burst_sigkill.py",
    "pages/test_editor_pages.py",
    "web/test_editor_journeys.py",
    "web/test_journey_five.py",
    "e2e/test_serve_shutdown.py",
    "web/test_question_journeys.py",
    "e2e/test_serve_options.py",
    "pages/test_device_pages.py",
    "web/test_series_journeys.py",
    "integration/test_cli_devices.py",
    "integration/test_cli_conversations.py",
    "reminders/test_outbox.py",
    "missions/test_condition_crashes.py",
    "api/test_passage_questions.py",
    "api/test_devices_routes.py",
    "api/test_passage_beats_api.py",
    "api/test_ledger_api.py",
    "missions/test_scheduler_crashes.py",
    "web/test_device_journeys.py",
    "pages/test_list_pages.py",
    "api/test_tasks_access.py",
    "e2e/test_serve_process.py",
    "api/test_missions_schedules.py",
    "missions/test_scheduler_conditions.py",
    "integration/test_cli_tokens.py",
    "pages/test_schedule_ledger_pages.py",
    "api/test_tasks_items.py",
    "api/test_missions_refusals.py",
    "integration/test_agent_presets.py",
    "missions/test_node_runtime.py",
    "api/test_unseen_is_not_found.py",
    "property/test_cron_extensions.py",
    "api/test_passage_checklists.py",
    "e2e/test_journeys_missions.py",
    "missions/test_shim_beats.py",
    "missions/test_watch_kills.py",
    "api/test_tasks_schedule.py",
    "api/test_missions_workspaces.py",
    "pages/test_task_detail_pages.py",
    "integration/test_cli_series.py",
    "pages/test_schedule_pages.py",
    "storage/test_migrations.py",
    "integration/test_cli_tasks_bad_input.py",
    "pages/test_question_pages.py",
    "api/test_passages_list.py",
    "missions/test_controls.py",
    "auth/test_devices.py",
    "web/test_settings_journeys.py",
    "web/test_browser_smoke.py",
    "api/test_run_privilege.py",
    "e2e/test_fast_paths_off.py",
    "e2e/test_passage_confinement.py",
    "pages/test_passage_pages.py",
    "api/test_passages_report.py",
    "api/test_missions_by_id.py",
    "api/test_handlers.py",
    "e2e/test_passage_checklist_cli.py",
    "integration/test_cli_notify.py",
    "missions/test_finished.py",
    "web/test_conversation_journeys.py",
    "property/test_next_slot_per_call.py",
    "api/test_deep_json.py",
    "questions/test_handover_rules.py",
    "tasks/test_transitions.py",
    "e2e/test_serve_forwarded.py",
    "api/test_auth_routes.py",
    "reminders/test_destinations.py",
    "api/test_tasks_series_views.py",
    "questions/test_roles.py",
    "integration/test_cli_questions.py",
    "api/test_tasks_lists.py",
    "pages/test_settings_pages.py",
    "conversations/test_threads.py",
    "missions/test_zone_changes.py",
    "questions/test_ui_answers.py",
    "api/test_feeds.py",
    "questions/test_questions.py",
    "pages/test_schedule_supervision_pages.py",
    "integration/test_cli_preview.py",
    "missions/test_control_wrappers.py",
    "reminders/test_worker.py",
    "conversations/test_watch.py",
    "missions/test_checklists.py",
    "auth/test_tokens.py",
    "tasks/test_concurrency.py",
    "missions/test_bad_input.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    here = os.path.dirname(__file__)

    def key(item: pytest.Item) -> int:
        name = os.path.relpath(str(item.path), here)
        return rank.get(name, len(LONG_FIRST))

    items.sort(key=key)  # (stable: each file's tests keep their order)
