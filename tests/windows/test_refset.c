/*
 * test_refset.c - reference-set brackets and working-set sizes on Windows (platform/windows/
 * refset.c): EmptyWorkingSet at begin, the working set faulted back by the end as the touched
 * pages, PeakWorkingSetSize (not resettable), and wss samples from QueryWorkingSet.
 *
 * Wine's EmptyWorkingSet succeeds and trims nothing, so there every resident page counts as
 * touched; the exact counts are asserted on Windows only.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <string.h>

#include "wintest.h"

enum { PAGES = 64, K = 8 };

static void test_refset_bracket(void)
{
    uint64_t ps = wintest_page();
    volatile char *p = VirtualAlloc(NULL, PAGES * ps, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    REQUIRE(p != NULL);
    for (uint64_t i = 0; i < PAGES; i++)
        p[i * ps] = 1;
    memdiff_refset *rs = NULL;
    memdiff_diff *d = NULL;
    REQUIRE_OK(memdiff_refset_begin(NULL, &rs));
    unsigned sum = 0;
    for (uint64_t i = 0; i < K; i++)
        sum += (unsigned char)p[(1 + 2 * i) * ps]; /* K pages read */
    for (uint64_t i = 0; i < K; i++)
        p[(40 + i) * ps] = (char)sum;              /* K others written */
    int rc = memdiff_refset_end(rs, 0, &d);
    memdiff_refset_free(rs);
    REQUIRE_OK(rc);

    memdiff_refset_info in;
    REQUIRE_OK(memdiff_diff_refset_info(d, &in));
    CHECK(in.sources & MEMDIFF_REFS_CLEARED);
    CHECK(in.sources & MEMDIFF_REFS_PAGES);
    CHECK(in.degraded && strstr(in.degraded, "PeakWorkingSetSize"));
    CHECK_EQ(in.peak_slack_bytes, 0);
    const memdiff_block *k = wintest_block_at(d, (uint64_t)(uintptr_t)p, MEMDIFF_CAT_PRIVATE);
    if (!CHECK(k != NULL)) {
        wintest_dump(d);
    } else {
        memdiff_impact m;
        REQUIRE_OK(memdiff_diff_block_impact(d, (size_t)(k - memdiff_diff_block(d, 0)), &m));
        CHECK_EQ(k->totals.new_bytes, 0);
        CHECK(m.touched_bytes >= 2 * K * ps && m.touched_bytes <= PAGES * ps);
        if (!wintest_under_wine()) {
            /* The working set was emptied: what came back is what the test touched, and the
             * rest of the allocation shows as discarded. */
            CHECK_EQ(m.touched_bytes, 2 * K * ps);
            CHECK_EQ(k->totals.freed_discarded_bytes, (PAGES - 2 * K) * ps);
        }
    }
    memdiff_diff_free(d);
    VirtualFree((void *)p, 0, MEM_RELEASE);
}

static void test_wss_samples(void)
{
    memdiff_wss_options o = MEMDIFF_WSS_OPTIONS_INIT;
    o.mode = MEMDIFF_WSS_CUMULATIVE;
    o.interval_ns = 10000000;
    o.count = 2;
    memdiff_wss_sample s[2];
    size_t n = 0;
    REQUIRE_OK(memdiff_wss_measure(&o, s, 2, &n));
    CHECK_EQ(n, 2);
    for (size_t i = 0; i < n; i++) {
        CHECK(s[i].rss_bytes > 0);
        CHECK(s[i].referenced_bytes <= s[i].rss_bytes);
        CHECK(s[i].pss_bytes <= s[i].rss_bytes);
        CHECK(s[i].slept_ns >= (i + 1) * o.interval_ns);
        CHECK_EQ(s[i].span_ns, s[i].duration_ns - s[i].clear_ns / 2 - s[i].read_ns / 2);
    }
}

const wintest_case wintest_refset_cases[] = {
    {"refset_bracket", test_refset_bracket},
    {"wss_samples", test_wss_samples},
    {NULL, NULL},
};
