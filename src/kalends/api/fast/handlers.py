"""A route's request handler planned once: its inputs read and checked by the framework's
own fields, its dependencies called directly, for the routes simple enough to plan.

For every request the framework solves a route's dependencies afresh: it walks the
dependency tree, works out a cache key and the security scopes of each node, and
validates each parameter on the way; for the API's routes (a principal, the context, a
path parameter or two, maybe a query or a JSON body) that was 10-15% of a short
request. A :class:`Plan` is made once per route when the route is simple enough:

- its dependencies are ``async def`` functions of the request alone (or of other such
  dependencies), called once per request each, in the framework's order (dependencies
  first, then the parameters, then the body);
- its path and query parameters, and one JSON body, are validated by the framework's
  own functions on the route's own fields (the same values, the same errors);
- it returns a response of its own (so nothing is serialised after it).

Reading the body comes first, as the framework does it. Whatever the plan does not
settle, it leaves to the framework's handler, which then handles the request from the
start: a body that is not JSON, any invalid input (the framework answers its 422), a
dependency override. A dependency that raises (a missing credential: 401) raises as it
would under the framework. Routes that do not fit have the framework's handler only.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import params
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import request_body_to_args, request_params_to_args
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

__all__ = ["Handler", "Plan", "plan_route"]

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
_JSON = "application/json"


@dataclass(frozen=True, slots=True)
class _Dependency:
    """A dependency of the request alone, or of other such dependencies."""

    call: Callable[..., Awaitable[Any]]
    request_name: str | None
    needs: tuple[tuple[str, _Dependency], ...]

    async def value(self, request: Request, solved: dict[Any, Any]) -> Any:
        if self.call in solved:
            return solved[self.call]
        kwargs: dict[str, Any] = {
            name: await dep.value(request, solved) for name, dep in self.needs
        }
        if self.request_name is not None:
            kwargs[self.request_name] = request
        found = await self.call(**kwargs)
        solved[self.call] = found
        return found


@dataclass(frozen=True, slots=True)
class Plan:
    """How to call one route's endpoint (see the module docstring)."""

    route: APIRoute
    dependencies: tuple[tuple[str | None, _Dependency], ...]
    request_name: str | None
    # Whether the body's fields are embedded (the framework's reading of the route).
    embed: bool

    async def values(self, request: Request) -> dict[str, Any] | None:
        """The endpoint's arguments, or ``None`` when the framework must decide."""
        dependant = self.route.dependant
        body: Any = None
        if dependant.body_params:
            kind = request.headers.get("content-type", "")
            if kind.split(";", 1)[0].strip().lower() != _JSON or not await request.body():
                return None
            try:
                body = await request.json()
            except (ValueError, RecursionError):
                # (RecursionError: nested deeper than the decoder recurses, which the
                # bound of kalends.api.bodies keeps from here; the framework refuses it)
                return None
        solved: dict[Any, Any] = {}
        values: dict[str, Any] = {}
        for name, dependency in self.dependencies:
            found = await dependency.value(request, solved)
            if name is not None:
                values[name] = found
        path, errors = request_params_to_args(dependant.path_params, request.path_params)
        if errors:
            return None
        values.update(path)
        if dependant.query_params:
            query, errors = request_params_to_args(dependant.query_params, request.query_params)
            if errors:
                return None
            values.update(query)
        if dependant.body_params:
            fields, errors = await request_body_to_args(dependant.body_params, body, self.embed)
            if errors:
                return None
            values.update(fields)
        if self.request_name is not None:
            values[self.request_name] = request
        return values

    def handler(self, framework: Handler) -> Handler:
        """The route's handler: this plan where it settles a request, else ``framework``."""
        route = self.route
        call = route.dependant.call
        assert call is not None

        async def handle(request: Request) -> Response:
            overrides = getattr(route.dependency_overrides_provider, "dependency_overrides", None)
            # (telemetry records what the framework's handler saw: leave those to it)
            plain = not overrides and "fastapi.telemetry" not in request.scope
            values = await self.values(request) if plain else None
            if values is None:
                return await framework(request)
            answer = await call(**values)
            if not isinstance(answer, Response):
                raise TypeError(f"{route.path}: the endpoint returned no response")
            return answer

        return handle


def _unplannable(dependant: Dependant, *, endpoint: bool) -> bool:
    """Whether ``dependant`` asks for something a plan does not do."""
    return bool(
        dependant.header_params
        or dependant.cookie_params
        or dependant.websocket_param_name
        or dependant.http_connection_param_name
        or dependant.response_param_name
        or dependant.background_tasks_param_name
        or dependant.security_scopes_param_name
        or dependant.own_oauth_scopes
        or getattr(dependant, "concurrency", None) is not None
        or (not endpoint and (dependant.path_params or dependant.query_params))
        or (not endpoint and dependant.body_params)
        or not dependant.use_cache
    )


def _dependency(dependant: Dependant) -> _Dependency | None:
    call = dependant.call
    if call is None or not inspect.iscoroutinefunction(call):
        return None
    if _unplannable(dependant, endpoint=False):
        return None
    needs: list[tuple[str, _Dependency]] = []
    for sub in dependant.dependencies:
        planned = _dependency(sub)
        if planned is None or sub.name is None:
            return None
        needs.append((sub.name, planned))
    return _Dependency(call=call, request_name=dependant.request_param_name, needs=tuple(needs))


def _returns_a_response(call: Callable[..., Any]) -> bool:
    original = inspect.unwrap(call)
    try:
        returned = inspect.signature(original, eval_str=True).return_annotation
    except (NameError, TypeError, ValueError):
        return False
    return isinstance(returned, type) and issubclass(returned, Response)


def plan_route(route: APIRoute) -> Plan | None:
    """The plan of ``route``, or ``None`` when it is not simple enough for one."""
    dependant = route.dependant
    embed = getattr(route, "_embed_body_fields", None)
    if (
        dependant.call is None
        or not inspect.iscoroutinefunction(dependant.call)
        or not _returns_a_response(dependant.call)
        or _unplannable(dependant, endpoint=True)
        or len(dependant.body_params) > 1
        or not isinstance(embed, bool)
        or getattr(route, "form_limits", None)
    ):
        return None
    if dependant.body_params and not _is_json_body(dependant):
        return None
    dependencies: list[tuple[str | None, _Dependency]] = []
    for sub in dependant.dependencies:
        planned = _dependency(sub)
        if planned is None:
            return None
        dependencies.append((sub.name, planned))
    return Plan(
        route=route,
        dependencies=tuple(dependencies),
        request_name=dependant.request_param_name,
        embed=embed,
    )


def _is_json_body(dependant: Dependant) -> bool:
    """A body of one JSON value (not a form, nor files)."""
    info = dependant.body_params[0].field_info
    return isinstance(info, params.Body) and not isinstance(info, params.Form)
