/*
 * jitterscope-cachebuster: Knauerhase et al. 2008's microbenchmark "cb" (spec B.3), a
 * sibling of jitterscope-synload.  It "consumes as much cache as possible as
 * quickly as possible" and "deliberately modifies memory": a read-modify-write
 * of every 64-byte line of its buffer, in a scrambled order (line i of a pass
 * is i x an odd multiplier modulo the power-of-two line count, so successive
 * lines are pages apart and no prefetcher follows).  Size the buffer to fit
 * the LLC alone and thrash it with a second copy (about 3/4 of a 32 MiB L3).
 *
 * It reports its own throughput (the VM has no PMU): through the report API
 * (js_report.h, one op = 4096 line updates) and on stdout at the end; it
 * publishes an oracle cache weight of 1 (--weight) through the place API.
 *
 * stdout: one JSON line at the end.  --layout: the place page's layout (JSON).
 * Errors: one line on stderr, exit code 2.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#define JS_PROGRAM "jitterscope-cachebuster"
#include "js_cli.h"
#include "js_place.h"
#include "js_report.h"

#define LINE 64
#define BATCH 4096   /* line updates per report op */

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

static void layout(void)
{
    printf("{\"size\": %zu, \"magic\": %zu, \"version\": %zu, \"pid\": %zu, \"last_fault_cpu\": %zu, "
           "\"weight_ppm\": %zu, \"specials\": %zu, \"faults\": %zu}\n", sizeof(struct js_place_page),
           offsetof(struct js_place_page, magic), offsetof(struct js_place_page, version),
           offsetof(struct js_place_page, pid), offsetof(struct js_place_page, last_fault_cpu),
           offsetof(struct js_place_page, weight_ppm), offsetof(struct js_place_page, specials),
           offsetof(struct js_place_page, faults));
}

int main(int argc, char **argv)
{
    uint64_t bytes = 24u << 20, duration = 0;
    int cpu = -1;
    double weight = 1.0;
    const char *report = NULL;
    enum { O_BUF = 1, O_CPU, O_DUR, O_REPORT, O_WEIGHT, O_LAYOUT };
    static const struct option opts[] = {
        {"buffer", required_argument, 0, O_BUF}, {"cpu", required_argument, 0, O_CPU},
        {"duration-ns", required_argument, 0, O_DUR}, {"report", required_argument, 0, O_REPORT},
        {"weight", required_argument, 0, O_WEIGHT}, {"layout", no_argument, 0, O_LAYOUT}, {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_BUF: bytes = parse_u64(optarg, "--buffer"); break;
        case O_CPU: cpu = (int)parse_u64(optarg, "--cpu"); break;
        case O_DUR: duration = parse_u64(optarg, "--duration-ns"); break;
        case O_REPORT: report = optarg; break;
        case O_WEIGHT: weight = atof(optarg); break;
        case O_LAYOUT: layout(); return 0;
        default:
            fputs("usage: jitterscope-cachebuster [--buffer BYTES] [--cpu C] [--duration-ns D] [--report PAGE] "
                  "[--weight W] [--layout]\n", stderr);
            return 2;
        }
    }
    if (bytes < 64 * 1024 || bytes > (1ull << 34))
        die("--buffer must be 64 KiB to 16 GiB");
    uint64_t lines = bytes / LINE, span = 1;
    while (span < lines)   /* a power of two: the scrambled order is a permutation of it */
        span *= 2;
    js_pin_process(cpu);
    js_die_with_parent();
    int bad;
    struct js_report_page *rp = js_report_open(report, &bad);
    if (bad)
        die("%s: not a jitterscope report page", report ? report : getenv(JS_REPORT_ENV));
    js_place_attach();
    js_place_weight(weight);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    uint8_t *buf = aligned_alloc(4096, lines * LINE);
    if (!buf)
        die("cannot allocate %" PRIu64 " bytes", lines * LINE);
    memset(buf, 1, lines * LINE);
    const uint64_t mult = 0x9E3779B97F4A7C15ull | 1, mask = span - 1;
    uint64_t i = 0, done = 0;
    int64_t t0 = js_report_now(), end = duration ? t0 + (int64_t)duration : INT64_MAX;
    while (!g_stop) {
        for (int k = 0; k < BATCH; i++) {
            uint64_t line = (i * mult) & mask;
            if (line >= lines)
                continue;
            uint64_t *p = (uint64_t *)(buf + line * LINE);
            *p = *p * 3 + i;    /* read-modify-write: the line goes back dirty */
            k++;
        }
        done += BATCH;
        if (rp)
            js_report_add(rp, BATCH * LINE, BATCH * LINE);
        if (js_report_now() >= end)
            break;
    }
    double secs = (double)(js_report_now() - t0) / 1e9;
    printf("{\"event\": \"end\", \"program\": \"cachebuster\", \"buffer\": %" PRIu64 ", \"lines\": %" PRIu64
           ", \"seconds\": %.6f, \"lines_per_s\": %.0f, \"sink\": %d}\n", lines * LINE, done, secs,
           (double)done / secs, buf[0] & 1);
    return 0;
}
