"""Plugins for the whole test-suite: the storage backends and their fixtures."""

pytest_plugins = ["kalends.storage.testing"]
