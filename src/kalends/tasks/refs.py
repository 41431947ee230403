"""Short task references: six characters from an alphabet without look-alikes."""

from __future__ import annotations

import secrets

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.storage.task_tables import tasks

# No 0/O, 1/I/L or U: a reference read aloud or copied by hand stays unambiguous.
ALPHABET = "ABCDEFGHJKMNPQRSTVWXYZ23456789"
REF_LENGTH = 6
# 30**6 is about 729 million references; a draw collides rarely, and never twice in a row.
MAX_DRAWS = 8


def draw() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(REF_LENGTH))


def new_refs(conn: Connection, count: int) -> list[str]:
    """``count`` distinct references that no task uses yet, checked in one query per draw."""
    chosen: list[str] = []
    for _ in range(MAX_DRAWS):
        wanted = count - len(chosen)
        if wanted == 0:
            return chosen
        candidates = {draw() for _ in range(wanted)} - set(chosen)
        taken = set(conn.execute(select(tasks.c.ref).where(tasks.c.ref.in_(candidates))).scalars())
        chosen.extend(sorted(candidates - taken))
    if len(chosen) < count:  # pragma: no cover - needs a nearly full reference space
        raise RuntimeError("could not draw unused task references")
    return chosen
