"""The programs `protect` runs or watches: the critical one and the best-effort ones.

A command is started in a process group of its own, pinned to its CPUs, with
JITTERSCOPE_REPORT naming its report page.  It is safe to journal: the command
is exec'd by a shell that first waits for "go" on its stdin; jitterscope
journals the group (killed on undo, also after a crash) and only then says go.
If jitterscope dies before, the shell reads EOF and exits without running it.
A program given by PID is checked (alive, not the critical one) and watched.
"""

from __future__ import annotations

import os
import select
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from jitterscope import childgroup
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal, process_start_time
from jitterscope.native_bin import native_bin
from jitterscope.ownenv import program_environ
from jitterscope.protect.records import REPORT_ENV
from jitterscope.protect.report import ReportPage

# Load generators shipped with the package: a command may name them without their path.
SHIPPED = ("jitterscope-synload", "jitterscope-chase", "jitterscope-cachebuster", "jitterscope-spinloop")
# `read` blocks until jitterscope has journalled the group; stdin is then /dev/null for the command.
_WRAPPER = 'read -r go && [ "$go" = go ] && exec "$0" "$@" </dev/null'


@dataclass
class Program:
    """One program: started by us (`argv`) or given (`pid`)."""

    role: str  # "critical" or "best-effort"
    name: str
    pid: int
    group: bool  # True: we own its process group (pgid = pid)
    cpus: list[int]
    page: Path | None = None
    log: Path | None = None
    argv: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    start: int | None = None

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return process_start_time(self.pid) == self.start

    def returncode(self) -> int | None:
        return self.proc.poll() if self.proc is not None else None


def split_command(text: str, option: str) -> list[str]:
    try:
        argv = shlex.split(text)
    except ValueError as err:
        raise JitterscopeError(f"{option} {text!r}: {err}") from None
    if not argv:
        raise JitterscopeError(f"{option} is empty: give a command line, e.g. 'xz -T1 -9 -k big.tar'")
    if argv[0] in SHIPPED and not shutil.which(argv[0]):  # the package's load generators, by name
        argv[0] = str(native_bin(argv[0]))
    return argv


def start(
    j: Journal,
    role: str,
    argv: list[str],
    cpus: list[int],
    page: Path | None,
    log: Path,
    env: dict[str, str] | None = None,
) -> Program:
    """Start `argv` pinned to `cpus` in its own process group, journalled before it runs."""
    full_env = program_environ(env)
    if page is not None:
        full_env[REPORT_ENV] = str(page)
    try:
        with open(log, "wb") as out:
            proc = childgroup.popen(
                ["/bin/sh", "-c", _WRAPPER, *argv],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=full_env,
            )
    except OSError as err:
        raise JitterscopeError(f"cannot start {argv[0]}: {err.strerror}") from None
    j.process_group(proc.pid)
    os.sched_setaffinity(proc.pid, set(cpus))  # the shell still waits: the command starts pinned
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    proc.stdin.close()
    prog = Program(role, Path(argv[0]).name, proc.pid, True, cpus, page, log, argv, proc, process_start_time(proc.pid))
    time.sleep(0.05)
    if proc.poll() is not None and proc.returncode == 127:
        raise JitterscopeError(f"{role} command {argv[0]!r} not found ({log_tail(log)})")
    return prog


def given(role: str, pid: int, option: str) -> Program:
    """A running process given by PID, checked alive."""
    start_time = process_start_time(pid)
    if start_time is None:
        raise JitterscopeError(f"{option} {pid}: no such process")
    if pid == os.getpid() or pid == 1:
        raise JitterscopeError(f"{option} {pid}: refusing to control {'jitterscope itself' if pid != 1 else 'init'}")
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        cpus = sorted(os.sched_getaffinity(pid))
    except OSError:
        raise JitterscopeError(f"{option} {pid}: process ended") from None
    return Program(role, name, pid, False, cpus, start=start_time)


def log_tail(log: Path | None) -> str:
    if log is None:
        return "no output"
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no output"
    return lines[-1][:200] if lines else "no output"


def stop(prog: Program, grace_s: float = 1.0) -> None:
    """End a program we started: SIGTERM to its group, SIGKILL after `grace_s` (the journal also kills it)."""
    if prog.proc is None or prog.proc.poll() is not None:
        return
    try:
        os.killpg(prog.pid, signal.SIGCONT)  # a stopped group cannot act on SIGTERM
        os.killpg(prog.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        prog.proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(prog.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        prog.proc.wait(timeout=10)


def wait_attached(pages: list[Path], timeout_s: float) -> bool:
    """Whether every program attached to its report page within `timeout_s`."""

    deadline = time.monotonic() + timeout_s
    opened = [ReportPage(p, writable=False) for p in pages]
    try:
        while True:  # at least one look, even with no time to wait
            if all(pg.counters()["pid"] for pg in opened):
                return True
            if time.monotonic() >= deadline:
                return False
            select.select([], [], [], 0.02)
    finally:
        for pg in opened:
            pg.close()
