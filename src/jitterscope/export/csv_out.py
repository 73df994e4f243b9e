"""CSV for spreadsheets: one row per detour with its main source and all sources."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from jitterscope.rundir import Run


def write_csv(run: Run, out: Path) -> dict[str, Any]:
    det = run.detours
    att = run.attribution
    parts: dict[int, list[tuple[str, int]]] = {}
    for d, k, n, ns in zip(att.column("detour").to_pylist(), att.column("kind").to_pylist(),
                           att.column("name").to_pylist(), att.column("ns").to_pylist()):
        parts.setdefault(d, []).append((f"{k}:{n}", ns))
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cpu", "start_ns", "duration_ns", "main_source", "main_source_ns", "sources"])
        for i, (c, s, d) in enumerate(zip(det.column("cpu").to_pylist(), det.column("start_ns").to_pylist(),
                                          det.column("duration_ns").to_pylist())):
            p = sorted(parts.get(i, []), key=lambda x: -x[1])
            main = p[0] if p else ("", 0)
            w.writerow([c, s, d, main[0], main[1], ";".join(f"{lab}={ns}" for lab, ns in p)])
    return {"format": "csv", "files": [str(out)], "detours": det.num_rows}
