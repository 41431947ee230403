"""A schedule's policy: which calendar rule kinds a configuration may name, parsed by
:mod:`kalends.civil` with every error renamed under ``policy.``."""

from __future__ import annotations

from collections.abc import Mapping

from kalends.civil import Rule, parse_rule
from kalends.errors import InvalidInput
from kalends.missions.config_fields import fail

__all__ = ["ONE_SHOT_KINDS", "POLICY_KINDS", "parse_policy"]

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
)
ONE_SHOT_KINDS = frozenset({"immediate", "at", "after"})


def parse_policy(data: object) -> Rule:
    """The ``policy`` field as a calendar rule of one of :data:`POLICY_KINDS`."""
    if not isinstance(data, Mapping):
        raise fail("policy", "must be a JSON object with a 'kind'")
    if data.get("kind") not in POLICY_KINDS:
        raise fail(
            "policy.kind",
            f"unknown policy kind {data.get('kind')!r}; expected one of {', '.join(POLICY_KINDS)}",
        )
    try:
        rule = parse_rule(data)
    except InvalidInput as exc:
        # Every civil error (an unknown zone and impossible local times included, not
        # only InvalidRule) is renamed under ``policy.``, keeping its class and code.
        inner = exc.field or ""
        name = f"policy.{inner}" if inner else "policy"
        raise type(exc)(f"policy.{exc.message}", field=name) from None
    return rule
