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

int main(int argc, char **argv)
{
    uint64_t bytes = 8u << 20, steps = 1000, period = 0, deadline = 0, duration = 0, iterations = 0;
    int cpu = -1, fifo = 0;
    const char *report = NULL;
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
        case O_BUF: bytes = parse_u64(optarg, "--buffer"); break;
        case O_STEPS: steps = parse_u64(optarg, "--steps"); break;
        case O_PERIOD: period = parse_u64(optarg, "--period-ns"); break;
        case O_DEADLINE: deadline = parse_u64(optarg, "--deadline-ns"); break;
        case O_DUR: duration = parse_u64(optarg, "--duration-ns"); break;
        case O_ITER: iterations = parse_u64(optarg, "--iterations"); break;
        case O_CPU: cpu = (int)parse_u64(optarg, "--cpu"); break;
        case O_FIFO: fifo = (int)parse_u64(optarg, "--fifo"); break;
        case O_REPORT: report = optarg; break;
        default:
            fputs("usage: jitterscope-chase [--buffer BYTES] [--steps N] [--period-ns P] [--deadline-ns D] "
                  "[--duration-ns D | --iterations N] [--cpu C] [--fifo PRIO] [--report PAGE]\n", stderr);
            return 2;
        }
    }
    if (bytes < 4096 || bytes > (1ull << 34))
        die("--buffer must be 4 KiB to 16 GiB");
    if (!steps || steps > 1000000000ull)
        die("--steps must be 1 to 1e9");
    if (fifo > 99)
        die("--fifo must be 1..99");
    js_pin_process(cpu);
    if (fifo) {
        struct sched_param sp = {.sched_priority = fifo};
        if (sched_setscheduler(0, SCHED_FIFO, &sp))
            die("cannot use SCHED_FIFO %d: %s", fifo, strerror(errno));
    }
    int bad;
    struct js_report_page *rp = js_report_open(report, &bad);
    if (bad)
        die("%s: not a jitterscope report page", report ? report : getenv(JS_REPORT_ENV));
    if (rp)
        js_report_set_deadline(rp, (int64_t)deadline);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    uint64_t *buf = js_chase_build(bytes, 0x2545F4914F6CDD1Dull);
    if (!buf)
        die("cannot allocate %" PRIu64 " bytes", bytes);
    int64_t *kept = malloc(MAX_KEPT * sizeof *kept);
    mlockall(MCL_CURRENT);
    uint64_t idx = 0, n = 0, misses = 0;
    double sum = 0;
    int64_t t0 = js_report_now(), end = duration ? t0 + (int64_t)duration : INT64_MAX, release = t0;
    while (!g_stop && (!iterations || n < iterations)) {
        if (period) {
            release += (int64_t)period;
            if (release >= end)
                break;
            sleep_until(release);
            if (g_stop)
                break;
        } else if (js_report_now() >= end) {
            break;
        }
        int64_t start = period ? release : js_report_now();
        for (uint64_t k = 0; k < steps; k++)
            idx = buf[idx];
        int64_t done = js_report_now(), lat = done - start;
        if (rp)
            js_report_beat(rp, lat);
        if (n < MAX_KEPT)
            kept[n] = lat;
        misses += deadline && lat > (int64_t)deadline;
        sum += (double)lat;
        n++;
        if (period && done > release + (int64_t)period)  /* overran: skip to the next future release */
            release += ((done - release) / (int64_t)period) * (int64_t)period;
    }
    size_t k = n < MAX_KEPT ? n : MAX_KEPT;
    qsort(kept, k, sizeof *kept, cmp_i64);
    printf("{\"event\": \"end\", \"iterations\": %" PRIu64 ", \"mean_ns\": %.0f, \"p50_ns\": %lld, "
           "\"p99_ns\": %lld, \"max_ns\": %lld, \"deadline_misses\": %" PRIu64 ", \"sink\": %" PRIu64 "}\n",
           n, n ? sum / (double)n : 0.0, k ? (long long)kept[k / 2] : 0LL,
           k ? (long long)kept[(size_t)((double)k * 0.99)] : 0LL, k ? (long long)kept[k - 1] : 0LL, misses,
           idx & 1);
    return 0;
}
