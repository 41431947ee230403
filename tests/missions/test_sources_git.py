"""The ``git-branch`` source reader against real repositories made by the tests."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kalends.errors import InvalidInput
from kalends.missions.config_condition import parse_condition
from kalends.missions.sources import (
    BlockReason,
    Budget,
    CommitProof,
    Observation,
    SourceBlocked,
    commits_between,
    observe,
    read_branch,
)

AT = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def git(repo: Path, *args: str) -> str:
    """Runs the test's own git in ``repo`` with an environment of its own."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.org",
            "-C",
            str(repo),
            *args,
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def make_repo(path: Path, *subjects: str) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for subject in subjects:
        commit(path, subject)
    return path


def commit(repo: Path, subject: str) -> str:
    git(repo, "commit", "-q", "--allow-empty", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def budget() -> Budget:
    return Budget.start()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def app(workspace: Path) -> Path:
    return make_repo(workspace / "app", "first")


def stand_in(tmp_path: Path, body: str) -> str:
    """A program standing in for a git that hangs: a real executable the reader runs."""
    script = tmp_path / "hanging-git"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


class TestTheBranchCommit:
    def test_the_observation_is_the_local_branchs_commit(self, workspace: Path, app: Path) -> None:
        seen = read_branch("main", "app", workspace, budget(), at=AT)
        assert seen == Observation(
            kind="git-branch", checkpoint=git(app, "rev-parse", "main"), observed_at=AT
        )

    def test_a_new_commit_changes_the_checkpoint(self, workspace: Path, app: Path) -> None:
        before = read_branch("main", "app", workspace, budget(), at=AT)
        after_commit = commit(app, "second")
        after = read_branch("main", "app", workspace, budget(), at=AT)
        assert isinstance(before, Observation) and isinstance(after, Observation)
        assert before.checkpoint != after.checkpoint
        assert after.checkpoint == after_commit

    def test_a_branch_other_than_the_checked_out_one_is_read(
        self, workspace: Path, app: Path
    ) -> None:
        git(app, "branch", "release")
        moved = commit(app, "on main only")
        release = read_branch("release", "app", workspace, budget(), at=AT)
        assert isinstance(release, Observation)
        assert release.checkpoint != moved

    def test_a_link_to_a_repository_inside_the_workspace_is_followed(
        self, workspace: Path, app: Path
    ) -> None:
        (workspace / "current").symlink_to("app")
        seen = read_branch("main", "current", workspace, budget(), at=AT)
        assert isinstance(seen, Observation)
        assert seen.checkpoint == git(app, "rev-parse", "main")

    def test_observe_reads_a_configured_condition(self, workspace: Path, app: Path) -> None:
        condition = parse_condition({"kind": "git-branch", "branch": "main", "path": "app"})
        assert condition is not None
        seen = observe(condition, workspace, budget(), at=AT)
        assert isinstance(seen, Observation)
        assert seen.checkpoint == git(app, "rev-parse", "main")


class TestTheProof:
    def test_the_proof_lists_the_commits_between_newest_first(
        self, workspace: Path, app: Path
    ) -> None:
        baseline = git(app, "rev-parse", "main")
        second = commit(app, "second")
        third = commit(app, "third")
        proof = commits_between(baseline, third, "app", workspace, budget(), at=AT)
        assert isinstance(proof, CommitProof)
        assert [(c.sha, c.subject) for c in proof.commits] == [(third, "third"), (second, "second")]
        assert not proof.truncated

    def test_a_proof_over_its_limit_says_it_was_cut(self, workspace: Path, app: Path) -> None:
        baseline = git(app, "rev-parse", "main")
        for n in range(3):
            last = commit(app, f"change {n}")
        proof = commits_between(baseline, last, "app", workspace, budget(), at=AT, limit=2)
        assert isinstance(proof, CommitProof)
        assert [c.subject for c in proof.commits] == ["change 2", "change 1"]
        assert proof.truncated

    def test_a_baseline_the_repository_lost_lists_the_observed_history(
        self, workspace: Path, app: Path
    ) -> None:
        head = commit(app, "second")
        proof = commits_between("f" * 40, head, "app", workspace, budget(), at=AT)
        assert isinstance(proof, CommitProof)
        assert [c.subject for c in proof.commits] == ["second", "first"]

    def test_a_proof_keeps_its_value_through_json(self, workspace: Path, app: Path) -> None:
        baseline = git(app, "rev-parse", "main")
        proof = commits_between(baseline, commit(app, "second"), "app", workspace, budget(), at=AT)
        assert isinstance(proof, CommitProof)
        assert CommitProof.from_json(proof.to_json()) == proof

    def test_a_commit_id_that_is_not_one_is_refused(self, workspace: Path, app: Path) -> None:
        with pytest.raises(InvalidInput):
            commits_between("--all", "a" * 40, "app", workspace, budget(), at=AT)


class TestMissingSources:
    def test_a_missing_repository_is_source_missing(self, workspace: Path) -> None:
        seen = read_branch("main", "gone", workspace, budget(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_MISSING

    def test_a_missing_branch_is_source_missing(self, workspace: Path, app: Path) -> None:
        seen = read_branch("nope", "app", workspace, budget(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_MISSING
        assert "nope" in seen.detail

    def test_a_remote_tracking_branch_is_not_a_local_branch(
        self, workspace: Path, app: Path
    ) -> None:
        git(app, "update-ref", "refs/remotes/origin/feature", "HEAD")
        seen = read_branch("feature", "app", workspace, budget(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_MISSING

    def test_a_plain_directory_inside_a_checkout_is_not_a_repository(self, workspace: Path) -> None:
        make_repo(workspace / "outer", "outer")
        (workspace / "outer" / "docs").mkdir()
        seen = read_branch("main", "outer/docs", workspace, budget(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_MISSING

    def test_a_gone_workspace_is_source_missing(self, tmp_path: Path) -> None:
        seen = read_branch("main", ".", tmp_path / "never", budget(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_MISSING


class TestEscapes:
    def test_a_repository_linked_from_outside_the_workspace_is_refused(
        self, tmp_path: Path, workspace: Path
    ) -> None:
        make_repo(tmp_path / "elsewhere", "secret")
        (workspace / "app").symlink_to(tmp_path / "elsewhere")
        seen = read_branch("main", "app", workspace, budget(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_UNREADABLE
        assert "outside the workspace" in seen.detail

    def test_a_gitdir_file_pointing_outside_the_workspace_is_refused(
        self, tmp_path: Path, workspace: Path
    ) -> None:
        # What a linked worktree has: a .git file naming the repository it belongs to. A
        # passage could write one to aim the proof at another repository of the machine.
        elsewhere = make_repo(tmp_path / "elsewhere", "secret")
        inside = workspace / "app"
        inside.mkdir()
        (inside / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
        seen = read_branch("main", "app", workspace, budget(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_UNREADABLE
        assert "outside the workspace" in seen.detail

    def test_a_linked_worktree_inside_the_workspace_is_read(
        self, workspace: Path, app: Path
    ) -> None:
        git(app, "worktree", "add", "-q", "-b", "side", str(workspace / "side"))
        seen = read_branch("main", "side", workspace, budget(), at=AT)
        assert isinstance(seen, Observation)
        assert seen.checkpoint == git(app, "rev-parse", "main")

    def test_a_path_leaving_through_dot_dot_is_refused(
        self, tmp_path: Path, workspace: Path
    ) -> None:
        make_repo(tmp_path / "elsewhere", "secret")
        seen = read_branch("main", "../elsewhere", workspace, budget(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_UNREADABLE

    def test_git_variables_of_the_servers_environment_do_not_reach_the_read(
        self, tmp_path: Path, workspace: Path, app: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        other = make_repo(tmp_path / "other", "other", "history")
        assert git(other, "rev-parse", "main") != git(app, "rev-parse", "main")
        monkeypatch.setenv("GIT_DIR", str(other / ".git"))
        monkeypatch.setenv("GIT_WORK_TREE", str(other))
        seen = read_branch("main", "app", workspace, budget(), at=AT)
        assert isinstance(seen, Observation)
        assert seen.checkpoint == git(app, "--git-dir", str(app / ".git"), "rev-parse", "main")


class TestTheBudget:
    def test_a_spent_budget_starts_no_git(self, tmp_path: Path, workspace: Path, app: Path) -> None:
        marker = tmp_path / "ran"
        program = stand_in(tmp_path, f"touch {marker}")
        ticks = iter([0.0, 100.0, 100.0, 100.0])
        spent = Budget.start(10, monotonic=lambda: next(ticks))
        seen = read_branch("main", "app", workspace, spent, at=AT, git=program)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_UNREADABLE
        assert not marker.exists()

    def test_a_git_outliving_the_budget_is_killed(
        self, tmp_path: Path, workspace: Path, app: Path
    ) -> None:
        pid_file = tmp_path / "pid"
        program = stand_in(tmp_path, f"echo $$ > {pid_file}\nexec sleep 30")
        began = time.monotonic()
        seen = read_branch("main", "app", workspace, Budget.start(0.5), at=AT, git=program)
        assert time.monotonic() - began < 5
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_UNREADABLE
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text()), 0)

    def test_a_cancelled_budget_stops_a_running_git(
        self, tmp_path: Path, workspace: Path, app: Path
    ) -> None:
        program = stand_in(tmp_path, "exec sleep 30")
        shared = Budget.start(30)
        threading.Timer(0.2, shared.cancel).start()
        began = time.monotonic()
        seen = read_branch("main", "app", workspace, shared, at=AT, git=program)
        assert time.monotonic() - began < 5
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_UNREADABLE

    def test_a_missing_git_executable_is_unreadable(self, workspace: Path, app: Path) -> None:
        seen = read_branch("main", "app", workspace, budget(), at=AT, git="no-such-git-here")
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_UNREADABLE


class TestValues:
    def test_a_blocked_read_keeps_its_value_through_json(self, workspace: Path) -> None:
        seen = read_branch("main", "gone", workspace, budget(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.to_json()["blockReason"] == "source-missing"
        assert SourceBlocked.from_json(seen.to_json()) == seen

    def test_an_observation_keeps_its_value_through_json(self, workspace: Path, app: Path) -> None:
        seen = read_branch("main", "app", workspace, budget(), at=AT)
        assert isinstance(seen, Observation)
        assert Observation.from_json(seen.to_json()) == seen

    def test_a_naive_instant_is_refused(self, workspace: Path, app: Path) -> None:
        with pytest.raises(InvalidInput):
            read_branch("main", "app", workspace, budget(), at=datetime(2026, 3, 1, 9, 0))

    def test_a_condition_not_read_from_the_workspace_is_refused(self, workspace: Path) -> None:
        condition = parse_condition({"kind": "schedule-succeeded", "missionId": "m-1"})
        assert condition is not None
        with pytest.raises(InvalidInput):
            observe(condition, workspace, budget(), at=AT)
