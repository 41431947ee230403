"""A schedule's page says when new zone data moved its next slot (issue 24 §3): the
notice beside Upcoming, from the ledger's latest ``moved`` rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from kalends.missions.ledger import Entry, Outcome, Reason
from kalends.missions.ledger_writes import record
from pages.conftest import Pages

NOW = datetime(2027, 3, 15, 18, 0, tzinfo=UTC)
SLOT = datetime(2027, 3, 16, 16, 0, tzinfo=UTC)
NOTICE = "<strong>Zone rules changed:</strong>"
DETAIL = (
    "new zone rules (2024a → 2099z) moved this slot from 2027-03-16 13:00 to "
    "2027-03-16 12:00 America/New_York time "
    "(from 2027-03-16T17:00:00Z to 2027-03-16T16:00:00Z)"
)


def _moved(pages: Pages, sid: str, slot: datetime) -> None:
    """The ledger row a scheduler on new zone data writes for ``sid``'s next slot."""
    entry = Entry(
        key=f"moved:{slot.isoformat().replace('+00:00', 'Z')}",
        at=slot,
        local="2027-03-16T12:00:00",
        zone="America/New_York",
        outcome=Outcome.MOVED,
        reason=Reason.ZONE_RULES_CHANGED,
        detail=DETAIL,
        other_at=slot + timedelta(hours=1),
    )
    pages.world.services.store.run(lambda conn: record(conn, [(UUID(sid), entry)], NOW))


def test_the_page_says_which_slot_new_zone_rules_moved(pages: Pages) -> None:
    pages.world.clock.set(NOW)
    sid = pages.schedule("alice", "Noon", policy={
        "kind": "daily", "time": "12:00", "zone": "America/New_York",
    })  # fmt: skip
    quiet = pages.schedule("alice", "Quiet")
    _moved(pages, sid, SLOT)
    client = pages.sign_in("carol")  # (a viewer reads it too)
    home = pages.world.home.id
    html = client.get(f"/w/{home}/schedules/{sid}").text
    notice = html[html.index(NOTICE) :]
    notice = notice[: notice.index("</div>")]
    assert "the slot of 2027-03-16 12:00 America/New_York moved from" in notice
    assert '<time datetime="2027-03-16T17:00:00Z">' in notice
    assert '<time datetime="2027-03-16T16:00:00Z">' in notice
    assert DETAIL in notice
    assert html.index(NOTICE) > html.index('id="upcoming-h"')
    assert NOTICE not in client.get(f"/w/{home}/schedules/{quiet}").text


def test_a_move_long_past_is_no_longer_shown(pages: Pages) -> None:
    pages.world.clock.set(NOW)
    sid = pages.schedule("alice", "Noon")
    _moved(pages, sid, SLOT)
    pages.world.clock.set(SLOT + timedelta(days=8))
    html = pages.sign_in("alice").get(f"/w/{pages.world.home.id}/schedules/{sid}").text
    assert NOTICE not in html
