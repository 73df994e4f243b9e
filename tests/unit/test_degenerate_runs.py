"""Degenerate data gives one line or a plain statement, never a traceback (issue 25, item 2).

Every command that reads a run x every degenerate run: one that measured no time
(`duration_s` 0, which compare divided by), and one whose detours table is empty while
its attribution rows remain (report, compare, tune plan, export indexed past the end).
And a designed experiment whose response never varied (doe's render formatted None).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from jitterscope.cli import main
from jitterscope.doe import render
from jitterscope.doe.analysis import Data, analyze
from jitterscope.doe.design import Design
from tests.fixtures_runs import build_run


def _zero_duration(d: Path) -> str:
    m = json.loads((d / "meta.json").read_text())
    m["duration_s"] = 0
    (d / "meta.json").write_text(json.dumps(m))
    return "duration_s is 0"


def _emptied_detours(d: Path) -> str:
    t = pq.read_table(d / "detours.parquet")
    pq.write_table(t.slice(0, 0), d / "detours.parquet")
    return "attribution.parquet: corrupt table"


DEGENERATE = {"zero-duration": _zero_duration, "emptied-detours": _emptied_detours}

# (argv with RUN, OUT; which degenerate runs the command must refuse; the rest it must read)
READERS: dict[str, tuple[list[str], set[str]]] = {
    "compare-base": (["compare", "RUN", "GOOD", "--json"], {"zero-duration", "emptied-detours"}),
    "compare-new": (["compare", "GOOD", "RUN", "--json"], {"zero-duration", "emptied-detours"}),
    "report": (["report", "RUN", "--out", "OUT/r.html"], {"emptied-detours"}),
    "export-csv": (["export", "RUN", "-f", "csv", "-o", "OUT/x.csv"], {"emptied-detours"}),
    "export-perfetto": (["export", "RUN", "-f", "perfetto", "-o", "OUT/x.json"], {"emptied-detours"}),
    "tune-plan": (["tune", "plan", "RUN", "--out", "OUT/plan.yaml"], {"emptied-detours"}),
    "simulate-by-source": (
        ["simulate", "--noise", "RUN", "--nodes", "4", "--phases", "10", "--phase", "1ms", "--by-source"],
        {"zero-duration", "emptied-detours"},
    ),
    "fit": (["fit", "RUN", "--phase", "1ms", "--replicates", "19"], {"zero-duration", "emptied-detours"}),
}


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_run(tmp_path_factory.mktemp("runs") / "good", seed=3, duration_s=1.0)


@pytest.mark.parametrize("kind", sorted(DEGENERATE))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_degenerate_run_is_one_line_or_read(good, reader, kind, tmp_path, capsys) -> None:
    d = tmp_path / "run"
    shutil.copytree(good, d)
    words = DEGENERATE[kind](d)
    (tmp_path / "out").mkdir()
    argv, refused = READERS[reader]
    subs = {"RUN": str(d), "GOOD": str(good)}
    argv = [subs.get(a, a.replace("OUT", str(tmp_path / "out"))) for a in argv]
    try:
        code = main(argv)
    except SystemExit as e:
        code = int(e.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    if kind in refused:
        assert code == 2 and err.count("\n") == 1, f"exit {code}: {err}"
        # fit reads no attribution, and simulate says "nothing to replay" in its own words
        if reader.startswith("compare") or (kind == "emptied-detours" and reader != "fit"):
            assert words in err, err
    else:
        assert code == 0, f"exit {code}: {err}"


def test_a_response_that_never_varies_is_said_plainly() -> None:
    d = Design(2)
    y = np.full((d.n, 3), 5.0)
    a = analyze(Data(d, ["one", "two"], y, [[3 * i + k for k in range(3)] for i in range(d.n)], ""))
    out = render.text(a)
    assert "the response was 5 in every run: no variation to allocate" in out
    assert a["allocation"]["error_percent"] == 0.0 and all(e["percent"] == 0.0 for e in a["allocation"]["effects"])
    json.dumps(a)  # --json serialises it
