"""The one error tree: every error of kalends is a KalendsError; an edge's status and
machine code come from the class, and its words from one table per edge."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import kalends
from kalends import errors
from kalends.api.errors import API_NAMES, code_of, status_of
from kalends.cli.session import CLI_NAMES
from kalends.errors import (
    ControlConflict,
    CorruptRecord,
    DatabaseBusy,
    DeliveryFailed,
    InvalidInput,
    KalendsError,
    NotDispatched,
    OpenDescendants,
    RevisionConflict,
    ScheduleRevisionConflict,
)


def public_exceptions() -> list[type[BaseException]]:
    """Every public exception class a module of kalends defines."""
    found: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(kalends.__path__, "kalends."):
        if info.name.endswith("__main__"):
            continue  # running it is running the command line
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found.append(value)
    return found


def test_every_public_error_of_kalends_is_in_the_one_tree() -> None:
    outside = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in public_exceptions()
        if not issubclass(cls, KalendsError)
    ]
    assert outside == []


def test_the_walk_finds_errors_outside_errors_py() -> None:
    modules = {cls.__module__ for cls in public_exceptions()}
    assert "kalends.errors" in modules
    assert len(modules) > 1


def test_every_error_of_the_tree_has_a_code_of_its_own_or_of_its_parent() -> None:
    classes = [
        v for v in vars(errors).values() if inspect.isclass(v) and issubclass(v, KalendsError)
    ]
    assert all(cls.code for cls in classes)
    assert KalendsError.code == "error"


def test_a_corrupt_record_is_a_storage_error_and_still_a_value_error() -> None:
    failure = CorruptRecord("exit.json is not a JSON object")
    assert isinstance(failure, ValueError)
    assert status_of(failure) == 503


def test_a_delivery_failure_is_one_short_line() -> None:
    failure = DeliveryFailed("refused\n  by   the receiver" + "x" * 600, delivered=1)
    assert "\n" not in failure.message
    assert len(failure.message) == errors.MAX_REASON_LENGTH
    assert failure.message.endswith("…")
    assert failure.details == {"delivered": 1}


class TestNamed:
    def test_a_field_is_renamed_with_the_reason_kept(self) -> None:
        said = InvalidInput("end_date: before the anchor date", field="end_date").named(
            {"end_date": "until"}
        )
        assert isinstance(said, InvalidInput)
        assert said.message == "until: before the anchor date"
        assert said.field == said.details["field"] == "until"
        assert str(said) == said.message

    def test_an_error_the_table_does_not_name_is_itself(self) -> None:
        error = InvalidInput("title: cannot be blank", field="title")
        assert error.named(API_NAMES) is error

    def test_a_term_is_said_in_each_edges_words(self) -> None:
        refused = OpenDescendants.of(2, recurring=False)
        assert refused.message == (
            "2 open checklist item(s) remain; complete them or pass complete_subtree=true"
        )
        assert refused.named(API_NAMES).message.endswith('pass "completeSubtree": true')
        assert refused.named(CLI_NAMES).message.endswith("pass --subtree")
        assert refused.details == refused.named(CLI_NAMES).details == {"open": 2}

    def test_the_recurring_refusal_says_so_and_carries_it_in_its_details(self) -> None:
        refused = OpenDescendants.of(0, recurring=True).named(CLI_NAMES)
        assert refused.message == (
            "a recurring checklist is completed only as a whole: pass --subtree"
        )
        assert refused.details == {"open": 0, "recurring": True}
        assert isinstance(refused, OpenDescendants)


class TestApiCodes:
    @pytest.mark.parametrize(
        ("error", "status", "code"),
        [
            (RevisionConflict("stale"), 409, "revision-conflict"),
            (ScheduleRevisionConflict("stale"), 409, "recurrence-revision-conflict"),
            (ControlConflict("paused"), 409, "recurrence-control-conflict"),
            (DatabaseBusy("busy"), 503, "database-busy"),
            (NotDispatched("busy"), 503, "recurrence-not-dispatched"),
            (InvalidInput("bad"), 422, "invalid-input"),
            (KalendsError("unmapped"), 500, "error"),
        ],
    )
    def test_status_and_code_come_from_the_class(
        self, error: KalendsError, status: int, code: str
    ) -> None:
        assert (status_of(error), code_of(error)) == (status, code)

    def test_the_schedule_conflicts_keep_the_codes_the_status_read_names(self) -> None:
        assert ScheduleRevisionConflict.code == "revision-conflict"
        assert ControlConflict.code == "control-conflict"
        assert issubclass(NotDispatched, DatabaseBusy)
