"""Run the native controller (jitterscope-protect) as a child.

It is started in a process group of its own with --wait-go: it sets up every
thread, prints its ready line and waits; the session journals its group (so a
crash kills a spinning blocker) and the processes it may stop, then says "go".
It stops by itself after --duration-ns or on SIGTERM, and in both cases resumes
everything it suspended before printing its end line.  It dies with its parent.
"""

from __future__ import annotations

import json
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitterscope.errors import JitterscopeError
from jitterscope.native_bin import native_bin
from jitterscope.native_child import NativeChild
from jitterscope.protect.results import ControllerEnd
from jitterscope.runcheck import read_record

PROGRAM = "jitterscope-protect"
READY_TIMEOUT_S = 20.0


@dataclass
class ControllerResult:
    end: ControllerEnd
    warnings: list[str] = field(default_factory=list)


class Controller(NativeChild[ControllerResult]):
    WHAT = "controller"
    PROGRAM = PROGRAM
    STOP_SIGNAL = signal.SIGTERM
    NO_END = "ended without reporting (was it killed?)"

    def __init__(self, args: list[str], out: Path, duration_ns: int | None, writer_cpus: list[int]) -> None:
        super().__init__()
        self.args = args
        self.out = out
        self.duration_ns = duration_ns
        self.writer_cpus = writer_cpus

    def start(self) -> Controller:
        # its control threads pin themselves; the writer inherits jitterscope's own CPUs (the best-effort ones)
        cmd = [str(native_bin(PROGRAM)), "--wait-go", "--out", str(self.out), *self.args]
        self._launch(cmd, READY_TIMEOUT_S, stdin=subprocess.PIPE, grouped=True)  # its ready line: a handshake
        return self

    def go(self) -> None:
        """Start controlling (after the session has journalled the controller's group)."""
        assert self._proc is not None and self._proc.stdin is not None
        try:  # left open: communicate() closes it when waiting for the end line
            self._proc.stdin.write(b"go\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died: wait() reports why

    def exit_timeout(self) -> float | None:
        return 30.0 if self.duration_ns is None else self.duration_ns / 1e9 + 30

    def _finish(self, end: dict[str, Any], err_text: str) -> ControllerResult:
        return ControllerResult(end=_end(end), warnings=self._warnings(err_text))


def _end(line: dict[str, Any]) -> ControllerEnd:
    """The end line, checked against what the controller writes (native/protect.c, print_end)."""
    return read_record(line, ControllerEnd, f"{PROGRAM}'s end line")


def run_replay(args: list[str], out: Path) -> ControllerEnd:
    """The controller on replayed counters (virtual time: no threads, no actuator); its end line."""
    proc = subprocess.run(
        [str(native_bin(PROGRAM)), "--out", str(out), *args], capture_output=True, text=True, timeout=600, check=False
    )
    if proc.returncode != 0:
        raise JitterscopeError(
            f"controller failed: {(proc.stderr.strip().splitlines() or ['no message'])[-1]}".replace(f"{PROGRAM}: ", "")
        )
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if '"event": "end"' in ln]
    if not lines:
        raise JitterscopeError("controller ended without reporting")
    return _end(lines[-1])
