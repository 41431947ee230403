"""The conversation pages without a browser, on SQLite and PostgreSQL: a workspace's
conversations and the form that starts one, a conversation's messages a page at a time
with their authors and whether they are still being written, the form that posts to a
thread, a passage's conversation without one; each refusal said beside its field with
the typed text kept and nothing written."""

from __future__ import annotations

import re
from uuid import UUID

from fastapi.testclient import TestClient

from kalends.conversations import Conversation, open_passage_conversation, passage_say
from pages.conftest import Pages, csrf_of


def _alice(pages: Pages) -> UUID:
    return pages.world.actors["alice"].id


def _thread(pages: Pages, title: str = "Planning") -> Conversation:
    return pages.world.services.conversations.create(_alice(pages), pages.world.home.id, title)


def _bob(pages: Pages) -> tuple[TestClient, str]:
    client = pages.sign_in("bob")
    return client, csrf_of(client.get("/").text)


def _count(pages: Pages) -> int:
    return len(pages.world.services.conversations.list(_alice(pages), pages.world.home.id))


def _field_error(html: str, field: str) -> str:
    found = re.search(rf'<p class="error" id="err-{field}">([^<]*)</p>', html)
    assert found is not None, f"no error beside {field}"
    return found.group(1)


class TestTheList:
    def test_it_lists_the_workspaces_conversations_and_starts_one(self, pages: Pages) -> None:
        _thread(pages, "Planning")
        client, csrf = _bob(pages)
        url = f"/w/{pages.world.home.id}/conversations"
        page = client.get(url).text
        assert "<h1>Conversations — home</h1>" in page
        assert ">Planning</a>" in page and "open</span>" in page
        # The schedules page links here.
        schedules = client.get(f"/w/{pages.world.home.id}/schedules").text
        assert f'href="{url}"' in schedules

        made = client.post(url, data={"csrf": csrf, "title": "  Trip  "}, follow_redirects=False)
        assert made.status_code == 303
        assert made.headers["location"].endswith("?done=created")
        shown = client.get(made.headers["location"]).text
        assert "<h1>Trip</h1>" in shown and "Conversation started." in shown
        assert _count(pages) == 2

    def test_a_bad_title_is_refused_beside_its_field_and_nothing_is_written(
        self, pages: Pages
    ) -> None:
        client, csrf = _bob(pages)
        url = f"/w/{pages.world.home.id}/conversations"
        empty = client.post(url, data={"csrf": csrf, "title": "   "})
        assert empty.status_code == 422
        assert _field_error(empty.text, "title") == "Must be a non-empty string"
        long = client.post(url, data={"csrf": csrf, "title": "x" * 201})
        assert long.status_code == 422 and 'value="' + "x" * 201 + '"' in long.text
        assert _field_error(long.text, "title") == "At most 200 characters, got 201"
        control = client.post(url, data={"csrf": csrf, "title": "a\x07b"})
        assert control.status_code == 422
        assert _field_error(control.text, "title").startswith("Control characters")
        assert _count(pages) == 0

    def test_a_viewer_reads_without_a_form_and_a_stranger_gets_nothing(self, pages: Pages) -> None:
        _thread(pages)
        url = f"/w/{pages.world.home.id}/conversations"
        carol = pages.sign_in("carol").get(url)
        assert carol.status_code == 200 and "Planning" in carol.text
        assert "Start the conversation" not in carol.text
        assert pages.sign_in("dave").get(url).status_code == 404


class TestAConversation:
    def test_posting_shows_the_message_with_its_author_escaped(self, pages: Pages) -> None:
        thread = _thread(pages)
        client, csrf = _bob(pages)
        url = f"/conversations/{thread.id}"
        reply = client.post(
            f"{url}/messages",
            data={"csrf": csrf, "text": "Bring <script>x()</script>\nand snacks"},
            follow_redirects=False,
        )
        assert reply.status_code == 303
        assert reply.headers["location"] == f"{url}?after=0&done=posted#message-1"
        page = client.get(reply.headers["location"]).text
        assert "Message posted." in page
        assert 'id="message-1"' in page and "<strong>bob</strong>" in page
        assert "Bring &lt;script&gt;x()&lt;/script&gt;\nand snacks" in page
        assert "<script>x()" not in page
        saved = pages.world.services.conversations.messages(_alice(pages), thread.id)
        assert [(m.seq, m.text, m.author_actor_id) for m in saved] == [
            (1, "Bring <script>x()</script>\nand snacks", pages.world.actors["bob"].id)
        ]

    def test_a_bad_message_is_refused_with_the_text_kept_and_nothing_written(
        self, pages: Pages
    ) -> None:
        thread = _thread(pages)
        client, csrf = _bob(pages)
        url = f"/conversations/{thread.id}/messages"
        empty = client.post(url, data={"csrf": csrf, "text": ""})
        assert empty.status_code == 422
        assert _field_error(empty.text, "text") == "Must be a non-empty string"
        nul = client.post(url, data={"csrf": csrf, "text": "a\x00b"})
        assert nul.status_code == 422
        assert _field_error(nul.text, "text") == "A NUL character is not allowed"
        too_long = "y" * 65_537
        long = client.post(url, data={"csrf": csrf, "text": too_long})
        assert long.status_code == 422 and f">{too_long}</textarea>" in long.text
        unknown = client.post(
            "/conversations/00000000-0000-4000-8000-000000000000/messages",
            data={"csrf": csrf, "text": "hi"},
        )
        assert unknown.status_code == 404
        assert pages.world.services.conversations.get(_alice(pages), thread.id).last_seq == 0

    def test_a_page_at_a_time_with_messages_still_being_written(self, pages: Pages) -> None:
        thread = _thread(pages)
        service = pages.world.services.conversations
        alice = _alice(pages)
        for n in range(1, 101):
            service.post(alice, thread.id, f"note {n}")
        service.post(alice, thread.id, "half a thought", complete=False)
        client, _ = _bob(pages)
        first = client.get(f"/conversations/{thread.id}").text
        assert first.count('class="message ') == 100
        assert "note 100" in first and "half a thought" not in first
        assert f'href="/conversations/{thread.id}?after=100"' in first
        later = client.get(f"/conversations/{thread.id}?after=100").text
        assert later.count('class="message ') == 1
        assert 'class="message user writing" id="message-101"' in later
        assert "still being written" in later
        assert client.get(f"/conversations/{thread.id}?after=-1").status_code == 422
        assert client.get(f"/conversations/{thread.id}?after=x").status_code == 422

    def test_a_passages_conversation_has_no_form_and_refuses_a_forged_post(
        self, pages: Pages
    ) -> None:
        sid = pages.schedule("alice", "Nightly")
        store = pages.world.services.store
        with store.transaction() as conn:
            now = store.clock.now()
            found = open_passage_conversation(
                conn,
                now,
                workspace_id=pages.world.home.id,
                schedule_id=UUID(sid),
                passage_id="psg_pages_1",
                title="Nightly passage",
                input_text="Tidy the notes",
            )
            passage_say(conn, now, "psg_pages_1", "Done tidying")
        client, csrf = _bob(pages)
        page = client.get(f"/conversations/{found.id}").text
        assert "The conversation of passage <code>psg_pages_1</code>" in page
        assert "Tidy the notes" in page and "passage psg_pages_1" in page
        assert "Only its passage writes to this conversation." in page
        assert "<textarea" not in page
        forged = client.post(
            f"/conversations/{found.id}/messages", data={"csrf": csrf, "text": "me too"}
        )
        assert forged.status_code == 409
        assert "written by its passage" in forged.text
        assert pages.world.services.conversations.get(_alice(pages), found.id).last_seq == 2
