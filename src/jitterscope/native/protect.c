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

struct config g_cfg;
struct unit g_units[MAX_UNITS];
int g_n_units;
_Atomic int g_stop;
_Atomic int g_go;
int64_t g_t0;

static int g_fd = -1;
static uint64_t g_written, g_beats_lost, g_beats_seen;
static int g_direct;  /* replay: records go straight to the file (no threads) */

static void on_signal(int sig) { (void)sig; atomic_store(&g_stop, 1); }

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void write_all(const void *buf, size_t n)
{
    js_write_all(g_fd, buf, n, g_cfg.out);
}

void push(struct unit *u, const union jsp_record *r)
{
    if (g_direct) {
        write_all(r, sizeof *r);
        g_written++;
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
    uint64_t h = atomic_load_explicit(&u->ring.head, memory_order_acquire);
    uint64_t t = atomic_load_explicit(&u->ring.tail, memory_order_relaxed);
    uint64_t n = h - t, i = t & (RING_RECORDS - 1);
    if (!n)
        return;
    uint64_t first = n < RING_RECORDS - i ? n : RING_RECORDS - i;
    write_all(&u->ring.buf[i], first * sizeof(union jsp_record));
    if (n > first)
        write_all(&u->ring.buf[0], (n - first) * sizeof(union jsp_record));
    atomic_store_explicit(&u->ring.tail, h, memory_order_release);
    g_written += n;
}

/* The critical program's heartbeats since the last drain, as records. */
static void drain_beats(void)
{
    struct js_report_page *p = g_cfg.crit;
    if (!p)
        return;
    uint64_t b = atomic_load_explicit(&p->beats, memory_order_acquire), from = g_beats_seen;
    if (b - from > JS_REPORT_BEATS) {
        g_beats_lost += b - from - JS_REPORT_BEATS;
        from = b - JS_REPORT_BEATS;
    }
    union jsp_record r;
    for (uint64_t i = from; i < b; i++) {
        memset(&r, 0, sizeof r);
        struct js_beat beat = p->beat[i & (JS_REPORT_BEATS - 1)];
        r.b.kind = JSP_BEAT;
        r.b.t_ns = beat.end_ns - g_t0;
        r.b.latency_ns = beat.latency_ns;
        r.b.seq = (int64_t)i;
        write_all(&r, sizeof r);
        g_written++;
    }
    /* entries the program overwrote while we copied them are not trusted */
    uint64_t after = atomic_load_explicit(&p->beats, memory_order_acquire);
    if (after - from > JS_REPORT_BEATS)
        g_beats_lost += after - from - JS_REPORT_BEATS;
    g_beats_seen = b;
}

static void write_header(int complete)
{
    struct jsp_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, JSP_MAGIC, sizeof h.magic);
    h.version = JSP_VERSION;
    h.header_size = sizeof h;
    h.record_size = sizeof(union jsp_record);
    h.flags = complete ? JSP_FILE_COMPLETE : 0;
    h.t0_ns = g_t0;
    h.n_records = g_written;
    for (int i = 0; i < g_n_units; i++)
        h.dropped += g_units[i].ring.dropped;
    h.beats_lost = g_beats_lost;
    if (pwrite(g_fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        die("writing %s: %s", g_cfg.out, strerror(errno));
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
static void load_replay(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open replay file %s: %s", path, strerror(errno));
    size_t cap = 1024, n = 0;
    g_cfg.rp_t = js_malloc(cap * sizeof(int64_t));
    g_cfg.rp_r = js_malloc(cap * sizeof(uint64_t));
    g_cfg.rp_w = js_malloc(cap * sizeof(uint64_t));
    uint64_t row[3];
    while (fread(row, sizeof row, 1, f) == 1) {
        if (n == cap) {
            cap *= 2;
            g_cfg.rp_t = js_realloc(g_cfg.rp_t, cap * sizeof(int64_t));
            g_cfg.rp_r = js_realloc(g_cfg.rp_r, cap * sizeof(uint64_t));
            g_cfg.rp_w = js_realloc(g_cfg.rp_w, cap * sizeof(uint64_t));
        }
        g_cfg.rp_t[n] = (int64_t)row[0];
        g_cfg.rp_r[n] = row[1];
        g_cfg.rp_w[n] = row[2];
        if (n && g_cfg.rp_t[n] <= g_cfg.rp_t[n - 1])
            die("replay file %s: times must increase (row %zu)", path, n + 1);
        n++;
    }
    fclose(f);
    if (n < 2)
        die("replay file %s: needs at least two rows", path);
    g_cfg.rp_n = n;
}

/* ---- the run ------------------------------------------------------------------------ */

static void print_end(int interrupted, int64_t dur)
{
    printf("{\"event\": \"end\", \"records\": %" PRIu64 ", \"beats_lost\": %" PRIu64 ", \"interrupted\": %s, "
           "\"duration_ns\": %lld, \"units\": [", g_written, g_beats_lost, interrupted ? "true" : "false",
           (long long)dur);
    for (int i = 0; i < g_n_units; i++) {
        struct unit *u = &g_units[i];
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
           (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, g_cfg.event ? "event" : "timer", g_cfg.ev_budget[0],
           g_cfg.ev_budget[1]);
    fflush(stdout);
}

static int wait_ready(struct unit *u)
{
    while (!atomic_load(&u->ready))
        usleep(1000);
    return atomic_load(&u->ready) > 0;
}

static void start_threads(pthread_t *noise, struct unit *noise_unit)
{
    for (int i = 0; i < g_n_units; i++) {
        struct unit *u = &g_units[i];
        if (g_cfg.actuator == ACT_DEADLINE) {
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
    if (g_cfg.signal == SIG_NOISE) {
        if (pthread_create(noise, NULL, noise_main, noise_unit))
            die("cannot start a thread");
        if (!wait_ready(noise_unit))
            die("%s", noise_unit->error);
    }
}

static void stop_threads(pthread_t noise)
{
    atomic_store(&g_stop, 1);
    for (int i = 0; i < g_n_units; i++) {
        struct unit *u = &g_units[i];
        pthread_join(u->thread, NULL);
        if (g_cfg.actuator == ACT_DEADLINE) {
            uint64_t one = 1;
            if (write(u->dl_efd, &one, sizeof one) < 0) {}
            pthread_join(u->dl_thread, NULL);
        }
    }
    if (g_cfg.signal == SIG_NOISE)
        pthread_join(noise, NULL);
    act_release_all();
}

static void print_ready(void)
{
    printf("{\"event\": \"ready\", \"pid\": %d, \"units\": [", (int)getpid());
    for (int i = 0; i < g_n_units; i++)
        printf("%s{\"cpu\": %d, \"tid\": %d, \"task_counters\": %d, \"pages\": %d}", i ? ", " : "",
               g_units[i].cpu, (int)g_units[i].tid, g_units[i].n_taskfds, g_units[i].n_pages);
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

static int run(void)
{
    g_fd = open(g_cfg.out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (g_fd < 0)
        die("cannot create %s: %s", g_cfg.out, strerror(errno));
    for (int i = 0; i < g_n_units; i++)
        io_setup_unit(&g_units[i]);
    mlockall(MCL_CURRENT);  /* best effort: a page fault inside a sample would be controller jitter */
    write_header(0);
    if (lseek(g_fd, sizeof(struct jsp_header), SEEK_SET) < 0)  /* pwrite left the offset at 0 */
        die("seeking in %s: %s", g_cfg.out, strerror(errno));
    if (g_cfg.rp_n) {  /* replay: virtual time, no threads, no actuator */
        g_direct = 1;
        print_ready();
        if (g_cfg.wait_go && !wait_go())
            return 0;
        replay_run(&g_units[0]);
        write_header(1);
        print_end(0, g_cfg.rp_t[g_cfg.rp_n - 1] - g_cfg.rp_t[0]);
        return 0;
    }
    static struct unit noise_unit;
    pthread_t noise = 0;
    start_threads(&noise, &noise_unit);
    print_ready();
    if (g_cfg.wait_go && !wait_go()) {
        stop_threads(noise);
        return 0;
    }
    g_t0 = now_ns();
    if (g_cfg.crit)
        g_beats_seen = atomic_load(&g_cfg.crit->beats);
    write_header(0);
    atomic_store(&g_go, 1);
    int64_t end = g_cfg.duration_ns ? g_t0 + g_cfg.duration_ns : INT64_MAX;
    while (!atomic_load(&g_stop) && now_ns() < end) {
        struct timespec d = {0, DRAIN_INTERVAL_NS};
        nanosleep(&d, NULL);
        for (int i = 0; i < g_n_units; i++)
            drain(&g_units[i]);
        drain_beats();
    }
    int interrupted = atomic_load(&g_stop);
    int64_t dur = now_ns() - g_t0;
    stop_threads(noise);
    for (int i = 0; i < g_n_units; i++)
        drain(&g_units[i]);
    drain_beats();
    write_header(1);
    print_end(interrupted, dur);
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

static struct unit *cur_unit(const char *opt)
{
    if (!g_n_units)
        die("%s must follow --unit CPU", opt);
    return &g_units[g_n_units - 1];
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

static void parse_pmu_raw(const char *v)
{
    char *end;
    g_cfg.pmu_read_config = strtoull(v, &end, 16);
    if (*end != ',')
        die("--pmu-raw wants READ,WRITE in hex, got '%s'", v);
    g_cfg.pmu_write_config = strtoull(end + 1, &end, 16);
    if (*end)
        die("--pmu-raw wants READ,WRITE in hex, got '%s'", v);
    g_cfg.pmu_raw = 1;
}

static void add_target(const char *v, int group, const char *opt)
{
    struct unit *u = cur_unit(opt);
    if (u->n_targets == MAX_TARGETS)
        die("too many processes for CPU %d", u->cpu);
    u->targets[u->n_targets].id = (pid_t)parse_u64(v, opt);
    u->targets[u->n_targets++].group = group;
}

static int parse_option(int c, const char *v)
{
    struct unit *u;
    switch (c) {
    case O_OUT: g_cfg.out = v; break;
    case O_TS: g_cfg.ts_ns = (int64_t)parse_u64(v, "--sample-ns"); break;
    case O_S: g_cfg.s_ns = (int64_t)parse_u64(v, "--suspend-ns"); break;
    case O_LAW: g_cfg.law = (enum js_law)pick(v, (const char *const[]){"fixed", "proportional"}, 2, "law"); break;
    case O_GAIN: g_cfg.gain = parse_u64(v, "--gain") / 1000.0; break;  /* in thousandths */
    case O_SMIN: g_cfg.s_min_ns = (int64_t)parse_u64(v, "--suspend-min-ns"); break;
    case O_SMAX: g_cfg.s_max_ns = (int64_t)parse_u64(v, "--suspend-max-ns"); break;
    case O_SIGNAL: g_cfg.signal = (enum js_signal)pick(v, SIGNALS, 9, "signal"); break;
    case O_ACT: g_cfg.actuator = (enum js_actuator)pick(v, ACTUATORS, 6, "actuator"); break;
    case O_THR_R: g_cfg.thr_read = parse_u64(v, "--threshold-read"); break;
    case O_THR_W: g_cfg.thr_write = parse_u64(v, "--threshold-write"); break;
    case O_THR_SLACK: g_cfg.thr_slack_ns = (int64_t)parse_u64(v, "--threshold-slack-ns"); break;
    case O_DEADLINE: g_cfg.deadline_ns = (int64_t)parse_u64(v, "--deadline-ns"); break;
    case O_THR_RATIO: g_cfg.thr_ratio = parse_u64(v, "--threshold-ratio-ppm") / 1e6; break;
    case O_FIFO: g_cfg.prio = (int)parse_u64(v, "--fifo"); break;
    case O_RTB: g_cfg.rt_budget = parse_u64(v, "--rt-budget-ppm") / 1e6; break;
    case O_DUR: g_cfg.duration_ns = (int64_t)parse_u64(v, "--duration-ns"); break;
    case O_PHASE: g_cfg.phase_ns = (int64_t)parse_u64(v, "--phase-ns"); break;
    case O_PHASE_FIRST: g_cfg.phase_first_on = pick(v, (const char *const[]){"off", "on"}, 2, "phase"); break;
    case O_CRIT: g_cfg.crit = map_page(v); break;
    case O_ACT_ON: g_cfg.act_on = v; break;
    case O_ACT_OFF: g_cfg.act_off = v; break;
    case O_CONFIRM_EXPECT: g_cfg.confirm_expect = v; break;
    case O_CFS_PERIOD: g_cfg.cfs_period_us = (int64_t)parse_u64(v, "--cfs-period-us"); break;
    case O_NOISE_CPU: g_cfg.noise_cpu = (int)parse_u64(v, "--noise-cpu"); break;
    case O_NOISE_BYTES: g_cfg.noise_bytes = parse_u64(v, "--noise-bytes"); break;
    case O_NOISE_STEPS: g_cfg.noise_steps = parse_u64(v, "--noise-steps"); break;
    case O_PMU_RAW: parse_pmu_raw(v); break;
    case O_REPLAY: load_replay(v); break;
    case O_GO: g_cfg.wait_go = 1; break;
    case O_SAMPLING: g_cfg.event = pick(v, (const char *const[]){"timer", "event"}, 2, "sampling"); break;
    case O_UNIT:
        if (g_n_units == MAX_UNITS)
            die("at most %d best-effort CPUs", MAX_UNITS);
        g_units[g_n_units++].cpu = (int)parse_u64(v, "--unit");
        break;
    case O_PAGE:
        u = cur_unit("--report-page");
        if (u->n_pages == MAX_PAGES)
            die("too many report pages for CPU %d", u->cpu);
        u->pages[u->n_pages++] = map_page(v);
        break;
    case O_PID: add_target(v, 0, "--pid"); break;
    case O_PGID: add_target(v, 1, "--pgid"); break;
    case O_ACT_FILE: cur_unit("--act-file")->act_path = v; break;
    case O_CONFIRM_FILE: cur_unit("--confirm-file")->confirm_path = v; break;
    case O_MBM:
        u = cur_unit("--mbm-file");
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
static void event_budgets(void)
{
    if (g_cfg.signal != SIG_PMU && g_cfg.signal != SIG_CPUTIME)
        die("event-based sampling needs a counter that overflows: --signal pmu or cputime");
    if (g_cfg.rp_n)
        die("event-based sampling runs on live counters, not a replay");
    double ts = (double)g_cfg.ts_ns;
    if (g_cfg.signal == SIG_PMU) {
        for (int k = 0; k < 2; k++) {
            uint64_t thr = k ? g_cfg.thr_write : g_cfg.thr_read;
            g_cfg.ev_budget[k] = thr ? (uint64_t)((double)thr * ts / 1e9 / 64.0 + 0.999999) : 0;
        }
        return;
    }
    g_cfg.ev_budget[0] = (uint64_t)(g_cfg.thr_ratio * ts + 0.5);
    if (g_cfg.ev_budget[0] < 10000)   /* the kernel's shortest software-event period (perf_swevent_init_hrtimer) */
        die("event-based sampling on CPU time: the budget %.0f ns (threshold x Ts) is below the kernel's 10 us; "
            "use a longer --sample or a larger --threshold", g_cfg.thr_ratio * ts);
}

static void check_config(void)
{
    if (!g_cfg.out || !g_cfg.ts_ns || !g_n_units)
        die("--out, --sample-ns and --unit are required");
    if (g_cfg.law == LAW_FIXED && !g_cfg.s_ns)
        die("--suspend-ns is required");
    if (g_cfg.law == LAW_PROPORTIONAL && (!g_cfg.s_max_ns || g_cfg.s_min_ns > g_cfg.s_max_ns))
        die("the proportional law needs --suspend-max-ns >= --suspend-min-ns");
    if (g_cfg.signal == SIG_REPLAY && !g_cfg.rp_n)
        die("--signal replay needs --replay FILE");
    if (g_cfg.rp_n && (g_cfg.actuator != ACT_NONE || g_n_units != 1))
        die("replay runs in virtual time: one --unit and --actuator none");
    if (g_cfg.signal == SIG_SLACK && !g_cfg.crit)
        die("--signal slack needs --critical-page");
    if ((g_cfg.signal == SIG_NOISE || g_cfg.signal == SIG_CPUTIME) && g_cfg.thr_ratio <= 0)
        die("--signal %s needs --threshold-ratio-ppm", SIGNALS[g_cfg.signal]);
    if (g_cfg.signal == SIG_NOISE && (!g_cfg.noise_bytes || !g_cfg.noise_steps))
        die("--signal noise needs --noise-bytes and --noise-steps");
    if ((g_cfg.actuator == ACT_FILE || g_cfg.actuator == ACT_CFS) && (!g_cfg.act_on || !g_cfg.act_off))
        die("file and cfs actuators need --act-on and --act-off");
    if (g_cfg.actuator == ACT_CFS && g_cfg.cfs_period_us < 1000)
        die("--cfs-period-us must be at least 1000");
    if (g_cfg.actuator == ACT_RT && (g_cfg.prio <= 0 || g_cfg.rt_budget <= 0 || g_cfg.rt_budget >= 1))
        die("the rt actuator needs --fifo PRIO and an --rt-budget-ppm below 1000000");
    if (g_cfg.prio > 99)
        die("--fifo must be 1..99");
    if (g_cfg.event)
        event_budgets();
}

int main(int argc, char **argv)
{
    int c, check_cpu = -1;
    g_cfg.gain = 10.0;
    g_cfg.phase_first_on = 1;
    while ((c = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        if (c == O_LAYOUT)
            return mode_layout();
        if (c == O_CHECK_PMU)
            check_cpu = (int)parse_u64(optarg, "--check-pmu");
        else if (c == '?')
            usage();
        else
            parse_option(c, optarg);
    }
    if (check_cpu >= 0)
        return pmu_check(check_cpu);
    check_config();
    if (js_die_with_parent())
        return 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;  /* no SA_RESTART: interrupt sleeps */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    return run();
}
