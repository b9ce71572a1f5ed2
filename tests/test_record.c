/*
 * test_record.c - `memdiff record` and `memdiff run` (the real binary, MEMDIFF_CLI_PATH) of a
 * program with known phases (record_target.c: 64 MiB allocated, half freed, a file mapped, exit
 * 7). The target waits for a byte after each mark; the test gives it only once the timeline file
 * (flushed record by record) holds the snapshot taken at that mark, so that every figure is
 * exact. Then: a pid attached and killed, a snapshot asked for with SIGUSR1 and Ctrl-C to the
 * recorder, a command that does not exist, and a file size limit standing in for a full disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "memdiff.h"
#include "scenario_util.h"
#include "suites.h"

#define MIB (INT64_C(1) << 20)
#define FILE_BYTES (8 * MIB) /* the file record_target maps in its last phase */
/* record_target.c prints this line first. */
#define TARGET_LINE "record_target: phases begin, allocated, freed half, mapped\n"

static char dir[64];

static void path_in(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

static void setup(void)
{
    /* LeakSanitizer stops the world with ptrace at exit, which a process memdiff traces for its
     * exit stop cannot; the target turns it off in __asan_default_options, but an ASAN_OPTIONS
     * in the environment (.ci/run sets detect_leaks=1) overrides that, and the target inherits
     * it through memdiff. So leak checks stay off for these cases' processes (Check runs each
     * case in a child of its own); the cli suite checks the command's leaks. */
    if (UNDER_ASAN)
        ck_assert_int_eq(setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1", 1), 0);
    snprintf(dir, sizeof dir, "/tmp/memdiff-record-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char p[128];
    path_in(p, sizeof p, "data");
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    for (int64_t i = 0; i < FILE_BYTES; i++)
        fputc((int)(i * 7 & 0xff), f);
    ck_assert_int_eq(fclose(f), 0);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Starts argv with stdin from *go's pipe (NULL: /dev/null), stdout and stderr into files of
 * dir, and a file size limit when fsize > 0. */
static pid_t spawn(char *const *argv, int *go, rlim_t fsize)
{
    int fds[2] = {-1, -1};
    if (go)
        ck_assert_int_eq(pipe(fds), 0);
    char out[128], err[128];
    path_in(out, sizeof out, "stdout");
    path_in(err, sizeof err, "stderr");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int in = go ? fds[0] : open("/dev/null", O_RDONLY);
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(99);
        if (go)
            close(fds[1]);
        struct rlimit rl = {fsize, fsize};
        if (fsize && setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(98);
        execv(argv[0], argv);
        _exit(97);
    }
    if (go) {
        close(fds[0]);
        *go = fds[1];
    }
    return pid;
}

static int wait_status(pid_t pid)
{
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return st;
}

static void slurp(const char *name, char *buf, size_t size)
{
    char p[128];
    path_in(p, sizeof p, name);
    FILE *f = fopen(p, "rb");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

/* Snapshots of the timeline so far with cause bit cause; -1 while it cannot be opened yet. */
static int count_snapshots(const char *path, unsigned cause)
{
    memdiff_timeline *t = NULL;
    if (memdiff_timeline_open(path, &t) != MEMDIFF_OK)
        return -1;
    int n = 0;
    memdiff_timeline_record r;
    while (memdiff_timeline_next(t, &r) == 1)
        n += r.kind == MEMDIFF_RECORD_SNAPSHOT && (r.cause & cause);
    memdiff_timeline_free(t);
    return n;
}

/* Waits (in 1 ms naps, at most a minute) until the timeline holds n snapshots of cause, or
 * fails when the recorder exits first. */
static void await_snapshots(const char *path, unsigned cause, int n, pid_t recorder)
{
    for (int i = 0; i < 60000; i++) {
        if (count_snapshots(path, cause) >= n)
            return;
        int st;
        ck_assert_msg(waitpid(recorder, &st, WNOHANG) == 0, "the recorder ended early");
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    ck_abort_msg("no snapshot %d in %s", n, path);
}

/* Gives the target its byte after each of its 4 marks, once the mark's snapshot is on file. */
static void drive(const char *path, int go, pid_t recorder)
{
    for (int k = 1; k <= 4; k++) {
        await_snapshots(path, MEMDIFF_CAUSE_MARK, k, recorder);
        char c = 1;
        ck_assert_int_eq(write(go, &c, 1), 1);
    }
    close(go);
}

/* The last record of the timeline at path (which must open whole: not torn). */
static memdiff_timeline_record last_record(const char *path)
{
    memdiff_timeline *t = NULL;
    ck_assert_msg(memdiff_timeline_open(path, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_timeline_info info;
    ck_assert_int_eq(memdiff_timeline_get_info(t, &info), MEMDIFF_OK);
    ck_assert_int_eq(info.torn, 0);
    memdiff_timeline_record r, last;
    memset(&last, 0, sizeof last);
    while (memdiff_timeline_next(t, &r) == 1)
        last = r;
    memdiff_timeline_free(t);
    last.label = NULL;
    return last;
}

START_TEST(record_command_phases_exact)
{
    char tl[128], data[128];
    path_in(tl, sizeof tl, "t.mdt");
    path_in(data, sizeof data, "data");
    char *argv[] = {(char *)MEMDIFF_CLI_PATH, "record", "-o", tl, "--", (char *)MEMDIFF_RECORD_TARGET,
                    "--wait", data, NULL};
    int go;
    pid_t rec = spawn(argv, &go, 0);
    drive(tl, go, rec);
    int st = wait_status(rec);
    char err[4096];
    slurp("stderr", err, sizeof err);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, err);

    memdiff_timeline *t = NULL;
    ck_assert_msg(memdiff_timeline_open(tl, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_timeline_info info;
    ck_assert_int_eq(memdiff_timeline_get_info(t, &info), MEMDIFF_OK);
    ck_assert_int_eq(info.torn, 0);
    ck_assert_uint_eq(info.marks, 4);
    ck_assert_uint_eq(info.exits, 1);
    ck_assert_uint_eq(info.interval_ns, 100000000u); /* the documented default, 100 ms */
    ck_assert_str_eq(info.argv[0], MEMDIFF_RECORD_TARGET);

    /* Marks in order, each followed (after its sample) by a snapshot caused by it; the start
     * snapshot first; the exit snapshot after the last mark; the exit record last. */
    static const char *const labels[] = {"begin", "allocated", "freed half", "mapped"};
    size_t at_mark[4], nmarks = 0, exit_snap = (size_t)-1, nrec = 0;
    int want_mark_snap = 0, first_snap = 1, exit_seen = 0;
    memdiff_timeline_record r;
    while (memdiff_timeline_next(t, &r) == 1) {
        ck_assert_int_eq(exit_seen, 0); /* nothing after the exit record */
        nrec++;
        if (r.kind == MEMDIFF_RECORD_MARK) {
            ck_assert_uint_lt(nmarks, 4);
            ck_assert_str_eq(r.label, labels[nmarks]);
            ck_assert_int_eq(r.pid, info.pid);
            nmarks++;
            want_mark_snap = 1;
        } else if (r.kind == MEMDIFF_RECORD_SNAPSHOT) {
            if (first_snap)
                ck_assert_uint_eq(r.cause & MEMDIFF_CAUSE_START, MEMDIFF_CAUSE_START);
            first_snap = 0;
            if (want_mark_snap) {
                ck_assert_uint_eq(r.cause, MEMDIFF_CAUSE_MARK);
                at_mark[nmarks - 1] = r.snapshot;
                want_mark_snap = 0;
            }
            if (r.cause & MEMDIFF_CAUSE_EXIT) {
                ck_assert_uint_eq(nmarks, 4);
                exit_snap = r.snapshot;
            }
        } else if (r.kind == MEMDIFF_RECORD_EXIT) {
            ck_assert_int_eq(r.exit_how, MEMDIFF_EXIT_STATUS);
            ck_assert_int_eq(r.exit_code, 7); /* record_target's status */
            exit_seen = 1;
        }
    }
    ck_assert_uint_eq(nmarks, 4);
    ck_assert_int_eq(exit_seen, 1);
    ck_assert_uint_ne(exit_snap, (size_t)-1);
    /* Exact: +16,384 pages of 4 KiB, -8,192, then the file's 2,048 pages (record_target.c). */
    ck_assert_int_eq(scn_timeline_net(t, at_mark[0], at_mark[1], MEMDIFF_CAT_PRIVATE), 64 * MIB);
    ck_assert_int_eq(scn_timeline_net(t, at_mark[1], at_mark[2], MEMDIFF_CAT_PRIVATE), -32 * MIB);
    ck_assert_int_eq(scn_timeline_net(t, at_mark[2], at_mark[3], MEMDIFF_CAT_MAPPED_FILE), FILE_BYTES);
    ck_assert_int_eq(scn_timeline_net(t, at_mark[2], at_mark[3], MEMDIFF_CAT_PRIVATE), 0);
    /* Stopped in exit, its address space whole: the 32 MiB and the file still there. */
    ck_assert_int_eq(scn_timeline_net(t, at_mark[3], exit_snap, MEMDIFF_CAT_PRIVATE), 0);
    ck_assert_int_eq(scn_timeline_net(t, at_mark[3], exit_snap, MEMDIFF_CAT_MAPPED_FILE), 0);
    memdiff_timeline_free(t);
    /* The command's stdout is its own. */
    char out[4096];
    slurp("stdout", out, sizeof out);
    ck_assert_str_eq(out, TARGET_LINE);
}
END_TEST

START_TEST(record_attached_pid_vanishes)
{
    char tl[128], data[128], pidbuf[16];
    path_in(tl, sizeof tl, "t.mdt");
    path_in(data, sizeof data, "data");
    char *targv[] = {(char *)MEMDIFF_RECORD_TARGET, "--wait", data, NULL};
    int go;
    pid_t target = spawn(targv, &go, 0); /* waits after "begin" until go */
    snprintf(pidbuf, sizeof pidbuf, "%d", (int)target);
    char *argv[] = {(char *)MEMDIFF_CLI_PATH, "record", pidbuf, "-o", tl, "-i", "10ms", NULL};
    pid_t rec = spawn(argv, NULL, 0);
    await_snapshots(tl, MEMDIFF_CAUSE_START, 1, rec);
    ck_assert_int_eq(kill(target, SIGKILL), 0);
    wait_status(target);
    int st = wait_status(rec);
    char err[4096];
    slurp("stderr", err, sizeof err);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, err);
    memdiff_timeline_record last = last_record(tl);
    ck_assert_int_eq(last.kind, MEMDIFF_RECORD_EXIT);
    /* Not our child: its status is its parent's; all we know is that it is gone. */
    ck_assert_int_eq(last.exit_how, MEMDIFF_EXIT_VANISHED);
    ck_assert_ptr_nonnull(strstr(err, "vanished"));
    close(go);
}
END_TEST

START_TEST(record_sigusr1_then_sigint)
{
    char tl[128], data[128];
    path_in(tl, sizeof tl, "t.mdt");
    path_in(data, sizeof data, "data");
    char *argv[] = {(char *)MEMDIFF_CLI_PATH, "record", "-o", tl, "-i", "10ms", "--",
                    (char *)MEMDIFF_RECORD_TARGET, "--wait", data, NULL};
    int go;
    pid_t rec = spawn(argv, &go, 0);
    await_snapshots(tl, MEMDIFF_CAUSE_MARK, 1, rec); /* the target waits after "begin" */
    /* On demand: SIGUSR1 to the recorder, a snapshot of cause "request" (await_snapshots waits
     * for it: without one it fails after a minute). */
    ck_assert_int_eq(count_snapshots(tl, MEMDIFF_CAUSE_REQUEST), 0);
    ck_assert_int_eq(kill(rec, SIGUSR1), 0);
    await_snapshots(tl, MEMDIFF_CAUSE_REQUEST, 1, rec);
    ck_assert_int_eq(kill(rec, SIGINT), 0);
    int st = wait_status(rec);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    memdiff_timeline_record last = last_record(tl); /* whole, not torn */
    ck_assert_int_eq(last.kind, MEMDIFF_RECORD_EXIT);
    ck_assert_int_eq(last.exit_how, MEMDIFF_EXIT_DETACHED);
    close(go); /* the target, still running, reads end of file and exits */
}
END_TEST

START_TEST(run_passes_status_and_output)
{
    char tl[128], data[128];
    path_in(tl, sizeof tl, "t.mdt");
    path_in(data, sizeof data, "data");
    char *argv[] = {(char *)MEMDIFF_CLI_PATH, "run", "-o", tl, "--",
                    (char *)MEMDIFF_RECORD_TARGET, "--wait", data, NULL};
    int go;
    pid_t rec = spawn(argv, &go, 0);
    drive(tl, go, rec);
    int st = wait_status(rec);
    char out[4096], err[1 << 16];
    slurp("stdout", out, sizeof out);
    slurp("stderr", err, sizeof err);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %d: %.300s", st, err);
    ck_assert_str_eq(out, TARGET_LINE); /* byte for byte: nothing of memdiff's in it */
    /* The peak: VmHWM at least the 64 MiB; the peak snapshot is the one at "allocated", whose
     * largest block is the 64 MiB mapping: size, resident and private (its guard pages are
     * mapped from a file, another block). */
    const char *hwm = strstr(err, "peak resident (VmHWM): ");
    ck_assert_msg(hwm != NULL, "no peak line");
    unsigned long long v = 0;
    for (const char *p = hwm + 23; *p && *p != ' '; p++)
        if (*p >= '0' && *p <= '9')
            v = v * 10 + (unsigned long long)(*p - '0');
    ck_assert_uint_ge(v, 64u << 20);
    const char *peak = strstr(err, "==== at the peak");
    const char *exit_part = strstr(err, "==== just before exit: at the exit stop");
    ck_assert_msg(peak && exit_part && peak < exit_part, "no peak or exit part");
    /* Column widths follow the widest address and figure: compare with spaces squeezed. */
    static char squeezed[sizeof err];
    size_t k = 0;
    for (const char *p = peak; p < exit_part; p++)
        if (*p != ' ' || (k && squeezed[k - 1] != ' '))
            squeezed[k++] = *p;
    squeezed[k] = '\0';
    ck_assert_msg(strstr(squeezed, " rw- 67,108,864 67,108,864 67,108,864 private") != NULL,
                  "no 64 MiB block at the peak: %.3000s", squeezed);
    ck_assert(strstr(exit_part, "==== from the peak to exit") != NULL);
}
END_TEST

START_TEST(run_signal_status)
{
    char *argv[] = {(char *)MEMDIFF_CLI_PATH, "run", "-q", "--", "/bin/sh", "-c", "kill -9 $$",
                    NULL};
    int st = wait_status(spawn(argv, NULL, 0));
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 128 + SIGKILL); /* as a shell reports it */
}
END_TEST

START_TEST(run_missing_command)
{
    char *argv[] = {(char *)MEMDIFF_CLI_PATH, "run", "--", "/nonexistent/command", NULL};
    int st = wait_status(spawn(argv, NULL, 0));
    char err[4096];
    slurp("stderr", err, sizeof err);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 127);
    ck_assert_str_eq(err, "memdiff run: cannot run '/nonexistent/command': No such file or "
                          "directory\n");
}
END_TEST

START_TEST(record_full_disk)
{
    char tl[128], data[128];
    path_in(tl, sizeof tl, "t.mdt");
    path_in(data, sizeof data, "data");
    char *argv[] = {(char *)MEMDIFF_CLI_PATH, "record", "-o", tl, "-i", "1ms", "--",
                    (char *)MEMDIFF_RECORD_TARGET, "--wait", data, NULL};
    int go;
    /* 64 KiB: the header, the samples and the start snapshot fit; the target's allocation
     * snapshot does not (more regions) and, failing that, 1 ms samples fill it soon. */
    pid_t rec = spawn(argv, &go, 64 * 1024);
    int st = wait_status(rec);
    char err[4096];
    slurp("stderr", err, sizeof err);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d: %s", st, err);
    ck_assert_msg(strstr(err, "memdiff record: writing the timeline") != NULL, "%s", err);
    memdiff_timeline *t = NULL;
    ck_assert_msg(memdiff_timeline_open(tl, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_timeline_info info;
    ck_assert_int_eq(memdiff_timeline_get_info(t, &info), MEMDIFF_OK);
    ck_assert_uint_ge(info.samples, 1);
    ck_assert_uint_ge(info.snapshots, 1); /* the start snapshot, whole */
    ck_assert_uint_le(info.file_bytes, 64 * 1024);
    memdiff_snapshot *s = NULL;
    ck_assert_int_eq(memdiff_timeline_snapshot(t, 0, &s), MEMDIFF_OK);
    memdiff_snapshot_free(s);
    memdiff_timeline_free(t);
    close(go);
}
END_TEST

Suite *record_suite(void)
{
    Suite *s = suite_create("record");
    TCase *tc = tcase_create("record");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, record_command_phases_exact);
    tcase_add_test(tc, record_attached_pid_vanishes);
    tcase_add_test(tc, record_sigusr1_then_sigint);
    tcase_add_test(tc, record_full_disk);
    suite_add_tcase(s, tc);
    TCase *run = tcase_create("run");
    tcase_add_checked_fixture(run, setup, teardown);
    tcase_set_timeout(run, 120);
    tcase_add_test(run, run_passes_status_and_output);
    tcase_add_test(run, run_signal_status);
    tcase_add_test(run, run_missing_command);
    suite_add_tcase(s, run);
    return s;
}
