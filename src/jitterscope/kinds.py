"""Run kinds: what each kind of run directory holds, and how report, compare, export and analyze treat it.

Every kind of run (meta.json "kind": `measure`, `cluster`, `sync`, ...) declares itself in its own
package, in `jitterscope/<package>/kind.py`, with one `register(RunKind(...))`: its tables (name ->
`TableSpec`), its summary.json model and, where it has them, its report page, its comparison, its
exporters and its recovery from a cut-short run.  The foundation (rundir.py, runcheck.py) and the
commands look a kind up here (`get`, `all`) and never name one: a new kind is one package and one
registration, and nothing here imports a feature package.

Kinds are found on the first lookup by importing every `jitterscope.<package>.kind` module that
exists.  Hooks are plain functions, or `Lazy("module:function")` where the hook needs matplotlib or a
large module, so that looking a kind up stays cheap.

    register(RunKind(
        "sync",
        tables={"waits": TableSpec(WAITS),                               # required: missing is an error
                "causes": TableSpec(CAUSES, required=if_traced)},        # optional unless traced
        summary=SyncSummary,
        page=Lazy("jitterscope.sync.report:build_page"),
        comparison=Comparison(Lazy("jitterscope.sync.compare:compare_syncs"),
                              Lazy("jitterscope.sync.render:render_compare")),
        exporters={"perfetto": Exporter(_write_perfetto, _describe)},
        recovery=Recovery(_finds, _analyze),
        doc="`jitterscope sync -- CMD`: a pthread program's waits, jitter, causes, critical path"))
"""

from __future__ import annotations

import argparse
import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

import pyarrow as pa
from pydantic import BaseModel

from jitterscope import runcheck

if TYPE_CHECKING:
    from jitterscope.rundir import Run

Required = Callable[[Mapping[str, Any]], bool]


def always(meta: Mapping[str, Any]) -> bool:
    return True


def never(meta: Mapping[str, Any]) -> bool:
    return False


def if_traced(meta: Mapping[str, Any]) -> bool:
    """Required when kernel tracing was on (meta.tracing.enabled)."""
    return bool((meta.get("tracing") or {}).get("enabled"))


@dataclass(frozen=True)
class TableSpec:
    """One table of a run kind.

    `required`: a predicate on meta.json (or, for a per-node table, on that node's entry in
    `meta.nodes`): `always`, `never`, `if_traced`, or the kind's own.
    `per_node`: the table is a hive-partitioned dataset, `<name>/host=<h>/cpu=<c>/part-0.parquet`,
    one file per entry of `meta.nodes`, without the `cpu` column (the partition carries it);
    read whole, it has `host` and `cpu` columns."""

    schema: pa.Schema
    required: Required = always
    per_node: bool = False


# A kind's report page: (html, figures) of a loaded run (figures are report.page.Figure).
PageBuilder = Callable[["Run"], "tuple[str, list[Any]]"]


class Comparison(NamedTuple):
    """How two runs of a kind are compared (plain data with a "kind" key) and the result printed.
    `compare(base, new, thresholds)`: thresholds are compare.diff.Thresholds or None."""

    compare: Callable[[Run, Run, Any], dict[str, Any]]
    render: Callable[[dict[str, Any]], str]


class _ExportedBase(TypedDict):
    format: str
    files: list[str]


class Exported(_ExportedBase, total=False):
    """What an exporter wrote (`export --json` prints it): the format, the files, and what they hold."""

    detours: int  # a detour exporter (measure, cluster nodes)
    events: int  # a timeline's complete events
    waits: int  # sync: waits and jitter intervals on the timeline
    jitter: int


class Exporter(NamedTuple):
    """One export format of a kind: `write(run, out, cpu)` writes the file(s) and says what it wrote
    (`--json` prints that); `describe(result)` is the line a person reads."""

    write: Callable[[Run, Path, int | None], Exported]
    describe: Callable[[Exported], str]


class Recovery(NamedTuple):
    """How `jitterscope analyze DIR` finishes a cut-short run of this kind.

    `finds(dir)`: the directory holds this kind's raw capture; `analyze(args)` rebuilds the run and
    prints what it could not recover (args: analyze's options), returning the exit code.  `last`:
    tried after every other kind's (it claims any directory, and says what is missing)."""

    finds: Callable[[Path], bool]
    analyze: Callable[[argparse.Namespace], int]
    last: bool = False


@dataclass(frozen=True)
class RunKind:
    """A kind of run directory and everything a reader needs to know about it.

    `label`: how a sentence names one run ("a cluster run"; default "<name>").  `order`: its place
    in lists people read (measure, the common case, first).  `no_page`, `no_compare`: why a kind
    without a page or comparison has none, said after the refusal ("its page is verify.html").
    `export_hint`: said when a format it lacks is asked for (`{run}` is the run directory).
    `summary_cpus`: summary.json's `cpus` holds one entry per measured CPU, so its keys must be
    among meta.json's `cpus` (checked at load)."""

    name: str
    tables: Mapping[str, TableSpec]
    summary: type[BaseModel]
    meta: type[runcheck.Meta] = runcheck.Meta
    doc: str = ""
    label: str = ""
    order: int = 100
    page: PageBuilder | None = None
    no_page: str = ""
    comparison: Comparison | None = None
    no_compare: str = ""
    exporters: Mapping[str, Exporter] = field(default_factory=dict)
    export_hint: str = ""
    recovery: Recovery | None = None
    summary_cpus: bool = False


class Lazy:
    """A hook named "module:function", imported on its first call: a kind's page or comparison may
    need matplotlib or a large package, and looking the kind up must stay cheap."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._fn: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self._fn is None:
            module, _, name = self.target.partition(":")
            self._fn = getattr(importlib.import_module(module), name)
        return self._fn(*args)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lazy) and other.target == self.target

    def __hash__(self) -> int:
        return hash(self.target)

    def __repr__(self) -> str:
        return f"Lazy({self.target!r})"


_KINDS: dict[str, RunKind] = {}
_found = False
_done = False
_discovering = threading.RLock()


def register(kind: RunKind) -> RunKind:
    """Add a run kind (each kind's package does, in its kind.py)."""
    if kind.name in _KINDS and _KINDS[kind.name] != kind:
        raise ValueError(f"run kind {kind.name!r} is registered twice")
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove a kind (tests that register a kind of their own)."""
    _KINDS.pop(name, None)


def _discover() -> None:
    """Import every `jitterscope.<package>.kind` module: each registers its kinds.  Another thread asking
    meanwhile waits for the whole registry; a kind module asking during its own import gets what is there."""
    global _found, _done
    if _done:
        return
    with _discovering:
        if _found:
            return
        _found = True
        import jitterscope

        for root in jitterscope.__path__:
            for pkg in sorted(Path(root).iterdir()):
                if (pkg / "kind.py").is_file():
                    importlib.import_module(f"jitterscope.{pkg.name}.kind")
        _done = True


def all() -> list[RunKind]:  # noqa: A001 (the registry's own name: kinds.all())
    """Every registered kind, in `order`."""
    _discover()
    return sorted(_KINDS.values(), key=lambda k: (k.order, k.name))


def names() -> list[str]:
    """The kinds' names, in `order`."""
    return [k.name for k in all()]


def get(name: str) -> RunKind | None:
    """The kind called `name`, or None.  A kind is looked for first in the package of its name (each kind.py
    imports its own schemas and models: all of them took 0.16 s, serial in an analysis that had the rest on
    every core), then among all."""
    if name not in _KINDS and not _done and name.isidentifier() and _home(name).is_file():
        with _discovering:
            importlib.import_module(f"jitterscope.{name}.kind")
    if name not in _KINDS:
        _discover()
    return _KINDS.get(name)


def _home(name: str) -> Path:
    import jitterscope

    return Path(jitterscope.__path__[0]) / name / "kind.py"


def label(name: str) -> str:
    """How a sentence names one run of kind `name` ("a cluster run"; an unknown kind: its name)."""
    k = get(name)
    return (k.label if k else "") or name
