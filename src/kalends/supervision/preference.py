"""The service-wide supervision preference, kept in ``service_preferences``.

No row means the default, ON: the first human Play turns supervision on. Only
``kalends service on|off`` writes the row; an explicit OFF stays OFF through every Play,
and no schedule operation reads or writes it but Play's read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from kalends.storage.service_tables import service_preferences
from kalends.storage.unit_of_work import Store

__all__ = ["SUPERVISION", "Preference", "Setting", "read_preference", "write_preference"]

SUPERVISION = "supervision"
"""The preference's name in ``service_preferences``."""


class Setting(StrEnum):
    """A stored value of the preference."""

    ON = "on"
    OFF = "off"


@dataclass(frozen=True, slots=True, kw_only=True)
class Preference:
    """The preference as read: ``setting`` ``None`` when nobody set it (default ON)."""

    setting: Setting | None
    updated_at: datetime | None = None
    updated_by: UUID | None = None

    @property
    def on(self) -> bool:
        return self.setting is not Setting.OFF

    def describe(self) -> str:
        if self.setting is None:
            return "on (the default: the first Play turns supervision on)"
        when = "" if self.updated_at is None else f" since {self.updated_at.isoformat()}"
        return f"{self.setting.value} (set explicitly{when})"

    def to_json(self) -> dict[str, object]:
        return {
            "setting": None if self.setting is None else self.setting.value,
            "on": self.on,
            "explicit": self.setting is not None,
            "updatedAt": None if self.updated_at is None else self.updated_at.isoformat(),
            "updatedBy": None if self.updated_by is None else str(self.updated_by),
        }


def read_preference(store: Store) -> Preference:
    """The supervision preference of ``store``'s database; a read only."""

    def run(conn: Connection) -> Preference:
        row = conn.execute(
            select(
                service_preferences.c.value,
                service_preferences.c.updated_at,
                service_preferences.c.updated_by,
            ).where(service_preferences.c.name == SUPERVISION)
        ).one_or_none()
        if row is None:
            return Preference(setting=None)
        try:
            setting = Setting(row.value)
        except ValueError:
            setting = None  # (a value this version does not know counts as unset)
        return Preference(setting=setting, updated_at=row.updated_at, updated_by=row.updated_by)

    found: Preference = store.run(run, write=False)
    return found


def write_preference(store: Store, setting: Setting, *, actor: UUID | None = None) -> Preference:
    """Sets the preference explicitly (an upsert: two writers at once both succeed, the
    later commit stands) and returns it as written."""
    now = store.clock.now()
    dialect = postgresql if store.dialect == "postgresql" else sqlite
    statement = dialect.insert(service_preferences).values(
        name=SUPERVISION, value=setting.value, updated_at=now, updated_by=actor
    )
    upsert = statement.on_conflict_do_update(
        index_elements=[service_preferences.c.name],
        set_={
            "value": statement.excluded.value,
            "updated_at": statement.excluded.updated_at,
            "updated_by": statement.excluded.updated_by,
        },
    )
    store.run(lambda conn: conn.execute(upsert))
    return Preference(setting=setting, updated_at=now, updated_by=actor)
