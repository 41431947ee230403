"""A schedule's recorded year as a picture on its page (issue 24 §2 "A picture"): the
slot ledger's rows of the last 365 days, read through the ledger service as the viewer,
drawn by :func:`~kalends.missions.timeline.timeline_svg` inline in the page.

Nothing here writes; the drawing's ticks and DST lines are in the schedule's zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from markupsafe import Markup

from kalends.missions import ScheduleService
from kalends.missions.ledger_reads import MAX_LEDGER_PAGE
from kalends.missions.timeline import timeline_svg
from kalends.web.render import instant_text

__all__ = ["PICTURE_PAGES", "PICTURE_SPAN", "Picture", "recorded_year"]

# The span the schedule page draws, ending now.
PICTURE_SPAN = timedelta(days=365)
# kalends decision: the picture reads at most this many of the ledger's largest pages
# (10,000 rows, ten times what retention keeps by count); a schedule with more rows in
# its year draws the oldest 10,000 and the caption says where the drawing stops.
PICTURE_PAGES = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class Picture:
    """The drawing (SVG markup), how many rows it drew, the slots they stand for, and
    the instant of the last row drawn when the year held more rows than were read."""

    svg: Markup
    rows: int
    slots: int
    start: str
    end: str
    cut_at: str | None


def recorded_year(
    reads: ScheduleService,
    actor: UUID | str,
    schedule: UUID | str,
    workspace: UUID,
    *,
    now: datetime,
    zone: str,
    title: str,
) -> Picture | None:
    """The ledger rows of the 365 days before ``now`` drawn as a timeline; ``None`` when
    the schedule recorded no row in them."""
    now = now.replace(second=0, microsecond=0) + timedelta(minutes=1)  # (a whole minute)
    start = now - PICTURE_SPAN
    rows: list[dict[str, Any]] = []
    after: str | None = None
    cut = False
    for _ in range(PICTURE_PAGES):
        page = reads.ledger(
            actor,
            schedule,
            workspace=workspace,
            start=start,
            end=now,
            after=after,
            limit=MAX_LEDGER_PAGE,
        )
        rows.extend(page["items"])
        after = page["nextAfter"]
        if after is None:
            break
    else:
        cut = after is not None
    if not rows:
        return None
    svg = timeline_svg(
        rows,
        start=start,
        end=now,
        zone=zone,
        title=f"{title}: the slots of the last 365 days",
        ident="year",
    )
    return Picture(
        svg=Markup(svg),  # (built by the timeline module, every text escaped there)
        rows=len(rows),
        slots=sum(int(r.get("slots") or 1) for r in rows),
        start=instant_text(start),
        end=instant_text(now),
        cut_at=str(rows[-1]["slot"]) if cut else None,
    )
