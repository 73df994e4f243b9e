"""The `tune` run kind (`tune verify`): a directory holding the before/ and after/ measure runs, the
plan applied and the verification, registered with kinds.py."""

from __future__ import annotations

from jitterscope import kinds, runcheck
from jitterscope.kinds import RunKind

kinds.register(
    RunKind(
        "tune",
        tables={},
        summary=runcheck.TuneSummary,
        doc="`jitterscope tune verify`: the before/after runs (before/, after/, themselves measure runs), the plan "
        "applied and the verification (summary.json, verify.html)",
        order=7,
        no_page="its page is verify.html",
        no_compare="compare the before/ and after/ runs inside",
    )
)
