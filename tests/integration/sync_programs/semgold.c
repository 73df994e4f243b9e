/*
 * Semaphores with known truth, for `jitterscope sync`:
 *
 *   semgold K MS   K rounds: the waiter sleeps in sem_wait until the poster, which sleeps MS ms first, posts.
 *   semgold spin MS   a thread holds a spin lock MS ms while main spins on it once (one contended spin lock)
 *
 * Each wait is contended (the semaphore is 0 when the waiter arrives) and lasts about MS ms; the program
 * prints the sum of the waits it measured itself, in ns, as one JSON line.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>

static sem_t go, done;
static int g_k;
static long g_ms;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *poster(void *arg)
{
    (void)arg;
    for (int i = 0; i < g_k; i++) {
        sem_wait(&go); /* the waiter is about to sleep */
        struct timespec d = {g_ms / 1000, (g_ms % 1000) * 1000000L};
        nanosleep(&d, NULL);
        sem_post(&done);
    }
    return NULL;
}

static pthread_spinlock_t spin;
static _Atomic int held;

static void *holder(void *arg)
{
    pthread_spin_lock(&spin);
    held = 1;
    int64_t end = now_ns() + *(long *)arg * 1000000LL;
    while (now_ns() < end) {}
    pthread_spin_unlock(&spin);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "spin")) {
        g_ms = atol(argv[2]);
        pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
        pthread_t h;
        pthread_create(&h, NULL, holder, &g_ms);
        while (!held) {}
        /* its CPU time too: what of the window the thread spent off the CPU (preempted on a busy machine) */
        struct timespec c0, c1;
        int64_t e = now_ns();
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        pthread_spin_lock(&spin);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        int64_t spun = now_ns() - e;
        pthread_spin_unlock(&spin);
        pthread_join(h, NULL);
        long long cpu = (c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec);
        printf("{\"spun_ns\": %lld, \"spun_cpu_ns\": %lld}\n", (long long)spun, cpu);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: semgold K MS\n");
        return 2;
    }
    g_k = atoi(argv[1]);
    g_ms = atol(argv[2]);
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, poster, NULL);
    int64_t waited = 0;
    for (int i = 0; i < g_k; i++) {
        sem_post(&go);
        int64_t e = now_ns();
        sem_wait(&done);
        waited += now_ns() - e;
    }
    pthread_join(t, NULL);
    printf("{\"waits\": %d, \"waited_ns\": %lld}\n", g_k, (long long)waited);
    return 0;
}
