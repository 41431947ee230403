"""The ``files`` source reader against real files, links and pipes in a temporary workspace."""

from __future__ import annotations

import hashlib
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kalends.missions.config_condition import parse_condition
from kalends.missions.sources import (
    BlockReason,
    Budget,
    FilesChange,
    Observation,
    SourceBlocked,
    files_change,
    observe,
    read_files,
)
from kalends.missions.sources.files import CHUNK_BYTES

AT = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "conf").mkdir()
    (root / "conf" / "b.toml").write_text("beta = 1\n")
    return root


def read(workspace: Path, *paths: str, max_bytes: int | None = None) -> Observation:
    if max_bytes is None:
        seen = read_files(paths, workspace, Budget.start(), at=AT)
    else:
        seen = read_files(paths, workspace, Budget.start(), at=AT, max_bytes=max_bytes)
    assert isinstance(seen, Observation), seen
    return seen


def blocked(workspace: Path, *paths: str, max_bytes: int = 1 << 20) -> SourceBlocked:
    seen = read_files(paths, workspace, Budget.start(), at=AT, max_bytes=max_bytes)
    assert isinstance(seen, SourceBlocked), seen
    return seen


class TestDigests:
    def test_each_file_has_the_sha256_of_its_content(self, workspace: Path) -> None:
        seen = read(workspace, "a.txt", "conf/b.toml")
        assert dict(seen.files) == {
            "a.txt": hashlib.sha256(b"alpha\n").hexdigest(),
            "conf/b.toml": hashlib.sha256(b"beta = 1\n").hexdigest(),
        }

    def test_the_digest_is_stable_across_reads(self, workspace: Path) -> None:
        assert read(workspace, "a.txt", "conf/b.toml") == read(workspace, "a.txt", "conf/b.toml")

    def test_the_set_digest_does_not_depend_on_the_listed_order(self, workspace: Path) -> None:
        forward = read(workspace, "a.txt", "conf/b.toml")
        backward = read(workspace, "conf/b.toml", "a.txt")
        assert forward.checkpoint == backward.checkpoint

    def test_a_changed_content_changes_the_digest_and_the_proof_names_the_path(
        self, workspace: Path
    ) -> None:
        before = read(workspace, "a.txt", "conf/b.toml")
        (workspace / "conf" / "b.toml").write_text("beta = 2\n")
        after = read(workspace, "a.txt", "conf/b.toml")
        assert before.checkpoint != after.checkpoint
        assert files_change(before, after) == FilesChange(modified=("conf/b.toml",))

    def test_the_same_content_under_another_listed_path_is_another_set(
        self, workspace: Path
    ) -> None:
        (workspace / "c.txt").write_text("alpha\n")
        assert read(workspace, "a.txt").checkpoint != read(workspace, "c.txt").checkpoint

    def test_a_large_file_is_read_whole_across_chunks(self, workspace: Path) -> None:
        content = os.urandom(CHUNK_BYTES * 2 + 17)
        (workspace / "big.bin").write_bytes(content)
        seen = read(workspace, "big.bin")
        assert dict(seen.files) == {"big.bin": hashlib.sha256(content).hexdigest()}


class TestAbsence:
    def test_a_missing_file_is_a_state(self, workspace: Path) -> None:
        seen = read(workspace, "a.txt", "later.txt", "nodir/x")
        assert dict(seen.files)["later.txt"] is None
        assert dict(seen.files)["nodir/x"] is None

    def test_creating_and_deleting_files_are_changes(self, workspace: Path) -> None:
        before = read(workspace, "a.txt", "later.txt")
        (workspace / "later.txt").write_text("new\n")
        (workspace / "a.txt").unlink()
        after = read(workspace, "a.txt", "later.txt")
        assert before.checkpoint != after.checkpoint
        assert files_change(before, after) == FilesChange(added=("later.txt",), removed=("a.txt",))

    def test_a_link_inside_the_workspace_to_nothing_is_absent(self, workspace: Path) -> None:
        (workspace / "dangling").symlink_to("nothing-here")
        assert dict(read(workspace, "dangling").files) == {"dangling": None}

    def test_a_gone_workspace_is_source_missing(self, tmp_path: Path) -> None:
        seen = read_files(["a.txt"], tmp_path / "never", Budget.start(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_MISSING


class TestEscapes:
    @pytest.fixture
    def outside(self, tmp_path: Path) -> Path:
        secret = tmp_path / "secret.txt"
        secret.write_text("not yours\n")
        return secret

    def test_dot_dot_is_refused(self, workspace: Path, outside: Path) -> None:
        seen = blocked(workspace, "../secret.txt")
        assert seen.reason is BlockReason.SOURCE_UNREADABLE
        assert "leaves the workspace" in seen.detail

    def test_dot_dot_below_the_root_stays_inside(self, workspace: Path) -> None:
        seen = read(workspace, "conf/../a.txt")
        assert dict(seen.files)["conf/../a.txt"] == hashlib.sha256(b"alpha\n").hexdigest()

    @pytest.mark.parametrize(
        "target",
        [
            "../secret.txt",  # a relative link climbing out
            "{outside}",  # an absolute link
        ],
    )
    def test_a_link_out_of_the_workspace_is_refused(
        self, workspace: Path, outside: Path, target: str
    ) -> None:
        (workspace / "leak.txt").symlink_to(target.format(outside=outside))
        assert blocked(workspace, "leak.txt").reason is BlockReason.SOURCE_UNREADABLE

    def test_a_linked_directory_out_of_the_workspace_is_refused(
        self, workspace: Path, outside: Path
    ) -> None:
        (workspace / "shared").symlink_to(outside.parent)
        assert blocked(workspace, "shared/secret.txt").reason is BlockReason.SOURCE_UNREADABLE

    def test_a_link_climbing_out_and_back_in_is_refused(self, workspace: Path) -> None:
        (workspace / "back").symlink_to(f"../{workspace.name}/a.txt")
        assert blocked(workspace, "back").reason is BlockReason.SOURCE_UNREADABLE

    def test_links_inside_the_workspace_are_followed(self, workspace: Path) -> None:
        (workspace / "alias.txt").symlink_to("conf/../a.txt")
        (workspace / "settings").symlink_to(workspace / "conf")
        seen = read(workspace, "alias.txt", "settings/b.toml")
        assert dict(seen.files) == {
            "alias.txt": hashlib.sha256(b"alpha\n").hexdigest(),
            "settings/b.toml": hashlib.sha256(b"beta = 1\n").hexdigest(),
        }

    def test_a_link_loop_is_unreadable(self, workspace: Path) -> None:
        (workspace / "loop").symlink_to("loop")
        assert blocked(workspace, "loop").reason is BlockReason.SOURCE_UNREADABLE


class TestUnreadable:
    def test_a_directory_is_unreadable(self, workspace: Path) -> None:
        seen = blocked(workspace, "a.txt", "conf")
        assert seen.reason is BlockReason.SOURCE_UNREADABLE
        assert "directory" in seen.detail

    def test_a_named_pipe_is_unreadable_and_does_not_stall(self, workspace: Path) -> None:
        os.mkfifo(workspace / "pipe")
        assert blocked(workspace, "pipe").reason is BlockReason.SOURCE_UNREADABLE

    def test_a_file_over_the_limit_is_unreadable(self, workspace: Path) -> None:
        (workspace / "ten.txt").write_bytes(b"x" * 10)
        (workspace / "eleven.txt").write_bytes(b"x" * 11)
        assert read(workspace, "ten.txt", max_bytes=10).files[0][1] is not None
        seen = blocked(workspace, "eleven.txt", max_bytes=10)
        assert seen.reason is BlockReason.SOURCE_UNREADABLE
        assert "larger than 10 bytes" in seen.detail

    @pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
    def test_a_file_without_read_permission_is_unreadable(self, workspace: Path) -> None:
        (workspace / "a.txt").chmod(0)
        assert blocked(workspace, "a.txt").reason is BlockReason.SOURCE_UNREADABLE


class TestTheBudget:
    @staticmethod
    def ticking() -> Budget:
        """A budget of 4 seconds on a clock that moves one second at each look: the start,
        the read's first check and the file's check leave it one chunk to read."""
        now = iter(range(1000))
        return Budget.start(4, monotonic=lambda: float(next(now)))

    def test_a_budget_spent_mid_read_makes_the_read_unreadable(self, workspace: Path) -> None:
        (workspace / "big.bin").write_bytes(b"x" * (CHUNK_BYTES * 3))
        seen = read_files(["big.bin"], workspace, self.ticking(), at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_UNREADABLE
        assert "budget" in seen.detail

    def test_the_same_budget_suffices_for_one_chunk(self, workspace: Path) -> None:
        seen = read_files(["a.txt"], workspace, self.ticking(), at=AT)
        assert isinstance(seen, Observation)

    def test_a_cancelled_budget_reads_nothing(self, workspace: Path) -> None:
        cancelled = Budget.start()
        threading.Thread(target=cancelled.cancel).start()
        cancelled.cancelled.wait(5)
        seen = read_files(["a.txt"], workspace, cancelled, at=AT)
        assert isinstance(seen, SourceBlocked)
        assert seen.reason is BlockReason.SOURCE_UNREADABLE


class TestValues:
    def test_an_observation_keeps_its_files_through_json(self, workspace: Path) -> None:
        seen = read(workspace, "a.txt", "missing.txt")
        data = seen.to_json()
        assert data["files"] == {"a.txt": dict(seen.files)["a.txt"], "missing.txt": None}
        assert Observation.from_json(data) == seen

    def test_a_change_keeps_its_value_through_json(self) -> None:
        change = FilesChange(added=("a",), removed=("b",), modified=("c",))
        assert FilesChange.from_json(change.to_json()) == change

    def test_a_stored_value_of_another_version_is_refused(self, workspace: Path) -> None:
        data = read(workspace, "a.txt").to_json() | {"version": 99}
        with pytest.raises(ValueError, match="version"):
            Observation.from_json(data)

    def test_observe_reads_a_configured_file_set(self, workspace: Path) -> None:
        condition = parse_condition({"kind": "files", "paths": ["conf/b.toml", "a.txt"]})
        assert condition is not None
        seen = observe(condition, workspace, Budget.start(), at=AT)
        assert seen == read(workspace, "a.txt", "conf/b.toml")
