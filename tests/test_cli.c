/*
 * test_cli.c - the real memdiff binary (MEMDIFF_CLI_PATH) run through the shell against
 * processes this test starts: tests/cli_target.c, which allocates and touches 8 MiB when told
 * to, between two snapshots, and answers on a pipe when done. Checks exit statuses (0 ok, 1
 * --fail-on held, 2 usage or error), what goes to stdout and what to stderr.
 */
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "special_files.h"
#include "suites.h"
#include "synth.h"

static char dir[64];
static char out[1 << 18], err[1 << 16];

static void slurp(const char *name, char *buf, size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

/* Starts "memdiff ARGS" (ARGS a shell fragment) in dir, its output going to files there. Not
 * system(): that blocks SIGCHLD and waits, and some tests must reap a target meanwhile. */
static pid_t start_v(const char *fmt, va_list ap)
{
    char args[1024], cmd[1400];
    vsnprintf(args, sizeof args, fmt, ap);
    snprintf(cmd, sizeof cmd, "cd %s && '%s' %s >stdout.txt 2>stderr.txt", dir, MEMDIFF_CLI_PATH,
             args);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static pid_t start(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pid_t pid = start_v(fmt, ap);
    va_end(ap);
    return pid;
}

/* Waits for a run started by start(); its exit status, its output in out and err. */
static int finish(pid_t pid)
{
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    slurp("stdout.txt", out, sizeof out);
    slurp("stderr.txt", err, sizeof err);
    ck_assert_msg(WIFEXITED(st), "memdiff did not exit normally (status 0x%x)", st);
    return WEXITSTATUS(st);
}

static int run(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pid_t pid = start_v(fmt, ap);
    va_end(ap);
    return finish(pid);
}

/* A shell command in dir; its exit status. */
static int sh(const char *fmt, ...)
{
    char c[1024], cmd[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c, sizeof c, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd %s && %s", dir, c);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define ASSERT_RUN(expect, ...)                                                                \
    do {                                                                                       \
        int rc_ = run(__VA_ARGS__);                                                            \
        ck_assert_msg(rc_ == (expect), "memdiff %s: exit %d, expected %d\nstdout:\n%.2000s\n"  \
                      "stderr:\n%s", #__VA_ARGS__, rc_, (expect), out, err);                   \
    } while (0)

static void setup(void)
{
    strcpy(dir, "/tmp/memdiff_cli_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_cli: could not remove %s\n", dir);
}

/* ---- the target process ----------------------------------------------------------------- */

typedef struct target {
    pid_t pid;
    int to, from; /* pipe ends: commands to the child, answers from it */
} target;

static target start_target(void)
{
    int down[2], up[2];
    ck_assert_int_eq(pipe(down), 0);
    ck_assert_int_eq(pipe(up), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (dup2(down[0], 0) < 0 || dup2(up[1], 1) < 0)
            _exit(126);
        close(down[0]);
        close(down[1]);
        close(up[0]);
        close(up[1]);
        execl(MEMDIFF_CLI_TARGET_PATH, "memdiff_cli_target", (char *)NULL);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    target t = {pid, down[1], up[0]};
    char c;
    ck_assert_int_eq(read(t.from, &c, 1), 1);
    ck_assert_int_eq(c, 'r');
    return t;
}

static void tell(const target *t, char cmd)
{
    char c;
    ck_assert_int_eq(write(t->to, &cmd, 1), 1);
    ck_assert_int_eq(read(t->from, &c, 1), 1);
    ck_assert_int_eq(c, cmd);
}

static void stop_target(target *t)
{
    char q = 'q';
    if (write(t->to, &q, 1) != 1)
        kill(t->pid, SIGKILL);
    int st;
    waitpid(t->pid, &st, 0);
    close(t->to);
    close(t->from);
}

/* A pid that no process has: a child's, after it was reaped. */
static pid_t dead_pid(void)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    int st;
    waitpid(pid, &st, 0);
    return pid;
}

/* ---- tests ------------------------------------------------------------------------------ */

START_TEST(help_version_and_usage_errors)
{
    ASSERT_RUN(0, "--help");
    ck_assert_ptr_nonnull(strstr(out, "usage: memdiff COMMAND"));
    ASSERT_RUN(0, "--version");
    ck_assert_ptr_nonnull(strstr(out, "memdiff " MEMDIFF_VERSION_STRING " (snapshot file format "));
    static const char *const cmds[] = {"snap", "diff", "show", "watch"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        ASSERT_RUN(0, "%s --help", cmds[i]);
        ck_assert_ptr_nonnull(strstr(out, "usage: memdiff"));
        ck_assert_str_eq(err, "");
        ASSERT_RUN(0, "help %s", cmds[i]);
    }

    ASSERT_RUN(2, "");
    ck_assert_ptr_nonnull(strstr(err, "usage: memdiff"));
    ck_assert_str_eq(out, "");
    ASSERT_RUN(2, "frobnicate");
    ck_assert_ptr_nonnull(strstr(err, "unknown command 'frobnicate'"));
    ASSERT_RUN(2, "--frobnicate");
    ASSERT_RUN(2, "diff --bogus a.mds b.mds");
    ck_assert_ptr_nonnull(strstr(err, "memdiff diff: unknown option '--bogus'"));
    ck_assert_ptr_nonnull(strstr(err, "Try 'memdiff diff --help'"));
    ASSERT_RUN(2, "diff a.mds");
    ASSERT_RUN(2, "diff a b c");
    ck_assert_ptr_nonnull(strstr(err, "unexpected argument 'c'"));
    ASSERT_RUN(2, "snap 1");
    ck_assert_ptr_nonnull(strstr(err, "no output file"));
    ASSERT_RUN(2, "snap abc -o x.mds");
    ck_assert_ptr_nonnull(strstr(err, "bad process id 'abc'"));
    ASSERT_RUN(2, "snap 1 -o x.mds --depth deepest");
    ck_assert_ptr_nonnull(strstr(err, "bad depth 'deepest'"));
    ASSERT_RUN(2, "diff a b '--fail-on=heap.grow>1M'");
    ck_assert_ptr_nonnull(strstr(err, "unknown measure 'grow'"));
    ASSERT_RUN(2, "diff a b --fail-on 'heaps.net>1M'");
    ck_assert_ptr_nonnull(strstr(err, "unknown category 'heaps'"));
    ASSERT_RUN(2, "diff a b --fail-on 'net>1Q'");
    ck_assert_ptr_nonnull(strstr(err, "bad size '1Q'"));
    ASSERT_RUN(2, "diff a b --fail-on net");
    ASSERT_RUN(2, "watch 1");
    ck_assert_ptr_nonnull(strstr(err, "no interval"));
    ASSERT_RUN(2, "watch 1 --interval 0.5us");
    ck_assert_ptr_nonnull(strstr(err, "bad interval"));
    ASSERT_RUN(2, "watch 1 --interval 1s --baseline last");
    ASSERT_RUN(2, "show");
    ASSERT_RUN(2, "show missing.mds");
    ck_assert_ptr_nonnull(strstr(err, "missing.mds"));
}
END_TEST

START_TEST(snap_of_a_missing_process_fails_naming_it)
{
    pid_t pid = dead_pid();
    ASSERT_RUN(2, "snap %d -o x.mds", (int)pid);
    char want[64];
    snprintf(want, sizeof want, "no process with pid %d\n", (int)pid);
    ck_assert_msg(strstr(err, want), "%s", err);
    ck_assert_str_eq(out, "");
    ck_assert_int_ne(sh("test -e x.mds"), 0); /* nothing written */
    ASSERT_RUN(2, "watch %d --interval 100ms --count 1", (int)pid);
    ck_assert_ptr_nonnull(strstr(err, want));
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(leak_of_8_mib_shows_in_heap)
{
    target t = start_target();
    ASSERT_RUN(0, "snap %d -o before.mds", (int)t.pid);
    ck_assert_ptr_nonnull(strstr(out, "-> before.mds"));
    tell(&t, 'a');
    ASSERT_RUN(0, "snap %d -o after.mds --depth fast", (int)t.pid);
    ASSERT_RUN(0, "snap %d -o after.mds", (int)t.pid); /* replaces the file */

    ASSERT_RUN(0, "diff before.mds after.mds");
    ck_assert_ptr_nonnull(strstr(out, "Net change:"));
    ck_assert_ptr_nonnull(strstr(out, "heap"));
    ASSERT_RUN(1, "diff before.mds after.mds --fail-on 'heap.net>1M'");
    ck_assert_ptr_nonnull(strstr(err, "--fail-on heap.net>1M holds: heap net = +"));
    ASSERT_RUN(1, "diff before.mds after.mds --fail-on 'heap.new>=8M' --no-header");
    ASSERT_RUN(1, "diff before.mds after.mds --fail-on 'heap.private>=8M'");
    ASSERT_RUN(1, "diff before.mds after.mds --fail-on 'net > 8M' --fail-on 'net>1G'");
    ASSERT_RUN(0, "diff before.mds after.mds --fail-on 'heap.net>1G'");
    ck_assert_str_eq(err, "");
    ASSERT_RUN(0, "diff before.mds after.mds --fail-on 'heap.freed>0' --fail-on 'stack.net<0'");
    ASSERT_RUN(0, "diff after.mds before.mds --fail-on 'heap.net>-8M'"); /* freed the other way */
    ASSERT_RUN(1, "diff after.mds before.mds --fail-on 'heap.net<=-8M'");
    /* What a leak leaves behind, and '=' as '==': nothing was replaced without frames moving. */
    ASSERT_RUN(1, "diff before.mds after.mds --fail-on 'net-private>=8M'");
    ck_assert_ptr_nonnull(strstr(err, "total net private = +"));
    ASSERT_RUN(0, "diff after.mds before.mds --fail-on 'net-private>0'");
    ASSERT_RUN(2, "diff before.mds after.mds --fail-on 'net=<0'");

    ASSERT_RUN(0, "diff --json before.mds after.mds");
    ck_assert_int_eq(out[0], '{');
    ASSERT_RUN(0, "diff -v before.mds after.mds");
    ASSERT_RUN(0, "show after.mds");
    ck_assert_ptr_nonnull(strstr(out, "memdiff snapshot: pid"));
    ck_assert_ptr_nonnull(strstr(out, "Category"));
    ck_assert_ptr_nonnull(strstr(out, "heap"));
    ASSERT_RUN(0, "show --json after.mds");
    ck_assert_ptr_nonnull(strstr(out, "\"categories\""));
    /* JSON has no room on a stdout that holds the snapshot; watch's two line forms exclude
     * each other. Both refused before any snapshot is taken. */
    ASSERT_RUN(2, "snap %d -o - --json", (int)t.pid);
    ck_assert_str_eq(out, "");
    ck_assert_ptr_nonnull(strstr(err, "--json: standard output holds the snapshot (-o -)"));
    ASSERT_RUN(2, "watch %d -i 1s --json --brief", (int)t.pid);
    ck_assert_str_eq(out, "");
    ck_assert_ptr_nonnull(strstr(err, "--json and --brief exclude each other"));
    ASSERT_RUN(0, "show --regions after.mds");
    ck_assert_ptr_nonnull(strstr(out, "Regions ("));
    /* Through a pipe: snapshot to stdout, shown from stdin. */
    ASSERT_RUN(0, "snap %d -o - | '%s' show -", (int)t.pid, MEMDIFF_CLI_PATH);
    ck_assert_ptr_nonnull(strstr(out, "memdiff snapshot: pid"));

    /* The heap block itself: 8 MiB new, named heap, in the default report. */
    ASSERT_RUN(0, "diff before.mds after.mds | grep -E '^ +0x.* heap +new'");
    stop_target(&t);
}
END_TEST

START_TEST(different_processes_refused_unless_forced)
{
    target t1 = start_target(), t2 = start_target();
    ASSERT_RUN(0, "snap %d -o one.mds -q", (int)t1.pid);
    ck_assert_str_eq(out, "");
    ASSERT_RUN(0, "snap %d -o two.mds -q", (int)t2.pid);
    ASSERT_RUN(2, "diff one.mds two.mds");
    char want[64];
    snprintf(want, sizeof want, "before: pid %d on host", (int)t1.pid);
    ck_assert_msg(strstr(err, want), "%s", err);
    ck_assert_ptr_nonnull(strstr(err, "use --force"));
    ASSERT_RUN(0, "diff --force one.mds two.mds");
    ck_assert_ptr_nonnull(strstr(out, "Net change:"));
    stop_target(&t2);
    stop_target(&t1);
}
END_TEST

START_TEST(damaged_files_are_errors)
{
    target t = start_target();
    ASSERT_RUN(0, "snap %d -o a.mds", (int)t.pid);
    stop_target(&t);
    ck_assert_int_eq(sh("head -c 100 a.mds > cut.mds"), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/a.mds", dir);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 200, SEEK_SET), 0);
    int c = fgetc(f);
    ck_assert_int_ne(c, EOF);
    ck_assert_int_eq(fseek(f, 200, SEEK_SET), 0);
    fputc(c ^ 0x20, f); /* one bit of one byte */
    fclose(f);
    ASSERT_RUN(2, "diff cut.mds cut.mds");
    ck_assert_ptr_nonnull(strstr(err, "cut.mds: snapshot file: truncated in the "));
    ASSERT_RUN(2, "show a.mds");
    ck_assert_ptr_nonnull(strstr(err, "checksum mismatch"));
    ASSERT_RUN(2, "show /etc/hostname");
    ck_assert_ptr_nonnull(strstr(err, "not a memdiff snapshot"));
}
END_TEST

/* snap -o to each kind of thing a path can name (special_files.h), made in the test's own
 * directory: a new path and a regular file are written; everything else is refused with exit 2
 * and "-o NAME: is a ..., not a regular file", and left as it was. -o '' is a usage error; -o -
 * is standard output. */
START_TEST(snap_writes_only_regular_files)
{
    pid_t self = getpid();
    ck_assert_int_eq(sh(": > stdout.txt && : > stderr.txt"), 0); /* counted from the start */
    for (int k = 0; k < SF_COUNT; k++) {
        const char *name = sf_kinds[k].name;
        char why[300], path[300], before[2048], after[2048];
        if (sf_make(dir, (sf_kind)k, why, sizeof why) != 0) {
            fprintf(stderr, "snap_writes_only_regular_files(%s): skipped: %s\n", name, why);
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", dir, name);
        sf_state(path, before, sizeof before);
        int entries = sf_entries(dir);
        if (sf_kinds[k].refusal) {
            ASSERT_RUN(2, "snap %d --depth fast -q -o %s", (int)self, name);
            char want[400];
            snprintf(want, sizeof want, "memdiff snap: -o %s: %s\n", name, sf_kinds[k].refusal);
            ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "expected '%s', got '%s'", want,
                          err);
            ck_assert_str_eq(out, "");
            sf_state(path, after, sizeof after);
            ck_assert_str_eq(after, before);
            ck_assert_int_eq(sf_entries(dir), entries);
        } else {
            ASSERT_RUN(0, "snap %d --depth fast -q -o %s", (int)self, name);
            ck_assert_int_eq(sh("test -f %s && ! test -L %s", name, name), 0);
            ASSERT_RUN(0, "show %s", name);
            ck_assert_int_eq(sf_entries(dir), entries + (k == SF_MISSING));
        }
    }
    ASSERT_RUN(2, "snap %d -o ''", (int)self);
    ck_assert_ptr_nonnull(strstr(err, "memdiff snap: -o: empty path"));
    ck_assert_str_eq(out, "");
    ASSERT_RUN(2, "snap %d --output=", (int)self);
    ck_assert_ptr_nonnull(strstr(err, "memdiff snap: -o: empty path"));
    /* "-" is standard output, never a file of that name. */
    ASSERT_RUN(0, "snap %d --depth fast -o - | '%s' show -", (int)self, MEMDIFF_CLI_PATH);
    ck_assert_ptr_nonnull(strstr(out, "memdiff snapshot: pid"));
    ck_assert_int_ne(sh("test -e ./-"), 0);
}
END_TEST

START_TEST(watch_a_live_process)
{
    target t = start_target();
    ASSERT_RUN(0, "watch %d --count 2 --interval 100ms", (int)t.pid);
    ck_assert_ptr_nonnull(strstr(out, "diff 1 of 2"));
    ck_assert_ptr_nonnull(strstr(out, "diff 2 of 2"));
    ck_assert_ptr_null(strstr(out, "diff 3"));
    ck_assert_ptr_nonnull(strstr(out, "Net change:"));

    /* The child grows 300 ms from now, while memdiff watches: the condition stops the watch. */
    tell(&t, 'd');
    ASSERT_RUN(1, "watch %d -i 100ms -n 50 --baseline first --fail-on 'heap.new>=8M'",
               (int)t.pid);
    ck_assert_ptr_nonnull(strstr(err, "--fail-on heap.new>=8M holds"));
    ck_assert_ptr_nonnull(strstr(out, "against the first snapshot"));
    ck_assert_ptr_null(strstr(out, "diff 50 of 50"));

    tell(&t, 'f');
    ASSERT_RUN(0, "watch %d --interval 0.1s --count 1 --verbose --no-header", (int)t.pid);
    ck_assert_ptr_null(strstr(out, "memdiff: pid"));

    /* Once more, one line per diff: the growing category is named with its net change. The
     * growth may straddle two snapshots: against the first one, it adds up. (glibc now serves
     * 8 MiB from the brk heap, having raised its mmap threshold at the free: the top pages of
     * the heap were resident already, so a little less than 8 MiB is new.) */
    tell(&t, 'd');
    ASSERT_RUN(1, "watch %d -i 100ms -n 50 --brief -b first --fail-on heap.new'>='7M",
               (int)t.pid);
    /* (Whether the first diff still shows nothing depends on how soon memdiff started: under a
     * loaded machine the growth may already be in it.) */
    ck_assert_msg(strncmp(out, "tick 1 elapsed ", 15) == 0, "%s", out);
    /* The line that stopped the watch names the heap with at least the 7 MiB asked for (8 MiB
     * once the child is done writing; on a loaded machine memdiff may look while it writes),
     * as a plain number awk reads, after the process's absolute sizes. */
    const char *h = strstr(out, " heap.net ");
    ck_assert_msg(h != NULL, "no heap in:\n%s", out);
    for (const char *later; (later = strstr(h + 1, " heap.net ")) != NULL;)
        h = later; /* the last diff's line */
    const char *line = h;
    while (line > out && line[-1] != '\n')
        line--;
    unsigned long long grown = 0, resident = 0, priv = 0;
    unsigned tick = 0;
    char end = 0;
    ck_assert_msg(sscanf(h, " heap.net %llu%c", &grown, &end) == 2 && end == '\n', "%s", out);
    ck_assert_msg(sscanf(line, "tick %u elapsed %*f resident %llu private %llu net ", &tick,
                         &resident, &priv) == 3,
                  "%s", line);
    ck_assert_msg(grown >= 7u << 20 && grown <= 8u << 20, "heap +%llu in:\n%s", grown, out);
    /* Absolute sizes: the heap's growth is in them (the target holds little else). */
    ck_assert_msg(resident >= grown && priv >= grown && priv <= resident, "%s", line);
    ck_assert_ptr_null(strchr(out, ','));
    ck_assert_ptr_null(strstr(out, "Net change"));
    stop_target(&t);
}
END_TEST

/* --pss: PSS per mapping from smaps at standard depth, through snap, show, diff and watch; without
 * it no PSS anywhere (standard depth has no map counts). */
START_TEST(pss_per_mapping_through_the_cli)
{
    target t = start_target();
    ASSERT_RUN(0, "snap %d -o plain.mds", (int)t.pid);
    ASSERT_RUN(0, "snap %d -o a.mds --pss", (int)t.pid);
    ASSERT_RUN(0, "snap %d -o b.mds --pss --quiet", (int)t.pid);
    ASSERT_RUN(0, "show plain.mds");
    /* PSS unknown: a dash and why, no figure, no column. */
    ck_assert_msg(strstr(out, "\nPSS: ") != NULL && strstr(out, "\xe2\x80\x93  (needs deep depth"),
                  "%s", out);
    ck_assert_msg(strstr(out, "smaps' Pss") == NULL && strstr(out, " pss") == NULL, "%s", out);
    ASSERT_RUN(0, "show -r b.mds");
    ck_assert_msg(strstr(out, " pss-mappings\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\nPSS: ") != NULL && strstr(out, "smaps' Pss per mapping"), "%s",
                  out);
    ck_assert_msg(strstr(out, "  mapping pss  category") != NULL, "%s", out);
    ASSERT_RUN(0, "show b.mds");
    ck_assert_msg(strstr(out, "mapping pss") == NULL, "blocks have no PSS column:\n%s", out);
    ASSERT_RUN(0, "diff a.mds b.mds");
    ck_assert_msg(strstr(out, "\nNet PSS: ") != NULL && strstr(out, "per mapping, no blocks)"),
                  "%s", out);
    ASSERT_RUN(0, "diff --json a.mds b.mds");
    ck_assert_msg(strstr(out, "\"pss-mappings\"") != NULL && strstr(out, "\"pss_bytes\": "),
                  "%s", out);
    ck_assert_msg(strstr(out, "new_pss_bytes") == NULL, "no PSS per page:\n%s", out);
    ASSERT_RUN(0, "diff plain.mds b.mds");
    ck_assert_msg(strstr(out, "\nNet PSS: ") != NULL && strstr(out, "\xe2\x80\x93  (before: needs"),
                  "one side without PSS: a dash and why:\n%s", out);
    ASSERT_RUN(0, "watch %d --pss --count 1 --interval 10ms", (int)t.pid);
    ck_assert_msg(strstr(out, "\nNet PSS: ") != NULL, "%s", out);
    stop_target(&t);
}
END_TEST

START_TEST(watch_ends_when_the_process_exits)
{
    target t = start_target();
    pid_t w = start("watch %d --interval 100ms --count 50", (int)t.pid);
    /* Long enough for the first diff (two snapshots 100 ms apart) on a loaded machine, short of
     * the watch's 5 s. */
    struct timespec pause = {1, 0};
    nanosleep(&pause, NULL);
    stop_target(&t); /* exits and is reaped: the pid is gone */
    int rc = finish(w);
    ck_assert_msg(rc == 2, "exit %d\n%s", rc, err);
    char want[64];
    snprintf(want, sizeof want, "cannot snapshot pid %d", (int)t.pid);
    ck_assert_msg(strstr(err, want), "%s", err);
    ck_assert_ptr_nonnull(strstr(out, "diff 1 of 50"));
}
END_TEST

/* ---- report options, process selection, errors and warnings (issue 23) ------------------ */

/* A target named name (/proc/PID/comm), for --name. */
static target start_named_target(const char *name)
{
    ck_assert_int_eq(setenv("MEMDIFF_CLI_TARGET_NAME", name, 1), 0);
    target t = start_target();
    unsetenv("MEMDIFF_CLI_TARGET_NAME");
    return t;
}

/* The widest line of text in display columns: UTF-8 characters, one column each (the reports'
 * own are U+2013, U+2026 and U+2248; labels here are ASCII). */
static int widest_line(const char *text, char *which, size_t size)
{
    int widest = 0, cols = 0;
    const char *start = text;
    for (const char *p = text;; p++) {
        if (*p == '\n' || *p == '\0') {
            if (cols > widest) {
                widest = cols;
                snprintf(which, size, "%.*s", (int)(p - start), start);
            }
            if (*p == '\0')
                return widest;
            cols = 0;
            start = p + 1;
        } else if (((unsigned char)*p & 0xC0) != 0x80) {
            cols++;
        }
    }
}

#define ASSERT_FITS(what)                                                                      \
    do {                                                                                       \
        char line_[2048];                                                                      \
        int w_ = widest_line(out, line_, sizeof line_);                                        \
        ck_assert_msg(w_ <= 100, "%s: a line of %d columns:\n%s", what, w_, line_);            \
    } while (0)

/* Whether needle occurs in the line that starts at line (a '\n' in front is skipped). */
static int in_line(const char *line, const char *needle)
{
    if (!line)
        return 0;
    const char *eol = strchr(line + (*line == '\n'), '\n');
    const char *hit = strstr(line, needle);
    return hit && (!eol || hit < eol);
}

/* A number of times needle occurs in haystack. */
static int count_of(const char *haystack, const char *needle)
{
    int n = 0;
    for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

START_TEST(report_options_on_diff_and_show)
{
    target t = start_target();
    ASSERT_RUN(0, "snap %d -o before.mds -q", (int)t.pid);
    tell(&t, 'a'); /* 8 MiB more heap: the block that grew most */
    ASSERT_RUN(0, "snap %d -o after.mds -q", (int)t.pid);
    stop_target(&t);

    ASSERT_RUN(0, "diff before.mds after.mds --sort net --top 1");
    const char *b = strstr(out, "\nBlocks (1 of ");
    ck_assert_msg(b != NULL, "%s", out);
    b = strchr(b + 1, '\n');
    ck_assert_msg(strncmp(b, "\n  0x", 5) == 0 && in_line(b, "  heap  ") &&
                      count_of(b, "\n  0x") == 1,
                  "%s", out);
    /* Only heap rows and blocks; the total row still the whole process's. */
    ASSERT_RUN(0, "diff before.mds after.mds --category heap");
    char total[256];
    const char *row = strstr(out, "\ntotal ");
    ck_assert_ptr_nonnull(row);
    snprintf(total, sizeof total, "%.*s", (int)strcspn(row + 1, "\n"), row + 1);
    ck_assert_msg(strstr(out, "\nheap ") && !strstr(out, "\nimage ") && !strstr(out, "\nstack "),
                  "%s", out);
    for (const char *l = strstr(out, "\n  0x"); l; l = strstr(l + 1, "\n  0x"))
        ck_assert_msg(in_line(l, "  heap  "), "%s", out);
    ASSERT_RUN(0, "diff before.mds after.mds");
    ck_assert_msg(strstr(out, total) != NULL, "total row '%s' not in:\n%s", total, out);
    /* Units: 8 MiB and a little, one decimal. */
    ASSERT_RUN(0, "diff -H before.mds after.mds");
    const char *net = strstr(out, "Net change:"), *heap = strstr(out, "\nheap ");
    ck_assert_msg(in_line(net, " MiB  (+") && in_line(heap, "  +8.0 MiB  "), "%s", out);
    ck_assert_ptr_null(strstr(out, " bytes"));
    ASSERT_RUN(0, "show after.mds --sort size --top 2 --human");
    ck_assert_msg(strstr(out, "\nBlocks (2 of ") != NULL, "%s", out);
    ck_assert_int_eq(count_of(out, "\n  0x"), 2);
    ASSERT_RUN(0, "diff --width 0 before.mds after.mds");

    ASSERT_RUN(2, "diff before.mds after.mds --sort biggest");
    ck_assert_ptr_nonnull(strstr(err, "bad sort 'biggest' (size, net, address or name)"));
    ck_assert_str_eq(out, "");
    ASSERT_RUN(2, "show after.mds --top 0");
    ck_assert_ptr_nonnull(strstr(err, "bad --top '0'"));
    ASSERT_RUN(2, "diff before.mds after.mds --category heap,heaps");
    ck_assert_ptr_nonnull(strstr(err, "bad category 'heaps' in --category"));
    ASSERT_RUN(2, "diff before.mds after.mds --color=sometimes");
    ck_assert_ptr_nonnull(strstr(err, "bad --color 'sometimes' (auto, always or never)"));
    ASSERT_RUN(2, "show after.mds --width 20");
    ck_assert_ptr_nonnull(strstr(err, "bad --width '20'"));
}
END_TEST

/* Runs memdiff ARGS with its stdout on a terminal (a pty); NO_COLOR as given (NULL: unset).
 * What it wrote, into out. */
static void run_on_terminal(const char *no_color, const char *args)
{
    int master;
    fflush(NULL);
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (no_color)
            setenv("NO_COLOR", no_color, 1);
        else
            unsetenv("NO_COLOR");
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "cd %s && '%s' %s 2>/dev/null", dir, MEMDIFF_CLI_PATH, args);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    size_t n = 0;
    for (ssize_t got; n + 1 < sizeof out && (got = read(master, out + n, sizeof out - 1 - n)) > 0;)
        n += (size_t)got; /* until EIO: the child closed the terminal */
    out[n] = '\0';
    close(master);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "memdiff %s: status 0x%x\n%s", args,
                  st, out);
}

/* Colour only with --color=always or on a terminal, never with NO_COLOR set (and not empty) or
 * --color=never; nothing but the colour changes. */
START_TEST(colour_only_on_a_terminal)
{
    target t = start_target();
    ASSERT_RUN(0, "snap %d -o before.mds -q", (int)t.pid);
    tell(&t, 'a');
    ASSERT_RUN(0, "snap %d -o after.mds -q", (int)t.pid);
    stop_target(&t);
    ASSERT_RUN(0, "diff before.mds after.mds");
    ck_assert_ptr_null(strchr(out, '\033')); /* a file: no colour */
    static char plain[sizeof out];
    strcpy(plain, out);
    ASSERT_RUN(0, "diff --color=never before.mds after.mds");
    ck_assert_str_eq(out, plain);
    ASSERT_RUN(0, "diff --color=always before.mds after.mds");
    ck_assert_ptr_nonnull(strstr(out, "\033[1mCategory\033[0m"));
    ck_assert_ptr_nonnull(strstr(out, "\033[31m+"));
    ASSERT_RUN(0, "show --color=always after.mds");
    ck_assert_ptr_nonnull(strstr(out, "\033[1mCategory\033[0m"));

    run_on_terminal(NULL, "diff before.mds after.mds");
    ck_assert_msg(strstr(out, "\033[1mCategory\033[0m") != NULL, "%s", out);
    run_on_terminal("", "diff before.mds after.mds"); /* empty: as unset */
    ck_assert_ptr_nonnull(strstr(out, "\033[1mCategory\033[0m"));
    run_on_terminal("1", "diff before.mds after.mds");
    ck_assert_msg(strchr(out, '\033') == NULL, "%s", out);
    run_on_terminal(NULL, "diff --color=never before.mds after.mds");
    ck_assert_ptr_null(strchr(out, '\033'));
    run_on_terminal("1", "diff --color=always before.mds after.mds");
    ck_assert_ptr_nonnull(strchr(out, '\033'));
}
END_TEST

/* Real processes: no line of a diff or show report over 100 columns, a long path cut from the
 * left (its end kept after U+2026), and whole in JSON. */
#define LONG_NAME "a-file-whose-name-is-long-enough-that-no-report-line-could-hold-it-beside-" \
                  "the-figures-of-its-block-and-still-fit.bin"

START_TEST(reports_fit_100_columns)
{
    char path[512];
    snprintf(path, sizeof path, "%s/" LONG_NAME, dir);
    ck_assert_int_eq(setenv("MEMDIFF_CLI_TARGET_MAP", path, 1), 0);
    target t = start_target();
    unsetenv("MEMDIFF_CLI_TARGET_MAP");
    tell(&t, 'm'); /* the long-named file mapped, a page more every 20 ms */
    ASSERT_RUN(0, "snap %d -o before.mds -q", (int)t.pid);
    struct timespec pause = {0, 200 * 1000 * 1000}; /* ~10 pages of it more */
    nanosleep(&pause, NULL);
    tell(&t, 'a');
    ASSERT_RUN(0, "snap %d -o after.mds -q", (int)t.pid);
    static const char *const cmds[] = {
        "diff before.mds after.mds", "diff -v before.mds after.mds",
        "diff -H before.mds after.mds", "show after.mds", "show -r after.mds",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        ASSERT_RUN(0, "%s", cmds[i]);
        ASSERT_FITS(cmds[i]);
        ck_assert_msg(strstr(out, "\xe2\x80\xa6") && strstr(out, "fit.bin\n") &&
                          !strstr(out, "/" LONG_NAME),
                      "%s: the long name not cut:\n%s", cmds[i], out);
    }
    ASSERT_RUN(0, "show %d", (int)t.pid);
    ASSERT_FITS("show PID");
    ASSERT_RUN(0, "watch %d -i 100ms -n 1", (int)t.pid);
    ASSERT_FITS("watch");
    ASSERT_RUN(0, "diff --json before.mds after.mds");
    ck_assert_ptr_nonnull(strstr(out, "/" LONG_NAME "\""));
    stop_target(&t);
}
END_TEST

START_TEST(processes_by_pid_self_and_name)
{
    char name[16], one[16];
    snprintf(name, sizeof name, "mdsel%d", (int)(getpid() % 100000));
    snprintf(one, sizeof one, "mdone%d", (int)(getpid() % 100000));
    target t1 = start_named_target(name), t2 = start_named_target(name);
    target t3 = start_named_target(one);
    char h1[64], h2[64], h3[64];
    snprintf(h1, sizeof h1, "memdiff snapshot: pid %d on ", (int)t1.pid);
    snprintf(h2, sizeof h2, "memdiff snapshot: pid %d on ", (int)t2.pid);
    snprintf(h3, sizeof h3, "memdiff snapshot: pid %d on ", (int)t3.pid);

    /* show PID: a live snapshot. Several pids: a report each, in the order given. */
    ASSERT_RUN(0, "show %d --top 1", (int)t3.pid);
    ck_assert_msg(strncmp(out, h3, strlen(h3)) == 0, "%s", out);
    ASSERT_RUN(0, "show %d %d --top 1", (int)t3.pid, (int)t1.pid);
    ck_assert_msg(strncmp(out, h3, strlen(h3)) == 0 && strstr(out, h1), "%s", out);
    ck_assert_int_eq(count_of(out, "memdiff snapshot: pid "), 2);
    /* --name: every process whose name matches (here both of name), in pid order. */
    ASSERT_RUN(0, "show --name '^%s$' --top 1", name);
    ck_assert_int_eq(count_of(out, "memdiff snapshot: pid "), 2);
    ck_assert_msg(strstr(out, t1.pid < t2.pid ? h1 : h2) == out && strstr(out, h1) &&
                      strstr(out, h2) && !strstr(out, h3),
                  "%s", out);
    /* --exact: the whole name; a part matches nothing. */
    ASSERT_RUN(0, "show --exact %s --top 1", name);
    ck_assert_int_eq(count_of(out, "memdiff snapshot: pid "), 2);
    ASSERT_RUN(0, "show --name '^%s$' --exact %s --top 1", name, one); /* all three */
    ck_assert_int_eq(count_of(out, "memdiff snapshot: pid "), 3);
    ASSERT_RUN(2, "show --exact mdsel");
    ck_assert_str_eq(err, "memdiff show: no process is named 'mdsel' (--exact matches the name ps "
                          "shows, at most 15 characters)\n");
    ck_assert_str_eq(out, "");
    ASSERT_RUN(2, "snap --name 'nosuch%d' -o x.mds", (int)getpid());
    ck_assert_ptr_nonnull(strstr(err, "memdiff snap: no process is named like 'nosuch"));
    ASSERT_RUN(2, "show --name '('");
    ck_assert_ptr_nonnull(strstr(err, "memdiff show: bad --name '(': "));

    /* Several where one is needed: refused, naming them. */
    char several[160];
    snprintf(several, sizeof several, "2 processes match, and watch takes one: %d (%s), %d (%s); ",
             (int)(t1.pid < t2.pid ? t1.pid : t2.pid), name,
             (int)(t1.pid < t2.pid ? t2.pid : t1.pid), name);
    ASSERT_RUN(2, "watch --name %s -i 100ms -n 1", name);
    ck_assert_msg(strstr(err, several) != NULL, "%s", err);
    ck_assert_str_eq(out, "");
    ASSERT_RUN(2, "wss --name %s -i 10ms", name);
    ck_assert_ptr_nonnull(strstr(err, "2 processes match, and wss takes one"));
    ck_assert_str_eq(out, "");
    ASSERT_RUN(0, "watch --name %s -i 100ms -n 1", one);
    char want[64];
    snprintf(want, sizeof want, "memdiff watch: pid %d, diff 1 of 1", (int)t3.pid);
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);

    /* snap of several: a file each with %%p in -o, refused without. */
    ASSERT_RUN(2, "snap --name %s -o x.mds", name);
    ck_assert_ptr_nonnull(strstr(err, "memdiff snap: 2 processes match, and -o x.mds holds one "
                                      "snapshot; put %p in FILE for each pid"));
    ck_assert_int_ne(sh("test -e x.mds"), 0);
    ASSERT_RUN(2, "snap %d %d -o -", (int)t1.pid, (int)t2.pid);
    ASSERT_RUN(0, "snap --name %s -o 'x-%%p.mds' -q", name);
    ck_assert_int_eq(sh("test -f x-%d.mds && test -f x-%d.mds", (int)t1.pid, (int)t2.pid), 0);
    ASSERT_RUN(0, "show x-%d.mds", (int)t2.pid);
    ck_assert_msg(strncmp(out, h2, strlen(h2)) == 0, "%s", out);

    /* self: memdiff itself for snap and show; refused where it would only watch itself. */
    ASSERT_RUN(0, "show self --top 1");
    ck_assert_ptr_nonnull(strstr(out, "memdiff snapshot: pid "));
    ASSERT_RUN(0, "snap self -o self.mds -q");
    ASSERT_RUN(2, "watch self -i 100ms -n 1");
    ck_assert_ptr_nonnull(strstr(err, "memdiff watch: 'self' would be this memdiff process"));
    ck_assert_str_eq(out, "");
    ASSERT_RUN(2, "wss self");
    ck_assert_ptr_nonnull(strstr(err, "memdiff wss: 'self' would be this memdiff process"));

    /* A word of digits is a file when one of that name exists, else a process. */
    ASSERT_RUN(2, "show 999999999");
    ck_assert_str_eq(err, "memdiff show: no process with pid 999999999\n");
    ASSERT_RUN(0, "snap %d -o 999999999 -q", (int)t3.pid);
    ASSERT_RUN(0, "show 999999999");
    ck_assert_msg(strncmp(out, h3, strlen(h3)) == 0, "%s", out);
    ASSERT_RUN(2, "show 999999999 %d", (int)t3.pid);
    ck_assert_ptr_nonnull(strstr(err, "show takes one file, or processes"));
    stop_target(&t3);
    stop_target(&t2);
    stop_target(&t1);
}
END_TEST

/* An error comes before any output: nothing on stdout, the message on stderr. */
START_TEST(errors_before_any_output)
{
    pid_t gone = dead_pid();
    static const char *const cmds[] = {"wss %d", "wss %d --cumulative", "watch %d -i 100ms",
                                       "show %d", "snap %d -o x.mds", "show %d %d"};
    char want[64];
    snprintf(want, sizeof want, "no process with pid %d\n", (int)gone);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        ASSERT_RUN(2, cmds[i], (int)gone, (int)getpid());
        ck_assert_msg(strcmp(out, "") == 0, "%s: stdout:\n%s", cmds[i], out);
        ck_assert_msg(strstr(err, want) != NULL, "%s: %s", cmds[i], err);
    }
    ASSERT_RUN(2, "wss 99999999");
    ck_assert_str_eq(out, "");
    ck_assert_str_eq(err, "memdiff wss: no process with pid 99999999\n");
    /* A zombie exists (the pid is taken) but has no memory to measure: the failure comes from
     * the measurement itself, and still before the banner. */
    pid_t zombie = fork();
    ck_assert_int_ge(zombie, 0);
    if (zombie == 0)
        _exit(0);
    char stat[64];
    snprintf(stat, sizeof stat, "grep -q '^State:.*Z' /proc/%d/status", (int)zombie);
    while (sh("%s", stat) != 0) /* until it has exited, unreaped */
        sched_yield();
    ASSERT_RUN(2, "wss %d -i 10ms", (int)zombie);
    ck_assert_msg(strcmp(out, "") == 0, "stdout:\n%s", out);
    snprintf(want, sizeof want, "memdiff wss: cannot measure pid %d: ", (int)zombie);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
    int st;
    ck_assert_int_eq(waitpid(zombie, &st, 0), zombie);

    /* The directory that is missing is named, not a temporary file. */
    ASSERT_RUN(2, "snap %d -q -o %s/no/such/x.mds", (int)getpid(), dir);
    char msg[512];
    snprintf(msg, sizeof msg, "memdiff snap: -o %s/no/such/x.mds: cannot create a file in "
                              "directory %s/no/such: No such file or directory\n", dir, dir);
    ck_assert_str_eq(err, msg);
    ck_assert_str_eq(out, "");
    ck_assert_ptr_null(strstr(err, ".tmp-"));
}
END_TEST

/* A diff whose after was taken before its before: reported, with a warning on stderr. */
START_TEST(reversed_diff_warns)
{
    target t = start_target();
    ASSERT_RUN(0, "snap %d -o early.mds -q", (int)t.pid);
    ASSERT_RUN(0, "snap %d -o late.mds -q", (int)t.pid);
    stop_target(&t);
    ASSERT_RUN(0, "diff early.mds late.mds");
    ck_assert_str_eq(err, "");
    ASSERT_RUN(0, "diff late.mds early.mds");
    ck_assert_ptr_nonnull(strstr(out, "Net change:"));
    ck_assert_msg(strncmp(err, "memdiff diff: warning: early.mds (after) was taken ", 51) == 0 &&
                      strstr(err, " s before late.mds (before): the report reads backwards in "
                                  "time\n"),
                  "%s", err);
    ASSERT_RUN(0, "diff --json late.mds early.mds");
    ck_assert_ptr_nonnull(strstr(err, "warning"));
    ck_assert_int_eq(out[0], '{');
}
END_TEST

/* ---- hostile names: every text path escapes them (memdiff_escape_text) ------------------- */

/* Fails unless text is printable ASCII lines: what every name in these tests must become.
 * The reports' own characters are let through: the dash of an unknown figure (U+2013) and the
 * ellipsis of a cut label (U+2026). */
static void assert_printable(const char *what, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (strncmp((const char *)p, "\xe2\x80\x93", 3) == 0 ||
            strncmp((const char *)p, "\xe2\x80\xa6", 3) == 0) {
            p += 2;
            continue;
        }
        ck_assert_msg((*p >= 0x20 && *p < 0x7F) || *p == '\n',
                      "%s: raw byte 0x%02x at %zu in:\n%s", what, *p,
                      (size_t)(p - (const unsigned char *)text), text);
    }
}

#define HOST_B "evil\x1b]0;pwned\x07\nhost\x9b\xc2\x9b\xff"
#define HOST_B_SHOWN "evil\\x1b]0;pwned\\x07\\x0ahost\\x9b\\xc2\\x9b\\xff"
#define HOST_A "other\x1b[2J\r"
#define HOST_A_SHOWN "other\\x1b[2J\\x0d"
#define LABEL "/tmp/\x1b[31mred\n\xc2\x85label\xed\xa0\x80\\x41"
#define LABEL_SHOWN "/tmp/\\x1b[31mred\\x0a\\xc2\\x85label\\xed\\xa0\\x80\\\\x41"

/* Saves a synthetic snapshot of "pid 4242" on host, with one file mapping named LABEL (one page
 * resident when resident), to dir/name: a file an attacker could have written. */
static void save_hostile(const char *name, const char *host, int resident)
{
    static const synth_region regs[] = {
        {0x10000000, 0x10004000, MEMDIFF_CAT_MAPPED_FILE, LABEL, 1, MEMDIFF_REGION_FILE, 0x801,
         66, 0},
    };
    static const synth_run runs[] = {{0x10000000, 1, MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_FILE}};
    synth_spec spec = {.regions = regs, .region_count = 1, .degraded = "why\x1b[0m\x9b"};
    if (resident) {
        spec.runs = runs;
        spec.run_count = 1;
    }
    memdiff_snapshot *s = synth_snapshot(&spec);
    ck_assert_ptr_nonnull(s);
    s->info.host = host; /* a literal: outlives the snapshot, nothing frees it */
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_int_eq(memdiff_snapshot_save_file(s, path), MEMDIFF_OK);
    memdiff_snapshot_free(s);
}

START_TEST(show_and_diff_escape_hostile_files)
{
    save_hostile("b.mds", HOST_B, 0);
    save_hostile("a.mds", HOST_A, 1);
    save_hostile("same.mds", HOST_B, 1);

    ASSERT_RUN(0, "show b.mds -w 0"); /* whole names: no width to cut them to */
    static const char head[] = "memdiff snapshot: pid 4242 on " HOST_B_SHOWN "\n  standard depth";
    ck_assert_msg(strncmp(out, head, strlen(head)) == 0, "%s", out);
    ck_assert_msg(strstr(out, "\nDegraded: why\\x1b[0m\\x9b\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "  mapped-file  " LABEL_SHOWN "\n") != NULL, "%s", out);
    assert_printable("show", out);
    ASSERT_RUN(0, "show --regions -w 0 b.mds");
    ck_assert_msg(strstr(out, "  mapped-file  " LABEL_SHOWN "\n") != NULL, "%s", out);
    assert_printable("show --regions", out);

    /* Different hosts: refused, the message naming both, escaped, one line each. */
    ASSERT_RUN(2, "diff b.mds a.mds");
    ck_assert_str_eq(out, "");
    ck_assert_str_eq(err, "memdiff diff: cannot compare: the snapshots are of different "
                          "processes (before: pid 4242 on host '" HOST_B_SHOWN "'; after: pid "
                          "4242 on host '" HOST_A_SHOWN "'); use --force to compare them "
                          "anyway\n");
    ASSERT_RUN(0, "diff --force -w 0 b.mds a.mds");
    static const char fhead[] = "memdiff: pid 4242 on " HOST_B_SHOWN " -> " HOST_A_SHOWN ", ";
    ck_assert_msg(strncmp(out, fhead, strlen(fhead)) == 0, "%s", out);
    ck_assert_msg(strstr(out, "\n  (before and after: why\\x1b[0m\\x9b)\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "  new  " LABEL_SHOWN "\n") != NULL, "%s", out);
    assert_printable("diff --force", out);
    ASSERT_RUN(0, "diff -w 0 b.mds same.mds");
    ck_assert_msg(strstr(out, "  new  " LABEL_SHOWN "\n") != NULL, "%s", out);
    assert_printable("diff", out);
}
END_TEST

/* A live process maps a file whose name holds ESC sequences, a newline (which the kernel's maps
 * writes as \012, decoded back), a raw CSI (0x9B), CSI as UTF-8 (C2 9B), invalid UTF-8 and
 * "\x41" spelt out: snap + show, diff and watch print the name escaped. */
#define LIVE_NAME "evil\x1b]0;owned\x07\x1b[2J\n\x9b" "31m\xc2\x9b" "1m\xff\xc0\xaf\\x41.bin"
#define LIVE_SHOWN "/evil\\x1b]0;owned\\x07\\x1b[2J\\x0a\\x9b31m\\xc2\\x9b1m\\xff\\xc0\\xaf" \
                   "\\\\x41.bin\n"

START_TEST(live_hostile_file_name_is_escaped)
{
    char path[256], shown[256];
    snprintf(path, sizeof path, "%s/" LIVE_NAME, dir);
    snprintf(shown, sizeof shown, "%s" LIVE_SHOWN, dir);
    ck_assert_int_eq(setenv("MEMDIFF_CLI_TARGET_MAP", path, 1), 0);
    target t = start_target();
    unsetenv("MEMDIFF_CLI_TARGET_MAP");
    tell(&t, 'm'); /* mapped; a page more every 20 ms from now on */

    ASSERT_RUN(0, "snap %d -o one.mds -q", (int)t.pid);
    ASSERT_RUN(0, "show -w 0 one.mds"); /* whole names: no width to cut them to */
    ck_assert_msg(strstr(out, shown) != NULL, "want %s in:\n%s", shown, out);
    assert_printable("show", out);
    struct timespec pause = {0, 200 * 1000 * 1000}; /* ~10 pages more */
    nanosleep(&pause, NULL);
    ASSERT_RUN(0, "snap %d -o two.mds -q", (int)t.pid);
    ASSERT_RUN(0, "diff -w 0 one.mds two.mds");
    ck_assert_msg(strstr(out, shown) != NULL, "want %s in:\n%s", shown, out);
    assert_printable("diff", out);
    ASSERT_RUN(0, "watch %d -w 0 --interval 200ms --count 1", (int)t.pid);
    ck_assert_msg(strstr(out, shown) != NULL, "want %s in:\n%s", shown, out);
    assert_printable("watch", out);
    ASSERT_RUN(0, "watch %d -w 0 --interval 200ms --count 1 --verbose", (int)t.pid);
    ck_assert_msg(strstr(out, shown) != NULL, "want %s in:\n%s", shown, out);
    assert_printable("watch --verbose", out);
    stop_target(&t);
}
END_TEST

/* A usage error quotes the refused argument escaped. */
START_TEST(usage_errors_escape_arguments)
{
    ASSERT_RUN(2, "snap \"$(printf '1\\033[2J\\n')\" -o x.mds");
    ck_assert_str_eq(err, "memdiff snap: bad process id '1\\x1b[2J' (a pid, self, --name REGEX "
                          "or --exact NAME)\nTry 'memdiff snap --help'.\n");
    ASSERT_RUN(2, "show \"$(printf 'x\\033]0;t\\007y')\"");
    ck_assert_msg(strstr(err, "x\\x1b]0;t\\x07y") != NULL, "%s", err);
    assert_printable("show error", err);
}
END_TEST

/* ---- snapshot sources by name --------------------------------------------------------------- */

/* show names a snapshot's sources in the 0.2 words, the ones the core's JSON report uses, in
 * bit order: every public MEMDIFF_SRC_* bit at once (pss follows from map-counts: the loader
 * recomputes PSS), and the usual standard-depth three alone.
 * No name is left of 0.1's (maps, pagemap, pfn, kpageflags, kpagecount, status, page-idle). */
START_TEST(show_names_sources_in_0_2_words)
{
    static const synth_region regs[] = {
        {0x10000000, 0x10004000, MEMDIFF_CAT_PRIVATE, "", 1, 0, 0, 0, 0},
    };
    synth_spec spec = {.regions = regs,
                       .region_count = 1,
                       .sources = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_FRAMES |
                                  MEMDIFF_SRC_PAGE_FLAGS | MEMDIFF_SRC_MAP_COUNTS |
                                  MEMDIFF_SRC_PROCESS_TOTALS | MEMDIFF_SRC_THREADS |
                                  MEMDIFF_SRC_HEAPS | MEMDIFF_SRC_MODULES |
                                  MEMDIFF_SRC_PAGE_ACCESS,
                       .depth = MEMDIFF_DEPTH_DEEP};
    char path[128];
    snprintf(path, sizeof path, "%s/all.mds", dir);
    memdiff_snapshot *s = synth_snapshot(&spec);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(memdiff_snapshot_save_file(s, path), MEMDIFF_OK);
    memdiff_snapshot_free(s);
    spec.sources = 0; /* synth's default: regions, pages and process totals, standard depth */
    snprintf(path, sizeof path, "%s/std.mds", dir);
    s = synth_snapshot(&spec);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(memdiff_snapshot_save_file(s, path), MEMDIFF_OK);
    memdiff_snapshot_free(s);
    /* A fast snapshot of 0.1 as its file says: maps and the PAGEMAP_SCAN ioctl (0x4, then
     * MEMDIFF_SRC_PAGEMAP_SCAN), a bit 0.2 keeps to the backend: it is named no more. */
    spec.sources = MEMDIFF_SRC_REGIONS | 0x4u;
    spec.depth = MEMDIFF_DEPTH_FAST;
    snprintf(path, sizeof path, "%s/scan.mds", dir);
    s = synth_snapshot(&spec);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(memdiff_snapshot_save_file(s, path), MEMDIFF_OK);
    memdiff_snapshot_free(s);

    ASSERT_RUN(0, "show all.mds");
    /* Wrapped to fit 100 columns, the next line indented. */
    ck_assert_msg(strstr(out, "\nSources: regions pages frames page-flags map-counts "
                              "process-totals threads heaps modules page-access\n  pss\n") != NULL,
                  "%s", out);
    ASSERT_RUN(0, "show --json all.mds");
    ck_assert_msg(strstr(out, "\"sources\": [\"regions\", \"pages\", \"frames\", "
                              "\"page-flags\", \"map-counts\", \"process-totals\", "
                              "\"threads\", \"heaps\", \"modules\", \"page-access\", \"pss\"],\n") != NULL,
                  "%s", out);
    ASSERT_RUN(0, "show std.mds");
    ck_assert_msg(strstr(out, "\nSources: regions pages process-totals\n") != NULL, "%s", out);
    ASSERT_RUN(0, "show --json std.mds");
    ck_assert_msg(strstr(out, "\"sources\": [\"regions\", \"pages\", \"process-totals\"],\n") !=
                      NULL,
                  "%s", out);
    ASSERT_RUN(0, "show scan.mds");
    ck_assert_msg(strstr(out, "\nSources: regions\n") != NULL, "%s", out);
    ASSERT_RUN(0, "show --json scan.mds");
    ck_assert_msg(strstr(out, "\"sources\": [\"regions\"],\n") != NULL, "%s", out);
}
END_TEST

/* ---- files whose diff does not fit 64-bit figures ------------------------------------------ */

/* Writes name in dir: a snapshot of a heap of `bytes` bytes, all resident or none (synth.h).
 * memdiff's own writer makes it, and refuses what its loader would. */
static void huge_file(const char *name, uint64_t bytes, int resident)
{
    synth_region r;
    synth_run u;
    synth_spec spec = synth_huge(&r, &u, bytes, resident);
    memdiff_snapshot *s = synth_snapshot(&spec);
    ck_assert_ptr_nonnull(s);
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_msg(memdiff_snapshot_save_file(s, path) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_snapshot_free(s);
}

/* Rewrites dir/from as dir/to with one page more in its heap region (and its run): the file an
 * attacker makes from near.mds, checksum recomputed. 2^51 - 1 pages and 2^51 are both 8-byte
 * varints (docs/file-format.md), so every other byte stays where it was. */
static void one_page_more(const char *from, const char *to)
{
    static unsigned char buf[4096];
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, from);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert_uint_gt(n, 4);
    static const unsigned char near[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x03};
    static const unsigned char more[8] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x04};
    int patched = 0;
    for (size_t i = 0; i + sizeof near <= n - 4; i++)
        if (memcmp(buf + i, near, sizeof near) == 0) {
            memcpy(buf + i, more, sizeof more);
            patched++;
        }
    ck_assert_int_ge(patched, 1); /* the region's page count, and the run's when resident */
    uint32_t crc = memdiff__crc32(0, buf, n - 4);
    for (int i = 0; i < 4; i++)
        buf[n - 4 + (size_t)i] = (unsigned char)(crc >> (8 * i));
    snprintf(path, sizeof path, "%s/%s", dir, to);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
}

START_TEST(files_freeing_2_63_bytes)
{
    const uint64_t two63 = UINT64_C(1) << 63;
    huge_file("near.mds", two63 - 4096, 1);
    huge_file("near-empty.mds", two63 - 4096, 0);
    /* Files whose diff would free 2^63 bytes: each is refused at load, so every diff and every
     * condition on it fails the run (exit 2), rather than pass on a wrapped-around figure. */
    one_page_more("near.mds", "full.mds");
    one_page_more("near-empty.mds", "empty.mds");
    static const char *const refused[] = {
        "show full.mds",
        "diff full.mds empty.mds",
        "diff full.mds empty.mds --fail-on 'freed>0'",
        "diff -v --json full.mds empty.mds --fail-on 'freed>0'",
        "diff full.mds empty.mds --fail-on 'net<0' --fail-on 'net>0'",
        "diff empty.mds full.mds --fail-on 'new>0'",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        ASSERT_RUN(2, "%s", refused[i]);
        ck_assert_msg(strstr(err, "snapshot file: the regions up to region 0 map "
                                  "2251799813685248 pages of 4096 bytes, more than 2^63 - 1 "
                                  "bytes: refused") != NULL,
                      "%s: %s", refused[i], err);
        ck_assert_str_eq(out, "");
    }

    /* One page less fits: every figure exact. */
    huge_file("near.mds", two63 - 4096, 1);
    huge_file("near-empty.mds", two63 - 4096, 0);
    ASSERT_RUN(0, "diff -w 0 near.mds near-empty.mds"); /* one line: no width */
    ck_assert_msg(strstr(out, "Memory freed:          -9,223,372,036,854,771,712 bytes  "
                              "(2,251,799,813,685,247 pages: 0 unmapped, "
                              "2,251,799,813,685,247 discarded"),
                  "%s", out);
    ASSERT_RUN(1, "diff near.mds near-empty.mds --fail-on 'freed>0' --fail-on 'new>0'");
    ck_assert_str_eq(err, "memdiff diff: --fail-on freed>0 holds: total freed = "
                          "9,223,372,036,854,771,712 bytes\n");
    ASSERT_RUN(1, "diff near.mds near-empty.mds --fail-on 'heap.net<0'");
    ck_assert_str_eq(err, "memdiff diff: --fail-on heap.net<0 holds: heap net = "
                          "-9,223,372,036,854,771,712 bytes\n");
    ASSERT_RUN(0, "diff --json near-empty.mds near.mds --fail-on 'freed>0'");
    /* Beyond 2^53, where a double (jq) would round them: exact, as strings. */
    ck_assert_ptr_nonnull(strstr(out, "\"new_bytes\": \"9223372036854771712\", "));
    ck_assert_ptr_nonnull(strstr(out, "\"net_bytes\": \"9223372036854771712\"}"));
}
END_TEST

Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("Usage");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, help_version_and_usage_errors);
    tcase_add_test(tc, files_freeing_2_63_bytes);
    tcase_add_test(tc, show_names_sources_in_0_2_words);
    suite_add_tcase(s, tc);

    tc = tcase_create("Processes");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, snap_of_a_missing_process_fails_naming_it);
    tcase_add_test(tc, leak_of_8_mib_shows_in_heap);
    tcase_add_test(tc, different_processes_refused_unless_forced);
    tcase_add_test(tc, damaged_files_are_errors);
    tcase_add_test(tc, snap_writes_only_regular_files);
    tcase_add_test(tc, watch_a_live_process);
    tcase_add_test(tc, watch_ends_when_the_process_exits);
    tcase_add_test(tc, pss_per_mapping_through_the_cli);
    tcase_add_test(tc, live_hostile_file_name_is_escaped);
    tcase_add_test(tc, report_options_on_diff_and_show);
    tcase_add_test(tc, colour_only_on_a_terminal);
    tcase_add_test(tc, reports_fit_100_columns);
    tcase_add_test(tc, processes_by_pid_self_and_name);
    tcase_add_test(tc, errors_before_any_output);
    tcase_add_test(tc, reversed_diff_warns);
    suite_add_tcase(s, tc);

    tc = tcase_create("Escaping");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, show_and_diff_escape_hostile_files);
    tcase_add_test(tc, usage_errors_escape_arguments);
    suite_add_tcase(s, tc);
    return s;
}
