"""The process runtime: each passage is a real command, recorded in a directory of its own.

The passage directory's records and the variables a passage gets are listed in
:mod:`kalends.missions.runtime.layout`; every record is a JSON object with ``version``,
written whole: aside then renamed or linked into place, and fsynced.

Every passage has an **exchange directory** (``KALENDS_REPORT_SPOOL``) where
``kalends report`` spools its report (``report.json`` with the passage's token) before it
sends it anywhere: :meth:`ProcessRuntime.observe` takes the spooled report into
``report.json`` here once the token proves it is the passage's own, so a report made
while the server is down (a restart, an upgrade) is not lost. An unconfined passage's
exchange directory is ``io/`` in its passage directory. A confined passage (another OS
user or a sandbox: :mod:`kalends.missions.runtime.isolation`) cannot read its passage
directory: its exchange directory is its own, with a copy of ``input.json``
(:mod:`kalends.missions.runtime.exchange`).

Admission builds ``start.json`` and ``input.json`` in a temporary directory and renames it
into place, which fails if the session is there: a crash leaves nothing or a complete
admission; temporary directories (``.admit-*``) are never read
(:mod:`kalends.missions.runtime.admission`). The launch is claimed by the shim itself with
the exclusive ``launch.lock``, so no interleaving of ``start`` calls, in any number of
processes, launches twice; a ``start`` after a crash between admission and launch launches
it (:mod:`kalends.missions.runtime.launch`). See :mod:`kalends.missions.runtime.shim` for
the shim and the reaper that enforces the grace period of :meth:`ProcessRuntime.interrupt`
(:mod:`kalends.missions.runtime.interruption`). Reports:
:mod:`kalends.missions.runtime.reports`.

The runtime root must be on the machine that runs the passages: liveness is read from
``/proc``. Given a :class:`~kalends.missions.runtime.beats.BeatTarget`, each passage's
shim also reports its start, heartbeats and end to the service over HTTP (issue 23 §3),
so that a scheduler on another machine can observe it.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from kalends.clock import Clock, SystemClock
from kalends.errors import InvalidInput, NotFound
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.admission import (
    admission,
    admission_documents,
    rename_into_place,
)
from kalends.missions.runtime.base import (
    Observation,
    PassageStart,
    Presence,
    Report,
    RuntimeUnavailable,
)
from kalends.missions.runtime.beats import BEAT_KEY_BYTES, BeatTarget
from kalends.missions.runtime.exchange import input_file
from kalends.missions.runtime.interruption import interrupt_passage
from kalends.missions.runtime.isolation import Isolation, default_path
from kalends.missions.runtime.launch import launch
from kalends.missions.runtime.layout import (
    ENV_API_URL,
    ENV_INPUT_FILE,
    ENV_PASSAGE_DIR,
    ENV_PASSAGE_ID,
    ENV_PASSAGE_TOKEN,
    ENV_REPORT_SPOOL,
    ENV_RUNTIME_ROOT,
    PASSAGES,
    valid_session_id,
)
from kalends.missions.runtime.observation import observe_passage
from kalends.missions.runtime.reports import (
    MAX_SUMMARY_CHARS,
    OUTCOMES,
    PassageSettled,
    check_report,
    record_report,
    spool_report,
)
from kalends.missions.runtime.token import ensure_secret, sign

__all__ = [
    "ENV_API_URL",
    "ENV_INPUT_FILE",
    "ENV_PASSAGE_DIR",
    "ENV_PASSAGE_ID",
    "ENV_PASSAGE_TOKEN",
    "ENV_REPORT_SPOOL",
    "ENV_RUNTIME_ROOT",
    "MAX_SUMMARY_CHARS",
    "OUTCOMES",
    "PASSAGES",
    "PassageSettled",
    "ProcessRuntime",
    "check_report",
    "record_report",
    "spool_report",
    "valid_session_id",
]

_HEX_KEY = re.compile(rf"[0-9a-fA-F]{{{2 * BEAT_KEY_BYTES}}}")


class ProcessRuntime:
    """Runs passages as detached commands under a durable shim (see the module docstring).

    ``secret`` signs passage tokens; by default it is ``root/secret``, created on first
    use, which ``kalends report`` reads too (a runtime given another secret can only take
    reports through :meth:`report`). ``grace``: seconds between TERM and KILL on
    interrupt. ``python``: the interpreter that runs the shim (standard library only).
    ``extra_env``: variables every passage gets on top of its profile's (a server gives
    its own URL as ``KALENDS_API_URL``); the passage's identities still come last.
    ``isolation``: the passage's environment, user and sandbox; by default a clean
    environment only (see :mod:`kalends.missions.runtime.isolation`). ``beats``: where
    the passages' shims send their heartbeats (issue 23 §3), none by default.
    """

    def __init__(
        self,
        root: Path | str,
        *,
        secret: bytes | None = None,
        grace: float = 10.0,
        python: str = sys.executable,
        clock: Clock | None = None,
        extra_env: Mapping[str, str] | None = None,
        isolation: Isolation | None = None,
        beats: BeatTarget | None = None,
    ) -> None:
        if isinstance(grace, bool) or not math.isfinite(grace) or grace < 0:
            raise InvalidInput(f"grace must be a non-negative number of seconds, got {grace!r}")
        if beats is not None:
            check_beat_target(beats)
        self.beats = beats
        self.root = Path(root).absolute()
        self.passages = self.root / PASSAGES
        self.grace = float(grace)
        self.python = python
        self.clock: Clock = clock or SystemClock()
        self.extra_env: dict[str, str] = dict(extra_env or {})
        self.isolation = isolation if isolation is not None else Isolation(path=default_path())
        self._secret = secret
        try:
            # Private to the server's user: a passage never reads another's records.
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.passages.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise RuntimeUnavailable(f"cannot create {self.passages}: {exc.strerror}") from exc

    def __repr__(self) -> str:
        return f"ProcessRuntime({str(self.root)!r})"

    @property
    def secret(self) -> bytes:
        if self._secret is None:
            self._secret = ensure_secret(self.root)
        return self._secret

    def passage_dir(self, session_id: str) -> Path:
        if not valid_session_id(session_id):
            raise InvalidInput(f"session ID {session_id!r} cannot name a passage directory")
        return self.passages / session_id

    # --- the protocol --------------------------------------------------------------

    def start(self, start: PassageStart) -> Presence:
        """Admit (first admission wins) and launch once; see :class:`Runtime`."""
        presence = self.admit(start)
        if presence is Presence.PRESENT:
            try:
                launch(
                    self.passage_dir(start.session_id),
                    root=self.root,
                    token=self.token,
                    isolation=self.isolation,
                    extra_env=self.extra_env,
                    python=self.python,
                    beats=self.beats,
                )
            except (OSError, records.CorruptRecord) as exc:
                raise RuntimeUnavailable(
                    f"cannot launch session {start.session_id}: {exc}"
                ) from exc
        return presence

    def admit(self, start: PassageStart) -> Presence:
        """The first half of :meth:`start`: record the admission, launch nothing. A crash
        of ``start`` between the two halves leaves exactly this; ``start`` completes it."""
        # (the session ID is checked by admission_documents, which names its field)
        directory = self.passages / start.session_id
        start_doc, input_doc = admission_documents(
            start,
            now=self.clock.now(),
            input_file=str(input_file(directory, self.isolation)),
        )
        try:
            presence = admission(directory, start.message_id)
            if presence is None:
                if rename_into_place(directory, start_doc, input_doc):
                    return Presence.PRESENT
                presence = admission(directory, start.message_id) or Presence.UNKNOWN
        except OSError as exc:
            raise RuntimeUnavailable(f"cannot admit session {start.session_id}: {exc}") from exc
        return presence

    def lookup(self, session_id: str, message_id: str) -> Presence:
        """PRESENT, ABSENT or UNKNOWN from the passage directory alone."""
        if not valid_session_id(session_id):
            return Presence.ABSENT  # start() refuses such an ID: it was never admitted
        if not self.passages.is_dir():
            raise RuntimeUnavailable(f"the runtime directory {self.passages} is missing")
        try:
            return admission(self.passages / session_id, message_id) or Presence.ABSENT
        except OSError as exc:
            raise RuntimeUnavailable(f"cannot read session {session_id}: {exc}") from exc

    def observe(self, session_id: str) -> Observation:
        """The session's state now; :class:`NotFound` if it was never admitted."""
        directory = self._existing(session_id)
        try:
            return observe_passage(directory, root=self.root, secret=self.secret)
        except (OSError, records.CorruptRecord, KeyError, TypeError, ValueError) as exc:
            raise RuntimeUnavailable(f"cannot observe session {session_id}: {exc}") from exc

    def interrupt(self, session_id: str) -> None:
        """Record the interrupt, send TERM to every process group of the session now, and
        leave a detached reaper to send KILL to what remains after the grace period.

        Interrupting before the launch claims it, so nothing is ever launched. Calling it
        again sends TERM again; the KILL deadline stays the first call's.
        """
        directory = self._existing(session_id)
        try:
            interrupt_passage(directory, now=self.clock.now(), grace=self.grace, python=self.python)
        except (OSError, records.CorruptRecord, ValueError) as exc:
            raise RuntimeUnavailable(f"cannot interrupt session {session_id}: {exc}") from exc

    def report(self, token: str, outcome: str, summary: str) -> Report:
        """Record a passage's report given its token (what an HTTP endpoint would call)."""
        return record_report(
            self.root, token, outcome, summary, secret=self.secret, at=self.clock.now()
        )

    def token(self, passage_id: str, session_id: str) -> str:
        """The token the passage gets in ``KALENDS_PASSAGE_TOKEN``."""
        return sign(self.secret, passage_id, session_id)

    def _existing(self, session_id: str) -> Path:
        directory = self.passage_dir(session_id) if valid_session_id(session_id) else None
        if directory is None or not directory.is_dir():
            raise NotFound(f"no passage was admitted for session {session_id!r}")
        return directory


def check_beat_target(beats: BeatTarget) -> None:
    """Refuses a heartbeat target a shim could not use: :class:`InvalidInput` naming it."""
    if not isinstance(beats.url, str) or not beats.url.startswith(("http://", "https://")):
        raise InvalidInput(
            f"beats.url must be an http:// or https:// URL, got {beats.url!r}", field="beats.url"
        )
    if not isinstance(beats.node_id, str) or not beats.node_id:
        raise InvalidInput("beats.node_id must name the node", field="beats.node_id")
    if not isinstance(beats.key, str) or _HEX_KEY.fullmatch(beats.key) is None:
        raise InvalidInput(f"beats.key must be {2 * BEAT_KEY_BYTES} hex digits", field="beats.key")
    every = beats.every
    if isinstance(every, bool) or not isinstance(every, int | float) or not 0 < every < math.inf:
        raise InvalidInput(
            f"beats.every must be a positive number of seconds, got {every!r}",
            field="beats.every",
        )
