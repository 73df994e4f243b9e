"""sysinfo.move_threads: a process leaves CPUs with every thread it has, not only the calling one."""

from __future__ import annotations

import os
import threading

import pytest

from jitterscope import sysinfo


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs this process may use")
def test_every_thread_leaves_the_cpus_and_gets_its_mask_back() -> None:
    cpu = max(os.sched_getaffinity(0))
    ready, done = threading.Event(), threading.Event()
    tid: list[int] = []

    def helper() -> None:  # a thread started before the move, as a tool's helper thread is
        tid.append(threading.get_native_id())
        ready.set()
        done.wait(10)

    t = threading.Thread(target=helper)
    t.start()
    try:
        ready.wait(10)
        before = {x: os.sched_getaffinity(x) for x in sysinfo.thread_ids(os.getpid())}
        assert {os.getpid(), tid[0]} <= before.keys()
        moved = sysinfo.leave_cpus({cpu})
        assert set(moved) == {x for x, m in before.items() if cpu in m and m - {cpu}}
        for x in before:
            assert cpu not in os.sched_getaffinity(x) or before[x] == {cpu}
        assert sysinfo.leave_cpus(set(os.sched_getaffinity(0)) | {cpu}) == {}  # nowhere else to go: no move
        sysinfo.restore_affinities(moved)
        assert {x: os.sched_getaffinity(x) for x in before} == before
    finally:
        done.set()
        t.join()
