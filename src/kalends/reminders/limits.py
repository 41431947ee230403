"""The bounds of the reminder outbox: leases, attempts, retry delays, expiry, batches."""

from __future__ import annotations

from datetime import timedelta

__all__ = [
    "CLAIM_BATCH",
    "EXPIRY",
    "LEASE",
    "LIST_LIMIT",
    "MAX_ATTEMPTS",
    "MAX_CLAIM_BATCH",
    "MAX_ERROR_LENGTH",
    "MAX_OWNER_LENGTH",
    "RETRY_CAP",
    "RETRY_FACTOR",
    "RETRY_FIRST",
    "TOKEN_LENGTH",
    "backoff",
]

# Seed 000, "Reminder outbox": claims take "a 60-second lease".
LEASE = timedelta(seconds=60)
# Seed 000, "Reminder outbox": attempts are counted at claim "and stop after five attempts".
MAX_ATTEMPTS = 5
# Seed 000, "Reminder outbox": "retry delays increase up to one hour".
RETRY_CAP = timedelta(hours=1)
# kalends: the first retry waits a minute and each later one four times longer
# (1, 4, 16 minutes, then the one-hour cap).
RETRY_FIRST = timedelta(minutes=1)
RETRY_FACTOR = 4
# kalends: a reminder still undelivered a day after its instant is closed as expired, not
# sent late (seed 000: "expired or stale intents are never newly claimed").
EXPIRY = timedelta(days=1)
# kalends: intents claimed per call by default, and at most.
CLAIM_BATCH = 100
MAX_CLAIM_BATCH = 1000
# kalends: intents a listing shows unless told otherwise (at most 10 000).
LIST_LIMIT = 100
# kalends: the longest lease owner name and error text kept.
MAX_OWNER_LENGTH = 200
MAX_ERROR_LENGTH = 2000
# A lease token: 24 random hex digits and the intent's ID (unique because the ID is).
TOKEN_LENGTH = 64


def backoff(attempts: int) -> timedelta:
    """The delay before the next attempt after ``attempts`` failed ones (1, 4, 16 min, 1 h)."""
    delay: timedelta = RETRY_FIRST * RETRY_FACTOR ** max(attempts - 1, 0)
    return min(delay, RETRY_CAP)
