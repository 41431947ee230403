"""Reminder times over HTTP (issue 17): a reminder's instant stays UTC in ``at`` and its
recipient's wall time and zone come beside it; a schedule whose reminder time has passed
is written, and its answer says what will become of that reminder. The fake clock stands
at Monday 2025-03-03 12:00 UTC (13:00 in Paris).
"""

from __future__ import annotations

from typing import Any

from api.conftest import ApiWorld
from api.test_tasks_support import ZONE, new_task, ok, schedule
from kalends.api.routes.tasks_models import IntentOut, ScheduledTaskOut


def reminder(local: str, channel: str = "email", zone: str = ZONE) -> dict[str, Any]:
    return {"channel": channel, "local": local, "zone": zone}


class TestPastReminders:
    def test_a_schedule_with_past_reminders_is_written_with_a_warning_for_each(
        self, api: ApiWorld
    ) -> None:
        task = new_task(api)
        done = schedule(
            api,
            task,
            due={"local": "2025-03-10T09:00:00", "zone": ZONE},
            reminders=[
                reminder("2025-03-10T08:00:00"),  # to come
                reminder("2025-03-03T12:30:00", "push"),  # half an hour ago, in Paris
                reminder("2025-02-28T08:00:00", "push"),  # days ago
            ],
        )
        ScheduledTaskOut.model_validate(done)
        assert done["schedule_revision"] == 1
        assert len(done["reminders"]) == 3
        assert done["warnings"] == [
            {
                "code": "reminder-in-the-past",
                "field": "reminders[1]",
                "message": "reminders[1]: the push reminder at 2025-03-03 12:30 Europe/Paris "
                "is already past: it is sent at once, not at that time",
            },
            {
                "code": "reminder-in-the-past",
                "field": "reminders[2]",
                "message": "reminders[2]: the push reminder at 2025-02-28 08:00 Europe/Paris "
                "is more than a day past: it will never be sent (it is closed as expired)",
            },
        ]

    def test_a_schedule_whose_reminders_are_to_come_has_no_warning(self, api: ApiWorld) -> None:
        done = schedule(api, new_task(api), reminders=[reminder("2025-03-03T13:30:00")])
        assert done["warnings"] == []

    def test_a_completed_task_makes_no_reminder_and_gets_no_warning(self, api: ApiWorld) -> None:
        task = new_task(api)
        completed = ok(
            api.client.post(
                f"/api/tasks/{task['ref']}/complete",
                json={"expectedRevision": 1},
                headers=api.headers("alice"),
            )
        )
        done = schedule(api, completed, reminders=[reminder("2025-02-28T08:00:00")])
        assert done["warnings"] == []


class TestIntentTimes:
    def test_an_intent_keeps_its_instant_in_utc_and_adds_the_recipients_wall_time(
        self, api: ApiWorld
    ) -> None:
        task = schedule(
            api,
            new_task(api),
            due={"local": "2025-03-10T09:00:00", "zone": "America/New_York"},
            reminders=[
                reminder("2025-03-10T08:00:00"),
                reminder("2025-03-09T20:15:00", "push", "America/New_York"),
            ],
        )
        listed = ok(api.client.get("/api/reminders", headers=api.headers("alice")))
        mine = [i for i in listed if i["task"]["id"] == task["id"]]
        for item in mine:
            IntentOut.model_validate(item)
        assert [(i["at"], i["local"], i["zone"]) for i in mine] == [
            ("2025-03-10T00:15:00Z", "2025-03-09T20:15:00", "America/New_York"),
            ("2025-03-10T07:00:00Z", "2025-03-10T08:00:00", ZONE),
        ]
        shown = ok(api.client.get(f"/api/reminders/{mine[1]['id']}", headers=api.headers("bob")))
        assert shown == mine[1]
