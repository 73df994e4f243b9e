"""On-disk journal of every change jitterscope makes to the system, and its undo.

Each process that changes anything (a tracefs instance, a sysctl, IRQ affinity,
a background load, a scheduling policy) first appends what it will change and
how to undo it to its own journal file, fsynced, then makes the change.  The
owner holds an exclusive `flock` on its file for its whole life, so a journal
whose lock can be taken belongs to a dead process: `recover_stale` (run by
every jitterscope command before it starts, and by `jitterscope restore`) then
undoes it.  A machine is always left as it was found.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from jitterscope.errors import JitterscopeError


def state_dir() -> Path:
    env = os.environ.get("JITTERSCOPE_STATE_DIR")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/lib/jitterscope")
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return Path(xdg) / "jitterscope"
    # The user's own home, not $HOME: under sudo -u or setpriv $HOME can be another user's.
    import pwd

    return Path(pwd.getpwuid(os.geteuid()).pw_dir) / ".local/state/jitterscope"


def journal_dir() -> Path:
    return state_dir() / "journal"


def read_setting(path: str | Path) -> str:
    """A kernel setting's current value, as it must be written back.

    Files like THP's `enabled` or tracefs' `trace_clock` list the choices with the
    current one in brackets: the bracketed word is the value.
    """
    text = Path(path).read_text().strip()
    m = re.search(r"\[([^\]]+)\]", text)
    return m.group(1) if m else text


def process_start_time(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (None if it is gone).

    Kept with every entry about a process so a recycled pid is never touched.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])


# --- undo operations -------------------------------------------------------

def _undo_file(e: dict[str, Any]) -> None:
    Path(e["path"]).write_text(str(e["original"]))


def _undo_rmdir(e: dict[str, Any]) -> None:
    p = Path(e["path"])
    if p.exists():
        for _ in range(50):
            try:
                p.rmdir()
                return
            except OSError as err:  # tracefs instances are busy while a reader holds them
                if err.errno == 2:
                    return
                time.sleep(0.05)
        p.rmdir()


def _undo_umount(e: dict[str, Any]) -> None:
    subprocess.run(["umount", e["path"]], check=False, capture_output=True)


def _same_process(e: dict[str, Any], pid: int) -> bool:
    return process_start_time(pid) == e.get("start")


def _undo_killpg(e: dict[str, Any]) -> None:
    pgid = int(e["pgid"])
    if not _same_process(e, pgid):
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    # Reap it if it is our child; otherwise wait for it to disappear.
    for _ in range(100):
        try:
            if os.waitpid(pgid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            if process_start_time(pgid) is None:
                return
        time.sleep(0.02)


def _undo_sched(e: dict[str, Any]) -> None:
    pid = int(e["pid"])
    if _same_process(e, pid):
        os.sched_setscheduler(pid, int(e["policy"]), os.sched_param(int(e["priority"])))


def _undo_affinity(e: dict[str, Any]) -> None:
    pid = int(e["pid"])
    if _same_process(e, pid):
        os.sched_setaffinity(pid, set(e["cpus"]))


def _undo_argv(e: dict[str, Any]) -> None:
    subprocess.run(e["argv"], check=False, capture_output=True, timeout=60)


def _undo_shell(e: dict[str, Any]) -> None:
    # Only ever a command the user wrote in their own plan (custom DoE factors).
    subprocess.run(e["command"], shell=True, check=False, capture_output=True, timeout=60)


UNDO: dict[str, Callable[[dict[str, Any]], None]] = {
    "file": _undo_file,
    "rmdir": _undo_rmdir,
    "umount": _undo_umount,
    "killpg": _undo_killpg,
    "sched": _undo_sched,
    "affinity": _undo_affinity,
    "argv": _undo_argv,
    "shell": _undo_shell,
}


def _undo_entries(entries: list[dict[str, Any]]) -> list[str]:
    """Undo in reverse order; return descriptions of what could not be undone."""
    failures = []
    for e in reversed(entries):
        try:
            UNDO[e["op"]](e)
        except Exception as err:  # keep going: every other knob must still go back
            failures.append(f"{e.get('op')} {e.get('path') or e.get('pid') or e.get('pgid') or ''}: {err}")
    return failures


class Journal:
    """The changes one process makes.  Use as a context manager; undone on exit.

    `begin` is the single door for changes: it records the undo entry durably
    *before* the caller makes the change.
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self.entries: list[dict[str, Any]] = []
        self.path: Path | None = None
        self._fh: Any = None
        self._closed = False

    def _open(self) -> None:
        d = journal_dir()
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise JitterscopeError(f"cannot create journal directory {d}: {err.strerror}") from None
        self.path = d / f"{os.getpid()}-{int(time.time() * 1e6)}.jsonl"
        self._fh = open(self.path, "a+")
        fcntl.flock(self._fh, fcntl.LOCK_EX)
        self._write({"op": "header", "label": self.label, "pid": os.getpid(),
                     "argv": sys.argv, "time": time.time()})
        atexit.register(self.undo)

    def _write(self, entry: dict[str, Any]) -> None:
        self._fh.write(json.dumps(entry) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def begin(self, op: str, **fields: Any) -> dict[str, Any]:
        if op not in UNDO:
            raise ValueError(f"unknown journal op {op}")
        if self._fh is None:
            self._open()
        entry = {"op": op, **fields}
        self._write(entry)
        self.entries.append(entry)
        return entry

    # Convenience wrappers for the common changes.
    def set_file(self, path: str | Path, value: str) -> None:
        """Write `value` to a kernel setting file, journalling its original."""
        original = read_setting(path)
        self.begin("file", path=str(path), original=original)
        Path(path).write_text(value)

    def process_group(self, pgid: int) -> None:
        self.begin("killpg", pgid=pgid, start=process_start_time(pgid))

    def set_scheduler(self, pid: int, policy: int, priority: int) -> None:
        self.begin("sched", pid=pid, start=process_start_time(pid),
                   policy=os.sched_getscheduler(pid), priority=os.sched_getparam(pid).sched_priority)
        os.sched_setscheduler(pid, policy, os.sched_param(priority))

    def set_affinity(self, pid: int, cpus: set[int]) -> None:
        self.begin("affinity", pid=pid, start=process_start_time(pid),
                   cpus=sorted(os.sched_getaffinity(pid)))
        os.sched_setaffinity(pid, cpus)

    def undo(self) -> list[str]:
        """Undo every change, newest first, and delete the journal."""
        if self._closed:
            return []
        self._closed = True
        atexit.unregister(self.undo)  # a long-running monitor makes one journal per window
        failures = _undo_entries(self.entries)
        if self._fh is not None:
            self._fh.close()
            if self.path is not None:
                self.path.unlink(missing_ok=True)
        for f in failures:
            print(f"jitterscope: warning: could not undo {f}", file=sys.stderr)
        return failures

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: object) -> None:
        # Ctrl-C or SIGTERM during undo must not leave half the knobs changed.
        blocked = {signal.SIGINT, signal.SIGTERM}
        try:
            old = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        except (ValueError, OSError):
            old = None
        try:
            self.undo()
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)


def stale_journals() -> list[Path]:
    """Journal files whose owner is gone (their lock can be taken)."""
    d = journal_dir()
    try:
        paths = sorted(d.glob("*.jsonl")) if d.is_dir() else []
    except OSError:  # not ours to read: nothing of ours to recover there
        return []
    out = []
    for p in paths:
        try:
            with open(p) as fh:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                out.append(p)
        except BlockingIOError:
            continue  # a live jitterscope owns it
        except OSError:
            continue
    return out


def recover_stale(quiet: bool = True) -> list[dict[str, Any]]:
    """Undo what crashed jitterscope processes left changed; return the entries undone."""
    undone: list[dict[str, Any]] = []
    for p in stale_journals():
        with open(p) as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            entries = []
            for line in fh:
                try:
                    e = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line: the change it announced was never made
                if e.get("op") in UNDO:
                    entries.append(e)
            failures = _undo_entries(entries)
            p.unlink(missing_ok=True)
        undone.extend(entries)
        if not quiet and entries:
            print(f"jitterscope: restored {len(entries)} change(s) left by an interrupted run "
                  f"({p.name})", file=sys.stderr)
        for f in failures:
            print(f"jitterscope: warning: could not undo {f}", file=sys.stderr)
    return undone
