"""Every rule kind on the 2026 transition days of New York, Berlin and Sydney.

The expected slots are literals worked out by hand from the zones' rules:

- America/New_York: EST -05:00, EDT -04:00. 2026-03-08 02:00 EST -> 03:00 EDT at
  07:00Z (02:00-02:59 do not exist); 2026-11-01 02:00 EDT -> 01:00 EST at 06:00Z
  (01:00-01:59 happen twice: 05:xxZ, then 06:xxZ).
- Europe/Berlin: CET +01:00, CEST +02:00. 2026-03-29 02:00 -> 03:00 at 01:00Z;
  2026-10-25 03:00 -> 02:00 at 01:00Z (02:xx at 00:xxZ, then at 01:xxZ).
- Australia/Sydney: AEST +10:00, AEDT +11:00. 2026-04-05 03:00 -> 02:00 at
  2026-04-04T16:00Z (02:xx at 15:xxZ, then at 16:xxZ); 2026-10-04 02:00 -> 03:00 at
  2026-10-03T16:00Z.

Elapsed rules (``every``, ``after``) carry no zone, so their slots show UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, NamedTuple

import pytest

from kalends.civil import next_slots, parse_cron, parse_rule

Json = dict[str, Any]
NY = "America/New_York"
BERLIN = "Europe/Berlin"
SYDNEY = "Australia/Sydney"


class Expected(NamedTuple):
    at: str  # UTC
    local: str
    zone: str
    dst: str | None


def slot(at: str, local: str, zone: str, dst: str | None = None) -> Expected:
    return Expected(at, local, zone, dst)


SHIFTED = "shifted"
EARLIER = "earlier-of-two"


class Case(NamedTuple):
    rule: Json
    after: str  # UTC
    expected: list[Expected]
    origin: str | None = None  # UTC; defaults to ``after``
    complete: bool = False  # the rule has no slots beyond ``expected``


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def daily(time: str, zone: str, gap: str, **more: Any) -> Json:
    return {"kind": "daily", "time": time, "zone": zone, **more, "gap": gap}


def both_policies(case_id: str, case: Case) -> list[Any]:
    """A case where no wall time falls in a gap, so ``skip`` and ``shift`` agree."""
    return [
        pytest.param(case._replace(rule={**case.rule, "gap": gap}), id=f"{case_id}-{gap}")
        for gap in ("skip", "shift")
    ]


# --- America/New_York, 2026-03-08: 02:00-02:59 do not exist ---------------------------

NEW_YORK_SPRING = [
    # daily 02:30: the 8th shifts to 03:00 EDT, the first instant after the gap.
    pytest.param(
        Case(
            daily("02:30", NY, "shift"),
            "2026-03-07T05:00",
            [
                slot("2026-03-07T07:30", "2026-03-07T02:30", NY),
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY, SHIFTED),
                slot("2026-03-09T06:30", "2026-03-09T02:30", NY),
            ],
        ),
        id="ny-spring-daily-shift",
    ),
    # daily 02:30 skipped on the 8th.
    pytest.param(
        Case(
            daily("02:30", NY, "skip"),
            "2026-03-07T05:00",
            [
                slot("2026-03-07T07:30", "2026-03-07T02:30", NY),
                slot("2026-03-09T06:30", "2026-03-09T02:30", NY),
                slot("2026-03-10T06:30", "2026-03-10T02:30", NY),
            ],
        ),
        id="ny-spring-daily-skip",
    ),
    # Saturdays and Sundays at 02:30: Saturday the 7th, Sunday the 8th shifted, then the 14th.
    pytest.param(
        Case(
            {"kind": "weekdays", "days": [6, 7], "time": "02:30", "zone": NY, "gap": "shift"},
            "2026-03-07T05:00",
            [
                slot("2026-03-07T07:30", "2026-03-07T02:30", NY),
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY, SHIFTED),
                slot("2026-03-14T06:30", "2026-03-14T02:30", NY),
            ],
        ),
        id="ny-spring-weekdays-shift",
    ),
    # The same, skipping Sunday the 8th.
    pytest.param(
        Case(
            {"kind": "weekdays", "days": [6, 7], "time": "02:30", "zone": NY, "gap": "skip"},
            "2026-03-07T05:00",
            [
                slot("2026-03-07T07:30", "2026-03-07T02:30", NY),
                slot("2026-03-14T06:30", "2026-03-14T02:30", NY),
                slot("2026-03-15T06:30", "2026-03-15T02:30", NY),
            ],
        ),
        id="ny-spring-weekdays-skip",
    ),
    # 01:30 EST exists, 02:30 shifts to 03:00 EDT, 03:30 EDT exists; next day 01:30 EDT.
    pytest.param(
        Case(
            {"kind": "times", "times": ["01:30", "02:30", "03:30"], "zone": NY, "gap": "shift"},
            "2026-03-08T05:00",
            [
                slot("2026-03-08T06:30", "2026-03-08T01:30", NY),
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY, SHIFTED),
                slot("2026-03-08T07:30", "2026-03-08T03:30", NY),
                slot("2026-03-09T05:30", "2026-03-09T01:30", NY),
            ],
        ),
        id="ny-spring-times-shift",
    ),
    # The same times, 02:30 skipped.
    pytest.param(
        Case(
            {"kind": "times", "times": ["01:30", "02:30", "03:30"], "zone": NY, "gap": "skip"},
            "2026-03-08T05:00",
            [
                slot("2026-03-08T06:30", "2026-03-08T01:30", NY),
                slot("2026-03-08T07:30", "2026-03-08T03:30", NY),
                slot("2026-03-09T05:30", "2026-03-09T01:30", NY),
                slot("2026-03-09T06:30", "2026-03-09T02:30", NY),
            ],
        ),
        id="ny-spring-times-skip",
    ),
    # 02:30 shifted onto 03:00, which also exists exactly: one slot, no DST note.
    pytest.param(
        Case(
            {"kind": "times", "times": ["02:30", "03:00"], "zone": NY, "gap": "shift"},
            "2026-03-08T05:00",
            [
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY),
                slot("2026-03-09T06:30", "2026-03-09T02:30", NY),
                slot("2026-03-09T07:00", "2026-03-09T03:00", NY),
            ],
        ),
        id="ny-spring-times-coalesce-shift",
    ),
    # Two gap times shift onto the same instant: one slot, still shifted.
    pytest.param(
        Case(
            {"kind": "times", "times": ["02:00", "02:59"], "zone": NY, "gap": "shift"},
            "2026-03-08T05:00",
            [
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY, SHIFTED),
                slot("2026-03-09T06:00", "2026-03-09T02:00", NY),
                slot("2026-03-09T06:59", "2026-03-09T02:59", NY),
            ],
        ),
        id="ny-spring-times-two-shifted-coalesce",
    ),
    # Monthly on the 8th at 02:30: March shifted, then April and May at 02:30 EDT.
    pytest.param(
        Case(
            {"kind": "monthly", "day": 8, "time": "02:30", "zone": NY, "gap": "shift"},
            "2026-03-07T05:00",
            [
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY, SHIFTED),
                slot("2026-04-08T06:30", "2026-04-08T02:30", NY),
                slot("2026-05-08T06:30", "2026-05-08T02:30", NY),
            ],
        ),
        id="ny-spring-monthly-shift",
    ),
    # Monthly, March skipped.
    pytest.param(
        Case(
            {"kind": "monthly", "day": 8, "time": "02:30", "zone": NY, "gap": "skip"},
            "2026-03-07T05:00",
            [
                slot("2026-04-08T06:30", "2026-04-08T02:30", NY),
                slot("2026-05-08T06:30", "2026-05-08T02:30", NY),
            ],
        ),
        id="ny-spring-monthly-skip",
    ),
    # Wall-clock cron (fixed minute and hour) on Sundays: behaves like times.
    pytest.param(
        Case(
            {"kind": "cron", "expression": "30 1-3 * * 0", "zone": NY, "gap": "shift"},
            "2026-03-08T05:00",
            [
                slot("2026-03-08T06:30", "2026-03-08T01:30", NY),
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY, SHIFTED),
                slot("2026-03-08T07:30", "2026-03-08T03:30", NY),
                slot("2026-03-15T05:30", "2026-03-15T01:30", NY),
            ],
        ),
        id="ny-spring-cron-wall-shift",
    ),
    # Wall-clock cron, 02:30 skipped.
    pytest.param(
        Case(
            {"kind": "cron", "expression": "30 1-3 * * 0", "zone": NY, "gap": "skip"},
            "2026-03-08T05:00",
            [
                slot("2026-03-08T06:30", "2026-03-08T01:30", NY),
                slot("2026-03-08T07:30", "2026-03-08T03:30", NY),
                slot("2026-03-15T05:30", "2026-03-15T01:30", NY),
                slot("2026-03-15T06:30", "2026-03-15T02:30", NY),
            ],
        ),
        id="ny-spring-cron-wall-skip",
    ),
    *[
        # Elapsed cron: 02:xx never happens, under either policy.
        pytest.param(
            Case(
                {"kind": "cron", "expression": "*/30 1-3 * * *", "zone": NY, "gap": gap},
                "2026-03-08T05:00",
                [
                    slot("2026-03-08T06:00", "2026-03-08T01:00", NY),
                    slot("2026-03-08T06:30", "2026-03-08T01:30", NY),
                    slot("2026-03-08T07:00", "2026-03-08T03:00", NY),
                    slot("2026-03-08T07:30", "2026-03-08T03:30", NY),
                    slot("2026-03-09T05:00", "2026-03-09T01:00", NY),
                ],
            ),
            id=f"ny-spring-cron-elapsed-{gap}",
        )
        for gap in ("skip", "shift")
    ],
    *[
        # Every hour from 00:30 EST: true elapsed hours, shown in UTC.
        pytest.param(
            Case(
                {"kind": "every", "minutes": 60, "gap": gap},
                "2026-03-08T05:30",
                [
                    slot("2026-03-08T06:30", "2026-03-08T06:30", "UTC"),
                    slot("2026-03-08T07:30", "2026-03-08T07:30", "UTC"),
                    slot("2026-03-08T08:30", "2026-03-08T08:30", "UTC"),
                ],
            ),
            id=f"ny-spring-every-{gap}",
        )
        for gap in ("skip", "shift")
    ],
    *[
        # Two elapsed hours after 01:30 EST (06:30Z): 08:30Z, which New York shows as 04:30.
        pytest.param(
            Case(
                {"kind": "after", "hours": 2, "gap": gap},
                "2026-03-08T06:30",
                [slot("2026-03-08T08:30", "2026-03-08T08:30", "UTC")],
                complete=True,
            ),
            id=f"ny-spring-after-{gap}",
        )
        for gap in ("skip", "shift")
    ],
    # One time at 03:00, the first wall time after the gap: 07:00Z.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-03-08T03:00:00", "zone": NY},
            "2026-03-08T00:00",
            [slot("2026-03-08T07:00", "2026-03-08T03:00", NY)],
            complete=True,
        ),
        id="ny-spring-at-0300",
    ),
    # One time at 01:59:59, the last second before the gap: 06:59:59Z.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-03-08T01:59:59", "zone": NY, "gap": "skip"},
            "2026-03-08T00:00",
            [slot("2026-03-08T06:59:59", "2026-03-08T01:59:59", NY)],
            complete=True,
        ),
        id="ny-spring-at-015959",
    ),
    # Calendars 02:30 and 03:00: the shifted 02:30 lands on 03:00 and coalesces, no note.
    pytest.param(
        Case(
            {
                "kind": "calendars",
                "calendars": [daily("02:30", NY, "shift"), daily("03:00", NY, "shift")],
            },
            "2026-03-08T05:00",
            [
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY),
                slot("2026-03-09T06:30", "2026-03-09T02:30", NY),
                slot("2026-03-09T07:00", "2026-03-09T03:00", NY),
            ],
        ),
        id="ny-spring-calendars-shift",
    ),
    # Calendars with skip: 02:30 drops, 03:00 stays.
    pytest.param(
        Case(
            {
                "kind": "calendars",
                "calendars": [daily("02:30", NY, "skip"), daily("03:00", NY, "skip")],
            },
            "2026-03-08T05:00",
            [
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY),
                slot("2026-03-09T06:30", "2026-03-09T02:30", NY),
                slot("2026-03-09T07:00", "2026-03-09T03:00", NY),
            ],
        ),
        id="ny-spring-calendars-skip",
    ),
    # New York 02:30 (shifted to 07:00Z) and UTC 07:00 coincide: the lower index names the
    # zone (New York, 03:00) and the exact UTC calendar clears the note.
    pytest.param(
        Case(
            {
                "kind": "calendars",
                "gap": "shift",
                "calendars": [
                    {"kind": "daily", "time": "02:30", "zone": NY},
                    {"kind": "daily", "time": "07:00", "zone": "UTC"},
                ],
            },
            "2026-03-08T05:00",
            [
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY),
                slot("2026-03-09T06:30", "2026-03-09T02:30", NY),
                slot("2026-03-09T07:00", "2026-03-09T07:00", "UTC"),
            ],
        ),
        id="ny-spring-calendars-two-zones-shift",
    ),
    # Skipped: only the UTC calendar fires at 07:00Z, so the slot is shown in UTC.
    pytest.param(
        Case(
            {
                "kind": "calendars",
                "gap": "skip",
                "calendars": [
                    {"kind": "daily", "time": "02:30", "zone": NY},
                    {"kind": "daily", "time": "07:00", "zone": "UTC"},
                ],
            },
            "2026-03-08T05:00",
            [
                slot("2026-03-08T07:00", "2026-03-08T07:00", "UTC"),
                slot("2026-03-09T06:30", "2026-03-09T02:30", NY),
                slot("2026-03-09T07:00", "2026-03-09T07:00", "UTC"),
            ],
        ),
        id="ny-spring-calendars-two-zones-skip",
    ),
    # Every second day from Friday the 6th (the origin's date): the 8th shifted, 10th, 12th.
    pytest.param(
        Case(
            daily("02:30", NY, "shift", interval_days=2),
            "2026-03-06T17:00",
            [
                slot("2026-03-08T07:00", "2026-03-08T03:00", NY, SHIFTED),
                slot("2026-03-10T06:30", "2026-03-10T02:30", NY),
                slot("2026-03-12T06:30", "2026-03-12T02:30", NY),
            ],
        ),
        id="ny-spring-daily-interval-shift",
    ),
    # Every second day, the 8th skipped.
    pytest.param(
        Case(
            daily("02:30", NY, "skip", interval_days=2),
            "2026-03-06T17:00",
            [
                slot("2026-03-10T06:30", "2026-03-10T02:30", NY),
                slot("2026-03-12T06:30", "2026-03-12T02:30", NY),
                slot("2026-03-14T06:30", "2026-03-14T02:30", NY),
            ],
        ),
        id="ny-spring-daily-interval-skip",
    ),
    # Completed at 18:00 EST on the 7th, next one day later at 02:30: shifted.
    pytest.param(
        Case(
            {
                "kind": "completion_relative",
                "days": 1,
                "time": "02:30",
                "zone": NY,
                "gap": "shift",
            },
            "2026-03-07T23:00",
            [slot("2026-03-08T07:00", "2026-03-08T03:00", NY, SHIFTED)],
            complete=True,
        ),
        id="ny-spring-completion-shift",
    ),
    # Completion-relative skipped: no slot at all.
    pytest.param(
        Case(
            {
                "kind": "completion_relative",
                "days": 1,
                "time": "02:30",
                "zone": NY,
                "gap": "skip",
            },
            "2026-03-07T23:00",
            [],
            complete=True,
        ),
        id="ny-spring-completion-skip",
    ),
]


# --- America/New_York, 2026-11-01: 01:00-01:59 happen twice ---------------------------

NEW_YORK_FALL = [
    # daily 01:30: the 1st takes the earlier 01:30 (EDT, 05:30Z), never the EST one.
    *both_policies(
        "ny-fall-daily",
        Case(
            {"kind": "daily", "time": "01:30", "zone": NY},
            "2026-10-31T04:00",
            [
                slot("2026-10-31T05:30", "2026-10-31T01:30", NY),
                slot("2026-11-01T05:30", "2026-11-01T01:30", NY, EARLIER),
                slot("2026-11-02T06:30", "2026-11-02T01:30", NY),
            ],
        ),
    ),
    # Sundays at 01:30: earlier of two, then 01:30 EST on the following Sundays.
    *both_policies(
        "ny-fall-weekdays",
        Case(
            {"kind": "weekdays", "days": [7], "time": "01:30", "zone": NY},
            "2026-10-31T04:00",
            [
                slot("2026-11-01T05:30", "2026-11-01T01:30", NY, EARLIER),
                slot("2026-11-08T06:30", "2026-11-08T01:30", NY),
                slot("2026-11-15T06:30", "2026-11-15T01:30", NY),
            ],
        ),
    ),
    # 00:30 EDT, 01:30 earlier of two, 02:30 EST; next day 00:30 EST.
    *both_policies(
        "ny-fall-times",
        Case(
            {"kind": "times", "times": ["00:30", "01:30", "02:30"], "zone": NY},
            "2026-11-01T04:00",
            [
                slot("2026-11-01T04:30", "2026-11-01T00:30", NY),
                slot("2026-11-01T05:30", "2026-11-01T01:30", NY, EARLIER),
                slot("2026-11-01T07:30", "2026-11-01T02:30", NY),
                slot("2026-11-02T05:30", "2026-11-02T00:30", NY),
            ],
        ),
    ),
    # Monthly on the 1st at 01:30: October EDT, November earlier of two, December EST.
    *both_policies(
        "ny-fall-monthly",
        Case(
            {"kind": "monthly", "day": 1, "time": "01:30", "zone": NY},
            "2026-10-01T04:00",
            [
                slot("2026-10-01T05:30", "2026-10-01T01:30", NY),
                slot("2026-11-01T05:30", "2026-11-01T01:30", NY, EARLIER),
                slot("2026-12-01T06:30", "2026-12-01T01:30", NY),
            ],
        ),
    ),
    # Wall-clock cron at 01:30 on Sundays: once, the earlier.
    *both_policies(
        "ny-fall-cron-wall",
        Case(
            {"kind": "cron", "expression": "30 1 * * sun", "zone": NY},
            "2026-10-31T04:00",
            [
                slot("2026-11-01T05:30", "2026-11-01T01:30", NY, EARLIER),
                slot("2026-11-08T06:30", "2026-11-08T01:30", NY),
            ],
        ),
    ),
    # Elapsed cron in hour 1: both passes, no notes.
    *both_policies(
        "ny-fall-cron-elapsed",
        Case(
            {"kind": "cron", "expression": "*/30 1 * * *", "zone": NY},
            "2026-11-01T04:00",
            [
                slot("2026-11-01T05:00", "2026-11-01T01:00", NY),
                slot("2026-11-01T05:30", "2026-11-01T01:30", NY),
                slot("2026-11-01T06:00", "2026-11-01T01:00", NY),
                slot("2026-11-01T06:30", "2026-11-01T01:30", NY),
                slot("2026-11-02T06:00", "2026-11-02T01:00", NY),
            ],
        ),
    ),
    # Every 30 minutes across the repeated hour: plain elapsed time.
    *both_policies(
        "ny-fall-every",
        Case(
            {"kind": "every", "minutes": 30},
            "2026-11-01T05:00",
            [
                slot("2026-11-01T05:30", "2026-11-01T05:30", "UTC"),
                slot("2026-11-01T06:00", "2026-11-01T06:00", "UTC"),
                slot("2026-11-01T06:30", "2026-11-01T06:30", "UTC"),
            ],
        ),
    ),
    # One elapsed hour after 01:30 EDT is 01:30 EST (06:30Z).
    *both_policies(
        "ny-fall-after",
        Case(
            {"kind": "after", "hours": 1},
            "2026-11-01T05:30",
            [slot("2026-11-01T06:30", "2026-11-01T06:30", "UTC")],
            complete=True,
        ),
    ),
    # One time at 00:59, just before the repeated hour.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-11-01T00:59:00", "zone": NY},
            "2026-10-31T00:00",
            [slot("2026-11-01T04:59", "2026-11-01T00:59", NY)],
            complete=True,
        ),
        id="ny-fall-at-0059",
    ),
    # One time at 02:00, which exists once (EST).
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-11-01T02:00:00", "zone": NY},
            "2026-10-31T00:00",
            [slot("2026-11-01T07:00", "2026-11-01T02:00", NY)],
            complete=True,
        ),
        id="ny-fall-at-0200",
    ),
    # New York 01:30 (earlier: 05:30Z) and UTC 05:30 coincide: New York's zone, no note.
    *both_policies(
        "ny-fall-calendars-coincide",
        Case(
            {
                "kind": "calendars",
                "calendars": [
                    {"kind": "daily", "time": "01:30", "zone": NY},
                    {"kind": "daily", "time": "05:30", "zone": "UTC"},
                ],
            },
            "2026-11-01T04:00",
            [
                slot("2026-11-01T05:30", "2026-11-01T01:30", NY),
                slot("2026-11-02T05:30", "2026-11-02T05:30", "UTC"),
                slot("2026-11-02T06:30", "2026-11-02T01:30", NY),
            ],
        ),
    ),
    # UTC 06:30 is the second 01:30 in New York; New York itself fires only the earlier.
    *both_policies(
        "ny-fall-calendars-second-pass",
        Case(
            {
                "kind": "calendars",
                "calendars": [
                    {"kind": "daily", "time": "01:30", "zone": NY},
                    {"kind": "daily", "time": "06:30", "zone": "UTC"},
                ],
            },
            "2026-11-01T04:00",
            [
                slot("2026-11-01T05:30", "2026-11-01T01:30", NY, EARLIER),
                slot("2026-11-01T06:30", "2026-11-01T06:30", "UTC"),
                slot("2026-11-02T06:30", "2026-11-02T01:30", NY),
            ],
        ),
    ),
    # Every third day from Thursday 10-29 (origin's date): 11-01 earlier, 11-04, 11-07.
    *both_policies(
        "ny-fall-daily-interval",
        Case(
            {"kind": "daily", "time": "01:30", "zone": NY, "interval_days": 3},
            "2026-10-29T16:00",
            [
                slot("2026-11-01T05:30", "2026-11-01T01:30", NY, EARLIER),
                slot("2026-11-04T06:30", "2026-11-04T01:30", NY),
                slot("2026-11-07T06:30", "2026-11-07T01:30", NY),
            ],
        ),
    ),
    # Completed 10-30 at noon EDT, due two days later at 01:30: the earlier.
    *both_policies(
        "ny-fall-completion",
        Case(
            {"kind": "completion_relative", "days": 2, "time": "01:30", "zone": NY},
            "2026-10-30T16:00",
            [slot("2026-11-01T05:30", "2026-11-01T01:30", NY, EARLIER)],
            complete=True,
        ),
    ),
]


# --- Europe/Berlin, 2026-03-29: 02:00-02:59 do not exist -------------------------------

BERLIN_SPRING = [
    # daily 02:30: 28th CET (01:30Z), 29th shifted to 03:00 CEST (01:00Z), 30th CEST (00:30Z).
    pytest.param(
        Case(
            daily("02:30", BERLIN, "shift"),
            "2026-03-27T23:00",
            [
                slot("2026-03-28T01:30", "2026-03-28T02:30", BERLIN),
                slot("2026-03-29T01:00", "2026-03-29T03:00", BERLIN, SHIFTED),
                slot("2026-03-30T00:30", "2026-03-30T02:30", BERLIN),
            ],
        ),
        id="berlin-spring-daily-shift",
    ),
    # daily 02:30, the 29th skipped.
    pytest.param(
        Case(
            daily("02:30", BERLIN, "skip"),
            "2026-03-27T23:00",
            [
                slot("2026-03-28T01:30", "2026-03-28T02:30", BERLIN),
                slot("2026-03-30T00:30", "2026-03-30T02:30", BERLIN),
                slot("2026-03-31T00:30", "2026-03-31T02:30", BERLIN),
            ],
        ),
        id="berlin-spring-daily-skip",
    ),
    # Sundays at 02:00, the very start of the gap: shifted to 03:00.
    pytest.param(
        Case(
            {"kind": "weekdays", "days": [7], "time": "02:00", "zone": BERLIN, "gap": "shift"},
            "2026-03-27T23:00",
            [
                slot("2026-03-29T01:00", "2026-03-29T03:00", BERLIN, SHIFTED),
                slot("2026-04-05T00:00", "2026-04-05T02:00", BERLIN),
                slot("2026-04-12T00:00", "2026-04-12T02:00", BERLIN),
            ],
        ),
        id="berlin-spring-weekdays-shift",
    ),
    # Sundays at 02:00, skipped on the 29th.
    pytest.param(
        Case(
            {"kind": "weekdays", "days": [7], "time": "02:00", "zone": BERLIN, "gap": "skip"},
            "2026-03-27T23:00",
            [
                slot("2026-04-05T00:00", "2026-04-05T02:00", BERLIN),
                slot("2026-04-12T00:00", "2026-04-12T02:00", BERLIN),
                slot("2026-04-19T00:00", "2026-04-19T02:00", BERLIN),
            ],
        ),
        id="berlin-spring-weekdays-skip",
    ),
    # 01:59 CET just before the gap, 02:30 shifted; next day both in CEST.
    pytest.param(
        Case(
            {"kind": "times", "times": ["01:59", "02:30"], "zone": BERLIN, "gap": "shift"},
            "2026-03-28T23:00",
            [
                slot("2026-03-29T00:59", "2026-03-29T01:59", BERLIN),
                slot("2026-03-29T01:00", "2026-03-29T03:00", BERLIN, SHIFTED),
                slot("2026-03-29T23:59", "2026-03-30T01:59", BERLIN),
                slot("2026-03-30T00:30", "2026-03-30T02:30", BERLIN),
            ],
        ),
        id="berlin-spring-times-shift",
    ),
    # The same with 02:30 skipped.
    pytest.param(
        Case(
            {"kind": "times", "times": ["01:59", "02:30"], "zone": BERLIN, "gap": "skip"},
            "2026-03-28T23:00",
            [
                slot("2026-03-29T00:59", "2026-03-29T01:59", BERLIN),
                slot("2026-03-29T23:59", "2026-03-30T01:59", BERLIN),
                slot("2026-03-30T00:30", "2026-03-30T02:30", BERLIN),
                slot("2026-03-30T23:59", "2026-03-31T01:59", BERLIN),
            ],
        ),
        id="berlin-spring-times-skip",
    ),
    # 02:00 and 02:59:59 shift onto 03:00, which exists too: one slot, no note.
    pytest.param(
        Case(
            {
                "kind": "times",
                "times": ["02:00", "02:59:59", "03:00"],
                "zone": BERLIN,
                "gap": "shift",
            },
            "2026-03-28T23:00",
            [
                slot("2026-03-29T01:00", "2026-03-29T03:00", BERLIN),
                slot("2026-03-30T00:00", "2026-03-30T02:00", BERLIN),
                slot("2026-03-30T00:59:59", "2026-03-30T02:59:59", BERLIN),
                slot("2026-03-30T01:00", "2026-03-30T03:00", BERLIN),
            ],
        ),
        id="berlin-spring-times-coalesce-shift",
    ),
    # Monthly on the 29th at 02:30: March shifted, then April and May (CEST).
    pytest.param(
        Case(
            {"kind": "monthly", "day": 29, "time": "02:30", "zone": BERLIN, "gap": "shift"},
            "2026-03-27T23:00",
            [
                slot("2026-03-29T01:00", "2026-03-29T03:00", BERLIN, SHIFTED),
                slot("2026-04-29T00:30", "2026-04-29T02:30", BERLIN),
                slot("2026-05-29T00:30", "2026-05-29T02:30", BERLIN),
            ],
        ),
        id="berlin-spring-monthly-shift",
    ),
    # Monthly on the 29th, March skipped.
    pytest.param(
        Case(
            {"kind": "monthly", "day": 29, "time": "02:30", "zone": BERLIN, "gap": "skip"},
            "2026-03-27T23:00",
            [
                slot("2026-04-29T00:30", "2026-04-29T02:30", BERLIN),
                slot("2026-05-29T00:30", "2026-05-29T02:30", BERLIN),
                slot("2026-06-29T00:30", "2026-06-29T02:30", BERLIN),
            ],
        ),
        id="berlin-spring-monthly-skip",
    ),
    # Yearly cron on March 29 at 02:15: 2026 shifted; 2027 and 2028 are after their
    # changes (2027-03-28, 2028-03-26), so 02:15 CEST.
    pytest.param(
        Case(
            {"kind": "cron", "expression": "15 2 29 3 *", "zone": BERLIN, "gap": "shift"},
            "2026-03-27T23:00",
            [
                slot("2026-03-29T01:00", "2026-03-29T03:00", BERLIN, SHIFTED),
                slot("2027-03-29T00:15", "2027-03-29T02:15", BERLIN),
                slot("2028-03-29T00:15", "2028-03-29T02:15", BERLIN),
            ],
        ),
        id="berlin-spring-cron-wall-shift",
    ),
    # Yearly cron, 2026 skipped.
    pytest.param(
        Case(
            {"kind": "cron", "expression": "15 2 29 mar *", "zone": BERLIN, "gap": "skip"},
            "2026-03-27T23:00",
            [
                slot("2027-03-29T00:15", "2027-03-29T02:15", BERLIN),
                slot("2028-03-29T00:15", "2028-03-29T02:15", BERLIN),
                slot("2029-03-29T00:15", "2029-03-29T02:15", BERLIN),
            ],
        ),
        id="berlin-spring-cron-wall-skip",
    ),
    # Elapsed cron in hour 2: nothing on the 29th, then 02:00 CEST on the 30th.
    *both_policies(
        "berlin-spring-cron-elapsed",
        Case(
            {"kind": "cron", "expression": "*/20 2 * * *", "zone": BERLIN},
            "2026-03-28T23:00",
            [
                slot("2026-03-30T00:00", "2026-03-30T02:00", BERLIN),
                slot("2026-03-30T00:20", "2026-03-30T02:20", BERLIN),
                slot("2026-03-30T00:40", "2026-03-30T02:40", BERLIN),
            ],
        ),
    ),
    # Every hour from 01:30 CET: 02:30 CET never shows, but elapsed hours do not care.
    *both_policies(
        "berlin-spring-every",
        Case(
            {"kind": "every", "hours": 1},
            "2026-03-29T00:30",
            [
                slot("2026-03-29T01:30", "2026-03-29T01:30", "UTC"),
                slot("2026-03-29T02:30", "2026-03-29T02:30", "UTC"),
            ],
        ),
    ),
    # 90 elapsed minutes after 01:30 CET (00:30Z): 02:00Z.
    *both_policies(
        "berlin-spring-after",
        Case(
            {"kind": "after", "minutes": 90},
            "2026-03-29T00:30",
            [slot("2026-03-29T02:00", "2026-03-29T02:00", "UTC")],
            complete=True,
        ),
    ),
    # One time at 03:00 CEST, the first wall time after the gap.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-03-29T03:00:00", "zone": BERLIN},
            "2026-03-28T00:00",
            [slot("2026-03-29T01:00", "2026-03-29T03:00", BERLIN)],
            complete=True,
        ),
        id="berlin-spring-at-0300",
    ),
    # One time at 01:59:59 CET, the last second before it.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-03-29T01:59:59", "zone": BERLIN},
            "2026-03-28T00:00",
            [slot("2026-03-29T00:59:59", "2026-03-29T01:59:59", BERLIN)],
            complete=True,
        ),
        id="berlin-spring-at-015959",
    ),
    # Berlin 02:30 (shifted to 01:00Z) meets London 02:00 BST (01:00Z, exact): Berlin's zone
    # and wall time (first calendar), no note.
    pytest.param(
        Case(
            {
                "kind": "calendars",
                "gap": "shift",
                "calendars": [
                    {"kind": "daily", "time": "02:30", "zone": BERLIN},
                    {"kind": "daily", "time": "02:00", "zone": "Europe/London"},
                ],
            },
            "2026-03-28T23:00",
            [
                slot("2026-03-29T01:00", "2026-03-29T03:00", BERLIN),
                slot("2026-03-30T00:30", "2026-03-30T02:30", BERLIN),
                slot("2026-03-30T01:00", "2026-03-30T02:00", "Europe/London"),
            ],
        ),
        id="berlin-spring-calendars-shift",
    ),
    # Skipped, only London fires at 01:00Z and names the slot.
    pytest.param(
        Case(
            {
                "kind": "calendars",
                "gap": "skip",
                "calendars": [
                    {"kind": "daily", "time": "02:30", "zone": BERLIN},
                    {"kind": "daily", "time": "02:00", "zone": "Europe/London"},
                ],
            },
            "2026-03-28T23:00",
            [
                slot("2026-03-29T01:00", "2026-03-29T02:00", "Europe/London"),
                slot("2026-03-30T00:30", "2026-03-30T02:30", BERLIN),
                slot("2026-03-30T01:00", "2026-03-30T02:00", "Europe/London"),
            ],
        ),
        id="berlin-spring-calendars-skip",
    ),
    # Weekly from Sunday the 22nd (origin's date): the 29th shifted, then April 5 and 12.
    pytest.param(
        Case(
            daily("02:30", BERLIN, "shift", interval_days=7),
            "2026-03-22T11:00",
            [
                slot("2026-03-29T01:00", "2026-03-29T03:00", BERLIN, SHIFTED),
                slot("2026-04-05T00:30", "2026-04-05T02:30", BERLIN),
                slot("2026-04-12T00:30", "2026-04-12T02:30", BERLIN),
            ],
        ),
        id="berlin-spring-daily-interval-shift",
    ),
    # Weekly, the 29th skipped.
    pytest.param(
        Case(
            daily("02:30", BERLIN, "skip", interval_days=7),
            "2026-03-22T11:00",
            [
                slot("2026-04-05T00:30", "2026-04-05T02:30", BERLIN),
                slot("2026-04-12T00:30", "2026-04-12T02:30", BERLIN),
                slot("2026-04-19T00:30", "2026-04-19T02:30", BERLIN),
            ],
        ),
        id="berlin-spring-daily-interval-skip",
    ),
    # Completed at 00:30 CET on the 29th, due the same day at 02:30: shifted.
    pytest.param(
        Case(
            {
                "kind": "completion_relative",
                "days": 0,
                "time": "02:30",
                "zone": BERLIN,
                "gap": "shift",
            },
            "2026-03-28T23:30",
            [slot("2026-03-29T01:00", "2026-03-29T03:00", BERLIN, SHIFTED)],
            complete=True,
        ),
        id="berlin-spring-completion-shift",
    ),
    # The same, skipped: no slot.
    pytest.param(
        Case(
            {
                "kind": "completion_relative",
                "days": 0,
                "time": "02:30",
                "zone": BERLIN,
                "gap": "skip",
            },
            "2026-03-28T23:30",
            [],
            complete=True,
        ),
        id="berlin-spring-completion-skip",
    ),
]


# --- Europe/Berlin, 2026-10-25: 02:00-02:59 happen twice -------------------------------

BERLIN_FALL = [
    # daily 02:30: 24th CEST, 25th the earlier (CEST, 00:30Z), 26th CET.
    *both_policies(
        "berlin-fall-daily",
        Case(
            {"kind": "daily", "time": "02:30", "zone": BERLIN},
            "2026-10-23T22:00",
            [
                slot("2026-10-24T00:30", "2026-10-24T02:30", BERLIN),
                slot("2026-10-25T00:30", "2026-10-25T02:30", BERLIN, EARLIER),
                slot("2026-10-26T01:30", "2026-10-26T02:30", BERLIN),
            ],
        ),
    ),
    # Mondays and Sundays at 02:00: the 25th the earlier, then Monday 26th and Sunday 11-01.
    *both_policies(
        "berlin-fall-weekdays",
        Case(
            {"kind": "weekdays", "days": [1, 7], "time": "02:00", "zone": BERLIN},
            "2026-10-23T22:00",
            [
                slot("2026-10-25T00:00", "2026-10-25T02:00", BERLIN, EARLIER),
                slot("2026-10-26T01:00", "2026-10-26T02:00", BERLIN),
                slot("2026-11-01T01:00", "2026-11-01T02:00", BERLIN),
            ],
        ),
    ),
    # 02:00 twice (earlier), 03:00 once (CET); next day 02:00 CET.
    *both_policies(
        "berlin-fall-times",
        Case(
            {"kind": "times", "times": ["02:00", "03:00"], "zone": BERLIN},
            "2026-10-24T22:00",
            [
                slot("2026-10-25T00:00", "2026-10-25T02:00", BERLIN, EARLIER),
                slot("2026-10-25T02:00", "2026-10-25T03:00", BERLIN),
                slot("2026-10-26T01:00", "2026-10-26T02:00", BERLIN),
            ],
        ),
    ),
    # Monthly on the 25th at 02:59: the earlier (00:59Z), then November CET.
    *both_policies(
        "berlin-fall-monthly",
        Case(
            {"kind": "monthly", "day": 25, "time": "02:59", "zone": BERLIN},
            "2026-10-23T22:00",
            [
                slot("2026-10-25T00:59", "2026-10-25T02:59", BERLIN, EARLIER),
                slot("2026-11-25T01:59", "2026-11-25T02:59", BERLIN),
            ],
        ),
    ),
    # Wall-clock cron at 02:00 and 03:00 on Sundays.
    *both_policies(
        "berlin-fall-cron-wall",
        Case(
            {"kind": "cron", "expression": "0 2,3 * * sun", "zone": BERLIN},
            "2026-10-24T22:00",
            [
                slot("2026-10-25T00:00", "2026-10-25T02:00", BERLIN, EARLIER),
                slot("2026-10-25T02:00", "2026-10-25T03:00", BERLIN),
                slot("2026-11-01T01:00", "2026-11-01T02:00", BERLIN),
            ],
        ),
    ),
    # Elapsed cron in hour 2: both passes.
    *both_policies(
        "berlin-fall-cron-elapsed",
        Case(
            {"kind": "cron", "expression": "*/30 2 * * *", "zone": BERLIN},
            "2026-10-24T22:00",
            [
                slot("2026-10-25T00:00", "2026-10-25T02:00", BERLIN),
                slot("2026-10-25T00:30", "2026-10-25T02:30", BERLIN),
                slot("2026-10-25T01:00", "2026-10-25T02:00", BERLIN),
                slot("2026-10-25T01:30", "2026-10-25T02:30", BERLIN),
                slot("2026-10-26T01:00", "2026-10-26T02:00", BERLIN),
            ],
        ),
    ),
    # Every 45 minutes from 02:00 CEST.
    *both_policies(
        "berlin-fall-every",
        Case(
            {"kind": "every", "minutes": 45},
            "2026-10-25T00:00",
            [
                slot("2026-10-25T00:45", "2026-10-25T00:45", "UTC"),
                slot("2026-10-25T01:30", "2026-10-25T01:30", "UTC"),
                slot("2026-10-25T02:15", "2026-10-25T02:15", "UTC"),
            ],
        ),
    ),
    # Two elapsed hours after 02:00 CEST: 03:00 CET (02:00Z).
    *both_policies(
        "berlin-fall-after",
        Case(
            {"kind": "after", "hours": 2},
            "2026-10-25T00:00",
            [slot("2026-10-25T02:00", "2026-10-25T02:00", "UTC")],
            complete=True,
        ),
    ),
    # One time at 01:59 CEST.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-10-25T01:59:00", "zone": BERLIN},
            "2026-10-24T00:00",
            [slot("2026-10-24T23:59", "2026-10-25T01:59", BERLIN)],
            complete=True,
        ),
        id="berlin-fall-at-0159",
    ),
    # One time at 03:00 CET.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-10-25T03:00:00", "zone": BERLIN},
            "2026-10-24T00:00",
            [slot("2026-10-25T02:00", "2026-10-25T03:00", BERLIN)],
            complete=True,
        ),
        id="berlin-fall-at-0300",
    ),
    # Berlin 02:30 and London 01:30, both the earlier of two at 00:30Z: one slot, the note
    # kept, Berlin's zone (first calendar); then London's next days come first.
    *both_policies(
        "berlin-fall-calendars",
        Case(
            {
                "kind": "calendars",
                "calendars": [
                    {"kind": "weekdays", "days": [7], "time": "02:30", "zone": BERLIN},
                    {"kind": "daily", "time": "01:30", "zone": "Europe/London"},
                ],
            },
            "2026-10-24T22:00",
            [
                slot("2026-10-25T00:30", "2026-10-25T02:30", BERLIN, EARLIER),
                slot("2026-10-26T01:30", "2026-10-26T01:30", "Europe/London"),
                slot("2026-10-27T01:30", "2026-10-27T01:30", "Europe/London"),
            ],
        ),
    ),
    # Every second day from 10-23 (origin's date): the 25th earlier, 27th and 29th CET.
    *both_policies(
        "berlin-fall-daily-interval",
        Case(
            {"kind": "daily", "time": "02:30", "zone": BERLIN, "interval_days": 2},
            "2026-10-23T10:00",
            [
                slot("2026-10-25T00:30", "2026-10-25T02:30", BERLIN, EARLIER),
                slot("2026-10-27T01:30", "2026-10-27T02:30", BERLIN),
                slot("2026-10-29T01:30", "2026-10-29T02:30", BERLIN),
            ],
        ),
    ),
    # Completed 10-22 at noon, due three days later at 02:15: the earlier.
    *both_policies(
        "berlin-fall-completion",
        Case(
            {"kind": "completion_relative", "days": 3, "time": "02:15", "zone": BERLIN},
            "2026-10-22T10:00",
            [slot("2026-10-25T00:15", "2026-10-25T02:15", BERLIN, EARLIER)],
            complete=True,
        ),
    ),
]


# --- Australia/Sydney, 2026-04-05: 02:00-02:59 happen twice ----------------------------

SYDNEY_AUTUMN = [
    # daily 02:30: 4th AEDT, 5th the earlier (AEDT, 04-04T15:30Z), 6th AEST.
    *both_policies(
        "sydney-autumn-daily",
        Case(
            {"kind": "daily", "time": "02:30", "zone": SYDNEY},
            "2026-04-03T13:00",
            [
                slot("2026-04-03T15:30", "2026-04-04T02:30", SYDNEY),
                slot("2026-04-04T15:30", "2026-04-05T02:30", SYDNEY, EARLIER),
                slot("2026-04-05T16:30", "2026-04-06T02:30", SYDNEY),
            ],
        ),
    ),
    # Sundays at 02:00: the earlier, then 02:00 AEST.
    *both_policies(
        "sydney-autumn-weekdays",
        Case(
            {"kind": "weekdays", "days": [7], "time": "02:00", "zone": SYDNEY},
            "2026-04-03T13:00",
            [
                slot("2026-04-04T15:00", "2026-04-05T02:00", SYDNEY, EARLIER),
                slot("2026-04-11T16:00", "2026-04-12T02:00", SYDNEY),
                slot("2026-04-18T16:00", "2026-04-19T02:00", SYDNEY),
            ],
        ),
    ),
    # 01:59 AEDT, 02:00 the earlier, 03:00 AEST; next day 01:59 AEST.
    *both_policies(
        "sydney-autumn-times",
        Case(
            {"kind": "times", "times": ["01:59", "02:00", "03:00"], "zone": SYDNEY},
            "2026-04-04T13:00",
            [
                slot("2026-04-04T14:59", "2026-04-05T01:59", SYDNEY),
                slot("2026-04-04T15:00", "2026-04-05T02:00", SYDNEY, EARLIER),
                slot("2026-04-04T17:00", "2026-04-05T03:00", SYDNEY),
                slot("2026-04-05T15:59", "2026-04-06T01:59", SYDNEY),
            ],
        ),
    ),
    # Monthly on the 5th at 02:45: April the earlier, then May and June AEST.
    *both_policies(
        "sydney-autumn-monthly",
        Case(
            {"kind": "monthly", "day": 5, "time": "02:45", "zone": SYDNEY},
            "2026-03-31T13:00",
            [
                slot("2026-04-04T15:45", "2026-04-05T02:45", SYDNEY, EARLIER),
                slot("2026-05-04T16:45", "2026-05-05T02:45", SYDNEY),
                slot("2026-06-04T16:45", "2026-06-05T02:45", SYDNEY),
            ],
        ),
    ),
    # Yearly cron on April 5 at 02:30: 2026 the earlier; in 2027 (change on April 4) and
    # 2028 (April 2) the 5th is already AEST.
    *both_policies(
        "sydney-autumn-cron-wall",
        Case(
            {"kind": "cron", "expression": "30 2 5 4 *", "zone": SYDNEY},
            "2026-04-03T13:00",
            [
                slot("2026-04-04T15:30", "2026-04-05T02:30", SYDNEY, EARLIER),
                slot("2027-04-04T16:30", "2027-04-05T02:30", SYDNEY),
                slot("2028-04-04T16:30", "2028-04-05T02:30", SYDNEY),
            ],
        ),
    ),
    # Elapsed cron in hour 2: both passes.
    *both_policies(
        "sydney-autumn-cron-elapsed",
        Case(
            {"kind": "cron", "expression": "*/30 2 * * *", "zone": SYDNEY},
            "2026-04-04T13:00",
            [
                slot("2026-04-04T15:00", "2026-04-05T02:00", SYDNEY),
                slot("2026-04-04T15:30", "2026-04-05T02:30", SYDNEY),
                slot("2026-04-04T16:00", "2026-04-05T02:00", SYDNEY),
                slot("2026-04-04T16:30", "2026-04-05T02:30", SYDNEY),
                slot("2026-04-05T16:00", "2026-04-06T02:00", SYDNEY),
            ],
        ),
    ),
    # Every 90 minutes from 01:00 AEDT.
    *both_policies(
        "sydney-autumn-every",
        Case(
            {"kind": "every", "minutes": 90},
            "2026-04-04T14:00",
            [
                slot("2026-04-04T15:30", "2026-04-04T15:30", "UTC"),
                slot("2026-04-04T17:00", "2026-04-04T17:00", "UTC"),
            ],
        ),
    ),
    # Fifteen elapsed minutes after 02:50 AEDT: 02:05 AEST.
    *both_policies(
        "sydney-autumn-after",
        Case(
            {"kind": "after", "minutes": 15},
            "2026-04-04T15:50",
            [slot("2026-04-04T16:05", "2026-04-04T16:05", "UTC")],
            complete=True,
        ),
    ),
    # One time at 01:59 AEDT.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-04-05T01:59:00", "zone": SYDNEY},
            "2026-04-04T00:00",
            [slot("2026-04-04T14:59", "2026-04-05T01:59", SYDNEY)],
            complete=True,
        ),
        id="sydney-autumn-at-0159",
    ),
    # One time at 03:00 AEST.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-04-05T03:00:00", "zone": SYDNEY},
            "2026-04-04T00:00",
            [slot("2026-04-04T17:00", "2026-04-05T03:00", SYDNEY)],
            complete=True,
        ),
        id="sydney-autumn-at-0300",
    ),
    # Sydney 02:30 and Brisbane 02:30 (+10 always): apart on the 5th (Sydney takes the
    # earlier, AEDT), together from the 6th, shown in Sydney (first calendar).
    *both_policies(
        "sydney-autumn-calendars",
        Case(
            {
                "kind": "calendars",
                "calendars": [
                    {"kind": "daily", "time": "02:30", "zone": SYDNEY},
                    {"kind": "daily", "time": "02:30", "zone": "Australia/Brisbane"},
                ],
            },
            "2026-04-04T13:00",
            [
                slot("2026-04-04T15:30", "2026-04-05T02:30", SYDNEY, EARLIER),
                slot("2026-04-04T16:30", "2026-04-05T02:30", "Australia/Brisbane"),
                slot("2026-04-05T16:30", "2026-04-06T02:30", SYDNEY),
            ],
        ),
    ),
    # Every fourth day from 04-01 (origin's date): the 5th earlier, then 9th and 13th.
    *both_policies(
        "sydney-autumn-daily-interval",
        Case(
            {"kind": "daily", "time": "02:30", "zone": SYDNEY, "interval_days": 4},
            "2026-04-01T01:00",
            [
                slot("2026-04-04T15:30", "2026-04-05T02:30", SYDNEY, EARLIER),
                slot("2026-04-08T16:30", "2026-04-09T02:30", SYDNEY),
                slot("2026-04-12T16:30", "2026-04-13T02:30", SYDNEY),
            ],
        ),
    ),
    # Completed 04-04 at noon AEDT, due next day at 02:00: the earlier.
    *both_policies(
        "sydney-autumn-completion",
        Case(
            {"kind": "completion_relative", "days": 1, "time": "02:00", "zone": SYDNEY},
            "2026-04-04T01:00",
            [slot("2026-04-04T15:00", "2026-04-05T02:00", SYDNEY, EARLIER)],
            complete=True,
        ),
    ),
]


# --- Australia/Sydney, 2026-10-04: 02:00-02:59 do not exist ----------------------------

SYDNEY_SPRING = [
    # daily 02:30: 3rd AEST, 4th shifted to 03:00 AEDT (10-03T16:00Z), 5th AEDT.
    pytest.param(
        Case(
            daily("02:30", SYDNEY, "shift"),
            "2026-10-02T14:00",
            [
                slot("2026-10-02T16:30", "2026-10-03T02:30", SYDNEY),
                slot("2026-10-03T16:00", "2026-10-04T03:00", SYDNEY, SHIFTED),
                slot("2026-10-04T15:30", "2026-10-05T02:30", SYDNEY),
            ],
        ),
        id="sydney-spring-daily-shift",
    ),
    # daily 02:30, the 4th skipped.
    pytest.param(
        Case(
            daily("02:30", SYDNEY, "skip"),
            "2026-10-02T14:00",
            [
                slot("2026-10-02T16:30", "2026-10-03T02:30", SYDNEY),
                slot("2026-10-04T15:30", "2026-10-05T02:30", SYDNEY),
                slot("2026-10-05T15:30", "2026-10-06T02:30", SYDNEY),
            ],
        ),
        id="sydney-spring-daily-skip",
    ),
    # Sundays at 02:15: the 4th shifted, then 02:15 AEDT.
    pytest.param(
        Case(
            {"kind": "weekdays", "days": [7], "time": "02:15", "zone": SYDNEY, "gap": "shift"},
            "2026-10-02T14:00",
            [
                slot("2026-10-03T16:00", "2026-10-04T03:00", SYDNEY, SHIFTED),
                slot("2026-10-10T15:15", "2026-10-11T02:15", SYDNEY),
                slot("2026-10-17T15:15", "2026-10-18T02:15", SYDNEY),
            ],
        ),
        id="sydney-spring-weekdays-shift",
    ),
    # Sundays at 02:15, the 4th skipped.
    pytest.param(
        Case(
            {"kind": "weekdays", "days": [7], "time": "02:15", "zone": SYDNEY, "gap": "skip"},
            "2026-10-02T14:00",
            [
                slot("2026-10-10T15:15", "2026-10-11T02:15", SYDNEY),
                slot("2026-10-17T15:15", "2026-10-18T02:15", SYDNEY),
                slot("2026-10-24T15:15", "2026-10-25T02:15", SYDNEY),
            ],
        ),
        id="sydney-spring-weekdays-skip",
    ),
    # 00:00 AEST, 02:00 shifted, 04:00 AEDT; next day midnight AEDT.
    pytest.param(
        Case(
            {
                "kind": "times",
                "times": ["00:00", "02:00", "04:00"],
                "zone": SYDNEY,
                "gap": "shift",
            },
            "2026-10-03T13:00",
            [
                slot("2026-10-03T14:00", "2026-10-04T00:00", SYDNEY),
                slot("2026-10-03T16:00", "2026-10-04T03:00", SYDNEY, SHIFTED),
                slot("2026-10-03T17:00", "2026-10-04T04:00", SYDNEY),
                slot("2026-10-04T13:00", "2026-10-05T00:00", SYDNEY),
            ],
        ),
        id="sydney-spring-times-shift",
    ),
    # The same, 02:00 skipped.
    pytest.param(
        Case(
            {
                "kind": "times",
                "times": ["00:00", "02:00", "04:00"],
                "zone": SYDNEY,
                "gap": "skip",
            },
            "2026-10-03T13:00",
            [
                slot("2026-10-03T14:00", "2026-10-04T00:00", SYDNEY),
                slot("2026-10-03T17:00", "2026-10-04T04:00", SYDNEY),
                slot("2026-10-04T13:00", "2026-10-05T00:00", SYDNEY),
                slot("2026-10-04T15:00", "2026-10-05T02:00", SYDNEY),
            ],
        ),
        id="sydney-spring-times-skip",
    ),
    # Monthly on the 4th at 02:30: October shifted, then November and December AEDT.
    pytest.param(
        Case(
            {"kind": "monthly", "day": 4, "time": "02:30", "zone": SYDNEY, "gap": "shift"},
            "2026-09-30T14:00",
            [
                slot("2026-10-03T16:00", "2026-10-04T03:00", SYDNEY, SHIFTED),
                slot("2026-11-03T15:30", "2026-11-04T02:30", SYDNEY),
                slot("2026-12-03T15:30", "2026-12-04T02:30", SYDNEY),
            ],
        ),
        id="sydney-spring-monthly-shift",
    ),
    # Monthly, October skipped.
    pytest.param(
        Case(
            {"kind": "monthly", "day": 4, "time": "02:30", "zone": SYDNEY, "gap": "skip"},
            "2026-09-30T14:00",
            [
                slot("2026-11-03T15:30", "2026-11-04T02:30", SYDNEY),
                slot("2026-12-03T15:30", "2026-12-04T02:30", SYDNEY),
                slot("2027-01-03T15:30", "2027-01-04T02:30", SYDNEY),
            ],
        ),
        id="sydney-spring-monthly-skip",
    ),
    # Wall-clock cron on Sundays at 02:00, the start of the gap: shifted.
    pytest.param(
        Case(
            {"kind": "cron", "expression": "0 2 * * 0", "zone": SYDNEY, "gap": "shift"},
            "2026-10-02T14:00",
            [
                slot("2026-10-03T16:00", "2026-10-04T03:00", SYDNEY, SHIFTED),
                slot("2026-10-10T15:00", "2026-10-11T02:00", SYDNEY),
                slot("2026-10-17T15:00", "2026-10-18T02:00", SYDNEY),
            ],
        ),
        id="sydney-spring-cron-wall-shift",
    ),
    # The same, skipped.
    pytest.param(
        Case(
            {"kind": "cron", "expression": "0 2 * * 7", "zone": SYDNEY, "gap": "skip"},
            "2026-10-02T14:00",
            [
                slot("2026-10-10T15:00", "2026-10-11T02:00", SYDNEY),
                slot("2026-10-17T15:00", "2026-10-18T02:00", SYDNEY),
                slot("2026-10-24T15:00", "2026-10-25T02:00", SYDNEY),
            ],
        ),
        id="sydney-spring-cron-wall-skip",
    ),
    # Elapsed cron in hours 2-3: hour 2 never happens on the 4th.
    *both_policies(
        "sydney-spring-cron-elapsed",
        Case(
            {"kind": "cron", "expression": "*/30 2-3 * * *", "zone": SYDNEY},
            "2026-10-03T13:00",
            [
                slot("2026-10-03T16:00", "2026-10-04T03:00", SYDNEY),
                slot("2026-10-03T16:30", "2026-10-04T03:30", SYDNEY),
                slot("2026-10-04T15:00", "2026-10-05T02:00", SYDNEY),
                slot("2026-10-04T15:30", "2026-10-05T02:30", SYDNEY),
            ],
        ),
    ),
    # Every two hours from 01:00 AEST.
    *both_policies(
        "sydney-spring-every",
        Case(
            {"kind": "every", "hours": 2},
            "2026-10-03T15:00",
            [
                slot("2026-10-03T17:00", "2026-10-03T17:00", "UTC"),
                slot("2026-10-03T19:00", "2026-10-03T19:00", "UTC"),
            ],
        ),
    ),
    # One elapsed hour after 01:30 AEST: 03:30 AEDT, 16:30Z.
    *both_policies(
        "sydney-spring-after",
        Case(
            {"kind": "after", "hours": 1},
            "2026-10-03T15:30",
            [slot("2026-10-03T16:30", "2026-10-03T16:30", "UTC")],
            complete=True,
        ),
    ),
    # One time at 03:00 AEDT, the first wall time after the gap.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-10-04T03:00:00", "zone": SYDNEY},
            "2026-10-03T00:00",
            [slot("2026-10-03T16:00", "2026-10-04T03:00", SYDNEY)],
            complete=True,
        ),
        id="sydney-spring-at-0300",
    ),
    # One time at 01:59:59 AEST.
    pytest.param(
        Case(
            {"kind": "at", "local": "2026-10-04T01:59:59", "zone": SYDNEY},
            "2026-10-03T00:00",
            [slot("2026-10-03T15:59:59", "2026-10-04T01:59:59", SYDNEY)],
            complete=True,
        ),
        id="sydney-spring-at-015959",
    ),
    # Sydney 02:30 shifted to 16:00Z meets a UTC cron at 16:00: Sydney's zone, no note.
    pytest.param(
        Case(
            {
                "kind": "calendars",
                "gap": "shift",
                "calendars": [
                    {"kind": "times", "times": ["02:30"], "zone": SYDNEY},
                    {"kind": "cron", "expression": "0 16 * * *", "zone": "UTC"},
                ],
            },
            "2026-10-03T13:00",
            [
                slot("2026-10-03T16:00", "2026-10-04T03:00", SYDNEY),
                slot("2026-10-04T15:30", "2026-10-05T02:30", SYDNEY),
                slot("2026-10-04T16:00", "2026-10-04T16:00", "UTC"),
            ],
        ),
        id="sydney-spring-calendars-shift",
    ),
    # Skipped: only the UTC cron fires at 16:00Z.
    pytest.param(
        Case(
            {
                "kind": "calendars",
                "gap": "skip",
                "calendars": [
                    {"kind": "times", "times": ["02:30"], "zone": SYDNEY},
                    {"kind": "cron", "expression": "0 16 * * *", "zone": "UTC"},
                ],
            },
            "2026-10-03T13:00",
            [
                slot("2026-10-03T16:00", "2026-10-03T16:00", "UTC"),
                slot("2026-10-04T15:30", "2026-10-05T02:30", SYDNEY),
                slot("2026-10-04T16:00", "2026-10-04T16:00", "UTC"),
            ],
        ),
        id="sydney-spring-calendars-skip",
    ),
    # Every fifth day from 09-29 (origin's date) at 02:00: the 4th shifted, 9th, 14th.
    pytest.param(
        Case(
            daily("02:00", SYDNEY, "shift", interval_days=5),
            "2026-09-29T02:00",
            [
                slot("2026-10-03T16:00", "2026-10-04T03:00", SYDNEY, SHIFTED),
                slot("2026-10-08T15:00", "2026-10-09T02:00", SYDNEY),
                slot("2026-10-13T15:00", "2026-10-14T02:00", SYDNEY),
            ],
        ),
        id="sydney-spring-daily-interval-shift",
    ),
    # Every fifth day, the 4th skipped.
    pytest.param(
        Case(
            daily("02:00", SYDNEY, "skip", interval_days=5),
            "2026-09-29T02:00",
            [
                slot("2026-10-08T15:00", "2026-10-09T02:00", SYDNEY),
                slot("2026-10-13T15:00", "2026-10-14T02:00", SYDNEY),
                slot("2026-10-18T15:00", "2026-10-19T02:00", SYDNEY),
            ],
        ),
        id="sydney-spring-daily-interval-skip",
    ),
    # Completed 10-02 at noon AEST, due two days later at 02:45: shifted.
    pytest.param(
        Case(
            {
                "kind": "completion_relative",
                "days": 2,
                "time": "02:45",
                "zone": SYDNEY,
                "gap": "shift",
            },
            "2026-10-02T02:00",
            [slot("2026-10-03T16:00", "2026-10-04T03:00", SYDNEY, SHIFTED)],
            complete=True,
        ),
        id="sydney-spring-completion-shift",
    ),
    # The same, skipped: no slot.
    pytest.param(
        Case(
            {
                "kind": "completion_relative",
                "days": 2,
                "time": "02:45",
                "zone": SYDNEY,
                "gap": "skip",
            },
            "2026-10-02T02:00",
            [],
            complete=True,
        ),
        id="sydney-spring-completion-skip",
    ),
]


Observed = tuple[datetime, datetime, str, str | None]


def expected(case: Case) -> list[Observed]:
    return [(utc(e.at), datetime.fromisoformat(e.local), e.zone, e.dst) for e in case.expected]


def observed(case: Case) -> list[Observed]:
    """The engine's slots; all of them for a one-time rule, else as many as expected."""
    count = 10 if case.complete else len(case.expected)
    origin = utc(case.origin) if case.origin else None
    found = next_slots(parse_rule(case.rule), utc(case.after), count, origin=origin)
    return [(s.at, s.local, s.zone, None if s.dst is None else str(s.dst)) for s in found]


class TestSlotsOnTransitionDays:
    @pytest.mark.parametrize("case", NEW_YORK_SPRING)
    def test_new_york_spring_forward(self, case: Case) -> None:
        assert observed(case) == expected(case)

    @pytest.mark.parametrize("case", NEW_YORK_FALL)
    def test_new_york_fall_back(self, case: Case) -> None:
        assert observed(case) == expected(case)

    @pytest.mark.parametrize("case", BERLIN_SPRING)
    def test_berlin_spring_forward(self, case: Case) -> None:
        assert observed(case) == expected(case)

    @pytest.mark.parametrize("case", BERLIN_FALL)
    def test_berlin_fall_back(self, case: Case) -> None:
        assert observed(case) == expected(case)

    @pytest.mark.parametrize("case", SYDNEY_AUTUMN)
    def test_sydney_autumn_fall_back(self, case: Case) -> None:
        assert observed(case) == expected(case)

    @pytest.mark.parametrize("case", SYDNEY_SPRING)
    def test_sydney_spring_forward(self, case: Case) -> None:
        assert observed(case) == expected(case)


class TestCronFieldsParse:
    @pytest.mark.parametrize(
        ("expression", "fields"),
        [
            # Steps over a star, lists and a range with a step.
            (
                "*/15 0,12 1-10/3 * *",
                ({0, 15, 30, 45}, {0, 12}, {1, 4, 7, 10}, set(range(1, 13)), set(range(1, 8))),
            ),
            # a/n means a-max/n; month and weekday names in any case.
            (
                "50/5 22/1 31 JAN,dec mon-FRI",
                ({50, 55}, {22, 23}, {31}, {1, 12}, {1, 2, 3, 4, 5}),
            ),
            # 0 and 7 are both Sunday (ISO 7); sun-sat spans the week.
            ("0 0 * * 0,7", ({0}, {0}, set(range(1, 32)), set(range(1, 13)), {7})),
            ("0 0 * * sun-sat", ({0}, {0}, set(range(1, 32)), set(range(1, 13)), set(range(1, 8)))),
            # Weekday step over a star: 0,2,4,6 = Sun, Tue, Thu, Sat.
            ("0 0 * * */2", ({0}, {0}, set(range(1, 32)), set(range(1, 13)), {7, 2, 4, 6})),
        ],
    )
    def test_fields_parse_to_their_sets(
        self, expression: str, fields: tuple[set[int], ...]
    ) -> None:
        spec = parse_cron(expression)
        parsed = (spec.minutes, spec.hours, spec.days, spec.months, spec.weekdays)
        assert tuple(set(f) for f in parsed) == fields

    @pytest.mark.parametrize(
        ("expression", "dom_star", "dow_star", "wall_clock"),
        [
            ("30 2 * * *", True, True, True),  # fixed minute and hour: wall clock
            ("30 2-4 1 * mon", False, False, True),  # both day fields restricted: either matches
            ("*/15 * * * *", True, True, False),  # minute starts with *: elapsed
            ("0 */2 */2 * 1", True, False, False),  # hour starts with *: elapsed; */2 is a star
            ("5,*/10 3 * * *", True, True, True),  # only the first character counts
        ],
    )
    def test_flags_follow_the_first_character_of_each_field(
        self, expression: str, dom_star: bool, dow_star: bool, wall_clock: bool
    ) -> None:
        spec = parse_cron(expression)
        assert (spec.dom_star, spec.dow_star, spec.wall_clock) == (dom_star, dow_star, wall_clock)
