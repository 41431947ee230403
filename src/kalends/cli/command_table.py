"""Where each top-level command of ``kalends`` lives, so that one command loads only its
own module.

Loading every command's module takes well over a second (the database layer, the HTTP
client, every domain), while ``kalends preview`` needs only the civil-time engine. The
executable (:mod:`kalends.cli.entry`) looks the first argument up here and builds the
command line from that one module; ``kalends`` alone, ``--help``, ``--version`` and an
unknown name build the whole command line (:mod:`kalends.cli.main`) from the same table,
in this order.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

__all__ = ["COMMANDS", "Command"]


@dataclass(frozen=True, slots=True)
class Command:
    """A top-level command: the module and attribute of its Typer group (``group``) or of
    its function (a single command)."""

    module: str
    attribute: str
    group: bool

    def load(self) -> Any:
        return getattr(import_module(f"kalends.cli.{self.module}"), self.attribute)


COMMANDS: dict[str, Command] = {
    "preview": Command("preview", "preview_command", group=False),
    "db": Command("db", "db_app", group=True),
    "actor": Command("actors", "actor_app", group=True),
    "list": Command("lists", "list_app", group=True),
    "task": Command("tasks", "task_app", group=True),
    "reminders": Command("reminders", "reminders_app", group=True),
    "workspace": Command("workspaces", "workspace_app", group=True),
    "schedule": Command("schedules", "schedule_app", group=True),
    "passage": Command("passages", "passage_app", group=True),
    "profile": Command("profiles", "profile_app", group=True),
    "node": Command("nodes", "node_app", group=True),
    "worker": Command("worker", "worker_command", group=False),
    "simulate": Command("simulate", "simulate_command", group=False),
    "report": Command("report", "report_command", group=False),
    "say": Command("say", "say_command", group=False),
    "ask": Command("ask", "ask_command", group=False),
    "decide": Command("decide", "decide_command", group=False),
    "doctor": Command("doctor", "doctor_command", group=False),
    "serve": Command("serve", "serve_command", group=False),
    "service": Command("service", "service_app", group=True),
    "token": Command("tokens", "token_app", group=True),
    "device": Command("devices", "device_app", group=True),
    "feed": Command("feeds", "feed_app", group=True),
    "conversation": Command("conversations", "conversation_app", group=True),
    "question": Command("questions", "question_app", group=True),
    "login-link": Command("tokens", "login_link_command", group=False),
    "password": Command("tokens", "password_command", group=False),
    "login": Command("login", "login_command", group=False),
    "logout": Command("login", "logout_command", group=False),
    "whoami": Command("login", "whoami_command", group=False),
}
