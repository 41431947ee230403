"""The people and workspaces the missions, conversations and questions suites start from,
in a fresh migrated database: alice, bob, carol and dave; ``home`` (a temporary
directory), which alice owns, bob edits and carol views; and ``away``, owned alone by
whoever the suite names. Each suite's world extends :class:`BaseWorld` with the services
it tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kalends.auth.grants import Privilege
from kalends.bootstrap import Services
from kalends.clock import FakeClock
from kalends.identity import Actor, Role
from kalends.missions import Workspace
from kalends.storage.unit_of_work import Store


@dataclass(frozen=True, slots=True)
class BaseWorld:
    services: Services
    clock: FakeClock
    root: Path
    alice: Actor
    bob: Actor
    carol: Actor
    dave: Actor
    home: Workspace
    away: Workspace

    @property
    def store(self) -> Store:
        return self.services.store


WorldT = TypeVar("WorldT", bound=BaseWorld)


def make_world(
    kind: type[WorldT],
    services: Services,
    clock: FakeClock,
    root: Path,
    *,
    away_owner: str = "alice",
    runners: tuple[str, ...] = ("alice",),
    alice_email: str | None = None,
) -> WorldT:
    """A ``kind`` of world: the four actors (alice with ``alice_email``), ``home`` and
    ``away`` under ``root``, ``away`` owned by the handle ``away_owner``, and the run
    privilege granted to the handles in ``runners``; all in one transaction."""
    directory = services.directory
    (root / "home").mkdir()
    (root / "away").mkdir()
    with services.store.transaction():
        alice = directory.add_actor("alice", "Alice", alice_email)
        bob = directory.add_actor("bob", "Bob")
        carol = directory.add_actor("carol", "Carol")
        dave = directory.add_actor("dave", "Dave")
        people = {"alice": alice, "bob": bob, "carol": carol, "dave": dave}
        home = services.workspaces.add(alice.id, root / "home", "home")
        services.workspaces.set_member(alice.id, home.id, bob.id, Role.EDITOR)
        services.workspaces.set_member(alice.id, home.id, carol.id, Role.VIEWER)
        away = services.workspaces.add(people[away_owner].id, root / "away", "away")
        for runner in runners:
            services.grants.grant(people[runner].id, Privilege.RUN)
    return kind(
        services=services,
        clock=clock,
        root=root,
        alice=alice,
        bob=bob,
        carol=carol,
        dave=dave,
        home=home,
        away=away,
    )
