"""The native parser, probe and interposer built with AddressSanitizer + UndefinedBehaviorSanitizer.

The same sources setup.py compiles (src/jitterscope/native), with -O1 and frame pointers so a report's
stack is readable, and every UBSan finding fatal.  `reports(stderr)` names the sanitizer findings in a
run's stderr; `SAN_ENV` makes a finding exit with SAN_EXIT rather than whatever the program would return.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

NATIVE = Path(__file__).resolve().parents[2] / "src" / "jitterscope" / "native"
FLAGS = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"]
SAN_EXIT = 86
# Leaks are not checked: the parser and probe are one-shot programs whose memory the exit returns.
SAN_ENV = {
    "ASAN_OPTIONS": f"detect_leaks=0:exitcode={SAN_EXIT}:abort_on_error=0",
    "UBSAN_OPTIONS": f"print_stacktrace=1:halt_on_error=1:exitcode={SAN_EXIT}",
}
MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: UndefinedBehaviorSanitizer", "SUMMARY: ")


@dataclass(frozen=True)
class Sanitized:
    traceparse: Path
    probe: Path
    libjssync: Path
    preload: str  # LD_PRELOAD value for the interposer: the sanitizer runtimes must load first


def compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def build(out: Path) -> Sanitized:
    """Compile the three programs into `out`; raises CalledProcessError with the compiler's message."""
    cc = compiler()
    assert cc, "no C compiler"
    common = [cc, *FLAGS, "-std=gnu11", "-pthread", "-I", str(NATIVE)]
    jobs = {
        out / "jitterscope-traceparse": [NATIVE / "traceparse.c"],
        out / "jitterscope-probe": [NATIVE / "probe.c"],
    }
    procs = [subprocess.Popen([*common, "-o", str(exe), *map(str, srcs), "-lm"]) for exe, srcs in jobs.items()]
    lib = out / "libjssync.so"
    procs.append(subprocess.Popen([*common, "-shared", "-fPIC", "-o", str(lib), str(NATIVE / "interpose.c"), "-lm"]))
    for p in procs:
        if p.wait() != 0:
            raise subprocess.CalledProcessError(p.returncode, p.args)
    runtimes = [
        subprocess.run([cc, f"-print-file-name={name}"], capture_output=True, text=True, check=True).stdout.strip()
        for name in ("libasan.so", "libubsan.so")
    ]
    return Sanitized(out / "jitterscope-traceparse", out / "jitterscope-probe", lib, ":".join([*runtimes, str(lib)]))


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, **SAN_ENV, **extra}


def reports(stderr: str) -> list[str]:
    """The sanitizer's lines in a run's stderr (empty when it found nothing)."""
    return [line for line in stderr.splitlines() if any(m in line for m in MARKERS)]
