/*
 * test_scenarios.c - real in-process scenarios with exact page counts. Each test makes memory
 * itself (mmap, malloc, a thread's stack, a dlopen'd module, a file, shared memory), brackets
 * what it does to it with snapshots of its own process, and asserts what memdiff reports for
 * that memory, to the page. Public API only.
 *
 * Why the counts can be exact:
 *  - Check's fork mode runs every test in a process of its own, so nothing of another test is
 *    in the address space, and memory the test maps after the fork is mapped by it alone.
 *  - The memory under test is a mapping of its own (scenario_util.h: guard pages) so that the
 *    kernel cannot merge it with other memory.
 *  - When a mapping goes, the next snapshot's own storage often takes its address (mmap searches
 *    top-down for the highest gap that fits). The scenarios let that happen: the compare
 *    attributes freed pages to the mapping that went, whatever took its place.
 *  - A page becomes resident only when the test touches it: private anonymous memory has no
 *    fault-around, huge pages are refused with MADV_NOHUGEPAGE, and file pages are read from an
 *    empty page cache with readahead off (the file scenario says why that suffices).
 *  - Assertions are on the block that contains the test's memory; a whole category is asserted
 *    only as a lower bound, since the process (Check, the C library, the sanitizers) may touch
 *    memory of its own between two snapshots.
 * Page counts come from sysconf(_SC_PAGESIZE), never from a constant.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario_util.h"
#include "suites.h"

#define BOTH (MEMDIFF_IN_BEFORE | MEMDIFF_IN_AFTER)

/* Compares a byte count with a page count, showing pages and the block on failure. */
#define ASSERT_PAGES(bytes, npages, blk)                                                         \
    ck_assert_msg((uint64_t)(bytes) == (uint64_t)(npages) * scn_page(),                         \
                  "%s: %llu pages, want %llu; block %s", #bytes,                                 \
                  (unsigned long long)((bytes) / scn_page()), (unsigned long long)(npages),      \
                  scn_block_str(blk))

/* The block of category cat containing addr, checked for its label, change (ANY_CHANGE: not
 * checked) and presence. */
#define ANY_CHANGE (-1)

static const memdiff_block *expect_block(const memdiff_diff *d, uintptr_t addr,
                                         memdiff_category cat, const char *label, int change,
                                         unsigned presence)
{
    const memdiff_block *b = scn_block_at(d, addr, cat);
    ck_assert_msg(strcmp(b->label, label) == 0 &&
                      (change == ANY_CHANGE || b->change == (memdiff_change)change) &&
                      b->presence == presence,
                  "want '%s' %s presence=%u; got %s", label,
                  change == ANY_CHANGE ? "(any change)" : memdiff_change_name(change), presence,
                  scn_block_str(b));
    return b;
}

/* ---- the anonymous-touch scenario ---------------------------------------------------------
 * A 64-page private anonymous mapping exists before the first snapshot; between the snapshots
 * the test writes 13 of its pages and reads 7 others. Exactly 13 pages are new: a write fault on
 * private anonymous memory allocates one page (no fault-around for anonymous memory, and no huge
 * page under MADV_NOHUGEPAGE); a read fault maps the shared zero page, which is present in
 * pagemap but costs no memory, so memdiff must not count it (docs/categories.md). Where the
 * kernel maps no zero page (scn_zero_page_on_read: a read fault allocates a page as a write
 * does), exactly 20 are new. It runs in unprivileged children too, so it reports what went
 * wrong instead of asserting. */

enum { ANON_PAGES = 64, ANON_WRITTEN = 13, ANON_READ = 7 };

/* i * 5 mod 64 visits 13 distinct pages (5 and 64 are coprime), spread over the mapping; the
 * pages read are those just after written ones, so none of them is written. */
static size_t anon_written_page(size_t i)
{
    return i * 5 % ANON_PAGES;
}

static size_t anon_read_page(size_t i)
{
    return (i * 5 + 1) % ANON_PAGES;
}

typedef struct anon_run {
    size_t ps;
    char *reservation; /* the mapping and its two PROT_NONE guard pages */
    char *map;
    memdiff_snapshot *before, *after;
    memdiff_diff *diff;
    size_t want_new; /* pages new in the mapping: written, and read where no zero page maps */
    char why[2048];
} anon_run;

#define RUN_CHECK(r, cond, ...)                                                                  \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            snprintf((r)->why, sizeof(r)->why, __VA_ARGS__);                                     \
            return (r)->why;                                                                     \
        }                                                                                        \
    } while (0)

static const char *anon_run_do(anon_run *r, memdiff_depth depth, int zero_reads)
{
    memset(r, 0, sizeof *r);
    size_t ps = r->ps = scn_page();
    r->reservation = mmap(NULL, (ANON_PAGES + 2) * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
    RUN_CHECK(r, r->reservation != MAP_FAILED, "mmap: %s", strerror(errno));
    r->map = r->reservation + ps;
    RUN_CHECK(r, mprotect(r->map, ANON_PAGES * ps, PROT_READ | PROT_WRITE) == 0, "mprotect: %s",
              strerror(errno));
    (void)madvise(r->map, ANON_PAGES * ps, MADV_NOHUGEPAGE);
    r->want_new = ANON_WRITTEN + (zero_reads && !scn_zero_page_on_read() ? ANON_READ : 0);

    int rc = memdiff_snapshot_self(depth, &r->before);
    RUN_CHECK(r, rc == MEMDIFF_OK, "snapshot before: %s: %s", memdiff_status_name(rc),
              memdiff_last_error());
    volatile char *m = r->map;
    for (size_t i = 0; i < ANON_WRITTEN; i++)
        m[anon_written_page(i) * ps] = (char)(i + 1);
    for (size_t i = 0; zero_reads && i < ANON_READ; i++)
        (void)m[anon_read_page(i) * ps];
    rc = memdiff_snapshot_self(depth, &r->after);
    RUN_CHECK(r, rc == MEMDIFF_OK, "snapshot after: %s: %s", memdiff_status_name(rc),
              memdiff_last_error());
    rc = memdiff_compare(r->before, r->after, 0, &r->diff);
    RUN_CHECK(r, rc == MEMDIFF_OK, "compare: %s: %s", memdiff_status_name(rc),
              memdiff_last_error());

    const memdiff_block *b = scn_find_block(r->diff, (uintptr_t)r->map, MEMDIFF_CAT_PRIVATE);
    RUN_CHECK(r, b != NULL, "%s: no private block contains the mapping at %p",
              memdiff_depth_name(depth), (void *)r->map);
    const char *s = scn_block_str(b);
    uintptr_t lo = (uintptr_t)r->map, hi = lo + ANON_PAGES * ps;
    RUN_CHECK(r, b->start >= lo && b->end <= hi, "block outside the mapping: %s", s);
    RUN_CHECK(r, strcmp(b->label, "anonymous") == 0, "label: %s", s);
    RUN_CHECK(r, b->presence == BOTH, "the mapping existed before: %s", s);
    RUN_CHECK(r, b->change == MEMDIFF_CHANGE_NEW, "change: %s", s);
    RUN_CHECK(r, b->totals.new_bytes == r->want_new * ps, "%s: want %zu new pages: %s",
              memdiff_depth_name(depth), r->want_new, s);
    /* Standard and deep: pagemap's exclusive bit (the page is mapped by this process only).
     * Fast has no exclusive bit; compare.c and docs/categories.md estimate anonymous pages as
     * private there. */
    RUN_CHECK(r, b->totals.new_private_bytes == r->want_new * ps && !b->totals.new_shared_bytes,
              "%s: want %zu new private pages: %s", memdiff_depth_name(depth), r->want_new, s);
    RUN_CHECK(r, !b->totals.freed_bytes && !b->totals.replaced_bytes &&
                     !b->totals.became_private_bytes && !b->totals.became_shared_bytes,
              "only new pages: %s", s);
    RUN_CHECK(r, b->totals.net_bytes == (int64_t)(r->want_new * ps), "net: %s", s);
    return NULL;
}

static void anon_run_free(anon_run *r)
{
    memdiff_diff_free(r->diff);
    memdiff_snapshot_free(r->after);
    memdiff_snapshot_free(r->before);
    if (r->reservation && r->reservation != MAP_FAILED)
        munmap(r->reservation, (ANON_PAGES + 2) * r->ps);
}

START_TEST(anon_touch_counts_exact_pages)
{
    size_t ps = scn_page();
    anon_run r;
    const char *err = anon_run_do(&r, MEMDIFF_DEPTH_STANDARD, 1);
    ck_assert_msg(err == NULL, "%s", err);
    uintptr_t lo = (uintptr_t)r.map, hi = lo + ANON_PAGES * ps;

    /* The guards keep the mapping a region of its own: before, 64 pages and none resident;
     * after, 13 resident, all private. The zero-page reads are not resident (where the kernel
     * maps no zero page, they are: 20). */
    const size_t want = r.want_new;
    memdiff_region reg;
    ck_assert_int_eq(memdiff_snapshot_find(r.before, lo, &reg), MEMDIFF_OK);
    ck_assert(reg.start == lo && reg.end == hi);
    ck_assert_uint_eq(reg.resident_bytes, 0);
    ck_assert_int_eq(memdiff_snapshot_find(r.after, lo, &reg), MEMDIFF_OK);
    ck_assert(reg.start == lo && reg.end == hi);
    ck_assert_int_eq(reg.category, MEMDIFF_CAT_PRIVATE);
    ck_assert_str_eq(reg.label, "anonymous");
    ck_assert_str_eq(reg.path, "");
    ck_assert_uint_eq(reg.prot, MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE);
    ck_assert_uint_eq(reg.flags, 0);
    ck_assert_uint_eq(reg.resident_bytes, want * ps);
    ck_assert_uint_eq(reg.private_bytes, want * ps);
    ck_assert_uint_eq(reg.shared_bytes, 0);

    /* Other private anonymous memory may change meanwhile: the category is a lower bound. */
    memdiff_totals cat;
    ck_assert_int_eq(memdiff_diff_totals(r.diff, MEMDIFF_CAT_PRIVATE, &cat),
                     MEMDIFF_OK);
    ck_assert_uint_ge(cat.new_bytes, want * ps);
    ck_assert_uint_ge(cat.new_private_bytes, want * ps);

    /* Verbose: each written page is in a block of new pages, no read page is in any block
     * (each is, where no zero page maps: a page of the process's own). */
    memdiff_diff *v = scn_compare(r.before, r.after, MEMDIFF_COMPARE_VERBOSE);
    ck_assert_uint_eq(scn_verbose_new_pages(v, lo, hi), want);
    for (size_t i = 0; i < ANON_WRITTEN + ANON_READ; i++) {
        size_t page = i < ANON_WRITTEN ? anon_written_page(i) : anon_read_page(i - ANON_WRITTEN);
        if (i >= ANON_WRITTEN && want == ANON_WRITTEN) {
            const memdiff_block *b = scn_find_block(v, lo + page * ps, SCN_ANY_CATEGORY);
            ck_assert_msg(b == NULL, "a zero-page read is counted: %s",
                          b ? scn_block_str(b) : "");
            continue;
        }
        const memdiff_block *b = scn_block_at(v, lo + page * ps, MEMDIFF_CAT_PRIVATE);
        ck_assert_int_eq(b->change, MEMDIFF_CHANGE_NEW);
        ck_assert_uint_eq(b->attrs_before & MEMDIFF_PAGE_PRESENT, 0);
        ck_assert_msg(b->attrs_after & MEMDIFF_PAGE_PRESENT, "%s", scn_block_str(b));
        ck_assert_msg(b->attrs_after & MEMDIFF_PAGE_PRIVATE, "%s", scn_block_str(b));
        ck_assert_msg(!(b->attrs_after & MEMDIFF_PAGE_ZERO), "%s", scn_block_str(b));
    }
    memdiff_diff_free(v);
    anon_run_free(&r);
}
END_TEST

/* ---- freed pages: unmapped, discarded --------------------------------------------------- */

/* 9 of a 24-page mapping's pages are resident, then the mapping goes: the block has exactly
 * those 9 pages freed-unmapped, in the before snapshot only. */
START_TEST(munmap_counts_freed_unmapped)
{
    enum { PAGES = 24, RESIDENT = 9 };
    size_t ps = scn_page();
    char *m = scn_map(PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (size_t i = 0; i < RESIDENT; i++)
        m[i * 2 * ps] = 1;
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    ck_assert_int_eq(munmap(m, PAGES * ps), 0);
    memdiff_snapshot *b = scn_snap(MEMDIFF_DEPTH_STANDARD);
    memdiff_diff *d = scn_compare(a, b, 0);

    const memdiff_block *blk = expect_block(d, (uintptr_t)m, MEMDIFF_CAT_PRIVATE, "anonymous",
                                            MEMDIFF_CHANGE_FREED, MEMDIFF_IN_BEFORE);
    ASSERT_PAGES(blk->totals.freed_unmapped_bytes, RESIDENT, blk);
    ASSERT_PAGES(blk->totals.freed_bytes, RESIDENT, blk);
    ASSERT_PAGES(blk->totals.new_bytes, 0, blk);
    ck_assert_int_eq(blk->totals.net_bytes, -(int64_t)(RESIDENT * ps));
    ck_assert(blk->start >= (uintptr_t)m && blk->end <= (uintptr_t)m + PAGES * ps);

    memdiff_totals cat;
    ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_PRIVATE, &cat), MEMDIFF_OK);
    ck_assert_uint_ge(cat.freed_unmapped_bytes, RESIDENT * ps);

    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}
END_TEST

/* 20 resident pages, MADV_DONTNEED on 6 of them: the mapping stays, the 6 pages are freed as
 * discarded (private anonymous pages are dropped at once: madvise(2)). */
START_TEST(madvise_dontneed_counts_freed_discarded)
{
    enum { PAGES = 20, DISCARDED = 6 };
    static const size_t dropped[DISCARDED] = {2, 3, 4, 10, 15, 19};
    size_t ps = scn_page();
    char *m = scn_map(PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(m, 0x33, PAGES * ps);
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    for (size_t i = 0; i < DISCARDED; i++)
        ck_assert_int_eq(madvise(m + dropped[i] * ps, ps, MADV_DONTNEED), 0);
    memdiff_snapshot *b = scn_snap(MEMDIFF_DEPTH_STANDARD);
    memdiff_diff *d = scn_compare(a, b, 0);

    const memdiff_block *blk = expect_block(d, (uintptr_t)m + 2 * ps, MEMDIFF_CAT_PRIVATE,
                                            "anonymous", MEMDIFF_CHANGE_FREED, BOTH);
    ASSERT_PAGES(blk->totals.freed_discarded_bytes, DISCARDED, blk);
    ASSERT_PAGES(blk->totals.freed_bytes, DISCARDED, blk);
    ASSERT_PAGES(blk->totals.freed_unmapped_bytes, 0, blk);
    ASSERT_PAGES(blk->totals.new_bytes, 0, blk);
    ck_assert(blk->start == (uintptr_t)m + 2 * ps && blk->end == (uintptr_t)m + PAGES * ps);

    memdiff_region reg;
    ck_assert_int_eq(memdiff_snapshot_find(b, (uintptr_t)m, &reg), MEMDIFF_OK);
    ck_assert_uint_eq(reg.resident_bytes, (PAGES - DISCARDED) * ps);

    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    scn_unmap(m, PAGES);
}
END_TEST

/* ---- a malloc chunk served by mmap -------------------------------------------------------- */

#if !defined(__SANITIZE_ADDRESS__)
/* glibc serves a request above M_MMAP_THRESHOLD with an mmap of its own: a chunk header of two
 * size_t (prev_size, size) at the start of the mapping, then the user's bytes, the length rounded
 * up to pages (glibc malloc/malloc.c, sysmalloc_mmap). memset of all of the user's bytes writes
 * every page of that mapping but the first, and the first holds the header malloc wrote: the
 * chunk's whole mapping is new, and it is exactly the pages the header and the bytes span.
 *
 * The chunk must be a mapping of its own, both for exactness and because memdiff finds mmapped
 * chunks from the start of a mapping (docs/categories.md, blind spots): the test makes a hole of
 * exactly the chunk's length between two PROT_NONE pages, and glibc's mmap, searching top-down
 * for the highest gap that fits, takes it. The test checks that it did. Not under
 * AddressSanitizer, whose malloc is not glibc's. */
START_TEST(malloc_mmap_chunk_is_heap)
{
    size_t ps = scn_page();
    size_t len = 4 * 1024 * 1024 + 123;
    size_t span = (len + 2 * sizeof(size_t) + ps - 1) / ps * ps;
    /* A fixed threshold: glibc raises a dynamic one when an mmapped chunk is freed. */
    ck_assert_int_eq(mallopt(M_MMAP_THRESHOLD, 128 * 1024), 1);

    /* The reservation holds the place while the first snapshot is taken, so that the first
     * snapshot's storage cannot take it. */
    char *res = mmap(NULL, span + 2 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(res != MAP_FAILED);
    char *hole = res + ps;
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    ck_assert_int_eq(munmap(hole, span), 0);
    char *p = malloc(len);
    ck_assert_ptr_nonnull(p);
    char *chunk = p - 2 * sizeof(size_t);
    ck_assert_msg(chunk == hole, "glibc mapped the chunk at %p, not in the hole at %p",
                  (void *)chunk, (void *)hole);
    memset(p, 0x5a, len);
    memdiff_snapshot *b = scn_snap(MEMDIFF_DEPTH_STANDARD);

    memdiff_region reg;
    ck_assert_int_eq(memdiff_snapshot_find(b, (uintptr_t)p, &reg), MEMDIFF_OK);
    ck_assert_int_eq(reg.category, MEMDIFF_CAT_HEAP);
    ck_assert_str_eq(reg.label, "malloc mmap chunk");
    ck_assert(reg.start == (uintptr_t)chunk && reg.end == (uintptr_t)chunk + span);
    ck_assert_uint_eq(reg.resident_bytes, span);

    memdiff_diff *d = scn_compare(a, b, 0);
    const memdiff_block *blk = expect_block(d, (uintptr_t)p, MEMDIFF_CAT_HEAP,
                                            "malloc mmap chunk", MEMDIFF_CHANGE_NEW,
                                            MEMDIFF_IN_AFTER); /* a new mapping */
    ASSERT_PAGES(blk->totals.new_bytes, span / ps, blk);
    ASSERT_PAGES(blk->totals.new_private_bytes, span / ps, blk);
    ASSERT_PAGES(blk->totals.freed_bytes, 0, blk);
    ck_assert(blk->start == (uintptr_t)chunk && blk->end == (uintptr_t)chunk + span);

    /* free() unmaps the chunk: all of it freed-unmapped, before only. Its address is kept as a
     * number: the pointer is dead after free(). */
    uintptr_t chunk_at = (uintptr_t)chunk;
    free(p);
    memdiff_snapshot *c = scn_snap(MEMDIFF_DEPTH_STANDARD);
    memdiff_diff *d2 = scn_compare(b, c, 0);
    blk = expect_block(d2, chunk_at, MEMDIFF_CAT_HEAP, "malloc mmap chunk",
                       MEMDIFF_CHANGE_FREED, MEMDIFF_IN_BEFORE);
    ASSERT_PAGES(blk->totals.freed_unmapped_bytes, span / ps, blk);
    ASSERT_PAGES(blk->totals.freed_bytes, span / ps, blk);
    ASSERT_PAGES(blk->totals.new_bytes, 0, blk);

    memdiff_diff_free(d2);
    memdiff_diff_free(d);
    memdiff_snapshot_free(c);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    munmap(res, span + 2 * ps);
}
END_TEST
#endif

/* ---- a thread's stack --------------------------------------------------------------------- */

enum { STACK_PAGES = 8 };

typedef struct stack_thread {
    int to_thread[2], from_thread[2];
    size_t ps;
    pid_t tid;
    uintptr_t lo; /* the pages the thread wrote: [lo, lo + STACK_PAGES * ps) */
} stack_thread;

static void pipe_put(int fd, char c)
{
    if (write(fd, &c, 1) != 1)
        abort();
}

static char pipe_get(int fd)
{
    char c;
    if (read(fd, &c, 1) != 1)
        abort();
    return c;
}

/* The array has room for 8 page-aligned pages and at least 2 more pages above them. The stack
 * grows down: the frames the thread ran before this call (start_thread, stack_thread_main, a
 * read() in the C library) lie above this frame, and the cushion keeps the few hundred bytes
 * they reach out of the 8 pages, so those pages were never touched before this call (a new
 * thread's stack is a fresh mmap). Not instrumented by AddressSanitizer, so that the array is
 * on the thread's stack and not on a fake stack. */
__attribute__((noinline, no_sanitize_address)) static void stack_touch_and_wait(stack_thread *t)
{
    size_t ps = t->ps;
    volatile char arr[(STACK_PAGES + 3) * ps];
    uintptr_t lo = ((uintptr_t)arr + ps - 1) & ~(uintptr_t)(ps - 1);
    for (size_t i = 0; i < STACK_PAGES; i++)
        ((volatile char *)lo)[i * ps] = (char)(i + 1);
    t->lo = lo;
    pipe_put(t->from_thread[1], 's');
    arr[0] = pipe_get(t->to_thread[0]); /* blocked here: the array is live */
}

static void *stack_thread_main(void *arg)
{
    stack_thread *t = arg;
    t->tid = (pid_t)syscall(SYS_gettid);
    pipe_put(t->from_thread[1], 'r');
    (void)pipe_get(t->to_thread[0]);
    stack_touch_and_wait(t);
    return NULL;
}

/* Snapshot A while the thread waits before the call, B while it waits inside it, having
 * written 8 pages of a local array: those 8 pages are new, in the thread's Stack block. The
 * block as a whole also holds the pages of the frames below the array (the write and the read
 * the thread then made) and, with stack-clash probing, the cushion's: at least 8 pages. */
START_TEST(thread_stack_is_stack_with_tid)
{
    size_t ps = scn_page();
    stack_thread t;
    memset(&t, 0, sizeof t);
    t.ps = ps;
    ck_assert_int_eq(pipe(t.to_thread), 0);
    ck_assert_int_eq(pipe(t.from_thread), 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, stack_thread_main, &t), 0);
    ck_assert_int_eq(pipe_get(t.from_thread[0]), 'r');
    scn_wait_blocked(t.tid, SYS_read);
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    pipe_put(t.to_thread[1], 'g');
    ck_assert_int_eq(pipe_get(t.from_thread[0]), 's');
    scn_wait_blocked(t.tid, SYS_read);
    memdiff_snapshot *b = scn_snap(MEMDIFF_DEPTH_STANDARD);
    pipe_put(t.to_thread[1], 'e');
    ck_assert_int_eq(pthread_join(th, NULL), 0);

    char label[64];
    snprintf(label, sizeof label, "thread %d", (int)t.tid);
    memdiff_region reg;
    ck_assert_int_eq(memdiff_snapshot_find(a, t.lo, &reg), MEMDIFF_OK);
    ck_assert_int_eq(reg.category, MEMDIFF_CAT_STACK);
    ck_assert_str_eq(reg.label, label);
    ck_assert_int_eq(memdiff_snapshot_find(b, t.lo, &reg), MEMDIFF_OK);
    ck_assert_int_eq(reg.category, MEMDIFF_CAT_STACK);
    ck_assert_str_eq(reg.label, label);

    memdiff_diff *d = scn_compare(a, b, 0);
    const memdiff_block *blk = expect_block(d, t.lo, MEMDIFF_CAT_STACK, label, ANY_CHANGE, BOTH);
    ck_assert_msg(blk->totals.new_bytes >= STACK_PAGES * ps, "%s", scn_block_str(blk));
    ASSERT_PAGES(blk->totals.freed_bytes, 0, blk);

    /* Exact: the array's 8 pages, through a verbose diff over their range. */
    memdiff_diff *v = scn_compare(a, b, MEMDIFF_COMPARE_VERBOSE);
    ck_assert_uint_eq(scn_verbose_new_pages(v, t.lo, t.lo + STACK_PAGES * ps), STACK_PAGES);

    /* The calling thread's stack, [stack] here, is labelled with its id, the process id. */
    snprintf(label, sizeof label, "thread %d", (int)getpid());
    ck_assert_int_eq(
        memdiff_snapshot_find(b, (uintptr_t)__builtin_frame_address(0), &reg), MEMDIFF_OK);
    ck_assert_int_eq(reg.category, MEMDIFF_CAT_STACK);
    ck_assert_str_eq(reg.label, label);

    memdiff_diff_free(v);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}
END_TEST

/* ---- a dlopen'd module ---------------------------------------------------------------------- */

typedef void *(*testlib_ptr_fn)(void);
typedef size_t (*testlib_size_fn)(void);
typedef void (*testlib_touch_fn)(size_t, size_t);

static void *testlib_sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    ck_assert_msg(p != NULL, "dlsym %s: %s", name, dlerror());
    return p;
}

/* The module's 64 KiB .bss array fills whole pages nothing else uses (tests/testlib.c), none
 * resident after dlopen. The test calls the touch function once writing nothing before the
 * first snapshot, so that its code page (and the pages fault-around maps with it) are resident
 * already; then it writes every page of the array. So the module's block holds exactly the
 * array's pages, 16 on 4 KiB pages. After dlclose, the module's block in a diff from the loaded
 * snapshot has all its resident pages freed-unmapped, before only. */
START_TEST(dlopen_module_is_image)
{
    size_t ps = scn_page();
    char path[PATH_MAX];
    ck_assert_msg(realpath(MEMDIFF_TESTLIB_PATH, path) != NULL, "%s: %s", MEMDIFF_TESTLIB_PATH,
                  strerror(errno));
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    testlib_ptr_fn bss_fn, data_fn;
    testlib_size_fn bss_size_fn;
    testlib_touch_fn touch;
    bss_fn = (testlib_ptr_fn)testlib_sym(h, "memdiff_testlib_bss");
    data_fn = (testlib_ptr_fn)testlib_sym(h, "memdiff_testlib_data");
    bss_size_fn = (testlib_size_fn)testlib_sym(h, "memdiff_testlib_bss_size");
    touch = (testlib_touch_fn)testlib_sym(h, "memdiff_testlib_touch_bss");
    uintptr_t bss = (uintptr_t)bss_fn(), data = (uintptr_t)data_fn();
    size_t npages = bss_size_fn() / ps;
    ck_assert_uint_eq(bss % ps, 0);
    ck_assert_uint_eq(npages * ps, 64 * 1024);

    touch(ps, 0);
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    touch(ps, npages);
    memdiff_snapshot *b = scn_snap(MEMDIFF_DEPTH_STANDARD);

    /* The module's code, data and bss are Image, labelled with its path. */
    uintptr_t where[3] = {bss, data, (uintptr_t)touch};
    for (int i = 0; i < 3; i++) {
        memdiff_region reg;
        ck_assert_int_eq(memdiff_snapshot_find(b, where[i], &reg), MEMDIFF_OK);
        ck_assert_msg(reg.category == MEMDIFF_CAT_IMAGE, "0x%llx: %s '%s'",
                      (unsigned long long)where[i], memdiff_category_name(reg.category),
                      reg.label);
        ck_assert_str_eq(reg.label, path);
    }

    memdiff_diff *d = scn_compare(a, b, 0);
    const memdiff_block *blk = expect_block(d, bss, MEMDIFF_CAT_IMAGE, path, MEMDIFF_CHANGE_NEW,
                                            BOTH);
    ASSERT_PAGES(blk->totals.new_bytes, npages, blk);
    ASSERT_PAGES(blk->totals.new_private_bytes, npages, blk);
    ASSERT_PAGES(blk->totals.freed_bytes, 0, blk);
    size_t with_label = 0;
    for (size_t i = 0; i < memdiff_diff_block_count(d); i++)
        with_label += strcmp(scn_block(d, i)->label, path) == 0;
    ck_assert_uint_eq(with_label, 1); /* one allocation unit: the module */

    memdiff_diff *v = scn_compare(a, b, MEMDIFF_COMPARE_VERBOSE);
    ck_assert_uint_eq(scn_verbose_new_pages(v, bss, bss + npages * ps), npages);
    memdiff_diff_free(v);

    /* The module's extent and resident pages while loaded. */
    uint64_t lo = UINT64_MAX, hi = 0, resident = 0;
    for (size_t i = 0; i < memdiff_snapshot_region_count(b); i++) {
        memdiff_region reg;
        ck_assert_int_eq(memdiff_snapshot_region(b, i, &reg), MEMDIFF_OK);
        if (strcmp(reg.label, path) != 0)
            continue;
        ck_assert_int_eq(reg.category, MEMDIFF_CAT_IMAGE);
        lo = reg.start < lo ? reg.start : lo;
        hi = reg.end > hi ? reg.end : hi;
        resident += reg.resident_bytes;
    }
    ck_assert_uint_ge(resident, npages * ps);

    ck_assert_int_eq(dlclose(h), 0);
    memdiff_snapshot *c = scn_snap(MEMDIFF_DEPTH_STANDARD);
    for (size_t i = 0; i < memdiff_snapshot_region_count(c); i++) {
        memdiff_region reg;
        ck_assert_int_eq(memdiff_snapshot_region(c, i, &reg), MEMDIFF_OK);
        ck_assert_msg(strcmp(reg.label, path) != 0, "the module is still mapped after dlclose");
        ck_assert_msg(reg.end <= lo || reg.start >= hi || reg.category != MEMDIFF_CAT_IMAGE,
                      "an image where the module was: '%s'", reg.label);
    }
    memdiff_diff *d2 = scn_compare(b, c, 0);
    /* A copy of its own: the loop goes through more blocks than scn_block() keeps. */
    memdiff_block unloaded;
    blk = NULL;
    for (size_t i = 0; i < memdiff_diff_block_count(d2); i++) {
        const memdiff_block *x = scn_block(d2, i);
        if (strcmp(x->label, path) == 0) {
            ck_assert_msg(blk == NULL, "two blocks of the module: %s", scn_block_str(x));
            unloaded = *x;
            blk = &unloaded;
        }
    }
    ck_assert_msg(blk != NULL, "no block of the unloaded module");
    ck_assert_int_eq(blk->category, MEMDIFF_CAT_IMAGE);
    ck_assert_int_eq(blk->change, MEMDIFF_CHANGE_FREED);
    ck_assert_uint_eq(blk->presence, MEMDIFF_IN_BEFORE);
    ck_assert_msg(blk->totals.freed_unmapped_bytes == resident, "want %llu pages: %s",
                  (unsigned long long)(resident / ps), scn_block_str(blk));
    ck_assert_uint_eq(blk->totals.freed_bytes, resident);
    ASSERT_PAGES(blk->totals.new_bytes, 0, blk);

    memdiff_diff_free(d2);
    memdiff_diff_free(d);
    memdiff_snapshot_free(c);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}
END_TEST

/* ---- a mapped file ------------------------------------------------------------------------ */

enum { FILE_PAGES = 40, FILE_READS = 7 };

/* Two neighbours, and pages on both sides of 16-page (64 KiB) boundaries. */
static const size_t file_read_pages[FILE_READS] = {1, 2, 9, 16, 23, 31, 39};

typedef struct file_map {
    char path[PATH_MAX];
    int fd;
    volatile char *m; /* FILE_PAGES pages of the file from file page `first` */
} file_map;

static size_t cached_pages(const file_map *f)
{
    unsigned char vec[FILE_PAGES];
    ck_assert_int_eq(mincore((void *)f->m, FILE_PAGES * scn_page(), vec), 0);
    size_t n = 0;
    for (size_t i = 0; i < FILE_PAGES; i++)
        n += vec[i] & 1;
    return n;
}

/* A read fault on a file mapping can make more pages present than the one read, in two ways:
 * readahead reads neighbours into the page cache, and fault-around (mm/filemap.c
 * filemap_map_pages, fault_around_bytes = 64 KiB) maps pages around the fault that are already
 * in the page cache. Both are shut out: the file's pages are written back and dropped from the
 * page cache (fsync, POSIX_FADV_DONTNEED; mincore() shows the cache empty), and MADV_RANDOM turns
 * readahead off for the mapping. Each read then brings exactly its own page into the cache, and
 * fault-around finds no cached neighbour that is not mapped already. Measured with pagemap on
 * Linux 6.18: 7 reads make exactly 7 pages present; without MADV_RANDOM, 38 to 40. A private
 * read-only mapping is read rather than MAP_SHARED pages written so that the pages are the
 * file's own page-cache pages, never copies. */
static void file_map_make(file_map *f, size_t first)
{
    size_t ps = scn_page();
    snprintf(f->path, sizeof f->path, "%s/memdiff-scn-XXXXXX", scn_disk_tmpdir());
    f->fd = mkstemp(f->path);
    ck_assert_msg(f->fd >= 0, "mkstemp %s: %s", f->path, strerror(errno));
    size_t len = (first + FILE_PAGES) * ps;
    char *buf = malloc(len);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)(i * 7 + 1);
    ck_assert_int_eq(write(f->fd, buf, len), (ssize_t)len);
    free(buf);
    ck_assert_int_eq(fsync(f->fd), 0);
    ck_assert_int_eq(posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    f->m = scn_map(FILE_PAGES, PROT_READ, MAP_PRIVATE, f->fd, (off_t)(first * ps));
    ck_assert_int_eq(madvise((void *)f->m, FILE_PAGES * ps, MADV_RANDOM), 0);
    ck_assert_msg(cached_pages(f) == 0, "the page cache still holds pages of %s", f->path);
}

static void file_map_free(file_map *f)
{
    scn_unmap((void *)f->m, FILE_PAGES);
    close(f->fd);
    unlink(f->path);
}

/* Reads the 7 pages between two snapshots and asserts the file's block and region. */
static void file_map_read_and_check(file_map *f, memdiff_snapshot *a)
{
    size_t ps = scn_page();
    unsigned sum = 0;
    for (size_t i = 0; i < FILE_READS; i++)
        sum += (unsigned char)f->m[file_read_pages[i] * ps];
    memdiff_snapshot *b = scn_snap(MEMDIFF_DEPTH_STANDARD);
    ck_assert_uint_gt(sum, 0);
    ck_assert_uint_eq(cached_pages(f), FILE_READS);

    uintptr_t lo = (uintptr_t)f->m;
    memdiff_region reg;
    ck_assert_int_eq(memdiff_snapshot_find(b, lo, &reg), MEMDIFF_OK);
    ck_assert_int_eq(reg.category, MEMDIFF_CAT_MAPPED_FILE);
    ck_assert_str_eq(reg.label, f->path);
    ck_assert_str_eq(reg.path, f->path);
    ck_assert_uint_eq(reg.flags, MEMDIFF_REGION_FILE);
    ck_assert_uint_eq(reg.prot, MEMDIFF_PROT_READ);
    ck_assert(reg.start == lo && reg.end == lo + FILE_PAGES * ps);
    ck_assert_uint_eq(reg.resident_bytes, FILE_READS * ps);

    memdiff_diff *d = scn_compare(a, b, 0);
    const memdiff_block *blk = expect_block(d, lo + file_read_pages[0] * ps,
                                            MEMDIFF_CAT_MAPPED_FILE, f->path,
                                            MEMDIFF_CHANGE_NEW, BOTH);
    ASSERT_PAGES(blk->totals.new_bytes, FILE_READS, blk);
    /* Page-cache pages that this process alone maps: pagemap's exclusive bit is set. */
    ASSERT_PAGES(blk->totals.new_private_bytes, FILE_READS, blk);
    ASSERT_PAGES(blk->totals.freed_bytes, 0, blk);

    memdiff_diff *v = scn_compare(a, b, MEMDIFF_COMPARE_VERBOSE);
    ck_assert_uint_eq(scn_verbose_new_pages(v, lo, lo + FILE_PAGES * ps), FILE_READS);
    for (size_t i = 0; i < FILE_READS; i++) {
        const memdiff_block *x = scn_block_at(v, lo + file_read_pages[i] * ps,
                                              MEMDIFF_CAT_MAPPED_FILE);
        ck_assert_msg(x->attrs_after & MEMDIFF_PAGE_FILE, "%s", scn_block_str(x));
    }
    memdiff_diff_free(v);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
}

/* The file is mapped from its second page on: memdiff reads the first bytes of every file
 * mapped at offset 0, looking for an ELF header (platform/linux/modules.c), and that read goes
 * through the page cache (snapshot_leaves_file_pages_alone is about that). */
START_TEST(mapped_file_read_counts_exact_pages)
{
    file_map f;
    file_map_make(&f, 1);
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    file_map_read_and_check(&f, a);
    memdiff_snapshot_free(a);
    file_map_free(&f);
}
END_TEST

/* A snapshot must not change what it measures (DESIGN.md). A file mapped at offset 0 is a
 * candidate module, and memdiff reads its first bytes from the file when the page is not
 * resident. That read fills the page cache (with readahead: 4 pages on Linux 6.18), and the
 * next read fault of the process within the same 64 KiB then maps those pages too
 * (fault-around): 9 pages become resident instead of 7. So a snapshot must leave the page cache
 * of the process's mapped files as it was. */
START_TEST(snapshot_leaves_file_pages_alone)
{
    file_map f;
    file_map_make(&f, 0);
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    ck_assert_msg(cached_pages(&f) == 0,
                  "the snapshot brought %zu pages of a mapped file into the page cache",
                  cached_pages(&f));
    file_map_read_and_check(&f, a);
    memdiff_snapshot_free(a);
    file_map_free(&f);
}
END_TEST

/* ---- shared memory -------------------------------------------------------------------------- */

enum { SHM_PAGES = 32, SHM_WRITTEN = 5 };

static size_t shm_page(size_t i)
{
    return i * 7 % SHM_PAGES;
}

/* MAP_SHARED|MAP_ANONYMOUS: 5 pages written are 5 new shmem pages. The kernel backs such a
 * mapping with a shmem file it names "dev/zero" (mm/shmem.c shmem_zero_setup; maps shows
 * "/dev/zero (deleted)"); the classifier labels it "shared anonymous" (docs/categories.md,
 * rule 7). pagemap calls shmem pages file pages (bit 61) and, while this process alone maps
 * them, exclusive (bit 56; page mapcount 1): new private. Then a child maps the same 5 pages (it reads them; a fork does
 * not copy the page tables of shared mappings, mm/memory.c vma_needs_copy): they become shared,
 * 5 exactly; when the child is gone, private again. Measured on Linux 6.18 with pagemap. */
START_TEST(shared_anonymous_is_shared)
{
    size_t ps = scn_page();
    char *s = scn_map(SHM_PAGES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    for (size_t i = 0; i < SHM_WRITTEN; i++)
        s[shm_page(i) * ps] = (char)(i + 1);
    memdiff_snapshot *b = scn_snap(MEMDIFF_DEPTH_STANDARD);

    memdiff_region reg;
    ck_assert_int_eq(memdiff_snapshot_find(b, (uintptr_t)s, &reg), MEMDIFF_OK);
    ck_assert_int_eq(reg.category, MEMDIFF_CAT_SHARED);
    ck_assert_str_eq(reg.label, "shared anonymous");
    ck_assert_uint_eq(reg.flags & MEMDIFF_REGION_SHARED, MEMDIFF_REGION_SHARED);
    ck_assert_uint_eq(reg.resident_bytes, SHM_WRITTEN * ps);

    memdiff_diff *d = scn_compare(a, b, 0);
    const memdiff_block *blk = expect_block(d, (uintptr_t)s, MEMDIFF_CAT_SHARED, "shared anonymous",
                                            MEMDIFF_CHANGE_NEW, BOTH);
    ASSERT_PAGES(blk->totals.new_bytes, SHM_WRITTEN, blk);
    ASSERT_PAGES(blk->totals.new_private_bytes, SHM_WRITTEN, blk);
    ASSERT_PAGES(blk->totals.new_shared_bytes, 0, blk);

    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        unsigned sum = 0;
        for (size_t i = 0; i < SHM_WRITTEN; i++)
            sum += (unsigned char)((volatile char *)s)[shm_page(i) * ps];
        pipe_put(fds[1], sum == 15 ? 'y' : 'n');
        for (;;)
            pause();
    }
    ck_assert_int_eq(pipe_get(fds[0]), 'y');
    memdiff_snapshot *c = scn_snap(MEMDIFF_DEPTH_STANDARD);
    kill(child, SIGKILL);
    ck_assert_int_eq(waitpid(child, NULL, 0), child);
    memdiff_snapshot *e = scn_snap(MEMDIFF_DEPTH_STANDARD);

    memdiff_diff *d2 = scn_compare(b, c, 0);
    blk = expect_block(d2, (uintptr_t)s, MEMDIFF_CAT_SHARED, "shared anonymous",
                       MEMDIFF_CHANGE_BECAME_SHARED, BOTH);
    ASSERT_PAGES(blk->totals.became_shared_bytes, SHM_WRITTEN, blk);
    ASSERT_PAGES(blk->totals.new_bytes, 0, blk);
    ASSERT_PAGES(blk->totals.freed_bytes, 0, blk);
    memdiff_diff *d3 = scn_compare(c, e, 0);
    blk = expect_block(d3, (uintptr_t)s, MEMDIFF_CAT_SHARED, "shared anonymous",
                       MEMDIFF_CHANGE_BECAME_PRIVATE, BOTH);
    ASSERT_PAGES(blk->totals.became_private_bytes, SHM_WRITTEN, blk);

    memdiff_diff_free(d3);
    memdiff_diff_free(d2);
    memdiff_diff_free(d);
    memdiff_snapshot_free(e);
    memdiff_snapshot_free(c);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    scn_unmap(s, SHM_PAGES);
}
END_TEST

/* memfd: Shared memory labelled with the name the kernel gives it, "/memfd:NAME". */
START_TEST(memfd_is_shared)
{
    size_t ps = scn_page();
    int fd = memfd_create("memdiff-scn", MFD_CLOEXEC);
    ck_assert_msg(fd >= 0, "memfd_create: %s", strerror(errno));
    ck_assert_int_eq(ftruncate(fd, SHM_PAGES * ps), 0);
    char *s = scn_map(SHM_PAGES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    for (size_t i = 0; i < SHM_WRITTEN; i++)
        s[shm_page(i) * ps] = (char)(i + 1);
    memdiff_snapshot *b = scn_snap(MEMDIFF_DEPTH_STANDARD);
    memdiff_diff *d = scn_compare(a, b, 0);
    const memdiff_block *blk = expect_block(d, (uintptr_t)s, MEMDIFF_CAT_SHARED,
                                            "/memfd:memdiff-scn", MEMDIFF_CHANGE_NEW, BOTH);
    ASSERT_PAGES(blk->totals.new_bytes, SHM_WRITTEN, blk);
    ASSERT_PAGES(blk->totals.new_private_bytes, SHM_WRITTEN, blk);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    scn_unmap(s, SHM_PAGES);
    close(fd);
}
END_TEST

/* ---- snapshots are const, diffs own their data -------------------------------------------- */

static void assert_same_blocks(const memdiff_diff *x, const memdiff_diff *y)
{
    memdiff_totals tx, ty;
    ck_assert_int_eq(memdiff_diff_totals(x, MEMDIFF_CAT_ALL, &tx), MEMDIFF_OK);
    ck_assert_int_eq(memdiff_diff_totals(y, MEMDIFF_CAT_ALL, &ty), MEMDIFF_OK);
    scn_assert_totals_eq(&tx, &ty, "totals");
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        ck_assert_int_eq(memdiff_diff_totals(x, (memdiff_category)c, &tx), MEMDIFF_OK);
        ck_assert_int_eq(memdiff_diff_totals(y, (memdiff_category)c, &ty), MEMDIFF_OK);
        scn_assert_totals_eq(&tx, &ty, memdiff_category_name((memdiff_category)c));
    }
    ck_assert_uint_eq(memdiff_diff_block_count(x), memdiff_diff_block_count(y));
    for (size_t i = 0; i < memdiff_diff_block_count(x); i++) {
        const memdiff_block *bx = scn_block(x, i), *by = scn_block(y, i);
        ck_assert(bx->start == by->start && bx->end == by->end);
        ck_assert_int_eq(bx->category, by->category);
        ck_assert_str_eq(bx->label, by->label);
        ck_assert_int_eq(bx->change, by->change);
        ck_assert_uint_eq(bx->presence, by->presence);
        ck_assert_uint_eq(bx->attrs_before, by->attrs_before);
        ck_assert_uint_eq(bx->attrs_after, by->attrs_after);
        scn_assert_totals_eq(&bx->totals, &by->totals, "block");
    }
}

START_TEST(snapshots_compare_again_and_diffs_outlive_them)
{
    enum { PAGES = 16, TOUCHED = 4 };
    size_t ps = scn_page();
    char *m = scn_map(PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    for (size_t i = 0; i < TOUCHED; i++)
        m[(2 * i + 1) * ps] = 1;
    memdiff_snapshot *b = scn_snap(MEMDIFF_DEPTH_STANDARD);

    memdiff_diff *d1 = scn_compare(a, b, 0), *d2 = scn_compare(a, b, 0);
    assert_same_blocks(d1, d2);
    memdiff_diff *v1 = scn_compare(a, b, MEMDIFF_COMPARE_VERBOSE);
    memdiff_diff *v2 = scn_compare(a, b, MEMDIFF_COMPARE_VERBOSE);
    assert_same_blocks(v1, v2);

    /* The other way round, the same pages are freed (discarded: the mapping stays). */
    memdiff_diff *r = scn_compare(b, a, 0);
    const memdiff_block *blk = scn_block_at(r, (uintptr_t)m + ps, MEMDIFF_CAT_PRIVATE);
    ASSERT_PAGES(blk->totals.freed_discarded_bytes, TOUCHED, blk);
    ASSERT_PAGES(blk->totals.new_bytes, 0, blk);
    memdiff_diff_free(r);

    memdiff_snapshot_info before_info;
    ck_assert_int_eq(memdiff_snapshot_get_info(a, &before_info), MEMDIFF_OK);
    char host[256];
    snprintf(host, sizeof host, "%s", before_info.host);
    int pid = before_info.pid;

    /* The diff keeps what it shows after both snapshots are gone (unmapped: a dangling
     * reference would crash here, or be reported by AddressSanitizer). */
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
    blk = scn_block_at(d1, (uintptr_t)m + ps, MEMDIFF_CAT_PRIVATE);
    ck_assert_str_eq(blk->label, "anonymous");
    ASSERT_PAGES(blk->totals.new_bytes, TOUCHED, blk);
    memdiff_diff_info info;
    ck_assert_int_eq(memdiff_diff_get_info(d1, &info), MEMDIFF_OK);
    ck_assert_str_eq(info.before.host, host);
    ck_assert_int_eq(info.before.pid, pid);
    ck_assert_str_eq(info.after.host, host);
    ck_assert_uint_eq(info.compare_flags, 0);
    /* memdiff_compare() made it, no reference-set bracket: its refset figures are all 0. */
    ck_assert_uint_eq(info.refset.sources, 0);
    ck_assert_ptr_null(info.refset.degraded);
    ck_assert_uint_eq(info.refset.peak_bytes, 0);
    ck_assert_int_eq(memdiff_diff_get_info(v1, &info), MEMDIFF_OK);
    ck_assert_uint_eq(info.compare_flags, MEMDIFF_COMPARE_VERBOSE);
    /* Blocks are 0 .. count-1: past them is MEMDIFF_ERANGE (0.1 returned NULL). */
    memdiff_block past;
    ck_assert_int_eq(memdiff_diff_block(d1, memdiff_diff_block_count(d1), &past), MEMDIFF_ERANGE);
    ck_assert_int_eq(memdiff_diff_block(d1, SIZE_MAX, &past), MEMDIFF_ERANGE);
    ck_assert_int_eq(memdiff_diff_block(d1, 0, NULL), MEMDIFF_EINVAL);
    char *text = scn_report(v1, 0);
    ck_assert_ptr_nonnull(strstr(text, "anonymous"));
    free(text);
    assert_same_blocks(d1, d2);

    memdiff_diff_free(v2);
    memdiff_diff_free(v1);
    memdiff_diff_free(d2);
    memdiff_diff_free(d1);
    scn_unmap(m, PAGES);
}
END_TEST

/* ---- depths -------------------------------------------------------------------------------- */


START_TEST(fast_depth_counts_exact_pages)
{
    anon_run r;
    const char *err = anon_run_do(&r, MEMDIFF_DEPTH_FAST, 1);
    ck_assert_msg(err == NULL, "%s", err);
    memdiff_snapshot_info info;
    ck_assert_int_eq(memdiff_snapshot_get_info(r.after, &info), MEMDIFF_OK);
    ck_assert_int_eq(info.depth, MEMDIFF_DEPTH_FAST);
    ck_assert_ptr_null(info.degraded);
    /* The pages came from the PAGEMAP_SCAN ioctl (Linux 6.7) or, without it, from pagemap:
     * MEMDIFF_SRC_PAGES either way. 0.1's MEMDIFF_SRC_PAGEMAP_SCAN (0x4), how they were read,
     * is the backend's now and never shown. */
    ck_assert_uint_eq(info.sources & 0x4u, 0);
    ck_assert_uint_ne(info.sources & MEMDIFF_SRC_PAGES, 0);
    ck_assert_uint_ne(info.sources & MEMDIFF_SRC_REGIONS, 0);
    ck_assert_uint_eq(info.sources & (MEMDIFF_SRC_FRAMES | MEMDIFF_SRC_PAGE_FLAGS), 0);
    anon_run_free(&r);
}
END_TEST

START_TEST(deep_depth_as_root)
{
    if (geteuid() != 0) {
        fprintf(stderr, "deep_depth_as_root: skipped, not root (deep_depth_unprivileged_degrades "
                        "covers this user)\n");
        return;
    }
    anon_run r;
    const char *err = anon_run_do(&r, MEMDIFF_DEPTH_DEEP, 1);
    ck_assert_msg(err == NULL, "%s", err);
    memdiff_snapshot_info info;
    ck_assert_int_eq(memdiff_snapshot_get_info(r.after, &info), MEMDIFF_OK);
    ck_assert_int_eq(info.depth_requested, MEMDIFF_DEPTH_DEEP);
    ck_assert_int_eq(info.depth, MEMDIFF_DEPTH_DEEP);
    ck_assert_ptr_null(info.degraded);
    unsigned need = MEMDIFF_SRC_PAGES | MEMDIFF_SRC_FRAMES | MEMDIFF_SRC_PAGE_FLAGS |
                    MEMDIFF_SRC_MAP_COUNTS;
    ck_assert_msg((info.sources & need) == need, "sources 0x%x", info.sources);
    anon_run_free(&r);
}
END_TEST

static const char *deep_unprivileged_child(void *arg)
{
    static char why[4096];
    (void)arg;
    anon_run r;
    const char *err = anon_run_do(&r, MEMDIFF_DEPTH_DEEP, 1);
    if (err)
        return err;
    memdiff_snapshot_info info;
    if (memdiff_snapshot_get_info(r.after, &info) != MEMDIFF_OK)
        return "get_info failed";
    if (info.depth_requested != MEMDIFF_DEPTH_DEEP || info.depth != MEMDIFF_DEPTH_STANDARD) {
        snprintf(why, sizeof why, "depth %s (requested %s), want standard",
                 memdiff_depth_name(info.depth), memdiff_depth_name(info.depth_requested));
        return why;
    }
    if (!info.degraded || !strstr(info.degraded, "CAP_SYS_ADMIN")) {
        snprintf(why, sizeof why, "degraded: %s", info.degraded ? info.degraded : "(null)");
        return why;
    }
    if (!(info.sources & MEMDIFF_SRC_PAGES) ||
        (info.sources & (MEMDIFF_SRC_FRAMES | MEMDIFF_SRC_PAGE_FLAGS | MEMDIFF_SRC_MAP_COUNTS))) {
        snprintf(why, sizeof why, "sources 0x%x", info.sources);
        return why;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc = f ? memdiff_report_text(r.diff, f, 0) : MEMDIFF_EIO;
    if (f)
        fclose(f);
    if (rc != MEMDIFF_OK || !text || !strstr(text, info.degraded)) {
        snprintf(why, sizeof why, "the report does not say why the depth was degraded (%s):\n%s",
                 info.degraded, text ? text : "");
        free(text);
        return why;
    }
    free(text);
    anon_run_free(&r);
    return NULL;
}

/* As nobody, deep is degraded to standard (kernel page flags and frame numbers need
 * CAP_SYS_ADMIN), the snapshot says so and so does the report; the counts stay exact. */
START_TEST(deep_depth_unprivileged_degrades)
{
    const char *err = scn_as_nobody(deep_unprivileged_child, NULL);
    ck_assert_msg(err == NULL, "as nobody: %s", err);
}
END_TEST

/* ---- processes memdiff cannot read --------------------------------------------------------- */

START_TEST(exited_process_is_esrch)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = pid;
    memdiff_snapshot *s = (memdiff_snapshot *)&o;
    ck_assert_int_eq(memdiff_snapshot_take(&o, &s), MEMDIFF_ESRCH);
    ck_assert_ptr_null(s);
    char num[32];
    snprintf(num, sizeof num, "%d", (int)pid);
    ck_assert_msg(strstr(memdiff_last_error(), num) != NULL, "'%s' does not name pid %s",
                  memdiff_last_error(), num);
}
END_TEST

static const char *foreign_process_child(void *arg)
{
    static char why[512];
    /* init, and the test process when it runs as root (then this child is nobody) */
    pid_t targets[2] = {1, getppid()};
    int ntargets = *(const int *)arg ? 2 : 1;
    for (int i = 0; i < ntargets; i++) {
        memdiff_options o = MEMDIFF_OPTIONS_INIT;
        o.pid = targets[i];
        memdiff_snapshot *s = NULL;
        int rc = memdiff_snapshot_take(&o, &s);
        if (rc != MEMDIFF_EACCES || s != NULL || !memdiff_last_error()[0]) {
            snprintf(why, sizeof why, "pid %d: %s (%s), want MEMDIFF_EACCES", (int)targets[i],
                     memdiff_status_name(rc), memdiff_last_error());
            memdiff_snapshot_free(s);
            return why;
        }
    }
    return NULL;
}

START_TEST(foreign_process_is_eacces)
{
    int test_is_root = geteuid() == 0;
    const char *err = scn_as_nobody(foreign_process_child, &test_is_root);
    ck_assert_msg(err == NULL, "as nobody: %s", err);
}
END_TEST

/* The control: a live process of the same user is read by pid. */
START_TEST(live_child_by_pid)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        pipe_put(fds[1], 'r');
        for (;;)
            pause();
    }
    ck_assert_int_eq(pipe_get(fds[0]), 'r');
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = pid;
    memdiff_snapshot *s = NULL;
    int rc = memdiff_snapshot_take(&o, &s);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    ck_assert_msg(rc == MEMDIFF_OK, "%s: %s", memdiff_status_name(rc), memdiff_last_error());
    memdiff_snapshot_info info;
    ck_assert_int_eq(memdiff_snapshot_get_info(s, &info), MEMDIFF_OK);
    ck_assert_int_eq(info.pid, pid);
    ck_assert_uint_gt(info.resident_bytes, 0);
    ck_assert_uint_eq(info.own_bytes, 0); /* forked before any snapshot: no memdiff storage */
    memdiff_snapshot_free(s);
}
END_TEST

/* ---- memdiff's own storage ------------------------------------------------------------------ */

static void totals_add(memdiff_totals *sum, const memdiff_totals *t)
{
    sum->new_bytes += t->new_bytes;
    sum->new_private_bytes += t->new_private_bytes;
    sum->new_shared_bytes += t->new_shared_bytes;
    sum->freed_bytes += t->freed_bytes;
    sum->freed_unmapped_bytes += t->freed_unmapped_bytes;
    sum->freed_discarded_bytes += t->freed_discarded_bytes;
    sum->freed_swapped_bytes += t->freed_swapped_bytes;
    sum->replaced_bytes += t->replaced_bytes;
    sum->became_private_bytes += t->became_private_bytes;
    sum->became_shared_bytes += t->became_shared_bytes;
    sum->net_bytes += t->net_bytes;
}

static int overlaps_own(const memdiff_snapshot *s, const memdiff_block *b)
{
    for (size_t i = 0; i < memdiff_snapshot_region_count(s); i++) {
        memdiff_region reg;
        ck_assert_int_eq(memdiff_snapshot_region(s, i, &reg), MEMDIFF_OK);
        if (reg.category == MEMDIFF_CAT_OWN && reg.start < b->end && b->start < reg.end)
            return 1;
    }
    return 0;
}

/* memdiff's storage (each snapshot lives in its own arena, so the snapshot's address is in it)
 * is Own in the snapshots, whose pages are not read (the arena's count of its bytes stands for
 * them), in no block of a diff, and outside the diff's totals, which are the sum of the blocks'
 * and of every other category's. */
START_TEST(own_storage_stays_out)
{
    enum { PAGES = 16 };
    size_t ps = scn_page();
    char *m = scn_map(PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(m, 1, PAGES / 2 * ps);
    memdiff_snapshot *a = scn_snap(MEMDIFF_DEPTH_STANDARD);
    memset(m + PAGES / 2 * ps, 2, PAGES / 2 * ps);
    ck_assert_int_eq(madvise(m, 2 * ps, MADV_DONTNEED), 0);
    memdiff_snapshot *b = scn_snap(MEMDIFF_DEPTH_STANDARD);

    const memdiff_snapshot *snaps[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        memdiff_region reg;
        ck_assert_int_eq(memdiff_snapshot_find(snaps[i], (uintptr_t)snaps[i], &reg), MEMDIFF_OK);
        ck_assert_int_eq(reg.category, MEMDIFF_CAT_OWN);
        ck_assert_str_eq(reg.label, "memdiff");
        /* Written (the snapshot's own struct is there) but not read: no page, no run. */
        ck_assert_uint_eq(reg.resident_bytes, 0);
        memdiff_snapshot_info info;
        ck_assert_int_eq(memdiff_snapshot_get_info(snaps[i], &info), MEMDIFF_OK);
        /* The arena's bytes when the snapshot ended: its own storage among them. */
        ck_assert_uint_ge(info.own_bytes, info.storage_bytes);
    }

    unsigned flags[2] = {0, MEMDIFF_COMPARE_VERBOSE};
    for (int f = 0; f < 2; f++) {
        memdiff_diff *d = scn_compare(a, b, flags[f]);
        memdiff_totals total, sum, cat;
        memset(&sum, 0, sizeof sum);
        ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &total), MEMDIFF_OK);
        for (size_t i = 0; i < memdiff_diff_block_count(d); i++) {
            const memdiff_block *blk = scn_block(d, i);
            ck_assert_msg(blk->category != MEMDIFF_CAT_OWN && strcmp(blk->label, "memdiff"),
                          "%s", scn_block_str(blk));
            ck_assert_msg(!(blk->start <= (uintptr_t)a && (uintptr_t)a < blk->end) &&
                              !(blk->start <= (uintptr_t)b && (uintptr_t)b < blk->end),
                          "a block spans a snapshot: %s", scn_block_str(blk));
            /* Verbose blocks are contiguous changed pages: none may touch Own storage. */
            if (flags[f])
                ck_assert_msg(!overlaps_own(a, blk) && !overlaps_own(b, blk),
                              "a block overlaps memdiff's storage: %s", scn_block_str(blk));
            totals_add(&sum, &blk->totals);
        }
        scn_assert_totals_eq(&sum, &total, "sum of blocks");
        memset(&sum, 0, sizeof sum);
        for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
            ck_assert_int_eq(memdiff_diff_totals(d, (memdiff_category)c, &cat),
                             MEMDIFF_OK);
            if (c != MEMDIFF_CAT_OWN)
                totals_add(&sum, &cat);
        }
        scn_assert_totals_eq(&sum, &total, "sum of categories");
        /* No page of Own was read, so none changed: memdiff's cost is in the snapshots'
         * own_bytes, not in the diff. */
        ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_OWN, &cat), MEMDIFF_OK);
        memdiff_totals zero;
        memset(&zero, 0, sizeof zero);
        scn_assert_totals_eq(&cat, &zero, "Own");
        /* And the scenario itself is there. */
        const memdiff_block *blk = scn_block_at(d, (uintptr_t)m + (PAGES - 1) * ps,
                                                MEMDIFF_CAT_PRIVATE);
        if (!flags[f]) {
            ASSERT_PAGES(blk->totals.new_bytes, PAGES / 2, blk);
            ASSERT_PAGES(blk->totals.freed_discarded_bytes, 2, blk);
            ck_assert_int_eq(blk->change, MEMDIFF_CHANGE_MIXED);
        }
        memdiff_diff_free(d);
    }
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    scn_unmap(m, PAGES);
}
END_TEST

Suite *scenarios_suite(void)
{
    Suite *s = suite_create("scenarios");
    TCase *tc = tcase_create("Self");
    /* Deep snapshots read kpageflags for every resident page; sanitizer builds are slower. */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, anon_touch_counts_exact_pages);
    tcase_add_test(tc, munmap_counts_freed_unmapped);
    tcase_add_test(tc, madvise_dontneed_counts_freed_discarded);
#if !defined(__SANITIZE_ADDRESS__)
    tcase_add_test(tc, malloc_mmap_chunk_is_heap);
#endif
    tcase_add_test(tc, thread_stack_is_stack_with_tid);
    tcase_add_test(tc, dlopen_module_is_image);
    tcase_add_test(tc, mapped_file_read_counts_exact_pages);
    tcase_add_test(tc, snapshot_leaves_file_pages_alone);
    tcase_add_test(tc, shared_anonymous_is_shared);
    tcase_add_test(tc, memfd_is_shared);
    tcase_add_test(tc, snapshots_compare_again_and_diffs_outlive_them);
    tcase_add_test(tc, own_storage_stays_out);
    suite_add_tcase(s, tc);

    tc = tcase_create("Depth");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fast_depth_counts_exact_pages);
    tcase_add_test(tc, deep_depth_as_root);
    tcase_add_test(tc, deep_depth_unprivileged_degrades);
    suite_add_tcase(s, tc);

    tc = tcase_create("Processes");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, exited_process_is_esrch);
    tcase_add_test(tc, foreign_process_is_eacces);
    tcase_add_test(tc, live_child_by_pid);
    suite_add_tcase(s, tc);
    return s;
}
