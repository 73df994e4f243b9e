"""The `tune` run kind (`tune verify`): a directory holding the before/ and after/ measure runs, the
plan applied and the verification, registered with kinds.py."""

from __future__ import annotations

from pydantic import StrictBool, StrictStr

from jitterscope import kinds
from jitterscope.kinds import RunKind
from jitterscope.runcheck import Number, OpenModel


class TuneSummary(OpenModel):
    """`jitterscope tune verify` (docs/run-format.md, "tune verify directories")."""

    ok: StrictBool
    alpha: Number
    targets: list[dict[str, object]]
    overall: dict[str, object]
    before: StrictStr
    after: StrictStr


kinds.register(
    RunKind(
        "tune",
        tables={},
        summary=TuneSummary,
        doc="`jitterscope tune verify`: the before/after runs (before/, after/, themselves measure runs), the plan "
        "applied and the verification (summary.json, verify.html)",
        order=7,
        no_page="its page is verify.html",
        no_compare="compare the before/ and after/ runs inside",
    )
)
