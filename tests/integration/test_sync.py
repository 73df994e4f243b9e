"""`jitterscope sync` on small C programs with known synchronisation (goldens), bad input, real programs.

Delays in the goldens are made by a SCHED_FIFO thread of the program keeping
its CPU after releasing a waiter (syncgold.c), so they hold on a loaded
machine; the tolerances allow the VM's wake-up latency (tens of us) and load.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from jitterscope.native_bin import native_bin
from jitterscope.sync import records as R
from tests.integration.conftest import jitterscope, needs_tracing, tracing_reason
from tests.integration.machine import in_namespace, js, needs_namespace
from tests.support import svg

SRC = Path(__file__).parent / "sync_programs" / "syncgold.c"
US = 1000
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (SCHED_FIFO in the golden programs)")


@pytest.fixture(scope="module")
def gold(tmp_path_factory) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("gold") / "syncgold"
    subprocess.run([cc, "-O2", "-g", "-pthread", "-o", str(out), str(SRC)], check=True)
    return str(out)


@pytest.fixture(scope="module")
def hold40(gold, tmp_path_factory) -> Path:
    """40 rounds of "hold" (the holder keeps the mutex 200 us, then releases at once), at N = 20 us: the
    waits test and the compare base share it (a sync run costs seconds of start-up on a busy machine)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (SCHED_FIFO in the golden programs)")
    tmp = tmp_path_factory.mktemp("hold")
    return sync(tmp, gold, "hold", str(cpu()), "40", opts=("--no-trace", "--threshold", "20us"), name="hold")[1]


def cpu() -> int:
    from jitterscope.sysinfo import online_cpus

    return online_cpus()[-1]


def sync(tmp_path: Path, *cmd: str, opts: tuple[str, ...] = ("--no-trace",), name: str = "run") -> tuple[dict, Path]:
    out = tmp_path / name
    p = jitterscope("sync", "--json", "--no-report", "--out", str(out), *opts, "--", *cmd, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), out


def intervals(run: Path, typ: str) -> list[dict]:
    return [r for r in pq.read_table(run / "jitter.parquet").to_pylist() if r["type"] == typ]


def test_layout_matches_the_library():
    c = R.c_layout(native_bin(R.LIBRARY))
    assert c["version"] == R.VERSION and c["complete"] == R.FLAG_COMPLETE
    for name, dtype in R.STRUCTS.items():
        assert c["structs"][name]["size"] == dtype.itemsize, name
        assert c["structs"][name]["fields"] == R.layout(dtype), name


@root_only
def test_lock_unlock_golden(gold, tmp_path):
    s, run = sync(tmp_path, gold, "lu", str(cpu()), "4")
    lu = intervals(run, "lu")
    assert len(lu) == 4, lu  # one per round
    for r in lu:  # the holder keeps the CPU 200 us after unlocking
        assert 195 * US <= r["t_ns"] <= 5000 * US, r
        assert r["jitter_ns"] == r["t_ns"] - 10 * US  # excess mode, N = 10 us
    # lu's share is of all sync jitter; the rest is the main thread's join wait (jw), which a busy machine
    # lengthens as it likes (0.06-0.10 of it here quiet, 0.10 under a CPU hog): the share is lu's sum over it
    types = s["types"]
    assert types["lu"]["count"] == 4 and types["lu"]["jitter_ns"] == sum(r["jitter_ns"] for r in lu)
    sync_ns = sum(t["jitter_ns"] for k, t in types.items() if k not in ("hd", "ns"))
    assert types["lu"]["share"] == pytest.approx(types["lu"]["jitter_ns"] / sync_ns)


@root_only
def test_holder_keeping_the_mutex_is_a_wait_not_lu(hold40):
    # the main thread's pthread_join is a wait too when the worker has not exited yet (a loaded run)
    waits = [w for w in pq.read_table(hold40 / "waits.parquet").to_pylist() if w["op"] != "join"]
    assert len(waits) == 40 and all(w["releaser_tid"] for w in waits)
    for w in waits:  # blocked while the holder held it 200 us more
        assert w["release_ns"] - w["enter_ns"] >= 195 * US


@root_only
def test_signal_wait_golden_and_whole_mode(gold, tmp_path):
    s, run = sync(tmp_path, gold, "sw", str(cpu()), "3", opts=("--no-trace", "--mode", "whole"))
    sw = intervals(run, "sw")
    assert len(sw) == 3
    for r in sw:
        assert 95 * US <= r["t_ns"] <= 5000 * US and r["jitter_ns"] == r["t_ns"]  # whole mode books T
    assert s["run"]["mode"] == "whole" and len(intervals(run, "s")) == 3


@root_only
def test_broadcast_to_two_waiters(gold, tmp_path):
    _, run = sync(tmp_path, gold, "bw", str(cpu()), "2")
    bw = intervals(run, "bw")
    assert len(bw) == 4 and len({r["tid"] for r in bw}) == 2  # 2 rounds x 2 waiters
    assert all(145 * US <= r["t_ns"] <= 5000 * US for r in bw)
    assert len(intervals(run, "b")) == 2


def test_barrier_last_arriver(gold, tmp_path):
    s, run = sync(tmp_path, gold, "barrier", "0", "3")
    barw = intervals(run, "barw")
    assert len(barw) == 6 and len(intervals(run, "bar")) == 3
    threads = pq.read_table(run / "threads.parquet").to_pylist()
    # Each round is released by the one thread not waiting in it: the late one, which spins 300 us once both
    # others are asleep in the barrier.
    tids = {r["tid"] for r in threads}
    for k in range(0, 6, 2):
        rnd = barw[k : k + 2]
        (releaser,) = {r["releaser_tid"] for r in rnd}
        assert releaser in tids and releaser not in {r["tid"] for r in rnd}, rnd
    waits = pq.read_table(run / "waits.parquet").to_pylist()
    held = sorted(w["release_ns"] - w["enter_ns"] for w in waits if w["tid"] != releaser and "barrier" in w["op"])
    assert len(held) == 6 and held[0] >= 300 * US, held  # the others waited at least the late thread's 300 us
    assert len(threads) == 3


@root_only
def test_create_join_max_on_join(gold, tmp_path):
    s, run = sync(tmp_path, gold, "tree", str(cpu()))
    sw = sorted(intervals(run, "sw"), key=lambda r: r["t_ns"])
    assert len(sw) == 2 and 45 * US <= sw[0]["t_ns"] and 195 * US <= sw[1]["t_ns"]
    counters = s["critical_path"]["counter_jitter_ns"]
    total = sum(r["jitter_ns"] for r in pq.read_table(run / "jitter.parquet").to_pylist())
    # the main thread takes the larger child's count, not the sum of both: the sum would be `total`
    # (every thread's jitter ends up in main); the max leaves out at least the smaller child's sw
    # (other jitter a loaded machine adds to either branch only moves which one is larger)
    assert counters >= sw[1]["jitter_ns"]
    assert counters <= total - sw[0]["jitter_ns"], (counters, total, sw)


def test_exit_code_is_the_programs(gold, tmp_path):
    p = jitterscope("sync", "--no-trace", "--no-report", "--out", str(tmp_path / "r"), "--", gold, "exit7")
    assert p.returncode == 7 and "exit code 7" in p.stderr
    assert (tmp_path / "r" / "summary.json").exists()
    # a program with no waits: the summary (stderr: stdout is CMD's) says why nothing was fitted, and prints no
    # statistics of no subframe
    assert "Distribution: not fitted: only 0 events; fitting needs at least 20" in p.stderr, p.stderr
    assert "p99 0 ns" not in p.stderr


def test_crash_keeps_the_data(gold, tmp_path):
    p = jitterscope("sync", "--no-trace", "--no-report", "--out", str(tmp_path / "r"), "--", gold, "crash", "0")
    assert p.returncode == 128 + 11, p.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["types"]["sw"]["intervals"] == 1  # the wait before the crash is kept


def test_fork_is_followed(gold, tmp_path):
    s, run = sync(tmp_path, gold, "fork", "0")
    assert s["processes"] == 2 and s["types"]["sw"]["intervals"] == 1


def test_frames(gold, tmp_path):
    s, run = sync(tmp_path, gold, "frames", "20")
    assert s["frames"]["count"] == 20
    assert 0.9e6 <= s["frames"]["time"]["p50_ns"] <= 5e6


@pytest.mark.free
@pytest.mark.parametrize("cmd, msg", [(["/nonexistent/prog"], "command not found"), ([], "no command")])
def test_bad_command(tmp_path, cmd, msg):
    p = jitterscope("sync", "--out", str(tmp_path / "r"), "--", *cmd)
    assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.free
def test_static_program_is_refused(tmp_path):
    cc = shutil.which("cc")
    src = tmp_path / "s.c"
    src.write_text("int main(void){return 0;}\n")
    if not cc or subprocess.run([cc, "-static", "-o", str(tmp_path / "s"), str(src)]).returncode != 0:
        pytest.skip("no static libc to build a static program")
    p = jitterscope("sync", "--out", str(tmp_path / "r"), "--", str(tmp_path / "s"))
    assert p.returncode == 2 and "statically linked" in p.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
@needs_tracing
@root_only
def test_injected_noise_on_the_holder_is_the_cause(gold, tmp_path):
    """A FIFO 80 holder spins 20 ms with the mutex on the last CPU (so only the injector, FIFO 90,
    interrupts and the kernel's stop/migration threads can take that CPU from it, not other tests'
    FIFO threads); the injector takes it 2 ms every 7 ms; the waiter waits on another CPU.  The holder
    delay is the injector's (>= 90 % of it), and its length is the injector's busy time inside the waits
    (the injector's own record of its busy intervals, --truth)."""
    from jitterscope.measure.inject import Injector, read_truth

    c = cpu()
    truth = tmp_path / "truth.csv"
    # the injector is running once the block is entered
    with Injector(c, 7e6, 2e6, name="js-sync-inj", policy="fifo", priority=90, truth_path=truth):
        s, run = sync(tmp_path, gold, "holdlong", str(c), "20", "5", opts=())
    hd = intervals(run, "hd")
    assert len(hd) >= 3, hd  # one per contended round (a waiter kept off its CPU > 20 ms by load misses one)
    causes = pq.read_table(run / "causes.parquet").to_pylist()
    ids = {r["id"] for r in hd}
    mine = [x for x in causes if x["jitter"] in ids]
    total = sum(x["ns"] for x in mine)
    inj_ns = sum(x["ns"] for x in mine if x["name"] == "js-sync-inj")
    assert total > 0 and inj_ns / total >= 0.9, sorted({(x["name"], x["ns"]) for x in mine})
    assert s["types"]["hd"]["causes"][0]["name"] == "js-sync-inj"
    meta = json.loads((run / "meta.json").read_text())
    t = read_truth(truth)  # busy intervals in TSC -> ns since the run's t0
    to_ns = 1e9 / meta["tsc_hz"]
    spans = list(zip((t.start_tsc - meta["t0_tsc"]) * to_ns, (t.end_tsc - meta["t0_tsc"]) * to_ns))
    busy = sum(max(0.0, min(e, r["end_ns"]) - max(b, r["start_ns"])) for b, e in spans for r in hd)
    # On the morning of 2026-11-23 the booked time came out at 0.73-0.87 of the injector's record in every
    # run; since the parser repairs context switches the kernel did not record (meta tracing.missed_switches)
    # it is 1.00-1.02 per round in 5 of 5 runs.  The lower bound stays wide until a busy host confirms it;
    # it still catches the booking exceeding the truth or losing most of it.
    assert meta["tracing"]["missed_switches"] >= 0
    assert 0.6 * busy <= inj_ns <= 1.1 * busy, (inj_ns, busy)


@pytest.mark.slow
@pytest.mark.parametrize(
    "prog, args, out",
    [
        ("xz", ["-T2", "-k", "-f", "-3"], ".xz"),
        ("zstd", ["-T2", "-k", "-f", "-q", "-3"], ".zst"),
        ("pigz", ["-p", "2", "-k", "-f"], ".gz"),
    ],
)
def test_real_programs_output_identical(tmp_path, prog, args, out):
    if not shutil.which(prog):
        pytest.skip(f"{prog} not installed (make packages installs it with apt)")
    data = tmp_path / "data.bin"
    rnd = os.urandom(1 << 20)
    data.write_bytes((rnd + bytes(range(256)) * 4096) * 6)  # ~13 MB, half compressible
    subprocess.run([prog, *args, str(data)], check=True)
    ref = (tmp_path / f"data.bin{out}").read_bytes()
    (tmp_path / f"data.bin{out}").unlink()
    s, run = sync(tmp_path, prog, *args, str(data), opts=() if tracing_reason() is None else ("--no-trace",))
    assert (tmp_path / f"data.bin{out}").read_bytes() == ref
    assert s["threads"] >= 2 and s["run"]["exit_code"] == 0
    assert set(s["types"]) >= {"lu", "sw", "bw", "barw"}


def test_frame_api_from_python(tmp_path):
    lib = ctypes.CDLL(str(native_bin(R.LIBRARY)))
    lib.jitterscope_sync_frame(ctypes.c_uint64(1))  # without JS_SYNC_DIR: a no-op, no crash
    prog = tmp_path / "frames.py"
    prog.write_text(
        "import time\nfrom jitterscope.sync import frames\nfor i in range(6):\n    frames.mark(i)\n"
        "    time.sleep(0.002)\nframes.mark(6)\n"
    )
    subprocess.run([sys.executable, str(prog)], check=True)  # on its own: marks do nothing
    s, _ = sync(tmp_path, sys.executable, str(prog))
    assert s["frames"]["count"] == 6 and s["frames"]["time"]["p50_ns"] >= 2e6


@pytest.mark.slow
@root_only
def test_report_perfetto_and_compare(gold, hold40, tmp_path):
    """One traced run of 40 rounds (report on) gives the HTML page, a Perfetto timeline of threads, waits and
    kernel causes, and compares equal with itself; against the same waits with the holder releasing at once
    ("hold": lu of a wake-up, a few us), its 200 us lock-unlock intervals are a regression."""
    traced = () if tracing_reason() is None else ("--no-trace",)
    run = tmp_path / "lu"
    p = jitterscope("sync", "--out", str(run), *traced, "--", gold, "lu", str(cpu()), "40", timeout=120)
    assert p.returncode == 0, p.stderr
    html = (run / "report.html").read_text()
    assert 'data-figure="timeline"' in html and 'data-figure="types"' in html and "lu lock-unlock" in html
    # times in units, as the terminal says them (a new user saw "N = 10,000 ns" and "bw 45,617,055 ns" there)
    assert re.search(r"N = [\d.]+\s(ns|us|ms)\b", html) and not re.search(r"\d,\d{3} ns", html), html[:2000]
    assert svg.read(run / "report-timeline.svg").shows("ms since the program started")

    out = tmp_path / "lu.json"
    assert jitterscope("export", str(run), "-f", "perfetto", "-o", str(out)).returncode == 0
    ev = json.loads(out.read_text())["traceEvents"]
    # the main thread's pthread_join is a wait too when the worker has not exited yet (timing decides)
    joins = [e for e in ev if e.get("cat") == "wait" and e["name"].startswith("wait join")]
    waits = [e for e in ev if e.get("cat") == "wait" and e not in joins]
    lu = [e for e in ev if e.get("cat") == "jitter" and e["args"]["type"] == "lock-unlock"]
    assert len(waits) == 40 and len(lu) == 40 and len(joins) <= 1
    for j in lu:  # each lu sits inside its wait, on the waiter's track
        assert any(
            w["tid"] == j["tid"] and w["ts"] <= j["ts"] and j["ts"] + j["dur"] <= w["ts"] + w["dur"] + 0.002
            for w in waits
        )
    arrows = 40 + sum(j["args"]["releaser_tid"] is not None for j in joins)  # release -> wait arrows
    assert sum(e["ph"] == "s" for e in ev) == sum(e["ph"] == "f" for e in ev) == arrows
    if not traced:  # what ran on the CPUs during the jitter
        assert any(e.get("args", {}).get("name") == "kernel (per CPU)" for e in ev)
        assert any(e["ph"] == "X" and e["pid"] == lu[0]["pid"] for e in ev)
    assert jitterscope("export", str(run), "-f", "csv", "-o", str(tmp_path / "x.csv")).returncode == 2

    same = jitterscope("compare", str(run), str(run), "--json", "--fail-on-regression")
    assert same.returncode == 0, same.stderr
    res = json.loads(same.stdout)
    assert res["kind"] == "sync" and not res["regression"] and res["total"]["ratio"] == 1.0

    # 40 rounds a side: with 12, a busy host's few contended hold rounds left q near 0.03 (alpha is 0.01)
    worse = jitterscope("compare", str(hold40), str(run), "--fail-on-regression")
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "REGRESSION: " in worse.stdout and "lu" in worse.stdout.split("REGRESSION: ")[1]
    assert "re-thresholded at N = 20000 ns" in worse.stdout


@pytest.mark.slow
@root_only
def test_killed_jitterscope_then_restore_and_analyze(gold, tmp_path):
    """kill -9 of jitterscope while CMD runs: CMD runs on to its end, `restore` leaves nothing changed,
    `analyze` finishes the run from sync-raw/ (and the trace) and says what it could not recover."""
    run = tmp_path / "run"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jitterscope",
            "sync",
            "--no-report",
            "--out",
            str(run),
            "--",
            gold,
            "holdlong",
            str(cpu()),
            "20",
            "10",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not list((run / "sync-raw").glob("sync-*.raw")) and time.monotonic() < deadline:
        time.sleep(0.05)
    raw = list((run / "sync-raw").glob("sync-*.raw"))
    assert raw, "CMD never started"
    p.kill()
    p.wait()
    prog = Path(f"/proc/{raw[0].name.split('-')[1]}")
    while prog.exists() and time.monotonic() < deadline:  # CMD is not ours to kill: it runs to its end
        time.sleep(0.05)
    assert jitterscope("restore").returncode == 0
    instances = Path("/sys/kernel/tracing/instances")
    assert not instances.is_dir() or not [d for d in instances.iterdir() if d.name == f"jitterscope-{p.pid}"]
    a = jitterscope("analyze", str(run), "--json")
    assert a.returncode == 0, a.stderr
    s = json.loads(a.stdout)
    assert s["run"]["exit_code"] is None and s["waits"] >= 5 and s["types"]["lu"]["intervals"] >= 5
    meta = json.loads((run / "meta.json").read_text())
    assert "exit code" in " ".join(meta["recovered"]["missing"])
    if meta["tracing"]["enabled"]:  # the trace completed offline as a killed measure's: symbols, comms, reader
        assert (run / "trace" / "symbols.txt").exists() and (run / "trace" / "comms.txt").exists()
        assert meta["tracing"]["reader"]["ended"] == "parent_gone"
        assert "the trace's stop marker" in " ".join(meta["recovered"]["missing"])


@needs_tracing
@root_only
def test_the_runs_own_threads_and_processes_are_known_by_id(gold, tmp_path):
    """The trace covers every CPU CMD may use, so it holds this jitterscope's own threads and processes
    too: its warm-up thread, fit process and trace reader were named `(another jitterscope)` (42% of
    non-sync jitter on xz) as only the main thread was known.  Their ids are kept before CMD starts, for
    `analyze` as well, and only in the raw metadata."""
    _, run = sync(tmp_path, gold, "hold", str(cpu()), "5", opts=())
    own = set(json.loads((run / "sync-raw" / "meta.json").read_text())["own_tids"])
    session = json.loads((run / "trace" / "session.json").read_text())
    assert {session["pid"], session["reader_pid"]} <= own and len(own) > 3, own  # + warm-up, fit process
    meta = json.loads((run / "meta.json").read_text())
    assert "own_tids" not in meta
    threads = {r["tid"] for r in pq.read_table(run / "threads.parquet").to_pylist()}
    assert not own & threads
    # the trace reader's cost and density, as in a measure run's meta.json (issue 24: reported for every capture)
    reader = meta["tracing"]["reader"]
    assert reader["ended"] == "stop" and reader["events"] == meta["tracing"]["events"] > 0
    assert reader["cpu_s_per_m_events"] >= 0 and reader["bytes_per_event"] > 0


@needs_namespace
@needs_tracing
@root_only
def test_disk_full_keeps_the_run_and_analyze_says_the_trace_is_lost(gold, tmp_path):
    """A sync run whose disk fills while CMD runs: one line naming `jitterscope analyze`, the raw logs kept;
    rebuilt with space again, it does not claim a trace it could not keep (issue 23)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    run = disk / "run"
    script = (
        f"mount -t tmpfs -o size=8m jitterscope-test {disk} || exit 97\n"
        f"{js('sync', '--no-report', '--out', str(run), '--', gold, 'frames', '1500')} > /dev/null "
        f"2> {tmp_path}/sync.err & pid=$!\n"
        f"for i in $(seq 600); do ls {run}/sync-raw/sync-*.raw > /dev/null 2>&1 && break; sleep 0.1; done\n"
        f"dd if=/dev/zero of={disk}/filler bs=64k 2> /dev/null\n"
        f'wait $pid; echo "sync-rc=$?" >&2\n'
        f"rm -f {disk}/filler\n"
        f"{js('analyze', '--no-report', str(run))} > /dev/null || exit 3\n"
        f"cp -r {run} {tmp_path / 'kept'}\n"
    )
    proc = in_namespace(script, tracefs="theirs")
    err = (tmp_path / "sync.err").read_text()
    assert proc.returncode == 0 and "sync-rc=2" in proc.stderr, proc.stderr + err
    lines = [ln for ln in err.splitlines() if ln.startswith("jitterscope: error")]
    assert len(lines) == 1 and "disk full" in lines[0] and f"jitterscope analyze {run}" in lines[0], err
    meta = json.loads((tmp_path / "kept" / "meta.json").read_text())
    pages = sum(p.stat().st_size for p in (tmp_path / "kept" / "trace").glob("cpu*.raw"))
    # tracing enabled only with pages kept, and a trace kept without its statistics says so
    assert meta["tracing"]["enabled"] == (pages > 0), (meta["tracing"], pages)
    missing = " ".join(meta["recovered"]["missing"])
    assert meta["tracing"]["enabled"] or "kernel trace" in missing, meta
    if pages and not (tmp_path / "kept" / "trace" / "stats.json").exists():
        assert "ring-buffer statistics" in missing, meta
