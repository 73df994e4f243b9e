/*
 * jitterscope-chase: a latency-critical loop for `jitterscope protect`'s tests
 * and benchmarks.  Each iteration walks N steps of a random cyclic pointer
 * chain over a buffer (one dependent load per step, so the time is memory
 * latency and suffers from whatever contends for the shared cache), and
 * publishes one heartbeat with its latency through the report API.
 *
 * Released periodically (--period: absolute deadlines, latency = end minus
 * release, so wake-up delays count as they do for a frame pipeline) or back
 * to back (latency = the walk).  --deadline is declared in the report page:
 * the `slack` signal's reference.
 *
 * stdout: one JSON line at the end (iterations, mean, p50/p99/max latency).
 * Errors: one line on stderr, exit code 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "js_alloc.h"

#define JS_PROGRAM "jitterscope-chase"
#include "js_cli.h"
#include "js_chase.h"
#include "js_report.h"

#define MAX_KEPT 2000000u  /* latencies kept for the end line's percentiles */

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void sleep_until(int64_t t)
{
    struct timespec ts = {t / 1000000000LL, t % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !g_stop) {}
}

struct chase_opts {
    uint64_t bytes, steps, period, deadline, duration, iterations;
    int cpu, fifo;
    const char *report;
};

/* What one run collects: latencies (the first MAX_KEPT, for percentiles), their sum, deadline misses. */
struct chase_stats {
    int64_t *kept;
    uint64_t n, misses, sink;
    double sum;
};

static struct chase_opts parse_args(int argc, char **argv)
{
    struct chase_opts o = {.bytes = 8u << 20, .steps = 1000, .cpu = -1};
    enum { O_BUF = 1, O_STEPS, O_PERIOD, O_DEADLINE, O_DUR, O_ITER, O_CPU, O_FIFO, O_REPORT };
    static const struct option opts[] = {
        {"buffer", required_argument, 0, O_BUF}, {"steps", required_argument, 0, O_STEPS},
        {"period-ns", required_argument, 0, O_PERIOD}, {"deadline-ns", required_argument, 0, O_DEADLINE},
        {"duration-ns", required_argument, 0, O_DUR}, {"iterations", required_argument, 0, O_ITER},
        {"cpu", required_argument, 0, O_CPU}, {"fifo", required_argument, 0, O_FIFO},
        {"report", required_argument, 0, O_REPORT}, {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_BUF: o.bytes = parse_u64(optarg, "--buffer"); break;
        case O_STEPS: o.steps = parse_u64(optarg, "--steps"); break;
        case O_PERIOD: o.period = parse_u64(optarg, "--period-ns"); break;
        case O_DEADLINE: o.deadline = parse_u64(optarg, "--deadline-ns"); break;
        case O_DUR: o.duration = parse_u64(optarg, "--duration-ns"); break;
        case O_ITER: o.iterations = parse_u64(optarg, "--iterations"); break;
        case O_CPU: o.cpu = (int)parse_u64(optarg, "--cpu"); break;
        case O_FIFO: o.fifo = (int)parse_u64(optarg, "--fifo"); break;
        case O_REPORT: o.report = optarg; break;
        default:
            fputs("usage: jitterscope-chase [--buffer BYTES] [--steps N] [--period-ns P] [--deadline-ns D] "
                  "[--duration-ns D | --iterations N] [--cpu C] [--fifo PRIO] [--report PAGE]\n", stderr);
            exit(2);
        }
    }
    if (o.bytes < 4096 || o.bytes > (1ull << 34))
        die("--buffer must be 4 KiB to 16 GiB");
    if (!o.steps || o.steps > 1000000000ull)
        die("--steps must be 1 to 1e9");
    if (o.fifo > 99)
        die("--fifo must be 1..99");
    return o;
}

/* Pin, raise to SCHED_FIFO if asked, open the report page (declaring the deadline) and catch SIGINT/SIGTERM. */
static struct js_report_page *setup(const struct chase_opts *o)
{
    js_pin_process(o->cpu);
    if (o->fifo) {
        struct sched_param sp = {.sched_priority = o->fifo};
        if (sched_setscheduler(0, SCHED_FIFO, &sp))
            die("cannot use SCHED_FIFO %d: %s", o->fifo, strerror(errno));
    }
    int bad;
    struct js_report_page *rp = js_report_open(o->report, &bad);
    if (bad)
        die("%s: not a jitterscope report page", o->report ? o->report : getenv(JS_REPORT_ENV));
    if (rp)
        js_report_set_deadline(rp, (int64_t)o->deadline);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return rp;
}

/* The loop: released every period (or back to back), walk the chain, publish each latency as a heartbeat. */
static void chase(const struct chase_opts *o, const uint64_t *buf, struct js_report_page *rp, struct chase_stats *st)
{
    uint64_t idx = 0;
    int64_t t0 = js_report_now(), end = o->duration ? t0 + (int64_t)o->duration : INT64_MAX, release = t0;
    int64_t period = (int64_t)o->period;
    while (!g_stop && (!o->iterations || st->n < o->iterations)) {
        if (period) {
            release += period;
            if (release >= end)
                break;
            sleep_until(release);
            if (g_stop)
                break;
        } else if (js_report_now() >= end) {
            break;
        }
        int64_t start = period ? release : js_report_now();
        for (uint64_t k = 0; k < o->steps; k++)
            idx = buf[idx];
        int64_t done = js_report_now(), lat = done - start;
        if (rp)
            js_report_beat(rp, lat);
        if (st->n < MAX_KEPT)
            st->kept[st->n] = lat;
        st->misses += o->deadline && lat > (int64_t)o->deadline;
        st->sum += (double)lat;
        st->n++;
        if (period && done > release + period)  /* overran: skip to the next future release */
            release += ((done - release) / period) * period;
    }
    st->sink = idx & 1;
}

static void print_end(struct chase_stats *st)
{
    size_t k = st->n < MAX_KEPT ? st->n : MAX_KEPT;
    qsort(st->kept, k, sizeof *st->kept, cmp_i64);
    printf("{\"event\": \"end\", \"iterations\": %" PRIu64 ", \"mean_ns\": %.0f, \"p50_ns\": %lld, "
           "\"p99_ns\": %lld, \"max_ns\": %lld, \"deadline_misses\": %" PRIu64 ", \"sink\": %" PRIu64 "}\n",
           st->n, st->n ? st->sum / (double)st->n : 0.0, k ? (long long)st->kept[k / 2] : 0LL,
           k ? (long long)st->kept[(size_t)((double)k * 0.99)] : 0LL, k ? (long long)st->kept[k - 1] : 0LL,
           st->misses, st->sink);
}

int main(int argc, char **argv)
{
    struct chase_opts o = parse_args(argc, argv);
    struct js_report_page *rp = setup(&o);
    uint64_t *buf = js_chase_build(o.bytes, 0x2545F4914F6CDD1Dull);
    if (!buf)
        die("cannot allocate %" PRIu64 " bytes", o.bytes);
    struct chase_stats st = {.kept = js_malloc(MAX_KEPT * sizeof(int64_t))};
    mlockall(MCL_CURRENT);
    chase(&o, buf, rp, &st);
    print_end(&st);
    return 0;
}
