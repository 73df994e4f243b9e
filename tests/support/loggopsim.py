"""LogGOPSim (SPCL) built from ../shared/peers/loggopsim-src.tar.gz as a test oracle for
`simulate --model loggopsim`, and the job both are given: P hosts, N phases of a
compute step followed by a dissemination barrier.

The build follows ../shared/peers/README.md (no cmake, no Fortran): gengetopt for the
option parsers, re2c for txt2bin, g++ for the two programs.  One line of Noise.hpp is
patched in the temporary copy: the noise offsets' generator is seeded from
$LOGGOPSIM_SEED instead of time(0), so a run is repeatable and its offsets are the ones
`simulate --model loggopsim --seed S` draws (the same std::mt19937 stream).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARBALL = "loggopsim-src.tar.gz"


def _sources() -> Path | None:
    """../shared/peers/ beside the checkout (CI's fresh clone), or beside any folder above it
    (a git worktree under the main checkout's parent); $JITTERSCOPE_PEERS overrides."""
    if os.environ.get("JITTERSCOPE_PEERS"):
        return Path(os.environ["JITTERSCOPE_PEERS"]) / TARBALL
    for up in ROOT.parents:
        if (up / "shared" / "peers" / TARBALL).exists():
            return up / "shared" / "peers" / TARBALL
    return None


SEED_LINE = "std::mt19937 mtrand(time(0));"
SEED_PATCH = 'std::mt19937 mtrand((unsigned)strtoul(getenv("LOGGOPSIM_SEED") ? getenv("LOGGOPSIM_SEED") : "0", 0, 10));'
CXX = ["g++", "-O2", "-DNDEBUG", "-std=c++11", "-w"]
_MAX = re.compile(r"Maximum finishing time at host (\d+): (\d+)")


class Unavailable(Exception):
    """LogGOPSim cannot be built here; the message names what is missing."""


@dataclass(frozen=True)
class LogGOPSim:
    exe: Path
    txt2bin: Path

    def schedule(self, hosts: int, phases: int, work_ns: int, out: Path) -> Path:
        """The BSP job (`write_bsp_goal`) in LogGOPSim's binary form at `out`."""
        txt = out.with_suffix(".goal")
        write_bsp_goal(txt, hosts, phases, work_ns)
        _run([str(self.txt2bin), "-i", str(txt), "-o", str(out)])
        txt.unlink()
        return out

    def run(self, schedule: Path, noise: Path | None = None, seed: int = 0, cosched: bool = False) -> int:
        """Maximum finishing time (ns) over all hosts.  LogGOPSim exits 0 even when receives
        stay unmatched (a deadlock), so the "Maximum finishing time" line is required."""
        cmd = [str(self.exe), "-f", str(schedule), "-b"]
        if noise is not None:
            cmd += ["--noise-trace", str(noise)]
            if cosched:
                cmd.append("--noise-cosched")
        out = _run(cmd, env={**os.environ, "LOGGOPSIM_SEED": str(seed)})
        m = _MAX.search(out)
        if not m:
            raise AssertionError(f"LogGOPSim printed no finishing time (deadlock?):\n{out[-2000:]}")
        return int(m.group(2))

    def noise_events(self, schedule: Path, noise: Path) -> int:
        """How many events LogGOPSim read from a noise trace (its "Noisegen: read N" line)."""
        out = _run([str(self.exe), "-f", str(schedule), "-b", "--noise-trace", str(noise)])
        m = re.search(r"Noisegen: read (\d+) noise events", out)
        assert m, out[-2000:]
        return int(m.group(1))


def _run(cmd: list[str], env: dict[str, str] | None = None) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout


def _missing() -> list[str]:
    """Debian packages of the build that are not installed."""
    out = [t for t in ("gengetopt", "re2c") if shutil.which(t) is None]
    if not Path("/usr/include/graphviz/cgraph.h").exists():
        out.append("libgraphviz-dev")
    return out


def _install_deps() -> None:
    if not _missing():
        return
    if shutil.which("apt-get") and os.geteuid() == 0:  # `make packages` does this on a fresh machine
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *_missing()],
            capture_output=True,
            check=False,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
    still = _missing()
    if still:
        raise Unavailable(f"LogGOPSim needs {', '.join(still)} (apt-get install {' '.join(still)})")


def build(workdir: Path) -> LogGOPSim:
    """LogGOPSim and txt2bin built in `workdir` (about 8 s), or Unavailable."""
    sources = _sources()
    if sources is None or not sources.exists():
        raise Unavailable(f"LogGOPSim sources ({TARBALL}) not found in shared/peers/ above {ROOT}")
    if shutil.which("g++") is None:
        raise Unavailable("LogGOPSim needs g++")
    _install_deps()
    with tarfile.open(sources) as tar:
        tar.extractall(workdir, filter="data")
    src = workdir / "LogGOPSim" / "src" / "LogGOPSim"
    noise = src / "Noise.hpp"
    text = noise.read_text()
    if SEED_LINE not in text:
        raise AssertionError(f"{noise}: the seed line to pin ({SEED_LINE}) is gone; update SEED_PATCH")
    noise.write_text(text.replace(SEED_LINE, SEED_PATCH))
    steps = [
        ["gengetopt", "-i", "loggopsim_cmdline.ggo", "-F", "loggopsim_cmdline"],
        ["gengetopt", "-i", "txt2bin_cmdline.ggo", "-F", "txt2bin_cmdline"],
        ["re2c", "-o", "txt2bin.cpp", "txt2bin.re"],
    ]
    for cmd in steps:
        subprocess.run(cmd, cwd=src, check=True, capture_output=True)
    compiles = [
        subprocess.Popen(
            [*CXX, "LogGOPSim.cpp", "loggopsim_cmdline.c", "-o", "LogGOPSim", "-lcgraph"],
            cwd=src,
            stderr=subprocess.PIPE,
        ),
        subprocess.Popen([*CXX, "txt2bin.cpp", "txt2bin_cmdline.c", "-o", "txt2bin"], cwd=src, stderr=subprocess.PIPE),
    ]
    for c in compiles:
        _, err = c.communicate()
        if c.returncode != 0:
            raise AssertionError(f"building LogGOPSim failed: {err.decode()[-2000:]}")
    return LogGOPSim(src / "LogGOPSim", src / "txt2bin")


def write_bsp_goal(path: Path, hosts: int, phases: int, work_ns: int) -> None:
    """GOAL text for `hosts` ranks x `phases` phases of `work_ns` compute + a dissemination barrier.

    Per rank r and phase i, a strict chain: a calc (after the last receive of phase i-1),
    then for k = 0..K-1 (K = ceil(log2 P)) a 1-byte send to r+2^k and a receive from r-2^k
    (mod P), tagged uniquely by (i, k), each send after the previous round's receive.
    schedgen's own dissemination pattern lets a send wait behind the next calc, so it is
    not used.  Noise-free runtime: phases x (work + K x (2o + L)).  Written rank by rank
    (65,536 ranks x 100 phases is ~10 GB of text)."""
    k_rounds = math.ceil(math.log2(hosts)) if hosts > 1 else 0
    # One rank's text differs from another's only in its number and its partners: a template
    # filled once per rank (65,536 ranks x 100 phases in about a minute, not a quarter hour).
    lines = ["rank {rank} {{"]
    prev = ""
    for i in range(phases):
        lines.append(f"c{i}: calc {work_ns}")
        if prev:
            lines.append(f"c{i} requires {prev}")
        prev = f"c{i}"
        for k in range(k_rounds):
            tag = i * k_rounds + k
            lines.append(f"s{i}_{k}: send 1b to {{to{k}}} tag {tag}")
            lines.append(f"s{i}_{k} requires {prev}")
            lines.append(f"r{i}_{k}: recv 1b from {{from{k}}} tag {tag}")
            lines.append(f"r{i}_{k} requires s{i}_{k}")
            prev = f"r{i}_{k}"
    lines.append("}}\n")
    template = "\n".join(lines)
    with open(path, "w") as f:
        f.write(f"num_ranks {hosts}\n")
        for r in range(hosts):
            to = {f"to{k}": (r + (1 << k)) % hosts for k in range(k_rounds)}
            frm = {f"from{k}": (r - (1 << k)) % hosts for k in range(k_rounds)}
            f.write(template.format(rank=r, **to, **frm))
