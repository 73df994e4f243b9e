"""Subcommands of `jitterscope`, one module each (see `jitterscope.cli`).

Every module here is a `Command`: its docstring is the help (first line: summary; the rest:
help with an EXAMPLES block), `add_arguments(parser)` declares its options and `run(args)`
returns the exit code.  `jitterscope.cli.COMMANDS` lists them typed as `Command`, so mypy
checks each module's two functions against the protocol."""

from __future__ import annotations

import argparse
from typing import Protocol, runtime_checkable


@runtime_checkable
class Command(Protocol):
    """One subcommand: a module (or any object) with these two functions and a docstring."""

    __doc__: str | None

    def add_arguments(self, parser: argparse.ArgumentParser, /) -> None: ...

    def run(self, args: argparse.Namespace, /) -> int: ...
