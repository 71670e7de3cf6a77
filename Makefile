# pyopenib — the two commands of the README contract: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP_BASE := $(VENV)/.installed-base
STAMP_TEST := $(VENV)/.installed-test
STAMP_BENCH := $(VENV)/.installed-bench
LINT_PATHS = $(wildcard src tests benchmarks examples)

.PHONY: demo test lint bench clean openmpi simgrid mpi4py-suite

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP_BASE): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(STAMP_BENCH): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $@

# Debian's Open MPI is the reference for the differential tests (ompi_info, its INI file).
openmpi:
	@{ command -v ompi_info && command -v mpicc; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null; \
	  else echo "ompi_info not found and cannot install openmpi-bin: differential tests will be skipped"; fi; }

# SimGrid SMPI is the peer of the speed benchmark (benchmarks/smpi_ratio.py: smpicc, smpirun).
simgrid:
	@{ command -v smpicc && command -v smpirun; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsimgrid-dev >/dev/null; \
	  else echo "smpicc not found and cannot install libsimgrid-dev: the SMPI ratio will be skipped"; fi; }

demo: $(STAMP_BASE)
	$(VENV)/bin/pyopenib demo

lint: $(STAMP_TEST)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)

test: openmpi $(STAMP_TEST) lint
	$(PY) -m pytest

bench: openmpi simgrid $(STAMP_BENCH)
	$(PY) benchmarks/run_all.py

# mpi4py's own test suite, every file at -n 1, 2 and 4, on real Open MPI and on pyopenib,
# through the recording driver and run unmodified (real's results cached per installed
# versions); the table also goes to build/.
mpi4py-suite: openmpi $(STAMP_TEST)
	$(PY) benchmarks/mpi4py_suite.py --cache-real --unmodified --md build/mpi4py-suite.md --json build/mpi4py-suite.json

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .ruff_cache
