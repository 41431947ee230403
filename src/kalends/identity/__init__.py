"""Identity: actors, the directory of actors, roles on a scope and ID parsing.

Tasks, missions, reminders and auth depend on this package for who someone is and
whether their role reaches an operation; it depends on none of them.
"""

from kalends.identity.actors import (
    HANDLE_PATTERN,
    MAX_NAME_LENGTH,
    Actor,
    ActorDirectory,
    check_name,
    normalize_handle,
    read_actor,
    resolve_actor,
)
from kalends.identity.ids import ActorRef, KnownActor, parse_uuid
from kalends.identity.roles import Role, require_role

__all__ = [
    "HANDLE_PATTERN",
    "MAX_NAME_LENGTH",
    "Actor",
    "ActorDirectory",
    "ActorRef",
    "KnownActor",
    "Role",
    "check_name",
    "normalize_handle",
    "parse_uuid",
    "read_actor",
    "require_role",
    "resolve_actor",
]
