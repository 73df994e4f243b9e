/*
 * Internal to jitterscope-protect (protect.c, protect_loop.c, protect_io.c):
 * the configuration, one "unit" per best-effort CPU (its signal inputs, its
 * actuator, its control thread and record ring), and the functions the three
 * files share.
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

struct unit {
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

extern struct config g_cfg;
extern struct unit g_units[MAX_UNITS];
extern int g_n_units;
extern _Atomic int g_stop;
extern _Atomic int g_go;
extern int64_t g_t0;
/* noise probe's latest measurement */
extern _Atomic int64_t g_noise_ns, g_noise_min_ns, g_noise_active_ns, g_noise_ref_ns;
extern _Atomic uint64_t g_noise_seq;

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
void act_release_all(void);
int pmu_check(int cpu);
void ev_setup(struct unit *u);
int ev_own(struct unit *u, int sig);
void ev_rearm(struct unit *u);
int ev_budget_reached(struct unit *u);
void *noise_main(void *arg);
void *dl_main(void *arg);

/* protect_loop.c: the control loop, the laws, replay */
void *control_main(void *arg);
int64_t law_decide(int over, double pressure);
int bw_over(uint64_t read_bytes, uint64_t write_bytes, int64_t window_ns, double *pressure);
void replay_run(struct unit *u);
int phase_on(int64_t t_rel);

#endif
