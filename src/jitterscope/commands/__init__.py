"""Subcommands of `jitterscope`, one module each (see `jitterscope.cli`)."""
