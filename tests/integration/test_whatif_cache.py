"""whatif cache: the native simulator on the spec's hand traces (A.8 validation), against the brute-force
reference on random traces, the layout shared with C, a real captured trace, and bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from jitterscope.whatif import cachesim as CS
from tests.integration.conftest import jitterscope
from tests.support import cli_batch
from tests.support.cachesim_ref import RefSim
from tests.support.lanes import spread_priority


def cfg(**kw) -> CS.Config:
    base = dict(
        l1_sets=0,
        l1_ways=0,
        l1_line_shift=0,
        l2_sets=1024,
        l2_ways=4,
        os_sets=256,
        os_ways=4,
        overflow=1,
        flush=0,
        migrate_back=1,
        prefetch_lines=0,
        pin=0,
        pin_pct=95,
        prefetch_pct=90,
        active_mult=256,
        ema_shift=3,
    )
    base.update(kw)
    return CS.Config(**base)


def os_steps(lines: list[int], writes: tuple[int, ...] = ()) -> tuple[CS.Bursts, list[tuple[int, int, int]]]:
    """One kernel access per step, to line n (each its own one-line source), all before the first app access."""
    src = sorted(set(lines))
    idx = {n: i for i, n in enumerate(src)}
    sources = [(n * 64, 1, 1 if n in writes else 0) for n in src]
    b = CS.Bursts(
        np.zeros(len(lines), np.uint64), np.array([idx[n] for n in lines], np.uint32), np.ones(len(lines), np.uint64)
    )
    return b, sources


def app(lines: list[int], write: bool = False) -> np.ndarray:
    return np.array([(n * 64) << 2 | int(write) for n in lines], np.uint64)


def test_layout_matches_the_header():
    assert CS.c_layout() == CS.py_layout()


def test_acceptance_limit_and_probe():
    """A.8 validation 2: OS set 0 overflows into app set 0 until 2 aliens, then refuses; the overflow bit finds L0."""
    b, s = os_steps([0, 1024, 2048, 3072, 4096, 5120, 6144, 0, 2048])
    r = CS.run(cfg(), app([1]), b, s)
    assert r["overflows"] == 2 + 1  # L0, L1024; then L0's return home pushes L3072 out (1 alien left)
    assert r["overflow_rejected"] == 2  # L2048 (step 4), then L4096 when L2048 comes back: 2 aliens there
    assert r["other_hits_os"] == 1  # step 5: L0 found in the app cache
    assert r["misses_os"] == 8  # 4 fills, L4096, L5120, L6144, and L2048 (dropped) again
    assert r["writebacks"] == 0


def test_aliens_go_first():
    """A.8 validation 3: two new app lines in a set with 2 app lines and 2 aliens evict the aliens."""
    b, s = os_steps([0, 1024, 2048, 3072, 4096, 5120])  # aliens L0, L1024 in app set 0
    r = CS.run(cfg(), app([10240, 11264, 12288, 13312, 10240, 11264]), b, s)
    assert r["misses_app"] == 4 and r["home_hits_app"] == 2 and r["app_evicted_by_os"] == 0


def test_dirty_overflow_writes_back_once():
    """A.8 validation 4: written back when it overflows, not again when the alien is dropped."""
    b, s = os_steps([0, 1024, 2048, 3072, 4096], writes=(0,))
    r = CS.run(cfg(), app([10240, 11264, 12288, 13312, 14336]), b, s)  # 5 app lines: the alien L0 goes
    # overflows: L0 (dirty: written back then), and app line 10240 pushed into the OS cache by the 5th
    assert r["overflows"] == 2 and r["writebacks"] == 1


def test_flush_empties_the_os_cache_and_aliens():
    """A.8 validation 5: after the switch back nothing of the kernel is cached and the overflow bits are clear."""
    b, s = os_steps([0, 1024, 2048, 3072, 4096])
    b.pos[:] = 0
    trace = app([1])
    r = CS.run(cfg(flush=1), trace, b, s)
    assert r["flushes"] == 5
    again = CS.Bursts(
        np.concatenate([b.pos, [1]]).astype(np.uint64),
        np.concatenate([b.src, [0]]).astype(np.uint32),
        np.ones(6, np.uint64),
    )
    r2 = CS.run(cfg(flush=1), app([1, 2]), again, s)
    assert r2["misses_os"] == 6 and r2["other_hits_os"] == 0  # L0 is gone from both caches


def test_two_set_two_way_known_sequence():
    """Hand-computed: 2 sets x 2 ways, LRU, write-back; lines 0,2,4 share set 0."""
    trace = np.array([(0 << 8) | 1, 2 << 8, 0 << 8, 4 << 8, 2 << 8, 1 << 8, 0 << 8], np.uint64)
    # 0W miss, 2 miss, 0 hit, 4 miss (evicts 2), 2 miss (evicts dirty 0: write-back), 1 miss (set 1), 0 miss
    r = CS.run(cfg(l2_sets=2, l2_ways=2, os_sets=0), trace, CS.Bursts.none(), [])
    assert (r["misses_app"], r["home_hits_app"], r["writebacks"]) == (6, 1, 1)


def test_prefetch_brings_evicted_active_lines_back():
    rng = np.random.default_rng(3)
    hot = rng.integers(0, 64, 20000)  # app working set: 64 lines of set-covering size
    trace = app(list(hot))
    pos = np.arange(1000, 20000, 1000, dtype=np.uint64)
    b = CS.Bursts(pos, np.zeros(len(pos), np.uint32), np.full(len(pos), 64, np.uint64))
    src = [(1 << 40, 64, 0)]
    plain = CS.run(cfg(l2_sets=16, l2_ways=4, os_sets=0), trace, b, src)
    pf = CS.run(cfg(l2_sets=16, l2_ways=4, os_sets=0, prefetch_lines=256), trace, b, src)
    assert pf["prefetched"] > 0 and pf["prefetch_useful"] > 0
    assert pf["misses_app"] < plain["misses_app"]


@pytest.mark.parametrize("seed", [1, 2])
def test_native_equals_brute_force_on_random_traces(seed):
    rng = np.random.default_rng(seed)
    for _ in range(12):
        c = dict(
            l1_sets=4 if rng.random() < 0.5 else 0,
            l1_ways=2,
            l1_line_shift=5,
            l2_sets=int(rng.choice([2, 4, 8])),
            l2_ways=int(rng.choice([1, 2, 4])),
            os_sets=int(rng.choice([0, 2, 4])),
            os_ways=int(rng.choice([2, 4])),
            overflow=int(rng.random() < 0.7),
            flush=int(rng.random() < 0.5),
            migrate_back=1,
            prefetch_lines=0,
            pin=0,
            pin_pct=95,
            prefetch_pct=90,
            active_mult=256,
            ema_shift=3,
        )
        n = 2000
        words = ((rng.integers(0, 2048, n) << 2) | rng.integers(0, 3, n)).astype(np.uint64)
        sources = [(1 << 40, int(rng.integers(1, 20)), 3), (2 << 40, int(rng.integers(1, 40)), 0)]
        pos, src, ln = np.sort(rng.integers(0, n, 25)), rng.integers(0, 2, 25), rng.integers(1, 30, 25)
        got = CS.run(
            CS.Config(**c),
            words,
            CS.Bursts(pos.astype(np.uint64), src.astype(np.uint32), ln.astype(np.uint64)),
            sources,
        )
        ref = RefSim(c, sources).run([int(x) for x in words], list(zip(pos.tolist(), src.tolist(), ln.tolist())))
        for k in (
            "misses_app",
            "misses_os",
            "home_hits_app",
            "home_hits_os",
            "other_hits_app",
            "other_hits_os",
            "writebacks",
            "overflows",
            "overflow_rejected",
            "app_evicted_by_os",
        ):
            assert got[k] == ref.get(k, 0), (k, c)


# (case, options after the trace, words in the error's line)
BAD_GEOMETRY = [
    ("l2-not-power-of-two", ["--l2", "768KiB,4way"], "power of two"),
    ("l2-no-ways", ["--l2", "1MiB,0way"], "at least 1"),
    ("os-cache-without-ways", ["--os-cache", "64KiB"], "SIZE,WAYS"),
    ("no-kernel", [], "--os-trace RUN"),
]
# also run as `python -m jitterscope`: the real entry point's start-up and exit path
REAL = {"l2-not-power-of-two"}


@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    """This file's refusals through cli.main in one process (tests/support/cli_batch.py), the REAL ones also as
    the real tool beside it, all with a state directory of their own (as a free test's runs are)."""
    tmp = tmp_path_factory.mktemp("refusals")
    t = tmp / "t.npy"
    np.save(t, app([1, 2, 3]))
    cases = [
        (name, ["whatif", "cache", str(t), *(args + (["--os-rate", "1000/s"] if args else []))])
        for name, args, _ in BAD_GEOMETRY
    ]
    (tmp / "t.txt").write_text("not a trace\nat all\n")
    cases.append(("unknown-format", ["whatif", "cache", str(tmp / "t.txt"), "--os-rate", "1000/s"]))
    env = {**os.environ, "JITTERSCOPE_STATE_DIR": str(tmp / "state")}
    with spread_priority():
        return cli_batch.batch_and_real(cases, REAL, tmp, env)


@pytest.mark.parametrize("name", [name for name, _, _ in BAD_GEOMETRY] + [n + cli_batch.REAL for n in sorted(REAL)])
def test_bad_geometry_and_missing_kernel(refusals, name):
    code, stderr, _ = refusals[name]
    msg = {case: msg for case, _, msg in BAD_GEOMETRY}[name.removesuffix(cli_batch.REAL)]
    last = stderr.strip().splitlines()[-1]  # (crash recovery of other commands may print before it)
    assert code == 2 and msg in last and last.startswith("jitterscope: error:"), stderr


def test_unknown_trace_format(refusals):
    code, stderr, _ = refusals["unknown-format"]
    assert code == 2 and "unknown trace format" in stderr


@pytest.mark.slow
def test_captured_trace_of_a_real_program(tmp_path):
    if not shutil.which("valgrind") or not shutil.which("xz"):
        pytest.skip("needs valgrind and xz (apt-get install valgrind xz-utils)")
    data = tmp_path / "small.txt"
    data.write_text("the quick brown fox " * 200)
    out = tmp_path / "xz.npy"
    p = jitterscope(
        "whatif",
        "capture",
        "--out",
        str(out),
        "--max-accesses",
        "2e6",
        "--",
        "xz",
        "-0",
        "-k",
        "-f",
        str(data),
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    info = json.loads((tmp_path / "xz.npy.json").read_text())
    assert info["exit_code"] == 0 and 10_000 < info["accesses"] <= 2_000_000
    assert info["truncated"] == (info["accesses"] == 2_000_000)
    assert subprocess.run(["xz", "-t", f"{data}.xz"]).returncode == 0  # the program really ran
    p = jitterscope(
        "whatif",
        "cache",
        str(out),
        "--os-rate",
        "2000/s",
        "--os-duration",
        "20us",
        "--l2",
        "64KiB,4way",
        "--json",
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["accesses"] == info["accesses"] and r["bursts"] > 0
    assert r["unified"]["app_misses"] >= r["ideal"]["app_misses"] > 0
    assert r["unified"]["extra_misses"] > 0  # the kernel evicts the program's lines
    assert r["remedy"]["vs_ideal"] < r["unified"]["vs_ideal"]  # the OS cache keeps most of them


def test_capture_below_the_limit_is_not_truncated(tmp_path):
    """lackey also prints instruction fetches: a trace that holds every data access is not 'truncated'."""
    if not shutil.which("valgrind"):
        pytest.skip("needs valgrind (apt-get install valgrind)")
    out = tmp_path / "true.npy"
    p = jitterscope("whatif", "capture", "--out", str(out), "--", "true", timeout=300)
    assert p.returncode == 0, p.stderr
    info = json.loads((tmp_path / "true.npy.json").read_text())
    assert 0 < info["accesses"] < info["recorded"] and not info["truncated"], info
    assert "truncated" not in p.stdout
    jitterscope("whatif", "capture", "--out", str(out), "--max-accesses", str(info["accesses"]), "--", "true")
    assert json.loads((tmp_path / "true.npy.json").read_text())["truncated"] is False  # exactly fits


def test_slowdown_counts_the_ideal_runs_own_miss_stalls():
    """A program that misses on most accesses, kernel bursts, and a remedy whose OS cache holds the program's
    evicted lines: the slowdown is (time on that machine - ideal time) / ideal time, the ideal run's own miss
    stalls in both, so a machine that misses less is faster by less than 100% (it once printed -172%)."""
    from jitterscope.whatif import kernel as K
    from jitterscope.whatif.cache import CacheOptions, unified_of, whatif_cache

    rng = np.random.default_rng(7)
    trace = app(rng.integers(0, 6000, 40_000).tolist())  # a working set above the L2: most accesses miss
    remedy = cfg(l2_sets=64, l2_ways=4, os_sets=256, os_ways=4)
    o = CacheOptions(remedy, unified_of(remedy))
    r = whatif_cache(trace, K.synthetic(20_000.0, 40_000.0), o, progress=False)
    ideal_ns = len(trace) * o.access_ns + r["ideal"]["app_misses"] * o.miss_penalty_ns
    assert r["ideal"]["run_ns"] == ideal_ns
    for view in (r["unified"], r["remedy"]):
        t = len(trace) * o.access_ns + view["app_misses"] * o.miss_penalty_ns
        assert view["slowdown"] == pytest.approx((t - ideal_ns) / ideal_ns)
    assert r["remedy"]["vs_ideal"] < 0 and -1 < r["remedy"]["slowdown"] < 0, r["remedy"]  # fewer misses: faster
