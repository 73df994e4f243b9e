"""export: Perfetto tracks and nesting, LogGOPSim round trip, CSV rows."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from jitterscope.export import build_trace, read_loggopsim, write_csv, write_loggopsim, write_perfetto
from jitterscope.rundir import load_run
from tests.fixtures_runs import build_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return load_run(build_run(tmp_path_factory.mktemp("r") / "run", cpus=[1, 3], seed=21))


def test_perfetto_has_a_track_per_cpu_and_activity_nested_in_detours(run, tmp_path):
    res = write_perfetto(run, tmp_path / "t.json")
    trace = json.loads((tmp_path / "t.json").read_text())
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert names == {1: "CPU 1", 3: "CPU 3"}
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    det = [e for e in xs if e["cat"] == "detour"]
    assert len(det) == run.detours.num_rows == res["detours"]
    inner = [e for e in xs if e["cat"] != "detour"]
    assert {e["cat"] for e in inner} >= {"irq", "softirq", "thread", "work"}
    # Every activity event lies inside a detour on its own track.
    by_tid = {t: sorted((e["ts"], e["ts"] + e["dur"]) for e in det if e["tid"] == t) for t in names}
    for e in inner:
        spans = by_tid[e["tid"]]
        i = np.searchsorted([s for s, _ in spans], e["ts"], side="right") - 1
        assert i >= 0 and spans[i][0] - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= spans[i][1] + 1e-3
    # A detour's sources add up to its duration.
    d0 = det[0]
    assert sum(d0["args"]["sources_ns"].values()) == d0["args"]["duration_ns"]


def test_loggopsim_round_trips_every_detour(run, tmp_path):
    res = write_loggopsim(run, tmp_path / "noise.txt")
    assert res["files"] == [str(tmp_path / "noise.cpu1.txt"), str(tmp_path / "noise.cpu3.txt")]
    d = run.detours
    for c, f in zip((1, 3), res["files"]):
        text = open(f).read()
        assert text.startswith("#") and "\t" in text.splitlines()[-1]
        assert not text.endswith("\n")  # LogGOPSim would read a final empty line as one more detour
        back = read_loggopsim(f)
        sel = d.column("cpu").to_numpy() == c
        assert np.array_equal(back[:, 0], d.column("start_ns").to_numpy()[sel])
        assert np.array_equal(back[:, 1], d.column("duration_ns").to_numpy()[sel])
    one = write_loggopsim(run, tmp_path / "one.txt", cpu=3)
    assert one["files"] == [str(tmp_path / "one.txt")]


def test_csv_has_one_row_per_detour_with_its_sources(run, tmp_path):
    write_csv(run, tmp_path / "d.csv")
    rows = list(csv.DictReader(open(tmp_path / "d.csv")))
    assert len(rows) == run.detours.num_rows
    for r in rows[:200]:
        parts = dict(p.rsplit("=", 1) for p in r["sources"].split(";"))
        assert sum(int(v) for v in parts.values()) == int(r["duration_ns"])
        assert int(r["main_source_ns"]) == max(int(v) for v in parts.values())


def test_trace_builds_without_tracing(tmp_path):
    r = load_run(build_run(tmp_path / "nt", cpus=[2], seed=22, tracing=False))
    trace = build_trace(r)
    cats = {e.get("cat") for e in trace["traceEvents"] if e["ph"] == "X"}
    assert cats == {"detour"}
