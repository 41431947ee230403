"""What a passage may do with questions, with its own token (``kalends ask``): ask one in
its own workspace, read its own questions, acknowledge an interface answer it received,
and decide one itself. Nothing else.

The token (``KALENDS_PASSAGE_TOKEN``) is checked first, against the runtime directory
that signed it (the ``speaker``: refused when forged, foreign or spent because the
passage settled). It gives the passage's ID and the schedule its start record names;
the start record is the runtime's own (written at admission, never changed, checked
against the token), so a question's schedule, and the workspace that schedule is in,
come from the passage's own records, never from what it sends. A passage whose schedule
this server's database does not know (another database's worker, a record without one)
asks nothing (:class:`PassageUnscheduled`).

Another passage's question is, to a passage, one that does not exist
(:class:`~kalends.errors.NotFound`).

The passage's own read is the hand-over of an interface answer (seed 002, "Wayfinder
human decision mark"). Its first read of the answer delivers the attempt's ``pending``
mark (``delivered_at``), in the read's transaction; people's reads never do. The
passage then acknowledges the attempt that recorded the question's current answer
(:meth:`PassageQuestions.received`): the mark becomes ``confirmed`` if the session or
device that answered is still live, else the acknowledgement is refused
(:class:`~kalends.questions.records.PrincipalGone`) and the mark stays pending; any
other attempt is refused. A refusal writes nothing. A passage that ends without reading
its answer definitely failed the hand-over: its mark is removed at its archive
(:func:`~kalends.questions.records.drop_undelivered_marks`). Each method is one
transaction, apart from the read that finds an answer to deliver, which reads again in
the transaction that delivers it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.errors import Conflict, InvalidInput, NotFound
from kalends.identity import parse_uuid
from kalends.questions import records
from kalends.questions.service import Questions
from kalends.questions.values import (
    AnswerVia,
    Mark,
    MarkState,
    Question,
    QuestionState,
    check_prompt,
    check_tag,
)
from kalends.storage.mission_tables import schedules

__all__ = ["AttemptRefused", "PassageQuestions", "PassageUnscheduled"]


class PassageUnscheduled(NotFound):
    """The passage's start record names no schedule of this server's database."""

    code = "passage-without-schedule"


class AttemptRefused(Conflict):
    """The attempt acknowledged is not the one that recorded the question's current
    interface answer; nothing was written."""

    code = "attempt-refused"


@dataclass(frozen=True, slots=True)
class PassageQuestions:
    """Questions as one passage reaches them with its token.

    ``speaker`` gives the passage ID and the schedule ID (from its start record) of the
    passage a token speaks for, or refuses the token (the HTTP API's is
    :meth:`~kalends.missions.runtime.server_passages.ServerPassages.speaking`); it reads
    no database.
    """

    questions: Questions
    speaker: Callable[[str], tuple[str, str | None]]

    def ask(self, token: str, prompt: object, fields: object, tag: object = None) -> Question:
        """A new open question of the token's passage, in the workspace of its schedule.
        Refused past the passage's open questions' limit
        (:class:`~kalends.errors.LimitReached`); bad input is
        :class:`~kalends.errors.InvalidInput` naming the field."""
        passage_id, schedule = self.speaker(token)
        text, checked_tag = check_prompt(prompt), check_tag(tag)
        store = self.questions.store

        def run(conn: Connection) -> Question:
            schedule_id, workspace_id = _schedule_of(conn, passage_id, schedule)
            return records.ask(
                conn,
                store.clock.now(),
                workspace_id=workspace_id,
                schedule_id=schedule_id,
                passage_id=passage_id,
                prompt=text,
                fields=fields,
                tag=checked_tag,
            )

        return store.run(run)

    def get(self, token: str, question: UUID | str) -> Question:
        """One of the token's passage's questions; any other is
        :class:`~kalends.errors.NotFound`. Reading an interface answer whose mark was not
        delivered yet delivers it (:func:`~kalends.questions.records.mark_delivered`),
        in the transaction that returns that answer; a question still open is only read
        (a waiting passage reads it every few seconds)."""
        passage_id, _schedule = self.speaker(token)
        question_id = records.check_question_id(question)
        store = self.questions.store

        def read(conn: Connection) -> tuple[Question, bool]:
            found = _own(conn, passage_id, question_id)
            return found, _undelivered(conn, found)

        found, undelivered = store.run(read, write=False)
        if not undelivered:
            return found

        def deliver(conn: Connection) -> Question:
            again = _own(conn, passage_id, question_id, lock=True)
            records.mark_delivered(conn, store.clock.now(), again)
            return again

        return store.run(deliver)

    def received(self, token: str, question: UUID | str, attempt_id: object) -> Mark:
        """The passage received the interface answer recorded by ``attempt_id``: that
        hand-over's mark becomes ``confirmed`` (again: it stays so) while the session or
        device that answered is still live, else
        :class:`~kalends.questions.records.PrincipalGone` (the answer stands, the mark
        stays pending). An attempt that did not record the question's current answer, or
        a question not answered through the interface, is :class:`AttemptRefused`;
        nothing is written on a refusal."""
        passage_id, _schedule = self.speaker(token)
        question_id = records.check_question_id(question)
        attempt = _attempt(attempt_id)
        store = self.questions.store

        def run(conn: Connection) -> Mark:
            found = _own(conn, passage_id, question_id, lock=True)
            if found.state is not QuestionState.ANSWERED or found.answered_via is not AnswerVia.UI:
                raise AttemptRefused(
                    f"attemptId: question {question_id} holds no interface answer to "
                    "acknowledge; nothing was written",
                    field="attemptId",
                )
            if found.attempt_id != attempt:
                raise AttemptRefused(
                    f"attemptId: {attempt} is not the attempt of the question's current "
                    "answer; nothing was written",
                    field="attemptId",
                )
            return records.confirm_handover(conn, store.clock.now(), question_id, attempt)

        return store.run(run)

    def decide(self, token: str, question: UUID | str, answer: object) -> Question:
        """The passage settles its own open question itself (``coordinator``, never a
        mark and never a person's decision)."""
        passage_id, _schedule = self.speaker(token)
        return self.questions.coordinator_decision(passage_id, question, answer)


def _attempt(raw: object) -> str:
    found = parse_uuid(raw, "attemptId") if isinstance(raw, str) else None
    if found is None:
        raise InvalidInput(f"attemptId: not an attempt ID: {raw!r}", field="attemptId")
    return str(found)


def _undelivered(conn: Connection, question: Question) -> bool:
    """Whether ``question`` holds an interface answer whose pending mark the passage has
    not read yet."""
    if question.answered_via is not AnswerVia.UI or question.attempt_id is None:
        return False
    return any(
        mark.attempt_id == question.attempt_id
        and mark.state is MarkState.PENDING
        and mark.delivered_at is None
        for mark in records.read_marks(conn, question.id)
    )


def _own(conn: Connection, passage_id: str, question_id: UUID, *, lock: bool = False) -> Question:
    found = records.read_question(conn, question_id, lock=lock)
    if found is None or found.passage_id != passage_id:
        raise NotFound(f"question: no question {question_id}", field="question")
    return found


def _schedule_of(conn: Connection, passage_id: str, schedule: str | None) -> tuple[UUID, UUID]:
    """The schedule the start record names and the workspace it is in."""
    refusal = PassageUnscheduled(
        f"passage {passage_id} belongs to no schedule of this server: it cannot ask",
        field="schedule",
    )
    schedule_id = parse_uuid(schedule, "schedule") if schedule is not None else None
    if schedule_id is None:
        raise refusal
    workspace_id = conn.execute(
        select(schedules.c.workspace_id).where(schedules.c.id == schedule_id)
    ).scalar()
    if workspace_id is None:
        raise refusal
    return schedule_id, workspace_id
