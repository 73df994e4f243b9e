/*
 * jitterscope-tracereader: copies a trace instance's per-CPU ring buffers into
 * OUTDIR/cpuN.raw, whole pages only, until told to stop.
 *
 *   jitterscope-tracereader INSTANCE OUTDIR PAGE_SIZE CPUS AVOID LOCK
 *
 * CPUS and AVOID are comma lists ("-" for none); LOCK is a file held locked
 * (flock) for the reader's whole life, so whoever cleans up the instance of a
 * dead jitterscope (tracing/instances.py) waits until this reader has written
 * its last page rather than interleaving its own pages with ours.
 *
 * Why native and why splice: one reader for every CPU, off the probed CPUs,
 * sleeping in epoll until a CPU's ring is `buffer_percent` full (the kernel
 * honours the watermark in poll), then splicing its full pages trace_pipe_raw →
 * pipe → file.  The kernel's splice hands over only full pages, so the capture
 * is as dense as the ring itself (a read() would also take the page the kernel
 * is still writing, and a reader woken early writes nearly empty pages).  The
 * pages are the ring's own, so traceparse and libtraceevent read them as ever.
 *
 * Protocol: "ready" on stdout once every file is open; then the parent writes
 * "stop" on stdin after setting tracing_on to 0: every CPU is drained, full
 * pages and then the partial page the kernel was writing (read()), and the
 * report (JSON: CPU time, pages, bytes) goes to OUTDIR/reader.json and stdout.
 * EOF on stdin without "stop" (jitterscope died: its end of the pipe closed)
 * means nobody will stop the capture: the reader stops tracing in the
 * instance, drains the same way and exits, so what it wrote stays whole pages.
 * (Not PR_SET_PDEATHSIG: it fires when the thread that started the reader
 * ends, which need not be the end of jitterscope.)  SIGINT, SIGHUP and SIGTERM
 * are ignored: jitterscope gets them too and ends the capture itself.
 * Errors: one line "jitterscope-tracereader: ..." on stderr, exit code 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "js_alloc.h"

#define JS_PROGRAM "jitterscope-tracereader"
#include "js_cli.h"

#define BATCH_PAGES 64u       /* pages moved per splice: the pipe's size, 256 KiB of 4 KiB pages */
#define SPIN_PAUSE_NS 10000000L /* a wake-up that moved nothing: wait this long before looking again */

enum { TAG_STDIN = -1 };
enum ending { RUNNING, STOP, PARENT_GONE };

struct cpu {
    int cpu, in, out;
    char path[PATH_MAX];
    uint64_t full_pages, partial_pages, bytes;
};

static size_t page_size;
static int pipe_r, pipe_w;
static uint64_t wakeups, idle_wakeups;

static int parse_list(const char *s, int **out)
{
    int n = 0;
    *out = NULL;
    if (!strcmp(s, "-"))
        return 0;
    char *copy = js_strdup(s), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        *out = js_realloc(*out, (size_t)(n + 1) * sizeof **out);
        uint64_t v = parse_u64(tok, "a CPU number");
        if (v >= CPU_SETSIZE)
            die("CPU %" PRIu64 " out of range", v);
        (*out)[n++] = (int)v;
    }
    free(copy);
    return n;
}

/* Leave the probed CPUs: whatever this reader does must not run where the probe measures.  Returns 0 when
 * there is no other CPU to go to. */
static int keep_off(const int *avoid, int navoid)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set))
        die("sched_getaffinity: %s", strerror(errno));
    cpu_set_t others = set;
    for (int i = 0; i < navoid; i++)
        CPU_CLR(avoid[i], &others);
    if (!CPU_COUNT(&others))
        return 0;
    if (sched_setaffinity(0, sizeof others, &others))
        die("cannot leave the probed CPUs: %s", strerror(errno));
    return 1;
}

/* Wake promptly on a loaded machine: the ring overflows if the reader waits for a CPU longer than the half
 * still free lasts (a quarter of a second at the rate the ring was sized for).  It runs a few ms per second
 * and never spins (see idle_wakeups), so SCHED_FIFO 1 costs the housekeeping CPUs nothing; where that is not
 * allowed, the highest nice.  Returns the policy in effect, for the report. */
static const char *raise_priority(void)
{
    struct sched_param sp = {.sched_priority = 1};
    if (!sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp))
        return "fifo:1";
    if (!setpriority(PRIO_PROCESS, 0, -20))
        return "nice:-20";
    return "unchanged";
}

static void write_out(struct cpu *c, const void *buf, size_t n) { js_write_all(c->out, buf, n, c->path); }

/* Every full page the ring holds now, through the pipe into the file.  Returns the bytes moved. */
static uint64_t move_full_pages(struct cpu *c)
{
    uint64_t moved = 0;
    for (;;) {
        ssize_t n = splice(c->in, NULL, pipe_w, NULL, BATCH_PAGES * page_size, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return moved;
        if (n < 0)
            die("splicing CPU %d's trace_pipe_raw: %s", c->cpu, strerror(errno));
        if (n == 0)
            return moved;
        size_t left = (size_t)n;
        while (left) {
            ssize_t m = splice(pipe_r, NULL, c->out, NULL, left, SPLICE_F_MOVE);
            if (m < 0 && errno == EINTR)
                continue;
            if (m <= 0)
                die("writing %s: %s", c->path, m < 0 ? strerror(errno) : "nothing written");
            left -= (size_t)m;
        }
        c->full_pages += (uint64_t)n / page_size;
        c->bytes += (uint64_t)n;
        moved += (uint64_t)n;
    }
}

/* At the end: full pages first, then what read() gives (the page the kernel was still writing). */
static void drain(struct cpu *c, char *buf)
{
    move_full_pages(c);
    for (;;) {
        ssize_t n = read(c->in, buf, page_size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* EAGAIN: empty; 0: nothing more */
        write_out(c, buf, (size_t)n);
        c->partial_pages++;
        c->bytes += (uint64_t)n;
    }
}

static void stop_tracing(const char *instance)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tracing_on", instance);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, "0", 1) < 0) { /* the instance may already be gone: nothing more to save then */
        }
        close(fd);
    }
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

static void report(const char *outdir, struct cpu *cpus, int ncpus, enum ending how, const char *priority)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint64_t full = 0, partial = 0, bytes = 0;
    for (int i = 0; i < ncpus; i++) {
        full += cpus[i].full_pages;
        partial += cpus[i].partial_pages;
        bytes += cpus[i].bytes;
    }
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    char affinity[8192] = "";
    size_t used = 0;
    for (int c = 0; c < CPU_SETSIZE && used + 8 < sizeof affinity; c++)
        if (CPU_ISSET(c, &set))
            used += (size_t)snprintf(affinity + used, sizeof affinity - used, "%s%d", used ? "," : "", c);
    char text[16384];
    int n = snprintf(text, sizeof text,
                     "{\"ended\": \"%s\", \"cpu_user_s\": %.6f, \"cpu_sys_s\": %.6f, \"full_pages\": %" PRIu64
                     ", \"partial_pages\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"wakeups\": %" PRIu64
                     ", \"idle_wakeups\": %" PRIu64 ", \"page_size\": %zu, \"priority\": \"%s\", \"affinity\": [%s]}\n",
                     how == STOP ? "stop" : "parent_gone", tv_s(ru.ru_utime), tv_s(ru.ru_stime), full, partial,
                     bytes, wakeups, idle_wakeups, page_size, priority, affinity);
    if (n < 0 || (size_t)n >= sizeof text)
        die("report too long");
    char tmp[PATH_MAX], final[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/.reader.json.tmp", outdir);
    snprintf(final, sizeof final, "%s/reader.json", outdir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        js_write_all(fd, text, (size_t)n, tmp);
        close(fd);
        if (rename(tmp, final))
            die("renaming %s: %s", tmp, strerror(errno));
    }
    if (how == STOP) {
        fputs(text, stdout);
        fflush(stdout);
    }
}

/* "stop" ends the capture; EOF without it means the parent is gone. */
static enum ending read_command(void)
{
    char buf[64];
    ssize_t n = read(0, buf, sizeof buf - 1);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return RUNNING;
    if (n <= 0)
        return PARENT_GONE;
    buf[n] = 0;
    return strstr(buf, "stop") ? STOP : RUNNING;
}

/* Every traced CPU's trace_pipe_raw (non-blocking, in the epoll set) and its output file. */
static struct cpu *open_cpus(const char *instance, const char *outdir, const int *cpu_ids, int ncpus, int ep)
{
    struct cpu *cpus = js_calloc((size_t)ncpus, sizeof *cpus);
    for (int i = 0; i < ncpus; i++) {
        struct cpu *c = &cpus[i];
        c->cpu = cpu_ids[i];
        char in[PATH_MAX];
        snprintf(in, sizeof in, "%s/per_cpu/cpu%d/trace_pipe_raw", instance, c->cpu);
        c->in = open(in, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (c->in < 0)
            die("cannot open %s: %s", in, strerror(errno));
        snprintf(c->path, sizeof c->path, "%s/cpu%d.raw", outdir, c->cpu);
        c->out = open(c->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (c->out < 0)
            die("cannot create %s: %s", c->path, strerror(errno));
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c->in, &ev))
            die("epoll on %s: %s", in, strerror(errno));
    }
    return cpus;
}

/* The pipe whole pages are spliced through, sized for a batch of them. */
static void open_splice_pipe(void)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC))
        die("pipe: %s", strerror(errno));
    pipe_r = fds[0];
    pipe_w = fds[1];
    if (fcntl(pipe_w, F_SETPIPE_SZ, (int)(BATCH_PAGES * page_size)) < 0)
        die("cannot size the splice pipe to %zu bytes: %s", BATCH_PAGES * page_size, strerror(errno));
}

/* Move full pages as the rings reach their watermark, until jitterscope says stop or goes away. */
static enum ending read_until_told(int ep, struct cpu *cpus)
{
    enum ending how = RUNNING;
    struct epoll_event evs[64];
    while (how == RUNNING) {
        int n = epoll_wait(ep, evs, 64, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("epoll_wait: %s", strerror(errno));
        uint64_t moved = 0;
        int cpu_events = 0;
        for (int k = 0; k < n; k++) {
            int64_t tag = (int64_t)evs[k].data.u64;
            if (tag == TAG_STDIN) {
                how = read_command();
            } else {
                cpu_events++;
                moved += move_full_pages(&cpus[tag]);
            }
        }
        wakeups += cpu_events > 0;
        if (cpu_events && !moved) {
            /* ready but no full page (a tiny ring): do not spin on it */
            idle_wakeups++;
            struct timespec pause = {0, SPIN_PAUSE_NS};
            nanosleep(&pause, NULL);
        }
    }
    return how;
}

int main(int argc, char **argv)
{
    if (argc != 7)
        die("usage: %s INSTANCE OUTDIR PAGE_SIZE CPUS AVOID LOCK", argv[0]);
    const char *instance = argv[1], *outdir = argv[2];
    page_size = (size_t)parse_u64(argv[3], "PAGE_SIZE");
    if (page_size < 512 || page_size > (1u << 20) || (page_size & (page_size - 1)))
        die("PAGE_SIZE %zu is not a power of two between 512 and 1 MiB", page_size);
    int *cpu_ids, *avoid;
    int ncpus = parse_list(argv[4], &cpu_ids);
    int navoid = parse_list(argv[5], &avoid);
    if (!ncpus)
        die("no CPUs to read");

    /* Ctrl-C, a closed terminal or a SIGTERM to the whole process group: jitterscope handles them, finishes
     * its run and then says "stop"; ended here, the pages still in the rings would be lost. */
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);

    int lock = open(argv[6], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (lock < 0 || flock(lock, LOCK_EX))
        die("cannot lock %s: %s", argv[6], strerror(errno));
    /* on the probed CPUs themselves (no other), a raised priority would only move the noise it makes */
    const char *priority = keep_off(avoid, navoid) ? raise_priority() : "unchanged";

    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        die("epoll_create1: %s", strerror(errno));
    struct cpu *cpus = open_cpus(instance, outdir, cpu_ids, ncpus, ep);
    open_splice_pipe();
    struct epoll_event ev_in = {.events = EPOLLIN | EPOLLHUP, .data.u64 = (uint64_t)(int64_t)TAG_STDIN};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev_in))
        die("epoll on stdin: %s", strerror(errno));
    char *buf = js_malloc(page_size);
    fputs("ready\n", stdout);
    fflush(stdout);

    enum ending how = read_until_told(ep, cpus);
    if (how == PARENT_GONE)
        stop_tracing(instance);
    for (int i = 0; i < ncpus; i++)
        drain(&cpus[i], buf);
    for (int i = 0; i < ncpus; i++)
        if (close(cpus[i].out))
            die("closing %s: %s", cpus[i].path, strerror(errno));
    report(outdir, cpus, ncpus, how, priority);
    return 0;
}
