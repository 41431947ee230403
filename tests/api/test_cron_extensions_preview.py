"""The editor's draft preview takes cron's extensions (issue 24 §4): its sentence and
slots come from the civil engine, and a misplaced extension is refused on its field,
writing nothing. On both backends."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest

from api.conftest import ApiWorld
from kalends.storage.testing import nothing_written
from missions.conftest import daily_config

START = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it; done here, so a preview writes nothing itself."""
    api.clock.set(START)
    assert api.client.get("/api/auth/me", headers=api.headers("bob")).status_code == 200


def preview(api: ApiWorld, expression: str, zone: str, count: int = 3) -> httpx2.Response:
    policy: dict[str, Any] = {"kind": "cron", "expression": expression, "zone": zone}
    url = f"/api/workspaces/{api.home.id}/missions/scheduled/preview"
    body = {"config": daily_config(policy=policy), "count": count}
    return api.client.post(url, json=body, headers=api.headers("bob"))


def test_the_second_sunday_of_march_at_0230_in_new_york_is_previewed_shifted(
    api: ApiWorld,
) -> None:
    with nothing_written(api.store):
        reply = preview(api, "30 2 * * 0#2", "America/New_York")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["sentence"].startswith("At 02:30 on the second Sunday of the month")
    assert [(s["local"], s["dst"]) for s in body["slots"]] == [
        ("2026-02-08T02:30:00", None),
        ("2026-03-08T03:00:00", "shifted"),
        ("2026-04-12T02:30:00", None),
    ]


def test_the_last_weekday_of_the_month_in_berlin_falls_back_to_friday(api: ApiWorld) -> None:
    reply = preview(api, "0 9 LW * *", "Europe/Berlin", count=2)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["sentence"].startswith("At 09:00 on the last weekday of the month")
    # 2026-02-28 is a Saturday: the Friday before; 2026-03-31 is a Tuesday.
    assert [s["local"] for s in body["slots"]] == ["2026-02-27T09:00:00", "2026-03-31T09:00:00"]


@pytest.mark.parametrize(
    "expression",
    [
        "0 9 * * 1#6",  # no sixth Monday
        "0 L * * *",  # L as an hour
        "0 9 * * LW",  # LW in the day-of-week field
    ],
)
def test_a_misplaced_extension_is_refused_on_the_expression_and_writes_nothing(
    api: ApiWorld, expression: str
) -> None:
    with nothing_written(api.store):
        reply = preview(api, expression, "UTC")
    assert reply.status_code == 422, reply.text
    assert reply.json()["details"]["field"].startswith("config.policy.expression")
