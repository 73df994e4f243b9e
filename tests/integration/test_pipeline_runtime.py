"""The native pipeline runtime: layouts, bit-identical outputs for every schedule, the guard, the watchdog."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from jitterscope.measure.tsc import tsc_hz
from jitterscope.native_bin import native_bin
from jitterscope.pipeline import plan_format as F
from jitterscope.pipeline.compiler import compile_graph
from jitterscope.pipeline.graph import graph_from_dict, load_graph
from jitterscope.pipeline.heuristics import HEURISTICS
from jitterscope.pipeline.kernels_ref import reference_digests
from jitterscope.pipeline.memory import ALLOCATORS
from jitterscope.pipeline.plan import RunOptions, build_plan
from jitterscope.pipeline.runtime import Result, Runtime, heartbeat_done, read_result
from jitterscope.pipeline.sync import Sync
from jitterscope.sysinfo import online_cpus

ROOT = Path(__file__).resolve().parents[2]
CPUS = tuple(online_cpus()[:2])
ITER = 12

# Every built-in kernel, fan-out, a 3-input average, an even (4x4) and a weighted 3x3 convolution, two sinks.
ALL_KERNELS = {
    "name": "allkernels",
    "image": {"width": 24, "height": 20, "pixel": "int32"},
    "boxes": {
        "src": {"kernel": "source"},
        "g": {"kernel": "gain", "factor": 5, "offset": -7},
        "d": {"kernel": "dup", "outputs": 3},
        "c3": {"kernel": "conv", "size": 3, "weights": [1, 2, 1, 2, 4, 2, 1, 2, 1]},
        "c4": {"kernel": "conv", "size": 4},
        "cp": {"kernel": "copy"},
        "a": {"kernel": "add"},
        "avg": {"kernel": "average", "inputs": 3},
        "k1": {"kernel": "sink"},
        "k2": {"kernel": "sink"},
    },
    "edges": [
        "src -> g",
        "g -> d",
        "d.out0 -> c3",
        "d.out1 -> c4",
        "d.out2 -> cp",
        "c3 -> a.in0",
        "c4 -> a.in1",
        "a -> avg.in0",
        "cp -> avg.in1",
        "c3 -> avg.in2",
        "avg -> k1",
        "c4 -> k2",
    ],
}


def graph(pixel: str = "int32"):
    d = copy.deepcopy(ALL_KERNELS)
    d["image"]["pixel"] = pixel
    if pixel == "float32":
        d["boxes"]["g"].update(factor=1.5, offset=-0.25)
    return graph_from_dict(d)


def execute(sched, tmp: Path, **ro) -> tuple[Result, object]:
    opts = RunOptions(**{"iterations": ITER, "cpus": CPUS, "seed": 3, "guard": True, "wait": "hybrid", **ro})
    (tmp / "p.plan").write_bytes(build_plan(sched, opts, tsc_hz()))
    with Runtime(tmp / "p.plan", tmp / "p.out", exit_timeout_s=60) as rt:
        pass
    end = rt.wait()
    return read_result(tmp / "p.out"), end


def test_layouts_agree_with_the_c_structs():
    out = subprocess.run(
        [str(native_bin("jitterscope-pipeline")), "--layout"], capture_output=True, text=True, check=True
    )
    c = json.loads(out.stdout)
    for name, dtype in F.STRUCTS.items():
        assert c[name]["size"] == dtype.itemsize, name
        assert dtype.fields is not None
        for field, where in c[name]["fields"].items():
            assert dtype.fields[field][1] == where["offset"], f"{name}.{field}"
            assert dtype.fields[field][0].itemsize == where["size"], f"{name}.{field}"


@pytest.mark.slow
@pytest.mark.parametrize("pixel,thread_counts", [("int32", (1, 2, 3)), ("float32", (2,))])
def test_every_heuristic_allocator_and_thread_count_is_bit_identical(pixel, thread_counts, tmp_path):
    """Digests of every sink in every iteration equal the numpy reference and a one-thread run; the guard
    (row tags of (buffer, iteration) checked before and after each read) sees no race and no overlap.
    Float images differ only in the kernels' arithmetic, so one thread count covers them."""
    g = graph(pixel)
    want = reference_digests(g, ITER, seed=3)
    single, _ = execute(compile_graph(g, threads=1, split=1, heuristic="fixed", memory="simple"), tmp_path)
    assert np.array_equal(single.digests, want)
    assert len(np.unique(want[:, 0])) == ITER  # every iteration's input differs: a stale read shows
    for threads, heuristic, memory in itertools.product(thread_counts, HEURISTICS, ALLOCATORS):
        sched = compile_graph(g, threads=threads, heuristic=heuristic, memory=memory)
        res, end = execute(sched, tmp_path)
        where = f"{heuristic}+{memory} on {threads} threads"
        assert end.guard_violations == 0, f"{where}: {end.first_violation}"
        assert np.array_equal(res.digests, want), where


def _two_buffers_on_one_range():
    """src feeds both g and a; g's output placed over src's: a then reads what g wrote."""
    g = graph_from_dict(
        {
            "image": {"width": 16, "height": 8},
            "boxes": {
                "src": {"kernel": "source"},
                "g": {"kernel": "gain"},
                "a": {"kernel": "add"},
                "k": {"kernel": "sink"},
            },
            "edges": ["src -> g", "g -> a.in0", "src -> a.in1", "a -> k"],
        }
    )
    s = compile_graph(g, threads=1, split=1, heuristic="fixed", memory="simple")
    src, gain = (next(b.index for b in g.buffers if b.box == n) for n in ("src", "g"))
    s.memory.offsets[gain] = s.memory.offsets[src]
    return s


def test_guard_reports_live_buffers_sharing_memory(tmp_path):
    res, end = execute(_two_buffers_on_one_range(), tmp_path)
    assert end.guard_violations > 0
    assert "holds buffer" in end.first_violation
    assert res.header["guard_violations"] == end.guard_violations


def test_guard_reports_a_missing_signal(tmp_path):
    """Without the source's read-after-write signal, the other thread reads rows not yet written."""
    g = load_graph(ROOT / "examples" / "pipeline" / "appendix.yaml")
    s = compile_graph(g, threads=2, heuristic="fixed", memory="simple")
    names = [x.name for x in s.inst.subboxes]
    drop = next(
        i for i, x in enumerate(s.signals) if x.kind == "RAW" and names[x.src] == "f8.0" and names[x.dst] == "f6.1"
    )
    keep = [i for i in range(len(s.signals)) if i != drop]
    new = {old: new for new, old in enumerate(keep)}
    ops = [[(k, a if k == "E" else new[a]) for k, a in lst if k == "E" or a != drop] for lst in s.ops]
    s.sync = Sync([s.signals[i] for i in keep], ops, s.sync.order)
    _, end = execute(s, tmp_path, iterations=30)
    assert end.guard_violations > 0, "a missing signal went unnoticed"


def test_a_deadlocked_plan_is_reported_by_the_watchdog(tmp_path):
    g = load_graph(ROOT / "examples" / "pipeline" / "appendix.yaml")
    s = compile_graph(g, threads=2, heuristic="fixed", memory="simple")
    ops = [[(k, a) for k, a in lst if k != "S"] for lst in s.ops]  # nobody ever posts
    s.sync = dataclasses.replace(s.sync, ops=ops)
    opts = RunOptions(iterations=5, cpus=CPUS, wait="futex", hang_s=0.3)
    (tmp_path / "p.plan").write_bytes(build_plan(s, opts, tsc_hz()))
    proc = subprocess.run(
        [str(native_bin("jitterscope-pipeline")), "--plan", str(tmp_path / "p.plan"), "--out", str(tmp_path / "p.out")],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr  # what ran is written; the end line says it hung
    assert '"hung": true' in proc.stdout
    assert "warning: hang: no iteration completed" in proc.stderr
    assert "thread 0 waits for signal" in proc.stderr and "0 posted" in proc.stderr
    assert read_result(tmp_path / "p.out").header["flags"] & F.RESULT_HUNG


USER_KERNEL = r"""
#include "js_pipeline_kernel.h"
/* out = xor of the pixel above, itself and below (a 1x3 footprint), then the iteration */
int xor3(const struct js_kernel_call *c) {
    const int *in = c->in[0];
    int *out = c->out[0];
    for (unsigned y = c->row0; y < c->row1; y++)
        for (unsigned x = 0; x < c->width; x++) {
            unsigned up = y ? y - 1 : 0, dn = y + 1 < c->height ? y + 1 : y;
            out[y * c->width + x] = in[up * c->width + x] ^ in[y * c->width + x] ^ in[dn * c->width + x]
                                    ^ (int)c->iteration ^ (int)c->params[0];
        }
    return 0;
}
int fails(const struct js_kernel_call *c) { return c->row0 == 0 ? 7 : 0; }
"""


def _user_graph(tmp: Path, symbol: str = "xor3"):
    src = tmp / "k.c"
    src.write_text(USER_KERNEL)
    lib = tmp / "libk.so"
    subprocess.run(
        [
            "cc",
            "-O2",
            "-fPIC",
            "-shared",
            "-I",
            str(native_bin("jitterscope-pipeline").parents[1]),
            str(src),
            "-o",
            str(lib),
        ],
        check=True,
    )
    return graph_from_dict(
        {
            "image": {"width": 32, "height": 16},
            "boxes": {
                "s": {"kernel": "source"},
                "u": {
                    "kernel": "user",
                    "library": str(lib),
                    "symbol": symbol,
                    "inputs": [{"name": "in", "neighbourhood": [1, 3]}],
                    "outputs": ["out"],
                    "params": [77],
                },
                "k": {"kernel": "sink"},
            },
            "edges": ["s -> u", "u -> k"],
        }
    )


def test_user_kernel_through_the_abi(tmp_path):
    g = _user_graph(tmp_path)
    ref, _ = execute(compile_graph(g, threads=1, split=1, heuristic="fixed", memory="simple"), tmp_path)
    for heuristic in ("simple", "predictable"):
        res, end = execute(compile_graph(g, threads=2, split=4, heuristic=heuristic, memory="reuse"), tmp_path)
        assert end.guard_violations == 0 and np.array_equal(res.digests, ref.digests)


def test_a_failing_user_kernel_stops_the_run_with_its_name(tmp_path):
    g = _user_graph(tmp_path, "fails")
    opts = RunOptions(iterations=3, cpus=CPUS, wait="futex")
    (tmp_path / "p.plan").write_bytes(build_plan(compile_graph(g, threads=1), opts, tsc_hz()))
    proc = subprocess.run(
        [str(native_bin("jitterscope-pipeline")), "--plan", str(tmp_path / "p.plan"), "--out", str(tmp_path / "p.out")],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 1 and "user kernel fails" in proc.stderr and "returned 7" in proc.stderr


def test_runtime_dies_with_its_parent(tmp_path):
    from tests.integration.conftest import assert_dies_with_parent

    g = load_graph(ROOT / "examples" / "pipeline" / "appendix.yaml")
    opts = RunOptions(iterations=10**5, cpus=CPUS, wait="futex", timers=False)
    (tmp_path / "p.plan").write_bytes(build_plan(compile_graph(g, threads=2), opts, tsc_hz()))
    script = (
        f"import subprocess, sys, time\n"
        f"p = subprocess.Popen([{str(native_bin('jitterscope-pipeline'))!r}, '--plan', "
        f"{str(tmp_path / 'p.plan')!r}, '--out', {str(tmp_path / 'p.out')!r}], stdout=subprocess.PIPE)\n"
        f"p.stdout.readline(); print(p.pid, flush=True); time.sleep(60)\n"
    )
    assert_dies_with_parent(script, "the pipeline runtime")


def test_publishes_heartbeats_and_bytes_on_protects_report_page(tmp_path, monkeypatch):
    """Under `jitterscope protect` (JITTERSCOPE_REPORT) the runtime is a critical program with one heartbeat
    per iteration carrying its latency, and a best-effort one counting the bytes its sub-boxes move."""
    from jitterscope.protect.report import ReportPage

    page = ReportPage.create(tmp_path / "page")
    monkeypatch.setenv("JITTERSCOPE_REPORT", str(tmp_path / "page"))
    g = load_graph(ROOT / "examples" / "pipeline" / "appendix.yaml")
    sched = compile_graph(g, threads=2, heuristic="fixed", memory="simple")
    res, _ = execute(sched, tmp_path, iterations=40, guard=False)
    c = page.counters()
    assert c["beats"] == 40 and c["ops"] == 40
    per_iter_written = sum(
        len([a for a in acc if a.write]) * (sub.row1 - sub.row0) * g.row_bytes
        for sub, acc in zip(sched.inst.subboxes, sched.inst.accesses)
    )
    assert c["write_bytes"] == 40 * per_iter_written
    lat = (res.iters["end_tsc"].astype(np.int64) - res.iters["start_tsc"].astype(np.int64)) * 1e9 / tsc_hz()
    beats = np.sort(page._p["beat"]["latency_ns"][:40].astype(np.float64))
    assert np.allclose(beats, np.sort(lat), rtol=1e-6, atol=2)
    page.close()


def test_threads_are_pinned_named_and_stoppable(tmp_path):
    """fixed: thread t on CPU t, named js-pipe/t; simple: every thread on the CPU set; SIGINT stops both
    after the iterations already started, with the result written."""
    g = load_graph(ROOT / "examples" / "pipeline" / "appendix.yaml")
    for heuristic, pinned in (("fixed", True), ("simple", False)):
        sched = compile_graph(g, threads=2, heuristic=heuristic, memory="reuse")
        opts = RunOptions(iterations=10**6, cpus=CPUS, wait="futex", timers=False)
        (tmp_path / "p.plan").write_bytes(build_plan(sched, opts, tsc_hz()))
        with Runtime(tmp_path / "p.plan", tmp_path / "p.out", tmp_path / "beat") as rt:
            for t in rt.threads:
                task = Path(f"/proc/{rt.pid}/task/{t['tid']}")
                assert (task / "comm").read_text().strip() == f"js-pipe/{t['thread']}"
                allowed = next(
                    ln.split(":")[1].strip()
                    for ln in (task / "status").read_text().splitlines()
                    if ln.startswith("Cpus_allowed_list")
                )
                want = str(CPUS[t["thread"] % len(CPUS)]) if pinned else f"{CPUS[0]}-{CPUS[-1]}"
                assert allowed == want, (heuristic, t, allowed)
            deadline = time.monotonic() + 30
            while heartbeat_done(tmp_path / "beat") < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            rt.stop()
        end = rt.wait()
        assert end.interrupted and 0 < end.iterations < 10**6
        assert len(read_result(tmp_path / "p.out").iters) == end.iterations
