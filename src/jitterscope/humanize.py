"""Numbers for people: the one place that decides how a number a person reads looks.

Every terminal line, report table and error message formats through these, so a
value reads the same everywhere: no scientific notation a person has to decode
("1.13e+03%" is "1,130%"), no "1 times", units on every quantity, big spans of
time in days or years rather than millions of hours.  JSON output is never
formatted: it carries raw numbers with their unit in the key.

    duration_ns(1234567)   '1.23 ms'         seconds(7.2e9)    'about 228 years'
    seconds(5400)          '1.5 h'           percent(11.3)     '1,130%'
    percent(0.00583)       '0.583%'          ppm(546101.9)     '546,102 ppm'
    count(1, "time")       '1 time'          count(3, "host")  '3 hosts'
    number(24343.477)      '24,343'          number(0.0123)    '0.0123'
"""

from __future__ import annotations

import math

__all__ = ["count", "duration_ns", "number", "percent", "plural", "ppm", "seconds"]

_IRREGULAR = {
    "delay": "delays",
    "day": "days",
    "key": "keys",
    "entry": "entries",
    "copy": "copies",
    "this": "these",
    "is": "are",
    "was": "were",
    "has": "have",
}


def plural(n: float, noun: str, many: str | None = None) -> str:
    """`noun` or its plural, for `n` of them (1 -> singular; 0, 2, 1.5 -> plural)."""
    if n == 1:
        return noun
    if many:
        return many
    if noun in _IRREGULAR:
        return _IRREGULAR[noun]
    if noun.endswith(("s", "sh", "ch", "x")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def count(n: float, noun: str, many: str | None = None) -> str:
    """'1 host', '2 hosts', '12,345 detours'."""
    return f"{number(n)} {plural(n, noun, many)}"


def number(x: float, digits: int = 3) -> str:
    """A plain number: whole numbers with thousands separators, others to `digits` significant
    digits, never in scientific notation below 1e15 (then '1.2e+15')."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, float) and math.isinf(x):
        return "infinite" if x > 0 else "-infinite"
    a = abs(x)
    if a >= 1e15:
        return f"{x:.{digits}g}"
    if float(x).is_integer() or a >= 10 ** (digits - 1):
        return f"{round(x):,}"
    if a == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(a)))
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def percent(fraction: float, digits: int = 3) -> str:
    """A fraction (0.0123) as a percentage ('1.23%'); below 1e-9 of a percent it is 0
    (floating-point dust, e.g. a noise-free replay's 2.2e-14)."""
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return "n/a"
    p = fraction * 100
    if abs(p) < 1e-9:
        return "0%"
    return f"{number(p, digits)}%"


def ppm(x: float) -> str:
    """Parts per million of CPU time: '546,102 ppm', '12.3 ppm'."""
    return f"{number(x)} ppm"


def duration_ns(ns: float) -> str:
    """A short duration: '850 ns', '1.23 us', '4.5 ms', '2.4 s'; from a minute up as `seconds`."""
    a = abs(ns)
    if a >= 60e9:
        return seconds(ns / 1e9)
    for unit, f in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if a >= f:
            return f"{ns / f:.3g} {unit}"
    return f"{ns:.0f} ns"


_SPANS = (("years", 365.25 * 86400), ("days", 86400.0), ("h", 3600.0), ("min", 60.0))


def seconds(s: float) -> str:
    """A span of time: '850 ns' .. '42 s', '12 min', '1.5 h', '3.2 days', 'about 228 years'."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "n/a"
    if math.isinf(s):
        return "forever"
    a = abs(s)
    if a < 60:
        return duration_ns(s * 1e9) if a < 1 else f"{s:.3g} s"
    for unit, f in _SPANS:
        if a >= f * (1 if unit != "days" else 2) or unit == "min":
            v = s / f
            text = f"{number(v)} {unit}"
            if unit == "days" and v == 1:
                text = "1 day"
            return f"about {text}" if unit == "years" else text
    return f"{s:.3g} s"
