# Two commands set up a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NATIVE := $(wildcard src/jitterscope/native/*.c src/jitterscope/native/*.h)

.PHONY: run test unit integration bench install native clean packages mpi lint py-lowest

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel

# Editable install: Python changes take effect at once; `make native` rebuilds C.
$(STAMP): $(BIN)/python pyproject.toml setup.py $(NATIVE)
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

native: $(BIN)/python
	$(BIN)/python setup.py -q build_ext --inplace

run: install
	$(BIN)/jitterscope measure --duration 10s

# System programs some tests use, installed with one apt run where apt can (a test whose program is
# missing skips, naming it): chromium (the report's browser test), trace-cmd (the trace parser's
# libtraceevent cross-check), pigz/xz/zstd (real programs for sync), valgrind (whatif capture and
# place --profile cachegrind), gengetopt/re2c/libgraphviz-dev (LogGOPSim, built by its oracle tests and
# benchmark from ../shared/peers; the header stands for the library package, which has no program).
PACKAGES := chromium:chromium trace-cmd:trace-cmd pigz:pigz xz:xz-utils zstd:zstd valgrind:valgrind \
  gengetopt:gengetopt re2c:re2c
HEADERS := /usr/include/graphviz/cgraph.h:libgraphviz-dev
packages:
	@missing=""; for p in $(PACKAGES); do command -v $${p%%:*} >/dev/null 2>&1 || missing="$$missing $${p#*:}"; done; \
	  for h in $(HEADERS); do [ -e $${h%%:*} ] || missing="$$missing $${h#*:}"; done; \
	  if [ -n "$$missing" ]; then \
	    if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	      apt-get update -qq >/dev/null 2>&1; \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1 || true; \
	    fi; \
	    for p in $(PACKAGES); do command -v $${p%%:*} >/dev/null 2>&1 || \
	      echo "note: $${p%%:*} not installed; the tests that need it will skip"; done; \
	    for h in $(HEADERS); do [ -e $${h%%:*} ] || \
	      echo "note: $${h#*:} not installed; the tests that need it will skip"; done; \
	  fi

# MPI for the cluster tests: mpi4py and the MPICH wheel from PyPI.
mpi: install
	@$(BIN)/python -c "import mpi4py" 2>/dev/null || $(BIN)/pip install -q -e '.[mpi,test]' || \
	  echo "note: MPI wheels not installed; cluster tests will skip"

# Lint, format and types: ruff check, ruff format --check (settings in pyproject.toml) and mypy.
lint: install
	@status=0; $(BIN)/ruff check src tests benchmarks setup.py || status=1; \
	  $(BIN)/ruff format --check -q src tests benchmarks setup.py || status=1; $(BIN)/mypy || status=1; exit $$status

# The lowest Python pyproject allows: compile, import, --help and quick unit tests (skips, saying why,
# when that Python cannot be found or installed with uv).
py-lowest: install
	$(BIN)/python tests/support/lowest_python.py

# Lint, the lowest Python and the suite all run; any failure fails `make test` at the end.
test: install packages mpi
	@status=0; $(MAKE) -s lint || status=1; $(MAKE) -s py-lowest || status=1; \
	  $(BIN)/python -m pytest -q -ra --durations=15 tests || status=1; exit $$status

unit: install
	$(BIN)/python -m pytest -q tests/unit

bench: install
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .venv-py* .mypy_cache .ruff_cache build src/*.egg-info src/jitterscope/native/bin
