"""Keyword groups keep the rules of named keywords (:mod:`kalends.keywords`).

A misspelled keyword would otherwise vanish into ``**kw`` (and with ``workspace``, the
scope check with it): it is a ``TypeError`` as for a function that names its keywords,
before the function runs; so is a required keyword left out. The signature lists the
group's keywords.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from kalends.keywords import takes
from kalends.missions import ScheduleService
from kalends.missions.keywords import ControlKeywords, PageKeywords
from kalends.reminders.inspection import IntentQuery
from kalends.reminders.outbox import Outbox
from kalends.tasks import TaskService
from kalends.tasks.changes import TaskChanges
from kalends.tasks.series import SeriesService

CALLS: list[dict[str, Any]] = []


@takes(PageKeywords, limit=8)
def page(where: str, **kw: Any) -> str:
    CALLS.append(dict(kw))
    return where


@takes(ControlKeywords)
def control(action: str, **kw: Any) -> str:
    CALLS.append(dict(kw))
    return action


def test_the_groups_keywords_pass_through() -> None:
    CALLS.clear()
    assert page("w", after="a", limit=3) == "w"
    assert page("w") == "w"
    assert CALLS == [{"after": "a", "limit": 3}, {}]


def test_an_unknown_keyword_is_refused_before_the_function_runs() -> None:
    CALLS.clear()
    with pytest.raises(TypeError, match="page\\(\\) got an unexpected keyword argument 'limt'"):
        page("w", limt=3)
    assert CALLS == []


def test_a_required_keyword_left_out_is_refused() -> None:
    CALLS.clear()
    with pytest.raises(TypeError, match="missing required keyword-only argument 'request_id'"):
        control("play", expected_revision=1)
    assert CALLS == []


def test_the_signature_lists_the_keywords_with_their_defaults() -> None:
    shown = inspect.signature(page)
    assert [(p.name, p.kind, p.default) for p in shown.parameters.values()] == [
        ("where", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("after", inspect.Parameter.KEYWORD_ONLY, None),
        ("limit", inspect.Parameter.KEYWORD_ONLY, 8),
    ]
    required = [
        p.name
        for p in inspect.signature(control).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    ]
    assert required == ["request_id", "expected_revision"]


def test_a_default_for_a_keyword_the_group_lacks_is_refused() -> None:
    with pytest.raises(TypeError, match="'lim'"):
        takes(PageKeywords, lim=8)


SERVICE_CALLS: list[tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
    (
        "ScheduleService.control",
        ScheduleService.control,
        (None, "actor", "schedule", "play"),
        {"request_id": "r" * 8, "expected_revision": 1},
    ),
    (
        "ScheduleService.configure",
        ScheduleService.configure,
        (None, "actor", "schedule", {"title": "x"}),
        {"request_id": "r" * 8, "expected_revision": 1},
    ),
    (
        "ScheduleService.play",
        ScheduleService.play,
        (None, "actor", "schedule"),
        {"request_id": "r" * 8, "expected_revision": 1},
    ),
    ("ScheduleService.page", ScheduleService.page, (None, "actor", "workspace"), {}),
    (
        "ScheduleService.control_status",
        ScheduleService.control_status,
        (None, "actor", "schedule", "r" * 8),
        {},
    ),
    ("Outbox.list", Outbox.list, (None, "actor"), {}),
    ("TaskService.tree", TaskService.tree, (None, "actor", "list"), {}),
    ("TaskService.tree_page", TaskService.tree_page, (None, "actor", "list"), {"limit": 5}),
    (
        "TaskService.tree_page_json",
        TaskService.tree_page_json,
        (None, "actor", "list"),
        {"limit": 5},
    ),
    ("TaskService.create", TaskService.create, (None, "actor", "list", "title"), {}),
    ("TaskService.move", TaskService.move, (None, "actor", "task", 1), {}),
    ("TaskChanges.edit", TaskChanges.edit, (None, "actor", "task", 1), {}),
    ("TaskChanges.relocate", TaskChanges.relocate, (None, "actor", "task", 1), {}),
    ("TaskChanges.repeat", TaskChanges.repeat, (None, "actor", "task", 1, {}), {}),
    (
        "SeriesService.start_series",
        SeriesService.start_series,
        (None, "actor", "task", 1, {}),
        {},
    ),
]


@pytest.mark.parametrize(
    ("name", "method", "args", "given"), [pytest.param(*call, id=call[0]) for call in SERVICE_CALLS]
)
def test_a_services_misspelled_keyword_is_refused_not_dropped(
    name: str, method: Callable[..., Any], args: tuple[Any, ...], given: dict[str, Any]
) -> None:
    # No service instance: the refusal comes before the method body runs.
    with pytest.raises(TypeError, match="unexpected keyword argument 'worksapce'"):
        method(*args, **given, worksapce=None)


def test_a_page_without_its_limit_is_refused() -> None:
    with pytest.raises(TypeError, match="missing required keyword-only argument 'limit'"):
        TaskService.tree_page(None, "actor", "list")  # type: ignore[call-arg, arg-type]


def test_the_reminder_listing_shows_its_default_limit() -> None:
    limit = inspect.signature(Outbox.list).parameters["limit"]
    assert limit.default == 100
    assert set(IntentQuery.__optional_keys__) == {"status", "task", "limit"}
