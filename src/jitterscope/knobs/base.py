"""A system knob: read it, normalise its value, write it through the journal, re-read it.

Every knob's value has one canonical text, so values compare however the
kernel or the user spells them: integers as decimal, choices as the word
(THP's `always [madvise] never` reads as `madvise`), CPU sets as a normalised
CPU list (`0-1`), whether the file speaks lists (`smp_affinity_list`) or hex
masks (workqueue `cpumask`).  A change is journalled (its original, the value
written, the knob's name and form) before it is made, then read back: a kernel
that keeps another value is an error, not a silent success.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.journal import Entry, Journal, read_setting
from jitterscope.units import (
    format_cpulist,
    format_cpumask,
    parse_cpulist,
    parse_cpumask,
)

FORMS = ("int", "choice", "cpulist", "cpumask")


def canonical(form: str, text: str) -> str:
    """The canonical text of a value read from a knob's file (or given by a user, for CPU sets as a list)."""
    t = str(text).strip()
    if form == "int":
        return str(int(t))
    if form == "cpulist":
        return format_cpulist(parse_cpulist(t)) if t else ""
    if form == "cpumask":
        return format_cpulist(parse_cpumask(t))
    return t


@dataclass(frozen=True)
class FileKnob:
    """A knob that is one kernel file (a sysctl, a sysfs or procfs setting)."""

    name: str
    path: Path
    form: str  # one of FORMS
    doc: str = ""  # what it does, and where that is documented
    lo: int | None = None  # bounds of an integer knob
    hi: int | None = None
    choices: tuple[str, ...] = ()  # of a choice knob; files that list them (`a [b] c`) are read instead

    runtime = True

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> str:
        """The current value, canonical."""
        return canonical(self.form, read_setting(self.path))

    def offered(self) -> tuple[str, ...]:
        if self.form != "choice":
            return ()
        try:
            text = self.path.read_text()
        except OSError:
            return self.choices
        return tuple(text.replace("[", "").replace("]", "").split()) if "[" in text else self.choices

    def normalise(self, value: Any) -> str:
        """A user's value as the canonical text, or a one-line UsageError saying what is allowed."""
        v = str(value).strip()
        if self.form == "int":
            try:
                n = int(v)
            except ValueError:
                raise UsageError(f"knob {self.name}: {v!r} is not an integer") from None
            if (self.lo is not None and n < self.lo) or (self.hi is not None and n > self.hi):
                raise UsageError(f"knob {self.name}: {v} is out of range {self.lo}..{self.hi}")
            return str(n)
        if self.form in ("cpulist", "cpumask"):
            try:
                return format_cpulist(parse_cpumask(v[2:]) if v.lower().startswith("0x") else parse_cpulist(v))
            except UsageError as err:
                raise UsageError(f"knob {self.name}: {err}") from None
        offered = self.offered()
        if offered and v not in offered:
            raise UsageError(f"knob {self.name}: {v!r} is not one of {', '.join(offered)}")
        return v

    def file_text(self, value: str) -> str:
        """What to write to the file for a canonical value."""
        return format_cpumask(parse_cpulist(value)) if self.form == "cpumask" else value

    def apply(self, j: Journal, value: str) -> list[Entry]:
        """Set the knob to `value` (canonical) through the journal; [] when it already has it."""
        return (
            [e]
            if (e := write_file(j, self.name, self.path, self.form, value, self.file_text(value), self.runtime))
            else []
        )


def forget(j: Journal, entry: Entry) -> None:
    """Drop a journal entry whose change was refused by the kernel (nothing to undo)."""
    if j.entries and j.entries[-1] is entry:
        j.entries.pop()


def write_file(
    j: Journal, name: str, path: Path, form: str, value: str, text: str, runtime: bool = True
) -> Entry | None:
    """Journal, write, re-read.  None when the file already holds `value`."""
    original = read_setting(path)
    if canonical(form, original) == value:
        return None
    entry = j.begin("file", path=str(path), original=original, value=value, form=form, knob=name, runtime=runtime)
    try:
        path.write_text(text)
    except OSError as err:
        forget(j, entry)
        raise JitterscopeError(f"knob {name}: the kernel refused {value!r} ({err.strerror or err})") from None
    now = canonical(form, read_setting(path))
    if now != value:
        raise JitterscopeError(f"knob {name}: wrote {value!r} but {path} reads back {now!r}")
    return entry
