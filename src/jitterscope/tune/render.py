"""Terminal text for `tune audit`, `plan`, `apply`, `revert` and `status` (the data comes first; see each module)."""

from __future__ import annotations

import textwrap
from typing import Any

from jitterscope.units import format_cpulist

MARK = {"ok": "ok ", "not isolated": "NOT", "cannot tell": " ? "}
WIDTH = 118


def _wrap(text: str, indent: int) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=" " * indent, subsequent_indent=" " * indent)


def render_audit(a: dict[str, Any]) -> str:
    virt = f", {a['virtualization']} guest" if a.get("virtualization") else ""
    lines = [(f"Isolation audit of CPU {format_cpulist(a['cpus'])} (housekeeping: CPU "
             f"{format_cpulist(a['housekeeping']) or 'none'}) on {a['host']}, kernel {a['kernel']}{virt}")]
    group = None
    for f in a["findings"]:
        if f["group"] != group:
            group = f["group"]
            lines += ["", f"{group}"]
        lines.append(f"  {MARK[f['verdict']]} {f['knob']}: {f['value']}  (want {f['recommended']}; {f['setting']})")
        lines.append(_wrap(f["why"] + (f"  -> {f['fix']}" if f.get("fix") else ""), 8))
    c = a["counts"]
    lines += ["", (f"{c['ok']} ok, {c['not isolated']} not isolated, {c['cannot tell']} cannot tell "
                  f"(ok = nothing to do; NOT = a knob above would isolate more; ? = depends on the host or workload)")]
    runtime = [f["fix"].split("--knob ", 1)[1] for f in a["findings"]
               if f.get("fix") and "tune apply --knob" in f["fix"]]
    if runtime:
        lines += ["", "Runtime fixes:", _wrap("jitterscope tune apply " + " ".join(f"--knob {k}" for k in runtime), 2)]
    boot = [f["fix"] for f in a["findings"] if f.get("fix") and f["setting"] == "boot"]
    if boot:
        lines += ["Boot parameters (reboot): " + " ".join(dict.fromkeys(boot))]
    return "\n".join(lines)


def render_plan(p: dict[str, Any]) -> str:
    lines = [(f"Plan for CPU {p['cpus_text']} from run {p['run_id']} ({p['host']}, kernel {p['kernel']}, "
             f"{p['duration_s']:.1f} s): {p['total_ppm']:,.1f} ppm of noise in all"), "",
             "Sources, ranked by the noise their remedy would remove (ppm of the measured CPUs' time):",
             f"  {'source':<34} {'ppm':>10} {'removes':>9}  remedy"]
    for i in p["items"]:
        what = ("knob: " + ", ".join(f"{k['knob']}={k['value']}" for k in i["knobs"]) if i["knobs"] else
                "boot: " + " ".join(i["boot"]) if i["boot"] else {"host": "the host must act", "none": "no knob"}.get(
                    i["action"], i["action"]))
        lines.append(f"  {i['source'][:34]:<34} {i['ppm']:>10,.1f} {i['removable_ppm']:>9,.1f}  {what}")
        lines.append(_wrap(i["why"], 6))
    lines += ["", "Runtime knobs (jitterscope tune apply PLAN, or tune verify to measure their effect):"]
    for k in p["knobs"] or []:
        srcs = ", ".join(f"{s['source']} ({s['expect']})" for s in k["sources"])
        lines.append(f"  {k['knob']} = {k['value']}   (now {k['current']})   for {srcs}")
    if not p["knobs"]:
        lines.append("  none: every runtime knob already has the value a plan would set")
    b = p["boot"]
    lines += ["", "Boot parameters still needed (a reboot): " + (b["cmdline"] or "none")]
    if b["command"]:
        lines.append(_wrap("how: " + b["command"], 2))
    if p["unaddressed"]:
        lines += ["", "Not addressed by any knob:"]
        lines += [_wrap(f"{u['source']} ({u['ppm']:,.1f} ppm): {u['why']}", 2) for u in p["unaddressed"]]
    if p.get("tool"):
        lines += ["", "jitterscope's own measurement (not planned): " +
                  ", ".join(f"{t['source']} ({t['ppm']:,.1f} ppm)" for t in p["tool"])]
    return "\n".join(lines)


def render_apply(r: dict[str, Any], dry_run: bool = False) -> str:
    lines = ["Would change (--dry-run: nothing changed):" if dry_run else "Changed:"]
    for row in r["rows"]:
        state = "" if dry_run else ("  (re-read: ok)" if row["now"] == row["value"] else f"  (re-read: {row['now']})")
        same = "  (already so)" if row["before"] == row["value"] else ""
        lines.append(f"  {row['knob']}: {row['before']} -> {row['value']}{same}{state}")
    lines += [f"  skipped {s}" for s in r.get("skipped", [])]
    if r.get("boot_params"):
        lines.append(f"Boot parameters {'that --boot would add' if dry_run else 'to add'}: "
                     f"{' '.join(r['boot_params'])}")
    if r.get("boot"):
        b = r["boot"]
        lines.append(f"Edited {b['file']}" + (f" and ran {b['ran']}" if b.get("ran") else "") +
                     ("; reboot for it to take effect" if b.get("reboot_needed") else ""))
    if r.get("record"):
        lines.append(f"Recorded in {r['record']}: `jitterscope tune revert` undoes it (also after a reboot)")
    elif not dry_run:
        lines.append("Nothing changed: every knob already had its value")
    return "\n".join(lines)


def render_rows(rec: dict[str, Any], title: str) -> str:
    lines = [f"{title} {rec['record']} ({rec.get('label') or 'tune'})" +
             ("  [the machine rebooted since]" if rec.get("rebooted") else "")]
    lines.append(f"  {'knob':<34} {'original':>12} {'tune set':>12} {'now':>12}  result")
    for r in rec["rows"]:
        lines.append(f"  {str(r['knob'])[:34]:<34} {r['original'][:12]:>12} {r['set'][:12]:>12} "
                     f"{r['now'][:12]:>12}  {r['result']}" + (f": {r['note']}" if r["note"] else ""))
    return "\n".join(lines)
