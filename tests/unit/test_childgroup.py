"""childgroup.own_group: the child leads a process group of its own and stays in our session (a new session is
a new scheduling autogroup, where a busy machine starved it), also with a preexec step of the caller's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from jitterscope.childgroup import own_group

SHOW = "import os; print(os.getpgid(0), os.getsid(0), os.nice(0))"


def _child(**kw: object) -> tuple[int, list[int]]:
    p = subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True, check=True, **kw)  # type: ignore[call-overload]
    return p.returncode, [int(x) for x in p.stdout.split()]


def test_own_group_same_session():
    _, (pgid, sid, _) = _child(preexec_fn=own_group())
    assert pgid != os.getpgid(0) and sid == os.getsid(0)


def test_with_the_callers_preexec():
    _, (pgid, sid, nice) = _child(preexec_fn=own_group(lambda: os.nice(5)))
    assert pgid != os.getpgid(0) and sid == os.getsid(0) and nice == os.nice(0) + 5


def test_popen_leads_a_group_in_our_session():
    from jitterscope import childgroup

    p = childgroup.popen([sys.executable, "-c", SHOW], stdout=subprocess.PIPE, text=True)
    out, _ = p.communicate(timeout=30)
    pgid, sid, _ = (int(x) for x in out.split())
    assert pgid == p.pid and sid == os.getsid(0)


def _pid_after(seconds: float) -> int:
    import time

    time.sleep(seconds)
    return os.getpid()


def test_a_forked_pools_worker_leaves_an_interrupt_or_hang_up_to_its_parent():
    """Ctrl-C and a closed terminal reach the whole process group; the session finishes the run then, so a
    worker goes on with its task (one that died of it left the task unanswered, and the pool waited for ever)."""
    import signal
    import time

    from jitterscope.childgroup import ForkedPool

    with ForkedPool(1) as pool:
        task = pool.submit(_pid_after, 1.0)
        time.sleep(0.3)  # the task is in the worker
        (worker,) = pool._workers
        os.kill(worker.pid, signal.SIGHUP)
        os.kill(worker.pid, signal.SIGINT)
        assert pool.result(task) == worker.pid


def test_a_dead_worker_is_an_error_not_a_wait_for_ever():
    """SIGTERM to the process group (systemd's stop) or the OOM killer's SIGKILL ends a worker with its task: the
    wait for it ends in one line, and leaving the pool then ends its workers (not a wait on a replacement)."""
    import signal
    import time

    import pytest

    from jitterscope.childgroup import ForkedPool
    from jitterscope.errors import JitterscopeError

    for sig in (signal.SIGTERM, signal.SIGKILL):
        t0 = time.monotonic()
        with pytest.raises(JitterscopeError, match=f"a worker process died \\(pid \\d+ ended by {sig.name}\\)"):
            with ForkedPool(1) as pool:
                task = pool.submit(_pid_after, 30.0)
                time.sleep(0.3)
                (worker,) = pool._workers
                os.kill(worker.pid, sig)
                pool.result(task)
        assert time.monotonic() - t0 < 10


def test_a_worker_killed_while_idle_fails_the_next_task_and_the_pool_still_closes():
    """multiprocessing.Pool hung here: the worker died holding its task queue's lock, and both the replacement and
    terminate() waited on it for ever."""
    import signal
    import time

    import pytest

    from jitterscope.childgroup import ForkedPool
    from jitterscope.errors import JitterscopeError

    t0 = time.monotonic()
    with pytest.raises(JitterscopeError, match="a worker process died \\(pid \\d+ ended by SIGKILL\\)"):
        with ForkedPool(1) as pool:
            (worker,) = pool._workers
            os.kill(worker.pid, signal.SIGKILL)
            worker.join(10)
            pool.result(pool.submit(_pid_after, 0.0))
    assert time.monotonic() - t0 < 10


def test_sync_fit_process_imports_the_fit_before_the_fit_is_asked_for():
    """sync submits fit_imports as CMD starts: the fit's modules are then imported in the fit's process, not in
    jitterscope's (a fresh interpreter: this one's modules are shared by every test), and scipy.stats is not
    among them (a second of CPU that a program keeping every CPU busy left to after its end)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from jitterscope.childgroup import ForkedPool\n"
        "from jitterscope.sync.warmup import fit_imports\n"
        "def imported():\n"
        "    return 'jitterscope.simulate.fitting' in sys.modules, 'scipy.stats' in sys.modules\n"
        "with ForkedPool(1) as pool:\n"
        "    before = pool.result(pool.submit(imported))\n"
        "    pool.result(pool.submit(fit_imports))\n"
        "    print(*before, *pool.result(pool.submit(imported)), *imported())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False", "True", "False", "False", "False"]


def _pid_of(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _dies_in_a_child(parent_and_x: tuple[int, int]) -> tuple[int, int]:
    parent, x = parent_and_x
    if x == 2 and os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x, os.getpid()


def _fork_map_in_worker(func_name: str, items: list) -> list:
    from jitterscope.childgroup import fork_map

    return fork_map(globals()[func_name], items)


def _worker_pid() -> int:
    return os.getpid()


def test_fork_map_answers_in_order_from_forked_children_and_redoes_a_killed_ones_item():
    """Run where sync runs it, in a ForkedPool's worker (one thread): items[1:] in children of its own."""
    from jitterscope.childgroup import ForkedPool

    with ForkedPool(1) as pool:
        worker = pool.result(pool.submit(_worker_pid))
        got = pool.result(pool.submit(_fork_map_in_worker, "_pid_of", [1, 2, 3]))
        assert [v for v, _ in got] == [1, 4, 9]
        pids = [p for _, p in got]
        assert pids[0] == worker and len(set(pids)) == 3
        got = pool.result(pool.submit(_fork_map_in_worker, "_dies_in_a_child", [(worker, x) for x in (1, 2, 3)]))
        assert [v for v, _ in got] == [1, 4, 9]
        assert got[1][1] == worker and got[2][1] not in (worker, got[0][1])  # the killed child's item, done here


def test_an_abandoned_pool_is_not_waited_for():
    """sync's fit process imports scipy from CMD's end; with too few values to fit it is not needed, and leaving
    the pool would have waited for that import (a second of a trivial program's wall time)."""
    import time

    from jitterscope.childgroup import ForkedPool

    t0 = time.monotonic()
    with ForkedPool(1) as pool:
        pool.submit(_pid_after, 30.0)
        (worker,) = pool._workers
        pool.abandon()
        worker.join(10)
        assert worker.exitcode is not None
    assert time.monotonic() - t0 < 10


def test_sync_says_too_few_values_without_the_fit_process():
    from concurrent.futures import ThreadPoolExecutor

    from jitterscope.childgroup import ForkedPool
    from jitterscope.sync.build import _fit, _fitting

    with ForkedPool(1) as pool, ThreadPoolExecutor(1) as threads:
        pool.submit(_pid_after, 30.0)  # the fit's imports, still running
        (worker,) = pool._workers
        said = _fitting([5_000] * 19, pool, threads)()
        worker.join(10)
        assert worker.exitcode is not None  # ended, not waited for
    # what the fit itself says of so few values (its modules imported in this process: a test's, not sync's)
    assert (
        said
        == _fit([5_000] * 19)
        == {
            "fitted": False,
            "reason": "only 19 events; fitting needs at least 20",
        }
    )


def test_several_pools_fork_every_worker_before_any_pools_thread():
    """sync forks the fit's and the drawing's processes as two pools: each worker is forked while this process
    runs one thread (a pool made after another would fork beside that one's thread, whose locks the worker
    inherits), and each pool then works and closes."""
    code = (
        "import os, threading\n"
        "from jitterscope.childgroup import ForkedPool\n"
        "threads = []\n"
        "os.register_at_fork(before=lambda: threads.append(threading.active_count()))\n"
        "a, b = ForkedPool.several(1, 2)\n"
        "with a, b:\n"
        "    got = {a.result(a.submit(os.getpid))} | {b.result(b.submit(os.getpid)) for _ in range(4)}\n"
        "print(threads, len(got))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("]")[0] == "[1, 1, 1" and p.stdout.split()[-1] in ("2", "3"), p.stdout


def _scratch_then_wait(parent: str, ready: str) -> None:
    """A worker's task: a journalled scratch directory, as the analysis's parser has, then a long wait."""
    import time
    from pathlib import Path

    from jitterscope import journal

    with journal.scratch("jitterscope-parse-", parent) as d:
        Path(ready).write_text(str(d))
        time.sleep(60)


def test_a_worker_killed_mid_task_leaves_no_scratch(tmp_path):
    """Leaving a pool by an error kills its workers mid-task (the analysis failed in this process while a
    worker parsed another CPU): what they journalled, the parser's scratch on tmpfs, is undone at once, not
    left for the next jitterscope command."""
    import time

    import pytest

    from jitterscope.childgroup import ForkedPool

    ready = tmp_path / "ready"
    with pytest.raises(RuntimeError), ForkedPool(1) as pool:
        pool.submit(_scratch_then_wait, str(tmp_path), str(ready))
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists() and os.path.isdir(ready.read_text())
        raise RuntimeError("the analysis failed here")
    assert not os.path.exists(ready.read_text())
