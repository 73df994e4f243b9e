"""Event formats: read from tracefs, saved next to the raw pages.

The raw pages are only meaningful with the event ids, field offsets and the
page header layout of the kernel that wrote them, so the session saves them
into the trace directory (formats.json for people and tools, events.txt in the
line format jitterscope-traceparse reads) and re-analysis works offline, on
another machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TypedDict

from jitterscope.atomic import write_text

_FIELD = re.compile(r"field:(?P<decl>[^;]+);\s*offset:(?P<off>\d+);\s*size:(?P<size>\d+);\s*signed:(?P<signed>\d)")

# The parser's role for each event, and the fields it needs.
ROLES: dict[tuple[str, str], str] = {
    ("irq", "irq_handler_entry"): "irq_entry",
    ("irq", "irq_handler_exit"): "irq_exit",
    ("irq", "softirq_entry"): "softirq_entry",
    ("irq", "softirq_exit"): "softirq_exit",
    ("nmi", "nmi_handler"): "nmi",
    ("sched", "sched_switch"): "switch",
    ("workqueue", "workqueue_execute_start"): "work_start",
    ("workqueue", "workqueue_execute_end"): "work_end",
    ("timer", "hrtimer_expire_entry"): "hrt_entry",
    ("timer", "hrtimer_expire_exit"): "hrt_exit",
    ("timer", "timer_expire_entry"): "tmr_entry",
    ("timer", "timer_expire_exit"): "tmr_exit",
    ("ftrace", "print"): "print",
}

# Softirq names when the format's print fmt cannot be read (kernel order).
DEFAULT_SOFTIRQS = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"]


class _EventFormatBase(TypedDict):
    fields: dict[str, list[int]]  # name -> [offset, size, signed]


class EventFormat(_EventFormatBase, total=False):
    """One event's format file, parsed (each line the file has)."""

    id: int
    name: str
    print_fmt: str


class Formats(TypedDict):
    """Everything the trace parser needs (formats.json): the page layout, each event's format, softirq names."""

    header_page: dict[str, list[int]]  # timestamp, commit, data -> [offset, size]
    header_event: str
    events: dict[str, EventFormat]  # "subsystem/name" -> its format
    softirqs: list[str]


def parse_format(text: str) -> EventFormat:
    """One events/<sub>/<name>/format file → {id, name, fields: {name: [off, size, signed]}, print_fmt}."""
    out: EventFormat = {"fields": {}}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("ID:"):
            out["id"] = int(line.split()[1])
        elif line.startswith("name:"):
            out["name"] = line.split(None, 1)[1]
        elif line.startswith("print fmt:"):
            out["print_fmt"] = line[len("print fmt:") :].strip()
        else:
            m = _FIELD.search(line)
            if m:
                decl = m.group("decl").strip()
                name = re.sub(r"\[.*\]$", "", decl.split()[-1])
                out["fields"][name] = [int(m.group("off")), int(m.group("size")), int(m.group("signed"))]
    return out


def parse_header_page(text: str) -> dict[str, list[int]]:
    """events/header_page → {timestamp: [off, size], commit: [...], data: [...]}."""
    out: dict[str, list[int]] = {}
    for line in text.splitlines():
        m = _FIELD.search(line)
        if m:
            name = m.group("decl").split()[-1]
            if name in ("timestamp", "commit", "data"):
                out[name] = [int(m.group("off")), int(m.group("size"))]
    for k, v in {"timestamp": [0, 8], "commit": [8, 8], "data": [16, 4080]}.items():
        out.setdefault(k, v)
    return out


def softirq_names(print_fmt: str | None) -> list[str]:
    """The softirq vector names from softirq_entry's __print_symbolic table."""
    if not print_fmt:
        return list(DEFAULT_SOFTIRQS)
    pairs = re.findall(r"\{\s*(\d+)\s*,\s*\"([^\"]+)\"\s*\}", print_fmt)
    if not pairs:
        return list(DEFAULT_SOFTIRQS)
    n = max(int(i) for i, _ in pairs) + 1
    names = [f"softirq{i}" for i in range(n)]
    for i, name in pairs:
        names[int(i)] = name
    return names


def collect(root: Path, events: list[tuple[str, str]]) -> Formats:
    """Everything the parser needs, read from tracefs `root` (the top level)."""
    ev_dir = root / "events"
    formats: dict[str, EventFormat] = {}
    for sub, name in [*events, ("ftrace", "print")]:
        f = ev_dir / sub / name / "format"
        try:
            formats[f"{sub}/{name}"] = parse_format(f.read_text())
        except OSError:
            continue
    soft = formats.get("irq/softirq_entry", {"fields": {}}).get("print_fmt")
    return {
        "header_page": parse_header_page((ev_dir / "header_page").read_text()),
        "header_event": (ev_dir / "header_event").read_text(),
        "events": formats,
        "softirqs": softirq_names(soft),
    }


def events_txt(info: Formats) -> str:
    """The formats as the line format jitterscope-traceparse reads."""
    hp = info["header_page"]
    lines = [
        "# jitterscope trace formats: page layout, softirq names, one line per event",
        "page " + " ".join(f"{k} {hp[k][0]} {hp[k][1]}" for k in ("timestamp", "commit", "data")),
    ]
    first = next(iter(info["events"].values()), None)
    common = first["fields"].get("common_pid") if first else None
    lines.append(f"common_pid {common[0] if common else 4}")
    lines.append("softirqs " + " ".join(info["softirqs"]))
    for key, fmt in sorted(info["events"].items()):
        if "id" not in fmt:
            continue
        sub, name = key.split("/", 1)
        role = ROLES.get((sub, name))
        label = "-"
        if role is None and sub == "irq_vectors" and name.endswith(("_entry", "_exit")):
            label, _, end = name.rpartition("_")
            role = "vec_entry" if end == "entry" else "vec_exit"
        if role is None:
            continue
        fields = " ".join(f"{f} {v[0]} {v[1]}" for f, v in fmt["fields"].items() if not f.startswith("common_"))
        lines.append(f"event {fmt['id']} {role} {label} -1 {fields}".rstrip())
    return "\n".join(lines) + "\n"


def save(out_dir: Path, info: Formats) -> None:
    write_text(out_dir / "formats.json", json.dumps(info, indent=1) + "\n")
    write_text(out_dir / "events.txt", events_txt(info))
