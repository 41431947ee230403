"""When a schedule ends: the three combinable end bounds (an absolute last slot, an
elapsed end, a passage quota)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kalends.civil import format_local, parse_local_datetime, resolve_user_local
from kalends.errors import InvalidInput
from kalends.missions.config_fields import fail, json_object, whole_number
from kalends.missions.limits import MAX_WITHIN

__all__ = ["EndBounds", "parse_end"]

_WITHIN_UNITS = {"minutes": 60, "hours": 3600, "days": 86_400}


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


def parse_end(data: object) -> EndBounds:
    """The ``end`` field; ``None`` bounds nothing."""
    if data is None:
        return EndBounds()
    obj = json_object(data, "end", ("until", "within", "maxPassages"))
    until_local = until_zone = until = None
    if obj.get("until") is not None:
        u = json_object(obj["until"], "end.until", ("local", "zone"))
        if "local" not in u or "zone" not in u:
            raise fail("end.until", "needs both local and zone")
        try:
            until_local = parse_local_datetime(u["local"])
            until = resolve_user_local(until_local, u["zone"])
        except InvalidInput as exc:
            raise InvalidInput(f"end.until: {exc.message}", field="end.until") from None
        until_zone = u["zone"]
    within = within_json = None
    if obj.get("within") is not None:
        w = json_object(obj["within"], "end.within", tuple(_WITHIN_UNITS))
        if len(w) != 1:
            raise fail("end.within", "give exactly one of minutes, hours, days")
        unit, amount = next(iter(w.items()))
        limit = int(MAX_WITHIN.total_seconds()) // _WITHIN_UNITS[unit]
        value = whole_number(amount, f"end.within.{unit}", 1, limit)
        within = timedelta(seconds=value * _WITHIN_UNITS[unit])
        within_json = (unit, value)
    max_passages = None
    if obj.get("maxPassages") is not None:
        max_passages = whole_number(obj["maxPassages"], "end.maxPassages", 1, 1_000_000_000)
    return EndBounds(
        until_local=until_local,
        until_zone=until_zone,
        until=until,
        within=within,
        within_json=within_json,
        max_passages=max_passages,
    )
