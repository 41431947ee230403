"""What a question is made of: its typed fields, a checked answer, the digests that bind
an answer token, and the stored question and mark as values.

Fields are a list of 1..:data:`MAX_FIELDS` objects, each with an ``id``, a ``kind`` and a
``label``::

    {"id": "go", "kind": "choice", "label": "Ship it?", "options": ["yes", "later"]}
    {"id": "why", "kind": "text", "label": "Why?", "maxLength": 500}
    {"id": "ok", "kind": "confirm", "label": "Checked the logs"}

An answer is a JSON object with exactly one value per field: one of a choice's options,
a string of at most ``maxLength`` characters without NUL, or ``true`` / ``false``.
Every refusal is :class:`~kalends.errors.InvalidInput` naming the path of the value
(``fields[1].options[0]``, ``answer.go``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal
from uuid import UUID

from kalends.errors import InvalidInput
from kalends.storage.mission_tables import PASSAGE_ID_LENGTH
from kalends.storage.question_tables import PRINCIPAL_ID_LENGTH, TAG_LENGTH

__all__ = [
    "MAX_FIELDS",
    "MAX_FIELD_ID_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_OPTIONS",
    "MAX_OPTION_CHARS",
    "MAX_PROMPT_CHARS",
    "MAX_TEXT_LENGTH",
    "AnswerVia",
    "ChoiceField",
    "ConfirmField",
    "Field",
    "FieldKind",
    "Mark",
    "MarkState",
    "Principal",
    "PrincipalKind",
    "Question",
    "QuestionState",
    "TextField",
    "UiAnswer",
    "answer_digest",
    "canonical_json",
    "check_answer",
    "check_passage_id",
    "check_prompt",
    "check_tag",
    "fields_json",
    "parse_fields",
    "schema_digest",
]

# kalends decision: a question's prompt is at most 4,096 characters.
MAX_PROMPT_CHARS = 4096
# kalends decision: a question has at most 16 fields.
MAX_FIELDS = 16
# kalends decision: a field ID is 1..32 characters of [a-z0-9_].
MAX_FIELD_ID_CHARS = 32
# kalends decision: a field's label is a line of at most 200 characters.
MAX_LABEL_CHARS = 200
# kalends decision: a choice has 1..32 options.
MAX_OPTIONS = 32
# kalends decision: an option is a line of at most 200 characters.
MAX_OPTION_CHARS = 200
# kalends decision: a text field's maxLength is 1..4,096 characters.
MAX_TEXT_LENGTH = 4096

_FIELD_ID = re.compile(rf"[a-z0-9_]{{1,{MAX_FIELD_ID_CHARS}}}")
_TAG = re.compile(rf"[a-z0-9-]{{1,{TAG_LENGTH}}}")
# As the API's passage paths spell a passage ID, within the stored length.
_PASSAGE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*")
_PRINCIPAL_ID = re.compile(rf"[\x21-\x7e]{{1,{PRINCIPAL_ID_LENGTH}}}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class FieldKind(StrEnum):
    CHOICE = "choice"
    TEXT = "text"
    CONFIRM = "confirm"


class QuestionState(StrEnum):
    OPEN = "open"
    ANSWERED = "answered"
    WITHDRAWN = "withdrawn"


class AnswerVia(StrEnum):
    """Through which door an answer came: the kalends interface, the HTTP API, the command
    line, or the passage deciding itself."""

    UI = "ui"
    API = "api"
    CLI = "cli"
    COORDINATOR = "coordinator"


class MarkState(StrEnum):
    PENDING = "pending"
    CONFIRMED = "confirmed"


class PrincipalKind(StrEnum):
    SESSION = "session"
    DEVICE = "device"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChoiceField:
    id: str
    label: str
    options: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": FieldKind.CHOICE.value,
            "label": self.label,
            "options": list(self.options),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TextField:
    id: str
    label: str
    max_length: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": FieldKind.TEXT.value,
            "label": self.label,
            "maxLength": self.max_length,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmField:
    id: str
    label: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": FieldKind.CONFIRM.value, "label": self.label}


Field = ChoiceField | TextField | ConfirmField

_KEYS = {
    FieldKind.CHOICE: {"id", "kind", "label", "options"},
    FieldKind.TEXT: {"id", "kind", "label", "maxLength"},
    FieldKind.CONFIRM: {"id", "kind", "label"},
}


def _line(value: object, path: str, most: int, what: str) -> str:
    """A one-line text of 1..``most`` characters, not only blanks."""
    if not isinstance(value, str):
        raise InvalidInput(f"{path}: {what} must be text, got {value!r}", field=path)
    if not value.strip():
        raise InvalidInput(f"{path}: {what} is empty", field=path)
    if len(value) > most:
        raise InvalidInput(f"{path}: {what} is {len(value)} characters; at most {most}", field=path)
    if _CONTROL.search(value):
        raise InvalidInput(f"{path}: {what} holds a control character", field=path)
    return value


def _field(raw: object, path: str) -> Field:
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{path}: a field must be an object, got {raw!r}", field=path)
    kind_raw = raw.get("kind")
    try:
        kind = FieldKind(str(kind_raw)) if isinstance(kind_raw, str) else None
    except ValueError:
        kind = None
    if kind is None:
        raise InvalidInput(
            f"{path}.kind: must be one of choice, text, confirm, got {kind_raw!r}",
            field=f"{path}.kind",
        )
    unknown = sorted(str(key) for key in raw if key not in _KEYS[kind])
    if unknown:
        raise InvalidInput(
            f"{path}: unknown key(s) for a {kind.value} field: {', '.join(unknown)}", field=path
        )
    field_id = raw.get("id")
    if not isinstance(field_id, str) or not _FIELD_ID.fullmatch(field_id):
        raise InvalidInput(
            f"{path}.id: must be 1 to {MAX_FIELD_ID_CHARS} characters of a-z, 0-9 and _, "
            f"got {field_id!r}",
            field=f"{path}.id",
        )
    label = _line(raw.get("label"), f"{path}.label", MAX_LABEL_CHARS, "the label")
    if kind is FieldKind.CONFIRM:
        return ConfirmField(id=field_id, label=label)
    if kind is FieldKind.TEXT:
        most = raw.get("maxLength")
        if isinstance(most, bool) or not isinstance(most, int):
            raise InvalidInput(
                f"{path}.maxLength: must be a whole number, got {most!r}",
                field=f"{path}.maxLength",
            )
        if not 1 <= most <= MAX_TEXT_LENGTH:
            raise InvalidInput(
                f"{path}.maxLength: must be 1 to {MAX_TEXT_LENGTH}, got {most}",
                field=f"{path}.maxLength",
            )
        return TextField(id=field_id, label=label, max_length=most)
    options = raw.get("options")
    if not isinstance(options, list) or not 1 <= len(options) <= MAX_OPTIONS:
        raise InvalidInput(
            f"{path}.options: must be a list of 1 to {MAX_OPTIONS} options",
            field=f"{path}.options",
        )
    seen: set[str] = set()
    for i, option in enumerate(options):
        where = f"{path}.options[{i}]"
        text = _line(option, where, MAX_OPTION_CHARS, "an option")
        if text in seen:
            raise InvalidInput(f"{where}: {text!r} is listed twice", field=where)
        seen.add(text)
    return ChoiceField(id=field_id, label=label, options=tuple(options))


def parse_fields(raw: object) -> tuple[Field, ...]:
    """The typed fields of ``raw`` (a list of field objects, as the module describes)."""
    if not isinstance(raw, list):
        raise InvalidInput(f"fields: must be a list of fields, got {raw!r}", field="fields")
    if not 1 <= len(raw) <= MAX_FIELDS:
        raise InvalidInput(
            f"fields: a question has 1 to {MAX_FIELDS} fields, got {len(raw)}", field="fields"
        )
    fields: list[Field] = []
    ids: set[str] = set()
    for i, item in enumerate(raw):
        field = _field(item, f"fields[{i}]")
        if field.id in ids:
            raise InvalidInput(
                f"fields[{i}].id: {field.id!r} names an earlier field too", field=f"fields[{i}].id"
            )
        ids.add(field.id)
        fields.append(field)
    return tuple(fields)


def fields_json(fields: Sequence[Field]) -> list[dict[str, Any]]:
    return [field.to_json() for field in fields]


def check_answer(fields: Sequence[Field], raw: object) -> dict[str, str | bool]:
    """``raw`` as an answer to ``fields``: an object with exactly one valid value per
    field (see the module's docstring)."""
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"answer: must be an object, got {raw!r}", field="answer")
    known = {field.id for field in fields}
    unknown = sorted(str(key) for key in raw if key not in known)
    if unknown:
        where = f"answer.{unknown[0]}"
        raise InvalidInput(f"{where}: the question has no such field", field=where)
    answer: dict[str, str | bool] = {}
    for field in fields:
        where = f"answer.{field.id}"
        if field.id not in raw:
            raise InvalidInput(f"{where}: missing; every field needs a value", field=where)
        value = raw[field.id]
        match field:
            case ChoiceField(options=options):
                if not isinstance(value, str) or value not in options:
                    raise InvalidInput(
                        f"{where}: must be one of the options {list(options)!r}, got {value!r}",
                        field=where,
                    )
            case TextField(max_length=most):
                if not isinstance(value, str):
                    raise InvalidInput(f"{where}: must be text, got {value!r}", field=where)
                if len(value) > most:
                    raise InvalidInput(
                        f"{where}: is {len(value)} characters; at most {most}", field=where
                    )
                if "\x00" in value:
                    raise InvalidInput(f"{where}: holds a NUL character", field=where)
            case ConfirmField():
                if not isinstance(value, bool):
                    raise InvalidInput(
                        f"{where}: must be true or false, got {value!r}", field=where
                    )
        answer[field.id] = value
    return answer


def check_prompt(raw: object) -> str:
    """A prompt: text of 1..:data:`MAX_PROMPT_CHARS` characters, not only blanks, no NUL
    (line breaks are kept)."""
    if not isinstance(raw, str):
        raise InvalidInput(f"prompt: must be text, got {raw!r}", field="prompt")
    if not raw.strip():
        raise InvalidInput("prompt: is empty", field="prompt")
    if len(raw) > MAX_PROMPT_CHARS:
        raise InvalidInput(
            f"prompt: is {len(raw)} characters; at most {MAX_PROMPT_CHARS}", field="prompt"
        )
    if "\x00" in raw:
        raise InvalidInput("prompt: holds a NUL character", field="prompt")
    return raw


def check_tag(raw: object) -> str | None:
    """The decision a question settles: ``None``, or 1..64 characters of [a-z0-9-]."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not _TAG.fullmatch(raw):
        raise InvalidInput(
            f"tag: must be 1 to {TAG_LENGTH} characters of a-z, 0-9 and -, got {raw!r}",
            field="tag",
        )
    return raw


def check_passage_id(raw: object) -> str:
    if not isinstance(raw, str) or len(raw) > PASSAGE_ID_LENGTH or not _PASSAGE_ID.fullmatch(raw):
        raise InvalidInput(f"passage: not a passage ID: {raw!r}", field="passage")
    return raw


def canonical_json(value: object) -> str:
    """The one text of a JSON value that its digests are taken of: keys sorted, no
    blanks, non-ASCII characters as themselves."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def schema_digest(prompt: str, fields: Sequence[Field]) -> str:
    """The SHA-256 (hex) of the canonical JSON of ``{"prompt": …, "fields": […]}``."""
    return _sha256(canonical_json({"prompt": prompt, "fields": fields_json(fields)}))


def answer_digest(answer: Mapping[str, str | bool]) -> str:
    """The SHA-256 (hex) of the canonical JSON of a checked answer."""
    return _sha256(canonical_json(dict(answer)))


def _instant(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """Who answers through the interface, and by which credential: a login session, or a
    paired device. A device's ID is never taken for a session's."""

    kind: PrincipalKind
    id: str
    actor_id: UUID

    @classmethod
    def of(cls, kind: object, principal_id: object, actor_id: UUID) -> Principal:
        """A principal from what an edge read; anything malformed is
        :class:`~kalends.errors.InvalidInput`."""
        known = {member.value: member for member in PrincipalKind}
        checked = known.get(kind) if isinstance(kind, str) else None
        if checked is None:
            raise InvalidInput(
                f"principal: the kind must be session or device, got {kind!r}", field="principal"
            )
        if not isinstance(principal_id, str) or not _PRINCIPAL_ID.fullmatch(principal_id):
            raise InvalidInput(
                f"principal: the ID must be 1 to {PRINCIPAL_ID_LENGTH} printable characters, "
                f"got {principal_id!r}",
                field="principal",
            )
        return cls(kind=checked, id=principal_id, actor_id=actor_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """A question a passage asked, and its answer once given."""

    id: UUID
    workspace_id: UUID
    schedule_id: UUID | None
    passage_id: str
    prompt: str
    fields: tuple[Field, ...]
    schema_digest: str
    tag: str | None
    state: QuestionState
    answer: dict[str, str | bool] | None
    answered_at: datetime | None
    answered_by: UUID | None
    answered_via: AnswerVia | None
    attempt_id: str | None
    revision: int
    asked_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> Question:
        return cls(
            id=row.id,
            workspace_id=row.workspace_id,
            schedule_id=row.schedule_id,
            passage_id=row.passage_id,
            prompt=row.prompt,
            fields=parse_fields(json.loads(row.fields)),
            schema_digest=row.schema_digest,
            tag=row.tag,
            state=QuestionState(row.state),
            answer=None if row.answer is None else json.loads(row.answer),
            answered_at=row.answered_at,
            answered_by=row.answered_by,
            answered_via=None if row.answered_via is None else AnswerVia(row.answered_via),
            attempt_id=row.attempt_id,
            revision=row.revision,
            asked_at=row.asked_at,
            updated_at=row.updated_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "workspaceId": str(self.workspace_id),
            "scheduleId": None if self.schedule_id is None else str(self.schedule_id),
            "passageId": self.passage_id,
            "prompt": self.prompt,
            "fields": fields_json(self.fields),
            "schemaDigest": self.schema_digest,
            "tag": self.tag,
            "state": self.state.value,
            "answer": self.answer,
            "answeredAt": _instant(self.answered_at),
            "answeredBy": None if self.answered_by is None else str(self.answered_by),
            "answeredVia": None if self.answered_via is None else self.answered_via.value,
            "revision": self.revision,
            "askedAt": _instant(self.asked_at),
            "updatedAt": _instant(self.updated_at),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Mark:
    """The mark of one interface answer's hand-over to its passage: ``pending`` from
    before the hand-over, ``confirmed`` once it succeeded for this attempt.
    ``delivered_at`` is when the passage first read the answer (``None``: never yet)."""

    question_id: UUID
    attempt_id: str
    passage_id: str
    answered_at: datetime
    via: Literal["ui"]
    state: MarkState
    principal_kind: PrincipalKind
    principal_id: str
    created_at: datetime
    confirmed_at: datetime | None
    delivered_at: datetime | None

    @classmethod
    def from_row(cls, row: Any) -> Mark:
        return cls(
            question_id=row.question_id,
            attempt_id=row.attempt_id,
            passage_id=row.passage_id,
            answered_at=row.answered_at,
            via="ui",
            state=MarkState(row.state),
            principal_kind=PrincipalKind(row.principal_kind),
            principal_id=row.principal_id,
            created_at=row.created_at,
            confirmed_at=row.confirmed_at,
            delivered_at=row.delivered_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "questionId": str(self.question_id),
            "attemptId": self.attempt_id,
            "passageId": self.passage_id,
            "answeredAt": _instant(self.answered_at),
            "via": self.via,
            "state": self.state.value,
            "principalKind": self.principal_kind.value,
            "createdAt": _instant(self.created_at),
            "confirmedAt": _instant(self.confirmed_at),
            "deliveredAt": _instant(self.delivered_at),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class UiAnswer:
    """An interface answer just recorded, and the attempt whose hand-over is pending."""

    question: Question
    attempt_id: str
