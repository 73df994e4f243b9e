# Two commands set up a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NATIVE := $(wildcard src/jitterscope/native/*.c src/jitterscope/native/*.h)

.PHONY: run test check unit integration bench install native clean packages mpi lint py-lowest wheel

# uv installs what pip would, from the same index: about 45 s of set-up instead of pip's 86 s on a fresh
# clone of the 2-vCPU guest (part of every fresh `make test`); pip stays in the venv (the wheel test and
# `make py-lowest` use it).
# Bytecode is compiled at install, as pip does: where PYTHONDONTWRITEBYTECODE is set (these VMs' shells),
# Python never caches what it compiles, and without it every process compiled numpy, scipy and pyarrow
# again (a make test under the hog took 18:34 instead of 13:27).  COMPILE does it after each install, but
# not for the packages' own test suites (a third of the bytes, never imported): 27 CPU-seconds instead of
# uv --compile-bytecode's 40 on this 2-vCPU guest.
UV := $(BIN)/uv pip install -q --python $(BIN)/python
COMPILE := $(BIN)/python -m compileall -q -j0 -x '/tests?/' \
	"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > /dev/null

# The venv without ensurepip's own copy of pip (7 s of a fresh set-up under load): uv is installed into it
# by this Python's pip where that pip can (--python), and uv then puts pip in the venv; otherwise ensurepip.
$(BIN)/python:
	$(PY) -m venv --without-pip $(VENV)

$(BIN)/uv: $(BIN)/python
	$(PY) -m pip --python $(BIN)/python install -q uv 2>/dev/null || \
	  { $(BIN)/python -m ensurepip -q && $(BIN)/python -m pip install -q uv; }
	$(BIN)/uv pip install -q --python $(BIN)/python pip

# Editable install: Python changes take effect at once; `make native` rebuilds C.  setuptools and wheel in
# the venv itself, as pyproject's build-system asks (the venv's own setuptools is older): `make native` and
# the wheel test build without isolation.
$(STAMP): $(BIN)/uv pyproject.toml setup.py $(NATIVE)
	$(UV) 'setuptools>=77' wheel -e '.[test]'
	$(COMPILE)
	touch $(STAMP)

# Every module's bytecode, kept up to date: where PYTHONDONTWRITEBYTECODE is set (the shells on these VMs set it),
# Python never caches what it compiles, and every jitterscope process (hundreds in `make test`) compiled the
# package from source again, 0.15 CPU-seconds each.  Only changed files are compiled.
install: $(STAMP)
	@$(BIN)/python -m compileall -q -j0 src/jitterscope > /dev/null

native: $(BIN)/python
	$(BIN)/python setup.py -q build_ext --inplace

run: install
	$(BIN)/jitterscope measure --duration 10s

# An installable wheel for every user (README "Install for everyone"): the sdist, the wheel built from
# it with the native programs compiled in, and that wheel made manylinux by auditwheel (into wheelhouse/).
wheel: install
	rm -rf dist wheelhouse
	$(BIN)/python -m build --no-isolation --outdir dist .
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/auditwheel repair -w wheelhouse dist/jitterscope-*.whl

# System programs some tests use, installed with one apt run where apt can (a test whose program is
# missing skips, naming it): chromium (the report's browser test), trace-cmd (the trace parser's
# libtraceevent cross-check), pigz/xz/zstd (real programs for sync), valgrind (whatif capture and
# place --profile cachegrind), perf (per-source event counts against the kernel's tracepoint counts),
# oslat (the probe-peers benchmark), prometheus (the monitor's Prometheus test; promtool for the shipped rules),
# munge/slurmctld/slurmd/srun (the Slurm test's one-node cluster), gengetopt/re2c/libgraphviz-dev (LogGOPSim,
# built by its oracle tests and benchmark from ../shared/peers; the header stands for the library package, which
# has no program).
# A package's service must not start (the tests start their own Prometheus and Slurm, with their own ports,
# keys and configuration): policy-rc.d refuses service starts during the install, and the services it enabled
# are disabled after; of Slurm's, only those this step has just installed (a machine's own Slurm is left alone).
PACKAGES := chromium:chromium trace-cmd:trace-cmd pigz:pigz xz:xz-utils zstd:zstd valgrind:valgrind \
  perf:linux-perf oslat:rt-tests prometheus:prometheus munged:munge slurmctld:slurmctld slurmd:slurmd srun:slurm-client \
  gengetopt:gengetopt re2c:re2c
HEADERS := /usr/include/graphviz/cgraph.h:libgraphviz-dev
NO_SERVICES := prometheus prometheus-node-exporter
SERVICES := munge slurmctld slurmd
packages:
	@export PATH="$$PATH:/usr/sbin:/sbin"; \
	  missing=""; for p in $(PACKAGES); do command -v $${p%%:*} >/dev/null 2>&1 || missing="$$missing $${p#*:}"; done; \
	  for h in $(HEADERS); do [ -e $${h%%:*} ] || missing="$$missing $${h#*:}"; done; \
	  if [ -n "$$missing" ]; then \
	    if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	      apt-get update -qq >/dev/null 2>&1; \
	      guard=""; [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; \
	        chmod +x /usr/sbin/policy-rc.d; guard=1; }; \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1 || true; \
	      [ -z "$$guard" ] || rm -f /usr/sbin/policy-rc.d; \
	      ! command -v systemctl >/dev/null 2>&1 || systemctl disable --now $(NO_SERVICES) >/dev/null 2>&1 || true; \
	      for s in $(SERVICES); do case " $$missing " in *" $$s "*) \
	        if [ -d /run/systemd/system ]; then systemctl disable --now $$s >/dev/null 2>&1 || true; \
	        else service $$s stop >/dev/null 2>&1; update-rc.d $$s disable >/dev/null 2>&1 || true; fi;; \
	      esac; done; \
	    fi; \
	    for p in $(PACKAGES); do command -v $${p%%:*} >/dev/null 2>&1 || \
	      echo "note: $${p%%:*} not installed; the tests that need it will skip"; done; \
	    for h in $(HEADERS); do [ -e $${h%%:*} ] || \
	      echo "note: $${h#*:} not installed; the tests that need it will skip"; done; \
	  fi

# MPI for the cluster tests: mpi4py and the MPICH wheel from PyPI, pyproject's `mpi` extra (read from
# pyproject.toml, not `-e '.[mpi]'`, which rebuilt every native program for nothing: 10 s under load).
mpi: install
	@$(BIN)/python -c "import mpi4py" 2>/dev/null || { $(UV) -r pyproject.toml --extra mpi && $(COMPILE); } || \
	  echo "note: MPI wheels not installed; cluster tests will skip"

# Lint, format and types: ruff check, ruff format --check (settings in pyproject.toml) and mypy.
lint: install
	@status=0; $(BIN)/ruff check src tests benchmarks setup.py || status=1; \
	  $(BIN)/ruff format --check -q src tests benchmarks setup.py || status=1; $(BIN)/mypy || status=1; exit $$status

# The lowest Python pyproject allows: compile, import, --help and quick unit tests (skips, saying why,
# when that Python cannot be found or installed with uv).
py-lowest: install
	$(BIN)/python tests/support/lowest_python.py

# The tiers (README "Tests"): unit is in-process, needs no root and runs on every CPU (pytest-xdist);
# integration drives the real kernel and the real tool, each file marked by what it needs; the tests that
# touch the machine run one at a time while the rest share the CPUs (tests/integration/conftest.py FREE).
UNIT := $(BIN)/python -m pytest -q -n auto -p no:cacheprovider tests/unit
INTEGRATION := $(BIN)/python -m pytest -q -ra --durations=15 -n 2 --dist loadgroup -p no:cacheprovider
# `make test` runs both tiers in one session: the machine group is the longest path, and the unit tier runs
# on the other worker beside it with the FREE files, where it would otherwise wait its turn.
# Lint and the lowest Python (a minute or two of one CPU, mostly mypy and uv) run beside them, one after
# the other, at the spread tests' lower priority (tests/support/lanes.py), and their output is shown after
# the tests'; any failure fails `make test` at the end.
test: install packages mpi
	@status=0; side=$$(mktemp -d); \
	  ( nice -n 10 $(MAKE) -s lint > $$side/lint 2>&1 || touch $$side/failed; \
	    nice -n 10 $(MAKE) -s py-lowest > $$side/py-lowest 2>&1 || touch $$side/failed ) & \
	  $(INTEGRATION) tests/integration tests/unit || status=1; wait; \
	  echo "== make lint, make py-lowest"; cat $$side/lint $$side/py-lowest; [ ! -e $$side/failed ] || status=1; \
	  rm -rf $$side; exit $$status

# The edit-test loop: the unit tier alone.
check: install
	$(UNIT)

unit: check

integration: install packages mpi
	$(INTEGRATION) tests/integration

# Every benchmark (or BENCH="probe trace"), each writing its section of BENCHMARKS.md; ends with a table of
# met / missed / not run and fails unless every target was met.
bench: install
	$(BIN)/python benchmarks/run.py --write $(BENCH)

clean:
	rm -rf $(VENV) .venv-py* .mypy_cache .ruff_cache build dist wheelhouse src/*.egg-info src/jitterscope/native/bin
