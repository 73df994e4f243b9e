/*
 * jitterscope-protect: the duty-cycling controller of `jitterscope protect`
 * (the thesis, chapter 4).  jitterscope sets everything up (cgroups, report
 * pages, the journal) and runs this program; it only samples, decides,
 * actuates and records.
 *
 * Threads: one control thread per best-effort CPU (protect_loop.c), pinned
 * there, SCHED_FIFO with --fifo; optionally a SCHED_DEADLINE blocker per CPU
 * and a noise probe on a protected CPU (protect_io.c); the main thread is the
 * writer: every 10 ms it drains the control threads' rings and the critical
 * program's heartbeats into the output file (protect_records.h).
 *
 * Options after --unit CPU apply to that CPU: --report-page, --pid, --pgid,
 * --act-file, --confirm-file, --mbm-file.
 *
 * Protocol on stdout (one JSON object per line): {"event":"ready",...} once
 * every thread is set up (with --wait-go it then waits for "go" on stdin before
 * controlling anything), {"event":"end",...} when it stops (duration, SIGTERM,
 * SIGINT, or its parent's death).  Before ending it resumes everything it
 * suspended.  Errors: one line on stderr, exit code 2.
 *
 * --sampling event: no timer; each control thread sleeps until its CPU's
 * counters overflow at the budget (threshold x Ts: LLC lines for pmu, task-clock
 * ns for cputime) -- see protect_loop.c.
 *
 * Other modes: --layout (struct layouts as JSON), --check-pmu CPU.
 */
#include "protect.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "js_alloc.h"

#define JS_PROGRAM "jitterscope-protect"
#include "js_cli.h"

#define DRAIN_INTERVAL_NS 10000000LL

/* The one piece of state outside `struct protect`: a signal handler gets no argument, so it can only
 * reach a static.  It sets this flag and nothing else (a lock-free atomic store is async-signal-safe);
 * the run reads it through pr->signalled. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal flag must be a lock-free atomic");
static _Atomic int signalled;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store_explicit(&signalled, 1, memory_order_relaxed);
}

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void write_all(struct protect *pr, const void *buf, size_t n)
{
    const struct config *cfg = &pr->cfg;
    js_write_all(pr->fd, buf, n, cfg->out);
}

void push(struct unit *u, const union jsp_record *r)
{
    struct protect *pr = u->pr;
    if (pr->direct) {
        write_all(pr, r, sizeof *r);
        pr->written++;
        return;
    }
    uint64_t h = atomic_load_explicit(&u->ring.head, memory_order_relaxed);
    if (h - atomic_load_explicit(&u->ring.tail, memory_order_acquire) >= RING_RECORDS) {
        u->ring.dropped++;
        return;
    }
    u->ring.buf[h & (RING_RECORDS - 1)] = *r;
    atomic_store_explicit(&u->ring.head, h + 1, memory_order_release);
}

static void drain(struct unit *u)
{
    struct protect *pr = u->pr;
    uint64_t h = atomic_load_explicit(&u->ring.head, memory_order_acquire);
    uint64_t t = atomic_load_explicit(&u->ring.tail, memory_order_relaxed);
    uint64_t n = h - t, i = t & (RING_RECORDS - 1);
    if (!n)
        return;
    uint64_t first = n < RING_RECORDS - i ? n : RING_RECORDS - i;
    write_all(pr, &u->ring.buf[i], first * sizeof(union jsp_record));
    if (n > first)
        write_all(pr, &u->ring.buf[0], (n - first) * sizeof(union jsp_record));
    atomic_store_explicit(&u->ring.tail, h, memory_order_release);
    pr->written += n;
}

/* The critical program's heartbeats since the last drain, as records. */
static void drain_beats(struct protect *pr)
{
    const struct config *cfg = &pr->cfg;
    struct js_report_page *p = cfg->crit;
    if (!p)
        return;
    uint64_t b = atomic_load_explicit(&p->beats, memory_order_acquire), from = pr->beats_seen;
    if (b - from > JS_REPORT_BEATS) {
        pr->beats_lost += b - from - JS_REPORT_BEATS;
        from = b - JS_REPORT_BEATS;
    }
    union jsp_record r;
    for (uint64_t i = from; i < b; i++) {
        memset(&r, 0, sizeof r);
        struct js_beat beat = p->beat[i & (JS_REPORT_BEATS - 1)];
        r.b.kind = JSP_BEAT;
        r.b.t_ns = beat.end_ns - pr->t0;
        r.b.latency_ns = beat.latency_ns;
        r.b.seq = (int64_t)i;
        write_all(pr, &r, sizeof r);
        pr->written++;
    }
    /* entries the program overwrote while we copied them are not trusted */
    uint64_t after = atomic_load_explicit(&p->beats, memory_order_acquire);
    if (after - from > JS_REPORT_BEATS)
        pr->beats_lost += after - from - JS_REPORT_BEATS;
    pr->beats_seen = b;
}

static void write_header(struct protect *pr, int complete)
{
    const struct config *cfg = &pr->cfg;
    struct jsp_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, JSP_MAGIC, sizeof h.magic);
    h.version = JSP_VERSION;
    h.header_size = sizeof h;
    h.record_size = sizeof(union jsp_record);
    h.flags = complete ? JSP_FILE_COMPLETE : 0;
    h.t0_ns = pr->t0;
    h.n_records = pr->written;
    for (int i = 0; i < pr->n_units; i++)
        h.dropped += pr->units[i].ring.dropped;
    h.beats_lost = pr->beats_lost;
    if (pwrite(pr->fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        die("writing %s: %s", cfg->out, strerror(errno));
}

/* ---- --layout ------------------------------------------------------------------- */

#define FIELD(S, F) printf("%s\"%s\": {\"offset\": %zu, \"size\": %zu}", first ? "" : ", ", #F, \
                           offsetof(struct S, F), sizeof(((struct S *)0)->F)), first = 0
#define STRUCT(S, BODY) do { int first = 1; printf("%s\"" #S "\": {\"size\": %zu, \"fields\": {", \
                             n++ ? ", " : "", sizeof(struct S)); BODY; printf("}}"); } while (0)

static int mode_layout(void)
{
    int n = 0;
    printf("{\"magic\": \"%s\", \"version\": %u, \"report_magic\": \"%s\", \"report_version\": %u, "
           "\"report_beats\": %u, \"structs\": {", JSP_MAGIC, JSP_VERSION, JS_REPORT_MAGIC, JS_REPORT_VERSION,
           JS_REPORT_BEATS);
    STRUCT(jsp_header, FIELD(jsp_header, magic); FIELD(jsp_header, version); FIELD(jsp_header, header_size);
           FIELD(jsp_header, record_size); FIELD(jsp_header, flags); FIELD(jsp_header, t0_ns);
           FIELD(jsp_header, n_records); FIELD(jsp_header, dropped); FIELD(jsp_header, beats_lost);
           FIELD(jsp_header, reserved));
    STRUCT(jsp_sample, FIELD(jsp_sample, kind); FIELD(jsp_sample, cpu); FIELD(jsp_sample, flags);
           FIELD(jsp_sample, t_ns); FIELD(jsp_sample, window_ns); FIELD(jsp_sample, read_bytes);
           FIELD(jsp_sample, write_bytes); FIELD(jsp_sample, progress_bytes); FIELD(jsp_sample, cpu_ns);
           FIELD(jsp_sample, metric); FIELD(jsp_sample, pressure_ppm); FIELD(jsp_sample, suspend_ns));
    STRUCT(jsp_suspension, FIELD(jsp_suspension, kind); FIELD(jsp_suspension, cpu);
           FIELD(jsp_suspension, flags); FIELD(jsp_suspension, t_ns); FIELD(jsp_suspension, requested_ns);
           FIELD(jsp_suspension, stopped_ns); FIELD(jsp_suspension, end_ns); FIELD(jsp_suspension, resumed_ns);
           FIELD(jsp_suspension, issue_ns); FIELD(jsp_suspension, reserved));
    STRUCT(jsp_beat, FIELD(jsp_beat, kind); FIELD(jsp_beat, cpu); FIELD(jsp_beat, flags); FIELD(jsp_beat, t_ns);
           FIELD(jsp_beat, latency_ns); FIELD(jsp_beat, seq); FIELD(jsp_beat, reserved));
    STRUCT(js_report_page, FIELD(js_report_page, magic); FIELD(js_report_page, version);
           FIELD(js_report_page, size); FIELD(js_report_page, pid); FIELD(js_report_page, flags);
           FIELD(js_report_page, deadline_ns); FIELD(js_report_page, reserved);
           FIELD(js_report_page, read_bytes); FIELD(js_report_page, write_bytes); FIELD(js_report_page, ops);
           FIELD(js_report_page, last_ns); FIELD(js_report_page, reserved2); FIELD(js_report_page, beats);
           FIELD(js_report_page, reserved3); FIELD(js_report_page, beat));
    STRUCT(js_beat, FIELD(js_beat, end_ns); FIELD(js_beat, latency_ns));
    printf("}, \"flags\": {\"JSP_FILE_COMPLETE\": %u, \"JSP_S_ON\": %u, \"JSP_S_WOULD\": %u, \"JSP_S_STALE\": %u, "
           "\"JSP_S_NOSIGNAL\": %u, \"JSP_S_EVENT\": %u, \"JSP_X_CLIPPED\": %u, \"JSP_X_UNCONFIRMED\": %u, \"JSP_X_NOSTOP\": %u}, "
           "\"kinds\": {\"JSP_SAMPLE\": %d, \"JSP_SUSPENSION\": %d, \"JSP_BEAT\": %d}}\n",
           JSP_FILE_COMPLETE, JSP_S_ON, JSP_S_WOULD, JSP_S_STALE, JSP_S_NOSIGNAL, JSP_S_EVENT, JSP_X_CLIPPED,
           JSP_X_UNCONFIRMED, JSP_X_NOSTOP, JSP_SAMPLE, JSP_SUSPENSION, JSP_BEAT);
    return 0;
}

/* ---- input files ----------------------------------------------------------------- */

static struct js_report_page *map_page(const char *path)
{
    struct js_report_page *p = js_report_map(path, 0);
    if (!p)
        die("%s: not a jitterscope report page", path);
    return p;
}

/* Replay input: int64 t_ns, uint64 read_bytes, uint64 write_bytes per row (written by jitterscope). */
static void load_replay(struct config *cfg, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open replay file %s: %s", path, strerror(errno));
    size_t cap = 1024, n = 0;
    cfg->rp_t = js_malloc(cap * sizeof(int64_t));
    cfg->rp_r = js_malloc(cap * sizeof(uint64_t));
    cfg->rp_w = js_malloc(cap * sizeof(uint64_t));
    uint64_t row[3];
    while (fread(row, sizeof row, 1, f) == 1) {
        if (n == cap) {
            cap *= 2;
            cfg->rp_t = js_realloc(cfg->rp_t, cap * sizeof(int64_t));
            cfg->rp_r = js_realloc(cfg->rp_r, cap * sizeof(uint64_t));
            cfg->rp_w = js_realloc(cfg->rp_w, cap * sizeof(uint64_t));
        }
        cfg->rp_t[n] = (int64_t)row[0];
        cfg->rp_r[n] = row[1];
        cfg->rp_w[n] = row[2];
        if (n && cfg->rp_t[n] <= cfg->rp_t[n - 1])
            die("replay file %s: times must increase (row %zu)", path, n + 1);
        n++;
    }
    fclose(f);
    if (n < 2)
        die("replay file %s: needs at least two rows", path);
    cfg->rp_n = n;
}

/* ---- the run ------------------------------------------------------------------------ */

static void print_end(struct protect *pr, int interrupted, int64_t dur)
{
    const struct config *cfg = &pr->cfg;
    printf("{\"event\": \"end\", \"records\": %" PRIu64 ", \"beats_lost\": %" PRIu64 ", \"interrupted\": %s, "
           "\"duration_ns\": %lld, \"units\": [", pr->written, pr->beats_lost, interrupted ? "true" : "false",
           (long long)dur);
    for (int i = 0; i < pr->n_units; i++) {
        struct unit *u = &pr->units[i];
        printf("%s{\"cpu\": %d, \"samples\": %" PRIu64 ", \"over\": %" PRIu64 ", \"suspensions\": %" PRIu64
               ", \"clipped\": %" PRIu64 ", \"unconfirmed\": %" PRIu64 ", \"dropped\": %" PRIu64
               ", \"spin_ns\": %lld, \"suspended_ns\": %lld, \"thread_cpu_ns\": %lld, \"task_counters\": %d}",
               i ? ", " : "", u->cpu, u->samples, u->over, u->suspensions, u->clipped, u->unconfirmed,
               u->ring.dropped, (long long)u->spin_ns, (long long)u->suspended_ns, (long long)u->thread_cpu_ns,
               u->n_taskfds);
    }
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    printf("], \"writer_cpu_ns\": %lld, \"sampling\": \"%s\", \"event_budget\": [%" PRIu64 ", %" PRIu64 "]}\n",
           (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, cfg->event ? "event" : "timer", cfg->ev_budget[0],
           cfg->ev_budget[1]);
    fflush(stdout);
}

static int wait_ready(struct unit *u)
{
    while (!atomic_load(&u->ready))
        usleep(1000);
    return atomic_load(&u->ready) > 0;
}

static void start_threads(struct protect *pr, pthread_t *noise)
{
    const struct config *cfg = &pr->cfg;
    for (int i = 0; i < pr->n_units; i++) {
        struct unit *u = &pr->units[i];
        if (cfg->actuator == ACT_DEADLINE) {
            u->dl_efd = eventfd(0, EFD_CLOEXEC);
            if (pthread_create(&u->dl_thread, NULL, dl_main, u))
                die("cannot start a thread");
            if (!wait_ready(u))
                die("%s", u->error);
            atomic_store(&u->ready, 0);
        }
        u->ring.buf = aligned_alloc(64, RING_RECORDS * sizeof(union jsp_record));
        if (!u->ring.buf)
            die("out of memory for the record rings");
        memset(u->ring.buf, 0, RING_RECORDS * sizeof(union jsp_record));
        if (pthread_create(&u->thread, NULL, control_main, u))
            die("cannot start a thread");
        if (!wait_ready(u))
            die("%s", u->error);
    }
    if (cfg->signal == SIG_NOISE) {
        if (pthread_create(noise, NULL, noise_main, &pr->noise_unit))
            die("cannot start a thread");
        if (!wait_ready(&pr->noise_unit))
            die("%s", pr->noise_unit.error);
    }
}

static void stop_threads(struct protect *pr, pthread_t noise)
{
    const struct config *cfg = &pr->cfg;
    atomic_store(&pr->stop, 1);
    for (int i = 0; i < pr->n_units; i++) {
        struct unit *u = &pr->units[i];
        pthread_join(u->thread, NULL);
        if (cfg->actuator == ACT_DEADLINE) {
            uint64_t one = 1;
            if (write(u->dl_efd, &one, sizeof one) < 0) {}
            pthread_join(u->dl_thread, NULL);
        }
    }
    if (cfg->signal == SIG_NOISE)
        pthread_join(noise, NULL);
    act_release_all(pr);
}

static void print_ready(struct protect *pr)
{
    printf("{\"event\": \"ready\", \"pid\": %d, \"units\": [", (int)getpid());
    for (int i = 0; i < pr->n_units; i++)
        printf("%s{\"cpu\": %d, \"tid\": %d, \"task_counters\": %d, \"pages\": %d}", i ? ", " : "",
               pr->units[i].cpu, (int)pr->units[i].tid, pr->units[i].n_taskfds, pr->units[i].n_pages);
    printf("]}\n");
    fflush(stdout);
}

static int wait_go(void)
{
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        return 0;
    return strncmp(line, "go", 2) == 0;
}

static int run(struct protect *pr)
{
    const struct config *cfg = &pr->cfg;
    pr->fd = open(cfg->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (pr->fd < 0)
        die("cannot create %s: %s", cfg->out, strerror(errno));
    for (int i = 0; i < pr->n_units; i++)
        io_setup_unit(&pr->units[i]);
    mlockall(MCL_CURRENT);  /* best effort: a page fault inside a sample would be controller jitter */
    write_header(pr, 0);
    if (lseek(pr->fd, sizeof(struct jsp_header), SEEK_SET) < 0)  /* pwrite left the offset at 0 */
        die("seeking in %s: %s", cfg->out, strerror(errno));
    if (cfg->rp_n) {  /* replay: virtual time, no threads, no actuator */
        pr->direct = 1;
        print_ready(pr);
        if (cfg->wait_go && !wait_go())
            return 0;
        replay_run(&pr->units[0]);
        write_header(pr, 1);
        print_end(pr, 0, cfg->rp_t[cfg->rp_n - 1] - cfg->rp_t[0]);
        return 0;
    }
    pthread_t noise = 0;
    start_threads(pr, &noise);
    print_ready(pr);
    if (cfg->wait_go && !wait_go()) {
        stop_threads(pr, noise);
        return 0;
    }
    pr->t0 = now_ns();
    if (cfg->crit)
        pr->beats_seen = atomic_load(&cfg->crit->beats);
    write_header(pr, 0);
    atomic_store(&pr->go, 1);
    int64_t end = cfg->duration_ns ? pr->t0 + cfg->duration_ns : INT64_MAX;
    while (!stopping(pr) && now_ns() < end) {
        struct timespec d = {0, DRAIN_INTERVAL_NS};
        nanosleep(&d, NULL);
        for (int i = 0; i < pr->n_units; i++)
            drain(&pr->units[i]);
        drain_beats(pr);
    }
    int interrupted = stopping(pr);
    int64_t dur = now_ns() - pr->t0;
    stop_threads(pr, noise);
    for (int i = 0; i < pr->n_units; i++)
        drain(&pr->units[i]);
    drain_beats(pr);
    write_header(pr, 1);
    print_end(pr, interrupted, dur);
    return 0;
}

/* ---- options ------------------------------------------------------------------------- */

static void usage(void)
{
    fputs("usage: jitterscope-protect --out FILE --sample-ns TS --suspend-ns S [--law fixed|proportional]\n"
          "         [--signal none|report|slack|replay|pmu|cputime|noise|resctrl|always] "
          "[--actuator none|rt|deadline|signal|file|cfs]\n"
          "         [--threshold-read BPS] [--threshold-write BPS] [--threshold-slack-ns N] [--deadline-ns N]\n"
          "         [--threshold-ratio-ppm N] [--gain G] [--suspend-min-ns N] [--suspend-max-ns N]\n"
          "         [--fifo PRIO] [--rt-budget-ppm N] [--duration-ns D] [--phase-ns P] [--phase-first on|off]\n"
          "         [--critical-page PATH] [--act-on STR --act-off STR] [--confirm-expect STR] "
          "[--cfs-period-us N]\n"
          "         [--noise-cpu C --noise-bytes B --noise-steps N] [--pmu-raw READ,WRITE] [--replay FILE]\n"
          "         [--sampling timer|event]\n"
          "         [--wait-go] --unit CPU [--report-page P] [--pid N] [--pgid N] [--act-file F] "
          "[--confirm-file F] [--mbm-file F] ...\n"
          "       jitterscope-protect --layout | --check-pmu CPU\n", stderr);
    exit(2);
}

static int pick(const char *v, const char *const *names, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i]))
            return i;
    die("unknown %s '%s'", what, v);
}

static struct unit *cur_unit(struct protect *pr, const char *opt)
{
    if (!pr->n_units)
        die("%s must follow --unit CPU", opt);
    return &pr->units[pr->n_units - 1];
}

enum {
    O_OUT = 1, O_TS, O_S, O_LAW, O_GAIN, O_SMIN, O_SMAX, O_SIGNAL, O_ACT, O_THR_R, O_THR_W, O_THR_SLACK,
    O_DEADLINE, O_THR_RATIO, O_FIFO, O_RTB, O_DUR, O_PHASE, O_PHASE_FIRST, O_CRIT, O_ACT_ON, O_ACT_OFF,
    O_CONFIRM_EXPECT, O_CFS_PERIOD, O_NOISE_CPU, O_NOISE_BYTES, O_NOISE_STEPS, O_PMU_RAW, O_REPLAY, O_GO,
    O_UNIT, O_PAGE, O_PID, O_PGID, O_ACT_FILE, O_CONFIRM_FILE, O_MBM, O_LAYOUT, O_CHECK_PMU, O_SAMPLING,
};

static const struct option OPTS[] = {
    {"out", required_argument, 0, O_OUT}, {"sample-ns", required_argument, 0, O_TS},
    {"suspend-ns", required_argument, 0, O_S}, {"law", required_argument, 0, O_LAW},
    {"gain", required_argument, 0, O_GAIN}, {"suspend-min-ns", required_argument, 0, O_SMIN},
    {"suspend-max-ns", required_argument, 0, O_SMAX}, {"signal", required_argument, 0, O_SIGNAL},
    {"actuator", required_argument, 0, O_ACT}, {"threshold-read", required_argument, 0, O_THR_R},
    {"threshold-write", required_argument, 0, O_THR_W}, {"threshold-slack-ns", required_argument, 0, O_THR_SLACK},
    {"deadline-ns", required_argument, 0, O_DEADLINE}, {"threshold-ratio-ppm", required_argument, 0, O_THR_RATIO},
    {"fifo", required_argument, 0, O_FIFO}, {"rt-budget-ppm", required_argument, 0, O_RTB},
    {"duration-ns", required_argument, 0, O_DUR}, {"phase-ns", required_argument, 0, O_PHASE},
    {"phase-first", required_argument, 0, O_PHASE_FIRST}, {"critical-page", required_argument, 0, O_CRIT},
    {"act-on", required_argument, 0, O_ACT_ON}, {"act-off", required_argument, 0, O_ACT_OFF},
    {"confirm-expect", required_argument, 0, O_CONFIRM_EXPECT},
    {"cfs-period-us", required_argument, 0, O_CFS_PERIOD}, {"noise-cpu", required_argument, 0, O_NOISE_CPU},
    {"noise-bytes", required_argument, 0, O_NOISE_BYTES}, {"noise-steps", required_argument, 0, O_NOISE_STEPS},
    {"pmu-raw", required_argument, 0, O_PMU_RAW}, {"replay", required_argument, 0, O_REPLAY},
    {"wait-go", no_argument, 0, O_GO}, {"unit", required_argument, 0, O_UNIT},
    {"report-page", required_argument, 0, O_PAGE}, {"pid", required_argument, 0, O_PID},
    {"pgid", required_argument, 0, O_PGID}, {"act-file", required_argument, 0, O_ACT_FILE},
    {"confirm-file", required_argument, 0, O_CONFIRM_FILE}, {"mbm-file", required_argument, 0, O_MBM},
    {"layout", no_argument, 0, O_LAYOUT}, {"check-pmu", required_argument, 0, O_CHECK_PMU},
    {"sampling", required_argument, 0, O_SAMPLING},
    {0, 0, 0, 0},
};

static const char *const SIGNALS[] = {"none", "report", "slack", "replay", "pmu", "cputime", "noise", "resctrl",
                                       "always"};
static const char *const ACTUATORS[] = {"none", "rt", "deadline", "signal", "file", "cfs"};

static void parse_pmu_raw(struct config *cfg, const char *v)
{
    char *end;
    cfg->pmu_read_config = strtoull(v, &end, 16);
    if (*end != ',')
        die("--pmu-raw wants READ,WRITE in hex, got '%s'", v);
    cfg->pmu_write_config = strtoull(end + 1, &end, 16);
    if (*end)
        die("--pmu-raw wants READ,WRITE in hex, got '%s'", v);
    cfg->pmu_raw = 1;
}

static void add_target(struct protect *pr, const char *v, int group, const char *opt)
{
    struct unit *u = cur_unit(pr, opt);
    if (u->n_targets == MAX_TARGETS)
        die("too many processes for CPU %d", u->cpu);
    u->targets[u->n_targets].id = (pid_t)parse_u64(v, opt);
    u->targets[u->n_targets++].group = group;
}

static int parse_option(struct protect *pr, int c, const char *v)
{
    struct config *cfg = &pr->cfg;
    struct unit *u;
    switch (c) {
    case O_OUT: cfg->out = v; break;
    case O_TS: cfg->ts_ns = (int64_t)parse_u64(v, "--sample-ns"); break;
    case O_S: cfg->s_ns = (int64_t)parse_u64(v, "--suspend-ns"); break;
    case O_LAW: cfg->law = (enum js_law)pick(v, (const char *const[]){"fixed", "proportional"}, 2, "law"); break;
    case O_GAIN: cfg->gain = parse_u64(v, "--gain") / 1000.0; break;  /* in thousandths */
    case O_SMIN: cfg->s_min_ns = (int64_t)parse_u64(v, "--suspend-min-ns"); break;
    case O_SMAX: cfg->s_max_ns = (int64_t)parse_u64(v, "--suspend-max-ns"); break;
    case O_SIGNAL: cfg->signal = (enum js_signal)pick(v, SIGNALS, 9, "signal"); break;
    case O_ACT: cfg->actuator = (enum js_actuator)pick(v, ACTUATORS, 6, "actuator"); break;
    case O_THR_R: cfg->thr_read = parse_u64(v, "--threshold-read"); break;
    case O_THR_W: cfg->thr_write = parse_u64(v, "--threshold-write"); break;
    case O_THR_SLACK: cfg->thr_slack_ns = (int64_t)parse_u64(v, "--threshold-slack-ns"); break;
    case O_DEADLINE: cfg->deadline_ns = (int64_t)parse_u64(v, "--deadline-ns"); break;
    case O_THR_RATIO: cfg->thr_ratio = parse_u64(v, "--threshold-ratio-ppm") / 1e6; break;
    case O_FIFO: cfg->prio = (int)parse_u64(v, "--fifo"); break;
    case O_RTB: cfg->rt_budget = parse_u64(v, "--rt-budget-ppm") / 1e6; break;
    case O_DUR: cfg->duration_ns = (int64_t)parse_u64(v, "--duration-ns"); break;
    case O_PHASE: cfg->phase_ns = (int64_t)parse_u64(v, "--phase-ns"); break;
    case O_PHASE_FIRST: cfg->phase_first_on = pick(v, (const char *const[]){"off", "on"}, 2, "phase"); break;
    case O_CRIT: cfg->crit = map_page(v); break;
    case O_ACT_ON: cfg->act_on = v; break;
    case O_ACT_OFF: cfg->act_off = v; break;
    case O_CONFIRM_EXPECT: cfg->confirm_expect = v; break;
    case O_CFS_PERIOD: cfg->cfs_period_us = (int64_t)parse_u64(v, "--cfs-period-us"); break;
    case O_NOISE_CPU: cfg->noise_cpu = (int)parse_u64(v, "--noise-cpu"); break;
    case O_NOISE_BYTES: cfg->noise_bytes = parse_u64(v, "--noise-bytes"); break;
    case O_NOISE_STEPS: cfg->noise_steps = parse_u64(v, "--noise-steps"); break;
    case O_PMU_RAW: parse_pmu_raw(cfg, v); break;
    case O_REPLAY: load_replay(cfg, v); break;
    case O_GO: cfg->wait_go = 1; break;
    case O_SAMPLING: cfg->event = pick(v, (const char *const[]){"timer", "event"}, 2, "sampling"); break;
    case O_UNIT:
        if (pr->n_units == MAX_UNITS)
            die("at most %d best-effort CPUs", MAX_UNITS);
        u = &pr->units[pr->n_units++];
        u->pr = pr;
        u->cpu = (int)parse_u64(v, "--unit");
        break;
    case O_PAGE:
        u = cur_unit(pr, "--report-page");
        if (u->n_pages == MAX_PAGES)
            die("too many report pages for CPU %d", u->cpu);
        u->pages[u->n_pages++] = map_page(v);
        break;
    case O_PID: add_target(pr, v, 0, "--pid"); break;
    case O_PGID: add_target(pr, v, 1, "--pgid"); break;
    case O_ACT_FILE: cur_unit(pr, "--act-file")->act_path = v; break;
    case O_CONFIRM_FILE: cur_unit(pr, "--confirm-file")->confirm_path = v; break;
    case O_MBM:
        u = cur_unit(pr, "--mbm-file");
        if (u->n_mbm == MAX_PAGES)
            die("too many resctrl counters for CPU %d", u->cpu);
        u->mbm_path[u->n_mbm++] = v;
        break;
    default: usage();
    }
    return 0;
}

/* The budget each counter overflows at: the threshold's worth of events in one window Ts
 * (pmu: bytes/s x Ts / 64 B per line, each direction; cputime: the CPU share x Ts). */
static void event_budgets(struct config *cfg)
{
    if (cfg->signal != SIG_PMU && cfg->signal != SIG_CPUTIME)
        die("event-based sampling needs a counter that overflows: --signal pmu or cputime");
    if (cfg->rp_n)
        die("event-based sampling runs on live counters, not a replay");
    double ts = (double)cfg->ts_ns;
    if (cfg->signal == SIG_PMU) {
        for (int k = 0; k < 2; k++) {
            uint64_t thr = k ? cfg->thr_write : cfg->thr_read;
            cfg->ev_budget[k] = thr ? (uint64_t)((double)thr * ts / 1e9 / 64.0 + 0.999999) : 0;
        }
        return;
    }
    cfg->ev_budget[0] = (uint64_t)(cfg->thr_ratio * ts + 0.5);
    if (cfg->ev_budget[0] < 10000)   /* the kernel's shortest software-event period (perf_swevent_init_hrtimer) */
        die("event-based sampling on CPU time: the budget %.0f ns (threshold x Ts) is below the kernel's 10 us; "
            "use a longer --sample or a larger --threshold", cfg->thr_ratio * ts);
}

static void check_config(struct protect *pr)
{
    struct config *cfg = &pr->cfg;
    if (!cfg->out || !cfg->ts_ns || !pr->n_units)
        die("--out, --sample-ns and --unit are required");
    if (cfg->law == LAW_FIXED && !cfg->s_ns)
        die("--suspend-ns is required");
    if (cfg->law == LAW_PROPORTIONAL && (!cfg->s_max_ns || cfg->s_min_ns > cfg->s_max_ns))
        die("the proportional law needs --suspend-max-ns >= --suspend-min-ns");
    if (cfg->signal == SIG_REPLAY && !cfg->rp_n)
        die("--signal replay needs --replay FILE");
    if (cfg->rp_n && (cfg->actuator != ACT_NONE || pr->n_units != 1))
        die("replay runs in virtual time: one --unit and --actuator none");
    if (cfg->signal == SIG_SLACK && !cfg->crit)
        die("--signal slack needs --critical-page");
    if ((cfg->signal == SIG_NOISE || cfg->signal == SIG_CPUTIME) && cfg->thr_ratio <= 0)
        die("--signal %s needs --threshold-ratio-ppm", SIGNALS[cfg->signal]);
    if (cfg->signal == SIG_NOISE && (!cfg->noise_bytes || !cfg->noise_steps))
        die("--signal noise needs --noise-bytes and --noise-steps");
    if ((cfg->actuator == ACT_FILE || cfg->actuator == ACT_CFS) && (!cfg->act_on || !cfg->act_off))
        die("file and cfs actuators need --act-on and --act-off");
    if (cfg->actuator == ACT_CFS && cfg->cfs_period_us < 1000)
        die("--cfs-period-us must be at least 1000");
    if (cfg->actuator == ACT_RT && (cfg->prio <= 0 || cfg->rt_budget <= 0 || cfg->rt_budget >= 1))
        die("the rt actuator needs --fifo PRIO and an --rt-budget-ppm below 1000000");
    if (cfg->prio > 99)
        die("--fifo must be 1..99");
    if (cfg->event)
        event_budgets(cfg);
}

/* A run's state, before its options: everything zero but these. */
static struct protect *new_run(void)
{
    struct protect *pr = js_calloc(1, sizeof *pr);
    pr->cfg.gain = 10.0;
    pr->cfg.phase_first_on = 1;
    pr->signalled = &signalled;
    pr->fd = -1;
    pr->noise_unit.pr = pr;
    atomic_init(&pr->noise_min_ns, INT64_MAX);
    return pr;
}

int main(int argc, char **argv)
{
    int c, check_cpu = -1;
    struct protect *pr = new_run();
    while ((c = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        if (c == O_LAYOUT)
            return mode_layout();
        if (c == O_CHECK_PMU)
            check_cpu = (int)parse_u64(optarg, "--check-pmu");
        else if (c == '?')
            usage();
        else
            parse_option(pr, c, optarg);
    }
    if (check_cpu >= 0)
        return pmu_check(&pr->cfg, check_cpu);
    check_config(pr);
    if (js_die_with_parent())
        return 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;  /* no SA_RESTART: interrupt sleeps */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    return run(pr);
}
