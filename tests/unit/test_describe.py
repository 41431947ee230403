"""``describe``: every rule kind as one exact sentence, cron in crontab words."""

from __future__ import annotations

from typing import Any

import pytest

from kalends.civil import describe, parse_rule

Json = dict[str, Any]
BERLIN = "Europe/Berlin"


def cron(expression: str, zone: str = "UTC", **extra: Any) -> Json:
    return {"kind": "cron", "expression": expression, "zone": zone, **extra}


def said(rule: Json) -> str:
    return describe(parse_rule(rule))


RULES: list[tuple[Json, str]] = [
    # one-shot rules name Play, the origin
    ({"kind": "immediate"}, "Once, at Play"),
    ({"kind": "after", "hours": 2}, "Once, 2 hours after Play"),
    ({"kind": "after", "minutes": 1}, "Once, 1 minute after Play"),
    ({"kind": "after", "minutes": 90}, "Once, 1 hour 30 minutes after Play"),
    (
        {"kind": "at", "local": "2026-03-08T09:30:00", "zone": "America/New_York"},
        "Once, at 2026-03-08 09:30 (America/New_York)",
    ),
    # seconds are shown only when they are not zero
    (
        {"kind": "at", "local": "2026-03-08T09:30:15", "zone": "America/New_York"},
        "Once, at 2026-03-08 09:30:15 (America/New_York)",
    ),
    # intervals: the first one interval after Play
    (
        {"kind": "every", "minutes": 90},
        "Every 1 hour 30 minutes, the first one interval after Play",
    ),
    ({"kind": "every", "hours": 1}, "Every hour, the first one interval after Play"),
    ({"kind": "every", "minutes": 15}, "Every 15 minutes, the first one interval after Play"),
    ({"kind": "every", "hours": 48}, "Every 48 hours, the first one interval after Play"),
    # daily, with and without a day interval
    ({"kind": "daily", "time": "09:00", "zone": BERLIN}, "Every day at 09:00 (Europe/Berlin)"),
    (
        {"kind": "daily", "time": "09:00", "zone": BERLIN, "interval_days": 1},
        "Every day at 09:00 (Europe/Berlin)",
    ),
    (
        {"kind": "daily", "time": "09:00:30", "zone": BERLIN, "interval_days": 3},
        "Every 3 days at 09:00:30 (Europe/Berlin), counting from the day of Play",
    ),
    # the skip gap policy is said; shift is the default and is not
    (
        {"kind": "daily", "time": "02:30", "zone": BERLIN, "gap": "skip"},
        "Every day at 02:30 (Europe/Berlin); a time missing on a DST change is skipped",
    ),
    (
        {"kind": "daily", "time": "02:30", "zone": BERLIN, "gap": "shift"},
        "Every day at 02:30 (Europe/Berlin)",
    ),
    # weekdays: the working week, the weekend, all seven, or the names in week order
    (
        {"kind": "weekdays", "days": [5, 1, 2, 3, 4], "time": "09:00", "zone": BERLIN},
        "Every weekday at 09:00 (Europe/Berlin)",
    ),
    (
        {"kind": "weekdays", "days": [7, 6], "time": "10:00", "zone": BERLIN},
        "Every weekend day at 10:00 (Europe/Berlin)",
    ),
    (
        {"kind": "weekdays", "days": [1, 2, 3, 4, 5, 6, 7], "time": "10:00", "zone": BERLIN},
        "Every day at 10:00 (Europe/Berlin)",
    ),
    (
        {"kind": "weekdays", "days": [5, 1, 3], "time": "07:30", "zone": BERLIN},
        "Every Monday, Wednesday and Friday at 07:30 (Europe/Berlin)",
    ),
    # several times a day, in order, duplicates once
    (
        {"kind": "times", "times": ["18:00", "08:00", "12:00", "08:00"], "zone": "UTC"},
        "Every day at 08:00, 12:00 and 18:00 (UTC)",
    ),
    # monthly: days past 28 say which months they miss
    (
        {"kind": "monthly", "day": 31, "time": "09:00", "zone": BERLIN},
        "On day 31 of each month at 09:00 (Europe/Berlin); months without day 31 are skipped",
    ),
    (
        {"kind": "monthly", "day": 1, "time": "09:00", "zone": BERLIN},
        "On day 1 of each month at 09:00 (Europe/Berlin)",
    ),
    # completion-relative: calendar days after the day of completion
    (
        {"kind": "completion_relative", "days": 3, "time": "09:00", "zone": BERLIN},
        "Once, 3 days after completion at 09:00 (Europe/Berlin)",
    ),
    (
        {"kind": "completion_relative", "days": 0, "time": "09:00", "zone": BERLIN},
        "Once, on the day of completion at 09:00 (Europe/Berlin)",
    ),
    # calendars: the sentences joined
    (
        {
            "kind": "calendars",
            "calendars": [
                {"kind": "weekdays", "days": [1, 2, 3, 4, 5], "time": "09:00", "zone": BERLIN},
                {"kind": "weekdays", "days": [6], "time": "10:00", "zone": BERLIN},
            ],
        },
        "Every weekday at 09:00 (Europe/Berlin); and every Saturday at 10:00 (Europe/Berlin)",
    ),
    # a skip every calendar inherits is said once, at the end
    (
        {
            "kind": "calendars",
            "gap": "skip",
            "calendars": [
                {"kind": "daily", "time": "02:30", "zone": BERLIN},
                cron("0 12 1 * *", BERLIN),
            ],
        },
        "Every day at 02:30 (Europe/Berlin); and at 12:00 on day-of-month 1 (Europe/Berlin); "
        "a time missing on a DST change is skipped",
    ),
    # a calendar's own skip stays with it
    (
        {
            "kind": "calendars",
            "calendars": [
                {"kind": "daily", "time": "02:30", "zone": BERLIN, "gap": "skip"},
                {"kind": "times", "times": ["07:00"], "zone": "UTC"},
            ],
        },
        "Every day at 02:30 (Europe/Berlin); a time missing on a DST change is skipped; "
        "and every day at 07:00 (UTC)",
    ),
]

CRONS: list[tuple[Json, str]] = [
    # every minute
    (cron("* * * * *"), "Every minute (UTC)"),
    # a step of minutes that divides the hour is an interval
    (cron("*/15 * * * *"), "Every 15 minutes (UTC)"),
    # ... and its spelling as a list reads the same
    (cron("0,30 * * * *"), "Every 30 minutes (UTC)"),
    # a step that does not divide the hour is not an even interval
    (cron("*/25 * * * *"), "At every 25th minute past every hour (UTC)"),
    # two minutes that do not divide the hour are listed
    (cron("0,45 * * * *"), "At minute 0 and 45 past every hour (UTC)"),
    # a step of hours that divides the day, said by its times
    (cron("0 */12 * * *"), "At 00:00 and 12:00 every day (UTC)"),
    # a step from a start
    (cron("5/10 * * * *"), "At every 10th minute from 5 through 55 past every hour (UTC)"),
    # a list of minutes with a range in it
    (cron("1-5,30 * * * *"), "At minute 1 through 5 and 30 past every hour (UTC)"),
    # a step of hours
    (cron("0 */2 * * *"), "At minute 0 past every 2nd hour (UTC)"),
    # a range of hours
    (cron("0 9-17 * * *"), "At minute 0 past every hour from 9 through 17 (UTC)"),
    # a ranged step of hours under a step of minutes
    (cron("0,30 8-18/2 * * *"), "Every 30 minutes past every 2nd hour from 8 through 18 (UTC)"),
    # every minute of one hour
    (cron("* 9 * * *"), "Every minute past hour 9 (UTC)"),
    # few wall times are listed
    (cron("30 9,17 * * *", BERLIN), "At 09:30 and 17:30 every day (Europe/Berlin)"),
    # a range of weekdays
    (
        cron("0 9 * * 1-5", BERLIN),
        "At 09:00 on every day-of-week from Monday through Friday (Europe/Berlin)",
    ),
    # weekday names, any case
    (cron("0 9 * * mon,WED,Fri"), "At 09:00 on Monday, Wednesday and Friday (UTC)"),
    # Sunday is 0 and 7
    (cron("0 0 * * 0"), "At 00:00 on Sunday (UTC)"),
    (cron("0 0 * * 7"), "At 00:00 on Sunday (UTC)"),
    (cron("0 0 * * 0,7"), "At 00:00 on Sunday (UTC)"),
    # a range through Sunday either way round
    (cron("0 0 * * 5-7"), "At 00:00 on every day-of-week from Friday through Sunday (UTC)"),
    (cron("0 0 * * 0-2"), "At 00:00 on every day-of-week from Sunday through Tuesday (UTC)"),
    # a list and a range of days of the month
    (cron("0 9 1,15 * *"), "At 09:00 on day-of-month 1 and 15 (UTC)"),
    (
        cron("15 * 1-7 * *"),
        "At minute 15 past every hour on every day-of-month from 1 through 7 (UTC)",
    ),
    # Vixie: both day fields restricted, a day matching either one matches
    (
        cron("0 9 1,15 * 1", BERLIN),
        "At 09:00 on day-of-month 1 and 15, or on Monday (Europe/Berlin)",
    ),
    (
        cron("0 9 1,15 jan 1"),
        "At 09:00 on day-of-month 1 and 15, or on Monday, in January (UTC)",
    ),
    # ... but a day field led by * makes both apply
    (cron("0 0 */2 * 1"), "At 00:00 on every 2nd day-of-month if that day is a Monday (UTC)"),
    (
        cron("0 9 1 * */2"),
        "At 09:00 on day-of-month 1 if that day is a Tuesday, Thursday, Saturday or Sunday (UTC)",
    ),
    # a restricted field that matches every day leaves Vixie's either-rule matching every day
    (cron("0 0 1-31 * 1"), "At 00:00 every day (UTC)"),
    # month names and numbers, lists, ranges and steps
    (cron("0 12 * JAN,jul MON"), "At 12:00 on Monday in January and July (UTC)"),
    (cron("0 12 * 3-10 *"), "At 12:00 every day from March through October (UTC)"),
    (cron("0 12 * */3 *"), "At 12:00 every day in January, April, July and October (UTC)"),
    (
        cron("0 * * 3-10 *"),
        "At minute 0 past every hour in every month from March through October (UTC)",
    ),
    # @-macros
    (cron("@daily"), "At 00:00 every day (UTC)"),
    (cron("@hourly"), "At minute 0 past every hour (UTC)"),
    (cron("@weekly"), "At 00:00 on Sunday (UTC)"),
    (cron("@monthly"), "At 00:00 on day-of-month 1 (UTC)"),
    (cron("@yearly"), "At 00:00 on day-of-month 1 in January (UTC)"),
    # a wall-clock cron says its skip; an elapsed one has no gap policy to say
    (
        cron("30 2 * * *", BERLIN, gap="skip"),
        "At 02:30 every day (Europe/Berlin); a time missing on a DST change is skipped",
    ),
    (cron("*/30 * * * *", BERLIN, gap="skip"), "Every 30 minutes (Europe/Berlin)"),
]


class TestDescribe:
    @pytest.mark.parametrize(("rule", "sentence"), RULES)
    def test_each_rule_kind_reads_as_its_sentence(self, rule: Json, sentence: str) -> None:
        assert said(rule) == sentence

    @pytest.mark.parametrize(("rule", "sentence"), CRONS)
    def test_cron_reads_in_crontab_words(self, rule: Json, sentence: str) -> None:
        assert said(rule) == sentence

    def test_the_table_covers_every_rule_kind(self) -> None:
        kinds = {r["kind"] for r, _ in RULES + CRONS}
        assert kinds == {
            "immediate",
            "at",
            "after",
            "every",
            "daily",
            "weekdays",
            "times",
            "monthly",
            "cron",
            "completion_relative",
            "calendars",
        }
        assert len(RULES) + len(CRONS) >= 40
        assert len(CRONS) >= 20

    def test_equivalent_cron_spellings_read_the_same(self) -> None:
        assert said(cron("0 9 * * 1,2,3,4,5")) == said(cron("0 9 * * mon-fri"))
        assert said(cron("*/20 * * * *")) == said(cron("0,20,40 * * * *"))
