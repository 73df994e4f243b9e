"""The `cluster` run kind (`cluster measure|bsp`): one run per node (host, cpu) in per-node datasets,
registered with kinds.py.  A cut-short cluster run is finished by the measure kind's recovery."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from jitterscope import kinds, runcheck
from jitterscope.kinds import Comparison, RunKind, TableSpec, if_traced
from jitterscope.measure.kind import DETOUR_EXPORTERS
from jitterscope.rundir import ACTIVITY_SCHEMA, ATTRIBUTION_SCHEMA, DETOUR_SCHEMA, Run

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


def _is_bsp(meta: Mapping[str, Any]) -> bool:
    return meta.get("mode") == "bsp"


def _page(run: Run) -> tuple[str, list[Any]]:
    from jitterscope.report.cluster import build_page

    return build_page(run)


def _compare(base: Run, new: Run, th: Any) -> dict[str, Any]:
    from jitterscope.compare.cluster import compare_clusters

    return compare_clusters(base, new, th)


def _render_compare(res: dict[str, Any]) -> str:
    from jitterscope.compare.cluster import render_compare

    return render_compare(res)


kinds.register(
    RunKind(
        "cluster",
        tables={
            "detours": TableSpec(DETOUR_SCHEMA, per_node=True),
            "attribution": TableSpec(ATTRIBUTION_SCHEMA, required=if_traced, per_node=True),
            "activity": TableSpec(ACTIVITY_SCHEMA, required=if_traced, per_node=True),
            "bsp_phases": TableSpec(BSP_PHASES, required=_is_bsp),
        },
        summary=runcheck.ClusterSummary,
        doc="`jitterscope cluster measure|bsp`: one run per node (host, cpu), per-node datasets",
        label="a cluster run",
        order=1,
        page=_page,
        comparison=Comparison(_compare, _render_compare),
        exporters=DETOUR_EXPORTERS,
    )
)
