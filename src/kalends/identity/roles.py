"""Roles on a scope (a list or a workspace) and the one check every service makes.

A scope the actor has no role on is, to them, a scope that does not exist: the caller
passes the :class:`NotFound` it answers for an unknown ID, so no answer tells an
outsider that an ID is taken. Only a member with too low a role is :class:`Forbidden`.
"""

from __future__ import annotations

from enum import StrEnum

from kalends.errors import Forbidden, NotFound


class Role(StrEnum):
    """A member's role on a list or a workspace; each includes the rights of those below it."""

    VIEWER = "viewer"
    EDITOR = "editor"
    OWNER = "owner"

    @property
    def rank(self) -> int:
        return _RANKS[self]


_RANKS = {Role.VIEWER: 1, Role.EDITOR: 2, Role.OWNER: 3}


def require_role(held: str | None, minimum: Role, *, scope: str, unseen: NotFound) -> Role:
    """The role the actor holds on ``scope`` ("list", "workspace") once it reaches ``minimum``.

    ``held`` is the stored role, ``None`` for no membership: the actor is then told
    ``unseen``, what the caller answers when the scope does not exist at all.
    """
    if held is None:
        raise unseen
    role = Role(held)
    if role.rank < minimum.rank:
        raise Forbidden(f"this needs the {minimum.value} role on the {scope}; you are {role.value}")
    return role
