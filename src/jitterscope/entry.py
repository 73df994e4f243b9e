"""The console script's entry point: a Ctrl-C while Python still imports the command line
(a few hundred ms on a loaded machine) is one line and exit 130, never a traceback.

SIGINT is blocked (held pending by the kernel) from the moment this module runs until
the command line is imported: a Ctrl-C in between is found pending and ends the command
with one line, and none can land on a bytecode outside a handler.  Only Python's own
start-up and the package's one-line __init__ run before.  Import this module only to run
the command line: it holds SIGINT until `main` is called.
"""

from __future__ import annotations

import gc
import signal
import sys

_HOLD = {signal.SIGINT}
signal.pthread_sigmask(signal.SIG_BLOCK, _HOLD)


def main() -> int:
    try:
        from jitterscope import nopandas

        nopandas.refuse()  # before pyarrow is imported (nopandas.py says why)
        from jitterscope.cli import main as cli_main

        if signal.SIGINT in signal.sigpending():
            raise KeyboardInterrupt
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HOLD)  # children inherit the mask: unblock before any
        return cli_main()  # inside the try: a Ctrl-C on its first bytecode, before its own handlers
    except KeyboardInterrupt:
        sys.stderr.write("jitterscope: interrupted\n")
        return 130
    finally:
        # The command is done and its objects leave with the process: frozen, they are not traversed by the
        # collection Python runs as it exits (0.2 s after a sync run's analysis and report).
        gc.freeze()
