"""What the question commands ask for, the same whether they run on a database or a
server.

:class:`QuestionsClient` answers with the JSON the HTTP API answers (a question, and for
one question read alone or answered its ``decision`` readout and ``marks``), so that
both modes print the same. :class:`LocalQuestions` is
:class:`~kalends.questions.Questions` itself, :class:`HttpQuestions` the routes
``/api/workspaces/{id}/questions`` and ``/api/questions/{question}``. An answer given
here is recorded as given on the command line (``cli``), never with a hand-over mark:
it never counts as a person's decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from kalends.cli.http import path_part

if TYPE_CHECKING:
    from kalends.bootstrap import Services
    from kalends.cli.remote import Remote
    from kalends.cli.session import Session

__all__ = ["HttpQuestions", "LocalQuestions", "QuestionsClient", "questions_of"]

# How the command line records its answers (kalends.questions.AnswerVia.CLI).
VIA_CLI = "cli"


class QuestionsClient(Protocol):
    def list_open(self, actor: UUID | str, workspace: UUID) -> list[dict[str, Any]]:
        """The workspace's open questions, oldest first (viewers and up)."""
        ...

    def show(self, actor: UUID | str, question: UUID) -> dict[str, Any]:
        """The question with its ``decision`` and ``marks`` (viewers and up)."""
        ...

    def answer(
        self, actor: UUID | str, question: UUID, answer: object, expected_revision: int
    ) -> dict[str, Any]:
        """Records the answer as given on the command line; the question as
        :meth:`show` reads it (editors and up)."""
        ...


@dataclass(frozen=True, slots=True)
class LocalQuestions:
    services: Services

    def list_open(self, actor: UUID | str, workspace: UUID) -> list[dict[str, Any]]:
        return [q.to_json() for q in self.services.questions.list_open(actor, workspace)]

    def show(self, actor: UUID | str, question: UUID) -> dict[str, Any]:
        service = self.services.questions

        def read() -> dict[str, Any]:
            return {
                **service.get(actor, question).to_json(),
                "decision": service.decision(actor, question).to_json(),
                "marks": [mark.to_json() for mark in service.marks(actor, question)],
            }

        # One transaction: the question, its decision and its marks agree.
        return self.services.store.run(lambda _conn: read(), write=False)

    def answer(
        self, actor: UUID | str, question: UUID, answer: object, expected_revision: int
    ) -> dict[str, Any]:
        def write() -> dict[str, Any]:
            self.services.questions.answer_from_api(
                actor, question, answer, expected_revision, via=VIA_CLI
            )
            return self.show(actor, question)

        return self.services.store.run(lambda _conn: write())


class QuestionWire(Protocol):
    """The requests a server-mode session sends (:class:`~kalends.cli.remote.Remote`)."""

    def get(self, path: str, **params: Any) -> Any: ...

    def post(self, path: str, body: Any = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class HttpQuestions:
    wire: QuestionWire

    def list_open(self, actor: UUID | str, workspace: UUID) -> list[dict[str, Any]]:
        found = self.wire.get(f"/api/workspaces/{path_part(str(workspace))}/questions")
        return list(found or [])

    def show(self, actor: UUID | str, question: UUID) -> dict[str, Any]:
        found: dict[str, Any] = self.wire.get(f"/api/questions/{path_part(str(question))}")
        return found

    def answer(
        self, actor: UUID | str, question: UUID, answer: object, expected_revision: int
    ) -> dict[str, Any]:
        body = {"answer": answer, "expectedRevision": expected_revision, "via": VIA_CLI}
        found: dict[str, Any] = self.wire.post(
            f"/api/questions/{path_part(str(question))}/answer", body
        )
        return found


def questions_of(s: Session | Remote) -> QuestionsClient:
    """The questions of a session: the service in local mode, the HTTP API on a server."""
    from kalends.cli.remote import Remote  # noqa: PLC0415

    if isinstance(s, Remote):
        return HttpQuestions(s)
    return LocalQuestions(s.services)
