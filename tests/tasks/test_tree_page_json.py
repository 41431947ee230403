"""The HTTP API's tree pages are made straight from the rows (as JSON values, or as JSON
text the database writes): they must be exactly the domain's JSON (``TreeNode.to_json``)
of the same page, on both databases."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from kalends.tasks import Task, TreeNode, parse_schedule
from kalends.tasks.reads import date_text, instant_text, uuid_text
from tasks.conftest import World


def rich_list(world: World) -> None:
    """Nested checklists, both kinds of due value, reminders, tags, sections, completed
    and trashed tasks, instants with and without microseconds."""
    tasks, alice = world.tasks, world.alice.id
    clock = world.store.clock
    made: list[Task] = []
    for i in range(7):
        root = tasks.create(
            alice,
            world.home.id,
            # Text the database must escape as JSON does: quotes, backslashes, controls.
            f'Root {i} "quoted" \\ back\tslash \u00e9t\u00e9 \U0001f4c5' if i == 5 else f"Root {i}",
            description="d" * i,
            section="Kitchen" if i % 2 else None,
            tags=("urgent", "home", "Zeta", "alpha") if i % 3 == 0 else (),
        )
        made.append(root)
        for j in range(i % 3):
            child = tasks.create(alice, world.home.id, f"Item {i}.{j}", parent=root.id)
            made.append(child)
            if j == 1:
                made.append(tasks.create(alice, world.home.id, f"Sub {i}.{j}", parent=child.id))
        if hasattr(clock, "advance"):
            clock.advance(timedelta(seconds=1, microseconds=0 if i % 2 else 1234))
    timed = {
        "due": {"local": "2026-12-05T09:30:00", "zone": "Europe/Berlin"},
        "priority": 2,
        # Not in time order: reminders keep the order they were given in.
        "reminders": [
            {"channel": "email", "local": "2026-12-05T08:00:00", "zone": "Europe/Berlin"},
            {"channel": "push", "local": "2026-12-04T20:15:00", "zone": "America/New_York"},
            {"channel": "email", "local": "2026-12-04T07:00:00", "zone": "Asia/Tokyo"},
        ],
    }
    dated = {"due": "2026-12-24", "planned": "2026-12-20", "priority": 1}
    for k, task in enumerate(made):
        data = timed if k % 4 == 0 else dated if k % 4 == 1 else None
        if data is not None:
            tasks.set_schedule(alice, task.id, task.revision, parse_schedule(data, world.recipient))
    leaf = tasks.get(alice, made[2].id).task
    tasks.complete(alice, leaf.id, leaf.revision)
    trashed = tasks.get(alice, made[-3].id).task
    tasks.trash(alice, trashed.id, trashed.revision)
    top = tasks.get(alice, made[4].id).task
    if top.parent_id is None:
        tasks.trash(alice, top.id, top.revision)


def pages(world: World, limit: int, include_trashed: bool) -> list[tuple[Any, Any]]:
    out = []
    after: str | None = None
    while True:
        domain = world.tasks.tree_page(
            world.bob.id, world.home.id, limit=limit, after=after, include_trashed=include_trashed
        )
        raw, cursor = world.tasks.tree_page_json(
            world.bob.id, world.home.id, limit=limit, after=after, include_trashed=include_trashed
        )
        text, text_cursor = world.tasks.tree_page_text(
            world.bob.id, world.home.id, limit=limit, after=after, include_trashed=include_trashed
        )
        assert (json.loads(text), text_cursor) == (raw, cursor)
        out.append(([n.to_json() for n in domain.trees], domain.next_after, raw, cursor))
        if cursor is None or len(out) > 50:
            return [((a, b), (c, d)) for a, b, c, d in out]
        after = cursor


@pytest.mark.parametrize("include_trashed", [False, True])
@pytest.mark.parametrize("limit", [1, 2, 5, 200])
def test_a_json_page_is_the_domain_page_to_json(
    world: World, limit: int, include_trashed: bool
) -> None:
    rich_list(world)
    walked = pages(world, limit, include_trashed)
    for domain, raw in walked:
        assert raw == domain
    trees: list[dict[str, Any]] = [tree for (found, _cursor), _raw in walked for tree in found]
    whole = world.tasks.tree(world.bob.id, world.home.id, include_trashed=include_trashed)
    assert trees == [n.to_json() for n in whole]
    assert any(len(t["reminders"]) == 3 for t in _walk(trees))
    # (their order is the database's collation's, compared with the domain's above)
    assert any(set(t["tags"]) == {"Zeta", "alpha", "home", "urgent"} for t in _walk(trees))
    assert any('"quoted"' in t["title"] for t in _walk(trees))
    assert any(isinstance(t["due"], dict) for t in _walk(trees))
    assert any(t["status"] == "completed" for t in _walk(trees))
    assert any(t["trashed"] for t in _walk(trees)) is include_trashed


def _walk(trees: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for tree in trees:
        found.append(tree)
        found.extend(_walk(tree["children"]))
    return found


def test_stored_values_format_as_the_domain_formats_them(world: World) -> None:
    task = world.tasks.create(world.alice.id, world.home.id, "Formats")
    domain = TreeNode(task=task).to_json()
    assert uuid_text(task.id.hex) == uuid_text(task.id) == domain["id"]
    assert uuid_text(None) is None and instant_text(None) is None and date_text(None) is None
    assert instant_text(task.created_at) == domain["created_at"]
    stored = task.created_at.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    assert instant_text(stored) == domain["created_at"]
    assert instant_text("2026-01-02T03:04:05.000000Z") == "2026-01-02T03:04:05Z"
    assert date_text("2026-12-24") == "2026-12-24"


@pytest.mark.parametrize("include_trashed", [False, True])
def test_the_whole_list_as_json_is_the_domain_tree_to_json(
    world: World, include_trashed: bool
) -> None:
    rich_list(world)
    whole = world.tasks.tree(world.bob.id, world.home.id, include_trashed=include_trashed)
    raw = world.tasks.tree_json(world.bob.id, world.home.id, include_trashed=include_trashed)
    assert raw == [n.to_json() for n in whole]
    text = world.tasks.tree_text(world.bob.id, world.home.id, include_trashed=include_trashed)
    assert json.loads(text) == raw
    assert len(_walk(raw)) >= 10
    assert world.tasks.tree_json(world.bob.id, world.work.id) == []
    assert world.tasks.tree_text(world.bob.id, world.work.id) == "[]"
