"""JSON over HTTP to one ``kalends serve``: the client, and how its refusals read.

An error answer ``{code, message, details}`` becomes :class:`ServerInvalid` (bad input,
exit 2) or :class:`ServerError` (every other refusal, exit 1), which print as local
mode's own errors do; a server out of reach is :class:`Unreachable`, a request left
unanswered :class:`NoAnswer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kalends import __version__
from kalends.errors import InvalidInput, KalendsError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "EXCHANGE_ROUTE",
    "TIMEOUT_SECONDS",
    "UPLOAD_TIMEOUT_SECONDS",
    "Client",
    "NoAnswer",
    "ServerError",
    "ServerInvalid",
    "Unreachable",
    "path_part",
]

# Where a handle and password are traded for a new token (`kalends login`, `token create`).
EXCHANGE_ROUTE = "/api/auth/tokens/exchange"
TIMEOUT_SECONDS = 30.0
# An upload of the largest attachment over a slow link may take a while.
UPLOAD_TIMEOUT_SECONDS = 300.0

# On the mission routes the server prefixes two conflict codes (seed 002); the CLI
# speaks the codes local mode prints, so a script reads one code in both modes.
_LOCAL_CODES = {
    "recurrence-revision-conflict": "revision-conflict",
    "recurrence-control-conflict": "control-conflict",
}
# Bad input: exit 2, as local mode exits on InvalidInput (TooLarge is one too).
_BAD_INPUT = frozenset({400, 413, 422})


class ServerError(KalendsError):
    """The server refused the request; nothing was written."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any], status: int) -> None:
        super().__init__(message, **details)
        self.code = code
        self.status = status


class ServerInvalid(InvalidInput):
    """The server found the input invalid; nothing was written."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any], status: int) -> None:
        super().__init__(message, **details)
        self.code = code
        self.status = status


class Unreachable(KalendsError):
    """The server could not be reached, or its answer could not be read."""

    code = "server-unreachable"


class NoAnswer(KalendsError):
    """The request went out but no answer came back; it may have been applied."""

    code = "server-no-answer"


def path_part(value: str) -> str:
    """``value`` as one segment of a URL path (a ``/`` in it stays inside the segment)."""
    return quote(value, safe="")


class Client:
    """JSON over HTTP to one server, as one principal (a bearer token, or nobody)."""

    def __init__(
        self,
        server: str,
        token: str | None,
        *,
        transport: httpx.BaseTransport | None = None,
        scheme: str = "Bearer",
    ) -> None:
        """``scheme`` is how the token is sent: ``Bearer`` for an API token, ``Passage``
        for a running passage's own token (``KALENDS_PASSAGE_TOKEN``)."""
        self.server = server
        self.scheme = scheme
        headers = {"User-Agent": f"kalends-cli/{__version__}", "Accept": "application/json"}
        if token is not None:
            headers["Authorization"] = f"{scheme} {token}"
        # (imported here: a command in local mode, which reaches no server, never loads it)
        import httpx  # noqa: PLC0415

        self._http = httpx.Client(
            base_url=server, headers=headers, timeout=TIMEOUT_SECONDS, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        files: Mapping[str, Any] | None = None,
        data: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """The answer's JSON (``None`` for an empty answer); an error answer is raised as
        :class:`ServerInvalid` (bad input) or :class:`ServerError`."""
        import httpx  # noqa: PLC0415 (loaded already: the client made its own)

        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(
                method,
                path,
                json=body,
                params=query,
                files=files,
                data=data,
                timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            reason = str(exc) or type(exc).__name__
            raise Unreachable(
                f"cannot reach the server at {self.server}: {reason}", server=self.server
            ) from None
        except httpx.HTTPError as exc:
            # Sent, perhaps, but unanswered: a write may have been applied.
            reason = str(exc) or type(exc).__name__
            raise NoAnswer(
                f"no answer from the server at {self.server} ({reason}); the request may have "
                "been applied: read the state before repeating it",
                server=self.server,
            ) from None
        if response.status_code >= 400:
            raise self._refusal(response)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise Unreachable(
                f"the server at {self.server} answered {method} {path} with something not JSON",
                server=self.server,
            ) from None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", path, body=body)

    def put(self, path: str, body: Any = None) -> Any:
        return self.request("PUT", path, body=body)

    def patch(self, path: str, body: Any = None) -> Any:
        return self.request("PATCH", path, body=body)

    def delete(self, path: str, **params: Any) -> Any:
        return self.request("DELETE", path, params=params)

    def _refusal(self, response: httpx.Response) -> KalendsError:
        status = response.status_code
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if isinstance(answer, dict) and isinstance(answer.get("code"), str):
            code = _LOCAL_CODES.get(answer["code"]) or str(answer["code"])
            message = str(answer.get("message") or code)
            details = answer.get("details")
            details = details if isinstance(details, dict) else {}
        else:
            code = f"http-{status}"
            message = f"the server answered {status} {response.reason_phrase}".strip()
            details = {}
        if (
            status == 401
            and self.scheme == "Bearer"
            and not response.request.url.path.endswith(EXCHANGE_ROUTE)
        ):
            # The token sent was refused; an exchange refuses a password, not a token.
            message += f" (`kalends login --server {self.server}` stores a new token)"
        cls = ServerInvalid if status in _BAD_INPUT else ServerError
        return cls(code, message, details, status)


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value
