"""The run directory: what a measurement leaves, and what every analysis reads.

Layout (see docs/run-format.md for the reference):

    meta.json            self-description: format version, host, kernel, CPUs, options
    summary.json         the documented, stable summary (see `summary.py`)
    detours.parquet      cpu, start_ns, duration_ns           (one row per detour)
    activity.parquet     cpu, start_ns, end_ns, kind, name, depth, detail
    attribution.parquet  detour, cpu, kind, name, ns, offset_ns (a detour's time per source)
    trace/               raw per-CPU tracefs pages and event formats (re-analysable)

All times are nanoseconds since the run's start (`meta.t0_tsc`), in one clock
shared by the probe and the kernel trace.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from jitterscope.errors import JitterscopeError
from jitterscope.runcheck import check_meta, check_summary

FORMAT = "jitterscope-run"
FORMAT_VERSION = 1

DETOUR_SCHEMA = pa.schema([("cpu", pa.int32()), ("start_ns", pa.int64()), ("duration_ns", pa.int64())])
ACTIVITY_SCHEMA = pa.schema([
    ("cpu", pa.int32()), ("start_ns", pa.int64()), ("end_ns", pa.int64()),
    ("kind", pa.string()), ("name", pa.string()), ("depth", pa.int16()), ("detail", pa.string()),
])
ATTRIBUTION_SCHEMA = pa.schema([
    ("detour", pa.int64()), ("cpu", pa.int32()), ("kind", pa.string()),
    ("name", pa.string()), ("ns", pa.int64()), ("offset_ns", pa.int64()),
])
TABLES = {"detours": DETOUR_SCHEMA, "activity": ACTIVITY_SCHEMA, "attribution": ATTRIBUTION_SCHEMA}


@dataclass
class Run:
    """A loaded run directory.  Tables are read lazily and cached."""

    path: Path
    meta: dict[str, Any]
    summary: dict[str, Any]
    _tables: dict[str, pa.Table] = field(default_factory=dict, repr=False)

    def table(self, name: str) -> pa.Table:
        if name not in self._tables:
            f = self.path / f"{name}.parquet"
            self._tables[name] = read_table(f, lambda: pq.read_table(f)) if f.exists() else TABLES[name].empty_table()
        return self._tables[name]

    @property
    def detours(self) -> pa.Table:
        return self.table("detours")

    @property
    def activity(self) -> pa.Table:
        return self.table("activity")

    @property
    def attribution(self) -> pa.Table:
        return self.table("attribution")

    @property
    def cpus(self) -> list[int]:
        return [int(c) for c in self.meta.get("cpus", [])]

    @property
    def tracing(self) -> bool:
        return bool(self.meta.get("tracing", {}).get("enabled"))

    @property
    def duration_ns(self) -> int:
        return int(round(float(self.meta["duration_s"]) * 1e9))


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise JitterscopeError(f"{path.parent}: not a jitterscope run ({path.name} missing)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise JitterscopeError(f"{path}: corrupt {what} ({err})") from None
    if not isinstance(data, dict):
        raise JitterscopeError(f"{path}: corrupt {what} (not a JSON object)")
    return data


def load_run(path: str | os.PathLike[str], check_tables: bool = True) -> Run:
    """Open a run directory, with a one-line error for anything that is not one."""
    p = Path(path)
    if not p.is_dir():
        raise JitterscopeError(f"{p}: no such run directory")
    meta = _read_json(p / "meta.json", "run metadata")
    if meta.get("format") != FORMAT:
        raise JitterscopeError(f"{p}: not a jitterscope run (meta.json has no format {FORMAT!r})")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        age = "older" if isinstance(version, int) and version < FORMAT_VERSION else "newer"
        raise JitterscopeError(
            f"{p}: run format version {version} is {age} than this jitterscope reads ({FORMAT_VERSION})")
    checked = check_meta(meta, p / "meta.json")
    summary = _read_json(p / "summary.json", "summary")
    check_summary(summary, checked.kind, p / "summary.json")
    run = Run(p, meta, summary)
    if check_tables:
        for name in TABLES:
            f = p / f"{name}.parquet"
            if f.exists():
                try:
                    pq.read_metadata(f)
                except (pa.ArrowException, OSError) as err:
                    raise JitterscopeError(f"{f}: truncated or corrupt Parquet table ({str(err).splitlines()[0]})") from None
    return run


def create_run_dir(path: str | os.PathLike[str]) -> Path:
    """Create a new, empty run directory; refuse to reuse an existing one."""
    p = Path(path)
    if p.exists():
        raise JitterscopeError(f"{p}: already exists; choose a new --out directory")
    try:
        p.mkdir(parents=True)
    except OSError as err:
        raise JitterscopeError(f"{p}: cannot create run directory ({err.strerror})") from None
    return p


def write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)


def conform(name: str, table: pa.Table) -> pa.Table:
    """`table` as the run table `name`: its documented columns, in order, with their types."""
    return table.select(TABLES[name].names).cast(TABLES[name])


def write_table(run_dir: Path, name: str, table: pa.Table) -> None:
    """Write one of the run's tables, cast to its documented schema."""
    pq.write_table(conform(name, table), run_dir / f"{name}.parquet", compression="zstd")


def read_table(path: Path, read: Callable[[], pa.Table], what: str = "Parquet table") -> pa.Table:
    """read() (of the table at `path`), with a one-line error when Arrow cannot read it."""
    try:
        return read()
    except (pa.ArrowException, OSError) as err:
        raise JitterscopeError(f"{path}: unreadable {what} ({str(err).splitlines()[0]})") from None


def base_meta(**fields: Any) -> dict[str, Any]:
    """meta.json's fixed part; callers add host, cpus, options and so on."""
    from jitterscope import __version__

    return {"format": FORMAT, "format_version": FORMAT_VERSION, "tool_version": __version__, **fields}
