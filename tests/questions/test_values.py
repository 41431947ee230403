"""Fields, answers, digests and the human gate as pure values: good and bad input with
the exact messages, and the gate's every cause."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest

from kalends.errors import InvalidInput
from kalends.questions import (
    CAUSE_API,
    CAUSE_CLI,
    CAUSE_COORDINATOR,
    CAUSE_NEVER_DELIVERED,
    CAUSE_NO_MARK,
    CAUSE_NOT_ANSWERED,
    CAUSE_PENDING,
    CAUSE_UNCONFIRMED,
    HUMAN_DECISION_REQUIRED,
    MAX_FIELDS,
    AnswerVia,
    ChoiceField,
    ConfirmField,
    Mark,
    MarkState,
    PrincipalKind,
    Question,
    QuestionState,
    TextField,
    answer_digest,
    check_answer,
    decision,
    parse_fields,
    schema_digest,
)
from kalends.questions.values import Principal, check_passage_id, check_prompt, check_tag

from .conftest import ANSWER, FIELDS

FIELD_TYPES = parse_fields(FIELDS)


class TestParseFields:
    def test_each_kind_parses_to_its_typed_field_and_back(self) -> None:
        assert (
            ChoiceField(id="go", label="Ship it?", options=("yes", "later")),
            TextField(id="why", label="Why?", max_length=20),
            ConfirmField(id="ok", label="Checked the logs"),
        ) == FIELD_TYPES
        assert [field.to_json() for field in FIELD_TYPES] == FIELDS

    def test_sixteen_fields_are_the_most(self) -> None:
        many = [{"id": f"f{i}", "kind": "confirm", "label": "x"} for i in range(MAX_FIELDS)]
        assert len(parse_fields(many)) == MAX_FIELDS

    @pytest.mark.parametrize(
        ("raw", "field", "message"),
        [
            # not a list
            ({"id": "a"}, "fields", "fields: must be a list of fields, got {'id': 'a'}"),
            # none at all
            ([], "fields", "fields: a question has 1 to 16 fields, got 0"),
            # one over the bound
            (
                [{"id": f"f{i}", "kind": "confirm", "label": "x"} for i in range(17)],
                "fields",
                "fields: a question has 1 to 16 fields, got 17",
            ),
            # a field that is not an object
            (["go"], "fields[0]", "fields[0]: a field must be an object, got 'go'"),
            # an unknown kind
            (
                [{"id": "a", "kind": "date", "label": "x"}],
                "fields[0].kind",
                "fields[0].kind: must be one of choice, text, confirm, got 'date'",
            ),
            # a key the kind does not have
            (
                [{"id": "a", "kind": "confirm", "label": "x", "options": ["y"]}],
                "fields[0]",
                "fields[0]: unknown key(s) for a confirm field: options",
            ),
            # an ID with an upper-case letter
            (
                [{"id": "Go", "kind": "confirm", "label": "x"}],
                "fields[0].id",
                "fields[0].id: must be 1 to 32 characters of a-z, 0-9 and _, got 'Go'",
            ),
            # an ID one over its bound
            (
                [{"id": "a" * 33, "kind": "confirm", "label": "x"}],
                "fields[0].id",
                f"fields[0].id: must be 1 to 32 characters of a-z, 0-9 and _, got {'a' * 33!r}",
            ),
            # two fields with one ID
            (
                [
                    {"id": "a", "kind": "confirm", "label": "x"},
                    {"id": "a", "kind": "confirm", "label": "y"},
                ],
                "fields[1].id",
                "fields[1].id: 'a' names an earlier field too",
            ),
            # an empty label
            (
                [{"id": "a", "kind": "confirm", "label": "  "}],
                "fields[0].label",
                "fields[0].label: the label is empty",
            ),
            # a label with a line break
            (
                [{"id": "a", "kind": "confirm", "label": "x\ny"}],
                "fields[0].label",
                "fields[0].label: the label holds a control character",
            ),
            # a missing label
            (
                [{"id": "a", "kind": "confirm"}],
                "fields[0].label",
                "fields[0].label: the label must be text, got None",
            ),
            # no options
            (
                [{"id": "a", "kind": "choice", "label": "x", "options": []}],
                "fields[0].options",
                "fields[0].options: must be a list of 1 to 32 options",
            ),
            # 33 options
            (
                [
                    {
                        "id": "a",
                        "kind": "choice",
                        "label": "x",
                        "options": [str(i) for i in range(33)],
                    }
                ],
                "fields[0].options",
                "fields[0].options: must be a list of 1 to 32 options",
            ),
            # the same option twice
            (
                [{"id": "a", "kind": "choice", "label": "x", "options": ["y", "n", "y"]}],
                "fields[0].options[2]",
                "fields[0].options[2]: 'y' is listed twice",
            ),
            # an option that is not text
            (
                [{"id": "a", "kind": "choice", "label": "x", "options": [1]}],
                "fields[0].options[0]",
                "fields[0].options[0]: an option must be text, got 1",
            ),
            # a maxLength of zero
            (
                [{"id": "a", "kind": "text", "label": "x", "maxLength": 0}],
                "fields[0].maxLength",
                "fields[0].maxLength: must be 1 to 4096, got 0",
            ),
            # a maxLength one over its bound
            (
                [{"id": "a", "kind": "text", "label": "x", "maxLength": 4097}],
                "fields[0].maxLength",
                "fields[0].maxLength: must be 1 to 4096, got 4097",
            ),
            # a maxLength that is a boolean
            (
                [{"id": "a", "kind": "text", "label": "x", "maxLength": True}],
                "fields[0].maxLength",
                "fields[0].maxLength: must be a whole number, got True",
            ),
        ],
    )
    def test_bad_fields_are_refused_naming_the_path(
        self, raw: Any, field: str, message: str
    ) -> None:
        with pytest.raises(InvalidInput) as caught:
            parse_fields(raw)
        assert caught.value.field == field
        assert caught.value.message == message


class TestCheckAnswer:
    def test_a_full_answer_is_kept_as_given(self) -> None:
        assert check_answer(FIELD_TYPES, ANSWER) == ANSWER

    def test_empty_text_and_text_of_exactly_max_length_are_answers(self) -> None:
        assert check_answer(FIELD_TYPES, {**ANSWER, "why": ""})["why"] == ""
        assert check_answer(FIELD_TYPES, {**ANSWER, "why": "w" * 20})["why"] == "w" * 20

    @pytest.mark.parametrize(
        ("raw", "field", "message"),
        [
            # not an object
            (["yes"], "answer", "answer: must be an object, got ['yes']"),
            # a field the question lacks
            (
                {**ANSWER, "extra": 1},
                "answer.extra",
                "answer.extra: the question has no such field",
            ),
            # a field left out
            (
                {"go": "yes", "ok": True},
                "answer.why",
                "answer.why: missing; every field needs a value",
            ),
            # not one of the options
            (
                {**ANSWER, "go": "no"},
                "answer.go",
                "answer.go: must be one of the options ['yes', 'later'], got 'no'",
            ),
            # text one over maxLength
            (
                {**ANSWER, "why": "w" * 21},
                "answer.why",
                "answer.why: is 21 characters; at most 20",
            ),
            # text with NUL
            ({**ANSWER, "why": "a\x00b"}, "answer.why", "answer.why: holds a NUL character"),
            # text that is a number
            ({**ANSWER, "why": 3}, "answer.why", "answer.why: must be text, got 3"),
            # a confirmation that is a number, not a boolean
            ({**ANSWER, "ok": 1}, "answer.ok", "answer.ok: must be true or false, got 1"),
        ],
    )
    def test_bad_answers_are_refused_naming_the_field(
        self, raw: Any, field: str, message: str
    ) -> None:
        with pytest.raises(InvalidInput) as caught:
            check_answer(FIELD_TYPES, raw)
        assert caught.value.field == field
        assert caught.value.message == message


class TestScalars:
    @pytest.mark.parametrize(
        ("raw", "message"),
        [
            ("", "prompt: is empty"),  # empty
            (" \n", "prompt: is empty"),  # blanks only
            ("p" * 4097, "prompt: is 4097 characters; at most 4096"),  # one over
            ("a\x00", "prompt: holds a NUL character"),  # NUL
            (None, "prompt: must be text, got None"),  # not text
        ],
    )
    def test_bad_prompts_are_refused(self, raw: Any, message: str) -> None:
        with pytest.raises(InvalidInput) as caught:
            check_prompt(raw)
        assert caught.value.message == message

    def test_a_prompt_keeps_its_line_breaks_up_to_the_bound(self) -> None:
        assert check_prompt("one\ntwo") == "one\ntwo"
        assert check_prompt("p" * 4096) == "p" * 4096

    @pytest.mark.parametrize(
        "raw",
        [
            "",  # empty
            "Release",  # upper case
            "a" * 65,  # one over
            "a_b",  # underscore
            7,  # not text
        ],
    )
    def test_bad_tags_are_refused(self, raw: Any) -> None:
        with pytest.raises(InvalidInput) as caught:
            check_tag(raw)
        assert caught.value.field == "tag"

    def test_a_tag_may_be_absent_or_64_characters(self) -> None:
        assert check_tag(None) is None
        assert check_tag("r" * 64) == "r" * 64

    @pytest.mark.parametrize(
        "raw",
        ["", "-lead", "a" * 65, "sp ace", None],  # empty, bad first, one over, blank, none
    )
    def test_bad_passage_ids_are_refused(self, raw: Any) -> None:
        with pytest.raises(InvalidInput) as caught:
            check_passage_id(raw)
        assert caught.value.field == "passage"

    @pytest.mark.parametrize(
        ("kind", "principal_id"),
        [
            ("cookie", "s1"),  # unknown kind
            ("session", ""),  # empty ID
            ("device", "d" * 65),  # one over
            ("device", "has space"),  # a blank
            ("session", 5),  # not text
        ],
    )
    def test_bad_principals_are_refused(self, kind: Any, principal_id: Any) -> None:
        with pytest.raises(InvalidInput) as caught:
            Principal.of(kind, principal_id, UUID(int=1))
        assert caught.value.field == "principal"

    def test_a_principal_of_an_edge(self) -> None:
        made = Principal.of("device", "d-1", UUID(int=1))
        assert (made.kind, made.id, made.actor_id) == (PrincipalKind.DEVICE, "d-1", UUID(int=1))


class TestDigests:
    def test_the_schema_digest_is_the_sha256_of_the_canonical_prompt_and_fields(self) -> None:
        text = json.dumps(
            {"prompt": "Go?", "fields": FIELDS},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        assert schema_digest("Go?", FIELD_TYPES) == hashlib.sha256(text.encode()).hexdigest()
        assert schema_digest("Go!", FIELD_TYPES) != schema_digest("Go?", FIELD_TYPES)

    def test_the_answer_digest_ignores_key_order_but_not_values(self) -> None:
        same: dict[str, str | bool] = {"ok": True, "why": "tests pass", "go": "yes"}
        assert answer_digest(same) == answer_digest(ANSWER)
        expected = hashlib.sha256(b'{"go":"yes","ok":true,"why":"tests pass"}').hexdigest()
        assert answer_digest(ANSWER) == expected
        assert answer_digest({**ANSWER, "ok": False}) != expected


AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
QUESTION = Question(
    id=UUID(int=7),
    workspace_id=UUID(int=8),
    schedule_id=None,
    passage_id="p-1",
    prompt="Go?",
    fields=FIELD_TYPES,
    schema_digest=schema_digest("Go?", FIELD_TYPES),
    tag=None,
    state=QuestionState.OPEN,
    answer=None,
    answered_at=None,
    answered_by=None,
    answered_via=None,
    attempt_id=None,
    revision=1,
    asked_at=AT,
    updated_at=AT,
)
ATTEMPT = "6f1c1c8e-55a5-4e51-9a55-0d7c1f4a2b10"


def answered(via: AnswerVia, attempt_id: str | None = None) -> Question:
    return replace(
        QUESTION,
        state=QuestionState.ANSWERED,
        answer=dict(ANSWER),
        answered_at=AT,
        answered_via=via,
        attempt_id=attempt_id,
        revision=2,
    )


def mark(state: MarkState, attempt_id: str = ATTEMPT, *, read: bool = False) -> Mark:
    return Mark(
        question_id=QUESTION.id,
        attempt_id=attempt_id,
        passage_id="p-1",
        answered_at=AT,
        via="ui",
        state=state,
        principal_kind=PrincipalKind.SESSION,
        principal_id="s-1",
        created_at=AT,
        confirmed_at=AT if state is MarkState.CONFIRMED else None,
        delivered_at=AT if read or state is MarkState.CONFIRMED else None,
    )


class TestDecision:
    def test_an_interface_answer_with_its_confirmed_mark_is_the_humans(self) -> None:
        made = decision(answered(AnswerVia.UI, ATTEMPT), [mark(MarkState.CONFIRMED)])
        assert made.to_json() == {
            "questionId": str(QUESTION.id),
            "decidedBy": "human",
            "humanGate": "met",
            "refusal": None,
            "cause": None,
        }

    @pytest.mark.parametrize(
        ("question", "marks", "cause"),
        [
            # open
            (QUESTION, [], CAUSE_NOT_ANSWERED),
            # open, with a confirmed mark of some attempt: still no answer
            (QUESTION, [mark(MarkState.CONFIRMED)], CAUSE_NOT_ANSWERED),
            # withdrawn
            (replace(QUESTION, state=QuestionState.WITHDRAWN), [], CAUSE_NOT_ANSWERED),
            # the API, even beside a confirmed mark of an earlier attempt
            (answered(AnswerVia.API), [mark(MarkState.CONFIRMED)], CAUSE_API),
            # the command line
            (answered(AnswerVia.CLI), [], CAUSE_CLI),
            # the interface, its mark pending and not read by the passage yet
            (answered(AnswerVia.UI, ATTEMPT), [mark(MarkState.PENDING)], CAUSE_PENDING),
            # the interface, its mark pending, read but never acknowledged (uncertain)
            (
                answered(AnswerVia.UI, ATTEMPT),
                [mark(MarkState.PENDING, read=True)],
                CAUSE_UNCONFIRMED,
            ),
            # the interface, only another attempt's mark confirmed: its own is gone
            (
                answered(AnswerVia.UI, ATTEMPT),
                [mark(MarkState.CONFIRMED, "00000000-0000-4000-8000-000000000000")],
                CAUSE_NEVER_DELIVERED,
            ),
            # the interface, its attempt's mark removed (the passage never read it)
            (answered(AnswerVia.UI, ATTEMPT), [], CAUSE_NEVER_DELIVERED),
            # the interface, answered without a mark (no token could be had)
            (answered(AnswerVia.UI), [], CAUSE_NO_MARK),
        ],
    )
    def test_anything_else_leaves_the_gate_unmet_with_its_cause(
        self, question: Question, marks: list[Mark], cause: str
    ) -> None:
        made = decision(question, marks)
        assert made.to_json() == {
            "questionId": str(QUESTION.id),
            "decidedBy": None,
            "humanGate": "unmet",
            "refusal": HUMAN_DECISION_REQUIRED,
            "cause": cause,
        }

    def test_the_passage_deciding_itself_is_the_coordinators_never_the_humans(self) -> None:
        made = decision(answered(AnswerVia.COORDINATOR), [mark(MarkState.CONFIRMED)])
        assert (made.decided_by, made.human_gate, made.cause) == (
            "coordinator",
            "unmet",
            CAUSE_COORDINATOR,
        )
        assert made.refusal == (
            "Human decision required: the user must answer this question from the kalends interface"
        )
