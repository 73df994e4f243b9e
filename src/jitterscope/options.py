"""Command-line options shared by several commands, declared and parsed once.

A command adds the options it shares with others through the `add_*` functions
(same name, default, metavar and help everywhere) and turns the parsed text into
values with the matching readers, which raise one-line `UsageError`s (exit 2)
naming the option.  Output for scripts goes through `print_json`, so every
`--json` prints the same way (two-space indentation, one document on stdout).

How a new command uses it (e.g. `commands/tune.py`)::

    from jitterscope import options

    def add_arguments(p: argparse.ArgumentParser) -> None:
        options.add_cpus(p)
        options.add_duration(p, default="10s")
        options.add_threshold(p)
        options.add_priority(p)
        options.add_tracing(p)            # --no-trace and --buffer
        options.add_json(p)
        p.add_argument("--my-own-option", ...)

    def run(args: argparse.Namespace) -> int:
        cpus = options.cpus(args)         # default: every online CPU but the lowest
        duration_ns = options.duration_ns(args)
        result = my_library.do_it(cpus, duration_ns, threshold_ns=options.threshold_ns(args),
                                  priority=options.priority(args), trace=not args.no_trace,
                                  buffer_kb=options.buffer_kb(args))
        if args.json:
            options.print_json(result)    # a dict, list, dataclass or TypedDict
        else:
            print(my_render.render(result))
        return 0

The defaults a command passes (`add_duration(p, default="60s")`) appear in its
--help; the readers take the same option name, so bounds come from
`units.DURATION_BOUNDS` / `units.SIZE_BOUNDS` keyed by that name.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
from typing import Any

from jitterscope import sysinfo
from jitterscope.errors import UsageError
from jitterscope.units import parse_cpulist, parse_duration_ns, parse_size

DEFAULT_DURATION = "10s"
DEFAULT_THRESHOLD = "1us"
DEFAULT_BUFFER = "4M"
JSON_INDENT = 2


# --- declaring -------------------------------------------------------------------------------------------------


def add_cpus(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """--cpus LIST: the CPUs to probe (read with `cpus(args)`)."""
    p.add_argument(
        "--cpus", metavar="LIST", help=help or "CPUs to probe, e.g. 1 or 1-3,5 (default: all online but the lowest)"
    )


def add_duration(p: argparse.ArgumentParser, default: str | None = DEFAULT_DURATION, help: str | None = None) -> None:
    """--duration TIME (read with `duration_ns(args)`)."""
    p.add_argument(
        "--duration", default=default, metavar="TIME", help=help or f"how long to measure (default {default})"
    )


def add_threshold(p: argparse.ArgumentParser, default: str = DEFAULT_THRESHOLD) -> None:
    """--threshold TIME: the smallest gap counted as a detour (read with `threshold_ns(args)`)."""
    p.add_argument(
        "--threshold", default=default, metavar="TIME", help=f"smallest gap counted as a detour (default {default})"
    )


def add_priority(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """--priority fifo:N (read with `priority(args)`)."""
    p.add_argument("--priority", metavar="fifo:N", help=help or "run the probe SCHED_FIFO at priority N (1-99)")


def add_no_trace(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """--no-trace: measure detours only, no kernel tracing or attribution."""
    p.add_argument("--no-trace", action="store_true", help=help or "measure only; no kernel tracing or attribution")


def add_buffer(p: argparse.ArgumentParser, default: str = DEFAULT_BUFFER, help: str | None = None) -> None:
    """--buffer SIZE: trace ring buffer per CPU (read with `buffer_kb(args)`)."""
    p.add_argument(
        "--buffer",
        default=default,
        metavar="SIZE",
        help=help or f"trace ring buffer per CPU (default {default}); raise it if events are lost",
    )


def add_tracing(p: argparse.ArgumentParser) -> None:
    """--no-trace and --buffer together, as every measuring command has them."""
    add_no_trace(p)
    add_buffer(p)


def add_json(p: argparse.ArgumentParser, what: str = "the result as JSON") -> None:
    """--json: print `what` to stdout and nothing else there (with `print_json`)."""
    p.add_argument("--json", action="store_true", help=f"print {what} to stdout and nothing else there")


def add_regression_thresholds(p: argparse.ArgumentParser, min_ppm: float = 20.0, why: str = "") -> None:
    """--alpha, --min-ppm, --min-ratio: compare's regression rule (read with `regression_thresholds(args)`)."""
    p.add_argument("--alpha", type=float, default=0.01, help="false discovery rate for significance (default 0.01)")
    p.add_argument(
        "--min-ppm",
        type=float,
        default=min_ppm,
        help=f"smallest added noise that counts as a regression, ppm (default {min_ppm:g}{why})",
    )
    p.add_argument(
        "--min-ratio",
        type=float,
        default=1.5,
        help="smallest new/base noise ratio that counts as a regression (default 1.5)",
    )


def add_action(sub: argparse._SubParsersAction, name: str, summary: str, doc: str) -> argparse.ArgumentParser:
    """One action of a command with actions (`tune plan`, `pipeline run`): `summary` in the command's list,
    `doc` (its own help with EXAMPLES, kept as written) in the action's --help."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=summary, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return parser


# --- reading ---------------------------------------------------------------------------------------------------


def cpus(args: argparse.Namespace) -> list[int]:
    """The CPUs of --cpus, or every online CPU but the lowest when it is not given."""
    text = getattr(args, "cpus", None)
    return parse_cpulist(text) if text is not None else sysinfo.default_cpus()


def duration_ns(args: argparse.Namespace, option: str = "--duration") -> float:
    return parse_duration_ns(getattr(args, option.lstrip("-").replace("-", "_")), what=option)


def threshold_ns(args: argparse.Namespace) -> float:
    return parse_duration_ns(args.threshold, what="--threshold")


def parse_priority(text: str | None) -> int | None:
    """SCHED_FIFO priority from `fifo:N` or `N` (the range 1-99 is checked where the probe starts)."""
    if text is None:
        return None
    m = re.fullmatch(r"(?:fifo:)?(\d+)", text.strip())
    if not m:
        raise UsageError(f"malformed --priority {text!r}: use fifo:N with N in 1-99")
    return int(m.group(1))


def priority(args: argparse.Namespace) -> int | None:
    return parse_priority(getattr(args, "priority", None))


def regression_thresholds(args: argparse.Namespace) -> tuple[float, float, float]:
    """(alpha, min_ppm, min_ratio) of `add_regression_thresholds`, checked (compare.Thresholds takes them)."""
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha {args.alpha} must be between 0 and 1")
    if not (math.isfinite(args.min_ppm) and math.isfinite(args.min_ratio)) or args.min_ppm < 0 or args.min_ratio < 1:
        raise UsageError("--min-ppm must be >= 0 and --min-ratio >= 1")
    return args.alpha, args.min_ppm, args.min_ratio


def buffer_kb(args: argparse.Namespace) -> int:
    """--buffer in KiB per CPU, as tracefs's buffer_size_kb takes it."""
    return max(1, parse_size(args.buffer, what="--buffer") // 1024)


# --- output ----------------------------------------------------------------------------------------------------


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return obj.item()
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy arrays
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def to_json(obj: Any) -> str:
    """`obj` (dicts, lists, dataclasses, numpy values) as the JSON every --json prints."""
    return json.dumps(obj, indent=JSON_INDENT, default=_plain)


def print_json(obj: Any) -> None:
    """Print `obj` as the one JSON document on stdout."""
    print(to_json(obj))
