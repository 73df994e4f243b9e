"""A run whose files disagree or hold impossible values is refused at load, in the one place runs are read
(rundir/runcheck), by every command that reads it: compare, simulate --noise and export (they once summed a
hand-edited negative duration, and a meta.json whose CPU list disagreed with its tables, into an answer)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tests.support.noise_runs import periodic_source, write_noise_run


def _run(path: Path) -> Path:
    return write_noise_run(path, [periodic_source("irq", "local_timer", 1, 4e6, 5e3, 1e9)], 1.0)


def _negative_duration(run: Path) -> None:
    f = run / "detours.parquet"
    t = pq.read_table(f)
    d = t.column("duration_ns").to_pylist()
    d[0] = -5_000_000
    pq.write_table(t.set_column(t.schema.get_field_index("duration_ns"), "duration_ns", pa.array(d, pa.int64())), f)


def _cpus_disagree(run: Path) -> None:
    meta = json.loads((run / "meta.json").read_text())
    meta["cpus"] = [0]  # the tables and summary.json hold CPU 1
    (run / "meta.json").write_text(json.dumps(meta))


def _table_cpu_stray(run: Path) -> None:
    f = run / "detours.parquet"
    t = pq.read_table(f)
    cpu = pc.add(t.column("cpu"), 1).cast(t.schema.field("cpu").type)
    pq.write_table(t.set_column(t.schema.get_field_index("cpu"), "cpu", cpu), f)


def _cli(capsys, *args: str) -> tuple[int, str]:
    from jitterscope.cli import main

    capsys.readouterr()
    rc = main(list(args))
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(
    "damage, words",
    [
        (_negative_duration, "duration_ns"),
        (_cpus_disagree, "meta.json's cpus"),
        (_table_cpu_stray, "meta.json's cpus"),
    ],
    ids=["negative duration", "meta cpus vs summary", "table cpu vs meta"],
)
def test_refused_by_every_reader(tmp_path, capsys, damage, words):
    good, bad = _run(tmp_path / "good"), _run(tmp_path / "bad")
    damage(bad)
    for args in (
        ("compare", str(good), str(bad)),
        ("simulate", "--noise", str(bad), "--nodes", "4", "--phases", "10", "--phase", "1ms"),
        ("export", "--format", "csv", "-o", str(tmp_path / "x.csv"), str(bad)),
    ):
        rc, stderr = _cli(capsys, *args)
        assert rc == 2, (args, rc, stderr)
        err = stderr.strip().splitlines()
        assert len(err) == 1 and words in err[0] and str(bad) in err[0], (args, stderr)
