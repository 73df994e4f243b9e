"""Streaming pipelines made reproducible (the thesis chapter 3, spec 003 section 3).

A box graph (YAML, `graph.py`) is compiled (`compiler.py`) in the five steps of
the thesis: split boxes into row sub-boxes and derive fine-grained
dependencies from region overlap (`split.py`), schedule them onto threads with
one of five heuristics (`heuristics.py`, `sos.py`), allocate memory simple or
with reuse by an interference graph (`memory.py`), introduce counting signals
(`sync.py`), and write a schedule file (`schedule.py`).  The native runtime
(`native/pipeline.c`, driven by `runtime.py`) executes a schedule on pinned
threads and writes a run directory (`build.py`) that report, compare, fit and
`pipeline etp` (`etp.py`) read.
"""
