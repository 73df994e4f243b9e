"""tune plan moves only what it should: kernel threads, system daemons and the processes named with --move.

Everything else (other users' shells, test runners, agents) is listed and left alone; a process pinned to the
measured CPUs only is flagged on the terminal.  Real processes, started here and ended after each test.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from jitterscope.knobs.tasks import stat_fields
from jitterscope.tune import rules, rules_threads
from jitterscope.tune.render import render_plan

CPU = max(os.sched_getaffinity(0))
HK = [c for c in sorted(os.sched_getaffinity(0)) if c != CPU]
pytestmark = pytest.mark.skipif(not HK, reason="needs two CPUs to have one to move processes to")
SLEEP = ["sleep", "60"]  # a system user can run it (it cannot read a private checkout)


def _spawn(uid: int | None = None, pinned: bool = False) -> subprocess.Popen[bytes]:
    def pre() -> None:
        if pinned:
            os.sched_setaffinity(0, {CPU})
        if uid is not None:
            os.setgid(uid)
            os.setuid(uid)

    return subprocess.Popen(SLEEP, preexec_fn=pre)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def _source(p: subprocess.Popen[bytes], ctx: rules.Ctx) -> dict:
    comm = stat_fields(p.pid)[0]  # type: ignore[index]
    ctx.pids = {comm: [p.pid]}
    s = {"kind": "thread", "name": comm, "ppm": 100.0, "count": 5, "share": 0.1, "max_ns": 10_000, "cpus": [CPU]}
    return rules_threads.thread_source(s, ctx)


def _ctx(move: set[str] | None = None) -> rules.Ctx:
    return rules.Ctx([CPU], HK, None, move=move or set())


def test_a_process_of_this_user_is_listed_not_moved(procs):
    procs.append(_spawn())
    r = _source(procs[-1], _ctx())
    assert r["knobs"] == [] and r["reason"] == "out of scope", r
    assert r["left"] == [
        {"pid": procs[-1].pid, "process": stat_fields(procs[-1].pid)[0], "user": r["left"][0]["user"], "pinned": False}
    ]


def test_a_named_process_moves_by_name_or_pid(procs):
    procs.append(_spawn())
    comm = stat_fields(procs[-1].pid)[0]
    for move in ({comm}, {str(procs[-1].pid)}):
        r = _source(procs[-1], _ctx(move))
        assert [k["knob"] for k in r["knobs"]] == [f"task.{procs[-1].pid}.affinity"], r
        assert "named with --move" in r["knobs"][0]["why"] and "left" not in r


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as the system user daemon (uid 1)")
def test_a_system_users_daemon_moves_and_its_pin_is_shown(procs):
    procs.append(_spawn(uid=1, pinned=True))
    r = _source(procs[-1], _ctx())
    assert [k["knob"] for k in r["knobs"]] == [f"task.{procs[-1].pid}.affinity"], r
    assert "system user" in r["knobs"][0]["why"]
    assert r["pinned"] == [{"pid": procs[-1].pid, "process": stat_fields(procs[-1].pid)[0]}]


def test_the_terminal_says_which_process_is_pinned_to_the_cpu_only(procs):
    procs.append(_spawn(pinned=True))  # named: moved, overriding its pin
    procs.append(_spawn(pinned=True))  # not named: left, and said to be pinned
    moved = _source(procs[0], _ctx({str(procs[0].pid)}))
    left = _source(procs[1], _ctx({str(procs[0].pid)}))
    items = [{**moved, "source": "thread:a"}, {**left, "source": "thread:b"}]
    plan = {
        "cpus_text": str(CPU),
        "run_id": "r",
        "host": "h",
        "kernel": "k",
        "duration_s": 1.0,
        "total_ppm": 200.0,
        "items": [{**i, "ppm": 100.0, "removable_ppm": i["removable_ppm"]} for i in items],
        "knobs": [],
        "boot": {"cmdline": "", "command": None},
        "left": [{**t, "source": "thread:b"} for t in left["left"]],
        "pinned": [{**t, "source": "thread:a"} for t in moved["pinned"]],
    }
    text = render_plan(plan)
    assert f"WARNING: {moved['knobs'][0]['process']} (pid {procs[0].pid}, thread:a) is pinned to CPU {CPU} only" in (
        text
    ), text
    assert f"(pid {procs[1].pid}, user {left['left'][0]['user']}, pinned to CPU {CPU} only) for thread:b" in text


def test_a_kernel_thread_stays_in_scope():
    kthreads = [
        int(d)
        for d in os.listdir("/proc")
        if d.isdigit() and (sf := stat_fields(d)) and sf[1] & 0x00200000 and not sf[1] & 0x04000000
    ]
    assert kthreads, "no movable kernel thread on this machine"
    comm = stat_fields(kthreads[0])[0]  # type: ignore[index]
    assert rules_threads.scope(kthreads[0], comm, True, _ctx()) == "a kernel thread"
