"""Service supervision: the unit installed, enabled, reported on, and the default-ON
path a human Play takes.

:meth:`Supervisor.prepare` is what Play calls, before the control's transaction: unless
the preference is explicitly OFF, and unless the unit is already installed and enabled,
it writes the unit and enables it. It never raises: every outcome, a failure included,
is an :class:`Outcome` the Play answer carries as ``supervision``. A server never starts
its own unit from a Play (it is running already; the unit starts at the next login or
boot); elsewhere the unit is started at once when nothing listens on its address.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any
from uuid import UUID

from kalends.errors import KalendsError
from kalends.storage.unit_of_work import Store
from kalends.supervision.preference import (
    Preference,
    Setting,
    read_preference,
    write_preference,
)
from kalends.supervision.systemd import Answer, Systemd
from kalends.supervision.unit import (
    UNIT_NAME,
    Launch,
    env_file_path,
    render_unit,
    unit_path,
)

__all__ = [
    "Outcome",
    "State",
    "Status",
    "SupervisionFailed",
    "SupervisionUnavailable",
    "Supervisor",
]

# kalends' decision: whether a server already listens on the unit's address is asked
# with a connection that waits at most half a second.
LISTEN_PROBE_SECONDS = 0.5


class SupervisionFailed(KalendsError, RuntimeError):
    """systemd refused or failed to supervise kalends."""

    code = "supervision-failed"


class SupervisionUnavailable(SupervisionFailed):
    """No systemd user manager answers here."""

    code = "supervision-unavailable"


class State(StrEnum):
    """What supervision came to: the ``state`` of a Play answer's ``supervision``."""

    ENABLED = "enabled"  # installed and enabled now
    ALREADY = "already"  # installed and enabled before: nothing done
    OFF = "off"  # the preference is explicitly OFF: nothing done
    UNAVAILABLE = "unavailable"  # no systemd user manager here
    FAILED = "failed"  # writing the unit or systemctl failed


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What one supervision step did, in a sentence."""

    state: State
    message: str
    unit: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "message": self.message,
            "unit": None if self.unit is None else str(self.unit),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Status:
    """``kalends service status``: the unit, systemd's view of it and the preference."""

    unit: Path
    installed: bool
    available: bool
    unavailable: str | None
    enabled: str | None
    active: str | None
    last_exit: str | None
    preference: Preference
    linger: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": str(self.unit),
            "installed": self.installed,
            "available": self.available,
            "unavailable": self.unavailable,
            "enabled": self.enabled,
            "active": self.active,
            "lastExit": self.last_exit,
            "preference": self.preference.to_json(),
            "linger": self.linger,
        }


def _failed(step: str, answer: Answer) -> SupervisionFailed:
    return SupervisionFailed(
        f"systemctl --user {step} failed: {answer.why()}", step=step, exit_status=answer.code
    )


class Supervisor:
    """Supervision of the server that ``launch`` starts, for the database of ``store``.

    ``serving``: this process is that server (``kalends serve``), so a Play never starts
    the unit. ``environ`` is where the unit and ``systemctl`` are found (this process's
    environment by default)."""

    def __init__(
        self,
        store: Store,
        launch: Launch,
        *,
        serving: bool = False,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.store = store
        self.launch = launch
        self.serving = serving
        self._environ = dict(os.environ if environ is None else environ)
        self.systemd = Systemd(store.clock.monotonic, self._environ)

    @property
    def unit(self) -> Path:
        return unit_path(self._environ)

    def listening_on(self, port: int) -> None:
        """Records the port this server bound (``--port 0`` picks one): the unit keeps it."""
        self.launch = replace(self.launch, port=port)

    # --- what Play calls -------------------------------------------------------------------

    def prepare(self, actor: UUID) -> dict[str, Any] | None:
        """The default-ON path of a human Play that applies (``actor`` played): the unit
        installed and enabled unless the preference is explicitly OFF or it already is.
        Never raises; the answer says what happened, a failure included."""
        try:
            return self._prepare().to_json()
        except KalendsError as exc:
            return Outcome(state=State.FAILED, message=exc.message, unit=self.unit).to_json()
        except OSError as exc:
            message = f"writing {self.unit} failed: {exc.strerror or exc}"
            return Outcome(state=State.FAILED, message=message, unit=self.unit).to_json()

    def _prepare(self) -> Outcome:
        if not read_preference(self.store).on:
            return Outcome(
                state=State.OFF,
                message="service supervision is off (`kalends service on` turns it on)",
            )
        reason = self.systemd.unavailable()
        if reason is not None:
            return Outcome(state=State.UNAVAILABLE, message=reason)
        if self.unit.is_file() and self.systemd.enabled_state() == "enabled":
            return Outcome(
                state=State.ALREADY,
                message=f"{UNIT_NAME} is installed and enabled already",
                unit=self.unit,
            )
        return self._install(start=not self.serving)

    # --- what `kalends service` calls ----------------------------------------------------------

    def install(self, *, start: bool) -> Outcome:
        """Writes the unit, reloads systemd and enables it; with ``start``, starts it too
        unless a server already listens on its address. :class:`SupervisionUnavailable`
        without a user manager; :class:`SupervisionFailed` when systemd refuses."""
        self._require_available()
        return self._install(start=start)

    def turn_on(self, *, start: bool, actor: UUID | None = None) -> Outcome:
        """The preference explicitly ON, then :meth:`install`. Without a user manager,
        nothing is written (:class:`SupervisionUnavailable`)."""
        self._require_available()
        # (checked before the preference is written: a refusal writes nothing)
        render_unit(self.launch, env_file=env_file_path(self._environ))
        write_preference(self.store, Setting.ON, actor=actor)
        return self._install(start=start)

    def turn_off(self, *, stop: bool, actor: UUID | None = None) -> Outcome:
        """The preference explicitly OFF, and the unit disabled (``stop``: stopped too) when
        it is installed. Without a user manager the preference is still kept: no Play
        will try again."""
        write_preference(self.store, Setting.OFF, actor=actor)
        reason = self.systemd.unavailable()
        if reason is not None:
            return Outcome(
                state=State.OFF,
                message=f"service supervision is off; nothing to disable: {reason}",
            )
        if not self.unit.is_file():
            return Outcome(
                state=State.OFF,
                message=f"service supervision is off; {UNIT_NAME} is not installed",
                unit=self.unit,
            )
        answer = self.systemd.disable(now=stop)
        if not answer.ok:
            raise _failed("disable", answer)
        after = (
            "disabled and stopped"
            if stop
            else "disabled (a server it started runs on until stopped: --now stops it)"
        )
        return Outcome(
            state=State.OFF,
            message=f"service supervision is off; {UNIT_NAME} is {after}",
            unit=self.unit,
        )

    def uninstall(self) -> Outcome:
        """Stops and disables the unit, removes it and reloads systemd. The preference
        stays as it is."""
        self._require_available()
        if not self.unit.is_file():
            return Outcome(state=State.OFF, message=f"{UNIT_NAME} is not installed", unit=self.unit)
        answer = self.systemd.disable(now=True)
        if not answer.ok:
            raise _failed("disable", answer)
        self.unit.unlink()
        reloaded = self.systemd.daemon_reload()
        if not reloaded.ok:
            raise _failed("daemon-reload", reloaded)
        note = (
            "the next Play installs it again; `kalends service off` keeps supervision off"
            if read_preference(self.store).on
            else "supervision stays off"
        )
        return Outcome(
            state=State.OFF,
            message=f"{UNIT_NAME} is stopped, disabled and removed; {note}",
            unit=self.unit,
        )

    def status(self) -> Status:
        """What is installed, what systemd says of it, and the preference; a read only."""
        reason = self.systemd.unavailable()
        available = reason is None
        installed = self.unit.is_file()
        return Status(
            unit=self.unit,
            installed=installed,
            available=available,
            unavailable=reason,
            enabled=self.systemd.enabled_state() if available and installed else None,
            active=self.systemd.active_state() if available else None,
            last_exit=self.systemd.last_exit() if available else None,
            preference=read_preference(self.store),
            linger=self.systemd.linger_advice() if available else None,
        )

    # --- the steps ---------------------------------------------------------------------------

    def _require_available(self) -> None:
        reason = self.systemd.unavailable()
        if reason is not None:
            raise SupervisionUnavailable(reason)

    def _listening(self) -> bool:
        """Whether something accepts connections on the unit's address now."""
        try:
            with socket.create_connection(self.launch.address, timeout=LISTEN_PROBE_SECONDS):
                return True
        except OSError:
            return False

    def _write_unit(self, text: str) -> None:
        """The unit written whole or not at all (a temporary file renamed over it)."""
        path = self.unit
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".kalends-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(temporary, 0o644)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def _install(self, *, start: bool) -> Outcome:
        text = render_unit(self.launch, env_file=env_file_path(self._environ))
        self._write_unit(text)
        reloaded = self.systemd.daemon_reload()
        if not reloaded.ok:
            raise _failed("daemon-reload", reloaded)
        busy = start and self._listening()
        enabled = self.systemd.enable(now=start and not busy)
        if not enabled.ok:
            raise _failed("enable", enabled)
        host, port = self.launch.address
        if start and not busy:
            when = "started now, and at every login"
        elif self.serving:
            when = (
                "this server keeps running in the foreground; the unit starts it at your next login"
            )
        elif busy:
            when = (
                f"a server already listens on {host}:{port}, so it was not started; it "
                "starts at your next login"
            )
        else:
            when = "it starts at your next login"
        parts = [f"{UNIT_NAME} is installed and enabled: {when}"]
        linger = self.systemd.linger_advice()
        if linger is not None:
            parts.append(linger)
        return Outcome(state=State.ENABLED, message="; ".join(parts), unit=self.unit)
