"""Helpers only tests and benchmarks use (never a command): synthetic trace pages
(synth), a context-switch storm (loadgen), synthetic noise runs (noise_runs),
the PTTS brute-force reference (brute).  Benchmarks put the repository root on
sys.path to import them as `tests.support.*`."""
