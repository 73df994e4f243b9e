"""Run kinds register themselves (kinds.py): every kind is found from its own package, and report,
compare, export and analyze reach a kind only through the registry, so a kind they have never
heard of works once registered.  A loaded run keeps the models its meta.json and summary.json
were validated as."""

from __future__ import annotations

import argparse
import ast
import importlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pydantic import BaseModel

import jitterscope
from jitterscope import kinds, runcheck, rundir
from jitterscope.cli import main
from jitterscope.compare.runs import compare_runs, render_text
from jitterscope.errors import JitterscopeError
from jitterscope.kinds import Comparison, Exporter, Lazy, Recovery, RunKind, TableSpec
from jitterscope.measure.kind import MeasureSummary
from jitterscope.report.pages import write_report
from tests.support import source_ast
from tests.support.noise_runs import periodic_source, write_noise_run

THINGS = pa.schema([("x", pa.int64())])


class ToySummary(BaseModel):
    things: int


def _page(run: rundir.Run) -> tuple[str, list[Any]]:
    return f"<!doctype html><title>toy</title><p>{run.summary['things']} things</p>", []


def _compare(base: rundir.Run, new: rundir.Run, th: Any) -> dict[str, Any]:
    return {"kind": "test-toy", "delta": new.summary["things"] - base.summary["things"]}


def _write(run: rundir.Run, out: Path, cpu: int | None) -> dict[str, Any]:
    xs = run.table("things").column("x").to_pylist()
    out.write_text("\n".join(map(str, xs)) + "\n")
    return {"rows": len(xs), "files": [str(out)]}


def _finds(d: Path) -> bool:
    return (d / "toy.raw").exists()


def _analyze(args: argparse.Namespace) -> int:
    xs = [int(v) for v in (args.run / "toy.raw").read_text().split()]
    rundir.write_json(args.run / "meta.json", rundir.base_meta(kind="test-toy", duration_s=1.0))
    rundir.write_table(args.run, "things", pa.table({"x": xs}), kind="test-toy")
    rundir.write_json(args.run / "summary.json", {"things": len(xs)})
    (args.run / "toy.raw").unlink()
    print(f"rebuilt {len(xs)} things")
    return 0


TOY = RunKind(
    "test-toy",
    tables={"things": TableSpec(THINGS)},
    summary=ToySummary,
    page=_page,
    comparison=Comparison(_compare, lambda res: f"{res['delta']:+d} things"),
    exporters={"csv": Exporter(_write, lambda res: f"{res['rows']} rows")},
    recovery=Recovery(_finds, _analyze),
)


@pytest.fixture()
def toy() -> Any:
    kinds.register(TOY)
    yield TOY
    kinds.unregister(TOY.name)


def _toy_run(path: Path, xs: list[int]) -> Path:
    d = rundir.create_run_dir(path)
    rundir.write_json(d / "meta.json", rundir.base_meta(kind="test-toy", duration_s=1.0))
    rundir.write_table(d, "things", pa.table({"x": xs}), kind="test-toy")
    rundir.write_json(d / "summary.json", {"things": len(xs)})
    return d


def test_every_kind_is_found_from_its_own_package() -> None:
    """Each kind is declared in exactly one `<package>/kind.py`, and nothing else registers one."""
    pkg = Path(jitterscope.__file__).resolve().parent
    declared: dict[str, list[str]] = {}
    for f in sorted(pkg.rglob("*.py")):
        for node in source_ast.nodes(f):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "RunKind":
                name = node.args[0]
                assert isinstance(name, ast.Constant), f"{f}: RunKind's name is not a literal"
                declared.setdefault(name.value, []).append(str(f.relative_to(pkg)))
    assert set(declared) == set(kinds.names()) - {TOY.name}
    for name, where in declared.items():
        assert len(where) == 1 and where[0].endswith("/kind.py"), f"{name}: declared in {where}"
    assert kinds.names()[:2] == ["measure", "cluster"]  # the order people read lists of kinds in


def test_a_kind_is_found_in_its_own_package_before_all_are_imported() -> None:
    """kinds.get("measure") imports measure's kind.py alone (every kind's took 0.16 s, serial in an analysis);
    a name no package holds still finds the kinds of every package (a fresh interpreter: this one has them all)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from jitterscope import kinds\n"
        "def loaded():\n"
        "    mods = [m.split('.') for m in sys.modules]\n"
        "    return sorted(m[1] for m in mods if len(m) == 3 and m[0] == 'jitterscope' and m[2] == 'kind')\n"
        "print(kinds.get('measure').name, loaded())\n"
        "print(kinds.get('place-compare') is not None, len(loaded()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    first, second = out.stdout.splitlines()
    assert first == "measure ['measure']"
    assert second == f"True {len(list(Path(jitterscope.__file__).parent.glob('*/kind.py')))}"


def test_a_lazy_hook_names_a_real_function() -> None:
    hooks = [h for k in kinds.all() for h in (k.page, *(k.comparison or ()), *(k.recovery or ())[:2])]
    lazy = [h for h in hooks if isinstance(h, Lazy)]
    assert lazy
    for h in lazy:
        module, _, name = h.target.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), h


def test_report_compare_export_and_analyze_reach_a_new_kind_through_the_registry(
    toy: RunKind, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _toy_run(tmp_path / "a", [1, 2]), _toy_run(tmp_path / "b", [1, 2, 3, 4, 5])
    page = write_report(a)
    assert "2 things" in page.read_text()
    res = compare_runs(a, b)
    assert res == {"kind": "test-toy", "delta": 3} and render_text(res) == "+3 things"

    assert main(["export", str(b), "--format", "csv", "-o", str(tmp_path / "b.csv")]) == 0
    assert (tmp_path / "b.csv").read_text().split() == ["1", "2", "3", "4", "5"]
    assert capsys.readouterr().out.strip() == "5 rows"
    assert main(["export", str(b), "--format", "perfetto", "-o", str(tmp_path / "b.json")]) == 2
    assert "is a test-toy run: it exports as --format csv only" in capsys.readouterr().err

    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "toy.raw").write_text("7 8 9\n")
    assert main(["analyze", str(cut)]) == 0
    assert "rebuilt 3 things" in capsys.readouterr().out
    assert rundir.load_run(cut).table("things").column("x").to_pylist() == [7, 8, 9]


def test_a_kind_without_a_page_or_comparison_says_so(tmp_path: Path) -> None:
    plain = RunKind("test-plain", tables={}, summary=ToySummary)
    kinds.register(plain)
    try:
        d = rundir.create_run_dir(tmp_path / "p")
        rundir.write_json(d / "meta.json", rundir.base_meta(kind="test-plain", duration_s=1.0))
        rundir.write_json(d / "summary.json", {"things": 0})
        with pytest.raises(JitterscopeError, match="a test-plain directory has no report page of its own$"):
            write_report(d)
        with pytest.raises(JitterscopeError, match="runs of kind test-plain are not compared$"):
            compare_runs(d, d)
    finally:
        kinds.unregister(plain.name)


def test_a_kind_registered_twice_differently_is_refused() -> None:
    kinds.register(TOY)
    try:
        kinds.register(TOY)  # the same declaration again (a module imported twice): fine
        with pytest.raises(ValueError, match="registered twice"):
            kinds.register(RunKind("test-toy", tables={}, summary=ToySummary))
    finally:
        kinds.unregister(TOY.name)


def test_a_loaded_run_keeps_its_validated_models(tmp_path: Path) -> None:
    d = write_noise_run(tmp_path / "r", [periodic_source("irq", "local_timer", 1, 4e6, 5e3, 1e9)], 1.0)
    run = rundir.load_run(d)
    assert isinstance(run.meta_model, runcheck.Meta) and run.meta_model.kind == "measure"
    assert isinstance(run.summary_model, MeasureSummary)
    assert run.summary_as(MeasureSummary) is run.summary_model  # not validated again
    assert run.meta_model.model_dump()["kind"] == run.meta["kind"]  # the dicts stay for today's callers

    class Narrow(BaseModel):  # another model of the same file: validated now, from the kept dict
        lost_events: int

    assert run.summary_as(Narrow).lost_events == json.loads((d / "summary.json").read_text())["lost_events"]
    with pytest.raises(JitterscopeError, match=r"summary.json: things is missing"):
        run.summary_as(ToySummary)
