"""The plan file `tune plan --out` writes and `tune apply` / `tune verify` read (YAML, config.py's validation).

Only `host`, `kernel`, `cpus`, `knobs` and `boot` are acted on; the rest
(`items`, `unaddressed`, ...) explains the plan and may be edited away.  A knob
entry's `sources` say what the change should do to each source it targets:
`expect: gone` (off the measured CPUs) or `fewer` (its rate times `factor`,
when known) — `tune verify` checks exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BeforeValidator, Field

from jitterscope import atomic
from jitterscope.config import ConfigModel, load_config
from jitterscope.outpath import check_file

PLAN_FORMAT = "jitterscope-tune-plan"
Text = Annotated[
    str, BeforeValidator(lambda v: str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
]


class PlanSource(ConfigModel):
    source: str
    expect: Literal["gone", "fewer"]
    factor: float | None = None
    ppm: float = 0.0


class PlanKnob(ConfigModel):
    knob: str
    value: Text
    current: Text | None = None
    why: str = ""
    process: str | None = None  # task.PID knobs: the process's name when planned (a recycled pid is skipped)
    sources: list[PlanSource] = Field(default_factory=list)


class PlanBoot(ConfigModel):
    params: list[str] = Field(default_factory=list)
    cmdline: str = ""
    bootloader: str | None = None
    command: str | None = None


class PlanFile(ConfigModel):
    format: Literal["jitterscope-tune-plan"]
    version: Literal[1]
    host: Text
    kernel: Text
    cpus: list[int]
    housekeeping: list[int]
    knobs: list[PlanKnob] = Field(default_factory=list)
    boot: PlanBoot = PlanBoot()
    # Explanations, not acted on (the user may edit or delete them: kept as written, whatever they hold):
    run: str | None = None
    run_id: str | None = None
    virtualization: str | None = None
    cpus_text: str | None = None
    duration_s: float | None = None
    total_ppm: float | None = None
    items: list[dict[str, object]] = Field(default_factory=list)
    unaddressed: list[dict[str, object]] = Field(default_factory=list)
    tool: list[dict[str, object]] = Field(default_factory=list)
    move: list[str] = Field(default_factory=list)
    left: list[dict[str, object]] = Field(default_factory=list)
    pinned: list[dict[str, object]] = Field(default_factory=list)


def load(path: str | Path) -> PlanFile:
    return load_config(path, PlanFile, what="tune plan")


def write(plan: Mapping[str, object], path: str | Path) -> Path:
    p = check_file(path, "--out")
    atomic.write_text(
        p,
        "# jitterscope tune plan: `jitterscope tune apply` acts on knobs and (with --boot) boot.\n"
        + yaml.safe_dump(plan, sort_keys=False, width=110, allow_unicode=True),
    )
    return p
