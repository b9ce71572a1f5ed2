/*
 * test_faults.c - what real processes do to a snapshot: a target that exits while it is read,
 * threads that map and unmap while the calling process snapshots itself, a caller that may not
 * read frame numbers, and allocation failure at every step of a snapshot and a compare.
 *
 * Every result must be a clean status with a detail message, or a snapshot that is whole and
 * consistent: regions ascending and disjoint, every run inside the region it names, region page
 * counts the sums of their runs. Nothing may leak: memdiff's own chunks (the arena registry,
 * memdiff__own_ranges) return to what they were, and the sanitizer build checks the rest.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "scenario_util.h"
#include "suites.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* Bytes of memdiff's chunks now (the arena's own count), after scratch kept for the next
 * snapshot is unmapped (memdiff_trim): what is left is what live objects hold, or what leaked. */
static uint64_t own_bytes(void)
{
    memdiff_trim();
    return memdiff__own_bytes();
}

/* The snapshot's internal consistency; NULL, or what is wrong (static storage). */
static const char *inconsistency(const memdiff_snapshot *s)
{
    static char msg[256];
    uint64_t ps = s->info.page_size;
    uint64_t resident = 0;
    for (size_t i = 0; i < s->region_count; i++) {
        const memdiff__region *r = &s->regions[i];
        if (r->start >= r->end || (i > 0 && r->start < s->regions[i - 1].end)) {
            snprintf(msg, sizeof msg, "region %zu 0x%llx-0x%llx out of order or empty", i,
                     (unsigned long long)r->start, (unsigned long long)r->end);
            return msg;
        }
        uint64_t res = 0, priv = 0, swp = 0;
        memdiff__runs_iter it;
        memdiff__run cur, before;
        const memdiff__run *run = &cur, *prev = NULL;
        size_t k = 0;
        for (memdiff__runs_begin_region(s, i, &it); memdiff__runs_next(&it, &cur);
             k++, before = cur, prev = &before) {
            uint64_t end = run->start + run->npages * ps;
            if (k >= r->run_count || run->region != i || run->npages == 0 ||
                run->start < r->start || end > r->end ||
                (prev && run->start < prev->start + prev->npages * ps)) {
                snprintf(msg, sizeof msg, "run %zu 0x%llx+%llu pages is not inside region %zu "
                         "0x%llx-0x%llx", k, (unsigned long long)run->start,
                         (unsigned long long)run->npages, i, (unsigned long long)r->start,
                         (unsigned long long)r->end);
                return msg;
            }
            if (memdiff__attrs_resident(run->attrs)) {
                res += run->npages;
                priv += (run->attrs & MEMDIFF_PAGE_PRIVATE) ? run->npages : 0;
            }
            swp += (run->attrs & MEMDIFF_PAGE_SWAPPED) ? run->npages : 0;
            if (run->aux != MEMDIFF__NO_AUX && run->aux + run->npages > s->aux_count) {
                snprintf(msg, sizeof msg, "run %zu: per-page entries beyond the arrays", k);
                return msg;
            }
        }
        if (k != r->run_count) {
            snprintf(msg, sizeof msg, "region %zu: %zu runs read, %zu counted", i, k,
                     r->run_count);
            return msg;
        }
        if (res != r->resident_pages || priv != r->private_pages || swp != r->swapped_pages) {
            snprintf(msg, sizeof msg, "region %zu: page counts %llu/%llu/%llu, runs say "
                     "%llu/%llu/%llu", i, (unsigned long long)r->resident_pages,
                     (unsigned long long)r->private_pages, (unsigned long long)r->swapped_pages,
                     (unsigned long long)res, (unsigned long long)priv, (unsigned long long)swp);
            return msg;
        }
        if (r->category != MEMDIFF_CAT_OWN)
            resident += res * ps;
    }
    size_t runs = 0;
    for (size_t i = 0; i < s->region_count; i++)
        runs += s->regions[i].run_count;
    if (runs != s->run_count || resident != s->info.resident_bytes ||
        s->info.region_count != s->region_count) {
        snprintf(msg, sizeof msg, "totals: %zu runs of %zu in regions, resident %llu vs %llu",
                 runs, s->run_count, (unsigned long long)resident,
                 (unsigned long long)s->info.resident_bytes);
        return msg;
    }
    return NULL;
}

static int region_pages(const memdiff_snapshot *s, uint64_t start, uint64_t end)
{
    int pages = 0;
    for (size_t i = 0; i < s->region_count; i++)
        if (s->regions[i].start < end && s->regions[i].end > start)
            pages += (int)s->regions[i].resident_pages;
    return pages;
}

/* ---- the target exits during the snapshot ------------------------------------------------ */

#define EXIT_CHILDREN 40
#define EXIT_PAGES 64

/* Children that write 64 pages, tell the parent where, and exit after a random delay of up to
 * 3 ms, while the parent snapshots them in a loop at every depth. Each result is OK or
 * MEMDIFF_ESRCH with a detail; an OK snapshot is consistent and whole: it holds the 64 pages,
 * which the child never changes while it lives (a snapshot read during exit_mmap() would show
 * fewer, or none). */
START_TEST(target_exits_during_snapshots)
{
    int ok = 0, gone = 0;
    uint64_t base = own_bytes();
    srand((unsigned)time(NULL));
    for (int c = 0; c < EXIT_CHILDREN; c++) {
        int fds[2];
        ck_assert_int_eq(pipe(fds), 0);
        long delay_us = rand() % 3000;
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            close(fds[0]);
            char *p = scn_map(EXIT_PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                              0);
            memset(p, 1, EXIT_PAGES * scn_page());
            uint64_t a = (uint64_t)(uintptr_t)p;
            (void)!write(fds[1], &a, sizeof a);
            struct timespec d = {0, delay_us * 1000};
            nanosleep(&d, NULL);
            _exit(0);
        }
        close(fds[1]);
        uint64_t addr = 0;
        ck_assert_int_eq(read(fds[0], &addr, sizeof addr), (ssize_t)sizeof addr);
        close(fds[0]);
        int rc = MEMDIFF_OK;
        for (int i = 0; i < 100000 && rc == MEMDIFF_OK; i++) {
            memdiff_options o = MEMDIFF_OPTIONS_INIT;
            o.pid = pid;
            o.depth = (memdiff_depth)(i % 3);
            memdiff_snapshot *s = NULL;
            rc = memdiff_snapshot_take(&o, &s);
            if (rc == MEMDIFF_OK) {
                ok++;
                const char *bad = inconsistency(s);
                ck_assert_msg(bad == NULL, "child %d, snapshot %d: %s", (int)pid, i, bad);
                int pages = region_pages(s, addr, addr + EXIT_PAGES * scn_page());
                ck_assert_msg(pages == EXIT_PAGES,
                              "child %d, snapshot %d (%s): an OK snapshot holds %d of the %d "
                              "pages the child wrote: a partial snapshot passed off as whole",
                              (int)pid, i, memdiff_depth_name(o.depth), pages, EXIT_PAGES);
                memdiff_snapshot_free(s);
            } else {
                gone++;
                ck_assert_msg(rc == MEMDIFF_ESRCH, "child %d: %s (%s), want MEMDIFF_ESRCH",
                              (int)pid, memdiff_status_name(rc), memdiff_last_error());
                ck_assert_ptr_null(s);
                ck_assert_msg(memdiff_last_error()[0] != '\0', "MEMDIFF_ESRCH without detail");
            }
        }
        ck_assert_int_eq(rc, MEMDIFF_ESRCH);
        ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    }
    ck_assert_uint_eq(own_bytes(), base);
    printf("faults: %d children exited under %d whole snapshots (%d ended in MEMDIFF_ESRCH)\n",
           EXIT_CHILDREN, ok, gone);
}
END_TEST

/* ---- threads mapping and unmapping ------------------------------------------------------- */

#define CHURN_THREADS 4

static atomic_int churn_stop;
static atomic_long churn_ops;

static void *churn(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    size_t ps = scn_page();
    while (!atomic_load(&churn_stop)) {
        size_t n = 1 + (size_t)(rand_r(&seed) % 64);
        char *p = mmap(NULL, n * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            continue;
        for (size_t i = 0; i < n; i += 1 + (size_t)(rand_r(&seed) % 3))
            p[i * ps] = 1;
        if (n > 2 && rand_r(&seed) % 2) /* split the mapping: two VMAs, then one again */
            mprotect(p + ps, ps, PROT_READ);
        munmap(p, n * ps);
        atomic_fetch_add(&churn_ops, 1);
    }
    return NULL;
}

/* Four threads map, touch, split and unmap memory in a tight loop while the main thread takes
 * snapshots of the process at every depth: no crash, every result OK (the process is alive) or
 * MEMDIFF_ECHANGED, every OK snapshot consistent, and memdiff's storage back to where it was. */
START_TEST(threads_map_and_unmap)
{
    uint64_t base = own_bytes();
    atomic_store(&churn_stop, 0);
    pthread_t t[CHURN_THREADS];
    for (int i = 0; i < CHURN_THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1)), 0);
    int ok = 0, changed = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        memdiff_snapshot *a = NULL, *b = NULL;
        memdiff_depth depth = (memdiff_depth)((ok + changed) % 3);
        int rc = memdiff_snapshot_self(depth, &a);
        if (rc == MEMDIFF_ECHANGED) {
            changed++;
            ck_assert_ptr_null(a);
            ck_assert_msg(memdiff_last_error()[0] != '\0', "MEMDIFF_ECHANGED without detail");
        } else {
            ck_assert_msg(rc == MEMDIFF_OK, "snapshot (%s): %s: %s", memdiff_depth_name(depth),
                          memdiff_status_name(rc), memdiff_last_error());
            const char *bad = inconsistency(a);
            ck_assert_msg(bad == NULL, "snapshot %d (%s): %s", ok, memdiff_depth_name(depth),
                          bad);
            ok++;
            /* A compare of two racing snapshots works too. */
            if (memdiff_snapshot_self(depth, &b) == MEMDIFF_OK) {
                memdiff_diff *d = NULL;
                ck_assert_int_eq(memdiff_compare(a, b, ok % 2 ? MEMDIFF_COMPARE_VERBOSE : 0, &d),
                                 MEMDIFF_OK);
                memdiff_diff_free(d);
            }
            memdiff_snapshot_free(b);
            memdiff_snapshot_free(a);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < 4000);
    atomic_store(&churn_stop, 1);
    for (int i = 0; i < CHURN_THREADS; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_gt(ok, 0);
    ck_assert_uint_eq(own_bytes(), base);
    printf("faults: %d consistent snapshots (%d MEMDIFF_ECHANGED) against %ld map/unmap cycles "
           "of %d threads\n", ok, changed, atomic_load(&churn_ops), CHURN_THREADS);
}
END_TEST

/* ---- no frame numbers -------------------------------------------------------------------- */

static const char *degraded_as_nobody(void *arg)
{
    (void)arg;
    static char msg[512];
    memdiff_snapshot *a = NULL, *b = NULL;
    int rc = memdiff_snapshot_self(MEMDIFF_DEPTH_DEEP, &a);
    if (rc == MEMDIFF_OK)
        rc = memdiff_snapshot_self(MEMDIFF_DEPTH_DEEP, &b);
    if (rc != MEMDIFF_OK) {
        snprintf(msg, sizeof msg, "snapshot as nobody: %s: %s", memdiff_status_name(rc),
                 memdiff_last_error());
        return msg;
    }
    memdiff_snapshot_info info;
    memdiff_snapshot_get_info(a, &info);
    const char *why = NULL;
    if (info.depth_requested != MEMDIFF_DEPTH_DEEP || info.depth != MEMDIFF_DEPTH_STANDARD)
        why = "deep was not degraded to standard";
    else if (!info.degraded || !strstr(info.degraded, "CAP_SYS_ADMIN"))
        why = "the reason does not name CAP_SYS_ADMIN";
    else if (info.sources & (MEMDIFF_SRC_FRAMES | MEMDIFF_SRC_PAGE_FLAGS | MEMDIFF_SRC_MAP_COUNTS))
        why = "frame sources recorded without frames";
    else if (!(info.sources & MEMDIFF_SRC_PAGES))
        why = "pagemap (exclusivity) is missing";
    else if (a->frames.present || a->kflags.present || a->mapcount.present)
        why = "per-page frame arrays stored";
    else if (info.private_bytes == 0)
        why = "no private pages: exclusivity was not read";
    if (!why) {
        memdiff_diff *d = NULL;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (memdiff_compare(a, b, 0, &d) != MEMDIFF_OK || !f ||
            memdiff_report_text(d, f, 0) != MEMDIFF_OK)
            why = "compare or report failed";
        if (f)
            fclose(f);
        if (!why && (!text || !strstr(text, info.degraded))) {
            snprintf(msg, sizeof msg, "the text report does not say '%s':\n%s", info.degraded,
                     text ? text : "");
            why = msg;
        }
        free(text);
        memdiff_diff_free(d);
    }
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    return why;
}

/* A caller that may not read frame numbers (kpageflags, kpagecount, pagemap's PFN field) asks
 * for deep: it gets standard depth, recorded (depth, sources, degraded) and reported. */
START_TEST(frames_unreadable)
{
    const char *err = scn_as_nobody(degraded_as_nobody, NULL);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
}
END_TEST

/* ---- allocation failure --------------------------------------------------------------------- */

/* Fails the nth allocation of fn for n = 1, 2, ... until fn succeeds: every failure is
 * MEMDIFF_ENOMEM with a detail and leaves memdiff's storage as it was. Returns how many
 * allocations fn needed. */
static long fail_each(int (*fn)(void *ctx), void *ctx, const char *what)
{
    uint64_t base = own_bytes();
    for (long n = 1; n < 100000; n++) {
        memdiff__test_fail_alloc_after(n);
        int rc = fn(ctx);
        memdiff__test_fail_alloc_after(0);
        if (rc == MEMDIFF_OK)
            return n - 1;
        ck_assert_msg(rc == MEMDIFF_ENOMEM, "%s, allocation %ld failed: %s (%s), want ENOMEM",
                      what, n, memdiff_status_name(rc), memdiff_last_error());
        ck_assert_msg(memdiff_last_error()[0] != '\0', "%s, allocation %ld: no detail", what, n);
        uint64_t now = own_bytes();
        ck_assert_msg(now == base, "%s, allocation %ld failed: %llu bytes of memdiff storage "
                      "left behind", what, n, (unsigned long long)(now - base));
    }
    ck_abort_msg("%s never succeeded", what);
    return 0;
}

typedef struct snap_ctx {
    memdiff_options o;
} snap_ctx;

static int snap_and_free(void *ctx)
{
    snap_ctx *c = ctx;
    memdiff_snapshot *s = (memdiff_snapshot *)c; /* must come back NULL on failure */
    int rc = memdiff_snapshot_take(&c->o, &s);
    if (rc != MEMDIFF_OK)
        ck_assert_ptr_null(s);
    memdiff_snapshot_free(s);
    return rc;
}

typedef struct compare_ctx {
    const memdiff_snapshot *a, *b;
    unsigned flags;
} compare_ctx;

static int compare_and_free(void *ctx)
{
    compare_ctx *c = ctx;
    memdiff_diff *d = (memdiff_diff *)c;
    int rc = memdiff_compare(c->a, c->b, c->flags, &d);
    if (rc != MEMDIFF_OK)
        ck_assert_ptr_null(d);
    memdiff_diff_free(d);
    return rc;
}

START_TEST(allocation_failure_everywhere)
{
    uint64_t base = own_bytes();
    /* Some memory to compare: pages that appear between the two snapshots. */
    char *p = scn_map(32, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (memdiff_depth depth = MEMDIFF_DEPTH_FAST; depth <= MEMDIFF_DEPTH_DEEP; depth++) {
        snap_ctx sc;
        memdiff_options_init(&sc.o);
        sc.o.depth = depth;
        char what[64];
        snprintf(what, sizeof what, "self snapshot (%s)", memdiff_depth_name(depth));
        long n = fail_each(snap_and_free, &sc, what);
        ck_assert_int_gt(n, 0);
        printf("faults: %s: each of its %ld allocations failed in turn, cleanly\n", what, n);

        memdiff_snapshot *a = scn_snap(depth);
        memset(p, 1, 16 * scn_page());
        memdiff_snapshot *b = scn_snap(depth);
        for (unsigned flags = 0; flags <= MEMDIFF_COMPARE_VERBOSE; flags++) {
            compare_ctx cc = {a, b, flags};
            snprintf(what, sizeof what, "compare (%s%s)", memdiff_depth_name(depth),
                     flags ? ", verbose" : "");
            n = fail_each(compare_and_free, &cc, what);
            ck_assert_int_gt(n, 0);
            printf("faults: %s: each of its %ld allocations failed in turn, cleanly\n", what, n);
        }
        memdiff_snapshot_free(b);
        memdiff_snapshot_free(a);
        madvise(p, 32 * scn_page(), MADV_DONTNEED);
    }
    scn_unmap(p, 32);
    ck_assert_uint_eq(own_bytes(), base);
}
END_TEST

/* The same for another process: its modules, heaps and threads are read too. */
START_TEST(allocation_failure_other_process)
{
    int fds[2], ready[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(pipe(ready), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[1]);
        void *big = malloc(1 << 20); /* an mmapped chunk */
        if (big)
            memset(big, 1, 1 << 20);
        (void)!write(ready[1], "r", 1);
        char b;
        (void)!read(fds[0], &b, 1);
        _exit(big != NULL ? 0 : 1);
    }
    close(fds[0]);
    close(ready[1]);
    char b;
    ck_assert_int_eq(read(ready[0], &b, 1), 1);
    close(ready[0]);
    snap_ctx sc;
    memdiff_options_init(&sc.o);
    sc.o.pid = pid;
    sc.o.depth = MEMDIFF_DEPTH_DEEP;
    long n = fail_each(snap_and_free, &sc, "snapshot by pid (deep)");
    ck_assert_int_gt(n, 0);
    printf("faults: snapshot by pid (deep): each of its %ld allocations failed in turn, cleanly\n",
           n);
    close(fds[1]);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}
END_TEST

Suite *faults_suite(void)
{
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("Races");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, target_exits_during_snapshots);
    tcase_add_test(tc, threads_map_and_unmap);
    suite_add_tcase(s, tc);
    tc = tcase_create("Degraded");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, frames_unreadable);
    suite_add_tcase(s, tc);
    tc = tcase_create("Allocation");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, allocation_failure_everywhere);
    tcase_add_test(tc, allocation_failure_other_process);
    suite_add_tcase(s, tc);
    return s;
}
