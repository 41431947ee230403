"""The log of the long-running commands (``kalends serve``, ``kalends worker``) on stderr:
one line per record, as text for people or as JSON for machines (``--log-format``).

A text line is ``HH:MM:SSZ [LEVEL: ]MESSAGE [key=value …]``: the time in UTC, the
level unless it is ``info``, the message, then the record's extra fields. A JSON line
is one object ``{"at", "level", "logger", "message", …extra}``.

A record whose message already says everything for people (a passage settled, a
reminder batch) carries its machine-readable details in the extra field ``fields``
(a mapping): a JSON line merges them in, a text line leaves them out.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any, Final

import typer

from kalends.errors import InvalidInput

__all__ = [
    "ENV_LOG_FORMAT",
    "LOG_FORMATS",
    "JsonFormatter",
    "LogFormatOption",
    "QuietOption",
    "TextFormatter",
    "check_log_format",
    "configure_logging",
    "logging_to_stderr",
]

LOG_FORMATS: Final = ("text", "json")
ENV_LOG_FORMAT: Final = "KALENDS_LOG_FORMAT"
# The extra field of details a JSON line shows and a text line leaves to the message.
FIELDS: Final = "fields"

# The server's loggers, sent through the root logger's handler.
_SERVER_LOGGERS = ("uvicorn", "uvicorn.error")
# uvicorn adds a copy of its message with terminal colours: not for a log file.
_STANDARD = frozenset(vars(logging.makeLogRecord({})).keys()) | {
    "message",
    "asctime",
    "color_message",
}
# Control characters (a newline in a schedule's title) would break a text line in two.
_ESCAPES = {i: f"\\x{i:02x}" for i in range(32)} | {10: "\\n", 13: "\\r", 9: "\\t", 127: "\\x7f"}


def _extra(record: logging.LogRecord) -> dict[str, Any]:
    return {
        key: value
        for key, value in vars(record).items()
        if key not in _STANDARD and not key.startswith("_")
    }


def _plain(value: Any) -> Any:
    """``value`` as JSON shows it: text, numbers, booleans, null, and lists and mappings of
    them; anything else as its text."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


class JsonFormatter(logging.Formatter):
    """``{"at", "level", "logger", "message", …extra}`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in _extra(record).items():
            if key == FIELDS and isinstance(value, Mapping):
                entry.update({str(k): _plain(v) for k, v in value.items()})
            else:
                entry[key] = _plain(value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``HH:MM:SSZ [LEVEL: ]MESSAGE [key=value …]`` on one line (a traceback follows it)."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [time.strftime("%H:%M:%SZ", time.gmtime(record.created))]
        if record.levelno != logging.INFO:
            parts.append(f"{record.levelname.lower()}:")
        parts.append(record.getMessage().translate(_ESCAPES))
        for key, value in _extra(record).items():
            if key != FIELDS:
                parts.append(f"{key}={_text(value)}")
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _text(value: Any) -> str:
    text = str(value).translate(_ESCAPES)
    return json.dumps(text, ensure_ascii=False) if not text or " " in text or '"' in text else text


def check_log_format(text: str) -> str:
    """``text`` as a log format (:data:`LOG_FORMATS`), else :class:`InvalidInput`."""
    value = text.strip().lower()
    if value not in LOG_FORMATS:
        raise InvalidInput(
            f"log-format: {' or '.join(LOG_FORMATS)}, got {text!r}", field="log_format"
        )
    return value


LogFormatOption = Annotated[
    str,
    typer.Option(
        "--log-format",
        metavar="text|json",
        envvar=ENV_LOG_FORMAT,
        help="The log on stderr: text lines for people, or one JSON object per line.",
    ),
]
QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet",
        help="Log only warnings and errors (no line per passage, reminder batch or request).",
    ),
]


def configure_logging(level: str = "info", log_format: str = "text") -> None:
    """Send every kalends (and server) log record of ``level`` or above to stderr, one
    line each in ``log_format`` (see :data:`LOG_FORMATS`), for the rest of the process."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in _SERVER_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    logging.getLogger("uvicorn.access").disabled = True
    # Migrations report every step at INFO; a start needs only their warnings.
    logging.getLogger("alembic").setLevel(logging.WARNING)


@contextmanager
def logging_to_stderr(level: str = "info", log_format: str = "text") -> Iterator[None]:
    """:func:`configure_logging` until the block ends, then the logging as it was (a
    command run in a caller's process, as the tests do, leaves it as it found it)."""
    root = logging.getLogger()
    loggers = [logging.getLogger(name) for name in (*_SERVER_LOGGERS, "uvicorn.access", "alembic")]
    saved = (
        root.handlers[:],
        root.level,
        [(lg.handlers[:], lg.propagate, lg.disabled, lg.level) for lg in loggers],
    )
    configure_logging(level, log_format)
    handler = root.handlers[0]
    try:
        yield
    finally:
        handler.flush()
        root.handlers[:], root.level = saved[0], saved[1]
        for logger, (handlers, propagate, disabled, lvl) in zip(loggers, saved[2], strict=True):
            logger.handlers[:] = handlers
            logger.propagate, logger.disabled, logger.level = propagate, disabled, lvl
