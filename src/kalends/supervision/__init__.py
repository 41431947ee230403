"""Service supervision (``kalends service``): a systemd user unit that keeps
``kalends serve`` running, and the service-wide preference, ON by default, that the
first human Play of a schedule follows to turn it on.

The parts: the unit's text (:mod:`kalends.supervision.unit`), ``systemctl --user`` as a
subprocess (:mod:`kalends.supervision.systemd`), the preference
(:mod:`kalends.supervision.preference`) and what Play and the command line call
(:mod:`kalends.supervision.supervisor`).
"""

from __future__ import annotations

from kalends.supervision.preference import Preference, Setting, read_preference
from kalends.supervision.supervisor import (
    Outcome,
    State,
    Status,
    SupervisionFailed,
    SupervisionUnavailable,
    Supervisor,
)
from kalends.supervision.systemd import Systemd
from kalends.supervision.unit import (
    UNIT_NAME,
    Launch,
    env_file_path,
    kalends_command,
    render_unit,
)

__all__ = [
    "UNIT_NAME",
    "Launch",
    "Outcome",
    "Preference",
    "Setting",
    "State",
    "Status",
    "SupervisionFailed",
    "SupervisionUnavailable",
    "Supervisor",
    "Systemd",
    "env_file_path",
    "kalends_command",
    "read_preference",
    "render_unit",
]
