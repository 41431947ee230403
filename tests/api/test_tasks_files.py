"""Attachments (upload, download, size limit) and reminder status over HTTP."""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import update

from api.conftest import ApiWorld
from api.test_tasks_support import ZONE, invalid, new_task, ok, refused, schedule
from kalends.api.routes.tasks_models import AttachmentOut, IntentOut
from kalends.errors import InvalidInput
from kalends.reminders.outbox import Outbox
from kalends.storage.task_tables import attachments
from kalends.storage.testing import nothing_written
from kalends.tasks.values import MAX_ATTACHMENT_BYTES


def upload(
    api: ApiWorld,
    task: dict[str, Any],
    who: str = "alice",
    name: str = "notes.txt",
    data: bytes = b"hello, world\n",
    media: str = "text/plain",
) -> Any:
    return api.client.post(
        f"/api/tasks/{task['ref']}/attachments",
        files={"file": (name, data, media)},
        headers=api.headers(who),
    )


class TestAttachments:
    def test_an_upload_downloads_byte_for_byte(self, api: ApiWorld) -> None:
        task = new_task(api)
        data = bytes(range(256)) * 40
        made = ok(upload(api, task, "bob", "scan.pdf", data, "application/pdf"), 201)
        AttachmentOut.model_validate(made)
        assert (made["name"], made["media_type"], made["size"]) == (
            "scan.pdf",
            "application/pdf",
            len(data),
        )
        assert made["sha256"] == hashlib.sha256(data).hexdigest()
        meta, stored = api.services.tasks.attachment(api.actors["alice"].id, UUID(made["id"]))
        assert (stored, meta.name) == (data, "scan.pdf")
        listed = ok(
            api.client.get(f"/api/tasks/{task['ref']}/attachments", headers=api.headers("carol"))
        )
        assert listed == [made]
        got = api.client.get(f"/api/attachments/{made['id']}", headers=api.headers("carol"))
        assert got.status_code == 200
        assert got.content == data
        assert got.headers["content-type"] == "application/pdf"
        assert got.headers["content-disposition"] == (
            "attachment; filename=\"scan.pdf\"; filename*=UTF-8''scan.pdf"
        )
        assert got.headers["x-content-type-options"] == "nosniff"

    def test_the_form_may_name_the_file_and_its_type(self, api: ApiWorld) -> None:
        task = new_task(api)
        made = ok(
            api.client.post(
                f"/api/tasks/{task['ref']}/attachments",
                files={"file": ("x.bin", b"a,b\n", "application/octet-stream")},
                data={"name": 'Überweisung "März".csv', "mediaType": "text/csv; charset=utf-8"},
                headers=api.headers("alice"),
            ),
            201,
        )
        assert made["name"] == 'Überweisung "März".csv'
        assert made["media_type"] == "text/csv; charset=utf-8"
        got = api.client.get(f"/api/attachments/{made['id']}", headers=api.headers("alice"))
        disposition = got.headers["content-disposition"]
        assert disposition.startswith('attachment; filename="_berweisung _M_rz_.csv"; ')
        assert disposition.endswith("filename*=UTF-8''%C3%9Cberweisung%20%22M%C3%A4rz%22.csv")
        assert got.headers["content-type"] == "text/csv; charset=utf-8"

    def test_a_generic_part_type_is_guessed_from_the_name(self, api: ApiWorld) -> None:
        task = new_task(api)
        made = ok(
            upload(api, task, name="photo.png", data=b"\x89PNG", media="application/octet-stream"),
            201,
        )
        assert made["media_type"] == "image/png"

    def test_an_html_upload_is_never_rendered(self, api: ApiWorld) -> None:
        task = new_task(api)
        made = ok(
            upload(api, task, name="page.html", data=b"<script>1</script>", media="text/html"), 201
        )
        got = api.client.get(f"/api/attachments/{made['id']}", headers=api.headers("alice"))
        assert got.headers["content-disposition"].startswith("attachment;")
        assert "sandbox" in got.headers["content-security-policy"]

    def test_an_attachment_over_the_limit_is_413_and_writes_nothing(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}/attachments"
        just_over = b"\0" * (MAX_ATTACHMENT_BYTES + 1)
        reply = refused(
            api,
            "POST",
            url,
            api.headers("alice"),
            413,
            "too-large",
            files={"file": ("big.bin", just_over)},
        )
        assert reply.json()["details"]["limit"] == MAX_ATTACHMENT_BYTES
        # Far over: the body limit refuses it before the route reads it.
        far_over = b"\0" * (MAX_ATTACHMENT_BYTES + 128 * 1024)
        refused(
            api,
            "POST",
            url,
            api.headers("alice"),
            413,
            "too-large",
            files={"file": ("big.bin", far_over)},
        )
        # Exactly the limit is accepted.
        made = ok(upload(api, task, name="full.bin", data=b"\1" * MAX_ATTACHMENT_BYTES), 201)
        assert made["size"] == MAX_ATTACHMENT_BYTES

    def test_upload_refusals_write_nothing(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}/attachments"
        files = {"file": ("a.txt", b"a", "text/plain")}
        refused(api, "POST", url, api.headers("carol"), 403, "forbidden", files=files)
        refused(api, "POST", url, api.headers("dave"), 404, "not-found", files=files)
        refused(api, "POST", url, {}, 401, "unauthenticated", files=files)
        invalid(api, "POST", url, "file", data={"name": "a.txt"})
        invalid(api, "POST", url, "file", json={"file": "abc"})
        invalid(api, "POST", url, "mediaType", data={"mediaType": "text"}, files=files)
        invalid(
            api,
            "POST",
            url,
            "mediaType",
            data={"mediaType": "text/plain\r\nX-Evil: 1"},
            files=files,
        )
        invalid(api, "POST", url, "name", data={"name": "   "}, files=files)
        invalid(api, "POST", url, "name", data={"name": "a\nb"}, files=files)
        # A part without a file name is no file.
        invalid(api, "POST", url, "file", files={"file": ("", b"a", "text/plain")})
        invalid(api, "POST", "/api/tasks/-/attachments", "task", files=files)

    def test_download_refusals(self, api: ApiWorld) -> None:
        task = new_task(api)
        made = ok(upload(api, task), 201)
        refused(api, "GET", f"/api/attachments/{made['id']}", api.headers("dave"), 404, "not-found")
        refused(api, "GET", f"/api/attachments/{made['id']}", {}, 401, "unauthenticated")
        refused(
            api, "GET", f"/api/attachments/{UUID(int=9)}", api.headers("alice"), 404, "not-found"
        )
        invalid(api, "GET", "/api/attachments/notes.txt", "attachment_id")
        refused(api, "GET", f"/api/tasks/{task['ref']}/attachments", api.headers("dave"), 404)


# Media types a form may not name: each could never be sent back as a header.
NOT_MEDIA_TYPES = [
    pytest.param("text/plain\n", id="line-feed-after"),
    pytest.param("text/plain\r\n", id="crlf-after"),
    pytest.param("text/plain\v", id="vertical-tab-after"),
    pytest.param("text/plain;\na=b", id="line-feed-before-a-parameter"),
    pytest.param("text/plain;\r\n a=b", id="crlf-before-a-parameter"),
    pytest.param("text/plain;\va=b", id="vertical-tab-before-a-parameter"),
    pytest.param("text/plain; a=b\n", id="line-feed-after-a-parameter"),
    pytest.param('text/plain; a="b\nc"', id="line-feed-in-a-quoted-value"),
    pytest.param("text/pl\x00ain", id="nul-inside"),
    pytest.param("text/ plain", id="space-in-the-subtype"),
    pytest.param(" text/plain", id="leading-space"),
    pytest.param("text", id="no-subtype"),
    pytest.param("/plain", id="no-type"),
    pytest.param("text/plain; charset", id="parameter-without-a-value"),
    pytest.param("tëxt/plain", id="not-ascii"),
    pytest.param("a" * 128 + "/b", id="type-over-127-characters"),
]

# Media types a form may name, sent back exactly as given.
MEDIA_TYPES = [
    pytest.param("application/vnd.api+json", id="structured-suffix"),
    pytest.param("application/x-www-form-urlencoded", id="x-prefix"),
    pytest.param('text/plain; charset="utf-8"', id="quoted-parameter"),
    pytest.param("text/plain;charset=utf-8;format=flowed", id="two-parameters-no-spaces"),
    pytest.param("text/plain ;\tcharset=utf-8", id="space-and-tab-around-the-semicolon"),
]


class TestMediaTypes:
    @pytest.mark.parametrize("media", NOT_MEDIA_TYPES)
    def test_a_form_media_type_that_is_no_rfc_6838_type_is_422_naming_the_field(
        self, api: ApiWorld, media: str
    ) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}/attachments"
        files = {"file": ("a.txt", b"a", "text/plain")}
        invalid(api, "POST", url, "mediaType", data={"mediaType": media}, files=files)
        assert ok(api.client.get(url, headers=api.headers("alice"))) == []

    @pytest.mark.parametrize("media", MEDIA_TYPES)
    def test_a_media_type_with_parameters_is_kept_and_downloads_with_it(
        self, api: ApiWorld, media: str
    ) -> None:
        task = new_task(api)
        made = ok(
            api.client.post(
                f"/api/tasks/{task['ref']}/attachments",
                files={"file": ("a.bin", b"abc", "application/octet-stream")},
                data={"mediaType": media},
                headers=api.headers("alice"),
            ),
            201,
        )
        assert made["media_type"] == media
        got = api.client.get(f"/api/attachments/{made['id']}", headers=api.headers("alice"))
        assert (got.status_code, got.content) == (200, b"abc")
        assert got.headers["content-type"] == media

    @pytest.mark.parametrize("media", NOT_MEDIA_TYPES)
    def test_the_service_refuses_what_the_form_refuses(self, api: ApiWorld, media: str) -> None:
        task = new_task(api)
        with nothing_written(api.store), pytest.raises(InvalidInput) as caught:
            api.services.tasks.attach(api.actors["alice"].id, task["ref"], "a.txt", media, b"a")
        assert caught.value.field == "media_type"
        assert "\n" not in caught.value.message and "\r" not in caught.value.message

    def test_a_stored_type_that_is_no_media_type_downloads_as_bytes(self, api: ApiWorld) -> None:
        """One stored before media types were checked whole still downloads."""
        task = new_task(api)
        made = ok(upload(api, task), 201)
        with api.store.transaction() as conn:
            conn.execute(
                update(attachments)
                .where(attachments.c.id == UUID(made["id"]))
                .values(media_type="text/plain;\r\n a=b")
            )
        got = api.client.get(f"/api/attachments/{made['id']}", headers=api.headers("alice"))
        assert got.status_code == 200
        assert got.headers["content-type"] == "application/octet-stream"


def due_reminder(api: ApiWorld) -> tuple[dict[str, Any], dict[str, Any]]:
    """A task with an e-mail reminder to carol half an hour ago (so a worker may claim it)."""
    task = new_task(api)
    # The fake clock stands at 12:00 UTC, 13:00 in Paris.
    reminder = {
        "channel": "email",
        "local": "2025-03-03T12:30:00",
        "zone": ZONE,
        "recipient": "carol",
    }
    task = schedule(api, task, due="2025-03-03", reminders=[reminder])
    (intent,) = ok(
        api.client.get(f"/api/tasks/{task['ref']}/reminders", headers=api.headers("alice"))
    )
    return task, intent


class TestReminders:
    def test_a_tasks_reminders_show_their_status(self, api: ApiWorld) -> None:
        task, intent = due_reminder(api)
        IntentOut.model_validate(intent)
        assert intent["task"]["ref"] == task["ref"]
        assert intent["recipient"]["handle"] == "carol"
        assert (intent["status"], intent["attempts"], intent["at"]) == (
            "pending",
            0,
            "2025-03-03T11:30:00Z",
        )
        service = Outbox(api.store).list(api.actors["alice"].id, task=UUID(task["id"]))
        assert [i.to_json() for i in service] == [intent]
        url = f"/api/tasks/{task['ref']}/reminders"
        assert ok(api.client.get(f"{url}?status=dead", headers=api.headers("carol"))) == []
        assert ok(
            api.client.get(f"{url}?status=pending&limit=1", headers=api.headers("carol"))
        ) == [intent]
        # A new schedule cancels the old reminder.
        schedule(api, task, due="2025-03-04")
        assert [i["status"] for i in ok(api.client.get(url, headers=api.headers("alice")))] == [
            "cancelled"
        ]

    def test_all_reminders_and_one_reminder(self, api: ApiWorld) -> None:
        _, intent = due_reminder(api)
        assert ok(api.client.get("/api/reminders", headers=api.headers("carol"))) == [intent]
        assert ok(api.client.get("/api/reminders", headers=api.headers("dave"))) == []
        assert (
            ok(api.client.get(f"/api/reminders/{intent['id']}", headers=api.headers("bob")))
            == intent
        )

    def test_a_failed_reminder_is_retried_by_its_recipient(self, api: ApiWorld) -> None:
        _, intent = due_reminder(api)
        url = f"/api/reminders/{intent['id']}/retry"
        refused(api, "POST", url, api.headers("carol"), 409, "conflict")
        outbox = Outbox(api.store)
        (claim,) = outbox.claim("test-worker")
        outbox.retry(claim.token, "smtp said no")
        refused(api, "POST", url, api.headers("dave"), 404, "not-found")
        again = ok(api.client.post(url, headers=api.headers("carol")))
        IntentOut.model_validate(again)
        assert (again["status"], again["attempts"], again["last_error"]) == (
            "pending",
            0,
            "smtp said no",
        )
        assert outbox.get(api.actors["alice"].id, UUID(intent["id"])).attempts == 0

    def test_a_viewer_who_is_not_the_recipient_cannot_retry(self, api: ApiWorld) -> None:
        task = new_task(api)
        reminder = {
            "channel": "email",
            "local": "2025-03-03T12:30:00",
            "zone": ZONE,
            "recipient": "bob",
        }
        schedule(api, task, due="2025-03-03", reminders=[reminder])
        (intent,) = ok(api.client.get("/api/reminders", headers=api.headers("carol")))
        outbox = Outbox(api.store)
        (claim,) = outbox.claim("test-worker")
        outbox.retry(claim.token, "timeout")
        refused(
            api,
            "POST",
            f"/api/reminders/{intent['id']}/retry",
            api.headers("carol"),
            403,
            "forbidden",
        )

    def test_bad_reminder_reads(self, api: ApiWorld) -> None:
        task, intent = due_reminder(api)
        url = f"/api/tasks/{task['ref']}/reminders"
        invalid(api, "GET", f"{url}?status=lost", "status")
        invalid(api, "GET", f"{url}?limit=0", "limit")
        invalid(api, "GET", f"{url}?limit=10001", "limit")
        invalid(api, "GET", "/api/reminders?limit=x", "limit")
        invalid(api, "GET", "/api/reminders/abc", "reminder_id")
        invalid(api, "POST", "/api/reminders/abc/retry", "reminder_id")
        refused(api, "GET", url, api.headers("dave"), 404, "not-found")
        refused(api, "GET", f"/api/reminders/{intent['id']}", api.headers("dave"), 404, "not-found")
        refused(api, "GET", "/api/reminders", {}, 401, "unauthenticated")


def test_an_upload_with_a_cookie_session_needs_the_csrf_header(api: ApiWorld) -> None:
    task = new_task(api)
    csrf = api.login("bob")
    url = f"/api/tasks/{task['ref']}/attachments"
    with nothing_written(api.store):
        reply = api.client.post(url, files={"file": ("a.txt", b"a", "text/plain")})
    assert reply.status_code == 403
    assert reply.json()["code"] == "csrf-failed"
    ok(api.client.post(url, files={"file": ("a.txt", b"a", "text/plain")}, headers=csrf), 201)
