"""A schedule's configuration: what Configure edits, parsed strictly and sized.

The JSON form (camelCase keys, every field named in errors, unknown fields refused)::

    {"title": "Nightly build", "objective": "...", "notes": "...",
     "profile": {"command": ["make", "nightly"], "env": {"CI": "1"}, "cwd": ".",
                 "agent": "claude" | null},
     "template": [{"title": "Check logs", "children": [...]}] | null,
     "policy": {"kind": "daily", "time": "02:00", "zone": "Europe/Berlin"},
     "condition": null | {"kind": "files", "paths": ["src"]},
     "end": {"until": {"local": "...", "zone": "..."} | null,
             "within": {"minutes" | "hours" | "days": n} | null,
             "maxPassages": n | null},
     "restart": "resume" | "interrupt",
     "watch": ["<conversation ID>", ...]}

Only ``title``, ``profile`` and ``policy`` are required; a profile naming an agent preset
may leave out its command (:mod:`kalends.missions.agents`). The stored form adds
``"v": 1``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any
from uuid import UUID

from kalends.civil import Immediate, Rule, rule_to_json
from kalends.errors import InvalidInput, TooLarge
from kalends.missions.config_condition import CONDITION_KINDS, Condition, parse_condition
from kalends.missions.config_end import EndBounds, parse_end
from kalends.missions.config_fields import fail, json_object, require_unicode, text_field
from kalends.missions.config_policy import ON_CHANGE, ONE_SHOT_KINDS, POLICY_KINDS, parse_policy
from kalends.missions.config_profile import Profile, parse_profile
from kalends.missions.config_template import TemplateItem, parse_template
from kalends.missions.limits import (
    MAX_CONFIG_BYTES,
    MAX_INSTRUCTION_CHARS,
    MAX_REMEMBERED_CONVERSATIONS,
    MAX_STORED_TITLE,
    MAX_TITLE,
)

__all__ = [
    "CONDITION_KINDS",
    "CONFIG_VERSION",
    "ONE_SHOT_KINDS",
    "POLICY_KINDS",
    "Condition",
    "Config",
    "EndBounds",
    "Profile",
    "Restart",
    "TemplateItem",
    "config_from_json",
    "config_to_json",
    "dump_config",
    "load_config",
]

CONFIG_VERSION = 1


class Restart(StrEnum):
    """What a restart does to a running schedule (SPEC §4 decision on restart)."""

    RESUME = "resume"
    INTERRUPT = "interrupt"


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """Everything Configure edits."""

    title: str
    objective: str = ""
    notes: str = ""
    profile: Profile
    template: tuple[TemplateItem, ...] | None = None
    policy: Rule
    condition: Condition | None = None
    on_change: bool = False
    """The event-only ``on-change`` policy: ``policy`` is then its 15-minute check cadence."""
    end: EndBounds = field(default_factory=EndBounds)
    restart: Restart = Restart.RESUME
    watch: tuple[str, ...] = ()
    """The conversations each passage is handed the new messages of, in order (their IDs)."""

    @property
    def one_shot(self) -> bool:
        return self.policy.kind in ONE_SHOT_KINDS

    @property
    def kind(self) -> str:
        """``one-time`` for an immediate policy, ``schedule`` for calendar-owned ones."""
        return "one-time" if isinstance(self.policy, Immediate) else "schedule"

    def timing_key(self) -> tuple[Any, ...]:
        """What decides slots: a change here starts a new temporal generation."""
        return (self.policy_json(), self.end.timing_key())

    def policy_json(self) -> dict[str, Any]:
        """The ``policy`` field as callers give it."""
        return {"kind": ON_CHANGE} if self.on_change else rule_to_json(self.policy)

    def with_instructions(self, objective: str, notes: str) -> Config:
        return replace(self, objective=objective, notes=notes)


def parse_watch(value: object) -> tuple[str, ...]:
    """The ``watch`` field: the IDs of the conversations each passage is handed the new
    messages of, in order; at most :data:`MAX_REMEMBERED_CONVERSATIONS`, each once.
    (Whether each is a conversation of the schedule's workspace, and the ceiling with the
    cursors the schedule keeps, are checked against the database:
    :func:`~kalends.missions.watching.check_watch`.)"""
    if not isinstance(value, list):
        raise fail("watch", "must be a list of conversation IDs")
    if len(value) > MAX_REMEMBERED_CONVERSATIONS:
        raise fail(
            "watch",
            f"at most {MAX_REMEMBERED_CONVERSATIONS} conversations, got {len(value)}",
        )
    found: list[str] = []
    for i, item in enumerate(value):
        try:
            parsed = str(UUID(item)) if isinstance(item, str) and len(item) == 36 else None
        except ValueError:
            parsed = None
        if parsed is None:
            raise fail(f"watch[{i}]", f"must be a conversation ID, got {item!r}"[:200])
        if parsed in found:
            raise fail(f"watch[{i}]", "lists a conversation twice")
        found.append(parsed)
    return tuple(found)


def _title(value: object, *, new: bool) -> str:
    text = text_field(value, "title", MAX_TITLE if new else MAX_STORED_TITLE, low=1)
    if not text.strip():
        raise fail("title", "must not be blank")
    return text


_FIELDS = (
    "title",
    "objective",
    "notes",
    "profile",
    "template",
    "policy",
    "condition",
    "end",
    "restart",
    "watch",
)


def config_from_json(
    data: object,
    *,
    new: bool = True,
    stored_profile: bool = False,
    stored_condition: bool | None = None,
) -> Config:
    """Parse a configuration given by a caller (``new``) or read back from storage.
    ``stored_profile``: the profile is the stored one, unchanged (see
    :func:`~kalends.missions.config_profile.parse_profile`); ``stored_condition``: so is
    the condition (default: unless ``new``; see
    :func:`~kalends.missions.config_condition.parse_condition`)."""
    condition_given = new if stored_condition is None else not stored_condition
    if new:
        require_unicode(data, "config")
    obj = json_object(data, "", (*_FIELDS, "v") if not new else _FIELDS)
    for required in ("title", "profile", "policy"):
        if required not in obj:
            raise fail(required, "is required")
    objective = text_field(obj.get("objective", ""), "objective", MAX_INSTRUCTION_CHARS)
    notes = text_field(obj.get("notes", ""), "notes", MAX_INSTRUCTION_CHARS)
    if len(objective) + len(notes) > MAX_INSTRUCTION_CHARS:
        raise fail(
            "notes", f"objective and notes together exceed {MAX_INSTRUCTION_CHARS} characters"
        )
    policy, on_change = parse_policy(obj["policy"])
    condition = parse_condition(obj.get("condition"), given=condition_given)
    if isinstance(policy, Immediate) and condition is not None and new:
        raise fail(
            "condition",
            "an immediate schedule launches at its first Play, the instant its condition's "
            "baseline is taken, so the condition could never hold; use at or after",
        )
    if on_change and condition is None:
        raise fail(
            "condition",
            "the on-change policy launches when a source condition holds: give a condition",
        )
    restart = obj.get("restart", "resume")
    if restart not in ("resume", "interrupt"):
        raise fail("restart", f"must be 'resume' or 'interrupt', got {restart!r}")
    return Config(
        title=_title(obj["title"], new=new),
        objective=objective,
        notes=notes,
        profile=parse_profile(obj["profile"], stored=stored_profile),
        template=parse_template(obj.get("template")),
        policy=policy,
        condition=condition,
        on_change=on_change,
        end=parse_end(obj.get("end")),
        restart=Restart(restart),
        watch=parse_watch(obj.get("watch", [])),
    )


def config_to_json(config: Config) -> dict[str, Any]:
    """The caller-facing JSON form; ``config_from_json(config_to_json(c)) == c``."""
    return {
        "title": config.title,
        "objective": config.objective,
        "notes": config.notes,
        "profile": config.profile.to_json(),
        "template": None
        if config.template is None
        else [item.to_json() for item in config.template],
        "policy": config.policy_json(),
        "condition": None if config.condition is None else config.condition.to_json(),
        "end": config.end.to_json(),
        "restart": config.restart.value,
        "watch": list(config.watch),
    }


def dump_config(config: Config) -> str:
    """The stored text of a configuration; refuses one over the 64 KiB ceiling."""
    text = json.dumps(
        {"v": CONFIG_VERSION, **config_to_json(config)}, ensure_ascii=False, separators=(",", ":")
    )
    size = len(text.encode())
    if size > MAX_CONFIG_BYTES:
        raise TooLarge(
            f"configuration: {size} bytes is over the {MAX_CONFIG_BYTES}-byte ceiling; "
            "nothing was written",
            field="config",
            size=size,
            limit=MAX_CONFIG_BYTES,
        )
    return text


def load_config(text: str) -> Config:
    """A stored configuration; raises :class:`InvalidInput` when it does not parse."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("v") != CONFIG_VERSION:
        raise InvalidInput(f"configuration: unknown version {data.get('v')!r}", field="config")
    return config_from_json(data, new=False, stored_profile=True)
