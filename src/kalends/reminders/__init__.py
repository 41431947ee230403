"""Reminder delivery: the outbox of reminder intents, its leases, and the delivery worker.

Import from the submodules: :mod:`kalends.reminders.outbox` (claims, acknowledgements,
retries, eligibility), :mod:`kalends.reminders.destinations` (an actor's notification
settings), :mod:`kalends.reminders.transports` (Apprise e-mail and push) and
:mod:`kalends.reminders.worker` (the delivery loop).
"""
