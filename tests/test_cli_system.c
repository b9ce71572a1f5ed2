/*
 * test_cli_system.c - memdiff system, and diff and show of system files, on real processes:
 * children this test starts, named with prctl so that --name finds exactly them, stopped
 * (SIGSTOP) while measured so that their figures cannot move, and compared with what the kernel
 * says of them in /proc/PID/smaps_rollup.
 */
#include <signal.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario_util.h"
#include "suites.h"

static char out[1 << 18];
static char dir[64];

#define run(...) scn_sh(out, sizeof out, __VA_ARGS__)

#define ASSERT_RUN(expect, ...)                                                                \
    do {                                                                                       \
        int rc_ = run(__VA_ARGS__);                                                            \
        ck_assert_msg(rc_ == (expect), "%s: exit %d, expected %d\n%.3000s", #__VA_ARGS__, rc_,  \
                      (expect), out);                                                          \
    } while (0)

static void setup(void)
{
    strcpy(dir, "/tmp/memdiff_sys_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_cli_system: could not remove %s\n", dir);
}

/* ---- children ----------------------------------------------------------------------------- */

typedef struct child {
    pid_t pid;
    int to, from; /* its stdin and stdout (tests/system_target.c) */
} child;

/* Waits until c is stopped (it stops only when told, by SIGSTOP). */
static void stopped(const child *c)
{
    int st;
    ck_assert_int_eq(kill(c->pid, SIGSTOP), 0);
    ck_assert_int_eq(waitpid(c->pid, &st, WUNTRACED), c->pid);
    ck_assert(WIFSTOPPED(st));
}

/* memdiff_system_target named name that wrote pages pages of its own, stopped. Each
 * grow_child() has it write grow more. */
static child start_child(const char *name, size_t pages, size_t grow)
{
    char np[32], ng[32];
    snprintf(np, sizeof np, "%zu", pages);
    snprintf(ng, sizeof ng, "%zu", grow);
    char *const argv[] = {MEMDIFF_SYSTEM_TARGET_PATH, (char *)name, np, ng, NULL};
    child c;
    c.pid = scn_spawn_piped(argv, &c.to, &c.from);
    ck_assert_int_gt(c.pid, 0);
    char r;
    ck_assert_int_eq(read(c.from, &r, 1), 1);
    ck_assert_int_eq(r, 'r');
    stopped(&c);
    return c;
}

static void grow_child(const child *c)
{
    char r;
    ck_assert_int_eq(kill(c->pid, SIGCONT), 0);
    ck_assert_int_eq(write(c->to, "g", 1), 1);
    ck_assert_int_eq(read(c->from, &r, 1), 1);
    ck_assert_int_eq(r, 'g');
    stopped(c);
}

static void stop_child(child *c)
{
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
    close(c->to);
    close(c->from);
}

/* A field of /proc/PID/smaps_rollup, in bytes (the file gives kB). */
static uint64_t rollup(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    uint64_t v = UINT64_MAX;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':')
            v = strtoull(line + n + 1, NULL, 10) * 1024;
    fclose(f);
    ck_assert_msg(v != UINT64_MAX, "no %s in %s", key, path);
    return v;
}

/* ---- the table --------------------------------------------------------------------------- */

typedef struct row {
    int pid;
    unsigned uid;
    int64_t rss, pss, uss, swap, anon; /* a diff's rows: the changes */
    char name[32];
    char change[16]; /* a diff's rows: "grew", "started"... */
} row;

/* A figure cell: digits with separators, a sign in a diff; INT64_MIN for "~..." (an estimate)
 * or a dash (unknown), which no assertion on a count accepts. */
static int64_t cell(const char *s)
{
    int neg = s[0] == '-' && s[1] >= '0' && s[1] <= '9';
    s += s[0] == '+' || neg;
    if (s[0] < '0' || s[0] > '9')
        return INT64_MIN;
    int64_t v = 0;
    for (; *s; s++)
        if (*s >= '0' && *s <= '9')
            v = v * 10 + (*s - '0');
    return neg ? -v : v;
}

/* The rows of the process table in text (the lines after the "Processes" heading and the
 * column heads, to a blank line or "Sum of"), in order; their count. A diff's rows (diff) start
 * with the change. Names here have no spaces: the name is the last word. */
static int rows_of(const char *text, row *rows, int max, int diff)
{
    const char *p = strstr(text, "\nProcesses");
    ck_assert_msg(p != NULL, "no process table in:\n%.3000s", text);
    p = strchr(p + 1, '\n');
    p = strchr(p + 1, '\n') + 1; /* past the heading and the column heads */
    int n = 0;
    while (*p && *p != '\n' && strncmp(p, "Sum of", 6) != 0) {
        const char *e = strchr(p, '\n');
        char line[512], copy[512], *w[16], *save = NULL;
        size_t len = e ? (size_t)(e - p) : strlen(p);
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        strcpy(copy, line);
        int nw = 0;
        for (char *t = strtok_r(copy, " ", &save); t && nw < 16; t = strtok_r(NULL, " ", &save))
            w[nw++] = t;
        int k = diff ? 1 : 0;
        ck_assert_int_lt(n, max);
        ck_assert_msg(nw >= k + 8, "a short row: %s", line);
        row *r = &rows[n++];
        snprintf(r->change, sizeof r->change, "%s", diff ? w[0] : "");
        r->pid = atoi(w[k]);
        r->uid = (unsigned)atoi(w[k + 1]);
        r->rss = cell(w[k + 2]);
        r->pss = cell(w[k + 3]);
        r->uss = cell(w[k + 4]);
        r->swap = cell(w[k + 5]);
        r->anon = nw >= k + 10 ? cell(w[k + 6]) : -1; /* the split, where it fit */
        snprintf(r->name, sizeof r->name, "%s", w[nw - 1]);
        p = e ? e + 1 : p + len;
    }
    return n;
}

/* The row of pid among rows, or NULL. */
static const row *row_of(const row *rows, int n, int pid)
{
    for (int i = 0; i < n; i++)
        if (rows[i].pid == pid)
            return &rows[i];
    return NULL;
}

/* ---- tests -------------------------------------------------------------------------------- */

/* Two stopped children of 300 written pages each: each row carries exactly what smaps_rollup
 * says of it (PSS: the kernel prints whole kB, so the row's bytes rounded down to a KiB). Their
 * binary's pages are mapped by both of them alone, so PSS lies strictly between USS and RSS:
 * every column is told apart. */
START_TEST(table_lists_a_stopped_child_as_smaps_rollup)
{
    child c[2] = {start_child("mdsys_roll", 300, 0), start_child("mdsys_roll", 300, 0)};
    ASSERT_RUN(0, "'%s' system --name '^mdsys_roll$' -w 0 --no-phys", MEMDIFF_CLI_PATH);
    row rows[8];
    int n = rows_of(out, rows, 8, 0);
    ck_assert_msg(n == 2, "%d rows for two children:\n%s", n, out);
    for (int i = 0; i < 2; i++) {
        const row *r = row_of(rows, n, c[i].pid);
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->uid, (unsigned)getuid());
        ck_assert_uint_eq((uint64_t)r->rss, rollup(c[i].pid, "Rss"));
        ck_assert_uint_eq((uint64_t)r->pss / 1024 * 1024, rollup(c[i].pid, "Pss"));
        ck_assert_uint_eq((uint64_t)r->uss,
                          rollup(c[i].pid, "Private_Clean") + rollup(c[i].pid, "Private_Dirty"));
        ck_assert_uint_eq((uint64_t)r->swap, rollup(c[i].pid, "Swap"));
        /* The 300 pages are the child's own: USS holds them at least. */
        ck_assert_uint_ge((uint64_t)r->uss, 300 * scn_page());
        ck_assert_int_lt(r->uss, r->pss);
        ck_assert_int_lt(r->pss, r->rss);
    }
    stop_child(&c[0]);
    stop_child(&c[1]);
}
END_TEST

/* Three children of 100, 200 and 300 pages: --sort orders them by size, --top cuts, --name and
 * --user choose exactly them (or none). */
START_TEST(sort_top_user_and_name_select_exactly)
{
    child c[3] = {start_child("mdsys_a", 100, 0), start_child("mdsys_b", 300, 0),
                  start_child("mdsys_c", 200, 0)};
    row rows[8];
    ASSERT_RUN(0, "'%s' system --name '^mdsys_[abc]$' --sort rss -w 0 --no-phys",
               MEMDIFF_CLI_PATH);
    ck_assert_int_eq(rows_of(out, rows, 8, 0), 3);
    /* Largest first: b (300 pages), c (200), a (100). */
    ck_assert_int_eq(rows[0].pid, c[1].pid);
    ck_assert_int_eq(rows[1].pid, c[2].pid);
    ck_assert_int_eq(rows[2].pid, c[0].pid);

    ASSERT_RUN(0, "'%s' system --name '^mdsys_[abc]$' --sort uss --top 2 -w 0 --no-phys",
               MEMDIFF_CLI_PATH);
    ck_assert_int_eq(rows_of(out, rows, 8, 0), 2);
    ck_assert_int_eq(rows[0].pid, c[1].pid);
    ck_assert_int_eq(rows[1].pid, c[2].pid);

    /* By pid (the default): the fork order, which is ascending unless pids wrapped. */
    ASSERT_RUN(0, "'%s' system --name 'mdsys_(a|c)' -w 0 --no-phys", MEMDIFF_CLI_PATH);
    ck_assert_int_eq(rows_of(out, rows, 8, 0), 2);
    ck_assert_int_eq(rows[0].pid, c[0].pid < c[2].pid ? c[0].pid : c[2].pid);
    ck_assert_int_eq(rows[1].pid, c[0].pid < c[2].pid ? c[2].pid : c[0].pid);

    /* --user: the caller's uid keeps all three; another uid none of them. */
    ASSERT_RUN(0, "'%s' system --name '^mdsys_[abc]$' --user %u -w 0 --no-phys",
               MEMDIFF_CLI_PATH, (unsigned)getuid());
    ck_assert_int_eq(rows_of(out, rows, 8, 0), 3);
    ASSERT_RUN(0, "'%s' system --name '^mdsys_[abc]$' --user %u -w 0 --no-phys",
               MEMDIFF_CLI_PATH, (unsigned)getuid() + 1);
    ck_assert_int_eq(rows_of(out, rows, 8, 0), 0);
    ASSERT_RUN(2, "'%s' system --user no-such-user-here 2>&1", MEMDIFF_CLI_PATH);
    ck_assert_ptr_nonnull(strstr(out, "no such user"));
    ASSERT_RUN(2, "'%s' system --sort size 2>&1", MEMDIFF_CLI_PATH);
    for (int i = 0; i < 3; i++)
        stop_child(&c[i]);
}
END_TEST

/* system -o twice, around a child writing 37 more pages: diff lists it as grown by exactly
 * 37 pages of RSS (all anonymous), and --fail-on sees the sums. */
START_TEST(diff_of_two_system_files_shows_growth)
{
    const size_t grow = 37, page = scn_page();
    child c = start_child("mdsys_grow", 50, grow);
    ASSERT_RUN(0, "'%s' system --no-phys -q -o %s/a.mdsys", MEMDIFF_CLI_PATH, dir);
    grow_child(&c);
    ASSERT_RUN(0, "'%s' system --no-phys -o %s/b.mdsys", MEMDIFF_CLI_PATH, dir);
    ck_assert_ptr_nonnull(strstr(out, "-> ")); /* the summary line names the file */
    ASSERT_RUN(0, "'%s' diff %s/a.mdsys %s/b.mdsys -w 0 --no-header", MEMDIFF_CLI_PATH, dir,
               dir);
    row rows[512];
    int n = rows_of(out, rows, 512, 1);
    const row *r = row_of(rows, n, c.pid);
    ck_assert_msg(r != NULL, "the child is not in the diff:\n%s", out);
    ck_assert_str_eq(r->change, "grew");
    /* Exactly the 37 pages it wrote, all of them anonymous and its own. */
    ck_assert_int_eq(r->rss, (int64_t)(grow * page));
    ck_assert_int_eq(r->uss, (int64_t)(grow * page));
    /* PSS: those 37 pages whole, give or take what its shares of the few pages it shares
     * (vdso data, page cache of its binary) moved meanwhile: less than a page. */
    ck_assert_int_lt(llabs(r->pss - (int64_t)(grow * page)), (long long)page);
    ck_assert_int_eq(r->anon, (int64_t)(grow * page));
    ASSERT_RUN(1, "'%s' diff %s/a.mdsys %s/b.mdsys --fail-on 'grew>0' 2>&1", MEMDIFF_CLI_PATH,
               dir, dir);
    ck_assert_ptr_nonnull(strstr(out, "--fail-on grew>0 holds"));
    ASSERT_RUN(0, "'%s' diff %s/a.mdsys %s/b.mdsys --fail-on 'started>100000' --json >/dev/null",
               MEMDIFF_CLI_PATH, dir, dir);
    ASSERT_RUN(2, "'%s' diff %s/a.mdsys %s/b.mdsys --fail-on 'net>0' 2>&1", MEMDIFF_CLI_PATH,
               dir, dir);
    ck_assert_ptr_nonnull(strstr(out, "unknown measure 'net' of a system diff"));
    /* A system file against a snapshot file: two kinds, refused. */
    ASSERT_RUN(0, "'%s' snap %d -q -o %s/p.mds", MEMDIFF_CLI_PATH, (int)c.pid, dir);
    ASSERT_RUN(2, "'%s' diff %s/a.mdsys %s/p.mds 2>&1", MEMDIFF_CLI_PATH, dir, dir);
    ck_assert_ptr_nonnull(strstr(out, "a diff compares two of one kind"));
    /* show of a system file: the saved table, the child with its 87 pages of RSS at least. */
    ASSERT_RUN(0, "'%s' show %s/b.mdsys -r 2>&1; '%s' show %s/b.mdsys -w 0",
               MEMDIFF_CLI_PATH, dir, MEMDIFF_CLI_PATH, dir);
    ck_assert_ptr_nonnull(strstr(out, "a system snapshot has no regions"));
    n = rows_of(strstr(out, "memdiff system:"), rows, 512, 0);
    r = row_of(rows, n, c.pid);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_ge(r->rss, (int64_t)((50 + grow) * page));
    /* Standard input in place of either file, through a pipe (no rewinding): the same diff,
     * byte for byte, and show tells a system file on it from a snapshot file. */
    static char by_file[sizeof out];
    ASSERT_RUN(0, "'%s' diff %s/a.mdsys %s/b.mdsys -w 0 --no-header", MEMDIFF_CLI_PATH, dir,
               dir);
    memcpy(by_file, out, sizeof out);
    ASSERT_RUN(0, "cat %s/a.mdsys | '%s' diff - %s/b.mdsys -w 0 --no-header", dir,
               MEMDIFF_CLI_PATH, dir);
    ck_assert_str_eq(out, by_file);
    ASSERT_RUN(0, "cat %s/b.mdsys | '%s' diff %s/a.mdsys - -w 0 --no-header", dir,
               MEMDIFF_CLI_PATH, dir);
    ck_assert_str_eq(out, by_file);
    ASSERT_RUN(0, "cat %s/b.mdsys | '%s' show - -w 0", dir, MEMDIFF_CLI_PATH);
    ck_assert_ptr_nonnull(row_of(rows, rows_of(strstr(out, "memdiff system:"), rows, 512, 0),
                                 c.pid));
    ASSERT_RUN(0, "cat %s/p.mds | '%s' show - -w 0 >/dev/null", dir, MEMDIFF_CLI_PATH);
    ASSERT_RUN(2, "cat %s/p.mds | '%s' diff - %s/a.mdsys 2>&1", dir, MEMDIFF_CLI_PATH, dir);
    ck_assert_ptr_nonnull(strstr(out, "a diff compares two of one kind"));
    stop_child(&c);
}
END_TEST

/* Without privilege: the physical table is left out and the report says why; every process
 * listed is the caller's own. */
static const char *unprivileged(void *arg)
{
    (void)arg;
    static char text[1 << 16];
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' system -w 0", MEMDIFF_CLI_PATH);
    FILE *p = popen(cmd, "r");
    if (!p)
        return "popen failed";
    size_t n = fread(text, 1, sizeof text - 1, p);
    text[n] = '\0';
    if (pclose(p) != 0)
        return "memdiff system failed";
    const char *why = strstr(text, "Physical memory: ");
    if (!why || !strstr(why, "CAP_SYS_ADMIN"))
        return "no reason for the missing physical table";
    if (!strstr(text, "Unreadable: "))
        return "the other users' processes are not counted as unreadable";
    static row rows[512];
    int rows_n = rows_of(text, rows, 512, 0);
    for (int i = 0; i < rows_n; i++)
        if (rows[i].uid != (unsigned)getuid())
            return "a process of another user is listed";
    return rows_n > 0 ? NULL : "not even memdiff itself is listed";
}

START_TEST(unprivileged_run_says_why_the_physical_table_is_missing)
{
    const char *why = scn_as_nobody(unprivileged, NULL);
    ck_assert_msg(why == NULL, "%s", why);
}
END_TEST

Suite *cli_system_suite(void)
{
    Suite *s = suite_create("cli_system");
    TCase *tc = tcase_create("System");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, table_lists_a_stopped_child_as_smaps_rollup);
    tcase_add_test(tc, sort_top_user_and_name_select_exactly);
    tcase_add_test(tc, diff_of_two_system_files_shows_growth);
    tcase_add_test(tc, unprivileged_run_says_why_the_physical_table_is_missing);
    suite_add_tcase(s, tc);
    return s;
}
