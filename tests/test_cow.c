/*
 * test_cow.c - copy-on-write and other sharing changes in real processes, with frame numbers
 * (root: pagemap shows frames only with CAP_SYS_ADMIN) and without (uid nobody, or root that
 * dropped CAP_SYS_ADMIN). The rule
 * (compare.c): a page resident in both snapshots whose exclusivity changed became private or
 * became shared, whether its frame changed too or not; replaced is a frame change with sharing
 * unchanged. So one event has one name at every privilege, which issue 22 found it had not: a
 * forked child writing 10 inherited pages was "replaced 10" as root, "became-private 10" as
 * nobody. The rule's corner cases (frames unknown, fast depth) are synthetic, in test_compare.c.
 *
 * Each test first checks its premise in its own pagemap (Documentation/admin-guide/mm/
 * pagemap.rst: bit 56 exclusively mapped, bit 61 file page or shared anonymous, bits 0-54 the
 * frame, zero without CAP_SYS_ADMIN), so that a failure says whether the kernel or memdiff
 * differs from what the test expects. The memory is a mapping between two PROT_NONE guard pages
 * (a VMA of its own, like scn_map()'s) with MADV_NOHUGEPAGE, written page by page; Check's fork
 * mode gives every test a process of its own. The unprivileged runs happen in a child of the
 * test that dropped to nobody (scn_as_nobody()) or, still root, dropped CAP_SYS_ADMIN alone
 * (capset): they report what went wrong instead of asserting.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario_util.h"
#include "smaps.h"
#include "suites.h"

enum { COW_PAGES = 10 };

#define PM_PFN(e) ((e) & ((UINT64_C(1) << 55) - 1))
#define PM_EXCLUSIVE(e) ((e) >> 56 & 1)
#define PM_FILE(e) ((e) >> 61 & 1)
#define PM_PRESENT(e) ((e) >> 63 & 1)

/* Why a run failed; each process of a run has its own copy. */
static char why[4096];

#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            snprintf(why, sizeof why, __VA_ARGS__);                                              \
            return why;                                                                          \
        }                                                                                        \
    } while (0)

/* One run: the depth asked for, and whether the snapshots must carry frame numbers. */
typedef struct cow_case {
    memdiff_depth depth;
    int frames;
    const char *who; /* for messages: "root, standard" */
} cow_case;

/* COW_PAGES read-write pages of a mapping of (flags, fd) between two guard pages; NULL on
 * failure, with why set. */
static char *guarded_map(int flags, int fd)
{
    size_t ps = scn_page();
    char *r = mmap(NULL, (COW_PAGES + 2) * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) {
        snprintf(why, sizeof why, "reserve: %s", strerror(errno));
        return NULL;
    }
    char *m = mmap(r + ps, COW_PAGES * ps, PROT_READ | PROT_WRITE, flags | MAP_FIXED, fd, 0);
    if (m != r + ps) {
        snprintf(why, sizeof why, "map: %s", strerror(errno));
        return NULL;
    }
    (void)madvise(m, COW_PAGES * ps, MADV_NOHUGEPAGE);
    return m;
}

static void guarded_unmap(char *m)
{
    size_t ps = scn_page();
    munmap(m - ps, (COW_PAGES + 2) * ps);
}

/* The pagemap entries of m's COW_PAGES pages. */
static const char *read_entries(const char *m, uint64_t *e)
{
    int fd = open("/proc/self/pagemap", O_RDONLY);
    CHECK(fd >= 0, "open /proc/self/pagemap: %s", strerror(errno));
    size_t ps = scn_page();
    ssize_t n = pread(fd, e, COW_PAGES * sizeof *e, (off_t)((uintptr_t)m / ps * sizeof *e));
    close(fd);
    CHECK(n == (ssize_t)(COW_PAGES * sizeof *e), "read pagemap: %s", strerror(errno));
    return NULL;
}

static const char *snap(const cow_case *c, const char *when, memdiff_snapshot **out)
{
    *out = NULL;
    int rc = memdiff_snapshot_self(c->depth, out);
    CHECK(rc == MEMDIFF_OK, "%s: snapshot %s: %s: %s", c->who, when, memdiff_status_name(rc),
          memdiff_last_error());
    memdiff_snapshot_info info;
    CHECK(memdiff_snapshot_get_info(*out, &info) == MEMDIFF_OK, "get_info failed");
    CHECK(!!(info.sources & MEMDIFF_SRC_FRAMES) == c->frames &&
              (info.sources & MEMDIFF_SRC_PAGES),
          "%s: snapshot %s has sources 0x%x: want pages, %s frame numbers", c->who, when,
          info.sources, c->frames ? "with" : "without");
    /* PSS needs map counts: deep with CAP_SYS_ADMIN only; elsewhere unknown, and 0. */
    int pss = c->frames && c->depth == MEMDIFF_DEPTH_DEEP;
    CHECK(!!(info.sources & MEMDIFF_SRC_PSS) == pss && (pss || info.pss_bytes == 0),
          "%s: snapshot %s: sources 0x%x, PSS %llu bytes: want PSS %s", c->who, when,
          info.sources, (unsigned long long)info.pss_bytes, pss ? "known" : "unknown (0)");
    return NULL;
}

/* The block of d that holds m, which must span m's COW_PAGES pages and say that all of them
 * changed in one way, `change` (became-private or replaced), and in no other way. */
static const char *expect_all(const memdiff_diff *d, const char *m, memdiff_change change,
                              const char *who)
{
    size_t ps = scn_page();
    const memdiff_block *b = scn_find_block(d, (uintptr_t)m, SCN_ANY_CATEGORY);
    CHECK(b, "%s: no block holds the mapping at %p", who, (const void *)m);
    const char *s = scn_block_str(b);
    const memdiff_totals *t = &b->totals;
    uint64_t want = COW_PAGES * ps;
    uint64_t got = change == MEMDIFF_CHANGE_BECAME_PRIVATE ? t->became_private_bytes
                                                           : t->replaced_bytes;
    CHECK(b->start == (uintptr_t)m && b->end == (uintptr_t)m + want, "%s: span: %s", who, s);
    CHECK(b->change == change && got == want &&
              t->became_private_bytes + t->replaced_bytes + t->became_shared_bytes == want &&
              !t->new_bytes && !t->freed_bytes,
          "%s: want all %d pages %s, nothing else: %s", who, COW_PAGES,
          memdiff_change_name(change), s);
    return NULL;
}

static const char *diff_expect(const memdiff_snapshot *a, const memdiff_snapshot *b,
                               const char *m, memdiff_change change, const char *who)
{
    memdiff_diff *d = NULL;
    int rc = memdiff_compare(a, b, 0, &d);
    CHECK(rc == MEMDIFF_OK, "%s: compare: %s: %s", who, memdiff_status_name(rc),
          memdiff_last_error());
    const char *err = expect_all(d, m, change, who);
    memdiff_diff_free(d);
    return err;
}

/* ---- copy-on-write after fork -------------------------------------------------------------
 * A process writes COW_PAGES private anonymous pages and forks. Both processes now map each
 * page: page mapcount 2, so neither sees it exclusive. The child writes every page while the
 * parent keeps its copies: each write fault copies the page into a frame of the child's own
 * (mm/memory.c, wp_page_copy: the page is mapped twice, so it cannot be reused), exclusive.
 * The child's diff: all COW_PAGES became private, although each also has a new frame, which
 * root's snapshots see; none new, freed or replaced. The parent's diff of the same event: its
 * pages, in the frames they had, are its alone again: all COW_PAGES became private as well. */

/* The pages' pagemap entries (eb), the before snapshot (*a), a write to each page, the after
 * snapshot (*b) and the entries again (ea): the bracket around the writes both tests make. */
static const char *write_between(const cow_case *c, char *m, uint64_t *eb, uint64_t *ea,
                                 memdiff_snapshot **a, memdiff_snapshot **b)
{
    size_t ps = scn_page();
    const char *err = read_entries(m, eb);
    if (!err)
        err = snap(c, "before", a);
    for (size_t i = 0; !err && i < COW_PAGES; i++)
        ((volatile char *)m)[i * ps] = (char)(100 + i);
    if (!err)
        err = snap(c, "after", b);
    if (!err)
        err = read_entries(m, ea);
    return err;
}

/* Whether entries before (eb) and after (ea) show a page in another frame where frames show,
 * and no frame where they do not. */
static int new_frame(const cow_case *c, uint64_t eb, uint64_t ea)
{
    return c->frames ? PM_PFN(eb) && PM_PFN(ea) && PM_PFN(eb) != PM_PFN(ea)
                     : !PM_PFN(eb) && !PM_PFN(ea);
}

static const char *cow_child(const cow_case *c, char *m)
{
    uint64_t eb[COW_PAGES], ea[COW_PAGES];
    memdiff_snapshot *a = NULL, *b = NULL;
    const char *err = write_between(c, m, eb, ea, &a, &b);
    for (size_t i = 0; !err && i < COW_PAGES; i++) {
        /* The premise: shared before, exclusive after, in another frame where frames show. */
        int moved = new_frame(c, eb[i], ea[i]);
        if (!PM_PRESENT(eb[i]) || PM_EXCLUSIVE(eb[i]) || !PM_PRESENT(ea[i]) ||
            !PM_EXCLUSIVE(ea[i]) || !moved) {
            snprintf(why, sizeof why,
                     "%s: child's page %zu: pagemap 0x%llx before the write, 0x%llx after: want "
                     "present, shared, then exclusive%s",
                     c->who, i, (unsigned long long)eb[i], (unsigned long long)ea[i],
                     c->frames ? " in another frame" : " (frames hidden)");
            err = why;
        }
    }
    if (!err) {
        char who[128];
        snprintf(who, sizeof who, "%s: the child's diff", c->who);
        err = diff_expect(a, b, m, MEMDIFF_CHANGE_BECAME_PRIVATE, who);
    }
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    return err;
}

static const char *cow_run(const cow_case *c)
{
    size_t ps = scn_page();
    char *m = guarded_map(MAP_PRIVATE | MAP_ANONYMOUS, -1);
    if (!m)
        return why;
    for (size_t i = 0; i < COW_PAGES; i++)
        m[i * ps] = (char)(1 + i);
    int go[2], result[2];
    CHECK(pipe(go) == 0 && pipe(result) == 0, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        char g;
        close(go[1]);
        close(result[0]);
        const char *err = read(go[0], &g, 1) == 1 ? cow_child(c, m) : "no go from the parent";
        if (err && write(result[1], err, strlen(err)) < 0)
            _exit(3);
        _exit(err ? 1 : 0);
    }
    close(go[0]);
    close(result[1]);
    /* The parent's before: taken while the child maps the same pages and has not written. */
    memdiff_snapshot *a = NULL, *b = NULL;
    const char *err = snap(c, "before (parent)", &a);
    if (write(go[1], "g", 1) != 1)
        abort(); /* the child waits for it: it cannot be left waiting */
    close(go[1]);
    char msg[sizeof why];
    size_t len = scn_read_message(result[0], msg, sizeof msg);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
    if (!err && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        snprintf(why, sizeof why, "%s", len ? msg : "the child failed without a message");
        err = why;
    }
    if (!err)
        err = snap(c, "after (parent)", &b);
    if (!err) {
        char who[128];
        snprintf(who, sizeof who, "%s: the parent's diff", c->who);
        err = diff_expect(a, b, m, MEMDIFF_CHANGE_BECAME_PRIVATE, who);
    }
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    guarded_unmap(m);
    return err;
}

static const cow_case root_cases[] = {
    {MEMDIFF_DEPTH_STANDARD, 1, "root, standard"},
    {MEMDIFF_DEPTH_DEEP, 1, "root, deep"},
};

/* Without CAP_SYS_ADMIN deep is degraded to standard: both runs have no frame numbers. */
static const cow_case unprivileged_cases[] = {
    {MEMDIFF_DEPTH_STANDARD, 0, "no CAP_SYS_ADMIN, standard"},
    {MEMDIFF_DEPTH_DEEP, 0, "no CAP_SYS_ADMIN, deep"},
};

typedef const char *(*cow_fn)(const cow_case *);

static const char *unprivileged_run(void *arg)
{
    cow_fn run = *(const cow_fn *)arg;
    for (size_t i = 0; i < sizeof unprivileged_cases / sizeof unprivileged_cases[0]; i++) {
        const char *err = run(&unprivileged_cases[i]);
        if (err)
            return err;
    }
    return NULL;
}

/* Staying uid 0, drops CAP_SYS_ADMIN from the bounding, effective, permitted and inheritable
 * sets (prctl(2) PR_CAPBSET_DROP, capset(2)), as `setpriv --inh-caps=-sys_admin
 * --bounding-set=-sys_admin` does: the other way a user takes the privilege away. */
static const char *drop_cap_sys_admin(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct c[2];
    const unsigned word = CAP_SYS_ADMIN / 32, bit = 1u << (CAP_SYS_ADMIN % 32);
    const char *err = NULL;
    if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) != 0 ||
        syscall(SYS_capget, &h, c) != 0)
        err = "cannot drop CAP_SYS_ADMIN from the bounding set, or read the capabilities";
    if (!err) {
        c[word].effective &= ~bit;
        c[word].permitted &= ~bit;
        c[word].inheritable &= ~bit;
        if (syscall(SYS_capset, &h, c) != 0 || syscall(SYS_capget, &h, c) != 0 ||
            (c[word].effective | c[word].permitted) & bit)
            err = "cannot drop CAP_SYS_ADMIN with capset";
    }
    return err;
}

/* Runs fn(arg) in a forked child without CAP_SYS_ADMIN (as scn_as_nobody() returns). */
static const char *without_cap_sys_admin(const char *(*fn)(void *), void *arg)
{
    return scn_in_child(drop_cap_sys_admin, fn, arg);
}

/* Whether this process has CAP_SYS_ADMIN, which pagemap's frame numbers need (root can lack
 * it: the whole test run may be under setpriv); the tests that need it skip without it. */
static int skip_without_cap_sys_admin(const char *test)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct c[2];
    ck_assert_int_eq(syscall(SYS_capget, &h, c), 0);
    if (c[CAP_SYS_ADMIN / 32].effective & 1u << (CAP_SYS_ADMIN % 32))
        return 0;
    fprintf(stderr, "%s: skipped, no CAP_SYS_ADMIN (the unprivileged tests cover this process)\n",
            test);
    return 1;
}

/* fn's runs as root with CAP_SYS_ADMIN: with frame numbers. */
static void check_as_root(cow_fn fn, const char *test)
{
    if (skip_without_cap_sys_admin(test))
        return;
    for (size_t i = 0; i < sizeof root_cases / sizeof root_cases[0]; i++) {
        const char *err = fn(&root_cases[i]);
        ck_assert_msg(err == NULL, "%s", err);
    }
}

/* fn's runs without frame numbers: as nobody (as the caller when not root), or as root that
 * dropped CAP_SYS_ADMIN (only from a process that has it). */
static void check_unprivileged(cow_fn fn, int by_capset, const char *test)
{
    if (by_capset && skip_without_cap_sys_admin(test))
        return;
    const char *err = by_capset ? without_cap_sys_admin(unprivileged_run, &fn)
                                : scn_as_nobody(unprivileged_run, &fn);
    ck_assert_msg(err == NULL, "%s: %s", by_capset ? "root without CAP_SYS_ADMIN" : "as nobody",
                  err);
}

START_TEST(cow_child_became_private_with_frames)
{
    check_as_root(cow_run, "cow_child_became_private_with_frames");
}
END_TEST

START_TEST(cow_child_became_private_as_nobody)
{
    check_unprivileged(cow_run, 0, "cow_child_became_private_as_nobody");
}
END_TEST

START_TEST(cow_child_became_private_without_cap_sys_admin)
{
    check_unprivileged(cow_run, 1, "cow_child_became_private_without_cap_sys_admin");
}
END_TEST

/* ---- a frame change with sharing unchanged --------------------------------------------------
 * A private mapping of a memfd whose COW_PAGES pages were written with write(): reading the
 * mapping maps the page-cache pages themselves, exclusive (this process alone maps them) and
 * file pages. Writing each page copies it into an anonymous page (wp_page_copy again: a file
 * page of a private mapping is never reused), exclusive as well, in another frame, the
 * page-cache page staying where it was. Sharing did not change: replaced, as root, who sees
 * the frames. Without them nothing is seen to change at all (the attributes that differ, file
 * and anonymous, are no outcome): no block holds the mapping. */

static const char *copy_run(const cow_case *c)
{
    size_t ps = scn_page();
    int fd = memfd_create("memdiff-cow", MFD_CLOEXEC);
    CHECK(fd >= 0, "memfd_create: %s", strerror(errno));
    char *page = calloc(1, ps);
    CHECK(page, "calloc");
    for (size_t i = 0; i < COW_PAGES; i++) {
        page[0] = (char)(1 + i);
        CHECK(write(fd, page, ps) == (ssize_t)ps, "write: %s", strerror(errno));
    }
    free(page);
    char *m = guarded_map(MAP_PRIVATE, fd);
    close(fd);
    if (!m)
        return why;
    unsigned sum = 0;
    for (size_t i = 0; i < COW_PAGES; i++)
        sum += (unsigned char)((volatile char *)m)[i * ps];
    CHECK(sum == COW_PAGES * (COW_PAGES + 1) / 2, "the mapping reads %u", sum);

    uint64_t eb[COW_PAGES], ea[COW_PAGES];
    memdiff_snapshot *a = NULL, *b = NULL;
    memdiff_diff *d = NULL;
    const char *err = write_between(c, m, eb, ea, &a, &b);
    for (size_t i = 0; !err && i < COW_PAGES; i++) {
        int moved = new_frame(c, eb[i], ea[i]);
        if (!PM_PRESENT(eb[i]) || !PM_EXCLUSIVE(eb[i]) || !PM_FILE(eb[i]) ||
            !PM_PRESENT(ea[i]) || !PM_EXCLUSIVE(ea[i]) || PM_FILE(ea[i]) || !moved) {
            snprintf(why, sizeof why,
                     "%s: page %zu: pagemap 0x%llx before the write, 0x%llx after: want an "
                     "exclusive file page, then an exclusive anonymous page%s",
                     c->who, i, (unsigned long long)eb[i], (unsigned long long)ea[i],
                     c->frames ? " in another frame" : " (frames hidden)");
            err = why;
        }
    }
    if (!err && c->frames) {
        err = diff_expect(a, b, m, MEMDIFF_CHANGE_REPLACED, c->who);
    } else if (!err) {
        int rc = memdiff_compare(a, b, 0, &d);
        const memdiff_block *blk = rc ? NULL : scn_find_block(d, (uintptr_t)m, SCN_ANY_CATEGORY);
        if (rc || blk) {
            snprintf(why, sizeof why, "%s: want no block for the mapping: %s", c->who,
                     rc ? memdiff_last_error() : scn_block_str(blk));
            err = why;
        }
    }
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    guarded_unmap(m);
    return err;
}

/* ---- PSS across a fork ---------------------------------------------------------------------
 * COW_PAGES private anonymous pages written by this process alone: map count 1, PSS a whole
 * page each. After fork() the child maps them too: map count 2, so smaps' Pss (and memdiff's
 * at deep depth, from kpagecount) is half a page each, while Rss is unchanged; the pages became
 * shared and lost half their PSS. When the child exits they are this process's alone again:
 * became private, PSS whole again. page_size / 2 is exact, so every figure is. */

/* The mapping at m in this process's smaps: Rss and Pss in bytes (smaps prints kB). */
static void smaps_of(const char *m, uint64_t *rss, uint64_t *pss)
{
    smaps sm;
    ck_assert_int_eq(smaps_read(getpid(), &sm), 0);
    const smaps_vma *v = smaps_find(&sm, (uintptr_t)m);
    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(v->start, (uintptr_t)m); /* the guarded mapping is a VMA of its own */
    *rss = v->rss;
    *pss = v->pss;
    smaps_free(&sm);
}

/* The region at m: exactly the mapping, with its PSS. */
static uint64_t region_pss(const memdiff_snapshot *s, const char *m)
{
    memdiff_region r;
    ck_assert_int_eq(memdiff_snapshot_find(s, (uintptr_t)m, &r), MEMDIFF_OK);
    ck_assert_uint_eq(r.start, (uintptr_t)m);
    ck_assert_uint_eq(r.end, (uintptr_t)m + COW_PAGES * scn_page());
    return r.pss_bytes;
}

/* The block at m in diff(a, b): all COW_PAGES pages changed in the one way `change`; its PSS
 * gained and lost. */
static void block_pss(const memdiff_snapshot *a, const memdiff_snapshot *b, const char *m,
                      memdiff_change change, uint64_t *gain, uint64_t *loss)
{
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(a, b, 0, &d), MEMDIFF_OK);
    const memdiff_block *k = scn_find_block(d, (uintptr_t)m, SCN_ANY_CATEGORY);
    ck_assert_msg(k->change == change && k->end - k->start == COW_PAGES * scn_page(), "%s",
                  scn_block_str(k));
    *gain = k->totals.new_pss_bytes;
    *loss = k->totals.freed_pss_bytes;
    memdiff_totals all;
    ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &all), MEMDIFF_OK);
    ck_assert_uint_ge(all.freed_pss_bytes, *loss); /* the block's part of the whole */
    ck_assert_uint_ge(all.new_pss_bytes, *gain);
    memdiff_diff_free(d);
}

START_TEST(fork_halves_pss_and_exit_restores_it)
{
    if (skip_without_cap_sys_admin("fork_halves_pss_and_exit_restores_it"))
        return;
    const uint64_t ps = scn_page(), all = COW_PAGES * ps, half = all / 2;
    char *m = guarded_map(MAP_PRIVATE | MAP_ANONYMOUS, -1);
    ck_assert_msg(m != NULL, "%s", why);
    for (size_t i = 0; i < COW_PAGES; i++)
        m[i * ps] = (char)(1 + i);
    memdiff_snapshot *a = NULL, *b = NULL, *c = NULL;
    uint64_t rss, pss, gain, loss;
    ck_assert_int_eq(memdiff_snapshot_self(MEMDIFF_DEPTH_DEEP, &a), MEMDIFF_OK);
    smaps_of(m, &rss, &pss);
    ck_assert_uint_eq(pss, all); /* the premise: alone, whole pages */
    ck_assert_uint_eq(region_pss(a, m), all);

    int go[2];
    ck_assert_int_eq(pipe(go), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* maps the pages until told to go; touches nothing */
        char g;
        close(go[1]);
        _exit(read(go[0], &g, 1) == 1 ? 0 : 1);
    }
    close(go[0]);
    ck_assert_int_eq(memdiff_snapshot_self(MEMDIFF_DEPTH_DEEP, &b), MEMDIFF_OK);
    smaps_of(m, &rss, &pss);
    ck_assert_uint_eq(rss, all);
    ck_assert_uint_eq(pss, half); /* the kernel's figure: shared with the child */
    ck_assert_uint_eq(region_pss(b, m), half);
    block_pss(a, b, m, MEMDIFF_CHANGE_BECAME_SHARED, &gain, &loss);
    ck_assert_uint_eq(gain, 0);
    ck_assert_uint_eq(loss, half); /* net PSS: -half, while net_bytes is 0 */

    ck_assert_int_eq(write(go[1], "g", 1), 1);
    close(go[1]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(memdiff_snapshot_self(MEMDIFF_DEPTH_DEEP, &c), MEMDIFF_OK);
    smaps_of(m, &rss, &pss);
    ck_assert_uint_eq(pss, all);
    ck_assert_uint_eq(region_pss(c, m), all);
    block_pss(b, c, m, MEMDIFF_CHANGE_BECAME_PRIVATE, &gain, &loss);
    ck_assert_uint_eq(gain, half);
    ck_assert_uint_eq(loss, 0);
    memdiff_snapshot_free(c);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    guarded_unmap(m);
}
END_TEST

START_TEST(private_copy_of_a_file_page_is_replaced)
{
    check_as_root(copy_run, "private_copy_of_a_file_page_is_replaced");
}
END_TEST

START_TEST(private_copy_of_a_file_page_unseen_as_nobody)
{
    check_unprivileged(copy_run, 0, "private_copy_of_a_file_page_unseen_as_nobody");
}
END_TEST

START_TEST(private_copy_of_a_file_page_unseen_without_cap_sys_admin)
{
    check_unprivileged(copy_run, 1, "private_copy_of_a_file_page_unseen_without_cap_sys_admin");
}
END_TEST

Suite *cow_suite(void)
{
    Suite *s = suite_create("cow");
    TCase *tc = tcase_create("Fork");
    tcase_set_timeout(tc, 120); /* deep snapshots read kpageflags; sanitizer builds are slower */
    tcase_add_test(tc, cow_child_became_private_with_frames);
    tcase_add_test(tc, cow_child_became_private_as_nobody);
    tcase_add_test(tc, cow_child_became_private_without_cap_sys_admin);
    tcase_add_test(tc, fork_halves_pss_and_exit_restores_it);
    suite_add_tcase(s, tc);
    tc = tcase_create("Copy");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, private_copy_of_a_file_page_is_replaced);
    tcase_add_test(tc, private_copy_of_a_file_page_unseen_as_nobody);
    tcase_add_test(tc, private_copy_of_a_file_page_unseen_without_cap_sys_admin);
    suite_add_tcase(s, tc);
    return s;
}
