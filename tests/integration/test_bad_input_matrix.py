"""Every command x every class of bad value: exit 2, one line on stderr, no traceback,
and nothing on the machine changed (issue 17, item 5).

All cases fail before measuring.  They run through cli.main in one separate process
(tests/support/cli_batch.py: one Python start-up for all, under the same address-space
limit), and the cases in SUBPROCESS also as the real tool, `python -m jitterscope`, as
a user runs it: the entry point's own exit path.  Each case then asserts on its own.
The journal lives in a private state directory, so "no new journal" is exact.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import cli_batch
from tests.support.noise_runs import periodic_source, write_noise_run

from .conftest import snapshot, tracefs_mounts

ROOT = Path(__file__).resolve().parents[2]
HUGE_CPUS = "0-99999999999"
NOPE = "/nonexistent-jitterscope-dir"

# a simulate command line that is valid until a case adds one bad value
SIMULATE = ["simulate", "--noise", "normal(mean=1ms,sd=0.1ms)", "--nodes", "8", "--phases", "10", "--phase", "10ms"]

# (case id, argv with placeholders RUN / BADRUN / PLAN / BADPLAN / MODEL / BADMODEL / NORUN, words in the error)
CASES: list[tuple[str, list[str], str]] = [
    # measure
    ("measure-huge-cpus", ["measure", "--cpus", HUGE_CPUS, "--duration", "1s"], "does not exist"),
    ("measure-empty-cpus", ["measure", "--cpus", " ", "--duration", "1s"], "empty CPU list"),
    ("measure-malformed-cpus", ["measure", "--cpus", "1-x", "--duration", "1s"], "malformed CPU list"),
    ("measure-absent-cpu", ["measure", "--cpus", "4096", "--duration", "1s"], "does not exist"),
    ("measure-bad-duration", ["measure", "--duration", "5 parsecs"], "unknown unit"),
    ("measure-negative-duration", ["measure", "--duration=-1s"], "must be positive"),
    ("measure-huge-duration", ["measure", "--duration", "1e99s"], "too long"),
    ("measure-tiny-duration", ["measure", "--duration", "1ns"], "too short"),
    ("measure-huge-size", ["measure", "--duration", "1s", "--buffer", "1e30G"], "too large"),
    ("measure-unwritable-out", ["measure", "--duration", "1s", "--out", "/proc/forbidden/run"], "no such directory"),
    ("measure-no-parents", ["measure", "--duration", "1s", "--out", f"{NOPE}/dir/x"], "not created for you"),
    # check
    ("check-nothing-to-check", ["check"], "nothing to check against"),
    ("check-share-without-unit", ["check", "--max-noise", "5"], "malformed --max-noise '5'"),
    ("check-share-over-100", ["check", "--max-noise", "150%"], "must be from 0% to 100%"),
    ("check-detour-without-unit", ["check", "--max-detour", "5"], "needs a unit"),
    ("check-no-run", ["check", "--baseline", "NORUN"], "no such run directory"),
    ("check-bad-meta", ["check", "--baseline", "BADMETA"], "meta.json: kind must be one of"),
    ("check-cpu-not-in-baseline", ["check", "--baseline", "RUN", "--cpus", "0"], "has no CPU 0"),
    ("check-huge-cpus", ["check", "--max-p99", "1ms", "--cpus", HUGE_CPUS], "does not exist"),
    ("check-nan", ["check", "--baseline", "RUN", "--min-ppm", "nan"], "--min-ppm"),
    ("check-bad-alpha", ["check", "--max-noise", "1%", "--alpha", "2"], "--alpha 2.0 must be between 0 and 1"),
    ("check-out-exists", ["check", "--max-noise", "1%", "--out", "OUT"], "already exists"),
    # monitor
    ("monitor-huge-cpus", ["monitor", "--cpus", HUGE_CPUS], "does not exist"),
    ("monitor-empty-cpus", ["monitor", "--cpus", ""], "empty CPU list"),
    ("monitor-tiny-interval", ["monitor", "--interval", "1ns"], "too short"),
    ("monitor-huge-window", ["monitor", "--window", "1e99s"], "too long"),
    ("monitor-huge-count", ["monitor", "--keep", "1e12"], "must be from"),
    ("monitor-bad-port", ["monitor", "--port", "70000"], "must be from"),
    ("monitor-no-sources", ["monitor", "--max-sources", "0"], "must be from"),
    # inject
    ("inject-malformed-cpu", ["inject", "--cpu", "x", "--period", "10ms", "--busy", "1ms"], "malformed --cpu"),
    ("inject-tiny-period", ["inject", "--cpu", "1", "--period", "1ns", "--busy", "1ns"], "too short"),
    ("inject-huge-busy", ["inject", "--cpu", "1", "--period", "10ms", "--busy", "1e99s"], "too long"),
    (
        "inject-negative-duration",
        ["inject", "--cpu", "1", "--period", "10ms", "--busy", "1ms", "--duration=-1s"],
        "must be positive",
    ),
    (
        "inject-unwritable-truth",
        ["inject", "--cpu", "1", "--period", "10ms", "--busy", "1ms", "--truth", f"{NOPE}/t.csv"],
        "--truth",
    ),
    # analyze
    ("analyze-no-run", ["analyze", "NORUN"], "no such run directory"),
    ("analyze-nothing-to-rebuild", ["analyze", "OUT"], "nothing to analyse"),
    # report / compare / export
    ("report-no-run", ["report", "NORUN"], "no such run directory"),
    ("report-bad-summary", ["report", "BADRUN"], "summary.json: cpus.1.noise_ppm must be a number"),
    ("report-unwritable-out", ["report", "RUN", "--out", f"{NOPE}/r.html"], "no such directory"),
    ("compare-no-run", ["compare", "NORUN", "RUN"], "no such run directory"),
    ("compare-nan", ["compare", "RUN", "RUN", "--min-ppm", "nan"], "--min-ppm"),
    ("compare-bad-meta", ["compare", "RUN", "BADMETA"], "meta.json: kind must be one of"),
    ("export-no-run", ["export", "--format", "csv", "-o", "OUT/x.csv", "NORUN"], "no such run directory"),
    ("export-unwritable-out", ["export", "--format", "csv", "-o", f"{NOPE}/x.csv", "RUN"], "no such directory"),
    # simulate
    (
        "simulate-negative-seed",
        [*SIMULATE, "--seed", "-1"],
        "seed must be",
    ),
    (
        "simulate-huge-replications",
        [*SIMULATE, "--replications", "1e9"],
        "--replications",
    ),
    (
        "simulate-huge-estimate",
        [
            "simulate",
            "--noise",
            "pareto(alpha=1.5,scale=1ms)",
            "--nodes",
            "1..1000:x2",
            "--phases",
            "100,1000",
            "--phase",
            "10ms",
            "--replications",
            "10000000",
        ],
        "would take",
    ),
    (
        "simulate-huge-list",
        [
            "simulate",
            "--noise",
            "normal(mean=1ms,sd=0.1ms)",
            "--nodes",
            "1..1e11:+1",
            "--phases",
            "10",
            "--phase",
            "10ms",
        ],
        "at most",
    ),
    (
        "simulate-tiny-phase",
        ["simulate", "--noise", "normal(mean=1ms,sd=0.1ms)", "--nodes", "8", "--phases", "10", "--phase", "1ns"],
        "too short",
    ),
    (
        "simulate-malformed-spec",
        ["simulate", "--noise", "normal(mean=1ms,sd=2)", "--nodes", "8", "--phases", "10", "--phase", "10ms"],
        "needs a unit",
    ),
    ("simulate-no-run", ["simulate", "--noise", "NORUN", "--nodes", "8", "--phases", "10", "--phase", "10ms"], "NORUN"),
    (
        "simulate-unwritable-plots",
        [*SIMULATE, "--plots", f"{NOPE}/p"],
        "no such directory",
    ),
    # fit
    ("fit-tiny-phase", ["fit", "RUN", "--phase", "1ns"], "too short"),
    ("fit-huge-duration", ["fit", "RUN", "--phase", "1e99s"], "too long"),
    ("fit-huge-replicates", ["fit", "RUN", "--phase", "10ms", "--replicates", "1e8"], "--replicates"),
    ("fit-negative-seed", ["fit", "RUN", "--phase", "10ms", "--seed", "-3"], "seed must be"),
    ("fit-no-run", ["fit", "NORUN", "--phase", "10ms"], "no such run directory"),
    ("fit-unwritable-plots", ["fit", "RUN", "--phase", "10ms", "--plots", f"{NOPE}/p"], "no such directory"),
    # doe
    ("doe-malformed-config", ["doe", "run", "BADPLAN", "--dry-run"], "unknown key 'colour'"),
    ("doe-huge-cpus", ["doe", "run", "HUGEPLAN", "--dry-run"], "does not exist"),
    ("doe-negative-seed", ["doe", "run", "SEEDPLAN", "--dry-run"], "seed must be at least 0"),
    ("doe-no-plan", ["doe", "run", "NORUN.yaml", "--dry-run"], "NORUN.yaml"),
    ("doe-no-dir", ["doe", "analyze", "NORUN"], "NORUN"),
    # ptts
    ("ptts-malformed-config", ["ptts", "BADMODEL"], "unknown key 'perod'"),
    ("ptts-no-model", ["ptts", "NORUN.yaml"], "no such model file"),
    ("ptts-huge-sweep", ["ptts", "MODEL", "--sweep", "b.offset=0..99999999999ms:1ms"], "at most 200"),
    ("ptts-negative-seed", ["ptts", "MODEL", "--method", "simulate", "--seed", "-1"], "seed must be"),
    ("ptts-huge-count", ["ptts", "MODEL", "--method", "simulate", "--iterations", "1e15"], "must be from"),
    ("ptts-huge-duration", ["ptts", "MODEL", "--max-time", "1e99s"], "too long"),
    ("ptts-negative-duration", ["ptts", "MODEL", "--deadline=-1ms"], "must be positive"),
    ("ptts-huge-deadline", ["ptts", "MODEL", "--deadline", "1e99s"], "below 2^62"),
    ("ptts-unwritable-plots", ["ptts", "MODEL", "--plots", f"{NOPE}/p"], "no such directory"),
    # cluster (fails before any MPI rank starts)
    ("cluster-huge-cpu-map", ["cluster", "measure", "--cpu-map", HUGE_CPUS], "does not exist"),
    ("cluster-tiny-duration", ["cluster", "measure", "--duration", "1ns"], "too short"),
    ("cluster-tiny-phase", ["cluster", "bsp", "--phase", "1ns"], "too short"),
    ("cluster-huge-timeout", ["cluster", "measure", "--timeout", "1e99s"], "too long"),
    ("cluster-negative-seed", ["cluster", "bsp", "--seed", "-1"], "seed must be"),
    ("cluster-huge-count", ["cluster", "bsp", "--phases", "1e12"], "must be from"),
    # restore
    ("restore-malformed", ["restore", "--all-of-it"], "unrecognized arguments"),
    # issue 25: files that are not regular or too large (boundedio), per kind of file read
    ("ptts-device-model", ["ptts", "/dev/zero"], "character device"),
    ("ptts-device-etp", ["ptts", "DEVMODEL"], "character device"),
    ("ptts-loop-model", ["ptts", "LOOP"], "symlink loop"),
    ("doe-fifo-plan", ["doe", "run", "FIFO", "--dry-run"], "FIFO"),
    ("pipeline-huge-graph", ["pipeline", "compile", "HUGE"], "docs/limits.md"),
    ("tune-device-plan", ["tune", "apply", "/dev/zero", "--dry-run"], "character device"),
    ("report-device-meta", ["report", "DEVRUN"], "character device"),
    # issue 25: paths and values no command can use
    ("export-empty-out", ["export", "RUN", "-f", "csv", "-o", ""], "an empty path"),
    ("report-empty-run", ["report", ""], "an empty path"),
    ("measure-not-utf8-out", ["measure", "--duration", "1s", "--out", "OUT/x\udcff"], "not valid UTF-8"),
    (
        "inject-not-utf8-name",
        ["inject", "--cpu", "0", "--period", "10ms", "--busy", "1ms", "--name", "x\udcff"],
        "UTF-8",
    ),
    ("measure-overflow-duration", ["measure", "--duration", "1e400s"], "too long"),
    ("inject-period-bound", ["inject", "--cpu", "0", "--period", "1us", "--busy", "100ns"], "use 10us to 1h"),
]

# Cases also run as `python -m jitterscope` (a Python start-up each): one per way out of
# the tool (argparse, a command's JitterscopeError, a not-UTF-8 argument, a file type
# refused before it is opened, a value that must not be allocated for).
SUBPROCESS = {
    "restore-malformed",
    "measure-huge-cpus",
    "check-bad-meta",
    "inject-not-utf8-name",
    "doe-fifo-plan",
    "ptts-huge-sweep",
    "simulate-huge-list",
}

# Each command has its own 60 s limit, which is what catches a hang; the module as a
# whole gets room for a loaded shared machine.
pytestmark = pytest.mark.timeout(600)

MODEL = """resolution: 1ms
components:
  - {name: a, period: 10ms, offset: 0ms, etp: {pmf: {1ms: 1.0}}}
  - {name: b, period: 20ms, offset: 0ms, etp: {uniform: [1ms, 3ms]}}
"""
PLAN = """response: {command: [true], cpus: 1, estimate: 1s}
factors:
  - {name: one, kind: custom, low: "true", high: "true", restore: "true"}
"""


def _sysctls() -> dict[str, object]:
    # Task and IRQ affinities are left out: other sessions on this shared machine move theirs.
    knobs = {k: v for k, v in snapshot().items() if not k.startswith("affinity ") and "/proc/irq/" not in k}
    # tracefs mounted or not, as found (a failed command must not mount it and leave it)
    knobs["tracefs mounts"] = tracefs_mounts()
    return knobs


def _instances() -> set[str]:
    d = "/sys/kernel/tracing/instances"
    return {n for n in os.listdir(d) if n.startswith("jitterscope-")} if os.path.isdir(d) else set()


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    run = write_noise_run(tmp / "run", [periodic_source("irq", "local_timer", 1, 4e6, 5e3, 2e9)], 2.0)
    bad = write_noise_run(tmp / "badrun", [periodic_source("irq", "local_timer", 1, 4e6, 5e3, 2e9)], 2.0)
    s = json.loads((bad / "summary.json").read_text())
    s["cpus"]["1"]["noise_ppm"] = "high"
    (bad / "summary.json").write_text(json.dumps(s))
    badmeta = write_noise_run(tmp / "badmeta", [periodic_source("irq", "local_timer", 1, 4e6, 5e3, 2e9)], 2.0)
    m = json.loads((badmeta / "meta.json").read_text())
    m["kind"] = "quantum"
    (badmeta / "meta.json").write_text(json.dumps(m))
    (tmp / "model.yaml").write_text(MODEL)
    (tmp / "badmodel.yaml").write_text(MODEL.replace("period: 10ms", "perod: 10ms"))
    (tmp / "plan.yaml").write_text(PLAN + "colour: red\n")
    (tmp / "hugeplan.yaml").write_text(PLAN.replace("cpus: 1", f"cpus: {HUGE_CPUS}"))
    (tmp / "seedplan.yaml").write_text(PLAN + "seed: -1\n")
    (tmp / "out").mkdir()
    (tmp / "devmodel.yaml").write_text(MODEL.replace("{pmf: {1ms: 1.0}}", "{csv: /dev/zero}"))
    (tmp / "loop.yaml").symlink_to("loop.yaml")
    os.mkfifo(tmp / "fifo.yaml")
    with open(tmp / "huge.yaml", "wb") as f:
        f.truncate((16 << 20) + 1)
    devrun = write_noise_run(tmp / "devrun", [periodic_source("irq", "local_timer", 1, 4e6, 5e3, 2e9)], 2.0)
    (devrun / "meta.json").unlink()
    (devrun / "meta.json").symlink_to("/dev/zero")
    subs = {
        "DEVMODEL": str(tmp / "devmodel.yaml"),
        "DEVRUN": str(devrun),
        "LOOP": str(tmp / "loop.yaml"),
        "FIFO": str(tmp / "fifo.yaml"),
        "HUGE": str(tmp / "huge.yaml"),
        "RUN": str(run),
        "BADRUN": str(bad),
        "BADMETA": str(badmeta),
        "MODEL": str(tmp / "model.yaml"),
        "BADMODEL": str(tmp / "badmodel.yaml"),
        "BADPLAN": str(tmp / "plan.yaml"),
        "HUGEPLAN": str(tmp / "hugeplan.yaml"),
        "SEEDPLAN": str(tmp / "seedplan.yaml"),
        "NORUN": str(tmp / "no-such-run"),
        "OUT": str(tmp / "out"),
    }
    state = tmp / "state"
    env = {**os.environ, "JITTERSCOPE_STATE_DIR": str(state), "PYTHONPATH": str(ROOT / "src")}

    before, inst_before = _sysctls(), _instances()
    try:
        cases = [(name, [_sub(a, subs) for a in argv]) for name, argv, _ in CASES]
        # 4 GiB of address space: a case that tried to allocate per CPU of 0-99999999999 fails here, not the node
        got = cli_batch.batch_and_real(cases, SUBPROCESS, tmp, env, LIMIT)
        words = {name: _sub(w, subs) for name, _, w in CASES}
        out = {name: ((code, err), words[name.removesuffix(cli_batch.REAL)]) for name, (code, err, _) in got.items()}
        after = _sysctls()
        journals = sorted(glob.glob(str(state / "journal" / "*")))
        yield out, [k for k in before if k in after and before[k] != after[k]], _instances() - inst_before, journals
    finally:  # a case that wrongly got as far as changing something is undone here, not left to others
        subprocess.run([sys.executable, "-m", "jitterscope", "restore"], env=env, capture_output=True, timeout=60)


LIMIT = ["prlimit", "--as=4294967296"]


def _sub(text: str, subs: dict[str, str]) -> str:
    for k in sorted(subs, key=len, reverse=True):
        text = text.replace(k, subs[k])
    return text


@pytest.mark.parametrize("name", [c[0] for c in CASES] + [c[0] + cli_batch.REAL for c in CASES if c[0] in SUBPROCESS])
def test_bad_value_is_one_line_exit_2(results, name):
    out, *_ = results
    (code, err), words = out[name]
    assert code is not None, err
    assert code == 2, f"exit {code}: {err}"
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert words in err, err


def test_nothing_on_the_machine_changed(results):
    _, changed_knobs, new_instances, journals = results
    assert changed_knobs == []
    # an instance named for one of our (now ended) processes would be ours; there must be none
    ours = {n for n in new_instances if not os.path.exists(f"/proc/{n.rsplit('-', 1)[-1]}")}
    assert ours == set()
    assert journals == []
