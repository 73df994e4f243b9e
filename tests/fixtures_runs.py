"""Synthetic but realistic run directories, for tests of everything that reads runs.

`build_run(path, ...)` writes a complete run (meta.json, summary.json and the
three Parquet tables) through `jitterscope.rundir`, with the summary and the
attribution computed by the real `jitterscope.measure.attribution` / `analysis` code
from a made-up kernel timeline.  Per CPU the timeline holds:

* a 250 Hz `local_timer` tick (2-6 us), followed on some ticks by the `TIMER`
  softirq, and once a second by `kworker/<cpu>:1` running `vmstat_update`
  (the chain local_timer -> TIMER -> kworker De et al. 2007 describes);
* a periodic daemon (`irqbalance`, woken by a `reschedule` IPI), sometimes with
  a tick nested inside its time slice;
* network interrupts at random (`virtio0-input.0` + `NET_RX`);
* hypervisor exits no trace sees (whole detours `unexplained`), and a few
  hundred ns of entry/exit overhead around every detour, also unexplained;
* optionally an injected daemon (`jitterscope-inj`, period/busy like
  `jitterscope inject`).

Everything is drawn from a seeded generator, so a (seed, options) pair always
gives the same run; two seeds give two "quiet runs of the same machine".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from jitterscope.measure.attribution import attribute, attribute_annotations, source_table
from jitterscope.measure.build import make_summary
from jitterscope.rundir import base_meta, create_run_dir, write_json, write_table

TSC_HZ = 2.5e9


@dataclass
class Injector:
    cpu: int
    period_ns: int = 50_000_000
    busy_ns: int = 500_000
    name: str = "jitterscope-inj"


@dataclass
class RunSpec:
    cpus: list[int] = field(default_factory=lambda: [1])
    duration_s: float = 3.0
    seed: int = 0
    threshold_ns: int = 1000
    tracing: bool = True
    lost_events: int = 0
    daemon_period_s: float = 0.5
    net_rate_hz: float = 8.0
    hypervisor_rate_hz: float = 30.0
    injector: Injector | None = None
    tick_scale: float = 1.0  # multiplies tick irq durations (to model a regression)
    host: str = "testhost"


def _episodes(spec: RunSpec, cpu: int, rng: np.random.Generator) -> list[list[tuple]]:
    """Episodes of kernel activity on one CPU: lists of
    (start, end, kind, name, depth, detail, [annotations]) pieces in time order;
    a piece may contain nested pieces as (start, end, kind, name, depth, detail)."""
    dur = int(spec.duration_s * 1e9)
    eps: list[list[tuple]] = []
    phase = int(rng.integers(0, 4_000_000))
    for k, t in enumerate(range(phase, dur - 100_000, 4_000_000)):
        t = int(t + rng.normal(0, 300))
        irq = int(rng.lognormal(np.log(3000), 0.25) * spec.tick_scale)
        ep = [(t, t + irq, "irq", "local_timer", 2, "236", [])]
        if rng.random() < 0.4 or k % 250 == 7:
            sd = int(rng.lognormal(np.log(1800), 0.3))
            s0 = ep[-1][1] + int(rng.integers(50, 150))
            ep.append((s0, s0 + sd, "softirq", "TIMER", 1, "1", [("timer", "tick_sched_timer")]))
        if k % 250 == 7:  # once a second the timer queues vmstat work on a kworker
            s0 = ep[-1][1] + int(rng.integers(300, 900))
            wd = int(rng.lognormal(np.log(9000), 0.3))
            ep.append((s0, s0 + wd, "thread", f"kworker/{cpu}:1", 0, str(40 + cpu), [("work", "vmstat_update")]))
        eps.append(ep)
    t = float(rng.uniform(0, spec.daemon_period_s)) * 1e9
    while t < dur - 1_000_000:
        s = int(t + rng.normal(0, 20_000))
        ipi = int(rng.lognormal(np.log(1200), 0.2))
        slice_ = int(rng.lognormal(np.log(35_000), 0.35))
        th = (s + ipi + 200, s + ipi + 200 + slice_, "thread", "irqbalance", 0, "612", [])
        eps.append([(s, s + ipi, "irq", "reschedule", 2, "253", []), th])
        t += spec.daemon_period_s * 1e9
    for t in np.sort(rng.uniform(0, dur - 100_000, rng.poisson(spec.net_rate_hz * spec.duration_s))):
        t = int(t)
        a = int(rng.lognormal(np.log(2500), 0.3))
        b = int(rng.lognormal(np.log(6000), 0.5))
        eps.append(
            [
                (t, t + a, "irq", "virtio0-input.0", 2, "27", []),
                (t + a + 80, t + a + 80 + b, "softirq", "NET_RX", 1, "3", []),
            ]
        )
    inj = spec.injector
    if inj is not None and inj.cpu == cpu:
        for t in range(int(rng.integers(0, inj.period_ns)), dur - inj.busy_ns - 10_000, inj.period_ns):
            a = int(rng.lognormal(np.log(2000), 0.2))
            eps.append(
                [
                    (t, t + a, "irq", "local_timer", 2, "236", []),
                    (
                        t + a + 400,
                        t + a + 400 + inj.busy_ns + int(rng.normal(0, 2000)),
                        "thread",
                        inj.name,
                        0,
                        "4242",
                        [],
                    ),
                ]
            )
    return eps


def _timeline(spec: RunSpec, rng: np.random.Generator):
    det, act, seg = [], [], []
    for cpu in spec.cpus:
        eps = sorted(_episodes(spec, cpu, rng), key=lambda e: e[0][0])
        last_end = -1
        for ep in eps:
            pre, post = int(rng.integers(150, 450)), int(rng.integers(150, 450))
            start, end = ep[0][0] - pre, ep[-1][1] + post
            if start <= last_end + 2000:  # keep episodes apart (the probe runs between them)
                continue
            last_end = end
            det.append((cpu, start, end - start))
            for s, e, kind, name, depth, detail, ann in ep:
                act.append((cpu, s, e, kind, name, depth, detail))
                for ak, an in ann:
                    a0 = s + (e - s) // 5
                    act.append((cpu, a0, a0 + (e - s) // 2, ak, an, depth + 1, ""))
                nested = kind == "thread" and name == "irqbalance" and rng.random() < 0.3
                if nested:  # a tick interrupts the daemon's slice
                    m = s + (e - s) // 2
                    n = int(rng.lognormal(np.log(2500), 0.2))
                    act.append((cpu, m, m + n, "irq", "local_timer", 2, "236"))
                    seg += [(cpu, s, m, kind, name), (cpu, m, m + n, "irq", "local_timer"), (cpu, m + n, e, kind, name)]
                else:
                    seg.append((cpu, s, e, kind, name))
        if spec.hypervisor_rate_hz:
            n = rng.poisson(spec.hypervisor_rate_hz * spec.duration_s)
            starts = np.sort(rng.uniform(0, spec.duration_s * 1e9 - 50_000, n)).astype(np.int64)
            taken = np.array([(d[1], d[1] + d[2]) for d in det if d[0] == cpu], dtype=np.int64).reshape(-1, 2)
            for s in starts:
                d = int(rng.lognormal(np.log(2500), 0.7))
                clash = (taken[:, 0] < s + d + 2000) & (taken[:, 1] > s - 2000)
                if not clash.any():
                    det.append((cpu, int(s), d))
    det = [d for d in det if d[2] >= spec.threshold_ns]
    det.sort(key=lambda d: (d[0], d[1]))
    act.sort(key=lambda a: (a[0], a[1], a[5]))
    seg.sort(key=lambda s: (s[0], s[1]))
    return det, act, seg


def build_run(path: str | Path, spec: RunSpec | None = None, **overrides: Any) -> Path:
    """Write a synthetic run directory at `path` (must not exist); return it."""
    spec = spec or RunSpec()
    for k, v in overrides.items():
        setattr(spec, k, v)
    rng = np.random.default_rng(spec.seed)
    run_dir = create_run_dir(path)
    det, act, seg = _timeline(spec, rng)
    d = np.array(det, dtype=np.int64).reshape(-1, 3)
    det_cpu, det_start, det_dur = d[:, 0].astype(np.int32), d[:, 1], d[:, 2]
    functions: dict[int, list[str]] = {}
    if spec.tracing:
        kinds = np.array([s[3] for s in seg], dtype=object)
        names = np.array([s[4] for s in seg], dtype=object)
        sources, codes = source_table(kinds, names)
        s = np.array([x[:3] for x in seg], dtype=np.int64).reshape(-1, 3)
        att = attribute(det_cpu, det_start, det_dur, s[:, 0], s[:, 1], s[:, 2], codes, sources)
        ann = [a for a in act if a[3] in ("work", "timer")]
        if ann:
            an = np.array([a[:3] for a in ann], dtype=np.int64)
            container, inside = attribute_annotations(
                an[:, 0], an[:, 1], an[:, 2], det_cpu, det_start, det_dur, s[:, 0], s[:, 1], s[:, 2], codes
            )
            per: dict[int, dict[str, int]] = {}
            for c, ns, a in zip(container, inside, ann):
                if c and ns > 0:
                    per.setdefault(int(c), {}).setdefault(a[4], 0)
                    per[int(c)][a[4]] += int(ns)
            functions = {c: sorted(v, key=lambda n: -v[n]) for c, v in per.items()}
        activity = act
    else:
        att = attribute(
            det_cpu,
            det_start,
            det_dur,
            np.zeros(0, np.int32),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.int32),
            [("unexplained", "unexplained")],
        )
        activity = []
    dur_ns = spec.duration_s * 1e9
    meta = base_meta(
        kind="measure",
        id=run_dir.name,
        host=spec.host,
        kernel="6.1.0-test-amd64",
        command_line=[
            "jitterscope",
            "measure",
            "--cpus",
            ",".join(map(str, spec.cpus)),
            "--duration",
            f"{spec.duration_s:g}s",
        ],
        start="2024-05-01T12:00:00+00:00",
        start_unix_ns=1_714_564_800_000_000_000,
        duration_s=spec.duration_s,
        interrupted=False,
        cpus=list(spec.cpus),
        cpu_model="Synthetic CPU @ 2.50GHz",
        clocksource="tsc",
        virtualization="kvm",
        options={
            "duration_ns": dur_ns,
            "threshold_ns": spec.threshold_ns,
            "priority": None,
            "trace": spec.tracing,
            "buffer_kb": 4096,
        },
        tracing={
            "enabled": spec.tracing,
            "reason": None if spec.tracing else "disabled with --no-trace",
            "clock": "x86-tsc" if spec.tracing else None,
            "buffer_kb": 4096 if spec.tracing else None,
            "events": len(activity),
        },
        lost_events=spec.lost_events,
        tsc_hz=TSC_HZ,
        t0_tsc=123_456_789,
        probe={str(c): {"iterations": int(dur_ns / 20), "resolution_ns": 20.0, "loop_ns_min": 18.0} for c in spec.cpus},
        steal_ns=0.0,
    )
    write_table(run_dir, "detours", pa.table({"cpu": det_cpu, "start_ns": det_start, "duration_ns": det_dur}))
    a = activity
    write_table(
        run_dir,
        "activity",
        pa.table(
            {
                "cpu": pa.array([x[0] for x in a], pa.int32()),
                "start_ns": pa.array([x[1] for x in a], pa.int64()),
                "end_ns": pa.array([x[2] for x in a], pa.int64()),
                "kind": pa.array([x[3] for x in a], pa.string()),
                "name": pa.array([x[4] for x in a], pa.string()),
                "depth": pa.array([x[5] for x in a], pa.int16()),
                "detail": pa.array([x[6] for x in a], pa.string()),
            }
        ),
    )
    kinds = np.array([k for k, _ in att.sources], dtype=object)
    names = np.array([n for _, n in att.sources], dtype=object)
    write_table(
        run_dir,
        "attribution",
        pa.table(
            {
                "detour": att.detour,
                "cpu": det_cpu[att.detour],
                "kind": pa.array(kinds[att.source].tolist(), pa.string()),
                "name": pa.array(names[att.source].tolist(), pa.string()),
                "ns": att.ns,
                "offset_ns": att.offset_ns,
            }
        ),
    )
    measured = {c: dur_ns for c in spec.cpus}
    summary = make_summary(meta, att, det_cpu, det_start, det_dur, measured, {c: 20.0 for c in spec.cpus}, functions)
    write_json(run_dir / "meta.json", meta)
    write_json(run_dir / "summary.json", summary)
    return run_dir


def build_cluster_run(
    path: str | Path,
    nodes: list[tuple[str, int]] | None = None,
    tracing: bool = True,
    seed: int = 0,
    injected: int | None = None,
) -> Path:
    """A cluster run written by the real cluster writer (cluster/measure.py) from one synthetic
    node run per (host, cpu), as rank 0 writes it after `cluster measure`; rank `injected` also
    runs the synthetic daemon (an outlier node)."""
    import pickle
    import tempfile

    from jitterscope.cluster.measure import ClusterMeasureOptions, write_cluster_run

    nodes = nodes or [("node-a", 1), ("node-b", 1), ("node-c", 1)]
    payloads, peers = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for rank, (host, cpu) in enumerate(nodes):
            d = build_run(
                Path(tmp) / f"r{rank}",
                cpus=[cpu],
                seed=seed + rank,
                tracing=tracing,
                host=host,
                duration_s=2.0,
                injector=Injector(cpu=cpu) if rank == injected else None,
            )
            meta = __import__("json").loads((d / "meta.json").read_text())
            meta.update(rank=rank, node=host, real_host="synthetic", barrier_unix_ns=meta["start_unix_ns"] + rank)
            tables = {
                n: (d / f"{n}.parquet").read_bytes()
                for n in ("detours", "attribution", "activity")
                if (d / f"{n}.parquet").exists()
            }
            payloads.append(
                pickle.dumps(
                    {
                        "rank": rank,
                        "host": host,
                        "cpu": cpu,
                        "meta": meta,
                        "tables": tables,
                        "summary": __import__("json").loads((d / "summary.json").read_text()),
                    }
                )
            )
            peers.append({"rank": rank, "real_host": "synthetic", "cpu": cpu, "node": host})
    out = create_run_dir(path)
    opts = ClusterMeasureOptions(
        duration_ns=2e9,
        threshold_ns=1000,
        trace=tracing,
        priority=None,
        buffer_kb=4096,
        cpu_map=None,
        out=out,
        timeout_s=60.0,
        command_line=["jitterscope", "cluster", "measure", "--duration", "2s"],
    )
    write_cluster_run(out, [pickle.loads(p) for p in payloads], opts, peers)
    return out
