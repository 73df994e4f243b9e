"""The run-kind registry: any kind loads and reads; a missing or corrupt table is an error naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pydantic import BaseModel

from jitterscope import kinds, rundir
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import (
    RunKind,
    TableSpec,
    load_run,
    never,
    register_kind,
    write_json,
    write_table,
)
from tests.support.noise_runs import periodic_source, write_noise_run


def _run(tmp_path: Path, tracing: bool = True) -> Path:
    return write_noise_run(
        tmp_path / "r", [periodic_source("irq", "local_timer", 1, 4e6, 5e3, 1e9)], 1.0, tracing=tracing
    )


def _error(path: Path, read: str | None = None) -> str:
    with pytest.raises(JitterscopeError) as ei:
        run = load_run(path, check_tables=read is None)
        if read:
            run.table(read)
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("name", ["detours", "attribution", "activity"])
def test_a_deleted_required_table_is_an_error_naming_it_at_load_and_at_read(tmp_path: Path, name: str) -> None:
    run = _run(tmp_path)
    (run / f"{name}.parquet").unlink()
    for read in (None, name):
        msg = _error(run, read)
        assert msg.startswith(str(run / f"{name}.parquet")) and "missing" in msg


@pytest.mark.parametrize("damage", ["truncate", "garbage", "wrong columns"])
def test_a_corrupt_table_is_an_error_naming_it(tmp_path: Path, damage: str) -> None:
    run = _run(tmp_path)
    f = run / "detours.parquet"
    if damage == "truncate":
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    elif damage == "garbage":
        f.write_bytes(b"PAR1" + b"\0" * 100)
    else:
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"cpu": [1], "when": [2]}), f)
    for read in (None, "detours"):
        assert _error(run, read).startswith(f"{f}: ")


def test_untraced_run_has_no_attribution_or_activity_and_reads_them_empty(tmp_path: Path) -> None:
    run = load_run(_run(tmp_path, tracing=False))
    assert run.detours.num_rows > 0
    assert run.attribution.num_rows == 0 and run.activity.num_rows == 0
    assert run.activity.schema == rundir.ACTIVITY_SCHEMA
    with pytest.raises(JitterscopeError, match="a measure run has no 'bsp_phases' table"):
        run.table("bsp_phases")


def test_a_run_of_another_kind_is_refused_naming_the_purpose(tmp_path: Path) -> None:
    run = _run(tmp_path)
    with pytest.raises(JitterscopeError, match=r"a measure run; frobnicate reads cluster runs$"):
        load_run(run, kinds=("cluster",), purpose="frobnicate")


class _TestSummary(BaseModel):
    waits: int


def test_a_new_kind_registers_writes_loads_and_reads(tmp_path: Path) -> None:
    waits = pa.schema([("thread", pa.int32()), ("wait_ns", pa.int64())])
    register_kind(
        RunKind(
            "test-sync",
            tables={"waits": TableSpec(waits), "locks": TableSpec(pa.schema([("lock", pa.string())]), required=never)},
            summary=_TestSummary,
        )
    )
    try:
        d = rundir.create_run_dir(tmp_path / "s")
        write_json(d / "meta.json", rundir.base_meta(kind="test-sync", duration_s=1.0))
        write_json(d / "summary.json", {"waits": 2})
        write_table(d, "waits", pa.table({"wait_ns": [5, 7], "thread": [1, 2]}), kind="test-sync")
        run = load_run(d, kinds=("test-sync",))
        assert run.table("waits").column("wait_ns").to_pylist() == [5, 7]
        assert run.table("waits").schema == waits
        assert run.table("locks").num_rows == 0
        (d / "summary.json").write_text(json.dumps({"waits": "many"}))
        assert "summary.json: waits must be an integer" in _error(d)
        (d / "summary.json").write_text(json.dumps({"waits": 2}))
        (d / "waits.parquet").unlink()
        assert _error(d).startswith(f"{d / 'waits.parquet'}: missing")
    finally:
        kinds.unregister("test-sync")


def test_an_unknown_kind_names_the_registered_ones(tmp_path: Path) -> None:
    run = _run(tmp_path)
    meta = json.loads((run / "meta.json").read_text())
    meta["kind"] = "quantum"
    (run / "meta.json").write_text(json.dumps(meta))
    assert _error(run).startswith(f"{run / 'meta.json'}: kind must be one of 'measure', 'cluster'")
