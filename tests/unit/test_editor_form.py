"""The editor's form and the configuration JSON: every frequency, calendar, bound and
condition survives configuration → form → configuration; what the form cannot show is
kept as its JSON; mistakes and the service's errors land on their fields."""

from __future__ import annotations

from typing import Any

import pytest

from kalends.missions.config import config_from_json, config_to_json
from kalends.web.editor_form import blank, form_field, from_config, from_form, to_config

ZONE = "America/New_York"

POLICIES: list[dict[str, Any]] = [
    {"kind": "immediate"},
    {"kind": "at", "local": "2026-07-01T09:30:00", "zone": ZONE},
    {"kind": "after", "minutes": 90},
    {"kind": "after", "hours": 2},
    {"kind": "every", "minutes": 15},
    {"kind": "every", "hours": 6},
    {"kind": "daily", "time": "02:30", "zone": ZONE},
    {"kind": "weekdays", "days": [1, 3, 5], "time": "08:00", "zone": ZONE},
    {"kind": "times", "times": ["09:00", "13:00", "17:45"], "zone": ZONE},
    {"kind": "monthly", "day": 31, "time": "23:00", "zone": ZONE},
    {"kind": "cron", "expression": "*/20 9-17 * * 1-5", "zone": ZONE},
    {
        "kind": "calendars",
        "calendars": [
            {"kind": "daily", "time": "06:00", "zone": ZONE},
            {"kind": "weekdays", "days": [6, 7], "time": "10:00", "zone": ZONE},
            {"kind": "cron", "expression": "0 12 1 * *", "zone": ZONE},
        ],
    },
]


def canonical(**overrides: Any) -> dict[str, Any]:
    """A configuration as the service writes it back (every field named)."""
    config: dict[str, Any] = {
        "title": "Nightly <build>",
        "objective": "Build it.",
        "notes": "Line one\nline two",
        "profile": {"command": ["make", "nightly build"], "env": {"CI": "1"}, "cwd": "src"},
        "policy": {"kind": "daily", "time": "09:00", "zone": ZONE},
        **overrides,
    }
    out = config_to_json(config_from_json(config))
    out.pop("template")
    return out


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: str(p.get("kind")) + str(len(p)))
def test_every_frequency_survives_the_round_trip(policy: dict[str, Any]) -> None:
    config = canonical(policy=policy)
    fields = from_config(config)
    assert fields["policy_json"] == ""
    made, errors = to_config(fields)
    assert errors == []
    assert made == config
    assert config_to_json(config_from_json(made))["policy"] == policy


@pytest.mark.parametrize(
    ("end", "condition", "restart"),
    [
        ({"until": {"local": "2026-12-31T23:59:00", "zone": ZONE}}, None, "interrupt"),
        (
            {"within": {"days": 30}, "maxPassages": 10},
            {"kind": "files", "paths": ["a", "b/c"]},
            "resume",
        ),
        (
            {"within": {"minutes": 90}},
            {"kind": "git-branch", "branch": "main", "path": "repo"},
            "resume",
        ),
        (
            None,
            {"kind": "schedule-succeeded", "missionId": "0190d2f5-5e9a-7c31-9e6e-2f1c3b5a7d11"},
            "resume",
        ),
        (
            None,
            {"kind": "mission-completed", "missionId": "0190d2f5-5e9a-7c31-9e6e-2f1c3b5a7d12"},
            "resume",
        ),
        (
            None,
            {
                "kind": "conversation",
                "conversationIds": [
                    "0190d2f5-5e9a-7c31-9e6e-2f1c3b5a7d13",
                    "0190d2f5-5e9a-7c31-9e6e-2f1c3b5a7d14",
                ],
            },
            "resume",
        ),
    ],
)
def test_bounds_conditions_and_restart_survive_the_round_trip(
    end: dict[str, Any] | None, condition: dict[str, Any] | None, restart: str
) -> None:
    config = canonical(end=end, condition=condition, restart=restart)
    made, errors = to_config(from_config(config))
    assert errors == []
    assert made == config


def test_the_posted_form_reads_back_as_the_configuration() -> None:
    pairs = [
        ("title", "Reports"),
        ("frequency", "weekdays"),
        ("zone", ZONE),
        ("weekdays_days", "1"),
        ("weekdays_days", "5"),
        ("weekdays_time", "07:15"),
        ("cal_count", "1"),
        ("cal1_kind", "times"),
        ("cal1_times", "12:00, 18:00"),
        ("command", "report\r\n--all\r\n"),
        ("env", "A=1\r\nB=x=y"),
        ("end_max", "3"),
        ("ignored", "x"),
    ]
    made, errors = to_config(from_form(pairs))
    assert errors == []
    assert made["policy"] == {
        "kind": "calendars",
        "calendars": [
            {"kind": "weekdays", "days": [1, 5], "time": "07:15", "zone": ZONE},
            {"kind": "times", "times": ["12:00", "18:00"], "zone": ZONE},
        ],
    }
    assert made["profile"] == {
        "command": ["report", "--all"],
        "cwd": ".",
        "env": {"A": "1", "B": "x=y"},
    }
    assert made["end"] == {"until": None, "within": None, "maxPassages": 3}
    assert made["condition"] is None


def test_a_rule_the_form_cannot_show_is_kept_as_its_json() -> None:
    gap = {"kind": "daily", "time": "02:30", "zone": ZONE, "gap": "skip"}
    mixed = {
        "kind": "calendars",
        "calendars": [
            {"kind": "daily", "time": "06:00", "zone": ZONE},
            {"kind": "daily", "time": "06:00", "zone": "Europe/Paris"},
        ],
    }
    for policy in (gap, mixed, {"kind": "on-change"}):
        fields = from_config(canonical(policy=policy) if policy["kind"] != "on-change" else {
            **canonical(), "policy": policy})  # fmt: skip
        assert '"kind"' in fields["policy_json"]
        made, errors = to_config(fields)
        assert errors == [] and "policy" not in made  # never sent, so never lost
        assert form_field("policy.calendars[1].zone", fields) == "policy_json"
        fields["policy_replace"] = True
        fields["frequency"], fields["daily_time"] = "daily", "05:00"
        zone = "UTC" if policy["kind"] == "on-change" else ZONE  # (the rule's own zone kept)
        assert to_config(fields)[0]["policy"] == {"kind": "daily", "time": "05:00", "zone": zone}


def test_an_edit_keeps_the_environment_it_cannot_show_until_replaced() -> None:
    detail = {**canonical(), "profile": {"command": ["true"], "envNames": ["TOKEN"], "cwd": "."}}
    fields = from_config(detail)
    assert fields["env_names"] == ["TOKEN"] and fields["env"] == ""
    assert "env" not in to_config(fields)[0]["profile"]
    fields["env_replace"] = True
    assert to_config(fields)[0]["profile"]["env"] == {}


def test_the_posted_conversation_ids_are_read_one_per_line() -> None:
    fields = {
        **blank(),
        "frequency": "daily",
        "daily_time": "09:00",
        "condition_kind": "conversation",
        "cond_conversations": " c-one \n\n c-two\n",
    }
    made, errors = to_config(fields)
    assert errors == []
    assert made["condition"] == {"kind": "conversation", "conversationIds": ["c-one", "c-two"]}
    assert from_config(made)["cond_conversations"] == "c-one\nc-two"
    assert from_config(made)["condition_json"] == ""  # shown in its fields, not kept as JSON


def test_mistakes_the_form_finds_land_on_their_fields() -> None:
    fields = {
        **blank(),
        "frequency": "every",
        "every_amount": "ten",
        "env": "NOEQUALS",
        "end_max": "-1",
    }
    _, errors = to_config(fields)
    assert {e.field for e in errors} == {"every_amount", "env", "end_max"}
    assert any("'ten'" in e.message for e in errors)


@pytest.mark.parametrize(
    ("service", "frequency", "form"),
    [
        ("policy.expression", "cron", "cron_expression"),
        ("config.policy.minutes", "every", "every_amount"),
        ("policy.zone", "daily", "zone"),
        ("policy.calendars[0].time", "daily", "daily_time"),
        ("policy.calendars[2].time", "daily", "cal2_time"),
        ("policy.calendars", "daily", "calendars"),
        ("policy.times[1]", "times", "times_list"),
        ("end.until", "daily", "end_until_local"),
        ("condition.paths[0]", "daily", "cond_paths"),
        ("condition.conversationIds[3]", "daily", "cond_conversations"),
        ("profile.command[0]", "daily", "command"),
        ("profile.env.LD_PRELOAD", "daily", "env"),
        ("title", "daily", "title"),
        ("workspace", "daily", None),
        (None, "daily", None),
    ],
)
def test_a_service_error_names_its_form_field(
    service: str | None, frequency: str, form: str | None
) -> None:
    assert form_field(service, {**blank(), "frequency": frequency}) == form
