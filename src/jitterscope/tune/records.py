"""What `tune plan` computes, as typed records: a run's refined `Source`s, the `Remedy` a rule finds for
each (its `Knob`s and boot parameters), and the `Plan` (`tune plan --json`, and plan.yaml before the
plan file's own validation).  mypy checks every key the rules write and the renderer reads."""

from __future__ import annotations

from typing import TypedDict


class Source(TypedDict):
    """One refined source of a measure run (tune/sources.py): its noise on the measured CPUs."""

    kind: str
    name: str
    count: int
    total_ns: int
    ppm: float  # of the measured CPU time
    share: float  # of the run's attributed noise
    max_ns: int
    cpus: list[int]


class _KnobBase(TypedDict):
    knob: str
    value: str
    current: str | None  # now, on this machine (None: the knob does not exist here)
    expect: str  # "gone" or "fewer"
    factor: float | None
    why: str


class Knob(_KnobBase, total=False):
    """A runtime knob change a rule proposes; `process` names a task.PID knob's process."""

    process: str


class LeftTask(TypedDict):
    pid: int
    process: str
    user: str
    pinned: bool


class PinnedTask(TypedDict):
    pid: int
    process: str


class _RemedyBase(TypedDict):
    action: str
    removable_ppm: float
    why: str
    knobs: list[Knob]
    boot: list[str]
    reason: str | None  # a shared explanation's name (rules.REASONS)


class Remedy(_RemedyBase, total=False):
    """What a rule does about one source; `left` (out of scope) and `pinned` (moved although pinned)."""

    left: list[LeftTask]
    pinned: list[PinnedTask]


class PlanItem(Remedy):
    """One source of the plan with its remedy."""

    source: str  # "kind:name"
    kind: str
    name: str
    ppm: float
    share: float
    count: int
    max_ns: int


class KnobSource(TypedDict):
    source: str
    expect: str
    factor: float | None
    ppm: float


class _PlanKnobBase(TypedDict):
    knob: str
    value: str
    current: str | None
    why: str
    sources: list[KnobSource]


class PlanKnob(_PlanKnobBase, total=False):
    """One runtime knob of the plan, naming every source it serves."""

    process: str


class PlanBoot(TypedDict):
    params: list[str]
    cmdline: str
    bootloader: str | None
    command: str | None


class Unaddressed(TypedDict):
    source: str
    ppm: float
    why: str


class ToolSource(TypedDict):
    source: str
    ppm: float


class LeftEntry(LeftTask):
    source: str


class PinnedEntry(PinnedTask):
    source: str


class Plan(TypedDict):
    """`tune plan`'s result: what plan.yaml holds."""

    format: str
    version: int
    run: str
    run_id: str | None
    host: str | None
    kernel: str | None
    virtualization: str | None
    cpus: list[int]
    housekeeping: list[int]
    cpus_text: str
    duration_s: float | None
    total_ppm: float
    knobs: list[PlanKnob]
    boot: PlanBoot
    items: list[PlanItem]
    unaddressed: list[Unaddressed]
    tool: list[ToolSource]
    move: list[str]
    left: list[LeftEntry]
    pinned: list[PinnedEntry]


class _BootLoaderBase(TypedDict):
    kind: str | None  # grubby, grub, kernel-install; None: no configuration found here
    file: str | None
    command: str  # how to add the parameters ("{params}" stands for them)
    editable: bool


class BootLoader(_BootLoaderBase, total=False):
    """This machine's boot configuration (bootloader.detect)."""

    update: list[str] | None  # the command that regenerates it after an edit


class BootApplied(TypedDict):
    """What `tune apply --boot` did to the boot configuration."""

    file: str
    ran: str | None
    params: list[str]
    reboot_needed: bool


class _ApplyRowBase(TypedDict):
    knob: str
    before: str
    value: str
    now: str


class ApplyRow(_ApplyRowBase, total=False):
    """One knob `tune apply` set (with --dry-run: would set)."""

    changed: bool
    sources: list[KnobSource]


class _ApplyResultBase(TypedDict):
    record: str | None
    rows: list[ApplyRow]


class ApplyResult(_ApplyResultBase, total=False):
    """`tune apply`'s result (--json)."""

    boot: BootApplied | None
    skipped: list[str]
    boot_params: list[str]


class RevertRow(TypedDict):
    """One knob of a tune record: its original, what tune set, and where it is now."""

    knob: str
    original: str
    set: str
    before: str
    now: str
    result: str
    note: str


class _RecordStateBase(TypedDict):
    record: str
    label: str | None
    time: float | None
    rebooted: bool
    rows: list[RevertRow]


class RecordState(_RecordStateBase, total=False):
    """A tune record's knobs (`tune status`), or what `tune revert` did to them (`complete`)."""

    complete: bool
