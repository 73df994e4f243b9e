/*
 * jitterscope-inject: a synthetic daemon with a known period and busy time
 * (De et al. 2007's validation), whose exact busy intervals are the ground truth the
 * probe and the attribution are checked against.
 *
 * Pinned to one CPU, it sleeps to absolute CLOCK_MONOTONIC deadlines
 * start + k*period (so the period never drifts with the time spent busy or
 * waking late), then spins for `busy` TSC cycles and appends the interval
 * (start_tsc,end_tsc) to the truth file, in the probe's clock.
 *
 * Scheduling: SCHED_FIFO (policy "fifo"), SCHED_OTHER ("other") or "auto"
 * (FIFO when permitted, else OTHER with a warning).  Only this process's own
 * policy changes, and it ends with its duration or its parent (PDEATHSIG).
 *
 * stdout: {"event":"ready",...} once set up, {"event":"end",...} at the end.
 * Errors: one line on stderr, exit code 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define JS_PROGRAM "jitterscope-inject"
#include "js_cli.h"
#include "js_tsc.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

static void ts_add(struct timespec *t, int64_t ns)
{
    int64_t total = t->tv_nsec + ns;
    t->tv_sec += total / 1000000000LL;
    t->tv_nsec = total % 1000000000LL;
}

static int64_t ts_ns(const struct timespec *t) { return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec; }

struct inject_args {
    int cpu, prio;
    uint64_t period, busy, duration, hz;
    const char *name, *policy, *truth_path;
};

static void parse_args(int argc, char **argv, struct inject_args *a)
{
    enum { O_CPU = 1, O_PERIOD, O_BUSY, O_DUR, O_NAME, O_POLICY, O_PRIO, O_TRUTH, O_HZ };
    static const struct option opts[] = {
        {"cpu", required_argument, 0, O_CPU},
        {"period-ns", required_argument, 0, O_PERIOD},
        {"busy-ns", required_argument, 0, O_BUSY},
        {"duration-ns", required_argument, 0, O_DUR},
        {"name", required_argument, 0, O_NAME},
        {"policy", required_argument, 0, O_POLICY},
        {"priority", required_argument, 0, O_PRIO},
        {"truth", required_argument, 0, O_TRUTH},
        {"tsc-hz", required_argument, 0, O_HZ},
        {0, 0, 0, 0},
    };
    *a = (struct inject_args){.cpu = -1, .prio = 50, .name = "jitterscope-inj", .policy = "auto"};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_CPU: a->cpu = (int)parse_u64(optarg, "--cpu"); break;
        case O_PERIOD: a->period = parse_u64(optarg, "--period-ns"); break;
        case O_BUSY: a->busy = parse_u64(optarg, "--busy-ns"); break;
        case O_DUR: a->duration = parse_u64(optarg, "--duration-ns"); break;
        case O_NAME: a->name = optarg; break;
        case O_POLICY: a->policy = optarg; break;
        case O_PRIO: a->prio = (int)parse_u64(optarg, "--priority"); break;
        case O_TRUTH: a->truth_path = optarg; break;
        case O_HZ: a->hz = parse_u64(optarg, "--tsc-hz"); break;
        default:
            fputs("usage: jitterscope-inject --cpu C --period-ns P --busy-ns B [--duration-ns D] "
                  "[--name NAME] [--policy auto|fifo|other] [--priority N] [--truth FILE] [--tsc-hz HZ]\n", stderr);
            exit(2);
        }
    }
    if (a->cpu < 0 || !a->period || !a->busy)
        die("--cpu, --period-ns and --busy-ns are required");
    if (a->busy >= a->period)
        die("busy time (%" PRIu64 " ns) must be shorter than the period (%" PRIu64 " ns)", a->busy, a->period);
    if (strlen(a->name) == 0 || strlen(a->name) > 15)
        die("name '%s' must be 1-15 characters (the kernel's task name limit)", a->name);
    if (strcmp(a->policy, "auto") && strcmp(a->policy, "fifo") && strcmp(a->policy, "other"))
        die("policy must be auto, fifo or other, got '%s'", a->policy);
    if (a->prio < 1 || a->prio > 99)
        die("--priority must be 1..99");
}

/* Pin to the CPU, take the name and the scheduling policy; return the policy in use. */
static const char *place_self(const struct inject_args *a)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(a->cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set))
        die("cannot run on CPU %d: %s", a->cpu, errno == EINVAL ? "offline or not allowed" : strerror(errno));
    prctl(PR_SET_NAME, a->name, 0, 0, 0);

    const char *used = "other";
    if (strcmp(a->policy, "other")) {
        struct sched_param sp = {.sched_priority = a->prio};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0) {
            used = "fifo";
        } else if (!strcmp(a->policy, "fifo")) {
            die("cannot use SCHED_FIFO: %s (run as root or use --policy other)", strerror(errno));
        } else {
            fprintf(stderr, "jitterscope-inject: warning: SCHED_FIFO not permitted (%s); using SCHED_OTHER, "
                    "so busy periods may be preempted\n", strerror(errno));
        }
    }
    return used;
}

static FILE *open_truth(const struct inject_args *a, double hz, const char *used)
{
    if (!a->truth_path)
        return NULL;
    FILE *truth = fopen(a->truth_path, "w");
    if (!truth)
        die("cannot create %s: %s", a->truth_path, strerror(errno));
    static char tbuf[1 << 16];  /* big buffer: a write() every ~1500 intervals */
    setvbuf(truth, tbuf, _IOFBF, sizeof tbuf);
    fprintf(truth, "# jitterscope-inject truth v1 tsc_hz=%.3f pid=%d cpu=%d period_ns=%" PRIu64
            " busy_ns=%" PRIu64 " name=%s policy=%s\n", hz, (int)getpid(), a->cpu, a->period, a->busy, a->name, used);
    fprintf(truth, "start_tsc,end_tsc\n");
    return truth;
}

/* Wake on the absolute grid start + k*period and spin busy_cycles each time, until stopped or
 * past the duration; every busy interval goes to the truth file. */
static void wake_and_spin(const struct inject_args *a, struct timespec start, uint64_t busy_cycles, FILE *truth,
                          uint64_t *wakeups, uint64_t *missed)
{
    struct timespec next = start;
    ts_add(&next, (int64_t)a->period);
    int64_t end_ns = a->duration ? ts_ns(&start) + (int64_t)a->duration : INT64_MAX;
    while (!g_stop) {
        if (ts_ns(&next) + (int64_t)a->busy > end_ns)
            break;
        int err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        if (err == EINTR)
            continue;  /* a signal: the loop condition decides */
        uint64_t s = js_rdtsc_ordered(), e;
        do
            e = js_rdtsc_ordered();
        while (e - s < busy_cycles);
        (*wakeups)++;
        if (truth)
            fprintf(truth, "%" PRIu64 ",%" PRIu64 "\n", s, e);
        /* Next deadline on the absolute grid; if we overran it (preempted or
         * throttled), skip the missed slots rather than firing back to back. */
        ts_add(&next, (int64_t)a->period);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        while (ts_ns(&next) <= ts_ns(&now)) {
            ts_add(&next, (int64_t)a->period);
            (*missed)++;
        }
    }
}

int main(int argc, char **argv)
{
    struct inject_args a;
    parse_args(argc, argv, &a);
    if (js_die_with_parent())  /* never outlive the parent */
        return 2;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;  /* no SA_RESTART: interrupt the sleep */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);  /* a closed terminal ends it like Ctrl-C: the truth file is finished */

    const char *used = place_self(&a);
    /* Locked memory: a page fault inside a busy period would not be busy time. */
    mlockall(MCL_CURRENT | MCL_FUTURE);

    double hz = a.hz ? (double)a.hz : js_calibrate_tsc_hz(100);
    uint64_t busy_cycles = (uint64_t)((double)a.busy * hz / 1e9 + 0.5);
    FILE *truth = open_truth(&a, hz, used);

    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    printf("{\"event\": \"ready\", \"pid\": %d, \"cpu\": %d, \"policy\": \"%s\", \"priority\": %d, "
           "\"tsc_hz\": %.3f, \"t0_tsc\": %" PRIu64 "}\n",
           (int)getpid(), a.cpu, used, strcmp(used, "fifo") ? 0 : a.prio, hz, js_rdtsc_ordered());
    fflush(stdout);

    uint64_t wakeups = 0, missed = 0;
    wake_and_spin(&a, start, busy_cycles, truth, &wakeups, &missed);
    if (truth && fclose(truth) != 0)
        die("writing %s: %s", a.truth_path, strerror(errno));
    printf("{\"event\": \"end\", \"wakeups\": %" PRIu64 ", \"missed\": %" PRIu64 ", \"interrupted\": %s}\n",
           wakeups, missed, g_stop ? "true" : "false");
    fflush(stdout);
    return 0;
}
