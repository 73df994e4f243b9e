"""The cluster run directory: one meta.json and summary.json, per-node Parquet partitions.

    <run>/
      meta.json                               kind "cluster", one entry per node in "nodes"
      summary.json                            the cluster summary (cluster/summary.py)
      detours/host=<h>/cpu=<c>/part-0.parquet     one node's detours (start_ns, duration_ns)
      attribution/host=<h>/cpu=<c>/part-0.parquet one node's attribution
      activity/host=<h>/cpu=<c>/part-0.parquet    one node's kernel activity intervals
      nodes/host=<h>/cpu=<c>/{meta,summary}.json  the node's own run metadata and summary
      bsp.parquet, bsp_phases.parquet             (cluster bsp only) per rank x phase timings

Each table is a hive-partitioned dataset, so `pyarrow.dataset.dataset(run/"detours",
partitioning="hive")` reads every node at once with `host` and `cpu` columns, and
a filter on host or cpu opens only the matching files: a thousand-node run stays
queryable without loading it whole.  Times are ns since that node's own start;
`meta.nodes[].offset_ns` places a node's start relative to the cluster's (wall clock).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from jitterscope import boundedio
from jitterscope.atomic import atomic_path
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import Run, conform, load_run, node_partitioning, partition, write_json

NODE_TABLES = ("detours", "attribution", "activity")
__all__ = ["NODE_TABLES", "ClusterRun", "load_cluster", "partition", "write_node_table"]


def write_node_table(run_dir: Path, name: str, host: str, cpu: int, table: pa.Table) -> None:
    """One node's table, without the cpu column (the partition key carries it)."""
    table = conform(name, table)
    if "cpu" in table.column_names:
        table = table.drop_columns(["cpu"])
    d = run_dir / name / partition(host, cpu)
    d.mkdir(parents=True, exist_ok=True)
    with atomic_path(d / "part-0.parquet") as tmp:  # hidden while written: datasets skip it
        pq.write_table(table, tmp, compression="zstd")


def write_node_json(run_dir: Path, host: str, cpu: int, meta: dict[str, Any], summary: dict[str, Any]) -> None:
    d = run_dir / "nodes" / partition(host, cpu)
    d.mkdir(parents=True, exist_ok=True)
    write_json(d / "meta.json", meta)
    write_json(d / "summary.json", summary)


def table_from_bytes(data: bytes) -> pa.Table:
    return pq.read_table(pa.BufferReader(data))


class ClusterRun(Run):
    """A loaded cluster run: a run whose tables are per-node datasets, read lazily."""

    def dataset(self, name: str) -> ds.Dataset | None:
        d = self.path / name
        if not d.is_dir():
            return None
        return ds.dataset(d, format="parquet", partitioning=node_partitioning())

    def node_summary(self, host: str, cpu: int) -> dict[str, Any]:
        p = self.path / "nodes" / partition(host, cpu) / "summary.json"
        data = boundedio.read_json(p, "node summary")
        if not isinstance(data, dict):
            raise JitterscopeError(f"{p}: corrupt node summary (not a JSON object)")
        return data


def is_cluster(meta: dict[str, Any]) -> bool:
    return meta.get("kind") == "cluster"


def load_cluster(path: str | Path) -> ClusterRun:
    run = load_run(path)
    if not is_cluster(run.meta):
        raise JitterscopeError(f"{path}: a single-machine run, not a cluster run")
    return ClusterRun(Path(path), run.meta, run.summary, meta_model=run.meta_model, summary_model=run.summary_model)
