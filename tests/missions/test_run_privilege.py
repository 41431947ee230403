"""Who may define what runs (SPEC §4, issue 16 §1): creating a schedule, or changing its
profile's command, ``env`` or ``cwd``, needs the run privilege, which the server's owner
account holds and grants; a workspace editor without it edits everything else. And the
names a profile's environment may not set. On both backends; every refusal writes
nothing."""

from __future__ import annotations

from typing import Any

import pytest

from kalends.auth import Accounts
from kalends.auth.grants import Privilege
from kalends.errors import Forbidden, InvalidInput, NotFound, RunPrivilegeRequired
from kalends.identity import Role
from kalends.missions.config import config_from_json, dump_config, load_config
from kalends.storage.testing import nothing_written
from missions.conftest import MissionWorld, daily_config
from missions.surgery import create, revision


def _without_run(mw: MissionWorld) -> None:
    """bob, an editor of home, loses the grant the suite's world gives him."""
    assert not mw.services.grants.revoke(mw.bob.id, Privilege.RUN).may_run


def _configure(mw: MissionWorld, sid: Any, changes: dict[str, Any], request_id: str) -> int:
    out = mw.schedules.configure(
        mw.bob.id, sid, changes, request_id=request_id, expected_revision=revision(mw, sid)
    )
    return out.revision


class TestCreating:
    def test_an_editor_without_the_run_privilege_cannot_create_a_schedule(
        self, mw: MissionWorld
    ) -> None:
        _without_run(mw)
        with nothing_written(mw.store), pytest.raises(RunPrivilegeRequired) as refused:
            mw.schedules.create(mw.bob.id, mw.home.id, daily_config(), request_id="create-0001")
        assert refused.value.code == "run-privilege-required"
        assert isinstance(refused.value, Forbidden)
        assert "creating a schedule needs the run privilege" in refused.value.message
        assert "kalends actor grant run" in refused.value.message

    def test_an_editor_granted_the_run_privilege_creates_a_schedule(self, mw: MissionWorld) -> None:
        _without_run(mw)
        assert mw.services.grants.grant(mw.bob.handle, "run").may_run
        sid = create(mw)
        assert mw.schedules.detail(mw.bob.id, sid)["state"] == "paused"

    def test_revoking_the_run_privilege_takes_creating_away(self, mw: MissionWorld) -> None:
        create(mw, "create-0001")
        _without_run(mw)
        with nothing_written(mw.store), pytest.raises(RunPrivilegeRequired):
            create(mw, "create-0002")

    def test_a_viewer_is_refused_for_the_role_whatever_privilege_they_hold(
        self, mw: MissionWorld
    ) -> None:
        mw.services.grants.grant(mw.carol.id, Privilege.RUN)
        with nothing_written(mw.store), pytest.raises(Forbidden) as refused:
            mw.schedules.create(mw.carol.id, mw.home.id, daily_config(), request_id="create-0001")
        assert not isinstance(refused.value, RunPrivilegeRequired)

    def test_the_servers_owner_account_holds_the_run_privilege_without_a_grant(
        self, mw: MissionWorld
    ) -> None:
        erin = mw.services.directory.add_actor("erin", "Erin")
        mw.workspaces.set_member(mw.alice.id, mw.home.id, erin.id, Role.EDITOR)
        assert not mw.services.grants.standing(erin.id).may_run
        Accounts(mw.store).bootstrap_owner("erin", "Erin")
        assert mw.services.grants.standing(erin.id).may_run
        # Revoking changes nothing for the owner account: it holds every privilege.
        assert mw.services.grants.revoke(erin.id, Privilege.RUN).may_run
        receipt = mw.schedules.create(erin.id, mw.home.id, daily_config(), request_id="erin-0001")
        assert receipt.status == "created"


class TestConfiguring:
    @pytest.mark.parametrize(
        "profile",
        [
            # another command
            {"command": ["sh", "-c", "cat /etc/passwd"], "cwd": "."},
            # another environment (named, so it replaces the stored one)
            {"command": ["echo", "hello"], "env": {"PATH": "/tmp/evil"}, "cwd": "."},
            # the environment cleared
            {"command": ["echo", "hello"], "env": {}, "cwd": "."},
            # another directory
            {"command": ["echo", "hello"], "cwd": "scripts"},
        ],
        ids=["command", "env", "env-cleared", "cwd"],
    )
    def test_an_editor_without_the_run_privilege_cannot_change_the_profile(
        self, mw: MissionWorld, profile: dict[str, Any]
    ) -> None:
        sid = create(mw)
        _without_run(mw)
        with nothing_written(mw.store), pytest.raises(RunPrivilegeRequired) as refused:
            _configure(mw, sid, {"profile": profile}, "edit-0001")
        assert "changing a schedule's command, env or cwd" in refused.value.message

    def test_an_editor_without_the_run_privilege_edits_everything_but_the_profile(
        self, mw: MissionWorld
    ) -> None:
        sid = create(mw)
        _without_run(mw)
        changes: dict[str, Any] = {
            "title": "Evening report",
            "objective": "Summarise today's commits.",
            "notes": "Skip merge commits.",
            "policy": {"kind": "daily", "time": "18:30", "zone": "Europe/Berlin"},
            "end": {"until": None, "within": {"days": 30}, "maxPassages": 10},
            "condition": {"kind": "files", "paths": ["src"]},
            "template": [{"title": "Read logs"}],
            "restart": "interrupt",
        }
        for n, (name, value) in enumerate(changes.items()):
            _configure(mw, sid, {name: value}, f"edit-{n:04d}")
        detail = mw.schedules.detail(mw.bob.id, sid)
        assert (detail["title"], detail["objective"], detail["restart"]) == (
            "Evening report",
            "Summarise today's commits.",
            "interrupt",
        )
        assert detail["profile"] == {
            "command": ["echo", "hello"],
            "envNames": ["API_TOKEN"],
            "cwd": ".",
        }

    def test_restating_the_profile_unchanged_needs_no_privilege(self, mw: MissionWorld) -> None:
        sid = create(mw)
        _without_run(mw)
        # No env named: the stored one is kept, so the profile is the same as before.
        same = {"command": ["echo", "hello"], "cwd": "."}
        _configure(mw, sid, {"profile": same, "objective": "Again."}, "edit-0001")
        assert mw.schedules.detail(mw.bob.id, sid)["objective"] == "Again."

    def test_an_editor_granted_the_run_privilege_changes_the_profile_and_revoking_stops_it(
        self, mw: MissionWorld
    ) -> None:
        sid = create(mw)
        _configure(mw, sid, {"profile": {"command": ["make", "nightly"]}}, "edit-0001")
        assert mw.schedules.detail(mw.bob.id, sid)["profile"]["command"] == ["make", "nightly"]
        _without_run(mw)
        with nothing_written(mw.store), pytest.raises(RunPrivilegeRequired):
            _configure(mw, sid, {"profile": {"command": ["make", "other"]}}, "edit-0002")


class TestEnvironmentNames:
    @pytest.mark.parametrize(
        "name",
        [
            "LD_PRELOAD",  # the attack of issue 16: a library loaded into every program
            "PYTHONPATH",  # modules shadowed in kalends' own shim
            "ld_library_path",  # names are compared in any case
            "PythonStartup",
            "LD_AUDIT",
        ],
    )
    def test_loader_and_python_variables_are_refused_in_a_profile(
        self, mw: MissionWorld, name: str
    ) -> None:
        profile = {"command": ["echo", "hello"], "env": {name: "/tmp/x.so"}}
        with nothing_written(mw.store), pytest.raises(InvalidInput) as refused:
            mw.schedules.create(
                mw.bob.id, mw.home.id, daily_config(profile=profile), request_id="create-0001"
            )
        assert refused.value.field == "profile.env"
        assert refused.value.code == "invalid-input"
        assert repr(name) in refused.value.message
        sid = create(mw, "create-0002")
        with pytest.raises(InvalidInput) as refused:
            _configure(mw, sid, {"profile": profile}, "edit-0001")
        assert refused.value.field == "profile.env"
        detail = mw.schedules.detail(mw.bob.id, sid)
        assert (detail["revision"], detail["profile"]["envNames"]) == (1, ["API_TOKEN"])

    @pytest.mark.parametrize(
        "name",
        [
            "PATH",  # a profile may choose its programs' search path
            "CI",
            "MY_LD_HOME",  # only a leading LD_ or PYTHON is refused
            "MY_PYTHONPATH",
        ],
    )
    def test_other_names_are_kept(self, name: str) -> None:
        profile = {"command": ["true"], "env": {name: "1"}}
        assert config_from_json(daily_config(profile=profile)).profile.env == ((name, "1"),)

    def test_a_stored_profile_from_before_the_rule_still_reads(self) -> None:
        # A document written before the rule reads (so it can be edited or deleted); only
        # a caller's configuration is refused.
        stored = config_from_json(daily_config(), new=True)
        text = dump_config(stored).replace('"API_TOKEN"', '"LD_PRELOAD"')
        assert load_config(text).profile.env == (("LD_PRELOAD", "s3cret"),)


class TestGrants:
    def test_granting_an_unknown_actor_is_not_found_and_writes_nothing(
        self, mw: MissionWorld
    ) -> None:
        with nothing_written(mw.store), pytest.raises(NotFound):
            mw.services.grants.grant("nobody", Privilege.RUN)

    def test_granting_and_revoking_twice_changes_nothing_more(self, mw: MissionWorld) -> None:
        grants = mw.services.grants
        assert grants.grant(mw.carol.id, "run").may_run
        with nothing_written(mw.store):
            assert grants.grant(mw.carol.handle, "run").may_run
        assert not grants.revoke(mw.carol.id, "run").may_run
        with nothing_written(mw.store):
            assert not grants.revoke(mw.carol.id, "run").may_run

    def test_an_unknown_privilege_is_bad_input(self, mw: MissionWorld) -> None:
        with pytest.raises(InvalidInput) as refused:
            mw.services.grants.grant(mw.carol.id, "root")
        assert refused.value.field == "privilege"

    def test_the_listing_shows_who_may_run(self, mw: MissionWorld) -> None:
        listed = {a.actor.handle: a.may_run for a in mw.services.grants.actors()}
        assert listed == {"alice": True, "bob": True, "carol": False, "dave": True}
        assert mw.services.grants.actors()[0].to_json() == {
            **mw.alice.to_json(),
            "mayRun": True,
        }
