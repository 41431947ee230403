"""How the process runtime starts a schedule's passages: the profile's command,
environment and working directory, frozen into each passage at admission, and the agent
preset it names (:mod:`kalends.missions.agents`): its command when none is given, how its
final message is read, and the program Play checks for."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kalends.missions.agents import check_placeholders, preset_named
from kalends.missions.config_fields import fail, json_object, text_field
from kalends.missions.limits import (
    MAX_ARG_CHARS,
    MAX_COMMAND_ARGS,
    MAX_ENV_VALUE_CHARS,
    MAX_ENV_VARS,
)
from kalends.missions.runtime.isolation import REFUSED_PREFIXES

__all__ = ["Profile", "parse_profile"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# kalends decision: a stored agent name (one a later kalends may no longer know) is kept
# when it is at most this long.
_MAX_AGENT_NAME = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """How the process runtime starts a passage: frozen into each passage at admission."""

    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = "."
    agent: str | None = None
    """The agent preset the profile names (``claude``, ``shell``, ...), if any."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "command": list(self.command),
            "env": dict(self.env),
            "cwd": self.cwd,
        }
        if self.agent is not None:
            out["agent"] = self.agent
        return out

    def public(self) -> dict[str, Any]:
        """What reads show: the command and directory, the environment's names only, and
        the agent preset when the profile names one."""
        out: dict[str, Any] = {
            "command": list(self.command),
            "envNames": [k for k, _ in self.env],
            "cwd": self.cwd,
        }
        if self.agent is not None:
            out["agent"] = self.agent
        return out


def parse_profile(data: object, *, stored: bool) -> Profile:
    """The ``profile`` field. ``stored``: read back from storage, where names refused
    since are kept as stored (so the document still reads, and can be edited or deleted).

    ``agent`` names a preset (:data:`~kalends.missions.agents.PRESETS`); without
    ``command`` the preset's is the profile's. ``null`` names none. The command's
    placeholders are checked (:func:`~kalends.missions.agents.check_placeholders`)
    unless ``stored``."""
    obj = json_object(data, "profile", ("command", "env", "cwd", "agent"))
    agent = obj.get("agent")
    if agent is not None:
        if stored:
            agent = text_field(agent, "profile.agent", _MAX_AGENT_NAME, low=1)
        else:
            agent = preset_named(agent).name
    if "command" not in obj and agent is not None and not stored:
        command: object = list(preset_named(agent).command)
    elif "command" not in obj:
        raise fail(
            "profile.command", "is required: the program and its arguments (or an agent preset)"
        )
    else:
        command = obj["command"]
    if not isinstance(command, list) or not command:
        raise fail("profile.command", "must be a non-empty list of strings")
    if len(command) > MAX_COMMAND_ARGS:
        raise fail("profile.command", f"at most {MAX_COMMAND_ARGS} arguments, got {len(command)}")
    args = tuple(
        text_field(a, f"profile.command[{i}]", MAX_ARG_CHARS, low=1 if i == 0 else 0)
        for i, a in enumerate(command)
    )
    if not stored:
        check_placeholders(args)
    env_data = obj.get("env")
    if env_data is None:
        env_data = {}
    if not isinstance(env_data, Mapping):
        raise fail("profile.env", "must be an object of NAME: value strings")
    if len(env_data) > MAX_ENV_VARS:
        raise fail("profile.env", f"at most {MAX_ENV_VARS} variables, got {len(env_data)}")
    env = []
    for key in sorted(env_data):
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
            raise fail("profile.env", f"{key!r} is not a valid variable name")
        if not stored and key.upper().startswith(REFUSED_PREFIXES):
            raise fail(
                "profile.env",
                f"{key!r} is refused: names starting with {' or '.join(REFUSED_PREFIXES)} (in "
                "any case) change what every program of a passage loads",
            )
        env.append((key, text_field(env_data[key], f"profile.env.{key}", MAX_ENV_VALUE_CHARS)))
    cwd = _cwd(obj.get("cwd", "."))
    return Profile(command=args, env=tuple(env), cwd=cwd, agent=agent)


def _cwd(value: object) -> str:
    text = text_field(value, "profile.cwd", 1024, low=1)
    if text.startswith("/") or "\\" in text:
        raise fail("profile.cwd", "must be a relative path inside the workspace")
    normal = posixpath.normpath(text)
    if normal == ".." or normal.startswith("../"):
        raise fail("profile.cwd", f"{text!r} leaves the workspace")
    return normal
