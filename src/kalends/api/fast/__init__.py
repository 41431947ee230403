"""kalends' fast paths through the framework: the one package that uses its internals.

Two parts stand in for work the framework does afresh on every request:

- :mod:`~kalends.api.fast.route_index` finds a request's route by the shape of its path
  instead of trying every route in turn (Starlette's router);
- :mod:`~kalends.api.fast.handlers` plans a route's handler once: its inputs read and
  checked by FastAPI's own functions on the route's own fields, its dependencies called
  directly, instead of solving the dependency tree for each request.

Both use functions and attributes the framework does not promise to keep
(``request_params_to_args``, ``request_body_to_args``, ``Dependant``'s fields,
``Route.matches``' scope), so the project pins FastAPI and Starlette to the minor
versions these were tested on (``pyproject.toml``), and differential tests
(``tests/api/test_handlers.py``, ``tests/api/test_route_index.py``) prove that each
answers every request exactly as the framework does, valid or not.

The measured gain, and why they stay: README, "Framework fast paths". With
``KALENDS_FAST_PATHS=0`` in its environment a server uses neither (the framework's own
routing and handlers): the way out should a framework release within the pins change
what they rely on, and the comparison ``bench/api.py`` measures.
"""

from __future__ import annotations

import os

__all__ = ["ENABLED", "ENV_FAST_PATHS"]

ENV_FAST_PATHS = "KALENDS_FAST_PATHS"
"""The environment variable that turns the fast paths off when set to ``0``."""

ENABLED = os.environ.get(ENV_FAST_PATHS, "1").strip() != "0"
"""Whether this process's routes use the fast paths: read once, when routes are built."""
