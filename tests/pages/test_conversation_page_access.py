"""Who may open or post the conversation pages (:mod:`kalends.web.pages_conversations`):
a table with a row per route, each asked by someone signed out, by a non-member of the
workspace (dave), a viewer (carol), the editor with a forged CSRF token and the editor
(bob). A route of the module in no row fails the suite. A refused post writes nothing:
the workspace's conversations and the thread's messages are the same after it."""

from __future__ import annotations

from pages.access_support import Row, ask_refused_then_editor, assert_every_route_has_its_row
from pages.conftest import Pages
from pages.test_page_access import member_read, member_write

MODULE = ("kalends.web.pages_conversations",)

# The paths' fields: {ws} the workspace, {c} the conversation.
ROWS = [
    Row("GET", "/w/{workspace}/conversations", "/w/{ws}/conversations", None, member_read()),
    Row(
        "POST",
        "/w/{workspace}/conversations",
        "/w/{ws}/conversations",
        {"title": "From the table"},
        member_write(303),
    ),
    Row("GET", "/conversations/{conversation}", "/conversations/{c}", None, member_read()),
    Row(
        "POST",
        "/conversations/{conversation}/messages",
        "/conversations/{c}/messages",
        {"text": "From the table"},
        member_write(303),
    ),
]


def test_every_route_of_the_conversation_pages_has_its_row(pages: Pages) -> None:
    assert_every_route_has_its_row(pages, MODULE, ROWS, ("GET", "/conversations/{conversation}"))


def test_each_persona_gets_what_its_role_allows_and_a_refusal_writes_nothing(
    pages: Pages,
) -> None:
    world = pages.world
    service = world.services.conversations
    alice = world.actors["alice"].id
    thread = service.create(alice, world.home.id, "Planning")
    ids = {"ws": str(world.home.id), "c": str(thread.id)}

    def state() -> tuple[int, int]:
        return (
            len(service.list(alice, world.home.id)),
            service.get(alice, thread.id).last_seq,
        )

    before = state()
    ask_refused_then_editor(pages, ROWS, ids, state)
    assert state() == (before[0] + 1, before[1] + 1)
