"""``X.from_json(x.to_json()) == x`` for the mission values the CLI reads back from a
server: server mode prints them as local mode does."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest

from kalends.identity import Role
from kalends.missions import ControlOutcome, ControlStatus, Member, Page, Receipt, Workspace

AT = datetime(2030, 3, 30, 7, 15, 2, 123456, tzinfo=UTC)
DOC: dict[str, Any] = {"title": "Backup", "revision": 3, "workspaceId": str(uuid4())}


def wire(value: dict[str, Any]) -> dict[str, Any]:
    """The JSON as it crosses the network: text, read back."""
    return json.loads(json.dumps(value))  # type: ignore[no-any-return]


class TestWorkspaces:
    @pytest.mark.parametrize("role", list(Role))
    def test_a_workspace_reads_back_with_its_role_count_and_creation_instant(
        self, role: Role
    ) -> None:
        ws = Workspace(
            id=uuid4(), name="Home", path="/srv/home", role=role, schedules=4, created_at=AT
        )
        assert Workspace.from_json(wire(ws.to_json())) == ws

    def test_a_member_reads_back(self) -> None:
        member = Member(actor_id=uuid4(), handle="ada", role=Role.EDITOR)
        assert Member.from_json(wire(member.to_json())) == member


class TestOutcomes:
    @pytest.mark.parametrize(
        "receipt",
        [
            # a schedule created by the request
            Receipt(
                request_id="req-00001",
                status="created",
                mission_id=uuid4(),
                workspace_id=uuid4(),
                created_at=AT,
                repeated=True,
                schedule=DOC,
            ),
            # a request ID nobody sent: no schedule, no instant
            Receipt(request_id="req-00002", status="unknown", workspace_id=uuid4()),
        ],
    )
    def test_a_receipt_reads_back(self, receipt: Receipt) -> None:
        assert Receipt.from_json(wire(receipt.to_json())) == receipt

    def test_a_control_outcome_reads_back(self) -> None:
        outcome = ControlOutcome(
            request_id="req-00003",
            action="play",
            status="applied",
            expected_revision=3,
            revision=4,
            complete=False,
            repeated=False,
            schedule=DOC,
        )
        assert ControlOutcome.from_json(wire(outcome.to_json())) == outcome

    @pytest.mark.parametrize(
        "status",
        [
            # applied, with every field
            ControlStatus(
                request_id="req-00004",
                status="applied",
                action="pause",
                expected_revision=2,
                revision=3,
                complete=True,
                at=AT,
            ),
            # rejected, with the refusal's code and reason
            ControlStatus(
                request_id="req-00005",
                status="rejected",
                code="revision-conflict",
                reason="the schedule changed",
            ),
            # unknown: nothing but the request ID
            ControlStatus(request_id="req-00006", status="unknown"),
        ],
    )
    def test_a_control_status_reads_back(self, status: ControlStatus) -> None:
        assert ControlStatus.from_json(wire(status.to_json())) == status

    @pytest.mark.parametrize(
        "next_after",
        [
            # the last page
            None,
            # a page with more after it
            "00000000-0000-0000-0000-000000000009",
        ],
    )
    def test_a_page_reads_back_with_its_cursor(self, next_after: str | None) -> None:
        page = Page(items=[DOC, {**DOC, "kind": "tombstone"}], next_after=next_after)
        assert Page.from_json(wire(page.to_json())) == page
