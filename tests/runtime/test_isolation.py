"""What a passage can reach: a clean environment always; as another OS user and in a
bubblewrap sandbox, none of the server's files, and reports that only its own token can
make. Real processes, a real user switch (the tests run as root, as CI does) and a real
sandbox: `make test` installs bubblewrap."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import typer

import kalends
from kalends.errors import InvalidInput
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.runtime.isolation import (
    Isolation,
    PassageUser,
    default_path,
    find_bwrap,
)
from kalends.missions.runtime.process import ProcessRuntime, spool_report
from kalends.missions.runtime.shim import confined_argv, reachable
from kalends.missions.runtime.token import SECRET_FILE, sign

from .support import GRACE, Lab, kill_families

# The passage user cannot run an interpreter kept in root's home (as this machine's is):
# passages run the system's Python, with this checkout's packages on its path.
SYSTEM_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
PACKAGES = [str(Path(kalends.__file__).parents[1]), str(Path(typer.__file__).parents[1])]


def python(code: str) -> tuple[str, ...]:
    return (SYSTEM_PYTHON, "-c", textwrap.dedent(code))


def kalends_command(*args: str) -> tuple[str, ...]:
    """``kalends ARGS`` as the passage user can run it: skips when this checkout lies in a
    directory that user cannot enter (a private temporary clone, say)."""
    if AS_ROOT and not all(reachable(p, *_ids("nobody")) for p in PACKAGES):
        pytest.skip(f"the passage user cannot reach this checkout's packages {PACKAGES}")
    return (
        SYSTEM_PYTHON,
        "-c",
        f"import sys; sys.path[:0] = {PACKAGES!r}; sys.argv = ['kalends', *{list(args)!r}]; "
        "from kalends.cli.entry import main; main()",
    )


AS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not AS_ROOT, reason="switching users needs root")

# What the passage writes into its workspace: who it is and what it could read.
PROBE = """
    import json, os, sys
    def readable(path):
        try:
            with open(path, "rb"):
                return True
        except OSError:
            return False
    found = {
        "uid": os.getuid(),
        "env": dict(os.environ),
        "secret": readable(sys.argv[1]),
        "database": readable(sys.argv[2]),
        "input": json.load(open(os.environ["KALENDS_INPUT_FILE"])),
        "pids": len([p for p in os.listdir("/proc") if p.isdigit()]),
        "hidden_listed": os.listdir(sys.argv[3]) if os.path.isdir(sys.argv[3]) else [],
    }
    try:
        open("/usr/kalends-probe", "w")
        found["system_writable"] = True
    except OSError:
        found["system_writable"] = False
    with open("seen.json", "w") as f:
        json.dump(found, f)
"""


def _ids(name: str) -> tuple[int, int]:
    entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


def _bwrap() -> str:
    found = find_bwrap()
    if found is None:
        pytest.fail("bubblewrap (bwrap) is needed and must work here: `make test` installs it")
    return found


def _nobody() -> PassageUser:
    return PassageUser.lookup("nobody")


def _open_dir(prefix: str, owner: PassageUser | None, mode: int) -> Path:
    """A directory under the system's temporary directory that the passage user reaches
    (a test's own tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(mode)
    if owner is not None:
        os.chown(path, owner.uid, owner.gid)
    return path


class Server:
    """A runtime confined as `kalends serve` would confine it, beside a private data
    directory holding a stand-in database file and the runtime's secret."""

    def __init__(self, tmp: Path, *, user: bool, sandbox: bool) -> None:
        passage_user = _nobody() if user else None
        self.data = tmp / "data"
        self.data.mkdir(mode=0o700)
        self.database = self.data / "kalends.sqlite3"
        self.database.write_bytes(b"SQLite format 3\x00 private rows")
        self.database.chmod(0o600)
        self.workspace = _open_dir("kalends-ws-", passage_user, 0o700)
        self.exchange = _open_dir("kalends-ex-", None, 0o711) if user else None
        isolation = Isolation(
            user=passage_user,
            bwrap=_bwrap() if sandbox else None,
            path=default_path(),
            hidden=(str(self.data),),
            exchange_dir=self.exchange,
        )
        self.root = self.data / "runtime"
        self.runtime = ProcessRuntime(self.root, grace=GRACE, isolation=isolation)
        self.lab = Lab(self.runtime, self.workspace, tmp)

    def close(self) -> None:
        kill_families(self.root)
        shutil.rmtree(self.workspace, ignore_errors=True)
        if self.exchange is not None:
            shutil.rmtree(self.exchange, ignore_errors=True)

    def probe(self) -> dict[str, object]:
        self.runtime.start(
            self.lab.passage(
                *python(PROBE),
                str(self.root / SECRET_FILE),
                str(self.database),
                str(self.data),
                env=(("FROM_PROFILE", "yes"),),
                input={"objective": "look around"},
            )
        )
        settled = self.lab.settled()
        assert settled.exit_status == 0, settled.log_tail
        found: dict[str, object] = json.loads((self.workspace / "seen.json").read_text())
        return found


@pytest.fixture
def server_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's own environment holds what a passage must never see."""
    monkeypatch.setenv("KALENDS_DATABASE_URL", "postgresql://kalends:hunter2@db/kalends")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "server-only")


@pytest.fixture(
    params=[
        pytest.param((False, False), id="unconfined"),
        pytest.param((True, False), id="user", marks=needs_root),
        pytest.param((False, True), id="sandbox"),
        pytest.param((True, True), id="user+sandbox", marks=needs_root),
    ]
)
def server(request: pytest.FixtureRequest, tmp_path: Path, server_env: None) -> Iterator[Server]:
    user, sandbox = request.param
    made = Server(tmp_path, user=user, sandbox=sandbox)
    try:
        yield made
    finally:
        made.close()


class TestTheEnvironment:
    def test_a_passage_gets_a_clean_environment_and_its_profiles_variables(
        self, server: Server
    ) -> None:
        env = server.probe()["env"]
        assert isinstance(env, dict)

        assert "KALENDS_DATABASE_URL" not in env
        assert "AWS_SECRET_ACCESS_KEY" not in env
        assert env["FROM_PROFILE"] == "yes"
        # kalends report is found on the PATH: the running kalends's directory is first.
        assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
        assert set(env) <= {
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "LC_CTYPE",
            "TZ",
            "FROM_PROFILE",
            "KALENDS_PASSAGE_ID",
            "KALENDS_PASSAGE_TOKEN",
            "KALENDS_INPUT_FILE",
            "KALENDS_PASSAGE_DIR",
            "KALENDS_RUNTIME_ROOT",
            "KALENDS_REPORT_SPOOL",
            "PWD",  # bubblewrap's --chdir sets it
        }

    @pytest.mark.parametrize(
        "name",
        [
            "LD_PRELOAD",  # loads a library into every program
            "ld_library_path",  # the same, in any case
            "PYTHONPATH",  # imports code into every Python program
            "PYTHONSTARTUP",
        ],
    )
    def test_variables_that_load_code_are_refused_and_nothing_is_admitted(
        self, server: Server, name: str
    ) -> None:
        with pytest.raises(InvalidInput, match=name):
            server.runtime.start(server.lab.passage("true", env=((name, "/tmp/x.so"),)))
        assert not server.lab.dir().exists()

    def test_a_passage_reads_its_input(self, server: Server) -> None:
        found = server.probe()["input"]
        assert isinstance(found, dict)
        assert found["objective"] == "look around"
        assert found["passageId"] == "psg_1"


class TestConfinement:
    @needs_root
    @pytest.mark.parametrize("sandbox", [False, True], ids=["user", "user+sandbox"])
    def test_as_another_user_a_passage_cannot_read_the_secret_or_the_database(
        self, tmp_path: Path, server_env: None, sandbox: bool
    ) -> None:
        made = Server(tmp_path, user=True, sandbox=sandbox)
        try:
            found = made.probe()
        finally:
            made.close()
        assert found["uid"] == pwd.getpwnam("nobody").pw_uid
        assert found["secret"] is False
        assert found["database"] is False
        env = found["env"]
        assert isinstance(env, dict)
        assert "KALENDS_RUNTIME_ROOT" not in env
        assert "KALENDS_PASSAGE_DIR" not in env

    def test_in_the_sandbox_the_data_directory_is_empty_and_the_system_read_only(
        self, tmp_path: Path, server_env: None
    ) -> None:
        made = Server(tmp_path, user=False, sandbox=True)
        try:
            found = made.probe()
        finally:
            made.close()
        # The server's own user, yet nothing of the data directory is there to read.
        assert found["uid"] == os.geteuid()
        assert found["secret"] is False
        assert found["database"] is False
        # Empty but for the mount point of the passage's own exchange directory.
        assert found["hidden_listed"] in ([], ["runtime"])
        assert found["system_writable"] is False
        # Its own process tree only: the shim's and the server's are out of sight.
        assert isinstance(found["pids"], int) and found["pids"] < 5

    def test_without_confinement_the_server_files_are_reachable(
        self, tmp_path: Path, server_env: None
    ) -> None:
        # The contrast that makes the tests above mean something: `kalends doctor`
        # warns about exactly this.
        made = Server(tmp_path, user=False, sandbox=False)
        try:
            found = made.probe()
        finally:
            made.close()
        assert found["secret"] is True
        assert found["database"] is True


class TestReports:
    def test_kalends_report_reaches_the_runtime_from_a_confined_passage(
        self, server: Server
    ) -> None:
        server.runtime.start(
            server.lab.passage(*kalends_command("report", "completed", "--summary", "all done"))
        )
        settled = server.lab.settled()
        assert settled.exit_status == 0, settled.log_tail
        assert settled.report is not None
        assert (settled.report.outcome, settled.report.summary) == ("completed", "all done")

    def test_a_spooled_report_with_a_forged_token_is_refused(self, server: Server) -> None:
        # Every passage has a spool, confined or not.
        forged = sign(b"k" * 32, "psg_1", "ses_1")
        write = f"""
            import json, os
            spool = os.environ["KALENDS_REPORT_SPOOL"]
            with open(os.path.join(spool, "report.json"), "w") as f:
                json.dump({{"version": 1, "token": {forged!r}, "outcome": "completed",
                           "summary": "forged", "at": "2026-12-01T00:00:00+00:00"}}, f)
        """
        server.runtime.start(server.lab.passage(*python(write)))
        settled = server.lab.log_has("ses_1", "a spooled report was refused")
        assert settled.report is None


class TestSandboxMounts:
    """The order of bubblewrap's mounts decides what a passage sees: later ones cover
    earlier ones."""

    @staticmethod
    def mounts(workspace: str, hidden: list[str]) -> list[tuple[str, str]]:
        argv = confined_argv(
            {"bwrap": "bwrap", "hidden": hidden, "exchange": "/x/io"}, ["true"], workspace, "/w"
        )
        flags = ("--tmpfs", "--bind")
        return [
            (a, argv[i + 1]) for i, a in enumerate(argv) if a in flags and argv[i + 1] != "/tmp"
        ]

    def test_a_workspace_holding_the_data_directory_does_not_show_it_again(self) -> None:
        # Registered as a home directory, say, that holds ~/.local/share/kalends.
        found = self.mounts("/home/ann", ["/home/ann/.local/share/kalends"])
        assert found.index(("--bind", "/home/ann")) < found.index(
            ("--tmpfs", "/home/ann/.local/share/kalends")
        )

    def test_a_workspace_inside_a_hidden_directory_stays_visible(self) -> None:
        found = self.mounts("/srv/data/ws", ["/srv/data"])
        assert found.index(("--tmpfs", "/srv/data")) < found.index(("--bind", "/srv/data/ws"))

    def test_the_exchange_directory_is_bound_last(self) -> None:
        found = self.mounts("/w", ["/x"])
        assert found[-1] == ("--bind", "/x/io")


def test_a_spooled_summary_over_the_stored_byte_bound_is_refused_and_nothing_spooled(
    tmp_path: Path,
) -> None:
    with pytest.raises(InvalidInput, match="summary"):
        spool_report(
            tmp_path,
            "token",
            "completed",
            "\U0001f600" * (MAX_SUMMARY_BYTES // 4 + 1),
            at=datetime.now(UTC),
        )
    assert not (tmp_path / "report.json").exists()


class TestReachable:
    def test_a_private_directory_is_out_of_reach_for_another_user(self, tmp_path: Path) -> None:
        private = tmp_path / "private"
        (private / "inner").mkdir(parents=True)
        private.chmod(0o700)
        # Only a user it belongs to, or root's own tests running as that owner, enters it.
        assert reachable(str(private / "inner"), 65534, 65534) is False
        private.chmod(0o711)
        assert reachable(str(private / "inner"), 65534, 65534) is (
            reachable(str(tmp_path), 65534, 65534)
        )

    def test_an_unreachable_kalends_is_not_bound_into_the_sandbox(self) -> None:
        plan = {"bwrap": "bwrap", "readable": ["/root/private-kalends"], "uid": 65534, "gid": 1}
        assert "/root/private-kalends" not in confined_argv(plan, ["true"], "/w", "/w")
        del plan["uid"]
        assert "/root/private-kalends" in confined_argv(plan, ["true"], "/w", "/w")
