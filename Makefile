# Two commands on a fresh Debian machine: `make demo` and `make test`.
SHELL := /bin/bash
VENV := .venv
RESPAWN := $(VENV)/bin/respawn

.PHONY: setup demo lint test test-fast up down bench

setup:
	@bash deploy/setup.sh

demo: setup
	$(RESPAWN) demo

# The full suite, as CI runs it. Two labs share nothing with the main sandbox (their own
# ports, Temporal and locks), so they run beside it, one after the other: the container
# sandbox (tests/containers, at a lower priority: the main session has timing-sensitive
# cases), then the Slurm 24.11 chroot lab (tests/integration/test_slurm_2411.py). Every
# sandbox is stopped whatever happens.
# Tests by level: tests/unit (pure), tests/workflow (time-skipping Temporal, replay),
# tests/integration (real Slurm, Temporal, servers), tests/e2e (the whole loop on the
# sandbox), tests/containers (the container sandbox).
BESIDE_LOG := tests/artifacts/beside.log
SLURM_2411 := tests/integration/test_slurm_2411.py
test: setup lint
	@mkdir -p $(dir $(BESIDE_LOG)); status=0; \
	  ( beside=0; \
	    nice -n 10 $(VENV)/bin/pytest -q -p no:cacheprovider tests/containers || beside=1; \
	    $(VENV)/bin/pytest -q -p no:cacheprovider $(SLURM_2411) || beside=1; exit $$beside ) >$(BESIDE_LOG) 2>&1 & \
	  beside=$$!; \
	  $(VENV)/bin/pytest -q -p no:cacheprovider -n 2 tests/unit tests/workflow || status=$$?; \
	  $(VENV)/bin/pytest -q -p no:cacheprovider --durations=15 --ignore=$(SLURM_2411) tests/integration tests/e2e \
	    || status=$$?; \
	  wait $$beside || status=$$?; \
	  echo "== tests/containers and $(SLURM_2411) (run beside the rest, output in $(BESIDE_LOG)):"; \
	  cat $(BESIDE_LOG); \
	  $(RESPAWN) sandbox down >/dev/null 2>&1 || true; \
	  $(RESPAWN) sandbox down --backend containers >/dev/null 2>&1 || true; \
	  $(RESPAWN) sandbox down --slurm 24.11 >/dev/null 2>&1 || true; exit $$status

# Lint, format and types (pyproject.toml: ruff's rules, mypy strict on the stage packages).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Unit and workflow tests: no Slurm, no sandbox; under a minute, on both cores (pytest-xdist).
test-fast: setup
	$(VENV)/bin/pytest -q -p no:cacheprovider -n 2 tests/unit tests/workflow

up: setup
	$(RESPAWN) sandbox up

down:
	@if [[ -x $(RESPAWN) ]]; then $(RESPAWN) sandbox down; $(RESPAWN) sandbox down --backend containers; \
	  $(RESPAWN) sandbox down --slurm 24.11; fi

bench: setup
	$(VENV)/bin/python benchmarks/recovery_latency.py --runs 5
	$(VENV)/bin/python benchmarks/hang_straggler.py --runs 5
	$(VENV)/bin/python benchmarks/classify_accuracy.py
	$(VENV)/bin/python benchmarks/classify_throughput.py
