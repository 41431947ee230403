"""The checklist a schedule's passages start with: nested items, bounded in number and depth."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kalends.missions.config_fields import fail, json_object, text_field
from kalends.missions.limits import MAX_TEMPLATE_ITEMS

__all__ = ["TemplateItem", "parse_template"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TemplateItem:
    """One checklist item a passage starts with, and its own items."""

    title: str
    children: tuple[TemplateItem, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title}
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out


def parse_template(data: object) -> tuple[TemplateItem, ...] | None:
    """The ``template`` field: ``None`` for no checklist, else its items."""
    if data is None:
        return None
    count = 0

    def items(value: object, name: str, depth: int) -> tuple[TemplateItem, ...]:
        nonlocal count
        if not isinstance(value, list):
            raise fail(name, "must be a list of items")
        out = []
        for i, item in enumerate(value):
            here = f"{name}[{i}]"
            obj = json_object(item, here, ("title", "children"))
            count += 1
            if count > MAX_TEMPLATE_ITEMS:
                raise fail("template", f"at most {MAX_TEMPLATE_ITEMS} items in all")
            if depth > 8:
                raise fail(here, "nests deeper than 8 levels")
            if "title" not in obj:
                raise fail(f"{here}.title", "is required")
            title = text_field(obj["title"], f"{here}.title", 500, low=1)
            children = items(obj.get("children", []), f"{here}.children", depth + 1)
            out.append(TemplateItem(title=title, children=children))
        return tuple(out)

    return items(data, "template", 1)
