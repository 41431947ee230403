"""A schedule's source condition: the five kinds, the stored value, and its strict parsing."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kalends.missions.config_fields import fail, json_object, relative_path
from kalends.missions.limits import MAX_CONDITION_ITEMS

__all__ = ["CONDITION_KINDS", "Condition", "parse_condition"]

CONDITION_KINDS = ("schedule-succeeded", "mission-completed", "git-branch", "conversation", "files")
_BRANCH = re.compile(r"[A-Za-z0-9._/-]{1,200}")
_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


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


def parse_condition(data: object, *, given: bool = True) -> Condition | None:
    """The ``condition`` field: ``None`` for none, else one of :data:`CONDITION_KINDS`.

    ``given``: a caller gives it now (create, or an edit of the condition), not storage.
    Every kind is parsed alike either way; what a given condition names is checked
    against its workspace by :func:`~kalends.missions.condition_check.check_condition`."""
    if data is None:
        return None
    if not isinstance(data, Mapping) or data.get("kind") not in CONDITION_KINDS:
        kind = data.get("kind") if isinstance(data, Mapping) else None
        raise fail(
            "condition.kind",
            f"unknown condition kind {kind!r}; expected one of {', '.join(CONDITION_KINDS)}",
        )
    kind = data["kind"]
    spec: list[tuple[str, Any]] = []
    if kind in ("schedule-succeeded", "mission-completed"):
        obj = json_object(data, "condition", ("kind", "missionId"))
        mission = obj.get("missionId")
        if not isinstance(mission, str) or not _ID.fullmatch(mission):
            raise fail("condition.missionId", "must be a mission ID")
        spec.append(("missionId", mission))
    elif kind == "git-branch":
        obj = json_object(data, "condition", ("kind", "branch", "path"))
        branch = obj.get("branch")
        if not isinstance(branch, str) or not _BRANCH.fullmatch(branch) or ".." in branch:
            raise fail("condition.branch", "must be a local branch name")
        spec.append(("branch", branch))
        spec.append(("path", relative_path(obj.get("path", "."), "condition.path")))
    else:
        key = "conversationIds" if kind == "conversation" else "paths"
        obj = json_object(data, "condition", ("kind", key))
        values = obj.get(key)
        if not isinstance(values, list) or not values:
            raise fail(f"condition.{key}", "must be a non-empty list")
        if len(values) > MAX_CONDITION_ITEMS:
            raise fail(f"condition.{key}", f"at most {MAX_CONDITION_ITEMS}, got {len(values)}")
        if kind == "conversation":
            checked = []
            for i, v in enumerate(values):
                if not isinstance(v, str) or not _ID.fullmatch(v):
                    raise fail(f"condition.{key}[{i}]", "must be a conversation ID")
                checked.append(v)
        else:
            checked = [relative_path(v, f"condition.{key}[{i}]") for i, v in enumerate(values)]
        if len(set(checked)) != len(checked):
            raise fail(f"condition.{key}", "lists an entry twice")
        spec.append((key, tuple(checked)))
    return Condition(kind=kind, spec=tuple(spec))
