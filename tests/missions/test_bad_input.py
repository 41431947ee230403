"""Bad input and authorization at the schedule service: each refusal names its field
(or says who may do what) and writes nothing; on both backends."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from kalends.errors import Forbidden, InvalidInput, NotFound, UnknownZone
from kalends.storage.testing import nothing_written
from missions.conftest import MissionWorld, daily_config
from missions.refusal_support import only_the_refusal_recorded
from missions.surgery import create

DAILY = {"kind": "daily", "time": "09:00", "zone": "UTC"}
BAD_CONFIGS: list[tuple[dict[str, Any], str]] = [
    ({"policy": {"kind": "fortnightly"}}, "policy.kind"),
    (
        {"policy": {"kind": "completion_relative", "days": 1, "time": "09:00", "zone": "UTC"}},
        "policy.kind",
    ),
    ({"policy": "daily"}, "policy"),
    ({"policy": {"kind": "every", "minutes": 14}}, "policy.minutes"),
    ({"policy": {"kind": "every", "hours": 0}}, "policy.hours"),
    ({"policy": {"kind": "after", "minutes": 0}}, "policy.minutes"),
    ({"policy": {"kind": "calendars", "calendars": [DAILY] * 9}}, "policy.calendars"),
    ({"policy": {**DAILY, "zone": "Mars/Olympus"}}, "policy.zone"),
    ({"policy": {**DAILY, "time": "24:00"}}, "policy.time"),
    ({"policy": {**DAILY, "colour": "red"}}, "policy.colour"),
    ({"title": "x" * 61}, "title"),
    ({"title": "   "}, "title"),
    ({"title": ""}, "title"),
    ({"colour": "red"}, "colour"),
    ({"objective": "o" * 10_000, "notes": "n" * 6_385}, "notes"),
    ({"profile": {"command": ["sh"], "cwd": "../elsewhere"}}, "profile.cwd"),
    ({"profile": {"command": ["sh"], "cwd": "a/../../b"}}, "profile.cwd"),
    ({"profile": {"command": ["sh"], "cwd": "/etc"}}, "profile.cwd"),
    ({"profile": {"command": ["sh"], "env": {"1BAD": "v"}}}, "profile.env"),
    ({"profile": {"command": ["sh"], "env": {"BAD-NAME": "v"}}}, "profile.env"),
    ({"profile": {"command": ["sh"], "env": ["A=1"]}}, "profile.env"),
    ({"profile": {"command": ["sh"], "env": {"A": 1}}}, "profile.env.A"),
    ({"profile": {"command": []}}, "profile.command"),
    ({"profile": {"command": ["sh"], "shell": True}}, "profile.shell"),
    ({"end": {"maxPassages": 0}}, "end.maxPassages"),
    ({"end": {"within": {"weeks": 1}}}, "end.within.weeks"),
    ({"restart": "sometimes"}, "restart"),
    ({"condition": {"kind": "weather"}}, "condition.kind"),
    ({"condition": {"kind": "files", "paths": ["../secrets"]}}, "condition.paths[0]"),
    ({"template": [{"name": "no title"}]}, "template[0].name"),
    (
        {"condition": {"kind": "files", "paths": [f"f{i}" for i in range(65)]}},
        "condition.paths",
    ),
    (
        {"condition": {"kind": "conversation", "conversationIds": ["c1"]}},
        "condition.conversationIds[0]",
    ),
]


def test_bad_configuration_names_its_field(mw: MissionWorld) -> None:
    for overrides, field in BAD_CONFIGS:
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.schedules.create(
                mw.bob.id, mw.home.id, daily_config(**overrides), request_id="create-bad"
            )
        assert caught.value.field == field, overrides
        assert caught.value.message.startswith(field), caught.value.message


def test_the_bounds_themselves_are_accepted(mw: MissionWorld) -> None:
    accepted: list[dict[str, Any]] = [
        {"title": "t" * 60},
        {"policy": {"kind": "every", "minutes": 15}},
        {"policy": {"kind": "calendars", "calendars": [DAILY] * 8}},
        {"objective": "o" * 10_000, "notes": "n" * 6_384},
        {"profile": {"command": ["sh"], "cwd": "a/../b", "env": {"_OK_1": ""}}},
        {"condition": {"kind": "files", "paths": [f"f{i}" for i in range(64)]}},
    ]
    for i, overrides in enumerate(accepted):
        receipt = mw.schedules.create(
            mw.bob.id, mw.home.id, daily_config(**overrides), request_id=f"create-{i:04d}"
        )
        assert receipt.status == "created", overrides
    assert receipt.mission_id is not None
    last = mw.schedules.detail(mw.alice.id, receipt.mission_id)
    assert len(last["condition"]["paths"]) == 64


def test_a_conversation_condition_naming_no_conversation_is_refused_on_its_entry(
    mw: MissionWorld,
) -> None:
    receipt = mw.schedules.create(
        mw.bob.id, mw.home.id, daily_config(), request_id="create-conv-0001"
    )
    assert receipt.mission_id is not None
    revision = mw.schedules.detail(mw.bob.id, receipt.mission_id)["revision"]
    condition = {"kind": "conversation", "conversationIds": ["c1"]}
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.configure(
            mw.bob.id,
            receipt.mission_id,
            {"condition": condition},
            request_id="edit-conv-0001",
            expected_revision=revision,
        )
    assert caught.value.field == "condition.conversationIds[0]"
    assert (
        caught.value.message == "condition.conversationIds[0]: no conversation c1 in this workspace"
    )


def test_unknown_zone_keeps_its_code(mw: MissionWorld) -> None:
    with pytest.raises(UnknownZone):
        mw.schedules.create(
            mw.bob.id,
            mw.home.id,
            daily_config(policy={**DAILY, "zone": "Mars/Olympus"}),
            request_id="create-bad",
        )


@pytest.mark.parametrize(
    ("missing", "field"), [("title", "title"), ("profile", "profile"), ("policy", "policy")]
)
def test_required_fields(mw: MissionWorld, missing: str, field: str) -> None:
    config = daily_config()
    del config[missing]
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.create(mw.bob.id, mw.home.id, config, request_id="create-bad")
    assert caught.value.field == field


def test_bad_configure_names_its_field(mw: MissionWorld) -> None:
    sid = create(mw)
    for overrides, field in BAD_CONFIGS:
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.schedules.configure(
                mw.bob.id, sid, overrides, request_id="edit-0001", expected_revision=1
            )
        assert caught.value.field == field, overrides


def test_configure_needs_a_change(mw: MissionWorld) -> None:
    sid = create(mw)
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.configure(mw.bob.id, sid, {}, request_id="edit-0001", expected_revision=1)
    assert caught.value.field == "changes"


def test_at_in_the_past_is_refused_at_first_play(mw: MissionWorld) -> None:
    # The fake clock starts at 2025-03-01 12:00 UTC; creation keeps the schedule paused.
    sid = create(mw, policy={"kind": "at", "local": "2025-03-01T12:30:00", "zone": "Europe/Berlin"})
    # The document stays paused; the refusal is kept under its request ID (it never can
    # apply: the time only recedes further).
    refused = pytest.raises(InvalidInput)
    with only_the_refusal_recorded(mw.store, "play-0001"), refused as caught:
        mw.schedules.play(mw.bob.id, sid, request_id="play-0001", expected_revision=1)
    assert caught.value.field == "policy.local"
    assert "past" in caught.value.message
    # A future one plays.
    later = create(
        mw,
        "create-0002",
        policy={"kind": "at", "local": "2025-03-01T13:30:00", "zone": "Europe/Berlin"},
    )
    mw.schedules.play(mw.bob.id, later, request_id="play-0001", expected_revision=1)


def test_end_bound_in_the_past_is_refused_at_first_play(mw: MissionWorld) -> None:
    sid = create(mw, end={"until": {"local": "2025-02-28T00:00:00", "zone": "UTC"}})
    refused = pytest.raises(InvalidInput)
    with only_the_refusal_recorded(mw.store, "play-0001"), refused as caught:
        mw.schedules.play(mw.bob.id, sid, request_id="play-0001", expected_revision=1)
    assert caught.value.field == "end.until"


def test_unknown_workspace(mw: MissionWorld) -> None:
    for workspace in ("nowhere", UUID(int=7)):
        with nothing_written(mw.store), pytest.raises(NotFound) as caught:
            mw.schedules.create(mw.bob.id, workspace, daily_config(), request_id="create-0001")
        assert caught.value.details["field"] == "workspace"


def test_malformed_request_id(mw: MissionWorld) -> None:
    sid = create(mw)
    for request_id in ("short", "x" * 65, "has space!", "", None, 12345678):
        with nothing_written(mw.store):
            with pytest.raises(InvalidInput) as caught:
                mw.schedules.create(mw.bob.id, mw.home.id, daily_config(), request_id=request_id)  # type: ignore[arg-type]
            assert caught.value.field == "request_id"
            with pytest.raises(InvalidInput) as caught:
                mw.schedules.play(mw.bob.id, sid, request_id=request_id, expected_revision=1)  # type: ignore[arg-type]
            assert caught.value.field == "request_id"
            with pytest.raises(InvalidInput):
                mw.schedules.control_status(mw.bob.id, sid, request_id)  # type: ignore[arg-type]
            with pytest.raises(InvalidInput):
                mw.schedules.receipt(mw.bob.id, mw.home.id, request_id)  # type: ignore[arg-type]


def test_malformed_expected_revision(mw: MissionWorld) -> None:
    sid = create(mw)
    for expected in (0, -1, True, "1", None):
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.schedules.play(
                mw.bob.id,
                sid,
                request_id="play-0001",
                expected_revision=expected,  # type: ignore[arg-type]
            )
        assert caught.value.field == "expected_revision"


def test_unknown_action_and_schedule_ids(mw: MissionWorld) -> None:
    sid = create(mw)
    with pytest.raises(InvalidInput) as caught:
        mw.schedules.control(mw.bob.id, sid, "restart", request_id="ctl-0001", expected_revision=1)
    assert caught.value.field == "action"
    with pytest.raises(InvalidInput) as caught:
        mw.schedules.detail(mw.bob.id, "not-a-uuid")
    assert caught.value.field == "schedule"
    with nothing_written(mw.store), pytest.raises(NotFound) as missing:
        mw.schedules.play(mw.bob.id, UUID(int=1), request_id="play-0001", expected_revision=1)
    assert missing.value.details["field"] == "schedule"
    with pytest.raises(NotFound):
        mw.schedules.detail(mw.alice.id, UUID(int=1))
    with pytest.raises(NotFound):
        mw.schedules.detail("nobody", sid)


# --- authorization -----------------------------------------------------------------------


def test_viewer_cannot_create_or_control(mw: MissionWorld) -> None:
    sid = create(mw)
    with nothing_written(mw.store):
        with pytest.raises(Forbidden):
            mw.schedules.create(mw.carol.id, mw.home.id, daily_config(), request_id="create-0002")
        for action in ("play", "stop", "run-now", "delete"):
            with pytest.raises(Forbidden):
                mw.schedules.control(
                    mw.carol.id, sid, action, request_id="ctl-carol", expected_revision=1
                )
        with pytest.raises(Forbidden):
            mw.schedules.configure(
                mw.carol.id, sid, {"notes": "n"}, request_id="edit-carol", expected_revision=1
            )
    # Owners and editors may; by handle as well as by ID.
    mw.schedules.play("alice", sid, request_id="play-alice", expected_revision=1)


def test_non_member_can_neither_read_nor_write(mw: MissionWorld) -> None:
    """To a non-member the workspace and its schedules are not there (as unknown IDs)."""
    sid = create(mw)
    with nothing_written(mw.store):
        with pytest.raises(NotFound):
            mw.schedules.detail(mw.dave.id, sid)
        with pytest.raises(NotFound):
            mw.schedules.page(mw.dave.id, mw.home.id)
        with pytest.raises(NotFound):
            mw.schedules.create(mw.dave.id, mw.home.id, daily_config(), request_id="create-dave")
        with pytest.raises(NotFound):
            mw.schedules.play(mw.dave.id, sid, request_id="play-dave", expected_revision=1)
        # A repeat of someone else's request reads nothing back to a stranger either.
        with pytest.raises(NotFound):
            mw.schedules.create(mw.dave.id, mw.home.id, daily_config(), request_id="create-0001")


def test_configure_through_control_needs_changes_too(mw: MissionWorld) -> None:
    schedule_id = create(mw)
    revision = mw.schedules.detail(mw.bob.id, schedule_id)["revision"]
    nothing: tuple[dict[str, Any] | None, ...] = (None, {})
    for changes in nothing:
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.schedules.control(
                mw.bob.id,
                schedule_id,
                "configure",
                request_id="configure-none-0001",
                expected_revision=revision,
                changes=changes,
            )
        assert caught.value.field == "changes"


@pytest.mark.parametrize(
    "overrides",
    [{"title": "bad \ud800 title"}, {"objective": "\udfff"}, {"profile": {"command": ["\ud83d"]}}],
)
def test_lone_surrogates_are_refused_not_stored(
    mw: MissionWorld, overrides: dict[str, Any]
) -> None:
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.create(
            mw.bob.id, mw.home.id, daily_config(**overrides), request_id="create-surrogate-01"
        )
    assert caught.value.field == "config"


@pytest.mark.parametrize("path", ["~no-such-user-kalends/x", "bad\x00path", "x" * 5000])
def test_unusable_workspace_paths_name_the_field(mw: MissionWorld, path: str) -> None:
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.workspaces.add(mw.alice.id, path, "odd")
    assert caught.value.field == "path"
