"""Plugins for the whole test-suite: the storage backends and their fixtures."""

import os

# pytest-xdist gives its workers COLUMNS=80 and LINES=24, and the CLI's consoles would
# fix that width when first imported; the tests that print set COLUMNS per invocation.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

# As root, `kalends serve` and `kalends worker` run passages as kalends-passage, which
# they create. Tests that are not about confinement run them as the server's own user and
# leave the machine's users alone; tests/runtime/test_isolation.py and
# tests/e2e/test_passage_confinement.py name the user they confine passages to.
os.environ.setdefault("KALENDS_PASSAGE_USER", "root")

# A human Play turns service supervision on through systemd's user manager. No test
# reaches the machine's own manager (systemctl --user finds it through these two), so no
# test installs a unit into the real home; the supervision tests put stand-ins first on
# PATH instead (tests/supervision).
os.environ.pop("XDG_RUNTIME_DIR", None)
os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)

pytest_plugins = ["kalends.storage.testing"]
