"""Kernel tracing through tracefs: a private instance, raw capture, and the
native parser that turns raw ring-buffer pages into nested activity intervals."""
