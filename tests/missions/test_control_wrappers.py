"""The control methods (play, pause, stop, resume, run_now, check, delete): each is
``control`` with its action, takes the workspace it acts in, and checks it first; on both
backends."""

from __future__ import annotations

import inspect
from dataclasses import replace
from datetime import datetime
from functools import partial
from uuid import UUID

import pytest

from kalends.errors import NotFound
from kalends.missions import Action, Body, ScheduleService
from kalends.missions.workspaces import OutsideWorkspace
from kalends.storage.testing import nothing_written
from missions.conftest import MissionWorld
from missions.surgery import control, create, edit_body, revision

# Each control method, its action, and the controls that bring a new schedule to a state
# that admits it (controls.py's table); "interrupt" marks what a restart leaves behind.
METHODS = [
    pytest.param("play", Action.PLAY, [], id="play-a-fresh-schedule"),
    pytest.param("pause", Action.PAUSE, ["play"], id="pause-a-running-schedule"),
    pytest.param("stop", Action.STOP, [], id="stop-a-fresh-schedule"),
    pytest.param("resume", Action.RESUME, ["play", "interrupt"], id="resume-an-interrupted-one"),
    pytest.param("run_now", Action.RUN_NOW, [], id="run-a-fresh-schedule-now"),
    pytest.param("check", Action.CHECK, ["play", "run-now", "pause"], id="check-a-pending-one"),
    pytest.param("delete", Action.DELETE, [], id="delete-a-fresh-schedule"),
]


def _interrupted(body: Body, *, at: datetime) -> Body:
    return replace(body, interruption="restart", interrupted_at=at)


def _ready(mw: MissionWorld, steps: list[str]) -> UUID:
    sid = create(mw)
    for i, step in enumerate(steps):
        if step == "interrupt":
            edit_body(mw, sid, partial(_interrupted, at=mw.clock.now()))
        else:
            control(mw, sid, step, f"setup-{i}-{step}")
    return sid


def _away_with_bob(mw: MissionWorld) -> UUID:
    """Another workspace, where bob is an editor too."""
    mw.workspaces.set_member(mw.dave.id, mw.away.id, mw.bob.id, "editor")
    return mw.away.id


class TestEachControlMethod:
    @pytest.mark.parametrize(("name", "action", "steps"), METHODS)
    def test_applies_its_own_action_as_control_does(
        self, mw: MissionWorld, name: str, action: Action, steps: list[str]
    ) -> None:
        sid = _ready(mw, steps)
        expected = revision(mw, sid)
        method = getattr(mw.schedules, name)
        out = method(mw.bob.id, sid, request_id="wrapped-0001", expected_revision=expected)
        assert (out.action, out.status, out.repeated) == (action.value, "applied", False)
        assert (out.expected_revision, out.revision) == (expected, expected + 1)
        # The same request through control itself is its repeat: one and the same control.
        again = mw.schedules.control(
            mw.bob.id, sid, action, request_id="wrapped-0001", expected_revision=expected
        )
        assert again.repeated
        assert (again.action, again.revision) == (out.action, out.revision)

    @pytest.mark.parametrize(("name", "action", "steps"), METHODS)
    def test_acts_in_the_workspace_it_is_given(
        self, mw: MissionWorld, name: str, action: Action, steps: list[str]
    ) -> None:
        sid = _ready(mw, steps)
        expected = revision(mw, sid)
        method = getattr(mw.schedules, name)
        out = method(
            mw.bob.id,
            sid,
            request_id="wrapped-0002",
            expected_revision=expected,
            workspace=mw.home.id,
        )
        assert (out.action, out.revision) == (action.value, expected + 1)

    @pytest.mark.parametrize(("name", "action", "steps"), METHODS)
    def test_refuses_a_schedule_of_another_workspace_and_writes_nothing(
        self, mw: MissionWorld, name: str, action: Action, steps: list[str]
    ) -> None:
        sid = _ready(mw, steps)
        away = _away_with_bob(mw)
        method = getattr(mw.schedules, name)
        with nothing_written(mw.store), pytest.raises(OutsideWorkspace) as caught:
            method(
                mw.bob.id,
                sid,
                request_id="wrapped-0003",
                expected_revision=revision(mw, sid),
                workspace=away,
            )
        assert (caught.value.schedule, caught.value.workspace) == (sid, away)
        # Nothing was recorded under the request ID: it is still free.
        status = mw.schedules.control_status(mw.bob.id, sid, "wrapped-0003")
        assert status.status == "unknown"

    @pytest.mark.parametrize(("name", "action", "steps"), METHODS)
    def test_checks_the_workspace_before_the_revision(
        self, mw: MissionWorld, name: str, action: Action, steps: list[str]
    ) -> None:
        sid = _ready(mw, steps)
        method = getattr(mw.schedules, name)
        # dave is no member of home: that workspace does not exist for him, whatever else
        # is wrong with the request (a revision not reached yet).
        with nothing_written(mw.store), pytest.raises(NotFound) as caught:
            method(
                mw.dave.id,
                sid,
                request_id="wrapped-0004",
                expected_revision=99,
                workspace=mw.home.id,
            )
        assert caught.value.details["field"] == "workspace"
        assert not isinstance(caught.value, OutsideWorkspace)


@pytest.mark.parametrize("name", ["play", "pause", "stop", "resume", "run_now", "check", "delete"])
def test_each_control_method_has_the_signature_of_control_without_action_and_changes(
    name: str,
) -> None:
    method = getattr(ScheduleService, name)
    assert method.__name__ == name
    assert method.__qualname__ == f"ScheduleService.{name}"
    assert method.__doc__
    parameters = inspect.signature(method).parameters
    assert [(p.name, p.kind, p.default) for p in parameters.values()] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("actor", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("schedule", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("request_id", inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty),
        ("expected_revision", inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty),
        ("workspace", inspect.Parameter.KEYWORD_ONLY, None),
    ]
