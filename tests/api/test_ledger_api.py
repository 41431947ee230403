"""The slot ledger over HTTP (issue 24 §1 "Reads"): ``GET …/schedule/ledger`` and ``GET
…/schedule/why`` answer what the service reads, for any member of the workspace, and
refuse bad input, strangers and missing credentials with the API's errors, writing
nothing; on both backends. (Every caller's answer is also in
test_authorization_matrix.py.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4
from zoneinfo import ZoneInfo

import pytest

from api.conftest import ApiWorld
from kalends.missions.ledger import Entry, Outcome, Reason
from kalends.missions.ledger_writes import record
from kalends.storage.testing import nothing_written
from missions.conftest import daily_config

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it; done here, so a read writes nothing of its own."""
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200


def _at(d: int, hh: int = 9) -> datetime:
    return datetime(2027, 5, d, hh, tzinfo=BERLIN).astimezone(UTC)


def _row(d: int, outcome: Outcome, reason: Reason | None = None, **more: Any) -> Entry:
    at = _at(d)
    return Entry(
        key=at.isoformat().replace("+00:00", "Z"),
        at=at,
        local=f"2027-05-{d:02d}T09:00:00",
        zone="Europe/Berlin",
        outcome=outcome,
        reason=reason,
        **more,
    )


@pytest.fixture
def mission(api: ApiWorld) -> str:
    """Berlin's daily 09:00 in home, played on 2027-05-01, four ledger rows, the clock on
    the 20th."""
    api.clock.set(_at(1, 8))
    schedules, bob = api.services.schedules, api.actors["bob"].id
    receipt = schedules.create(bob, api.home.id, daily_config(), request_id="create-0001")
    assert receipt.mission_id is not None
    sid: UUID = receipt.mission_id
    schedules.play(bob, sid, request_id="play-000001", expected_revision=1)
    rows = [
        _row(1, Outcome.LAUNCHED, passage_id="psg_1"),
        _row(2, Outcome.COALESCED, Reason.NO_SCHEDULER, passage_id="psg_4"),
        _row(3, Outcome.COALESCED, Reason.NO_SCHEDULER, passage_id="psg_4"),
        _row(4, Outcome.LAUNCHED, passage_id="psg_4"),
    ]
    api.store.run(lambda conn: record(conn, [(sid, e) for e in rows], _at(4, 10)))
    api.clock.set(_at(20, 12))
    return str(sid)


def _url(api: ApiWorld, mission: str, tail: str, workspace: UUID | None = None) -> str:
    return f"/api/workspaces/{workspace or api.home.id}/missions/{mission}/schedule{tail}"


def _get(api: ApiWorld, mission: str, tail: str, who: str | None = "carol", **params: Any) -> Any:
    headers = {} if who is None else api.headers(who)
    with nothing_written(api.store):
        return api.client.get(_url(api, mission, tail), params=params, headers=headers)


class TestLedgerRoute:
    def test_a_viewer_reads_the_rows_and_counts_the_service_reads(
        self, api: ApiWorld, mission: str
    ) -> None:
        reply = _get(api, mission, "/ledger")
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body == api.services.schedules.ledger(api.actors["carol"].id, mission)
        assert body["zone"] == "Europe/Berlin" and "from" in body and body["to"] is None
        assert [i["outcome"] for i in body["items"]] == [
            "launched",
            "coalesced",
            "coalesced",
            "launched",
        ]
        assert body["items"][1]["decidedAt"] == "2027-05-04T08:00:00Z"
        assert body["counts"] == {
            "launched": 2,
            "coalesced": 2,
            "skipped": 0,
            "moved": 0,
            "reasons": {"no-scheduler": 2},
        }

    def test_pages_and_windows_follow_the_query(self, api: ApiWorld, mission: str) -> None:
        first = _get(api, mission, "/ledger", limit=3).json()
        assert len(first["items"]) == 3 and first["nextAfter"] is not None
        rest = _get(api, mission, "/ledger", limit=3, after=first["nextAfter"]).json()
        assert [i["local"] for i in rest["items"]] == ["2027-05-04T09:00:00"]
        assert rest["nextAfter"] is None
        window = _get(
            api,
            mission,
            "/ledger",
            **{"from": "2027-05-02T00:00:00+02:00", "to": "2027-05-04T07:00:00Z"},
        ).json()
        assert [i["local"][:10] for i in window["items"]] == ["2027-05-02", "2027-05-03"]
        assert (window["from"], window["to"]) == ("2027-05-01T22:00:00Z", "2027-05-04T07:00:00Z")
        assert window["counts"]["coalesced"] == 2 and window["counts"]["launched"] == 0

    @pytest.mark.parametrize(
        ("params", "field"),
        [
            # The window ends before it starts.
            ({"from": "2027-05-05T00:00:00Z", "to": "2027-05-01T00:00:00Z"}, "from"),
            # More than ten years.
            ({"from": "2010-01-01T00:00:00Z", "to": "2027-01-01T00:00:00Z"}, "to"),
            # An instant without an offset.
            ({"from": "2027-05-01T00:00:00"}, "from"),
            # Not an instant at all.
            ({"to": "yesterday"}, "to"),
            # A cursor no page gave.
            ({"after": "bm90IGEgY3Vyc29y"}, "after"),
            # Page sizes out of range.
            ({"limit": 0}, "limit"),
            ({"limit": 1001}, "limit"),
        ],
    )
    def test_bad_input_is_422_naming_the_field_and_writes_nothing(
        self, api: ApiWorld, mission: str, params: dict[str, Any], field: str
    ) -> None:
        reply = _get(api, mission, "/ledger", **params)
        assert reply.status_code == 422, reply.text
        assert reply.json()["code"] == "invalid-input"
        assert field in reply.json()["details"]["field"]


class TestWhyRoute:
    def test_a_viewer_reads_why_a_slot_was_coalesced(self, api: ApiWorld, mission: str) -> None:
        reply = _get(api, mission, "/why", at="2027-05-02T09:00")
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body == api.services.schedules.why(
            api.actors["carol"].id, mission, "2027-05-02T09:00"
        )
        assert body["verdict"] == "coalesced"
        assert "coalesced into the catch-up passage psg_4" in body["sentence"]
        assert body["row"]["passageId"] == "psg_4"

    def test_another_zone_and_a_time_that_is_no_slot(self, api: ApiWorld, mission: str) -> None:
        body = _get(api, mission, "/why", at="2027-05-02T03:00", zone="America/New_York").json()
        assert (body["zone"], body["verdict"]) == ("America/New_York", "coalesced")
        other = _get(api, mission, "/why", at="2027-05-02T09:30").json()
        assert other["verdict"] == "not-a-slot"
        assert other["nearest"]["after"] == {
            "slot": "2027-05-03T07:00:00Z",
            "local": "2027-05-03T09:00:00",
        }

    @pytest.mark.parametrize(
        ("params", "field", "words"),
        [
            # A date alone.
            ({"at": "2027-05-02"}, "at", "a date alone names no slot"),
            # Malformed.
            ({"at": "2027-05-02 9am"}, "at", "expected a local wall time"),
            # With an offset.
            ({"at": "2027-05-02T09:00Z"}, "at", "expected a local wall time"),
            # An unknown zone.
            ({"at": "2027-05-02T09:00", "zone": "Mars/Olympus"}, "zone", ""),
            # No wall time at all.
            ({}, "at", ""),
        ],
    )
    def test_bad_input_is_422_naming_the_field_and_writes_nothing(
        self, api: ApiWorld, mission: str, params: dict[str, Any], field: str, words: str
    ) -> None:
        reply = _get(api, mission, "/why", **params)
        assert reply.status_code == 422, reply.text
        assert field in reply.json()["details"]["field"]
        assert words in reply.json()["message"]


class TestAccess:
    @pytest.mark.parametrize("tail", ["/ledger", "/why?at=2027-05-02T09:00"])
    def test_no_token_is_401_a_stranger_404_and_another_workspace_404(
        self, api: ApiWorld, mission: str, tail: str
    ) -> None:
        with nothing_written(api.store):
            anonymous = api.client.get(_url(api, mission, tail))
            stranger = api.client.get(_url(api, mission, tail), headers=api.headers("dave"))
            elsewhere = api.client.get(
                _url(api, mission, tail, workspace=api.away.id), headers=api.headers("dave")
            )
            unknown = api.client.get(_url(api, str(uuid4()), tail), headers=api.headers("carol"))
            expired = api.client.get(_url(api, mission, tail), headers=api.headers("erin"))
        assert anonymous.status_code == 401
        assert expired.status_code == 401
        assert stranger.status_code == 404
        assert elsewhere.status_code == 404
        assert elsewhere.json()["details"]["field"] == "missionID"
        assert unknown.status_code == 404
        assert "Matrix" not in stranger.text and "psg_" not in stranger.text

    def test_a_deleted_schedule_has_an_empty_ledger_and_why_is_404(
        self, api: ApiWorld, mission: str
    ) -> None:
        api.services.schedules.delete(
            api.actors["bob"].id, mission, request_id="delete-0001", expected_revision=2
        )
        ledger = _get(api, mission, "/ledger").json()
        assert ledger["items"] == [] and ledger["counts"]["launched"] == 0
        why = _get(api, mission, "/why", at="2027-05-02T09:00")
        assert why.status_code == 404

    def test_the_openapi_document_describes_both_routes(self, api: ApiWorld) -> None:
        paths = api.client.get("/openapi.json").json()["paths"]
        base = "/api/workspaces/{id}/missions/{missionID}/schedule"
        ledger, why = paths[base + "/ledger"]["get"], paths[base + "/why"]["get"]
        assert "10 years" in ledger["description"]
        assert {p["name"] for p in ledger["parameters"]} >= {"from", "to", "after", "limit"}
        assert "nonexistent" in why["description"]
        assert {p["name"] for p in why["parameters"]} >= {"at", "zone"}
        for route in (ledger, why):
            assert {"401", "403", "404", "422", "503"} <= set(route["responses"])


def test_a_window_of_ten_years_is_accepted(api: ApiWorld, mission: str) -> None:
    start = datetime(2020, 1, 1, tzinfo=UTC)
    end = start + timedelta(days=3653)
    reply = _get(api, mission, "/ledger", **{"from": start.isoformat(), "to": end.isoformat()})
    assert reply.status_code == 200, reply.text
