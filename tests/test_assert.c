/*
 * test_assert.c - the assertion core on synthetic diffs (tests/synth.h): every measure of every
 * category against the diff's own totals, every comparison, filters, labelled blocks, slopes,
 * the failure messages (what they name, their order, their truncation in small buffers) and the
 * Check macros of memdiff_check.h, failing ones included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memdiff_check.h"
#include "suites.h"
#include "synth.h"

#define PG ((int64_t)SYNTH_PAGE)
#define PRES MEMDIFF_PAGE_PRESENT
#define PRIV MEMDIFF_PAGE_PRIVATE
#define FILEPG MEMDIFF_PAGE_FILE

#define HEAP 0x10000000u
#define ANON 0x20000000u
#define FILEMAP 0x7f1000000000u
#define LIBFOO 0x7f2000000000u
#define LIBBAR 0x7f2000100000u
#define OWNMAP 0x7f3000000000u
#define STACK 0x7ffd00000000u

/* The scenario, in pages:
 *   heap [heap]            8 new private, 2 discarded        net +6
 *   private anonymous      4 unmapped (before only)          net -4
 *   mapped-file /data/a    5 new shared (after only)         net +5
 *   image libfoo           3 new shared code, 1 new bss      net +4
 *   image libbar           2 code pages discarded            net -2
 *   stack thread 4242      2 new private                     net +2
 *   own memdiff            3 new (outside every total)
 * All but Own: new 19 (11 private, 8 shared), freed 8, net +11. */
static const synth_region regs_before[] = {
    {HEAP, HEAP + 32 * SYNTH_PAGE, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
    {ANON, ANON + 8 * SYNTH_PAGE, MEMDIFF_CAT_PRIVATE, "anonymous", ANON, 0, 0, 0, 0},
    {LIBFOO, LIBFOO + 8 * SYNTH_PAGE, MEMDIFF_CAT_IMAGE, "/usr/lib/libfoo.so.1", LIBFOO,
     MEMDIFF_REGION_FILE, 0x801, 21, 0},
    {LIBBAR, LIBBAR + 4 * SYNTH_PAGE, MEMDIFF_CAT_IMAGE, "/usr/lib/libbar.so", LIBBAR,
     MEMDIFF_REGION_FILE, 0x801, 22, 0},
    {STACK, STACK + 16 * SYNTH_PAGE, MEMDIFF_CAT_STACK, "thread 4242", 4242, 0, 0, 0, 0},
};
static const synth_run runs_before[] = {
    {HEAP, 4, PRES | PRIV},
    {HEAP + 20 * SYNTH_PAGE, 2, PRES | PRIV},
    {ANON, 4, PRES | PRIV},
    {LIBBAR, 2, PRES | FILEPG},
    {STACK + 14 * SYNTH_PAGE, 2, PRES | PRIV},
};
static const synth_region regs_after[] = {
    {HEAP, HEAP + 32 * SYNTH_PAGE, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
    {FILEMAP, FILEMAP + 8 * SYNTH_PAGE, MEMDIFF_CAT_MAPPED_FILE, "/data/a.bin", FILEMAP,
     MEMDIFF_REGION_FILE, 0x801, 11, 0},
    {LIBFOO, LIBFOO + 8 * SYNTH_PAGE, MEMDIFF_CAT_IMAGE, "/usr/lib/libfoo.so.1", LIBFOO,
     MEMDIFF_REGION_FILE, 0x801, 21, 0},
    {LIBBAR, LIBBAR + 4 * SYNTH_PAGE, MEMDIFF_CAT_IMAGE, "/usr/lib/libbar.so", LIBBAR,
     MEMDIFF_REGION_FILE, 0x801, 22, 0},
    {OWNMAP, OWNMAP + 4 * SYNTH_PAGE, MEMDIFF_CAT_OWN, "memdiff", OWNMAP, 0, 0, 0, 0},
    {STACK, STACK + 16 * SYNTH_PAGE, MEMDIFF_CAT_STACK, "thread 4242", 4242, 0, 0, 0, 0},
};
static const synth_run runs_after[] = {
    {HEAP, 12, PRES | PRIV},
    {FILEMAP, 5, PRES | FILEPG},
    {LIBFOO, 3, PRES | FILEPG},
    {LIBFOO + 6 * SYNTH_PAGE, 1, PRES | PRIV},
    {OWNMAP, 3, PRES | PRIV},
    {STACK + 12 * SYNTH_PAGE, 4, PRES | PRIV},
};

#define SPEC(regs, runs_)                                                                  \
    ((synth_spec){.regions = (regs), .region_count = SYNTH_COUNT(regs), .runs = (runs_), \
                  .run_count = SYNTH_COUNT(runs_)})

static memdiff_diff *scenario(unsigned flags)
{
    memdiff_snapshot *b = synth_snapshot(&SPEC(regs_before, runs_before));
    memdiff_snapshot *a = synth_snapshot(&SPEC(regs_after, runs_after));
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(a);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(b, a, flags, &d), MEMDIFF_OK);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
    return d;
}

static int64_t figure(const memdiff_diff *d, const memdiff_filter *f, memdiff_category c,
                      memdiff_measure m)
{
    const memdiff_figure fig = {c, m, f};
    int64_t v = -12345;
    ck_assert_int_eq(memdiff_diff_figure(d, &fig, &v), MEMDIFF_OK);
    return v;
}

/* memdiff_check() of the figure {c, m, f}: the figure spelt out at every call, as the tests were
 * written before the figure was one struct. */
static int check_figure(const memdiff_diff *d, const memdiff_filter *f, memdiff_category c,
                       memdiff_measure m, memdiff_cmp cmp, int64_t bound, char *msg,
                       size_t msg_size)
{
    const memdiff_figure fig = {c, m, f};
    return memdiff_check(d, &fig, cmp, bound, msg, msg_size);
}

/* memdiff_check_label() of the unfiltered figure {c, m}. */
static int check_label(const memdiff_diff *d, memdiff_category c, const char *pattern,
               memdiff_match match, memdiff_measure m, int64_t min_bytes, char *msg,
               size_t msg_size)
{
    const memdiff_figure fig = {c, m, NULL};
    return memdiff_check_label(d, &fig, pattern, match, min_bytes, msg, msg_size);
}

/* Fails unless needle occurs in hay; returns where. */
static const char *expect_in(const char *hay, const char *needle)
{
    const char *p = strstr(hay, needle);
    ck_assert_msg(p != NULL, "\"%s\" not in the message:\n%s", needle, hay);
    return p;
}

static void expect_start(const char *msg, const char *start)
{
    ck_assert_msg(strncmp(msg, start, strlen(start)) == 0, "the message does not start with "
                  "\"%s\":\n%s", start, msg);
}

static void expect_not_in(const char *hay, const char *needle)
{
    ck_assert_msg(strstr(hay, needle) == NULL, "\"%s\" in the message:\n%s", needle, hay);
}

/* ---- names ------------------------------------------------------------------------------ */

START_TEST(names_and_symbols)
{
    ck_assert_str_eq(memdiff_measure_name(MEMDIFF_MEASURE_NEW), "new");
    ck_assert_str_eq(memdiff_measure_name(MEMDIFF_MEASURE_NET_PRIVATE), "net private");
    ck_assert_str_eq(memdiff_measure_name(MEMDIFF_MEASURE_PEAK), "peak");
    ck_assert_str_eq(memdiff_measure_name(MEMDIFF_MEASURE_COUNT), "invalid");
    static const char *const symbols[] = {"<=", "<", "==", "!=", ">=", ">"};
    for (int c = MEMDIFF_CMP_LE; c <= MEMDIFF_CMP_GT; c++) {
        ck_assert_str_eq(memdiff_cmp_symbol((memdiff_cmp)c), symbols[c]);
        memdiff_cmp parsed = MEMDIFF_CMP_GT;
        char spaced[8];
        snprintf(spaced, sizeof spaced, " %s\t", symbols[c]);
        ck_assert_int_eq(memdiff_cmp_parse(symbols[c], &parsed), MEMDIFF_OK);
        ck_assert_int_eq(parsed, c);
        ck_assert_int_eq(memdiff_cmp_parse(spaced, &parsed), MEMDIFF_OK);
        ck_assert_int_eq(parsed, c);
    }
    ck_assert_str_eq(memdiff_cmp_symbol((memdiff_cmp)6), "?");
    memdiff_cmp parsed;
    static const char *const bad[] = {"", "=", "=<", "<<", "<= =", "le", "==="};
    for (size_t i = 0; i < SYNTH_COUNT(bad); i++)
        ck_assert_int_eq(memdiff_cmp_parse(bad[i], &parsed), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_cmp_parse(NULL, &parsed), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_cmp_parse("<", NULL), MEMDIFF_EINVAL);
}
END_TEST

/* ---- figures ---------------------------------------------------------------------------- */

START_TEST(figures_of_the_scenario)
{
    memdiff_diff *d = scenario(0);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NEW), 19 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_FREED), 8 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET), 11 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_PRIVATE), 11 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_SHARED), 8 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET_PRIVATE), 3 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_NET), 6 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_FREED), 2 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_NEW), 4 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_SHARED), 3 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_NET_PRIVATE), -1 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_PRIVATE, MEMDIFF_MEASURE_NET), -4 * PG);
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_SHARED, MEMDIFF_MEASURE_NEW), 0);
    /* Own has no blocks: its category totals. */
    ck_assert_int_eq(figure(d, NULL, MEMDIFF_CAT_OWN, MEMDIFF_MEASURE_NEW), 3 * PG);
    memdiff_diff_free(d);
}
END_TEST

/* Every measure of every category and of all agrees with the diff's totals, in both modes. */
START_TEST(figures_agree_with_totals)
{
    for (unsigned flags = 0; flags <= MEMDIFF_COMPARE_VERBOSE; flags++) {
        memdiff_diff *d = scenario(flags);
        for (int c = 0; c <= MEMDIFF_CAT_ALL; c++) {
            memdiff_totals t;
            ck_assert_int_eq(memdiff_diff_totals(d, (memdiff_category)c, &t), MEMDIFF_OK);
            const int64_t want[] = {
                (int64_t)t.new_bytes,         (int64_t)t.freed_bytes,
                t.net_bytes,                  (int64_t)t.new_private_bytes,
                (int64_t)t.new_shared_bytes,  (int64_t)t.new_private_bytes - (int64_t)t.freed_bytes,
            };
            for (int m = 0; m < (int)SYNTH_COUNT(want); m++)
                ck_assert_int_eq(figure(d, NULL, (memdiff_category)c, (memdiff_measure)m),
                                 want[m]);
        }
        memdiff_diff_free(d);
    }
}
END_TEST

START_TEST(figure_errors)
{
    memdiff_diff *d = scenario(0);
    int64_t v = 77;
    memdiff_figure fig = MEMDIFF_FIGURE_INIT;
    ck_assert_int_eq(memdiff_diff_figure(NULL, &fig, &v), MEMDIFF_EINVAL);
    ck_assert_int_eq(v, 0);
    v = 77;
    ck_assert_int_eq(memdiff_diff_figure(NULL, NULL, &v), MEMDIFF_EINVAL);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(memdiff_diff_figure(d, &fig, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_diff_figure(d, NULL, NULL), MEMDIFF_EINVAL);
    fig.category = (memdiff_category)(MEMDIFF_CAT_ALL + 1);
    ck_assert_int_eq(memdiff_diff_figure(d, &fig, &v), MEMDIFF_EINVAL);
    fig.category = MEMDIFF_CAT_ALL;
    fig.measure = MEMDIFF_MEASURE_COUNT;
    ck_assert_int_eq(memdiff_diff_figure(d, &fig, &v), MEMDIFF_EINVAL);
    /* Reserved for reference sets: refused, and said why. */
    fig.measure = MEMDIFF_MEASURE_TOUCHED;
    ck_assert_int_eq(memdiff_diff_figure(d, &fig, &v), MEMDIFF_ENOTSUP);
    expect_in(memdiff_last_error(), "touched");
    fig.category = MEMDIFF_CAT_HEAP;
    fig.measure = MEMDIFF_MEASURE_PEAK;
    ck_assert_int_eq(memdiff_diff_figure(d, &fig, &v), MEMDIFF_ENOTSUP);
    memdiff_filter f = MEMDIFF_FILTER_INIT;
    f.flags = 0x80;
    fig = (memdiff_figure){MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, &f};
    ck_assert_int_eq(memdiff_diff_figure(d, &fig, &v), MEMDIFF_EINVAL);
    f.flags = 0;
    f.ignore_categories = MEMDIFF_CAT_BIT(MEMDIFF_CAT_COUNT);
    ck_assert_int_eq(memdiff_diff_figure(d, &fig, &v), MEMDIFF_EINVAL);
    memdiff_diff_free(d);
}
END_TEST

/* A NULL figure is MEMDIFF_FIGURE_INIT: net bytes of all categories (Own not among them), no
 * filter; in memdiff_diff_figure(), memdiff_check() and memdiff_check_label() alike. */
START_TEST(null_figure_is_net_of_all_unfiltered)
{
    const memdiff_figure init = MEMDIFF_FIGURE_INIT;
    ck_assert_int_eq(init.category, MEMDIFF_CAT_ALL);
    ck_assert_int_eq(init.measure, MEMDIFF_MEASURE_NET);
    ck_assert_ptr_null(init.filter);
    const memdiff_filter image_file = {0, MEMDIFF_FILTER_IGNORE_IMAGE_FILE, NULL};
    for (unsigned flags = 0; flags <= MEMDIFF_COMPARE_VERBOSE; flags++) {
        memdiff_diff *d = scenario(flags);
        int64_t v = -1, w = -1;
        ck_assert_int_eq(memdiff_diff_figure(d, NULL, &v), MEMDIFF_OK);
        ck_assert_int_eq(memdiff_diff_figure(d, &init, &w), MEMDIFF_OK);
        ck_assert_int_eq(v, 11 * PG); /* Own's 3 new pages are not in it */
        ck_assert_int_eq(w, v);
        /* No filter: leaving libfoo's code pages out would have made it 10 pages. */
        ck_assert_int_eq(figure(d, &image_file, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET), 10 * PG);

        char msg[4096], want[4096];
        ck_assert_int_eq(memdiff_check(d, NULL, MEMDIFF_CMP_EQ, 11 * PG, msg, sizeof msg), 1);
        ck_assert_str_eq(msg, "memdiff check holds: net bytes in all categories = +45,056, "
                              "want == 45,056");
        ck_assert_int_eq(memdiff_check(d, NULL, MEMDIFF_CMP_LE, 10 * PG, msg, sizeof msg), 0);
        ck_assert_int_eq(memdiff_check(d, &init, MEMDIFF_CMP_LE, 10 * PG, want, sizeof want), 0);
        ck_assert_str_eq(msg, want);
        expect_start(msg, "memdiff check failed: net bytes in all categories = +45,056, "
                          "want <= 40,960\n");
        expect_not_in(msg, "filter");

        /* libfoo: 4 pages net (3 of code, 1 of bss); libbar: 2 pages freed. */
        ck_assert_int_eq(memdiff_check_label(d, NULL, "libfoo", MEMDIFF_MATCH_SUBSTRING, 4 * PG,
                                             msg, sizeof msg),
                         1);
        ck_assert_int_eq(memdiff_check_label(d, &init, "libfoo", MEMDIFF_MATCH_SUBSTRING, 4 * PG,
                                             want, sizeof want),
                         1);
        ck_assert_str_eq(msg, want);
        expect_in(msg, "net bytes in the ");
        ck_assert_int_eq(memdiff_check_label(d, NULL, "libfoo", MEMDIFF_MATCH_SUBSTRING,
                                             4 * PG + 1, NULL, 0),
                         0);
        /* A net figure can be negative (libbar's is -8,192): the least bound asks only that the
         * block exists. */
        ck_assert_int_eq(memdiff_check_label(d, NULL, "libbar.so", MEMDIFF_MATCH_SUFFIX,
                                             INT64_MIN, NULL, 0),
                         1);
        ck_assert_int_eq(memdiff_check_label(d, NULL, "libbar.so", MEMDIFF_MATCH_SUFFIX, -2 * PG,
                                             NULL, 0),
                         1);
        ck_assert_int_eq(memdiff_check_label(d, NULL, "libbar.so", MEMDIFF_MATCH_SUFFIX,
                                             -2 * PG + 1, NULL, 0),
                         0);
        ck_assert_int_eq(memdiff_check_label(d, NULL, "memdiff", MEMDIFF_MATCH_EXACT, INT64_MIN,
                                             NULL, 0),
                         0); /* Own has no blocks, and all is all but Own */
        memdiff_diff_free(d);
    }
}
END_TEST

/* memdiff_check_label() sums the blocks its figure's filter keeps: a block the filter leaves out
 * does not count, not even as existing, and pages it leaves out of a block do not count. */
START_TEST(check_label_applies_the_filter)
{
    memdiff_diff *d = scenario(0);
    char msg[4096];
    memdiff_figure f = {MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NEW, NULL};
    ck_assert_int_eq(memdiff_check_label(d, &f, "libfoo", MEMDIFF_MATCH_SUBSTRING, 4 * PG, NULL,
                                         0),
                     1);
    ck_assert_int_eq(memdiff_check_label(d, &f, "/usr/lib/", MEMDIFF_MATCH_PREFIX, 4 * PG, NULL,
                                         0),
                     1);

    /* By label: libfoo's block is left out; libbar's (no new pages) stays. */
    static const char *const foo[] = {"libfoo", NULL};
    const memdiff_filter by_label = {0, 0, foo};
    f.filter = &by_label;
    ck_assert_int_eq(memdiff_check_label(d, &f, "libfoo", MEMDIFF_MATCH_SUBSTRING, 0, msg,
                                         sizeof msg),
                     0);
    /* The filter that hid it is named, then what is there as the filter leaves it. */
    expect_in(msg, "memdiff check failed: no block in all categories has a label that contains "
                   "\"libfoo\"\n  filter: labels ignored: \"libfoo\"\n"
                   "  blocks there, largest first (3 of 3):\n");
    expect_not_in(msg, "libfoo.so");
    ck_assert_int_eq(memdiff_check_label(d, &f, "/usr/lib/", MEMDIFF_MATCH_PREFIX, 0, NULL, 0),
                     1); /* libbar's block exists */
    ck_assert_int_eq(memdiff_check_label(d, &f, "/usr/lib/", MEMDIFF_MATCH_PREFIX, 1, msg,
                                         sizeof msg),
                     0);
    expect_in(msg, "memdiff check failed: new bytes in the 1 block of all categories whose label "
                   "starts with \"/usr/lib/\" = 0, want >= 1\n  filter: labels ignored: "
                   "\"libfoo\"\n");
    expect_not_in(msg, "libfoo.so");

    /* By category: with images left out, neither library is found; the heap still is. */
    const memdiff_filter no_image = {MEMDIFF_CAT_BIT(MEMDIFF_CAT_IMAGE), 0, NULL};
    f.filter = &no_image;
    ck_assert_int_eq(memdiff_check_label(d, &f, "/usr/lib/", MEMDIFF_MATCH_PREFIX, 0, NULL, 0),
                     0);
    ck_assert_int_eq(memdiff_check_label(d, &f, "[heap]", MEMDIFF_MATCH_EXACT, 8 * PG, NULL, 0),
                     1);
    memdiff_diff_free(d);

    /* By page kind: libfoo's code (page cache) is left out, its bss page still counts. */
    const memdiff_filter image_file = {0, MEMDIFF_FILTER_IGNORE_IMAGE_FILE, NULL};
    f.filter = &image_file;
    for (unsigned flags = 0; flags <= MEMDIFF_COMPARE_VERBOSE; flags++) {
        d = scenario(flags);
        ck_assert_int_eq(memdiff_check_label(d, &f, "libfoo", MEMDIFF_MATCH_SUBSTRING, PG, NULL,
                                             0),
                         1);
        ck_assert_int_eq(memdiff_check_label(d, &f, "libfoo", MEMDIFF_MATCH_SUBSTRING, PG + 1,
                                             NULL, 0),
                         0);
        memdiff_diff_free(d);
    }
}
END_TEST

START_TEST(category_names)
{
    static const char *const names[] = {"image",   "heap",    "stack", "mapped-file", "shared",
                                        "private", "special", "own",   "unknown"};
    ck_assert_uint_eq(SYNTH_COUNT(names), MEMDIFF_CAT_COUNT);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++)
        ck_assert_str_eq(memdiff_category_name((memdiff_category)c), names[c]);
    ck_assert_str_eq(memdiff_category_name(MEMDIFF_CAT_ALL), "all");
    ck_assert_str_eq(memdiff_category_name((memdiff_category)(MEMDIFF_CAT_ALL + 1)), "invalid");
    ck_assert_str_eq(memdiff_category_name((memdiff_category)-1), "invalid");
}
END_TEST

/* ---- comparisons ------------------------------------------------------------------------ */

START_TEST(each_comparison)
{
    memdiff_diff *d = scenario(0);
    const int64_t net = 11 * PG; /* all categories */
    /* bound below, at and above the figure: does each comparison hold? */
    static const int expect[6][3] = {
        /* LE */ {0, 1, 1}, /* LT */ {0, 0, 1}, /* EQ */ {0, 1, 0},
        /* NE */ {1, 0, 1}, /* GE */ {1, 1, 0}, /* GT */ {1, 0, 0},
    };
    for (int c = 0; c < 6; c++) {
        for (int i = 0; i < 3; i++) {
            int64_t bound = net + (i - 1);
            int rc = check_figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, (memdiff_cmp)c,
                                  bound, NULL, 0);
            ck_assert_msg(rc == expect[c][i], "%s %s %lld: %d", "net",
                          memdiff_cmp_symbol((memdiff_cmp)c), (long long)bound, rc);
        }
    }
    /* Negative figures compare as such. */
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_PRIVATE, MEMDIFF_MEASURE_NET,
                                  MEMDIFF_CMP_LT, -4 * PG + 1, NULL, 0),
                     1);
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET,
                                  (memdiff_cmp)6, 0, NULL, 0),
                     MEMDIFF_EINVAL);
    memdiff_diff_free(d);
}
END_TEST

/* ---- messages --------------------------------------------------------------------------- */

START_TEST(failure_names_the_blocks_largest_first)
{
    memdiff_diff *d = scenario(0);
    char msg[4096];
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, MEMDIFF_CMP_LE,
                                  4096, msg, sizeof msg),
                     0);
    expect_start(msg, "memdiff check failed: net bytes in all categories = +45,056, want <= 4,096\n");
    expect_in(msg, "blocks, largest first (6 of 6):");
    /* |net| descending; equal sizes by address: anonymous (0x20000000) before libfoo. */
    const char *heap = expect_in(msg, "+24,576  heap         mixed  [heap]  0x10004000-0x10016000");
    const char *file = expect_in(msg, "+20,480  mapped-file  new    /data/a.bin");
    const char *anon = expect_in(msg, "-16,384  private      freed  anonymous");
    const char *foo = expect_in(msg, "+16,384  image        new    /usr/lib/libfoo.so.1");
    const char *bar = expect_in(msg, "-8,192  image        freed  /usr/lib/libbar.so");
    const char *stk = expect_in(msg, "+8,192  stack        new    thread 4242");
    ck_assert(heap < file && file < anon && anon < foo && foo < bar && bar < stk);
    expect_in(msg, "by category: image +8,192; heap +24,576; stack +8,192; mapped-file +20,480; "
                   "private -16,384");
    expect_not_in(msg, "memdiff\n"); /* Own is in no block */
    expect_not_in(msg, "filter");

    /* One category: its blocks only, no per-category line. */
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_NEW,
                                  MEMDIFF_CMP_EQ, 0, msg, sizeof msg),
                     0);
    expect_in(msg, "memdiff check failed: new bytes in image = 16,384, want == 0\n");
    expect_in(msg, "blocks, largest first (1 of 1):\n    16,384  image  new  /usr/lib/libfoo.so.1");
    expect_not_in(msg, "libbar"); /* no new bytes */
    expect_not_in(msg, "by category");
    memdiff_diff_free(d);
}
END_TEST

START_TEST(holding_check_says_so_in_one_line)
{
    memdiff_diff *d = scenario(0);
    char msg[512];
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_NET_PRIVATE,
                                  MEMDIFF_CMP_LE, 8 * PG, msg, sizeof msg),
                     1);
    ck_assert_str_eq(msg, "memdiff check holds: net private bytes in heap = +24,576, "
                          "want <= 32,768");
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_SHARED, MEMDIFF_MEASURE_NEW,
                                  MEMDIFF_CMP_EQ, 0, msg, sizeof msg),
                     1);
    ck_assert_str_eq(msg, "memdiff check holds: new bytes in shared = 0, want == 0");
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_PRIVATE, MEMDIFF_MEASURE_NET,
                                  MEMDIFF_CMP_GE, -4 * PG, msg, sizeof msg),
                     1);
    ck_assert_str_eq(msg, "memdiff check holds: net bytes in private = -16,384, "
                          "want >= -16,384");
    memdiff_diff_free(d);
}
END_TEST

START_TEST(error_message)
{
    memdiff_diff *d = scenario(0);
    char msg[512];
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_TOUCHED,
                                  MEMDIFF_CMP_LE, 0, msg, sizeof msg),
                     MEMDIFF_ENOTSUP);
    expect_in(msg, "memdiff check error: MEMDIFF_ENOTSUP: memdiff_check: the touched measure");
    ck_assert_int_eq(memdiff_check(NULL, NULL, MEMDIFF_CMP_LE, 0, msg, sizeof msg),
                     MEMDIFF_EINVAL);
    expect_in(msg, "MEMDIFF_EINVAL");
    memdiff_diff_free(d);
}
END_TEST

/* A message cut to any buffer size stays inside the buffer, is terminated, and is a prefix of
 * the whole message followed by "..." (a cut first line included). */
static void check_truncation(const memdiff_diff *d, const memdiff_filter *f)
{
    char full[8192];
    int rc = check_figure(d, f, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, MEMDIFF_CMP_LE, 0, full,
                          sizeof full);
    ck_assert_int_eq(rc, 0);
    size_t len = strlen(full);
    ck_assert_uint_lt(len, sizeof full - 8); /* not cut itself */
    ck_assert_int_eq(check_figure(d, f, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, MEMDIFF_CMP_LE, 0,
                                  NULL, 0),
                     0);
    static char buf[8192 + 64];
    for (size_t size = 0; size <= len + 2; size++) {
        memset(buf, 0x5A, sizeof buf);
        ck_assert_int_eq(check_figure(d, f, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET,
                                      MEMDIFF_CMP_LE, 0, buf, size),
                         0);
        for (size_t i = size; i < size + 64; i++)
            ck_assert_msg(buf[i] == 0x5A, "size %zu: byte %zu written", size, i);
        if (size == 0)
            continue;
        size_t n = strlen(buf);
        ck_assert_uint_lt(n, size);
        if (size > len) {
            ck_assert_str_eq(buf, full);
            continue;
        }
        if (size >= 4) {
            ck_assert_msg(n >= 3 && strcmp(buf + n - 3, "...") == 0, "size %zu: %s", size, buf);
            n -= 3;
        }
        ck_assert_msg(strncmp(buf, full, n) == 0, "size %zu: not a prefix: %s", size, buf);
    }
}

START_TEST(truncation_is_safe_at_every_size)
{
    memdiff_diff *d = scenario(0);
    static const char *const labels[] = {"libbar", NULL};
    memdiff_filter f = {MEMDIFF_CAT_BIT(MEMDIFF_CAT_STACK), MEMDIFF_FILTER_IGNORE_IMAGE_FILE,
                        labels};
    check_truncation(d, NULL);
    check_truncation(d, &f);
    /* Whole lines: a 200-byte buffer keeps the first line and as many block lines as fit. */
    char msg[200];
    check_figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, MEMDIFF_CMP_LE, 0, msg,
                 sizeof msg);
    expect_in(msg, "blocks, largest first (6 of 6):\n");
    size_t n = strlen(msg);
    ck_assert_msg(n > 4 && strcmp(msg + n - 4, "\n...") == 0, "%s", msg);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(at_most_ten_blocks_listed)
{
    enum { N = 14 };
    synth_region regs[N];
    synth_run runs[N];
    for (int i = 0; i < N; i++) {
        uint64_t start = ANON + (uint64_t)i * 64 * SYNTH_PAGE;
        regs[i] = (synth_region){start, start + 32 * SYNTH_PAGE, MEMDIFF_CAT_PRIVATE,
                                 "anonymous", start, 0, 0, 0, 0};
        runs[i] = (synth_run){start, (uint64_t)i + 1, PRES | PRIV};
    }
    memdiff_snapshot *b = synth_snapshot(&(synth_spec){.regions = regs, .region_count = N});
    memdiff_snapshot *a = synth_snapshot(&SPEC(regs, runs));
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(b, a, 0, &d), MEMDIFF_OK);
    char msg[4096];
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_PRIVATE, MEMDIFF_MEASURE_NEW,
                                  MEMDIFF_CMP_LE, 0, msg, sizeof msg),
                     0);
    expect_in(msg, "blocks, largest first (10 of 14):\n    57,344  private  new  anonymous");
    /* the four smallest (1 + 2 + 3 + 4 pages) are summed up */
    expect_in(msg, "\n    ... 4 more blocks: 40,960");
    expect_not_in(msg, "\n    16,384  private"); /* the 4-page block is not listed */
    memdiff_diff_free(d);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
}
END_TEST

START_TEST(labels_are_escaped_and_long_ones_keep_their_tail)
{
    char longname[400];
    memset(longname, 'a', sizeof longname);
    strcpy(longname + 300, "/the-tail-that-names-it.so");
    static const char evil[] = "/tmp/evil\nname\\x";
    const synth_region regs[] = {
        {HEAP, HEAP + 4 * SYNTH_PAGE, MEMDIFF_CAT_MAPPED_FILE, evil, HEAP, 0, 0, 0, 0},
        {ANON, ANON + 4 * SYNTH_PAGE, MEMDIFF_CAT_MAPPED_FILE, longname, ANON, 0, 0, 0, 0},
    };
    const synth_run runs[] = {{HEAP, 2, PRES | PRIV}, {ANON, 1, PRES | PRIV}};
    memdiff_snapshot *b = synth_snapshot(&(synth_spec){.regions = regs, .region_count = 2});
    memdiff_snapshot *a = synth_snapshot(&SPEC(regs, runs));
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(b, a, 0, &d), MEMDIFF_OK);
    char msg[2048];
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NEW,
                                  MEMDIFF_CMP_EQ, 0, msg, sizeof msg),
                     0);
    expect_in(msg, "/tmp/evil\\x0aname\\\\x  0x10000000");
    const char *tail = expect_in(msg, "/the-tail-that-names-it.so  0x20000000");
    ck_assert(tail - msg > 100 && strncmp(tail - 97, "...aaaa", 7) == 0);
    /* every line short, none broken by the label */
    for (const char *line = msg; line; line = strchr(line, '\n')) {
        line += *line == '\n';
        const char *end = strchr(line, '\n');
        ck_assert_uint_le(end ? (size_t)(end - line) : strlen(line), 200);
        if (!end)
            break;
    }
    memdiff_diff_free(d);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
}
END_TEST

START_TEST(own_has_no_blocks)
{
    memdiff_diff *d = scenario(0);
    char msg[1024];
    ck_assert_int_eq(check_figure(d, NULL, MEMDIFF_CAT_OWN, MEMDIFF_MEASURE_NEW, MEMDIFF_CMP_EQ,
                                  0, msg, sizeof msg),
                     0);
    expect_in(msg, "new bytes in own = 12,288, want == 0\n  (memdiff's own storage has no blocks)");
    memdiff_diff_free(d);
}
END_TEST

/* ---- filters ---------------------------------------------------------------------------- */

START_TEST(filter_by_category_and_label)
{
    memdiff_diff *d = scenario(0);
    memdiff_filter f = MEMDIFF_FILTER_INIT;
    ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET), 11 * PG);
    f.ignore_categories = MEMDIFF_CAT_BIT(MEMDIFF_CAT_STACK) |
                          MEMDIFF_CAT_BIT(MEMDIFF_CAT_MAPPED_FILE);
    ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NEW), (19 - 2 - 5) * PG);
    ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_STACK, MEMDIFF_MEASURE_NEW), 0);
    ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_NEW), 8 * PG);

    static const char *const runner[] = {"libfoo", "thread ", NULL};
    memdiff_filter g = {0, 0, runner};
    ck_assert_int_eq(figure(d, &g, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET), (11 - 4 - 2) * PG);
    ck_assert_int_eq(figure(d, &g, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_NET), -2 * PG);

    char msg[4096];
    ck_assert_int_eq(check_figure(d, &g, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, MEMDIFF_CMP_LE,
                                  0, msg, sizeof msg),
                     0);
    expect_in(msg, "= +20,480, want <= 0\n  filter: labels ignored: \"libfoo\" \"thread \"\n");
    expect_in(msg, "blocks, largest first (4 of 4):");
    expect_not_in(msg, "libfoo.so");
    expect_in(msg, "left out by the filter: 2 blocks, +24,576");
    memdiff_diff_free(d);
}
END_TEST

/* Image pages of the page cache: exact in a verbose diff, by the totals' split in a default one;
 * both leave libfoo's bss page (private anonymous) counted. */
START_TEST(filter_image_file_pages)
{
    const memdiff_filter f = {0, MEMDIFF_FILTER_IGNORE_IMAGE_FILE, NULL};
    for (unsigned flags = 0; flags <= MEMDIFF_COMPARE_VERBOSE; flags++) {
        memdiff_diff *d = scenario(flags);
        ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_NEW), 1 * PG);
        ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_PRIVATE), 1 * PG);
        ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_SHARED), 0);
        ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_FREED), 0);
        ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_NET), 1 * PG);
        /* other categories untouched: mapped-file pages are file pages too */
        ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_MAPPED_FILE, MEMDIFF_MEASURE_NEW), 5 * PG);
        ck_assert_int_eq(figure(d, &f, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET), (11 - 3 + 2) * PG);
        char msg[4096];
        ck_assert_int_eq(check_figure(d, &f, MEMDIFF_CAT_IMAGE, MEMDIFF_MEASURE_NET,
                                      MEMDIFF_CMP_EQ, 0, msg, sizeof msg),
                         0);
        expect_in(msg, "  filter: image file pages ignored\n");
        expect_in(msg, "+4,096  image  new  /usr/lib/libfoo.so.1");
        expect_in(msg, "left out by the filter: 2 blocks, +4,096"); /* +12,288 - 8,192 */
        memdiff_diff_free(d);
    }
}
END_TEST

/* ---- labelled blocks -------------------------------------------------------------------- */

START_TEST(label_matching)
{
    memdiff_diff *d = scenario(0);
    char msg[4096];
    const memdiff_measure NEW = MEMDIFF_MEASURE_NEW;
    const memdiff_category ALL = MEMDIFF_CAT_ALL;
    ck_assert_int_eq(check_label(d, ALL, "libfoo", MEMDIFF_MATCH_SUBSTRING, NEW, 1, msg,
                                 sizeof msg),
                     1);
    ck_assert_str_eq(msg, "memdiff check holds: new bytes in the 1 block of all categories whose "
                          "label contains \"libfoo\" = 16,384, want >= 1");
    ck_assert_int_eq(check_label(d, ALL, "/usr/lib/libfoo.so.1", MEMDIFF_MATCH_EXACT, NEW,
                                 4 * PG, NULL, 0),
                     1);
    ck_assert_int_eq(check_label(d, ALL, "libfoo", MEMDIFF_MATCH_EXACT, NEW, 0, NULL, 0),
                     0);
    ck_assert_int_eq(check_label(d, ALL, "/usr/lib/", MEMDIFF_MATCH_PREFIX, NEW, 4 * PG,
                                 msg, sizeof msg),
                     1);
    expect_in(msg, "the 2 blocks of all categories whose label starts with \"/usr/lib/\"");
    ck_assert_int_eq(check_label(d, ALL, "libbar.so", MEMDIFF_MATCH_SUFFIX, NEW, 0, NULL,
                                 0),
                     1); /* it exists */
    ck_assert_int_eq(check_label(d, ALL, "libbar", MEMDIFF_MATCH_SUFFIX, NEW, 0, NULL, 0),
                     0);
    ck_assert_int_eq(check_label(d, MEMDIFF_CAT_IMAGE, "libfoo", MEMDIFF_MATCH_SUBSTRING,
                                 MEMDIFF_MEASURE_SHARED, 3 * PG, NULL, 0),
                     1);
    ck_assert_int_eq(check_label(d, MEMDIFF_CAT_HEAP, "libfoo", MEMDIFF_MATCH_SUBSTRING,
                                 NEW, 0, NULL, 0),
                     0);

    /* Found, too small: the matching blocks are listed. */
    ck_assert_int_eq(check_label(d, ALL, "libbar.so", MEMDIFF_MATCH_SUFFIX, NEW, 1, msg,
                                 sizeof msg),
                     0);
    expect_in(msg, "memdiff check failed: new bytes in the 1 block of all categories whose label "
                   "ends with \"libbar.so\" = 0, want >= 1\n");
    expect_in(msg, "those blocks, largest first (1 of 1):\n    0  image  freed  /usr/lib/libbar.so");

    /* None found: the largest blocks there are listed, to show what labels there are. */
    ck_assert_int_eq(check_label(d, MEMDIFF_CAT_HEAP, "libfoo", MEMDIFF_MATCH_SUBSTRING,
                                 NEW, 1, msg, sizeof msg),
                     0);
    expect_in(msg, "memdiff check failed: no block in heap has a label that contains \"libfoo\"\n"
                   "  blocks there, largest first (1 of 1):\n    32,768  heap  mixed  [heap]");

    ck_assert_int_eq(check_label(d, ALL, NULL, MEMDIFF_MATCH_EXACT, NEW, 0, msg,
                                 sizeof msg),
                     MEMDIFF_EINVAL);
    ck_assert_int_eq(check_label(d, ALL, "x", (memdiff_match)9, NEW, 0, NULL, 0),
                     MEMDIFF_EINVAL);
    ck_assert_int_eq(check_label(d, ALL, "x", MEMDIFF_MATCH_EXACT, MEMDIFF_MEASURE_PEAK, 0,
                                 NULL, 0),
                     MEMDIFF_ENOTSUP);
    memdiff_diff_free(d);
}
END_TEST

/* ---- slopes ----------------------------------------------------------------------------- */

START_TEST(slope_checks)
{
    memdiff_diff *d = scenario(0);
    memdiff_slope s;
    memset(&s, 0, sizeof s);
    s.bytes_per_iteration = 4112.04;
    s.endpoint_slope = 4096.0;
    s.first = 4096;
    s.last = 262144;
    s.warmup = 1;
    s.iterations = 64;
    s.samples = 64;
    s.figure.category = MEMDIFF_CAT_HEAP;
    s.figure.measure = MEMDIFF_MEASURE_NET;
    char msg[4096];
    ck_assert_int_eq(memdiff_check_slope(&s, d, MEMDIFF_CMP_GE, 4000, msg, sizeof msg), 1);
    ck_assert_str_eq(msg, "memdiff check holds: net bytes in heap grow by 4,112.0 bytes per call, "
                          "want >= 4,000");
    ck_assert_int_eq(memdiff_check_slope(&s, d, MEMDIFF_CMP_LE, 512, msg, sizeof msg), 0);
    expect_in(msg, "memdiff check failed: net bytes in heap grow by 4,112.0 bytes per call, "
                   "want <= 512\n");
    expect_in(msg, "\n  64 calls measured (1 before them to warm up), 64 samples: first +4,096, "
                   "last +262,144 (4,096.0 per call between them)\n");
    expect_in(msg, "+24,576  heap  mixed  [heap]"); /* the diff's blocks */
    ck_assert_int_eq(memdiff_check_slope(&s, NULL, MEMDIFF_CMP_LE, 512, msg, sizeof msg), 0);
    expect_not_in(msg, "[heap]");
    s.bytes_per_iteration = -0.04; /* rounds to zero: no "-0.0" */
    ck_assert_int_eq(memdiff_check_slope(&s, NULL, MEMDIFF_CMP_LE, 0, msg, sizeof msg), 1);
    expect_in(msg, "grow by 0.0 bytes per call");
    ck_assert_int_eq(memdiff_check_slope(NULL, d, MEMDIFF_CMP_LE, 0, msg, sizeof msg),
                     MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_check_slope(&s, d, (memdiff_cmp)-1, 0, msg, sizeof msg),
                     MEMDIFF_EINVAL);
    memdiff_diff_free(d);
}
END_TEST

/* ---- memdiff_check.h -------------------------------------------------------------------- */

START_TEST(check_macros_that_hold)
{
    memdiff_diff *d = scenario(0);
    ck_assert_memdiff(d, NULL, MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_NET, ==, 6 * PG);
    ck_assert_memdiff(d, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_FREED, >, 0);
    ck_assert_memdiff(d, NULL, MEMDIFF_CAT_PRIVATE, MEMDIFF_MEASURE_NET, <, 0);
    ck_assert_memdiff_net_le(d, 10 * PG); /* default filter: libfoo's code left out */
    ck_assert_memdiff_net_private_le(d, 5 * PG); /* 11 new private - 6 freed (not libbar's) */
    ck_assert_memdiff_new_le(d, MEMDIFF_CAT_IMAGE, PG);
    ck_assert_memdiff_no_new(d, MEMDIFF_CAT_SHARED);
    ck_assert_memdiff_block(d, "libfoo");
    ck_assert_memdiff_block_min(d, MEMDIFF_CAT_HEAP, "heap", 8 * PG);
    memdiff_diff_free(d);
}
END_TEST

/* The failing macros, run by a Check runner of their own: each fails its test at its line, with
 * memdiff's message, within MEMDIFF_CK_MSG_SIZE. */
static memdiff_diff *inner_diff;

START_TEST(inner_net_le)
{
    ck_assert_memdiff_net_le(inner_diff, 0);
}
END_TEST

START_TEST(inner_no_new)
{
    ck_assert_memdiff_no_new(inner_diff, MEMDIFF_CAT_STACK);
}
END_TEST

START_TEST(inner_block)
{
    ck_assert_memdiff_block(inner_diff, "libbaz");
}
END_TEST

START_TEST(inner_bad_operator)
{
    ck_assert_memdiff(inner_diff, NULL, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, =, 0);
}
END_TEST

START_TEST(check_macros_that_fail)
{
    inner_diff = scenario(0);
    Suite *s = suite_create("inner");
    TCase *tc = tcase_create("inner");
    tcase_add_test(tc, inner_net_le);
    tcase_add_test(tc, inner_no_new);
    tcase_add_test(tc, inner_block);
    tcase_add_test(tc, inner_bad_operator);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_set_fork_status(r, CK_NOFORK);
    srunner_run_all(r, CK_SILENT);
    ck_assert_int_eq(srunner_ntests_failed(r), 4);
    TestResult **results = srunner_failures(r);
    static const char *const expect[][2] = {
        {"inner_net_le", "memdiff check failed: net bytes in all categories = +40,960, want <= 0"
                         "\n  filter: image file pages ignored\n  blocks, largest first (5 of 5)"},
        {"inner_no_new", "memdiff check failed: new bytes in stack = 8,192, want == 0"},
        {"inner_block", "no block in all categories has a label that contains \"libbaz\""},
        {"inner_bad_operator", "ck_assert_memdiff: '=' is not one of <= < == != >= >"},
    };
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(tr_tcname(results[i]), "inner");
        ck_assert_int_eq(tr_rtype(results[i]), CK_FAILURE);
        ck_assert_ptr_nonnull(strstr(tr_lfile(results[i]), "test_assert.c"));
        const char *m = tr_msg(results[i]);
        ck_assert_msg(strstr(m, expect[i][1]) != NULL, "%s: %s", expect[i][0], m);
        ck_assert_uint_lt(strlen(m), MEMDIFF_CK_MSG_SIZE);
    }
    free(results);
    srunner_free(r);
    memdiff_diff_free(inner_diff);
}
END_TEST

Suite *assert_suite(void)
{
    Suite *s = suite_create("assert");
    TCase *core = tcase_create("figures");
    tcase_add_test(core, names_and_symbols);
    tcase_add_test(core, figures_of_the_scenario);
    tcase_add_test(core, figures_agree_with_totals);
    tcase_add_test(core, figure_errors);
    tcase_add_test(core, null_figure_is_net_of_all_unfiltered);
    tcase_add_test(core, check_label_applies_the_filter);
    tcase_add_test(core, category_names);
    tcase_add_test(core, each_comparison);
    suite_add_tcase(s, core);
    TCase *messages = tcase_create("messages");
    tcase_add_test(messages, failure_names_the_blocks_largest_first);
    tcase_add_test(messages, holding_check_says_so_in_one_line);
    tcase_add_test(messages, error_message);
    tcase_add_test(messages, truncation_is_safe_at_every_size);
    tcase_add_test(messages, at_most_ten_blocks_listed);
    tcase_add_test(messages, labels_are_escaped_and_long_ones_keep_their_tail);
    tcase_add_test(messages, own_has_no_blocks);
    suite_add_tcase(s, messages);
    TCase *filters = tcase_create("filters");
    tcase_add_test(filters, filter_by_category_and_label);
    tcase_add_test(filters, filter_image_file_pages);
    tcase_add_test(filters, label_matching);
    tcase_add_test(filters, slope_checks);
    suite_add_tcase(s, filters);
    TCase *check = tcase_create("check.h");
    tcase_add_test(check, check_macros_that_hold);
    tcase_add_test(check, check_macros_that_fail);
    suite_add_tcase(s, check);
    return s;
}
