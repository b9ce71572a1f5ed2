/*
 * recorder.c - the recorder behind `memdiff record` and `memdiff run` (recorder.h): start a
 * command with the mark channel (or attach to a pid), poll its totals every interval, take a
 * snapshot at the start, when resident memory moved beyond the threshold, at a new peak, at
 * each mark, on SIGUSR1 and at exit, and append all of it to a timeline file.
 *
 * The exit snapshot: a started command is traced with PTRACE_SEIZE and PTRACE_O_TRACEEXIT only
 * (no stop at exec, none at syscalls), so it stops once more when it exits, its address space
 * still whole (ptrace(2), PTRACE_EVENT_EXIT). Where ptrace is refused (Yama ptrace_scope 3, a
 * seccomp profile) the last recorded snapshot stands in, and the result says why.
 */
#define _GNU_SOURCE /* pipe2, __WALL */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"

static volatile sig_atomic_t stop_asked, snap_asked;

static void on_stop(int sig)
{
    (void)sig;
    stop_asked = 1;
}

static void on_snap(int sig)
{
    (void)sig;
    snap_asked = 1;
}

/* Only wakes the wait for marks (ppoll returns EINTR) when the child stops or exits. */
static void on_child(int sig)
{
    (void)sig;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void rec_config_init(rec_config *c, const char *cmd)
{
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    c->interval_ns = 100000000u;
    c->depth = MEMDIFF_DEPTH_STANDARD;
    c->threshold_pct = 5;
}

int rec_config_opt(rec_config *c, int id, const char *value)
{
    switch (id) {
    case CLI_OPT_HELP:
        c->help = 1;
        return 0;
    case REC_OPT_JSON:
        c->json = 1;
        return 0;
    case REC_OPT_OUTPUT:
        c->output = value;
        return 0;
    case REC_OPT_INTERVAL:
        if (cli_parse_duration(value, &c->interval_ns) != 0 || c->interval_ns < 1000000u)
            return cli_usage_error(c->cmd, "bad interval '%s' (at least 1ms)", value);
        return 0;
    case REC_OPT_DEPTH:
        if (cli_parse_depth(value, &c->depth) != 0)
            return cli_usage_error(c->cmd, "bad depth '%s' (fast, standard, deep)", value);
        return 0;
    case REC_OPT_PSS:
        c->snapshot_flags |= MEMDIFF_SNAPSHOT_SMAPS_PSS;
        return 0;
    case REC_OPT_THRESHOLD: {
        size_t n = strlen(value);
        int pct;
        char num[16];
        if (n > 1 && n < sizeof num && value[n - 1] == '%') {
            memcpy(num, value, n - 1);
            num[n - 1] = '\0';
            if (cli_parse_count(num, &pct) != 0 || pct > 1000)
                return cli_usage_error(c->cmd, "bad threshold '%s' (1%% to 1000%%)", value);
            c->threshold_pct = (unsigned)pct;
            c->threshold_bytes = 0;
            return 0;
        }
        if (cli_parse_size(value, &c->threshold_bytes) != 0 || c->threshold_bytes <= 0)
            return cli_usage_error(c->cmd, "bad threshold '%s' (a size such as 4M, or 5%%)",
                                   value);
        return 0;
    }
    case REC_OPT_NO_PTRACE:
        c->no_ptrace = 1;
        return 0;
    case REC_OPT_QUIET:
        c->quiet = 1;
        return 0;
    default:
        return 1;
    }
}

void rec_result_free(rec_result *res)
{
    if (res->last != res->peak)
        memdiff_snapshot_free(res->last);
    memdiff_snapshot_free(res->peak);
    res->last = res->peak = NULL;
}

/* ---- one recording ---------------------------------------------------------------------- */

typedef struct recorder {
    const rec_config *c;
    int pid;
    int child;   /* 1: started here (its status is ours to reap) */
    int traced;  /* 1: seized with PTRACE_O_TRACEEXIT */
    memdiff_timeline_writer *w;
    memdiff_mark_listener *marks;
    rec_result *res;
    uint64_t rss_at_snap;  /* VmRSS polled before the last snapshot */
    uint64_t hwm_at_peak;  /* VmHWM polled before the last snapshot taken for a peak */
    uint64_t prev_rss;     /* VmRSS of the poll before the last */
    uint64_t snap_done;    /* monotonic ns when the last snapshot ended */
    uint64_t snap_cost;    /* how long it took */
} recorder;

static int write_failed(recorder *r, int rc)
{
    char what[1100];
    snprintf(what, sizeof what, "writing the timeline %s failed (the records before are kept)",
             r->c->output);
    cli_error(r->c->cmd, rc, what);
    return CLI_EXIT_ERROR;
}

static uint64_t threshold(const recorder *r, uint64_t rss)
{
    if (r->c->threshold_bytes > 0)
        return (uint64_t)r->c->threshold_bytes;
    uint64_t t = rss / 100u * r->c->threshold_pct;
    return t < (uint64_t)REC_THRESHOLD_FLOOR ? (uint64_t)REC_THRESHOLD_FLOOR : t;
}

/* Polls and appends a sample. 1: the process is gone; 0; CLI_EXIT_ERROR. */
static int sample(recorder *r)
{
    memdiff_process_totals t;
    int rc = memdiff_poll(r->pid, &t);
    if (rc == MEMDIFF_ESRCH)
        return 1;
    if (rc)
        return cli_error(r->c->cmd, rc, "cannot poll the process");
    r->prev_rss = r->res->samples ? r->res->last_totals.vm_rss : t.vm_rss;
    r->res->last_totals = t;
    r->res->samples++;
    if (r->w && (rc = memdiff_timeline_add_sample(r->w, now_ns(), &t)))
        return write_failed(r, rc);
    return 0;
}

/* Takes and appends a snapshot for cause. 1: the process is gone; 0; CLI_EXIT_ERROR. */
static int snapshot(recorder *r, unsigned cause)
{
    memdiff_options o;
    memdiff_options_init(&o);
    o.pid = r->pid;
    o.depth = r->c->depth;
    o.flags = r->c->snapshot_flags;
    memdiff_snapshot *s = NULL;
    uint64_t t0 = mono_ns();
    int rc = memdiff_snapshot_take(&o, &s);
    /* ECHANGED: the process exec'd during the snapshot and its retake (a shell or a launcher
     * that exec's the program, such as pyenv's shims): a few more tries, then this snapshot is
     * left out with a warning rather than ending the recording. */
    for (int tries = 0; rc == MEMDIFF_ECHANGED && tries < 3; tries++)
        rc = memdiff_snapshot_take(&o, &s);
    r->snap_done = mono_ns();
    r->snap_cost = r->snap_done - t0;
    if (rc == MEMDIFF_ESRCH)
        return 1;
    if (rc == MEMDIFF_ECHANGED) {
        fprintf(stderr, "memdiff %s: warning: no snapshot of pid %d now: ", r->c->cmd, r->pid);
        cli_put_text(stderr, memdiff_last_error());
        fputc('\n', stderr);
        return 0;
    }
    if (rc) {
        char what[64];
        snprintf(what, sizeof what, "cannot snapshot pid %d", r->pid);
        return cli_error(r->c->cmd, rc, what);
    }
    if (r->w && (rc = memdiff_timeline_add_snapshot(r->w, s, cause))) {
        memdiff_snapshot_free(s);
        return write_failed(r, rc);
    }
    r->res->snapshots++;
    r->rss_at_snap = r->res->last_totals.vm_rss;
    if (cause & (MEMDIFF_CAUSE_PEAK | MEMDIFF_CAUSE_START))
        r->hwm_at_peak = r->res->last_totals.vm_hwm;
    /* Keep the one with the most resident (run's "at the peak") and the newest. */
    memdiff_snapshot_info si, pi;
    memdiff_snapshot_get_info(s, &si);
    rec_result *res = r->res;
    if (res->last != res->peak)
        memdiff_snapshot_free(res->last);
    res->last = s;
    if (!res->peak || (memdiff_snapshot_get_info(res->peak, &pi),
                       si.resident_bytes >= pi.resident_bytes)) {
        memdiff_snapshot_free(res->peak);
        res->peak = s;
    }
    return 0;
}

/* The snapshot the last sample calls for, if any. A new peak is taken where the growth stops
 * (the first poll that is no higher than the one before), so that a peak held for an interval
 * is caught whole; while memory keeps moving, a snapshot for the change waits until the
 * recorder has spent at most 1/REC_DUTY of its time in such snapshots, so that a process growing
 * by gigabytes is not slowed by a snapshot at every poll (docs/cli.md, "record"). */
#define REC_DUTY 100u /* at most 1/100 of the time in change snapshots */

static unsigned due(const recorder *r)
{
    const memdiff_process_totals *t = &r->res->last_totals;
    unsigned cause = 0;
    uint64_t rss = t->vm_rss, base = r->rss_at_snap;
    uint64_t moved = rss > base ? rss - base : base - rss;
    int rested = mono_ns() - r->snap_done >= REC_DUTY * r->snap_cost;
    if (moved > threshold(r, base) && rested)
        cause |= MEMDIFF_CAUSE_CHANGE;
    if (t->vm_hwm > r->hwm_at_peak + threshold(r, r->hwm_at_peak) &&
        (rss <= r->prev_rss || rested))
        cause |= MEMDIFF_CAUSE_PEAK;
    if (snap_asked) {
        snap_asked = 0;
        cause |= MEMDIFF_CAUSE_REQUEST;
    }
    return cause;
}

/* Appends the marks that came, each with a sample and a snapshot. 1 gone; 0; error. */
static int take_marks(recorder *r, uint64_t wait_ns)
{
    if (!r->marks) {
        if (wait_ns) {
            struct timespec ts = {(time_t)(wait_ns / 1000000000u),
                                  (long)(wait_ns % 1000000000u)};
            nanosleep(&ts, NULL);
        }
        return 0;
    }
    for (;;) {
        memdiff_mark_msg m;
        int got = memdiff_mark_receive(r->marks, wait_ns, &m);
        wait_ns = 0;
        if (got < 0)
            return cli_error(r->c->cmd, got, "cannot receive marks");
        if (got == 0)
            return 0;
        r->res->marks++;
        int rc;
        if (r->w && (rc = memdiff_timeline_add_mark(r->w, m.time_ns, m.pid, m.label)))
            return write_failed(r, rc);
        if ((rc = sample(r)) || (rc = snapshot(r, MEMDIFF_CAUSE_MARK)))
            return rc;
    }
}

/* A child's status change (waitpid). 1: it ended (res->how, code set); 0; error. */
static int child_event(recorder *r, int status)
{
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
        r->res->how = WIFEXITED(status) ? MEMDIFF_EXIT_STATUS : MEMDIFF_EXIT_SIGNAL;
        r->res->code = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
        return 1;
    }
    if (!WIFSTOPPED(status))
        return 0;
    int event = status >> 16;
    if (event == PTRACE_EVENT_EXIT) {
        /* Stopped in exit: marks sent before it and the address space as it ends. */
        int rc = take_marks(r, 0);
        if (!rc)
            rc = sample(r);
        if (!rc)
            rc = snapshot(r, MEMDIFF_CAUSE_EXIT);
        if (rc == 0)
            r->res->exit_stopped = 1;
        ptrace(PTRACE_DETACH, r->pid, 0, 0);
        r->traced = 0;
        return rc == 1 ? 0 : rc;
    }
    if (event == PTRACE_EVENT_STOP) {
        /* A group stop (SIGSTOP, Ctrl-Z): stay stopped as without a tracer. */
        ptrace(PTRACE_LISTEN, r->pid, 0, 0);
        return 0;
    }
    /* A signal on its way to the child: deliver it. */
    ptrace(PTRACE_CONT, r->pid, 0, (void *)(long)WSTOPSIG(status));
    return 0;
}

/* Starts argv: the child waits on a pipe until it is seized, then execs with the mark channel
 * in MEMDIFF_MARK_FD. Returns 0, 126/127 after a message when it cannot be run, or an error. */
static int start(recorder *r, char *const *argv)
{
    int go[2], err[2];
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        fprintf(stderr, "memdiff %s: pipe: %s\n", r->c->cmd, strerror(errno));
        return CLI_EXIT_ERROR;
    }
    int mark_fd = r->marks ? memdiff_mark_listener_child_fd(r->marks) : -1;
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "memdiff %s: fork: %s\n", r->c->cmd, strerror(errno));
        return CLI_EXIT_ERROR;
    }
    if (pid == 0) {
        char c;
        close(go[1]);
        close(err[0]);
        signal(SIGXFSZ, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGUSR1, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (read(go[0], &c, 1) != 1)
            _exit(127);
        char var[32];
        snprintf(var, sizeof var, "%d", mark_fd);
        if (mark_fd >= 0 && (fcntl(mark_fd, F_SETFD, 0) != 0 ||
                             setenv("MEMDIFF_MARK_FD", var, 1) != 0))
            _exit(127);
        execvp(argv[0], argv);
        int e = errno;
        if (write(err[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(e == ENOENT ? 127 : 126);
    }
    close(go[0]);
    close(err[1]);
    r->pid = pid;
    r->child = 1;
    if (!r->c->no_ptrace) {
        if (ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)PTRACE_O_TRACEEXIT) == 0)
            r->traced = 1;
        else
            r->res->no_stop_why = errno == EPERM ? "ptrace is not permitted here"
                                                 : "ptrace failed";
    }
    char c = 1;
    ssize_t wr = write(go[1], &c, 1);
    close(go[1]);
    int e = 0;
    ssize_t n = wr == 1 ? read(err[0], &e, sizeof e) : 0;
    close(err[0]);
    if (wr != 1 || n == (ssize_t)sizeof e) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        fprintf(stderr, "memdiff %s: cannot run '", r->c->cmd);
        cli_put_text(stderr, argv[0]);
        fprintf(stderr, "': %s\n", strerror(wr == 1 ? e : errno));
        return e == ENOENT ? 127 : 126;
    }
    return 0;
}

static void install_handlers(int child, int forward_stop)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: a signal ends the wait for marks at once. */
    sa.sa_handler = forward_stop ? SIG_IGN : on_stop;
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_snap;
    sigaction(SIGUSR1, &sa, NULL);
    if (child) {
        sa.sa_handler = on_child;
        sigaction(SIGCHLD, &sa, NULL);
    }
    /* A file size limit: a write error to report, not a signal that kills the recorder. */
    signal(SIGXFSZ, SIG_IGN);
}

static int loop(recorder *r)
{
    rec_result *res = r->res;
    int rc = sample(r);
    if (!rc)
        rc = snapshot(r, MEMDIFF_CAUSE_START);
    uint64_t next = mono_ns();
    while (rc == 0) {
        if (r->child) {
            int status;
            pid_t got = waitpid(r->pid, &status, WNOHANG | __WALL);
            if (got == r->pid) {
                if ((rc = child_event(r, status)) != 0)
                    break;
                continue; /* more events may be waiting */
            }
        }
        if (stop_asked && r->c->forward_stop && r->child) {
            stop_asked = 0;
            kill(r->pid, SIGTERM);
        } else if (stop_asked) {
            res->how = MEMDIFF_EXIT_DETACHED;
            break;
        }
        uint64_t now = mono_ns();
        if (now >= next) {
            next += r->c->interval_ns;
            if (next < now)
                next = now + r->c->interval_ns; /* a slow snapshot: no burst of catch-up polls */
            if ((rc = sample(r)) != 0)
                break;
            unsigned cause = due(r);
            if (cause && (rc = snapshot(r, cause)) != 0)
                break;
            continue;
        }
        rc = take_marks(r, next - now);
    }
    if (rc == 1 && r->child) {
        /* Gone without an exit stop (no ptrace): its status is waiting. */
        int status;
        while (waitpid(r->pid, &status, __WALL) == r->pid)
            if (child_event(r, status) == 1)
                break;
        rc = 0;
    } else if (rc == 1) {
        res->how = MEMDIFF_EXIT_VANISHED;
        res->code = 0;
        rc = 0;
    }
    if (rc)
        return rc;
    res->end_ns = now_ns();
    if (r->w && (rc = memdiff_timeline_add_exit(r->w, res->end_ns, res->how, res->code)))
        return write_failed(r, rc);
    return 0;
}

int rec_record(const rec_config *c, int pid, char *const *argv, rec_result *res)
{
    memset(res, 0, sizeof *res);
    recorder r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.res = res;
    r.pid = pid;
    install_handlers(pid == 0, c->forward_stop);
    int rc = memdiff_mark_listen(pid, &r.marks);
    if (rc && pid == 0)
        return cli_error(c->cmd, rc, "cannot open the mark channel");
    if (rc) {
        if (!c->quiet)
            fprintf(stderr, "memdiff %s: no marks from pid %d: %s\n", c->cmd, pid,
                    cli_detail(rc));
        r.marks = NULL;
    }
    res->start_ns = now_ns();
    if (pid == 0 && (rc = start(&r, argv)) != 0) {
        memdiff_mark_listener_free(r.marks);
        return rc;
    }
    if (c->output) {
        memdiff_timeline_header h = MEMDIFF_TIMELINE_HEADER_INIT;
        h.pid = r.pid;
        h.start_ns = res->start_ns;
        h.interval_ns = c->interval_ns;
        h.argv = (const char *const *)argv;
        if ((rc = memdiff_timeline_create(c->output, &h, &r.w)) != 0) {
            char what[1100];
            snprintf(what, sizeof what, "cannot create the timeline %s", c->output);
            cli_error(c->cmd, rc, what);
            if (r.child) {
                /* Nothing records it: let it run on its own. */
                if (r.traced)
                    ptrace(PTRACE_DETACH, r.pid, 0, 0);
            }
            memdiff_mark_listener_free(r.marks);
            return CLI_EXIT_ERROR;
        }
    }
    res->pid = r.pid;
    rc = loop(&r);
    /* A tracee still running is let go when the recorder exits (ptrace(2)): a detached
     * recording leaves it as it found it. */
    if (r.w)
        res->file_bytes = memdiff_timeline_writer_bytes(r.w);
    int crc = r.w ? memdiff_timeline_close(r.w) : 0;
    memdiff_mark_listener_free(r.marks);
    if (rc == 0 && crc)
        rc = write_failed(&r, crc);
    if (rc)
        rec_result_free(res);
    return rc;
}

void rec_json_uint(FILE *out, const char *key, uint64_t v)
{
    /* 2^53: beyond it a double (jq, JavaScript) no longer holds every integer. */
    if (v <= (UINT64_C(1) << 53))
        fprintf(out, "\"%s\":%" PRIu64, key, v);
    else
        fprintf(out, "\"%s\":\"%" PRIu64 "\"", key, v);
}

/* Length of the valid UTF-8 sequence at p (n bytes left), 0 when p starts none (RFC 3629:
 * no overlong forms, surrogates or code points above U+10FFFF). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t len = p[0] >= 0xC2 && p[0] <= 0xDF ? 2 : p[0] >= 0xE0 && p[0] <= 0xEF ? 3
                 : p[0] >= 0xF0 && p[0] <= 0xF4                             ? 4
                                                                            : 0;
    if (!len || len > n)
        return 0;
    unsigned lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (p[0] == 0xE0)
        lo = 0xA0;
    else if (p[0] == 0xED)
        hi = 0x9F;
    else if (p[0] == 0xF0)
        lo = 0x90;
    else if (p[0] == 0xF4)
        hi = 0x8F;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return len;
}

void rec_json_string(FILE *out, const char *key, const char *s)
{
    /* Pairs: a byte at an even index, the letter after its backslash after it (json.c's
     * short escapes); a letter found at an odd index is no escape. */
    static const char short_esc[] = "\bb\ff\nn\rr\tt\"\"\\\\";
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    int exact = 1;
    fprintf(out, "\"%s\":\"", key);
    while (n > 0) {
        size_t len = utf8_len(p, n);
        const char *e = *p ? strchr(short_esc, *p) : NULL;
        if (e && (e - short_esc) % 2 == 0)
            fprintf(out, "\\%c", e[1]);
        else if (len == 0)
            fputs("\\ufffd", out);
        else if (*p < 0x20 || *p == 0x7F)
            fprintf(out, "\\u%04x", *p);
        else
            fwrite(p, 1, len, out);
        exact &= len != 0;
        len = len ? len : 1;
        p += len;
        n -= len;
    }
    fputc('"', out);
    if (exact)
        return;
    fprintf(out, ",\"%s_hex\":\"", key);
    for (p = (const unsigned char *)s; *p; p++)
        fprintf(out, "%02x", *p);
    fputc('"', out);
}

void rec_json_head(FILE *out, const char *kind, const rec_result *res)
{
    static const char *const hows[] = {"unknown", "status", "signal", "vanished", "detached"};
    unsigned how = (unsigned)res->how < 5 ? (unsigned)res->how : 0;
    fprintf(out, "{\"version\":3,\"kind\":\"%s\",\"pid\":%d,\"exit\":{\"how\":\"%s\",\"code\":%d},"
                 "\"duration_s\":%.9f,",
            kind, res->pid, hows[how], res->code, (double)(res->end_ns - res->start_ns) / 1e9);
    rec_json_uint(out, "vm_hwm", res->last_totals.vm_hwm);
    fputc(',', out);
    rec_json_uint(out, "samples", res->samples);
    fputc(',', out);
    rec_json_uint(out, "snapshots", res->snapshots);
    fputc(',', out);
    rec_json_uint(out, "marks", res->marks);
}
