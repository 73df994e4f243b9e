/*
 * The control loop of jitterscope-protect, its laws and the replay clock.
 *
 * One control thread per best-effort CPU, pinned there at SCHED_FIFO above
 * every best-effort task (thesis section 4.6.3).  Every Ts it reads the
 * signal, applies the law and, when the law says so, suspends the CPU's
 * best-effort work for S through the actuator, then resumes it and samples
 * again Ts later.  Under persistent excess the best-effort share is therefore
 * Ts/(Ts+S).  Every sample and every suspension becomes a record.
 *
 * With event-based sampling (--sampling event) the thread does not wake every
 * Ts: it sleeps until a counter overflows at the budget (protect_io.c), and a
 * window is over budget when the budget was spent within Ts of its start.
 *
 * Replay runs the same law on recorded counters in virtual time (no sleeping,
 * no actuator), so its decisions are exactly reproducible.
 */
#include "protect.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* ---- laws ------------------------------------------------------------------ */

/* The suspension the law asks for (0: none).  fixed: S whenever the signal is
 * at or over its threshold (thesis L1887-1892).  proportional (thesis future
 * work, L3348-3355): S = clamp(gain * (pressure - 1) * Ts, S_min, S_max). */
int64_t law_decide(const struct config *cfg, int over, double pressure)
{
    if (!over)
        return 0;
    if (cfg->law == LAW_FIXED)
        return cfg->s_ns;
    double s = cfg->gain * (pressure - 1.0) * (double)cfg->ts_ns;
    if (s < (double)cfg->s_min_ns)
        s = (double)cfg->s_min_ns;
    if (s > (double)cfg->s_max_ns)
        s = (double)cfg->s_max_ns;
    return (int64_t)s;
}

/* Over budget when bytes x 1e9 >= threshold x window in either direction,
 * compared in exact integers (a threshold equal to the rate triggers). */
int bw_over(const struct config *cfg, uint64_t read_bytes, uint64_t write_bytes, int64_t window_ns, double *pressure)
{
    unsigned __int128 win = (unsigned __int128)(uint64_t)(window_ns > 0 ? window_ns : 1);
    int over_r = cfg->thr_read && (unsigned __int128)read_bytes * 1000000000u >= cfg->thr_read * win;
    int over_w = cfg->thr_write && (unsigned __int128)write_bytes * 1000000000u >= cfg->thr_write * win;
    double pr = cfg->thr_read ? (double)read_bytes * 1e9 / ((double)cfg->thr_read * (double)win) : 0;
    double pw = cfg->thr_write ? (double)write_bytes * 1e9 / ((double)cfg->thr_write * (double)win) : 0;
    *pressure = pr > pw ? pr : pw;
    return over_r || over_w;
}

int phase_on(const struct config *cfg, int64_t t_rel)
{
    if (cfg->phase_ns <= 0)
        return 1;
    int64_t k = t_rel < 0 ? 0 : t_rel / cfg->phase_ns;
    return (int)((k % 2 == 0) == (cfg->phase_first_on != 0));
}

/* ---- real time --------------------------------------------------------------- */

static void sleep_until(struct protect *pr, int64_t t)
{
    struct timespec ts = {t / 1000000000LL, t % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        if (stopping(pr))
            return;
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The RT blocker never takes more of its CPU than the budget (below the
 * kernel's sched_rt_runtime_us share): a token bucket refilled at that rate,
 * charged with this thread's own CPU time (spinning and sampling alike). */
#define RT_BUCKET_NS 10e6  /* in any 1 s window the blocker takes at most budget x 1 s + 10 ms */

static int64_t rt_clip(struct unit *u, int64_t want, int64_t t)
{
    const struct config *cfg = &u->pr->cfg;
    const double cap = RT_BUCKET_NS;
    int64_t cpu = thread_cpu_ns();
    u->tokens += cfg->rt_budget * (double)(t - u->tokens_t) - (double)(cpu - u->tokens_cpu);
    if (u->tokens > cap)
        u->tokens = cap;
    u->tokens_t = t;
    u->tokens_cpu = cpu;
    if (u->tokens <= 0)
        return 0;
    return (double)want <= u->tokens ? want : (int64_t)u->tokens;
}

static void spin_until(struct protect *pr, int64_t t)
{
    while (now_ns() < t && !stopping(pr))
        __builtin_ia32_pause();
}

/* One suspension of `s` ns from now; returns when the program runs again. */
static void suspend(struct unit *u, int64_t s)
{
    struct protect *pr = u->pr;
    const struct config *cfg = &pr->cfg;
    union jsp_record r;
    memset(&r, 0, sizeof r);
    r.x.kind = JSP_SUSPENSION;
    r.x.cpu = (uint16_t)u->cpu;
    r.x.requested_ns = s;
    if (cfg->actuator == ACT_RT) {
        int64_t got = rt_clip(u, s, now_ns());
        if (got < s) {
            r.x.flags |= JSP_X_CLIPPED;
            u->clipped++;
            s = got;
            if (s <= 0)
                return;
        }
    }
    int64_t t = now_ns();
    act_engage(u, s, t + s);
    int64_t issued = now_ns();
    if (cfg->actuator == ACT_RT) {
        spin_until(pr, t + s);
    } else {
        /* The CPU idles while its work is stopped, and waking an idle (virtual) CPU takes time: tens to
         * hundreds of us on a loaded host, which lengthen every suspension and under-deliver the law's
         * Ts/(Ts+S).  Wake that much early (the lateness seen so far) and spin the rest. */
        int64_t early = u->late_ns < s / 2 ? u->late_ns : s / 2;
        int64_t target = t + s - early;
        sleep_until(pr, target);
        int64_t woke = now_ns();
        u->late_ns += ((woke - target) * 2 - u->late_ns) / 8;  /* 2x the mean lateness, smoothed over ~8 */
        if (u->late_ns < 0)
            u->late_ns = 0;
        spin_until(pr, t + s);
        u->spin_ns += now_ns() - woke;
    }
    int64_t end = now_ns();
    if (!act_confirmed(u)) {
        r.x.flags |= JSP_X_UNCONFIRMED;
        u->unconfirmed++;
    }
    int64_t last = io_last_progress(u);
    act_release(u, 0);
    int64_t resumed = now_ns();
    r.x.t_ns = t - pr->t0;
    r.x.issue_ns = issued - t;
    r.x.end_ns = end - pr->t0;
    r.x.resumed_ns = resumed - pr->t0;
    if (last == INT64_MIN || cfg->actuator == ACT_CFS) {  /* a quota is no stop: it runs out somewhere */
        r.x.flags |= JSP_X_NOSTOP;
        r.x.stopped_ns = INT64_MIN;
    } else {
        r.x.stopped_ns = last - t;
    }
    if (cfg->actuator == ACT_RT)
        u->spin_ns += end - t;
    u->suspended_ns += end - t;
    u->suspensions++;
    push(u, &r);
}

/* The law's decision on one sample (none in an unprotected phase, which records that it would have
 * suspended), recorded; returns the suspension to make. */
static int64_t decide(struct unit *u, union jsp_record *r, int64_t t_rel, int64_t window, int over,
                      double pressure)
{
    const struct config *cfg = &u->pr->cfg;
    int64_t s = law_decide(cfg, over, pressure);
    r->s.kind = JSP_SAMPLE;
    r->s.cpu = (uint16_t)u->cpu;
    r->s.t_ns = t_rel;
    r->s.window_ns = window;
    r->s.pressure_ppm = (int64_t)(pressure * 1e6);
    if (phase_on(cfg, t_rel)) {
        r->s.flags |= JSP_S_ON;
    } else if (s) {
        r->s.flags |= JSP_S_WOULD;
        s = 0;
    }
    r->s.suspend_ns = s;
    u->samples++;
    u->over += over != 0;
    push(u, r);
    return s;
}

static int pin_and_schedule(struct unit *u)
{
    const struct config *cfg = &u->pr->cfg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(u->cpu, &set);
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (err) {
        snprintf(u->error, sizeof u->error, "cannot pin the control thread to CPU %d: %s", u->cpu, strerror(err));
        return -1;
    }
    char name[16];
    snprintf(name, sizeof name, "js-protect/%d", u->cpu);
    pthread_setname_np(pthread_self(), name);
    if (cfg->prio > 0) {
        struct sched_param sp = {.sched_priority = cfg->prio};
        err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (err) {
            snprintf(u->error, sizeof u->error, "cannot use SCHED_FIFO priority %d on CPU %d: %s%s",
                     cfg->prio, u->cpu, strerror(err),
                     err == EPERM ? " (needs root; a cgroup with cpu.rt_runtime_us = 0 also refuses it)" : "");
            return -1;
        }
    }
    return 0;
}

static void control_timer(struct unit *u)
{
    struct protect *pr = u->pr;
    const struct config *cfg = &pr->cfg;
    io_baseline(u);
    int64_t prev = now_ns(), next = prev + cfg->ts_ns;
    while (!stopping(pr)) {
        sleep_until(pr, next);
        if (stopping(pr))
            break;
        int64_t t = now_ns();
        union jsp_record r;
        memset(&r, 0, sizeof r);
        int over = 0;
        double pressure = 0;
        io_read(u, t - prev, &r.s, &over, &pressure);
        int64_t s = decide(u, &r, t - pr->t0, t - prev, over, pressure);
        if (s > 0) {
            suspend(u, s);
            io_baseline(u);  /* the next window is the Ts after the program runs again */
            prev = now_ns();
            next = prev + cfg->ts_ns;
        } else {
            if (cfg->actuator == ACT_CFS)
                act_release(u, 1);
            prev = t;
            next += cfg->ts_ns;
            if (next <= t)   /* woke more than Ts late: keep the grid, skip missed slots */
                next += ((t - next) / cfg->ts_ns + 1) * cfg->ts_ns;
        }
    }
}

static void drain_overflows(const sigset_t *set)
{
    const struct timespec zero = {0, 0};
    while (sigtimedwait(set, NULL, &zero) > 0) {}
}

/* Event-based sampling: a window starts now (counters re-armed); the thread sleeps until an overflow.
 * Budget spent within Ts of the window's start: over (suspend, then a new window); after Ts: under,
 * and a new window.  Several task counters each overflow at their share: the sum decides, so an early
 * share within Ts only waits on.  The 20 ms timeout only notices the end of the run; it is no sample. */
static void control_events(struct unit *u, const sigset_t *set)
{
    struct protect *pr = u->pr;
    const struct config *cfg = &pr->cfg;
    const struct timespec stop_check = {0, 20000000};
    drain_overflows(set);
    io_baseline(u);
    ev_rearm(u);
    int64_t prev = now_ns();
    while (!stopping(pr)) {
        if (sigtimedwait(set, NULL, &stop_check) < 0)
            continue;
        drain_overflows(set);
        int64_t t = now_ns();
        int in_window = t - prev <= cfg->ts_ns, reached = ev_budget_reached(u);
        if (in_window && !reached)
            continue;
        union jsp_record r;
        memset(&r, 0, sizeof r);
        r.s.flags = JSP_S_EVENT;
        int over = 0;
        double pressure = 0;
        io_read(u, t - prev, &r.s, &over, &pressure);
        over = in_window && reached;
        if (over && pressure < 1.0)
            pressure = 1.0;
        int64_t s = decide(u, &r, t - pr->t0, t - prev, over, pressure);
        if (s > 0)
            suspend(u, s);
        else if (cfg->actuator == ACT_CFS)
            act_release(u, 1);
        drain_overflows(set);   /* raised while suspended: the old window's */
        io_baseline(u);
        ev_rearm(u);
        prev = now_ns();
    }
}

void *control_main(void *arg)
{
    struct unit *u = arg;
    struct protect *pr = u->pr;
    const struct config *cfg = &pr->cfg;
    u->tid = gettid();
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    if (cfg->event)
        pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (pin_and_schedule(u) || (cfg->event && ev_own(u, SIGRTMIN))) {
        atomic_store(&u->ready, -1);
        return NULL;
    }
    atomic_store(&u->ready, 1);
    while (!atomic_load(&pr->go))
        if (stopping(pr))
            return NULL;
        else
            sleep_until(pr, now_ns() + 1000000);
    u->tokens_t = now_ns();
    u->tokens_cpu = thread_cpu_ns();
    u->tokens = RT_BUCKET_NS;
    if (cfg->event)
        control_events(u, &set);
    else
        control_timer(u);
    act_release(u, 1);
    u->thread_cpu_ns = thread_cpu_ns();
    return NULL;
}

/* ---- replay ---------------------------------------------------------------------- */

/* Counter value at virtual time t, linearly interpolated between rows. */
static uint64_t interp(const struct config *cfg, const uint64_t *v, int64_t t)
{
    const int64_t *ts = cfg->rp_t;
    size_t n = cfg->rp_n, lo = 0, hi = n - 1;
    if (t <= ts[0])
        return v[0];
    if (t >= ts[n - 1])
        return v[n - 1];
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (ts[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    double f = (double)(t - ts[lo]) / (double)(ts[hi] - ts[lo]);
    return v[lo] + (uint64_t)((double)(v[hi] - v[lo]) * f + 0.5);
}

/* The control loop in virtual time over the replayed counters: each window is
 * exactly Ts, a suspension exactly S, and the records land in the same file. */
void replay_run(struct unit *u)
{
    struct protect *pr = u->pr;
    const struct config *cfg = &pr->cfg;
    int64_t start = cfg->rp_t[0], end = cfg->rp_t[cfg->rp_n - 1];
    int64_t prev = start, t = start + cfg->ts_ns;
    while (t <= end && !stopping(pr)) {
        uint64_t r0 = interp(cfg, cfg->rp_r, prev), r1 = interp(cfg, cfg->rp_r, t);
        uint64_t w0 = interp(cfg, cfg->rp_w, prev), w1 = interp(cfg, cfg->rp_w, t);
        union jsp_record r;
        memset(&r, 0, sizeof r);
        r.s.read_bytes = (int64_t)(r1 - r0);
        r.s.write_bytes = (int64_t)(w1 - w0);
        r.s.cpu_ns = r.s.progress_bytes = r.s.metric = -1;  /* a replay has no programs */
        double pressure = 0;
        int over = bw_over(cfg, r1 - r0, w1 - w0, t - prev, &pressure);
        int64_t s = decide(u, &r, t - start, t - prev, over, pressure);
        if (s > 0) {
            union jsp_record x;
            memset(&x, 0, sizeof x);
            x.x.kind = JSP_SUSPENSION;
            x.x.cpu = (uint16_t)u->cpu;
            x.x.flags = JSP_X_NOSTOP;
            x.x.t_ns = t - start;
            x.x.requested_ns = s;
            x.x.stopped_ns = INT64_MIN;
            x.x.end_ns = x.x.resumed_ns = t - start + s;
            push(u, &x);
            u->suspensions++;
            u->suspended_ns += s;
            prev = t + s;
            t = prev + cfg->ts_ns;
        } else {
            prev = t;
            t += cfg->ts_ns;
        }
    }
}
