"""Agent profiles: presets for the command-line agents a passage can run, the placeholders
a profile's command may hold, and how kalends reads an agent's final message.

**Placeholders.** A profile's command is a list of arguments, run without a shell. An
argument may hold ``{objective}``, ``{notes}``, ``{prompt}`` (the passage's whole start
text: title, objective, notes, what launched it, the condition's proof and the watched
messages, within :data:`MAX_PROMPT_CHARS`), ``{input_file}`` (the path of the passage's
input file), ``{passage_id}`` and ``{workspace}``; each is replaced inside its argument,
which stays one argument whatever the value holds (quotes, spaces, newlines).
``{{name}}`` is the literal text ``{name}``. Every other brace is literal as written
(``awk '{print $1}'``, ``find -exec {} ;``, a shell's ``${HOME}``, JSON), so commands
written before placeholders keep their meaning. A name in braces that is not a
placeholder (``{objectve}``) is refused when the profile is configured
(:func:`check_placeholders`); a stored profile is substituted as it is, unknown names
left as written (:func:`substitute`).

**Presets** (:data:`PRESETS`): ``profile.agent`` names one; a profile that names a preset
and no command runs the preset's. A preset says how kalends reads the agent's final
message (:class:`FinalMessage`): when the passage's command exits 0 without a report of
its own (``kalends report``), the final message found in its output settles the passage
``completed`` with that message as the summary. A report always wins; a non-zero exit, a
signal or an interrupt settle as they do for any command. The output read is the
passage's ``output.log``: the command's standard output and error as the runtime records
them, kalends' own ``[kalends]`` notes left out.

**Play** (:func:`refuse_missing_agent`): a schedule whose profile names a preset is
refused at Play when the program it would run is not on the passage's ``PATH`` (the
profile's own ``PATH`` when it sets one, else the runtime's).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from kalends.conversations import MAX_START_CHARS
from kalends.errors import InvalidInput
from kalends.missions.limits import MAX_INSTRUCTION_CHARS
from kalends.missions.runtime.isolation import default_path
from kalends.missions.stored_text import stored_size

if TYPE_CHECKING:
    from kalends.missions.config_profile import Profile

__all__ = [
    "FINAL_LINES",
    "FINAL_OUTPUT_BYTES",
    "MAX_ARG_BYTES",
    "MAX_COMMAND_BYTES",
    "MAX_PROMPT_CHARS",
    "PLACEHOLDERS",
    "PRESETS",
    "FinalMessage",
    "Preset",
    "check_placeholders",
    "final_message",
    "final_message_of",
    "passage_path",
    "preset_named",
    "prompt_text",
    "refuse_missing_agent",
    "substitute",
]

# Seed 002 "Settlement, result and watched cursors": the whole start text fits the
# 16,384-character lifecycle input; ``{prompt}`` is that text, never more.
MAX_PROMPT_CHARS = MAX_START_CHARS
# Linux's bound on one argument of a program (MAX_ARG_STRLEN, 32 pages of 4 KiB, its
# terminating NUL included): a substituted argument that could pass it is refused at
# configuration, counting every character of a value as 4 UTF-8 bytes.
MAX_ARG_BYTES = 32 * 4096 - 1
# kalends decision: a substituted command takes at most 1 MiB, half of Linux's usual
# 2 MiB for arguments and environment together.
MAX_COMMAND_BYTES = 1024 * 1024
# kalends decision: the final message is looked for in the last 256 KiB of the output
# (an agent's closing JSON object carries its usage and cost beside the result).
FINAL_OUTPUT_BYTES = 256 * 1024
# kalends decision: a ``last-lines`` agent's final message is its last paragraph (the
# non-empty lines after the last blank line), at most its last 40 lines and a summary's
# bytes (MAX_SUMMARY_BYTES), its end kept.
FINAL_LINES = 40
# A path on Linux is at most PATH_MAX (4096) bytes; a passage ID is a short token.
_PATH_CHARS = 4096
_ID_CHARS = 64
_UTF8_MAX = 4

PLACEHOLDERS = ("objective", "notes", "prompt", "input_file", "passage_id", "workspace")
"""The names a profile's command may hold in braces."""

# ``{{name}}`` (an escape) or ``{name}`` not after a ``$`` (a shell's ``${NAME}``).
_TOKEN = re.compile(
    r"\{\{(?P<escaped>[A-Za-z_][A-Za-z0-9_]*)\}\}|(?<!\$)\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}"
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_NOTE = "[kalends] "


class FinalMessage(StrEnum):
    """How kalends reads an agent's final message from its output."""

    JSON_RESULT = "json-result"
    """The ``result`` text of the last JSON object printed (``is_error`` not true)."""
    LAST_LINES = "last-lines"
    """The last non-empty lines printed, after the last blank line (at most
    :data:`FINAL_LINES`, within a summary's bytes)."""
    NONE = "none"
    """None: the exit status and the passage's own report only."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """A command-line agent kalends knows how to run and read."""

    name: str
    command: tuple[str, ...]
    reports: str
    final: FinalMessage

    @property
    def executable(self) -> str:
        return self.command[0]

    def to_json(self, *, on_path: bool | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "command": list(self.command),
            "executable": self.executable,
            "finalMessage": self.final.value,
            "reports": self.reports,
        }
        if on_path is not None:
            out["onPath"] = on_path
        return out


_COMPLETES = (
    "kalends settles the passage completed with that message as its summary when the "
    "command exits 0 without a report of its own; a report made with kalends report wins."
)

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            name="claude",
            command=("claude", "-p", "{prompt}", "--output-format", "json"),
            final=FinalMessage.JSON_RESULT,
            reports="Claude Code in print mode works without asking and, when it ends, prints "
            "one JSON object whose result field is its final message (is_error true: "
            f"none). {_COMPLETES}",
        ),
        Preset(
            name="codex",
            command=("codex", "exec", "{prompt}"),
            final=FinalMessage.LAST_LINES,
            reports="Codex in exec mode works without asking and prints its final message "
            f"last. {_COMPLETES}",
        ),
        Preset(
            name="opencode",
            command=("opencode", "run", "{prompt}"),
            final=FinalMessage.LAST_LINES,
            reports="opencode run works without asking and prints its final message last. "
            f"{_COMPLETES}",
        ),
        Preset(
            name="gemini",
            command=("gemini", "-p", "{prompt}"),
            final=FinalMessage.LAST_LINES,
            reports="Gemini CLI with -p answers the prompt without asking and prints its "
            f"final message last. {_COMPLETES}",
        ),
        Preset(
            name="aider",
            command=("aider", "--yes-always", "--message", "{prompt}"),
            final=FinalMessage.LAST_LINES,
            reports="aider with --message does the one request and exits; --yes-always "
            f"answers its questions, so it never waits for input. {_COMPLETES}",
        ),
        Preset(
            name="shell",
            command=("sh", "-c", "{objective}"),
            final=FinalMessage.NONE,
            reports="The objective is a shell script run by sh -c. Its exit status and its "
            "own kalends report decide: exit 0 without a report ends without a report, "
            "non-zero fails.",
        ),
    )
}
"""The presets by name, in the order ``kalends profile presets`` lists them."""


def preset_named(name: object, field: str = "profile.agent") -> Preset:
    """The preset called ``name``; :class:`InvalidInput` on ``field`` naming the known ones."""
    found = PRESETS.get(name) if isinstance(name, str) else None
    if found is None:
        raise InvalidInput(
            f"{field}: unknown agent preset {name!r}; known: {', '.join(PRESETS)}"[:400],
            field=field,
        )
    return found


def _worst_chars(name: str) -> int:
    """The most characters a placeholder's value can hold."""
    if name == "prompt":
        return MAX_PROMPT_CHARS
    if name in ("objective", "notes"):
        return MAX_INSTRUCTION_CHARS
    if name == "passage_id":
        return _ID_CHARS
    return _PATH_CHARS


def check_placeholders(command: Sequence[str], field: str = "profile.command") -> None:
    """Refuse (:class:`InvalidInput` on ``field[i]``) an argument holding a name in braces
    that is not a placeholder, listing the known ones, and a command whose substituted
    arguments could pass :data:`MAX_ARG_BYTES` each or :data:`MAX_COMMAND_BYTES` in all."""
    total = 0
    for i, arg in enumerate(command):
        names: list[str] = []
        for match in _TOKEN.finditer(arg):
            name = match.group("name")
            if name is None:
                continue
            if name not in PLACEHOLDERS:
                known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                raise InvalidInput(
                    f"{field}[{i}]: unknown placeholder {{{name}}}; known: {known} "
                    f"(write {{{{{name}}}}} for the literal text {{{name}}})",
                    field=f"{field}[{i}]",
                )
            names.append(name)
        # objective and notes are at most MAX_INSTRUCTION_CHARS together.
        instructions = max(names.count("objective"), names.count("notes")) * MAX_INSTRUCTION_CHARS
        others = sum(_worst_chars(n) for n in names if n not in ("objective", "notes"))
        literal = _TOKEN.sub(lambda m: "" if m.group("name") else m.group(0)[1:-1], arg)
        worst = len(literal.encode()) + _UTF8_MAX * (instructions + others)
        if worst > MAX_ARG_BYTES:
            raise InvalidInput(
                f"{field}[{i}]: substituted, this argument could take {worst:,} bytes, over "
                f"the {MAX_ARG_BYTES:,} bytes a program takes in one argument; put the "
                "placeholders in arguments of their own",
                field=f"{field}[{i}]",
            )
        total += worst + 1
    if total > MAX_COMMAND_BYTES:
        raise InvalidInput(
            f"{field}: substituted, the command could take {total:,} bytes, over "
            f"{MAX_COMMAND_BYTES:,}; use fewer placeholders",
            field=field,
        )


def substitute(command: Sequence[str], values: Mapping[str, str]) -> tuple[str, ...]:
    """``command`` with each placeholder replaced by its value in ``values``, each
    argument a whole string (no shell, no splitting); ``{{name}}`` becomes ``{name}``; a
    name without a value stays as written."""

    def one(match: re.Match[str]) -> str:
        escaped = match.group("escaped")
        if escaped is not None:
            return "{" + escaped + "}"
        name = match.group("name")
        return values.get(name, match.group(0))

    return tuple(_TOKEN.sub(one, arg) for arg in command)


def prompt_text(passage_input: Mapping[str, Any]) -> str:
    """The passage's whole start text from its input document, within
    :data:`MAX_PROMPT_CHARS`: the title, objective and notes, what launched it, and the
    watched conversations' messages as its conversation's first message says them, then
    the condition's proof in the room left (cut, marked, when it does not fit)."""
    lines = [str(passage_input.get("title") or "")]
    if passage_input.get("objective"):
        lines.append(f"Objective: {passage_input['objective']}")
    if passage_input.get("notes"):
        lines.append(f"Notes: {passage_input['notes']}")
    slot = passage_input.get("slot")
    if passage_input.get("trigger") == "manual":
        lines.append("Launched by Run now.")
    elif isinstance(slot, str):
        lines.append(f"Launched for the slot {slot.replace('+00:00', 'Z')}.")
    head = "\n".join(lines)
    watched = _watched(passage_input.get("watched"))
    proof = passage_input.get("proof")
    tail = f"\n\n{watched}" if watched else ""
    if proof:
        said = "Condition proof: " + json.dumps(proof, ensure_ascii=False, separators=(",", ":"))
        room = MAX_PROMPT_CHARS - len(head) - len(tail) - 1
        if len(said) > room:
            said = said[: max(room - 1, 0)] + "…" if room > 0 else ""
        if said:
            head += "\n" + said
    return (head + tail)[:MAX_PROMPT_CHARS]


def _watched(reads: object) -> str:
    """The watched part of the start text from the input's ``watched`` list, in the words
    of :func:`~kalends.missions.watching.watched_text`."""
    if not isinstance(reads, list):
        return ""
    parts: list[str] = []
    for read in reads:
        if not isinstance(read, Mapping):
            continue
        heading = f"Watched conversation {read.get('conversationId')}"
        if read.get("failure") is not None:
            parts.append(f"{heading}: not read ({read['failure']}).")
            continue
        messages = read.get("messages") or []
        lines = [f"{heading}: {len(messages)} new message(s)."]
        lines.extend(json.dumps(m, ensure_ascii=False, separators=(",", ":")) for m in messages)
        if read.get("needsDecision") is not None:
            lines.append(
                json.dumps(read["needsDecision"], ensure_ascii=False, separators=(",", ":"))
            )
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def final_message_of(agent: object) -> FinalMessage:
    """How the final message of a passage whose profile names ``agent`` is read (none
    for no agent, or one this kalends does not know)."""
    found = PRESETS.get(agent) if isinstance(agent, str) else None
    return FinalMessage.NONE if found is None else found.final


def final_message(reader: FinalMessage, output: bytes, limit: int) -> str | None:
    """The agent's final message in the end of its ``output``, as ``reader`` says, within
    ``limit`` stored bytes (a summary's bound); ``None`` when there is none."""
    if reader is FinalMessage.NONE:
        return None
    text = _ANSI.sub("", output[-FINAL_OUTPUT_BYTES:].decode("utf-8", errors="replace"))
    lines = [line for line in text.split("\n") if not line.startswith(_NOTE)]
    if reader is FinalMessage.JSON_RESULT:
        return _json_result(lines)
    kept: list[str] = []
    used = 0
    for raw in reversed(lines):
        line = raw.rstrip()
        if not line:
            if kept:
                break  # the final message is the last paragraph
            continue
        used += stored_size(line) + 2
        if len(kept) == FINAL_LINES or (kept and used > limit):
            break
        kept.append(line)
    if not kept:
        return None
    found = "\n".join(reversed(kept))
    while stored_size(found) > limit:  # one long line: its end is kept
        found = found[len(found) // 8 + 1 :]
    return found.strip() or None


def _json_result(lines: list[str]) -> str | None:
    """The ``result`` of the last JSON object printed, on one line or over several."""
    text = "\n".join(lines)
    decoder = json.JSONDecoder()
    starts = [0] if text.startswith("{") else []
    starts += [m.start() + 1 for m in re.finditer(r"\n(?=\s*\{)", text)]
    for start in reversed(starts):
        try:
            found, _ = decoder.raw_decode(text[start:].lstrip())
        except ValueError:
            continue
        if isinstance(found, dict) and isinstance(found.get("result"), str):
            if found.get("is_error") is True:
                return None
            return found["result"].strip() or None
    return None


def passage_path(env: Mapping[str, str]) -> str:
    """The ``PATH`` a passage gets: its profile's own when it sets one, else the runtime's."""
    return env.get("PATH") or default_path()


def refuse_missing_agent(profile: Profile) -> InvalidInput | None:
    """What Play answers a schedule whose profile names an agent preset when the program
    it would run is not on the passage's ``PATH`` (or, given as a path, is not an
    executable file); ``None`` when it can run, or the profile names no preset."""
    if profile.agent is None or not profile.command:
        return None
    program = profile.command[0]
    path = passage_path(dict(profile.env))
    if os.sep in program:
        found = os.path.isfile(program) and os.access(program, os.X_OK)
    else:
        found = shutil.which(program, path=path) is not None
    if found:
        return None
    return InvalidInput(
        f"play: the agent CLI `{program}` is not on PATH ({path}): install it or pick "
        "another preset",
        field="profile.agent",
    )
