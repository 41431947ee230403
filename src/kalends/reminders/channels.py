"""The channels a reminder travels by (seed 000, "Scheduling domain")."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Channel"]


class Channel(StrEnum):
    """How a reminder reaches its recipient; the value is the stored string."""

    EMAIL = "email"
    PUSH = "push"
