"""Where the native programs (probe, injector) live: `native/bin/` in the package."""

from __future__ import annotations

import os
from pathlib import Path

from jitterscope.errors import JitterscopeError

_BIN_DIR = Path(__file__).resolve().parent / "native" / "bin"

# The native programs setup.py builds (PROGRAMS there), by the name they are installed under.
PROBE_PROGRAM = "jitterscope-probe"
INJECT_PROGRAM = "jitterscope-inject"
TRACEPARSE_PROGRAM = "jitterscope-traceparse"
TRACEREADER_PROGRAM = "jitterscope-tracereader"


def native_bin(name: str) -> Path:
    """Path of the native program `name` (e.g. "jitterscope-probe"), checked executable.

    JITTERSCOPE_NATIVE_BIN overrides the directory (for out-of-tree builds).
    """
    d = Path(os.environ["JITTERSCOPE_NATIVE_BIN"]) if os.environ.get("JITTERSCOPE_NATIVE_BIN") else _BIN_DIR
    path = d / name
    if not os.access(path, os.X_OK):
        raise JitterscopeError(f"native program {path} is missing: run 'make native' (needs a C compiler)")
    return path
