"""Five-field cron expressions, parsed into sets.

Day matching follows Vixie cron: when the day-of-month or the day-of-week field
starts with ``*``, a day must match both; otherwise either. An expression whose
minute and hour fields both start with something other than ``*`` is a
wall-clock rule; otherwise it follows elapsed time (see :mod:`kalends.civil.search`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kalends.errors import InvalidRule

_MONTHS = {
    n: i
    for i, n in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_WEEKDAYS = {n: i for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@dataclass(frozen=True, slots=True)
class CronSpec:
    """The sets a cron expression matches; ``weekdays`` are ISO (Monday=1 … Sunday=7)."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    dom_star: bool
    dow_star: bool
    wall_clock: bool

    def times_of_day(self) -> tuple[int, ...]:
        """Every matching time of day, in seconds after midnight, ascending."""
        return tuple(sorted(h * 3600 + m * 60 for h in self.hours for m in self.minutes))


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int] | None


_FIELDS = (
    _Field("minute", 0, 59, None),
    _Field("hour", 0, 23, None),
    _Field("day of month", 1, 31, None),
    _Field("month", 1, 12, _MONTHS),
    _Field("day of week", 0, 7, _WEEKDAYS),
)


def parse_cron(expression: object, field: str = "expression") -> CronSpec:
    """Parses a five-field expression (or an ``@daily``-style macro)."""
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidRule(f"{field}: a cron expression of five fields is required", field=field)
    text = _MACROS.get(expression.strip().lower(), expression)
    parts = text.split()
    if len(parts) != 5:
        raise InvalidRule(
            f"{field}: {expression!r} has {len(parts)} fields; cron takes five "
            "(minute hour day-of-month month day-of-week)",
            field=field,
        )
    sets = [_parse_field(part, spec, field) for part, spec in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(7 if d in (0, 7) else d for d in sets[4])
    return CronSpec(
        minutes=sets[0],
        hours=sets[1],
        days=sets[2],
        months=sets[3],
        weekdays=weekdays,
        dom_star=parts[2].startswith("*"),
        dow_star=parts[4].startswith("*"),
        wall_clock=not parts[0].startswith("*") and not parts[1].startswith("*"),
    )


def _parse_field(text: str, spec: _Field, field: str) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        values.update(_parse_item(item, spec, field, text))
    return frozenset(values)


def _parse_item(item: str, spec: _Field, field: str, whole: str) -> range:
    def fail(reason: str) -> InvalidRule:
        return InvalidRule(f"{field}: {spec.name} field {whole!r}: {reason}", field=field)

    body, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not step_text.isdigit() or int(step_text) == 0:
            raise fail(f"step {step_text!r} must be a positive whole number")
        step = int(step_text)
    if body == "*":
        low, high = spec.low, spec.high
    elif "-" in body:
        first, _, last = body.partition("-")
        low, high = _value(first, spec, fail), _value(last, spec, fail)
        if low > high:
            raise fail(f"range {body!r} runs backwards")
    else:
        low = _value(body, spec, fail)
        high = spec.high if slash else low
    return range(low, high + 1, step)


def _value(text: str, spec: _Field, fail: Callable[[str], InvalidRule]) -> int:
    lowered = text.lower()
    if spec.names is not None and lowered in spec.names:
        return spec.names[lowered]
    if not text.isdigit():
        raise fail(f"{text!r} is not a number" + (" or a name" if spec.names else ""))
    value = int(text)
    if not spec.low <= value <= spec.high:
        raise fail(f"{value} is outside {spec.low}-{spec.high}")
    return value
