"""The configuration flags a user gave ``create`` or ``edit``, and what they change.

:class:`FieldFlags` turns the flags into the top-level configuration fields they set
(``--daily 09:00 --zone Europe/Berlin`` is a daily policy), nested objects merged with
the configuration they change; durations, environment variables and JSON given inline,
as ``@FILE`` or on standard input are read here.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kalends.cli.schedule_views import policy_zone
from kalends.errors import InvalidInput

__all__ = ["FieldFlags", "parse_json", "read_file", "read_json", "whole"]

_DURATION = re.compile(r"(?:(?P<d>[0-9]+)d)?(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?")
_NONE = "none"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldFlags:
    """The configuration flags a user gave; ``None`` (or empty) for those not given."""

    title: str | None = None
    objective: str | None = None
    notes: str | None = None
    command: str | None = None
    args: list[str] | None = None
    agent: str | None = None
    env: list[str] | None = None
    clear_env: bool = False
    cwd: str | None = None
    policy: str | None = None
    daily: str | None = None
    every: str | None = None
    at: str | None = None
    after: str | None = None
    cron: str | None = None
    immediate: bool = False
    zone: str | None = None
    until: str | None = None
    within: str | None = None
    max_passages: str | None = None
    restart: str | None = None
    watch: list[str] | None = None

    @property
    def profile_given(self) -> bool:
        return bool(
            self.command is not None
            or self.args
            or self.agent is not None
            or self.env
            or self.clear_env
            or self.cwd
        )

    @property
    def env_given(self) -> bool:
        return bool(self.env) or self.clear_env

    def changes(self, base: Mapping[str, Any]) -> dict[str, Any]:
        """The top-level configuration fields these flags set, nested objects merged
        with ``base`` (the configuration they change)."""
        out: dict[str, Any] = {}
        for name in ("title", "objective", "notes", "restart"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.profile_given:
            out["profile"] = self._profile(base.get("profile"))
        policy = self._policy()
        if policy is not None:
            out["policy"] = policy
        zoned = (self.daily, self.at, self.cron, self.until)
        if self.zone is not None and all(flag is None for flag in zoned):
            raise InvalidInput(
                "zone: --zone goes with --daily, --at, --cron or --until", field="zone"
            )
        if self.until is not None or self.within is not None or self.max_passages is not None:
            out["end"] = self._end(base.get("end"), policy or base.get("policy"))
        if self.watch:
            if "none" in self.watch and len(self.watch) > 1:
                raise InvalidInput("watch: give conversation IDs, or none alone", field="watch")
            out["watch"] = [] if self.watch == ["none"] else list(self.watch)
        return out

    def _profile(self, base: object) -> dict[str, Any]:
        profile: dict[str, Any] = dict(base) if isinstance(base, Mapping) else {}
        if self.command is not None and self.args:
            raise InvalidInput("command: give --command or --arg, not both", field="command")
        if self.command is not None:
            try:
                profile["command"] = shlex.split(self.command)
            except ValueError as exc:
                raise InvalidInput(
                    f"command: cannot split {self.command!r}: {exc}", field="command"
                ) from None
        elif self.args:
            profile["command"] = list(self.args)
        if self.agent is not None:
            if self.agent == _NONE:
                profile["agent"] = None
            else:
                profile["agent"] = self.agent
                if self.command is None and not self.args:
                    # The preset's own command, filled in where the configuration is parsed.
                    profile.pop("command", None)
        if self.env and self.clear_env:
            raise InvalidInput("env: give --env or --clear-env, not both", field="env")
        if self.env_given:
            profile["env"] = _env(self.env or [])
        if self.cwd is not None:
            profile["cwd"] = self.cwd
        return profile

    def _policy(self) -> dict[str, Any] | None:
        given = {
            "--policy": self.policy is not None,
            "--daily": self.daily is not None,
            "--every": self.every is not None,
            "--at": self.at is not None,
            "--after": self.after is not None,
            "--cron": self.cron is not None,
            "--immediate": self.immediate,
        }
        chosen = [name for name, on in given.items() if on]
        if len(chosen) > 1:
            raise InvalidInput(
                f"policy: give one policy, got {' and '.join(chosen)}", field="policy"
            )
        if not chosen:
            return None
        if self.policy is not None:
            data = read_json(self.policy, "policy")
            if not isinstance(data, dict):
                raise InvalidInput("policy: must be a JSON object with a 'kind'", field="policy")
            return data
        if self.every is not None:
            return {"kind": "every", **_elapsed(self.every, "every")}
        if self.after is not None:
            return {"kind": "after", **_elapsed(self.after, "after")}
        if self.immediate:
            return {"kind": "immediate"}
        zone = self._zone(chosen[0])
        if self.daily is not None:
            return {"kind": "daily", "time": self.daily, "zone": zone}
        if self.at is not None:
            return {"kind": "at", "local": self.at, "zone": zone}
        assert self.cron is not None
        return {"kind": "cron", "expression": self.cron, "zone": zone}

    def _zone(self, option: str) -> str:
        if self.zone is None:
            raise InvalidInput(
                f"zone: {option} needs --zone ZONE (an IANA zone such as Europe/Berlin)",
                field="zone",
            )
        return self.zone

    def _end(self, base: object, policy: object) -> dict[str, Any]:
        end: dict[str, Any] = {"until": None, "within": None, "maxPassages": None}
        if isinstance(base, Mapping):
            end.update(base)
        if self.until is not None:
            if self.until.strip().lower() == _NONE:
                end["until"] = None
            else:
                zone = self.zone or policy_zone(policy)
                if zone is None and isinstance(end.get("until"), Mapping):
                    zone = end["until"].get("zone")
                if zone is None:
                    raise InvalidInput(
                        "until: give --zone ZONE; the policy names no zone", field="until"
                    )
                end["until"] = {"local": self.until, "zone": zone}
        if self.within is not None:
            end["within"] = None if self.within.strip().lower() == _NONE else _within(self.within)
        if self.max_passages is not None:
            text = self.max_passages.strip().lower()
            end["maxPassages"] = None if text == _NONE else whole(text, "max-passages")
        return end


def _env(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not _ENV_NAME.fullmatch(name):
            raise InvalidInput(f"env: expected NAME=VALUE, got {item!r}", field="env")
        if name in env:
            raise InvalidInput(f"env: {name} is given twice", field="env")
        env[name] = value
    return env


def _minutes(text: str, option: str) -> tuple[int, bool]:
    """A duration such as 90m, 2h, 1h30m or 3d in minutes, and whether it is whole hours."""
    found = _DURATION.fullmatch(text.strip().lower())
    if found is None or not any(found.groupdict().values()):
        raise InvalidInput(
            f"{option}: a duration such as 90m, 2h, 1h30m or 3d, got {text!r}", field=option
        )
    days, hours, minutes = (int(found[k] or 0) for k in ("d", "h", "m"))
    return (days * 24 + hours) * 60 + minutes, found["m"] is None


def _elapsed(text: str, option: str) -> dict[str, int]:
    total, whole_hours = _minutes(text, option)
    return {"hours": total // 60} if whole_hours and total else {"minutes": total}


def _within(text: str) -> dict[str, int]:
    total, whole_hours = _minutes(text, "within")
    if whole_hours and total and total % (24 * 60) == 0:
        return {"days": total // (24 * 60)}
    return {"hours": total // 60} if whole_hours and total else {"minutes": total}


def whole(text: str, option: str) -> int:
    if re.fullmatch(r"[0-9]+", text.strip()) is None:
        raise InvalidInput(f"{option}: a whole number, got {text!r}", field=option)
    return int(text)


def read_json(text: str, option: str) -> Any:
    """JSON given inline, as ``@FILE``, or ``-`` for standard input."""
    raw = text
    if text == "-":
        raw = sys.stdin.read()
    elif text.startswith("@"):
        raw = read_file(text[1:], option)
    return parse_json(raw, option)


def parse_json(raw: str, option: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{option}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
            field=option,
        ) from None


def read_file(path: str, option: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InvalidInput(f"{option}: cannot read {path!r}: {reason}", field=option) from None
