"""The run directory: what a measurement leaves, and what every analysis reads.

Layout of a `measure` run (docs/run-format.md is the reference):

    meta.json            self-description: format version, kind, host, kernel, CPUs, options
    summary.json         the documented, stable summary (its model: the kind's, kinds.py)
    detours.parquet      cpu, start_ns, duration_ns           (one row per detour)
    activity.parquet     cpu, start_ns, end_ns, kind, name, depth, detail
    attribution.parquet  detour, cpu, kind, name, ns, offset_ns (a detour's time per source)
    trace/               raw per-CPU tracefs pages and event formats (re-analysable)

All times are nanoseconds since the run's start (`meta.t0_tsc`), in one clock
shared by the probe and the kernel trace.

Run kinds
---------
Every kind of run directory (`measure`, `cluster`, and each new command's) is
registered in kinds.py by its own package (`<package>/kind.py`): its tables
(name -> `TableSpec`: pyarrow schema, when the table is required, whether it is
one file or a per-node dataset) and its summary.json model.  `load_run` checks
any kind against its entry, and `Run.table(name)` reads any kind's table.  A
required table that is missing, or any table that is corrupt or lacks its
columns, is a one-line error naming the file; never an empty table.  An
optional table that is absent reads as an empty table with its schema (e.g.
`activity` of a run measured without tracing: there is no kernel activity to
record).

    # write: meta = base_meta(kind="sync", ...); write_table(run_dir, "waits", table, kind="sync")
    # read:  run = load_run(path, kinds=("sync",), purpose="sync report"); run.table("waits")

Add the kind's section to docs/run-format.md.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq
from pydantic import BaseModel

from jitterscope import __version__, atomic, boundedio, outpath, runcheck, sysinfo
from jitterscope import kinds as registry
from jitterscope.errors import JitterscopeError
from jitterscope.kinds import Required as Required  # kinds.py's, re-exported for the readers of tables
from jitterscope.kinds import RunKind, TableSpec
from jitterscope.kinds import always as always
from jitterscope.kinds import if_traced as if_traced
from jitterscope.kinds import never as never

M = TypeVar("M", bound=BaseModel)

FORMAT = "jitterscope-run"
FORMAT_VERSION = 1

register_kind = registry.register


DETOUR_SCHEMA = pa.schema([("cpu", pa.int32()), ("start_ns", pa.int64()), ("duration_ns", pa.int64())])
ACTIVITY_SCHEMA = pa.schema(
    [
        ("cpu", pa.int32()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("depth", pa.int16()),
        ("detail", pa.string()),
    ]
)
ATTRIBUTION_SCHEMA = pa.schema(
    [
        ("detour", pa.int64()),
        ("cpu", pa.int32()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("ns", pa.int64()),
        ("offset_ns", pa.int64()),
    ]
)
# The measure run's tables (also the per-node tables of a cluster run).
TABLES = {"detours": DETOUR_SCHEMA, "activity": ACTIVITY_SCHEMA, "attribution": ATTRIBUTION_SCHEMA}


def node_partitioning() -> Any:
    """The hive partitioning of per-node tables (host=<h>/cpu=<c>)."""
    # pyarrow.dataset takes 0.3 s to import (at every command's start if imported above); only per-node tables need it
    import pyarrow.dataset as ds

    return ds.partitioning(pa.schema([("host", pa.string()), ("cpu", pa.int32())]), flavor="hive")


def partition(host: str, cpu: int) -> str:
    """A node's partition directory (pyarrow URI-decodes hive values, so any host name round-trips)."""
    return f"host={quote(host, safe='')}/cpu={int(cpu)}"


DEFAULT_RUNS = Path(outpath.DEFAULT_ROOTS[0])


def run_stamp() -> str:
    """The time in run directory names: UTC, sortable as text (20260101T120000Z)."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def new_run_path(*labels: str, root: Path = DEFAULT_RUNS) -> Path:
    """Where a run goes when no --out is given: ROOT/<UTC time>-<labels> (by default the host's
    name), e.g. jitterscope-runs/20260101T120000Z-node7-protect.  Not created here."""
    return root / "-".join([run_stamp(), *(labels or (sysinfo.host(),))])


class Detours(NamedTuple):
    """The detour table as numpy arrays (int64), one element per detour, in table order."""

    cpu: np.ndarray
    start_ns: np.ndarray
    duration_ns: np.ndarray

    @property
    def end_ns(self) -> np.ndarray:
        return self.start_ns + self.duration_ns


@dataclass
class Run:
    """A loaded run directory of any kind.  Tables are read lazily and cached."""

    path: Path
    meta: dict[str, Any]
    summary: dict[str, Any]
    _tables: dict[str, pa.Table] = field(default_factory=dict, repr=False)
    # meta.json and summary.json as validated at load (runcheck.py), kept beside the dicts above
    meta_model: runcheck.Meta | None = field(default=None, repr=False)
    summary_model: BaseModel | None = field(default=None, repr=False)

    def summary_as(self, model: type[M]) -> M:
        """summary.json as `model` (its kind's summary model): the one validated at load, else validated now."""
        if isinstance(self.summary_model, model):
            return self.summary_model
        return runcheck.check_summary(self.summary, model, self.path / "summary.json")

    @property
    def kind(self) -> str:
        return str(self.meta.get("kind", "measure"))

    @property
    def spec(self) -> RunKind:
        kind = registry.get(self.kind)
        if kind is None:
            raise JitterscopeError(f"{self.path}: unknown run kind {self.kind!r}")
        return kind

    def has_table(self, name: str) -> bool:
        """The kind has this table and it is on disk (a per-node table: for at least one node)."""
        spec = self.spec.tables.get(name)
        if spec is None:
            return False
        return (self.path / name).is_dir() if spec.per_node else os.path.lexists(self.path / f"{name}.parquet")

    def table(self, name: str) -> pa.Table:
        """The table `name`, cast to its schema; a per-node table whole, with `host` and `cpu` columns.

        Missing (when required), corrupt or without its columns: one-line JitterscopeError naming the file."""
        if name not in self._tables:
            spec = self.spec.tables.get(name)
            if spec is None:
                raise JitterscopeError(
                    f"{self.path}: a {self.kind} run has no {name!r} table "
                    f"(it has {', '.join(self.spec.tables) or 'none'})"
                )
            self._tables[name] = (
                _read_node_table(self, name, spec)
                if spec.per_node
                else _read_file_table(self.path / f"{name}.parquet", spec, self.meta, self.kind)
            )
            if name == "detours" and not spec.per_node:  # the probe ran on the measured CPUs only
                found = set(pa.compute.unique(self._tables[name].column("cpu")).to_pylist()) - {None}
                _agree(self.path / "detours.parquet", self.cpus, found, "the table")
        return self._tables[name]

    def node_files(self, name: str) -> list[tuple[dict[str, Any], Path]]:
        """(node entry of meta.nodes, its file) for a per-node table."""
        return [
            (
                n,
                self.path
                / name
                / str(n.get("partition") or partition(str(n["host"]), int(n["cpu"])))
                / "part-0.parquet",
            )
            for n in self.nodes
        ]

    @property
    def nodes(self) -> list[dict[str, Any]]:
        return [dict(n) for n in self.meta.get("nodes", []) if isinstance(n, dict)]

    def node_runs(self) -> list[tuple[str, Run]]:
        """The run as single-machine runs: a run with nodes (cluster) gives one `measure` run per
        node, labelled `host:cpu`, whose tables are that node's files (detour indices, times and
        CPU are the node's own); any other run is itself, labelled by its host."""
        if not any(s.per_node for s in self.spec.tables.values()):
            return [(str(self.meta.get("host") or self.path.name), self)]
        return [(f"{n['host']}:{n['cpu']}", NodeRun.of(self, n)) for n in self.nodes]

    @property
    def detours(self) -> pa.Table:
        return self.table("detours")

    def detour_arrays(self, cpu: int | None = None) -> Detours:
        """The detours (all, or those of one CPU) as numpy arrays: the one place their columns are read."""
        det = self.detours
        cols = Detours(
            *(det.column(c).to_numpy(zero_copy_only=False).astype(np.int64) for c in ("cpu", "start_ns", "duration_ns"))
        )
        if cpu is None:
            return cols
        sel = cols.cpu == cpu
        return Detours(cols.cpu[sel], cols.start_ns[sel], cols.duration_ns[sel])

    @property
    def activity(self) -> pa.Table:
        return self.table("activity")

    @property
    def attribution(self) -> pa.Table:
        att = self.table("attribution")
        if self.kind == "measure" and att.num_rows and "detour" in att.column_names:
            _check_refs(att, self.detours.num_rows, self._table_file("attribution"))
        return att

    def _table_file(self, name: str) -> Path:
        return self.path / f"{name}.parquet"

    @property
    def cpus(self) -> list[int]:
        return [int(c) for c in self.meta.get("cpus", [])]

    @property
    def tracing(self) -> bool:
        return bool(self.meta.get("tracing", {}).get("enabled"))

    @property
    def duration_ns(self) -> int:
        return round(float(self.meta["duration_s"]) * 1e9)


@dataclass
class NodeRun(Run):
    """One node of a per-node run, read as a `measure` run (see `Run.node_runs`)."""

    parent: Run | None = None
    node: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, parent: Run, node: dict[str, Any]) -> NodeRun:
        part = str(node.get("partition") or partition(str(node["host"]), int(node["cpu"])))
        d = parent.path / "nodes" / part
        meta = (
            _read_json(d / "meta.json", "node metadata")
            if (d / "meta.json").exists()
            else {
                "host": node["host"],
                "duration_s": node.get("duration_s", parent.meta.get("duration_s")),
                "tracing": node.get("tracing") or {"enabled": False, "reason": "not traced"},
                "options": parent.meta.get("options", {}),
            }
        )
        meta = {**meta, "kind": "measure", "cpus": [int(node["cpu"])], "id": f"{parent.meta.get('id')}/{part}"}
        summary = _read_json(d / "summary.json", "node summary") if (d / "summary.json").exists() else {}
        return cls(d, meta, summary, parent=parent, node=node)

    def has_table(self, name: str) -> bool:
        return self.parent is not None and os.path.lexists(self._file(name))

    def _table_file(self, name: str) -> Path:
        return self._file(name)

    def _file(self, name: str) -> Path:
        assert self.parent is not None
        return next(f for n, f in self.parent.node_files(name) if n == self.node)

    def table(self, name: str) -> pa.Table:
        if name not in self._tables:
            assert self.parent is not None
            spec = self.parent.spec.tables.get(name)
            if spec is None or not spec.per_node:
                raise JitterscopeError(f"{self.parent.path}: a {self.parent.kind} run has no per-node {name!r} table")
            f = self._file(name)
            if not _check_node_file(self.parent, name, spec, self.node, f):
                self._tables[name] = spec.schema.empty_table()
            else:
                t = read_table(f, partial(pq.read_table, f))
                t = t.append_column("cpu", pa.array([int(self.node["cpu"])] * t.num_rows, pa.int32()))
                self._tables[name] = _cast(f, t, spec.schema)
        return self._tables[name]


def _check_refs(att: pa.Table, n_detours: int, f: Path) -> None:
    """Every attribution row names a detour of the run: a row past the table would index nothing
    (an emptied or truncated detours table beside a whole attribution)."""
    d = att.column("detour").to_numpy(zero_copy_only=False)
    if d.min(initial=0) < 0 or d.max(initial=-1) >= n_detours:
        raise JitterscopeError(
            f"{f}: corrupt table (rows refer to detour {int(d.max())}, the run has {n_detours} detours)"
        )


def _missing(f: Path, kind: str, name: str) -> JitterscopeError:
    return JitterscopeError(f"{f}: missing; a {kind} run needs its {name} table (the run is incomplete)")


def _cast(f: Path, table: pa.Table, schema: pa.Schema) -> pa.Table:
    absent = [n for n in schema.names if n not in table.column_names]
    if absent:
        raise JitterscopeError(f"{f}: corrupt table (no column {', '.join(absent)})")
    try:
        out = table.select(schema.names).cast(schema)
    except (pa.ArrowException, ValueError) as err:
        raise JitterscopeError(f"{f}: corrupt table ({str(err).splitlines()[0]})") from None
    try:
        runcheck.check_durations(f, out)
    except ValueError as err:
        raise JitterscopeError(str(err)) from None
    return out


def _read_file_table(f: Path, spec: TableSpec, meta: Mapping[str, Any], kind: str) -> pa.Table:
    if not os.path.lexists(f):
        if spec.required(meta):
            raise _missing(f, kind, f.stem)
        return spec.schema.empty_table()
    return _cast(f, read_table(f, lambda: pq.read_table(f)), spec.schema)


def _node_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([*(f for f in schema if f.name != "cpu"), ("host", pa.string()), ("cpu", pa.int32())])


def _read_node_table(run: Run, name: str, spec: TableSpec) -> pa.Table:
    files = [f for n, f in run.node_files(name) if _check_node_file(run, name, spec, n, f)]
    schema = _node_schema(spec.schema)
    if not files:
        return schema.empty_table()
    import pyarrow.dataset as ds  # see node_partitioning

    for f in files:
        boundedio.check_file(f, "Parquet table", boundedio.table_cap())
    dset = ds.dataset(
        [str(f) for f in files],
        format="parquet",
        partitioning=node_partitioning(),
        partition_base_dir=str(run.path / name),
    )
    try:
        table = dset.to_table()
    except (pa.ArrowException, OSError):
        for f in files:  # name the file that cannot be read
            read_table(f, partial(pq.read_table, f))
        raise
    return _cast(run.path / name, table, schema)


def _check_node_file(run: Run, name: str, spec: TableSpec, node: Mapping[str, Any], f: Path) -> bool:
    """Whether the node has this table; a required one missing is an error."""
    if os.path.lexists(f):
        return True
    if spec.required(node):
        raise _missing(f, run.kind, f"{name} (node {node.get('host')}:{node.get('cpu')})")
    return False


def _read_json(path: Path, what: str) -> dict[str, Any]:
    if not os.path.lexists(path):
        raise JitterscopeError(f"{path.parent}: not a jitterscope run ({path.name} missing)")
    data = boundedio.read_json(path, what, boundedio.RUN_JSON_MAX)
    if not isinstance(data, dict):
        raise JitterscopeError(f"{path}: corrupt {what} (not a JSON object)")
    return data


# meta.json's marker of a session not yet finished (session.py): the stage it reached.  Such a run is
# refused here with a pointer to `jitterscope analyze`, whose recovery (the kind's) finishes it.
INCOMPLETE = "incomplete"
# beside it: {pid, start} of the jitterscope recording that session, so `analyze` leaves a live run alone
OWNER = "owner"
SESSION_MARKS = (INCOMPLETE, OWNER)


class _Meta(Protocol):
    """What drop_session_marks needs of a meta.json's contents: removing a key."""

    def pop(self, key: str, default: None, /) -> object: ...


def drop_session_marks(meta: _Meta) -> str:
    """Remove an unfinished session's marks from `meta` (a finished run keeps neither); the stage it had reached."""
    stage = meta.pop(INCOMPLETE, None)
    meta.pop(OWNER, None)
    return "" if stage is None else str(stage)


def require_run_dir(path: str | os.PathLike[str]) -> Path:
    """`path` as a Path if it is a directory, else a one-line error saying what it is instead."""
    p = Path(path)
    if p.is_dir():
        return p
    if p.exists():
        raise JitterscopeError(f"{p}: not a directory (a run is a directory)")
    raise JitterscopeError(f"{p}: no such run directory")


def load_run(
    path: str | os.PathLike[str],
    check_tables: bool = True,
    kinds: tuple[str, ...] | None = None,
    purpose: str | None = None,
) -> Run:
    """Open a run directory, with a one-line error for anything that is not one.

    `kinds`: the kinds the caller reads; another kind is refused naming `purpose`
    ("export reads measure runs").  `check_tables`: required tables exist, every
    table present has a readable Parquet footer with the kind's columns."""
    p = require_run_dir(path)
    outpath.check_name(p, "run directory")  # pyarrow cannot open a path that is not UTF-8
    if (p / "capture.json").exists():  # measure/capture.py: raw data waiting for analysis
        raise JitterscopeError(
            f"{p}: an unfinished run (its measurement or analysis was cut short): `jitterscope analyze {p}` finishes it"
        )
    meta = _read_json(p / "meta.json", "run metadata")
    if INCOMPLETE in meta:
        raise JitterscopeError(
            f"{p}: an unfinished run (cut short while {meta[INCOMPLETE]}): `jitterscope analyze {p}` finishes it "
            f"or says what is lost"
        )
    if meta.get("format") != FORMAT:
        raise JitterscopeError(f"{p}: not a jitterscope run (meta.json has no format {FORMAT!r})")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        age = "older" if isinstance(version, int) and version < FORMAT_VERSION else "newer"
        raise JitterscopeError(
            f"{p}: run format version {version} is {age} than this jitterscope reads ({FORMAT_VERSION})"
        )
    kind = meta.get("kind", "measure")
    spec = registry.get(kind)
    if spec is None:
        raise JitterscopeError(
            f"{p / 'meta.json'}: kind must be one of {', '.join(map(repr, registry.names()))}, got {kind!r}"
        )
    meta_model = runcheck.check_meta(meta, p / "meta.json", spec.meta)
    if kinds is not None and kind not in kinds:
        what = f"{purpose} reads" if purpose else "expected"
        raise JitterscopeError(f"{p}: a {kind} run; {what} {' and '.join(kinds)} runs")
    summary = _read_json(p / "summary.json", "summary")
    summary_model = runcheck.check_summary(summary, spec.summary, p / "summary.json")
    if spec.summary_cpus and isinstance(summary.get("cpus"), dict):
        _agree(
            p / "summary.json",
            [int(c) for c in meta.get("cpus", [])],
            {int(c) for c in summary["cpus"] if str(c).isdigit()},
            "cpus",
        )
    run = Run(p, meta, summary, meta_model=meta_model, summary_model=summary_model)
    if check_tables:
        check_run_tables(run)
    return run


def _agree(path: Path, cpus: list[int], found: set[int], where: str) -> None:
    try:
        runcheck.check_cpus(path, cpus, found, where)
    except ValueError as err:
        raise JitterscopeError(str(err)) from None


def check_run_tables(run: Run) -> None:
    """Every required table exists; every table present has a readable footer and the kind's columns."""
    for name, spec in run.spec.tables.items():
        if spec.per_node:
            files = [f for n, f in run.node_files(name) if _check_node_file(run, name, spec, n, f)]
            want = [c for c in spec.schema.names if c != "cpu"]
        else:
            f = run.path / f"{name}.parquet"
            files = [f] if os.path.lexists(f) else []
            if not files and spec.required(run.meta):
                raise _missing(f, run.kind, name)
            want = spec.schema.names
        for f in files:
            schema = read_table(f, partial(pq.read_schema, f))
            absent = [c for c in want if c not in schema.names]
            if absent:
                raise JitterscopeError(f"{f}: corrupt table (no column {', '.join(absent)})")


def create_run_dir(path: str | os.PathLike[str]) -> Path:
    """Create a new, empty run directory; refuse to reuse an existing one."""
    p = outpath.check_name(path, "--out")
    if os.path.lexists(p):
        raise JitterscopeError(f"{p}: already exists; choose a new --out directory")
    return outpath.make_dir(p, "--out")  # no parents made, but for the default jitterscope-runs/


@contextlib.contextmanager
def finish_later_on_interrupt(run_dir: Path) -> Iterator[None]:
    """A Ctrl-C or SIGTERM while a run is built from what it recorded says where the raw
    records are kept and how to finish the run (`jitterscope analyze DIR`), not just
    "interrupted": the measurement itself is not lost."""
    try:
        yield
    except KeyboardInterrupt as err:
        if str(err):  # already says what was kept
            raise
        raise KeyboardInterrupt(
            f"interrupted while building the run: what was recorded is kept in {run_dir}; "
            f"`jitterscope analyze {run_dir}` finishes it"
        ) from None


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write a run's JSON file atomically (atomic.py: whole or not at all)."""
    atomic.write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def conform(name: str, table: pa.Table, kind: str = "measure") -> pa.Table:
    """`table` as the table `name` of run kind `kind`: its documented columns, in order, with their types."""
    spec = registry.get(kind)
    assert spec is not None, f"unknown run kind {kind!r}"
    schema = spec.tables[name].schema
    return table.select(schema.names).cast(schema)


def rows_table(rows: Sequence[object], schema: pa.Schema) -> pa.Table:
    """A table of rows, each a mapping (a TypedDict row): keys not in `schema` left out, missing ones null, as
    pa.Table.from_pylist makes it.
    Converted as one struct array, which reads the dicts in Arrow's C++: from_pylist first builds a Python list
    per column, four times slower (0.24 s against 0.06 s for sync's 104 k jitter rows)."""
    rows_as = pa.array(rows, type=pa.struct(list(schema)))
    return pa.Table.from_batches([pa.RecordBatch.from_struct_array(rows_as)], schema=schema)


def write_table(run_dir: Path, name: str, table: pa.Table, kind: str = "measure") -> None:
    """Write one of the run's tables, cast to its documented schema (atomically)."""
    with atomic.atomic_path(run_dir / f"{name}.parquet") as tmp:
        pq.write_table(conform(name, table, kind), tmp, compression="zstd")


def read_table(path: Path, read: Callable[[], Any], what: str = "Parquet table") -> Any:
    """read() (of the table at `path`), with a one-line error when Arrow cannot read it.
    The file is checked first: a regular file no larger than boundedio.table_cap()."""
    boundedio.check_file(path, what, boundedio.table_cap())
    try:
        return read()
    except (pa.ArrowException, OSError) as err:
        raise JitterscopeError(f"{path}: truncated or corrupt {what} ({str(err).splitlines()[0]})") from None


def base_meta(**fields: Any) -> dict[str, Any]:
    """meta.json's fixed part; callers add host, cpus, options and so on."""

    return {"format": FORMAT, "format_version": FORMAT_VERSION, "tool_version": __version__, **fields}
