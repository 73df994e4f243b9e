/*
 * Semaphores with known truth, for `jitterscope sync`:
 *
 *   semgold K MS   K rounds: the waiter sleeps in sem_wait until the poster, which sleeps MS ms first, posts.
 *   semgold spin MS   a thread holds a spin lock MS ms while main spins on it once (one contended spin lock,
 *                     after one contended, unmeasured semaphore wait)
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
#include <unistd.h>

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

struct hold {
    pthread_spinlock_t lock;
    long ms;
    _Atomic int held;
};

static void *holder(void *arg)
{
    struct hold *h = arg;
    pthread_spin_lock(&h->lock);
    h->held = 1;
    int64_t end = now_ns() + h->ms * 1000000LL;
    while (now_ns() < end) {}
    pthread_spin_unlock(&h->lock);
    return NULL;
}

static sem_t warm;
static pid_t main_tid;

/* Posts `warm` once main sleeps (in its sem_wait): that wait is contended whatever the load. */
static void *waker(void *arg)
{
    (void)arg;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)main_tid);
    for (;;) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        char *st = strrchr(buf, ')');
        if (st && st[1] == ' ' && st[2] == 'S')
            break;
        usleep(100);
    }
    sem_post(&warm);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "spin")) {
        /* The interposer makes a thread's ring at its first record, after the wait's end: an mmap and a
         * first page, in this program's window but not in the wait (25 us under a CPU hog).  A first,
         * unmeasured wait makes main's ring. */
        sem_init(&warm, 0, 0);
        main_tid = gettid();
        pthread_t h;
        pthread_create(&h, NULL, waker, NULL);
        sem_wait(&warm);
        pthread_join(h, NULL);
        static struct hold spin;
        spin.ms = atol(argv[2]);
        pthread_spin_init(&spin.lock, PTHREAD_PROCESS_PRIVATE);
        pthread_create(&h, NULL, holder, &spin);
        while (!spin.held) {}
        /* its CPU time too: what of the window the thread spent off the CPU (preempted on a busy machine) */
        struct timespec c0, c1;
        int64_t e = now_ns();
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        pthread_spin_lock(&spin.lock);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        int64_t spun = now_ns() - e;
        pthread_spin_unlock(&spin.lock);
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
