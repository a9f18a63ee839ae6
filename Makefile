# Two commands on a fresh Debian machine: `make demo` and `make test`.
SHELL := /bin/bash
VENV := .venv
RESPAWN := $(VENV)/bin/respawn

.PHONY: setup demo lint test test-fast up down bench image

setup:
	@bash deploy/setup.sh

demo: setup
	$(RESPAWN) demo

# The full suite, as CI runs it. The container sandbox's module shares nothing with the
# rest (its own lab, ports, Temporal and process namespaces), so it runs beside it, at a
# lower priority: the rest has timing-sensitive cases. The Slurm 24.11 chroot lab
# (tests/integration/test_slurm_2411.py) runs in the main session, one module after another:
# its nodes are processes of this host, with the sandbox's job ids and node names, so the
# fault injector of one lab would find the other's ranks (found: run beside, it broke
# three of the sandbox's tests). Every sandbox is stopped whatever happens.
# Tests by level: tests/unit (pure), tests/workflow (time-skipping Temporal, replay),
# tests/integration (real Slurm, Temporal, servers), tests/e2e (the whole loop on the
# sandbox), tests/containers (the container sandbox).
CONTAINERS_LOG := tests/artifacts/test_containers.log
test: setup lint
	@mkdir -p $(dir $(CONTAINERS_LOG)); status=0; \
	  nice -n 10 $(VENV)/bin/pytest -q -p no:cacheprovider tests/containers >$(CONTAINERS_LOG) 2>&1 & \
	  containers=$$!; \
	  $(VENV)/bin/pytest -q -p no:cacheprovider -n 2 tests/unit tests/workflow || status=$$?; \
	  $(VENV)/bin/pytest -q -p no:cacheprovider --durations=15 tests/integration tests/e2e || status=$$?; \
	  wait $$containers || status=$$?; \
	  echo "== tests/containers (run beside the rest, output in $(CONTAINERS_LOG)):"; \
	  cat $(CONTAINERS_LOG); \
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

# The Respawn image (deploy/Containerfile), built with Podman from the debootstrap base and
# this tree's wheels, tagged localhost/respawn:<hash of its inputs> and :<version> (docs/deploy.md).
image: setup
	$(VENV)/bin/python -c 'from respawn.sandbox.containers.images import main; main()'
