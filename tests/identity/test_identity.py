"""The identity domain: actors by ID or handle, the one role check, ID parsing.

The store fixture runs each test on SQLite and (when reachable) PostgreSQL.
"""

from __future__ import annotations

import uuid

import pytest

from kalends.errors import Conflict, Forbidden, InvalidInput, NotFound
from kalends.identity import (
    ActorDirectory,
    KnownActor,
    Role,
    normalize_handle,
    parse_uuid,
    require_role,
    resolve_actor,
)
from kalends.storage.unit_of_work import Store
from kalends.tasks import Directory

UNSEEN = NotFound("list: no list x", field="list")


class TestRequireRole:
    @pytest.mark.parametrize(
        ("held", "minimum"),
        [("viewer", Role.VIEWER), ("editor", Role.VIEWER), ("owner", Role.EDITOR)],
    )
    def test_a_role_that_reaches_the_minimum_is_returned(self, held: str, minimum: Role) -> None:
        assert require_role(held, minimum, scope="list", unseen=UNSEEN) is Role(held)

    def test_no_membership_is_told_what_an_unknown_id_is_told(self) -> None:
        with pytest.raises(NotFound) as caught:
            require_role(None, Role.VIEWER, scope="list", unseen=UNSEEN)
        assert caught.value is UNSEEN

    def test_a_lower_role_is_forbidden_and_names_the_scope_and_both_roles(self) -> None:
        with pytest.raises(Forbidden, match="the owner role on the workspace; you are editor"):
            require_role("editor", Role.OWNER, scope="workspace", unseen=UNSEEN)

    def test_roles_rank_viewer_below_editor_below_owner(self) -> None:
        assert Role.VIEWER.rank < Role.EDITOR.rank < Role.OWNER.rank


class TestParsing:
    def test_a_uuid_and_its_text_parse_to_the_same_id(self) -> None:
        key = uuid.uuid4()
        assert parse_uuid(key, "actor") == parse_uuid(str(key), "actor") == key

    def test_text_that_is_not_a_uuid_is_none(self) -> None:
        assert parse_uuid("alice", "actor") is None

    def test_anything_else_is_invalid_input_naming_the_field(self) -> None:
        with pytest.raises(InvalidInput, match="owner: an ID or reference is expected"):
            parse_uuid(42, "owner")

    def test_a_handle_is_normalised_without_spaces_in_lowercase(self) -> None:
        assert normalize_handle("  Alice.B ") == "alice.b"

    def test_a_known_actor_keeps_the_uuid_it_wraps(self) -> None:
        key = uuid.uuid4()
        known = KnownActor.of(key)
        assert known == key and KnownActor.of(known) is known


class TestDirectory:
    def test_an_actor_is_found_by_id_and_by_handle(self, store: Store) -> None:
        directory = ActorDirectory(store)
        alice = directory.add_actor("alice", "Alice", "alice@example.com")
        assert directory.actor(alice.id) == alice
        assert directory.actor("alice") == alice
        assert store.run(lambda conn: resolve_actor(conn, str(alice.id)), write=False) == alice.id

    def test_an_unknown_actor_is_not_found_naming_the_field(self, store: Store) -> None:
        with pytest.raises(NotFound, match="owner: no actor 'nobody'"):
            store.run(lambda conn: resolve_actor(conn, "nobody", "owner"), write=False)

    def test_a_taken_handle_is_a_conflict_and_adds_no_one(self, store: Store) -> None:
        directory = ActorDirectory(store)
        directory.add_actor("alice", "Alice")
        with pytest.raises(Conflict, match="handle: an actor 'alice' already exists"):
            directory.add_actor("alice", "Another Alice")
        assert [actor.handle for actor in directory.actors()] == ["alice"]

    @pytest.mark.parametrize(
        ("handle", "name", "email", "field"),
        [
            ("Alice", "Alice", None, "handle"),
            ("-alice", "Alice", None, "handle"),
            ("a" * 65, "Alice", None, "handle"),
            ("alice", "   ", None, "display_name"),
            ("alice", "x" * 201, None, "display_name"),
            ("alice", "Alice", "not-an-address", "email"),
        ],
    )
    def test_bad_input_is_refused_naming_the_field_and_writes_nothing(
        self, store: Store, handle: str, name: str, email: str | None, field: str
    ) -> None:
        directory = ActorDirectory(store)
        with pytest.raises(InvalidInput) as caught:
            directory.add_actor(handle, name, email)
        assert caught.value.field == field
        assert directory.actors() == []

    def test_the_task_directory_is_the_actor_directory_with_lists(self, store: Store) -> None:
        directory = Directory(store)
        bob = directory.add_actor("bob", "Bob")
        assert ActorDirectory(store).actor("bob") == bob
        assert directory.create_list(bob.id, "Home").role is Role.OWNER
