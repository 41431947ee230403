"""Question rows, statement by statement, in the caller's transaction: ask, read, answer,
mint and take answer tokens, and the marks of interface answers.

The runtime calls :func:`ask`, :func:`open_for_passage`, :func:`mark_delivered`,
:func:`confirm_handover`, :func:`coordinator_decision`, :func:`withdraw_open` and
:func:`drop_undelivered_marks` directly, with the passage's own token checked elsewhere;
:class:`~kalends.questions.service.Questions` calls the rest after checking the actor's
role. Every change of a question is a compare-and-swap on its revision and state; a
refusal raises before anything is written.

An interface answer's hand-over to its passage (seed 002, "Wayfinder human decision
mark") is the passage's own read of it: its ``pending`` mark is delivered at the
passage's first read (:func:`mark_delivered`), confirmed when the passage acknowledges
it while the session or device that answered is still live (:func:`confirm_handover`),
removed when the passage ended without ever reading it (:func:`drop_undelivered_marks`:
the hand-over definitely failed), and otherwise left pending for good (uncertain).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from kalends.auth import digest, new_secret, principal_live, usable
from kalends.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    LimitReached,
    NotFound,
    RevisionConflict,
)
from kalends.identity import parse_uuid
from kalends.questions.values import (
    AnswerVia,
    Mark,
    MarkState,
    Principal,
    Question,
    QuestionState,
    answer_digest,
    canonical_json,
    check_answer,
    check_passage_id,
    check_prompt,
    check_tag,
    fields_json,
    parse_fields,
    schema_digest,
)
from kalends.storage.ids import ids_at
from kalends.storage.mission_tables import schedules, workspace_members, workspaces
from kalends.storage.question_tables import answer_tokens, question_marks, questions
from kalends.storage.unit_of_work import for_update

__all__ = [
    "ANSWER_TOKEN_PREFIX",
    "ANSWER_TOKEN_TTL",
    "MAX_LIST",
    "MAX_LIVE_TOKENS",
    "MAX_OPEN_PER_PASSAGE",
    "MAX_TOLD",
    "AnswerTokenRefused",
    "PrincipalGone",
    "answered_for_passages",
    "ask",
    "check_answerable",
    "check_question_id",
    "confirm_handover",
    "coordinator_decision",
    "count_open_of_member",
    "drop_undelivered_marks",
    "list_open",
    "mark_delivered",
    "marks_of",
    "mint_token",
    "open_of_member",
    "open_for_passage",
    "read_marks",
    "read_question",
    "record_answer",
    "take_token",
    "withdraw_open",
    "write_mark",
]

# kalends decision: a passage has at most 8 open questions at a time.
MAX_OPEN_PER_PASSAGE = 8
# kalends decision: the next passage is told the answers of at most 32 of the previous
# passage's questions (the newest), which keeps its input bounded.
MAX_TOLD = 32
# kalends decision: an answer token lives 10 minutes, the span of one answering gesture
# (seed 002: the token "expires with that input task").
ANSWER_TOKEN_TTL = timedelta(minutes=10)
# kalends decision: at most 32 unexpired, unused answer tokens per question.
MAX_LIVE_TOKENS = 32
# kalends decision: a listing of open questions shows at most 200, oldest first.
MAX_LIST = 200
# Every answer token's secret starts with this.
ANSWER_TOKEN_PREFIX = "kans_"

_Q = questions.c
_M = question_marks.c
_T = answer_tokens.c


class AnswerTokenRefused(Forbidden):
    """The answer token does not allow this answer; nothing was written and the token is
    not used up."""

    code = "answer-token-refused"


class PrincipalGone(Conflict):
    """The session or device that answered is signed out or revoked: the answer stands,
    but it cannot count as a person's decision; nothing was written."""

    code = "principal-gone"


def check_question_id(raw: object) -> UUID:
    parsed = parse_uuid(raw, "question")
    if parsed is None:
        raise InvalidInput(f"question: not a question ID: {raw!r}", field="question")
    return parsed


def read_question(conn: Connection, question_id: UUID, *, lock: bool = False) -> Question | None:
    query = select(questions).where(_Q.id == question_id)
    row = conn.execute(for_update(query) if lock else query).first()
    return None if row is None else Question.from_row(row)


def read_marks(conn: Connection, question_id: UUID) -> list[Mark]:
    """The question's marks, oldest first."""
    rows = conn.execute(
        select(question_marks)
        .where(_M.question_id == question_id)
        .order_by(_M.created_at, _M.attempt_id)
    ).all()
    return [Mark.from_row(row) for row in rows]


def ask(
    conn: Connection,
    now: datetime,
    *,
    workspace_id: UUID,
    schedule_id: UUID | None,
    passage_id: str,
    prompt: str,
    fields: object,
    tag: str | None = None,
) -> Question:
    """A new open question of the passage ``passage_id`` in ``workspace_id`` (of
    ``schedule_id`` when given, which must be one of the workspace's). Refused past
    :data:`MAX_OPEN_PER_PASSAGE` open questions of the passage
    (:class:`~kalends.errors.LimitReached`)."""
    passage = check_passage_id(passage_id)
    text = check_prompt(prompt)
    parsed = parse_fields(fields)
    checked_tag = check_tag(tag)
    found = conn.execute(select(workspaces.c.id).where(workspaces.c.id == workspace_id)).first()
    if found is None:
        raise NotFound(f"workspace: no workspace {workspace_id}", field="workspace")
    if schedule_id is not None:
        holder = conn.execute(
            select(schedules.c.workspace_id).where(schedules.c.id == schedule_id)
        ).scalar()
        if holder != workspace_id:
            raise NotFound(
                f"schedule: no schedule {schedule_id} in workspace {workspace_id}",
                field="schedule",
            )
    open_now = conn.execute(
        select(func.count()).where(_Q.passage_id == passage, _Q.state == QuestionState.OPEN)
    ).scalar_one()
    if open_now >= MAX_OPEN_PER_PASSAGE:
        raise LimitReached(
            f"questions: a passage has at most {MAX_OPEN_PER_PASSAGE} open questions",
            field="question",
        )
    (question_id,) = ids_at(now, 1)
    conn.execute(
        insert(questions).values(
            id=question_id,
            workspace_id=workspace_id,
            schedule_id=schedule_id,
            passage_id=passage,
            prompt=text,
            fields=canonical_json(fields_json(parsed)),
            schema_digest=schema_digest(text, parsed),
            tag=checked_tag,
            state=QuestionState.OPEN.value,
            revision=1,
            asked_at=now,
            updated_at=now,
        )
    )
    made = read_question(conn, question_id)
    assert made is not None
    return made


def open_for_passage(conn: Connection, passage_id: str) -> list[Question]:
    """The passage's open questions, oldest first: while any is open, its answer is still
    owed to the passage, which holds the passage's settlement."""
    rows = conn.execute(
        select(questions)
        .where(_Q.passage_id == passage_id, _Q.state == QuestionState.OPEN.value)
        .order_by(_Q.asked_at, _Q.id)
    ).all()
    return [Question.from_row(row) for row in rows]


def answered_for_passages(
    conn: Connection, passage_ids: Sequence[str]
) -> dict[str, list[Question]]:
    """The passages' answered questions, oldest first, at most the newest
    :data:`MAX_TOLD` each (what a schedule's next passage is told), in one statement,
    by passage (a passage without an answered question is left out)."""
    if not passage_ids:
        return {}
    rows = conn.execute(
        select(questions)
        .where(_Q.passage_id.in_(list(passage_ids)), _Q.state == QuestionState.ANSWERED.value)
        .order_by(_Q.asked_at, _Q.id)
    ).all()
    found: dict[str, list[Question]] = {}
    for row in rows:
        found.setdefault(row.passage_id, []).append(Question.from_row(row))
    return {passage: told[-MAX_TOLD:] for passage, told in found.items()}


def marks_of(conn: Connection, question_ids: Sequence[UUID]) -> dict[UUID, list[Mark]]:
    """:func:`read_marks` for many questions in one statement, by question."""
    if not question_ids:
        return {}
    rows = conn.execute(
        select(question_marks)
        .where(_M.question_id.in_(list(question_ids)))
        .order_by(_M.created_at, _M.attempt_id)
    ).all()
    found: dict[UUID, list[Mark]] = {}
    for row in rows:
        found.setdefault(row.question_id, []).append(Mark.from_row(row))
    return found


def _open_of_member(actor_id: UUID) -> ColumnElement[bool]:
    """The open questions of the workspaces ``actor_id`` is a member of."""
    member = select(workspace_members.c.workspace_id).where(
        workspace_members.c.actor_id == actor_id
    )
    return _Q.workspace_id.in_(member) & (_Q.state == QuestionState.OPEN.value)


def open_of_member(conn: Connection, actor_id: UUID) -> list[Question]:
    """The open questions over every workspace the actor is a member of, oldest first,
    at most :data:`MAX_LIST`: one statement, whatever the number of workspaces."""
    rows = conn.execute(
        select(questions)
        .where(_open_of_member(actor_id))
        .order_by(_Q.asked_at, _Q.id)
        .limit(MAX_LIST)
    ).all()
    return [Question.from_row(row) for row in rows]


def count_open_of_member(conn: Connection, actor_id: UUID) -> int:
    """How many questions are open over the workspaces the actor is a member of."""
    found = conn.execute(
        select(func.count()).select_from(questions).where(_open_of_member(actor_id))
    ).scalar_one()
    return int(found)


def list_open(conn: Connection, workspace_id: UUID) -> list[Question]:
    """The workspace's open questions, oldest first, at most :data:`MAX_LIST`."""
    rows = conn.execute(
        select(questions)
        .where(_Q.workspace_id == workspace_id, _Q.state == QuestionState.OPEN.value)
        .order_by(_Q.asked_at, _Q.id)
        .limit(MAX_LIST)
    ).all()
    return [Question.from_row(row) for row in rows]


def check_answerable(question: Question, expected_revision: int | None) -> None:
    """Refuses an answer to a question that is no longer open, or (when
    ``expected_revision`` is given) that changed meanwhile."""
    if question.state is not QuestionState.OPEN:
        raise Conflict(
            f"question: the question is {question.state.value}; it takes no answer",
            field="question",
        )
    if expected_revision is not None and question.revision != expected_revision:
        raise RevisionConflict(
            f"the question changed: expected revision {expected_revision}, "
            f"it is {question.revision}",
            expected=expected_revision,
            actual=question.revision,
        )


def record_answer(
    conn: Connection,
    now: datetime,
    question: Question,
    answer: Mapping[str, str | bool],
    *,
    via: AnswerVia,
    actor_id: UUID | None,
    expected_revision: int | None,
    attempt_id: str | None = None,
) -> Question:
    """Records the checked ``answer`` of the open ``question`` (read in this transaction);
    a question no longer open is :class:`~kalends.errors.Conflict`, a revision other than
    ``expected_revision`` :class:`~kalends.errors.RevisionConflict`."""
    check_answerable(question, expected_revision)
    done = conn.execute(
        update(questions)
        .where(
            _Q.id == question.id,
            _Q.revision == question.revision,
            _Q.state == QuestionState.OPEN.value,
        )
        .values(
            state=QuestionState.ANSWERED.value,
            answer=canonical_json(dict(answer)),
            answered_at=now,
            answered_by=actor_id,
            answered_via=via.value,
            attempt_id=attempt_id,
            revision=question.revision + 1,
            updated_at=now,
        )
    )
    if done.rowcount != 1:  # changed between the read and the write (read without a lock)
        raise Conflict("question: the question changed meanwhile", field="question")
    changed = read_question(conn, question.id)
    assert changed is not None
    return changed


def mint_token(
    conn: Connection,
    now: datetime,
    question: Question,
    principal: Principal,
    answer: Mapping[str, str | bool],
) -> str:
    """A one-use answer token for ``answer`` to the open ``question`` by ``principal``;
    only its digest is stored. Tokens of the question that expired are dropped."""
    check_answerable(question, None)
    conn.execute(delete(answer_tokens).where(_T.question_id == question.id, _T.expires_at <= now))
    live = conn.execute(
        select(func.count()).where(_T.question_id == question.id, _T.consumed_at.is_(None))
    ).scalar_one()
    if live >= MAX_LIVE_TOKENS:
        raise LimitReached(
            f"answer tokens: at most {MAX_LIVE_TOKENS} unused tokens per question; "
            "wait for some to expire",
            field="token",
        )
    secret = new_secret(ANSWER_TOKEN_PREFIX)
    (token_id,) = ids_at(now, 1)
    conn.execute(
        insert(answer_tokens).values(
            id=token_id,
            token_hash=digest(secret),
            question_id=question.id,
            schema_digest=question.schema_digest,
            answer_digest=answer_digest(answer),
            principal_kind=principal.kind.value,
            principal_id=principal.id,
            minted_at=now,
            expires_at=now + ANSWER_TOKEN_TTL,
        )
    )
    return secret


def _refused(reason: str) -> AnswerTokenRefused:
    return AnswerTokenRefused(f"token: {reason}; nothing was written", field="token")


def take_token(
    conn: Connection,
    now: datetime,
    question: Question,
    principal: Principal,
    answer: Mapping[str, str | bool],
    secret: object,
) -> None:
    """Uses up the answer token ``secret`` once it is unused, unexpired and bound to
    exactly this question, its current form, this answer and this principal; any other
    token is :class:`AnswerTokenRefused` and stays as it was."""
    row: Any = None
    if usable(secret, ANSWER_TOKEN_PREFIX):
        assert isinstance(secret, str)
        row = conn.execute(
            for_update(select(answer_tokens).where(_T.token_hash == digest(secret)))
        ).first()
    if row is None:
        raise _refused("no such answer token")
    if row.consumed_at is not None:
        raise _refused("the answer token was already used")
    if row.expires_at <= now:
        raise _refused("the answer token has expired")
    if row.question_id != question.id:
        raise _refused("the answer token is for another question")
    if row.schema_digest != question.schema_digest:
        raise _refused("the answer token is for another form of the question")
    if row.answer_digest != answer_digest(answer):
        raise _refused("the answer token is for another answer")
    if row.principal_kind != principal.kind.value or row.principal_id != principal.id:
        raise _refused("the answer token is for another session or device")
    used = conn.execute(
        update(answer_tokens)
        .where(_T.id == row.id, _T.consumed_at.is_(None))
        .values(consumed_at=now)
    )
    if used.rowcount != 1:
        raise _refused("the answer token was already used")


def write_mark(
    conn: Connection, now: datetime, question: Question, principal: Principal, attempt_id: str
) -> Mark:
    """The ``pending`` mark of the interface answer just recorded for ``question``,
    written before the answer is handed to its passage."""
    assert question.answered_at is not None
    conn.execute(
        insert(question_marks).values(
            question_id=question.id,
            attempt_id=attempt_id,
            passage_id=question.passage_id,
            answered_at=question.answered_at,
            via=AnswerVia.UI.value,
            state=MarkState.PENDING.value,
            principal_kind=principal.kind.value,
            principal_id=principal.id,
            created_at=now,
        )
    )
    return _read_mark(conn, question.id, attempt_id, lock=False)


def _read_mark(conn: Connection, question_id: UUID, attempt_id: str, *, lock: bool) -> Mark:
    query = select(question_marks).where(_M.question_id == question_id, _M.attempt_id == attempt_id)
    row = conn.execute(for_update(query) if lock else query).first()
    if row is None:
        raise NotFound(
            f"attempt: no hand-over attempt {attempt_id!r} of question {question_id}",
            field="attempt",
        )
    return Mark.from_row(row)


def _check_attempt_id(raw: object) -> str:
    if not isinstance(raw, str):
        raise InvalidInput(f"attempt: not an attempt ID: {raw!r}", field="attempt")
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        raise InvalidInput(f"attempt: not an attempt ID: {raw!r}", field="attempt") from None


def mark_delivered(conn: Connection, now: datetime, question: Question) -> None:
    """The passage reads ``question``'s interface answer: the ``pending`` mark of the
    attempt that recorded it is delivered at ``now``, the first time only (one statement;
    a later read, a confirmed mark or an answer of another door changes nothing)."""
    if question.answered_via is not AnswerVia.UI or question.attempt_id is None:
        return
    conn.execute(
        update(question_marks)
        .where(
            _M.question_id == question.id,
            _M.attempt_id == question.attempt_id,
            _M.state == MarkState.PENDING.value,
            _M.delivered_at.is_(None),
        )
        .values(delivered_at=now)
    )


def confirm_handover(conn: Connection, now: datetime, question_id: UUID, attempt_id: str) -> Mark:
    """The hand-over of attempt ``attempt_id`` returned positively: its ``pending`` mark
    becomes ``confirmed``, once the session or device that answered is found still live
    at ``now`` (seed 002: the principal is revalidated across the hand-over); signed out,
    expired or revoked, it is :class:`PrincipalGone`, nothing is written and the mark
    stays pending. A confirmed mark stays as it is (the call is idempotent); an unknown
    attempt is :class:`~kalends.errors.NotFound`."""
    attempt = _check_attempt_id(attempt_id)
    mark = _read_mark(conn, question_id, attempt, lock=True)
    if mark.state is MarkState.CONFIRMED:
        return mark
    if not principal_live(conn, mark.principal_kind.value, mark.principal_id, now):
        raise PrincipalGone(
            "attemptId: the session or device that answered is signed out or revoked: "
            "the answer stands, but it cannot count as a person's decision; "
            "nothing was written",
            field="attemptId",
        )
    conn.execute(
        update(question_marks)
        .where(
            _M.question_id == question_id,
            _M.attempt_id == attempt,
            _M.state == MarkState.PENDING.value,
        )
        .values(state=MarkState.CONFIRMED.value, confirmed_at=now)
    )
    return _read_mark(conn, question_id, attempt, lock=False)


def drop_undelivered_marks(conn: Connection, passage_id: str) -> None:
    """The passage ended (at its archive): every ``pending`` interface mark of its
    questions that it never read is removed, since that hand-over definitely failed.
    The answers stand (the questions stay answered, never reopened: nobody waits for
    them any more); a mark read but never acknowledged stays pending for good. One
    statement, whatever the number of questions."""
    passage = check_passage_id(passage_id)
    conn.execute(
        delete(question_marks).where(
            _M.question_id.in_(select(_Q.id).where(_Q.passage_id == passage)),
            _M.state == MarkState.PENDING.value,
            _M.delivered_at.is_(None),
        )
    )


def withdraw_open(conn: Connection, now: datetime, passage_id: str) -> list[Question]:
    """Withdraws the passage's open questions, oldest first (the passage settled and
    nobody can answer it any more); answered ones stay as they are."""
    passage = check_passage_id(passage_id)
    open_now = open_for_passage(conn, passage)
    for question in open_now:
        conn.execute(
            update(questions)
            .where(
                _Q.id == question.id,
                _Q.revision == question.revision,
                _Q.state == QuestionState.OPEN.value,
            )
            .values(
                state=QuestionState.WITHDRAWN.value,
                revision=question.revision + 1,
                updated_at=now,
            )
        )
    withdrawn = [read_question(conn, question.id) for question in open_now]
    return [question for question in withdrawn if question is not None]


def coordinator_decision(
    conn: Connection,
    now: datetime,
    passage_id: str,
    question_id: UUID,
    answer: object,
) -> Question:
    """The passage ``passage_id`` settles its own open question: the answer is recorded
    as the passage's (``coordinator``), never with a mark. Another passage's question is
    :class:`~kalends.errors.NotFound`."""
    passage = check_passage_id(passage_id)
    question = read_question(conn, question_id, lock=True)
    if question is None or question.passage_id != passage:
        raise NotFound(f"question: no question {question_id}", field="question")
    checked = check_answer(question.fields, answer)
    return record_answer(
        conn,
        now,
        question,
        checked,
        via=AnswerVia.COORDINATOR,
        actor_id=None,
        expected_revision=None,
    )
