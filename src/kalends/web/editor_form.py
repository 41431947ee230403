"""The editor's form and a schedule's configuration JSON, each made from the other.

Pure: no request, no service, no clock. A form is a flat dictionary of the fields the
editor posts (:func:`from_form` reads them from the posted pairs); :func:`to_config` makes
the configuration JSON of :mod:`kalends.missions.config` of it, with the mistakes that
need no service (a number that is not one, an environment line without ``=``), and
:func:`from_config` lays out a configuration, or a schedule's detail, as that form.

A rule or condition the form cannot show exactly (a DST gap policy, a day interval,
calendars in several zones, the on-change policy) is kept as its JSON: shown read-only,
sent back unchanged, never lost. :func:`form_field` names the
form field a service's error belongs to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kalends.civil import MAX_CALENDARS

__all__ = [
    "CALENDAR_KINDS",
    "CONDITIONS",
    "FREQUENCIES",
    "MAX_EXTRA_CALENDARS",
    "WEEKDAYS",
    "FieldError",
    "blank",
    "calendar_row",
    "form_field",
    "from_config",
    "from_form",
    "to_config",
]

FREQUENCIES: tuple[tuple[str, str], ...] = (
    ("immediate", "Once, at the first Play"),
    ("at", "Once, at a date and time"),
    ("after", "Once, after a delay"),
    ("every", "Every interval"),
    ("daily", "Every day"),
    ("weekdays", "On chosen weekdays"),
    ("times", "Several times a day"),
    ("monthly", "On a day of each month"),
    ("cron", "Advanced (cron expression)"),
)
CALENDAR_KINDS: tuple[str, ...] = ("daily", "weekdays", "times", "monthly", "cron")
CONDITIONS: tuple[tuple[str, str], ...] = (
    ("", "None: every slot launches"),
    ("git-branch", "New commits on a git branch"),
    ("files", "Changed files"),
    ("schedule-succeeded", "Another schedule succeeded"),
    ("mission-completed", "A one-time schedule completed"),
    ("conversation", "New messages in followed conversations"),
)
WEEKDAYS: tuple[tuple[int, str], ...] = (
    (1, "Monday"),
    (2, "Tuesday"),
    (3, "Wednesday"),
    (4, "Thursday"),
    (5, "Friday"),
    (6, "Saturday"),
    (7, "Sunday"),
)
ELAPSED_UNITS = ("minutes", "hours")
WITHIN_UNITS = ("minutes", "hours", "days")
MAX_EXTRA_CALENDARS = MAX_CALENDARS - 1
"""Calendars after the first (the chosen frequency's own)."""

_KINDS = {kind for kind, _ in FREQUENCIES}
_CONDITION_KINDS = {kind for kind, _ in CONDITIONS if kind}
_ROW_FIELDS = ("kind", "time", "days", "times", "day", "expression")
_TIME_SPLIT = re.compile(r"[\s,;]+")
_DAY_VALUES = {str(day) for day, _ in WEEKDAYS}


@dataclass(frozen=True, slots=True)
class FieldError:
    """A mistake in the form: the field it belongs to (``None``: the form as a whole)."""

    field: str | None
    message: str


def calendar_row(kind: str = "daily") -> dict[str, Any]:
    """An extra calendar's fields, empty."""
    return {"kind": kind, "time": "", "days": [], "times": "", "day": "", "expression": ""}


def blank(zone: str = "UTC") -> dict[str, Any]:
    """A new schedule's form: every field, empty or at its default."""
    return {
        "title": "",
        "objective": "",
        "notes": "",
        "frequency": "daily",
        "zone": zone,
        "at_local": "",
        "after_amount": "",
        "after_unit": "minutes",
        "every_amount": "",
        "every_unit": "minutes",
        "daily_time": "",
        "weekdays_days": [],
        "weekdays_time": "",
        "times_list": "",
        "monthly_day": "",
        "monthly_time": "",
        "cron_expression": "",
        "calendars": [],
        "policy_json": "",
        "policy_replace": False,
        "end_until_local": "",
        "end_until_zone": "",
        "end_within_amount": "",
        "end_within_unit": "hours",
        "end_max": "",
        "condition_kind": "",
        "cond_branch": "",
        "cond_path": ".",
        "cond_paths": "",
        "cond_mission": "",
        "cond_conversations": "",
        "condition_json": "",
        "condition_replace": False,
        "restart": "resume",
        "watch": "",
        "command": "",
        "cwd": ".",
        "env": "",
        "env_names": [],
        "env_replace": False,
    }


# --- the posted form -----------------------------------------------------------------------------

_LISTS = {"weekdays_days", "env_names"}
_FLAGS = {"policy_replace", "condition_replace", "env_replace"}


def from_form(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The form's fields from the posted ``(name, value)`` pairs; names it does not know are
    ignored, missing ones take their defaults. Extra calendars are ``cal1_kind`` …
    ``cal7_expression`` (``cal{i}_days`` repeated), the first ``cal_count`` of them."""
    fields = blank()
    fields["zone"] = ""
    posted: dict[str, list[str]] = {}
    for name, value in pairs:
        posted.setdefault(name, []).append(value.replace("\r\n", "\n"))
    for name in fields:
        if name in _LISTS:
            fields[name] = list(posted.get(name, []))
        elif name in _FLAGS:
            fields[name] = bool(posted.get(name))
        elif name in posted and name != "calendars":
            fields[name] = posted[name][-1]
    count = _whole(posted.get("cal_count", ["0"])[-1]) or 0
    rows = []
    for i in range(1, min(count, MAX_EXTRA_CALENDARS) + 1):
        row = calendar_row()
        for key in _ROW_FIELDS:
            values = posted.get(f"cal{i}_{key}", [])
            row[key] = list(values) if key == "days" else (values[-1] if values else row[key])
        rows.append(row)
    fields["calendars"] = rows
    return fields


def _whole(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() and len(text) <= 12 else None


# --- form → configuration -------------------------------------------------------------------


class _Build:
    """Collects the mistakes found while a configuration is made of a form."""

    def __init__(self, fields: Mapping[str, Any]) -> None:
        self.fields = fields
        self.errors: list[FieldError] = []

    def text(self, name: str) -> str:
        value = self.fields.get(name, "")
        return value if isinstance(value, str) else ""

    def number(self, name: str, what: str) -> int | str:
        """A whole number; a mistake (and the text, for the service to refuse) otherwise."""
        text = self.text(name).strip()
        found = _whole(text)
        if found is None:
            said = "is required" if not text else f"must be a whole number, got {text!r}"
            self.errors.append(FieldError(name, f"{what}: {said}"))
            return text
        return found


def _local(text: str) -> str:
    """A ``datetime-local`` value as the configuration writes wall times (with seconds)."""
    text = text.strip()
    return text + ":00" if re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d", text) else text


def _times(text: str) -> list[str]:
    return [t for t in _TIME_SPLIT.split(text.strip()) if t]


def _days(values: Iterable[object]) -> list[int]:
    return sorted({int(v) for v in values if isinstance(v, str) and v.strip() in _DAY_VALUES})


def _calendar(
    kind: str, get: Mapping[str, Any], zone: str, b: _Build, prefix: str
) -> dict[str, Any]:
    """One calendar rule of ``kind`` from its fields (``get``: ``time``, ``days`` …)."""
    match kind:
        case "daily":
            return {"kind": "daily", "time": str(get["time"]).strip(), "zone": zone}
        case "weekdays":
            return {
                "kind": "weekdays",
                "days": _days(get["days"]),
                "time": str(get["time"]).strip(),
                "zone": zone,
            }
        case "times":
            return {"kind": "times", "times": _times(str(get["times"])), "zone": zone}
        case "monthly":
            day = _whole(str(get["day"]))
            if day is None:
                b.errors.append(FieldError(f"{prefix}day", "Day of the month: a whole number 1-31"))
            return {
                "kind": "monthly",
                "day": str(get["day"]) if day is None else day,
                "time": str(get["time"]).strip(),
                "zone": zone,
            }
        case _:
            return {"kind": "cron", "expression": str(get["expression"]).strip(), "zone": zone}


def _main_row(fields: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The chosen calendar frequency's own fields, named as an extra calendar's."""
    return {
        "time": fields.get(f"{kind}_time", ""),
        "days": fields.get("weekdays_days", []),
        "times": fields.get("times_list", ""),
        "day": fields.get("monthly_day", ""),
        "expression": fields.get("cron_expression", ""),
    }


def _policy(b: _Build) -> dict[str, Any] | None:
    """The policy of the form; ``None`` when a kept rule stays as it is."""
    f = b.fields
    if b.text("policy_json") and not f.get("policy_replace"):
        return None
    kind = b.text("frequency")
    zone = b.text("zone").strip()
    extras = [r for r in f.get("calendars") or [] if isinstance(r, Mapping)]
    if kind not in _KINDS:
        b.errors.append(FieldError("frequency", "Frequency: choose one"))
        return {"kind": kind}
    if extras and kind not in CALENDAR_KINDS:
        b.errors.append(
            FieldError(
                "calendars",
                "Calendars: only daily, weekday, several-times, monthly and cron frequencies "
                "combine; remove the extra calendars or choose one of those",
            )
        )
    match kind:
        case "immediate":
            return {"kind": "immediate"}
        case "at":
            return {"kind": "at", "local": _local(b.text("at_local")), "zone": zone}
        case "after" | "every":
            unit = b.text(f"{kind}_unit")
            unit = unit if unit in ELAPSED_UNITS else "minutes"
            what = "Delay" if kind == "after" else "Interval"
            return {"kind": kind, unit: b.number(f"{kind}_amount", what)}
    first = _calendar(kind, _main_row(f, kind), zone, b, "monthly_")
    if not extras:
        return first
    rules = [first]
    for i, row in enumerate(extras, start=1):
        row_kind = str(row.get("kind"))
        row_kind = row_kind if row_kind in CALENDAR_KINDS else "daily"
        rules.append(_calendar(row_kind, {**calendar_row(), **row}, zone, b, f"cal{i}_"))
    return {"kind": "calendars", "calendars": rules}


def _end(b: _Build) -> dict[str, Any]:
    until = None
    if b.text("end_until_local").strip():
        zone = b.text("end_until_zone").strip() or b.text("zone").strip()
        until = {"local": _local(b.text("end_until_local")), "zone": zone}
    within = None
    if b.text("end_within_amount").strip():
        unit = b.text("end_within_unit")
        unit = unit if unit in WITHIN_UNITS else "hours"
        within = {unit: b.number("end_within_amount", "Ends within")}
    most = b.number("end_max", "Passages at most") if b.text("end_max").strip() else None
    return {"until": until, "within": within, "maxPassages": most}


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


def _condition(b: _Build) -> dict[str, Any] | bool | None:
    """The condition of the form; ``False`` when a kept condition stays as it is."""
    if b.text("condition_json") and not b.fields.get("condition_replace"):
        return False
    kind = b.text("condition_kind")
    match kind:
        case "":
            return None
        case "git-branch":
            path = b.text("cond_path").strip() or "."
            return {"kind": kind, "branch": b.text("cond_branch").strip(), "path": path}
        case "files":
            return {"kind": kind, "paths": _lines(b.text("cond_paths"))}
        case "schedule-succeeded" | "mission-completed":
            return {"kind": kind, "missionId": b.text("cond_mission").strip()}
        case "conversation":
            return {"kind": kind, "conversationIds": _lines(b.text("cond_conversations"))}
    b.errors.append(FieldError("condition_kind", "Condition: choose one"))
    return None


def _command(text: str) -> list[str]:
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return lines


def _profile(b: _Build) -> dict[str, Any]:
    profile: dict[str, Any] = {
        "command": _command(b.text("command")),
        "cwd": b.text("cwd").strip() or ".",
    }
    if b.fields.get("env_names") and not b.fields.get("env_replace"):
        return profile  # the saved environment is kept (its values are never shown)
    env: dict[str, str] = {}
    for line in b.text("env").split("\n"):
        if not line.strip():
            continue
        name, eq, value = line.partition("=")
        if not eq or not name.strip():
            b.errors.append(FieldError("env", f"Environment: {line.strip()!r} is not NAME=VALUE"))
            continue
        env[name.strip()] = value
    profile["env"] = env
    return profile


def to_config(fields: Mapping[str, Any]) -> tuple[dict[str, Any], list[FieldError]]:
    """The configuration JSON the form says, and the mistakes found making it (the service
    finds the others). A rule or condition kept as its JSON is left out unless the form
    replaces it; so is the environment while it is kept."""
    b = _Build(fields)
    config: dict[str, Any] = {
        "title": b.text("title"),
        "objective": b.text("objective"),
        "notes": b.text("notes"),
        "profile": _profile(b),
    }
    policy = _policy(b)
    if policy is not None:
        config["policy"] = policy
    config["end"] = _end(b)
    condition = _condition(b)
    if condition is not False:
        config["condition"] = condition
    restart = b.text("restart")
    config["restart"] = restart if restart in ("resume", "interrupt") else "resume"
    config["watch"] = _lines(b.text("watch"))
    return config, b.errors


# --- configuration → form -------------------------------------------------------------------


def _wall_input(local: str) -> str:
    """A configuration's wall time as a ``datetime-local`` value (seconds dropped at 00)."""
    return local[:16] if len(local) == 19 and local.endswith(":00") else local


def _calendar_fields(rule: Mapping[str, Any]) -> dict[str, Any]:
    row = calendar_row(str(rule.get("kind")))
    row["time"] = str(rule.get("time", ""))
    row["days"] = [str(d) for d in rule.get("days", [])]
    row["times"] = ", ".join(str(t) for t in rule.get("times", []))
    row["day"] = str(rule.get("day", ""))
    row["expression"] = str(rule.get("expression", ""))
    return row


def _policy_fields(policy: Mapping[str, Any], fields: dict[str, Any]) -> bool:
    """Lays ``policy`` out in ``fields``; whether the form shows it exactly."""
    kind = policy.get("kind")
    rules = policy.get("calendars") if kind == "calendars" else [policy]
    if not isinstance(rules, list) or not rules or len(rules) > MAX_CALENDARS:
        return False
    first = rules[0]
    if not isinstance(first, Mapping):
        return False
    kind = first.get("kind")
    if kind not in _KINDS or (len(rules) > 1 and kind not in CALENDAR_KINDS):
        return False
    fields["frequency"] = kind
    fields["zone"] = str(first.get("zone") or fields["zone"])
    if kind == "at":
        fields["at_local"] = _wall_input(str(first.get("local", "")))
    elif kind in ("after", "every"):
        unit = "hours" if "hours" in first else "minutes"
        fields[f"{kind}_unit"] = unit
        fields[f"{kind}_amount"] = str(first.get(unit, ""))
    elif kind in CALENDAR_KINDS:
        row = _calendar_fields(first)
        fields[f"{kind}_time"] = row["time"]
        fields["weekdays_days"] = row["days"] if kind == "weekdays" else []
        fields["times_list"] = row["times"]
        fields["monthly_day"] = row["day"]
        fields["cron_expression"] = row["expression"]
    fields["calendars"] = [
        _calendar_fields(r) if isinstance(r, Mapping) else calendar_row() for r in rules[1:]
    ]
    return True


def _zone_of(policy: Mapping[str, Any]) -> str | None:
    """The zone a rule names, or its first calendar's."""
    if isinstance(policy.get("zone"), str):
        return str(policy["zone"])
    rules = policy.get("calendars")
    if isinstance(rules, list) and rules and isinstance(rules[0], Mapping):
        found = rules[0].get("zone")
        return found if isinstance(found, str) else None
    return None


def _condition_fields(condition: Mapping[str, Any], fields: dict[str, Any]) -> None:
    kind = str(condition.get("kind"))
    fields["condition_kind"] = kind
    fields["cond_branch"] = str(condition.get("branch", ""))
    fields["cond_path"] = str(condition.get("path", "."))
    fields["cond_paths"] = "\n".join(str(p) for p in condition.get("paths", []))
    fields["cond_mission"] = str(condition.get("missionId", ""))
    fields["cond_conversations"] = "\n".join(str(c) for c in condition.get("conversationIds", []))


def _same(made: object, given: object) -> bool:
    return json.dumps(made, sort_keys=True) == json.dumps(given, sort_keys=True)


def from_config(config: Mapping[str, Any], *, zone: str = "UTC") -> dict[str, Any]:
    """The form of a configuration JSON, or of a schedule's detail (whose profile names
    the environment's variables only, kept as they are). A rule or condition the form
    cannot show exactly is kept as its JSON (``policy_json``, ``condition_json``)."""
    fields = blank(zone)
    for name in ("title", "objective", "notes"):
        fields[name] = str(config.get(name) or "")
    policy = config.get("policy")
    if isinstance(policy, Mapping):
        laid = dict(fields)
        shown = _policy_fields(policy, laid)
        if shown and _same(to_config(laid)[0].get("policy"), policy):
            fields = laid
        else:
            fields["policy_json"] = json.dumps(policy, indent=2, sort_keys=True)
            fields["zone"] = _zone_of(policy) or zone
    end = config.get("end") or {}
    until = end.get("until") or {}
    fields["end_until_local"] = _wall_input(str(until.get("local", "")))
    fields["end_until_zone"] = str(until.get("zone", ""))
    within = end.get("within") or {}
    for unit in WITHIN_UNITS:
        if unit in within:
            fields["end_within_unit"] = unit
            fields["end_within_amount"] = str(within[unit])
    if end.get("maxPassages") is not None:
        fields["end_max"] = str(end["maxPassages"])
    condition = config.get("condition")
    if isinstance(condition, Mapping):
        _condition_fields(condition, fields)
        made, _ = to_config(fields)
        if condition.get("kind") not in _CONDITION_KINDS or not _same(
            made.get("condition"), condition
        ):
            fields["condition_kind"] = ""
            fields["condition_json"] = json.dumps(condition, indent=2, sort_keys=True)
    fields["restart"] = str(config.get("restart") or "resume")
    fields["watch"] = "\n".join(str(c) for c in config.get("watch") or [])
    profile = config.get("profile") or {}
    fields["command"] = "\n".join(str(a) for a in profile.get("command", []))
    fields["cwd"] = str(profile.get("cwd", "."))
    if "envNames" in profile:
        fields["env_names"] = [str(n) for n in profile["envNames"]]
    else:
        env = profile.get("env") or {}
        fields["env"] = "\n".join(f"{k}={v}" for k, v in env.items())
    return fields


# --- the service's errors -------------------------------------------------------------------

_POLICY_PARTS = {
    "time": "{kind}_time",
    "days": "weekdays_days",
    "times": "times_list",
    "day": "monthly_day",
    "expression": "cron_expression",
    "zone": "zone",
    "local": "at_local",
    "minutes": "{kind}_amount",
    "hours": "{kind}_amount",
    "kind": "frequency",
}
_OTHERS = {
    "title": "title",
    "objective": "objective",
    "notes": "notes",
    "restart": "restart",
    "watch": "watch",
    "end.until": "end_until_local",
    "end.within": "end_within_amount",
    "end.maxPassages": "end_max",
    "end": "end_until_local",
    "condition.kind": "condition_kind",
    "condition.branch": "cond_branch",
    "condition.path": "cond_path",
    "condition.paths": "cond_paths",
    "condition.missionId": "cond_mission",
    "condition.conversationIds": "cond_conversations",
    "condition": "condition_kind",
    "profile.command": "command",
    "profile.env": "env",
    "profile.cwd": "cwd",
    "profile": "command",
}
_PART = re.compile(r"^policy(?:\.calendars\[(\d+)\])?(?:\.([A-Za-z_]+))?")


def form_field(service_field: object, fields: Mapping[str, Any]) -> str | None:
    """The form field a service's error names (``policy.calendars[2].time`` →
    ``cal2_time``); ``None`` when it belongs to no one field."""
    if not isinstance(service_field, str):
        return None
    name = service_field.removeprefix("config.").removeprefix("changes.")
    if name.startswith("policy"):
        if fields.get("policy_json") and not fields.get("policy_replace"):
            return "policy_json"
        found = _PART.match(name)
        assert found is not None
        index, part = found.group(1), found.group(2)
        if index is not None and int(index) > 0:
            return f"cal{index}_{part}" if part in _ROW_FIELDS else f"cal{index}_kind"
        if index is None and part == "calendars":
            return "calendars"
        kind = str(fields.get("frequency", ""))
        return _POLICY_PARTS.get(part or "kind", "frequency").format(kind=kind)
    for prefix in sorted(_OTHERS, key=len, reverse=True):
        if name == prefix or name.startswith((prefix + ".", prefix + "[")):
            return _OTHERS[prefix]
    return None
