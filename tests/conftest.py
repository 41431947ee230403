"""Plugins for the whole test-suite: the storage backends and their fixtures."""

import os

# pytest-xdist gives its workers COLUMNS=80 and LINES=24, and the CLI's consoles would
# fix that width when first imported; the tests that print set COLUMNS per invocation.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

pytest_plugins = ["kalends.storage.testing"]
