"""Terminal text for `tune audit`, `plan`, `apply`, `revert` and `status` (the data comes first; see each module)."""

from __future__ import annotations

import shlex
import textwrap
from typing import TYPE_CHECKING

from jitterscope.tune.records import ApplyResult, Plan, PlanItem, RecordState
from jitterscope.units import format_cpulist

if TYPE_CHECKING:
    from jitterscope.tune.audit import Audit, FindingJson

MARK = {"ok": "ok ", "not isolated": "NOT", "cannot tell": " ? "}
WIDTH = 118
EXPECT = {"gone": "off the CPUs", "fewer": "rarer"}


def _wrap(text: str, indent: int) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=" " * indent, subsequent_indent=" " * indent)


def render_audit(a: Audit) -> str:
    virt = f", {a['virtualization']} guest" if a.get("virtualization") else ""
    lines = [
        (
            f"Isolation audit of CPU {format_cpulist(a['cpus'])} (housekeeping: CPU "
            f"{format_cpulist(a['housekeeping'])}) on {a['host']}, kernel {a['kernel']}{virt}"
        )
    ]
    group = None
    for f in a["findings"]:
        if f["group"] != group:
            group = f["group"]
            lines += ["", f"{group}"]
        lines.append(f"  {MARK[f['verdict']]} {f['knob']}: {f['value']}  (want {f['recommended']}; {f['setting']})")
        lines.append(_wrap(f["why"] + (f"  -> {f['fix']}" if f.get("fix") else ""), 8))
    c = a["counts"]
    lines += [
        "",
        (
            f"{c['ok']} ok, {c['not isolated']} not isolated, {c['cannot tell']} cannot tell "
            f"(ok = nothing to do; NOT = a knob above would isolate more; ? = depends on the host or workload)"
        ),
    ]
    runtime = _runtime_fixes([f for f in a["findings"] if f["verdict"] == "not isolated"])
    if runtime:
        lines += [
            "",
            "Runtime fixes (or `tune plan` on a measured run, to fix what matters first):",
            _wrap("jitterscope tune apply " + " ".join(f"--knob {shlex.quote(k)}" for k in runtime), 2),
        ]
    boot = [
        fix for f in a["findings"] if (fix := f["fix"]) and f["setting"] == "boot" and f["verdict"] == "not isolated"
    ]
    if boot:
        lines += ["Boot parameters (reboot): " + " ".join(dict.fromkeys(boot))]
    return "\n".join(lines)


def _runtime_fixes(findings: list[FindingJson]) -> list[str]:
    """`--knob` values of the fixes; several IRQs to the same CPUs become irq.*.affinity."""
    fixes = [fix.split("--knob ", 1)[1] for f in findings if (fix := f["fix"]) and "tune apply --knob" in fix]
    fixes = [k for k in fixes if not k.startswith("task.PID")]
    irqs = [k for k in fixes if k.startswith("irq.") and not k.startswith("irq.default")]
    if len(irqs) > 1 and len({k.split("=", 1)[1] for k in irqs}) == 1:
        fixes = [f"irq.*.affinity={irqs[0].split('=', 1)[1]}"] + [k for k in fixes if k not in irqs]
    return fixes


def render_plan(p: Plan) -> str:
    acted = [i for i in p["items"] if i["knobs"] or i["boot"]]
    lines = [
        (
            f"Plan for CPU {p['cpus_text']} from run {p['run_id']} ({p['host']}, kernel {p['kernel']}, "
            f"{p['duration_s']:.1f} s): {p['total_ppm']:,.1f} ppm of noise in all"
        ),
        "",
        (
            "Sources a knob or boot parameter removes, ranked by the noise it would remove (ppm of the measured "
            "CPUs' time):"
        ),
        f"  {'source':<34} {'ppm':>10} {'removes':>9}  remedy",
    ]
    for i in acted:
        what = (
            "knob: "
            + ", ".join(f"{k['knob']}={k['value']}" for k in i["knobs"][:3])
            + (f" and {len(i['knobs']) - 3} more" if len(i["knobs"]) > 3 else "")
            if i["knobs"]
            else "boot: " + " ".join(i["boot"])
        )
        lines.append(f"  {i['source'][:34]:<34} {i['ppm']:>10,.1f} {i['removable_ppm']:>9,.1f}  {what}")
        lines.append(_wrap(i["why"], 6))
    lines += ["", "Runtime knobs (jitterscope tune apply PLAN, or tune verify to measure their effect):"]
    for k in p["knobs"] or []:
        srcs = ", ".join(f"{s['source']} ({EXPECT[s['expect']]})" for s in k["sources"])
        lines.append(f"  {k['knob']} = {k['value']}   (now {k['current']})   for {srcs}")
    if not p["knobs"]:
        lines.append("  none: every runtime knob already has the value a plan would set")
    b = p["boot"]
    lines += ["", "Boot parameters still needed (a reboot): " + (b["cmdline"] or "none")]
    if b["command"]:
        lines.append(_wrap("how: " + b["command"], 2))
    lines += _scope(p)
    lines += _unaddressed([i for i in p["items"] if not (i["knobs"] or i["boot"])])
    if p.get("tool"):
        lines += [
            "",
            "jitterscope's own measurement (not planned): "
            + ", ".join(f"{t['source']} ({t['ppm']:,.1f} ppm)" for t in p["tool"]),
        ]
    return "\n".join(lines)


def _scope(p: Plan) -> list[str]:
    """Processes pinned to the measured CPUs only that the plan moves, and those it leaves alone."""
    lines = []
    cpus = p["cpus_text"]
    for t in p.get("pinned", []):
        lines.append(
            f"WARNING: {t['process']} (pid {t['pid']}, {t['source']}) is pinned to CPU {cpus} only, by itself "
            "or its launcher: the plan moves it, overriding that"
        )
    left = p.get("left", [])
    if left:
        lines += [
            "",
            "Left where they are (not kernel threads or system daemons; `tune plan --move NAME|PID` moves one):",
        ]
        for t in left:
            pin = f", pinned to CPU {cpus} only" if t.get("pinned") else ""
            lines.append(f"  {t['process']} (pid {t['pid']}, user {t['user']}{pin}) for {t['source']}")
    return ([""] if p.get("pinned") else []) + lines


def _unaddressed(items: list[PlanItem]) -> list[str]:
    """Sources no knob addresses, those that share an explanation grouped under it."""
    if not items:
        return []
    lines = ["", "Not addressed by any knob:"]
    groups: dict[str, list[PlanItem]] = {}
    for i in items:
        groups.setdefault(i.get("reason") or i["source"], []).append(i)
    for members in groups.values():
        names = ", ".join(f"{i['source']} ({i['ppm']:,.1f} ppm)" for i in members)
        lines.append(
            _wrap(
                f"{names}: {members[0]['why']}"
                if len(members) == 1
                else f"{sum(i['ppm'] for i in members):,.1f} ppm from {len(members)} sources: {members[0]['why']}",
                2,
            )
        )
        if len(members) > 1:
            lines.append(_wrap(names, 6))
    return lines


def render_apply(r: ApplyResult, dry_run: bool = False) -> str:
    lines = ["Would change (--dry-run: nothing changed):" if dry_run else "Changed:"]
    for row in r["rows"]:
        state = "" if dry_run else ("  (re-read: ok)" if row["now"] == row["value"] else f"  (re-read: {row['now']})")
        same = "  (already so)" if row["before"] == row["value"] else ""
        lines.append(f"  {row['knob']}: {row['before']} -> {row['value']}{same}{state}")
    lines += [f"  skipped {s}" for s in r.get("skipped", [])]
    if r.get("boot_params"):
        lines.append(
            f"Boot parameters {'that --boot would add' if dry_run else 'to add'}: {' '.join(r['boot_params'])}"
        )
    b = r.get("boot")
    if b:
        lines.append(
            f"Edited {b['file']}"
            + (f" and ran {b['ran']}" if b.get("ran") else "")
            + ("; reboot for it to take effect" if b.get("reboot_needed") else "")
        )
    if r.get("record"):
        lines.append(f"Recorded in {r['record']}: `jitterscope tune revert` undoes it (also after a reboot)")
    elif not dry_run:
        lines.append("Nothing changed: every knob already had its value")
    return "\n".join(lines)


def render_rows(rec: RecordState, title: str) -> str:
    """A record's knobs; the threads of one process that fared alike are one line."""
    lines = [
        f"{title} {rec['record']} ({rec.get('label') or 'tune'})"
        + ("  [the machine rebooted since]" if rec.get("rebooted") else "")
    ]
    lines.append(f"  {'knob':<34} {'original':>12} {'tune set':>12} {'now':>12}  result")
    groups: dict[tuple[str, ...], int] = {}
    for r in rec["rows"]:
        key = (str(r["knob"]), r["original"], r["set"], r["now"], r["result"], r["note"])
        groups[key] = groups.get(key, 0) + 1
    for (knob, original, tune_set, now, result, note), n in groups.items():
        name = f"{knob} ({n} threads)" if n > 1 else knob
        lines.append(
            f"  {name[:34]:<34} {original[:12]:>12} {tune_set[:12]:>12} {now[:12]:>12}  {result}"
            + (f": {note}" if note else "")
        )
    return "\n".join(lines)
