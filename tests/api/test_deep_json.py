"""Deeply nested JSON bodies: every route that takes JSON answers 422, never 500.

Python's JSON decoder (and any check that walks a decoded value) recurses once per
level, so a body nested about a thousand levels deep once ended in a 500 on the routes
whose handler is planned (``POST /api/lists``, ``POST /api/lists/{id}/tasks`` and
others), and a value a little shallower inside a free-form configuration failed later.
The bound of :mod:`kalends.api.bodies` refuses both at one depth, before anything reads
the body.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from api.conftest import ApiWorld
from api.test_tasks_support import new_task, warm
from kalends.api.bodies import MAX_JSON_DEPTH, json_deeper_than
from kalends.storage.testing import nothing_written

NIL = "00000000-0000-0000-0000-000000000000"
UNSAFE = ("post", "put", "patch")


def arrays(depth: int) -> str:
    return "[" * depth + "]" * depth


def objects(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


# Deep enough for the decoder's own recursion limit, and just past kalends' bound.
DEEP_BODIES = [
    arrays(MAX_JSON_DEPTH + 1),
    objects(MAX_JSON_DEPTH + 1),
    arrays(1_100),
    objects(1_100),
    arrays(100_000),
    objects(20_000),
]
# Past the bound inside one field, and about as deep as the stack still decodes.
DEEP_VALUES = [objects(MAX_JSON_DEPTH), arrays(960), objects(960)]


def operations(api: ApiWorld) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path template, operation) of every unsafe route in the OpenAPI document."""
    doc: dict[str, Any] = api.client.get("/openapi.json").json()
    return [
        (method, path, op)
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
        if method in UNSAFE
    ]


def json_properties(api: ApiWorld, op: dict[str, Any]) -> list[str] | None:
    """The top-level fields of the operation's JSON body; ``None`` when it takes none."""
    content = op.get("requestBody", {}).get("content", {})
    if "application/json" not in content:
        return None
    schema = content["application/json"]["schema"]
    if "$ref" in schema:
        doc = api.client.get("/openapi.json").json()
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return sorted(schema.get("properties", {}))


def concrete(api: ApiWorld, template: str, task: dict[str, Any]) -> str:
    """The template with real objects where the API world has them (so a route that read
    the body would go on to act), the nil UUID elsewhere."""
    known = {
        "list_id": str(api.home_list.id),
        "task": task["ref"],
        "id": str(api.home.id),
        "actor": str(api.actors["alice"].id),
        "member": "bob",
        "actorID": str(api.actors["bob"].id),
        "channel": "email",
    }
    return re.sub(r"\{([^}]+)\}", lambda m: known.get(m.group(1), NIL), template)


def bodies(properties: list[str]) -> list[str]:
    """Each deep body whole, and each deep value as every one of the body's fields."""
    inside = [f'{{"{name}":{value}}}' for name in properties for value in DEEP_VALUES]
    return DEEP_BODIES + inside


class TestDeeplyNestedBodies:
    def test_every_route_taking_json_answers_422_naming_the_body_and_writes_nothing(
        self, api: ApiWorld
    ) -> None:
        task = new_task(api)
        headers = {**api.headers("alice"), "Content-Type": "application/json"}
        warm(api, headers)
        routes = [
            (method, path, properties)
            for method, path, op in operations(api)
            if (properties := json_properties(api, op)) is not None
        ]
        taken = {(method, path) for method, path, _ in routes}
        # The routes the issue named, among the thirty-odd that take JSON.
        assert {("post", "/api/lists"), ("post", "/api/lists/{list_id}/tasks")} <= taken
        failures: list[str] = []
        with nothing_written(api.store):
            for method, path, properties in routes:
                url = concrete(api, path, task)
                for body in bodies(properties):
                    reply = api.client.request(method.upper(), url, content=body, headers=headers)
                    answer = reply.json() if reply.content else {}
                    if (reply.status_code, answer.get("code")) != (422, "invalid-input"):
                        failures.append(f"{method} {path} {body[:24]}…: {reply.status_code}")
                    elif answer["details"].get("field") != "body":
                        failures.append(f"{method} {path} {body[:24]}…: {answer}")
        assert not failures, "\n".join(failures)

    def test_routes_without_a_json_body_never_fail_on_one(self, api: ApiWorld) -> None:
        """Logout, an upload, a retry, a grant: they do not read such a body; nothing 500s."""
        task = new_task(api)
        others = [
            (method, path)
            for method, path, op in operations(api)
            if json_properties(api, op) is None
        ]
        assert ("post", "/api/tasks/{task}/attachments") in others
        for method, path in others:
            for body in DEEP_BODIES:
                reply = api.client.request(
                    method.upper(),
                    concrete(api, path, task).replace(task["ref"], NIL),
                    content=body,
                    headers={"Content-Type": "application/json"},
                )
                assert reply.status_code < 500, (method, path, reply.text)

    def test_the_bound_is_exact_and_the_answer_says_it(self, api: ApiWorld) -> None:
        headers = {**api.headers("alice"), "Content-Type": "application/json"}
        # At the bound the route's own validation answers, about the field.
        at = api.client.post(
            "/api/lists", content=f'{{"name":{arrays(MAX_JSON_DEPTH - 1)}}}', headers=headers
        )
        assert (at.status_code, at.json()["details"]["field"]) == (422, "name")
        over = api.client.post(
            "/api/lists", content=f'{{"name":{arrays(MAX_JSON_DEPTH)}}}', headers=headers
        )
        assert over.status_code == 422
        assert over.json() == {
            "code": "invalid-input",
            "message": f"body: JSON nested more than {MAX_JSON_DEPTH} levels deep",
            "details": {"field": "body"},
        }
        # A body within the bound still works.
        made = api.client.post("/api/lists", json={"name": "shallow"}, headers=headers)
        assert made.status_code == 201, made.text


class TestTheDepthCount:
    @pytest.mark.parametrize(
        ("body", "limit", "deeper"),
        [
            (b"[[[]]]", 3, False),  # exactly the limit
            (b"[[[[]]]]", 3, True),  # one past it
            (b'{"a":[{"b":[]}]}', 4, False),  # objects and arrays both count
            (b'{"a":[{"b":[1]}]}', 3, True),
            (b'["[[[[[[", "{{{{{{{"]', 1, False),  # brackets inside strings do not nest
            (b'["\\"[[[[[[", 1]', 1, False),  # nor after an escaped quote
            (b"[[],[],[],[],[],[]]", 2, False),  # many brackets, none deep
            (b'{"text": "no brackets at all"}', 0, True),  # an object is one level
            (b"1", 0, False),  # a scalar nests nothing
        ],
    )
    def test_nesting_is_counted_outside_strings(
        self, body: bytes, limit: int, deeper: bool
    ) -> None:
        assert json_deeper_than(body, limit) is deeper
