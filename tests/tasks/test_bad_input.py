"""Bad input: every refusal is a clear error with a stable code, and nothing is written."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kalends.errors import (
    AmbiguousLocalTime,
    Conflict,
    Forbidden,
    InvalidInput,
    KalendsError,
    ListArchived,
    NonexistentLocalTime,
    NotFound,
    OpenDescendants,
    ReparentCycle,
    RevisionConflict,
    TaskTrashed,
    UnknownZone,
)
from kalends.tasks import (
    Role,
    Schedule,
    Task,
    TaskService,
    parse_schedule,
)

from .conftest import World
from .support import nothing_written


@dataclass(frozen=True, slots=True)
class Scene:
    """In Home: ``task`` (revision 2) with ``child``, and ``done`` (completed).
    In Work: ``elsewhere``. In the archived list Old: ``old`` with ``old_child``,
    and ``old_done`` (completed). In Home's trash: ``binned`` and, trashed before it,
    its ``binned_child``.
    """

    world: World
    task: Task
    child: Task
    done: Task
    elsewhere: Task
    old: Task
    old_child: Task
    old_done: Task
    binned: Task
    binned_child: Task

    @property
    def tasks(self) -> TaskService:
        return self.world.tasks

    @property
    def alice(self) -> uuid.UUID:
        return self.world.alice.id

    def schedule(self, data: dict[str, Any]) -> Task:
        """Parses ``data`` as a user's schedule and writes it to ``task`` as alice."""
        parsed = parse_schedule(data, self.world.recipient)
        return self.tasks.set_schedule(self.alice, self.task.id, self.task.revision, parsed)


@pytest.fixture(scope="module")
def scene(shared_world: World) -> Scene:
    """Shared by every test of this module, which all write nothing (and prove it)."""
    w = shared_world
    a = w.alice.id
    made = w.tasks.create(a, w.home.id, "Task", tags=["t"])
    task = w.tasks.rename(a, made.id, made.revision, "Task")
    child = w.tasks.create(a, w.home.id, "Child", parent=task.id)
    done = w.tasks.create(a, w.home.id, "Done")
    done = w.tasks.complete(a, done.id, done.revision)
    elsewhere = w.tasks.create(a, w.work.id, "Elsewhere")
    old_list = w.services.directory.create_list(a, "Old")
    w.services.directory.share(a, old_list.id, w.carol.id, Role.VIEWER)
    old = w.tasks.create(a, old_list.id, "Old task")
    old_child = w.tasks.create(a, old_list.id, "Old child", parent=old.id)
    old_done = w.tasks.create(a, old_list.id, "Old done")
    old_done = w.tasks.complete(a, old_done.id, old_done.revision)
    w.services.directory.archive(a, old_list.id)
    binned = w.tasks.create(a, w.home.id, "Binned")
    binned_child = w.tasks.create(a, w.home.id, "Binned child", parent=binned.id)
    binned_child = w.tasks.trash(a, binned_child.id, binned_child.revision)
    binned = w.tasks.trash(a, binned.id, binned.revision)
    return Scene(w, task, child, done, elsewhere, old, old_child, old_done, binned, binned_child)


Attempt = Callable[[Scene], object]

PARIS_9 = {"local": "2026-03-10T09:00:00", "zone": "Europe/Paris"}


def email(**time: str) -> dict[str, str]:
    return {"channel": "email", **(time or PARIS_9)}


REFUSALS = [
    # --- unknown things ---
    # A list ID nobody created.
    pytest.param(
        lambda s: s.tasks.create(s.alice, uuid.uuid4(), "x"),
        NotFound,
        "not-found",
        id="unknown-list-id",
    ),
    # A list name the actor has none of.
    pytest.param(
        lambda s: s.tasks.create(s.alice, "Nope", "x"),
        NotFound,
        "not-found",
        id="unknown-list-name",
    ),
    # A task ID nobody created.
    pytest.param(
        lambda s: s.tasks.rename(s.alice, uuid.uuid4(), 1, "x"),
        NotFound,
        "not-found",
        id="unknown-task-id",
    ),
    # A reference that cannot exist ("1" is not in the alphabet).
    pytest.param(
        lambda s: s.tasks.get(s.alice, "ZZZZZ1"), NotFound, "not-found", id="unknown-task-ref"
    ),
    # An actor handle nobody registered.
    pytest.param(
        lambda s: s.tasks.create("nobody", s.world.home.id, "x"),
        NotFound,
        "not-found",
        id="unknown-actor",
    ),
    # An actor ID nobody registered.
    pytest.param(
        lambda s: s.tasks.get(uuid.uuid4(), s.task.id), NotFound, "not-found", id="unknown-actor-id"
    ),
    # A parent that does not exist.
    pytest.param(
        lambda s: s.tasks.create(s.alice, s.world.home.id, "x", parent=uuid.uuid4()),
        NotFound,
        "not-found",
        id="unknown-parent",
    ),
    # A section the list does not have.
    pytest.param(
        lambda s: s.tasks.create(s.alice, s.world.home.id, "x", section="Attic"),
        NotFound,
        "not-found",
        id="unknown-section",
    ),
    # An attachment that does not exist.
    pytest.param(
        lambda s: s.tasks.attachment(s.alice, uuid.uuid4()),
        NotFound,
        "not-found",
        id="unknown-attachment",
    ),
    # A status that does not exist, as a tree filter.
    pytest.param(
        lambda s: s.tasks.tree(s.alice, s.world.home.id, status="done"),
        InvalidInput,
        "invalid-input",
        id="unknown-status-filter",
    ),
    # --- titles and texts ---
    # A blank title.
    pytest.param(
        lambda s: s.tasks.create(s.alice, s.world.home.id, "  \t "),
        InvalidInput,
        "invalid-input",
        id="blank-title",
    ),
    # A title of 501 characters.
    pytest.param(
        lambda s: s.tasks.create(s.alice, s.world.home.id, "x" * 501),
        InvalidInput,
        "invalid-input",
        id="long-title-create",
    ),
    # Renaming to 501 characters.
    pytest.param(
        lambda s: s.tasks.rename(s.alice, s.task.id, s.task.revision, "x" * 501),
        InvalidInput,
        "invalid-input",
        id="long-title-rename",
    ),
    # Renaming to blank.
    pytest.param(
        lambda s: s.tasks.rename(s.alice, s.task.id, s.task.revision, ""),
        InvalidInput,
        "invalid-input",
        id="blank-title-rename",
    ),
    # A description one byte over 64 KiB.
    pytest.param(
        lambda s: s.tasks.describe(s.alice, s.task.id, s.task.revision, "x" * (64 * 1024 + 1)),
        InvalidInput,
        "invalid-input",
        id="long-description",
    ),
    # A blank tag.
    pytest.param(
        lambda s: s.tasks.tag(s.alice, s.task.id, s.task.revision, [" "]),
        InvalidInput,
        "invalid-input",
        id="blank-tag",
    ),
    # Untagging nothing.
    pytest.param(
        lambda s: s.tasks.untag(s.alice, s.task.id, s.task.revision, []),
        InvalidInput,
        "invalid-input",
        id="no-tags",
    ),
    # A blank comment.
    pytest.param(
        lambda s: s.tasks.comment(s.alice, s.task.id, "   "),
        InvalidInput,
        "invalid-input",
        id="blank-comment",
    ),
    # An attachment whose media type is not one.
    pytest.param(
        lambda s: s.tasks.attach(s.alice, s.task.id, "a.txt", "text", b"x"),
        InvalidInput,
        "invalid-input",
        id="bad-media-type",
    ),
    # --- revisions ---
    # An expected revision that is not a whole number.
    pytest.param(
        lambda s: s.tasks.rename(s.alice, s.task.id, "2", "x"),
        InvalidInput,
        "invalid-input",
        id="revision-not-int",
    ),
    # --- dates, times and zones ---
    # A due date that is not a calendar date.
    pytest.param(
        lambda s: s.schedule({"due": "2026-02-30"}), InvalidInput, "invalid-input", id="due-feb-30"
    ),
    # A planned date that is not a calendar date.
    pytest.param(
        lambda s: s.schedule({"planned": "2026-02-30"}),
        InvalidInput,
        "invalid-input",
        id="planned-feb-30",
    ),
    # A planned date with a time.
    pytest.param(
        lambda s: s.schedule({"planned": "2026-03-01T09:00:00"}),
        InvalidInput,
        "invalid-input",
        id="planned-with-time",
    ),
    # A timed due whose local date is not a calendar date.
    pytest.param(
        lambda s: s.schedule({"due": {"local": "2026-02-30T09:00:00", "zone": "Europe/Paris"}}),
        InvalidInput,
        "invalid-input",
        id="due-local-feb-30",
    ),
    # A date written another way.
    pytest.param(
        lambda s: s.schedule({"due": "10/03/2026"}), InvalidInput, "invalid-input", id="due-not-iso"
    ),
    # A due time without a zone, as text.
    pytest.param(
        lambda s: s.schedule({"due": "2026-03-10T09:00:00"}),
        InvalidInput,
        "invalid-input",
        id="due-time-no-zone",
    ),
    # A due time without a zone, as an object.
    pytest.param(
        lambda s: s.schedule({"due": {"local": "2026-03-10T09:00:00"}}),
        InvalidInput,
        "invalid-input",
        id="due-object-no-zone",
    ),
    # A due time with an offset in place of a zone.
    pytest.param(
        lambda s: s.schedule({"due": {"local": "2026-03-10T09:00:00", "zone": "+02:00"}}),
        UnknownZone,
        "unknown-zone",
        id="zone-offset",
    ),
    # A zone that does not exist.
    pytest.param(
        lambda s: s.schedule({"due": {"local": "2026-03-10T09:00:00", "zone": "Mars/Olympus"}}),
        UnknownZone,
        "unknown-zone",
        id="zone-unknown",
    ),
    # A due time the spring-forward gap skips.
    pytest.param(
        lambda s: s.schedule({"due": {"local": "2026-03-08T02:30:00", "zone": "America/New_York"}}),
        NonexistentLocalTime,
        "nonexistent-local-time",
        id="due-in-dst-gap",
    ),
    # A due time the fall-back overlap repeats.
    pytest.param(
        lambda s: s.schedule({"due": {"local": "2026-11-01T01:30:00", "zone": "America/New_York"}}),
        AmbiguousLocalTime,
        "ambiguous-local-time",
        id="due-in-dst-overlap",
    ),
    # A reminder in the gap.
    pytest.param(
        lambda s: s.schedule(
            {"reminders": [email(local="2026-03-29T02:30:00", zone="Europe/Paris")]}
        ),
        NonexistentLocalTime,
        "nonexistent-local-time",
        id="reminder-in-dst-gap",
    ),
    # A reminder in the overlap.
    pytest.param(
        lambda s: s.schedule(
            {"reminders": [email(local="2026-10-25T02:30:00", zone="Europe/Paris")]}
        ),
        AmbiguousLocalTime,
        "ambiguous-local-time",
        id="reminder-in-dst-overlap",
    ),
    # --- priorities ---
    # Below the range.
    pytest.param(
        lambda s: s.schedule({"priority": 0}), InvalidInput, "invalid-input", id="priority-0"
    ),
    # Above the range.
    pytest.param(
        lambda s: s.schedule({"priority": 4}), InvalidInput, "invalid-input", id="priority-4"
    ),
    # Not a number.
    pytest.param(
        lambda s: s.schedule({"priority": "high"}),
        InvalidInput,
        "invalid-input",
        id="priority-text",
    ),
    # --- reminders ---
    # A reminder without a time.
    pytest.param(
        lambda s: s.schedule({"reminders": [{"channel": "email"}]}),
        InvalidInput,
        "invalid-input",
        id="reminder-untimed",
    ),
    # A reminder with a date but no time.
    pytest.param(
        lambda s: s.schedule({"reminders": [email(local="2026-03-10", zone="Europe/Paris")]}),
        InvalidInput,
        "invalid-input",
        id="reminder-date-only",
    ),
    # A reminder without a zone.
    pytest.param(
        lambda s: s.schedule({"reminders": [email(local="2026-03-10T09:00:00")]}),
        InvalidInput,
        "invalid-input",
        id="reminder-no-zone",
    ),
    # A channel kalends does not have.
    pytest.param(
        lambda s: s.schedule({"reminders": [{**email(), "channel": "sms"}]}),
        InvalidInput,
        "invalid-input",
        id="channel-sms",
    ),
    # Two reminders on one channel at one instant.
    pytest.param(
        lambda s: s.schedule({"reminders": [email(), email()]}),
        InvalidInput,
        "invalid-input",
        id="duplicate-reminder",
    ),
    # The same instant written in two zones is still the same instant.
    pytest.param(
        lambda s: s.schedule(
            {
                "reminders": [
                    email(local="2026-03-10T09:00:00", zone="Europe/Paris"),
                    email(local="2026-03-10T08:00:00", zone="Europe/London"),
                ]
            }
        ),
        InvalidInput,
        "invalid-input",
        id="duplicate-reminder-other-zone",
    ),
    # More reminders than a schedule holds.
    pytest.param(
        lambda s: s.schedule(
            {
                "reminders": [
                    email(local=f"2026-03-10T09:{m:02}:00", zone="Europe/Paris") for m in range(21)
                ]
            }
        ),
        InvalidInput,
        "invalid-input",
        id="too-many-reminders",
    ),
    # A recipient who is not a member of the list.
    pytest.param(
        lambda s: s.schedule({"reminders": [{**email(), "recipient": "dave"}]}),
        Forbidden,
        "forbidden",
        id="recipient-not-member",
    ),
    # --- permissions ---
    # A viewer renaming.
    pytest.param(
        lambda s: s.tasks.rename(s.world.carol.id, s.task.id, s.task.revision, "x"),
        Forbidden,
        "forbidden",
        id="viewer-renames",
    ),
    # A viewer creating.
    pytest.param(
        lambda s: s.tasks.create(s.world.carol.id, s.world.home.id, "x"),
        Forbidden,
        "forbidden",
        id="viewer-creates",
    ),
    # A viewer commenting.
    pytest.param(
        lambda s: s.tasks.comment(s.world.carol.id, s.task.id, "x"),
        Forbidden,
        "forbidden",
        id="viewer-comments",
    ),
    # A viewer completing.
    pytest.param(
        lambda s: s.tasks.complete(s.world.carol.id, s.child.id, s.child.revision),
        Forbidden,
        "forbidden",
        id="viewer-completes",
    ),
    # A viewer scheduling.
    pytest.param(
        lambda s: s.tasks.set_schedule(
            s.world.carol.id, s.task.id, s.task.revision, Schedule(priority=1)
        ),
        Forbidden,
        "forbidden",
        id="viewer-schedules",
    ),
    # A viewer attaching.
    pytest.param(
        lambda s: s.tasks.attach(s.world.carol.id, s.task.id, "a.txt", "text/plain", b"x"),
        Forbidden,
        "forbidden",
        id="viewer-attaches",
    ),
    # A non-member reading a task: told as for a task that does not exist.
    pytest.param(
        lambda s: s.tasks.get(s.world.dave.id, s.task.id),
        NotFound,
        "not-found",
        id="outsider-gets",
    ),
    # A non-member reading a list.
    pytest.param(
        lambda s: s.tasks.tree(s.world.dave.id, s.world.home.id),
        NotFound,
        "not-found",
        id="outsider-tree",
    ),
    # A non-member reading history.
    pytest.param(
        lambda s: s.tasks.history(s.world.dave.id, s.task.ref),
        NotFound,
        "not-found",
        id="outsider-history",
    ),
    # A non-member writing.
    pytest.param(
        lambda s: s.tasks.rename(s.world.dave.id, s.task.id, s.task.revision, "x"),
        NotFound,
        "not-found",
        id="outsider-renames",
    ),
    # Moving a subtree to a list the actor only views.
    pytest.param(
        lambda s: s.tasks.move_to_list(s.world.bob.id, s.task.id, s.task.revision, s.world.work.id),
        Forbidden,
        "forbidden",
        id="move-to-viewed-list",
    ),
    # Moving a subtree to a list the actor is not a member of: as to no list at all.
    pytest.param(
        lambda s: s.tasks.move_to_list(
            s.world.bob.id, s.task.id, s.task.revision, s.world.private.id
        ),
        NotFound,
        "not-found",
        id="move-to-foreign-list",
    ),
    # --- structure ---
    # Reparenting a task under its own child.
    pytest.param(
        lambda s: s.tasks.reparent(s.alice, s.task.id, s.task.revision, s.child.id),
        ReparentCycle,
        "reparent-cycle",
        id="reparent-cycle",
    ),
    # Reparenting under a task of another list.
    pytest.param(
        lambda s: s.tasks.reparent(s.alice, s.task.id, s.task.revision, s.elsewhere.id),
        InvalidInput,
        "invalid-input",
        id="reparent-across-lists",
    ),
    # Creating a child that names another list than its parent's.
    pytest.param(
        lambda s: s.tasks.create(s.alice, s.world.work.id, "x", parent=s.task.id),
        InvalidInput,
        "invalid-input",
        id="create-child-other-list",
    ),
    # Moving a checklist item (not a root) to another list.
    pytest.param(
        lambda s: s.tasks.move_to_list(s.alice, s.child.id, s.child.revision, s.world.work.id),
        InvalidInput,
        "invalid-input",
        id="move-child-to-list",
    ),
    # Moving a task to the list it is in.
    pytest.param(
        lambda s: s.tasks.move_to_list(s.alice, s.task.id, s.task.revision, s.world.home.id),
        InvalidInput,
        "invalid-input",
        id="move-to-same-list",
    ),
    # A move that says nowhere.
    pytest.param(
        lambda s: s.tasks.move(s.alice, s.task.id, s.task.revision),
        InvalidInput,
        "invalid-input",
        id="move-nowhere",
    ),
    # Before and after at once.
    pytest.param(
        lambda s: s.tasks.move(
            s.alice, s.task.id, s.task.revision, before=s.done.id, after=s.done.id
        ),
        InvalidInput,
        "invalid-input",
        id="move-before-and-after",
    ),
    # Next to a task that is not a sibling.
    pytest.param(
        lambda s: s.tasks.move(s.alice, s.task.id, s.task.revision, before=s.child.id),
        InvalidInput,
        "invalid-input",
        id="move-next-to-non-sibling",
    ),
    # --- state ---
    # Completing a completed task.
    pytest.param(
        lambda s: s.tasks.complete(s.alice, s.done.id, s.done.revision),
        Conflict,
        "conflict",
        id="complete-twice",
    ),
    # Completing a task with an open child without complete_subtree.
    pytest.param(
        lambda s: s.tasks.complete(s.alice, s.task.id, s.task.revision),
        OpenDescendants,
        "open-descendants",
        id="complete-open-child",
    ),
    # Reopening an open task.
    pytest.param(
        lambda s: s.tasks.reopen(s.alice, s.task.id, s.task.revision),
        Conflict,
        "conflict",
        id="reopen-open",
    ),
    # Renaming a trashed task.
    pytest.param(
        lambda s: s.tasks.rename(s.alice, s.binned.id, s.binned.revision, "x"),
        TaskTrashed,
        "task-trashed",
        id="rename-trashed",
    ),
    # Creating a checklist item under a trashed task.
    pytest.param(
        lambda s: s.tasks.create(s.alice, s.world.home.id, "x", parent=s.binned.id),
        TaskTrashed,
        "task-trashed",
        id="create-under-trashed",
    ),
    # Restoring a task whose parent is still in the trash.
    pytest.param(
        lambda s: s.tasks.restore(s.alice, s.binned_child.id, s.binned_child.revision),
        TaskTrashed,
        "task-trashed",
        id="restore-under-trashed-parent",
    ),
    # Reparenting under a trashed task.
    pytest.param(
        lambda s: s.tasks.reparent(s.alice, s.done.id, s.done.revision, s.binned.id),
        TaskTrashed,
        "task-trashed",
        id="reparent-under-trashed",
    ),
    # Restoring a task not in the trash.
    pytest.param(
        lambda s: s.tasks.restore(s.alice, s.task.id, s.task.revision),
        Conflict,
        "conflict",
        id="restore-live",
    ),
]


class TestRefusals:
    @pytest.mark.parametrize(("attempt", "error", "code"), REFUSALS)
    def test_bad_input_is_refused_with_a_stable_code_and_nothing_written(
        self, scene: Scene, attempt: Attempt, error: type[KalendsError], code: str
    ) -> None:
        with nothing_written(scene.world.store), pytest.raises(error) as caught:
            attempt(scene)

        assert caught.value.code == code
        assert caught.value.message
        if isinstance(caught.value, InvalidInput):
            # The error names the field it is about.
            assert caught.value.field

    @pytest.mark.parametrize(
        "attempt",
        [
            # Rename.
            lambda s, r: s.tasks.rename(s.alice, s.task.id, r, "x"),
            # Describe.
            lambda s, r: s.tasks.describe(s.alice, s.task.id, r, "x"),
            # Tag.
            lambda s, r: s.tasks.tag(s.alice, s.task.id, r, ["x"]),
            # Move.
            lambda s, r: s.tasks.move(s.alice, s.task.id, r, section="Garden"),
            # Move to another list.
            lambda s, r: s.tasks.move_to_list(s.alice, s.task.id, r, s.world.work.id),
            # Reparent.
            lambda s, r: s.tasks.reparent(s.alice, s.task.id, r, s.done.id),
            # Schedule.
            lambda s, r: s.tasks.set_schedule(s.alice, s.task.id, r, Schedule(priority=1)),
            # Complete.
            lambda s, r: s.tasks.complete(s.alice, s.task.id, r, complete_subtree=True),
            # Trash.
            lambda s, r: s.tasks.trash(s.alice, s.task.id, r),
        ],
    )
    def test_a_stale_revision_is_a_conflict_naming_both_revisions(
        self, scene: Scene, attempt: Callable[[Scene, int], object]
    ) -> None:
        with nothing_written(scene.world.store), pytest.raises(RevisionConflict) as caught:
            attempt(scene, 1)

        assert (caught.value.code, caught.value.expected, caught.value.actual) == (
            "revision-conflict",
            1,
            2,
        )

    def test_a_stale_revision_on_reopen_and_restore_is_a_conflict_too(self, scene: Scene) -> None:
        with nothing_written(scene.world.store):
            with pytest.raises(RevisionConflict) as on_restore:
                scene.tasks.restore(scene.alice, scene.task.id, 1)
            with pytest.raises(RevisionConflict) as on_reopen:
                scene.tasks.reopen(scene.alice, scene.done.id, scene.done.revision + 5)

        assert (on_restore.value.expected, on_restore.value.actual) == (1, 2)
        assert (on_reopen.value.expected, on_reopen.value.actual) == (7, 2)


class TestArchivedList:
    @pytest.mark.parametrize(
        "attempt",
        [
            # Create a task.
            lambda s: s.tasks.create(s.alice, "Old", "x"),
            # Create a checklist item.
            lambda s: s.tasks.create(s.alice, s.old.list_id, "x", parent=s.old.id),
            # Rename.
            lambda s: s.tasks.rename(s.alice, s.old.id, s.old.revision, "x"),
            # Schedule.
            lambda s: s.tasks.set_schedule(s.alice, s.old.id, s.old.revision, Schedule(priority=2)),
            # Complete.
            lambda s: s.tasks.complete(s.alice, s.old_child.id, s.old_child.revision),
            # Reopen.
            lambda s: s.tasks.reopen(s.alice, s.old_done.id, s.old_done.revision),
            # Trash.
            lambda s: s.tasks.trash(s.alice, s.old.id, s.old.revision),
            # Comment.
            lambda s: s.tasks.comment(s.alice, s.old.id, "x"),
            # Attach.
            lambda s: s.tasks.attach(s.alice, s.old.id, "a", "text/plain", b"x"),
            # Move out of it.
            lambda s: s.tasks.move_to_list(s.alice, s.old.id, s.old.revision, s.world.work.id),
            # Move into it.
            lambda s: s.tasks.move_to_list(s.alice, s.elsewhere.id, s.elsewhere.revision, "Old"),
        ],
    )
    def test_writes_to_an_archived_list_are_refused(self, scene: Scene, attempt: Attempt) -> None:
        with nothing_written(scene.world.store), pytest.raises(ListArchived) as caught:
            attempt(scene)

        assert caught.value.code == "list-archived"

    def test_an_archived_list_can_still_be_read(self, scene: Scene) -> None:
        with nothing_written(scene.world.store):
            detail = scene.tasks.get(scene.world.carol.id, scene.old.id)
            tree = scene.tasks.tree(scene.world.carol.id, scene.old.list_id)

        assert detail.task.title == "Old task"
        assert detail.list.status.value == "archived"
        assert [n.task.title for n in tree] == ["Old task", "Old done"]
