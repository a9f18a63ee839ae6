# Two commands on a fresh Debian machine: `make demo` and `make test`.
SHELL := /bin/bash
VENV := .venv
RESPAWN := $(VENV)/bin/respawn
# Bytecode is written even where the environment turns it off (this machine and CI set
# PYTHONDONTWRITEBYTECODE=1): pytest then keeps its rewritten test modules, so a run after the
# first does not parse and compile the 360 test modules again in every worker (8 s of a worker's
# CPU). An empty value is "not set" to Python; __pycache__ is ignored by git.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: setup demo lint test test-fast up down bench image

setup:
	@bash deploy/setup.sh

demo: setup
	$(RESPAWN) demo

# The full suite, as CI runs it, in two lanes. The main lane: the unit and workflow tests on
# both cores, then every case that runs jobs on one of this host's Slurm labs (marker `lab`,
# tests/conftest.py), one after another: the labs' nodes are processes of this host with the
# same job ids and node names, so the fault injector of one lab would find the other's ranks
# (found: the 24.11 lab run beside broke three of the sandbox's tests). Beside it, at a lower
# priority (the main lane has timing-sensitive cases): lint, the 24.11 lab's root filesystem
# built ahead, the integration cases that use no lab, and the container sandbox (its own
# lab, ports, Temporal and network namespaces; the five-minute soak runs there). Output of
# the beside lane is printed after the main lane's. Every sandbox is stopped whatever happens.
# Tests by level: tests/unit (pure), tests/workflow (time-skipping Temporal, replay),
# tests/integration (real Slurm, Temporal, servers), tests/e2e (the whole loop on the
# sandbox), tests/containers (the container sandbox, and the deployment artefacts).
BESIDE_LOG := tests/artifacts/test_beside.log
test: setup
	@mkdir -p $(dir $(BESIDE_LOG)); status=0; \
	  ( status=0; nice -n 10 bash -c '$(LINT)' || status=1; \
	    nice -n 10 $(VENV)/bin/python -c 'from respawn.sandbox.chroot import main; main()' || status=1; \
	    nice -n 10 $(VENV)/bin/pytest -q -p no:cacheprovider -m "not lab" tests/integration tests/e2e || status=1; \
	    nice -n 10 $(VENV)/bin/pytest -q -p no:cacheprovider tests/containers || status=1; \
	    exit $$status ) >$(BESIDE_LOG) 2>&1 & \
	  beside=$$!; \
	  $(VENV)/bin/pytest -q -p no:cacheprovider -n 2 tests/unit tests/workflow || status=$$?; \
	  $(VENV)/bin/pytest -q -p no:cacheprovider --durations=15 -m lab tests/integration tests/e2e || status=$$?; \
	  wait $$beside || status=1; \
	  echo "== beside the main lane (lint, 24.11 rootfs, integration without a lab, containers; in $(BESIDE_LOG)):"; \
	  cat $(BESIDE_LOG); \
	  $(RESPAWN) sandbox down >/dev/null 2>&1 || true; \
	  $(RESPAWN) sandbox down --backend containers >/dev/null 2>&1 || true; \
	  $(RESPAWN) sandbox down --slurm 24.11 >/dev/null 2>&1 || true; exit $$status

# Lint, format and types (pyproject.toml: ruff's rules, mypy strict on the stage packages).
LINT := $(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy
lint: setup
	$(LINT)

# Unit and workflow tests: no Slurm, no sandbox; under a minute, on both cores (pytest-xdist).
# The checks over every labelled corpus (marker `corpus`) grow with the corpora: `make test` runs them.
test-fast: setup
	$(VENV)/bin/pytest -q -p no:cacheprovider -n 2 -m "not corpus" tests/unit tests/workflow

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

# The Respawn image (deploy/Containerfile), built with Podman from the debootstrap base and
# this tree's wheels, tagged localhost/respawn:<hash of its inputs> and :<version> (docs/deploy.md).
image: setup
	$(VENV)/bin/python -c 'from respawn.sandbox.containers.images import main; main()'
