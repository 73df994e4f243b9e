"""Children in a process group of their own, in jitterscope's session.

A child that a terminal's Ctrl-C or hang-up must not reach, or that a journal kills as a whole
(`Journal.process_group`), gets its own process group.  Not its own session: the kernel puts each
session in a scheduling autogroup of its own (kernel.sched_autogroup_enabled), and under a 50% CPU hog
on this 2-CPU VM (Linux 6.18) a child started in a new session ran some 40 times slower than in ours
(importing pydantic, numpy and pyarrow: 11.7 s against 0.3 s), long enough for protect's controller to
miss its ready-line deadline and for place to start nothing in two minutes."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait
from typing import Any, TypeVar

from jitterscope import journal
from jitterscope.errors import JitterscopeError


def own_group(preexec: Callable[[], object] | None = None) -> Callable[[], None]:
    """A subprocess.Popen `preexec_fn`: the child leads a new process group, then runs `preexec`.  (Popen's
    process_group= would do the first part, but not on Python 3.10.)"""

    def setup() -> None:
        os.setpgid(0, 0)
        if preexec is not None:
            preexec()

    return setup


def popen(args: Sequence[str], **kw: Any) -> subprocess.Popen[Any]:
    """subprocess.Popen(args, **kw) leading a new process group.  On Python 3.11+ through `process_group`,
    done in C after the fork: a `preexec_fn` makes Python run its fork handlers in this process, and a
    Ctrl-C landing in one (logging's lock release) is printed as "Exception ignored" and lost (whatif
    --apply then ended 0, not 130)."""
    if sys.version_info >= (3, 11):
        return subprocess.Popen(args, process_group=0, **kw)
    return subprocess.Popen(args, preexec_fn=own_group(), **kw)


def die_with_parent(parent: int | None = None) -> None:
    """This process gets SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG): a child of a jitterscope
    killed with SIGKILL does not go on alone.  `parent`: its pid as the parent took it before forking (else
    read here, which misses a parent that died before).  Best effort: without prctl it outlives its parent."""
    parent = os.getppid() if parent is None else parent
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the prctl took
        os._exit(1)


def _worker_signals() -> None:
    """A forked worker starts with its parent's signal handlers (the session's, which turn a SIGTERM into
    "finish the run") and mask.  It takes SIGTERM's default, so the pool's terminate() ends it (c16: it waited
    300 s on a worker that did not die of its SIGTERM), and ignores what a terminal sends the whole process
    group (Ctrl-C, hang-up): the parent's session finishes the run then, and a worker that died of it left its
    task unanswered."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    # a parent killed with SIGKILL takes its workers with it (one finishing a task after it printed a
    # BrokenPipeError traceback on the user's terminal)
    die_with_parent()


T = TypeVar("T")
A = TypeVar("A")


class ForkedPool:
    """`processes` workers forked from this process now: they need nothing re-imported.  Create it while this
    process runs no other thread (a lock another thread holds at the fork stays held in the worker).  This
    process's objects are frozen out of the collector meanwhile, whose passes would copy every page they touch
    into the workers.  A worker that dies (SIGTERM to the process group, SIGKILL, the OOM killer) is an error when
    a result is waited for (`result`), not a wait for ever, and no worker replaces it (multiprocessing.Pool's
    replacement hung on the queue lock a worker killed while idle held); leaving by an error ends the workers."""

    def __init__(self, processes: int, start: bool = True) -> None:
        gc.freeze()
        try:
            self._ex = ProcessPoolExecutor(
                processes, mp_context=multiprocessing.get_context("fork"), initializer=_worker_signals
            )
            # every worker forked now, from this thread, before the executor's thread, which its first task starts
            # (`start`, else `several`'s once every pool has forked); the executor's own step for it, which its
            # first task would take (an older 3.10 without it forks them at that task)
            launch = getattr(self._ex, "_launch_processes", None)
            if launch is not None:
                launch()
            self._workers = list(self._ex._processes.values())  # kept by pid; no public accessor
            if start:
                self._first()
        except BaseException:
            self._abort()
            raise

    @classmethod
    def several(cls, *processes: int) -> list[ForkedPool]:
        """Pools of `processes[i]` workers, every worker of every pool forked before any pool's thread starts (a
        pool made while another one runs would fork beside that one's thread).  Each is left by `with`."""
        pools: list[ForkedPool] = []
        try:
            for n in processes:
                pools.append(cls(n, start=False))
            for pool in pools:
                pool._first()
        except BaseException:
            for pool in pools:
                pool._abort()
            raise
        return pools

    def _first(self) -> None:
        self._ex.submit(int).result()
        self._workers = list(self._ex._processes.values())

    def _abort(self) -> None:
        """Made in vain: its workers killed (one idle before its executor's thread starts would wait for ever)."""
        killed = self._kill(getattr(self, "_workers", []))
        if hasattr(self, "_ex"):
            self._ex.shutdown(wait=True, cancel_futures=True)
        _undo_journals(killed)
        gc.unfreeze()

    @staticmethod
    def _kill(workers: Sequence[Any]) -> list[int]:
        """The live ones of `workers` killed and reaped (their journals' locks released); their pids."""
        killed = [w for w in workers if w.exitcode is None]
        for w in killed:
            w.kill()
        for w in killed:
            w.join()
        return [w.pid for w in killed]

    def submit(self, func: Callable[..., T], *args: Any) -> Future[T]:
        try:
            return self._ex.submit(func, *args)
        except BrokenProcessPool:
            raise self._died() from None

    def result(self, pending: Future[T]) -> T:
        """`pending`'s result; a JitterscopeError if a worker died first."""
        try:
            return pending.result()
        except BrokenProcessPool:
            raise self._died() from None

    def _died(self) -> JitterscopeError:
        # A dead worker's pipe closes before it can be reaped, and the executor's own thread may reap it first (our
        # waitpid then fails with ECHILD until that thread records the status): its exit status is waited for, briefly.
        gone = set(wait([w.sentinel for w in self._workers], timeout=0))
        dead = [w for w in self._workers if w.sentinel in gone]
        deadline = time.monotonic() + 2.0
        for w in dead:
            while w.exitcode is None and time.monotonic() < deadline:
                w.join(0.02)
        how = ", ".join(f"pid {w.pid} ended{_ending(w.exitcode)}" for w in dead) or "a worker"
        return JitterscopeError(f"a worker process died ({how}): its part of the work is lost")

    def abandon(self) -> None:
        """Its work is not needed: the workers are killed now rather than waited for (leaving the block
        would wait for a task in progress)."""
        killed = self._kill(self._workers)
        self._ex.shutdown(wait=True, cancel_futures=True)
        _undo_journals(killed)

    def __enter__(self) -> ForkedPool:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        try:
            killed = self._kill(self._workers) if kind is not None else []  # a task in progress is not waited for
            self._ex.shutdown(wait=True, cancel_futures=kind is not None)
            _undo_journals(killed)
        finally:
            gc.unfreeze()


def _undo_journals(pids: list[int]) -> None:
    """What killed workers had journalled, undone now rather than by "the next jitterscope command": a
    worker killed mid-task (the analysis failed in another process) left its scratch directory, the parser's
    records of a CPU, on tmpfs."""
    if pids:
        journal.recover_stale(quiet=True, pids=set(pids))


def _ending(code: int | None) -> str:
    if code is None:
        return ""  # reaped by another thread that had not recorded it yet
    if code < 0:
        return f" by {signal.Signals(-code).name}"
    return f" by exit code {code}"


def fork_map(func: Callable[[A], T], items: Sequence[A]) -> list[T]:
    """[func(x) for x in items], items[1:] each in a process forked now and items[0] in this one meanwhile: for
    CPU-bound work in a process that already has its imports (a ForkedPool's worker), where a pool would
    start and import again.  Call it only from a process that runs one thread (a lock another thread holds
    at the fork stays held in the child).  A child gets SIGKILL when this process ends (`die_with_parent`).
    One that dies or fails before it answers has its item done here when its turn comes, so a failure is
    raised here with its own traceback and a killed child costs time, not the result."""
    me = os.getpid()
    children: list[tuple[int, int]] = []
    try:
        for x in items[1:]:
            r, w = os.pipe()
            try:
                pid = os.fork()
            except OSError:
                os.close(r)
                os.close(w)
                raise
            if pid == 0:  # pragma: no cover (the child's exit code and answer are what the parent checks)
                code = 1
                try:
                    os.close(r)
                    die_with_parent(me)
                    with os.fdopen(w, "wb") as out:
                        pickle.dump(func(x), out, pickle.HIGHEST_PROTOCOL)
                    code = 0
                finally:
                    os._exit(code)
            os.close(w)
            children.append((pid, r))
        results = [func(items[0])]
        for x in items[1:]:
            pid, r = children[0]
            children[0] = (pid, -1)  # its read end is closed with `answer`
            with os.fdopen(r, "rb") as answer:
                data = answer.read()
            _, status = os.waitpid(pid, 0)
            children.pop(0)
            results.append(pickle.loads(data) if status == 0 and data else func(x))
        return results
    finally:
        for pid, r in children:  # left by an error here: the children still pending are ended
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            if r >= 0:
                os.close(r)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
