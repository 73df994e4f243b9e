"""CSV for spreadsheets: one row per detour with its main source and all sources.

A cluster run gets a first column `node` (host:cpu): each node's detours in turn."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from jitterscope.atomic import atomic_open
from jitterscope.kinds import Exported
from jitterscope.rundir import Run


def write_csv(run: Run, out: Path) -> Exported:
    nodes = run.node_runs()
    lead = ["node"] if nodes[0][1] is not run else []
    count = 0
    with atomic_open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*lead, "cpu", "start_ns", "duration_ns", "main_source", "main_source_ns", "sources"])
        for label, r in nodes:
            count += _rows(w, r, [label] if lead else [])
    return {"format": "csv", "files": [str(out)], "detours": count}


def _rows(w: Any, run: Run, lead: list[str]) -> int:
    att = run.attribution
    parts: dict[int, list[tuple[str, int]]] = {}
    for d, k, n, ns in zip(
        att.column("detour").to_pylist(),
        att.column("kind").to_pylist(),
        att.column("name").to_pylist(),
        att.column("ns").to_pylist(),
    ):
        parts.setdefault(d, []).append((f"{k}:{n}", ns))
    arrays = run.detour_arrays()
    for i, (c, s, d) in enumerate(zip(*(a.tolist() for a in arrays))):
        p = sorted(parts.get(i, []), key=lambda x: -x[1])
        main = p[0] if p else ("", 0)
        w.writerow([*lead, c, s, d, main[0], main[1], ";".join(f"{lab}={ns}" for lab, ns in p)])
    return len(arrays.cpu)
