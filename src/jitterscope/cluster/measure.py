"""`cluster measure`: every rank measures its own CPU, rank 0 writes one cluster run.

Per rank: choose the CPU (distinct CPUs for ranks on one host), set up tracing,
wait at a barrier, start the probe (so every node measures the same interval),
analyse locally, then hand the node's tables and summary to rank 0, which
writes the cluster run directory (cluster/layout.py) and its summary
(cluster/summary.py).  Every step that waits for other ranks has a deadline
(cluster/mpi.py).  A rank's own run is a measurement through the session
lifecycle (session.py), written raw first as `<out>.rank<N>`, and removed once
the cluster run holding it is written; if the job fails before (a rank killed
at any moment, rank 0 failing to write), it stays there for `jitterscope
analyze`, never lost.
"""

from __future__ import annotations

import os
import pickle
import shutil
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jitterscope import sysinfo
from jitterscope.cluster import layout
from jitterscope.cluster.mpi import Cluster
from jitterscope.cluster.summary import build_summary, node_key
from jitterscope.errors import JitterscopeError
from jitterscope.journal import state_dir
from jitterscope.measure.lifecycle import measure
from jitterscope.rundir import INCOMPLETE, base_meta, create_run_dir, load_run, new_run_path, write_json
from jitterscope.session import write_meta
from jitterscope.units import MAX_CPUS_FALLBACK


@dataclass
class ClusterMeasureOptions:
    duration_ns: float
    threshold_ns: float
    trace: bool
    priority: int | None
    buffer_kb: int
    cpu_map: list[int] | None
    out: Path | None
    timeout_s: float
    command_line: list[str]


def parse_cpu_map(text: str) -> list[int]:
    """--cpu-map: CPUs in local-rank order; ranges (2-5) allowed, order and repeats kept."""
    out: list[int] = []
    limit = MAX_CPUS_FALLBACK  # the map serves every host, so not this machine's count: the kernel's limit
    for item in text.split(","):
        item = item.strip()
        try:
            if "-" in item:
                a, b = (int(x) for x in item.split("-", 1))
                if b < a:
                    raise ValueError
                if b >= limit:  # before the range is built: 0-99999999999 is one line, not gigabytes
                    raise JitterscopeError(
                        f"--cpu-map {text!r}: CPU {b} does not exist (Linux has at most {limit} CPUs)"
                    )
                out += list(range(a, b + 1))
            else:
                out.append(int(item))
        except ValueError:
            raise JitterscopeError(f"malformed --cpu-map {text!r}: use CPUs in rank order, e.g. 1,2,3 or 1-3") from None
    if any(c < 0 for c in out):
        raise JitterscopeError(f"malformed --cpu-map {text!r}: CPUs are non-negative")
    return out


def choose_cpu(local_rank: int, online: list[int], cpu_map: list[int] | None) -> int:
    """The CPU a rank measures.

    With --cpu-map, local rank i (i-th rank on its host) takes the i-th entry.
    By default local rank r takes online CPU (r + 1) mod n: the lowest CPU is
    the last one handed out, so it stays free for the tool's own work (as in
    `measure`) as long as there are fewer ranks than CPUs on a host.
    """
    if cpu_map is not None:
        if local_rank >= len(cpu_map):
            raise JitterscopeError(
                f"--cpu-map lists {len(cpu_map)} CPUs but this host runs at least "
                f"{local_rank + 1} ranks: give one CPU per rank on a host"
            )
        return cpu_map[local_rank]
    return online[(local_rank + 1) % len(online)]


def duplicate_nodes(peers: list[dict[str, Any]], mapped: bool) -> str | None:
    """Why some node (host, CPU) would be measured by several ranks, or None.

    The rule: at most one rank per online CPU of a host (by default local rank r takes
    CPU (r+1) mod n, so more ranks than CPUs wrap around onto the same CPUs)."""
    keys = [node_key(p["node"], p["cpu"]) for p in peers]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if not dup:
        return None
    per_host: dict[str, list[dict[str, Any]]] = {}
    for p in peers:
        per_host.setdefault(p["real_host"], []).append(p)
    for host, ranks in sorted(per_host.items()):
        n_cpus = int(ranks[0].get("online") or 0)
        if not mapped and n_cpus and len(ranks) > n_cpus:
            return (
                f"host {host} runs {len(ranks)} ranks but has {n_cpus} online CPUs: at most one rank per "
                f"CPU of a host (e.g. mpiexec -n {n_cpus} here, or -ppn {n_cpus} on several hosts); to share "
                f"CPUs on purpose give --cpu-map and distinct JITTERSCOPE_NODE_NAME values"
            )
    return (
        f"node {dup[0]} is measured by several ranks: give ranks distinct CPUs (--cpu-map) or distinct "
        f"node names (JITTERSCOPE_NODE_NAME)"
    )


def shared_cpu_warnings(peers: list[dict[str, Any]]) -> list[str]:
    """Ranks on one real host measuring the same CPU see each other's probes as noise."""
    by: dict[tuple[str, int], list[int]] = {}
    for p in peers:
        by.setdefault((p["real_host"], int(p["cpu"])), []).append(int(p["rank"]))
    return [
        f"ranks {','.join(map(str, r))} on {h} share CPU {c}: each will see the others' probe as noise"
        for (h, c), r in sorted(by.items())
        if len(r) > 1
    ]


def check_out(out: Path) -> None:
    """Refuse before measuring what would fail after (the directory is made at the end)."""
    if out.exists():
        raise JitterscopeError(f"{out}: already exists; choose a new --out directory")
    parent = out.parent if str(out.parent) else Path(".")
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise JitterscopeError(f"{parent}: not writable; choose another --out directory")


def _node_payload(run_dir: Path, cluster: Cluster, cpu: int, start_unix_ns: int) -> bytes:

    run = load_run(run_dir, check_tables=False)
    tables = {}
    for name in layout.NODE_TABLES:
        f = run_dir / f"{name}.parquet"
        tables[name] = f.read_bytes() if f.exists() else None
    meta = dict(run.meta)
    meta.update(
        {"rank": cluster.rank, "node": cluster.node, "real_host": cluster.real_host, "barrier_unix_ns": start_unix_ns}
    )
    return pickle.dumps(
        {"rank": cluster.rank, "host": cluster.node, "cpu": cpu, "meta": meta, "summary": run.summary, "tables": tables}
    )


def measure_rank(cluster: Cluster, opts: ClusterMeasureOptions) -> Path | None:
    """What every rank runs; rank 0 returns the cluster run directory."""

    online = sysinfo.online_cpus()
    cpu = choose_cpu(cluster.local_rank, online, opts.cpu_map)
    sysinfo.check_cpus([cpu])
    peers = cluster.allgather_json(
        {"rank": cluster.rank, "real_host": cluster.real_host, "cpu": cpu, "node": cluster.node, "online": len(online)},
        "CPU choice",
    )
    problem = duplicate_nodes(peers, opts.cpu_map is not None)
    if problem and cluster.rank == 0:  # one line from rank 0; the others are ended with it
        raise JitterscopeError(problem)

    # Rank 0 settles the output directory before anyone measures; every rank learns
    # it, to keep its capture next to it if the job fails.
    out: Path | None = None
    if cluster.rank == 0:
        for w in shared_cpu_warnings(peers):
            print(f"jitterscope: warning: {w}", file=sys.stderr)
        out = opts.out or new_run_path("cluster", cluster.node)
        check_out(out)
    planned = Path(cluster.bcast_obj(str(out) if out is not None else None, "the output directory"))

    start_unix_ns = 0
    measure_limit = opts.duration_ns / 1e9 + opts.timeout_s

    def at_barrier() -> None:
        nonlocal start_unix_ns
        cluster.checkpoint("probe start")
        start_unix_ns = time.time_ns()

    # The rank's own run is a measurement (measure's session: journal, watchdog, raw first) in the place
    # it is kept if the job fails before the cluster run holding it is written (this rank or another
    # killed, rank 0 failing to write): no move is then needed, so a kill at any moment keeps it.  It is
    # removed once the cluster run is written.
    run_dir = _rank_dir(planned, cluster.rank)
    run_dir = measure(
        [cpu],
        opts.duration_ns,
        opts.threshold_ns,
        run_dir,
        trace=opts.trace,
        priority=opts.priority,
        report=False,
        progress=False,
        buffer_kb=opts.buffer_kb,
        before_probe=at_barrier,
    )
    payload = _node_payload(run_dir, cluster, cpu, start_unix_ns)
    got = cluster.gather_bytes(payload, "its measurement", timeout_s=measure_limit)
    if cluster.rank == 0:
        assert out is not None and got is not None
        create_run_dir(out)
        write_cluster_run(out, [pickle.loads(b) for b in got], opts, peers)
    cluster.checkpoint("the cluster run written")
    shutil.rmtree(run_dir)  # it is in the cluster run now: nothing left to keep
    return out if cluster.rank == 0 else None


def _rank_dir(planned: Path, rank: int) -> Path:
    """Where a rank measures, and where its run stays if the job fails: next to the planned cluster
    run if that directory exists on this host and is writable, else the state dir's kept/."""
    parent = planned.parent if str(planned.parent) else Path(".")
    if not (parent.is_dir() and os.access(parent, os.W_OK)):
        parent = state_dir() / "kept"
        parent.mkdir(parents=True, exist_ok=True)
    rank_dir = (parent / f"{planned.name}.rank{rank}").absolute()
    if rank_dir.exists():
        raise JitterscopeError(
            f"{rank_dir}: already exists (a failed job's rank run: `jitterscope analyze` it, or remove it); "
            f"choose a new --out directory"
        )
    return rank_dir


def write_cluster_run(
    out: Path, nodes: list[dict[str, Any]], opts: ClusterMeasureOptions, peers: list[dict[str, Any]]
) -> None:
    """Rank 0: the cluster run directory from every node's payload.  meta.json says, from the first
    moment, that it is being written (a kill leaves a directory `analyze` names, in one line); it is
    written complete last, after summary.json."""
    write_meta(out, base_meta(kind="cluster", id=out.name, **{INCOMPLETE: "writing"}))
    t0 = min(int(n["meta"]["barrier_unix_ns"]) for n in nodes)
    node_meta = []
    for n in nodes:
        m = n["meta"]
        for name in layout.NODE_TABLES:
            data = n["tables"].get(name)
            if data is not None:
                layout.write_node_table(out, name, n["host"], n["cpu"], layout.table_from_bytes(data))
        layout.write_node_json(out, n["host"], n["cpu"], m, n["summary"])
        node_meta.append(
            {
                "node": node_key(n["host"], n["cpu"]),
                "host": n["host"],
                "cpu": n["cpu"],
                "rank": n["rank"],
                "real_host": m.get("real_host"),
                "kernel": m.get("kernel"),
                "cpu_model": m.get("cpu_model"),
                "virtualization": m.get("virtualization"),
                "clocksource": m.get("clocksource"),
                "duration_s": m.get("duration_s"),
                "interrupted": m.get("interrupted", False),
                "tracing": m.get("tracing"),
                "lost_events": int(m.get("lost_events", 0)),
                "tsc_hz": m.get("tsc_hz"),
                "probe": m.get("probe"),
                "offset_ns": int(m["barrier_unix_ns"]) - t0,
                "partition": layout.partition(n["host"], n["cpu"]),
            }
        )
    traced = [bool((n["meta"].get("tracing") or {}).get("enabled")) for n in nodes]
    reasons = sorted(
        {
            str((n["meta"].get("tracing") or {}).get("reason"))
            for n in nodes
            if not (n["meta"].get("tracing") or {}).get("enabled")
        }
    )
    start = datetime.fromtimestamp(t0 / 1e9, timezone.utc)
    meta = base_meta(
        kind="cluster",
        id=out.name,
        host=nodes[0]["host"],
        kernel=nodes[0]["meta"].get("kernel"),
        command_line=opts.command_line,
        start=start.isoformat(timespec="seconds"),
        start_unix_ns=t0,
        duration_s=min(float(n["meta"].get("duration_s", 0.0)) for n in nodes),
        interrupted=any(bool(n["meta"].get("interrupted")) for n in nodes),
        cpus=sorted({int(n["cpu"]) for n in nodes}),
        options={
            "duration_ns": opts.duration_ns,
            "threshold_ns": opts.threshold_ns,
            "priority": opts.priority,
            "trace": opts.trace,
            "buffer_kb": opts.buffer_kb,
            "cpu_map": opts.cpu_map,
            "timeout_s": opts.timeout_s,
        },
        tracing={"enabled": all(traced), "nodes_traced": sum(traced), "reason": "; ".join(reasons) or None},
        lost_events=sum(int(n["meta"].get("lost_events", 0)) for n in nodes),
        cluster={
            "ranks": len(nodes),
            "hosts": sorted({n["host"] for n in nodes}),
            "real_hosts": sorted({p["real_host"] for p in peers}),
            "cpu_choice": "--cpu-map" if opts.cpu_map else "local rank r -> online CPU (r+1) mod n",
        },
        nodes=node_meta,
        submitted_from=socket.gethostname(),
        pid=os.getpid(),
    )
    info = {
        "id": out.name,
        "kind": "cluster",
        "start": meta["start"],
        "duration_s": meta["duration_s"],
        "threshold_ns": opts.threshold_ns,
        "tracing": meta["tracing"]["enabled"],
        "ranks": len(nodes),
    }
    write_json(
        out / "summary.json",
        build_summary(
            info, [{"host": n["host"], "cpu": n["cpu"], "rank": n["rank"], "summary": n["summary"]} for n in nodes]
        ),
    )
    write_json(out / "meta.json", meta)
