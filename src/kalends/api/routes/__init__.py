"""The routers of the HTTP API, one module per area."""
