/* jitterscope-watchdog: undo a session's changes when the jitterscope that made them dies.
 *
 *   jitterscope-watchdog --pid PID -- CMD [ARG...]
 *
 * Started by the session lifecycle (session.py) in a session of its own (terminal signals do not
 * reach it), with its stdin the read end of a pipe whose write end only PID holds.  It waits for
 * whichever comes first:
 *   - the byte 'q' on stdin: the session ended and undid its own changes; exit 0 doing nothing;
 *   - PID's death (pidfd_open + poll: readable once the process has exited, after the kernel has
 *     closed its files, so its journal lock is free), or EOF on stdin where pidfd_open is missing:
 *     exec CMD (jitterscope restore --quiet), which undoes every journal whose owner is gone.
 * Killing jitterscope with SIGKILL therefore resumes, thaws, unpins and unthrottles what it held at
 * once, not at "the next jitterscope command".  PR_SET_PDEATHSIG is not used: it fires on the death
 * of the thread that forked us, not of the process. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static int usage(void)
{
    fprintf(stderr, "usage: jitterscope-watchdog --pid PID -- CMD [ARG...]\n");
    return 2;
}

static int alive(pid_t pid)
{
    return kill(pid, 0) == 0 || errno == EPERM;
}

/* After EOF without pidfd: wait (up to 10 s) until PID is gone, so its journal lock is released. */
static void wait_gone(pid_t pid)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (int i = 0; i < 500 && alive(pid); i++)
        nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    pid_t pid = 0;
    int cmd = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pid") == 0 && i + 1 < argc) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (!end || *end || v <= 1)
                return usage();
            pid = (pid_t)v;
        } else if (strcmp(argv[i], "--") == 0) {
            cmd = i + 1;
            break;
        } else {
            return usage();
        }
    }
    if (!pid || !cmd || cmd >= argc)
        return usage();
    /* Ignored: only the session (by 'q') or its death ends the wait; SIGKILL still works. */
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);

    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    struct pollfd fds[2] = {{.fd = STDIN_FILENO, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
    int stdin_open = 1;
    for (;;) {
        fds[0].fd = stdin_open ? STDIN_FILENO : -1;
        int n = poll(fds, pidfd >= 0 ? 2 : 1, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "jitterscope-watchdog: poll: %s\n", strerror(errno));
            break;
        }
        if (pidfd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
            break; /* PID exited */
        if (stdin_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            char c = 0;
            ssize_t r = read(STDIN_FILENO, &c, 1);
            if (r == 1 && c == 'q')
                return 0; /* disarmed: the session undid its own changes */
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
                stdin_open = 0; /* PID's end of the pipe closed: it is dying */
                if (pidfd < 0) {
                    wait_gone(pid);
                    break;
                }
            }
        }
    }
    if (pidfd >= 0)
        close(pidfd);
    execvp(argv[cmd], argv + cmd);
    fprintf(stderr, "jitterscope-watchdog: cannot run %s: %s\n", argv[cmd], strerror(errno));
    return 1;
}
