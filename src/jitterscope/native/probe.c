/*
 * jitterscope-probe: the selfish-detour loop.
 *
 * One thread per requested CPU, pinned, spins reading the TSC; every gap
 * between two consecutive reads longer than the threshold is a detour: time
 * the CPU spent on something other than this thread.  Detours go into a
 * per-thread single-producer/single-consumer ring; a writer thread (the main
 * thread, kept off the probed CPUs when there are others) drains the rings to
 * the output file every 10 ms, so memory stays bounded however long the run.
 * A full ring counts the detour as dropped: reported at the end, never silent.
 *
 * Protocol on stdout (one JSON object per line, flushed):
 *   {"event":"ready", ...}  once every thread is pinned and looping
 *   {"event":"end", ...}    per-CPU statistics when it stops
 * Errors go to stderr as one line "jitterscope-probe: ..." with exit code 2.
 *
 * Other modes: --layout (struct layouts as JSON), --calibrate MS (TSC Hz),
 * --bench-loop CPU (bare rdtsc loop vs this loop), --align-marker PATH N.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#include "js_alloc.h"

#define JS_PROGRAM "jitterscope-probe"
#include "js_cli.h"
#include "js_tsc.h"
#include "probe_records.h"

#define RING_RECORDS (1u << 16)   /* per CPU: 1.5 MiB, >0.5 s of back-to-back 1 us detours */
#define STOP_CHECK_MASK 1023u     /* look at the stop flag every 1024 iterations */
#define DRAIN_INTERVAL_NS 10000000L
#define PROBE_STACK (256 * 1024)  /* mlockall(MCL_FUTURE) locks whole stacks: keep them small */

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- per-CPU state: the ring and the loop's statistics ------------------ */

struct probe_thread {
    /* Producer-owned line. */
    _Atomic uint64_t head __attribute__((aligned(64)));
    uint64_t dropped;
    /* Consumer-owned line. */
    _Atomic uint64_t tail __attribute__((aligned(64)));
    /* Read-mostly. */
    struct js_detour *ring __attribute__((aligned(64)));
    uint32_t cpu;
    uint64_t threshold;
    int fifo_prio;
    pthread_t thread;
    pid_t tid;
    char comm[16];
    char error[160];
    /* Results, written by the thread before it exits. */
    uint64_t iterations, first_tsc, last_tsc, detours, detour_cycles, min_cycles;
    _Atomic int looping;
};

static _Atomic int g_stop;
static _Atomic int g_go;
static _Atomic int g_ready;

static void on_signal(int sig) { (void)sig; atomic_store(&g_stop, 1); }

/* The detour path: cold, out of line so the hot loop stays tight. */
static __attribute__((noinline, cold)) void record_detour(struct probe_thread *t, uint64_t start, uint64_t d)
{
    t->detours++;
    t->detour_cycles += d;
    uint64_t h = atomic_load_explicit(&t->head, memory_order_relaxed);
    uint64_t tl = atomic_load_explicit(&t->tail, memory_order_acquire);
    if (h - tl >= RING_RECORDS) {
        t->dropped++;
        return;
    }
    struct js_detour *r = &t->ring[h & (RING_RECORDS - 1)];
    r->cpu = t->cpu;
    r->flags = 0;
    r->start_tsc = start;
    r->duration_tsc = d;
    atomic_store_explicit(&t->head, h + 1, memory_order_release);
}

/*
 * The selfish-detour loop.  Per iteration: one rdtsc, a subtraction, a min,
 * a compare against the threshold and a counter test; the stop flag is read
 * only every 1024 iterations.  Runs until the stop flag or max_iter.
 */
static __attribute__((noinline)) void probe_loop(struct probe_thread *t, uint64_t max_iter)
{
    const uint64_t thr = t->threshold;
    uint64_t min_c = UINT64_MAX, iter = 0;
    uint64_t first = js_rdtsc(), prev = first;
    for (;;) {
        uint64_t now = js_rdtsc();
        uint64_t d = now - prev;
        if (d < min_c)
            min_c = d;
        if (unlikely(d > thr))
            record_detour(t, prev, d);
        prev = now;
        if (unlikely((++iter & STOP_CHECK_MASK) == 0)) {
            if (atomic_load_explicit(&g_stop, memory_order_relaxed) || iter >= max_iter)
                break;
        }
    }
    t->iterations = iter;
    t->first_tsc = first;
    t->last_tsc = prev;
    t->min_cycles = min_c;
}

/* The bare loop the probe loop is compared with: rdtsc and nothing else it can skip. */
static __attribute__((noinline)) uint64_t bare_loop(uint64_t n)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; i++)
        acc += js_rdtsc();
    return acc;
}

/* Ordered clock reads, measured only to justify using plain rdtsc in the loop. */
static __attribute__((noinline)) uint64_t bare_rdtscp_loop(uint64_t n)
{
    uint64_t acc = 0;
    unsigned aux;
    for (uint64_t i = 0; i < n; i++)
        acc += __rdtscp(&aux);
    return acc;
}

static __attribute__((noinline)) uint64_t bare_lfence_loop(uint64_t n)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; i++) {
        _mm_lfence();
        acc += __rdtsc();
    }
    return acc;
}

static double cycles_per(uint64_t (*loop)(uint64_t), uint64_t n)
{
    uint64_t a = js_rdtsc_ordered();
    volatile uint64_t sink = loop(n);
    (void)sink;
    return (double)(js_rdtsc_ordered() - a) / (double)n;
}

static int pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *probe_main(void *arg)
{
    struct probe_thread *t = arg;
    t->tid = (pid_t)syscall(SYS_gettid);
    int err = pin_self((int)t->cpu);
    if (err) {
        snprintf(t->error, sizeof t->error, "cannot pin a thread to CPU %u: %s", t->cpu, strerror(err));
        atomic_fetch_add(&g_ready, 1);
        return NULL;
    }
    snprintf(t->comm, sizeof t->comm, "js-probe/%u", t->cpu);
    prctl(PR_SET_NAME, t->comm, 0, 0, 0);
    if (t->fifo_prio > 0) {
        struct sched_param sp = {.sched_priority = t->fifo_prio};
        err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (err) {
            snprintf(t->error, sizeof t->error, "cannot use SCHED_FIFO priority %d: %s",
                     t->fifo_prio, strerror(err));
            atomic_fetch_add(&g_ready, 1);
            return NULL;
        }
    }
    /* Touch the ring now so the first detours do not page-fault. */
    memset(t->ring, 0, RING_RECORDS * sizeof *t->ring);
    atomic_fetch_add(&g_ready, 1);
    while (!atomic_load(&g_go)) {
        if (atomic_load(&g_stop))
            return NULL;
        __builtin_ia32_pause();
    }
    atomic_store(&t->looping, 1);
    probe_loop(t, UINT64_MAX);
    return NULL;
}

/* ---- writer: drain rings to the file ------------------------------------ */

static uint64_t drain(struct probe_thread *t, int fd, const char *path)
{
    uint64_t h = atomic_load_explicit(&t->head, memory_order_acquire);
    uint64_t tl = atomic_load_explicit(&t->tail, memory_order_relaxed);
    uint64_t n = h - tl;
    if (!n)
        return 0;
    uint64_t i = tl & (RING_RECORDS - 1);
    uint64_t first = n < RING_RECORDS - i ? n : RING_RECORDS - i;
    js_write_all(fd, &t->ring[i], first * sizeof(struct js_detour), path);
    if (n > first)
        js_write_all(fd, &t->ring[0], (n - first) * sizeof(struct js_detour), path);
    atomic_store_explicit(&t->tail, h, memory_order_release);
    return n;
}

/* ---- argument helpers ---------------------------------------------------- */

static int parse_cpus(const char *s, int *out, int max)
{
    int n = 0;
    char *copy = js_strdup(s), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long lo = strtol(tok, &end, 10), hi = lo;
        if (end == tok)
            die("malformed CPU list '%s'", s);
        if (*end == '-') {
            char *e2;
            hi = strtol(end + 1, &e2, 10);
            if (e2 == end + 1 || *e2)
                die("malformed CPU list '%s'", s);
        } else if (*end) {
            die("malformed CPU list '%s'", s);
        }
        if (lo < 0 || hi < lo || hi >= CPU_SETSIZE)
            die("CPU range '%s' out of range", tok);
        for (long c = lo; c <= hi; c++) {
            for (int k = 0; k < n; k++)
                if (out[k] == c)
                    goto next;
            if (n == max)
                die("too many CPUs");
            out[n++] = (int)c;
        next:;
        }
    }
    free(copy);
    if (!n)
        die("empty CPU list");
    return n;
}

/* ---- modes ---------------------------------------------------------------- */

#define FIELD(S, F) printf("\"%s\": {\"offset\": %zu, \"size\": %zu}", #F, offsetof(struct S, F), \
                           sizeof(((struct S *)0)->F))

static int mode_layout(void)
{
    printf("{\"magic\": \"%s\", \"version\": %u, \"structs\": {", JS_PROBE_MAGIC, JS_PROBE_VERSION);
    printf("\"js_file_header\": {\"size\": %zu, \"fields\": {", sizeof(struct js_file_header));
    FIELD(js_file_header, magic); printf(", ");
    FIELD(js_file_header, version); printf(", ");
    FIELD(js_file_header, header_size); printf(", ");
    FIELD(js_file_header, record_size); printf(", ");
    FIELD(js_file_header, flags); printf(", ");
    FIELD(js_file_header, tsc_hz); printf(", ");
    FIELD(js_file_header, t0_tsc); printf(", ");
    FIELD(js_file_header, n_records); printf(", ");
    FIELD(js_file_header, dropped); printf(", ");
    FIELD(js_file_header, reserved);
    printf("}}, \"js_detour\": {\"size\": %zu, \"fields\": {", sizeof(struct js_detour));
    FIELD(js_detour, cpu); printf(", ");
    FIELD(js_detour, flags); printf(", ");
    FIELD(js_detour, start_tsc); printf(", ");
    FIELD(js_detour, duration_tsc);
    printf("}}}, \"flags\": {\"JS_FILE_COMPLETE\": %u}}\n", JS_FILE_COMPLETE);
    return 0;
}

static int mode_calibrate(int ms)
{
    if (ms < 10 || ms > 10000)
        die("--calibrate wants 10..10000 ms");
    double hz = js_calibrate_tsc_hz(ms);
    printf("{\"tsc_hz\": %.3f, \"method\": \"CLOCK_MONOTONIC_RAW\", \"interval_ms\": %d, "
           "\"cpuid_hz\": %.0f}\n", hz, ms, js_cpuid_tsc_hz());
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int mode_bench(int cpu, uint64_t iters, int repeats, uint64_t threshold)
{
    if (pin_self(cpu))
        die("cannot pin to CPU %d", cpu);
    if (repeats < 1 || repeats > 1000 || iters < 1024)
        die("--bench-repeats 1..1000 and --bench-iters >= 1024");
    struct probe_thread *t = aligned_alloc(64, sizeof *t);
    memset(t, 0, sizeof *t);
    t->ring = aligned_alloc(64, RING_RECORDS * sizeof *t->ring);
    memset(t->ring, 0, RING_RECORDS * sizeof *t->ring);
    t->cpu = (uint32_t)cpu;
    t->threshold = threshold;
    double *bare = js_calloc((size_t)repeats, sizeof *bare), *probe = js_calloc((size_t)repeats, sizeof *probe);
    volatile uint64_t sink = bare_loop(iters / 8);  /* warm up */
    for (int r = 0; r < repeats; r++) {
        /* Alternate which goes first so drift (frequency, neighbours) hits both alike. */
        for (int k = 0; k < 2; k++) {
            if ((k == 0) == (r % 2 == 0)) {
                uint64_t a = js_rdtsc_ordered();
                sink += bare_loop(iters);
                uint64_t b = js_rdtsc_ordered();
                bare[r] = (double)(b - a) / (double)iters;
            } else {
                atomic_store(&t->head, 0);
                atomic_store(&t->tail, 0);
                probe_loop(t, iters);
                probe[r] = (double)(t->last_tsc - t->first_tsc) / (double)t->iterations;
            }
        }
    }
    (void)sink;
    /* The fenced alternatives, a few repeats each (medians). */
    double v_rdtscp[5], v_lfence[5];
    for (int r = 0; r < 5; r++) {
        v_rdtscp[r] = cycles_per(bare_rdtscp_loop, iters / 4);
        v_lfence[r] = cycles_per(bare_lfence_loop, iters / 4);
    }
    qsort(v_rdtscp, 5, sizeof(double), cmp_double);
    qsort(v_lfence, 5, sizeof(double), cmp_double);
    printf("{\"cpu\": %d, \"iterations\": %" PRIu64 ", \"repeats\": %d, \"threshold_cycles\": %" PRIu64
           ", \"bare_cycles\": [", cpu, iters, repeats, threshold);
    for (int r = 0; r < repeats; r++)
        printf("%s%.4f", r ? ", " : "", bare[r]);
    printf("], \"probe_cycles\": [");
    for (int r = 0; r < repeats; r++)
        printf("%s%.4f", r ? ", " : "", probe[r]);
    /* Paired ratios (each repeat's probe vs its neighbouring bare run) resist
     * slow drift; the fastest repeats resist other tasks' interference. */
    double *pair = js_calloc((size_t)repeats, sizeof *pair);
    for (int r = 0; r < repeats; r++)
        pair[r] = probe[r] / bare[r];
    qsort(pair, (size_t)repeats, sizeof *pair, cmp_double);
    qsort(bare, (size_t)repeats, sizeof *bare, cmp_double);
    qsort(probe, (size_t)repeats, sizeof *probe, cmp_double);
    double bm = bare[repeats / 2], pm = probe[repeats / 2];
    printf("], \"bare_median\": %.4f, \"probe_median\": %.4f, \"bare_min\": %.4f, \"probe_min\": %.4f, "
           "\"ratio_paired_median\": %.4f, \"ratio_min\": %.4f, \"probe_min_loop_cycles\": %" PRIu64
           ", \"variants_min\": {\"rdtsc\": %.4f, \"rdtscp\": %.4f, \"lfence_rdtsc\": %.4f}}\n",
           bm, pm, bare[0], probe[0], pair[repeats / 2], probe[0] / bare[0], t->min_cycles,
           bare[0], v_rdtscp[0], v_lfence[0]);
    return 0;
}

static int mode_align(const char *path, long n)
{
    if (n < 1 || n > 1000000)
        die("--align-marker count must be 1..1000000");
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        die("cannot open %s: %s", path, strerror(errno));
    uint64_t *before = js_malloc((size_t)n * sizeof *before), *after = js_malloc((size_t)n * sizeof *after);
    char buf[64];
    for (long i = 0; i < n; i++) {
        /* Read the TSC, then write it at once: the kernel stamps the event
         * inside this write(), so before <= kernel stamp <= after. */
        uint64_t b = js_rdtsc_ordered();
        int len = snprintf(buf, sizeof buf, "jitterscope-align %" PRIu64 "\n", b);
        if (write(fd, buf, (size_t)len) != len)
            die("writing %s: %s", path, strerror(errno));
        after[i] = js_rdtsc_ordered();
        before[i] = b;
    }
    close(fd);
    printf("{\"event\": \"align\", \"markers\": [");
    for (long i = 0; i < n; i++)
        printf("%s[%" PRIu64 ", %" PRIu64 "]", i ? ", " : "", before[i], after[i]);
    printf("]}\n");
    return 0;
}

/* ---- the probe run ---------------------------------------------------------- */

static void usage(void)
{
    fputs("usage: jitterscope-probe --cpus LIST --threshold-cycles N --out FILE "
          "[--duration-ns D] [--fifo PRIO] [--tsc-hz HZ] [--end-file FILE]\n"
          "       [--trace-off-if-orphaned TRACING_ON_FILE]\n"
          "       jitterscope-probe --layout | --calibrate MS | "
          "--bench-loop CPU [--bench-iters N] [--bench-repeats R] | --align-marker PATH N\n", stderr);
    exit(2);
}

/* Whether jitterscope died.  While its threads exit one by one the probe is handed
 * to a sibling thread (getppid() unchanged), but the main thread is a zombie then. */
static int parent_gone(pid_t parent)
{
    if (getppid() != parent)
        return 1;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)parent);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *end = strrchr(buf, ')');
    return !end || end[1] != ' ' || end[2] == 'Z' || end[2] == 'X';
}

/* The end line: the run's totals and every probe thread's loop statistics. */
static void print_end(FILE *f, const struct probe_thread *th, int n, uint64_t end_tsc, uint64_t written,
                      uint64_t dropped, uint64_t threshold)
{
    fprintf(f, "{\"event\": \"end\", \"end_tsc\": %" PRIu64 ", \"records\": %" PRIu64 ", \"dropped\": %" PRIu64
            ", \"threshold_cycles\": %" PRIu64 ", \"cpus\": {", end_tsc, written, dropped, threshold);
    for (int i = 0; i < n; i++) {
        const struct probe_thread *t = &th[i];
        fprintf(f, "%s\"%u\": {\"iterations\": %" PRIu64 ", \"first_tsc\": %" PRIu64 ", \"last_tsc\": %" PRIu64
                ", \"detours\": %" PRIu64 ", \"dropped\": %" PRIu64 ", \"detour_cycles\": %" PRIu64
                ", \"min_loop_cycles\": %" PRIu64 ", \"tid\": %d}",
                i ? ", " : "", t->cpu, t->iterations, t->first_tsc, t->last_tsc, t->detours, t->dropped,
                t->detour_cycles, t->min_cycles == UINT64_MAX ? 0 : t->min_cycles, (int)t->tid);
    }
    fprintf(f, "}}\n");
}

/* ---- main: options, threads, the writer loop, the finished file -------- */

struct probe_args {
    const char *cpus_arg, *out, *align_path, *end_file, *trace_off;
    uint64_t threshold, duration_ns, bench_iters, tsc_hz;
    int fifo, have_threshold, bench_cpu, bench_repeats, calibrate_ms;
};

static void parse_args(int argc, char **argv, struct probe_args *a)
{
    enum { O_CPUS = 1, O_THR, O_OUT, O_DUR, O_FIFO, O_LAYOUT, O_CAL, O_BENCH, O_BITERS, O_BREP, O_ALIGN, O_HZ, O_END,
           O_TOFF };
    static const struct option opts[] = {
        {"cpus", required_argument, 0, O_CPUS},
        {"threshold-cycles", required_argument, 0, O_THR},
        {"out", required_argument, 0, O_OUT},
        {"duration-ns", required_argument, 0, O_DUR},
        {"fifo", required_argument, 0, O_FIFO},
        {"tsc-hz", required_argument, 0, O_HZ},
        {"layout", no_argument, 0, O_LAYOUT},
        {"calibrate", required_argument, 0, O_CAL},
        {"bench-loop", required_argument, 0, O_BENCH},
        {"bench-iters", required_argument, 0, O_BITERS},
        {"bench-repeats", required_argument, 0, O_BREP},
        {"align-marker", required_argument, 0, O_ALIGN},
        {"end-file", required_argument, 0, O_END},
        {"trace-off-if-orphaned", required_argument, 0, O_TOFF},
        {0, 0, 0, 0},
    };
    memset(a, 0, sizeof *a);
    a->bench_iters = 20000000;
    a->bench_cpu = -1;
    a->bench_repeats = 11;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_CPUS: a->cpus_arg = optarg; break;
        case O_THR: a->threshold = parse_u64(optarg, "--threshold-cycles"); a->have_threshold = 1; break;
        case O_OUT: a->out = optarg; break;
        case O_DUR: a->duration_ns = parse_u64(optarg, "--duration-ns"); break;
        case O_FIFO: a->fifo = (int)parse_u64(optarg, "--fifo"); break;
        case O_HZ: a->tsc_hz = parse_u64(optarg, "--tsc-hz"); break;
        case O_LAYOUT: exit(mode_layout());
        case O_CAL: a->calibrate_ms = (int)parse_u64(optarg, "--calibrate"); break;
        case O_BENCH: a->bench_cpu = (int)parse_u64(optarg, "--bench-loop"); break;
        case O_BITERS: a->bench_iters = parse_u64(optarg, "--bench-iters"); break;
        case O_BREP: a->bench_repeats = (int)parse_u64(optarg, "--bench-repeats"); break;
        case O_ALIGN: a->align_path = optarg; break;
        case O_END: a->end_file = optarg; break;
        case O_TOFF: a->trace_off = optarg; break;
        default: usage();
        }
    }
}

/* The modes that are not a measurement (calibration, loop benchmark, clock alignment): their exit
 * code, or -1 when the arguments ask for a measurement. */
static int other_mode(const struct probe_args *a, int argc, char **argv)
{
    if (a->calibrate_ms)
        return mode_calibrate(a->calibrate_ms);
    if (a->bench_cpu >= 0)
        return mode_bench(a->bench_cpu, a->bench_iters, a->bench_repeats, a->have_threshold ? a->threshold : 2000);
    if (a->align_path) {
        if (optind >= argc)
            usage();
        return mode_align(a->align_path, (long)parse_u64(argv[optind], "--align-marker count"));
    }
    if (!a->cpus_arg || !a->out || !a->have_threshold)
        usage();
    if (a->threshold < 1)
        die("--threshold-cycles must be at least 1");
    if (a->fifo < 0 || a->fifo > 99)
        die("--fifo priority must be 1..99");
    return -1;
}

/* One probe thread per CPU, created with the stop signals blocked so that only the main
 * (writer) thread receives them. */
static struct probe_thread *start_threads(const int *cpus, int n, const struct probe_args *a)
{
    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);  /* a closed terminal ends the run like Ctrl-C: the file is finished */
    pthread_sigmask(SIG_BLOCK, &sigs, &old);

    struct probe_thread *th = js_aligned_zalloc(64, (size_t)n * sizeof *th);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, PROBE_STACK);
    for (int i = 0; i < n; i++) {
        th[i].cpu = (uint32_t)cpus[i];
        th[i].threshold = a->threshold;
        th[i].fifo_prio = a->fifo;
        th[i].ring = aligned_alloc(64, RING_RECORDS * sizeof(struct js_detour));
        if (!th[i].ring)
            die("out of memory for the rings");
        int err = pthread_create(&th[i].thread, &attr, probe_main, &th[i]);
        if (err)
            die("cannot create a probe thread: %s", strerror(err));
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return th;
}

/* Wait until every thread is pinned and set up (or one failed). */
static void wait_ready(const struct probe_thread *th, int n)
{
    int64_t deadline = js_ns(CLOCK_MONOTONIC) + 10LL * 1000000000LL;
    while (atomic_load(&g_ready) < n) {
        if (js_ns(CLOCK_MONOTONIC) > deadline)
            die("probe threads did not start within 10 s");
        usleep(1000);
    }
    for (int i = 0; i < n; i++)
        if (th[i].error[0]) {
            atomic_store(&g_stop, 1);
            die("%s", th[i].error);
        }
}

/* Write the header, release every thread at t0 and say so on stdout (the ready line); return
 * the monotonic time at which the last of them began to loop (the duration counts from there). */
static int64_t release(struct probe_thread *th, int n, int fd, struct js_file_header *hdr, const struct probe_args *a,
                    int mlocked, int writer_pinned)
{
    memset(hdr, 0, sizeof *hdr);
    memcpy(hdr->magic, JS_PROBE_MAGIC, sizeof JS_PROBE_MAGIC);
    hdr->version = JS_PROBE_VERSION;
    hdr->header_size = sizeof *hdr;
    hdr->record_size = sizeof(struct js_detour);
    hdr->tsc_hz = a->tsc_hz;
    hdr->t0_tsc = js_rdtsc_ordered();
    js_write_all(fd, hdr, sizeof *hdr, a->out);
    atomic_store(&g_go, 1);
    /* A thread stopped before its first loop (jitterscope died at start-up: PR_SET_PDEATHSIG) never
     * loops: waiting for it alone would keep this process sleeping for ever, orphaned. */
    for (int i = 0; i < n; i++)
        while (!atomic_load(&th[i].looping) && !atomic_load(&g_stop))
            usleep(100);
    /* The duration counts once every thread loops: a thread held off its CPU after go (a busy host)
     * would otherwise start late and measure less than the duration asked for. */
    int64_t start_ns = js_ns(CLOCK_MONOTONIC);

    printf("{\"event\": \"ready\", \"pid\": %d, \"t0_tsc\": %" PRIu64 ", \"mlocked\": %s, "
           "\"writer_pinned\": %s, \"threads\": [",
           (int)getpid(), hdr->t0_tsc, mlocked ? "true" : "false", writer_pinned ? "true" : "false");
    for (int i = 0; i < n; i++)
        printf("%s{\"cpu\": %u, \"tid\": %d, \"comm\": \"%s\"}", i ? ", " : "", th[i].cpu, (int)th[i].tid,
               th[i].comm);
    printf("]}\n");
    fflush(stdout);
    return start_ns;
}

/* The writer loop: drain every ring each DRAIN_INTERVAL_NS until stopped or the duration is up. */
static uint64_t drain_until_stop(struct probe_thread *th, int n, int fd, const struct probe_args *a,
                                 int64_t start_ns)
{
    uint64_t written = 0;
    while (!atomic_load(&g_stop)) {
        struct timespec d = {0, DRAIN_INTERVAL_NS};
        nanosleep(&d, NULL);  /* EINTR on a signal: fine, the loop re-checks */
        for (int i = 0; i < n; i++)
            written += drain(&th[i], fd, a->out);
        if (a->duration_ns && js_ns(CLOCK_MONOTONIC) - start_ns >= (int64_t)a->duration_ns)
            break;
    }
    return written;
}

/* jitterscope was killed: its trace reader is gone, so stop the kernel trace now, before newer
 * events overwrite pages not yet read; recovery saves the rest. */
static void stop_trace_if_orphaned(const char *trace_off, pid_t parent)
{
    if (!trace_off || !parent_gone(parent))
        return;
    int tfd = open(trace_off, O_WRONLY | O_CLOEXEC);
    if (tfd >= 0) {
        if (write(tfd, "0", 1) != 1)
            fprintf(stderr, "jitterscope-probe: warning: cannot stop tracing at %s\n", trace_off);
        close(tfd);
    }
}

/* The end line also goes to --end-file (written whole, then renamed): if jitterscope itself was
 * killed, the run's statistics survive with the records. */
static void write_end_file(const char *end_file, const struct probe_thread *th, int n, uint64_t end_tsc,
                           uint64_t written, uint64_t dropped, uint64_t threshold)
{
    if (!end_file)
        return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", end_file);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    print_end(f, th, n, end_tsc, written, dropped, threshold);
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0 || !ok || rename(tmp, end_file) != 0) {
        fprintf(stderr, "jitterscope-probe: warning: cannot write %s: %s\n", end_file, strerror(errno));
        unlink(tmp);
    }
}

int main(int argc, char **argv)
{
    struct probe_args a;
    parse_args(argc, argv, &a);
    int mode = other_mode(&a, argc, argv);
    if (mode >= 0)
        return mode;

    pid_t parent = getppid();
    if (js_die_with_parent())  /* a killed `measure` must not leave a probe spinning */
        return 2;

    int cpus[CPU_SETSIZE];
    int n = parse_cpus(a.cpus_arg, cpus, CPU_SETSIZE);
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    for (int i = 0; i < n; i++)
        if (!CPU_ISSET(cpus[i], &allowed))
            die("CPU %d is offline or not in this process's allowed CPUs", cpus[i]);

    int mlocked = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
    if (!mlocked)
        fprintf(stderr, "jitterscope-probe: warning: memory not locked (%s); page faults may show as detours\n",
                strerror(errno));

    int fd = open(a.out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        die("cannot create %s: %s", a.out, strerror(errno));

    struct probe_thread *th = start_threads(cpus, n, &a);

    /* The writer runs on the CPUs not probed, when there are any. */
    cpu_set_t wset = allowed;
    for (int i = 0; i < n; i++)
        CPU_CLR(cpus[i], &wset);
    int writer_pinned = CPU_COUNT(&wset) > 0 && sched_setaffinity(0, sizeof wset, &wset) == 0;
    prctl(PR_SET_NAME, "js-probe-writer", 0, 0, 0);

    wait_ready(th, n);
    struct js_file_header hdr;
    int64_t start_ns = release(th, n, fd, &hdr, &a, mlocked, writer_pinned);
    uint64_t written = drain_until_stop(th, n, fd, &a, start_ns);
    stop_trace_if_orphaned(a.trace_off, parent);

    atomic_store(&g_stop, 1);
    uint64_t dropped = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i].thread, NULL);
        written += drain(&th[i], fd, a.out);
        dropped += th[i].dropped;
    }
    uint64_t end_tsc = js_rdtsc_ordered();  /* after every thread's last read */
    hdr.flags = JS_FILE_COMPLETE;
    hdr.n_records = written;
    hdr.dropped = dropped;
    if (pwrite(fd, &hdr, sizeof hdr, 0) != sizeof hdr || fsync(fd) != 0 || close(fd) != 0)
        die("finishing %s: %s", a.out, strerror(errno));

    write_end_file(a.end_file, th, n, end_tsc, written, dropped, a.threshold);
    print_end(stdout, th, n, end_tsc, written, dropped, a.threshold);
    fflush(stdout);
    return 0;
}
