"""Passage callbacks over HTTP: ``POST /api/passages/report`` with the passage's own
HMAC-signed token (the HTTP form of ``kalends report``), scoped to that passage only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.conftest import ApiWorld
from kalends.api import ApiContext, ApiSettings, create_app
from kalends.missions.limits import MAX_SUMMARY_BYTES
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.runtime.token import sign
from kalends.storage.testing import nothing_written
from runtime.support import kill_families

REPORT = "/api/passages/report"


@pytest.fixture
def runtime(api: ApiWorld) -> Iterator[ProcessRuntime]:
    """The runtime directory the fixture's server takes reports for, with two passages
    admitted (never launched): ``psg_a`` and ``psg_b``."""
    root = api.root / "runtime"
    found = ProcessRuntime(root, clock=api.clock)
    for name in ("a", "b"):
        found.admit(
            PassageStart(
                passage_id=f"psg_{name}",
                session_id=f"ses_{name}",
                message_id=f"msg_{name}",
                schedule_id="sch_1",
                workspace=api.home.path,
                command=("true",),
            )
        )
    try:
        yield found
    finally:
        kill_families(root)


def report_of(runtime: ProcessRuntime, session: str) -> dict[str, Any] | None:
    return records.read_json(runtime.passage_dir(session) / records.REPORT)


def send(
    client: TestClient, token: str | None, body: dict[str, Any], scheme: str = "Passage"
) -> httpx2.Response:
    headers = {} if token is None else {"Authorization": f"{scheme} {token}"}
    return client.post(REPORT, json=body, headers=headers)


def error(reply: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    body: dict[str, Any] = reply.json()
    assert body["code"] == code, body
    return body


DONE = {"outcome": "completed", "summary": "Summarised 12 commits."}


def test_a_passage_reports_with_its_own_token(api: ApiWorld, runtime: ProcessRuntime) -> None:
    with nothing_written(api.store):
        reply = send(api.client, runtime.token("psg_a", "ses_a"), DONE)
    assert reply.status_code == 200, reply.text
    assert reply.json() == {
        "outcome": "completed",
        "summary": "Summarised 12 commits.",
        "at": api.clock.now().isoformat().replace("+00:00", "Z"),
    }
    stored = report_of(runtime, "ses_a")
    assert stored is not None
    assert stored["passageId"] == "psg_a" and stored["outcome"] == "completed"
    assert stored["summary"] == DONE["summary"]
    assert runtime.observe("ses_a").report is not None
    # The other passage was not touched.
    assert report_of(runtime, "ses_b") is None


def test_the_last_report_wins_until_the_passage_settles(
    api: ApiWorld, runtime: ProcessRuntime
) -> None:
    token = runtime.token("psg_a", "ses_a")
    assert send(api.client, token, DONE).status_code == 200
    failed = send(api.client, token, {"outcome": "failed", "summary": "Tests broke."})
    assert failed.status_code == 200, failed.text
    replaced = report_of(runtime, "ses_a")
    assert replaced is not None
    assert (replaced["outcome"], replaced["summary"]) == ("failed", "Tests broke.")
    runtime.interrupt("ses_a")  # never launched: it ends at once, settled
    assert runtime.observe("ses_a").settled
    late = send(api.client, token, DONE)
    error(late, 409, "passage-settled")
    stored = report_of(runtime, "ses_a")
    assert stored is not None and stored["outcome"] == "failed"


def test_a_token_reports_for_its_own_passage_only(api: ApiWorld, runtime: ProcessRuntime) -> None:
    reply = send(api.client, runtime.token("psg_b", "ses_b"), DONE)
    assert reply.status_code == 200, reply.text
    assert report_of(runtime, "ses_a") is None
    assert (report_of(runtime, "ses_b") or {})["passageId"] == "psg_b"
    # A token naming A's passage with B's session (or the reverse) is no token of either.
    for token in (runtime.token("psg_a", "ses_b"), runtime.token("psg_b", "ses_a")):
        error(send(api.client, token, DONE), 401, "invalid-passage-token")
    assert report_of(runtime, "ses_a") is None
    assert (report_of(runtime, "ses_b") or {})["summary"] == DONE["summary"]


def test_forged_and_foreign_tokens_are_refused(api: ApiWorld, runtime: ProcessRuntime) -> None:
    good = runtime.token("psg_a", "ses_a")
    payload, _, mac = good.partition(".")
    tampered_mac = payload + "." + ("A" if mac[0] != "A" else "B") + mac[1:]
    other_payload = runtime.token("psg_b", "ses_b").partition(".")[0]
    forged = [
        tampered_mac,
        other_payload + "." + mac,  # B's identities under A's signature
        sign(b"another runtime's secret, 32 by", "psg_a", "ses_a"),
        runtime.token("psg_zz", "ses_zz"),  # signed here, but no such passage
        runtime.token("psg_a", "../ses_a"),
        "not-a-token",
        "x" * 5000,
    ]
    with nothing_written(api.store):
        for token in forged:
            error(send(api.client, token, DONE), 401, "invalid-passage-token")
    assert report_of(runtime, "ses_a") is None and report_of(runtime, "ses_b") is None


def test_without_a_passage_token_the_report_is_401(api: ApiWorld, runtime: ProcessRuntime) -> None:
    good = runtime.token("psg_a", "ses_a")
    with nothing_written(api.store):
        replies = [
            send(api.client, None, DONE),
            send(api.client, "", DONE),
            send(api.client, good, DONE, scheme="Bearer"),
            # A person's API token never reports for a passage.
            api.client.post(REPORT, json=DONE, headers=api.headers("alice")),
        ]
    for reply in replies:
        error(reply, 401, "invalid-passage-token")
    assert report_of(runtime, "ses_a") is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"outcome": "maybe", "summary": "x"}, "outcome"),
        ({"summary": "x"}, "outcome"),
        ({"outcome": "completed"}, "summary"),
        ({"outcome": "completed", "summary": "s" * (MAX_SUMMARY_BYTES + 1)}, "summary"),
        # Within the character count, over the byte bound: refused by the runtime.
        ({"outcome": "completed", "summary": "😀" * (MAX_SUMMARY_BYTES // 4 + 1)}, "summary"),
        ({"outcome": "completed", "summary": '"' * (MAX_SUMMARY_BYTES // 2 + 1)}, "summary"),
        ({"outcome": "completed", "summary": 3}, "summary"),
        ({"outcome": "completed", "summary": "x", "passageId": "psg_b"}, "passageId"),
    ],
)
def test_bad_reports_name_their_field(
    api: ApiWorld, runtime: ProcessRuntime, body: dict[str, Any], field: str
) -> None:
    reply = send(api.client, runtime.token("psg_a", "ses_a"), body)
    assert error(reply, 422, "invalid-input")["details"]["field"] == field
    assert report_of(runtime, "ses_a") is None


@pytest.mark.parametrize(
    "summary",
    [
        "s" * MAX_SUMMARY_BYTES,  # one byte a character
        "😀" * (MAX_SUMMARY_BYTES // 4),  # four bytes a character
    ],
)
def test_a_summary_at_its_byte_bound_is_recorded(
    api: ApiWorld, runtime: ProcessRuntime, summary: str
) -> None:
    body = {"outcome": "failed", "summary": summary}
    assert send(api.client, runtime.token("psg_a", "ses_a"), body).status_code == 200
    assert (report_of(runtime, "ses_a") or {})["summary"] == body["summary"]


def test_a_summary_over_its_byte_bound_names_the_bound(
    api: ApiWorld, runtime: ProcessRuntime
) -> None:
    body = {"outcome": "completed", "summary": "😀" * (MAX_SUMMARY_BYTES // 4 + 1)}
    with nothing_written(api.store):
        reply = send(api.client, runtime.token("psg_a", "ses_a"), body)
    found = error(reply, 422, "invalid-input")
    assert f"bound of {MAX_SUMMARY_BYTES} bytes" in found["message"]
    assert found["details"]["limit"] == MAX_SUMMARY_BYTES
    assert report_of(runtime, "ses_a") is None


def _app(api: ApiWorld, *, runtime: ProcessRuntime | None, runtime_dir: Path | None) -> TestClient:
    ctx = ApiContext(
        services=api.services,
        accounts=api.accounts,
        settings=ApiSettings(runtime_dir=runtime_dir),
        runtime=runtime,
    )
    return TestClient(create_app(ctx, access_log_enabled=False), raise_server_exceptions=False)


def test_a_server_without_a_runtime_takes_no_reports(
    api: ApiWorld, runtime: ProcessRuntime
) -> None:
    client = _app(api, runtime=None, runtime_dir=None)
    error(send(client, runtime.token("psg_a", "ses_a"), DONE), 404, "no-runtime")
    assert report_of(runtime, "ses_a") is None
    # Without a token it is still 401 first.
    error(send(client, None, DONE), 401, "invalid-passage-token")


def test_the_server_runtime_verifies_with_its_own_secret(
    api: ApiWorld, runtime: ProcessRuntime, tmp_path: Path
) -> None:
    own = ProcessRuntime(
        tmp_path / "own", secret=b"the server runtime's own secret!", clock=api.clock
    )
    own.admit(
        PassageStart(
            passage_id="psg_c",
            session_id="ses_c",
            message_id="msg_c",
            schedule_id="sch_1",
            workspace=api.home.path,
            command=("true",),
        )
    )
    client = _app(api, runtime=own, runtime_dir=runtime.root)
    reply = send(client, own.token("psg_c", "ses_c"), DONE)
    assert reply.status_code == 200, reply.text
    stored = records.read_json(own.passage_dir("ses_c") / records.REPORT)
    assert stored is not None and stored["passageId"] == "psg_c"
    # The runtime given to the server wins over the settings' directory.
    error(send(client, runtime.token("psg_a", "ses_a"), DONE), 401, "invalid-passage-token")
    assert report_of(runtime, "ses_a") is None
    assert json.loads((own.passage_dir("ses_c") / records.REPORT).read_text())["outcome"] == (
        "completed"
    )
