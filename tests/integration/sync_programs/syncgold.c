/*
 * Golden scenarios for `jitterscope sync` tests: each mode produces a known
 * number of synchronisation events of known duration.  Threads that must be
 * delayed by exactly D are delayed by a SCHED_FIFO thread of the program on
 * the same CPU busy-spinning D after it releases them, so the delay does not
 * depend on the machine's load (other tasks cannot take a FIFO thread's CPU).
 *
 *   syncgold lu CPU K        K x: holder unlocks, then keeps the CPU 200 us -> lu = 200 us
 *   syncgold hold CPU K      K x: holder keeps the mutex 200 us, releases at once -> waits of 200 us, lu small
 *   syncgold sw CPU K        K x: signaller keeps the CPU 100 us after signalling -> sw = 100 us
 *   syncgold bw CPU K        K x: broadcast to 2 waiters, broadcaster keeps the CPU 150 us -> 2 x bw = 150 us
 *   syncgold barrier CPU K   K rounds of a 3-thread barrier whose last arriver comes 300 us after the others
 *   syncgold tree CPU        main creates A and B; A suffers sw 200 us, B sw 50 us; main joins both
 *   syncgold holdlong CPU MS K  FIFO 80 holder on CPU holds the mutex MS ms (busy), waiter on another CPU waits
 *   syncgold uncontended N   N lock/unlock pairs on one thread, prints ns per pair
 *   syncgold frames N        N frames of 1 ms, marked with jitterscope_sync_frame
 *   syncgold fork            forks; the child runs "sw" once
 *   syncgold crash           a contended wait, then SIGSEGV
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_cpu;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t bar;
static _Atomic int stage;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void spin_ns(int64_t ns)
{
    int64_t end = now_ns() + ns;
    while (now_ns() < end) {}
}

static void sleep_ns(long ns)
{
    struct timespec d = {ns / 1000000000L, ns % 1000000000L};
    nanosleep(&d, NULL);
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (pthread_setaffinity_np(pthread_self(), sizeof s, &s)) {
        fprintf(stderr, "syncgold: cannot pin to CPU %d\n", cpu);
        exit(3);
    }
}

static void fifo(int prio)
{
    struct sched_param sp = {.sched_priority = prio};
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp)) {
        fprintf(stderr, "syncgold: SCHED_FIFO refused (run as root)\n");
        exit(3);
    }
}

/* Wait until the other thread is asleep in the kernel: it shows as state S. */
static void wait_sleeping(pid_t tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    for (int i = 0; i < 20000; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = 0;
            char *p = strrchr(buf, ')');
            if (p && p[2] == 'S')
                return;
        }
        sleep_ns(50000);
    }
}

static _Atomic pid_t waiter_tid;
static int K;

/* ---- lu / hold ---- */
static void *lu_waiter(void *arg)
{
    (void)arg;
    pin(g_cpu);
    fifo(10);                            /* below the holder: runs the moment it sleeps, whatever the load */
    waiter_tid = gettid();
    for (int i = 0; i < K; i++) {
        while (atomic_load(&stage) < 2 * i + 1)
            sleep_ns(20000);
        pthread_mutex_lock(&m);          /* contended: the holder has it */
        pthread_mutex_unlock(&m);
        atomic_store(&stage, 2 * i + 2);
    }
    return NULL;
}

static int run_lu(int hold)
{
    pthread_t w;
    pin(g_cpu);
    pthread_create(&w, NULL, lu_waiter, NULL);
    while (!waiter_tid)
        sleep_ns(10000);
    fifo(20);
    for (int i = 0; i < K; i++) {
        pthread_mutex_lock(&m);
        atomic_store(&stage, 2 * i + 1);
        sleep_ns(2000000);               /* the waiter runs and blocks on the mutex */
        wait_sleeping(waiter_tid);
        if (hold) {
            spin_ns(200000);             /* keep the mutex 200 us more, then release and get out of the way */
            pthread_mutex_unlock(&m);
        } else {
            pthread_mutex_unlock(&m);    /* u_e: the waiter is runnable ... */
            spin_ns(200000);             /* ... but this FIFO thread keeps its CPU 200 us */
        }
        while (atomic_load(&stage) < 2 * i + 2)
            sleep_ns(20000);
    }
    pthread_join(w, NULL);
    return 0;
}

/* ---- sw ---- */
static int ready;
static void *sw_waiter(void *arg)
{
    (void)arg;
    pin(g_cpu);
    fifo(10);                            /* below the signaller: runs the moment it sleeps, whatever the load */
    waiter_tid = gettid();
    for (int i = 0; i < K; i++) {
        pthread_mutex_lock(&m);
        atomic_store(&stage, 2 * i + 1);
        while (!ready)
            pthread_cond_wait(&cv, &m);
        ready = 0;
        pthread_mutex_unlock(&m);
        atomic_store(&stage, 2 * i + 2);
    }
    return NULL;
}

static int run_sw(int delay_ns)
{
    pthread_t w;
    pin(g_cpu);
    pthread_create(&w, NULL, sw_waiter, NULL);
    fifo(20);
    for (int i = 0; i < K; i++) {
        while (atomic_load(&stage) < 2 * i + 1)
            sleep_ns(20000);
        wait_sleeping(waiter_tid);
        pthread_mutex_lock(&m);
        ready = 1;
        pthread_cond_signal(&cv);        /* s_e */
        pthread_mutex_unlock(&m);
        spin_ns(delay_ns);               /* the waiter is runnable, this FIFO thread keeps the CPU */
        while (atomic_load(&stage) < 2 * i + 2)
            sleep_ns(20000);
    }
    pthread_join(w, NULL);
    return 0;
}

/* ---- bw ---- */
static int round_no, waiting;
static _Atomic pid_t bw_tids[2];
static void *bw_waiter(void *arg)
{
    int id = (int)(intptr_t)arg;
    pin(g_cpu);
    fifo(10);                            /* below the broadcaster: as sw_waiter */
    bw_tids[id] = gettid();
    for (int i = 0; i < K; i++) {
        pthread_mutex_lock(&m);
        waiting++;
        while (round_no <= i)
            pthread_cond_wait(&cv, &m);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static int run_bw(void)
{
    pthread_t w[2];
    pin(g_cpu);
    for (intptr_t i = 0; i < 2; i++)
        pthread_create(&w[i], NULL, bw_waiter, (void *)i);
    fifo(20);
    for (int i = 0; i < K; i++) {
        for (;;) {
            pthread_mutex_lock(&m);
            int n = waiting;
            pthread_mutex_unlock(&m);
            if (n == 2 * (i + 1))
                break;
            sleep_ns(20000);
        }
        wait_sleeping(bw_tids[0]);
        wait_sleeping(bw_tids[1]);
        pthread_mutex_lock(&m);
        round_no = i + 1;
        pthread_cond_broadcast(&cv);     /* b_e */
        pthread_mutex_unlock(&m);
        spin_ns(150000);
        sleep_ns(3000000);
    }
    pthread_join(w[0], NULL);
    pthread_join(w[1], NULL);
    return 0;
}

/* ---- barrier ---- */
static _Atomic int bar_arrived;
static _Atomic pid_t bar_tids[2];
static _Atomic int bar_slot;

static void *bar_thread(void *arg)
{
    int late = (int)(intptr_t)arg;
    if (!late)
        bar_tids[atomic_fetch_add(&bar_slot, 1)] = (pid_t)syscall(SYS_gettid);
    for (int i = 0; i < K; i++) {
        if (late) {
            /* the last arriver: 300 us after both others are asleep in this round's barrier (not after a sleep
             * of its own, whose wake-up a busy host can delay past theirs), so each of their waits is >= 300 us */
            while (atomic_load(&bar_arrived) < 2 * (i + 1)) {}
            wait_sleeping(bar_tids[0]);
            wait_sleeping(bar_tids[1]);
            spin_ns(300000);
        } else {
            atomic_fetch_add(&bar_arrived, 1);  /* nothing but the barrier's futex sleep follows */
        }
        pthread_barrier_wait(&bar);
        sleep_ns(1000000);
    }
    return NULL;
}

static int run_barrier(void)
{
    pthread_t t[2];
    pthread_barrier_init(&bar, NULL, 3);
    pthread_create(&t[0], NULL, bar_thread, (void *)0);
    pthread_create(&t[1], NULL, bar_thread, (void *)1);
    bar_thread((void *)0);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    return 0;
}

/* ---- tree: A suffers one sw of 200 us, B one of 50 us; main joins both ---- */
struct sig { pthread_mutex_t m; pthread_cond_t c; int go; _Atomic int waiting; _Atomic pid_t tid; int delay; };
static struct sig sa = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 200000};
static struct sig sb = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 50000};

static void *tree_child(void *arg)
{
    struct sig *s = arg;
    pin(g_cpu);
    s->tid = gettid();
    pthread_mutex_lock(&s->m);
    s->waiting = 1;
    while (!s->go)
        pthread_cond_wait(&s->c, &s->m);
    pthread_mutex_unlock(&s->m);
    spin_ns(1000000);
    return NULL;
}

static void *tree_signaller(void *arg)
{
    (void)arg;
    pin(g_cpu);
    fifo(20);
    struct sig *all[2] = {&sa, &sb};
    for (int k = 0; k < 2; k++) {
        struct sig *s = all[k];
        while (!s->waiting || !s->tid)
            sleep_ns(20000);
        wait_sleeping(s->tid);
        pthread_mutex_lock(&s->m);
        s->go = 1;
        pthread_cond_signal(&s->c);
        pthread_mutex_unlock(&s->m);
        spin_ns(s->delay);
        sleep_ns(5000000);
    }
    return NULL;
}

static int run_tree(void)
{
    pthread_t a, b, s;
    pthread_create(&a, NULL, tree_child, &sa);
    pthread_create(&b, NULL, tree_child, &sb);
    pthread_create(&s, NULL, tree_signaller, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(s, NULL);
    return 0;
}

/* ---- holdlong: the holder on CPU holds MS ms (busy) K times; a waiter elsewhere waits ---- */
static int hold_ms;
static void *hl_waiter(void *arg)
{
    (void)arg;
    pin(g_cpu == 0 ? 1 : 0);             /* off the holder's CPU: only its own delay is measured */
    waiter_tid = gettid();
    for (int i = 0; i < K; i++) {
        while (atomic_load(&stage) < 2 * i + 1)
            sleep_ns(20000);
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        atomic_store(&stage, 2 * i + 2);
    }
    return NULL;
}

static int run_holdlong(void)
{
    pthread_t w;
    pin(g_cpu);
    pthread_create(&w, NULL, hl_waiter, NULL);
    while (!waiter_tid)                  /* it must leave this CPU before the FIFO holder spins on it */
        sleep_ns(10000);
    fifo(80);                            /* below the test injector (90): only it, interrupts and the
                                            kernel's stop/migration threads take this CPU */
    for (int i = 0; i < K; i++) {
        pthread_mutex_lock(&m);
        atomic_store(&stage, 2 * i + 1);
        spin_ns((int64_t)hold_ms * 1000000);
        pthread_mutex_unlock(&m);
        while (atomic_load(&stage) < 2 * i + 2)
            sleep_ns(20000);
    }
    pthread_join(w, NULL);
    return 0;
}

static int run_uncontended(long n)
{
    pthread_mutex_t u = PTHREAD_MUTEX_INITIALIZER;
    for (long i = 0; i < n / 10; i++) {
        pthread_mutex_lock(&u);
        pthread_mutex_unlock(&u);
    }
    int64_t a = now_ns();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&u);
        pthread_mutex_unlock(&u);
    }
    int64_t b = now_ns();
    printf("%.3f\n", (double)(b - a) / (double)n);
    return 0;
}

static int run_frames(int n)
{
    void (*mark)(uint64_t) = (void (*)(uint64_t))dlsym(RTLD_DEFAULT, "jitterscope_sync_frame");
    for (int i = 0; i < n; i++) {
        if (mark)
            mark((uint64_t)i);
        spin_ns(1000000);
    }
    if (mark)
        mark((uint64_t)n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *mode = argv[1];
    g_cpu = argc > 2 ? atoi(argv[2]) : 0;
    K = argc > 3 ? atoi(argv[3]) : 1;
    if (!strcmp(mode, "lu"))
        return run_lu(0);
    if (!strcmp(mode, "hold"))
        return run_lu(1);
    if (!strcmp(mode, "sw"))
        return run_sw(100000);
    if (!strcmp(mode, "bw"))
        return run_bw();
    if (!strcmp(mode, "barrier"))
        return run_barrier();
    if (!strcmp(mode, "tree"))
        return run_tree();
    if (!strcmp(mode, "holdlong")) {
        hold_ms = K;
        K = argc > 4 ? atoi(argv[4]) : 1;
        return run_holdlong();
    }
    if (!strcmp(mode, "uncontended"))
        return run_uncontended(argc > 2 ? atol(argv[2]) : 1000000);
    if (!strcmp(mode, "frames"))
        return run_frames(argc > 2 ? atoi(argv[2]) : 10);
    if (!strcmp(mode, "fork")) {
        K = 1;
        pid_t p = fork();
        if (p == 0)
            _exit(run_sw(100000));
        int st;
        waitpid(p, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (!strcmp(mode, "crash")) {
        K = 1;
        run_sw(100000);
        raise(SIGSEGV);
    }
    if (!strcmp(mode, "exit7"))
        return 7;
    return 2;
}
