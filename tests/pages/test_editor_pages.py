"""The schedule editor, browserless: creating through the form with every frequency and
with several calendars, the live preview across New York's DST days, errors kept beside
their fields, escaping, CSRF and role refusals that write nothing, an edit's revision
conflict, locks, and the preview's sequence number."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kalends.storage.testing import nothing_written
from pages.conftest import Pages, csrf_of

NY = "America/New_York"
_HIDDEN = re.compile(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">')


def hidden(html: str) -> dict[str, str]:
    """The hidden control fields of the editor's form (CSRF token, request ID, …)."""
    return {
        k: v
        for k, v in _HIDDEN.findall(html)
        if k in ("csrf", "request_id", "revision", "seq", "schedule")
    }


def base_fields(**fields: Any) -> dict[str, Any]:
    return {
        "title": "Nightly build",
        "objective": "Build it.",
        "notes": "",
        "zone": NY,
        "command": "make\nnightly",
        "cwd": ".",
        "restart": "resume",
        "condition_kind": "",
        **fields,
    }


def open_new(pages: Pages, who: str = "bob") -> tuple[TestClient, str]:
    client = pages.sign_in(who)
    page = client.get(f"/w/{pages.world.home.id}/schedules/new")
    assert page.status_code == 200, page.text
    return client, page.text


def post_new(client: TestClient, pages: Pages, page: str, op: str = "save", **fields: Any) -> Any:
    return client.post(
        f"/w/{pages.world.home.id}/schedules/new",
        data={**hidden(page), "op": op, **base_fields(**fields)},
        follow_redirects=False,
    )


def stored(pages: Pages, mission: str) -> dict[str, Any]:
    return pages.world.services.schedules.detail(pages.world.actors["alice"].id, mission)


def mission_of(reply: Any, pages: Pages) -> str:
    assert reply.status_code == 303, reply.text
    location = reply.headers["location"]
    prefix = f"/w/{pages.world.home.id}/schedules/"
    assert location.startswith(prefix)
    return str(location.removeprefix(prefix))


FREQUENCIES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"frequency": "immediate"}, {"kind": "immediate"}),
    (
        {"frequency": "at", "at_local": "2030-01-02T03:04"},
        {"kind": "at", "local": "2030-01-02T03:04:00", "zone": NY},
    ),
    ({"frequency": "after", "after_amount": "90"}, {"kind": "after", "minutes": 90}),
    (
        {"frequency": "every", "every_amount": "2", "every_unit": "hours"},
        {"kind": "every", "hours": 2},
    ),
    ({"frequency": "daily", "daily_time": "02:30"}, {"kind": "daily", "time": "02:30", "zone": NY}),
    (
        {"frequency": "weekdays", "weekdays_days": ["1", "5"], "weekdays_time": "08:15"},
        {"kind": "weekdays", "days": [1, 5], "time": "08:15", "zone": NY},
    ),
    (
        {"frequency": "times", "times_list": "09:00, 17:30"},
        {"kind": "times", "times": ["09:00", "17:30"], "zone": NY},
    ),
    (
        {"frequency": "monthly", "monthly_day": "31", "monthly_time": "23:00"},
        {"kind": "monthly", "day": 31, "time": "23:00", "zone": NY},
    ),
    (
        {"frequency": "cron", "cron_expression": "*/20 9-17 * * 1-5"},
        {"kind": "cron", "expression": "*/20 9-17 * * 1-5", "zone": NY},
    ),
]


@pytest.mark.parametrize(("fields", "policy"), FREQUENCIES, ids=lambda v: str(v.get("kind", "")))
def test_each_frequency_is_created_through_the_form(
    pages: Pages, fields: dict[str, Any], policy: dict[str, Any]
) -> None:
    client, page = open_new(pages)
    assert 'name="request_id"' in page and 'type="radio" name="frequency"' in page
    reply = post_new(client, pages, page, **fields)
    doc = stored(pages, mission_of(reply, pages))
    assert doc["policy"] == policy
    assert doc["title"] == "Nightly build"
    assert doc["profile"]["command"] == ["make", "nightly"]
    assert doc["state"] == "paused"


def test_two_calendars_are_created_and_add_a_calendar_keeps_every_value(pages: Pages) -> None:
    client, page = open_new(pages)
    added = post_new(
        client, pages, page, op="add-calendar", frequency="daily", daily_time="06:00",
        title="Twice <b>",
    )  # fmt: skip
    assert added.status_code == 200
    assert 'name="cal1_kind"' in added.text
    assert 'value="06:00"' in added.text and 'value="Twice &lt;b&gt;"' in added.text
    assert hidden(added.text)["request_id"] == hidden(page)["request_id"]  # the same draft
    reply = post_new(
        client, pages, added.text, frequency="daily", daily_time="06:00", cal_count="1",
        cal1_kind="weekdays", cal1_days=["6", "7"], cal1_time="10:00",
    )  # fmt: skip
    doc = stored(pages, mission_of(reply, pages))
    assert doc["policy"] == {
        "kind": "calendars",
        "calendars": [
            {"kind": "daily", "time": "06:00", "zone": NY},
            {"kind": "weekdays", "days": [6, 7], "time": "10:00", "zone": NY},
        ],
    }


def test_a_repeated_save_of_one_draft_creates_one_schedule(pages: Pages) -> None:
    client, page = open_new(pages)
    first = mission_of(post_new(client, pages, page, daily_time="05:00"), pages)
    again = mission_of(post_new(client, pages, page, daily_time="05:00"), pages)
    assert first == again


def preview(client: TestClient, pages: Pages, page: str, **fields: Any) -> Any:
    return client.post(
        f"/w/{pages.world.home.id}/schedules/preview",
        data={**hidden(page), **base_fields(**fields)},
        headers={"HX-Request": "true"},
    )


def test_the_preview_marks_the_spring_gap_and_the_repeated_autumn_hour(pages: Pages) -> None:
    pages.world.clock.set(datetime(2026, 3, 6, 12, 0, tzinfo=UTC))
    client, page = open_new(pages)
    spring = preview(client, pages, page, frequency="daily", daily_time="02:30", seq="3")
    assert spring.status_code == 200, spring.text
    assert 'data-seq="3"' in spring.text
    assert "the planned wall time does not exist on 2026-03-08" in spring.text
    assert "runs at 03:00" in spring.text
    assert '<time datetime="2026-03-08T07:00:00Z">' in spring.text
    pages.world.clock.set(datetime(2026, 10, 30, 12, 0, tzinfo=UTC))
    client, page = open_new(pages)  # (months later: a fresh session)
    autumn = preview(client, pages, page, frequency="daily", daily_time="01:30", seq="4")
    assert "01:30 happens twice on 2026-11-01 (clocks go back)" in autumn.text
    assert '<time datetime="2026-11-01T05:30:00Z">' in autumn.text  # the first of the two


def test_the_first_render_and_the_preview_button_fill_the_preview(pages: Pages) -> None:
    client, page = open_new(pages)
    assert 'aria-live="polite"' in page and "Every day at 09:00 (UTC)" in page
    assert 'hx-sync="closest form:replace"' in page and "/static/editor.js" in page
    shown = post_new(client, pages, page, op="preview", frequency="times", times_list="07:00")
    assert shown.status_code == 200
    assert "07:00" in shown.text and 'class="slots"' in shown.text


def test_a_stale_preview_sequence_is_echoed_for_the_page_to_drop(pages: Pages) -> None:
    client, page = open_new(pages)
    newer = preview(client, pages, page, frequency="daily", daily_time="04:00", seq="9")
    older = preview(client, pages, page, frequency="daily", daily_time="03:00", seq="8")
    assert 'data-seq="9"' in newer.text and "04:00" in newer.text
    assert 'data-seq="8"' in older.text
    script = client.get("/static/editor.js").text
    assert "seq < shown" in script and "shouldSwap = false" in script


@pytest.mark.parametrize(
    ("fields", "field", "said"),
    [
        ({"frequency": "cron", "cron_expression": "61 * * * *"}, "cron_expression", "61"),
        ({"frequency": "every", "every_amount": "10"}, "every_amount", "between 15"),
        ({"frequency": "daily", "daily_time": "09:00", "zone": "Mars/Olympus"}, "zone", "Mars"),
        (
            {
                "frequency": "daily",
                "daily_time": "09:00",
                "condition_kind": "conversation",
                "cond_conversations": "c-none",
            },
            "cond_conversations",
            "No conversation c-none in this workspace",
        ),
    ],
)
def test_errors_are_kept_beside_their_fields(
    pages: Pages, fields: dict[str, Any], field: str, said: str
) -> None:
    client, page = open_new(pages)
    with nothing_written(pages.world.store):
        reply = post_new(client, pages, page, title="Kept <title>", **fields)
    assert reply.status_code == 422, reply.text
    html = reply.text
    assert 'role="alert"' in html and 'id="error-summary"' in html
    assert f'id="err-{field}"' in html
    control = re.search(rf'<[^>]*id="f-{field}"[^>]*>', html)
    assert control is not None
    assert 'aria-invalid="true"' in control.group(0)
    assert 'aria-describedby="' in control.group(0) and f"err-{field}" in control.group(0)
    assert "autofocus" in control.group(0)  # the first error takes the focus
    message = re.search(rf'<p class="error" id="err-{field}">([^<]*)</p>', html)
    assert message is not None and said in message.group(1)
    # Beside its field, a message does not name the service's path to it.
    assert "policy." not in message.group(1) and ": " not in message.group(1)[:12]
    assert 'value="Kept &lt;title&gt;"' in html  # values kept
    assert hidden(html)["request_id"] == hidden(page)["request_id"]


def test_a_conversation_condition_is_created_through_the_form(pages: Pages) -> None:
    talks = pages.world.services.conversations
    first = talks.create(pages.world.actors["bob"].id, pages.world.home.id, "Plans")
    second = talks.create(pages.world.actors["bob"].id, pages.world.home.id, "Questions")
    client, page = open_new(pages)
    assert 'type="radio" name="condition_kind" value="conversation"' in page
    reply = post_new(
        client, pages, page, frequency="daily", daily_time="09:00",
        condition_kind="conversation", cond_conversations=f"{first.id}\n{second.id}\n",
    )  # fmt: skip
    doc = stored(pages, mission_of(reply, pages))
    assert doc["condition"] == {
        "kind": "conversation", "conversationIds": [str(first.id), str(second.id)]
    }  # fmt: skip


def test_watched_conversations_are_set_shown_and_refused_through_the_form(
    pages: Pages,
) -> None:
    talks = pages.world.services.conversations
    notes = talks.create(pages.world.actors["bob"].id, pages.world.home.id, "Notes")
    client, page = open_new(pages)
    assert 'name="watch"' in page
    reply = post_new(
        client, pages, page, frequency="daily", daily_time="09:00", watch=f"{notes.id}\n"
    )  # fmt: skip
    mission = mission_of(reply, pages)
    assert stored(pages, mission)["watch"] == [str(notes.id)]
    client, page = open_edit(pages, mission)
    assert f">{notes.id}</textarea>" in page
    unknown = "00000000-0000-4000-8000-000000000000"
    refused = post_edit(
        client, pages, mission, page, frequency="daily", daily_time="09:00",
        watch=f"{notes.id}\n{unknown}",
    )  # fmt: skip
    assert refused.status_code == 422
    assert (
        f'<p class="error" id="err-watch">No conversation {unknown} in this workspace'
        in refused.text
    )
    assert stored(pages, mission)["watch"] == [str(notes.id)]


def test_a_title_with_script_is_text_in_the_form_and_the_preview(pages: Pages) -> None:
    client, page = open_new(pages)
    bad = "<script>alert(1)</script>"
    shown = post_new(client, pages, page, op="preview", title=bad)
    assert "<script>alert(1)" not in shown.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown.text
    fragment = preview(client, pages, page, frequency="cron", cron_expression=bad)
    assert "<script>alert" not in fragment.text and "&lt;script&gt;" in fragment.text


def test_a_post_without_the_csrf_token_is_refused_and_writes_nothing(pages: Pages) -> None:
    client, page = open_new(pages)
    fields = {**hidden(page), "csrf": "forged", "op": "save", **base_fields(daily_time="01:00")}
    with nothing_written(pages.world.store):
        reply = client.post(f"/w/{pages.world.home.id}/schedules/new", data=fields)
        fragment = client.post(f"/w/{pages.world.home.id}/schedules/preview", data=fields)
    assert reply.status_code == 403 and "csrf-failed" in reply.text
    assert fragment.status_code == 403


def test_a_viewer_gets_no_editor_and_a_forged_post_writes_nothing(pages: Pages) -> None:
    client = pages.sign_in("carol")
    assert client.get(f"/w/{pages.world.home.id}/schedules/new").status_code == 403
    page = client.get("/").text
    fields = {
        "csrf": csrf_of(page),
        "request_id": "web-forged-by-a-viewer",
        "op": "save",
        **base_fields(daily_time="01:00"),
    }
    with nothing_written(pages.world.store):
        reply = client.post(f"/w/{pages.world.home.id}/schedules/new", data=fields)
    assert reply.status_code == 403, reply.text
    receipt = pages.world.services.schedules.receipt(
        pages.world.actors["alice"].id, pages.world.home.id, "web-forged-by-a-viewer"
    )
    assert receipt.status == "unknown"


# --- edit -------------------------------------------------------------------------------------


def open_edit(pages: Pages, mission: str, who: str = "bob") -> tuple[TestClient, str]:
    client = pages.sign_in(who)
    page = client.get(f"/w/{pages.world.home.id}/schedules/{mission}/edit")
    assert page.status_code == 200, page.text
    return client, page.text


def post_edit(client: TestClient, pages: Pages, mission: str, page: str, **fields: Any) -> Any:
    body = {**hidden(page), "op": "save", **base_fields(title="Nightly", command="true")}
    body.update(fields)
    return client.post(
        f"/w/{pages.world.home.id}/schedules/{mission}/edit", data=body, follow_redirects=False
    )


def test_an_edit_shows_the_saved_values_and_saves_at_its_revision(pages: Pages) -> None:
    mission = pages.schedule("alice", "Nightly", profile={"command": ["true"], "env": {"K": "v"}})
    client, page = open_edit(pages, mission)
    assert hidden(page)["revision"] == "1"
    assert 'value="02:30"' in page and f'value="{NY}"' in page
    assert "<strong>K</strong> — kept" in page and ">v<" not in page  # names only
    assert "Before the change" in page and "Saving launches no catch-up passage." in page
    reply = post_edit(client, pages, mission, page, frequency="daily", daily_time="04:45")
    assert reply.status_code == 303, reply.text
    assert reply.headers["location"].endswith(f"?request={hidden(page)['request_id']}")
    doc = stored(pages, mission)
    assert doc["policy"]["time"] == "04:45" and doc["revision"] == 2
    assert doc["profile"]["envNames"] == ["K"]  # the environment was kept


def test_two_edits_from_one_revision_the_second_is_a_conflict_with_a_comparison(
    pages: Pages,
) -> None:
    mission = pages.schedule("alice", "Nightly")
    client, page = open_edit(pages, mission)
    other, other_page = open_edit(pages, mission, who="alice")
    first = post_edit(other, pages, mission, other_page, frequency="daily", daily_time="05:00")
    assert first.status_code == 303
    with nothing_written(pages.world.store):
        second = post_edit(
            client, pages, mission, page, frequency="daily", daily_time="06:15", notes="mine"
        )
    assert second.status_code == 409, second.text
    html = second.text
    assert 'id="conflict"' in html and "revision 1" in html and "revision 2" in html
    assert 'value="06:15"' in html and ">mine</textarea>" in html  # the user's values kept
    assert "05:00" in html  # beside the saved ones
    assert 'class="differs"' in html
    assert hidden(html)["revision"] == "2"
    assert hidden(html)["request_id"] != hidden(page)["request_id"]
    assert stored(pages, mission)["policy"]["time"] == "05:00"


def test_a_pending_passage_locks_the_structure_and_an_uncertain_one_everything(
    pages: Pages,
) -> None:
    mission = pages.schedule("alice", "Nightly")
    alice = pages.world.actors["alice"].id
    pages.world.services.schedules.run_now(
        alice, mission, request_id="run-for-lock", expected_revision=1
    )
    client, page = open_edit(pages, mission)
    assert "Partly locked:" in page and "a passage is pending" in page
    structure = re.search(r'<fieldset disabled class="plain structure">', page)
    assert structure is not None
    reply = post_edit(client, pages, mission, page, objective="New objective.")
    assert reply.status_code == 303, reply.text
    doc = stored(pages, mission)
    assert doc["objective"] == "New objective." and doc["policy"]["time"] == "02:30"


def test_a_rule_the_form_cannot_show_is_read_only_json_and_kept(pages: Pages) -> None:
    policy = {"kind": "daily", "time": "02:30", "zone": NY, "gap": "skip"}
    mission = pages.schedule("alice", "Gapped", policy=policy)
    client, page = open_edit(pages, mission)
    assert "this form cannot show it" in page and "&#34;gap&#34;" in page
    reply = post_edit(
        client, pages, mission, page, title="Gapped", notes="changed",
        policy_json=hidden_value(page, "policy_json"),
    )  # fmt: skip
    assert reply.status_code == 303, reply.text
    doc = stored(pages, mission)
    assert doc["policy"] == policy and doc["notes"] == "changed"


def hidden_value(html: str, name: str) -> str:
    found = re.search(rf'<input type="hidden" name="{name}" value="([^"]*)">', html, re.S)
    assert found is not None
    return (
        found.group(1).replace("&#34;", '"').replace("&#39;", "'").replace("&lt;", "<")
        .replace("&gt;", ">").replace("&amp;", "&")
    )  # fmt: skip


def test_blank_required_fields_are_said_with_the_timing_mistake(pages: Pages) -> None:
    client, page = open_new(pages)
    with nothing_written(pages.world.store):
        reply = post_new(
            client, pages, page, title=" ", command="", frequency="every", every_amount="5"
        )
    assert reply.status_code == 422
    fields = re.findall(r'<p class="error" id="err-([a-z_]+)">', reply.text)
    assert fields == ["title", "every_amount", "command"]  # in the form's order
    title = re.search(r'<input id="f-title"[^>]*>', reply.text)
    assert title is not None and "autofocus" in title.group(0)


def test_a_stopped_schedule_is_shown_read_only(pages: Pages) -> None:
    mission = pages.schedule("alice", "Nightly")
    alice = pages.world.actors["alice"].id
    pages.world.services.schedules.stop(
        alice, mission, request_id="stop-for-lock", expected_revision=1
    )
    _, page = open_edit(pages, mission)
    assert "Read-only:" in page and "it cannot be edited now" in page
    assert re.search(
        r'<button type="submit" name="op" value="save" class="primary" disabled>', page
    )
    assert page.count("<fieldset disabled") >= 2


def test_an_edit_previews_whether_saving_launches_a_catch_up(pages: Pages) -> None:
    pages.world.clock.set(datetime(2026, 6, 1, 12, 0, tzinfo=UTC))  # 08:00 in New York
    mission = pages.schedule("alice", "Nightly")
    alice = pages.world.actors["alice"].id
    pages.world.services.schedules.play(
        alice, mission, request_id="play-catch", expected_revision=1
    )
    pages.world.clock.set(datetime(2026, 6, 1, 12, 30, tzinfo=UTC))
    client, page = open_edit(pages, mission)
    assert "Saving launches no catch-up passage." in page
    body = {**hidden(page), **base_fields(title="Nightly", command="true")}
    fragment = client.post(
        f"/w/{pages.world.home.id}/schedules/preview",
        data={**body, "frequency": "daily", "daily_time": "08:15", "seq": "2"},
    )
    assert fragment.status_code == 200, fragment.text
    assert "Saving launches a catch-up passage at once" in fragment.text
    assert '<time datetime="2026-06-01T12:15:00Z">2026-06-01 08:15 Mon America/New_York' in (
        fragment.text
    )
    assert "Before the change" in fragment.text and 'data-seq="2"' in fragment.text
