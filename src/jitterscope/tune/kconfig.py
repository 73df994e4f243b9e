"""The running kernel's build configuration, where it can be read (/proc/config.gz, /boot/config-RELEASE)."""

from __future__ import annotations

import gzip
import platform
import re
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def read() -> tuple[dict[str, str], str | None]:
    """({CONFIG_X: value}, where it was read) — ({}, None) when the kernel does not publish it."""
    for path in (Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}")):
        try:
            raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        except (OSError, gzip.BadGzipFile, EOFError):
            continue
        text = raw.decode(errors="replace")
        values = dict(re.findall(r"^(CONFIG_\w+)=(.*)$", text, re.MULTILINE))
        values.update({k: "n" for k in re.findall(r"^# (CONFIG_\w+) is not set", text, re.MULTILINE)})
        return values, str(path)
    return {}, None


def option(name: str) -> str | None:
    """`y`, `m`, `n`, a value, or None when the configuration cannot be read."""
    values, source = read()
    return None if source is None else values.get(name, "n")


def enabled(name: str) -> bool | None:
    v = option(name)
    return None if v is None else v in ("y", "m")


def hz() -> int | None:
    v = option("CONFIG_HZ")
    return int(v) if v and v.isdigit() else None


def preemption() -> str | None:
    """The preemption model built in (PREEMPT_DYNAMIC kernels can switch it at boot with preempt=)."""
    if option("CONFIG_PREEMPT_RT") == "y":
        return "full real-time (PREEMPT_RT)"
    for name, label in (
        ("CONFIG_PREEMPT", "full"),
        ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ("CONFIG_PREEMPT_NONE", "none"),
        ("CONFIG_PREEMPT_LAZY", "lazy"),
    ):
        if option(name) == "y":
            dynamic = option("CONFIG_PREEMPT_DYNAMIC") == "y"
            dyn = " (PREEMPT_DYNAMIC: preempt= at boot can change it)" if dynamic else ""
            return label + dyn
    return None
