/*
 * A program whose truth it prints itself, for `whatif dvfs` (and anything that replays a sync run):
 *
 *   pollwork CPU WORK_MS TIMEOUT_MS
 *
 * A worker pinned to CPU computes until its own thread CPU time reaches WORK_MS, then signals "done".
 * The main thread polls with pthread_cond_timedwait (TIMEOUT_MS each, like xz's progress loop) until it
 * is signalled, then joins the worker.  Whatever takes the worker's CPU away (the test runs a hog on
 * the same CPU) is non-synchronisation jitter; with none of it the program would run for about WORK_MS.
 * Prints one JSON line: the worker's CPU time, the run's wall time and the number of timed-out waits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;
static int g_cpu;
static int64_t g_work_ns, g_worker_cpu_ns;

static int64_t ns_of(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *worker(void *arg)
{
    (void)arg;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(g_cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
    volatile uint64_t x = 0;
    while (ns_of(CLOCK_THREAD_CPUTIME_ID) < g_work_ns)
        for (int i = 0; i < 10000; i++)
            x += (uint64_t)i;
    g_worker_cpu_ns = ns_of(CLOCK_THREAD_CPUTIME_ID);
    pthread_mutex_lock(&m);
    done = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: pollwork CPU WORK_MS TIMEOUT_MS\n");
        return 2;
    }
    g_cpu = atoi(argv[1]);
    g_work_ns = atoll(argv[2]) * 1000000LL;
    int64_t timeout_ns = atoll(argv[3]) * 1000000LL;
    int64_t t0 = ns_of(CLOCK_MONOTONIC);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &ca);
    pthread_t th;
    pthread_create(&th, NULL, worker, NULL);
    int timeouts = 0;
    pthread_mutex_lock(&m);
    while (!done) {
        int64_t until = ns_of(CLOCK_MONOTONIC) + timeout_ns;
        struct timespec ts = {until / 1000000000LL, until % 1000000000LL};
        if (pthread_cond_timedwait(&cv, &m, &ts) == ETIMEDOUT)
            timeouts++;
    }
    pthread_mutex_unlock(&m);
    pthread_join(th, NULL);
    printf("{\"worker_cpu_ns\": %lld, \"run_ns\": %lld, \"timeouts\": %d}\n", (long long)g_worker_cpu_ns,
           (long long)(ns_of(CLOCK_MONOTONIC) - t0), timeouts);
    return 0;
}
