/*
 * test_system.c - system snapshots (memdiff_system_*) against the kernel's own figures, on
 * real processes: forked children that map and touch known memory and are held still with
 * SIGSTOP. Each child's RSS, PSS, USS and swap equal its /proc/PID/smaps_rollup; two children
 * sharing pages split them in PSS; the physical table agrees with /proc/meminfo within the
 * bounds it states; an unprivileged caller sees its own processes, exact, and no table, with
 * the reason; a process that exits during the snapshot is listed as exited; a pid reused is
 * told apart by its start time; a child that grew by exactly N pages shows N pages more in the
 * diff; system files round-trip and corrupt ones are refused.
 *
 * A stopped child's own pages do not change, but pages it shares with the rest of the machine
 * (libc's, the page cache's) change map counts whenever another process starts or ends: a
 * round counts only when smaps_rollup read before and after the snapshot agree, and rounds
 * are repeated until one does (as test_pss.c does).
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario_util.h"
#include "suites.h"
#include "system.h"

#define ROUNDS 40
#define PRIVATE_PAGES 300 /* each child's own anonymous pages */
#define SHARED_PAGES 64   /* a MAP_SHARED anonymous mapping both children touch */
#define GROW_PAGES 37     /* what the growing child adds */

/* ---- children ---------------------------------------------------------------------------- */

typedef struct child {
    pid_t pid;
    int cmd;   /* write: pages to touch next */
    int ready; /* read: "r" after each step */
} child;

/* The child's life: touch `first` private pages and every shared page, say ready; then for
 * each command n, touch n more private pages, say ready. Private pages come from one mapping
 * reserved up front (no huge pages), so growth adds exactly the pages touched. */
static void child_main(int cmd, int ready, char *shared, size_t first)
{
    size_t ps = scn_page(), cap = PRIVATE_PAGES + 4 * GROW_PAGES, used = 0;
    char *mem = mmap(NULL, cap * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        _exit(2);
    madvise(mem, cap * ps, MADV_NOHUGEPAGE);
    size_t n = first;
    for (;;) {
        for (size_t i = 0; i < n && used < cap; i++, used++)
            mem[used * ps] = (char)(used + 1);
        for (size_t i = 0; shared && i < SHARED_PAGES; i++)
            shared[i * ps] = (char)i;
        if (write(ready, "r", 1) != 1)
            _exit(3);
        uint32_t next;
        if (read(cmd, &next, sizeof next) != (ssize_t)sizeof next)
            _exit(0);
        n = next;
    }
}

static void wait_ready_and_stop(const child *c)
{
    char r;
    ck_assert_int_eq(read(c->ready, &r, 1), 1);
    int st;
    ck_assert_int_eq(kill(c->pid, SIGSTOP), 0);
    ck_assert_int_eq(waitpid(c->pid, &st, WUNTRACED), c->pid);
    ck_assert(WIFSTOPPED(st));
}

static void child_start(child *c, char *shared, size_t first)
{
    int cmd[2], ready[2];
    ck_assert_int_eq(pipe(cmd), 0);
    ck_assert_int_eq(pipe(ready), 0);
    fflush(NULL);
    c->pid = fork();
    ck_assert_int_ge(c->pid, 0);
    if (c->pid == 0) {
        close(cmd[1]);
        close(ready[0]);
        child_main(cmd[0], ready[1], shared, first);
    }
    close(cmd[0]);
    close(ready[1]);
    c->cmd = cmd[1];
    c->ready = ready[0];
    wait_ready_and_stop(c);
}

/* Lets the stopped child touch n more pages, and stops it again. */
static void child_grow(child *c, uint32_t n)
{
    ck_assert_int_eq(write(c->cmd, &n, sizeof n), (ssize_t)sizeof n);
    ck_assert_int_eq(kill(c->pid, SIGCONT), 0);
    wait_ready_and_stop(c);
}

static void child_end(child *c)
{
    if (c->pid <= 0)
        return;
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
    close(c->cmd);
    close(c->ready);
    c->pid = -1;
}

/* ---- the kernel's figures ------------------------------------------------------------------ */

typedef struct rollup {
    long rss, pss, uss, swap, swap_pss, anon; /* kB; -1 missing */
} rollup;

static int rollup_read(int pid, rollup *r)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long pc = -1, pd = -1;
    r->rss = r->pss = r->uss = r->swap = r->swap_pss = r->anon = -1;
    while (fgets(line, sizeof line, f)) {
        long v;
        char key[64];
        if (sscanf(line, "%63[^:]: %ld", key, &v) != 2)
            continue;
        if (!strcmp(key, "Rss"))
            r->rss = v;
        else if (!strcmp(key, "Pss"))
            r->pss = v;
        else if (!strcmp(key, "Private_Clean"))
            pc = v;
        else if (!strcmp(key, "Private_Dirty"))
            pd = v;
        else if (!strcmp(key, "Swap"))
            r->swap = v;
        else if (!strcmp(key, "SwapPss"))
            r->swap_pss = v;
        else if (!strcmp(key, "Anonymous"))
            r->anon = v;
    }
    fclose(f);
    r->uss = pc + pd;
    return 0;
}

static int rollup_equal(const rollup *a, const rollup *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* NULL when p's figures are rollup's (PSS to the KiB, as smaps_rollup prints it), else why. */
static const char *figures_match(const memdiff_sysproc *p, const rollup *r)
{
    static char msg[512];
    if (p->state != MEMDIFF_SYSPROC_READ)
        return "not read";
    unsigned need = MEMDIFF_SYSPROC_EXACT_RSS | MEMDIFF_SYSPROC_EXACT_PSS |
                    MEMDIFF_SYSPROC_EXACT_USS | MEMDIFF_SYSPROC_EXACT_SWAP |
                    MEMDIFF_SYSPROC_EXACT_ANON;
    if ((p->exact & need) != need)
        return "figures not marked exact";
    if ((long)(p->rss_bytes / 1024) == r->rss && (long)(p->pss_bytes / 1024) == r->pss &&
        (long)(p->uss_bytes / 1024) == r->uss && (long)(p->swap_bytes / 1024) == r->swap &&
        (long)(p->rss_anon_bytes / 1024) == r->anon && p->rss_bytes % 1024 == 0)
        return NULL;
    snprintf(msg, sizeof msg,
             "pid %d: rss %llu/%ld pss %llu/%ld uss %llu/%ld swap %llu/%ld anon %llu/%ld (ours "
             "kB / smaps_rollup kB)",
             p->pid, (unsigned long long)p->rss_bytes / 1024, r->rss,
             (unsigned long long)p->pss_bytes / 1024, r->pss,
             (unsigned long long)p->uss_bytes / 1024, r->uss,
             (unsigned long long)p->swap_bytes / 1024, r->swap,
             (unsigned long long)p->rss_anon_bytes / 1024, r->anon);
    return msg;
}

static memdiff_system *take(unsigned flags)
{
    memdiff_system_options o = MEMDIFF_SYSTEM_OPTIONS_INIT;
    o.flags = flags;
    memdiff_system *s = NULL;
    int rc = memdiff_system_take(&o, &s);
    ck_assert_msg(rc == MEMDIFF_OK, "memdiff_system_take: %s", memdiff_last_error());
    return s;
}

static memdiff_sysproc find(const memdiff_system *s, int pid)
{
    memdiff_sysproc p;
    ck_assert_msg(memdiff_system_find_process(s, pid, &p, NULL) == MEMDIFF_OK,
                  "pid %d not listed: %s", pid, memdiff_last_error());
    return p;
}

/* smaps_rollup of the watched pids, read by the snapshot's test hook right before it reads
 * each of them: the window in which a shared page's map count may change is that process's
 * read alone, not the whole snapshot's (the physical table takes hundreds of ms). */
static const int *watched;
static size_t nwatched;
static rollup at_read[4];

static void read_rollup_first(int pid)
{
    for (size_t i = 0; i < nwatched; i++)
        if (watched[i] == pid && rollup_read(pid, &at_read[i]) != 0)
            at_read[i].rss = -2; /* unreadable: never equal to a reading after */
}

/* Rounds until smaps_rollup of every pid, read right before the snapshot reads it and after
 * the snapshot, agrees, and each pid's figures equal it. Returns the snapshot of that round. */
static memdiff_system *take_exact(unsigned flags, const int *pids, size_t n)
{
    rollup after[4];
    static char mismatch[512];
    mismatch[0] = '\0';
    ck_assert(n <= 4);
    watched = pids;
    nwatched = n;
    for (int round = 0; round < ROUNDS; round++) {
        memdiff__system_test_hook(read_rollup_first);
        memdiff_system *s = take(flags);
        memdiff__system_test_hook(NULL);
        int stable = 1;
        for (size_t i = 0; i < n; i++) {
            ck_assert_int_eq(rollup_read(pids[i], &after[i]), 0);
            stable &= rollup_equal(&at_read[i], &after[i]);
        }
        for (size_t i = 0; stable && i < n; i++) {
            memdiff_sysproc p = find(s, pids[i]);
            const char *why = figures_match(&p, &after[i]);
            if (why) {
                /* Equal readings around a snapshot that differs: another process mapped and
                 * unmapped a shared page in between (a compiler starting and ending). A
                 * wrong rule differs in every round; this counts only once one matches. */
                snprintf(mismatch, sizeof mismatch, "%s", why);
                stable = 0;
            }
        }
        if (stable)
            return s;
        memdiff_system_free(s);
    }
    ck_abort_msg("no round of %d matched smaps_rollup; the last that held still: %s", ROUNDS,
                 mismatch[0] ? mismatch : "none held still");
    return NULL;
}

static int privileged(void)
{
    return geteuid() == 0;
}

static char *shared_map(void)
{
    char *m = mmap(NULL, SHARED_PAGES * scn_page(), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(m != MAP_FAILED);
    return m;
}

/* ---- tests ------------------------------------------------------------------------------- */

/* Two stopped children: each one's figures are smaps_rollup's, through the page maps (root)
 * and through the physical table's classes; the shared mapping's 64 pages are each child's
 * shmem, and in PSS each child carries half of them (two mappers). */
START_TEST(test_children_exact)
{
    if (!privileged())
        return; /* the unprivileged path has its own test */
    size_t ps = scn_page();
    char *shared = shared_map();
    child a, b;
    child_start(&a, shared, PRIVATE_PAGES);
    child_start(&b, shared, PRIVATE_PAGES);
    munmap(shared, SHARED_PAGES * ps); /* the children's mappings alone hold the pages */
    int pids[2] = {a.pid, b.pid};
    for (int with_table = 0; with_table < 2; with_table++) {
        memdiff_system *s = take_exact(with_table ? 0 : MEMDIFF_SYSTEM_NO_PHYS, pids, 2);
        memdiff_system_info in;
        ck_assert_int_eq(memdiff_system_get_info(s, &in), MEMDIFF_OK);
        ck_assert_int_eq(in.privileged, 1);
        ck_assert(in.sources & MEMDIFF_SYS_SRC_PAGEMAP);
        for (int k = 0; k < 2; k++) {
            memdiff_sysproc p = find(s, pids[k]);
            /* The shared mapping: 64 pages of shmem in each child's RSS, 32 in its PSS. */
            ck_assert_uint_eq(p.rss_shmem_bytes, SHARED_PAGES * ps);
            ck_assert_uint_ge(p.pss_bytes, p.uss_bytes + SHARED_PAGES * ps / 2);
            ck_assert_uint_ge(p.uss_bytes, PRIVATE_PAGES * ps);
            ck_assert_int_eq(p.ppid, getpid());
            ck_assert_uint_gt(p.start_ticks, 0);
            ck_assert_int_eq(p.uid, (int)getuid());
            if (with_table) {
                ck_assert(p.exact & MEMDIFF_SYSPROC_EXACT_SPLIT);
                /* Its own anonymous pages: the 300 touched, and a few more (stack, libc). */
                uint64_t own = 0;
                for (size_t i = 0; i < memdiff_system_phys_count(s); i++) {
                    memdiff_phys_row r;
                    memdiff_system_phys_row(s, i, &r);
                    if (r.owner == MEMDIFF_OWNER_PROCESS && r.pid == p.pid &&
                        r.kind == MEMDIFF_FRAME_ANON)
                        own += r.bytes;
                }
                ck_assert_uint_ge(own, PRIVATE_PAGES * ps);
                ck_assert_uint_le(own, p.uss_bytes);
            }
        }
        if (with_table) {
            uint64_t shmem_shared;
            ck_assert_int_eq(memdiff_system_phys_bytes(s, MEMDIFF_FRAME_SHMEM,
                                                       MEMDIFF_OWNER_SHARED, &shmem_shared),
                             MEMDIFF_OK);
            ck_assert_uint_ge(shmem_shared, SHARED_PAGES * ps);
        }
        memdiff_system_free(s);
    }
    child_end(&a);
    child_end(&b);
}
END_TEST

/* The table's figures against /proc/meminfo's: every one within the bound the snapshot states
 * (a round whose memory moved faster than the bound allows is taken again). Every frame is in
 * one row: the rows add up to the frames read. */
START_TEST(test_meminfo_within_bound)
{
    if (!privileged())
        return;
    const char *names[] = {"MemTotal", "MemFree", "AnonPages", "Shmem", "Buffers+Cached",
                           "Slab", "PageTables"};
    char last[512] = "";
    for (int round = 0; round < 5; round++) {
        memdiff_system *s = take(0);
        memdiff_system_info in;
        memdiff_system_get_info(s, &in);
        ck_assert_msg(in.degraded == NULL, "%s", in.degraded);
        ck_assert(in.sources & MEMDIFF_SYS_SRC_PHYS);
        uint64_t all = 0, sum = 0;
        ck_assert_int_eq(memdiff_system_phys_bytes(s, MEMDIFF_FRAME_ALL, MEMDIFF_OWNER_ALL,
                                                   &all),
                         MEMDIFF_OK);
        for (size_t i = 0; i < memdiff_system_phys_count(s); i++) {
            memdiff_phys_row r;
            memdiff_system_phys_row(s, i, &r);
            ck_assert_uint_eq(r.bytes, r.frames * in.page_size);
            sum += r.frames;
        }
        ck_assert_uint_eq(sum, in.phys_frames);
        ck_assert_uint_eq(all, in.phys_frames * in.page_size);
        ck_assert_uint_eq(memdiff_system_reconcile_count(s), sizeof names / sizeof names[0]);
        int ok = 1;
        for (size_t i = 0; i < memdiff_system_reconcile_count(s); i++) {
            memdiff_reconcile r;
            ck_assert_int_eq(memdiff_system_reconcile(s, i, &r), MEMDIFF_OK);
            ck_assert_str_eq(r.name, names[i]);
            uint64_t off = r.table_bytes > r.kernel_bytes ? r.table_bytes - r.kernel_bytes
                                                          : r.kernel_bytes - r.table_bytes;
            /* within says the table lies in [kernel before, kernel after] widened by the
             * rule's bound; off from the after reading is at most the whole bound then. */
            if (!r.within || off > r.bound_bytes) {
                snprintf(last, sizeof last, "%s: table %llu kernel %llu bound %llu (%s)", r.name,
                         (unsigned long long)r.table_bytes, (unsigned long long)r.kernel_bytes,
                         (unsigned long long)r.bound_bytes, r.rule);
                ok = 0;
            }
        }
        memdiff_system_free(s);
        if (ok)
            return;
    }
    ck_abort_msg("5 rounds out of bound, the last: %s", last);
}
END_TEST

/* As nobody: a child of its own, stopped, is read exactly from smaps_rollup; root's processes
 * (pid 1, the test runner) are listed as unreadable with EACCES; no physical table, and why. */
static const char *unprivileged(void *arg)
{
    (void)arg;
    static char msg[600];
    child c;
    child_start(&c, NULL, PRIVATE_PAGES);
    memdiff_system *s = NULL;
    const char *err = NULL;
    rollup after;
    watched = &c.pid;
    nwatched = 1;
    for (int round = 0; round < ROUNDS && !s; round++) {
        memdiff_system_options o = MEMDIFF_SYSTEM_OPTIONS_INIT;
        memdiff__system_test_hook(read_rollup_first);
        int rc = memdiff_system_take(&o, &s);
        memdiff__system_test_hook(NULL);
        if (rc || rollup_read(c.pid, &after)) {
            err = "take or smaps_rollup failed";
            break;
        }
        memdiff_sysproc q;
        if (!rollup_equal(&at_read[0], &after) ||
            memdiff_system_find_process(s, c.pid, &q, NULL) || figures_match(&q, &after)) {
            memdiff_system_free(s); /* moved, or a map count changed and changed back */
            s = NULL;
        }
    }
    memdiff_system_info in;
    memdiff_sysproc p, root;
    if (!err && !s)
        err = "no round matched smaps_rollup held still";
    if (!err) {
        memdiff_system_get_info(s, &in);
        if (in.privileged || memdiff_system_phys_count(s) != 0 || !in.degraded ||
            !strstr(in.degraded, "CAP_SYS_ADMIN") || !(in.sources & MEMDIFF_SYS_SRC_ROLLUP))
            err = "an unprivileged snapshot claims the table or privilege";
        else if (memdiff_system_find_process(s, c.pid, &p, NULL))
            err = "own child not listed";
        else if ((err = figures_match(&p, &after)) == NULL) {
            if (memdiff_system_find_process(s, getppid(), &root, NULL))
                err = "the root-owned test runner is not listed";
            else if (root.state != MEMDIFF_SYSPROC_UNREADABLE || root.error != MEMDIFF_EACCES ||
                     !root.why[0] || in.processes_unreadable == 0)
                err = "the root-owned test runner is not listed as unreadable (EACCES)";
            else if (!root.name[0] || root.start_ticks == 0)
                err = "an unreadable process is not named";
        }
        uint64_t b;
        if (!err && memdiff_system_phys_bytes(s, MEMDIFF_FRAME_ALL, MEMDIFF_OWNER_ALL, &b) !=
                        MEMDIFF_ENOTSUP)
            err = "phys_bytes without a table is not MEMDIFF_ENOTSUP";
    }
    if (err) {
        snprintf(msg, sizeof msg, "%s", err);
        err = msg;
    }
    memdiff_system_free(s);
    child_end(&c);
    return err;
}

START_TEST(test_unprivileged)
{
    const char *err = scn_as_nobody(unprivileged, NULL);
    ck_assert_msg(err == NULL, "%s", err);
}
END_TEST

/* A proc mounted with hidepid=invisible, read as nobody: only nobody's processes are listed,
 * all of them read, and info.hidden says why the list may be short. */
static const char *hidden_proc(void *arg)
{
    const char *root = arg;
    child c;
    child_start(&c, NULL, 8);
    memdiff_system_options o = MEMDIFF_SYSTEM_OPTIONS_INIT;
    o.fixture_root = root;
    memdiff_system *s = NULL;
    const char *err = NULL;
    memdiff_system_info in;
    memdiff_sysproc p;
    if (memdiff_system_take(&o, &s) != MEMDIFF_OK)
        err = memdiff_last_error();
    else if (memdiff_system_get_info(s, &in), !in.hidden || !strstr(in.hidden, "hidepid"))
        err = "info.hidden does not name hidepid";
    else if (memdiff_system_find_process(s, c.pid, &p, NULL) || p.state != MEMDIFF_SYSPROC_READ)
        err = "nobody's own child is not listed as read";
    else if (memdiff_system_find_process(s, 1, &p, NULL) == MEMDIFF_OK)
        err = "pid 1 (root's) is listed through hidepid=invisible";
    for (size_t i = 0; !err && i < memdiff_system_process_count(s); i++) {
        memdiff_system_process(s, i, &p);
        if (p.uid != 65534 && p.state == MEMDIFF_SYSPROC_READ)
            err = "a process of another user was read";
    }
    static char msg[600];
    if (err) {
        snprintf(msg, sizeof msg, "%s", err);
        err = msg;
    }
    memdiff_system_free(s);
    child_end(&c);
    return err;
}

START_TEST(test_hidepid)
{
    if (!privileged())
        return; /* mounting a proc needs CAP_SYS_ADMIN */
    char dir[] = "/tmp/memdiff-proc-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    if (mount("proc", dir, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") != 0) {
        rmdir(dir);
        ck_abort_msg("mount -t proc -o hidepid=invisible: %s", strerror(errno));
    }
    const char *err = scn_as_nobody(hidden_proc, dir);
    umount2(dir, MNT_DETACH);
    rmdir(dir);
    ck_assert_msg(err == NULL, "%s", err);
}
END_TEST

/* A process that exits after the snapshot listed it and before it reads it: listed, exited,
 * figures 0, no error; its frames are nobody's. */
static pid_t victim;

static void end_victim(int pid)
{
    if (pid == victim) {
        kill(victim, SIGKILL);
        waitpid(victim, NULL, 0);
    }
}

START_TEST(test_exit_during_snapshot)
{
    child c;
    child_start(&c, NULL, PRIVATE_PAGES);
    victim = c.pid;
    memdiff__system_test_hook(end_victim);
    memdiff_system *s = take(MEMDIFF_SYSTEM_NO_PHYS);
    memdiff__system_test_hook(NULL);
    memdiff_sysproc p = find(s, c.pid);
    ck_assert_int_eq(p.state, MEMDIFF_SYSPROC_EXITED);
    ck_assert_uint_eq(p.rss_bytes, 0);
    ck_assert_uint_eq(p.pss_bytes, 0);
    ck_assert_uint_gt(p.start_ticks, 0); /* it was named before it went */
    memdiff_system_info in;
    memdiff_system_get_info(s, &in);
    ck_assert_uint_ge(in.processes_exited, 1);
    ck_assert_uint_eq(in.processes, in.processes_read + in.processes_unreadable +
                                        in.processes_exited);
    memdiff_system_free(s);
    c.pid = -1;
    close(c.cmd);
    close(c.ready);
}
END_TEST

/* What the child's 37 pages add: exactly 37 pages; under AddressSanitizer also the shadow it
 * writes for them (an eighth of their bytes, over page boundaries: at most 37 / 8 + 2 pages). */
static void expect_grown(int64_t bytes, size_t ps)
{
    int64_t want = (int64_t)(GROW_PAGES * ps);
    if (UNDER_ASAN)
        ck_assert_msg(bytes >= want && bytes <= want + (int64_t)((GROW_PAGES / 8 + 2) * ps),
                      "grew by %lld bytes, want 37 pages and their shadow", (long long)bytes);
    else
        ck_assert_int_eq(bytes, want);
}

/* One child grows by exactly 37 pages between two snapshots: the diff says grew, by 37 pages
 * of RSS, USS and anonymous memory, and its table row of anonymous pages by as many. */
START_TEST(test_diff_grew_by_n)
{
    if (!privileged())
        return;
    size_t ps = scn_page();
    child c;
    child_start(&c, NULL, PRIVATE_PAGES);
    memdiff_system *a = take(0);
    child_grow(&c, GROW_PAGES);
    memdiff_system *b = take(0);
    memdiff_system_diff *d = NULL;
    ck_assert_int_eq(memdiff_system_compare(a, b, 0, &d), MEMDIFF_OK);
    int found = 0;
    for (size_t i = 0; i < memdiff_system_diff_process_count(d); i++) {
        memdiff_sysproc_diff pd;
        ck_assert_int_eq(memdiff_system_diff_process(d, i, &pd), MEMDIFF_OK);
        if (pd.after.pid != c.pid)
            continue;
        found = 1;
        ck_assert_int_eq(pd.change, MEMDIFF_SYSCHG_GREW);
        expect_grown(pd.rss_bytes, ps);
        expect_grown(pd.uss_bytes, ps);
        expect_grown(pd.rss_anon_bytes, ps);
        ck_assert_int_eq(pd.rss_file_bytes, 0);
        ck_assert_int_eq(pd.rss_bytes, (int64_t)(pd.after.rss_bytes - pd.before.rss_bytes));
    }
    ck_assert(found);
    int64_t anon = 0;
    for (size_t i = 0; i < memdiff_system_diff_phys_count(d); i++) {
        memdiff_phys_row_diff r;
        ck_assert_int_eq(memdiff_system_diff_phys_row(d, i, &r), MEMDIFF_OK);
        if (r.owner == MEMDIFF_OWNER_PROCESS && r.pid == c.pid && r.kind == MEMDIFF_FRAME_ANON)
            anon += r.delta_bytes;
    }
    expect_grown(anon, ps);
    uint64_t before, after;
    ck_assert_int_eq(memdiff_system_diff_phys_bytes(d, MEMDIFF_FRAME_ALL, MEMDIFF_OWNER_ALL,
                                                    &before, &after),
                     MEMDIFF_OK);
    ck_assert_uint_eq(before, after); /* the machine's memory: every frame, both times */
    memdiff_system_diff_free(d);
    memdiff_system_free(b);
    memdiff_system_free(a);
    child_end(&c);
}
END_TEST

/* A pid reused between two snapshots cannot be forced; the after snapshot's process is given
 * another start time by hand, which is what reuse looks like: one exited, one started. */
START_TEST(test_pid_reuse)
{
    child c;
    child_start(&c, NULL, 8);
    memdiff_system *a = take(MEMDIFF_SYSTEM_NO_PHYS);
    memdiff_system *b = NULL;
    char path[] = "/tmp/memdiff-sys-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(memdiff_system_save_file(a, path), MEMDIFF_OK);
    ck_assert_int_eq(memdiff_system_load_file(path, &b), MEMDIFF_OK);
    unlink(path);
    size_t k;
    memdiff_sysproc p;
    ck_assert_int_eq(memdiff_system_find_process(b, c.pid, &p, &k), MEMDIFF_OK);
    b->procs[k].start_ticks += 100; /* a new process with the old one's pid */
    memdiff_system_diff *d = NULL;
    ck_assert_int_eq(memdiff_system_compare(a, b, 0, &d), MEMDIFF_OK);
    int exited = 0, started = 0;
    for (size_t i = 0; i < memdiff_system_diff_process_count(d); i++) {
        memdiff_sysproc_diff pd;
        memdiff_system_diff_process(d, i, &pd);
        int pid = pd.after.pid ? pd.after.pid : pd.before.pid;
        if (pid != c.pid)
            continue;
        if (pd.change == MEMDIFF_SYSCHG_EXITED) {
            exited++;
            ck_assert_uint_eq(pd.before.start_ticks, p.start_ticks);
            ck_assert_int_eq(pd.rss_bytes, -(int64_t)pd.before.rss_bytes);
        } else if (pd.change == MEMDIFF_SYSCHG_STARTED) {
            started++;
            ck_assert_uint_eq(pd.after.start_ticks, p.start_ticks + 100);
            ck_assert_int_eq(pd.before_index, (size_t)-1);
        }
    }
    ck_assert_int_eq(exited, 1);
    ck_assert_int_eq(started, 1);
    memdiff_system_diff_free(d);
    memdiff_system_free(b);
    memdiff_system_free(a);
    child_end(&c);
}
END_TEST

/* Saved and loaded, every field comes back; a loaded copy compares with the original as the
 * same snapshot (no process changed, every row's delta 0). */
START_TEST(test_file_round_trip)
{
    memdiff_system *a = take(0), *b = NULL;
    char path[] = "/tmp/memdiff-sys-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(memdiff_system_save_file(a, path), MEMDIFF_OK);
    unsigned char head[16];
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(head, 1, sizeof head, f), sizeof head);
    fclose(f);
    ck_assert_int_eq(memdiff_system_file_sniff(head, sizeof head), 1);
    ck_assert_int_eq(memdiff_system_load_file(path, &b), MEMDIFF_OK);
    unlink(path);
    memdiff_system_info ia, ib;
    memdiff_system_get_info(a, &ia);
    memdiff_system_get_info(b, &ib);
    ck_assert_uint_eq(ia.time_ns, ib.time_ns);
    ck_assert_str_eq(ia.host, ib.host);
    ck_assert_str_eq(ia.boot_id, ib.boot_id);
    ck_assert_uint_eq(ia.processes, ib.processes);
    ck_assert_uint_eq(ia.processes_read, ib.processes_read);
    ck_assert_uint_eq(ia.processes_unreadable, ib.processes_unreadable);
    ck_assert_uint_eq(ia.processes_exited, ib.processes_exited);
    ck_assert_uint_eq(ia.kernel_threads, ib.kernel_threads);
    ck_assert_uint_eq(ia.phys_frames, ib.phys_frames);
    ck_assert_uint_eq(ia.phys_conflict_frames, ib.phys_conflict_frames);
    ck_assert_int_eq(!ia.degraded, !ib.degraded);
    for (size_t i = 0; i < memdiff_system_process_count(a); i++) {
        memdiff_sysproc x, y;
        memdiff_system_process(a, i, &x);
        memdiff_system_process(b, i, &y);
        ck_assert_int_eq(x.pid, y.pid);
        ck_assert_int_eq(x.ppid, y.ppid);
        ck_assert_uint_eq(x.uid, y.uid);
        ck_assert_uint_eq(x.start_ticks, y.start_ticks);
        ck_assert_str_eq(x.name, y.name);
        ck_assert_str_eq(x.cmdline, y.cmdline);
        ck_assert_str_eq(x.why, y.why);
        ck_assert_int_eq(x.state, y.state);
        ck_assert_int_eq(x.error, y.error);
        ck_assert_uint_eq(x.exact, y.exact);
        ck_assert_uint_eq(x.rss_bytes, y.rss_bytes);
        ck_assert_uint_eq(x.pss_bytes, y.pss_bytes);
        ck_assert_uint_eq(x.uss_bytes, y.uss_bytes);
        ck_assert_uint_eq(x.rss_shmem_bytes, y.rss_shmem_bytes);
    }
    ck_assert_uint_eq(memdiff_system_phys_count(a), memdiff_system_phys_count(b));
    for (size_t i = 0; i < memdiff_system_phys_count(a); i++) {
        memdiff_phys_row x, y;
        memdiff_system_phys_row(a, i, &x);
        memdiff_system_phys_row(b, i, &y);
        ck_assert(memcmp(&x, &y, sizeof x) == 0);
    }
    ck_assert_uint_eq(memdiff_system_reconcile_count(a), memdiff_system_reconcile_count(b));
    memdiff_system_diff *d = NULL;
    ck_assert_int_eq(memdiff_system_compare(a, b, 0, &d), MEMDIFF_OK);
    ck_assert_uint_eq(memdiff_system_diff_changed(d, MEMDIFF_SYSCHG_GREW) +
                          memdiff_system_diff_changed(d, MEMDIFF_SYSCHG_SHRANK) +
                          memdiff_system_diff_changed(d, MEMDIFF_SYSCHG_CHANGED) +
                          memdiff_system_diff_changed(d, MEMDIFF_SYSCHG_STARTED),
                      0);
    for (size_t i = 0; i < memdiff_system_diff_phys_count(d); i++) {
        memdiff_phys_row_diff r;
        memdiff_system_diff_phys_row(d, i, &r);
        ck_assert_int_eq(r.delta_bytes, 0);
    }
    memdiff_system_diff_free(d);
    memdiff_system_free(b);
    memdiff_system_free(a);
}
END_TEST

/* The bytes of a's file, in memory. */
static unsigned char *file_bytes(const memdiff_system *a, size_t *n)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, n);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(memdiff_system_save(a, f), MEMDIFF_OK);
    fclose(f);
    return (unsigned char *)buf;
}

static int load_bytes(const unsigned char *p, size_t n)
{
    FILE *f = fmemopen((void *)p, n ? n : 1, "rb");
    ck_assert_ptr_nonnull(f);
    if (!n)
        fgetc(f); /* an empty stream */
    memdiff_system *s = NULL;
    int rc = memdiff_system_load(f, &s);
    fclose(f);
    ck_assert(rc == MEMDIFF_OK ? s != NULL : s == NULL);
    memdiff_system_free(s);
    return rc;
}

static void put_crc(unsigned char *p, size_t n)
{
    uint32_t c = memdiff__crc32(0, p, n - 4);
    for (int i = 0; i < 4; i++)
        p[n - 4 + i] = (unsigned char)(c >> (8 * i));
}

/* Truncated at every length, a byte flipped anywhere, a foreign magic, a newer major: each is
 * MEMDIFF_EFORMAT. Forged with a valid checksum: a process count the bytes cannot hold, and
 * processes out of order, are refused too, as is a file whose records would take more memory
 * than the bound allows. */
START_TEST(test_corrupt_files)
{
    memdiff_system *a = take(MEMDIFF_SYSTEM_NO_PHYS);
    size_t n;
    unsigned char *p = file_bytes(a, &n);
    ck_assert_int_eq(load_bytes(p, n), MEMDIFF_OK);
    for (size_t len = 0; len < n; len += len < 64 ? 1 : 97)
        ck_assert_msg(load_bytes(p, len) == MEMDIFF_EFORMAT, "truncated at %zu loaded", len);
    for (size_t i = 0; i < n; i += 13) {
        p[i] ^= 0x20;
        ck_assert_msg(load_bytes(p, n) == MEMDIFF_EFORMAT, "byte %zu flipped loaded", i);
        p[i] ^= 0x20;
    }
    unsigned char *q = malloc(n);
    memcpy(q, p, n);
    q[8] = 2; /* major version 2 */
    put_crc(q, n);
    ck_assert_int_eq(load_bytes(q, n), MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "version 2"));
    memcpy(q, "MEMDIFF", 8);
    ck_assert_int_eq(memdiff_system_file_sniff(q, n), 0);
    ck_assert_int_eq(load_bytes(q, n), MEMDIFF_EFORMAT);
    /* The process section: tag 2, its length, then the count. */
    memcpy(q, p, n);
    size_t at = 16;
    uint64_t v;
    for (int tag = 1; tag < 2; tag++) { /* skip the info section */
        at++; /* tag */
        v = 0;
        for (unsigned sh = 0;; sh += 7) {
            v |= (uint64_t)(q[at] & 0x7F) << sh;
            if (!(q[at++] & 0x80))
                break;
        }
        at += v;
    }
    ck_assert_uint_eq(q[at], 2);
    at++;
    while (q[at] & 0x80)
        at++;
    at++; /* the section's length */
    size_t count_at = at;
    ck_assert(q[count_at] < 0x80 || (q[count_at + 1] & 0x80) == 0); /* a 1- or 2-byte count */
    int two = (q[count_at] & 0x80) != 0;
    q[count_at] = 0xFF;
    if (two)
        q[count_at + 1] = 0x7F; /* 16383 processes */
    else
        q[count_at] = 0x7F; /* 127 */
    put_crc(q, n);
    ck_assert_int_eq(load_bytes(q, n), MEMDIFF_EFORMAT);
    free(q);
    /* Order: two processes swapped makes pids descend; forged by saving a snapshot whose
     * array the test disorders (the writer's own check refuses it first). */
    if (a->nprocs >= 2) {
        memdiff_sysproc t = a->procs[0];
        a->procs[0] = a->procs[1];
        a->procs[1] = t;
        char *buf = NULL;
        size_t len;
        FILE *f = open_memstream(&buf, &len);
        ck_assert_int_eq(memdiff_system_save(a, f), MEMDIFF_EFORMAT);
        ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "ascending pid"));
        fclose(f);
        free(buf);
        a->procs[1] = a->procs[0];
        a->procs[0] = t;
    }
    free(p);
    memdiff_system_free(a);
}
END_TEST

/* A file of many processes with nothing in them (18 bytes each) would take 7 times its size in
 * memory: over the bound (4 x the file + 1 MiB), refused before anything is allocated. */
START_TEST(test_memory_bound)
{
    memdiff_system *s = memdiff__system_new();
    ck_assert_ptr_nonnull(s);
    s->info.page_size = 4096;
    s->info.host = s->info.boot_id = "";
    size_t n = 200000; /* 3.6 MB of file, 27 MB of processes */
    s->procs = memdiff__arena_alloc(&s->arena, n * sizeof *s->procs);
    ck_assert_ptr_nonnull(s->procs);
    for (size_t i = 0; i < n; i++) {
        s->procs[i].pid = (int)i + 1;
        s->procs[i].name = s->procs[i].cmdline = s->procs[i].why = "";
    }
    s->nprocs = n;
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(memdiff_system_save(s, f), MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "over the bound"));
    fclose(f);
    free(buf);
    memdiff_system_free(s);
}
END_TEST

START_TEST(test_arguments)
{
    memdiff_system *s = (memdiff_system *)1;
    memdiff_system_options o = MEMDIFF_SYSTEM_OPTIONS_INIT;
    ck_assert_int_eq(memdiff_system_take(NULL, NULL), MEMDIFF_EINVAL);
    o.flags = 0x80;
    ck_assert_int_eq(memdiff_system_take(&o, &s), MEMDIFF_EINVAL);
    ck_assert_ptr_null(s);
    o.flags = 0;
    o.fixture_root = "/nonexistent/memdiff-proc";
    ck_assert_int_eq(memdiff_system_take(&o, &s), MEMDIFF_EIO); /* no process list */
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "/nonexistent/memdiff-proc"));
    memdiff_system_options_init(&o);
    ck_assert_uint_eq(o.flags, 0);
    ck_assert_ptr_null(o.fixture_root);
    ck_assert_str_eq(memdiff_frame_kind_name(MEMDIFF_FRAME_ANON), "anon");
    ck_assert_str_eq(memdiff_frame_kind_name(MEMDIFF_FRAME_ALL), "all");
    ck_assert_str_eq(memdiff_frame_kind_name((memdiff_frame_kind)99), "invalid");
    ck_assert_str_eq(memdiff_frame_owner_name(MEMDIFF_OWNER_UNMAPPED), "unmapped");
    ck_assert_str_eq(memdiff_sysproc_state_name(MEMDIFF_SYSPROC_EXITED), "exited");
    ck_assert_str_eq(memdiff_sysproc_change_name(MEMDIFF_SYSCHG_UNKNOWN), "unknown");
    s = take(MEMDIFF_SYSTEM_NO_PHYS);
    memdiff_sysproc p;
    ck_assert_int_eq(memdiff_system_process(s, memdiff_system_process_count(s), &p),
                     MEMDIFF_ERANGE);
    ck_assert_int_eq(memdiff_system_find_process(s, -5, &p, NULL), MEMDIFF_ERANGE);
    memdiff_sysproc self = find(s, getpid());
    ck_assert_int_eq(self.state, MEMDIFF_SYSPROC_READ);
    ck_assert_ptr_nonnull(strstr(self.cmdline, "memdiff_tests"));
    uint64_t b;
    ck_assert_int_eq(memdiff_system_phys_bytes(s, MEMDIFF_FRAME_ALL, MEMDIFF_OWNER_ALL, &b),
                     MEMDIFF_ENOTSUP);
    memdiff_system_info in;
    memdiff_system_get_info(s, &in);
    ck_assert_ptr_nonnull(strstr(in.degraded, "NO_PHYS"));
    memdiff_system_diff *d = (memdiff_system_diff *)1;
    ck_assert_int_eq(memdiff_system_compare(s, s, 0x10, &d), MEMDIFF_EINVAL);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(memdiff_system_compare(s, NULL, 0, &d), MEMDIFF_EINVAL);
    memdiff_system_free(s);
    memdiff_system_free(NULL);
    memdiff_system_diff_free(NULL);
}
END_TEST

Suite *system_suite(void)
{
    Suite *s = suite_create("system");
    TCase *tc = tcase_create("system");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_children_exact);
    tcase_add_test(tc, test_meminfo_within_bound);
    tcase_add_test(tc, test_unprivileged);
    tcase_add_test(tc, test_hidepid);
    tcase_add_test(tc, test_exit_during_snapshot);
    tcase_add_test(tc, test_diff_grew_by_n);
    tcase_add_test(tc, test_pid_reuse);
    tcase_add_test(tc, test_file_round_trip);
    tcase_add_test(tc, test_corrupt_files);
    tcase_add_test(tc, test_memory_bound);
    tcase_add_test(tc, test_arguments);
    suite_add_tcase(s, tc);
    return s;
}
