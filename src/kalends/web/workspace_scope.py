"""The workspace a page is about, with the viewer's workspaces for the navigation: what
every workspace-scoped page reads first."""

from __future__ import annotations

from uuid import UUID

from kalends.missions.workspaces import Workspace
from kalends.web.session import Viewer

__all__ = ["find_workspace"]


def find_workspace(who: Viewer, workspace: UUID) -> tuple[Workspace, list[Workspace]]:
    """The page's workspace and the viewer's workspaces (the navigation), in one read;
    one the viewer is no member of is refused as the service refuses it (404)."""
    services = who.context.services
    spaces = services.workspaces.list(who.actor)
    for ws in spaces:
        if ws.id == workspace:
            return ws, spaces
    return services.workspaces.get(who.actor, workspace), spaces
