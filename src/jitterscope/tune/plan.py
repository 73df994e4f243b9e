"""`tune plan`: from a measured run, each source with the knob(s) that remove or move it, ranked.

A source's rank is the noise it would remove on the measured CPUs (ppm of their
time): its measured ppm times what its remedy is expected to take away (all of
it for a source moved off the CPUs, `1 - factor` for one made rarer).  Runtime
knobs are merged (one entry per knob, naming every source it serves), boot
parameters are gathered into one command-line string with the way to add it on
this machine, and sources that no knob addresses are listed as such.
"""

from __future__ import annotations

from pathlib import Path

from jitterscope import sysinfo
from jitterscope.errors import JitterscopeError
from jitterscope.rundir import load_run
from jitterscope.tune import bootloader, cmdline, rules, rules_threads
from jitterscope.tune.records import Plan, PlanItem, PlanKnob, Source
from jitterscope.tune.sources import sources, thread_pids
from jitterscope.units import format_cpulist

PLAN_FORMAT = "jitterscope-tune-plan"
DISPATCH = {
    "irq": rules.irq_source,
    "softirq": rules.softirq_source,
    "work": rules.work_source,
    "timer": rules.timer_source,
    "thread": rules_threads.thread_source,
    "nmi": rules_threads.nmi_source,
    "unexplained": rules_threads.unexplained_source,
}


def _merge_knobs(items: list[PlanItem]) -> list[PlanKnob]:
    merged: dict[str, PlanKnob] = {}
    for it in items:
        for k in it["knobs"]:
            m = merged.get(k["knob"])
            if m is None:
                m = merged[k["knob"]] = {
                    "knob": k["knob"],
                    "value": k["value"],
                    "current": k["current"],
                    "why": k["why"],
                    "sources": [],
                }
                if "process" in k:
                    m["process"] = k["process"]
            m["sources"].append(
                {"source": it["source"], "expect": k["expect"], "factor": k["factor"], "ppm": round(it["ppm"], 3)}
            )
    return [m for m in merged.values() if m["current"] != m["value"]]


def merge_boot(params: list[str], current: cmdline.Cmdline | None = None) -> list[str]:
    """One parameter per name (isolcpus flags united), in first-seen order, without those already in effect."""
    out: dict[str, str] = {}
    for p in params:
        name, _, value = p.partition("=")
        if name == "isolcpus" and name in out:
            old_flags, cpus = out[name].split("=", 1)[1].rsplit(",", 1)
            new_flags = value.rsplit(",", 1)[0].split(",")
            flags = list(dict.fromkeys(old_flags.split(",") + new_flags))
            out[name] = f"isolcpus={','.join(flags)},{cpus}"
        else:
            out.setdefault(name, p)
    if current is not None:
        return [p for p in out.values() if p not in current.text.split()]
    return list(out.values())


def _other_task_share(srcs: list[Source]) -> float:
    """Fraction of the measured time other tasks (not the tool, not kernel helpers) ran on the CPUs."""
    ppm = sum(s["ppm"] for s in srcs if s["kind"] == "thread" and not rules_threads.SELF.search(s["name"]))
    return min(1.0, ppm / 1e6)


def make_plan(run_path: str | Path, move: list[str] | None = None) -> Plan:
    """The plan of a run.  User processes are moved only when they are system daemons or named in `move`
    (names or pids); the others are listed as left where they are."""
    run = load_run(run_path, kinds=("measure",), purpose="tune plan")
    if not run.tracing:
        raise JitterscopeError(
            f"{run_path}: measured without kernel tracing, so its noise has no sources to plan "
            f"from; measure again without --no-trace"
        )
    origins: dict[str, set[str]] = {}
    srcs = sources(run, origins)
    same_host = run.meta.get("host") == sysinfo.host()
    online = sysinfo.online_cpus() if same_host else list(range(max(run.cpus, default=0) + 1))
    ctx = rules.Ctx(
        run.cpus,
        [c for c in online if c not in run.cpus] or [min(online)],
        run.meta.get("virtualization"),
        origins,
        thread_pids(run),
        _other_task_share(srcs),
        set(move or []),
    )
    items: list[PlanItem] = []
    for s in srcs:
        rule = DISPATCH.get(s["kind"])
        r = rule(s, ctx) if rule else rules.out("none", 0.0, f"no rule for kind {s['kind']}")
        items.append(
            {
                "source": f"{s['kind']}:{s['name']}",
                "kind": s["kind"],
                "name": s["name"],
                "ppm": round(s["ppm"], 3),
                "share": round(s["share"], 6),
                "count": s["count"],
                "max_ns": s["max_ns"],
                **r,
                "removable_ppm": round(r["removable_ppm"], 3),
            }
        )
    items.sort(key=lambda i: (-i["removable_ppm"], -i["ppm"]))
    boot = merge_boot([p for i in items for p in i["boot"]], cmdline.current() if same_host else None)
    loader = bootloader.detect()
    return {
        "format": PLAN_FORMAT,
        "version": 1,
        "run": str(run.path),
        "run_id": run.meta.get("id"),
        "host": run.meta.get("host"),
        "kernel": run.meta.get("kernel"),
        "virtualization": run.meta.get("virtualization"),
        "cpus": run.cpus,
        "housekeeping": ctx.housekeeping,
        "cpus_text": format_cpulist(run.cpus),
        "duration_s": run.meta.get("duration_s"),
        "total_ppm": round(sum(s["ppm"] for s in srcs), 3),
        "knobs": _merge_knobs(items),
        "boot": {
            "params": boot,
            "cmdline": " ".join(boot),
            "bootloader": loader["kind"],
            "command": loader["command"].format(params=" ".join(boot)) if boot else None,
        },
        "items": [i for i in items if i["action"] != "self"],
        "unaddressed": [
            {"source": i["source"], "ppm": i["ppm"], "why": i["why"]} for i in items if i["action"] in ("none", "host")
        ],
        "tool": [{"source": i["source"], "ppm": i["ppm"]} for i in items if i["action"] == "self"],
        "move": sorted(move or []),
        "left": [{**t, "source": i["source"]} for i in items for t in i.get("left", [])],
        "pinned": [{**t, "source": i["source"]} for i in items for t in i.get("pinned", [])],
    }
