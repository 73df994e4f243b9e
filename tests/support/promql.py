"""The names a PromQL query uses (metrics and labels), for checking shipped queries against /metrics.

Not a PromQL parser: Prometheus itself checks the syntax (promtool, or the server running the query).
This finds the names: label matchers inside `{...}`, label lists of by/without/on/ignoring/group_*,
and what is left that is neither a function, a keyword, a number, a duration nor a string: metrics.
"""

from __future__ import annotations

import re
from typing import Any

KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right"}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$")


def names_in(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) a query uses."""
    bare = _STRING.sub('""', expr)
    labels: set[str] = set()
    for body in re.findall(r"\{([^}]*)\}", bare):
        labels |= set(_MATCHER.findall(body))
    for body in _GROUPING.findall(bare):
        labels |= {x.strip() for x in body.split(",") if x.strip()}
    rest = re.sub(r"\{[^}]*\}", " ", bare)
    rest = _GROUPING.sub(" ", rest)
    rest = re.sub(r"\[[^\]]*\]", " ", rest)  # ranges and subqueries
    rest = re.sub(r"\$\w+", " ", rest)  # Grafana variables
    rest = re.sub(r"(?<![A-Za-z_:])\d[\w.]*", " ", rest)  # numbers and durations (10, 1e3, 5m)
    metrics = set()
    for m in _IDENT.finditer(rest):
        if m.group(0) in KEYWORDS or rest[m.end() :].lstrip().startswith("("):
            continue  # a keyword, a function or an aggregation
        metrics.add(m.group(0))
    return metrics, labels


def dashboard_queries(dashboard: dict[str, Any]) -> list[tuple[str, str, set[str]]]:
    """(where, PromQL, labels it names outside the expression) for every panel target and query variable."""
    out = []
    for panel in dashboard.get("panels", []):
        for t in panel.get("targets", []):
            out.append((panel.get("title", "?"), t["expr"], set()))
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        q = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
        m = _LABEL_VALUES.match(q)
        assert m, f"variable {var['name']}: only label_values(SELECTOR, LABEL) is understood here: {q}"
        out.append((f"variable {var['name']}", m.group(1), {m.group(2)}))
    return out
