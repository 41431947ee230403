"""What the question route tests share: a schedule in home, passages of it admitted in the
server's runtime directory (never launched) with their tokens, and the answers a person
gives through the interface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import httpx2

from api.conftest import ApiWorld
from kalends.auth import SessionGrant
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import ProcessRuntime
from kalends.questions import Principal, PrincipalKind, Question, UiAnswer
from missions.conftest import daily_config

FIELDS: list[dict[str, Any]] = [
    {"id": "go", "kind": "choice", "label": "Ship it?", "options": ["yes", "later"]},
    {"id": "why", "kind": "text", "label": "Why?", "maxLength": 20},
    {"id": "ok", "kind": "confirm", "label": "Checked the logs"},
]
ANSWER: dict[str, Any] = {"go": "yes", "why": "tests pass", "ok": True}


@dataclass(frozen=True, slots=True)
class Asker:
    """An admitted passage of a schedule, and its token."""

    passage_id: str
    session_id: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Passage {self.token}"}


def schedule_in_home(api: ApiWorld, request_id: str = "questions-create") -> str:
    receipt = api.services.schedules.create(
        api.actors["bob"].id, api.home.id, daily_config(), request_id=request_id
    )
    return str(receipt.mission_id)


def admit(runtime: ProcessRuntime, api: ApiWorld, name: str, schedule_id: str) -> Asker:
    runtime.admit(
        PassageStart(
            passage_id=f"psg_{name}",
            session_id=f"ses_{name}",
            message_id=f"msg_{name}",
            schedule_id=schedule_id,
            workspace=api.home.path,
            command=("true",),
        )
    )
    return Asker(f"psg_{name}", f"ses_{name}", runtime.token(f"psg_{name}", f"ses_{name}"))


def ask(api: ApiWorld, asker: Asker, **body: Any) -> Question:
    """A question asked through the route; read back through the service."""
    reply = api.client.post(
        "/api/passages/questions",
        json={"prompt": "Ship the release?", "fields": FIELDS, **body},
        headers=asker.headers,
    )
    assert reply.status_code == 201, reply.text
    return api.services.questions.get(api.actors["bob"].id, reply.json()["id"])


def bob_session(api: ApiWorld) -> SessionGrant:
    """A real session of bob's (a one-time login link redeemed), live until signed out."""
    return api.accounts.redeem_login_link(api.accounts.issue_login_link(api.actors["bob"].id))


def ui_answer(
    api: ApiWorld,
    question: Question,
    answer: dict[str, Any] | None = None,
    *,
    session: SessionGrant | None = None,
) -> UiAnswer:
    """bob answers in the interface: a token minted for his session (a fresh live one
    unless ``session`` is given), then the answer."""
    bob = api.actors["bob"].id
    grant = bob_session(api) if session is None else session
    who = Principal(kind=PrincipalKind.SESSION, id=str(grant.principal.credential_id), actor_id=bob)
    chosen = answer or ANSWER
    token = api.services.questions.mint_token(bob, who, question.id, chosen)
    return api.services.questions.answer_from_ui(
        bob, who, question.id, chosen, token, question.revision
    )


def error(reply: httpx2.Response, status: int, code: str, field: str | None = None) -> None:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["code"] == code, body
    if field is not None:
        assert body["details"]["field"] == field, body


def question_id(reply: httpx2.Response) -> UUID:
    return UUID(reply.json()["id"])
