"""The attack of issue "an editor must not become the server", against a real
`kalends serve` running as root with a passage user (without and with a sandbox), and
as an unprivileged user with a sandbox (where only the sandbox keeps the server's files
from its passages, which run as the same user).

A schedule whose command is an attacker's script is run now. The script tries what the
attack did: read the database file and the runtime secret, read the server's
environment, and report for another account's running passage with a token it signs
itself. Each step must fail; a profile that preloads a library is refused outright.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer

import kalends
from kalends.auth import Accounts
from kalends.bootstrap import open_services
from kalends.missions.runtime.isolation import PassageUser
from kalends.missions.runtime.shim import reachable

from .conftest import (
    CSRF_HEADER,
    LOOP_WITHIN,
    Server,
    finish,
    owner_session,
    poll,
    start_server,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a root server is the case here")

# The system's Python: the passage user cannot run an interpreter kept in root's home.
SYSTEM_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
# This checkout's packages, which an unprivileged server's environment adds to its path.
PACKAGES = [str(Path(kalends.__file__).parents[1]), str(Path(typer.__file__).parents[1])]
CANARY = "server-only-credential"
EVE_PASSWORD = "correct horse battery staple"

ATTACK = textwrap.dedent(
    """\
    import base64, hashlib, hmac, json, os, sys, urllib.request, urllib.error

    database, secret_file, victim_passage, victim_session = sys.argv[1:5]

    def readable(path):
        try:
            with open(path, "rb") as f:
                return f.read(16).hex()
        except OSError as exc:
            return None

    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    # The best key it can find: the real secret if readable, else a guess.
    key = b"guessed-key-" * 3
    try:
        key = open(secret_file, "rb").read()
    except OSError:
        pass
    payload = b64(json.dumps({"v": 1, "p": victim_passage, "s": victim_session},
                             separators=(",", ":")).encode())
    mac = b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())
    request = urllib.request.Request(
        os.environ["KALENDS_API_URL"] + "/api/passages/report",
        data=json.dumps({"outcome": "failed", "summary": "forged"}).encode(),
        method="POST",
        headers={"Authorization": "Passage " + payload + "." + mac,
                 "Content-Type": "application/json"},
    )
    try:
        forged_status = urllib.request.urlopen(request, timeout=20).status
    except urllib.error.HTTPError as exc:
        forged_status = exc.code
    found = {
        "uid": os.getuid(),
        "database": readable(database),
        "secret": readable(secret_file),
        "environ": dict(os.environ),
        "forged_status": forged_status,
    }
    with open("findings.json", "w") as f:
        json.dump(found, f)
    """
)
# Waits for "release", and ends anyway once its workspace is removed or after 2 minutes.
WAIT = textwrap.dedent(
    """\
    import os, time
    end = time.monotonic() + 120
    while not os.path.exists("release") and os.path.exists("wait.py"):
        if time.monotonic() > end:
            break
        time.sleep(0.1)
    """
)


def _open_workspace(owner: PassageUser) -> Path:
    path = Path(tempfile.mkdtemp(prefix="kalends-confined-"))
    os.chown(path, owner.uid, owner.gid)
    return path


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


class Space:
    """A workspace the owner registers; ``client`` is who then works in it."""

    def __init__(self, owner: httpx.Client, client: httpx.Client, workspace: Path) -> None:
        self.client, self.workspace = client, workspace
        added = ok(owner.post("/api/workspaces", json={"path": str(workspace)}), 201)
        self.id = added["id"]
        self.scheduled = f"/api/workspaces/{added['id']}/missions/scheduled"
        self.base = f"/api/workspaces/{added['id']}/missions"

    def create(self, profile: dict[str, Any]) -> httpx.Response:
        return self.client.post(
            self.scheduled,
            json={
                "requestID": f"create-{uuid.uuid4().hex}",
                "config": {
                    "title": "Nightly",
                    "objective": "look around",
                    "profile": profile,
                    "policy": {"kind": "every", "minutes": 60},
                },
            },
        )

    def run_now(self, mission: str) -> str:
        schedule = f"{self.base}/{mission}/schedule"
        revision = ok(self.client.get(schedule))["revision"]
        answer = ok(
            self.client.post(
                schedule + "/run-now",
                json={"requestID": f"run-{uuid.uuid4().hex}", "expectedRevision": revision},
            )
        )
        return str(answer["schedule"]["pending"]["passageId"])


@dataclass
class World:
    server: Server
    owner: httpx.Client
    eve: httpx.Client
    eve_id: str
    nobody: PassageUser


def _unprivileged_environment(base: Path) -> str:
    """An environment in ``base`` that an unprivileged user can run: the system's Python
    with this checkout's packages on its path, and a ``kalends`` command. Skips when this
    checkout lies where that user cannot enter (a private temporary clone, say)."""
    nobody = PassageUser.lookup("nobody")
    if not all(reachable(p, nobody.uid, nobody.gid) for p in PACKAGES):
        pytest.skip(f"the unprivileged server cannot reach this checkout's packages {PACKAGES}")
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(base)], check=True)
    (site,) = base.glob("lib/python3*/site-packages")
    (site / "kalends-checkout.pth").write_text("".join(p + "\n" for p in PACKAGES))
    command = base / "bin" / "kalends"
    command.write_text(
        f"#!{base / 'bin' / 'python'}\nimport sys\nfrom kalends.cli.entry import main\n"
        "sys.exit(main())\n"
    )
    command.chmod(0o755)
    return str(base / "bin" / "python")


# Who runs the server and how it confines passages: root with a passage user (without
# and with a sandbox), and an unprivileged server user with a sandbox.
SETUPS = {
    "passage-user": ("root", "off"),
    "passage-user+sandbox": ("root", "on"),
    "unprivileged+sandbox": ("nobody", "on"),
}


@pytest.fixture(params=list(SETUPS), ids=list(SETUPS))
def served(request: pytest.FixtureRequest) -> Iterator[World]:
    runner, sandbox = SETUPS[request.param]
    nobody = PassageUser.lookup("nobody")
    # Not under pytest's own temporary directory: an unprivileged server cannot enter it.
    directory = Path(tempfile.mkdtemp(prefix="kalends-confined-server-"))
    runtime_env = Path(tempfile.mkdtemp(prefix="kalends-confined-env-"))
    try:
        yield from _serve(directory, runtime_env, runner, sandbox, nobody)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(runtime_env, ignore_errors=True)


def _serve(
    directory: Path, runtime_env: Path, runner: str, sandbox: str, nobody: PassageUser
) -> Iterator[World]:
    database = f"sqlite:///{directory / 'kalends.sqlite3'}"
    services = open_services(database)
    try:
        eve_id = str(services.directory.add_actor("eve", "Eve").id)
        accounts = Accounts(services.store)
        accounts.ensure_account("eve")
        accounts.set_password("eve", EVE_PASSWORD, current_password=None)
    finally:
        services.store.close()
    env = {"KALENDS_DATABASE_URL": database, "AWS_SECRET_ACCESS_KEY": CANARY}
    if runner == "root":
        server = start_server(
            database, directory, "--passage-user", "nobody", "--sandbox", sandbox, env=env
        )
    else:
        python = _unprivileged_environment(runtime_env)
        runtime_env.chmod(0o755)
        for path in (directory, *directory.iterdir()):
            os.chown(path, nobody.uid, nobody.gid)
        server = start_server(
            database,
            directory,
            "--sandbox",
            sandbox,
            env={**env, "HOME": str(directory)},
            wrapper=(
                "env",
                "-u",
                "KALENDS_PASSAGE_USER",
                "setpriv",
                f"--reuid={nobody.uid}",
                f"--regid={nobody.gid}",
                "--clear-groups",
            ),
            python=python,
            cwd=directory,
        )
    try:
        with owner_session(server) as owner, server.client() as eve:
            login = ok(
                eve.post("/api/auth/login", json={"handle": "eve", "password": EVE_PASSWORD})
            )
            eve.headers[CSRF_HEADER] = login["csrfToken"]
            yield World(server, owner, eve, eve_id, nobody)
    finally:
        finish(server)


def _session_of(server: Server, passage: str) -> str:
    for start in (server.directory / "runtime" / "passages").glob("*/start.json"):
        doc = json.loads(start.read_text())
        if doc["passageId"] == passage:
            return str(doc["sessionId"])
    raise AssertionError(f"no start record for {passage}")


def test_an_editor_cannot_become_the_server(served: World) -> None:
    server, owner, nobody = served.server, served.owner, served.nobody
    victim_space, attacker_space = _open_workspace(nobody), _open_workspace(nobody)
    try:
        (victim_space / "wait.py").write_text(WAIT)
        (attacker_space / "attack.py").write_text(ATTACK)
        # The owner's own work, in a workspace eve has no role on.
        victim = Space(owner, owner, victim_space)
        # A shared workspace where eve is an editor.
        attacker = Space(owner, served.eve, attacker_space)
        ok(
            owner.put(
                f"/api/workspaces/{attacker.id}/members/{served.eve_id}", json={"role": "editor"}
            )
        )

        # Step 1: a plain editor cannot define what runs.
        secret = server.directory / "runtime" / "secret"
        database = server.directory / "kalends.sqlite3"
        refused = attacker.create({"command": ["sh", "-c", f"cat {database}"]})
        assert (refused.status_code, refused.json()["code"]) == (403, "run-privilege-required")
        # Granted the privilege, a profile that preloads a library is still refused.
        ok(owner.post("/api/actors/eve/grants/run"))
        preload = attacker.create(
            {"command": [SYSTEM_PYTHON, "attack.py"], "env": {"LD_PRELOAD": "/tmp/x.so"}}
        )
        assert (preload.status_code, preload.json()["code"]) == (422, "invalid-input")

        waiting = ok(victim.create({"command": [SYSTEM_PYTHON, "wait.py"]}), 201)["missionId"]
        victim_passage = victim.run_now(waiting)
        poll(
            lambda: (
                ok(owner.get(f"{victim.base}/{waiting}/schedule"))["pending"]["status"] == "running"
            ),
            LOOP_WITHIN,
            "the victim's passage to run",
        )
        victim_session = _session_of(server, victim_passage)

        # Step 2: with the privilege, the passage still reaches nothing of the server's.
        mission = ok(
            attacker.create(
                {
                    "command": [
                        SYSTEM_PYTHON,
                        "attack.py",
                        str(database),
                        str(secret),
                        victim_passage,
                        victim_session,
                    ]
                }
            ),
            201,
        )["missionId"]
        attacker.run_now(mission)
        findings_file = attacker_space / "findings.json"
        poll(findings_file.exists, LOOP_WITHIN, "the attack's findings")
        findings = json.loads(findings_file.read_text())

        assert findings["uid"] == nobody.uid
        assert findings["database"] is None
        assert findings["secret"] is None
        assert CANARY not in json.dumps(findings["environ"])
        assert "KALENDS_DATABASE_URL" not in findings["environ"]
        # Step 3: a token it signs itself is refused, and the victim's passage keeps
        # no forged report.
        assert findings["forged_status"] == 401
        report = server.directory / "runtime" / "passages" / victim_session / "report.json"
        assert not report.exists()
        (victim_space / "release").touch()
    finally:
        shutil.rmtree(victim_space, ignore_errors=True)
        shutil.rmtree(attacker_space, ignore_errors=True)
