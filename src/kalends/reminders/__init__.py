"""Reminder delivery: the outbox of reminder intents, its leases, and the delivery worker.

This package depends on no other domain but :mod:`kalends.identity`. The task store
writes its reminders' intents through the names exported here (:func:`replace_intents`,
:func:`cancel_intents`), passing plain values; it never writes the intents' table itself.
It warns of a schedule's reminders already past with :func:`past_reminders`.

The edges import from the submodules: :mod:`kalends.reminders.outbox` (claims,
acknowledgements, retries, eligibility, listing), :mod:`kalends.reminders.destinations`
(an actor's notification settings), :mod:`kalends.reminders.transports` (Apprise e-mail
and push) and :mod:`kalends.reminders.worker` (the delivery loop).
"""

from kalends.reminders.channels import Channel
from kalends.reminders.intents import (
    LIVE_STATES,
    STATUSES,
    IntentPlan,
    IntentState,
    cancel_intents,
    replace_intents,
)
from kalends.reminders.scheduling import past_reminders

__all__ = [
    "LIVE_STATES",
    "STATUSES",
    "Channel",
    "IntentPlan",
    "IntentState",
    "cancel_intents",
    "past_reminders",
    "replace_intents",
]
