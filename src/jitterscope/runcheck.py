"""meta.json and summary.json checked at load, through the configuration layer (config.py).

Here: `Meta` (every kind's meta.json, which a kind may extend), `OpenModel` and the
shared field types.  Each kind's summary model is declared with the kind, in its
package's kind.py (kinds.py).

A run written by hand, by an older tool or half-overwritten must be refused in
one line naming the file and the key ("summary.json: cpus.1.noise_ppm must be
a number, got 'high'"), never read into a wrong answer or a traceback later.
Keys beyond these are allowed (the format grows by adding keys); the types of the
documented ones (docs/run-format.md) and the kinds are checked. Per-CPU and
per-source numbers may be absent (read as 0), as in the synthetic runs tests write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from jitterscope.config import one_line, validate
from jitterscope.errors import JitterscopeError

# Lax int: a count written as 142660465.0 by an older writer still reads; "high" or 1.5 do not.
Count = Annotated[int, Field(ge=0)]
Number = Annotated[float, Field(allow_inf_nan=False)]


class OpenModel(BaseModel):
    """A run file's model: documented keys typed, other keys allowed (the format grows by adding keys)."""

    model_config = ConfigDict(extra="allow")


class Meta(OpenModel):
    format: StrictStr
    format_version: StrictInt
    kind: StrictStr = "measure"  # a registered kind (kinds.py; rundir checks it)
    id: StrictStr | None = None
    host: StrictStr | None = None
    kernel: StrictStr | None = None
    command_line: list[StrictStr] | None = None
    start: StrictStr | None = None
    start_unix_ns: StrictInt | None = None
    duration_s: Annotated[Number, Field(ge=0)]
    interrupted: StrictBool = False
    cpus: list[Count] = []
    # the kind's own records, checked by whoever reads them (free-form at this level: each kind has its own)
    options: dict[str, object] = {}
    tsc_hz: Number | None = None
    t0_tsc: StrictInt | None = None
    tracing: dict[str, object] = {}
    lost_events: Count = 0
    probe: dict[str, object] = {}


M = TypeVar("M", bound=BaseModel)


def check_meta(meta: Any, path: Path, model: type[M] = Meta) -> M:  # type: ignore[assignment]
    """meta.json's documented fields have their documented types (one line naming file and key otherwise)."""
    return validate(meta, model, str(path))


def check_summary(summary: Any, model: type[M], path: Path) -> M:
    """summary.json against its kind's model (its kind's `summary` in kinds.py)."""
    return validate(summary, model, str(path))


T = TypeVar("T")


_ADAPTERS: dict[object, TypeAdapter[Any]] = {}  # building one costs ~1 ms: once per record type


def read_record(data: Any, record: type[T], where: Path | str) -> T:
    """A run file's data (or a native program's JSON line) as `record`, a TypedDict of its kind
    (typing_extensions' on Python < 3.12), checked once here where it is read: keys the record does not name
    are left out; a mistake is one line starting with `where`."""
    try:
        adapter = _ADAPTERS.get(record) or _ADAPTERS.setdefault(record, TypeAdapter(record))
        return cast(T, adapter.validate_python(data))
    except ValidationError as err:
        raise JitterscopeError(one_line(err, str(where), data)) from None


# Table columns that are lengths of time, never negative (time stamps such as start_ns may be: before t0; so may
# protect's stop_latency_ns, by design: the co-runner was already off the CPU at the decision).
DURATION_COLUMNS = frozenset(
    {
        "duration_ns",
        "jitter_ns",
        "path_jitter_ns",
        "ns",
        "offset_ns",
        "noise_ns",
        "compute_ns",
        "latency_ns",
        "latency_p99_ns",
        "run_ns",
        "wait_ns",
        "wall_ns",
        "cpu_ns",
        "window_ns",
        "actual_ns",
        "requested_ns",
    }
)


def check_durations(path: Path, table: pa.Table) -> None:
    """No length of time in a table is negative (a hand-edited run was once summed into a wrong answer)."""
    for name in DURATION_COLUMNS.intersection(table.column_names):
        col = table.column(name)
        if not pa.types.is_integer(col.type) and not pa.types.is_floating(col.type):
            continue
        low = pc.min(col).as_py()
        if low is not None and low < 0:
            row = pc.index(col, low).as_py()
            raise ValueError(f"{path}: corrupt table ({name} is a length of time, row {row} has {low})")


def check_cpus(path: Path, cpus: list[int], found: set[int], where: str) -> None:
    """The CPUs a table or summary.json holds are among meta.json's `cpus` (the run's measured CPUs)."""
    stray = sorted(found - set(cpus))
    if cpus and stray:
        raise ValueError(
            f"{path}: CPU {', '.join(map(str, stray))} in {where} is not among meta.json's cpus "
            f"{', '.join(map(str, cpus))}: the run's files disagree"
        )
