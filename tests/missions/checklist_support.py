"""The checklist template the passage checklist tests share: three levels, five items."""

from __future__ import annotations

from typing import Any

from kalends.missions.config_template import TemplateItem, parse_template

__all__ = ["THREE_LEVELS", "THREE_LEVELS_TEMPLATE"]

THREE_LEVELS: list[dict[str, Any]] = [
    {
        "title": "Prepare",
        "children": [
            {"title": "Fetch the data", "children": [{"title": "Check the mirror"}]},
            {"title": "Clean it"},
        ],
    },
    {"title": "Publish"},
]
"""As a configuration gives it."""

_PARSED = parse_template(THREE_LEVELS)
assert _PARSED is not None
THREE_LEVELS_TEMPLATE: tuple[TemplateItem, ...] = _PARSED
"""As the checklist functions take it."""
