"""A schedule's configuration: what Configure edits, parsed strictly and sized.

The JSON form (camelCase keys, every field named in errors, unknown fields refused)::

    {"title": "Nightly build", "objective": "...", "notes": "...",
     "profile": {"command": ["make", "nightly"], "env": {"CI": "1"}, "cwd": "."},
     "template": [{"title": "Check logs", "children": [...]}] | null,
     "policy": {"kind": "daily", "time": "02:00", "zone": "Europe/Berlin"},
     "condition": null | {"kind": "files", "paths": ["src"]},
     "end": {"until": {"local": "...", "zone": "..."} | null,
             "within": {"minutes" | "hours" | "days": n} | null,
             "maxPassages": n | null},
     "restart": "resume" | "interrupt"}

Only ``title``, ``profile`` and ``policy`` are required. The stored form adds
``"v": 1``.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from kalends.civil import (
    Immediate,
    Rule,
    format_local,
    parse_local_datetime,
    parse_rule,
    resolve_user_local,
    rule_to_json,
)
from kalends.errors import InvalidInput, TooLarge
from kalends.missions.limits import (
    MAX_ARG_CHARS,
    MAX_COMMAND_ARGS,
    MAX_CONDITION_ITEMS,
    MAX_CONFIG_BYTES,
    MAX_ENV_VALUE_CHARS,
    MAX_ENV_VARS,
    MAX_INSTRUCTION_CHARS,
    MAX_STORED_TITLE,
    MAX_TEMPLATE_ITEMS,
    MAX_TITLE,
    MAX_WITHIN,
)
from kalends.missions.runtime.isolation import REFUSED_PREFIXES

__all__ = [
    "CONFIG_VERSION",
    "ONE_SHOT_KINDS",
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
CONDITION_KINDS = ("schedule-succeeded", "mission-completed", "git-branch", "conversation", "files")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_BRANCH = re.compile(r"[A-Za-z0-9._/-]{1,200}")
_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_WITHIN_UNITS = {"minutes": 60, "hours": 3600, "days": 86_400}


class Restart(StrEnum):
    """What a restart does to a running schedule (SPEC §4 decision on restart)."""

    RESUME = "resume"
    INTERRUPT = "interrupt"


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """How the process runtime starts a passage: frozen into each passage at admission."""

    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = "."

    def to_json(self) -> dict[str, Any]:
        return {"command": list(self.command), "env": dict(self.env), "cwd": self.cwd}

    def public(self) -> dict[str, Any]:
        """What reads show: the command and directory, the environment's names only."""
        return {
            "command": list(self.command),
            "envNames": [k for k, _ in self.env],
            "cwd": self.cwd,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TemplateItem:
    """One checklist item a passage starts with, and its own items."""

    title: str
    children: tuple[TemplateItem, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title}
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """A source condition (seed 002, the five source conditions): stored and validated."""

    kind: str
    spec: tuple[tuple[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for key, value in self.spec:
            out[key] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class EndBounds:
    """The three combinable end bounds: absolute last slot, elapsed end, passage quota."""

    until_local: datetime | None = None
    until_zone: str | None = None
    until: datetime | None = None  # the instant of until_local in until_zone
    within: timedelta | None = None
    within_json: tuple[str, int] | None = None
    max_passages: int | None = None

    @property
    def empty(self) -> bool:
        return self.until is None and self.within is None and self.max_passages is None

    def timing_key(self) -> tuple[Any, ...]:
        return (self.until_local, self.until_zone, self.within)

    def to_json(self) -> dict[str, Any]:
        until = (
            None
            if self.until_local is None
            else {"local": format_local(self.until_local), "zone": self.until_zone}
        )
        within = None if self.within_json is None else {self.within_json[0]: self.within_json[1]}
        return {"until": until, "within": within, "maxPassages": self.max_passages}


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
    end: EndBounds = field(default_factory=EndBounds)
    restart: Restart = Restart.RESUME

    @property
    def one_shot(self) -> bool:
        return self.policy.kind in ONE_SHOT_KINDS

    @property
    def kind(self) -> str:
        """``one-time`` for an immediate policy, ``schedule`` for calendar-owned ones."""
        return "one-time" if isinstance(self.policy, Immediate) else "schedule"

    def timing_key(self) -> tuple[Any, ...]:
        """What decides slots: a change here starts a new temporal generation."""
        return (rule_to_json(self.policy), self.end.timing_key())

    def with_instructions(self, objective: str, notes: str) -> Config:
        return replace(self, objective=objective, notes=notes)


def _fail(name: str, reason: str) -> InvalidInput:
    return InvalidInput(f"{name}: {reason}", field=name)


def _object(data: object, name: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise _fail(name, "must be a JSON object")
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise _fail(f"{name}.{extra[0]}" if name else extra[0], "is not a known field")
    return data


def _text(value: object, name: str, high: int, *, low: int = 0) -> str:
    if not isinstance(value, str):
        raise _fail(name, f"must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise _fail(name, "must not contain NUL characters")
    if len(value) < low or len(value) > high:
        if low:
            raise _fail(name, f"must be {low}-{high} characters, got {len(value)}")
        raise _fail(name, f"must be at most {high} characters, got {len(value)}")
    return value


def _int(value: object, name: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(name, f"must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise _fail(name, f"must be between {low} and {high}, got {value}")
    return value


def _title(value: object, *, new: bool) -> str:
    text = _text(value, "title", MAX_TITLE if new else MAX_STORED_TITLE, low=1)
    if not text.strip():
        raise _fail("title", "must not be blank")
    return text


def _profile(data: object, *, stored: bool) -> Profile:
    """``stored``: read back from storage, where names refused since are kept as stored
    (so the document still reads, and can be edited or deleted)."""
    obj = _object(data, "profile", ("command", "env", "cwd"))
    if "command" not in obj:
        raise _fail("profile.command", "is required: the program and its arguments")
    command = obj["command"]
    if not isinstance(command, list) or not command:
        raise _fail("profile.command", "must be a non-empty list of strings")
    if len(command) > MAX_COMMAND_ARGS:
        raise _fail("profile.command", f"at most {MAX_COMMAND_ARGS} arguments, got {len(command)}")
    args = tuple(
        _text(a, f"profile.command[{i}]", MAX_ARG_CHARS, low=1 if i == 0 else 0)
        for i, a in enumerate(command)
    )
    env_data = obj.get("env")
    if env_data is None:
        env_data = {}
    if not isinstance(env_data, Mapping):
        raise _fail("profile.env", "must be an object of NAME: value strings")
    if len(env_data) > MAX_ENV_VARS:
        raise _fail("profile.env", f"at most {MAX_ENV_VARS} variables, got {len(env_data)}")
    env = []
    for key in sorted(env_data):
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
            raise _fail("profile.env", f"{key!r} is not a valid variable name")
        if not stored and key.upper().startswith(REFUSED_PREFIXES):
            raise _fail(
                "profile.env",
                f"{key!r} is refused: names starting with {' or '.join(REFUSED_PREFIXES)} (in "
                "any case) change what every program of a passage loads",
            )
        env.append((key, _text(env_data[key], f"profile.env.{key}", MAX_ENV_VALUE_CHARS)))
    cwd = _cwd(obj.get("cwd", "."))
    return Profile(command=args, env=tuple(env), cwd=cwd)


def _cwd(value: object) -> str:
    text = _text(value, "profile.cwd", 1024, low=1)
    if text.startswith("/") or "\\" in text:
        raise _fail("profile.cwd", "must be a relative path inside the workspace")
    normal = posixpath.normpath(text)
    if normal == ".." or normal.startswith("../"):
        raise _fail("profile.cwd", f"{text!r} leaves the workspace")
    return normal


def _template(data: object) -> tuple[TemplateItem, ...] | None:
    if data is None:
        return None
    count = 0

    def items(value: object, name: str, depth: int) -> tuple[TemplateItem, ...]:
        nonlocal count
        if not isinstance(value, list):
            raise _fail(name, "must be a list of items")
        out = []
        for i, item in enumerate(value):
            here = f"{name}[{i}]"
            obj = _object(item, here, ("title", "children"))
            count += 1
            if count > MAX_TEMPLATE_ITEMS:
                raise _fail("template", f"at most {MAX_TEMPLATE_ITEMS} items in all")
            if depth > 8:
                raise _fail(here, "nests deeper than 8 levels")
            if "title" not in obj:
                raise _fail(f"{here}.title", "is required")
            title = _text(obj["title"], f"{here}.title", 500, low=1)
            children = items(obj.get("children", []), f"{here}.children", depth + 1)
            out.append(TemplateItem(title=title, children=children))
        return tuple(out)

    return items(data, "template", 1)


def _policy(data: object) -> Rule:
    if not isinstance(data, Mapping):
        raise _fail("policy", "must be a JSON object with a 'kind'")
    if data.get("kind") not in POLICY_KINDS:
        raise _fail(
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


def _condition(data: object) -> Condition | None:
    if data is None:
        return None
    if not isinstance(data, Mapping) or data.get("kind") not in CONDITION_KINDS:
        kind = data.get("kind") if isinstance(data, Mapping) else None
        raise _fail(
            "condition.kind",
            f"unknown condition kind {kind!r}; expected one of {', '.join(CONDITION_KINDS)}",
        )
    kind = data["kind"]
    spec: list[tuple[str, Any]] = []
    if kind in ("schedule-succeeded", "mission-completed"):
        obj = _object(data, "condition", ("kind", "missionId"))
        mission = obj.get("missionId")
        if not isinstance(mission, str) or not _ID.fullmatch(mission):
            raise _fail("condition.missionId", "must be a mission ID")
        spec.append(("missionId", mission))
    elif kind == "git-branch":
        obj = _object(data, "condition", ("kind", "branch", "path"))
        branch = obj.get("branch")
        if not isinstance(branch, str) or not _BRANCH.fullmatch(branch) or ".." in branch:
            raise _fail("condition.branch", "must be a local branch name")
        spec.append(("branch", branch))
        spec.append(("path", _relative(obj.get("path", "."), "condition.path")))
    else:
        key = "conversationIds" if kind == "conversation" else "paths"
        obj = _object(data, "condition", ("kind", key))
        values = obj.get(key)
        if not isinstance(values, list) or not values:
            raise _fail(f"condition.{key}", "must be a non-empty list")
        if len(values) > MAX_CONDITION_ITEMS:
            raise _fail(f"condition.{key}", f"at most {MAX_CONDITION_ITEMS}, got {len(values)}")
        if kind == "conversation":
            checked = []
            for i, v in enumerate(values):
                if not isinstance(v, str) or not _ID.fullmatch(v):
                    raise _fail(f"condition.{key}[{i}]", "must be a conversation ID")
                checked.append(v)
        else:
            checked = [_relative(v, f"condition.{key}[{i}]") for i, v in enumerate(values)]
        if len(set(checked)) != len(checked):
            raise _fail(f"condition.{key}", "lists an entry twice")
        spec.append((key, tuple(checked)))
    return Condition(kind=kind, spec=tuple(spec))


def _relative(value: object, name: str) -> str:
    text = _text(value, name, 1024, low=1)
    normal = posixpath.normpath(text)
    if text.startswith("/") or normal == ".." or normal.startswith("../"):
        raise _fail(name, f"{text!r} must be a path inside the workspace")
    return normal


def _end(data: object) -> EndBounds:
    if data is None:
        return EndBounds()
    obj = _object(data, "end", ("until", "within", "maxPassages"))
    until_local = until_zone = until = None
    if obj.get("until") is not None:
        u = _object(obj["until"], "end.until", ("local", "zone"))
        if "local" not in u or "zone" not in u:
            raise _fail("end.until", "needs both local and zone")
        try:
            until_local = parse_local_datetime(u["local"])
            until = resolve_user_local(until_local, u["zone"])
        except InvalidInput as exc:
            raise InvalidInput(f"end.until: {exc.message}", field="end.until") from None
        until_zone = u["zone"]
    within = within_json = None
    if obj.get("within") is not None:
        w = _object(obj["within"], "end.within", tuple(_WITHIN_UNITS))
        if len(w) != 1:
            raise _fail("end.within", "give exactly one of minutes, hours, days")
        unit, amount = next(iter(w.items()))
        limit = int(MAX_WITHIN.total_seconds()) // _WITHIN_UNITS[unit]
        value = _int(amount, f"end.within.{unit}", 1, limit)
        within = timedelta(seconds=value * _WITHIN_UNITS[unit])
        within_json = (unit, value)
    max_passages = None
    if obj.get("maxPassages") is not None:
        max_passages = _int(obj["maxPassages"], "end.maxPassages", 1, 1_000_000_000)
    return EndBounds(
        until_local=until_local,
        until_zone=until_zone,
        until=until,
        within=within,
        within_json=within_json,
        max_passages=max_passages,
    )


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
)


def _require_unicode(data: object, field: str) -> None:
    """Refuses text that cannot be stored: a lone surrogate (``"\\ud800"``) is valid in a
    JSON string but has no UTF-8 form."""
    try:
        json.dumps(data, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{field}: text must be valid Unicode (no lone surrogates)", field=field
        ) from exc
    except (TypeError, ValueError):
        return  # not JSON at all: the parser names the field


def config_from_json(data: object, *, new: bool = True, stored_profile: bool = False) -> Config:
    """Parse a configuration given by a caller (``new``) or read back from storage.
    ``stored_profile``: the profile is the stored one, unchanged (see :func:`_profile`)."""
    if new:
        _require_unicode(data, "config")
    obj = _object(data, "", (*_FIELDS, "v") if not new else _FIELDS)
    for required in ("title", "profile", "policy"):
        if required not in obj:
            raise _fail(required, "is required")
    objective = _text(obj.get("objective", ""), "objective", MAX_INSTRUCTION_CHARS)
    notes = _text(obj.get("notes", ""), "notes", MAX_INSTRUCTION_CHARS)
    if len(objective) + len(notes) > MAX_INSTRUCTION_CHARS:
        raise _fail(
            "notes", f"objective and notes together exceed {MAX_INSTRUCTION_CHARS} characters"
        )
    restart = obj.get("restart", "resume")
    if restart not in ("resume", "interrupt"):
        raise _fail("restart", f"must be 'resume' or 'interrupt', got {restart!r}")
    return Config(
        title=_title(obj["title"], new=new),
        objective=objective,
        notes=notes,
        profile=_profile(obj["profile"], stored=stored_profile),
        template=_template(obj.get("template")),
        policy=_policy(obj["policy"]),
        condition=_condition(obj.get("condition")),
        end=_end(obj.get("end")),
        restart=Restart(restart),
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
        "policy": rule_to_json(config.policy),
        "condition": None if config.condition is None else config.condition.to_json(),
        "end": config.end.to_json(),
        "restart": config.restart.value,
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
