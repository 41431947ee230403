"""The schedule editor, browserless, with cron's extensions (issue 24 §4): the live
preview says and shows them across New York's spring gap, a form saved with one keeps
its expression, and a misplaced extension is kept beside the cron field."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from kalends.storage.testing import nothing_written
from pages.conftest import Pages
from pages.test_editor_pages import mission_of, open_new, post_new, preview, stored


def test_the_preview_says_the_second_sunday_and_marks_its_spring_gap(pages: Pages) -> None:
    pages.world.clock.set(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    client, page = open_new(pages)
    fragment = preview(client, pages, page, frequency="cron", cron_expression="30 2 * * 0#2")
    assert fragment.status_code == 200, fragment.text
    assert "At 02:30 on the second Sunday of the month (America/New_York)" in fragment.text
    assert "the planned wall time does not exist on 2026-03-08" in fragment.text
    assert '<time datetime="2026-03-08T07:00:00Z">' in fragment.text
    assert '<time datetime="2026-04-12T06:30:00Z">' in fragment.text


def test_a_schedule_on_the_last_weekday_is_saved_with_its_expression(pages: Pages) -> None:
    client, page = open_new(pages)
    reply = post_new(client, pages, page, frequency="cron", cron_expression="0 17 LW * *")
    mission = mission_of(reply, pages)
    assert stored(pages, mission)["policy"]["expression"] == "0 17 LW * *"


def test_a_sixth_monday_is_kept_beside_the_cron_field_and_nothing_is_written(
    pages: Pages,
) -> None:
    client, page = open_new(pages)
    with nothing_written(pages.world.store):
        reply = post_new(client, pages, page, frequency="cron", cron_expression="0 9 * * 1#6")
    assert reply.status_code == 422, reply.text
    message = re.search(r'<p class="error" id="err-cron_expression">([^<]*)</p>', reply.text)
    assert message is not None
    assert "1#6" in message.group(1) and "1-5" in message.group(1)
