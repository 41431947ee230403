"""Questions as people and the runtime use them: read, answer through the interface with
a one-use token, answer through the API or the command line, and tell who decided.
One transaction per call.

Viewers of a question's workspace read it; editors answer it. A question in a workspace
the actor is no member of is, to them, one that does not exist
(:class:`~kalends.errors.NotFound`); a member whose role is too low is
:class:`~kalends.errors.Forbidden`. Input is checked before anything is written, and any
refusal writes nothing.

An interface answer follows seed 002's two-phase mark ("Wayfinder human decision
mark"): the web edge mints a token only after a trusted pointer click or submit key
press (:meth:`Questions.mint_token`); :meth:`Questions.answer_from_ui` then uses the
token up, records the answer and writes a ``pending`` mark in one transaction, before
the answer is handed to the passage. The hand-over is the passage's own read of its
answer (:class:`~kalends.questions.passages.PassageQuestions`): its first read delivers
the mark, its acknowledgement confirms it while the session or device that answered is
still live (:meth:`Questions.confirm_handover`); a passage that ended without reading
it definitely failed the hand-over, and its mark is removed at the passage's archive;
a mark read but never acknowledged stays pending for good (uncertain).
When no token could be had, the person is not blocked: the answer is recorded without a
mark (:meth:`Questions.answer_from_ui_unmarked`) and never counts as their decision.
"""

from __future__ import annotations

import uuid
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.errors import Forbidden, InvalidInput, NotFound
from kalends.identity import Role, parse_uuid, require_role, resolve_actor
from kalends.questions import records
from kalends.questions.decision import Decision, decision
from kalends.questions.values import AnswerVia, Mark, Principal, Question, UiAnswer, check_answer
from kalends.storage.mission_tables import workspace_members
from kalends.storage.unit_of_work import Store

__all__ = ["Questions"]

_W = workspace_members.c


def _question(
    conn: Connection, actor: UUID | str, question_id: UUID, minimum: Role, *, lock: bool = False
) -> tuple[UUID, Question]:
    """The actor's ID and the question, once the actor's role on its workspace reaches
    ``minimum``."""
    actor_id = resolve_actor(conn, actor)
    unseen = NotFound(f"question: no question {question_id}", field="question")
    found = records.read_question(conn, question_id, lock=lock)
    if found is None:
        raise unseen
    held = conn.execute(
        select(_W.role).where(_W.workspace_id == found.workspace_id, _W.actor_id == actor_id)
    ).scalar()
    require_role(held, minimum, scope="workspace", unseen=unseen)
    return actor_id, found


def _revision(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise InvalidInput(
            f"expected_revision: must be a whole number from 1, got {raw!r}",
            field="expected_revision",
        )
    return raw


def _principal(raw: object, actor_id: UUID) -> Principal:
    if not isinstance(raw, Principal):
        raise InvalidInput(f"principal: not a principal: {raw!r}", field="principal")
    if raw.actor_id != actor_id:
        raise Forbidden("principal: the session or device is not the answering actor's")
    return raw


class Questions:
    """The questions passages ask people in their workspaces."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def ask(
        self,
        *,
        workspace_id: UUID,
        schedule_id: UUID | None,
        passage_id: str,
        prompt: str,
        fields: object,
        tag: str | None = None,
    ) -> Question:
        """:func:`~kalends.questions.records.ask` at the store's clock, for the runtime
        (the passage's own token is checked by its caller)."""

        def run(conn: Connection) -> Question:
            return records.ask(
                conn,
                self.store.clock.now(),
                workspace_id=workspace_id,
                schedule_id=schedule_id,
                passage_id=passage_id,
                prompt=prompt,
                fields=fields,
                tag=tag,
            )

        return self.store.run(run)

    def open_for_passage(self, passage_id: str) -> list[Question]:
        """The passage's open questions, oldest first (they hold its settlement)."""
        return self.store.run(lambda conn: records.open_for_passage(conn, passage_id), write=False)

    def open_for(self, actor: UUID | str) -> list[Question]:
        """The open questions over every workspace the actor is a member of, oldest
        first (at most :data:`~kalends.questions.records.MAX_LIST`): one read."""
        return self.store.run(
            lambda conn: records.open_of_member(conn, resolve_actor(conn, actor)), write=False
        )

    def count_open(self, actor: UUID | str) -> int:
        """How many questions are open over the actor's workspaces: one read."""
        return self.store.run(
            lambda conn: records.count_open_of_member(conn, resolve_actor(conn, actor)),
            write=False,
        )

    def list_open(self, actor: UUID | str, workspace: UUID | str) -> list[Question]:
        """The workspace's open questions, oldest first (at most
        :data:`~kalends.questions.records.MAX_LIST`); viewers and up."""
        workspace_id = parse_uuid(workspace, "workspace")
        if workspace_id is None:
            raise InvalidInput(f"workspace: not a workspace ID: {workspace!r}", field="workspace")

        def run(conn: Connection) -> list[Question]:
            actor_id = resolve_actor(conn, actor)
            held = conn.execute(
                select(_W.role).where(_W.workspace_id == workspace_id, _W.actor_id == actor_id)
            ).scalar()
            unseen = NotFound(f"workspace: no workspace {workspace}", field="workspace")
            require_role(held, Role.VIEWER, scope="workspace", unseen=unseen)
            return records.list_open(conn, workspace_id)

        return self.store.run(run, write=False)

    def get(self, actor: UUID | str, question: UUID | str) -> Question:
        """One question; viewers and up."""
        question_id = records.check_question_id(question)
        return self.store.run(
            lambda conn: _question(conn, actor, question_id, Role.VIEWER)[1], write=False
        )

    def marks(self, actor: UUID | str, question: UUID | str) -> list[Mark]:
        """The question's interface marks, oldest first; viewers and up."""
        question_id = records.check_question_id(question)

        def run(conn: Connection) -> list[Mark]:
            _question(conn, actor, question_id, Role.VIEWER)
            return records.read_marks(conn, question_id)

        return self.store.run(run, write=False)

    def decision(self, actor: UUID | str, question: UUID | str) -> Decision:
        """Who decided the question (:func:`~kalends.questions.decision.decision`);
        viewers and up."""
        question_id = records.check_question_id(question)

        def run(conn: Connection) -> Decision:
            _, found = _question(conn, actor, question_id, Role.VIEWER)
            return decision(found, records.read_marks(conn, question_id))

        return self.store.run(run, write=False)

    def mint_token(
        self, actor: UUID | str, principal: Principal, question: UUID | str, answer: object
    ) -> str:
        """A one-use answer token, bound to the question, its current form, this answer and
        this principal, valid :data:`~kalends.questions.records.ANSWER_TOKEN_TTL`; editors
        and up, on an open question. The web edge calls it only for a trusted pointer
        click or submit key press on that question; the secret is returned this once."""
        question_id = records.check_question_id(question)

        def run(conn: Connection) -> str:
            actor_id, found = _question(conn, actor, question_id, Role.EDITOR, lock=True)
            who = _principal(principal, actor_id)
            checked = check_answer(found.fields, answer)
            return records.mint_token(conn, self.store.clock.now(), found, who, checked)

        return self.store.run(run)

    def answer_from_ui(
        self,
        actor: UUID | str,
        principal: Principal,
        question: UUID | str,
        answer: object,
        token: str,
        expected_revision: int,
    ) -> UiAnswer:
        """Records an interface answer, in one transaction: uses up ``token`` (which must
        be bound to exactly this question, form, answer and principal; any other token is
        :class:`~kalends.questions.records.AnswerTokenRefused` and stays unused), records
        the answer (``ui``) and writes the ``pending`` mark of a fresh attempt, which the
        caller hands to the passage next. Editors and up; a question no longer open is
        :class:`~kalends.errors.Conflict`, a stale revision
        :class:`~kalends.errors.RevisionConflict`."""
        question_id = records.check_question_id(question)
        revision = _revision(expected_revision)

        def run(conn: Connection) -> UiAnswer:
            now = self.store.clock.now()
            actor_id, found = _question(conn, actor, question_id, Role.EDITOR, lock=True)
            who = _principal(principal, actor_id)
            checked = check_answer(found.fields, answer)
            records.check_answerable(found, revision)
            records.take_token(conn, now, found, who, checked, token)
            attempt_id = str(uuid.uuid4())
            answered = records.record_answer(
                conn,
                now,
                found,
                checked,
                via=AnswerVia.UI,
                actor_id=actor_id,
                expected_revision=revision,
                attempt_id=attempt_id,
            )
            records.write_mark(conn, now, answered, who, attempt_id)
            return UiAnswer(question=answered, attempt_id=attempt_id)

        return self.store.run(run)

    def answer_from_ui_unmarked(
        self,
        actor: UUID | str,
        question: UUID | str,
        answer: object,
        expected_revision: int,
    ) -> Question:
        """Records an interface answer whose mark could not be prepared (no token: the
        principal is unknown or was revoked, or minting failed): seed 002 never blocks
        the person from answering, so the answer is recorded (``ui``) without a mark and
        can never count as a person's decision. Editors and up; a question no longer
        open is :class:`~kalends.errors.Conflict`, a stale revision
        :class:`~kalends.errors.RevisionConflict`."""
        return self._answer(actor, question, answer, expected_revision, AnswerVia.UI)

    def answer_from_api(
        self,
        actor: UUID | str,
        question: UUID | str,
        answer: object,
        expected_revision: int,
        via: str = "api",
    ) -> Question:
        """Records an answer given through the API (``via="api"``) or the command line
        (``"cli"``); never a mark, so it never counts as a person's decision. Editors and
        up; a question no longer open is :class:`~kalends.errors.Conflict`, a stale
        revision :class:`~kalends.errors.RevisionConflict`."""
        if via not in (AnswerVia.API.value, AnswerVia.CLI.value):
            raise InvalidInput(f"via: must be api or cli, got {via!r}", field="via")
        return self._answer(actor, question, answer, expected_revision, AnswerVia(via))

    def _answer(
        self,
        actor: UUID | str,
        question: UUID | str,
        answer: object,
        expected_revision: int,
        door: AnswerVia,
    ) -> Question:
        question_id = records.check_question_id(question)
        revision = _revision(expected_revision)

        def run(conn: Connection) -> Question:
            actor_id, found = _question(conn, actor, question_id, Role.EDITOR, lock=True)
            checked = check_answer(found.fields, answer)
            return records.record_answer(
                conn,
                self.store.clock.now(),
                found,
                checked,
                via=door,
                actor_id=actor_id,
                expected_revision=revision,
            )

        return self.store.run(run)

    def confirm_handover(self, question: UUID | str, attempt_id: str) -> Mark:
        """:func:`~kalends.questions.records.confirm_handover` at the store's clock, for
        the runtime: refused (:class:`~kalends.questions.records.PrincipalGone`) once
        the session or device that answered is signed out or revoked."""
        question_id = records.check_question_id(question)
        return self.store.run(
            lambda conn: records.confirm_handover(
                conn, self.store.clock.now(), question_id, attempt_id
            )
        )

    def withdraw_open(self, passage_id: str) -> list[Question]:
        """:func:`~kalends.questions.records.withdraw_open` at the store's clock, for the
        runtime once the passage settled."""
        return self.store.run(
            lambda conn: records.withdraw_open(conn, self.store.clock.now(), passage_id)
        )

    def coordinator_decision(
        self, passage_id: str, question: UUID | str, answer: object
    ) -> Question:
        """:func:`~kalends.questions.records.coordinator_decision` at the store's clock,
        for the runtime."""
        question_id = records.check_question_id(question)
        return self.store.run(
            lambda conn: records.coordinator_decision(
                conn, self.store.clock.now(), passage_id, question_id, answer
            )
        )
