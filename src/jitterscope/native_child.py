"""The lifecycle shared by the native programs jitterscope runs as children
(jitterscope-probe, jitterscope-inject).

Both speak the same small protocol: one JSON line on stdout once they are ready,
one JSON line with `"event": "end"` when they finish, warnings and errors on
stderr prefixed with the program's name, a signal to end early.  `NativeChild`
starts such a program, waits for its ready line, stops it, collects its end line
and turns every failure into a one-line JitterscopeError; a subclass says what
the program is called and builds its result from the end line.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from jitterscope import childgroup
from jitterscope.errors import JitterscopeError

R = TypeVar("R")
C = TypeVar("C", bound="NativeChild[Any]")  # typing.Self needs Python 3.11; we support 3.10


def last_line(text: str, program: str) -> str:
    """The last message a program printed, without its `program: ` prefix."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].removeprefix(f"{program}: ") if lines else "no message"


class NativeChild(Generic[R]):
    """A native program run as a child; a context manager.

    Leaving the block stops the program first when it is untimed or on an
    exception (Ctrl-C), then waits `exit_timeout()` for its end line."""

    WHAT = "program"  # how error messages name it: "probe", "injector"
    PROGRAM = ""  # its executable name, the prefix of its stderr lines
    STOP_SIGNAL = signal.SIGTERM  # what ends it early (it still reports its end)
    NO_END = "ended without reporting"

    duration_ns: int | None = None  # set by timed programs: they end by themselves

    def __init__(self) -> None:
        self.pid = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._rest = b""  # stdout after the ready line
        self._result: R | None = None

    # -- for subclasses ----------------------------------------------------------
    def _finish(self, end: dict[str, Any], err_text: str) -> R:
        """The result, from the end line and everything the program wrote on stderr."""
        raise NotImplementedError

    def exit_timeout(self) -> float | None:
        return 30.0

    def _launch(
        self,
        cmd: list[str],
        ready_timeout: float,
        stdin: int = subprocess.DEVNULL,
        grouped: bool = False,
        spawned: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """Start `cmd` and return its ready line; kill it if it does not say it is ready in time.

        `stdin=subprocess.PIPE` keeps a line to the program (e.g. a "go" after its ready line);
        `grouped`: its own process group (childgroup.py), which a journal can kill as a whole; `spawned`: called
        once the program is started, before its ready line (it has inherited this process's state)."""
        start = childgroup.popen if grouped else subprocess.Popen
        self._proc = start(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.pid = self._proc.pid
        if spawned is not None:
            spawned()
        line = self._first_line(ready_timeout)
        if line is None:
            if self._proc.poll() is None:
                self._proc.kill()
            _, err = self._proc.communicate(timeout=10)
            raise JitterscopeError(f"{self.WHAT} failed to start: {self._last_line(err.decode(errors='replace'))}")
        ready: dict[str, Any] = json.loads(line)
        return ready

    def _last_line(self, text: str) -> str:
        return last_line(text, self.PROGRAM)

    def _warnings(self, err_text: str) -> list[str]:
        return [ln.removeprefix(f"{self.PROGRAM}: warning: ") for ln in err_text.splitlines() if "warning:" in ln]

    # -- lifecycle -----------------------------------------------------------------
    def _first_line(self, timeout: float) -> str | None:
        """The first stdout line, or None if the program exits (or hangs) first."""
        assert self._proc is not None and self._proc.stdout is not None
        fd, buf, deadline = self._proc.stdout.fileno(), b"", time.monotonic() + timeout
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            buf += chunk
        line, self._rest = buf.split(b"\n", 1)
        return line.decode()

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        """End it early; it still reports its end."""
        if self.running():
            assert self._proc is not None
            self._proc.send_signal(self.STOP_SIGNAL)

    def wait(self, timeout: float | None = None) -> R:
        if self._result is not None:
            return self._result
        if self._proc is None:
            raise JitterscopeError(f"{self.WHAT} was never started")
        try:
            out, err = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.communicate()
            raise JitterscopeError(f"{self.WHAT} did not finish within {timeout} s; killed it") from None
        err_text = err.decode(errors="replace")
        if self._proc.returncode != 0:
            raise JitterscopeError(f"{self.WHAT} failed (exit {self._proc.returncode}): {self._last_line(err_text)}")
        lines = [ln for ln in (self._rest + out).decode().splitlines() if ln.strip()]
        end = next((json.loads(ln) for ln in lines if '"event": "end"' in ln), None)
        if end is None:
            raise JitterscopeError(f"{self.WHAT} {self.NO_END}")
        self._result = self._finish(end, err_text)
        return self._result

    def start(self: C) -> C:
        raise NotImplementedError

    def __enter__(self: C) -> C:
        if self._proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.running() and (exc[0] is not None or self.duration_ns is None):
            self.stop()
        if self._proc is not None and self._result is None:
            try:
                self.wait(timeout=self.exit_timeout())
            except JitterscopeError:
                if exc[0] is None:
                    raise
