"""Every command that accepts a run (issue 17.3): reads a cluster run correctly, and refuses a run
with a deleted or corrupted table in one line naming the file — never a silently wrong answer.

Run in-process through cli.main (the real argument parsing and error handling, without an
interpreter start per case), so the whole matrix costs seconds."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from jitterscope.cli import main
from tests.fixtures_runs import build_cluster_run, build_run

NODES = [("node-a", 1), ("node-b", 1), ("node-c", 1)]  # three hosts, all measuring CPU 1


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("runs")
    out = {
        "measure": build_run(d / "measure", seed=3, duration_s=2.0),
        "cluster": build_cluster_run(d / "cluster", NODES),
    }
    damage = {  # name -> (source run, file to damage, how)
        "measure-no-detours": ("measure", "detours.parquet", "delete"),
        "measure-bad-attribution": ("measure", "attribution.parquet", "truncate"),
        "measure-no-activity": ("measure", "activity.parquet", "delete"),
        "cluster-no-node-detours": ("cluster", "detours/host=node-b/cpu=1/part-0.parquet", "delete"),
        "cluster-bad-node-attribution": ("cluster", "attribution/host=node-c/cpu=1/part-0.parquet", "truncate"),
    }
    for name, (src, rel, how) in damage.items():
        shutil.copytree(out[src], d / name)
        f = d / name / rel
        if how == "delete":
            f.unlink()
        else:
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
        out[name] = d / name
        out[name + ":file"] = f
    return out


def _commands(run: Path, tmp: Path) -> dict[str, list[str]]:
    model = tmp / "model.yaml"
    model.write_text(
        f"resolution: 10us\ncomponents:\n  - {{name: a, period: 50ms, etp: {{run: {run}, "
        f"base: 5ms{', node: node-b:1' if 'cluster' in run.name else ''}}}}}\n"
    )
    sim = ["--nodes", "1,4", "--phases", "20", "--phase", "1ms", "--replications", "2"]
    return {
        "report": ["report", str(run), "--out", str(tmp / "r.html")],
        "compare": ["compare", str(run), str(run), "--json"],
        "export-csv": ["export", str(run), "-f", "csv", "-o", str(tmp / "x.csv")],
        "export-loggopsim": ["export", str(run), "-f", "loggopsim", "-o", str(tmp / "x.txt")],
        "export-perfetto": ["export", str(run), "-f", "perfetto", "-o", str(tmp / "x.json")],
        "simulate": ["simulate", "--noise", str(run), *sim, "--json"],
        "simulate-by-source": ["simulate", "--noise", str(run), *sim, "--by-source", "--json"],
        "simulate-fit": ["simulate", "--noise", f"fit:{run}", *sim, "--json"],
        "fit": ["fit", str(run), "--phase", "1ms", "--replicates", "19", "--json"],
        "ptts": ["ptts", str(model), "--json"],
    }


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


DAMAGED = ["measure-no-detours", "measure-bad-attribution", "cluster-no-node-detours", "cluster-bad-node-attribution"]


@pytest.mark.parametrize("damaged", DAMAGED)
def test_every_command_refuses_a_damaged_run_naming_the_file(runs, damaged, tmp_path, capsys) -> None:
    bad = runs[damaged + ":file"]
    for name, argv in _commands(runs[damaged], tmp_path).items():
        code, out, err = _run(argv, capsys)
        assert code == 2, f"{name} on {damaged}: exit {code}, stdout {out[:200]!r}"
        assert err.count("\n") == 1 and "Traceback" not in err, f"{name}: {err}"
        assert str(bad) in err, f"{name} on {damaged} does not name {bad}: {err}"


def test_a_traced_run_without_its_activity_is_refused(runs, tmp_path, capsys) -> None:
    for name in ("report", "export-perfetto", "fit"):
        code, _, err = _run(_commands(runs["measure-no-activity"], tmp_path)[name], capsys)
        assert code == 2 and str(runs["measure-no-activity:file"]) in err and "missing" in err, name


def test_every_command_reads_a_cluster_run_node_by_node(runs, tmp_path, capsys) -> None:
    run = runs["cluster"]
    cmds = _commands(run, tmp_path)
    results = {}
    for name, argv in cmds.items():
        code, out, err = _run(argv, capsys)
        assert code == 0, f"{name}: exit {code}: {err}"
        results[name] = out
    per_node = {}
    for host, cpu in NODES:
        t = pq.read_table(run / "detours" / f"host={host}/cpu={cpu}")
        per_node[f"{host}:{cpu}"] = t.num_rows
    rows = list(csv.DictReader((tmp_path / "x.csv").read_text().splitlines()))
    assert {r["node"] for r in rows} == set(per_node) and len(rows) == sum(per_node.values())
    assert sorted(p.name for p in tmp_path.glob("x.*.cpu1.txt")) == [f"x.{h}.cpu1.txt" for h, _ in NODES]
    trace = json.loads((tmp_path / "x.json").read_text())
    assert {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"} == set(per_node)
    sim = json.loads(results["simulate"])
    assert sim["model"]["noise"]["cpus"] == list(per_node)  # one timeline per node
    assert 0 < sim["results"][0]["slowdown"] < 1  # not 'noise-free' (2.2e-14)
    fit = json.loads(results["fit"])
    assert fit["delays"]["cpus"] == list(per_node) and fit["delays"]["zero_fraction"] < 1
    bs = json.loads(results["simulate-by-source"])["by_source"]["sources"]
    assert bs and all(s["noise_ns"] > 0 for s in bs)
    assert (tmp_path / "r.html").exists()
    assert json.loads(results["compare"])["kind"] == "cluster"


def test_a_kind_a_command_does_not_read_is_refused_in_one_line(tmp_path, capsys) -> None:
    import pyarrow as pa
    from pydantic import BaseModel

    from jitterscope import kinds, rundir

    class Other(BaseModel):
        run: dict

    rundir.register_kind(
        rundir.RunKind("test-other", {"things": rundir.TableSpec(pa.schema([("x", pa.int64())]))}, summary=Other)
    )
    try:
        d = rundir.create_run_dir(tmp_path / "other")
        rundir.write_json(d / "meta.json", rundir.base_meta(kind="test-other", duration_s=1.0))
        rundir.write_json(d / "summary.json", {"run": {}})
        rundir.write_table(d, "things", pa.table({"x": [1]}), kind="test-other")
        for name, argv in _commands(d, tmp_path).items():
            code, _, err = _run(argv, capsys)
            assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, f"{name}: {code} {err}"
    finally:
        kinds.unregister("test-other")
