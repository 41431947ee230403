"""Where a route's code runs: in the thread pool, or on the event loop when it is short.

The services are synchronous. A synchronous route would go through the thread pool
(FastAPI's default for a ``def``), and on SQLite that hop is most of what a short read
costs: a task detail took 1.18 ms of CPU through a pool of one thread and 0.78 ms run
on the event loop, 1.84 ms with two threads contending for the interpreter lock.

So when its context allows it (:attr:`ApiContext.inline_routes`: SQLite by default):

- a route marked :func:`inline_read` runs on the event loop, in one read transaction
  with the credential check (reads in WAL mode never wait for a lock);
- a route marked :func:`inline_write` runs there in one write transaction, begun only
  if the write lock is free at once; when another connection holds it, the route runs
  in the pool instead, where waiting for the lock blocks no other request.

Everything else runs in the pool: reads whose cost grows with the data, writes with
effects outside the database, and every route on PostgreSQL, where each statement
waits on the network and the pool overlaps those waits.

The credentials (a :class:`~kalends.api.security.DeferredPrincipal`) are looked up
where the route runs, just before it. In a read on the event loop the write that
records a credential's use (at most once a minute) goes to the pool after the route.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from anyio import to_thread
from fastapi import params
from fastapi.routing import APIRoute
from sqlalchemy.engine import Connection
from starlette.routing import Match
from starlette.types import Scope

from kalends.api import fast
from kalends.api.bodies import with_depth_bound
from kalends.api.context import ApiContext
from kalends.api.fast.handlers import Handler, plan_route
from kalends.api.security import DeferredPrincipal
from kalends.auth.accounts import Touch
from kalends.errors import DatabaseBusy

__all__ = ["DispatchedRoute", "dispatched", "inline_read", "inline_write"]

T = TypeVar("T")
Values = dict[str, Any]

_INLINE = "__kalends_inline__"


@dataclass(frozen=True, slots=True)
class _Inline:
    write: bool
    when: Callable[[Values], bool] | None


def inline_read(
    when: Callable[[Values], bool] | None = None,
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Marks a route as a short read that may run on the event loop.

    ``when`` narrows it to some requests (given the route's arguments): a read whose
    cost grows with the data it returns is short only when paged.
    """
    return _mark(_Inline(write=False, when=when))


def inline_write(
    when: Callable[[Values], bool] | None = None,
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Marks a route as a short write, with no effect outside the database, that may run
    on the event loop when the database's write lock is free at once (else in the pool,
    where waiting for it blocks nothing else)."""
    return _mark(_Inline(write=True, when=when))


def _mark(inline: _Inline) -> Callable[[Callable[..., T]], Callable[..., T]]:
    def mark(call: Callable[..., T]) -> Callable[..., T]:
        setattr(call, _INLINE, inline)
        return call

    return mark


def _context(values: Values) -> ApiContext | None:
    for value in values.values():
        if isinstance(value, ApiContext):
            return value
    return None


def _resolved(call: Callable[..., T], values: Values) -> T:
    """``call`` with its deferred principals looked up (uses recorded) first."""
    for name, value in values.items():
        if isinstance(value, DeferredPrincipal):
            values[name] = value.resolve()
    return call(**values)


def dispatched(call: Callable[..., T]) -> Callable[..., Coroutine[Any, Any, T]]:
    """The synchronous route ``call`` as a coroutine that runs it where it belongs."""
    inline: _Inline | None = getattr(call, _INLINE, None)

    @functools.wraps(call)
    async def run(**values: Any) -> T:
        ctx = _context(values)
        if (
            inline is None
            or ctx is None
            or not ctx.inline_routes
            or (inline.when is not None and not inline.when(values))
        ):
            return await to_thread.run_sync(functools.partial(_resolved, call, values))
        store = ctx.services.store
        if inline.write:
            try:
                # One write transaction for the credentials (their use recorded) and the
                # route, begun only if the write lock is free now. Whatever fails in it
                # fails the request, so the services' own writes need no savepoint.
                return store.run(
                    lambda _conn: _resolved(call, values), wait=False, savepoints=False
                )
            except DatabaseBusy:
                # Held elsewhere: wait for it in the pool, not on the event loop.
                return await to_thread.run_sync(functools.partial(_resolved, call, values))
        touches: list[Touch] = []

        def read(_conn: Connection) -> T:
            for name, value in values.items():
                if isinstance(value, DeferredPrincipal):
                    found, touch = value.check()
                    if touch is not None:
                        touches.append(touch)
                    values[name] = found
            return call(**values)

        # One read transaction for the credentials and the route's reads.
        result = store.run(read, write=False)
        for touch in touches:
            await to_thread.run_sync(touch)
        return result

    return run


class DispatchedRoute(APIRoute):
    """A route whose synchronous endpoint is :func:`dispatched`: every router of the API
    uses it (``create_app`` refuses a synchronous route without it).

    The router tries its routes in turn until one matches; a route tells it no at once
    when the path does not start with the route's literal beginning (its text up to the
    first parameter) or end with its literal end (after the last one), as every path it
    matches does. Trying a route through the framework's own test costs about 0.8 us;
    this test a fraction of that.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            endpoint = dispatched(endpoint)
        super().__init__(path, endpoint, **kwargs)
        self.literal_start = self.path_format.split("{", 1)[0]
        # And the text after its last parameter, which every path it matches ends with.
        self.literal_end = self.path_format.rsplit("}", 1)[1] if "}" in self.path_format else ""

    def get_route_handler(self) -> Handler:
        """The framework's handler, behind this route's plan when it has one and the fast
        paths are on (:mod:`kalends.api.fast.handlers`), and behind the bound on a JSON
        body's nesting (:mod:`kalends.api.bodies`) when the route takes one."""
        framework = super().get_route_handler()
        plan = plan_route(self) if fast.ENABLED else None
        handler = framework if plan is None else plan.handler(framework)
        body = self.dependant.body_params
        if body and not isinstance(body[0].field_info, params.Form):
            return with_depth_bound(handler)
        return handler

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        # Under a root path (a mounted application) the framework strips it first.
        if not scope.get("root_path"):
            path: str = scope["path"]
            if not (path.startswith(self.literal_start) and path.endswith(self.literal_end)):
                return Match.NONE, {}
        return super().matches(scope)
