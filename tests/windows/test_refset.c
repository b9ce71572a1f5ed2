/*
 * test_refset.c - reference-set brackets (memdiff_bracket_* with MEMDIFF_BRACKET_REFSET) and
 * working-set sizes on Windows (platform/windows/refset.c): EmptyWorkingSet at begin, the
 * working set faulted back by the end as the touched pages, PeakWorkingSetSize (not
 * resettable), and wss samples from QueryWorkingSet. A bracket on the calling process settles
 * the heaps (HeapCompact) and warms up before its before snapshot; neither touches the
 * VirtualAlloc'd memory measured here, so the bracket settles as by default.
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
    memdiff_bracket_options bo = MEMDIFF_BRACKET_OPTIONS_INIT;
    bo.flags = MEMDIFF_BRACKET_REFSET;
    memdiff_bracket *b = NULL;
    memdiff_diff *d = NULL;
    REQUIRE_OK(memdiff_bracket_begin(&bo, &b));
    unsigned sum = 0;
    for (uint64_t i = 0; i < K; i++)
        sum += (unsigned char)p[(1 + 2 * i) * ps]; /* K pages read */
    for (uint64_t i = 0; i < K; i++)
        p[(40 + i) * ps] = (char)sum;              /* K others written */
    int rc = memdiff_bracket_end(b, &d);
    memdiff_bracket_free(b);
    REQUIRE_OK(rc);

    memdiff_diff_info di;
    REQUIRE_OK(memdiff_diff_get_info(d, &di));
    const memdiff_refset_info in = di.refset;
    CHECK(in.sources & MEMDIFF_REFS_CLEARED);
    CHECK(in.sources & MEMDIFF_REFS_PAGES);
    CHECK(in.degraded && strstr(in.degraded, "PeakWorkingSetSize"));
    CHECK_EQ(in.peak_slack_bytes, 0);
    memdiff_block k;
    if (!CHECK(wintest_block_at(d, (uint64_t)(uintptr_t)p, MEMDIFF_CAT_PRIVATE, &k))) {
        wintest_dump(d);
    } else {
        const memdiff_impact m = k.impact;
        CHECK_EQ(k.totals.new_bytes, 0);
        CHECK(m.touched_bytes >= 2 * K * ps && m.touched_bytes <= PAGES * ps);
        if (!wintest_under_wine()) {
            /* The working set was emptied: what came back is what the test touched, and the
             * rest of the allocation shows as discarded. */
            CHECK_EQ(m.touched_bytes, 2 * K * ps);
            CHECK_EQ(k.totals.freed_discarded_bytes, (PAGES - 2 * K) * ps);
        }
    }
    memdiff_diff_free(d);
    VirtualFree((void *)p, 0, MEM_RELEASE);
}

/* The same bracket without MEMDIFF_BRACKET_REFSET is a plain one: its info and its diff's
 * reference-set info are all 0, the diff has no impact, and it ends once. */
static void test_plain_bracket(void)
{
    memdiff_bracket *b = NULL;
    memdiff_diff *d = NULL, *again = NULL;
    REQUIRE_OK(memdiff_bracket_begin(NULL, &b));
    memdiff_refset_info in;
    memset(&in, 0xa5, sizeof in);
    CHECK_EQ(memdiff_bracket_get_info(b, &in), MEMDIFF_OK);
    CHECK_EQ(in.sources, 0);
    CHECK(in.degraded == NULL);
    CHECK_EQ(in.begin_rss_bytes, 0);
    int rc = memdiff_bracket_end(b, &d);
    CHECK_EQ(memdiff_bracket_end(b, &again), (uint64_t)MEMDIFF_EINVAL);
    CHECK(again == NULL);
    memdiff_bracket_free(b);
    REQUIRE_OK(rc);
    memdiff_diff_info di;
    memset(&di, 0xa5, sizeof di);
    CHECK_EQ(memdiff_diff_get_info(d, &di), MEMDIFF_OK);
    CHECK_EQ(di.refset.sources, 0);
    CHECK(di.refset.degraded == NULL);
    CHECK_EQ(di.refset.peak_bytes, 0);
    CHECK_EQ(di.refset.transient_bytes, 0);
    CHECK_EQ(di.after.pid, GetCurrentProcessId());
    memdiff_impact m;
    CHECK_EQ(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &m), (uint64_t)MEMDIFF_EINVAL);
    memdiff_diff_free(d);
}

/* Fixture roots name recorded Linux trees: a bracket and a wss run refuse one on Windows, as a
 * snapshot does (test_scenarios.c, self_facts), rather than measure the live process instead. */
static void test_fixture_root_refused(void)
{
    memdiff_bracket_options bo = MEMDIFF_BRACKET_OPTIONS_INIT;
    bo.snapshot.fixture_root = "C:\\fixture";
    bo.flags = MEMDIFF_BRACKET_REFSET;
    memdiff_bracket *b = (memdiff_bracket *)&bo;
    CHECK_EQ(memdiff_bracket_begin(&bo, &b), (uint64_t)MEMDIFF_ENOTSUP);
    CHECK(b == NULL);
    CHECK(strstr(memdiff_last_error(), "fixture_root") != NULL); /* the public field's name */
    bo.flags = 0;
    b = (memdiff_bracket *)&bo;
    CHECK_EQ(memdiff_bracket_begin(&bo, &b), (uint64_t)MEMDIFF_ENOTSUP);
    CHECK(b == NULL);

    memdiff_wss_options o = MEMDIFF_WSS_OPTIONS_INIT;
    o.fixture_root = "C:\\fixture";
    memdiff_wss_sample s[1];
    size_t n = 5;
    CHECK_EQ(memdiff_wss_measure(&o, s, 1, &n), (uint64_t)MEMDIFF_ENOTSUP);
    CHECK_EQ(n, 0);
    CHECK(strstr(memdiff_last_error(), "fixture_root") != NULL);
}

/* PSS per mapping: Windows has no exact figure (share counts stop at 7), so a snapshot asked
 * for it succeeds without it, PSS unknown (0), and says why in degraded. */
static void test_smaps_pss_unsupported(void)
{
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.flags = MEMDIFF_SNAPSHOT_SMAPS_PSS;
    memdiff_snapshot *s = NULL;
    REQUIRE_OK(memdiff_snapshot_take(&o, &s));
    memdiff_snapshot_info in;
    REQUIRE_OK(memdiff_snapshot_get_info(s, &in));
    CHECK_EQ(in.sources & (MEMDIFF_SRC_PSS | MEMDIFF_SRC_PSS_MAPPINGS), 0);
    CHECK_EQ(in.pss_bytes, 0);
    CHECK(in.degraded != NULL &&
          strstr(in.degraded, "PSS per mapping: Windows gives no exact figure") != NULL);
    memdiff_region r;
    REQUIRE_OK(memdiff_snapshot_region(s, 0, &r));
    CHECK_EQ(r.pss_bytes, 0);
    CHECK_EQ(r.pss_end, 0);
    memdiff_snapshot_free(s);
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
    {"plain_bracket", test_plain_bracket},
    {"fixture_root_refused", test_fixture_root_refused},
    {"smaps_pss_unsupported", test_smaps_pss_unsupported},
    {"wss_samples", test_wss_samples},
    {NULL, NULL},
};
