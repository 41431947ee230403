"""Named leases on every backend: acquire, contend, expire, reclaim, renew, release."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest
from sqlalchemy import select

from kalends.clock import FakeClock
from kalends.errors import InvalidInput, LeaseLost
from kalends.storage import leases
from kalends.storage.leases import Lease
from kalends.storage.schema import leases as leases_table
from kalends.storage.unit_of_work import Store

TTL = timedelta(seconds=30)


def acquire(
    store: Store, owner: str, name: str = "scheduler", ttl: timedelta = TTL
) -> Lease | None:
    return store.run(lambda conn: leases.acquire(conn, name, owner, store.clock.now(), ttl))


def renew(store: Store, lease: Lease, ttl: timedelta = TTL) -> Lease:
    return store.run(lambda conn: leases.renew(conn, lease, store.clock.now(), ttl))


def release(store: Store, lease: Lease) -> bool:
    return store.run(lambda conn: leases.release(conn, lease))


def holder(store: Store, name: str = "scheduler") -> Lease | None:
    return store.run(lambda conn: leases.current(conn, name, store.clock.now()), write=False)


def stored_rows(store: Store) -> list[tuple[str, str]]:
    with store.transaction(write=False) as conn:
        rows = conn.execute(select(leases_table.c.name, leases_table.c.owner)).all()
    return [(row.name, row.owner) for row in rows]


class TestAcquire:
    def test_a_free_lease_is_acquired_until_now_plus_the_ttl(
        self, store: Store, fake_clock: FakeClock
    ) -> None:
        lease = acquire(store, "worker-1")
        assert lease is not None
        assert (lease.name, lease.owner) == ("scheduler", "worker-1")
        assert lease.acquired_at == fake_clock.now()
        assert lease.expires_at == fake_clock.now() + TTL
        assert holder(store) == lease

    def test_a_held_lease_is_refused_to_another_owner_and_to_its_own_owner(
        self, store: Store, fake_clock: FakeClock
    ) -> None:
        first = acquire(store, "worker-1")
        fake_clock.advance(TTL - timedelta(microseconds=1))
        assert acquire(store, "worker-2") is None
        assert acquire(store, "worker-1") is None
        assert holder(store) == first

    def test_leases_with_different_names_are_independent(self, store: Store) -> None:
        assert acquire(store, "worker-1", name="a") is not None
        assert acquire(store, "worker-2", name="b") is not None
        assert sorted(stored_rows(store)) == [("a", "worker-1"), ("b", "worker-2")]

    def test_a_lease_expires_exactly_at_its_expiry_and_is_reclaimed_with_a_new_token(
        self, store: Store, fake_clock: FakeClock
    ) -> None:
        first = acquire(store, "worker-1")
        assert first is not None
        fake_clock.advance(TTL)
        assert first.is_expired(fake_clock.now())
        assert holder(store) is None
        second = acquire(store, "worker-2")
        assert second is not None
        assert second.owner == "worker-2"
        assert second.token != first.token
        assert second.acquired_at == fake_clock.now()
        assert stored_rows(store) == [("scheduler", "worker-2")]

    def test_every_acquisition_draws_a_new_token_even_for_the_same_owner(
        self, store: Store, fake_clock: FakeClock
    ) -> None:
        tokens = set()
        for _ in range(3):
            lease = acquire(store, "worker-1")
            assert lease is not None
            tokens.add(lease.token)
            fake_clock.advance(TTL)
        assert len(tokens) == 3

    @pytest.mark.parametrize(
        ("name", "owner", "ttl", "field"),
        [
            ("", "worker", TTL, "name"),  # empty name
            ("   ", "worker", TTL, "name"),  # blank name
            ("x" * 201, "worker", TTL, "name"),  # name longer than the column
            ("lease", "", TTL, "owner"),  # empty owner
            ("lease", "worker", timedelta(0), "ttl"),  # a lease that is over when it starts
            ("lease", "worker", timedelta(seconds=-5), "ttl"),  # negative ttl
        ],
    )
    def test_bad_input_is_refused_naming_the_field_and_nothing_is_written(
        self, store: Store, name: str, owner: str, ttl: timedelta, field: str
    ) -> None:
        with pytest.raises(InvalidInput) as caught:
            acquire(store, owner, name=name, ttl=ttl)
        assert caught.value.field == field
        assert stored_rows(store) == []

    def test_a_naive_now_is_refused(self, store: Store) -> None:
        naive = datetime(2025, 3, 1, 12, 0)
        with pytest.raises(InvalidInput, match="naive") as caught:
            store.run(lambda conn: leases.acquire(conn, "lease", "worker", naive, TTL))
        assert caught.value.field == "now"
        assert stored_rows(store) == []

    def test_a_ttl_given_as_a_number_is_refused(self, store: Store) -> None:
        with pytest.raises(InvalidInput, match="timedelta"):
            acquire(store, "worker", ttl=30)  # type: ignore[arg-type]


class TestRenew:
    def test_renewing_a_held_lease_extends_it_from_now(
        self, store: Store, fake_clock: FakeClock
    ) -> None:
        lease = acquire(store, "worker-1")
        assert lease is not None
        fake_clock.advance(20)
        renewed = renew(store, lease, timedelta(minutes=5))
        assert renewed.token == lease.token
        assert renewed.acquired_at == lease.acquired_at
        assert renewed.expires_at == fake_clock.now() + timedelta(minutes=5)
        assert holder(store) == renewed
        fake_clock.advance(TTL)
        assert acquire(store, "worker-2") is None

    def test_renewing_with_a_stale_token_is_refused_and_leaves_the_new_holder(
        self, store: Store, fake_clock: FakeClock
    ) -> None:
        stale = acquire(store, "worker-1")
        assert stale is not None
        fake_clock.advance(TTL)
        current = acquire(store, "worker-2")
        with pytest.raises(LeaseLost, match="no longer held by 'worker-1'") as caught:
            renew(store, stale)
        assert (caught.value.name, caught.value.owner) == ("scheduler", "worker-1")
        assert holder(store) == current

    def test_renewing_an_expired_lease_nobody_took_is_refused(
        self, store: Store, fake_clock: FakeClock
    ) -> None:
        lease = acquire(store, "worker-1")
        assert lease is not None
        fake_clock.advance(TTL)
        with pytest.raises(LeaseLost):
            renew(store, lease)
        assert acquire(store, "worker-2") is not None

    def test_renewing_a_released_lease_is_refused(self, store: Store) -> None:
        lease = acquire(store, "worker-1")
        assert lease is not None
        assert release(store, lease)
        with pytest.raises(LeaseLost):
            renew(store, lease)
        assert stored_rows(store) == []

    def test_a_clock_rolled_back_keeps_the_lease_held_and_renewable(
        self, store: Store, fake_clock: FakeClock
    ) -> None:
        lease = acquire(store, "worker-1")
        assert lease is not None
        fake_clock.set(fake_clock.now() - timedelta(hours=1))
        assert holder(store) == lease
        assert acquire(store, "worker-2") is None
        renewed = renew(store, lease)
        assert renewed.expires_at == fake_clock.now() + TTL


class TestRelease:
    def test_releasing_frees_the_lease_for_anyone(self, store: Store) -> None:
        lease = acquire(store, "worker-1")
        assert lease is not None
        assert release(store, lease) is True
        assert holder(store) is None
        assert acquire(store, "worker-2") is not None

    def test_releasing_twice_reports_that_nothing_was_held(self, store: Store) -> None:
        lease = acquire(store, "worker-1")
        assert lease is not None
        assert release(store, lease) is True
        assert release(store, lease) is False

    def test_releasing_with_a_stale_token_leaves_the_new_holder_alone(
        self, store: Store, fake_clock: FakeClock
    ) -> None:
        stale = acquire(store, "worker-1")
        assert stale is not None
        fake_clock.advance(TTL)
        current = acquire(store, "worker-2")
        assert release(store, stale) is False
        assert holder(store) == current


class TestContention:
    CONTENDERS = 8

    def race(self, store: Store) -> list[Lease | None]:
        barrier = threading.Barrier(self.CONTENDERS)
        results: list[Lease | None] = []
        errors: list[BaseException] = []
        lock = threading.Lock()

        def contender(n: int) -> None:
            try:
                barrier.wait(5)
                lease = acquire(store, f"worker-{n}")
                with lock:
                    results.append(lease)
            except BaseException as exc:
                with lock:
                    errors.append(exc)

        threads = [threading.Thread(target=contender, args=(n,)) for n in range(self.CONTENDERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert errors == []
        assert len(results) == self.CONTENDERS
        return results

    def test_of_many_concurrent_acquirers_of_a_free_lease_exactly_one_wins(
        self, store: Store
    ) -> None:
        winners = [lease for lease in self.race(store) if lease is not None]
        assert len(winners) == 1
        assert holder(store) == winners[0]

    def test_of_many_concurrent_reclaimers_of_an_expired_lease_exactly_one_wins(
        self, store: Store, fake_clock: FakeClock
    ) -> None:
        stale = acquire(store, "worker-old")
        assert stale is not None
        fake_clock.advance(TTL)
        winners = [lease for lease in self.race(store) if lease is not None]
        assert len(winners) == 1
        assert holder(store) == winners[0]
        assert winners[0].token != stale.token
