"""`jitterscope doe` end to end on this machine: real factors, real runs, exact restore."""

from __future__ import annotations

import glob
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from scipy import stats

from jitterscope.journal import journal_dir
from tests.support import svg

from .conftest import changed, jitterscope, load_pids, probed_cpu, snapshot

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to change IRQ affinity")


def _text(p: Path) -> str:
    try:
        return p.read_text()
    except OSError:  # another run's journal, gone since the listing
        return ""


def _llc_bytes(cpu: int) -> int:
    """Size of the highest-level data/unified cache, read here independently of the tool."""
    best = (0, 0)
    for d in glob.glob(f"/sys/devices/system/cpu/cpu{cpu}/cache/index*"):
        if Path(d, "type").read_text().strip() == "Instruction":
            continue
        size = Path(d, "size").read_text().strip()
        n = int(size.rstrip("KMG")) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1], 1)
        best = max(best, (int(Path(d, "level").read_text()), n))
    return best[1]


# The measured workload: a memory-bound loop of ~0.05 s on the measured CPU (its value is
# only compared with what doe recorded, so its length is not what is tested).  It also
# records what the system looked like while it ran, so the test can check that each
# factor really was at the level the design asked for.
WORKLOAD = textwrap.dedent("""
    import glob, json, os, sys, time
    from pathlib import Path
    t = time.perf_counter()
    buf = bytearray(32 << 20)
    n = 0
    while time.perf_counter() - t < 0.05:
        buf[n % len(buf)::4096] = b"x" * len(range(n % len(buf), len(buf), 4096))
        n += 1
    y = n
    irqs = {p: Path(p).read_text().strip() for p in glob.glob("/proc/irq/*/smp_affinity_list")}
    loads = [l for l in (Path(c).read_bytes() for c in glob.glob("/proc/[0-9]*/cmdline")
             if os.path.exists(c)) if b"\\0-m\\0jitterscope.doe.loads\\0" in l]
    with open(sys.argv[1], "a") as fh:
        fh.write(json.dumps({"y": y, "irqs": irqs, "loads": [l.decode().split("\\0") for l in loads],
                             "cpus": sorted(os.sched_getaffinity(0))}) + "\\n")
    print(y)
""")


@ROOT_ONLY
def test_two_builtin_factors_two_replications(tmp_path):
    cpu = probed_cpu()
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    seen = tmp_path / "seen.jsonl"
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        textwrap.dedent(f"""
        name: e2e
        response:
          command: ["{sys.executable}", "{script}", "{seen}"]
          cpus: {cpu}
          value: stdout
          estimate: 0.25s
        factors:
          - {{name: cache, kind: cache_load, low: resident, high: thrash}}
          - {{name: irqs, kind: irq_affinity, low: away, high: to}}
        replications: 2
        seed: 11
        settle: 100ms
    """)
    )
    before = snapshot()
    out = tmp_path / "exp"
    proc = jitterscope("doe", "run", str(plan), "--out", str(out), timeout=240)
    after = snapshot()
    assert proc.returncode == 0, proc.stderr
    # Only the knobs this plan touches: other jobs on this shared machine may turn others.
    assert [k for k in changed(before, after) if k.startswith("/proc/irq/")] == []
    assert load_pids() == []
    assert not [p for p in journal_dir().glob("*.jsonl") if "doe e2e" in _text(p)]

    # Progress: one line per run with treatments done and time left.
    assert proc.stderr.count(" left") == 8 and "treatments done 4/4" in proc.stderr
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    seen_rows = [json.loads(line) for line in seen.read_text().splitlines()]
    assert len(runs) == len(seen_rows) == 8
    order = json.loads((out / "experiment.json").read_text())["run_order"]
    assert [[r["treatment"], r["rep"]] for r in runs] == order  # executed in the randomized order
    assert sorted(map(tuple, order)) == [(t, r) for t in range(4) for r in range(2)]
    others = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)) if c != cpu)
    for run, row in zip(runs, seen_rows):
        assert row["y"] == run["y"] and row["cpus"] == [cpu]
        assert len(row["loads"]) == 1, row["loads"]  # exactly one cache load, of this run only
        size = int(row["loads"][0][row["loads"][0].index("--bytes") + 1])
        llc = _llc_bytes(cpu)
        if run["levels"]["cache"] == "thrash":
            assert size > max(llc, 1)
        else:
            assert size < 8 << 20
        # IRQs that moved sit where the level says (some IRQs the kernel never lets move).
        vals = set(row["irqs"].values())
        target = str(cpu) if run["levels"]["irqs"] == "to" else others
        moved = sum(1 for v in row["irqs"].values() if v == target)
        assert moved >= len(row["irqs"]) // 2, (run["levels"], vals)

    a = json.loads(jitterscope("doe", "analyze", str(out), "--json", check=True).stdout)
    assert len(a["treatments"]) == 4 and all(len(t["values"]) == 2 for t in a["treatments"])
    al = a["allocation"]
    assert sum(e["percent"] for e in al["effects"]) + al["error_percent"] == pytest.approx(100)
    assert sum(e["ss"] for e in al["effects"]) + al["sse"] == pytest.approx(al["sst"], rel=1e-9)
    assert a["kruskal_wallis"]["p"] == pytest.approx(stats.kruskal(*[t["values"] for t in a["treatments"]]).pvalue)
    assert svg.read(out / "boxplot.svg").shows("response per treatment", "treatment (Yates order")
    txt = (out / "analysis.txt").read_text()
    assert "Percentage of Contribution" in txt and "A (cache)" in txt
    assert "Share of significant pairwise comparisons" in txt


@pytest.mark.free
def test_resume_skips_finished_runs(tmp_path):
    """Custom factors log every level and restore, so order and completeness can be checked."""
    log = tmp_path / "log"
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        textwrap.dedent(f"""
        name: resume
        response: {{command: "od -An -N2 -tu2 /dev/urandom", value: stdout, estimate: 10ms, cpus: {probed_cpu()}}}
        factors:
          - {{name: a, kind: custom, low: "echo a- >> {log}", high: "echo a+ >> {log}",
              restore: "echo a.restore >> {log}"}}
          - {{name: b, kind: custom, low: "echo b- >> {log}", high: "echo b+ >> {log}",
              restore: "echo b.restore >> {log}"}}
        replications: 2
        settle: 0s
    """)
    )
    out = tmp_path / "exp"
    first = jitterscope("doe", "run", str(plan), "--out", str(out), timeout=120)
    assert first.returncode == 0, first.stderr
    lines = (out / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 8
    # Each run: both levels set, then both restored, newest first.
    steps = log.read_text().split()
    assert len(steps) == 8 * 4
    for i in range(0, len(steps), 4):
        assert steps[i][0] == "a" and steps[i + 1][0] == "b"
        assert steps[i + 2 : i + 4] == ["b.restore", "a.restore"]
    # Pretend it was killed after three runs, mid-way through writing the fourth.
    (out / "runs.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:10])
    for f in ("analysis.json", "analysis.txt", "boxplot.svg"):
        (out / f).unlink()
    log.write_text("")
    again = jitterscope("doe", "run", str(plan), "--out", str(out), "--resume", timeout=120)
    assert again.returncode == 0, again.stderr
    assert "resuming: 3 of 8 runs already done" in again.stderr
    assert len(log.read_text().split()) == 5 * 4  # only the five missing runs ran
    done = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines() if x.endswith("}")]
    assert sorted(r["run"] for r in done) == list(range(8))
    assert (out / "analysis.json").exists()
    # Without --resume an existing experiment is never overwritten; a changed plan is refused.
    assert jitterscope("doe", "run", str(plan), "--out", str(out)).returncode == 2
    plan.write_text(plan.read_text().replace("replications: 2", "replications: 3"))
    r = jitterscope("doe", "run", str(plan), "--out", str(out), "--resume")
    assert r.returncode == 2 and "plan differs" in r.stderr


@ROOT_ONLY
def test_measure_response(tmp_path):
    """A `jitterscope measure` as the response, under a UDP flood and without: one factor is enough for what
    is checked here (each y is its run's summary, the flood is undone); test_doe_safety restores the others."""
    cpu = probed_cpu()
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        textwrap.dedent(f"""
        name: measure-e2e
        response: {{measure: {{cpus: {cpu}, duration: 300ms, metric: noise_ppm}}}}
        factors:
          - {{name: udp, kind: udp_flood, low: off, high: on, rate: 20000}}
        replications: 2
        settle: 100ms
    """)
    )
    before = snapshot()
    out = tmp_path / "exp"
    proc = jitterscope("doe", "run", str(plan), "--out", str(out), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert changed(before, snapshot()) == []
    runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 4
    for r in runs:
        summary = json.loads((Path(r["run_dir"]) / "summary.json").read_text())
        assert r["y"] == pytest.approx(summary["cpus"][str(cpu)]["noise_ppm"])
        assert r["y"] >= 0
    a = json.loads((out / "analysis.json").read_text())
    assert a["unit"] == "ppm" and len(a["treatments"]) == 2
