"""A task's schedule form: its fields from a task, and the schedule JSON (as
:func:`~kalends.tasks.values.parse_schedule` reads it) from the posted fields.

Reminders are written on the page as offsets before the due time ("15 minutes", "1
day"): minutes and hours are elapsed time, days are calendar days in the due value's
zone (the same wall time that many days earlier). The page turns each into the explicit
wall time and zone the service stores; a reminder the form cannot say as an offset (after
the due time, or in another zone) is kept exactly as it is unless removed. Every time is
resolved by the civil engine the service uses, so a wall time in a DST gap or overlap is
refused with the same words the API says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kalends.civil import format_local, get_zone, resolve_user_local, wall_of
from kalends.errors import InvalidInput
from kalends.tasks import Task, TimedValue

__all__ = [
    "DUE_KINDS",
    "UNITS",
    "FieldError",
    "blank_reminder",
    "fields_of",
    "fields_from_form",
    "plain",
    "schedule_json",
]

DUE_KINDS = (("none", "No due value"), ("date", "A day"), ("datetime", "A day and time"))
UNITS = ("minutes", "hours", "days")
CHANNELS = ("email", "push")
# The reminder rows a page shows empty, ready to fill, besides the task's own.
SPARE_REMINDERS = 2
# An offset is at most this many units (a century of days is far beyond any use).
MAX_AMOUNT = 36_525 * 24 * 60


@dataclass(frozen=True, slots=True)
class FieldError:
    """A mistake in the form: the field it belongs beside (``None``: the whole form)."""

    field: str | None
    message: str


def plain(message: str) -> str:
    """A service message without the path to its field (the form shows it beside the
    field), first letter up."""
    head, sep, rest = message.partition(": ")
    if sep and " " not in head and len(head) < 40:
        message = rest
    return message[:1].upper() + message[1:]


def blank_reminder() -> dict[str, Any]:
    return {
        "amount": "",
        "unit": "minutes",
        "channel": "email",
        "recipient": "",
        "local": "",
        "zone": "",
        "fixed": False,
        "remove": False,
        "at": None,
    }


def _offset(task_due: TimedValue, local: datetime, zone: str, at: datetime) -> tuple[int, str]:
    """A saved reminder as an offset before the due time: ``(amount, unit)``, or
    ``(0, "")`` when the form cannot say it so."""
    if zone != task_due.zone or at >= task_due.at:
        return 0, ""
    days = (task_due.local - local).days
    if local + timedelta(days=days) == task_due.local and days >= 1:
        return days, "days"
    seconds = int((task_due.at - at).total_seconds())
    if seconds % 3600 == 0:
        return seconds // 3600, "hours"
    if seconds % 60 == 0:
        return seconds // 60, "minutes"
    return 0, ""


def fields_of(task: Task, default_zone: str) -> dict[str, Any]:
    """The form's fields showing ``task``'s schedule as it is saved."""
    due = task.due
    f: dict[str, Any] = {
        "planned": task.planned.isoformat() if task.planned else "",
        "due_kind": "none",
        "due_date": "",
        "due_local": "",
        "due_zone": default_zone,
        "priority": str(task.priority) if task.priority is not None else "",
        "reminders": [],
    }
    if isinstance(due, TimedValue):
        f.update(due_kind="datetime", due_local=format_local(due.local)[:16], due_zone=due.zone)
    elif due is not None:
        f.update(due_kind="date", due_date=due.isoformat())
    for r in task.reminders:
        row = blank_reminder()
        row.update(
            channel=r.channel.value,
            recipient=str(r.recipient_id),
            local=format_local(r.time.local),
            zone=r.time.zone,
            at=r.time.at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        )
        amount, unit = (
            _offset(due, r.time.local, r.time.zone, r.time.at)
            if isinstance(due, TimedValue)
            else (0, "")
        )
        if amount:
            row.update(amount=str(amount), unit=unit)
        else:
            row["fixed"] = True
        f["reminders"].append(row)
    f["reminders"] += [blank_reminder() for _ in range(SPARE_REMINDERS)]
    return f


def fields_from_form(form: Mapping[str, str]) -> dict[str, Any]:
    """The form's fields as posted (every value kept as typed, to show again)."""

    def text(name: str, default: str = "") -> str:
        return form.get(name, default).strip()

    count = text("rem_count", "0")
    rows = []
    for i in range(int(count) if count.isdigit() and int(count) <= 100 else 0):
        p = f"rem{i}_"
        row = blank_reminder()
        row.update(
            amount=text(p + "amount"),
            unit=text(p + "unit", "minutes"),
            channel=text(p + "channel", "email"),
            recipient=text(p + "recipient"),
            local=text(p + "local"),
            zone=text(p + "zone"),
            fixed=text(p + "fixed") == "1",
            remove=text(p + "remove") == "1",
        )
        rows.append(row)
    if not any(not r["fixed"] and not r["amount"] for r in rows):
        rows.append(blank_reminder())
    return {
        "planned": text("planned"),
        "due_kind": text("due_kind", "none"),
        "due_date": text("due_date"),
        "due_local": text("due_local"),
        "due_zone": text("due_zone"),
        "priority": text("priority"),
        "reminders": rows,
    }


def _local(text: str) -> str:
    """A ``datetime-local`` control's value (``YYYY-MM-DDTHH:MM``) with its seconds."""
    return f"{text}:00" if len(text) == 16 else text


def _whole(text: str, field: str, what: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_AMOUNT:
        raise InvalidInput(f"{field}: {what} is a whole number from 1, got {text!r}", field=field)
    return int(text)


def schedule_json(f: Mapping[str, Any]) -> tuple[dict[str, Any], list[FieldError]]:
    """The schedule JSON the fields say, and the mistakes found on the way (the service
    checks everything again and names what is left). A reminder's ``field`` in the JSON
    (``reminders[i]``) is matched back to its row with :func:`row_of`."""
    errors: list[FieldError] = []
    data: dict[str, Any] = {"planned": f["planned"] or None, "reminders": []}
    priority = f["priority"]
    data["priority"] = int(priority) if priority.isdigit() else (priority or None)
    due_at: datetime | None = None
    local = _local(f["due_local"])
    kind = f["due_kind"]
    if kind == "date":
        if not f["due_date"]:
            errors.append(FieldError("due_date", "Due day: give the day, or choose no due value"))
        data["due"] = f["due_date"] or None
    elif kind == "datetime":
        zone = f["due_zone"]
        data["due"] = {"local": local, "zone": zone}
        try:
            if not f["due_local"]:
                raise InvalidInput("due: give the day and time", field="due")
            get_zone(zone, "due_zone")
            due_at = resolve_user_local(local, zone, "due")
        except InvalidInput as exc:
            field = "due_zone" if exc.details.get("field") == "due_zone" else "due_local"
            errors.append(FieldError(field, plain(exc.message)))
    elif kind == "none":
        data["due"] = None
    else:
        errors.append(FieldError("due_kind", f"Due: none, a day, or a day and time, got {kind!r}"))
    for i, row in enumerate(f["reminders"]):
        name = f"rem{i}_amount"
        if row["fixed"]:
            if not row["remove"]:
                data["reminders"].append(_reminder(row, row["local"], row["zone"], i))
            continue
        if not row["amount"]:
            continue
        if due_at is None:
            if kind != "datetime":
                errors.append(
                    FieldError(
                        name,
                        "A reminder is counted before the due time: give the task a day "
                        "and time it is due",
                    )
                )
            continue
        try:
            amount = _whole(row["amount"], "reminder", "the offset")
            if row["unit"] not in UNITS:
                raise InvalidInput(f"reminder: minutes, hours or days, got {row['unit']!r}")
            zone = f["due_zone"]
            if row["unit"] == "days":
                wall = datetime.fromisoformat(local) - timedelta(days=amount)
                said = format_local(wall)
            else:
                unit = timedelta(minutes=1) if row["unit"] == "minutes" else timedelta(hours=1)
                said = format_local(wall_of(due_at - amount * unit, zone))
        except (InvalidInput, OverflowError, ValueError) as exc:
            message = exc.message if isinstance(exc, InvalidInput) else "reminder: too far back"
            errors.append(FieldError(name, plain(message)))
            continue
        try:
            at = resolve_user_local(said, zone, "reminder")
        except InvalidInput as exc:
            errors.append(FieldError(name, plain(exc.message)))
            continue
        data["reminders"].append(_reminder(row, said, zone, i))
        row["at"] = at.astimezone(UTC).isoformat().replace("+00:00", "Z")
        row["zone"] = zone  # shown in the due time's zone, as it is saved
    return data, errors


def _reminder(row: Mapping[str, Any], local: str, zone: str, index: int) -> dict[str, Any]:
    found: dict[str, Any] = {"channel": row["channel"], "local": local, "zone": zone}
    if row["recipient"]:
        found["recipient"] = row["recipient"]
    found["row"] = index
    return found


def without_rows(data: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON to send: each reminder without the form row it came from."""
    return {
        **data,
        "reminders": [
            {k: v for k, v in r.items() if k != "row"} for r in data.get("reminders") or ()
        ],
    }


def row_of(data: Mapping[str, Any], field: str | None) -> str | None:
    """The form field a service error's ``field`` belongs beside."""
    if field is None:
        return None
    if field.startswith("due"):
        return (
            "due_date" if data.get("due") is None or isinstance(data["due"], str) else ("due_local")
        )
    if field.startswith("planned"):
        return "planned"
    if field.startswith("priority"):
        return "priority"
    if field.startswith("reminders["):
        index = field[len("reminders[") :].split("]", 1)[0]
        reminders = data.get("reminders") or []
        if index.isdigit() and int(index) < len(reminders):
            return f"rem{reminders[int(index)]['row']}_amount"
        return "reminders"
    return None
