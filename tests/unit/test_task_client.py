"""One client for the task commands: the services and the HTTP clients answer the same
protocols, so that a command makes each call once, whatever the mode.

The assignments below are checked by mypy (``tests`` are type-checked, strictly); the
tests check at run time that each implementation takes every protocol method with the
protocol's parameters, names, kinds and defaults alike.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from kalends.auth.grants import Grants
from kalends.bootstrap import Services
from kalends.cli.http_tasks import (
    HttpDirectory,
    HttpGrants,
    HttpSeries,
    HttpTaskChanges,
    HttpTasks,
    Wire,
)
from kalends.cli.local_tasks import LocalTaskChanges
from kalends.cli.remote import Remote
from kalends.cli.session import Session
from kalends.cli.task_client import (
    DirectoryClient,
    GrantsClient,
    SeriesClient,
    TaskChanges,
    TaskClient,
    TaskSession,
)
from kalends.tasks import Directory, TaskService
from kalends.tasks.series import SeriesService


def local_session(s: Session) -> TaskSession:
    return s


def server_session(r: Remote) -> TaskSession:
    return r


def remote_is_a_wire(r: Remote) -> Wire:
    return r


def services_are_the_local_clients(
    s: Services,
) -> tuple[DirectoryClient, GrantsClient, TaskClient, SeriesClient, TaskChanges]:
    return s.directory, s.grants, s.tasks, s.series, LocalTaskChanges(s)


def the_http_clients(
    w: Wire,
) -> tuple[DirectoryClient, GrantsClient, TaskClient, SeriesClient, TaskChanges]:
    return HttpDirectory(w), HttpGrants(w), HttpTasks(w), HttpSeries(w), HttpTaskChanges(w)


PAIRS = [
    # lists, members, sections and actors
    (DirectoryClient, Directory, HttpDirectory),
    # the run privilege
    (GrantsClient, Grants, HttpGrants),
    # tasks, one call each
    (TaskClient, TaskService, HttpTasks),
    # recurring series
    (SeriesClient, SeriesService, HttpSeries),
    # changes of several calls: one transaction locally, one request on a server
    (TaskChanges, LocalTaskChanges, HttpTaskChanges),
]


def protocol_methods(protocol: type) -> list[str]:
    return sorted(
        name
        for name, member in vars(protocol).items()
        if not name.startswith("_") and inspect.isfunction(member)
    )


def parameters(cls: type, name: str) -> list[tuple[str, Any, Any]]:
    found = inspect.signature(getattr(cls, name)).parameters.values()
    return [(p.name, p.kind, p.default) for p in found]


class TestTheProtocols:
    @pytest.mark.parametrize(("protocol", "local", "http"), PAIRS)
    def test_both_implementations_take_each_call_with_the_protocols_parameters(
        self, protocol: type, local: type, http: type
    ) -> None:
        methods = protocol_methods(protocol)
        assert methods
        for name in methods:
            wanted = parameters(protocol, name)
            assert parameters(local, name) == wanted, (local.__name__, name)
            assert parameters(http, name) == wanted, (http.__name__, name)

    def test_a_session_in_either_mode_offers_what_a_task_command_asks(self) -> None:
        wanted = {"directory", "grants", "tasks", "series", "changes", "server"}
        for session in (Session, Remote):
            assert wanted <= {n for n in dir(session) if not n.startswith("_")}
            assert callable(session.read_together)
