"""Every file jitterscope reads is a regular file under a stated size cap (issue 25, item 1).

The matrix: every command x every kind of file it reads (a configuration file it is
given, a file a configuration names, a run directory's JSON and tables) x every bad
file (a device, a symlink to a device, a FIFO, a symlink loop, a directory, a file past
its cap).  Each case must end in one line naming the file and exit 2, never an
out-of-memory kill, a hang on a FIFO or a traceback.  In-process through cli.main, so
the whole matrix costs seconds; a case that hangs is caught by the timeout below.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from jitterscope import boundedio
from tests.fixtures_runs import build_run
from tests.support.cli_run import run_cli

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]


def _device(p: Path) -> str:
    p.symlink_to("/dev/zero")  # what the attack used: a file that never ends
    return "character device"


def _fifo(p: Path) -> str:
    os.mkfifo(p)  # nobody writes it: a reader that opens it blocking hangs
    return "FIFO"


def _loop(p: Path) -> str:
    p.symlink_to(p.name)
    return "symlink loop"


def _directory(p: Path) -> str:
    p.mkdir()
    return "directory"


def _huge(cap: int) -> Callable[[Path], str]:
    def make(p: Path) -> str:
        with open(p, "wb") as f:  # sparse: costs no disk
            f.truncate(cap + 1)
        return "docs/limits.md"

    return make


BAD = {
    "device": _device,
    "fifo": _fifo,
    "loop": _loop,
    "directory": _directory,
    "huge": _huge(boundedio.CONFIG_MAX),
}
BAD_RUN_JSON = {**BAD, "huge": _huge(boundedio.RUN_JSON_MAX)}

MODEL = "resolution: 1ms\ncomponents:\n  - {name: a, period: 10ms, offset: 0ms, etp: {csv: PROFILE}}\n"


_run = run_cli


# the commands that read a file a user names: (argv with BAD for the file, what the error says)
CONFIG_READERS: dict[str, list[str]] = {
    "ptts-model": ["ptts", "BAD"],
    "ptts-etp-csv": ["ptts", "MODEL"],
    "doe-plan": ["doe", "run", "BAD", "--dry-run"],
    "pipeline-graph": ["pipeline", "compile", "BAD"],
    "pipeline-run-graph": ["pipeline", "run", "BAD", "--iterations", "10"],
    "tune-plan": ["tune", "apply", "BAD", "--dry-run"],
    "protect-replay": ["protect", "--replay", "BAD", "--threshold", "1GB/s"],
    "protect-reduction-table": ["protect", "reduction", "--congested", "BAD", "--protected", "BAD"],
    "place-topology": ["place", "--dry-run", "--topology", "BAD", "--tasks", "1"],
}


@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("reader", sorted(CONFIG_READERS))
def test_a_bad_input_file_is_one_line_naming_it(reader, bad, tmp_path, capsys) -> None:
    f = tmp_path / "input.file"
    words = BAD[bad](f)
    model = tmp_path / "model.yaml"
    model.write_text(MODEL.replace("PROFILE", str(f)))
    argv = [{"BAD": str(f), "MODEL": str(model)}.get(a, a) for a in CONFIG_READERS[reader]]
    code, err = _run(argv, capsys)
    assert code == 2, f"exit {code}: {err}"
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(f) in err and words in err, err


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_run(tmp_path_factory.mktemp("runs") / "run", seed=3, duration_s=1.0)


RUN_READERS: dict[str, list[str]] = {
    "report": ["report", "RUN", "--out", "OUT/r.html"],
    "compare": ["compare", "RUN", "RUN", "--json"],
    "export": ["export", "RUN", "-f", "csv", "-o", "OUT/x.csv"],
    "simulate": ["simulate", "--noise", "RUN", "--nodes", "4", "--phases", "10", "--phase", "1ms", "--json"],
    "fit": ["fit", "RUN", "--phase", "1ms", "--replicates", "19", "--json"],
    "tune-plan": ["tune", "plan", "RUN", "--out", "OUT/plan.yaml"],
}


@pytest.mark.parametrize("name", ["meta.json", "summary.json", "detours.parquet"])
@pytest.mark.parametrize("bad", sorted(BAD_RUN_JSON))
@pytest.mark.parametrize("reader", sorted(RUN_READERS))
def test_a_run_with_a_bad_file_is_one_line_naming_it(run, reader, bad, name, tmp_path, capsys) -> None:
    if bad == "huge" and name.endswith(".parquet"):
        pytest.skip("a table's cap is half the available memory: a sparse file that large is not made here")
    d = tmp_path / "run"
    shutil.copytree(run, d)
    (d / name).unlink()
    words = BAD_RUN_JSON[bad](d / name)
    (tmp_path / "out").mkdir()
    argv = [{"RUN": str(d)}.get(a, a.replace("OUT", str(tmp_path / "out"))) for a in RUN_READERS[reader]]
    code, err = _run(argv, capsys)
    assert code == 2, f"exit {code}: {err}"
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(d / name) in err and words in err, err


def test_the_caps_are_stated_in_limits_md() -> None:
    text = (ROOT / "docs" / "limits.md").read_text()
    assert f"{boundedio.CONFIG_MAX >> 20} MiB" in text and f"{boundedio.RUN_JSON_MAX >> 20} MiB" in text
    assert "half the available memory" in text


def test_a_file_that_grows_past_its_cap_while_read_is_refused(tmp_path) -> None:
    # /proc files report size 0 and are regular: the read itself is bounded, not only the stat
    with pytest.raises(boundedio.JitterscopeError, match="grew past"):
        boundedio.read_bytes("/proc/self/maps", "maps", cap=10)
