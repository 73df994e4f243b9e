"""A `place` run's plan: every option parsed and checked before anything on the machine changes.

Declared weights (`--declare SEL=VALUE`, repeatable, or `--labels FILE`, a YAML
mapping of the same): SEL is a PID, a program name (its argv[0] base name or
its comm) or a cgroup path (every process in it); VALUE is `heavy` (1),
`light` (0) or a number.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import RootModel

from jitterscope import sysinfo
from jitterscope.config import load_config
from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.place import pmu
from jitterscope.place.actuate import ACTUATORS
from jitterscope.place.policy import Settings
from jitterscope.place.topology import Topology, load
from jitterscope.protect.programs import split_command
from jitterscope.units import parse_cpulist, parse_duration_ns

POLICIES = ("L", "X", "C", "F", "P", "stock", "worst")
NAMED = {"heavy": 1.0, "light": 0.0}
WEIGHT_SOURCES = ("auto", "pmu", "declared", "oracle")


@dataclass
class Plan:
    policies: frozenset[str]
    settings: Settings
    topo: Topology
    cpus: list[int]
    cmds: list[list[str]] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    declared: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # a declared weight's stand-in, if a labels file says
    protect: list[str] = field(default_factory=list)  # --protect selectors
    weights: str = "auto"
    pmu_ok: bool = False
    pmu_why: str = ""
    actuator: str = "sigstop"
    duration_ns: float | None = None
    dry_run: bool = False
    out: Path | None = None
    argv: list[str] = field(default_factory=list)


class Labels(RootModel[dict[str, Any]]):
    pass


def parse_policies(text: str) -> frozenset[str]:
    got = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in got if p not in POLICIES]
    if bad or not got:
        raise UsageError(
            f"unknown --policy {bad[0] if bad else text!r}: use a comma list of L, X, C, F, P, or "
            f"stock or worst (baselines)"
        )
    pol = frozenset(got)
    if len(pol & {"L", "stock", "worst"}) > 1:
        raise UsageError("--policy: L, stock and worst exclude each other (each decides who runs)")
    if "C" in pol and not pol & {"L", "worst"}:
        raise UsageError("--policy C credits CPU time through OBS-L's quanta: give it with L (e.g. L,C)")
    if "P" in pol and "L" not in pol:
        raise UsageError("--policy P chooses the co-runners of protected tasks through OBS-L: give it with L (L,P)")
    return pol


def weight_value(v: Any, what: str) -> float:
    if isinstance(v, str) and v.strip().lower() in NAMED:
        return NAMED[v.strip().lower()]
    try:
        w = float(v)
    except (TypeError, ValueError):
        raise UsageError(f"{what}: {v!r} is not heavy, light or a number") from None
    if not 0 <= w < 1e6:
        raise UsageError(f"{what}: a weight must be at least 0, got {v!r}")
    return w


STAND_INS = ("declared", "profiled", "probe")  # a labels entry's source (place profile writes the last two)


def declared(items: list[str], labels: Path | None) -> tuple[dict[str, float], dict[str, str]]:
    """(weights, their sources) by selector: the labels file's entries (`SEL: W`, or `SEL: {weight: W,
    source: profiled|probe, ...}` as `place profile` writes them), then --declare's (source `declared`)."""
    out: dict[str, float] = {}
    src: dict[str, str] = {}
    if labels is not None:
        data = load_config(labels, Labels, "labels file").root
        for k, v in data.items():
            if isinstance(v, dict):
                if "weight" not in v or v.get("source", "declared") not in STAND_INS:
                    raise UsageError(
                        f"{labels}: {k}: expected a weight, or a mapping with weight and source "
                        f"({', '.join(STAND_INS)})"
                    )
                out[str(k)], src[str(k)] = (
                    weight_value(v["weight"], f"{labels}: {k}.weight"),
                    v.get("source", "declared"),
                )
            else:
                out[str(k)], src[str(k)] = weight_value(v, f"{labels}: {k}"), "declared"
    for it in items:
        sel, eq, val = it.partition("=")
        if not eq or not sel.strip():
            raise UsageError(f"--declare {it!r}: use SELECTOR=heavy|light|WEIGHT, e.g. jitterscope-cachebuster=heavy")
        out[sel.strip()], src[sel.strip()] = weight_value(val, f"--declare {it!r}"), "declared"
    return out, src


def _settings(a: dict[str, Any]) -> Settings:
    s = Settings(
        quantum_ns=parse_duration_ns(a["quantum"], what="--quantum"),
        period_ns=parse_duration_ns(a["period"], what="--period"),
        bins=a["bins"],
        release_after=a["release_after"],
        ban_after=a["ban_after"],
    )
    if s.quantum_ns < 1e6 or s.period_ns < s.quantum_ns:
        raise UsageError("--quantum must be at least 1ms and --period at least one quantum")
    if not 0 <= s.bins <= 12 or s.release_after < 1 or s.ban_after < 0:
        raise UsageError("--bins must be 0-12, --release-after at least 1, --ban-after at least 0")
    m = re.fullmatch(r"\s*([0-9.]+)\s*%\s*", a["credit"])
    if not m or float(m.group(1)) > 100:
        raise UsageError(f"--credit {a['credit']!r}: use a percentage, e.g. 2%")
    s.credit = float(m.group(1)) / 100
    if a["credit_norm"] not in ("max", "raw"):
        weight_value(a["credit_norm"], "--credit-norm")
    s.norm = a["credit_norm"]
    s.f_variant = {"F1": 1, "F2": 2}.get(a["obs_f"].upper(), 0)
    if not s.f_variant:
        raise UsageError(f"--obs-f {a['obs_f']!r}: use F1 (migrate and stay) or F2 (return after clean quanta)")
    return s


def commands(a: dict[str, Any]) -> list[list[str]]:
    """The commands to start: every --cmd, then -- CMD (a shipped workload found by its name)."""
    cmd = a["cmd"][1:] if a["cmd"][:1] == ["--"] else a["cmd"]
    cmds = [split_command(c, "--cmd") for c in a["cmds"] or []] + ([cmd] if cmd else [])
    if cmd and cmd[0] in ("jitterscope-cachebuster", "jitterscope-spinloop"):
        cmds[-1] = split_command(shlex.join(cmd), "--")
    return cmds


def build(a: dict[str, Any]) -> Plan:
    """The plan from the parsed options (a dict of argparse's namespace)."""
    pol = parse_policies(a["policy"])
    settings = _settings(a)
    if a["actuator"] not in ACTUATORS:
        raise UsageError(f"unknown --actuator {a['actuator']!r}: use {', '.join(ACTUATORS)}")
    if a["weights"] not in WEIGHT_SOURCES:
        raise UsageError(f"unknown --weights {a['weights']!r}: use {', '.join(WEIGHT_SOURCES)}")
    cmds = commands(a)
    pids = [int(x) for x in ",".join(a["tasks"] or []).split(",") if x.strip().isdigit()]
    if a["tasks"] and len(pids) != len([x for x in ",".join(a["tasks"]).split(",") if x.strip()]):
        raise UsageError(f"--tasks {','.join(a['tasks'])!r}: give process ids, e.g. 4242,4243")
    if a["cgroup"]:
        from jitterscope.place.tasks import cgroup_pids

        pids += cgroup_pids(Path(a["cgroup"]))
    gone = next((x for x in pids if not Path(f"/proc/{x}").is_dir()), None)
    if gone is not None:  # before the run directory exists (the session checks again when it takes them)
        raise JitterscopeError(f"--tasks {gone}: no such process")
    if not cmds and not pids:
        raise UsageError("nothing to place: give --cmd CMD (repeatable), -- CMD, --tasks PIDS or --cgroup PATH")
    if not a["dry_run"] and os.geteuid() != 0:
        raise JitterscopeError(
            "jitterscope place needs root (it stops, freezes and moves tasks); try --dry-run to see its decisions"
        )
    topo = load(Path(a["topology"]) if a["topology"] else None)
    online = set(sysinfo.online_cpus())
    cpus = parse_cpulist(a["cpus"]) if a["cpus"] else [c for c in topo.cpus if c in online or a["dry_run"]]
    missing = [c for c in cpus if c not in topo.cpus or (c not in online and not a["dry_run"])]
    if missing:
        raise UsageError(
            f"--cpus: CPU {missing[0]} is not {'in the topology' if missing[0] in online else 'online'}"
            f" ({topo.describe()})"
        )
    ok, why = pmu.status()
    if a["weights"] == "pmu" and not ok:
        raise JitterscopeError(f"--weights pmu: {why}; use --declare or the workloads' oracle weights")
    dur = parse_duration_ns(a["duration"], what="--duration") if a["duration"] else None
    weights, sources = declared(a["declare"] or [], Path(a["labels"]) if a["labels"] else None)
    return Plan(
        pol,
        settings,
        topo,
        cpus,
        cmds,
        pids,
        weights,
        sources,
        list(a.get("protect") or []),
        a["weights"],
        ok,
        why,
        a["actuator"],
        dur,
        a["dry_run"],
        Path(a["out"]) if a["out"] else None,
    )
