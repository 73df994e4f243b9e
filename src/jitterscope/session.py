"""One session lifecycle for every mode that changes the machine and writes a run.

The steps (rtla's `struct tool_ops` is the model): a mode supplies a `Steps` object; `run` drives it.

    create the run directory, meta.json marked incomplete        (self-describing from the first moment)
    open the journal, arm the watchdog                          (Session.__enter__)
    steps.setup(session)      start children, apply config     (every change through session.journal)
    steps.capture(session)    the main loop; a first Ctrl-C (SIGINT, SIGTERM, SIGHUP: cli.py turns them
                              into KeyboardInterrupt) ends it early and the run is kept, interrupted
    steps.stop(session)       stop the children, write and fsync everything needed to rebuild the run;
                              then what the session owns for the mode (`session.trace`) is stopped
    undo the journal
    steps.analyze(session)    build tables and summary from the raw files; a second Ctrl-C here keeps the
                              raw run, which `jitterscope analyze DIR` finishes (the kind's Recovery)
    disarm the watchdog       (armed through the analysis: the parser's journalled scratch goes if killed)

Child supervision: `Session.child_died(what)` records that a native helper the mode depends on ended
by itself (killed, crashed): the run is then interrupted and the command exits non-zero.

The watchdog (native/watchdog.c) is what makes "nothing left changed" hold when jitterscope itself is
killed with SIGKILL: it waits on this process's death (pidfd) and then runs `jitterscope restore
--quiet`, which undoes this session's journal at once (resumes what was stopped, thaws what was
frozen, unpins what was pinned, unthrottles cpu.max, kills the children's process groups), rather
than at "the next jitterscope command".  `guard(label)` is the journal and watchdog alone, for a
mode whose run directory is still its own (measure/capture.py's raw-first capture).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

from jitterscope import atomic, boundedio, childgroup
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal, process_start_time
from jitterscope.native_bin import native_bin
from jitterscope.rundir import INCOMPLETE, OWNER

if TYPE_CHECKING:
    from jitterscope.tracing.session import TraceSession

WATCHDOG = "jitterscope-watchdog"


class Watchdog:
    """The native watchdog of this process: undoes its journals if it dies without disarming it."""

    def __init__(self) -> None:
        self._w: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def arm(self) -> Watchdog:
        try:
            prog = native_bin(WATCHDOG)
        except JitterscopeError as err:  # an install without native programs: the journal still holds
            print(
                f"jitterscope: warning: no watchdog ({err}); after a kill -9 run `jitterscope restore`", file=sys.stderr
            )
            return self
        r, w = os.pipe()  # both ends close-on-exec: only the watchdog's stdin (dup'ed) reaches it
        restore = [sys.executable, "-m", "jitterscope", "restore", "--quiet"]
        try:
            self._proc = childgroup.popen(  # a terminal's Ctrl-C or hang-up is for us, not for it
                [str(prog), "--pid", str(os.getpid()), "--", *restore], stdin=r, stdout=subprocess.DEVNULL
            )
        except OSError as err:
            os.close(w)
            print(f"jitterscope: warning: no watchdog ({err.strerror})", file=sys.stderr)
            return self
        finally:
            os.close(r)
        self._w = w
        return self

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def disarm(self) -> None:
        """This process has undone its own changes: the watchdog ends without doing anything."""
        if self._w is None:
            return
        with contextlib.suppress(OSError):
            os.write(self._w, b"q")
        os.close(self._w)
        self._w = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


@contextlib.contextmanager
def guard(label: str) -> Iterator[Journal]:
    """A journal whose changes are undone on exit and, by the watchdog, if this process is killed."""
    dog = Watchdog().arm()
    try:
        with Journal(label) as journal:
            yield journal
    finally:
        dog.disarm()


def write_meta(run_dir: Path, meta: Mapping[str, Any]) -> None:
    """meta.json, whole or not at all and fsynced (atomic.py)."""
    atomic.write_text(run_dir / "meta.json", json.dumps(meta, indent=2) + "\n")


def read_meta(run_dir: Path) -> dict[str, Any]:
    """meta.json of a run directory as written so far ({} when absent or unreadable)."""
    try:
        data = boundedio.read_json(run_dir / "meta.json", "run metadata", boundedio.RUN_JSON_MAX)
    except (JitterscopeError, OSError):
        return {}
    return data if isinstance(data, dict) else {}


def started_as(run_dir: Path, kind: str) -> bool:
    """`run_dir` is a session of `kind` that was not finished (meta.json still marked incomplete)."""
    meta = read_meta(run_dir)
    return meta.get("kind") == kind and INCOMPLETE in meta


def recording(run_dir: Path) -> int | None:
    """The pid of the jitterscope still recording the unfinished session in `run_dir`, if it lives (not this
    process): its run is not cut short, whatever its directory holds so far."""
    meta = read_meta(run_dir)
    owner = meta.get(OWNER) if INCOMPLETE in meta else None
    if not isinstance(owner, dict):
        return None
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return None
    return pid if process_start_time(pid) == owner.get("start") else None


def cut_short(run_dir: Path, why: str) -> NoReturn:
    """What `analyze` says of a run that cannot be rebuilt: one line, exit code 2."""
    stage = read_meta(run_dir).get(INCOMPLETE, "")
    raise JitterscopeError(f"{run_dir}: {why}" + (f" (the session reached: {stage})" if stage else ""))


def fsync_tree(path: Path) -> None:
    """fsync every file under `path` and the directories: the raw run survives a crash after this."""
    for root, _dirs, files in os.walk(path):
        for name in [*files, "."]:
            with contextlib.suppress(OSError):
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)


@dataclass
class Session:
    """What a mode's steps work with: the run directory, its journal, its meta.json and its end."""

    kind: str
    run_dir: Path
    meta: dict[str, Any]
    journal: Journal = field(init=False)
    interrupted: bool = False
    ended_by: str = ""
    failed: str | None = None  # a child that died: the run is interrupted and the command fails
    recorded: bool = False  # set by a step once there is raw data worth keeping
    nothing: str = "interrupted before anything was recorded: nothing was measured"
    t0: float = field(default_factory=time.monotonic)
    _dog: Watchdog = field(default_factory=Watchdog, init=False)
    _owned: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, init=False)

    def trace(self, cpus: list[int], out_dir: Path, buffer_kb: int) -> TraceSession:
        """A private trace instance on `cpus`, captured raw into `out_dir`, owned by the session: its changes
        are journalled, and it is stopped (its raw capture completed) after `steps.stop`, before the journal
        is undone, on every path."""
        from jitterscope.tracing.session import TraceSession  # only a traced session pays for its import

        return self._owned.enter_context(TraceSession(cpus, out_dir, self.journal, buffer_kb=buffer_kb))

    def stage(self, name: str, **fields: Any) -> None:
        """Record (in meta.json, fsynced) how far the session got, with what the recovery will need."""
        self.meta.update(fields)
        self.meta[INCOMPLETE] = name
        write_meta(self.run_dir, self.meta)

    def interrupt(self, why: str = "interrupted") -> None:
        self.interrupted = True
        self.ended_by = self.ended_by or why

    def child_died(self, what: str) -> None:
        """A helper the run depends on ended by itself: the run is interrupted and the command fails."""
        self.failed = what
        self.interrupted = True
        self.ended_by = what


R = TypeVar("R", covariant=True)


class Steps(Protocol[R]):
    """What a mode supplies.  Every change to the machine goes through `session.journal`."""

    kind: str

    def start_meta(self) -> dict[str, Any]:
        """meta.json at the start (the kind's fixed facts: host, CPUs, options)."""
        ...

    def setup(self, session: Session) -> None:
        """Start the children and apply the configuration; may call `session.stage` with more meta."""
        ...

    def capture(self, session: Session) -> None:
        """The main loop, until the mode's end, a child's death or Ctrl-C (KeyboardInterrupt)."""
        ...

    def stop(self, session: Session) -> None:
        """Stop the children and write what is needed to rebuild the run (the session fsyncs it)."""
        ...

    def analyze(self, session: Session) -> R:
        """The run's tables and summary from what `stop` wrote; writes meta.json complete."""
        ...


def run(steps: Steps[R], run_dir: Path, journal_label: str | None = None) -> tuple[Session, R]:
    """Drive one session of `steps` in the new directory `run_dir` (already created, empty).

    Until a step sets `session.recorded`, a failure or Ctrl-C removes the directory (nothing was
    measured: no half-made run is left); after it, the directory is kept whatever happens."""
    owner = {"pid": os.getpid(), "start": process_start_time(os.getpid())}
    meta = {**steps.start_meta(), INCOMPLETE: "starting", OWNER: owner, "interrupted": False}
    s = Session(steps.kind, run_dir, meta)
    write_meta(run_dir, meta)
    s._dog.arm()
    try:
        with Journal(journal_label or steps.kind) as s.journal:
            stopped = False
            try:
                with s._owned:  # what the session owns for the mode (the trace) stops after the mode's children
                    try:
                        try:
                            steps.setup(s)
                            s.stage("capturing")
                            steps.capture(s)
                        except KeyboardInterrupt:
                            s.interrupt()
                            if s.recorded:
                                print(
                                    "\njitterscope: interrupted; finishing the run with what was recorded",
                                    file=sys.stderr,
                                )
                    finally:
                        steps.stop(s)
                        stopped = True
            finally:
                if s.recorded and stopped:
                    fsync_tree(run_dir)
                    s.stage("analysing", interrupted=s.interrupted, ended_by=s.ended_by)
    except BaseException:
        s._dog.disarm()
        if not s.recorded:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    if not s.recorded:
        s._dog.disarm()
        shutil.rmtree(run_dir, ignore_errors=True)
        raise JitterscopeError(s.nothing)
    # The watchdog stays armed through the analysis: what it journals (the parser's scratch directories in
    # /dev/shm) is removed at once if jitterscope is killed there, not by "the next jitterscope command".
    try:
        result = steps.analyze(s)
    except KeyboardInterrupt as err:
        if str(err):
            raise
        raise KeyboardInterrupt(
            f"interrupted while building the run: what was recorded is kept in {run_dir}; "
            f"`jitterscope analyze {run_dir}` finishes it"
        ) from None
    finally:
        s._dog.disarm()
    return s, result
