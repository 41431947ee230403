"""Short task references: six characters from an alphabet without look-alikes."""

from __future__ import annotations

import secrets

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.storage.among import among
from kalends.storage.task_tables import tasks

# No 0/O, 1/I/L or U: a reference read aloud or copied by hand stays unambiguous.
ALPHABET = "ABCDEFGHJKMNPQRSTVWXYZ23456789"
REF_LENGTH = 6
# 30**6 is about 729 million references; a draw collides rarely, and never twice in a row.
MAX_DRAWS = 8


# The largest multiple of the alphabet's size below 256: bytes above it are redrawn,
# so every character is equally likely.
_UNBIASED = 256 - 256 % len(ALPHABET)


# Byte → character in one C-level pass: unbiased bytes map onto the alphabet, the rest drop.
_TO_ALPHABET = bytes(ord(ALPHABET[b % len(ALPHABET)]) for b in range(256))
_REDRAWN = bytes(range(_UNBIASED, 256))


def draw() -> str:
    return draw_many(1)[0]


def draw_many(count: int) -> list[str]:
    """``count`` random references from one read of the system's random source."""
    wanted = count * REF_LENGTH
    chars = b""
    while len(chars) < wanted:
        chars += secrets.token_bytes(wanted * 2).translate(_TO_ALPHABET, _REDRAWN)
    text = chars[:wanted].decode("ascii")
    return [text[i : i + REF_LENGTH] for i in range(0, wanted, REF_LENGTH)]


def new_refs(conn: Connection, count: int) -> list[str]:
    """``count`` distinct references that no task uses yet, checked in one query per draw."""
    chosen: list[str] = []
    for _ in range(MAX_DRAWS):
        wanted = count - len(chosen)
        if wanted == 0:
            return chosen
        candidates = set(draw_many(wanted)) - set(chosen)
        taken = set(
            conn.execute(select(tasks.c.ref).where(among(conn, tasks.c.ref, candidates)))
            .scalars()
            .all()
        )
        chosen.extend(sorted(candidates - taken))
    if len(chosen) < count:  # pragma: no cover - needs a nearly full reference space
        raise RuntimeError("could not draw unused task references")
    return chosen
