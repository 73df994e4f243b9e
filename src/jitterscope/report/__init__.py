"""HTML pages of runs: each kind of run has its page builder (run.py, cluster.py, and the report.py of
pipeline, place and sync), all on one base template (page.py, templates/); pages.py picks the builder
for a run directory and writes the page (`write_report`)."""
