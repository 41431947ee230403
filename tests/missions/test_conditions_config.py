"""What a source condition may name, checked when a caller gives it: schedules of the same
workspace (live, not itself, one-shot for mission-completed, no schedule-succeeded cycle)
and paths inside the workspace (a git repository for git-branch). Each refusal names its
field and writes nothing; a cycle closed by edits in another order is refused at Play.
On both backends."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select, update

from kalends.errors import ControlConflict, InvalidInput
from kalends.storage.mission_tables import schedules
from kalends.storage.testing import nothing_written
from missions.condition_support import Repo
from missions.conftest import MissionWorld
from missions.refusal_support import only_the_refusal_recorded
from missions.surgery import create, revision

AT = {"kind": "at", "local": "2025-03-02T09:00:00", "zone": "UTC"}


def _refused_create(mw: MissionWorld, condition: dict[str, Any], field: str) -> InvalidInput:
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.create(
            mw.bob.id,
            mw.home.id,
            {**_config(), "condition": condition},
            request_id="create-bad",
        )
    assert caught.value.field == field, caught.value.message
    assert caught.value.message.startswith(field), caught.value.message
    return caught.value


def _refused_edit(mw: MissionWorld, sid: UUID, condition: dict[str, Any]) -> InvalidInput:
    with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
        mw.schedules.configure(
            mw.bob.id,
            sid,
            {"condition": condition},
            request_id="edit-bad-0001",
            expected_revision=revision(mw, sid),
        )
    return caught.value


def _config() -> dict[str, Any]:
    return {
        "title": "Follow-up",
        "profile": {"command": ["echo", "hello"]},
        "policy": {"kind": "daily", "time": "09:00", "zone": "UTC"},
    }


def _edit(mw: MissionWorld, sid: UUID, condition: dict[str, Any], request_id: str) -> None:
    mw.schedules.configure(
        mw.bob.id,
        sid,
        {"condition": condition},
        request_id=request_id,
        expected_revision=revision(mw, sid),
    )


def _after(sid: UUID) -> dict[str, Any]:
    return {"kind": "schedule-succeeded", "missionId": str(sid)}


def _home(mw: MissionWorld) -> Path:
    return Path(mw.home.path)


class TestNamedSchedules:
    def test_a_live_schedule_of_the_same_workspace_is_accepted(self, mw: MissionWorld) -> None:
        first = create(mw)
        one_shot = create(mw, "create-0002", policy=AT)
        create(mw, "create-0003", condition=_after(first))
        create(
            mw,
            "create-0004",
            condition={"kind": "mission-completed", "missionId": str(one_shot)},
        )

    @pytest.mark.parametrize(
        "kind",
        [
            "schedule-succeeded",  # another schedule's success
            "mission-completed",  # a one-shot's completion
        ],
    )
    def test_an_unknown_schedule_is_refused(self, mw: MissionWorld, kind: str) -> None:
        missing = "0190a0a0-0000-7000-8000-000000000000"
        error = _refused_create(mw, {"kind": kind, "missionId": missing}, "condition.missionId")
        assert "no schedule" in error.message

    def test_a_mission_id_that_is_no_uuid_is_refused(self, mw: MissionWorld) -> None:
        _refused_create(
            mw, {"kind": "schedule-succeeded", "missionId": "nightly"}, "condition.missionId"
        )

    def test_a_schedule_of_another_workspace_reads_as_unknown(
        self, mw: MissionWorld, tmp_path: Path
    ) -> None:
        (tmp_path / "elsewhere").mkdir()
        other = mw.workspaces.add(mw.bob.id, tmp_path / "elsewhere", "elsewhere")
        receipt = mw.schedules.create(mw.bob.id, other.id, _config(), request_id="create-other")
        assert receipt.mission_id is not None
        error = _refused_create(mw, _after(receipt.mission_id), "condition.missionId")
        assert "no schedule" in error.message

    def test_a_deleted_schedule_is_refused(self, mw: MissionWorld) -> None:
        gone = create(mw)
        mw.schedules.delete(mw.bob.id, gone, request_id="delete-0001", expected_revision=1)
        _refused_create(mw, _after(gone), "condition.missionId")

    def test_mission_completed_names_a_one_shot_schedule(self, mw: MissionWorld) -> None:
        daily = create(mw)
        error = _refused_create(
            mw, {"kind": "mission-completed", "missionId": str(daily)}, "condition.missionId"
        )
        assert "one-shot" in error.message

    def test_a_schedule_may_not_name_itself(self, mw: MissionWorld) -> None:
        sid = create(mw)
        error = _refused_edit(mw, sid, _after(sid))
        assert error.field == "condition.missionId"
        assert "itself" in error.message

    def test_a_cycle_of_schedule_succeeded_conditions_is_refused_when_configured(
        self, mw: MissionWorld
    ) -> None:
        a = create(mw)
        b = create(mw, "create-0002", condition=_after(a))
        c = create(mw, "create-0003", condition=_after(b))
        error = _refused_edit(mw, a, _after(c))
        assert error.field == "condition.missionId"
        assert "cycle" in error.message

    def test_an_edit_of_another_field_keeps_a_stored_condition_whose_target_is_gone(
        self, mw: MissionWorld
    ) -> None:
        target = create(mw)
        sid = create(mw, "create-0002", condition=_after(target))
        mw.schedules.delete(mw.bob.id, target, request_id="delete-0001", expected_revision=1)
        mw.schedules.configure(
            mw.bob.id, sid, {"title": "Renamed"}, request_id="edit-0001", expected_revision=1
        )

    def test_a_cycle_closed_by_edits_in_another_order_is_refused_at_play(
        self, mw: MissionWorld
    ) -> None:
        a = create(mw)
        b = create(mw, "create-0002", condition=_after(a))
        # Simulate the race: a's edit checked b before b named a; write a's condition
        # directly as a concurrent edit would have left it.
        _store_condition(mw, a, _after(b))
        refused = pytest.raises(ControlConflict)
        with only_the_refusal_recorded(mw.store, "play-0001"), refused as caught:
            mw.schedules.play(mw.bob.id, a, request_id="play-0001", expected_revision=1)
        assert caught.value.details["reason"] == "source-cycle"
        # The refusal is the request's answer: a repeat gets it again.
        with pytest.raises(ControlConflict) as again:
            mw.schedules.play(mw.bob.id, a, request_id="play-0001", expected_revision=1)
        assert again.value.details["reason"] == "source-cycle"


def _store_condition(mw: MissionWorld, sid: UUID, condition: dict[str, Any]) -> None:
    """Writes ``condition`` into the stored configuration of ``sid``, as a concurrent edit
    checked against an older state of its target would have."""
    with mw.store.transaction() as conn:
        text = conn.execute(select(schedules.c.config).where(schedules.c.id == sid)).scalar_one()
        data = json.loads(text)
        data["condition"] = condition
        conn.execute(update(schedules).where(schedules.c.id == sid).values(config=json.dumps(data)))


class TestPaths:
    def test_files_may_name_missing_files_inside_the_workspace(self, mw: MissionWorld) -> None:
        (_home(mw) / "present.txt").write_text("x")
        create(mw, condition={"kind": "files", "paths": ["present.txt", "later/absent.txt"]})

    def test_files_through_a_symlink_leaving_the_workspace_are_refused(
        self, mw: MissionWorld, tmp_path: Path
    ) -> None:
        (tmp_path / "outside").mkdir()
        os.symlink(tmp_path / "outside", _home(mw) / "escape")
        error = _refused_create(
            mw, {"kind": "files", "paths": ["ok.txt", "escape/secret"]}, "condition.paths[1]"
        )
        assert "outside the workspace" in error.message

    def test_a_symlink_staying_inside_the_workspace_is_accepted(self, mw: MissionWorld) -> None:
        (_home(mw) / "real").mkdir()
        os.symlink("real", _home(mw) / "alias")
        create(mw, condition={"kind": "files", "paths": ["alias/file"]})

    def test_git_branch_needs_an_existing_repository(self, mw: MissionWorld) -> None:
        error = _refused_create(
            mw, {"kind": "git-branch", "branch": "main", "path": "repo"}, "condition.path"
        )
        assert "not a directory" in error.message
        (_home(mw) / "repo").mkdir()
        error = _refused_create(
            mw, {"kind": "git-branch", "branch": "main", "path": "repo"}, "condition.path"
        )
        assert "not a git repository" in error.message

    def test_git_branch_accepts_a_work_tree_and_a_bare_repository(self, mw: MissionWorld) -> None:
        tree = Repo(_home(mw) / "tree")
        create(mw, condition={"kind": "git-branch", "branch": "main", "path": "tree"})
        tree.git("clone", "-q", "--bare", str(tree.path), str(_home(mw) / "bare.git"))
        create(
            mw,
            "create-0002",
            condition={"kind": "git-branch", "branch": "main", "path": "bare.git"},
        )

    def test_git_branch_naming_a_branch_the_repository_lacks_is_refused(
        self, mw: MissionWorld
    ) -> None:
        Repo(_home(mw) / "tree")
        error = _refused_create(
            mw, {"kind": "git-branch", "branch": "release", "path": "tree"}, "condition.branch"
        )
        assert "no local branch 'release'" in error.message

    def test_a_directory_that_only_looks_like_a_repository_is_refused(
        self, mw: MissionWorld
    ) -> None:
        (_home(mw) / "fake" / ".git").mkdir(parents=True)
        _refused_create(
            mw, {"kind": "git-branch", "branch": "main", "path": "fake"}, "condition.path"
        )

    def test_git_branch_through_a_symlink_leaving_the_workspace_is_refused(
        self, mw: MissionWorld, tmp_path: Path
    ) -> None:
        (tmp_path / "other" / ".git").mkdir(parents=True)
        os.symlink(tmp_path / "other", _home(mw) / "other")
        _refused_create(
            mw, {"kind": "git-branch", "branch": "main", "path": "other"}, "condition.path"
        )

    def test_an_edit_is_checked_as_a_creation_is(self, mw: MissionWorld) -> None:
        sid = create(mw)
        error = _refused_edit(mw, sid, {"kind": "git-branch", "branch": "main", "path": "."})
        assert error.field == "condition.path"


class TestPolicies:
    def test_an_immediate_schedule_with_a_condition_is_refused(self, mw: MissionWorld) -> None:
        (_home(mw) / "notes.txt").write_text("x\n")
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.schedules.create(
                mw.bob.id,
                mw.home.id,
                {
                    **_config(),
                    "policy": {"kind": "immediate"},
                    "condition": {"kind": "files", "paths": ["notes.txt"]},
                },
                request_id="create-bad",
            )
        assert caught.value.field == "condition"
        assert "could never hold" in caught.value.message

    def test_a_cycle_through_a_mission_completed_link_is_refused(self, mw: MissionWorld) -> None:
        once = mw.schedules.create(
            mw.bob.id,
            mw.home.id,
            {**_config(), "policy": {"kind": "after", "minutes": 30}},
            request_id="create-once",
        ).mission_id
        follower = mw.schedules.create(
            mw.bob.id,
            mw.home.id,
            {**_config(), "condition": {"kind": "mission-completed", "missionId": str(once)}},
            request_id="create-follower",
        ).mission_id
        assert once is not None and follower is not None
        error = _refused_edit(mw, once, {"kind": "schedule-succeeded", "missionId": str(follower)})
        assert error.field == "condition.missionId"
        assert "lead back" in error.message
