"""The HTTP API: a thin FastAPI layer over the domain services.

:func:`create_app` builds the application on an :class:`ApiContext` (the wired
services, the accounts and the settings). Every route resolves its principal
(a cookie session or an API token) before it calls a service, and every service
checks the principal's current membership of the list or workspace itself.
"""

from kalends.api.app import create_app
from kalends.api.context import ApiContext, ApiSettings

__all__ = ["ApiContext", "ApiSettings", "create_app"]
