"""plotting.draw_all: a page's figures drawn side by side in forked workers, in order, or here when a fork is
not safe (another thread runs)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

from jitterscope import plotting


def _where(i: int) -> str:
    return f"{i}:{os.getpid()}"


def test_with_another_thread_running_every_figure_is_drawn_here():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        got = plotting.draw_all([(_where, i) for i in range(3)])
    finally:
        stop.set()
        other.join()
    assert got == [f"{i}:{os.getpid()}" for i in range(3)]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to draw side by side")
def test_alone_the_figures_are_drawn_in_workers_and_kept_in_order():
    code = textwrap.dedent("""
        import os
        from jitterscope import plotting

        def where(i):
            return f"{i}:{os.getpid()}"

        print(os.getpid(), *plotting.draw_all([(where, i) for i in range(6)]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    me, *drawn = out.stdout.split()
    assert [d.split(":")[0] for d in drawn] == [str(i) for i in range(6)]
    pids = {d.split(":")[1] for d in drawn}
    # which worker takes which figure is the pool's choice; none is drawn here, and no more workers than CPUs
    assert me not in pids and len(pids) <= min(6, len(os.sched_getaffinity(0)))
