# kalends — `make run` and `make test` set everything up themselves and are safe to repeat.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Reinstall when the project's dependencies change.
RUN_STAMP := $(VENV)/.run-installed
DEV_STAMP := $(VENV)/.dev-installed
BENCH_STAMP := $(VENV)/.bench-installed

SAMPLE_RULE := {"kind":"calendars","calendars":[{"kind":"daily","time":"01:30","zone":"America/New_York"},{"kind":"cron","expression":"0 * * * *","zone":"America/New_York"}]}

.PHONY: run test lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(RUN_STAMP)

$(BENCH_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $@ $(RUN_STAMP)

# The whole service on the SQLite default: the API on http://127.0.0.1:8000, the mission
# scheduler and the reminder delivery. The first start prints a one-time login link.
run: $(RUN_STAMP)
	$(BIN)/kalends preview --rule '$(SAMPLE_RULE)' --after 2026-11-01T03:30:00Z --count 6
	exec $(BIN)/kalends serve

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# The passage sandbox's tests need bubblewrap (Debian's bubblewrap package); the service
# unit's tests verify it with systemd-analyze (Debian's systemd package).
SYSTEM_STAMP := $(VENV)/.system-installed
$(SYSTEM_STAMP): | $(BIN)/python
	command -v bwrap >/dev/null && command -v git >/dev/null && command -v systemd-analyze >/dev/null || { apt-get update -qq && apt-get install -y -qq bubblewrap git systemd; }
	touch $@

# The web pages' browser tests drive Debian's chromium through Playwright.
BROWSER_STAMP := $(VENV)/.browser-installed
$(BROWSER_STAMP): | $(BIN)/python
	command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium; }
	touch $@

# Tests run in worker processes (pytest-xdist), a test file to a worker: two more than
# there are CPUs, since many tests wait on real servers, workers, browsers and leases
# (with three workers on two CPUs, 30% of the CPU time went unused). The longest files
# go first (tests/conftest.py), in that order: --no-loadscope-reorder keeps pytest-xdist
# from sending the files with the most tests first instead.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 2 )))

# Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE):
# the tests start hundreds of kalends processes (the CLI, servers, workers), and each
# would compile every module it imports again.
pytest: $(DEV_STAMP) $(SYSTEM_STAMP) $(BROWSER_STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: lint typecheck pytest

# bench/api.py drives the server with wrk (Debian's wrk package).
BENCH_SYSTEM_STAMP := $(VENV)/.bench-system-installed
$(BENCH_SYSTEM_STAMP): | $(BIN)/python
	command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
	touch $@

bench: $(BENCH_STAMP) $(BENCH_SYSTEM_STAMP)
	$(BIN)/python bench/recurrence.py
	$(BIN)/python bench/tasks.py
	$(BIN)/python bench/outbox.py
	$(BIN)/python bench/missions.py
	$(BIN)/python bench/scheduler.py
	$(BIN)/python bench/api.py
	$(BIN)/python bench/web.py
	$(BIN)/python bench/idle.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
