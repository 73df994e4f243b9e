/*
 * Internal to jitterscope-protect (protect.c, protect_loop.c, protect_io.c):
 * the configuration, one "unit" per best-effort CPU (its signal inputs, its
 * actuator, its control thread and record ring), and the functions the three
 * files share.
 *
 * All of a run's state is one `struct protect`, passed explicitly (each unit
 * points back to it, so a thread started on a unit reaches the run).  The only
 * state outside it is the flag the signal handler sets (protect.c), which the
 * run reads through `signalled`.
 */
#ifndef JS_PROTECT_H
#define JS_PROTECT_H

#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "js_report.h"
#include "protect_records.h"

#define MAX_UNITS 64
#define MAX_TARGETS 64
#define MAX_PAGES 16
#define MAX_TASKFDS 512
#define RING_RECORDS (1u << 16)          /* per unit: 5 MiB, > 6 s of samples at Ts = 100 us */

enum js_signal { SIG_NONE, SIG_REPORT, SIG_SLACK, SIG_REPLAY, SIG_PMU, SIG_CPUTIME, SIG_NOISE, SIG_RESCTRL, SIG_ALWAYS };
enum js_actuator { ACT_NONE, ACT_RT, ACT_DEADLINE, ACT_SIGNAL, ACT_FILE, ACT_CFS };
enum js_law { LAW_FIXED, LAW_PROPORTIONAL };

union jsp_record {
    struct jsp_sample s;
    struct jsp_suspension x;
    struct jsp_beat b;
};

struct ring {
    _Atomic uint64_t head __attribute__((aligned(64)));
    uint64_t dropped;
    _Atomic uint64_t tail __attribute__((aligned(64)));
    union jsp_record *buf __attribute__((aligned(64)));
};

struct target {
    pid_t id;
    int group;                           /* 1: a process group (kill(-id)), 0: one process */
};

struct protect;

struct unit {
    struct protect *pr;                  /* the run this unit belongs to */
    int cpu;
    /* signal inputs */
    int n_pages;
    struct js_report_page *pages[MAX_PAGES];
    int n_targets;
    struct target targets[MAX_TARGETS];
    int n_taskfds;
    int taskfds[MAX_TASKFDS];            /* perf task-clock per best-effort task (inherit) */
    int pmu_fd;                          /* group leader (LL reads), -1 if unused */
    int pmu_wfd;                         /* its sibling (LL writes) */
    /* event-based sampling: the counters that overflow at the budget, each signalling this unit's thread */
    int n_evfds;
    int evfds[MAX_TASKFDS + 2];
    uint64_t ev_period[MAX_TASKFDS + 2];
    int n_mbm;
    int mbm_fd[MAX_PAGES];               /* resctrl mbm_total_bytes per domain */
    const char *mbm_path[MAX_PAGES];
    /* actuator */
    const char *act_path, *confirm_path; /* file and cfs actuators */
    int act_fd, confirm_fd;              /* -1 if unused */
    int64_t throttled;                   /* cfs: the quota currently set (us), 0 = none */
    /* deadline blocker */
    pthread_t dl_thread;
    int dl_efd;
    _Atomic int64_t dl_until;
    /* control thread */
    struct ring ring;
    pthread_t thread;
    pid_t tid;
    char error[240];
    _Atomic int ready;
    /* running state of the signal (previous counter values) */
    uint64_t prev_read, prev_write, prev_mbm, beats_seen;   /* signal: since the last sample or resume */
    int64_t prev_cpu, prev_pmu[2];
    uint64_t acct_bytes;                 /* accounting: since the last sample, never re-based */
    int64_t acct_cpu;
    /* RT budget: token bucket charged with the thread's own CPU time */
    double tokens;
    int64_t tokens_t, tokens_cpu;
    /* statistics for the end line */
    uint64_t samples, suspensions, clipped, over, unconfirmed;
    int64_t spin_ns, suspended_ns, thread_cpu_ns;
    int64_t late_ns;  /* how late a sleep ending a suspension woke, smoothed (see suspend) */
    /* the signals' memory between samples (this unit's thread only) */
    int64_t slack_held;                  /* slack: the last heartbeat latency seen (-1: none yet) */
    uint64_t noise_seen;                 /* noise: the probe's sequence number at the last sample */
};

struct config {
    int64_t ts_ns, s_ns, s_min_ns, s_max_ns;
    enum js_law law;
    double gain;
    enum js_signal signal;
    enum js_actuator actuator;
    uint64_t thr_read, thr_write;        /* bytes/s; 0 = that direction is not watched */
    int64_t thr_slack_ns;                /* act when slack <= this */
    int64_t deadline_ns;                 /* slack reference (0: the page's own) */
    double thr_ratio;                    /* noise: slowdown; cputime: share of the CPU */
    int prio;                            /* SCHED_FIFO of the control threads; 0 = SCHED_OTHER */
    double rt_budget;                    /* share of a CPU the RT blocker may take */
    int64_t duration_ns, phase_ns;
    int phase_first_on;
    const char *out;
    int wait_go;
    /* event-based sampling (thesis future work, L3339-3347): 0 = a timer every Ts */
    int event;
    uint64_t ev_budget[2];               /* per window Ts: pmu = LLC lines read, written; cputime = task-clock ns */
    /* critical program's page (heartbeats) */
    struct js_report_page *crit;
    /* file / cfs actuators */
    const char *act_on, *act_off, *confirm_expect;
    int64_t cfs_period_us;
    /* noise probe */
    int noise_cpu;
    uint64_t noise_bytes, noise_steps;
    /* pmu */
    uint64_t pmu_read_config, pmu_write_config;
    int pmu_raw;
    /* replay: cumulative counters at times (ns) */
    int64_t *rp_t;
    uint64_t *rp_r, *rp_w;
    size_t rp_n;
};

struct protect {
    struct config cfg;
    struct unit units[MAX_UNITS];
    int n_units;
    _Atomic int stop;                    /* the run is ending: every thread returns */
    _Atomic int go;                      /* the run has started: control threads begin sampling */
    const _Atomic int *signalled;        /* set by the signal handler (SIGINT, SIGTERM, SIGHUP) */
    int64_t t0;
    /* the writer (the main thread) */
    int fd;
    uint64_t written, beats_lost, beats_seen;
    int direct;                          /* replay: records go straight to the file (no threads) */
    /* the noise probe's thread (its CPU and error slot) and its latest measurement */
    struct unit noise_unit;
    _Atomic int64_t noise_ns, noise_min_ns, noise_active_ns, noise_ref_ns;
    _Atomic uint64_t noise_seq;
};

/* Is the run ending (its end reached, or a signal asked for it)?  Read in every wait and spin. */
static inline int stopping(struct protect *pr)
{
    return atomic_load_explicit(&pr->stop, memory_order_relaxed) ||
           atomic_load_explicit(pr->signalled, memory_order_relaxed);
}

int64_t now_ns(void);
void push(struct unit *u, const union jsp_record *r);

/* protect_io.c: signals and actuators */
void io_setup_unit(struct unit *u);
void io_read(struct unit *u, int64_t window_ns, struct jsp_sample *s, int *over, double *pressure);
void io_baseline(struct unit *u);
int64_t io_last_progress(struct unit *u);
void act_engage(struct unit *u, int64_t s_ns, int64_t until_abs);
void act_release(struct unit *u, int at_sample);
int act_confirmed(struct unit *u);
void act_release_all(struct protect *pr);
int pmu_check(const struct config *cfg, int cpu);
void ev_setup(struct unit *u);
int ev_own(struct unit *u, int sig);
void ev_rearm(struct unit *u);
int ev_budget_reached(struct unit *u);
void *noise_main(void *arg);
void *dl_main(void *arg);

/* protect_loop.c: the control loop, the laws, replay */
void *control_main(void *arg);
int64_t law_decide(const struct config *cfg, int over, double pressure);
int bw_over(const struct config *cfg, uint64_t read_bytes, uint64_t write_bytes, int64_t window_ns, double *pressure);
void replay_run(struct unit *u);
int phase_on(const struct config *cfg, int64_t t_rel);

#endif
