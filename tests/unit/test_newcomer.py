"""What a newcomer meets works as written (issue 17.6): every file an example names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jitterscope.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PATH = re.compile(r"\bexamples/[\w./{},-]+\.(?:ya?ml|csv)\b")


def _texts() -> list[tuple[str, str]]:
    out = [(f"jitterscope {name} --help", mod.__doc__ or "") for name, mod in COMMANDS.items()]
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    out += [(str(p.relative_to(ROOT)), p.read_text()) for p in docs]
    return out


def _expand(path: str) -> list[str]:
    m = re.search(r"\{([^}]*)\}", path)
    if not m:
        return [path]
    return [q for alt in m.group(1).split(",") for q in _expand(path[: m.start()] + alt + path[m.end() :])]


@pytest.mark.parametrize("where,text", _texts(), ids=lambda x: x if len(x) < 60 else "")
def test_every_example_file_named_exists(where: str, text: str) -> None:
    missing = [p for raw in EXAMPLE_PATH.findall(text) for p in _expand(raw) if not (ROOT / p).exists()]
    assert not missing, f"{where} names {missing}, which do not exist"


def test_report_open_without_a_browser_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jitterscope.cli import main
    from tests.support.noise_runs import periodic_source, write_noise_run

    run = write_noise_run(tmp_path / "r", [periodic_source("irq", "local_timer", 1, 4e6, 5e3, 1e9)], 1.0)
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(var, raising=False)
    assert main(["report", str(run), "--open"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(run / "report.html") and (run / "report.html").exists()
    assert err.count("\n") == 1 and "report not opened: no graphical session" in err


def test_the_readme_by_source_example_is_quick_for_a_busy_run() -> None:
    """The README's `simulate --by-source` example took 4.5-7 minutes (one simulation of 10,000
    nodes per source).  Its own cost model (what it announces, and refuses over 10 min) must
    put it under a minute for a run with 60 sources, about what a loaded VM's 30 s shows."""
    import shlex

    from jitterscope.simulate import Job
    from jitterscope.simulate.engine import trace_cost
    from jitterscope.units import parse_count_list, parse_duration_s

    line = next(ln for ln in (ROOT / "README.md").read_text().splitlines() if "--by-source" in ln)
    words = shlex.split(line.split("#")[0])
    opt = {w: words[i + 1] for i, w in enumerate(words) if w.startswith("--") and i + 1 < len(words)}
    nodes, phases = parse_count_list(opt["--nodes"]), parse_count_list(opt["--phases"])
    reps = int(opt.get("--replications", 10))
    job = Job(tuple(nodes), tuple(phases), parse_duration_s(opt["--phase"]), "barrier", 2e-6, False, reps, 0)
    top = Job((max(nodes),), tuple(phases), job.phase_s, "barrier", 2e-6, False, reps, 0)
    secs = trace_cost(job, 1, 1.0)[0] + trace_cost(top, 60, 1.0)[0]
    assert secs < 60, f"the README's by-source example is estimated at {secs:.0f} s for 60 sources"
