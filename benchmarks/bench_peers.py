"""jitterscope measure against the field's probes, sysjitter and oslat, on the same CPU.

The three run one after another on the highest CPU, ROUNDS times, the order
rotated each round so none always follows the same neighbour.  From each run:
detours above 1 us (count and per second), noise share (time in them / time
measured) and the p99 of their durations.  Target: the median of our runs falls
within the peers' run-to-run spread (the lowest to the highest value any peer
run gave) for each figure; with 5 rounds (5 of ours, 10 of theirs) that misses by
chance 4.4% of the time when all three measure alike.  On a shared machine the
spread is wide, and a probe that missed or invented detours, or mis-timed them,
still falls out of it.

Peers: sysjitter v1.4 built from ../shared/peers/sysjitter-src.tar.gz in a
temporary directory; oslat from Debian's rt-tests (`make packages`).  oslat keeps
a 1 us histogram of loop times (bucket k holds (k-1, k] us) up to 1024 us, with
longer ones in its last bucket: its detours above 1 us are buckets >= 2, and a
p99 or noise share that needs the overflowed ones is a range (bounded by the
bucket edge below and its maximum above).  Needs root (oslat and `measure`'s
tracing); exits 4 with "not run: why" when a peer cannot be built or run (benchlib).
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from benchlib import Bench  # noqa: E402

from jitterscope.sysinfo import online_cpus  # noqa: E402

HEADING = "## Probe peers"
# ../shared/peers beside the checkout (or beside the directory holding worktrees); JITTERSCOPE_PEERS overrides
PEER_DIRS = [Path(os.environ["JITTERSCOPE_PEERS"])] if os.environ.get("JITTERSCOPE_PEERS") else []
PEER_DIRS += [ROOT.parent / "shared" / "peers", ROOT.parent.parent / "shared" / "peers"]
ROUNDS = int(os.environ.get("BENCH_PEERS_ROUNDS", "5"))  # 5: a false failure 4.4% of the time (false_failure)
SECONDS = int(os.environ.get("BENCH_PEERS_SECONDS", "5"))
THRESHOLD_NS = 1000
OSLAT_BUCKETS = 1024


@dataclass
class Reading:
    """One run of one tool; a figure is a (low, high) range, equal ends when exact."""

    tool: str
    round: int
    seconds: float
    detours: int
    noise: tuple[float, float]  # share of the time measured, 0-1
    p99_ns: tuple[float, float]

    @property
    def per_s(self) -> float:
        return self.detours / self.seconds if self.seconds else 0.0


class NotRun(Exception):
    """A peer cannot be built or run here; the message says why."""


def build_sysjitter(tmp: Path) -> Path:
    src_tar = next((d / "sysjitter-src.tar.gz" for d in PEER_DIRS if (d / "sysjitter-src.tar.gz").exists()), None)
    if src_tar is None:
        raise NotRun(f"sysjitter-src.tar.gz not in {', '.join(map(str, PEER_DIRS))} (set JITTERSCOPE_PEERS)")
    if shutil.which("cc") is None or shutil.which("make") is None:
        raise NotRun("sysjitter needs cc and make to build")
    with tarfile.open(src_tar) as tar:
        tar.extractall(tmp, filter="data")
    src = next(p.parent for p in tmp.rglob("sysjitter.c"))
    p = subprocess.run(["make", "-C", str(src)], capture_output=True, text=True)
    if p.returncode != 0 or not (src / "sysjitter").exists():
        raise NotRun(f"sysjitter did not build: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return src / "sysjitter"


def run_sysjitter(binary: Path, cpu: int, rnd: int) -> Reading:
    p = subprocess.run(
        [str(binary), "--runtime", str(SECONDS), "--cores", str(cpu), str(THRESHOLD_NS)],
        capture_output=True,
        text=True,
        timeout=SECONDS + 60,
    )
    if p.returncode != 0:
        raise NotRun(f"sysjitter failed: {p.stderr.strip()}")
    f = {k.strip(): v.split()[0] for k, v in (line.split(":", 1) for line in p.stdout.splitlines() if ":" in line)}
    seconds = int(f["runtime(ns)"]) / 1e9
    p99 = float(f["int_99(ns)"]) if int(f["int_n"]) else 0.0
    noise = int(f["int_total(ns)"]) / int(f["runtime(ns)"])
    return Reading("sysjitter", rnd, seconds, int(f["int_n"]), (noise, noise), (p99, p99))


def oslat_reading(result: dict, rnd: int) -> Reading:
    """Detours, noise share and p99 from oslat's JSON histogram (see the module docstring)."""
    t = next(iter(result["thread"].values()))
    hist = {int(k): int(v) for k, v in t["histogram"].items()}
    seconds = float(t["duration"])
    last = max(hist) if hist else 0
    overflow = hist.get(OSLAT_BUCKETS, 0) if last >= OSLAT_BUCKETS else 0
    above = sorted((k, n) for k, n in hist.items() if k >= 2 and n)
    detours = sum(n for _, n in above)
    # each detour lies in (k-1, k] us; overflowed ones in (1023 us, max]
    exact = [(k, n) for k, n in above if not (overflow and k == OSLAT_BUCKETS)]
    lo = sum((k - 1) * 1000 * n for k, n in exact) + overflow * (OSLAT_BUCKETS - 1) * 1000
    # the overflowed ones last at most their maximum each, and together at most what the run's
    # duration leaves once the others take their least
    rest = seconds * 1e9 - sum((k - 1) * 1000 * n for k, n in exact)
    hi = sum(k * 1000 * n for k, n in exact) + min(overflow * float(t["max"]) * 1000, max(rest, 0.0))
    hi = min(hi, seconds * 1e9)  # detours cannot outlast the run
    noise = (lo / (seconds * 1e9), hi / (seconds * 1e9))
    p99: tuple[float, float] = (0.0, 0.0)
    if detours:
        rank = math.ceil(0.99 * detours)
        seen = 0
        for k, n in above:
            seen += n
            if seen >= rank:
                p99 = (
                    ((OSLAT_BUCKETS - 1) * 1000, float(t["max"]) * 1000)
                    if overflow and k == OSLAT_BUCKETS
                    else (
                        (k - 1) * 1000,
                        k * 1000,
                    )
                )
                break
    return Reading("oslat", rnd, seconds, detours, noise, p99)


def run_oslat(cpu: int, rnd: int, tmp: Path) -> Reading:
    out = tmp / f"oslat-{rnd}.json"
    main = next((c for c in online_cpus() if c != cpu), cpu)
    p = subprocess.run(
        ["oslat", "-c", str(cpu), "-C", str(main), "-D", str(SECONDS), "-q", "-b", str(OSLAT_BUCKETS), f"--json={out}"],
        capture_output=True,
        text=True,
        timeout=SECONDS + 60,
    )
    if p.returncode != 0 or not out.exists():
        raise NotRun(f"oslat failed: {(p.stderr.strip().splitlines() or [f'exit {p.returncode}'])[-1]}")
    return oslat_reading(json.loads(out.read_text()), rnd)


def run_ours(cpu: int, rnd: int, tmp: Path) -> Reading:
    out = tmp / f"run-{rnd}"
    p = subprocess.run(
        [sys.executable, "-m", "jitterscope", "measure", "--cpus", str(cpu), "--duration", f"{SECONDS}s"]
        + ["--threshold", f"{THRESHOLD_NS}ns", "--out", str(out), "--no-report", "--json"],
        capture_output=True,
        text=True,
        timeout=SECONDS + 120,
    )
    if p.returncode != 0:
        raise NotRun(f"jitterscope measure failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    s = json.loads(p.stdout)
    c = s["cpus"][str(cpu)]
    share = c["noise_ppm"] / 1e6
    return Reading("jitterscope", rnd, s["run"]["duration_s"], c["detours"], (share, share), (c["p99_ns"], c["p99_ns"]))


def fmt_range(r: tuple[float, float], f) -> str:
    return f(r[0]) if r[0] == r[1] else f"{f(r[0])}-{f(r[1])}"


def us(ns: float) -> str:
    return "inf" if math.isinf(ns) else f"{ns / 1000:.1f} us"


def pct(x: float) -> str:
    return f"{x * 100:.2f}%"


def within(ours: list[Reading], peers: list[Reading], key, fmt) -> tuple[bool, str]:
    """Whether the median of our runs lies within the peers' spread (lowest low to highest high)."""
    lo = min(key(r)[0] for r in peers)
    hi = max(key(r)[1] for r in peers)
    mid = sorted(ours, key=lambda r: key(r)[0])[len(ours) // 2]
    ok = lo <= key(mid)[0] and key(mid)[1] <= hi
    return ok, f"median {fmt(key(mid)[0])} in [{fmt(lo)}, {fmt(hi)}]"


def false_failure(k: int, n: int) -> float:
    """Chance the median of k runs (the upper one when k is even, as `within` takes it) falls outside
    the range of n other runs when all k + n come from one distribution (exchangeable): the
    k // 2 + 1 lowest, or the k - k // 2 highest, of all k + n are all ours."""
    low, high = k // 2 + 1, k - k // 2
    return math.comb(k, low) / math.comb(k + n, low) + math.comb(k, high) / math.comb(k + n, high)


def main() -> int:
    bench = Bench("peers", HEADING)
    bench.require(os.geteuid() == 0, "needs root (oslat's and jitterscope measure's tracing)")
    bench.require(shutil.which("oslat") is not None, "oslat not installed (Debian rt-tests; `make packages`)")
    cpu = online_cpus()[-1]
    readings: list[Reading] = []
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp_s:
        tmp = Path(tmp_s)
        try:
            sysjitter = build_sysjitter(tmp)
            tools = [
                lambda r: run_sysjitter(sysjitter, cpu, r),
                lambda r: run_oslat(cpu, r, tmp),
                lambda r: run_ours(cpu, r, tmp),
            ]
            for rnd in range(1, ROUNDS + 1):
                k = (rnd - 1) % len(tools)
                for run in tools[k:] + tools[:k]:
                    readings.append(run(rnd))
                    print(f"  round {rnd}: {readings[-1].tool} done", flush=True)
        except NotRun as why:
            bench.not_run(str(why))
    ours = [r for r in readings if r.tool == "jitterscope"]
    peers = [r for r in readings if r.tool != "jitterscope"]
    rows = "\n".join(
        f"| {r.round} | {r.tool} | {r.detours:,} | {r.per_s:,.0f} | {fmt_range(r.noise, pct)} | "
        f"{fmt_range(r.p99_ns, us)} |"
        for r in sorted(readings, key=lambda r: (r.round, r.tool))
    )
    checks = []
    for label, key, fmt in (
        ("detours above 1 us per second", lambda r: (r.per_s, r.per_s), lambda x: f"{x:,.0f}"),
        ("noise share", lambda r: r.noise, pct),
        ("p99 of detours", lambda r: r.p99_ns, us),
    ):
        ok, spread = within(ours, peers, key, fmt)
        checks.append(f"- {label}: ours {spread}: {bench.check(f'peers: {label} within their spread', ok, spread)}")
    chance = false_failure(len(ours), len(peers))
    checks.append(
        f"\nEach target is missed by chance {chance * 100:.1f}% of the time when our runs and the peers' "
        "come from one distribution (the median of ours outside the range of theirs)."
    )
    body = f"""sysjitter v1.4, oslat (rt-tests) and `jitterscope measure` (tracing on), interleaved on CPU {cpu},
{ROUNDS} rounds of {SECONDS} s each, threshold 1 us.  Host: {platform.node()}.
oslat's figures past its 1 ms histogram are ranges.

| round | tool | detours > 1 us | per s | noise share | p99 |
|---|---|---|---|---|---|
{rows}

{chr(10).join(checks)}
"""
    bench.section(body)
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())
