"""IDs as people and programs give them: a UUID, its text, or a handle."""

from __future__ import annotations

from uuid import UUID

from kalends.errors import InvalidInput

# An actor given by ID or by handle.
ActorRef = UUID | str


def parse_uuid(value: object, field: str) -> UUID | None:
    """A UUID given as such or as text; ``None`` when the text is not a UUID.

    Anything but a UUID or text is :class:`InvalidInput` naming ``field``.
    """
    if isinstance(value, UUID):
        return value
    if isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            return None
    raise InvalidInput(f"{field}: an ID or reference is expected, got {value!r}", field=field)


class KnownActor(UUID):
    """The ID of an actor known to exist: read from a live credential in this process.

    Actors are never deleted, so :func:`~kalends.identity.resolve_actor` takes it as it
    is, without the read that checks an ID someone typed.
    """

    __slots__ = ()

    @classmethod
    def of(cls, actor_id: UUID) -> KnownActor:
        return actor_id if isinstance(actor_id, KnownActor) else cls(int=actor_id.int)
