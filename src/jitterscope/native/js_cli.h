/*
 * Command-line plumbing shared by the probe and the injector (header-only, so
 * the build stays "one .c per program").  Define JS_PROGRAM, the program's name
 * (the prefix of its stderr messages, which jitterscope strips), before
 * including it.
 */
#ifndef JS_CLI_H
#define JS_CLI_H

#ifndef JS_PROGRAM
#error "define JS_PROGRAM before including js_cli.h"
#endif

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* One line on stderr, exit code 2: what jitterscope turns into its own error. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(JS_PROGRAM ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static __attribute__((unused)) uint64_t parse_u64(const char *s, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        die("%s must be a non-negative integer, got '%s'", what, s);
    return v;
}

/* Die with the parent: a killed jitterscope must not leave a program spinning
 * on a CPU.  SIGTERM, so the program still ends cleanly (finishes its files).
 * Returns 0, or -1 when the parent is already gone (then exit at once). */
static __attribute__((unused)) int js_die_with_parent(void)
{
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    return getppid() == parent ? 0 : -1;
}

/* write() all of `buf` (retrying short writes and EINTR); dies naming `path` on an error. */
static __attribute__((unused)) void js_write_all(int fd, const void *buf, size_t n, const char *path)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die("writing %s: %s", path, strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Pin the calling process to one CPU (a no-op for cpu < 0); dies with a one-line reason. */
static __attribute__((unused)) void js_pin_process(int cpu)
{
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set))
        die("cannot run on CPU %d: %s", cpu, strerror(errno));
}

#endif
