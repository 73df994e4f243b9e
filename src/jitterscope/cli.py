"""Command-line entry point: one module per subcommand in `jitterscope.commands`.

Each command module is a `jitterscope.commands.Command`: a docstring (first line:
summary; the rest: help with an EXAMPLES block), `add_arguments(parser)` and
`run(args) -> int`.  `COMMANDS` lists them typed as the protocol, so mypy checks
every module against it; adding a command is its module and one line here (a unit
test fails if a module under commands/ is not listed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import stat
import sys
from typing import Any

from jitterscope import buildinfo, journal
from jitterscope.atomic import is_disk_full
from jitterscope.commands import (
    Command,
    analyze,
    check,
    cluster,
    compare,
    doe,
    export,
    fit,
    inject,
    measure,
    monitor,
    pipeline,
    place,
    protect,
    ptts,
    report,
    restore,
    simulate,
    sync,
    tune,
    whatif,
)
from jitterscope.errors import JitterscopeError

# Commands that must not trigger crash recovery first (they do it themselves or
# must stay side-effect free).
_NO_RECOVERY = {"restore"}


# Name -> command, in --help order.  Typed as the protocol: mypy checks each module's
# add_arguments and run signatures here.
COMMANDS: dict[str, Command] = {
    "analyze": analyze,
    "check": check,
    "cluster": cluster,
    "compare": compare,
    "doe": doe,
    "export": export,
    "fit": fit,
    "inject": inject,
    "measure": measure,
    "monitor": monitor,
    "pipeline": pipeline,
    "place": place,
    "protect": protect,
    "ptts": ptts,
    "report": report,
    "restore": restore,
    "simulate": simulate,
    "sync": sync,
    "tune": tune,
    "whatif": whatif,
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line with exit code 2 (no usage dump)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A negative value with a unit (`--duration -3s`) is a value, as argparse already takes `-3`: else it is read
        # as an unknown option and the user is told "expected one argument" instead of what is wrong with it.
        # (argparse's own matcher for negative numbers, widened; no option of jitterscope starts with a digit.)
        self._negative_number_matcher = re.compile(r"^-\d+$|^-\d*\.\d+$|^-\d*\.?\d+[a-zA-Zµ]+$")

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"jitterscope: error: {message} (see --help)\n")


class _VersionAction(argparse.Action):
    """--version, computed only when asked: a source checkout asks git for its commit."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        print(buildinfo.version_text())
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="jitterscope",
        description="Find, explain, predict and remove OS jitter on Linux.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run 'jitterscope COMMAND --help' for a command's options and examples.",
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and the commit it was built from")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, command in COMMANDS.items():
        doc = (command.__doc__ or "").strip()
        summary = doc.splitlines()[0] if doc else name
        p = sub.add_parser(name, help=summary, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_arguments(p)
        p.set_defaults(_command=command)
    return parser


def _interrupt(signum: int, _frame: object) -> None:
    """SIGTERM and SIGHUP end a command like Ctrl-C: every cleanup path runs and a
    measurement still writes its run.  After a hang-up the terminal is gone, so
    what would be printed to it goes nowhere instead of failing the write."""
    if signum == signal.SIGHUP:
        try:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                # a terminal (character device): isatty() may already fail on a hung-up one
                with contextlib.suppress(OSError):
                    if stat.S_ISCHR(os.fstat(fd).st_mode):
                        os.dup2(null, fd)
            os.close(null)
        except OSError:
            pass
    raise KeyboardInterrupt


def _not_utf8(argv: list[str]) -> str | None:
    """Why an argument cannot be used, if one is not UTF-8 (a shell passes any bytes; names, paths
    and labels end up in JSON, Parquet and HTML, which hold text).  What follows `--` is a
    program's own command line and is passed on as given."""
    for a in argv:
        if a == "--":
            return None
        try:
            a.encode("utf-8")
        except UnicodeEncodeError:
            shown = a.encode("utf-8", "backslashreplace").decode()
            return f"argument '{shown}' is not valid UTF-8: use UTF-8 text (rename a file or directory so named)"
    return None


def main(argv: list[str] | None = None) -> int:
    # Turn SIGTERM and SIGHUP into KeyboardInterrupt so every command's cleanup path runs.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    argv = sys.argv[1:] if argv is None else argv
    bad = _not_utf8(argv)
    if bad is not None:
        print(f"jitterscope: error: {bad}", file=sys.stderr)
        return 2
    try:  # building the parser imports every command: a second or more on a loaded machine
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        print("jitterscope: interrupted", file=sys.stderr)
        return 130
    command: Command | None = getattr(args, "_command", None)
    if command is None:
        parser.print_help()
        return 2
    try:
        if args.command not in _NO_RECOVERY:
            journal.recover_stale(quiet=False)
        code = command.run(args)
        sys.stdout.flush()  # a full disk under `> file` shows here, in the command, not at exit
        return code
    except JitterscopeError as e:
        print(f"jitterscope: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:  # its message, if any, says what was kept and how to finish it
        print(f"jitterscope: {str(e) or 'interrupted'}", file=sys.stderr)  # (an exception is never falsy)
        return 130
    except BrokenPipeError:
        if not _stdout_gone():  # a child's pipe, not `| head`: a failure, which exit 0 would hide
            raise
        _drop_stdout()
        return 0
    except OSError as e:
        # A path the user named (or its parent) is not accessible to them, or its disk is full.
        if isinstance(e, PermissionError):
            what = "permission denied"
        elif is_disk_full(e):
            what = "disk full (no space left on device)"
        else:
            raise
        # every file jitterscope writes goes through atomic.py, which names it: a nameless one is stdout
        print(f"jitterscope: error: {e.filename or 'standard output'}: {what}", file=sys.stderr)
        _drop_stdout()
        return 2


def _stdout_gone() -> bool:
    """Whether standard output is a pipe or socket whose reader has gone (`jitterscope ... | head`): its
    write end then polls POLLERR (Linux pipe_poll).  Any other broken pipe was one of our children's."""
    import select

    poller = select.poll()
    poller.register(1, select.POLLOUT)
    try:
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except OSError:
        return False


def _drop_stdout() -> None:
    """What stdout still buffers goes nowhere: Python's flush at exit would fail again, with a traceback."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
