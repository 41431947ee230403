"""A schedule's policy: which calendar rule kinds a configuration may name, parsed by
:mod:`kalends.civil` with every error renamed under ``policy.``."""

from __future__ import annotations

from collections.abc import Mapping

from kalends.civil import Rule, parse_rule
from kalends.errors import InvalidInput
from kalends.missions.config_fields import fail, json_object
from kalends.missions.limits import ON_CHANGE_CHECK_MINUTES

__all__ = ["ONE_SHOT_KINDS", "ON_CHANGE", "ON_CHANGE_CHECKS", "POLICY_KINDS", "parse_policy"]

ON_CHANGE = "on-change"
"""The event-only policy: no calendar of its own; it reads its source condition every 15
minutes from first Play and launches when the condition holds (seed 002)."""
ON_CHANGE_CHECKS: Rule = parse_rule({"kind": "every", "minutes": ON_CHANGE_CHECK_MINUTES})
"""The check cadence of :data:`ON_CHANGE`: its slots are these elapsed checks."""

POLICY_KINDS = (
    "immediate",
    "at",
    "after",
    "every",
    "daily",
    "weekdays",
    "times",
    "monthly",
    "cron",
    "calendars",
    ON_CHANGE,
)
ONE_SHOT_KINDS = frozenset({"immediate", "at", "after"})


def parse_policy(data: object) -> tuple[Rule, bool]:
    """The ``policy`` field as a calendar rule of one of :data:`POLICY_KINDS`, and whether
    it is the event-only :data:`ON_CHANGE` (then the rule is its check cadence)."""
    if not isinstance(data, Mapping):
        raise fail("policy", "must be a JSON object with a 'kind'")
    if data.get("kind") not in POLICY_KINDS:
        raise fail(
            "policy.kind",
            f"unknown policy kind {data.get('kind')!r}; expected one of {', '.join(POLICY_KINDS)}",
        )
    if data["kind"] == ON_CHANGE:
        json_object(data, "policy", ("kind",))
        return ON_CHANGE_CHECKS, True
    try:
        rule = parse_rule(data)
    except InvalidInput as exc:
        # Every civil error (an unknown zone and impossible local times included, not
        # only InvalidRule) is renamed under ``policy.``, keeping its class and code.
        inner = exc.field or ""
        name = f"policy.{inner}" if inner else "policy"
        raise type(exc)(f"policy.{exc.message}", field=name) from None
    return rule, False
