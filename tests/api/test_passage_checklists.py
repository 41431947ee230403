"""A passage ticks and comments its own checklist over HTTP with its own token
(``Authorization: Passage <token>`` on ``POST /api/tasks/{task}/complete`` and
``/comments``), and reaches nothing else with it (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID, uuid4

import httpx2
import pytest

from api.conftest import ApiWorld
from kalends.missions.checklists import (
    PASSAGES_ACTOR_ID,
    checklist_counts,
    create_checklist,
    workspace_list,
)
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.runtime.token import sign
from kalends.storage.testing import nothing_written
from kalends.tasks import TreeNode
from missions.checklist_support import THREE_LEVELS_TEMPLATE
from runtime.support import kill_families

TEMPLATE = THREE_LEVELS_TEMPLATE
ITEMS = 5
SCOPE = (403, "passage-scope")


class Checklists:
    """Two admitted passages (never launched) of one schedule of home, each with its
    checklist from :data:`TEMPLATE`, and a third passage without one."""

    def __init__(self, api: ApiWorld, runtime: ProcessRuntime, schedule: UUID) -> None:
        self.api = api
        self.runtime = runtime
        self.schedule = schedule
        self.roots: dict[str, UUID] = {}
        for name in ("a", "b", "c"):
            runtime.admit(
                PassageStart(
                    passage_id=f"psg_{name}",
                    session_id=f"ses_{name}",
                    message_id=f"msg_{name}",
                    schedule_id=str(schedule),
                    workspace=api.home.path,
                    command=("true",),
                )
            )
        for name in ("a", "b"):
            self.roots[name] = uuid4()
            self._create(name)
        self.list_id = api.store.run(
            lambda conn: workspace_list(conn, api.home.id, api.clock.now())
        )

    def _create(self, name: str) -> None:
        def run(conn: Any) -> None:
            create_checklist(
                conn,
                checklist_id=self.roots[name],
                workspace_id=self.api.home.id,
                title=f"Nightly review {name}",
                template=TEMPLATE,
                passage_id=f"psg_{name}",
                schedule_id=self.schedule,
                now=self.api.clock.now(),
            )

        self.api.store.run(run)

    def token(self, name: str) -> str:
        return self.runtime.token(f"psg_{name}", f"ses_{name}")

    def tree(self, name: str) -> TreeNode:
        trees = self.api.services.tasks.tree(self.api.actors["alice"].id, self.list_id)
        return next(t for t in trees if t.task.id == self.roots[name])

    def counts(self, name: str) -> tuple[int, int]:
        return self.api.store.run(
            lambda conn: checklist_counts(conn, self.roots[name]), write=False
        )


@pytest.fixture
def lists(api: ApiWorld) -> Iterator[Checklists]:
    receipt = api.services.schedules.create(
        api.actors["bob"].id,
        api.home.id,
        {
            "title": "Nightly review",
            "objective": "Review the night's work.",
            "profile": {"command": ["echo", "hello"]},
            "policy": {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"},
        },
        request_id="create-nightly",
    )
    assert receipt.mission_id is not None
    root = api.root / "runtime"
    runtime = ProcessRuntime(root, clock=api.clock)
    try:
        yield Checklists(api, runtime, receipt.mission_id)
    finally:
        kill_families(root)


def passage(token: str) -> dict[str, str]:
    return {"Authorization": f"Passage {token}"}


def tick(
    api: ApiWorld, token: str, task: object, revision: int = 1, *, subtree: bool = False
) -> httpx2.Response:
    return api.client.post(
        f"/api/tasks/{task}/complete",
        json={"expectedRevision": revision, "completeSubtree": subtree},
        headers=passage(token),
    )


def comment(
    api: ApiWorld, token: str, task: object, body: str = "Done, 12 rows."
) -> httpx2.Response:
    return api.client.post(
        f"/api/tasks/{task}/comments", json={"body": body}, headers=passage(token)
    )


def refused(reply: httpx2.Response, expected: tuple[int, str]) -> dict[str, Any]:
    assert (reply.status_code, reply.json().get("code")) == expected, reply.text
    body: dict[str, Any] = reply.json()
    return body


class TestItsOwnChecklist:
    def test_a_passage_ticks_its_items_and_the_counts_follow(
        self, api: ApiWorld, lists: Checklists
    ) -> None:
        tree = lists.tree("a")
        leaf = tree.children[0].children[0].children[0].task
        assert lists.counts("a") == (ITEMS, 0)
        reply = tick(api, lists.token("a"), leaf.ref)
        assert reply.status_code == 200, reply.text
        assert (reply.json()["status"], reply.json()["revision"]) == ("completed", 2)
        assert lists.counts("a") == (ITEMS - 1, 1)
        # By ID as well; the other passage's checklist is untouched.
        publish = tree.children[1].task
        assert tick(api, lists.token("a"), publish.id).status_code == 200
        assert lists.counts("a") == (ITEMS - 2, 2)
        assert lists.counts("b") == (ITEMS, 0)
        history = api.services.tasks.history(api.actors["alice"].id, leaf.id)
        assert (history[-1].kind, history[-1].actor_id) == ("completed", PASSAGES_ACTOR_ID)

    def test_the_root_with_open_items_needs_complete_subtree(
        self, api: ApiWorld, lists: Checklists
    ) -> None:
        root = lists.roots["a"]
        with nothing_written(api.store):
            refused(tick(api, lists.token("a"), root), (409, "open-descendants"))
        reply = tick(api, lists.token("a"), root, subtree=True)
        assert reply.status_code == 200, reply.text
        assert lists.counts("a") == (0, ITEMS)

    def test_a_stale_revision_is_a_conflict(self, api: ApiWorld, lists: Checklists) -> None:
        leaf = lists.tree("a").children[1].task
        with nothing_written(api.store):
            refused(tick(api, lists.token("a"), leaf.ref, 7), (409, "revision-conflict"))

    def test_a_passage_comments_its_items(self, api: ApiWorld, lists: Checklists) -> None:
        item = lists.tree("a").children[0].task
        reply = comment(api, lists.token("a"), item.ref)
        assert reply.status_code == 201, reply.text
        assert reply.json()["author_id"] == str(PASSAGES_ACTOR_ID)
        assert reply.json()["body"] == "Done, 12 rows."
        # People read it as any comment.
        seen = api.client.get(f"/api/tasks/{item.ref}/comments", headers=api.headers("carol"))
        assert [c["body"] for c in seen.json()] == ["Done, 12 rows."]
        with nothing_written(api.store):
            refused(comment(api, lists.token("a"), item.ref, "   "), (422, "invalid-input"))

    def test_people_keep_their_roles_on_the_workspace_list(
        self, api: ApiWorld, lists: Checklists
    ) -> None:
        """The list's members are the workspace's: bob edits, carol views."""
        item = lists.tree("a").children[1].task
        body = {"expectedRevision": 1}
        with nothing_written(api.store):
            carol = api.client.post(
                f"/api/tasks/{item.ref}/complete", json=body, headers=api.headers("carol")
            )
            refused(carol, (403, "forbidden"))
        bob = api.client.post(
            f"/api/tasks/{item.ref}/complete", json=body, headers=api.headers("bob")
        )
        assert bob.status_code == 200, bob.text

    def test_an_archived_list_takes_new_checklists_but_no_ticks(
        self, api: ApiWorld, lists: Checklists
    ) -> None:
        alice = api.actors["alice"].id
        api.services.directory.archive(alice, lists.list_id)
        lists.roots["late"] = uuid4()
        lists.api.store.run(
            lambda conn: create_checklist(
                conn,
                checklist_id=lists.roots["late"],
                workspace_id=api.home.id,
                title="Late",
                template=TEMPLATE,
                passage_id="psg_c",
                schedule_id=lists.schedule,
                now=api.clock.now(),
            )
        )
        item = lists.tree("late").children[1].task
        with nothing_written(api.store):
            refused(tick(api, lists.token("c"), item.ref), (409, "list-archived"))
            refused(comment(api, lists.token("c"), item.ref), (409, "list-archived"))
        api.services.directory.archive(alice, lists.list_id, archived=False)
        assert tick(api, lists.token("c"), item.ref).status_code == 200


class TestNothingElse:
    def test_another_passages_items_an_ordinary_task_and_no_task_are_refused_alike(
        self, api: ApiWorld, lists: Checklists
    ) -> None:
        theirs = lists.tree("b").children[1].task
        ordinary = api.services.tasks.create(api.actors["alice"].id, api.home_list.id, "Groceries")
        beside = api.services.tasks.create(api.actors["bob"].id, lists.list_id, "Not a checklist")
        answers = []
        with nothing_written(api.store):
            for task in (theirs.ref, lists.roots["b"], ordinary.ref, beside.id, "ZZZZZZ", uuid4()):
                answers.append(refused(tick(api, lists.token("a"), task), SCOPE))
                answers.append(refused(comment(api, lists.token("a"), task), SCOPE))
        # The same answer, word for word: it tells nothing of the task asked for.
        assert len({(a["message"], str(a["details"])) for a in answers}) == 1

    def test_a_passage_without_a_checklist_writes_nothing(
        self, api: ApiWorld, lists: Checklists
    ) -> None:
        item = lists.tree("a").children[1].task
        with nothing_written(api.store):
            refused(tick(api, lists.token("c"), item.ref), SCOPE)
            refused(comment(api, lists.token("c"), item.ref), SCOPE)

    def test_forged_and_foreign_tokens_are_refused(self, api: ApiWorld, lists: Checklists) -> None:
        good = lists.token("a")
        payload, _, mac = good.partition(".")
        forged = [
            payload + "." + ("A" if mac[0] != "A" else "B") + mac[1:],
            lists.token("b").partition(".")[0] + "." + mac,  # b's identities, a's signature
            sign(b"another runtime's secret, 32 by", "psg_a", "ses_a"),
            lists.runtime.token("psg_zz", "ses_zz"),  # signed here, but no such passage
            lists.runtime.token("psg_a", "ses_b"),  # a's passage, b's session
            "not-a-token",
        ]
        item = lists.tree("a").children[1].task
        with nothing_written(api.store):
            for token in forged:
                refused(tick(api, token, item.ref), (401, "invalid-passage-token"))
                refused(comment(api, token, item.ref), (401, "invalid-passage-token"))
            for header in ("Passage", "Passage   "):
                reply = api.client.post(
                    f"/api/tasks/{item.ref}/comments",
                    json={"body": "hello"},
                    headers={"Authorization": header},
                )
                refused(reply, (401, "invalid-passage-token"))

    def test_a_settled_passages_token_is_spent(self, api: ApiWorld, lists: Checklists) -> None:
        lists.runtime.interrupt("ses_a")  # never launched: it ends at once, settled
        assert lists.runtime.observe("ses_a").settled
        item = lists.tree("a").children[1].task
        with nothing_written(api.store):
            refused(tick(api, lists.token("a"), item.ref), (409, "passage-settled"))
            refused(comment(api, lists.token("a"), item.ref), (409, "passage-settled"))

    @pytest.mark.parametrize(
        ("method", "path", "body"),
        [
            # Reading its own checklist's item.
            ("GET", "/api/tasks/{item}", None),
            # Listing the lists.
            ("GET", "/api/lists", None),
            # Renaming its own item.
            ("PATCH", "/api/tasks/{item}", {"expectedRevision": 1, "title": "Renamed"}),
            # Trashing its own item.
            ("POST", "/api/tasks/{item}/trash", {"expectedRevision": 1}),
            # Reopening its own item.
            ("POST", "/api/tasks/{item}/reopen", {"expectedRevision": 1}),
            # Adding an item to its own checklist.
            ("POST", "/api/lists/{list}/tasks", {"title": "More", "parent": "{item}"}),
            # Reading the item's history.
            ("GET", "/api/tasks/{item}/history", None),
        ],
    )
    def test_a_passage_token_is_no_credential_anywhere_else(
        self,
        api: ApiWorld,
        lists: Checklists,
        method: str,
        path: str,
        body: dict[str, Any] | None,
    ) -> None:
        item = lists.tree("a").children[1].task
        names = {"item": item.ref, "list": str(lists.list_id)}
        url = path.format(**names)
        sent = (
            None
            if body is None
            else {k: str(v).format(**names) if isinstance(v, str) else v for k, v in body.items()}
        )
        with nothing_written(api.store):
            reply = api.client.request(method, url, json=sent, headers=passage(lists.token("a")))
            refused(reply, (401, "unauthenticated"))
