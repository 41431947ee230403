"""Keyword groups held to the rules of named keywords.

A wide keyword list that a service, its client protocol and its HTTP client all take is
written once, as a ``TypedDict`` the three take as ``**kw: Unpack[Group]`` (PEP 692):
mypy checks each caller's names and types. At run time Python would take any keyword
into ``**kw``, so a misspelled one (``worksapce=``) would be dropped without a word, and
with it, say, a scope check. :func:`takes` keeps what naming the keywords gave: an
unknown keyword, or a required one left out, is a ``TypeError`` with Python's own
wording, and the function's signature (``inspect.signature``, ``help``) lists the
group's keywords, each keyword-only.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast, get_type_hints

__all__ = ["takes"]

F = TypeVar("F", bound=Callable[..., Any])


def takes(group: Any, **defaults: Any) -> Callable[[F], F]:
    """The decorated function's ``**kw`` are ``group``'s keywords (a ``TypedDict``);
    ``defaults``: what its signature shows for an optional keyword left out (``None``
    unless given here; the function reads the same default with ``kw.get``)."""
    required: frozenset[str] = group.__required_keys__
    known: frozenset[str] = required | group.__optional_keys__
    unknown_default = set(defaults) - known
    if unknown_default:
        raise TypeError(f"{group.__name__} has no keyword {sorted(unknown_default)[0]!r}")

    def decorate(fn: F) -> F:
        name = f"{fn.__qualname__}()"

        @functools.wraps(fn)
        def checked(*args: Any, **kw: Any) -> Any:
            if not known.issuperset(kw):
                stray = next(key for key in kw if key not in known)
                raise TypeError(f"{name} got an unexpected keyword argument {stray!r}")
            if not required.issubset(kw):
                missing = sorted(required.difference(kw))
                raise TypeError(f"{name} missing required keyword-only argument {missing[0]!r}")
            return fn(*args, **kw)

        checked.__signature__ = _spelled_out(fn, group, required, defaults)  # type: ignore[attr-defined]
        return cast(F, checked)

    return decorate


def _spelled_out(
    fn: Callable[..., Any], group: Any, required: frozenset[str], defaults: Mapping[str, Any]
) -> inspect.Signature:
    """``fn``'s signature with its ``**kw`` written out as ``group``'s keywords."""
    signature = inspect.signature(fn)
    kept = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    types = get_type_hints(group)
    keywords = [
        inspect.Parameter(
            key,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if key in required else defaults.get(key),
            annotation=types[key],
        )
        for key in types
    ]
    return signature.replace(parameters=[*kept, *keywords])
