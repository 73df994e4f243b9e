"""The `cluster` run kind (`cluster measure|bsp`): one run per node (host, cpu) in per-node datasets,
registered with kinds.py.  A rank's run cut short is a measurement, finished by the measure kind's
recovery; a cluster run cut short while rank 0 wrote it is named, in one line, by this kind's."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from jitterscope import kinds
from jitterscope.kinds import Comparison, Lazy, Recovery, RunKind, TableSpec
from jitterscope.measure import kind as measure_kind
from jitterscope.runcheck import OpenModel


class ClusterSummary(OpenModel):
    run: dict[str, object]
    nodes: list[dict[str, object]]


BSP_PHASES = pa.schema(
    [
        ("host", pa.string()),
        ("cpu", pa.int32()),
        ("rank", pa.int32()),
        ("phase", pa.int32()),
        ("compute_ns", pa.int64()),
        ("noise_ns", pa.int64()),
        ("gaps", pa.int64()),
        ("phase_end_ns", pa.int64()),
    ]
)


def _finds(run_dir: Path) -> bool:
    """A cluster run cut short while rank 0 wrote it (meta.json still marked incomplete)."""
    from jitterscope.session import started_as

    return started_as(run_dir, "cluster")


def _analyze(args: argparse.Namespace) -> int:
    """The ranks' runs were complete when rank 0 began writing; each is kept where it was measured."""
    from jitterscope.session import cut_short

    cut_short(
        args.run,
        f"a cluster run killed while rank 0 wrote it: each rank's run is kept as {args.run.name}.rank<N> next to "
        f"it (or in the state directory's kept/ on a host that cannot write there): `jitterscope analyze` each",
    )


def _is_bsp(meta: Mapping[str, Any]) -> bool:
    return meta.get("mode") == "bsp"


kinds.register(
    RunKind(
        "cluster",
        tables={
            **{name: replace(spec, per_node=True) for name, spec in measure_kind.TABLES.items()},
            "bsp_phases": TableSpec(BSP_PHASES, required=_is_bsp),
        },
        summary=ClusterSummary,
        doc="`jitterscope cluster measure|bsp`: one run per node (host, cpu), per-node datasets",
        label="a cluster run",
        order=1,
        page=Lazy("jitterscope.report.cluster:build_page"),
        comparison=Comparison(
            Lazy("jitterscope.compare.cluster:compare_clusters"), Lazy("jitterscope.compare.cluster:render_compare")
        ),
        exporters=measure_kind.DETOUR_EXPORTERS,
        recovery=Recovery(_finds, _analyze),
    )
)
