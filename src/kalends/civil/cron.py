"""Five-field cron expressions, parsed into sets.

Day matching follows Vixie cron: when the day-of-month or the day-of-week field
starts with ``*``, a day must match both; otherwise either. An expression whose
minute and hour fields both start with something other than ``*`` is a
wall-clock rule; otherwise it follows elapsed time (see :mod:`kalends.civil.search`).

Extensions from Quartz, croniter and cronsim (issue 24 §4), with their meaning there:

- day of month ``L``: the last day of the month; ``LW``: the last weekday
  (Monday-Friday) of the month, so the Friday before when the month ends on a
  Saturday or Sunday.
- day of week ``<weekday>L``: the last such weekday of the month (``5L``, ``FRIL``:
  the last Friday); ``<weekday>#<n>``, n 1-5: the n-th such weekday of the month
  (``1#2``, ``MON#2``: the second Monday). A month without a fifth Monday has no
  day for ``1#5``. The weekday is a number 0-7 (0 and 7 are Sunday) or a name,
  numbered as cron numbers them: Quartz counts Sunday as 1, so its ``6L`` is ``5L``.
- steps on weekdays (``*/3``, ``1-5/2``) were always accepted: they count from
  the range's start (``*/3`` is Sunday, Wednesday and Saturday).

Each extension is one more item of its field's list, so it mixes with plain
items (``1,L``, ``1#2,5L``, ``MON,5L``), and the two day fields combine exactly as
plain ones do: a field that starts with ``*`` makes both apply; two restricted
fields match a day that matches either (``0 9 L * 5L``: the last day of the
month, and the last Friday). kalends' decision, where Quartz refuses two restricted
day fields: cronsim 2.9 combines them so too (its documented ``* * */20 * 1L``
finds nothing only because ``*/20`` starts with ``*``). The extensions only
choose days, so their slots follow the same DST conventions as every cron rule.
Not accepted, each with a message saying so: ``L-3``, ``15W``, ``L`` alone in the
day-of-week field (Quartz's Saturday), ``?``, and a range or step on an extension
(cronsim ignores ``L/2``; kalends refuses it rather than guess).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field

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
class CronExtensions:
    """The extension items of an expression; weekdays are ISO (Monday=1 … Sunday=7)."""

    last_day: bool = False  # L
    last_workday: bool = False  # LW
    last_weekdays: frozenset[int] = frozenset()  # 5L: the last Friday
    nth_weekdays: frozenset[tuple[int, int]] = frozenset()  # 1#2: (Monday, 2)


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
    # The extensions (issue 24 §4); None for a plain expression, so it pays for nothing.
    extensions: CronExtensions | None = None

    @property
    def extended(self) -> bool:
        """Whether any extension is present."""
        return self.extensions is not None

    @property
    def last_day(self) -> bool:
        return self.extensions is not None and self.extensions.last_day

    @property
    def last_workday(self) -> bool:
        return self.extensions is not None and self.extensions.last_workday

    @property
    def last_weekdays(self) -> frozenset[int]:
        return frozenset() if self.extensions is None else self.extensions.last_weekdays

    @property
    def nth_weekdays(self) -> frozenset[tuple[int, int]]:
        return frozenset() if self.extensions is None else self.extensions.nth_weekdays

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


# Quartz, croniter and cronsim: a month has at most five of any weekday (issue 24 §4).
MAX_NTH_WEEKDAY = 5
_DOM, _DOW = 2, 4
# The characters of every extension; a field without them takes the plain path.
_MARKS = frozenset("LlWw#?")


@dataclass
class _Extensions:
    last_day: bool = False
    last_workday: bool = False
    last_weekdays: set[int] = dataclass_field(default_factory=set)
    nth_weekdays: set[tuple[int, int]] = dataclass_field(default_factory=set)


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
    if _MARKS.isdisjoint(text):  # the plain path: no field holds an extension
        sets = [_parse_field(part, spec, field) for part, spec in zip(parts, _FIELDS, strict=True)]
        return _spec(parts, sets, None)
    extensions = _Extensions()
    sets = [
        _parse_marked_field(part, spec, field, index, extensions)
        for index, (part, spec) in enumerate(zip(parts, _FIELDS, strict=True))
    ]
    found = CronExtensions(
        last_day=extensions.last_day,
        last_workday=extensions.last_workday,
        last_weekdays=frozenset(extensions.last_weekdays),
        nth_weekdays=frozenset(extensions.nth_weekdays),
    )
    return _spec(parts, sets, None if found == CronExtensions() else found)


def _spec(
    parts: list[str], sets: list[frozenset[int]], extensions: CronExtensions | None
) -> CronSpec:
    return CronSpec(
        minutes=sets[0],
        hours=sets[1],
        days=sets[2],
        months=sets[3],
        weekdays=frozenset(7 if d in (0, 7) else d for d in sets[4]),
        dom_star=parts[2].startswith("*"),
        dow_star=parts[4].startswith("*"),
        wall_clock=not parts[0].startswith("*") and not parts[1].startswith("*"),
        extensions=extensions,
    )


def _parse_field(text: str, spec: _Field, field: str) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        values.update(_parse_item(item, spec, field, text))
    return frozenset(values)


def _parse_marked_field(
    text: str, spec: _Field, field: str, index: int, extensions: _Extensions
) -> frozenset[int]:
    """A field holding an extension's mark, or a name such as ``jul`` or ``wed``."""
    values: set[int] = set()
    for item in text.split(","):
        if _looks_extended(item, spec):
            _parse_extension(item, spec, field, index, text, extensions)
        else:
            values.update(_parse_item(item, spec, field, text))
    return frozenset(values)


def _looks_extended(item: str, spec: _Field) -> bool:
    """Whether an item uses an extension's marks; names such as ``jul`` and ``wed`` do not."""
    upper = item.upper()
    if "#" in upper or "?" in upper:
        return True
    if spec.names is not None and all(
        part.lower() in spec.names or not ("L" in part or "W" in part)
        for part in upper.replace("/", "-").split("-")
    ):
        return False
    return "L" in upper or "W" in upper


def _parse_extension(
    item: str, spec: _Field, field: str, index: int, whole: str, extensions: _Extensions
) -> None:
    """One ``L``, ``LW``, ``<weekday>L`` or ``<weekday>#<n>`` item, in its own field only."""

    def fail(reason: str) -> InvalidRule:
        said = "" if item == whole else f"{item!r}: "
        return InvalidRule(f"{field}: {spec.name} field {whole!r}: {said}{reason}", field=field)

    upper = item.upper()
    if "?" in upper:
        raise fail("'?' (no specific value, in Quartz) is not accepted; write '*'")
    if index == _DOM:
        if upper == "L":
            extensions.last_day = True
        elif upper == "LW":
            extensions.last_workday = True
        elif upper.startswith("L-"):
            raise fail("an offset from the last day is not supported; 'L' and 'LW' are")
        elif upper.endswith("W") and upper[:-1].isdigit():
            raise fail("the nearest weekday to a day is not supported; 'LW' is")
        elif "#" in upper or (upper.endswith("L") and len(upper) > 1):
            raise fail("<weekday>L and <weekday>#<n> belong in the day-of-week field")
        else:
            raise fail(
                "only 'L' (last day) and 'LW' (last weekday) may stand alone "
                "as an item; no range or step on them"
            )
        return
    if index != _DOW:
        raise fail(
            "'L', 'W' and '#' are for the day-of-month field (L, LW) "
            "and the day-of-week field (5L, 1#2) only"
        )
    if upper == "LW":
        raise fail("'LW' (last weekday of the month) belongs in the day-of-month field")
    if upper == "L":
        raise fail("'L' alone is not a day of week; write '6L' for the last Saturday")
    if "/" in upper or "-" in upper:
        raise fail("a range or step cannot hold 'L' or '#'")
    body, hash_mark, nth = item.partition("#")
    if hash_mark and not body:
        raise fail("a weekday comes before '#' (1#2: the second Monday)")
    if hash_mark:
        if not nth.isdigit() or not 1 <= int(nth) <= MAX_NTH_WEEKDAY:
            raise fail(
                f"the n in <weekday>#<n> is 1-{MAX_NTH_WEEKDAY} "
                "(a month has at most five of any weekday)"
            )
        weekday = _value(body, spec, fail)
        extensions.nth_weekdays.add((weekday % 7 or 7, int(nth)))
        return
    if upper.endswith("L") and len(upper) > 1:
        weekday = _value(item[:-1], spec, fail)
        extensions.last_weekdays.add(weekday % 7 or 7)
        return
    raise fail(
        "not a day of week; the extensions are <weekday>L "
        "(5L: last Friday) and <weekday>#<n> (1#2: second Monday)"
    )


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
