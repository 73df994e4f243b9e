"""`jitterscope protect`: duty-cycle best-effort co-runners to protect a latency-critical program
(the thesis chapter 4; spec 003 section 4).

plan        the run's options, checked before anything changes (defaults: the thesis's)
session     the lifecycle: journal, report pages, programs, actuator set-up, controller, supervision
controller  the native controller (native/protect*.c) as a child: ready, journalled, go, end
signals     what the controller acts on (pmu, resctrl, report, slack, noise, cputime, replay, always)
actuators   how it suspends (rt, deadline, sigstop, freezer, cfs, mba, none)
cgroups     the freezer/cpu cgroups it makes, and their undo entries in the journal
programs    the critical and best-effort programs: started journalled, or given by PID
report      the report API in Python (the twin of native/js_report.h)
records     the controller's binary records and the report page, mirrored from the C headers
replay      the CSV the law replays in virtual time
schema      the run's tables; build: records -> tables + summary; runmeta: meta.json
render      the terminal summary
analysis    degradation reduction from bandwidth tables (thesis Table 4.3); thesis: Tables 4.1/4.2
calibrate   `protect calibrate`: the sweep of critical latency against best-effort share
slacklaw    the slack law: the largest share within the deadline, from a calibration
outcome     what a session hands to the builder (RECORDS: where the raw records are)
"""
