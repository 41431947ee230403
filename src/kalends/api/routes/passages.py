"""Passage callbacks: a running passage reports its outcome with its own signed token.

``POST /api/passages/report`` is the HTTP form of ``kalends report``. The passage sends
the token it found in ``KALENDS_PASSAGE_TOKEN`` as ``Authorization: Passage <token>``;
the token is an HMAC over the passage's identities, signed with the secret of this
server's runtime directory, so it speaks for that one passage only and never for
another, nor for any person. A login session or an API token cannot report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from fastapi.security import APIKeyHeader
from pydantic import BaseModel, ConfigDict, Field

from kalends.api.context import ApiContext
from kalends.api.dispatch import DispatchedRoute
from kalends.api.errors import error_responses
from kalends.api.security import ContextDep
from kalends.errors import NotFound, StorageError, Unauthenticated
from kalends.missions.runtime.base import Report, RuntimeUnavailable
from kalends.missions.runtime.process import MAX_SUMMARY_CHARS, OUTCOMES, record_report
from kalends.missions.runtime.shim import CorruptRecord
from kalends.missions.runtime.token import InvalidToken

__all__ = [
    "NoRuntime",
    "PassageTokenRefused",
    "RuntimeDown",
    "router",
    "runtime_root",
]

router = APIRouter(prefix="/api/passages", tags=["passages"], route_class=DispatchedRoute)

PASSAGE_SCHEME = "passage"

_passage_header = APIKeyHeader(
    name="Authorization",
    scheme_name="passage",
    auto_error=False,
    description=(
        "A passage's own token (its `KALENDS_PASSAGE_TOKEN`): `Authorization: Passage <token>`. "
        "It speaks for that passage only."
    ),
)


class NoRuntime(NotFound):
    """This server runs no passages: it has no runtime directory."""

    code = "no-runtime"


class PassageTokenRefused(Unauthenticated):
    """The passage token is missing, malformed, forged or names no passage of this server."""

    code = "invalid-passage-token"


class RuntimeDown(StorageError):
    """The runtime directory could not be read or written now; nothing was recorded."""

    code = "runtime-unavailable"


def runtime_root(ctx: ApiContext) -> Path:
    """The runtime directory of this server's passages: its runtime's, else the settings'."""
    if ctx.runtime is not None:
        return ctx.runtime.root
    if ctx.settings.runtime_dir is not None:
        return Path(ctx.settings.runtime_dir)
    raise NoRuntime("this server runs no passages: it has no runtime directory")


def passage_token(header: Annotated[str | None, Depends(_passage_header)]) -> str:
    """The token of ``Authorization: Passage <token>``; 401 without one."""
    scheme, _, token = (header or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != PASSAGE_SCHEME or not token:
        raise PassageTokenRefused(
            "send the passage's token (KALENDS_PASSAGE_TOKEN) as `Authorization: Passage <token>`"
        )
    return token


PassageTokenDep = Annotated[str, Depends(passage_token)]


class ReportBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    outcome: Literal["completed", "failed"] = Field(description="How the passage ended.")
    summary: str = Field(
        max_length=MAX_SUMMARY_CHARS,
        description=f"What the passage did (at most {MAX_SUMMARY_CHARS} characters).",
    )


class ReportOut(BaseModel):
    outcome: str = Field(description=" or ".join(f"`{o}`" for o in OUTCOMES) + ".")
    summary: str
    at: str = Field(description="When the report was recorded (ISO 8601).")


@router.post(
    "/report",
    summary="Record a passage's final report with its own passage token (`kalends report`)",
    description=(
        "The last report wins until the passage settles; afterwards it is final (409 "
        "`passage-settled`). A token that this server's runtime did not sign, or that names "
        "no passage of it, answers 401 `invalid-passage-token`; nothing is written on a refusal."
    ),
    responses=error_responses(401, 404, 409, 422, 503),
)
def report(body: ReportBody, token: PassageTokenDep, ctx: ContextDep) -> ReportOut:
    try:
        if ctx.runtime is not None:
            done: Report = ctx.runtime.report(token, body.outcome, body.summary)
        else:
            done = record_report(
                runtime_root(ctx),
                token,
                body.outcome,
                body.summary,
                at=ctx.services.store.clock.now(),
            )
    except InvalidToken as exc:
        raise PassageTokenRefused(exc.message) from None
    except RuntimeUnavailable as exc:
        raise RuntimeDown(exc.message) from None
    except CorruptRecord as exc:
        raise RuntimeDown(f"cannot record the report: {exc}") from None
    except OSError as exc:
        raise RuntimeDown(f"cannot record the report: {exc.strerror or exc}") from None
    return ReportOut(
        outcome=done.outcome,
        summary=done.summary,
        at=done.at.isoformat().replace("+00:00", "Z"),
    )
