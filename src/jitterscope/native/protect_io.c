/*
 * Signals (what the control thread reads every Ts) and actuators (how it
 * suspends a best-effort CPU's work) of jitterscope-protect.
 *
 * Signals: report (byte counters the programs publish in their report page),
 * slack (the critical program's heartbeats against its deadline), pmu (LLC
 * read/write events per CPU, x 64 B), resctrl (MBM mbm_total_bytes), cputime
 * (perf task-clock of the best-effort tasks), noise (a short pointer chase
 * timed on a protected CPU while the best-effort tasks run, against the same
 * chase while none of them runs: the slowdown attributed to them), always
 * (every sample is over: unconditional duty-cycling, for calibration).
 * Actuators: rt (this thread spins at SCHED_FIFO), deadline (a SCHED_DEADLINE
 * thread spins), signal (SIGSTOP/SIGCONT), file (a string written to a file:
 * the cgroup freezer, resctrl MBA), cfs (cpu.cfs_quota_us / cpu.max).
 */
#include "protect.h"
#include "js_chase.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define JS_PROGRAM "jitterscope-protect"
#include "js_cli.h"

/* ---- perf ------------------------------------------------------------------ */

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group)
{
    a->size = sizeof *a;
    return (int)syscall(SYS_perf_event_open, a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

static int64_t read_u64_fd(int fd)
{
    uint64_t v = 0;
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
        return -1;
    return (int64_t)v;
}

/* LLC accesses (L2 misses reaching the LLC) for reads and writes on `cpu`, grouped.  With event-based
 * sampling each overflows at its budget (0: that direction is not watched, counted only).
 * Returns the leader fd (the writes' fd in *wfd) or -1 with errno set. */
static int pmu_open(const struct config *cfg, int cpu, int *wfd)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = cfg->pmu_raw ? PERF_TYPE_RAW : PERF_TYPE_HW_CACHE;
    a.config = cfg->pmu_raw ? cfg->pmu_read_config
        : (PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_ACCESS << 16));
    a.read_format = PERF_FORMAT_GROUP;
    a.sample_period = wfd && cfg->event ? cfg->ev_budget[0] : 0;
    int lead = perf_open(&a, -1, cpu, -1);
    if (lead < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.type = cfg->pmu_raw ? PERF_TYPE_RAW : PERF_TYPE_HW_CACHE;
    a.config = cfg->pmu_raw ? cfg->pmu_write_config
        : (PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_WRITE << 8) | (PERF_COUNT_HW_CACHE_RESULT_ACCESS << 16));
    a.sample_period = wfd && cfg->event ? cfg->ev_budget[1] : 0;
    int w = perf_open(&a, -1, cpu, lead);
    if (w < 0) {
        int e = errno;
        close(lead);
        errno = e;
        return -1;
    }
    if (wfd)
        *wfd = w;
    else
        close(w);
    return lead;
}

/* --check-pmu: can the LLC events be counted on `cpu`?  One JSON line either way. */
int pmu_check(const struct config *cfg, int cpu)
{
    int fd = pmu_open(cfg, cpu, NULL);
    if (fd < 0) {
        int e = errno;
        printf("{\"ok\": false, \"errno\": %d, \"error\": \"%s\"}\n", e,
               e == ENOENT ? "no hardware PMU event on this host (the kernel offers no LLC read/write events)"
                           : strerror(e));
        return 0;
    }
    close(fd);
    printf("{\"ok\": true}\n");
    return 0;
}

/* Every task of a process, or of every process in a process group, counted
 * with a task-clock event that children created later inherit. */
static void open_task_clocks(struct unit *u, pid_t pid)
{
    const struct config *cfg = &u->pr->cfg;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && u->n_taskfds < MAX_TASKFDS) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        a.inherit = 1;
        /* event-based sampling on CPU time: overflows at the budget (ev_setup shares it out) */
        a.sample_period = cfg->event && cfg->signal == SIG_CPUTIME ? cfg->ev_budget[0] : 0;
        int fd = perf_open(&a, atoi(e->d_name), -1, -1);
        if (fd >= 0)
            u->taskfds[u->n_taskfds++] = fd;
    }
    closedir(d);
}

static pid_t pgrp_of(const char *pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    int pgrp = -1;
    if (!p || sscanf(p + 2, "%*c %*d %d", &pgrp) != 1)
        return -1;
    return pgrp;
}

static void open_group_clocks(struct unit *u, pid_t pgid)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (isdigit((unsigned char)e->d_name[0]) && pgrp_of(e->d_name) == pgid)
            open_task_clocks(u, atoi(e->d_name));
    closedir(d);
}

static int64_t task_cpu(struct unit *u);
static int pmu_read(struct unit *u, int64_t out[2]);

/* ---- setup ------------------------------------------------------------------- */

static int open_path(const char *path, int flags, const char *what)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        die("cannot open %s %s: %s", what, path, strerror(errno));
    return fd;
}

void io_setup_unit(struct unit *u)
{
    u->slack_held = -1;
    const struct config *cfg = &u->pr->cfg;
    u->pmu_fd = u->pmu_wfd = u->act_fd = u->confirm_fd = u->dl_efd = -1;
    for (int i = 0; i < u->n_targets; i++) {
        if (u->targets[i].group)
            open_group_clocks(u, u->targets[i].id);
        else
            open_task_clocks(u, u->targets[i].id);
    }
    if (cfg->signal == SIG_CPUTIME && !u->n_taskfds)
        die("cannot count the CPU time of CPU %d's best-effort tasks (perf task-clock): %s", u->cpu,
            !u->n_targets ? "no process was given for it"
            : errno && errno != ENOENT ? strerror(errno) : "they ended before the controller started");
    if (cfg->signal == SIG_PMU && (u->pmu_fd = pmu_open(cfg, u->cpu, &u->pmu_wfd)) < 0)
        die("cannot count LLC reads/writes on CPU %d: %s", u->cpu,
            errno == ENOENT ? "no hardware PMU event here (use --signal report, slack, cputime or noise)"
                            : strerror(errno));
    for (int i = 0; i < u->n_mbm; i++)
        u->mbm_fd[i] = open_path(u->mbm_path[i], O_RDONLY, "resctrl counter");
    if (cfg->signal == SIG_RESCTRL && !u->n_mbm)
        die("--signal resctrl needs an mbm_total_bytes file for CPU %d", u->cpu);
    if (cfg->signal == SIG_REPORT && !u->n_pages)
        die("--signal report needs a report page for CPU %d", u->cpu);
    if (cfg->actuator == ACT_FILE || cfg->actuator == ACT_CFS) {
        if (!u->act_path)
            die("the actuator needs a file for CPU %d", u->cpu);
        u->act_fd = open_path(u->act_path, O_WRONLY, "actuator file");
    }
    if (u->confirm_path)
        u->confirm_fd = open_path(u->confirm_path, O_RDONLY, "confirmation file");
    if (cfg->actuator == ACT_SIGNAL && !u->n_targets)
        die("--actuator sigstop needs a process or group for CPU %d", u->cpu);
    ev_setup(u);
}

/* ---- event-based sampling ------------------------------------------------------------
 * Instead of reading the counters every Ts, each counter overflows at the budget (the threshold's
 * worth of events in one window Ts) and the kernel signals the unit's control thread (fcntl O_ASYNC,
 * F_SETSIG, F_SETOWN_EX to its tid), which sleeps until then (thesis future work, L3339-3347; MemGuard's
 * mechanism in user space).  Generic over the event: LLC lines on a CPU (pmu, where a PMU exists) or the
 * best-effort tasks' task-clock (cputime, a software event, the stand-in on hosts without a PMU). */

void ev_setup(struct unit *u)
{
    const struct config *cfg = &u->pr->cfg;
    if (!cfg->event)
        return;
    u->n_evfds = 0;
    if (cfg->signal == SIG_PMU) {
        for (int k = 0; k < 2; k++)
            if (cfg->ev_budget[k]) {
                u->ev_period[u->n_evfds] = cfg->ev_budget[k];
                u->evfds[u->n_evfds++] = k ? u->pmu_wfd : u->pmu_fd;
            }
        return;
    }
    /* several task counters share the CPU's budget: each overflows at its share, and the thread
     * decides on the sum (ev_budget_reached) */
    uint64_t n = (uint64_t)u->n_taskfds, share = (cfg->ev_budget[0] + n - 1) / n;
    for (int i = 0; i < u->n_taskfds; i++) {
        u->ev_period[i] = share;
        u->evfds[u->n_evfds++] = u->taskfds[i];
    }
    ev_rearm(u);
}

/* Route every overflow of the unit's counters to the calling thread as signal `sig` (blocked there). */
int ev_own(struct unit *u, int sig)
{
    struct f_owner_ex owner = {F_OWNER_TID, gettid()};
    for (int i = 0; i < u->n_evfds; i++) {
        int fd = u->evfds[i], fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETOWN_EX, &owner) || fcntl(fd, F_SETSIG, sig) ||
            fcntl(fd, F_SETFL, fl | O_ASYNC)) {
            snprintf(u->error, sizeof u->error, "cannot route the counters' overflow to CPU %d's control "
                     "thread: %s", u->cpu, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* A new window: every counter's next overflow is a whole period (its budget) from now. */
void ev_rearm(struct unit *u)
{
    for (int i = 0; i < u->n_evfds; i++)
        if (ioctl(u->evfds[i], PERF_EVENT_IOC_PERIOD, &u->ev_period[i]))
            die("cannot re-arm the overflow counter of CPU %d: %s", u->cpu, strerror(errno));
}

/* Has the window's budget been spent (either direction for LLC lines, the sum for CPU time)? */
int ev_budget_reached(struct unit *u)
{
    const struct config *cfg = &u->pr->cfg;
    if (cfg->signal == SIG_PMU) {
        int64_t v[2];
        if (pmu_read(u, v))
            return 0;
        return (cfg->ev_budget[0] && (uint64_t)(v[0] - u->prev_pmu[0]) >= cfg->ev_budget[0]) ||
               (cfg->ev_budget[1] && (uint64_t)(v[1] - u->prev_pmu[1]) >= cfg->ev_budget[1]);
    }
    return task_cpu(u) - u->prev_cpu >= (int64_t)cfg->ev_budget[0];
}

/* ---- signals ------------------------------------------------------------------ */

static void page_sums(struct unit *u, uint64_t *r, uint64_t *w)
{
    *r = *w = 0;
    for (int i = 0; i < u->n_pages; i++) {
        *r += atomic_load_explicit(&u->pages[i]->read_bytes, memory_order_relaxed);
        *w += atomic_load_explicit(&u->pages[i]->write_bytes, memory_order_relaxed);
    }
}

static int64_t task_cpu(struct unit *u)
{
    int64_t sum = 0;
    for (int i = 0; i < u->n_taskfds; i++) {
        int64_t v = read_u64_fd(u->taskfds[i]);
        if (v > 0)
            sum += v;
    }
    return sum;
}

static int pmu_read(struct unit *u, int64_t out[2])
{
    uint64_t buf[3];
    if (read(u->pmu_fd, buf, sizeof buf) != (ssize_t)sizeof buf || buf[0] != 2)
        return -1;
    out[0] = (int64_t)buf[1];
    out[1] = (int64_t)buf[2];
    return 0;
}

static uint64_t mbm_total(struct unit *u)
{
    uint64_t sum = 0;
    char buf[32];
    for (int i = 0; i < u->n_mbm; i++) {
        ssize_t n = pread(u->mbm_fd[i], buf, sizeof buf - 1, 0);
        if (n > 0) {
            buf[n] = 0;
            sum += strtoull(buf, NULL, 10);
        }
    }
    return sum;
}

void io_baseline(struct unit *u)
{
    const struct config *cfg = &u->pr->cfg;
    page_sums(u, &u->prev_read, &u->prev_write);
    u->prev_cpu = task_cpu(u);
    if (!u->samples) {  /* accounting starts once, at go */
        u->acct_bytes = u->prev_read + u->prev_write;
        u->acct_cpu = u->prev_cpu;
    }
    if (u->pmu_fd >= 0)
        pmu_read(u, u->prev_pmu);
    if (u->n_mbm)
        u->prev_mbm = mbm_total(u);
    if (cfg->crit)
        u->beats_seen = atomic_load_explicit(&cfg->crit->beats, memory_order_acquire);
}

/* The largest latency among the heartbeats since the last sample (-1: none new). */
static int64_t new_beats_max(struct unit *u)
{
    const struct config *cfg = &u->pr->cfg;
    struct js_report_page *p = cfg->crit;
    uint64_t b = atomic_load_explicit(&p->beats, memory_order_acquire), from = u->beats_seen;
    if (b - from > JS_REPORT_BEATS)
        from = b - JS_REPORT_BEATS;
    int64_t mx = -1;
    for (uint64_t i = from; i < b; i++) {
        int64_t l = p->beat[i & (JS_REPORT_BEATS - 1)].latency_ns;
        if (l > mx)
            mx = l;
    }
    u->beats_seen = b;
    return mx;
}

static void slack_signal(struct unit *u, struct jsp_sample *s, int *over, double *pressure)
{
    const struct config *cfg = &u->pr->cfg;
    int64_t deadline = cfg->deadline_ns ? cfg->deadline_ns : cfg->crit->deadline_ns;
    int64_t l = new_beats_max(u);
    if (l < 0) {
        s->flags |= u->slack_held < 0 ? JSP_S_NOSIGNAL : JSP_S_STALE;
        l = u->slack_held;
    }
    u->slack_held = l;
    s->metric = l;
    int64_t limit = deadline - cfg->thr_slack_ns;  /* act when slack = deadline - latency <= threshold */
    if (l < 0 || deadline <= 0 || limit <= 0)
        return;
    *pressure = (double)l / (double)limit;
    *over = l >= limit;
}

/* The noise attributed to the best-effort programs: the latest chase timed while they ran, against
 * the median of recent chases timed while none of them ran (suspended or idle; the fastest chase seen
 * until there is one).  A window in which this CPU's best-effort tasks did not run at all has nothing
 * to attribute to them, whatever slowed the protected CPU (other programs, the host). */
static void noise_signal(struct unit *u, int64_t cpu_sig, struct jsp_sample *s, int *over, double *pressure)
{
    struct protect *pr = u->pr;
    const struct config *cfg = &pr->cfg;
    uint64_t seq = atomic_load(&pr->noise_seq);
    int64_t active = atomic_load(&pr->noise_active_ns), ref = atomic_load(&pr->noise_ref_ns);
    if (!seq) {
        s->flags |= JSP_S_NOSIGNAL;
        return;
    }
    if (seq == u->noise_seen)
        s->flags |= JSP_S_STALE;
    u->noise_seen = seq;
    s->metric = atomic_load(&pr->noise_ns);
    if ((u->n_taskfds && cpu_sig <= 0) || !active)
        return;   /* they did not run in this window, or never while the probe looked */
    if (!ref)
        ref = atomic_load(&pr->noise_min_ns);
    *pressure = ((double)active / (double)ref - 1.0) / cfg->thr_ratio;
    *over = *pressure >= 1.0;
}

void io_read(struct unit *u, int64_t window_ns, struct jsp_sample *s, int *over, double *pressure)
{
    const struct config *cfg = &u->pr->cfg;
    uint64_t r, w;
    s->progress_bytes = s->cpu_ns = s->metric = -1;   /* -1: unknown (null in the table) */
    int64_t cpu_sig = 0;
    if (u->n_pages) {
        page_sums(u, &r, &w);
        s->progress_bytes = (int64_t)(r + w - u->acct_bytes);   /* since the last sample, for accounting */
        u->acct_bytes = r + w;
        s->read_bytes = (int64_t)(r - u->prev_read);            /* since the window began, for the signal */
        s->write_bytes = (int64_t)(w - u->prev_write);
        u->prev_read = r;
        u->prev_write = w;
    }
    if (u->n_taskfds) {
        int64_t c = task_cpu(u);
        s->cpu_ns = c - u->acct_cpu;
        cpu_sig = c - u->prev_cpu;
        u->acct_cpu = c;
        u->prev_cpu = c;
    }
    *over = 0;
    *pressure = 0;
    switch (cfg->signal) {
    case SIG_REPORT:
        *over = bw_over(cfg, (uint64_t)s->read_bytes, (uint64_t)s->write_bytes, window_ns, pressure);
        break;
    case SIG_PMU: {
        int64_t v[2] = {0, 0};
        if (pmu_read(u, v) == 0) {
            s->read_bytes = (v[0] - u->prev_pmu[0]) * 64;
            s->write_bytes = (v[1] - u->prev_pmu[1]) * 64;
            u->prev_pmu[0] = v[0];
            u->prev_pmu[1] = v[1];
            *over = bw_over(cfg, (uint64_t)s->read_bytes, (uint64_t)s->write_bytes, window_ns, pressure);
        } else {
            s->flags |= JSP_S_NOSIGNAL;
        }
        break;
    }
    case SIG_RESCTRL: {
        uint64_t m = mbm_total(u);
        s->read_bytes = (int64_t)(m - u->prev_mbm);
        s->write_bytes = 0;
        u->prev_mbm = m;
        *over = bw_over(cfg, (uint64_t)s->read_bytes, 0, window_ns, pressure);
        break;
    }
    case SIG_SLACK:
        slack_signal(u, s, over, pressure);
        break;
    case SIG_NOISE:
        noise_signal(u, cpu_sig, s, over, pressure);
        break;
    case SIG_ALWAYS:  /* persistent excess by decree: duty-cycle unconditionally (calibration) */
        *over = 1;
        *pressure = 1.0;
        break;
    case SIG_CPUTIME:
        s->metric = cpu_sig;
        *pressure = (double)cpu_sig / ((double)window_ns * cfg->thr_ratio);
        *over = *pressure >= 1.0;
        break;
    default:
        break;
    }
}

/* CLOCK_MONOTONIC of the best-effort programs' last reported progress (INT64_MIN: no page, or
 * pages nobody has published to: a program that does not use the report API, such as `sleep` or gcc,
 * has a page of zeros, and 0 is not a time it stopped). */
int64_t io_last_progress(struct unit *u)
{
    int64_t last = INT64_MIN;
    for (int i = 0; i < u->n_pages; i++) {
        int64_t t = atomic_load_explicit(&u->pages[i]->last_ns, memory_order_acquire);
        if (t > 0 && t > last)
            last = t;
    }
    return last;
}

/* ---- actuators ------------------------------------------------------------------- */

static void write_str(int fd, const char *s)
{
    size_t n = strlen(s);
    while (pwrite(fd, s, n, 0) < 0 && errno == EINTR) {}
}

static void signal_targets(struct unit *u, int sig)
{
    for (int i = 0; i < u->n_targets; i++)
        kill(u->targets[i].group ? -u->targets[i].id : u->targets[i].id, sig);
}

void act_engage(struct unit *u, int64_t s_ns, int64_t until_abs)
{
    const struct config *cfg = &u->pr->cfg;
    switch (cfg->actuator) {
    case ACT_DEADLINE: {
        atomic_store(&u->dl_until, until_abs);
        uint64_t one = 1;
        if (write(u->dl_efd, &one, sizeof one) < 0) {}
        break;
    }
    case ACT_SIGNAL:
        signal_targets(u, SIGSTOP);
        break;
    case ACT_FILE:
        write_str(u->act_fd, cfg->act_on);
        break;
    case ACT_CFS: {
        /* share Ts/(Ts+S) of each CFS period; the kernel's minimum quota is 1 ms.  Written only when
         * it changes: every write refills the group's runtime and restarts its period. */
        int64_t q = cfg->cfs_period_us * cfg->ts_ns / (cfg->ts_ns + s_ns);
        q = q < 1000 ? 1000 : q;
        if (u->throttled != q) {
            char buf[64];
            /* act_on is what follows the quota (" PERIOD" for cpu.max), never a format: data from argv */
            snprintf(buf, sizeof buf, "%lld%s", (long long)q, cfg->act_on);
            write_str(u->act_fd, buf);
            u->throttled = q;
        }
        break;
    }
    default:
        break;
    }
}

void act_release(struct unit *u, int at_sample)
{
    const struct config *cfg = &u->pr->cfg;
    switch (cfg->actuator) {
    case ACT_SIGNAL:
        signal_targets(u, SIGCONT);
        break;
    case ACT_FILE:
        write_str(u->act_fd, cfg->act_off);
        break;
    case ACT_CFS:
        if (at_sample && u->throttled) {
            write_str(u->act_fd, cfg->act_off);
            u->throttled = 0;
        }
        break;
    case ACT_DEADLINE:
        atomic_store(&u->dl_until, 0);
        break;
    default:
        break;
    }
}

/* Did the stop take effect?  (The freezer reports FROZEN or `frozen 1` once every task is.) */
int act_confirmed(struct unit *u)
{
    const struct config *cfg = &u->pr->cfg;
    if (u->confirm_fd < 0 || !cfg->confirm_expect)
        return 1;
    char buf[256];
    ssize_t n = pread(u->confirm_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    return strstr(buf, cfg->confirm_expect) != NULL;
}

void act_release_all(struct protect *pr)
{
    for (int i = 0; i < pr->n_units; i++)
        act_release(&pr->units[i], 1);
}

/* ---- the SCHED_DEADLINE blocker ------------------------------------------------------ */

struct js_sched_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
};

/* A thread pinned to the best-effort CPU with runtime S (+ margin) every Ts+S:
 * woken by the control thread, it spins until told, above every other class. */
void *dl_main(void *arg)
{
    struct unit *u = arg;
    struct protect *pr = u->pr;
    const struct config *cfg = &pr->cfg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(u->cpu, &set);
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    int64_t s = cfg->law == LAW_FIXED ? cfg->s_ns : cfg->s_max_ns;
    struct js_sched_attr a = {.size = sizeof a, .sched_policy = 6 /* SCHED_DEADLINE */,
                              .sched_runtime = (uint64_t)(s + s / 20 + 20000),
                              .sched_deadline = (uint64_t)(cfg->ts_ns + s),
                              .sched_period = (uint64_t)(cfg->ts_ns + s)};
    if (!err && syscall(SYS_sched_setattr, 0, &a, 0) != 0)
        err = errno;
    if (err) {
        snprintf(u->error, sizeof u->error, "cannot start the SCHED_DEADLINE blocker on CPU %d: %s%s", u->cpu,
                 strerror(err), err == EPERM || err == EBUSY
                 ? " (a deadline task must own its whole root domain: put CPU in an exclusive cpuset "
                   "partition, or use --actuator rt)" : "");
        atomic_store(&u->ready, -1);
        return NULL;
    }
    pthread_setname_np(pthread_self(), "js-protect-dl");
    atomic_store(&u->ready, 1);
    uint64_t v;
    while (!stopping(pr)) {
        if (read(u->dl_efd, &v, sizeof v) < 0 && errno != EINTR)
            break;
        int64_t until = atomic_load(&u->dl_until);
        while (now_ns() < until && !stopping(pr))
            __builtin_ia32_pause();
    }
    return NULL;
}

/* ---- the noise probe ------------------------------------------------------------------- */

#define NOISE_REF 15   /* quiet chases whose median is the reference */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* CPU time of every best-effort task (-1: none can be counted) */
static int64_t be_cpu_all(struct protect *pr)
{
    int64_t sum = 0;
    int any = 0;
    for (int i = 0; i < pr->n_units; i++) {
        any |= pr->units[i].n_taskfds > 0;
        sum += task_cpu(&pr->units[i]);
    }
    return any ? sum : -1;
}

void *noise_main(void *arg)
{
    struct unit *u = arg;  /* carries the probe's CPU and error slot */
    struct protect *pr = u->pr;
    const struct config *cfg = &pr->cfg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cfg->noise_cpu, &set);
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (!err && cfg->prio > 0) {
        struct sched_param sp = {.sched_priority = cfg->prio};
        err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    }
    if (err) {
        snprintf(u->error, sizeof u->error, "cannot start the noise probe on CPU %d: %s", cfg->noise_cpu,
                 strerror(err));
        atomic_store(&u->ready, -1);
        return NULL;
    }
    pthread_setname_np(pthread_self(), "js-protect-nz");
    uint64_t *buf = js_chase_build(cfg->noise_bytes, 0x9E3779B97F4A7C15ull);
    if (!buf)
        die("cannot allocate the noise probe's %llu bytes", (unsigned long long)cfg->noise_bytes);
    uint64_t idx = 0;
    volatile uint64_t sink;
    int64_t quiet[NOISE_REF], sorted[NOISE_REF];
    int n_quiet = 0;
    atomic_store(&u->ready, 1);
    while (!atomic_load(&pr->go) && !stopping(pr))
        usleep(1000);
    /* every Ts, but not more often than every 500 us: the probe runs on a protected CPU */
    int64_t period = cfg->ts_ns > 500000 ? cfg->ts_ns : 500000, next = now_ns();
    while (!stopping(pr)) {
        next += period;
        struct timespec ts = {next / 1000000000LL, next % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        int64_t before = be_cpu_all(pr), best = INT64_MAX;
        for (int rep = 0; rep < 2; rep++) {  /* the faster of 2: an interrupt inflates one, not both */
            int64_t a = now_ns();
            for (uint64_t k = 0; k < cfg->noise_steps; k++)
                idx = buf[idx];
            int64_t d = now_ns() - a;
            if (d < best)
                best = d;
        }
        /* quiet: no best-effort task ran meanwhile (with no task-clock to read, every chase is theirs) */
        int quiet_now = before >= 0 && be_cpu_all(pr) == before;
        sink = idx;  /* keeps the walk from being optimised away */
        atomic_store(&pr->noise_ns, best);
        if (quiet_now) {
            quiet[n_quiet++ % NOISE_REF] = best;
            int n = n_quiet < NOISE_REF ? n_quiet : NOISE_REF;
            memcpy(sorted, quiet, (size_t)n * sizeof *sorted);
            qsort(sorted, (size_t)n, sizeof *sorted, cmp_i64);
            atomic_store(&pr->noise_ref_ns, sorted[n / 2]);
        } else {
            atomic_store(&pr->noise_active_ns, best);
        }
        if (best < atomic_load(&pr->noise_min_ns))
            atomic_store(&pr->noise_min_ns, best);
        atomic_fetch_add(&pr->noise_seq, 1);
    }
    (void)sink;
    free(buf);
    return NULL;
}
