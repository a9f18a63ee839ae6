# Two commands on a fresh Debian machine: `make demo` and `make test`.
SHELL := /bin/bash
VENV := .venv
RESPAWN := $(VENV)/bin/respawn

.PHONY: setup demo test test-fast up down bench

setup:
	@bash deploy/setup.sh

demo: setup
	$(RESPAWN) demo

# The full suite, as CI runs it; the sandbox is stopped whatever happens.
test: setup
	@status=0; $(VENV)/bin/pytest -q -p no:cacheprovider --durations=15 || status=$$?; \
	  $(RESPAWN) sandbox down >/dev/null 2>&1 || true; exit $$status

# Skips the slowest end-to-end cases (they still run in CI).
test-fast: setup
	$(VENV)/bin/pytest -q -m "not slow"

up: setup
	$(RESPAWN) sandbox up

down:
	@if [[ -x $(RESPAWN) ]]; then $(RESPAWN) sandbox down; fi

bench: setup
	$(VENV)/bin/python benchmarks/recovery_latency.py --runs 5
	$(VENV)/bin/python benchmarks/hang_straggler.py --runs 5
	$(VENV)/bin/python benchmarks/classify_accuracy.py
	$(VENV)/bin/python benchmarks/classify_throughput.py
