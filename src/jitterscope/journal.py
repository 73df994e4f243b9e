"""On-disk journal of every change jitterscope makes to the system, and its undo.

Each process that changes anything (a tracefs instance or mount, a sysctl, IRQ
affinity, a background load, a cgroup, a scratch directory) first
appends what it will change and how to undo it to its own journal file,
fsynced, then makes the change.  The owner holds an exclusive `flock` on its
file for its whole life, so a journal whose lock can be taken belongs to a dead
process: `recover_stale` (run by every jitterscope command before it starts,
and by `jitterscope restore`) then undoes it.  A machine is always left as it
was found.

Adding a new kind of change (one entry type + one undo function):

1. Write `_undo_<op>(entry) -> Outcome | str | None` (here, or in your own
   module and registered lazily with `register_undo(op, "module:function")`
   so that crash recovery in a fresh process can still find it).  It reads
   only the entry's own fields (JSON values), must be safe to run twice and
   after a reboot, and says what it did: return an `Outcome` ("restored",
   "unchanged" when it was already as found, "kept" when data was moved to
   safety) or a plain string (= restored).  Raise on failure; the message
   becomes the item's one "could not undo" line.
2. Add it to `UNDO` (or `register_undo`), and optionally a method on
   `Journal` that calls `self.begin(op, **fields)` *before* making the change.
   Entries about a process carry its start time (`process_start_time`) so a
   recycled pid is never touched.
3. `describe` names the item in `restore`'s output from its `path`, `target`,
   `pid` or `pgid` field; give the entry one of them.

Entries are undone newest first, when the owner leaves its `with Journal`
block (exit, exception, Ctrl-C, SIGTERM, SIGHUP), or by recovery after a
crash.  `Journal.release(entry)` undoes one entry early and records that it is
done, so recovery never repeats it.

Changes meant to outlast the process (`tune apply`) are made through a journal
like any other, then handed over with `Journal.hand_over(path, **header)`: the
entries are written, in this same format (a header line, then one entry per
change; tune adds the value it set, the knob's name and form, `runtime`, and
the boot id in the header), to a persistent record outside the journal
directory (fsynced, renamed into place), and each is then marked done in the
journal, so neither the owner's exit nor crash recovery undoes them.  A crash
between the two leaves the change undone by recovery and the record stating a
change that is no longer there: its reader (tune revert) finds the original
value in place.  `read_journal(path)` reads either kind of file.

Mounts are shared (mounts.py): jitterscope processes that need tracefs where
it was not mounted share one mount through a lock-protected registry of its
users; the last live user unmounts what a jitterscope process mounted, and a
mount found already there is never touched.  `mounts.sweep` (run by
`restore`) finds mounts whose users all died.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import importlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from typing_extensions import Required, Unpack

from jitterscope.errors import JitterscopeError


def state_dir() -> Path:
    env = os.environ.get("JITTERSCOPE_STATE_DIR")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/lib/jitterscope")
    return user_state_dir(os.geteuid(), os.environ)


def user_state_dir(uid: int, environ: Mapping[str, str]) -> Path:
    """An unprivileged user's state directory: under $XDG_STATE_HOME, else under $HOME when
    `uid` owns it, else under the home the password database names.

    $HOME counts only when it is the user's own: under `sudo -u` or `setpriv` it can still
    be another user's.  A service user whose passwd home does not exist (nobody's is
    /nonexistent) is given a HOME it owns, or XDG_STATE_HOME."""
    xdg = environ.get("XDG_STATE_HOME", "")
    if os.path.isabs(xdg):  # the XDG spec: a relative value is invalid and ignored
        return Path(xdg) / "jitterscope"
    home = environ.get("HOME", "")
    try:
        if os.path.isabs(home) and os.stat(home).st_uid == uid:
            return Path(home) / ".local/state/jitterscope"
    except OSError:
        pass
    try:
        return Path(pwd.getpwuid(uid).pw_dir) / ".local/state/jitterscope"
    except KeyError:
        raise JitterscopeError(
            f"uid {uid} has no home: set XDG_STATE_HOME (or HOME to a directory it owns) for jitterscope's journal"
        ) from None


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
    return int(stat[stat.rindex(")") + 2 :].split()[19])


class SigcontTarget(TypedDict):
    id: int
    group: bool  # a process group (signalled as -id)
    start: int | None


class Fields(TypedDict, total=False):
    """An entry's own fields: each op uses some (see its undo function).  Values are JSON."""

    path: str  # file, rmdir, scratch, trace_instance, protect_cgroup, whatif_cpufreq, umount
    original: str  # file: the value to write back
    value: str  # file, affinity: the value set (tune's records)
    form: str  # file, affinity: the knob's form ("text": a whole configuration file)
    knob: str  # tune: the knob's name
    runtime: bool  # tune: False for a change that outlasts a reboot
    comm: str  # affinity: the process's name
    pid: int  # affinity, protect_move, mount: the process concerned
    pgid: int  # killpg
    start: int | None  # the process's start time (process_start_time): a recycled pid is never touched
    cpus: list[int]  # affinity: the original CPU set; trace_instance: the CPUs it drains
    argv: list[str]  # argv: the command that undoes it
    command: str  # shell: the user's own command that undoes it
    keep: str | None  # scratch: the part worth keeping
    keep_to: str | None  # scratch: where that goes
    hint: str | None  # scratch: what the kept part is, for the message
    target: str  # mount: the mount point
    fstype: str  # mount
    ns: str  # mount: the mount namespace
    drain_to: str  # trace_instance: the capture directory it drains into
    parent: str  # protect_cgroup
    origin: str  # protect_move: the cgroup it came from
    group: str  # protect_move: the cgroup it was moved to
    targets: list[SigcontTarget]  # protect_sigcont
    min: int  # whatif_cpufreq: the policy's original limits (kHz)
    max: int


class Entry(Fields, total=False):
    """One journal entry: its op, its place in the journal, its fields, and once undone what that did."""

    op: Required[str]
    seq: int
    result: str  # restored, unchanged, kept, failed
    message: str
    owner: str  # recovery: the interrupted process that left it


class Header(TypedDict, total=False):
    """A journal's (or a tune record's) first line."""

    op: str  # "header"
    label: str
    pid: int
    start: int | None
    argv: list[str]
    time: float
    kind: str  # tune records: "tune-record"
    boot_id: str | None  # tune records: the boot they were made in
    host: str
    kernel: str
    plan: str | None  # tune apply: the plan file it applied
    out: str | None  # tune verify: its output directory


@dataclass
class Outcome:
    """What undoing one entry did: status is restored, unchanged, kept or failed."""

    status: str
    text: str


def describe(e: Entry) -> str:
    """The item an entry is about, as restore names it."""
    what = e.get("path") or e.get("target") or e.get("pid") or e.get("pgid") or e.get("argv") or e.get("command")
    if isinstance(what, list):
        what = " ".join(map(str, what))
    return f"{e.get('op')} {what}"


# --- undo operations -------------------------------------------------------


def _undo_file(e: Entry) -> Outcome:
    p, original = Path(e["path"]), str(e["original"])
    if e.get("form") == "text":  # a whole configuration file (tune --boot), not a kernel setting
        from jitterscope.atomic import replace_text

        with contextlib.suppress(OSError):
            if p.read_text() == original:
                return Outcome("unchanged", f"{p} already as it was")
        replace_text(p, original)  # whole or not at all, its mode and owner kept
        return Outcome("restored", f"{p} restored")
    try:
        if read_setting(p) == original:
            return Outcome("unchanged", f"{p} already {original}")
    except OSError:
        pass  # unreadable now: write it anyway; a failure says why
    p.write_text(original)
    return Outcome("restored", f"{p} set back to {original}")


def _undo_rmdir(e: Entry) -> Outcome:
    p = Path(e["path"])
    if not p.exists():
        return Outcome("unchanged", f"{p} already gone")
    for _ in range(50):
        try:
            p.rmdir()
            return Outcome("restored", f"removed {p}")
        except FileNotFoundError:
            return Outcome("unchanged", f"{p} already gone")
        except OSError:  # tracefs instances are busy while a reader holds them
            time.sleep(0.05)
    p.rmdir()
    return Outcome("restored", f"removed {p}")


def _same_process(e: Entry, pid: int) -> bool:
    return process_start_time(pid) == e.get("start")


def _undo_killpg(e: Entry) -> Outcome:
    pgid = int(e["pgid"])
    if not _same_process(e, pgid):
        return Outcome("unchanged", f"process group {pgid} already ended")
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return Outcome("unchanged", f"process group {pgid} already ended")
    # Reap it if it is our child; otherwise wait for it to disappear.
    for _ in range(100):
        try:
            if os.waitpid(pgid, os.WNOHANG)[0]:
                break
        except ChildProcessError:
            if process_start_time(pgid) is None:
                break
        time.sleep(0.02)
    return Outcome("restored", f"stopped process group {pgid}")


def _undo_affinity(e: Entry) -> Outcome:
    pid = int(e["pid"])
    if not _same_process(e, pid):
        return Outcome("unchanged", f"process {pid} already ended")
    os.sched_setaffinity(pid, set(e["cpus"]))
    return Outcome("restored", f"process {pid} CPU affinity {e['cpus']}")


def _run_undo(cmd: Any, shell: bool) -> Outcome:
    proc = subprocess.run(cmd, shell=shell, check=False, capture_output=True, text=True, timeout=60)
    shown = cmd if shell else " ".join(cmd)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise RuntimeError(f"`{shown}` failed: {last}")
    return Outcome("restored", f"ran `{shown}`")


def _undo_argv(e: Entry) -> Outcome:
    return _run_undo(list(e["argv"]), shell=False)


def _undo_shell(e: Entry) -> Outcome:
    # Only ever a command the user wrote in their own plan (custom DoE factors).
    return _run_undo(e["command"], shell=True)


def _undo_scratch(e: Entry) -> Outcome:
    """A scratch directory: removed, except a part worth keeping (`keep`, e.g. a
    rank's raw capture not yet handed over), which is moved to `keep_to` first."""
    p = Path(e["path"])
    if not p.exists():
        return Outcome("unchanged", f"{p} already removed")
    keep_name = e.get("keep")
    keep = p / keep_name if keep_name else None
    if keep is not None and keep.exists() and any(keep.iterdir()):
        dest = _free_name(Path(e.get("keep_to") or state_dir() / "kept" / p.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(keep), str(dest))
        shutil.rmtree(p, ignore_errors=True)
        return Outcome("kept", f"{p}: moved what it held to {dest} ({e.get('hint') or 'kept'})")
    shutil.rmtree(p)
    return Outcome("restored", f"removed {p}")


def _free_name(p: Path) -> Path:
    if not p.exists():
        return p
    for i in range(2, 1000):
        q = p.with_name(f"{p.name}-{i}")
        if not q.exists():
            return q
    raise RuntimeError(f"no free name next to {p}")


# --- the registry of undo functions -----------------------------------------

UndoFn = Callable[[Entry], "Outcome | str | None"]


def _lazy(spec: str) -> UndoFn:
    """An undo function that lives in another module, imported when first needed."""

    def run(e: Entry) -> Outcome | str | None:
        mod, _, name = spec.partition(":")
        fn: UndoFn = getattr(importlib.import_module(mod), name)
        return fn(e)

    run.__qualname__ = spec
    return run


UNDO: dict[str, UndoFn] = {
    "file": _undo_file,
    "rmdir": _undo_rmdir,
    "umount": _lazy("jitterscope.mounts:undo_umount"),
    "mount": _lazy("jitterscope.mounts:undo_mount"),
    "killpg": _undo_killpg,
    "affinity": _undo_affinity,
    "argv": _undo_argv,
    "shell": _undo_shell,
    "scratch": _undo_scratch,
    "trace_instance": _lazy("jitterscope.tracing.instances:undo_instance"),
    "protect_cgroup": _lazy("jitterscope.protect.cgroups:undo_cgroup"),
    "protect_move": _lazy("jitterscope.protect.cgroups:undo_move"),
    "protect_sigcont": _lazy("jitterscope.protect.cgroups:undo_sigcont"),
    "whatif_cpufreq": _lazy("jitterscope.whatif.cpufreq:undo_limits"),
}


def register_undo(op: str, fn: UndoFn | str) -> None:
    """Register an entry type defined elsewhere; `fn` may be "module:function" (imported
    when needed).  Register at import of journal.py's caller *and* list it in UNDO above
    if crash recovery in a process that never imported that module must undo it."""
    UNDO[op] = _lazy(fn) if isinstance(fn, str) else fn


def _undo_one(e: Entry) -> Outcome:
    try:
        got = UNDO[e["op"]](e)
    except Exception as err:  # noqa: BLE001 - keep going: every other knob must still go back
        text = getattr(err, "strerror", None) or str(err) or type(err).__name__
        return Outcome("failed", f"{describe(e)}: {text}")
    if isinstance(got, Outcome):
        return got
    return Outcome("restored", got or describe(e))


def _undo_entries(entries: list[Entry]) -> list[str]:
    """Undo in reverse order, annotating each entry with its outcome; return the failures."""
    failures = []
    for e in reversed(entries):
        out = _undo_one(e)
        e["result"], e["message"] = out.status, out.text
        if out.status == "failed":
            failures.append(out.text)
    return failures


def verdict(e: Entry) -> str:
    """What happened to one undone entry, in words: restored, already as found, kept, could not undo."""
    result = e.get("result", "")
    return {"restored": "restored", "unchanged": "already as found", "kept": "kept", "failed": "could not undo"}.get(
        result, result
    )


def say(e: Entry) -> str:
    """One line for one undone entry: what happened, never two verdicts for one item."""
    return f"{verdict(e)}: {e.get('message') or describe(e)}"


class Done(TypedDict):
    """A line saying the entry `seq` is undone (or handed over): recovery skips it."""

    op: str  # "done"
    seq: int | None


class Journal:
    """The changes one process makes.  Use as a context manager; undone on exit.

    `begin` is the single door for changes: it records the undo entry durably
    *before* the caller makes the change.
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self.entries: list[Entry] = []
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
        self._fh = open(self.path, "a+")  # noqa: SIM115 - held (and locked) for the journal's life
        fcntl.flock(self._fh, fcntl.LOCK_EX)
        self._write(
            {
                "op": "header",
                "label": self.label,
                "pid": os.getpid(),
                "start": process_start_time(os.getpid()),
                "argv": sys.argv,
                "time": time.time(),
            }
        )
        atexit.register(self.undo)

    def _write(self, entry: Entry | Header | Done) -> None:
        try:
            self._fh.write(json.dumps(entry) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as err:  # e.g. disk full: the change must then not be made
            raise JitterscopeError(
                f"cannot write the journal {self.path}: {err.strerror}; nothing was changed"
            ) from None

    def begin(self, op: str, **fields: Unpack[Fields]) -> Entry:
        if op not in UNDO:
            raise ValueError(f"unknown journal op {op}")
        if self._fh is None:
            self._open()
        entry: Entry = {"op": op, "seq": len(self.entries), **fields}
        self._write(entry)
        self.entries.append(entry)
        return entry

    def release(self, entry: Entry) -> Outcome:
        """Undo one entry now (before the others) and record that it is done."""
        if entry not in self.entries:
            raise ValueError("entry is not in this journal")
        out = _undo_one(entry)
        if out.status != "failed":
            self.entries.remove(entry)
            self._write({"op": "done", "seq": entry.get("seq")})
        return out

    def forget(self, entry: Entry) -> None:
        """Leave one change in place for good (its owner says where, e.g. a failed check's run directory
        that its error names): recorded as done, so neither the exit nor crash recovery undoes it."""
        if entry in self.entries:
            self.entries.remove(entry)
            self._write({"op": "done", "seq": entry.get("seq")})

    def hand_over(self, path: str | Path, **header: Unpack[Header]) -> Path | None:
        """Move every entry to a persistent record at `path` (see the module docstring); None if none."""
        if not self.entries:
            return None
        p = Path(path)
        tmp = p.with_name(f".{p.name}.tmp")
        with open(tmp, "w") as fh:
            fh.writelines(json.dumps(e) + "\n" for e in [{"op": "header", **header}, *self.entries])
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
        fd = os.open(p.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        for e in self.entries:
            self._write({"op": "done", "seq": e.get("seq")})
        self.entries.clear()
        return p

    # Convenience wrappers for the common changes.
    def set_file(self, path: str | Path, value: str) -> None:
        """Write `value` to a kernel setting file, journalling its original."""
        original = read_setting(path)
        self.begin("file", path=str(path), original=original)
        Path(path).write_text(value)

    def process_group(self, pgid: int) -> None:
        self.begin("killpg", pgid=pgid, start=process_start_time(pgid))

    def set_affinity(self, pid: int, cpus: set[int]) -> None:
        self.begin("affinity", pid=pid, start=process_start_time(pid), cpus=sorted(os.sched_getaffinity(pid)))
        os.sched_setaffinity(pid, cpus)

    def scratch_dir(
        self,
        prefix: str,
        parent: str | Path | None = None,
        keep: str | None = None,
        keep_to: str | Path | None = None,
        hint: str | None = None,
    ) -> Path:
        """A new directory `<parent>/<prefix><pid>-<n>`, removed when the journal is undone
        (also after a crash).  If it then holds a non-empty `keep` subdirectory, that is
        moved to `keep_to` (default: the state dir's kept/) instead of being deleted."""
        base = Path(parent or os.environ.get("TMPDIR") or "/tmp").absolute()
        for n in range(1000):
            p = base / f"{prefix}{os.getpid()}-{n}"
            if p.exists():
                continue
            entry = self.begin(
                "scratch", path=str(p), keep=keep, hint=hint, keep_to=str(Path(keep_to).absolute()) if keep_to else None
            )
            try:
                p.mkdir(mode=0o700)
                return p
            except FileExistsError:
                self.entries.remove(entry)
                self._write({"op": "done", "seq": entry["seq"]})
        raise JitterscopeError(f"cannot create a scratch directory in {base}")

    def undo(self) -> list[str]:
        """Undo every change, newest first, and delete the journal (what could not be
        undone stays in it, so the next jitterscope command or `restore` retries)."""
        if self._closed:
            return []
        self._closed = True
        atexit.unregister(self.undo)  # a long-running monitor makes one journal per window
        failures = _undo_entries(self.entries)
        if self._fh is not None:
            if self.path is not None:
                _settle(self.path, self._fh, self.entries)
            self._fh.close()
        for e in self.entries:
            if e.get("result") in ("failed", "kept"):
                print(f"jitterscope: {'warning: ' if e['result'] == 'failed' else ''}{say(e)}", file=sys.stderr)
        return failures

    def __enter__(self) -> Journal:  # noqa: PYI034 - typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc: object) -> None:
        # Ctrl-C, SIGTERM or SIGHUP during undo must not leave half the knobs changed.
        blocked = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        try:
            old = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        except (ValueError, OSError):
            old = None
        try:
            self.undo()
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def scratch(prefix: str, parent: str | Path | None = None) -> Iterator[Path]:
    """A temporary directory that a crash cannot leave behind (journalled)."""
    with Journal(f"scratch {prefix}") as j:
        yield j.scratch_dir(prefix, parent)


def _opened_at(p: Path) -> int:
    """When a journal was opened (its name is <pid>-<microseconds>.jsonl)."""
    try:
        return int(p.stem.rsplit("-", 1)[-1])
    except ValueError:
        return 0


def stale_journals() -> list[Path]:
    """Journal files whose owner is gone (their lock can be taken), newest first: a
    process's later journal (e.g. a measurement inside a cluster rank's) is undone
    before the earlier one, as its own exit would have done."""
    d = journal_dir()
    try:
        paths = sorted(d.glob("*.jsonl"), key=_opened_at, reverse=True) if d.is_dir() else []
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


def _read_entries(fh: Any, unknown: list[str] | None = None) -> tuple[Header, list[Entry]]:
    """(header, entries not yet done); ops this jitterscope does not know go to `unknown`.

    Each line is taken as the writer wrote it (`Entry`, `Header`): an entry's fields are read by
    its op's undo function, which converts each one it uses; a line that is not a JSON object
    with an op is skipped like a torn one."""
    header: Header = {}
    entries: list[Entry] = []
    done: set[object] = set()
    for line in fh:
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line: the change it announced was never made
        if not isinstance(e, dict) or not isinstance(e.get("op"), str):
            continue
        if e.get("op") == "header":
            header = cast(Header, e)
        elif e.get("op") == "done":
            done.add(e.get("seq"))
        elif e.get("op") in UNDO:
            entries.append(cast(Entry, e))
        elif unknown is not None:
            unknown.append(str(e.get("op")))
    return header, [e for e in entries if "seq" not in e or e["seq"] not in done]


def read_journal(path: str | Path) -> tuple[Header, list[Entry]]:
    """(header, entries not yet done) of a journal or a persistent record (hand_over)."""
    with open(path) as fh:
        return _read_entries(fh)


def _settle(path: Path, fh: Any, entries: list[Entry], header: Header | None = None) -> None:
    """After undoing: delete the journal, or keep in it only the entries that failed."""
    failed = [e for e in entries if e.get("result") == "failed"]
    if not failed:
        path.unlink(missing_ok=True)
        return
    head: Header = header or {"op": "header", "label": "jitterscope", "pid": os.getpid()}
    keep = [_without_outcome(e) for e in reversed(failed)]
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(json.dumps(x) + "\n" for x in [head, *keep]))
    os.replace(tmp, path)  # the lock stays with the old file: the new one is free for a retry


def _without_outcome(e: Entry) -> Entry:
    """The entry as it was journalled, without what undoing it added."""
    out = e.copy()
    for k in ("result", "message", "owner"):
        out.pop(k, None)  # type: ignore[misc]  # the keys are Entry's optional ones
    return out


def _owner_pid(p: Path) -> int:
    """The pid that opened a journal (its name is <pid>-<microseconds>.jsonl)."""
    try:
        return int(p.stem.split("-", 1)[0])
    except ValueError:
        return 0


def recover_stale(quiet: bool = True, pids: Collection[int] | None = None) -> list[Entry]:
    """Undo what crashed jitterscope processes left changed (`pids`: only those processes'); return the
    entries, each with its `result` (restored, unchanged, kept, failed) and `message`.

    Unless `quiet`, on stderr: one line per killed run counting what was put back, and one per item that
    could not be undone (`recovered_lines`)."""
    undone: list[Entry] = []
    for p in stale_journals():
        if pids is not None and _owner_pid(p) not in pids:
            continue
        try:
            fh = open(p)  # noqa: SIM115 - closed below, after the lock is released
        except OSError:
            continue  # another recovery has undone and deleted it since it was listed
        with fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            if os.fstat(fh.fileno()).st_nlink == 0:
                continue  # another recovery got here first and has undone it
            unknown: list[str] = []
            header, entries = _read_entries(fh, unknown)
            if unknown:  # written by a newer jitterscope: undoing only part of it could do harm
                entries = [
                    {
                        "op": unknown[0],
                        "path": str(p),
                        "result": "failed",
                        "message": f"{p}: holds changes this jitterscope cannot undo "
                        f"({', '.join(sorted(set(unknown)))}); "
                        f"left for a jitterscope that knows them",
                    }
                ]
            else:
                _undo_entries(entries)
                _settle(p, None, entries, header)
        owner = f"{header.get('label', 'jitterscope')} (pid {header.get('pid', p.name.split('-')[0])})"
        for e in entries:
            e["owner"] = owner
        undone.extend(entries)
        if not quiet:
            for line in recovered_lines(entries, owner):
                print(f"jitterscope: {line}", file=sys.stderr)
    return undone


def recovered_lines(entries: list[Entry], owner: str) -> list[str]:
    """What the next command says about one killed run's journal: a line for each item that could not be
    undone (the user must act on it), and one line counting the rest, so that a command's own one-line
    error or result is not buried under a line per restored setting (`restore` lists them one by one)."""
    failed = [f"{say(e)} (left by an interrupted {owner})" for e in entries if e.get("result") == "failed"]
    counts = Counter(verdict(e) for e in entries if e.get("result") != "failed")
    what = ", ".join(f"{n} {v}" for v, n in counts.items())
    return ([f"put back what an interrupted {owner} left: {what}"] if counts else []) + failed
