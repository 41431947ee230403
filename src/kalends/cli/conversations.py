"""``kalends conversation new|ls|show|post|edit|rm``: threads of messages in a workspace.

Members of a workspace read its conversations (threads people post to, and each
passage's transcript); editors start threads and post; a message's author (or a
workspace owner) rewrites or deletes it, naming the revision last read with
``--expect``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Annotated
from uuid import UUID

import typer
from rich import box
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from kalends.cli.arguments import WHEN, WorkspaceArgument, check_id, expected_revision_of
from kalends.cli.commands import session_command
from kalends.cli.conversation_client import MessagePage, conversations_of
from kalends.cli.output import console, emit_json
from kalends.cli.remote import SERVER_MODE_HELP, Remote
from kalends.cli.session import EXIT_CODES_HELP, LOCAL_MODE_HELP, Session, group_help
from kalends.conversations import MAX_PAGE, MAX_TITLE, Conversation, Message
from kalends.errors import InvalidInput

__all__ = ["conversation_app"]

conversation_app = typer.Typer(
    help=group_help(
        "Conversations: threads of messages in a workspace.",
        "Every member of a workspace reads its conversations: the threads people post "
        "to and each passage's transcript. Editors and owners start threads and post; "
        "a message's author, or an owner of the workspace, rewrites or deletes it.",
        LOCAL_MODE_HELP,
        SERVER_MODE_HELP,
        EXIT_CODES_HELP,
    ),
    no_args_is_help=True,
)

ConversationArgument = Annotated[
    str,
    typer.Argument(
        metavar="CONVERSATION", help="The conversation's ID (`kalends conversation ls`)."
    ),
]
MessageArgument = Annotated[
    str,
    typer.Argument(metavar="MESSAGE", help="The message's ID (`kalends conversation show`)."),
]
TextArgument = Annotated[
    str, typer.Argument(metavar="TEXT", help="The message's text; `-` reads standard input.")
]
ExpectOption = Annotated[
    str | None,
    typer.Option(
        "--expect",
        metavar="REV",
        help="The message's revision you last read (`kalends conversation show`).",
        show_default=False,
    ),
]


def _text(given: str) -> str:
    """TEXT as given, or standard input's for ``-`` (less one final newline)."""
    if given != "-":
        return given
    return sys.stdin.read().removesuffix("\n")


def _title(title: str) -> str:
    """A title as the service takes it: one line, 1 to MAX_TITLE characters."""
    clean = title.strip()
    if not clean:
        raise InvalidInput("title: must be a non-empty string", field="title")
    if len(clean) > MAX_TITLE:
        raise InvalidInput(
            f"title: at most {MAX_TITLE} characters, got {len(clean)}", field="title"
        )
    if any(ch < " " or ch == "\x7f" for ch in clean):
        raise InvalidInput("title: control characters are not allowed in a title", field="title")
    return clean


def _revision(text: str | None) -> int:
    return expected_revision_of(
        text, item="message", shown_by="kalends conversation show", minimum=0
    )


def _state(m: Message) -> str:
    return "complete" if m.complete else "open"


def _authors(s: Session | Remote, messages: list[Message]) -> Mapping[UUID, str]:
    """The handles of the messages' authors, by actor ID (none asked for when no person
    wrote any of them)."""
    if not any(m.author_actor_id for m in messages):
        return {}
    return {a.id: a.handle for a in s.directory.actors()}


def _author(m: Message, handles: Mapping[UUID, str]) -> str:
    if m.author_actor_id is not None:
        return handles.get(m.author_actor_id, str(m.author_actor_id))
    return m.author_passage_id or "-"


@session_command(conversation_app, "new")
def new_command(
    s: Session | Remote,
    workspace: WorkspaceArgument,
    title: Annotated[
        str, typer.Argument(metavar="TITLE", help=f"One line of at most {MAX_TITLE} characters.")
    ],
) -> None:
    """Start a thread in a workspace (editors and owners).

    With --json: the conversation.
    """
    clean = _title(title)
    found = s.workspaces.get(s.actor, workspace)
    made = conversations_of(s).create(s.actor, found.id, clean)
    if s.json_output:
        emit_json(made.to_json())
        return
    console.print(Text(f"started {made.title!r} in {found.name}"), soft_wrap=True)
    console.print(Text(f"id {made.id}", style="dim"), soft_wrap=True)
    s.local_note()


@session_command(conversation_app, "ls")
def ls_command(s: Session | Remote, workspace: WorkspaceArgument) -> None:
    """List a workspace's conversations, newest activity first.

    With --json: a list of conversations.
    """
    found_workspace = s.workspaces.get(s.actor, workspace)
    found = conversations_of(s).list(s.actor, found_workspace.id)
    if s.json_output:
        emit_json([c.to_json() for c in found])
        return
    if not found:
        console.print(Text(f"{found_workspace.name} has no conversation", style="dim"))
        return
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False)
    table.add_column("updated", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("title", overflow="fold", ratio=1)
    table.add_column("id", no_wrap=True, min_width=36)
    for c in found:
        table.add_row(
            Text(c.updated_at.strftime("%Y-%m-%d")),
            Text(c.state.value),
            Text(c.title),
            Text(str(c.id)),
        )
    console.print(table)


def _show_conversation(c: Conversation) -> None:
    console.print(Text(c.title, style="bold"))
    console.print(
        Text(
            f"{c.kind.value}, {c.state.value}, revision {c.revision}, "
            f"last seq {c.last_seq}; id {c.id}",
            style="dim",
        ),
        soft_wrap=True,
    )


@session_command(conversation_app, "show")
def show_command(
    s: Session | Remote,
    conversation: ConversationArgument,
    after: Annotated[
        int,
        typer.Option(
            "--after", metavar="SEQ", help="Only the messages after this seq (0: the first)."
        ),
    ] = 0,
    limit: Annotated[
        int,
        typer.Option("--limit", metavar="N", help=f"At most N messages (1 to {MAX_PAGE})."),
    ] = MAX_PAGE,
) -> None:
    """Show a conversation and a page of its messages, by seq.

    Each message: its seq, author, role, state (complete or open), time,
    revision and ID, then its text.
    With --json: {"conversation", "messages", "nextAfterSeq"}, where
    nextAfterSeq is the --after of the next page, or null.
    """
    cid = check_id(conversation, "conversation")
    client = conversations_of(s)

    def read() -> tuple[Conversation, MessagePage]:
        return (
            client.get(s.actor, cid),
            client.page(s.actor, cid, after_seq=after, limit=limit),
        )

    found, page = s.read_together(read)
    if s.json_output:
        emit_json(
            {
                "conversation": found.to_json(),
                "messages": [m.to_json() for m in page.messages],
                "nextAfterSeq": page.next_after_seq,
            }
        )
        return
    _show_conversation(found)
    handles = _authors(s, page.messages)
    if not page.messages:
        console.print(Text("no message here", style="dim"))
    for m in page.messages:
        console.print()
        head = Text.assemble(
            (f"#{m.seq}", "bold"),
            f" {_author(m, handles)} ({m.role.value}) {_state(m)} ",
            m.created_at.strftime(WHEN),
        )
        console.print(head, soft_wrap=True)
        console.print(Text(f"revision {m.revision}, id {m.id}", style="dim"), soft_wrap=True)
        console.print(Padding(Text(m.text), (0, 0, 0, 2), expand=False))
    if page.next_after_seq is not None:
        console.print()
        console.print(
            Text(f"more: kalends conversation show {cid} --after {page.next_after_seq}"),
            soft_wrap=True,
        )


@session_command(conversation_app, "post")
def post_command(
    s: Session | Remote, conversation: ConversationArgument, text: TextArgument
) -> None:
    """Post a message to a thread as the acting actor.

    With --json: the message.
    """
    cid = check_id(conversation, "conversation")
    made = conversations_of(s).post(s.actor, cid, _text(text))
    if s.json_output:
        emit_json(made.to_json())
        return
    console.print(Text(f"posted #{made.seq} (revision {made.revision})"), soft_wrap=True)
    console.print(Text(f"id {made.id}", style="dim"), soft_wrap=True)
    s.local_note()


@session_command(conversation_app, "edit")
def edit_command(
    s: Session | Remote, message: MessageArgument, text: TextArgument, expect: ExpectOption = None
) -> None:
    """Rewrite a message: your own, or any in a workspace you own.

    Its seq stays; its revision and digest change.
    With --json: the message.
    """
    mid = check_id(message, "message")
    expected = _revision(expect)
    changed = conversations_of(s).edit(s.actor, mid, _text(text), expected)
    if s.json_output:
        emit_json(changed.to_json())
        return
    console.print(Text(f"rewrote #{changed.seq} (revision {changed.revision})"), soft_wrap=True)
    s.local_note()


@session_command(conversation_app, "rm")
def rm_command(s: Session | Remote, message: MessageArgument, expect: ExpectOption = None) -> None:
    """Delete a message: your own, or any in a workspace you own.

    Its seq is never handed out again.
    With --json: {"deleted": ID}.
    """
    mid = check_id(message, "message")
    expected = _revision(expect)
    conversations_of(s).delete(s.actor, mid, expected)
    if s.json_output:
        emit_json({"deleted": str(mid)})
        return
    console.print(Text(f"deleted message {mid}"), soft_wrap=True)
    s.local_note()
