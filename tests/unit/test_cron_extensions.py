"""Cron's extensions (issue 24 §4): what ``parse_cron`` accepts, the sentences ``describe``
says for them, and the clear refusals of the forms kalends does not take."""

from __future__ import annotations

from typing import Any

import pytest

from kalends.civil import InvalidRule, describe, parse_cron, parse_rule

Json = dict[str, Any]


def said(expression: str, zone: str = "UTC", **extra: Any) -> str:
    return describe(parse_rule({"kind": "cron", "expression": expression, "zone": zone, **extra}))


class TestWhatIsAccepted:
    def test_l_and_lw_are_days_of_the_month_with_no_plain_day(self) -> None:
        spec = parse_cron("0 9 L * *")
        assert (spec.last_day, spec.last_workday, spec.days) == (True, False, frozenset())
        assert parse_cron("0 9 lw * *").last_workday

    def test_weekday_extensions_take_numbers_0_to_7_and_names_as_iso_weekdays(self) -> None:
        assert parse_cron("0 9 * * 5L").last_weekdays == {5}
        assert parse_cron("0 9 * * FRIL").last_weekdays == {5}
        assert parse_cron("0 9 * * 0L").last_weekdays == parse_cron("0 9 * * 7L").last_weekdays
        assert parse_cron("0 9 * * sun#1").nth_weekdays == {(7, 1)}
        assert parse_cron("0 9 * * 1#2").nth_weekdays == {(1, 2)}

    def test_extensions_mix_with_plain_items_of_their_field(self) -> None:
        spec = parse_cron("0 9 1,15,L * mon,1#2,5L")
        assert spec.days == {1, 15} and spec.last_day
        assert spec.weekdays == {1} and spec.nth_weekdays == {(1, 2)}
        assert spec.last_weekdays == {5}
        assert not spec.dom_star and not spec.dow_star  # Vixie's either-rule applies

    def test_names_that_hold_an_l_or_a_w_stay_plain(self) -> None:
        spec = parse_cron("0 9 * jul-aug wed")
        assert spec.months == {7, 8} and spec.weekdays == {3} and not spec.extended

    def test_steps_on_weekdays_were_always_accepted(self) -> None:
        assert parse_cron("0 9 * * */3").weekdays == {7, 3, 6}  # Sunday, Wednesday, Saturday
        assert parse_cron("0 9 * * 1-5/2").weekdays == {1, 3, 5}
        assert not parse_cron("0 9 * * 1-5/2").extended


class TestBadInputNamesTheField:
    @pytest.mark.parametrize(
        ("expression", "words"),
        [
            ("0 L * * *", "hour field 'L': 'L', 'W' and '#' are for the day-of-month"),  # L as hour
            ("L 9 * * *", "minute field"),  # L as minute
            ("0 9 * L *", "month field"),  # L as month
            ("0 9 * * 8L", "day of week field '8L': 8 is outside 0-7"),  # no weekday 8
            ("0 9 * * 1#6", "the n in <weekday>#<n> is 1-5"),  # no sixth Monday
            ("0 9 * * 0#0", "the n in <weekday>#<n> is 1-5"),  # no zeroth Sunday
            ("0 9 * * 1#", "the n in <weekday>#<n> is 1-5"),  # n missing
            ("0 9 * * #2", "a weekday comes before '#'"),  # weekday missing
            ("0 9 * * 9#1", "9 is outside 0-7"),  # no weekday 9
            ("0 9 * * LW", "'LW' (last weekday of the month) belongs in the day-of-month"),
            ("0 9 * * L", "'L' alone is not a day of week"),  # Quartz's Saturday
            ("0 9 5L * *", "belong in the day-of-week field"),  # a weekday form in day of month
            ("0 9 1#2 * *", "belong in the day-of-week field"),
            ("0 9 L-3 * *", "an offset from the last day is not supported"),  # Quartz's L-3
            ("0 9 1,L-2 * *", "'L-2': an offset from the last day"),  # inside a list
            ("0 9 15W * *", "the nearest weekday to a day is not supported"),  # Quartz's 15W
            ("0 9 L/2 * *", "no range or step on them"),  # a step on L
            ("0 9 LWX * *", "no range or step on them"),  # not an extension
            ("0 9 * * 5L-6", "a range or step cannot hold 'L' or '#'"),
            ("0 9 * * 1#2/2", "a range or step cannot hold 'L' or '#'"),
            ("0 9 * * 5W", "not a day of week; the extensions are"),
            ("0 9 * * xL", "'x' is not a number or a name"),
            ("0 9 ? * 1", "'?' (no specific value, in Quartz) is not accepted"),
            ("0 9 * * ?", "'?' (no specific value, in Quartz) is not accepted"),
        ],
    )
    def test_a_misplaced_or_unsupported_extension_is_refused_with_its_field(
        self, expression: str, words: str
    ) -> None:
        with pytest.raises(InvalidRule) as caught:
            parse_rule({"kind": "cron", "expression": expression, "zone": "UTC"})
        assert caught.value.field == "expression"
        assert words in str(caught.value)


class TestDescribe:
    @pytest.mark.parametrize(
        ("expression", "sentence"),
        [
            ("0 9 L * *", "At 09:00 on the last day of the month (UTC)"),
            ("0 9 LW * *", "At 09:00 on the last weekday of the month (UTC)"),
            ("0 9 * * 5L", "At 09:00 on the last Friday of the month (UTC)"),
            ("0 9 * * FRIL", "At 09:00 on the last Friday of the month (UTC)"),
            ("0 9 * * 1#2", "At 09:00 on the second Monday of the month (UTC)"),
            ("0 9 * * 0#5", "At 09:00 on the fifth Sunday of the month (UTC)"),
            (
                "0 9 * * mon#2,7L",
                "At 09:00 on the second Monday and the last Sunday of the month (UTC)",
            ),
            (
                "0 9 * * 1#3,1#1,5#1",
                "At 09:00 on the first Monday, the first Friday and the third Monday"
                " of the month (UTC)",
            ),
            ("0 9 1,L * *", "At 09:00 on day-of-month 1 and the last day of the month (UTC)"),
            # Vixie: two restricted day fields, either one
            (
                "0 9 L * 5L",
                "At 09:00 on the last day of the month, or on the last Friday of the month (UTC)",
            ),
            (
                "0 9 1,L * 1,0#1",
                "At 09:00 on day-of-month 1 and the last day of the month, or on Monday and the"
                " first Sunday of the month (UTC)",
            ),
            # ... and a field led by * makes both apply
            (
                "0 9 */2 * 5L",
                "At 09:00 on every 2nd day-of-month if that day is the last Friday of the month"
                " (UTC)",
            ),
            (
                "0 9 L * */2",
                "At 09:00 on the last day of the month if that day is a Tuesday, Thursday,"
                " Saturday or Sunday (UTC)",
            ),
            # a plain field that already matches every day swallows the extension
            ("0 9 1-31,L * 1#1", "At 09:00 every day (UTC)"),
            ("0 9 L * 0-6,5L", "At 09:00 every day (UTC)"),
            ("0 9 LW jan *", "At 09:00 on the last weekday of the month in January (UTC)"),
            ("*/15 * L * *", "Every 15 minutes on the last day of the month (UTC)"),
        ],
    )
    def test_extensions_read_as_days_of_the_month(self, expression: str, sentence: str) -> None:
        assert said(expression) == sentence

    def test_a_wall_clock_extension_says_its_skip_like_any_cron(self) -> None:
        assert said("30 2 * * 0#2", "America/New_York", gap="skip") == (
            "At 02:30 on the second Sunday of the month (America/New_York)"
            "; a time missing on a DST change is skipped"
        )
