# Switchboard: `make run` starts the service, `make test` runs lint and the whole suite.
# Both install first; `make install` is idempotent and quick when nothing changed.

PYTHON ?= python3
# The suite (parallel workers, the services its tests start) imports the same modules many times:
# let Python keep their bytecode even where the image says not to (__pycache__ is ignored by git).
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test test-slow test-all lint unit integration bench bench-floor bench-fleet bench-memory bench-state clean lock

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@test -x $(BIN)/uv || $(BIN)/python -m pip install -q --disable-pip-version-check uv
	$(BIN)/uv pip install -q --python $(BIN)/python -r requirements.lock
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	@touch $(STAMP)

run: install
	$(BIN)/switchboard

lint: install
	$(BIN)/ruff check switchboard channels agent storage service tests bench
	$(BIN)/ruff format --check switchboard channels agent storage service tests bench
	$(BIN)/lint-imports
	$(BIN)/mypy

unit: install
	$(BIN)/pytest tests/unit -q

integration: install
	$(BIN)/pytest tests/integration -q

# The suite waits on sockets more than it computes: twice the cores in parallel workers, each with
# its own embedded Valkey and every test under its own key prefix.
WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$((n * 2)))

test: lint
	$(BIN)/pytest -q -n $(WORKERS) -m "not slow"

# The fault tests (kill -9, bursts, Sentinel failover, Redis restarts), four at a time: most of
# their time is spent waiting out leases, paced sends and failover windows, not computing.
# .ci/run runs them after make test.
test-slow: install
	$(BIN)/pytest -q -n 4 -m slow

test-all: test test-slow

bench: install
	$(BIN)/python bench/checkpoint.py
	$(BIN)/python bench/turn.py
	$(BIN)/python bench/model_request.py

# Bare aiogram + create_agent bot vs Switchboard's Telegram path, same fakes, five interleaved runs.
bench-floor: install
	$(BIN)/python bench/bot_floor.py

# One ingress + 1, then 2 workers on the Slack Events API path: throughput and CPU/msg side by side.
bench-fleet: install
	$(BIN)/python bench/fleet.py

# Idle RSS of serve per platform combination and the console; a 20,000-message soak (issue 20).
bench-memory: install
	$(BIN)/python bench/memory.py

# Redis memory of one conversation at 10-200 turns and of 1,000 idle ones, every key family (issue 29).
bench-state: install
	$(BIN)/python bench/state.py

# requirements.lock: everything, for .venv and CI; requirements-runtime.lock: no dev tools, for the
# Docker image (same pins: uv keeps the versions already in each file unless asked to upgrade).
lock:
	$(BIN)/uv pip compile pyproject.toml --extra dev --extra anthropic --python-version 3.11 -o requirements.lock
	$(BIN)/uv pip compile pyproject.toml --extra anthropic --python-version 3.11 -o requirements-runtime.lock

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
