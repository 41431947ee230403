"""The wakes one scheduler holds: claiming free ones under a lease, renewing, setting
when each is due next, recording a failed look, and giving them all back.

A scheduler holds its wakes under one lease, a row of ``scheduler_leases`` keyed by its
``token``: each wake it holds names the token, and one renewal extends them all (the
cost of a renewal does not grow with the wakes held). A wake is free when it has no owner
(new, released) or its token's lease ran out (its scheduler died). Every later write of
a wake is fenced by the token, and a write after a look also by the ``armed`` count it
read, so a control that armed the wake in between is never overwritten. Claims are one
locking statement that skips rows another claimer holds, so two schedulers never take
the same wake; a claim that takes over a dead scheduler's wakes first locks its lease
row, so a late renewal of that lease waits for the claim and never holds a taken wake.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any
from uuid import UUID

from sqlalchemy import ColumnElement, bindparam, delete, exists, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Dialect

from kalends.civil.zone_data import zone_data_version
from kalends.missions.wakes import MAX_SLEEP, error_delay
from kalends.storage.among import among
from kalends.storage.mission_tables import schedule_wakes, scheduler_leases
from kalends.storage.prepared import Prepared, run_sql, unnest_of, unnest_params
from kalends.storage.unit_of_work import Store, for_update
from kalends.storage.upsert import UNNEST_ROWS

__all__ = [
    "Claimed",
    "SetWake",
    "WakeLeases",
    "drop_wakes",
    "free_wake",
    "held_wakes",
    "set_wakes",
]

_W = schedule_wakes
_L = scheduler_leases


def _claim_statement(dialect: Any) -> Any:
    insert = dialect.insert(_L).values(
        token=bindparam("tok"), owner=bindparam("me"), expires_at=bindparam("expires")
    )
    return insert.on_conflict_do_update(
        index_elements=[_L.c.token], set_={"expires_at": insert.excluded.expires_at}
    )


# A claim that takes wakes makes or extends the lease (made again if a claim that took
# over the scheduler's last wake deleted it while the scheduler was late).
_CLAIM_LEASE = {
    "postgresql": Prepared(_claim_statement(postgresql)),
    "sqlite": Prepared(_claim_statement(sqlite)),
}
# A renewal is one row however many wakes the scheduler holds, and no write at all when
# it holds none (an idle scheduler writes nothing).
_RENEW = Prepared(
    update(_L)
    .where(
        _L.c.token == bindparam("tok"),
        exists().where(_W.c.lease_token == bindparam("tok")),
    )
    .values(expires_at=bindparam("expires"))
)


def _lapsed(now: datetime) -> Any:
    """The tokens whose lease ran out at ``now``."""
    return select(_L.c.token).where(_L.c.expires_at <= now)


def free_wake(now: datetime, lapsed: Any = None) -> ColumnElement[bool]:
    """Whether a wake is free at ``now``: no owner, or its token's lease ran out
    (``lapsed``: those tokens, when the caller read them already)."""
    tokens = _lapsed(now) if lapsed is None else lapsed
    return or_(_W.c.owner.is_(None), _W.c.lease_token.in_(tokens))


def held_wakes() -> Any:
    """The wakes with their lease's expiry (``lease_expires_at``, ``None`` when free)."""
    return select(_W, _L.c.expires_at.label("lease_expires_at")).select_from(
        _W.outerjoin(_L, _L.c.token == _W.c.lease_token)
    )


# A wake's write is fenced by the token it is held under, compared as an expression no
# index serves: the statement finds its row by the schedule's key. (Compared as the
# column, PostgreSQL may plan it through the token's index, which holds every wake of one
# scheduler: a scan of 100,000 index entries for each wake written, seen when the
# column's statistics were taken while every wake was free.)
_held_by = func.coalesce(_W.c.lease_token, "")
# Run on the driver, a round's wakes in one executemany (SQLAlchemy's own converted each
# row's parameters one by one: the same token and zone data version again for each).
_SET_WAKE = Prepared(
    update(_W)
    .where(
        _W.c.schedule_id == bindparam("sid"),
        _held_by == bindparam("me"),
        _W.c.armed == bindparam("seen"),
    )
    .values(
        due_at=bindparam("due"),
        polls=bindparam("p"),
        failures=0,
        last_error_code=None,
        last_error_message=None,
        last_error_at=None,
        next_slot_at=bindparam("slot"),
        zone_data=bindparam("zd"),
    )
)
_DROP_WAKE = Prepared(
    delete(_W).where(
        _W.c.schedule_id == bindparam("sid"),
        _held_by == bindparam("me"),
        _W.c.armed == bindparam("seen"),
    )
)
_FAIL_WAKE = (
    update(_W)
    .where(_W.c.schedule_id == bindparam("sid"), _held_by == bindparam("me"))
    .values(
        due_at=bindparam("due"),
        failures=bindparam("f"),
        last_error_code=bindparam("code"),
        last_error_message=bindparam("message"),
        last_error_at=bindparam("at"),
    )
)
_NUDGE = (
    update(_W)
    .where(_W.c.schedule_id == bindparam("sid"), _held_by == bindparam("me"))
    .values(due_at=bindparam("due"))
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Claimed:
    """A wake a claim took; ``takeover``: it had an owner whose lease ran out, or was
    released as orphaned, so the schedule's passage lost its scheduler."""

    schedule_id: UUID
    takeover: bool

    @classmethod
    def from_row(cls, row: Any) -> Claimed:
        """From a free wake as the claim read it (before taking it)."""
        return cls(
            schedule_id=row.schedule_id, takeover=row.owner is not None or bool(row.orphaned)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SetWake:
    """After a look: the wake is next due at ``due`` (``None``: nothing left, drop it),
    unless a control armed it since the look read ``armed``. ``next_slot``: the next slot
    the look computed (a Sleep), kept with the zone data's version (issue 24 §3); any
    other look clears both."""

    schedule_id: UUID
    armed: int
    due: datetime | None
    polls: int = 0
    next_slot: datetime | None = None


def set_wakes(conn: Connection, token: str, wakes: Iterable[SetWake]) -> None:
    """Write each wake's next due instant (clearing its lastError) and next slot with
    the zone data's version (read once per process), or drop it."""
    sets: list[dict[str, Any]] = []
    drops: list[dict[str, Any]] = []
    version = zone_data_version()
    for wake in wakes:
        fence = {"sid": wake.schedule_id, "me": token, "seen": wake.armed}
        if wake.due is None:
            drops.append(fence)
        else:
            slot = wake.next_slot
            sets.append(
                {
                    **fence,
                    "due": wake.due,
                    "p": wake.polls,
                    "slot": slot,
                    "zd": None if slot is None else version,
                }
            )
    if sets:
        if conn.dialect.name == "postgresql" and len(sets) >= UNNEST_ROWS:
            # One statement; a schedule set twice keeps its last setting, as when each
            # ran in turn (a wake's fence is not among what a setting changes).
            last = list({row["sid"]: row for row in sets}.values())
            columns = _SET_WAKE.columns(conn, last, [b for b, _ in _SET_ARRAYS])
            params = {"me": token, **unnest_params(columns)}
            run_sql(conn, _set_wakes_sql(conn.dialect), params)
        else:
            _SET_WAKE.many(conn, sets)
    if drops:
        _DROP_WAKE.many(conn, drops)


# A setting's binds bound as arrays, and the columns of ``schedule_wakes`` they go to
# (the token, the same for all, is bound once).
_SET_ARRAYS = (
    ("sid", "schedule_id"),
    ("seen", "armed"),
    ("due", "due_at"),
    ("p", "polls"),
    ("slot", "next_slot_at"),
    ("zd", "zone_data"),
)


@cache
def _set_wakes_sql(dialect: Dialect) -> str:
    """:data:`_SET_WAKE` for many wakes on PostgreSQL: ``UPDATE … FROM unnest`` of one
    array a bind (the token bound once)."""
    arrays = unnest_of([_W.c[column].type for _, column in _SET_ARRAYS], dialect)
    return (
        "UPDATE schedule_wakes SET due_at = v.due, polls = v.p, failures = 0, "
        "last_error_code = NULL, last_error_message = NULL, last_error_at = NULL, "
        "next_slot_at = v.slot, zone_data = v.zd "
        f"FROM {arrays} AS v({', '.join(b for b, _ in _SET_ARRAYS)}) "
        "WHERE schedule_wakes.schedule_id = v.sid "
        "AND coalesce(schedule_wakes.lease_token, '') = %(me)s "
        "AND schedule_wakes.armed = v.seen"
    )


def drop_wakes(conn: Connection, token: str, wakes: Iterable[tuple[UUID, int]]) -> None:
    """Drop each ``(schedule, armed)`` wake that no control armed since."""
    set_wakes(conn, token, (SetWake(schedule_id=s, armed=a, due=None) for s, a in wakes))


class WakeLeases:
    """The leases of one scheduler (``owner``, claiming under ``token``) on its wakes."""

    def __init__(self, store: Store, owner: str, token: str, lease: timedelta) -> None:
        self.store = store
        self.owner = owner
        self.token = token
        self.lease = lease
        self.renewed_at: datetime | None = None

    def renew(self, now: datetime) -> None:
        """Extend every held lease to ``now`` + the lease, at most every third of it."""
        if self.renewed_at is not None and now - self.renewed_at < self.lease / 3:
            return
        expires = now + self.lease
        self.store.run(lambda conn: self._renew(conn, expires))
        self.renewed_at = now

    def _renew(self, conn: Connection, expires: datetime) -> None:
        _RENEW.rowcount(conn, {"tok": self.token, "expires": expires})

    def claim(self, now: datetime, limit: int) -> list[Claimed]:
        """Take up to ``limit`` free wakes, earliest due first. A taken-over wake is made
        due now with its pending fallback afresh: the dead scheduler's next look (up to
        5 min, or 1 h after failures) was its own, and nothing watched the passage's exit
        since it died."""
        expires = now + self.lease

        def run(conn: Connection) -> list[Claimed]:
            # The run-out leases, locked: a late renewal of one waits until this claim
            # has taken its wakes (and then holds none of them).
            lapsed = list(conn.execute(for_update(_lapsed(now).order_by(_L.c.token))).scalars())
            free = free_wake(now, lapsed) if lapsed else _W.c.owner.is_(None)
            rows = conn.execute(
                for_update(
                    select(_W.c.schedule_id, _W.c.owner, _W.c.orphaned)
                    .where(free)
                    .order_by(_W.c.due_at)
                    .limit(limit),
                    skip_locked=True,
                )
            ).all()
            if not rows:
                return []
            lease = {"me": self.owner, "tok": self.token, "expires": expires}
            _CLAIM_LEASE[conn.dialect.name].rowcount(conn, lease)
            ids = [r.schedule_id for r in rows]
            conn.execute(
                update(_W)
                .where(among(conn, _W.c.schedule_id, ids), free)
                .values(owner=self.owner, lease_token=self.token, orphaned=False)
            )
            if lapsed:  # a dead scheduler's lease goes with the last wake it held
                conn.execute(
                    delete(_L).where(
                        _L.c.token.in_(lapsed),
                        ~exists().where(_W.c.lease_token == _L.c.token),
                    )
                )
            taken = [Claimed.from_row(r) for r in rows]
            over = [c.schedule_id for c in taken if c.takeover]
            if over:
                # The heir starts the pending fallback afresh (its first look after 30 s,
                # not the dead scheduler's later step), and looks now at a wake due later.
                conn.execute(update(_W).where(among(conn, _W.c.schedule_id, over)).values(polls=0))
                conn.execute(
                    update(_W)
                    .where(among(conn, _W.c.schedule_id, over), _W.c.due_at > now)
                    .values(due_at=now)
                )
            return taken

        taken = self.store.run(run)
        if taken:
            self.renewed_at = now
        return taken

    def set(self, wake: SetWake) -> None:
        """Set one wake after its look (its own transaction)."""
        self.store.run(lambda conn: set_wakes(conn, self.token, (wake,)))

    def fail(
        self, schedule_id: UUID, now: datetime, failures: int, code: str, message: str
    ) -> None:
        """Record a failed look (``lastError``), retrying after the backoff of the
        ``failures + 1``-th failure in a row."""
        attempt = failures + 1
        params = {
            "sid": schedule_id,
            "me": self.token,
            "due": now + error_delay(attempt),
            "f": attempt,
            "code": code,
            "message": message[:2000],
            "at": now,
        }
        self.store.run(lambda conn: conn.execute(_FAIL_WAKE, params))

    def nudge(self, schedule_ids: Iterable[UUID], due: datetime) -> None:
        """Make these held wakes due at ``due`` (a wake hint: a passage's exit)."""
        params = [{"sid": sid, "me": self.token, "due": due} for sid in schedule_ids]
        if params:
            self.store.run(lambda conn: conn.execute(_NUDGE, params))

    def forget(self, schedule_id: UUID) -> None:
        """Delete the schedule's wake whoever holds it (its schedule shows Interrupted
        until a Resume arms it again)."""
        self.store.run(lambda conn: conn.execute(delete(_W).where(_W.c.schedule_id == schedule_id)))

    def release(self) -> None:
        """Give up every held wake (graceful shutdown). They are marked orphaned, so the
        next scheduler treats them as after a restart."""

        def run(conn: Connection) -> None:
            conn.execute(
                update(_W)
                .where(_W.c.lease_token == self.token)
                .values(owner=None, lease_token=None, orphaned=True)
            )
            conn.execute(delete(_L).where(_L.c.token == self.token))

        self.store.run(run)

    def sleep_seconds(self) -> float:
        """Until this scheduler's next due wake, a free wake, another scheduler's lease
        running out (to take its wakes over), the next renewal, or an hour at most."""
        now = self.store.clock.now()

        def run(conn: Connection) -> tuple[datetime | None, UUID | None, datetime | None]:
            mine = conn.execute(
                select(_W.c.due_at)
                .where(_W.c.lease_token == self.token)
                .order_by(_W.c.due_at)
                .limit(1)
            ).scalar()
            unowned = conn.execute(
                select(_W.c.schedule_id).where(_W.c.owner.is_(None)).limit(1)
            ).scalar()
            others = conn.execute(
                select(_L.c.expires_at)
                .where(
                    _L.c.token != self.token,
                    exists().where(_W.c.lease_token == _L.c.token),
                )
                .order_by(_L.c.expires_at)
                .limit(1)
            ).scalar()
            return mine, unowned, others

        mine, unowned, others = self.store.run(run, write=False)
        if unowned is not None:
            return 0.0
        until = now + MAX_SLEEP
        for instant in (mine, others):
            if instant is not None:
                until = min(until, instant)
        if self.renewed_at is not None:
            until = min(until, self.renewed_at + self.lease / 3)
        return max(0.0, (until - now).total_seconds())
