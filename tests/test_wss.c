/*
 * test_wss.c - working-set sizes over time (memdiff_wss_*, `memdiff wss`): the wss.pl way of
 * clearing referenced bits, sleeping and summing smaps' Referenced, on a child process that
 * touches a buffer it owns, on this process, and on the recorded /proc tree.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "fixture_tree.h"
#include "memdiff.h"
#include "suites.h"

#define MIB (UINT64_C(1) << 20)
#define RECORDED_PID 4194305

/* ---- a child that touches a buffer uniformly, forever ------------------------------------ */

/* One store per page. Not instrumented: under AddressSanitizer every store would also read the
 * shadow byte of its address, another 12.5 MiB of pages to count. */
__attribute__((no_sanitize_address, noinline)) static void sweep(volatile char *p, size_t n,
                                                                size_t ps)
{
    for (size_t i = 0; i < n; i += ps)
        p[i]++;
}

/* Forks a child that maps `bytes` of private anonymous memory (small pages), writes all of it,
 * tells the parent it is ready, then sweeps it in a loop until killed. */
static pid_t start_toucher(size_t bytes)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        size_t ps = (size_t)sysconf(_SC_PAGESIZE);
        char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            _exit(1);
        (void)madvise(p, bytes, MADV_NOHUGEPAGE); /* Referenced counts a huge page whole */
        sweep(p, bytes, ps);
        char c = 1;
        if (write(fds[1], &c, 1) != 1)
            _exit(1);
        for (;;)
            sweep(p, bytes, ps);
    }
    close(fds[1]);
    char c;
    ck_assert_int_eq(read(fds[0], &c, 1), 1);
    close(fds[0]);
    return pid;
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void print_samples(const char *what, const memdiff_wss_sample *s, size_t n)
{
    fprintf(stderr, "%s:\n  %-9s %-9s %-9s %10s %10s %10s\n", what, "Slp(s)", "Dur(s)",
            "Est(s)", "RSS(MB)", "PSS(MB)", "Ref(MB)");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "  %-9.4f %-9.4f %-9.4f %10.2f %10.2f %10.2f\n", s[i].slept_ns / 1e9,
                s[i].duration_ns / 1e9, s[i].span_ns / 1e9, (double)s[i].rss_bytes / MIB,
                (double)s[i].pss_bytes / MIB, (double)s[i].referenced_bytes / MIB);
}

/* The spans of a sample fit together as wss.pl's do: the clear, the sleeps and the read are
 * disjoint parts of the duration, and the estimated span drops half of the clear and half of
 * the read from it. */
static void check_times(const memdiff_wss_sample *s, uint64_t min_sleep)
{
    ck_assert_uint_ge(s->slept_ns, min_sleep);
    ck_assert_uint_ge(s->duration_ns, s->clear_ns + s->slept_ns + s->read_ns);
    ck_assert_uint_eq(s->span_ns, s->duration_ns - s->clear_ns / 2 - s->read_ns / 2);
    ck_assert_uint_ge(s->span_ns, s->slept_ns);
    ck_assert_uint_le(s->referenced_bytes, s->rss_bytes);
}

/* The working set of a program touching a 100 MiB buffer uniformly, profiled from 1 ms in
 * power-of-two steps (1, 2, 4 ... 2048 ms after the clear), levels at 100 MiB. Referenced counts
 * the pages the child accessed since the clear: the buffer's 25,600 pages once a sweep has run
 * through them (a few ms), and the few pages of stack and code its loop uses. So the plateau is
 * 100 MiB and at most some hundred KiB above; the tolerance, 2% (2 MiB), is for those and for
 * pages the kernel might reclaim meanwhile. The backend flushes the TLB after clearing, so a
 * page whose translation the CPU cached is not missed (wss.pl would undercount at 1 ms). */
START_TEST(profile_levels_at_buffer)
{
    const size_t bytes = 100 * MIB;
    pid_t pid = start_toucher(bytes);
    memdiff_wss_options o = MEMDIFF_WSS_OPTIONS_INIT;
    o.pid = pid;
    o.mode = MEMDIFF_WSS_PROFILE;
    o.interval_ns = 1000000;
    o.count = 12;
    memdiff_wss_sample s[12];
    size_t n = 0;
    int rc = memdiff_wss_measure(&o, s, 12, &n);
    stop(pid);
    ck_assert_msg(rc == MEMDIFF_OK, "%s: %s", memdiff_status_name(rc), memdiff_last_error());
    ck_assert_uint_eq(n, 12);
    print_samples("profile of a child sweeping 100 MiB", s, n);
    for (size_t i = 0; i < n; i++) {
        check_times(&s[i], o.interval_ns << (i ? i : 0));
        ck_assert_uint_eq(s[i].clear_ns, s[0].clear_ns); /* cleared once */
        /* Cumulative: never less, but for accessed bits the kernel clears on its own (LRU aging,
         * DAMON's kdamond, which runs on the test machine: one page less seen once). */
        if (i)
            ck_assert_uint_ge(s[i].referenced_bytes + 64 * 4096, s[i - 1].referenced_bytes);
    }
    for (size_t i = n - 3; i < n; i++) {
        double ref = (double)s[i].referenced_bytes;
        ck_assert_msg(ref >= 0.98 * (double)bytes && ref <= 1.02 * (double)bytes,
                      "step %zu: referenced %.2f MiB, want 100 MiB +- 2%%", i, ref / MIB);
    }
}
END_TEST

static int count_calls(void *ctx, const memdiff_wss_sample *s)
{
    (void)s;
    return ++*(int *)ctx == 2 ? 77 : 0;
}

START_TEST(interval_and_cumulative)
{
    memdiff_wss_options o = MEMDIFF_WSS_OPTIONS_INIT;
    o.interval_ns = 20000000;
    o.count = 3;
    memdiff_wss_sample s[3];
    size_t n = 0;
    ck_assert_int_eq(memdiff_wss_measure(&o, s, 3, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 3);
    print_samples("this process, 20 ms intervals", s, n);
    for (size_t i = 0; i < n; i++) {
        check_times(&s[i], o.interval_ns);
        ck_assert_uint_lt(s[i].slept_ns, 2 * o.interval_ns); /* each its own clear and sleep */
        ck_assert_uint_gt(s[i].referenced_bytes, 0);
    }

    o.mode = MEMDIFF_WSS_CUMULATIVE;
    o.interval_ns = 10000000;
    ck_assert_int_eq(memdiff_wss_measure(&o, s, 3, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        check_times(&s[i], (i + 1) * o.interval_ns);
        ck_assert_uint_eq(s[i].clear_ns, s[0].clear_ns);
        if (i)
            ck_assert_uint_gt(s[i].duration_ns, s[i - 1].duration_ns);
    }

    /* The callback ends a run: its value comes back. count 0 runs until then. */
    int calls = 0;
    o.count = 0;
    ck_assert_int_eq(memdiff_wss_run(&o, count_calls, &calls), 77);
    ck_assert_int_eq(calls, 2);
}
END_TEST

START_TEST(errors)
{
    memdiff_wss_options o = MEMDIFF_WSS_OPTIONS_INIT;
    memdiff_wss_sample s[1];
    size_t n = 5;
    int calls = 0;
    ck_assert_int_eq(memdiff_wss_run(&o, NULL, NULL), MEMDIFF_EINVAL);
    o.interval_ns = 0;
    ck_assert_int_eq(memdiff_wss_run(&o, count_calls, &calls), MEMDIFF_EINVAL);
    o.interval_ns = 1000000;
    o.mode = (memdiff_wss_mode)7;
    ck_assert_int_eq(memdiff_wss_run(&o, count_calls, &calls), MEMDIFF_EINVAL);
    o.mode = MEMDIFF_WSS_INTERVAL;
    ck_assert_int_eq(memdiff_wss_measure(&o, NULL, 1, &n), MEMDIFF_EINVAL);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(memdiff_wss_measure(&o, s, 0, &n), MEMDIFF_EINVAL);
    o.pid = 999999999; /* above PID_MAX_LIMIT */
    ck_assert_int_eq(memdiff_wss_measure(&o, s, 1, &n), MEMDIFF_ESRCH);
    ck_assert_int_eq(calls, 0);
}
END_TEST

/* The recorded tree: the sums of its smaps (there is no smaps_rollup in it, so the fallback
 * reads smaps whole), exactly; without a clear_refs file there is no working set to measure. */
START_TEST(recorded_tree_sums)
{
    char err[512], path[4096];
    char *root = fixture_tree_expand(MEMDIFF_TEST_FIXTURES "/recorded", err, sizeof err);
    ck_assert_msg(root != NULL, "%s", err);
    memdiff_wss_options o = MEMDIFF_WSS_OPTIONS_INIT;
    o.pid = RECORDED_PID;
    o.fixture_root = root;
    memdiff_wss_sample s[1];
    size_t n = 0;
    ck_assert_int_eq(memdiff_wss_measure(&o, s, 1, &n), MEMDIFF_EACCES);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "clear_refs"));

    snprintf(path, sizeof path, "%s/%d/clear_refs", root, RECORDED_PID);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(memdiff_wss_measure(&o, s, 1, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 1);

    snprintf(path, sizeof path, "%s/%d/smaps", root, RECORDED_PID);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    uint64_t rss = 0, pss = 0, ref = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Rss:", 4) == 0)
            rss += strtoull(line + 4, NULL, 10) * 1024;
        else if (strncmp(line, "Pss:", 4) == 0)
            pss += strtoull(line + 4, NULL, 10) * 1024;
        else if (strncmp(line, "Referenced:", 11) == 0)
            ref += strtoull(line + 11, NULL, 10) * 1024;
    }
    fclose(f);
    ck_assert_uint_eq(s[0].rss_bytes, rss);
    ck_assert_uint_eq(s[0].pss_bytes, pss);
    ck_assert_uint_eq(s[0].referenced_bytes, ref);
    ck_assert_uint_eq(ref, 6276 * 1024);
    fixture_tree_remove(root);
}
END_TEST

/* `memdiff wss PID --profile --count 3` prints wss.pl's header and one line per step. The steps
 * (25, 50 and 100 ms from the clear) are long enough for the child to sweep its 8 MiB under a
 * parallel ctest: at 2, 4 and 8 ms a starved child once showed 0.96 MB referenced. */
START_TEST(cli_profile)
{
    pid_t pid = start_toucher(8 * MIB);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s wss %d --profile --count 3 --interval 25ms --times 2>&1",
             MEMDIFF_CLI_PATH, (int)pid);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char out[4096];
    size_t len = fread(out, 1, sizeof out - 1, p);
    out[len] = '\0';
    int status = pclose(p);
    stop(pid);
    ck_assert_msg(status == 0, "exit %d:\n%s", status, out);
    char want[256];
    snprintf(want, sizeof want,
             "Watching PID %d page references grow, profile beginning with 0.025 seconds, 3 "
             "steps...\nSlp(s)  Dur(s)  Est(s)     RSS(MB)    PSS(MB)    Ref(MB)\n",
             (int)pid);
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
    int lines = 0;
    for (const char *c = out; *c; c++)
        lines += *c == '\n';
    ck_assert_msg(lines == 5, "%s", out);
    double slp, dur, est, rss, pss, ref;
    const char *last = out + len - 1;
    while (last > out && last[-1] != '\n')
        last--;
    ck_assert_int_eq(sscanf(last, "%lf %lf %lf %lf %lf %lf", &slp, &dur, &est, &rss, &pss, &ref),
                     6);
    /* 8 MiB swept, plus what else the kernel calls referenced: the loop's own pages, and pages
     * of its libraries that other processes touched meanwhile (Referenced counts the page's
     * PG_referenced flag, which every process mapping the page shares: under a parallel ctest,
     * measured 9.11 and 9.14 MB). Never more than is resident. */
    ck_assert_msg(ref >= 7.8 && ref <= rss, "the last step's Ref(MB) %.2f, want 8 (+ the loop), "
                  "at most RSS %.2f", ref, rss);
}
END_TEST

Suite *wss_suite(void)
{
    Suite *s = suite_create("wss");
    TCase *tc = tcase_create("Core");
    tcase_add_test(tc, profile_levels_at_buffer);
    tcase_add_test(tc, interval_and_cumulative);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, recorded_tree_sums);
    tcase_add_test(tc, cli_profile);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
