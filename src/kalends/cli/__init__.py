"""The ``kalends`` command line: thin callers of the services."""
