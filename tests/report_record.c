/*
 * report_record.c - timelines for the report tests (tests/report_check.py), written through the
 * library's API the way `memdiff record` writes them:
 *
 *   report_record phases OUT TARGET FILE   records TARGET (timeline_target.c) started with FILE:
 *                                          mark "begin", 64 MiB written, mark "allocated", half
 *                                          unmapped, mark "freed half", FILE mapped and read,
 *                                          mark "mapped file", exit 7; a poll every 2 ms, a
 *                                          snapshot at each mark, then the exit
 *   report_record few OUT N LABEL          this process: max(N, 3) polls, a snapshot after each
 *                                          of the first N, a mark LABEL (any bytes: the escaping
 *                                          tests) after the second, an exit record
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memdiff.h"

#define MS (UINT64_C(1000000))

extern char **environ;

static void die(const char *what)
{
    fprintf(stderr, "report_record: %s: %s\n", what, memdiff_last_error());
    exit(2);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The target with the listener's child end as MEMDIFF_MARK_FD and a pipe on its stdin, whose
 * write end (*go) lets it go on after each mark. */
static pid_t start_target(const memdiff_mark_listener *l, char *const argv[], int *go)
{
    int fds[2];
    int child_fd = memdiff_mark_listener_child_fd(l);
    if (pipe(fds) != 0 || child_fd < 0)
        die("pipe");
    char var[64];
    snprintf(var, sizeof var, "MEMDIFF_MARK_FD=%d", child_fd);
    if (setenv("MEMDIFF_MARK_FD", var + strlen("MEMDIFF_MARK_FD="), 1) != 0)
        die("setenv");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        /* The recorder's end is close-on-exec; the child's must survive exec. */
        if (dup2(fds[0], 0) < 0 || fcntl(child_fd, F_SETFD, 0) != 0)
            _exit(126);
        close(fds[1]);
        execve(argv[0], argv, environ);
        _exit(127);
    }
    close(fds[0]);
    *go = fds[1];
    return pid;
}

static int phases(const char *out, const char *target, const char *file)
{
    memdiff_mark_listener *l = NULL;
    if (memdiff_mark_listen(0, &l) != MEMDIFF_OK)
        die("memdiff_mark_listen");
    char *argv[] = {(char *)target, (char *)file, NULL};
    int go;
    pid_t pid = start_target(l, argv, &go);
    memdiff_timeline_header h = MEMDIFF_TIMELINE_HEADER_INIT;
    h.pid = pid;
    h.interval_ns = 2 * MS;
    h.argv = (const char *const *)argv;
    memdiff_timeline_writer *w = NULL;
    if (memdiff_timeline_create(out, &h, &w) != MEMDIFF_OK)
        die("memdiff_timeline_create");
    int status = 0;
    for (;;) {
        memdiff_mark_msg m;
        int got = memdiff_mark_receive(l, 2 * MS, &m);
        if (got < 0)
            die("memdiff_mark_receive");
        memdiff_process_totals t;
        int rc = memdiff_poll(pid, &t);
        if (rc == MEMDIFF_ESRCH) {
            if (waitpid(pid, &status, 0) != pid)
                die("waitpid");
            break;
        }
        if (rc != MEMDIFF_OK || memdiff_timeline_add_sample(w, now_ns(), &t) != MEMDIFF_OK)
            die("poll");
        if (got == 1) {
            if (memdiff_timeline_add_mark(w, m.time_ns, m.pid, m.label) != MEMDIFF_OK)
                die("memdiff_timeline_add_mark");
            memdiff_options o = MEMDIFF_OPTIONS_INIT;
            o.pid = pid;
            memdiff_snapshot *s = NULL;
            if (memdiff_snapshot_take(&o, &s) != MEMDIFF_OK ||
                memdiff_timeline_add_snapshot(w, s, MEMDIFF_CAUSE_MARK) != MEMDIFF_OK)
                die("snapshot");
            memdiff_snapshot_free(s);
            char c = 1;
            if (write(go, &c, 1) != 1)
                die("write");
        }
    }
    close(go);
    if (!WIFEXITED(status) ||
        memdiff_timeline_add_exit(w, now_ns(), MEMDIFF_EXIT_STATUS, WEXITSTATUS(status)) ||
        memdiff_timeline_close(w) != MEMDIFF_OK)
        die("exit");
    memdiff_mark_listener_free(l);
    return 0;
}

static int few(const char *out, int nsnaps, const char *label)
{
    const char *argv[] = {"report_record", label, NULL};
    memdiff_timeline_header h = MEMDIFF_TIMELINE_HEADER_INIT;
    h.pid = (int)getpid();
    h.interval_ns = 10 * MS;
    h.argv = argv;
    memdiff_timeline_writer *w = NULL;
    if (memdiff_timeline_create(out, &h, &w) != MEMDIFF_OK)
        die("memdiff_timeline_create");
    for (int i = 0; i < 3 || i < nsnaps; i++) {
        memdiff_process_totals t;
        if (memdiff_poll(0, &t) != MEMDIFF_OK ||
            memdiff_timeline_add_sample(w, now_ns(), &t) != MEMDIFF_OK)
            die("poll");
        if (i == 1 && memdiff_timeline_add_mark(w, now_ns(), (int)getpid(), label) != MEMDIFF_OK)
            die("memdiff_timeline_add_mark");
        if (i < nsnaps) {
            memdiff_snapshot *s = NULL;
            if (memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &s) != MEMDIFF_OK ||
                memdiff_timeline_add_snapshot(w, s, i ? MEMDIFF_CAUSE_REQUEST
                                                      : MEMDIFF_CAUSE_START) != MEMDIFF_OK)
                die("snapshot");
            memdiff_snapshot_free(s);
        }
    }
    if (memdiff_timeline_add_exit(w, now_ns(), MEMDIFF_EXIT_DETACHED, 0) != MEMDIFF_OK ||
        memdiff_timeline_close(w) != MEMDIFF_OK)
        die("exit");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "phases") == 0)
        return phases(argv[2], argv[3], argv[4]);
    if (argc == 5 && strcmp(argv[1], "few") == 0)
        return few(argv[2], atoi(argv[3]), argv[4]);
    fputs("usage: report_record phases OUT TARGET FILE | few OUT N LABEL\n", stderr);
    return 2;
}
