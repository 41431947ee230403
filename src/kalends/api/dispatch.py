"""Where a route's code runs: in the thread pool, or on the event loop for short reads.

The services are synchronous. A synchronous route would go through the thread pool
(FastAPI's default for a ``def``), and on SQLite that hop is most of what a short read
costs: a task detail took 1.18 ms of CPU through a pool of one thread and 0.78 ms run
on the event loop, 1.84 ms with two threads contending for the interpreter lock.
Reads in WAL mode never wait for a lock, so a route marked :func:`inline_read` runs
on the event loop when its context allows it (:attr:`ApiContext.inline_reads`: SQLite
by default). Everything else runs in the pool: writes, which may wait for the write
lock, reads whose cost grows with the data, and every route on PostgreSQL, where each
statement waits on the network and the pool overlaps those waits.

The credentials (a :class:`~kalends.api.security.DeferredPrincipal`) are looked up
where the route runs, just before it. On the event loop the lookup is a read only: the
write that records a credential's use (at most once a minute) goes to the pool first.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from anyio import to_thread
from fastapi.routing import APIRoute

from kalends.api.context import ApiContext
from kalends.api.security import DeferredPrincipal

__all__ = ["DispatchedRoute", "dispatched", "inline_read"]

T = TypeVar("T")
Values = dict[str, Any]

_INLINE = "__kalends_inline_read__"


def inline_read(
    when: Callable[[Values], bool] | None = None,
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Marks a route as a short read that may run on the event loop.

    ``when`` narrows it to some requests (given the route's arguments): a read whose
    cost grows with the data it returns is short only when paged.
    """

    def mark(call: Callable[..., T]) -> Callable[..., T]:
        setattr(call, _INLINE, when or _always)
        return call

    return mark


def _always(_values: Values) -> bool:
    return True


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
    inline: Callable[[Values], bool] | None = getattr(call, _INLINE, None)

    @functools.wraps(call)
    async def run(**values: Any) -> T:
        ctx = _context(values)
        if inline is not None and ctx is not None and ctx.inline_reads and inline(values):
            for name, value in values.items():
                if isinstance(value, DeferredPrincipal):
                    found, touch = value.check()
                    if touch is not None:
                        await to_thread.run_sync(touch)
                    values[name] = found
            return call(**values)
        return await to_thread.run_sync(functools.partial(_resolved, call, values))

    return run


class DispatchedRoute(APIRoute):
    """A route whose synchronous endpoint is :func:`dispatched`: every router of the API
    uses it (``create_app`` refuses a synchronous route without it)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            endpoint = dispatched(endpoint)
        super().__init__(path, endpoint, **kwargs)
