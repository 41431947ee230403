"""``kalends question ls|show|answer``: the questions passages ask people.

Members of a workspace read its questions; editors and owners answer them. An answer
given here is recorded as given on the command line and never counts as a person's
decision: that takes an answer in the kalends interface, whose hand-over the passage
confirmed. ``show`` says who decided.
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from uuid import UUID

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from kalends.cli.arguments import WHEN, WorkspaceArgument, check_id, expected_revision_of
from kalends.cli.commands import session_command
from kalends.cli.output import console, emit_json
from kalends.cli.question_client import questions_of
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.session import EXIT_CODES_HELP, LOCAL_MODE_HELP, Session, group_help
from kalends.errors import InvalidInput
from kalends.missions.runtime.passages import parse_instant

__all__ = ["question_app"]

question_app = typer.Typer(
    help=group_help(
        "Questions: what passages ask people, and their answers.",
        "A passage asks with `kalends ask`; members of its workspace read the question "
        "and editors and owners answer it. Only an answer given in the kalends "
        "interface, whose hand-over the passage confirmed, is a person's decision; an "
        "answer given here is recorded as given on the command line.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)

QuestionArgument = Annotated[
    str, typer.Argument(metavar="QUESTION", help="The question's ID (`kalends question ls`).")
]

# A confirm field's words for --set FIELD=VALUE.
TRUE_WORDS = frozenset({"true", "yes", "y", "1"})
FALSE_WORDS = frozenset({"false", "no", "n", "0"})


def _when(value: object) -> str:
    found = parse_instant(value)
    return "-" if found is None else found.strftime(WHEN)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _revision(text: str | None) -> int:
    return expected_revision_of(text, item="question", shown_by="kalends question show", minimum=1)


def decided_in_words(decision: dict[str, Any]) -> str:
    """Who decided, in words: a person (through the interface, confirmed), the passage
    itself, or nobody yet and why."""
    match decision.get("decidedBy"):
        case "human":
            return "decided by: human (confirmed mark)"
        case "coordinator":
            return "decided by: coordinator (the passage itself)"
    return f"not a human decision: {decision.get('cause')}"


def _field_line(field: dict[str, Any]) -> str:
    kind = field.get("kind")
    if kind == "choice":
        shape = "choice: " + ", ".join(str(o) for o in field.get("options", []))
    elif kind == "text":
        shape = f"text, at most {field.get('maxLength')} characters"
    else:
        shape = "confirm: true or false"
    return f"  {field.get('id')} ({shape}): {field.get('label')}"


def _print_question(found: dict[str, Any]) -> None:
    console.print(Text(str(found["prompt"]), style="bold"))
    tag = f", tag {found['tag']}" if found.get("tag") else ""
    console.print(
        Text(
            f"{found['state']}, revision {found['revision']}{tag}; asked "
            f"{_when(found['askedAt'])} by passage {found['passageId']}; id {found['id']}",
            style="dim",
        ),
        soft_wrap=True,
    )
    console.print(Text("fields:"))
    for field in found["fields"]:
        console.print(Text(_field_line(field)), soft_wrap=True)
    answer = found.get("answer")
    if isinstance(answer, dict):
        console.print(Text(f"answer (via {found['answeredVia']}, {_when(found['answeredAt'])}):"))
        order = [str(f["id"]) for f in found["fields"]]
        for key in [*[k for k in order if k in answer], *[k for k in answer if k not in order]]:
            console.print(Text(f"  {key}={_value(answer[key])}"), soft_wrap=True)
    console.print(Text(decided_in_words(found["decision"])), soft_wrap=True)
    for mark in found.get("marks", []):
        confirmed, delivered = mark.get("confirmedAt"), mark.get("deliveredAt")
        if confirmed:
            at = f", confirmed {_when(confirmed)}"
        elif delivered:
            at = f", read by the passage {_when(delivered)} and not acknowledged"
        else:
            at = ", not read by the passage yet"
        console.print(
            Text(f"mark: attempt {mark['attemptId']} {mark['state']}{at}", style="dim"),
            soft_wrap=True,
        )


@session_command(question_app, "ls")
def ls_command(s: Session | Remote, workspace: WorkspaceArgument) -> None:
    """List a workspace's open questions, oldest first (at most 200).

    With --json: a list of questions.
    """
    found_workspace = s.workspaces.get(s.actor, workspace)
    found = questions_of(s).list_open(s.actor, found_workspace.id)
    if s.json_output:
        emit_json(found)
        return
    if not found:
        console.print(Text(f"{found_workspace.name} has no open question", style="dim"))
        return
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False)
    table.add_column("asked", no_wrap=True)
    table.add_column("prompt", overflow="fold", ratio=1)
    table.add_column("id", no_wrap=True, min_width=36)
    for q in found:
        asked = parse_instant(q["askedAt"])
        table.add_row(
            Text("-" if asked is None else asked.strftime("%Y-%m-%d")),
            Text(str(q["prompt"]).splitlines()[0] if q["prompt"] else ""),
            Text(str(q["id"])),
        )
    console.print(table)


@session_command(question_app, "show")
def show_command(s: Session | Remote, question: QuestionArgument) -> None:
    """Show a question, its answer, who decided it and its hand-over marks.

    With --json: the question with "decision" and "marks".
    """
    found = questions_of(s).show(s.actor, check_id(question, "question"))
    if s.json_output:
        emit_json(found)
        return
    _print_question(found)


def _answer_of(
    s: Session | Remote, question: UUID, json_answer: str | None, sets: list[str]
) -> object:
    """The answer of --json-answer, or of the --set pairs (a confirm field's value a
    word: true/yes/1 or false/no/0)."""
    if json_answer is not None and sets:
        raise InvalidInput("answer: give --json-answer or --set, not both", field="answer")
    if json_answer is not None:
        try:
            parsed: object = json.loads(json_answer)
        except ValueError as exc:
            raise InvalidInput(f"answer: --json-answer is no JSON: {exc}", field="answer") from None
        return parsed
    if not sets:
        raise InvalidInput(
            "answer: give --json-answer JSON or --set FIELD=VALUE for each field",
            field="answer",
        )
    pairs: dict[str, str] = {}
    for raw in sets:
        key, found, value = raw.partition("=")
        if not found or not key:
            raise InvalidInput(f"answer: --set expects FIELD=VALUE, got {raw!r}", field="answer")
        if key in pairs:
            raise InvalidInput(f"answer.{key}: set twice", field=f"answer.{key}")
        pairs[key] = value
    kinds = {str(f["id"]): f.get("kind") for f in questions_of(s).show(s.actor, question)["fields"]}
    answer: dict[str, str | bool] = {}
    for key, value in pairs.items():
        if kinds.get(key) != "confirm":
            answer[key] = value
        elif value.strip().lower() in TRUE_WORDS:
            answer[key] = True
        elif value.strip().lower() in FALSE_WORDS:
            answer[key] = False
        else:
            raise InvalidInput(
                f"answer.{key}: must be true or false, got {value!r}", field=f"answer.{key}"
            )
    return answer


@session_command(question_app, "answer")
def answer_command(
    s: Session | Remote,
    question: QuestionArgument,
    expect: Annotated[
        str | None,
        typer.Option(
            "--expect",
            metavar="REV",
            help="The question's revision you last read (`kalends question show`).",
            show_default=False,
        ),
    ] = None,
    json_answer: Annotated[
        str | None,
        typer.Option(
            "--json-answer",
            metavar="JSON",
            help='The whole answer as a JSON object, e.g. {"go": "yes"}.',
            show_default=False,
        ),
    ] = None,
    set_values: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="FIELD=VALUE",
            help="One field's value (repeat for each field).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Answer an open question (editors and owners).

    The answer is recorded as given on the command line: it is no person's
    decision, which only an answer in the kalends interface can be. With --json:
    the question with "decision" and "marks".
    """
    question_id = check_id(question, "question")
    revision = _revision(expect)
    answer = _answer_of(s, question_id, json_answer, set_values or [])
    done = questions_of(s).answer(s.actor, question_id, answer, revision)
    if s.json_output:
        emit_json(done)
        return
    console.print(
        Text(f"answered question {done['id']} (revision {done['revision']})"), soft_wrap=True
    )
    console.print(Text(decided_in_words(done["decision"]), style="dim"), soft_wrap=True)
    s.local_note()
