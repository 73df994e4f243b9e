# Two commands set up a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NATIVE := $(wildcard src/jitterscope/native/*.c src/jitterscope/native/*.h)

.PHONY: run test unit integration bench install native clean browser mpi sync-programs tracecmd valgrind lint py-lowest

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

# The report's browser test needs Chromium; install it where apt can.
browser:
	@command -v chromium >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1) || \
	  echo "note: chromium not installed; the browser test will skip")

# The trace parser's cross-check decodes the same pages with libtraceevent (trace-cmd report).
tracecmd:
	@command -v trace-cmd >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq trace-cmd >/dev/null 2>&1) || \
	  echo "note: trace-cmd not installed; the trace parser cross-check will skip")

# MPI for the cluster tests: mpi4py and the MPICH wheel from PyPI.
mpi: install
	@$(BIN)/python -c "import mpi4py" 2>/dev/null || $(BIN)/pip install -q -e '.[mpi,test]' || \
	  echo "note: MPI wheels not installed; cluster tests will skip"

# Real programs for the sync tests (pigz; xz and zstd are usually there): apt where it can.
sync-programs:
	@command -v pigz >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pigz xz-utils zstd \
	  >/dev/null 2>&1) || echo "note: pigz not installed; its sync test will skip")

# place --profile cachegrind's test needs valgrind: apt where it can.
valgrind:
	@command -v valgrind >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null 2>&1) || \
	  echo "note: valgrind not installed; place's cachegrind profile test will skip")

# Lint and types: ruff (settings in pyproject.toml) and mypy over src/jitterscope.
lint: install
	@status=0; $(BIN)/ruff check src tests benchmarks setup.py || status=1; $(BIN)/mypy || status=1; exit $$status

# The lowest Python pyproject allows: compile, import, --help and quick unit tests (skips, saying why,
# when that Python cannot be found or installed with uv).
py-lowest: install
	$(BIN)/python tests/support/lowest_python.py

# Lint, the lowest Python and the suite all run; any failure fails `make test` at the end.
test: install browser mpi sync-programs tracecmd valgrind
	@status=0; $(MAKE) -s lint || status=1; $(MAKE) -s py-lowest || status=1; \
	  $(BIN)/python -m pytest -q -ra tests || status=1; exit $$status

unit: install
	$(BIN)/python -m pytest -q tests/unit

bench: install
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .venv-py* .mypy_cache .ruff_cache build src/*.egg-info src/jitterscope/native/bin
