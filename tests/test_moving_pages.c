/* test_moving_pages.c - swap entries that are not swap: pages the kernel is moving (migration
 * entries, read again until they are pages: platform/linux/transient.c) and guard regions (no
 * memory at all), on the constructed pages fixture and on a real process. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <memdiff.h>

#include "fixture_tree.h"
#include "internal.h"
#include "linux.h"
#include "suites.h"

#define P MEMDIFF_PAGE_PRESENT
#define S MEMDIFF_PAGE_SWAPPED
#define X MEMDIFF_PAGE_PRIVATE

/* ---- the constructed fixture, with one entry changed ------------------------------------- */

/* tests/fixtures/pages (make_pages_fixture.py): page 0x410 is present and exclusively mapped
 * (frame 0x300), the first of five; pages 0x416-0x417 are swapped to swap area 1. */
#define PAGE 0x410u
#define PRESENT_ENTRY (MEMDIFF__PM_PRESENT | MEMDIFF__PM_EXCLUSIVE | UINT64_C(0x300))
/* The same page being moved: a migration entry as root reads it (swap type 26, offset: the
 * frame), as the machine of this test shows root one (swap type 30 there). */
#define MIGRATION_ENTRY (MEMDIFF__PM_SWAP | (UINT64_C(0x300) << 5) | 26u)

typedef struct walked {
    uint64_t start[16], n[16];
    unsigned attrs[16];
    size_t count;
} walked;

static int on_run(void *ctx, uint64_t start, uint64_t npages, unsigned attrs, const uint64_t *pfn)
{
    (void)pfn;
    walked *w = ctx;
    ck_assert_uint_lt(w->count, 16);
    w->start[w->count] = start;
    w->n[w->count] = npages;
    w->attrs[w->count++] = attrs;
    return MEMDIFF_OK;
}

static char *tree; /* the copy of the pages fixture (fixture_tree_expand) */
static int restores_after; /* the hook's calls before it writes the page back; 0: never */
static int hook_calls;

static void put_entry(uint64_t index, uint64_t e)
{
    char path[128];
    snprintf(path, sizeof path, "%s/self/pagemap", tree);
    int fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, &e, sizeof e, (off_t)(index * 8)), 8);
    close(fd);
}

static void put_meminfo(const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/meminfo", tree);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* A copy of the pages fixture in tree, with entry PAGE set to e. */
static void make_tree(uint64_t e)
{
    char err[256];
    tree = fixture_tree_expand(MEMDIFF_TEST_FIXTURES "/pages", err, sizeof err);
    ck_assert_msg(tree != NULL, "%s", err);
    put_entry(PAGE, e);
}

static void remove_tree(void)
{
    fixture_tree_remove(tree);
    tree = NULL;
}

/* In place of the wait for a moving page: the kernel finishes the move on the restores_after-th
 * wait. */
static void hook(memdiff__proc *p)
{
    (void)p;
    if (++hook_calls == restores_after)
        put_entry(PAGE, PRESENT_ENTRY);
}

/* Walks the fixture's region 0x410000-0x420000 at depth into *w; returns the proc's waits. */
static unsigned walk_tree(memdiff_depth depth, walked *w)
{
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    memdiff__open_args args = {0, tree, NULL, 0, 1};
    memdiff__proc *proc = NULL;
    memdiff__caps caps;
    ck_assert_int_eq(memdiff__plat_open(&args, &scratch, &proc, &caps), MEMDIFF_OK);
    ck_assert_uint_ne(caps.sources & MEMDIFF_SRC_FRAMES, 0); /* the fixture grants frames */
    proc->transient_hook = hook;
    hook_calls = 0;
    memdiff__page_sink sink = {on_run, w, NULL, NULL};
    memset(w, 0, sizeof *w);
    ck_assert_int_eq(memdiff__plat_pages(proc, 0x410000, 0x420000, depth, &sink), MEMDIFF_OK);
    unsigned waits = proc->transient_waits;
    memdiff__plat_close(proc);
    memdiff__arena_release(&scratch);
    return waits;
}

static void expect_run(const walked *w, size_t i, uint64_t start, uint64_t n, unsigned attrs)
{
    ck_assert_uint_gt(w->count, i);
    ck_assert_msg(w->start[i] == start && w->n[i] == n && w->attrs[i] == attrs,
                  "run %zu: got 0x%llx +%llu attrs 0x%x, want 0x%llx +%llu attrs 0x%x", i,
                  (unsigned long long)w->start[i], (unsigned long long)w->n[i], w->attrs[i],
                  (unsigned long long)start, (unsigned long long)n, attrs);
}

/* The kernel finishes the move after the first read: the page is read again, once, and is what
 * it is in the unchanged fixture (fixture_standard in test_linux_pages.c): five present,
 * exclusively mapped pages, then the swapped pair, which is real swap and read once. */
START_TEST(moving_page_read_again)
{
    make_tree(MIGRATION_ENTRY);
    restores_after = 1;
    walked w;
    ck_assert_uint_eq(walk_tree(MEMDIFF_DEPTH_STANDARD, &w), 1);
    ck_assert_int_eq(hook_calls, 1);
    expect_run(&w, 0, 0x410000, 5, P | X);
    expect_run(&w, 2, 0x416000, 2, S);
    /* Fast and deep read pagemap alike (the fixture has no scan). */
    put_entry(PAGE, MIGRATION_ENTRY);
    ck_assert_uint_eq(walk_tree(MEMDIFF_DEPTH_FAST, &w), 1);
    expect_run(&w, 0, 0x410000, 6, P);
    put_entry(PAGE, MIGRATION_ENTRY);
    ck_assert_uint_eq(walk_tree(MEMDIFF_DEPTH_DEEP, &w), 1);
    ck_assert_uint_eq(w.attrs[0] & (P | X | S), P | X);
    ck_assert_uint_eq(w.start[0], 0x410000);
    remove_tree();
}
END_TEST

/* An entry that stays (a move that never ends here stands for a hardware-poisoned page or
 * device memory): read again until the budget is spent, then taken as read. */
START_TEST(lasting_entry_stands_after_the_budget)
{
    make_tree(MIGRATION_ENTRY);
    restores_after = 0;
    walked w;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned waits = walk_tree(MEMDIFF_DEPTH_STANDARD, &w);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t spent = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    ck_assert_uint_gt(waits, 1);
    ck_assert_uint_eq(waits, (unsigned)hook_calls);
    ck_assert_msg(spent >= 10000000, "the budget is 10 ms; the walk took %llu ns",
                  (unsigned long long)spent);
    expect_run(&w, 0, 0x410000, 1, S);
    expect_run(&w, 1, 0x411000, 4, P | X);
    remove_tree();
}
END_TEST

/* Which swap entries are read again: real swap types (0-23) never; without the type (frame
 * bits hidden), only on a system without swap; a guard region's marker is no page at all. */
START_TEST(which_entries_are_read_again)
{
    walked w;
    make_tree(MEMDIFF__PM_SWAP | (UINT64_C(0x1234) << 5) | 23u); /* swap area 23 */
    restores_after = 1;
    ck_assert_uint_eq(walk_tree(MEMDIFF_DEPTH_STANDARD, &w), 0);
    expect_run(&w, 0, 0x410000, 1, S);

    put_entry(PAGE, MEMDIFF__PM_SWAP); /* the type hidden, and no meminfo: taken as swap */
    ck_assert_uint_eq(walk_tree(MEMDIFF_DEPTH_STANDARD, &w), 0);
    expect_run(&w, 0, 0x410000, 1, S);

    put_meminfo("MemTotal:  1000 kB\nSwapTotal:  4096 kB\n");
    put_entry(PAGE, MEMDIFF__PM_SWAP);
    ck_assert_uint_eq(walk_tree(MEMDIFF_DEPTH_STANDARD, &w), 0);
    expect_run(&w, 0, 0x410000, 1, S);

    put_meminfo("MemTotal:  1000 kB\nSwapTotal:        0 kB\n");
    put_entry(PAGE, MEMDIFF__PM_SWAP);
    ck_assert_uint_eq(walk_tree(MEMDIFF_DEPTH_STANDARD, &w), 1);
    expect_run(&w, 0, 0x410000, 5, P | X);

    /* A guard region's page (pagemap bit 58, a PTE marker of type 31): nothing to report. */
    put_entry(PAGE, MEMDIFF__PM_SWAP | MEMDIFF__PM_GUARD | (UINT64_C(1) << 5) | 31u);
    ck_assert_uint_eq(walk_tree(MEMDIFF_DEPTH_STANDARD, &w), 0);
    expect_run(&w, 0, 0x411000, 4, P | X);
    remove_tree();
}
END_TEST

/* ---- a real process with a guard region --------------------------------------------------- */

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* A child maps 256 pages (a mapping of their own: inaccessible pages on either side), writes
 * each, and makes pages 64-191 a guard region: 128 pages stay.
 * Every depth reports 128 resident pages there and nothing swapped, as smaps does (Rss 512 kB,
 * Swap 0 kB). Before, the guard's 128 pages were 512 KiB "swapped" at every depth. */
START_TEST(guard_region_is_no_memory)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        long ps = sysconf(_SC_PAGESIZE);
        char *p = mmap(NULL, 258 * (size_t)ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint64_t msg[2] = {0, 0};
        if (p != MAP_FAILED && mprotect(p + ps, 256 * (size_t)ps, PROT_READ | PROT_WRITE) == 0) {
            p += ps;
            for (int i = 0; i < 256; i++)
                p[i * ps] = 1;
            msg[0] = (uint64_t)(uintptr_t)p;
            msg[1] = madvise(p + 64 * ps, 128 * (size_t)ps, MADV_GUARD_INSTALL) == 0 ? 0 : errno;
        }
        if (write(fds[1], msg, sizeof msg) != sizeof msg)
            _exit(1);
        pause();
        _exit(0);
    }
    close(fds[1]);
    uint64_t msg[2];
    ck_assert_int_eq(read(fds[0], msg, sizeof msg), sizeof msg);
    close(fds[0]);
    if (msg[0] == 0 || msg[1] == EINVAL) {
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
        ck_assert_msg(msg[0] != 0, "the child could not map its pages");
        fprintf(stderr, "guard_region_is_no_memory: skipped, no MADV_GUARD_INSTALL "
                        "(Linux 6.13)\n");
        return;
    }
    ck_assert_uint_eq(msg[1], 0);
    const uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
    for (int d = MEMDIFF_DEPTH_FAST; d <= MEMDIFF_DEPTH_DEEP; d++) {
        memdiff_options o;
        memdiff_options_init(&o);
        o.pid = c;
        o.depth = (memdiff_depth)d;
        memdiff_snapshot *s = NULL;
        ck_assert_msg(memdiff_snapshot_take(&o, &s) == MEMDIFF_OK, "%s: %s",
                      memdiff_depth_name((memdiff_depth)d), memdiff_last_error());
        memdiff_region r;
        ck_assert_int_eq(memdiff_snapshot_find(s, msg[0], &r), MEMDIFF_OK);
        ck_assert_uint_eq(r.start, msg[0]);
        ck_assert_uint_eq(r.end - r.start, 256 * ps);
        ck_assert_msg(r.resident_bytes == 128 * ps && r.swapped_bytes == 0,
                      "%s: resident %llu swapped %llu, want %llu and 0",
                      memdiff_depth_name((memdiff_depth)d), (unsigned long long)r.resident_bytes,
                      (unsigned long long)r.swapped_bytes, (unsigned long long)(128 * ps));
        memdiff_snapshot_info info;
        ck_assert_int_eq(memdiff_snapshot_get_info(s, &info), MEMDIFF_OK);
        ck_assert_uint_eq(info.swapped_bytes, 0);
        memdiff_snapshot_free(s);
    }
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
}
END_TEST

Suite *moving_pages_suite(void)
{
    Suite *s = suite_create("moving_pages");
    TCase *tc = tcase_create("entries");
    tcase_add_test(tc, moving_page_read_again);
    tcase_add_test(tc, lasting_entry_stands_after_the_budget);
    tcase_add_test(tc, which_entries_are_read_again);
    tcase_add_test(tc, guard_region_is_no_memory);
    suite_add_tcase(s, tc);
    return s;
}
