/*
 * jitterscope-spinloop: Knauerhase et al. 2008's microbenchmark "sl" (spec B.3), a sibling
 * of jitterscope-synload: register-only arithmetic, no memory traffic.  It
 * publishes an oracle cache weight of 0 (--weight) and its iterations through
 * the report API (one op = 2^20 loop iterations).
 *
 * --special ON:OFF   alternate ON ms of "special" (floating-point) work, each
 *                    iteration announced with js_special_op() (OBS-F's marker:
 *                    the emulated fault on a LITTLE CPU), and OFF ms integer-only
 * --pingpong N       instead: N round trips over two pipes with a child on the
 *                    same CPU (two context switches each); prints ns per switch.
 *
 * stdout: one JSON line at the end.  Errors: one line on stderr, exit code 2.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/wait.h>

#define JS_PROGRAM "jitterscope-spinloop"
#include "js_cli.h"
#include "js_place.h"
#include "js_report.h"

#define BATCH (1u << 20)

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

static int pingpong(uint64_t n)
{
    int ab[2], ba[2];
    if (pipe(ab) || pipe(ba))
        die("pipe: %s", strerror(errno));
    pid_t child = fork();
    if (child < 0)
        die("fork: %s", strerror(errno));
    char b = 0;
    if (child == 0) {
        for (uint64_t k = 0; k < n; k++)
            if (read(ab[0], &b, 1) != 1 || write(ba[1], &b, 1) != 1)
                _exit(1);
        _exit(0);
    }
    int64_t t0 = js_report_now();
    for (uint64_t k = 0; k < n; k++)
        if (write(ab[1], &b, 1) != 1 || read(ba[0], &b, 1) != 1)
            die("ping-pong: the child ended");
    int64_t dt = js_report_now() - t0;
    waitpid(child, NULL, 0);
    printf("{\"event\": \"end\", \"program\": \"pingpong\", \"round_trips\": %" PRIu64 ", \"seconds\": %.6f, "
           "\"ns_per_switch\": %.1f}\n", n, dt / 1e9, (double)dt / (2.0 * (double)n));
    return 0;
}

struct spin_opts {
    uint64_t duration, on_ms, off_ms, rounds;
    int cpu;
    double weight;
    const char *report;
};

static struct spin_opts parse_args(int argc, char **argv)
{
    struct spin_opts o = {.cpu = -1};
    enum { O_CPU = 1, O_DUR, O_REPORT, O_WEIGHT, O_SPECIAL, O_PINGPONG };
    static const struct option opts[] = {
        {"cpu", required_argument, 0, O_CPU}, {"duration-ns", required_argument, 0, O_DUR},
        {"report", required_argument, 0, O_REPORT}, {"weight", required_argument, 0, O_WEIGHT},
        {"special", required_argument, 0, O_SPECIAL}, {"pingpong", required_argument, 0, O_PINGPONG},
        {0, 0, 0, 0},
    };
    int c;
    char *colon;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_CPU: o.cpu = (int)parse_u64(optarg, "--cpu"); break;
        case O_DUR: o.duration = parse_u64(optarg, "--duration-ns"); break;
        case O_REPORT: o.report = optarg; break;
        case O_WEIGHT: o.weight = atof(optarg); break;
        case O_PINGPONG: o.rounds = parse_u64(optarg, "--pingpong"); break;
        case O_SPECIAL:
            colon = strchr(optarg, ':');
            if (!colon)
                die("--special takes ON:OFF in milliseconds, e.g. 1000:1000");
            *colon = 0;
            o.on_ms = parse_u64(optarg, "--special ON");
            o.off_ms = parse_u64(colon + 1, "--special OFF");
            break;
        default:
            fputs("usage: jitterscope-spinloop [--cpu C] [--duration-ns D] [--report PAGE] [--weight W] "
                  "[--special ON_MS:OFF_MS] [--pingpong N]\n", stderr);
            exit(2);
        }
    }
    return o;
}

/* Spin until stopped or --duration: integer batches, or during each ON window FP batches announced as
 * special operations; every batch is one op on the report page. */
static int spin(const struct spin_opts *o, struct js_report_page *rp)
{
    uint64_t x = 88172645463325252ull, ops = 0, specials = 0;
    double f = 1.0;
    int64_t t0 = js_report_now(), end = o->duration ? t0 + (int64_t)o->duration : INT64_MAX;
    int64_t period = (int64_t)(o->on_ms + o->off_ms) * 1000000;
    while (!g_stop) {
        int64_t now = js_report_now();
        int special = period && (now - t0) % period < (int64_t)o->on_ms * 1000000;
        if (special) {   /* FP work, announced per batch slice like a DNA fault per region */
            for (int s = 0; s < 64; s++) {
                js_special_op();
                for (unsigned k = 0; k < BATCH / 64; k++)
                    f = f * 1.0000001 + 1e-9;
            }
            specials += 64;
        } else {
            for (unsigned k = 0; k < BATCH; k++) {   /* xorshift: registers only */
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
        }
        ops++;
        if (rp)
            js_report_add(rp, 0, 0);
        if (now >= end)
            break;
    }
    double secs = (double)(js_report_now() - t0) / 1e9;
    printf("{\"event\": \"end\", \"program\": \"spinloop\", \"ops\": %" PRIu64 ", \"specials\": %" PRIu64
           ", \"seconds\": %.6f, \"ops_per_s\": %.1f, \"sink\": %d}\n", ops, specials, secs, (double)ops / secs,
           (int)((x ^ (uint64_t)f) & 1));
    return 0;
}

int main(int argc, char **argv)
{
    struct spin_opts o = parse_args(argc, argv);
    js_pin_process(o.cpu);
    if (o.rounds)
        return pingpong(o.rounds);
    js_die_with_parent();
    int bad;
    struct js_report_page *rp = js_report_open(o.report, &bad);
    if (bad)
        die("%s: not a jitterscope report page", o.report ? o.report : getenv(JS_REPORT_ENV));
    js_place_attach();
    js_place_weight(o.weight);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return spin(&o, rp);
}
