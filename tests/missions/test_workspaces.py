"""Workspaces: registration of a resolved existing directory once, listing, removal
only without live schedules, member roles and the last owner; on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from kalends.errors import Conflict, Forbidden, InvalidInput, NotFound
from kalends.identity import Role
from kalends.missions.workspaces import OutsideWorkspace
from kalends.storage.mission_tables import schedule_controls, schedules
from kalends.storage.testing import nothing_written
from missions.conftest import MissionWorld
from missions.surgery import control, create


def test_add_resolves_the_path_and_makes_the_actor_owner(mw: MissionWorld, tmp_path: Path) -> None:
    (tmp_path / "repo" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "repo")
    added = mw.workspaces.add(mw.bob.id, tmp_path / "repo" / "sub" / "..")
    assert added.path == str((tmp_path / "repo").resolve())
    assert (added.name, added.role, added.schedules) == ("repo", Role.OWNER, 0)
    # Registered once, however the path is spelled.
    for spelling in (tmp_path / "link", f"{tmp_path}/repo/", tmp_path / "repo" / "."):
        with nothing_written(mw.store), pytest.raises(Conflict) as caught:
            mw.workspaces.add(mw.alice.id, spelling, "again")
        assert caught.value.details["field"] == "path"
        assert caught.value.details["workspace"] == str(added.id)
    got = mw.workspaces.get(mw.bob.id, added.id)
    assert (got.path, got.role) == (added.path, Role.OWNER)
    assert mw.workspaces.get(mw.bob.id, "repo").id == added.id  # by unique name


def test_add_refuses_what_is_not_an_existing_directory(mw: MissionWorld, tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("not a directory")
    for path in (tmp_path / "missing", tmp_path / "file.txt", "", "   "):
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.workspaces.add(mw.alice.id, path)
        assert caught.value.field == "path"
    (tmp_path / "ok").mkdir()
    for name in ("", "   ", "n" * 121):
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.workspaces.add(mw.alice.id, tmp_path / "ok", name)
        assert caught.value.field == "name"


def test_list_shows_only_memberships_with_live_counts(mw: MissionWorld) -> None:
    kept = create(mw, "create-0001")
    gone = create(mw, "create-0002")
    control(mw, gone, "delete", "delete-0001")
    alice = mw.workspaces.list(mw.alice.id)
    assert [(w.name, w.role, w.schedules) for w in alice] == [("home", Role.OWNER, 1)]
    carol = mw.workspaces.list(mw.carol.id)
    assert [(w.name, w.role) for w in carol] == [("home", Role.VIEWER)]
    dave = mw.workspaces.list(mw.dave.id)
    assert [(w.name, w.role, w.schedules) for w in dave] == [("away", Role.OWNER, 0)]
    assert mw.schedules.detail(mw.alice.id, kept)["phase"] == "live"
    with pytest.raises(NotFound):  # a non-member is told what an unknown ID is told
        mw.workspaces.get(mw.dave.id, mw.home.id)
    with pytest.raises(NotFound):
        mw.workspaces.get(mw.alice.id, "no-such-workspace")


def _rows(mw: MissionWorld) -> tuple[int, int]:
    """How many schedule rows and control records the database holds in all."""

    def run(conn: Connection) -> tuple[int, int]:
        return (
            int(conn.execute(select(func.count()).select_from(schedules)).scalar_one()),
            int(conn.execute(select(func.count()).select_from(schedule_controls)).scalar_one()),
        )

    return mw.store.run(run, write=False)


def test_remove_is_refused_while_live_schedules_remain(mw: MissionWorld) -> None:
    sid = create(mw)
    control(mw, sid, "run-now", "run-now-1")
    control(mw, sid, "delete", "delete-0001")  # deleting: the passage is still pending
    with nothing_written(mw.store), pytest.raises(Conflict) as caught:
        mw.workspaces.remove(mw.alice.id, mw.home.id)
    assert caught.value.details["schedules"] == 1
    with pytest.raises(Forbidden):  # editors do not remove workspaces
        mw.workspaces.remove(mw.bob.id, mw.home.id)
    other = create(mw, "create-0002")
    control(mw, other, "delete", "delete-0002")
    assert mw.workspaces.get(mw.alice.id, mw.home.id).schedules == 1

    # An empty workspace goes; the schedules of others stay.
    mw.workspaces.remove(mw.dave.id, mw.away.id)
    assert [w.name for w in mw.workspaces.list(mw.dave.id)] == []
    assert _rows(mw)[0] == 2
    with pytest.raises(NotFound):
        mw.workspaces.get(mw.dave.id, mw.away.id)


def test_visible_schedules_are_those_of_the_actors_workspaces_tombstones_included(
    mw: MissionWorld,
) -> None:
    kept = create(mw, "create-0001")
    gone = create(mw, "create-0002")
    control(mw, gone, "delete", "delete-0001")
    assert mw.workspaces.visible_schedules(mw.carol.id) == {str(kept), str(gone)}
    assert mw.workspaces.visible_schedules(mw.dave.id) == set()  # a member of another only


class TestScopedCalls:
    """A call given its workspace acts only on a schedule of that workspace, checked
    before anything else and with nothing written."""

    def test_a_scoped_call_acts_on_a_schedule_of_its_workspace(self, mw: MissionWorld) -> None:
        sid = create(mw)
        scope = mw.home.id
        assert mw.schedules.detail(mw.carol.id, sid, workspace=scope)["id"] == str(sid)
        assert mw.schedules.preview(mw.carol.id, sid, 2, workspace=scope) is not None
        mw.schedules.within(mw.carol.id, scope, sid)
        outcome = mw.schedules.control(
            mw.bob.id, sid, "play", request_id="play-0001", expected_revision=1, workspace=scope
        )
        assert outcome.revision == 2
        status = mw.schedules.control_status(mw.bob.id, sid, "play-0001", workspace=scope)
        assert status.status == "applied"

    def test_a_schedule_of_another_workspace_is_outside_it(self, mw: MissionWorld) -> None:
        sid = create(mw)
        away = mw.workspaces.list(mw.dave.id)[0].id
        mw.workspaces.set_member(mw.dave.id, away, mw.bob.id, "editor")
        with nothing_written(mw.store), pytest.raises(OutsideWorkspace) as caught:
            mw.schedules.control(
                mw.bob.id, sid, "play", request_id="play-0001", expected_revision=1, workspace=away
            )
        assert (caught.value.schedule, caught.value.workspace) == (sid, away)
        assert caught.value.details["field"] == "schedule"
        with pytest.raises(OutsideWorkspace):
            mw.schedules.detail(mw.bob.id, sid, workspace=away)

    def test_a_workspace_the_caller_is_no_member_of_is_not_found_before_any_check(
        self, mw: MissionWorld
    ) -> None:
        sid = create(mw)
        with nothing_written(mw.store), pytest.raises(NotFound) as caught:
            # (empty changes would be refused, but the scope is checked first)
            mw.schedules.configure(
                mw.dave.id,
                sid,
                {},
                request_id="edit-0001",
                expected_revision=1,
                workspace=mw.home.id,
            )
        assert caught.value.details["field"] == "workspace"
        assert not isinstance(caught.value, OutsideWorkspace)


def test_remove_of_a_workspace_holding_only_tombstones(mw: MissionWorld) -> None:
    sid = create(mw)
    control(mw, sid, "delete", "delete-0001")
    assert _rows(mw) == (1, 1)  # the tombstone and its delete record
    mw.workspaces.remove(mw.alice.id, mw.home.id)
    assert _rows(mw) == (0, 0)
    with pytest.raises(NotFound):
        mw.schedules.detail(mw.alice.id, sid)


def test_member_roles(mw: MissionWorld) -> None:
    members = mw.workspaces.members(mw.carol.id, mw.home.id)
    assert [(m.handle, m.role) for m in members] == [
        ("alice", Role.OWNER),
        ("bob", Role.EDITOR),
        ("carol", Role.VIEWER),
    ]
    with nothing_written(mw.store):
        with pytest.raises(Forbidden):  # only owners manage members
            mw.workspaces.set_member(mw.bob.id, mw.home.id, mw.dave.id, Role.VIEWER)
        with pytest.raises(InvalidInput) as caught:
            mw.workspaces.set_member(mw.alice.id, mw.home.id, mw.dave.id, "admin")
        assert caught.value.field == "role"
        with pytest.raises(NotFound):
            mw.workspaces.set_member(mw.alice.id, mw.home.id, "nobody", Role.VIEWER)
        with pytest.raises(NotFound):
            mw.workspaces.remove_member(mw.alice.id, mw.home.id, mw.dave.id)
    added = mw.workspaces.set_member(mw.alice.id, mw.home.id, "dave", "viewer")
    assert (added.handle, added.role) == ("dave", Role.VIEWER)
    mw.schedules.page(mw.dave.id, mw.home.id)  # dave may read now
    mw.workspaces.set_member(mw.alice.id, mw.home.id, mw.carol.id, Role.EDITOR)
    carol = create(mw)
    mw.schedules.play(mw.carol.id, carol, request_id="play-carol", expected_revision=1)
    mw.workspaces.remove_member(mw.alice.id, mw.home.id, mw.dave.id)
    with pytest.raises(NotFound):
        mw.schedules.page(mw.dave.id, mw.home.id)


def test_the_last_owner_cannot_be_demoted_or_removed(mw: MissionWorld) -> None:
    with nothing_written(mw.store):
        for role in (Role.EDITOR, Role.VIEWER):
            with pytest.raises(Conflict) as caught:
                mw.workspaces.set_member(mw.alice.id, mw.home.id, mw.alice.id, role)
            assert caught.value.details["field"] == "member"
        with pytest.raises(Conflict):
            mw.workspaces.remove_member(mw.alice.id, mw.home.id, mw.alice.id)
    # With a second owner, the first may step down.
    mw.workspaces.set_member(mw.alice.id, mw.home.id, mw.bob.id, Role.OWNER)
    mw.workspaces.set_member(mw.alice.id, mw.home.id, mw.alice.id, Role.EDITOR)
    with pytest.raises(Forbidden):  # alice is no longer an owner
        mw.workspaces.set_member(mw.alice.id, mw.home.id, mw.alice.id, Role.OWNER)
    with pytest.raises(Conflict):
        mw.workspaces.remove_member(mw.bob.id, mw.home.id, mw.bob.id)
    roles = {m.handle: m.role for m in mw.workspaces.members(mw.bob.id, mw.home.id)}
    assert roles == {"alice": Role.EDITOR, "bob": Role.OWNER, "carol": Role.VIEWER}
