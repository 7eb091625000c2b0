# Two set-up commands on a fresh machine (see README):
#   make demo   - the main job: local Chatto server + real Hermes gateway + scripted model
#   make test   - the whole test suite
#   make test-fast - unit + wire tests only (tests/unit, tests/wire; well under a minute)
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: venv test test-fast lint stress demo bench proto clean live

# First run only (again when pyproject.toml changes): a venv with the package, hermes-agent and
# the test tools. Each step says what it does; pip prints a line per package it fetches.
$(STAMP): pyproject.toml
	@echo "==> [1/3] creating the virtual environment $(VENV) with $(PYTHON) (a few seconds)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> [2/3] upgrading pip in $(VENV) (a few seconds)"
	$(PY) -m pip install --quiet --upgrade pip
	@echo "==> [3/3] installing hermes-chatto (editable) with hermes-agent, the local server and the"
	@echo "          test tools: pip install -e '.[test,lint]' (~80 packages, about a minute on a fresh machine)"
	$(PY) -m pip install -e '.[test,lint]'
	touch $(STAMP)
	@echo "==> $(VENV) ready"

venv: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

# The quick loop: the pure and wire layers (markers set per folder by tests/conftest.py).
test-fast: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m "unit or wire"

# ruff (lint, then formatting) and mypy, configured in pyproject.toml; CI runs this.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The fault suite, the busy-mode follow-ups and the edit-in-flight case under CPU contention and
# seeded scheduling jitter (tests/support/stress.py): STRESS_ROUNDS rounds, round i with seed
# STRESS_SEED+i, each bounded by STRESS_ROUND_TIMEOUT s; stops at the first failing round and
# prints the seed to replay. Narrow with STRESS_K (a pytest -k expression).
STRESS_ROUNDS        ?= 20
STRESS_SEED          ?= 1000
STRESS_ROUND_TIMEOUT ?= 900
STRESS_TESTS         ?= tests/e2e/test_faults.py tests/e2e/test_e2e_followups.py tests/e2e/test_adapter_edit.py
STRESS_K             ?=
stress: $(STAMP)
	@for i in $$(seq 1 $(STRESS_ROUNDS)); do \
	  seed=$$(( $(STRESS_SEED) + i )); \
	  echo "==> stress round $$i/$(STRESS_ROUNDS) (CHATTO_STRESS_SEED=$$seed)"; \
	  CHATTO_STRESS_SEED=$$seed PYTHONPATH=tests timeout $(STRESS_ROUND_TIMEOUT) \
	    $(PY) -m pytest -q -p no:cacheprovider -p support.stress -k "$(STRESS_K)" $(STRESS_TESTS) \
	    || { echo "stress round $$i FAILED: replay with CHATTO_STRESS_SEED=$$seed"; exit 1; }; \
	done; echo "==> stress: $(STRESS_ROUNDS) rounds passed"

# The live suite against a real Chatto server (README "Check against your own Chatto server"):
#   CHATTO_LIVE_URL=https://chat.example.com CHATTO_LIVE_LOGIN=<owner> CHATTO_LIVE_PASSWORD=<pw> make live
# It creates its own bot, people and channels over the server's API and removes them after.
live: $(STAMP)
	@test -n "$$CHATTO_LIVE_URL" -a -n "$$CHATTO_LIVE_LOGIN" -a -n "$$CHATTO_LIVE_PASSWORD" || { \
	  echo "make live: set CHATTO_LIVE_URL, CHATTO_LIVE_LOGIN and CHATTO_LIVE_PASSWORD (an owner/admin account of your Chatto server; README: Check against your own Chatto server)"; exit 2; }
	$(PY) -m pytest -q -p no:cacheprovider -rsxX tests/live

demo: $(STAMP)
	$(PY) -m chatto_local.demo

# The benchmarks (bench/): installs the `bench` extra (matplotlib for the P7 chart) once, then
# prints one line per figure, its goal and whether it was met.
BENCH_STAMP = $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) bench/run_all.py

# Regenerate the protobuf module from the hand-written subset .proto, and its type stub
# (chatto_pb2.pyi: what mypy checks the wire layer's message accesses against).
proto: $(STAMP)
	$(PY) -m grpc_tools.protoc -I hermes_chatto/wire/proto --python_out=hermes_chatto/wire/proto hermes_chatto/wire/proto/chatto.proto
	$(PY) -m grpc_tools.protoc -I hermes_chatto/wire/proto --pyi_out=hermes_chatto/wire/proto hermes_chatto/wire/proto/chatto.proto

clean:
	rm -rf $(VENV) build *.egg-info
