/*
 * Thread and process ends with known truth, for `jitterscope sync`:
 *
 *   lifecycle crash MS    a contended condvar wait, then MS ms of compute, then SIGSEGV: the run lasts about
 *                         MS ms more than the program's last synchronisation record
 *   lifecycle cancel MS   a thread waits on a condvar that is never signalled; MS ms later main cancels and
 *                         joins it: the thread's wait and life last about MS ms
 *   lifecycle join MS     a thread computes MS ms while main waits in pthread_join: one wait on one thread
 *
 * Each prints one JSON line on stderr first: the program's own elapsed time up to the end it describes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

static void unlock(void *p) { pthread_mutex_unlock(p); }

static void *signaller(void *arg)
{
    (void)arg;
    sleep_ms(5);
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *forever(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    pthread_cleanup_push(unlock, &m);
    for (;;)
        pthread_cond_wait(&cv, &m); /* a cancellation point */
    pthread_cleanup_pop(1);
    return NULL;
}

static void *spin(void *arg)
{
    int64_t e = now_ns() + *(long *)arg * 1000000LL;
    while (now_ns() < e) {}
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: lifecycle crash|cancel|join MS\n");
        return 2;
    }
    long ms = atol(argv[2]);
    int64_t t0 = now_ns();
    pthread_t t;
    if (!strcmp(argv[1], "crash")) {
        pthread_create(&t, NULL, signaller, NULL);
        pthread_mutex_lock(&m);
        while (!ready)
            pthread_cond_wait(&cv, &m);
        pthread_mutex_unlock(&m);
        pthread_join(t, NULL);
        int64_t last = now_ns();
        while (now_ns() - last < ms * 1000000LL) {}
        fprintf(stderr, "{\"after_last_sync_ns\": %lld}\n", (long long)(now_ns() - last));
        raise(SIGSEGV);
    }
    if (!strcmp(argv[1], "join")) {
        pthread_create(&t, NULL, spin, &ms);
        pthread_join(t, NULL);
        fprintf(stderr, "{\"joined_at_ns\": %lld}\n", (long long)(now_ns() - t0));
        return 0;
    }
    pthread_create(&t, NULL, forever, NULL);
    sleep_ms(ms);
    int64_t c = now_ns();
    pthread_cancel(t);
    pthread_join(t, NULL);
    fprintf(stderr, "{\"cancel_at_ns\": %lld}\n", (long long)(c - t0));
    return 0;
}
