"""Calendar feeds over HTTP: creating, listing and revoking one's feeds, and the feed at
``/feeds/{secret}.ics`` read by two independent iCalendar readers (icalendar and ics),
polled as calendar apps poll it (conditional GET), refused alike when revoked or unknown,
and showing only what its owner may see now."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import icalendar
import ics
import pytest

from api.conftest import ApiWorld
from kalends.errors import InvalidInput
from kalends.feeds import MAX_ACTIVE_FEEDS
from kalends.reminders import Channel
from kalends.storage.meta import SERVER_BASE_URL, write_meta
from kalends.storage.testing import nothing_written
from kalends.tasks import Reminder, Role, Schedule, TimedValue
from missions.conftest import daily_config

GOOGLE = "Google-Calendar-Importer"
APPLE = "iOS/17.0 (21A329) dataaccessd/1.0"
PARIS = "Europe/Paris"


@dataclass(frozen=True, slots=True)
class Furnished:
    """What alice's feed shows and hides, by the IDs its UIDs are made of."""

    rent: UUID  # due on a date, with alice's reminder
    call: UUID  # due at a time in Paris, with alice's and bob's reminders
    plain: UUID  # no due value
    done: UUID  # completed
    trashed: UUID
    attic: UUID  # in an archived list
    club: UUID  # in bob's list, which alice is a member of until told otherwise
    club_list: UUID
    report: UUID  # alice's running schedule in home
    idle: UUID  # a schedule in home never played
    away: UUID  # dave's running schedule in away, where alice is no member


def timed(local: str, zone: str = PARIS) -> TimedValue:
    return TimedValue.parse(local, zone, "due")


def due(api: ApiWorld, who: str, list_id: UUID, title: str, schedule: Schedule) -> UUID:
    actor = api.actors[who].id
    task = api.services.tasks.create(actor, list_id, title)
    return api.services.tasks.set_schedule(actor, task.id, task.revision, schedule).id


def running(api: ApiWorld, who: str, workspace: UUID, title: str, *, play: bool = True) -> UUID:
    actor = api.actors[who].id
    config = daily_config(title=title)
    key = title.lower().replace(" ", "-")
    receipt = api.services.schedules.create(actor, workspace, config, request_id=f"create-{key}")
    assert receipt.mission_id is not None
    if play:
        api.services.schedules.play(
            actor, receipt.mission_id, request_id=f"play-{key}", expected_revision=1
        )
    return receipt.mission_id


def furnish(api: ApiWorld) -> Furnished:
    """alice's lists, tasks and schedules; the clock stands at 2025-03-03T12:00Z."""
    s = api.services
    alice, bob = api.actors["alice"].id, api.actors["bob"].id
    home = api.home_list.id
    rent = due(
        api,
        "alice",
        home,
        "Pay rent",
        Schedule(
            due=date(2025, 3, 5),
            reminders=(
                Reminder(
                    channel=Channel.PUSH,
                    time=timed("2025-03-05T08:00:00"),
                    recipient_id=alice,
                ),
            ),
        ),
    )
    call = due(
        api,
        "alice",
        home,
        "Call Ann",
        Schedule(
            due=timed("2025-03-04T09:30:00"),
            reminders=(
                Reminder(
                    channel=Channel.PUSH, time=timed("2025-03-04T09:00:00"), recipient_id=alice
                ),
                Reminder(
                    channel=Channel.EMAIL, time=timed("2025-03-04T09:15:00"), recipient_id=bob
                ),
            ),
        ),
    )
    plain = s.tasks.create(alice, home, "Someday").id
    done = due(api, "alice", home, "Done already", Schedule(due=date(2025, 3, 6)))
    s.tasks.complete(alice, done, s.tasks.get(alice, done).task.revision)
    trashed = due(api, "alice", home, "Thrown away", Schedule(due=date(2025, 3, 6)))
    s.tasks.trash(alice, trashed, s.tasks.get(alice, trashed).task.revision)
    attic_list = s.directory.create_list(alice, "attic")
    attic = due(api, "alice", attic_list.id, "Old chore", Schedule(due=date(2025, 3, 7)))
    s.directory.archive(alice, attic_list.id)
    club_list = s.directory.create_list(bob, "club")
    s.directory.share(bob, club_list.id, alice, Role.EDITOR)
    club = due(api, "bob", club_list.id, "Club dues", Schedule(due=date(2025, 3, 8)))
    return Furnished(
        rent=rent,
        call=call,
        plain=plain,
        done=done,
        trashed=trashed,
        attic=attic,
        club=club,
        club_list=club_list.id,
        report=running(api, "alice", api.home.id, "Morning report"),
        idle=running(api, "alice", api.home.id, "Never played", play=False),
        away=running(api, "dave", api.away.id, "Away job"),
    )


def new_feed(api: ApiWorld, who: str) -> dict[str, Any]:
    reply = api.client.post("/api/feeds", headers=api.headers(who))
    assert reply.status_code == 201, reply.text
    made: dict[str, Any] = reply.json()
    return made


def path_of(made: dict[str, Any]) -> str:
    return urlsplit(str(made["url"])).path


def events(body: bytes) -> dict[str, icalendar.Component]:
    calendar = icalendar.Calendar.from_ical(body)
    return {str(e["UID"]): e for e in calendar.walk("VEVENT")}


def task_uid(task: UUID) -> str:
    return f"task-{task}@kalends"


def passages_of(found: dict[str, Any], schedule: UUID) -> list[str]:
    return sorted(uid for uid in found if uid.startswith(f"passage-{schedule}-"))


class TestCreatingAndListing:
    def test_a_new_feed_shows_its_address_once_and_the_list_never_does(self, api: ApiWorld) -> None:
        made = new_feed(api, "alice")
        assert made["url"] == f"http://127.0.0.1:8000/feeds/{made['secret']}.ics"
        assert made["secret"].startswith("kcal_") and made["feed"]["active"] is True
        listed = api.client.get("/api/feeds", headers=api.headers("alice"))
        assert listed.status_code == 200
        assert [f["id"] for f in listed.json()] == [made["feed"]["id"]]
        assert made["secret"] not in listed.text and "url" not in listed.json()[0]
        assert listed.json()[0]["lastUsedAt"] is None
        # Another person's list holds none of alice's feeds.
        assert api.client.get("/api/feeds", headers=api.headers("bob")).json() == []
        api.clock.advance(timedelta(minutes=1))
        assert api.client.get(path_of(made)).status_code == 200
        used = api.client.get("/api/feeds", headers=api.headers("alice")).json()[0]
        assert used["lastUsedAt"] == "2025-03-03T12:01:00Z"

    def test_past_the_most_active_feeds_a_new_one_is_refused_and_nothing_written(
        self, api: ApiWorld
    ) -> None:
        for _ in range(MAX_ACTIVE_FEEDS):
            new_feed(api, "carol")
        with nothing_written(api.store):
            refused = api.client.post("/api/feeds", headers=api.headers("carol"))
        assert refused.status_code == 409 and refused.json()["code"] == "limit-reached"
        first = api.client.get("/api/feeds", headers=api.headers("carol")).json()[-1]
        api.client.delete(f"/api/feeds/{first['id']}", headers=api.headers("carol"))
        new_feed(api, "carol")

    def test_the_service_names_the_address_serve_recorded_and_refuses_without_one(
        self, api: ApiWorld
    ) -> None:
        alice = api.actors["alice"].id
        with nothing_written(api.store), pytest.raises(InvalidInput, match="base-url"):
            api.services.feeds.create(alice)
        write_meta(api.store, SERVER_BASE_URL, "https://cal.example.org")
        made = api.services.feeds.create(alice)
        assert made.url == f"https://cal.example.org/feeds/{made.secret}.ics"


class TestTheFeed:
    def test_two_readers_read_the_tasks_alarms_and_passages_alice_may_see(
        self, api: ApiWorld
    ) -> None:
        f = furnish(api)
        made = new_feed(api, "alice")
        reply = api.client.get(path_of(made))
        assert reply.status_code == 200
        assert reply.headers["content-type"] == "text/calendar; charset=utf-8"
        assert reply.headers["cache-control"] == "private, max-age=300"
        assert reply.headers["etag"].startswith('"')
        found = events(reply.content)

        rent = found[task_uid(f.rent)]
        assert rent["SUMMARY"] == "Pay rent"
        assert rent.decoded("DTSTART") == date(2025, 3, 5)
        assert rent.decoded("DTEND") == date(2025, 3, 6)
        (rent_alarm,) = rent.walk("VALARM")
        assert rent_alarm["ACTION"] == "DISPLAY"
        # On an all-day event the reminder keeps its wall time: 08:00 on the due date.
        assert rent_alarm.decoded("TRIGGER") == timedelta(hours=8)

        call = found[task_uid(f.call)]
        start = call.decoded("DTSTART")
        assert call["DTSTART"].params["TZID"] == PARIS
        assert start == datetime(2025, 3, 4, 8, 30, tzinfo=UTC)
        assert start.utcoffset() == timedelta(hours=1)
        # alice's reminder only; bob's is his.
        (call_alarm,) = call.walk("VALARM")
        assert call_alarm.decoded("TRIGGER") == timedelta(minutes=-30)
        calendar = icalendar.Calendar.from_ical(reply.content)
        assert [str(z["TZID"]) for z in calendar.walk("VTIMEZONE")] == ["Europe/Berlin", PARIS]

        # Daily at 09:00 in Berlin: the 30 days from 2025-03-03T12:00Z hold 30 passages,
        # the last ones after the change to summer time.
        report = passages_of(found, f.report)
        assert len(report) == 30
        assert report[0] == f"passage-{f.report}-20250304T080000Z@kalends"
        assert report[-1] == f"passage-{f.report}-20250402T070000Z@kalends"
        first = found[report[0]]
        assert first["SUMMARY"] == "Morning report"
        assert first["DTSTART"].params["TZID"] == "Europe/Berlin"

        hidden = (f.plain, f.done, f.trashed, f.attic)
        assert not any(task_uid(t) in found for t in hidden)
        assert task_uid(f.club) in found
        assert passages_of(found, f.idle) == passages_of(found, f.away) == []
        assert len(found) == 3 + 30

        # A second reader with its own parser reads the same events at the same times.
        other = ics.Calendar(reply.text)
        by_uid = {e.uid: e for e in other.events}
        assert set(by_uid) == set(found)
        assert by_uid[task_uid(f.rent)].all_day is True
        assert by_uid[task_uid(f.rent)].begin.date() == date(2025, 3, 5)
        assert by_uid[task_uid(f.call)].begin.datetime == datetime(2025, 3, 4, 8, 30, tzinfo=UTC)
        assert len(by_uid[task_uid(f.call)].alarms) == 1
        assert by_uid[report[-1]].begin.datetime == datetime(2025, 4, 2, 7, 0, tzinfo=UTC)

    def test_each_person_sees_their_own_reminders_and_workspaces(self, api: ApiWorld) -> None:
        f = furnish(api)
        bobs = events(api.client.get(path_of(new_feed(api, "bob"))).content)
        (alarm,) = bobs[task_uid(f.call)].walk("VALARM")
        assert alarm.decoded("TRIGGER") == timedelta(minutes=-15)
        assert len(passages_of(bobs, f.report)) == 30
        daves = events(api.client.get(path_of(new_feed(api, "dave"))).content)
        assert len(passages_of(daves, f.away)) == 30
        assert passages_of(daves, f.report) == []
        assert not any(uid.startswith("task-") for uid in daves)

    def test_a_list_alice_left_no_longer_shows_and_the_etag_changes(self, api: ApiWorld) -> None:
        f = furnish(api)
        path = path_of(new_feed(api, "alice"))
        before = api.client.get(path)
        assert task_uid(f.club) in events(before.content)
        api.services.directory.share(
            api.actors["bob"].id, f.club_list, api.actors["alice"].id, None
        )
        after = api.client.get(path, headers={"If-None-Match": before.headers["etag"]})
        assert after.status_code == 200
        assert task_uid(f.club) not in events(after.content)
        assert after.headers["etag"] != before.headers["etag"]

    def test_uids_and_the_etag_hold_while_nothing_changes_and_an_edit_changes_the_etag(
        self, api: ApiWorld
    ) -> None:
        f = furnish(api)
        path = path_of(new_feed(api, "alice"))
        first = api.client.get(path)
        api.clock.advance(timedelta(minutes=5))
        second = api.client.get(path)
        assert second.content == first.content
        assert second.headers["etag"] == first.headers["etag"]
        alice = api.actors["alice"].id
        task = api.services.tasks.get(alice, f.rent).task
        api.services.tasks.rename(alice, f.rent, task.revision, "Pay the rent")
        third = api.client.get(path)
        assert third.headers["etag"] != first.headers["etag"]
        assert set(events(third.content)) == set(events(first.content))
        assert events(third.content)[task_uid(f.rent)]["SUMMARY"] == "Pay the rent"


class TestPolling:
    @pytest.mark.parametrize(
        "agent",
        [
            GOOGLE,  # Google Calendar's importer
            APPLE,  # iOS Calendar's subscription poller
        ],
    )
    def test_a_calendar_app_polling_an_unchanged_feed_gets_304_without_a_body(
        self, api: ApiWorld, agent: str
    ) -> None:
        furnish(api)
        path = path_of(new_feed(api, "alice"))
        first = api.client.get(path, headers={"User-Agent": agent})
        assert first.status_code == 200
        etag = first.headers["etag"]
        for sent in (etag, f"W/{etag}", f'"stale", {etag}', "*"):
            again = api.client.get(path, headers={"User-Agent": agent, "If-None-Match": sent})
            assert again.status_code == 304, sent
            assert again.content == b""
            assert again.headers["etag"] == etag
        stale = api.client.get(path, headers={"User-Agent": agent, "If-None-Match": '"stale"'})
        assert stale.status_code == 200 and stale.content == first.content


class TestRefusals:
    def test_a_revoked_and_an_unknown_feed_answer_the_same_404_and_write_nothing(
        self, api: ApiWorld
    ) -> None:
        made = new_feed(api, "alice")
        assert api.client.get(path_of(made)).status_code == 200
        revoked = api.client.delete(
            f"/api/feeds/{made['feed']['id']}", headers=api.headers("alice")
        )
        assert revoked.status_code == 200 and revoked.json()["active"] is False
        assert revoked.json()["revokedAt"] == "2025-03-03T12:00:00Z"
        answers = []
        with nothing_written(api.store):
            for path in (
                path_of(made),  # revoked
                "/feeds/kcal_" + "A" * 43 + ".ics",  # unknown
                "/feeds/not-a-feed.ics",  # not even a feed's secret
                "/feeds/kcal_" + "A" * 400 + ".ics",  # too long to be one
            ):
                reply = api.client.get(path, headers={"User-Agent": APPLE})
                answers.append((reply.status_code, reply.json()))
        assert answers[0][0] == 404
        assert all(a == answers[0] for a in answers)
        # Revoking again changes nothing.
        again = api.client.delete(f"/api/feeds/{made['feed']['id']}", headers=api.headers("alice"))
        assert again.json() == revoked.json()

    def test_bad_input_and_another_persons_feed_are_refused_and_write_nothing(
        self, api: ApiWorld
    ) -> None:
        bobs = new_feed(api, "bob")
        with nothing_written(api.store):
            malformed = api.client.delete("/api/feeds/not-an-id", headers=api.headers("alice"))
            others = api.client.delete(
                f"/api/feeds/{bobs['feed']['id']}", headers=api.headers("alice")
            )
            nobody = [
                api.client.request(method, path)
                for method, path in (
                    ("GET", "/api/feeds"),
                    ("POST", "/api/feeds"),
                    ("DELETE", f"/api/feeds/{bobs['feed']['id']}"),
                )
            ]
        assert malformed.status_code == 422
        assert others.status_code == 404 and others.json()["code"] == "not-found"
        assert [r.status_code for r in nobody] == [401, 401, 401]
        assert api.client.get(path_of(bobs)).status_code == 200
