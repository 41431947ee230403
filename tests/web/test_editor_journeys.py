"""The schedule editor in Debian's chromium against a real ``kalends serve``: a schedule
made through the form with each of the nine frequencies, and with two calendars, lands
on its page saying the rule in words and is stored as the form said; the live preview
follows typing across New York's DST days (a wall time that does not exist, one that
happens twice); a bad cron expression is reported beside its field with the values
kept; an edit shows the runs before and after the change and saves; the frequency radio
group answers the arrow keys; axe in both color schemes, and screenshots."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from .browser_support import Server, check_axe_both, screenshot

COMMAND = "echo\nfrom the editor"
"""What the profile's command field gets: a program and its argument, one per line."""


def new_editor(page: Page, server: Server, home: dict[str, Any]) -> None:
    page.goto(f"{server.base_url}/w/{home['id']}/schedules/new")
    expect(page.get_by_role("heading", level=1)).to_have_text("New schedule")


def frequency(page: Page, label: str) -> Locator:
    """Chooses the frequency labelled ``label``; the part of the form with its fields."""
    radio = page.get_by_role("radio", name=label, exact=True)
    radio.check()
    option = page.locator(".freq-option").filter(has=radio)
    expect(option.locator(".freq-fields")).to_be_visible()
    return option


def about(page: Page, title: str) -> None:
    """The title and the profile's command, which every new schedule needs."""
    page.get_by_label("Title", exact=True).fill(title)
    page.get_by_label(re.compile(r"^Command, one argument per line")).fill(COMMAND)


def preview(page: Page) -> Locator:
    return page.get_by_role("complementary", name="Preview")


def runs_fact(page: Page) -> Locator:
    """The schedule page's "Runs" fact: its rule in words."""
    return page.locator("dl dt", has_text=re.compile(r"^Runs$")).locator("+ dd")


def stored(server: Server, schedule: str) -> dict[str, Any]:
    """What ``kalends schedule show --json`` says of the schedule."""
    shown = server.cli_here("schedule", "show", schedule, "--json", actor=server.owner)
    assert shown.exit_code == 0, (shown.stdout, shown.stderr)
    found: dict[str, Any] = json.loads(shown.stdout)
    return found


SCHEDULE_URL = re.compile(r"/w/[0-9a-f-]+/schedules/([0-9a-f-]{36})$")


# --------------------------------------------------------------------- each frequency


@dataclass(frozen=True)
class Case:
    """A frequency filled as a person would: the radio's label, what is typed into its
    fields, the sentence the schedule's page then says and the rule stored."""

    label: str
    fill: Callable[[Page, Locator], None]
    sentence: str
    policy: dict[str, Any]
    zone: str = "UTC"


def _nothing(page: Page, option: Locator) -> None:
    expect(option).to_contain_text("Runs once, the moment you press Play.")


def _at(page: Page, option: Locator) -> None:
    option.get_by_label("Date and time (in the zone above)").fill("2027-06-15T09:00")


def _after(page: Page, option: Locator) -> None:
    option.get_by_label(re.compile(r"^Delay after Play")).fill("2")
    option.get_by_label("Unit").select_option("hours")


def _every(page: Page, option: Locator) -> None:
    option.get_by_label(re.compile(r"^Interval")).fill("45")
    option.get_by_label("Unit").select_option("minutes")


def _daily(page: Page, option: Locator) -> None:
    option.get_by_label("Time (HH:MM)").fill("07:45")


def _weekdays(page: Page, option: Locator) -> None:
    for day in ("Monday", "Wednesday", "Friday"):
        option.get_by_label(day).check()
    option.get_by_label("Time (HH:MM)").fill("18:00")


def _times(page: Page, option: Locator) -> None:
    option.get_by_label(re.compile(r"^Times HH:MM")).fill("17:30, 09:00, 13:00")


def _monthly(page: Page, option: Locator) -> None:
    option.get_by_label(re.compile(r"^Day of the month")).fill("15")
    option.get_by_label("Time (HH:MM)").fill("06:00")


def _cron(page: Page, option: Locator) -> None:
    option.get_by_label(re.compile(r"^Cron expression")).fill("0 9 * * 1-5")


CASES = [
    Case("Once, at the first Play", _nothing, "Once, at Play", {"kind": "immediate"}),
    Case(
        "Once, at a date and time",
        _at,
        "Once, at 2027-06-15 09:00 (Europe/Paris)",
        {"kind": "at", "local": "2027-06-15T09:00:00", "zone": "Europe/Paris"},
        zone="Europe/Paris",
    ),
    Case("Once, after a delay", _after, "Once, 2 hours after Play", {"kind": "after", "hours": 2}),
    Case(
        "Every interval",
        _every,
        "Every 45 minutes, the first one interval after Play",
        {"kind": "every", "minutes": 45},
    ),
    Case(
        "Every day",
        _daily,
        "Every day at 07:45 (UTC)",
        {"kind": "daily", "time": "07:45", "zone": "UTC"},
    ),
    Case(
        "On chosen weekdays",
        _weekdays,
        "Every Monday, Wednesday and Friday at 18:00 (America/New_York)",
        {"kind": "weekdays", "days": [1, 3, 5], "time": "18:00", "zone": "America/New_York"},
        zone="America/New_York",
    ),
    Case(
        "Several times a day",
        _times,
        "Every day at 09:00, 13:00 and 17:30 (UTC)",
        {"kind": "times", "times": ["17:30", "09:00", "13:00"], "zone": "UTC"},
    ),
    Case(
        "On a day of each month",
        _monthly,
        "On day 15 of each month at 06:00 (Asia/Tokyo)",
        {"kind": "monthly", "day": 15, "time": "06:00", "zone": "Asia/Tokyo"},
        zone="Asia/Tokyo",
    ),
    Case(
        "Advanced (cron expression)",
        _cron,
        "At 09:00 on every day-of-week from Monday through Friday (UTC)",
        {"kind": "cron", "expression": "0 9 * * 1-5", "zone": "UTC"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.policy["kind"] for c in CASES])
def test_a_schedule_made_with_each_frequency(
    owner_page: Page, server: Server, home: dict[str, Any], case: Case
) -> None:
    page = owner_page
    new_editor(page, server, home)
    title = f"Made {case.policy['kind']}"
    about(page, title)
    if case.zone != "UTC":
        page.get_by_label(re.compile(r"^Zone an IANA zone")).fill(case.zone)
    case.fill(page, frequency(page, case.label))
    page.get_by_role("button", name="Create schedule").click()

    expect(page).to_have_url(SCHEDULE_URL)
    expect(page.get_by_role("heading", level=1)).to_have_text(title)
    expect(runs_fact(page)).to_have_text(case.sentence)
    found = SCHEDULE_URL.search(page.url)
    assert found is not None, page.url
    doc = stored(server, found.group(1))
    assert doc["title"] == title
    assert doc["state"] == "paused"
    assert doc["policy"] == case.policy, doc["policy"]
    assert doc["profile"]["command"] == ["echo", "from the editor"], doc["profile"]


def test_a_schedule_with_two_calendars(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    new_editor(page, server, home)
    about(page, "Twice a day")
    frequency(page, "Every day").get_by_label("Time (HH:MM)").fill("08:00")
    page.get_by_role("button", name="Add a calendar").click()
    second = page.get_by_role("group", name="Calendar 2")
    expect(second).to_be_visible()
    # The form came back with what was typed before the calendar was added.
    expect(page.get_by_label("Title", exact=True)).to_have_value("Twice a day")
    expect(second.get_by_label("Kind")).to_have_value("daily")
    second.get_by_label("Time (HH:MM)").fill("20:30")
    expect(preview(page)).to_contain_text("Every day at 08:00 (UTC); and every day at 20:30 (UTC)")
    page.get_by_role("button", name="Create schedule").click()

    expect(page).to_have_url(SCHEDULE_URL)
    expect(runs_fact(page)).to_have_text("Every day at 08:00 (UTC); and every day at 20:30 (UTC)")
    found = SCHEDULE_URL.search(page.url)
    assert found is not None, page.url
    policy = stored(server, found.group(1))["policy"]
    assert policy["kind"] == "calendars", policy
    assert [(c["kind"], c["time"]) for c in policy["calendars"]] == [
        ("daily", "08:00"),
        ("daily", "20:30"),
    ], policy


# ------------------------------------------------------------------------ the keyboard


def test_the_frequency_radios_answer_the_arrow_keys(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    new_editor(page, server, home)
    daily = page.get_by_role("radio", name="Every day", exact=True)
    weekdays = page.get_by_role("radio", name="On chosen weekdays", exact=True)
    daily_time = page.locator(".freq-option").filter(has=daily).get_by_label("Time (HH:MM)")
    weekdays_fields = page.locator(".freq-option").filter(has=weekdays)
    expect(daily).to_be_checked()
    expect(daily_time).to_be_visible()
    expect(weekdays_fields.get_by_role("group", name="Weekdays")).to_be_hidden()

    daily.focus()
    page.keyboard.press("ArrowDown")
    expect(weekdays).to_be_focused()
    expect(weekdays).to_be_checked()
    expect(weekdays_fields.get_by_role("group", name="Weekdays")).to_be_visible()
    expect(weekdays_fields.get_by_label("Time (HH:MM)")).to_be_visible()
    expect(daily_time).to_be_hidden()

    page.keyboard.press("ArrowUp")
    expect(daily).to_be_focused()
    expect(daily).to_be_checked()
    expect(daily_time).to_be_visible()
    expect(weekdays_fields.get_by_role("group", name="Weekdays")).to_be_hidden()


# ------------------------------------------------------------ the preview across DST


def test_the_preview_follows_typing_across_new_york_dst(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    server.shift_to(datetime(2026, 3, 6, 12, tzinfo=UTC))
    try:
        new_editor(page, server, home)
        editor_url = page.url
        # Gone if the page were loaded again: the preview must change in place.
        page.evaluate("() => { window.sameEditorPage = true; }")
        region = preview(page)
        expect(region).to_have_attribute("aria-live", "polite")
        expect(region).not_to_contain_text("America/New_York")

        zone = page.get_by_label(re.compile(r"^Zone an IANA zone"))
        zone.clear()
        zone.press_sequentially("America/New_York")
        frequency(page, "Every day").get_by_label("Time (HH:MM)").fill("02:30")
        expect(region.locator(".sentence")).to_have_text("Every day at 02:30 (America/New_York)")
        slots = region.locator("ol.slots > li")
        expect(slots).to_have_count(5)
        expect(slots.nth(0)).to_have_text("2026-03-07 02:30 Sat America/New_York")
        expect(slots.nth(1)).to_contain_text("2026-03-08 03:00 Sun America/New_York")
        expect(slots.nth(1).locator(".dst")).to_have_text(
            "the planned wall time does not exist on 2026-03-08 (clocks go forward) — runs at 03:00"
        )
        expect(slots.nth(1).locator("time")).to_have_attribute(
            "datetime", re.compile(r"^2026-03-08T07:00")
        )
        expect(slots.nth(2)).to_contain_text("2026-03-09 02:30 Mon America/New_York")
        expect(slots.nth(2).locator(".dst")).to_have_count(0)
        assert page.url == editor_url
        assert page.evaluate("() => window.sameEditorPage") is True
        check_axe_both(page, "new schedule editor")
        screenshot(page, "editor-new")

        server.shift_to(datetime(2026, 10, 30, 12, tzinfo=UTC))
        page.get_by_label(re.compile(r"^Until \(last slot")).fill("2026-11-03T00:00")
        frequency(page, "Every day").get_by_label("Time (HH:MM)").fill("01:30")
        expect(region.locator(".sentence")).to_have_text("Every day at 01:30 (America/New_York)")
        expect(region.get_by_role("heading", name="Next 3 runs")).to_be_visible()
        expect(slots).to_have_count(3)
        expect(slots.nth(0)).to_have_text("2026-10-31 01:30 Sat America/New_York")
        expect(slots.nth(1).locator(".dst")).to_have_text(
            "01:30 happens twice on 2026-11-01 (clocks go back) — runs at the first"
        )
        # The first 01:30 of that day is still on daylight time: 05:30 UTC.
        expect(slots.nth(1).locator("time")).to_have_attribute(
            "datetime", re.compile(r"^2026-11-01T05:30")
        )
        expect(slots.nth(2)).to_have_text("2026-11-02 01:30 Mon America/New_York")
        assert page.url == editor_url
        assert page.evaluate("() => window.sameEditorPage") is True
    finally:
        server.set_offset(0.0)


# ------------------------------------------------------------------------------ errors


def test_a_bad_cron_expression_is_said_beside_its_field(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    new_editor(page, server, home)
    about(page, "Bad cron")
    frequency(page, "Advanced (cron expression)").get_by_label(
        re.compile(r"^Cron expression")
    ).fill("61 * * * *")
    page.get_by_role("button", name="Create schedule").click()

    expect(page.get_by_role("alert")).to_contain_text("1 problem to fix before saving")
    assert page.url.endswith("/schedules/new"), page.url
    cron = page.get_by_label(re.compile(r"^Cron expression"))
    expect(cron).to_be_focused()
    expect(cron).to_have_attribute("aria-invalid", "true")
    expect(cron).to_have_value("61 * * * *")
    error = page.locator("#err-cron_expression")
    expect(error).to_contain_text("61 is outside 0-59")
    expect(cron).to_have_attribute("aria-describedby", re.compile(r"(^| )err-cron_expression( |$)"))
    expect(cron).to_have_accessible_description(re.compile(r"61 is outside 0-59"))
    # The error sits right after its field, and the summary links to the field.
    expect(cron.locator("+ p.error")).to_have_id("err-cron_expression")
    expect(page.get_by_role("alert").get_by_role("link")).to_have_attribute(
        "href", "#f-cron_expression"
    )
    # What was typed is kept.
    expect(page.get_by_role("radio", name="Advanced (cron expression)")).to_be_checked()
    expect(page.get_by_label("Title", exact=True)).to_have_value("Bad cron")
    expect(page.get_by_label(re.compile(r"^Command, one argument per line"))).to_have_value(COMMAND)
    expect(page.get_by_label("Title", exact=True)).not_to_have_attribute("aria-invalid", "true")
    check_axe_both(page, "new schedule editor with an error")
    screenshot(page, "editor-errors")


# -------------------------------------------------------------------------------- edit


def test_an_edit_previews_before_and_after_and_saves(
    owner_page: Page, server: Server, home: dict[str, Any]
) -> None:
    page = owner_page
    made = server.cli_here(
        "schedule",
        "create",
        "home",
        "--title",
        "Nightly report",
        "--command",
        "echo report",
        "--daily",
        "02:30",
        "--zone",
        "America/New_York",
        "--json",
        actor=server.owner,
    )
    assert made.exit_code == 0, (made.stdout, made.stderr)
    schedule = json.loads(made.stdout)["missionId"]
    revision = stored(server, schedule)["revision"]
    page_url = f"{server.base_url}/w/{home['id']}/schedules/{schedule}"

    page.goto(f"{page_url}/edit")
    expect(page.get_by_role("heading", level=1)).to_have_text("Edit schedule")
    expect(page.get_by_role("radio", name="Every day", exact=True)).to_be_checked()
    time_field = frequency(page, "Every day").get_by_label("Time (HH:MM)")
    expect(time_field).to_have_value("02:30")
    time_field.fill("04:15")

    region = preview(page)
    expect(region.locator(".sentence")).to_have_text("Every day at 04:15 (America/New_York)")
    after = region.locator("h3:text-matches('^After the change') + ol > li")
    before = region.locator("h3:text-is('Before the change') + ol > li")
    expect(region.get_by_role("heading", name="After the change: next 5 runs")).to_be_visible()
    expect(after).to_have_count(5)
    expect(before).to_have_count(5)
    for i in range(5):
        expect(after.nth(i)).to_contain_text(" 04:15 ")
        expect(before.nth(i)).to_contain_text(" 02:30 ")
    expect(region).to_contain_text("Saving launches no catch-up passage.")
    check_axe_both(page, "schedule editor (edit)")
    screenshot(page, "editor-edit")

    page.get_by_role("button", name="Save changes").click()
    expect(page).to_have_url(re.compile(re.escape(page_url) + r"\?request="))
    expect(page.get_by_role("heading", level=1)).to_have_text("Nightly report")
    expect(runs_fact(page)).to_have_text("Every day at 04:15 (America/New_York)")
    doc = stored(server, schedule)
    assert doc["policy"] == {"kind": "daily", "time": "04:15", "zone": "America/New_York"}
    assert doc["revision"] == revision + 1, doc["revision"]
