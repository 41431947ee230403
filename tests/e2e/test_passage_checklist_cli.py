"""`kalends task done` and `kalends task comment` inside a passage: with the passage's
own token (``KALENDS_PASSAGE_TOKEN``) and server (``KALENDS_API_URL``) in its
environment, they tick and comment the items of its own checklist on a running
`kalends serve`, and nothing else (SQLite and PostgreSQL).

The passages are admitted by a runtime of the test on the server's own runtime directory,
so that they share its secret; their checklists are written as the scheduler's
reservation writes them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.clock import SystemClock
from kalends.missions.checklists import (
    PASSAGES_ACTOR_ID,
    checklist_counts,
    create_checklist,
    workspace_list,
)
from kalends.missions.config_template import parse_template
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import ProcessRuntime
from kalends.tasks import TreeNode

from .conftest import OWNER, Server

TEMPLATE = parse_template([{"title": "Fetch", "children": [{"title": "Check"}]}, {"title": "Ship"}])
PASSAGE_ENV = ("KALENDS_API_URL", "KALENDS_PASSAGE_TOKEN", "KALENDS_SERVER", "KALENDS_TOKEN")
runner = CliRunner()


class Checklists:
    """A workspace of the owner with a schedule, and two admitted passages of it (never
    launched), each with its checklist."""

    def __init__(self, server: Server, services: Services, root: Path) -> None:
        self.server = server
        self.services = services
        owner = services.directory.actor(OWNER)
        (root / "workspace").mkdir()
        workspace = services.workspaces.add(owner.id, root / "workspace", f"ws-{root.name}")
        receipt = services.schedules.create(
            owner.id,
            workspace.id,
            {
                "title": "Nightly review",
                "objective": "Review the night's work.",
                "profile": {"command": ["true"]},
                "policy": {"kind": "daily", "time": "09:00", "zone": "UTC"},
            },
            request_id=f"create-{uuid.uuid4().hex[:12]}",
        )
        assert receipt.mission_id is not None
        self.owner = owner
        self.runtime = ProcessRuntime(server.directory / "runtime")
        self.tokens: dict[str, str] = {}
        self.roots: dict[str, uuid.UUID] = {}
        for name in ("a", "b"):
            tag = uuid.uuid4().hex[:12]
            passage, session = f"psg_{tag}", f"ses_{tag}"
            self.runtime.admit(
                PassageStart(
                    passage_id=passage,
                    session_id=session,
                    message_id=f"msg_{tag}",
                    schedule_id=str(receipt.mission_id),
                    workspace=str(root / "workspace"),
                    command=("true",),
                )
            )
            self.tokens[name] = self.runtime.token(passage, session)
            self.roots[name] = uuid.uuid4()
            self._create(self.roots[name], workspace.id, receipt.mission_id, passage)
        self.list_id = services.store.run(
            lambda conn: workspace_list(conn, workspace.id, SystemClock().now())
        )

    def _create(
        self, root: uuid.UUID, workspace: uuid.UUID, schedule: uuid.UUID, passage: str
    ) -> None:
        def run(conn: Any) -> None:
            create_checklist(
                conn,
                checklist_id=root,
                workspace_id=workspace,
                title="Nightly review — run",
                template=TEMPLATE,
                passage_id=passage,
                schedule_id=schedule,
                now=SystemClock().now(),
            )

        self.services.store.run(run)

    def tree(self, name: str) -> TreeNode:
        trees = self.services.tasks.tree(self.owner.id, self.list_id)
        return next(t for t in trees if t.task.id == self.roots[name])

    def counts(self, name: str) -> tuple[int, int]:
        return self.services.store.run(
            lambda conn: checklist_counts(conn, self.roots[name]), write=False
        )

    def task(self, name: str, *args: str, token: str | None = None) -> Result:
        """`kalends task ARGS` as passage ``name`` runs it (``token`` instead of its own)."""
        env: dict[str, str | None] = dict.fromkeys(PASSAGE_ENV)
        env["KALENDS_API_URL"] = self.server.base
        env["KALENDS_PASSAGE_TOKEN"] = token if token is not None else self.tokens[name]
        return runner.invoke(app, ["task", *args], env=env)


@pytest.fixture
def lists(shared_server: Server, tmp_path: Path) -> Iterator[Checklists]:
    services = open_services(shared_server.database)
    try:
        yield Checklists(shared_server, services, tmp_path)
    finally:
        services.store.close()


def test_a_passage_ticks_and_comments_its_own_items(lists: Checklists) -> None:
    leaf = lists.tree("a").children[0].children[0].task
    done = lists.task("a", "done", leaf.ref, "--expect", "1", "--json")
    assert done.exit_code == 0, done.output
    assert '"status": "completed"' in done.output
    assert lists.counts("a") == (2, 1)
    said = lists.task("a", "comment", leaf.ref, "Checked: 12 rows.")
    assert said.exit_code == 0, said.output
    assert f"commented on {leaf.ref}" in said.output
    detail = lists.services.tasks.get(lists.owner.id, leaf.id)
    assert [(c.author_id, c.body) for c in detail.comments] == [
        (PASSAGES_ACTOR_ID, "Checked: 12 rows.")
    ]


def test_another_passages_items_are_refused_and_left_alone(lists: Checklists) -> None:
    theirs = lists.tree("b").children[1].task
    for args in (("done", theirs.ref, "--expect", "1"), ("comment", theirs.ref, "Mine now.")):
        refused = lists.task("a", *args)
        assert refused.exit_code == 1, refused.output
        assert "own checklist" in refused.output
    assert lists.counts("b") == (3, 0)
    assert lists.services.tasks.get(lists.owner.id, theirs.id).comments == ()


def test_a_forged_token_is_refused(lists: Checklists) -> None:
    item = lists.tree("a").children[1].task
    refused = lists.task("a", "done", item.ref, "--expect", "1", token="not-a-token")
    assert refused.exit_code != 0, refused.output
    assert "invalid-passage-token" in refused.output or "token" in refused.output
    assert "kalends login" not in refused.output
    assert lists.counts("a") == (3, 0)


def test_other_commands_do_not_speak_for_the_passage(lists: Checklists) -> None:
    """Only `done` and `comment` take the passage's token; `reopen`, say, does not."""
    item = lists.tree("a").children[1].task
    refused = lists.task("a", "reopen", item.ref, "--expect", "1")
    assert refused.exit_code != 0, refused.output
    # It stays a command of local mode, which needs a person to act.
    assert "say who is acting" in refused.output
    assert lists.tree("a").children[1].task.revision == item.revision
