"""The read budget of one observation: a deadline on a monotonic clock and a cancel switch.

Seed 002 gives local file and Git reads one cancellable ten-second budget, shared by every
read of an observation and its final revalidation. A read that finds the budget spent or
cancelled stops and reports an incomplete read; it never returns what it read so far.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kalends.missions.limits import SOURCE_READ_BUDGET_SECONDS

__all__ = ["Budget"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """``deadline`` on ``monotonic``'s scale; ``cancelled`` set by :meth:`cancel`.

    One budget is shared across threads: the thread that reads checks it, another (the
    scheduler giving up) may cancel it.
    """

    deadline: float
    monotonic: Callable[[], float] = time.monotonic
    cancelled: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def start(
        cls,
        seconds: float = SOURCE_READ_BUDGET_SECONDS,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> Budget:
        """A budget of ``seconds`` from now on ``monotonic``."""
        return cls(deadline=monotonic() + seconds, monotonic=monotonic)

    def remaining(self) -> float:
        """Seconds left; 0 once spent or cancelled."""
        if self.cancelled.is_set():
            return 0.0
        return max(0.0, self.deadline - self.monotonic())

    def spent(self) -> bool:
        """Whether a read must stop now: the deadline passed or the budget was cancelled."""
        return self.remaining() <= 0.0

    def cancel(self) -> None:
        """Stops every read sharing this budget at its next check."""
        self.cancelled.set()
