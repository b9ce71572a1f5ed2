/*
 * test_noise.c - noise control on real code in this process: the leak-slope helper finds leaks
 * of known sizes and sees none in code that frees what it takes; one-time growth has no slope;
 * settling gives freed heap memory back; leak-free assertions hold 100 times in a row.
 *
 * Tolerances, and why (glibc malloc, 4 KiB pages; the figure is net bytes over all categories):
 *  - 4 KiB a call: malloc(4096) takes a 4,112-byte chunk from the brk heap and the test writes
 *    it; the slope is 4 KiB within one page.
 *  - 1 MiB a call: above M_MMAP_THRESHOLD each block is a mapping of its own, 1 MiB plus the
 *    page that holds malloc's header; the slope is 1 MiB within two pages.
 *  - 512 bytes a call: 528-byte chunks, a new page every 7.8 calls; over 256 calls the slope is
 *    512 within 64 bytes.
 *  - Leak-free code (the same sizes freed again): under 64 bytes a call; memory retained once
 *    (a static cache filled on the first call) likewise, whether or not the warm-up caught it.
 * Under AddressSanitizer the figures carry the sanitizer's own memory: redzones and shadow
 * pages for every block, shadow for every mapping memdiff makes and unmaps, blocks held in
 * quarantine instead of reused, allocator regions that are not glibc's heap (category Private).
 * There the leak tolerances widen (to the block's size and a half, plus two pages) and the
 * leak-free tests, which would measure the sanitizer, are skipped: memory tests belong in a
 * build without sanitizers (docs/testing-with-memdiff.md). Set MEMDIFF_NOISE_VERBOSE=1 to
 * print each slope.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memdiff_check.h"
#include "scenario_util.h"
#include "suites.h"

enum { PAGE = 4096, KEPT_MAX = 4096 };

/* What the leaky functions keep, freed by the teardown (LeakSanitizer checks at exit). The array
 * is written once in the setup, so that its own pages are resident before any measurement. */
static void *kept[KEPT_MAX];
static size_t nkept;
static void *volatile sink; /* keeps the compiler from eliding a malloc/free pair */

static void setup(void)
{
    memset(kept, 0, sizeof kept);
    nkept = 0;
    scn_page_in_program();
}

static void teardown(void)
{
    for (size_t i = 0; i < nkept; i++)
        free(kept[i]);
    nkept = 0;
}

static void leak(void *arg)
{
    size_t n = *(const size_t *)arg;
    char *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    memset(p, 0xA5, n);
    ck_assert_uint_lt(nkept, KEPT_MAX);
    kept[nkept++] = p;
}

static void no_leak(void *arg)
{
    size_t n = *(const size_t *)arg;
    char *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    memset(p, 0x5A, n);
    sink = p;
    free(sink);
}

/* A cache filled on the first call and kept: growth once, never again. */
static char *once_cache;
static void fill_once(void *arg)
{
    (void)arg;
    if (!once_cache) {
        once_cache = malloc(64 * 1024);
        ck_assert_ptr_nonnull(once_cache);
        memset(once_cache, 1, 64 * 1024);
        kept[nkept++] = once_cache;
    }
    sink = once_cache;
}

static memdiff_slope slope_of(void (*fn)(void *), size_t *size, unsigned iterations,
                              unsigned warmup, const char *what)
{
    memdiff_slope_options o = MEMDIFF_SLOPE_OPTIONS_INIT;
    o.iterations = iterations;
    o.warmup = warmup;
    memdiff_slope s;
    memdiff_diff *d = NULL;
    int rc = memdiff_leak_slope(fn, size, &o, &s, &d);
    ck_assert_msg(rc == MEMDIFF_OK, "%s: %s", memdiff_status_name(rc), memdiff_last_error());
    if (getenv("MEMDIFF_NOISE_VERBOSE")) {
        printf("noise: %-22s %8zu bytes a call, %4u calls: slope %12.1f, endpoints %12.1f, "
               "first %+lld, last %+lld\n",
               what, size ? *size : 0, iterations, s.bytes_per_iteration, s.endpoint_slope,
               (long long)s.first, (long long)s.last);
        fflush(stdout);
    }
    memdiff_diff_free(d);
    return s;
}

/* The slope of a leak of size bytes a call is within tol of size (under ASan, between size - tol
 * and size * 1.5 + 2 pages). */
static void expect_leak(size_t size, unsigned iterations, double tol, const char *what)
{
    memdiff_slope s = slope_of(leak, &size, iterations, 1, what);
    double lo = (double)size - tol, hi = (double)size + tol;
    if (UNDER_ASAN)
        hi = (double)size * 1.5 + 2.0 * PAGE;
    ck_assert_msg(s.bytes_per_iteration >= lo && s.bytes_per_iteration <= hi,
                  "%s: slope %.1f bytes a call, want %.0f to %.0f (first %lld, last %lld)", what,
                  s.bytes_per_iteration, lo, hi, (long long)s.first, (long long)s.last);
    ck_assert_uint_eq(s.samples, iterations);
}

/* ---- leaks of known sizes --------------------------------------------------------------- */

START_TEST(leak_of_4k_a_call)
{
    expect_leak(4096, 64, PAGE, "leak 4 KiB");
}
END_TEST

START_TEST(leak_of_1m_a_call)
{
    expect_leak(1024 * 1024, 16, 2 * PAGE, "leak 1 MiB");
}
END_TEST

START_TEST(leak_of_512_bytes_a_call)
{
    expect_leak(512, 256, 64, "leak 512 B");
}
END_TEST

/* The same through the Check macro, as a test would write it: the assertion fails, and its
 * message names the block that grew (ASan's allocator regions are anonymous memory). */
START_TEST(leak_fails_the_slope_assertion_naming_the_heap)
{
    size_t size = 4096;
    char msg[MEMDIFF_CK_MSG_SIZE];
    ck_assert_int_eq(memdiff_ck_slope_le_(leak, &size, 32, 64, msg, sizeof msg), 0);
    ck_assert_msg(strstr(msg, "memdiff check failed: net bytes in all categories grow by") &&
                      strstr(msg, "want <= 64") &&
                      strstr(msg, UNDER_ASAN ? "anonymous" : "[heap]"),
                  "%s", msg);
}
END_TEST

/* ---- leak-free code --------------------------------------------------------------------- */

START_TEST(no_leak_has_no_slope)
{
    if (UNDER_ASAN)
        return; /* it would measure the sanitizer (see the top) */
    static const size_t sizes[] = {512, 4096, 1024 * 1024};
    static const unsigned iterations[] = {256, 64, 16};
    for (size_t i = 0; i < 3; i++) {
        size_t size = sizes[i];
        memdiff_slope s = slope_of(no_leak, &size, iterations[i], 1, "no leak");
        ck_assert_msg(s.bytes_per_iteration <= 64 && s.bytes_per_iteration >= -64,
                      "%zu bytes malloc'd and freed: slope %.1f", size, s.bytes_per_iteration);
        ck_assert_msg(s.last <= PAGE, "%zu: %lld bytes retained", size, (long long)s.last);
        ck_assert_memdiff_slope_le(no_leak, &size, iterations[i], 64);
    }
}
END_TEST

/* A cache filled once: after the warm-up nothing grows; without it the first sample carries the
 * growth, and the slope, fitted from the first sample on, still sees none. */
START_TEST(one_time_growth_has_no_slope)
{
    if (UNDER_ASAN)
        return; /* it would measure the sanitizer (see the top) */
    memdiff_slope s = slope_of(fill_once, NULL, 64, 0, "one-time, no warm-up");
    ck_assert_int_ge(s.first, 64 * 1024);
    ck_assert_msg(s.bytes_per_iteration <= 64 && s.bytes_per_iteration >= -64, "slope %.1f",
                  s.bytes_per_iteration);
    s = slope_of(fill_once, NULL, 64, 1, "one-time, warmed up");
    ck_assert_msg(s.bytes_per_iteration <= 64 && s.bytes_per_iteration >= -64, "slope %.1f",
                  s.bytes_per_iteration);
    ck_assert_int_le(s.last, PAGE);
}
END_TEST

/* The leak-free assertions, 100 times in a row in one process: none may flake. */
START_TEST(leak_free_assertions_hold_100_times)
{
    if (UNDER_ASAN)
        return; /* it would measure the sanitizer (see the top) */
    size_t size = 4096;
    no_leak(&size);
    for (int i = 0; i < 100; i++) {
        memdiff_bracket *b = memdiff_ck_begin();
        for (int k = 0; k < 16; k++)
            no_leak(&size);
        memdiff_diff *d = memdiff_ck_end(b); /* frees the bracket */
        ck_assert_memdiff_net_private_le(d, 0);
        ck_assert_memdiff_no_new(d, MEMDIFF_CAT_HEAP);
        memdiff_diff_free(d);
        ck_assert_memdiff_slope_le(no_leak, &size, 16, 64);
    }
}
END_TEST

/* ---- settling ----------------------------------------------------------------------------- */

/* 1,024 blocks of 1 KiB freed below one that stays: glibc keeps the hole (by itself it trims
 * only the top of the heap); malloc_trim gives its pages back. */
START_TEST(settling_gives_freed_heap_back)
{
    if (UNDER_ASAN)
        return; /* malloc_trim does not manage ASan's allocator */
    enum { N = 1024 };
    static char *blocks[N + 1];
    for (int settle = 0; settle <= 1; settle++) {
        memdiff_bracket_options o = MEMDIFF_BRACKET_OPTIONS_INIT; /* settles by default */
        if (!settle)
            o.flags |= MEMDIFF_BRACKET_NO_SETTLE;
        memdiff_bracket *b = NULL;
        ck_assert_int_eq(memdiff_bracket_begin(&o, &b), MEMDIFF_OK);
        for (int i = 0; i <= N; i++) {
            blocks[i] = malloc(1024);
            ck_assert_ptr_nonnull(blocks[i]);
            memset(blocks[i], 7, 1024);
        }
        /* The last block, carved from the top of the heap after the others, stays: it keeps the
         * hole below it away from the top. */
        for (int i = 0; i < N; i++)
            free(blocks[i]);
        memdiff_diff *d = NULL;
        ck_assert_int_eq(memdiff_bracket_end(b, &d), MEMDIFF_OK);
        memdiff_bracket_free(b);
        int64_t net = 0;
        const memdiff_figure heap_net = {MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_NET, NULL};
        ck_assert_int_eq(memdiff_diff_figure(d, &heap_net, &net), MEMDIFF_OK);
        if (settle)
            ck_assert_memdiff(d, NULL, MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_NET, <=, 2 * PAGE);
        else
            ck_assert_msg(net >= (N - 16) * 1024, "unsettled heap kept only %lld", (long long)net);
        memdiff_diff_free(d);
        kept[nkept++] = blocks[N];
    }
}
END_TEST

/* ---- helpers' contracts ------------------------------------------------------------------- */

static int calls;
static void count_calls(void *arg)
{
    (void)arg;
    calls++;
}

START_TEST(helpers_call_and_refuse_as_documented)
{
    calls = 0;
    ck_assert_int_eq(memdiff_warm_up(count_calls, NULL, 3), MEMDIFF_OK);
    ck_assert_int_eq(calls, 3);
    ck_assert_int_eq(memdiff_warm_up(NULL, NULL, 1), MEMDIFF_EINVAL);

    memdiff_slope_options o = MEMDIFF_SLOPE_OPTIONS_INIT;
    o.warmup = 2;
    o.iterations = 10;
    o.sample_every = 4; /* samples after calls 4, 8 and the last (10) */
    memdiff_slope s;
    memdiff_diff *d = NULL;
    calls = 0;
    ck_assert_int_eq(memdiff_leak_slope(count_calls, NULL, &o, &s, &d), MEMDIFF_OK);
    ck_assert_int_eq(calls, 12);
    ck_assert_uint_eq(s.samples, 3);
    ck_assert_uint_eq(s.iterations, 10);
    ck_assert_uint_eq(s.warmup, 2);
    ck_assert_ptr_nonnull(d);
    memdiff_diff_free(d);

    o.iterations = 1;
    ck_assert_int_eq(memdiff_leak_slope(count_calls, NULL, &o, &s, NULL), MEMDIFF_EINVAL);
    o.iterations = 10;
    o.sample_every = 10;
    ck_assert_int_eq(memdiff_leak_slope(count_calls, NULL, &o, &s, NULL), MEMDIFF_EINVAL);
    o.sample_every = 1;
    o.figure.measure = MEMDIFF_MEASURE_TOUCHED;
    ck_assert_int_eq(memdiff_leak_slope(count_calls, NULL, &o, &s, &d), MEMDIFF_ENOTSUP);
    ck_assert_ptr_null(d);
    o.figure.measure = MEMDIFF_MEASURE_NET;
    /* Slopes are of plain diffs of the calling process: a reference-set bracket is refused as
     * touched and peak are, another process as a bad option. */
    o.bracket.flags = MEMDIFF_BRACKET_REFSET;
    d = (memdiff_diff *)&d;
    ck_assert_int_eq(memdiff_leak_slope(count_calls, NULL, &o, &s, &d), MEMDIFF_ENOTSUP);
    ck_assert_ptr_null(d);
    o.bracket.flags = 0;
    o.bracket.snapshot.pid = (int)getppid();
    d = (memdiff_diff *)&d;
    calls = 0;
    ck_assert_int_eq(memdiff_leak_slope(count_calls, NULL, &o, &s, &d), MEMDIFF_EINVAL);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(calls, 0); /* refused before anything ran */
    o.bracket.snapshot.pid = 0;
    o.bracket.compare_flags = 0x80;
    ck_assert_int_eq(memdiff_leak_slope(count_calls, NULL, &o, &s, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_leak_slope(NULL, NULL, NULL, &s, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_leak_slope(count_calls, NULL, NULL, NULL, NULL), MEMDIFF_EINVAL);

    memdiff_bracket *b = (memdiff_bracket *)&b;
    memdiff_bracket_options bad = MEMDIFF_BRACKET_OPTIONS_INIT;
    bad.snapshot.depth = (memdiff_depth)7;
    ck_assert_int_eq(memdiff_bracket_begin(&bad, &b), MEMDIFF_EINVAL);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(memdiff_bracket_begin(NULL, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_bracket_begin(NULL, &b), MEMDIFF_OK);
    ck_assert_ptr_nonnull(b);
    /* A refused end leaves the bracket as it was: it ends later, once, and stays to be freed. */
    ck_assert_int_eq(memdiff_bracket_end(b, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_bracket_end(b, &d), MEMDIFF_OK);
    ck_assert_ptr_nonnull(d);
    memdiff_diff_free(d);
    d = (memdiff_diff *)&d;
    ck_assert_int_eq(memdiff_bracket_end(b, &d), MEMDIFF_EINVAL); /* ended already */
    ck_assert_ptr_null(d);
    memdiff_bracket_free(b);
    d = (memdiff_diff *)&d;
    ck_assert_int_eq(memdiff_bracket_end(NULL, &d), MEMDIFF_EINVAL);
    ck_assert_ptr_null(d);
    memdiff_bracket_free(NULL);
    memdiff_settle_heap();
}
END_TEST

Suite *noise_suite(void)
{
    Suite *s = suite_create("noise");
    TCase *leaks = tcase_create("leaks");
    tcase_add_checked_fixture(leaks, setup, teardown);
    tcase_set_timeout(leaks, 120);
    tcase_add_test(leaks, leak_of_4k_a_call);
    tcase_add_test(leaks, leak_of_1m_a_call);
    tcase_add_test(leaks, leak_of_512_bytes_a_call);
    tcase_add_test(leaks, leak_fails_the_slope_assertion_naming_the_heap);
    suite_add_tcase(s, leaks);
    TCase *clean = tcase_create("leak-free");
    tcase_add_checked_fixture(clean, setup, teardown);
    tcase_set_timeout(clean, 120);
    tcase_add_test(clean, no_leak_has_no_slope);
    tcase_add_test(clean, one_time_growth_has_no_slope);
    tcase_add_test(clean, leak_free_assertions_hold_100_times);
    tcase_add_test(clean, settling_gives_freed_heap_back);
    tcase_add_test(clean, helpers_call_and_refuse_as_documented);
    suite_add_tcase(s, clean);
    return s;
}
