"""The peer benchmark's reading of oslat's JSON histogram (benchmarks/bench_peers.py)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "bench_peers.py"


def bench():
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_peers", BENCH)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_peers"] = mod  # its dataclasses resolve their module
    spec.loader.exec_module(mod)
    return mod


def oslat(hist: dict[int, int], max_us: int, seconds: float = 1.0) -> dict:
    return {
        "thread": {
            "0": {"cpu": 1, "max": max_us, "duration": seconds, "histogram": {str(k): v for k, v in hist.items()}}
        }
    }


def test_detours_are_buckets_from_two_us_and_p99_is_a_bucket() -> None:
    # 1000 detours: 990 in (1, 2] us, 10 in (4, 5] us; bucket 1 is the loop itself
    r = bench().oslat_reading(oslat({1: 5_000_000, 2: 990, 5: 10}, 5), 1)
    assert r.detours == 1000 and r.per_s == 1000
    assert r.p99_ns == (1000, 2000)  # the 990th is in (1, 2] us
    assert r.noise == pytest.approx(((990 * 1 + 10 * 4) * 1e3 / 1e9, (990 * 2 + 10 * 5) * 1e3 / 1e9))


def test_overflowed_detours_make_ranges_bounded_by_max_and_duration() -> None:
    b = bench()
    r = b.oslat_reading(oslat({1: 10, 2: 98, b.OSLAT_BUCKETS: 2}, 400_000), 1)
    assert r.detours == 100
    assert r.p99_ns == ((b.OSLAT_BUCKETS - 1) * 1000, 400_000_000)  # rank 99 is an overflowed one
    assert r.noise[0] == pytest.approx((98 * 1000 + 2 * (b.OSLAT_BUCKETS - 1) * 1000) / 1e9)
    assert r.noise[1] == pytest.approx((98 * 2000 + 2 * 400e6) / 1e9)  # each overflowed one at most the max
    # two of at most 900 ms each cannot exceed what the 1 s run leaves
    long = b.oslat_reading(oslat({1: 10, 2: 98, b.OSLAT_BUCKETS: 2}, 900_000), 1)
    assert long.noise[1] == 1.0


@pytest.mark.parametrize(("k", "n"), [(1, 2), (3, 4), (5, 10), (4, 6)])
def test_false_failure_rate_counts_every_ordering(k: int, n: int) -> None:
    # every placement of our k runs among the k + n ranks is equally likely
    misses = total = 0
    for ours in itertools.combinations(range(k + n), k):
        total += 1
        median = sorted(ours)[k // 2]
        peers = [i for i in range(k + n) if i not in ours]
        misses += not (min(peers) <= median <= max(peers))
    assert bench().false_failure(k, n) == pytest.approx(misses / total)
