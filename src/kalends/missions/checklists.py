"""A schedule's checklist template made real tasks, once per passage (SPEC §4 "Templates").

Each workspace has one task list for its passages' checklists (:func:`workspace_list`),
made on first need (a schedule given a template, or else its first checklist) and named
after the workspace. Its members are the workspace's
members at that moment, each with the list role of the same name (workspace owner →
list owner, editor → editor, viewer → viewer: the two scopes name their roles alike and
rank them alike). From then on the list's members are the list's own business
(``kalends list share``): a later change of the workspace's members does not reach it.
An owner may archive it: checklists are still created there (a reservation never fails
over a list's setting), but nobody, passages included, can tick them until it is active.

Each admitted passage gets a checklist there (:func:`create_checklist`): a root task
titled after the passage's slot (:func:`slot_title`) with the template's items nested
below it in order, recorded under the passage's ID in ``passage_checklists``. The
passage's own token may tick and comment those tasks and nothing else
(:mod:`kalends.missions.passage_tasks`); at settlement :func:`checklist_counts` says how
many items are open and done.

The tasks are created by the passages' actor (:data:`PASSAGES_ACTOR_ID`), a row of the
actors table that no person can register (its handle is outside the handle pattern)
and that holds no role anywhere: what a passage writes to its checklist is recorded as
that actor's, with the passage named in the checklist's history.

Every function here runs inside a transaction the caller holds, and takes its ``now``:
the scheduler's reservation writes the checklist in the same compare-and-swap
transaction that reserves the passage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.civil import get_zone, wall_of
from kalends.clock import require_aware
from kalends.errors import Conflict, InvalidInput, NotFound
from kalends.identity import Role
from kalends.missions.config_template import TemplateItem
from kalends.missions.limits import MAX_TEMPLATE_ITEMS
from kalends.storage.among import among
from kalends.storage.identity_tables import actors
from kalends.storage.ids import ids_at
from kalends.storage.mission_tables import (
    PASSAGE_ID_LENGTH,
    passage_checklists,
    schedules,
    workspace_lists,
    workspace_members,
    workspaces,
)
from kalends.storage.prepared import inserting
from kalends.storage.upsert import insert_missing
from kalends.tasks import (
    OutlineItem,
    TreeSpec,
    insert_list,
    insert_tree,
    insert_trees,
    subtree_counts,
    subtree_items,
)

__all__ = [
    "PASSAGES_ACTOR_HANDLE",
    "PASSAGES_ACTOR_ID",
    "ChecklistSpec",
    "ChecklistTaken",
    "checklist_counts",
    "checklist_items",
    "checklist_of",
    "create_checklist",
    "create_checklists",
    "slot_title",
    "workspace_list",
]

PASSAGES_ACTOR_ID = UUID("5f0f0db2-f372-4e8d-9a1c-6b616c656e64")
"""The actor that creates passages' checklists and acts for a passage on them."""

PASSAGES_ACTOR_HANDLE = "kalends:passages"
"""Its handle: a colon is outside the handle pattern, so no person can take it first."""

PASSAGES_ACTOR_NAME = "Passages"


class ChecklistTaken(Conflict):
    """The passage already has a checklist, with another ID than the one given."""

    code = "checklist-taken"


_LIST_OF_WORKSPACE = select(workspace_lists.c.list_id).where(
    workspace_lists.c.workspace_id == bindparam("workspace_id")
)
_CHECKLIST_OF_PASSAGE = select(passage_checklists.c.task_id).where(
    passage_checklists.c.passage_id == bindparam("passage_id")
)


def passages_actor(conn: Connection, now: datetime) -> UUID:
    """The passages' actor, created on first need (two writers at once create it once)."""
    insert_missing(
        conn,
        actors,
        [
            {
                "id": PASSAGES_ACTOR_ID,
                "handle": PASSAGES_ACTOR_HANDLE,
                "display_name": PASSAGES_ACTOR_NAME,
                "email": None,
                "created_at": require_aware(now, "now"),
            }
        ],
        ("id",),
    )
    return PASSAGES_ACTOR_ID


def _claim(conn: Connection, workspace_id: UUID, list_id: UUID, now: datetime) -> bool:
    """Records ``list_id`` as the workspace's list unless one is recorded already."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    # RETURNING says whether a row went in: the driver's row count does not (-1).
    statement = (
        dialect.insert(workspace_lists)
        .on_conflict_do_nothing(index_elements=["workspace_id"])
        .returning(workspace_lists.c.list_id)
    )
    found = conn.execute(
        statement, {"workspace_id": workspace_id, "list_id": list_id, "created_at": now}
    )
    return found.first() is not None


def workspace_list(conn: Connection, workspace_id: UUID, now: datetime) -> UUID:
    """The ID of the workspace's task list for its passages' checklists, created (named
    after the workspace, its members given the list role of their workspace role) when
    it has none yet. Safe under two schedulers at once: the workspace's unique key
    decides, and the one that loses leaves no list behind and answers the winner's.
    An unknown workspace is :class:`NotFound`."""
    at = require_aware(now, "now")
    existing = conn.execute(_LIST_OF_WORKSPACE, {"workspace_id": workspace_id}).scalar()
    if existing is not None:
        return existing  # type: ignore[no-any-return]
    name = conn.execute(select(workspaces.c.name).where(workspaces.c.id == workspace_id)).scalar()
    if name is None:
        raise NotFound(f"workspace: no workspace {workspace_id}", field="workspace")
    members = {
        actor_id: Role(role)
        for actor_id, role in conn.execute(
            select(workspace_members.c.actor_id, workspace_members.c.role).where(
                workspace_members.c.workspace_id == workspace_id
            )
        )
    }
    (list_id,) = ids_at(at, 1)
    savepoint = conn.begin_nested()
    try:
        insert_list(conn, list_id, name, members, now=at)
        claimed = _claim(conn, workspace_id, list_id, at)
    except BaseException:
        savepoint.rollback()
        raise
    if claimed:
        savepoint.commit()
        return list_id
    # Another scheduler recorded one first: its list stands, this one is undone.
    savepoint.rollback()
    return conn.execute(_LIST_OF_WORKSPACE, {"workspace_id": workspace_id}).scalar_one()  # type: ignore[no-any-return]


def _check_passage_id(passage_id: object) -> str:
    if not isinstance(passage_id, str) or not passage_id.strip():
        raise InvalidInput("passage_id: a passage ID is required", field="passage_id")
    if len(passage_id) > PASSAGE_ID_LENGTH:
        raise InvalidInput(
            f"passage_id: at most {PASSAGE_ID_LENGTH} characters, got {len(passage_id)}",
            field="passage_id",
        )
    return passage_id


def _check_template(template: object) -> Sequence[TemplateItem]:
    if template is None:
        return ()
    if not isinstance(template, tuple | list) or not all(
        isinstance(item, TemplateItem) for item in template
    ):
        raise InvalidInput("template: the parsed template's items are required", field="template")
    count = 0
    stack: list[TemplateItem] = list(template)
    while stack:
        item = stack.pop()
        count += 1
        stack.extend(item.children)
    if count > MAX_TEMPLATE_ITEMS:
        raise InvalidInput(
            f"template: at most {MAX_TEMPLATE_ITEMS} items in all, got {count}", field="template"
        )
    return template


def create_checklist(
    conn: Connection,
    *,
    checklist_id: UUID,
    workspace_id: UUID,
    title: str,
    template: Sequence[TemplateItem] | None,
    passage_id: str,
    schedule_id: UUID,
    now: datetime,
) -> None:
    """Creates the passage's checklist: the task ``checklist_id`` (minted by the caller,
    which records it in the passage) titled ``title`` at the end of the workspace's list
    (:func:`workspace_list`), with the template's items nested below it in order, and
    records it as ``passage_id``'s. ``None`` or an empty template makes a checklist of no
    items.

    Idempotent by passage: when the passage already has this checklist nothing is
    written; when it has another, :class:`ChecklistTaken` (the caller minted a second
    ID for one passage). The schedule must be one of the workspace's; bad input is
    :class:`InvalidInput` and an unknown workspace or schedule :class:`NotFound`, before
    anything is written.
    """
    at = require_aware(now, "now")
    passage = _check_passage_id(passage_id)
    items = _check_template(template)
    if not isinstance(checklist_id, UUID):
        raise InvalidInput("checklist_id: a UUID is required", field="checklist_id")
    recorded = conn.execute(_CHECKLIST_OF_PASSAGE, {"passage_id": passage}).scalar()
    if recorded is not None:
        _same(recorded, checklist_id, passage)
        return
    holder = conn.execute(
        select(schedules.c.workspace_id).where(schedules.c.id == schedule_id)
    ).scalar()
    if holder != workspace_id:
        raise NotFound(
            f"schedule: no schedule {schedule_id} in workspace {workspace_id}", field="schedule"
        )
    list_id = workspace_list(conn, workspace_id, at)
    actor_id = passages_actor(conn, at)
    savepoint = conn.begin_nested()
    try:
        insert_tree(
            conn,
            list_id=list_id,
            root_id=checklist_id,
            title=title,
            items=items,
            actor_id=actor_id,
            now=at,
            note={"passage_id": passage, "schedule_id": str(schedule_id)},
        )
        conn.execute(
            passage_checklists.insert().values(
                passage_id=passage, schedule_id=schedule_id, task_id=checklist_id, created_at=at
            )
        )
    except IntegrityError:
        # Another transaction recorded this passage's checklist (or took the ID) first.
        savepoint.rollback()
        recorded = conn.execute(_CHECKLIST_OF_PASSAGE, {"passage_id": passage}).scalar()
        if recorded is None:
            raise ChecklistTaken(
                f"checklist_id: the task {checklist_id} exists already", field="checklist_id"
            ) from None
        _same(recorded, checklist_id, passage)
        return
    except BaseException:
        savepoint.rollback()
        raise
    savepoint.commit()


@dataclass(frozen=True, slots=True, kw_only=True)
class ChecklistSpec:
    """One passage's checklist for :func:`create_checklists` (the arguments of
    :func:`create_checklist`)."""

    checklist_id: UUID
    workspace_id: UUID
    title: str
    template: Sequence[TemplateItem] | None
    passage_id: str
    schedule_id: UUID


def create_checklists(
    conn: Connection, specs: Sequence[ChecklistSpec], now: datetime
) -> dict[str, list[dict[str, Any]]]:
    """:func:`create_checklist` for many passages at once (a scheduler's round reserves many
    together): a constant number of statements for the trees, plus one per workspace that
    has no list yet. Returns the items of each checklist it created, by passage, as
    :func:`checklist_items` lists them (a passage whose checklist existed already is not
    among them). Idempotent by passage like :func:`create_checklist`; when another
    transaction recorded one of them meanwhile, they are created one by one instead."""
    at = require_aware(now, "now")
    checked = [
        (spec, _check_passage_id(spec.passage_id), _check_template(spec.template)) for spec in specs
    ]
    if not checked:
        return {}
    recorded = {
        row.passage_id: row.task_id
        for row in conn.execute(
            select(passage_checklists.c.passage_id, passage_checklists.c.task_id).where(
                among(conn, passage_checklists.c.passage_id, [p for _, p, _ in checked])
            )
        )
    }
    todo = []
    for spec, passage, items in checked:
        if passage in recorded:
            _same(recorded[passage], spec.checklist_id, passage)
            continue
        todo.append((spec, passage, items))
    if not todo:
        return {}
    holders = dict(
        conn.execute(
            select(schedules.c.id, schedules.c.workspace_id).where(
                among(conn, schedules.c.id, sorted({spec.schedule_id for spec, _, _ in todo}))
            )
        ).all()
    )
    for spec, _, _ in todo:
        if holders.get(spec.schedule_id) != spec.workspace_id:
            raise NotFound(
                f"schedule: no schedule {spec.schedule_id} in workspace {spec.workspace_id}",
                field="schedule",
            )
    lists = {ws: workspace_list(conn, ws, at) for ws in {spec.workspace_id for spec, _, _ in todo}}
    actor_id = passages_actor(conn, at)
    trees = [
        TreeSpec(
            list_id=lists[spec.workspace_id],
            root_id=spec.checklist_id,
            title=spec.title,
            items=items,
            note={"passage_id": passage, "schedule_id": str(spec.schedule_id)},
        )
        for spec, passage, items in todo
    ]
    savepoint = conn.begin_nested()
    try:
        made = insert_trees(conn, trees, actor_id=actor_id, now=at)
        _INSERT_PASSAGE_CHECKLISTS.many(
            conn,
            [
                {
                    "passage_id": passage,
                    "schedule_id": spec.schedule_id,
                    "task_id": spec.checklist_id,
                    "created_at": at,
                }
                for spec, passage, _ in todo
            ],
        )
    except IntegrityError:
        savepoint.rollback()
        for spec, passage, _ in todo:
            create_checklist(
                conn, checklist_id=spec.checklist_id, workspace_id=spec.workspace_id,
                title=spec.title, template=spec.template, passage_id=passage,
                schedule_id=spec.schedule_id, now=at,
            )  # fmt: skip
        return {}
    except BaseException:
        savepoint.rollback()
        raise
    savepoint.commit()
    return {
        passage: [_item_json(item) for item in items]
        for (_, passage, _), items in zip(todo, made, strict=True)
    }


# A round's checklists in one call of the driver (copied in on PostgreSQL).
_INSERT_PASSAGE_CHECKLISTS = inserting(
    passage_checklists, ("passage_id", "schedule_id", "task_id", "created_at")
)


def _item_json(item: OutlineItem) -> dict[str, Any]:
    return {
        "id": str(item.id),
        "ref": item.ref,
        "parentId": str(item.parent_id),
        "depth": item.depth,
        "title": item.title,
        "status": item.status.value,
        "revision": item.revision,
    }


def _same(recorded: UUID, checklist_id: UUID, passage_id: str) -> None:
    if recorded != checklist_id:
        raise ChecklistTaken(
            f"passage {passage_id} already has the checklist {recorded}",
            field="checklist_id",
            passage=passage_id,
            checklist=str(recorded),
        )


def checklist_of(conn: Connection, passage_id: str) -> UUID | None:
    """The root task of the passage's checklist, or ``None`` when it has none."""
    found: UUID | None = conn.execute(_CHECKLIST_OF_PASSAGE, {"passage_id": passage_id}).scalar()
    return found


def checklist_counts(conn: Connection, checklist_id: UUID) -> tuple[int, int]:
    """``(open, done)`` over the checklist's items at every level below its root; the
    root itself does not count, nor an item in the trash (or below one). An ID that is
    no passage's checklist is :class:`NotFound`."""
    _require_checklist(conn, checklist_id)
    return subtree_counts(conn, checklist_id)


def _require_checklist(conn: Connection, checklist_id: UUID) -> None:
    known = conn.execute(
        select(passage_checklists.c.passage_id).where(passage_checklists.c.task_id == checklist_id)
    ).first()
    if known is None:
        raise NotFound(f"checklist: no passage checklist {checklist_id}", field="checklist")


def checklist_items(conn: Connection, checklist_id: UUID) -> list[dict[str, Any]]:
    """The checklist's live items in order (each before its own items), as a passage's
    input can list them: ``id``, ``ref`` (what ``kalends task done REF`` takes),
    ``parentId``, ``depth`` (1 below the root), ``title``, ``status`` and ``revision``
    (what ``--expect`` takes; 1 until someone changes the item). An ID that is no
    passage's checklist is :class:`NotFound`."""
    _require_checklist(conn, checklist_id)
    return [_item_json(item) for item in subtree_items(conn, checklist_id)]


def slot_title(
    schedule_title: str, slot: datetime | None, zone: str, *, reserved_at: datetime | None = None
) -> str:
    """The checklist's title: the schedule's title and the slot's wall time in ``zone``,
    e.g. ``"Nightly review — 2026-12-02 09:00 (Europe/Berlin)"``. A manual run has no
    slot: its reservation instant stands in, marked ``run now``."""
    checked = _title(schedule_title)
    get_zone(zone)
    if slot is not None:
        instant, mark = require_aware(slot, "slot"), ""
    elif reserved_at is not None:
        instant, mark = require_aware(reserved_at, "reserved_at"), ", run now"
    else:
        raise InvalidInput(
            "slot: a slot, or for a manual run its reservation instant", field="slot"
        )
    wall = wall_of(instant, zone)
    return f"{checked} — {wall:%Y-%m-%d %H:%M} ({zone}{mark})"


def _title(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("title: the schedule's title is required", field="title")
    return value.strip()
