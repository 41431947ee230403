"""What the CLI clients' tests share: the parameters a protocol's calls take, and a fake
server that answers requests from a table and records what was sent."""

from __future__ import annotations

import inspect
from typing import Any


def protocol_methods(protocol: type) -> list[str]:
    """The public calls ``protocol`` declares, by name."""
    return sorted(
        name
        for name, member in vars(protocol).items()
        if not name.startswith("_") and inspect.isfunction(member)
    )


def parameters(cls: type, name: str) -> list[tuple[str, Any, Any]]:
    """Each parameter of ``cls.name`` as written: its name, kind and default (a keyword
    group's ``**kw`` as such, not as :func:`kalends.keywords.takes` spells it out)."""
    found = inspect.signature(inspect.unwrap(getattr(cls, name))).parameters.values()
    return [(p.name, p.kind, p.default) for p in found]


def assert_same_parameters(protocol: type, local: type, http: type) -> None:
    """Each call ``protocol`` declares is taken by ``local`` and ``http`` with the same
    parameters (names, kinds, defaults)."""
    methods = protocol_methods(protocol)
    assert methods
    for name in methods:
        wanted = parameters(protocol, name)
        assert parameters(local, name) == wanted, (local.__name__, name)
        assert parameters(http, name) == wanted, (http.__name__, name)


class RecordingWire:
    """A server that answers each request from a table and records what was sent; an
    answer that is an exception is raised."""

    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, str, Any]] = []

    def _answer(self, method: str, path: str, sent: Any) -> Any:
        self.sent.append((method, path, sent))
        found = self.answers[(method, path)]
        if isinstance(found, Exception):
            raise found
        return found

    def get(self, path: str, **params: Any) -> Any:
        return self._answer("GET", path, params)

    def post(self, path: str, body: Any = None) -> Any:
        return self._answer("POST", path, body)

    def put(self, path: str, body: Any = None) -> Any:
        return self._answer("PUT", path, body)

    def patch(self, path: str, body: Any = None) -> Any:
        return self._answer("PATCH", path, body)

    def delete(self, path: str, **params: Any) -> Any:
        return self._answer("DELETE", path, params)

    def upload(self, path: str, *, files: Any, data: Any) -> Any:
        return self._answer("POST", path, dict(data))

    def list_id(self, ref: str) -> str:
        raise AssertionError("no list here")
