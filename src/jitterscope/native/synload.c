/*
 * jitterscope-synload: a Syn 'C' clone (the thesis, section 4.7.3), the
 * best-effort load of `jitterscope protect`'s tests and benchmarks.  It streams
 * reads, writes or both (mixed: a copy between the buffer's halves, Molka et
 * al.'s 50/50 scenario) over a buffer as fast as it can, and publishes the
 * bytes it moved through the report API (js_report.h) every 16 KiB, with the
 * time of that progress: exact ground truth for the controller's `report`
 * signal and for measuring when a suspension really stopped it.
 *
 * The buffer should exceed the private L2 and fit the LLC (thesis
 * configuration C): jitterscope passes half the LLC by default.
 *
 * stdout: one JSON line at the end with the bytes moved and the rate.
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
#include <time.h>
#include <unistd.h>

#define JS_PROGRAM "jitterscope-synload"
#include "js_cli.h"
#include "js_report.h"

#define CHUNK (16 * 1024)

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

static uint64_t read_chunk(const uint64_t *p)
{
    uint64_t acc = 0;
    for (size_t i = 0; i < CHUNK / 8; i++)
        acc += p[i];
    return acc;
}

static void write_chunk(uint64_t *p, uint64_t v)
{
    for (size_t i = 0; i < CHUNK / 8; i++)
        p[i] = v + i;
}

int main(int argc, char **argv)
{
    const char *mode = "mixed", *report = NULL;
    uint64_t bytes = 16u << 20, duration = 0;
    int cpu = -1;
    enum { O_MODE = 1, O_BUF, O_CPU, O_DUR, O_REPORT };
    static const struct option opts[] = {
        {"mode", required_argument, 0, O_MODE}, {"buffer", required_argument, 0, O_BUF},
        {"cpu", required_argument, 0, O_CPU}, {"duration-ns", required_argument, 0, O_DUR},
        {"report", required_argument, 0, O_REPORT}, {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_MODE: mode = optarg; break;
        case O_BUF: bytes = parse_u64(optarg, "--buffer"); break;
        case O_CPU: cpu = (int)parse_u64(optarg, "--cpu"); break;
        case O_DUR: duration = parse_u64(optarg, "--duration-ns"); break;
        case O_REPORT: report = optarg; break;
        default:
            fputs("usage: jitterscope-synload [--mode read|write|mixed] [--buffer BYTES] [--cpu C] "
                  "[--duration-ns D] [--report PAGE]\n", stderr);
            return 2;
        }
    }
    int m = !strcmp(mode, "read") ? 0 : !strcmp(mode, "write") ? 1 : !strcmp(mode, "mixed") ? 2 : -1;
    if (m < 0)
        die("mode must be read, write or mixed, got '%s'", mode);
    if (bytes < 2 * CHUNK || bytes > (1ull << 34))
        die("--buffer must be 32 KiB to 16 GiB");
    bytes -= bytes % (2 * CHUNK);
    js_pin_process(cpu);
    int bad;
    struct js_report_page *rp = js_report_open(report, &bad);
    if (bad)
        die("%s: not a jitterscope report page", report ? report : getenv(JS_REPORT_ENV));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    uint64_t *buf = aligned_alloc(4096, bytes);
    if (!buf)
        die("cannot allocate %" PRIu64 " bytes", bytes);
    memset(buf, 1, bytes);  /* resident before the first report */
    size_t chunks = bytes / CHUNK, half = chunks / 2, k = 0;
    uint64_t total_r = 0, total_w = 0, sink = 0;
    int64_t t0 = js_report_now(), end = duration ? t0 + (int64_t)duration : INT64_MAX;
    while (!g_stop) {
        uint64_t r = 0, w = 0;
        uint64_t *p = buf + (k % chunks) * (CHUNK / 8);
        if (m == 0) {
            sink += read_chunk(p);
            r = CHUNK;
        } else if (m == 1) {
            write_chunk(p, k);
            w = CHUNK;
        } else {  /* mixed: copy chunk i of the first half onto chunk i of the second */
            uint64_t *src = buf + (k % half) * (CHUNK / 8), *dst = src + half * (CHUNK / 8);
            memcpy(dst, src, CHUNK);
            r = w = CHUNK;
        }
        k++;
        total_r += r;
        total_w += w;
        if (rp)
            js_report_add(rp, r, w);
        if ((k & 63) == 0 && js_report_now() >= end)
            break;
    }
    double secs = (double)(js_report_now() - t0) / 1e9;
    printf("{\"event\": \"end\", \"mode\": \"%s\", \"buffer\": %" PRIu64 ", \"read_bytes\": %" PRIu64
           ", \"write_bytes\": %" PRIu64 ", \"seconds\": %.6f, \"bytes_per_s\": %.0f, \"sink\": %" PRIu64 "}\n",
           mode, bytes, total_r, total_w, secs, (double)(total_r + total_w) / secs, sink & 1);
    return 0;
}
