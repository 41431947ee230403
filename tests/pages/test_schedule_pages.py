"""The schedules pages without a browser: what they show, what they escape, and that
their controls carry the rendered request ID and revision, refuse forged posts and never
act twice."""

from __future__ import annotations

from datetime import UTC, datetime

from pages.conftest import Pages, csrf_of, request_ids


def _at(pages: Pages, when: str) -> None:
    pages.world.clock.set(datetime.fromisoformat(when).replace(tzinfo=UTC))


def test_the_schedules_page_lists_each_schedule_with_its_sentence_and_members(
    pages: Pages,
) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly <b>build</b>")
    client = pages.sign_in("alice")
    home = pages.world.home.id
    page = client.get(f"/w/{home}/schedules")
    assert page.status_code == 200
    html = page.text
    assert "Nightly &lt;b&gt;build&lt;/b&gt;" in html
    assert "<b>build</b>" not in html
    assert f'href="/w/{home}/schedules/{sid}"' in html
    assert "Every day at 02:30 (America/New_York)" in html
    assert "Paused" in html  # a new schedule waits for its first Play
    for handle, role in (("alice", "owner"), ("bob", "editor"), ("carol", "viewer")):
        assert f'<td data-label="Handle">{handle}</td><td data-label="Role">{role}</td>' in html
    # Play is offered in the row, with a request ID of its own.
    assert 'name="action" value="play"' in html
    assert len(set(request_ids(html))) == len(request_ids(html)) >= 1


def test_a_schedule_page_shows_upcoming_slots_with_the_new_york_dst_note(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly")
    client = pages.sign_in("alice")
    html = client.get(f"/w/{pages.world.home.id}/schedules/{sid}").text
    assert "<h1>Nightly</h1>" in html
    first = "2026-03-07 02:30 Sat America/New_York"
    assert f'<time datetime="2026-03-07T07:30:00Z">{first}</time>' in html
    # 02:30 does not exist on 8 March in New York: the slot runs at 03:00.
    shifted = "2026-03-08 03:00 Sun America/New_York"
    assert f'<time datetime="2026-03-08T07:00:00Z">{shifted}</time>' in html
    assert "does not exist on 2026-03-08" in html
    assert "runs at 03:00" in html
    assert "Why not now?" in html
    assert "the schedule is paused" in html
    # The paused banner says it; the block reason "paused" is not said twice.
    assert "<strong>Paused.</strong>" in html
    assert "<strong>Blocked:</strong>" not in html
    assert '<details class="technical">' in html
    assert "About Technical details" in html


def test_a_title_with_a_script_is_text_everywhere(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "<script>alert(1)</script>")
    client = pages.sign_in("alice")
    for path in (
        f"/w/{pages.world.home.id}/schedules",
        f"/w/{pages.world.home.id}/schedules/{sid}",
        "/",
    ):
        html = client.get(path).text
        assert "<script>alert(1)</script>" not in html, path
    detail = client.get(f"/w/{pages.world.home.id}/schedules/{sid}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in detail


def test_a_viewer_sees_no_write_control_and_a_forged_control_is_refused(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly")
    client = pages.sign_in("carol")
    home = pages.world.home.id
    html = client.get(f"/w/{home}/schedules/{sid}").text
    assert request_ids(html) == []
    assert "/control" not in html
    assert "New schedule" not in client.get(f"/w/{home}/schedules").text
    assert "you can read this schedule but not control it" in html
    before = pages.world.services.schedules.detail(pages.world.actors["alice"].id, sid)
    forged = client.post(
        f"/w/{home}/schedules/{sid}/control",
        data={
            "csrf": csrf_of(html),
            "action": "play",
            "request_id": "forged-request-1",
            "revision": before["revision"],
        },
        follow_redirects=False,
    )
    assert forged.status_code == 403
    after = pages.world.services.schedules.detail(pages.world.actors["alice"].id, sid)
    assert after["revision"] == before["revision"]
    assert after["state"] == before["state"]


def test_a_non_member_gets_not_found(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly")
    client = pages.sign_in("dave")
    home = pages.world.home.id
    assert client.get(f"/w/{home}/schedules").status_code == 404
    page = client.get(f"/w/{home}/schedules/{sid}")
    assert page.status_code == 404
    assert "Nightly" not in page.text
    assert "home" not in client.get("/").text.split("<main", 1)[1]


def test_a_control_without_the_csrf_token_is_refused_and_writes_nothing(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly")
    client = pages.sign_in("alice")
    home = pages.world.home.id
    html = client.get(f"/w/{home}/schedules/{sid}").text
    rid = request_ids(html)[0]
    for token in ("", "forged"):
        reply = client.post(
            f"/w/{home}/schedules/{sid}/control",
            data={"csrf": token, "action": "play", "request_id": rid, "revision": 1},
            follow_redirects=False,
        )
        assert reply.status_code == 403
        assert "csrf-failed" in reply.text
    doc = pages.world.services.schedules.detail(pages.world.actors["alice"].id, sid)
    assert doc["revision"] == 1 and doc["state"] == "paused"


def test_play_without_script_lands_on_the_page_with_its_exact_status(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly")
    client = pages.sign_in("bob")
    home = pages.world.home.id
    html = client.get(f"/w/{home}/schedules/{sid}").text
    forms = html.split('name="action" value="')
    play = next(f for f in forms[1:] if f.startswith("play"))
    rid = play.split('name="request_id" value="', 1)[1].split('"', 1)[0]
    data = {"csrf": csrf_of(html), "action": "play", "request_id": rid, "revision": 1}
    reply = client.post(f"/w/{home}/schedules/{sid}/control", data=data, follow_redirects=False)
    assert reply.status_code == 303
    assert reply.headers["location"] == f"/w/{home}/schedules/{sid}?request={rid}"
    landed = client.get(reply.headers["location"]).text
    assert "Play applied" in landed
    assert rid in landed
    doc = pages.world.services.schedules.detail(pages.world.actors["alice"].id, sid)
    assert doc["state"] == "running"
    # The same request again acts no second time: the service returns the first outcome.
    again = client.post(f"/w/{home}/schedules/{sid}/control", data=data, follow_redirects=False)
    assert again.status_code == 303
    assert (
        pages.world.services.schedules.detail(pages.world.actors["alice"].id, sid)["revision"]
        == doc["revision"]
    )


def test_a_stale_revision_is_a_conflict_that_shows_both_sides(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly")
    client = pages.sign_in("alice")
    home = pages.world.home.id
    html = client.get(f"/w/{home}/schedules/{sid}").text
    token = csrf_of(html)
    ids = request_ids(html)
    first = client.post(
        f"/w/{home}/schedules/{sid}/control",
        data={"csrf": token, "action": "play", "request_id": ids[0], "revision": 1},
        follow_redirects=False,
    )
    assert first.status_code == 303
    # A second control sent from the same rendered page (revision 1) is stale now.
    stale = client.post(
        f"/w/{home}/schedules/{sid}/control",
        data={"csrf": token, "action": "stop", "request_id": ids[-1], "revision": 1},
    )
    assert stale.status_code == 409
    assert "nothing was applied" in stale.text
    assert "You saw revision 1" in stale.text
    doc = pages.world.services.schedules.detail(pages.world.actors["alice"].id, sid)
    assert f"it is now at revision {doc['revision']}" in stale.text
    assert doc["state"] == "running"
    # With script the same conflict is a fragment, status 409.
    fragment = client.post(
        f"/w/{home}/schedules/{sid}/control",
        data={"csrf": token, "action": "stop", "request_id": "web-other-req-1", "revision": 1},
        headers={"HX-Request": "true"},
    )
    assert fragment.status_code == 409
    assert "<html" not in fragment.text
    assert "Reload the schedule" in fragment.text


def test_check_status_reads_a_control_by_its_request_id(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly")
    client = pages.sign_in("alice")
    home = pages.world.home.id
    html = client.get(f"/w/{home}/schedules/{sid}").text
    rid = request_ids(html)[0]
    unknown = client.get(f"/w/{home}/schedules/{sid}/requests/{rid}?action=play&revision=1")
    assert unknown.status_code == 200
    assert "Unknown" in unknown.text
    client.post(
        f"/w/{home}/schedules/{sid}/control",
        data={"csrf": csrf_of(html), "action": "play", "request_id": rid, "revision": 1},
    )
    applied = client.get(f"/w/{home}/schedules/{sid}/requests/{rid}?action=play&revision=1")
    assert "Play applied" in applied.text
    assert "revision 2" in applied.text


def test_bad_control_input_is_refused(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly")
    client = pages.sign_in("alice")
    home = pages.world.home.id
    token = csrf_of(client.get(f"/w/{home}/schedules/{sid}").text)
    url = f"/w/{home}/schedules/{sid}/control"
    cases = [
        ({"action": "launch", "request_id": "web-abcdefgh", "revision": 1}, 422),
        ({"action": "configure", "request_id": "web-abcdefgh", "revision": 1}, 422),
        ({"action": "play", "request_id": "web-abcdefgh", "revision": 0}, 422),
        ({"action": "play", "request_id": "short", "revision": 1}, 422),
    ]
    for data, status in cases:
        reply = client.post(url, data={"csrf": token, **data})
        assert reply.status_code == status, (data, reply.text[:300])
    doc = pages.world.services.schedules.detail(pages.world.actors["alice"].id, sid)
    assert doc["revision"] == 1


def test_the_now_page_lists_launches_of_the_next_day(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly")
    alice = pages.world.actors["alice"].id
    pages.world.services.schedules.control(
        alice, sid, "play", request_id="req-play-now-1", expected_revision=1
    )
    client = pages.sign_in("bob")
    html = client.get("/").text
    assert "Launches in the next 24 hours (1)" in html
    assert "2026-03-07 02:30 Sat America/New_York" in html
    assert f'href="/w/{pages.world.home.id}/schedules/{sid}"' in html


def test_the_next_run_is_also_said_in_the_viewers_zone_when_it_differs(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    sid = pages.schedule("alice", "Nightly")
    alice = pages.world.actors["alice"].id
    pages.world.services.schedules.control(
        alice, sid, "play", request_id="req-play-zone-1", expected_revision=1
    )
    client = pages.sign_in("alice")
    url = f"/w/{pages.world.home.id}/schedules"
    client.cookies.set("kalends_zone", "Europe/Berlin")
    html = client.get(url).text
    assert "2026-03-07 08:30 Sat in your zone (Europe/Berlin)" in html
    assert 'aria-label="About the next run in your zone"' in html
    for zone in ("America/New_York", "Nowhere/Atlantis", "x" * 80):
        client.cookies.set("kalends_zone", zone)
        assert "in your zone" not in client.get(url).text, zone


def test_the_now_page_remembers_the_previous_visit(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    client = pages.sign_in("alice")
    first = client.get("/")
    # No visit remembered: failures of the last day are news; this visit is remembered.
    assert '<time datetime="2026-03-05T12:00:00Z">' in first.text
    assert "kalends_seen=" in first.headers["set-cookie"]
    pages.world.clock.set(datetime(2026, 3, 6, 12, 10, tzinfo=UTC))
    soon = client.get("/")
    # A reload soon after keeps the mark: nothing is lost to a refresh.
    assert '<time datetime="2026-03-06T12:00:00Z">' in soon.text
    assert "kalends_seen=" not in soon.headers.get("set-cookie", "")
    pages.world.clock.set(datetime(2026, 3, 6, 13, 0, tzinfo=UTC))
    later = client.get("/")
    assert '<time datetime="2026-03-06T12:00:00Z">' in later.text
    assert "kalends_seen=" in later.headers["set-cookie"]
    client.cookies.delete("kalends_seen")
    client.cookies.set("kalends_seen", "not-a-time")
    assert '<time datetime="2026-03-05T13:00:00Z">' in client.get("/").text


def test_a_conditioned_schedule_shows_its_baseline_and_why_not_now(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    (pages.world.root / "home" / "notes.txt").write_text("first\n")
    sid = pages.schedule("alice", "On notes", condition={"kind": "files", "paths": ["notes.txt"]})
    alice = pages.world.actors["alice"].id
    pages.world.services.schedules.control(
        alice, sid, "play", request_id="req-play-cond-1", expected_revision=1
    )
    doc = pages.world.services.schedules.detail(alice, sid)
    assert doc["source"]["baseline"] is not None
    client = pages.sign_in("alice")
    page = client.get(f"/w/{pages.world.home.id}/schedules/{sid}")
    assert page.status_code == 200, page.text[:500]
    html = page.text
    assert "launches only when files change: notes.txt" in html
    assert "baseline <code>" in html
    assert "<strong>Condition</strong>" in html
    listing = client.get(f"/w/{pages.world.home.id}/schedules").text
    assert "when files change: notes.txt" in listing


def test_the_schedules_page_pages_by_eight(pages: Pages) -> None:
    _at(pages, "2026-03-06T12:00:00")
    made = [pages.schedule("alice", f"Job {n}") for n in range(9)]
    client = pages.sign_in("carol")
    home = pages.world.home.id
    first = client.get(f"/w/{home}/schedules").text
    shown = [sid for sid in made if f'href="/w/{home}/schedules/{sid}"' in first]
    assert len(shown) == 8
    last = sorted(made)[7]
    assert f'href="/w/{home}/schedules?after={last}">Next page</a>' in first
    second = client.get(f"/w/{home}/schedules?after={last}").text
    rest = [sid for sid in made if f'href="/w/{home}/schedules/{sid}"' in second]
    assert rest == [sorted(made)[8]]
    assert "Next page" not in second
    assert f'href="/w/{home}/schedules">First page</a>' in second
    bad = client.get(f"/w/{home}/schedules?after=not-an-id")
    assert bad.status_code == 422
    assert "<h1>Not valid</h1>" in bad.text
    assert "after: " in bad.text
