/*
 * test_refset.c - reference-set brackets (memdiff_bracket_* with MEMDIFF_BRACKET_REFSET,
 * docs/reference-set.md): touched, persistent and impacting bytes to the page, the peak and
 * transient memory, degraded brackets, the diff's impact (memdiff_diff_impact() per category,
 * memdiff_block.impact per block) and its reference-set info (memdiff_diff_get_info().refset).
 *
 *  - Synthetic: the compare engine's three sources of touched pages (per-page accessed bits,
 *    per-mapping figures, residency after an emptied working set) on tables, every figure exact.
 *  - Real: brackets of this process (Check's fork mode gives every test a process of its own)
 *    around memory the test lays out as a mapping of its own (scenario_util.h: guard pages), so
 *    that the kernel's per-mapping "Referenced" figure is this memory's alone. Touched counts
 *    are exact: clear_refs "1" clears the accessed bits and the backend's "4" flushes the TLB,
 *    so each access the test makes walks the page table and sets the bit again. A bracket on
 *    the calling process settles the heap (malloc_trim) and warms memdiff up before its before
 *    snapshot, reference-set brackets too; the test that needs no settling says so.
 *  - The recorded /proc tree (tests/fixtures/recorded: a real 6.18 process, and a constructed
 *    page_idle bitmap): the per-page path end to end on a kernel CI lacks, with accesses,
 *    new pages, freed pages and a peak the test writes into the expanded copy between begin and
 *    end (begin writes clear_refs and the bitmap, so it works on a copy). The bracket reads the
 *    copy as its fixture_root: /proc as ROOT, /sys as ROOT/sys; "no page_idle" is the copy
 *    with its sys/ renamed away.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <check.h>

#include "fixture_tree.h"
#include "internal.h"
#include "scenario_util.h"
#include "suites.h"
#include "synth.h"

#define PG ((uint64_t)SYNTH_PAGE)
#define PRES MEMDIFF_PAGE_PRESENT
#define PRIV MEMDIFF_PAGE_PRIVATE
#define FILEPG MEMDIFF_PAGE_FILE
#define ACC MEMDIFF_PAGE_ACCESSED
#define BOTH (MEMDIFF_IN_BEFORE | MEMDIFF_IN_AFTER)

static uint64_t pages(uint64_t bytes)
{
    return bytes / scn_page();
}

/* Block index of d, which must exist. */
static memdiff_block block(const memdiff_diff *d, size_t index)
{
    memdiff_block k;
    int rc = memdiff_diff_block(d, index, &k);
    ck_assert_msg(rc == MEMDIFF_OK, "block %zu of %zu: %s", index, memdiff_diff_block_count(d),
                  memdiff_status_name(rc));
    return k;
}

/* The first block of d in category cat whose span contains addr; the test fails, with the
 * diff's report, when there is none. (scenario_util.h's scn_block_at() handed out a pointer
 * into the diff, which memdiff_diff_block() no longer does: this one copies.) */
static memdiff_block block_at(const memdiff_diff *d, uintptr_t addr, memdiff_category cat)
{
    for (size_t i = 0; i < memdiff_diff_block_count(d); i++) {
        memdiff_block k = block(d, i);
        if (k.category == cat && k.start <= addr && addr < k.end)
            return k;
    }
    char *r = scn_report(d, 0);
    ck_abort_msg("no %s block contains 0x%llx; the diff:\n%s", memdiff_category_name(cat),
                 (unsigned long long)addr, r);
}

/* The reference-set figures of d (all 0 for a diff of no reference-set bracket). */
static memdiff_refset_info refset_of(const memdiff_diff *d)
{
    memdiff_diff_info di;
    ck_assert_int_eq(memdiff_diff_get_info(d, &di), MEMDIFF_OK);
    return di.refset;
}

/* ---- synthetic: the compare engine's bookkeeping ----------------------------------------- */

#define HEAP 0x10000000u
#define MAP 0x7f3000000000u
#define LIB 0x7f0000000000u
#define OWNMAP 0x7f2000000000u

static const synth_region regions[] = {
    {HEAP, HEAP + 16 * PG, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
    {LIB, LIB + 4 * PG, MEMDIFF_CAT_IMAGE, "/lib/libx.so", LIB, MEMDIFF_REGION_FILE, 8, 9, 0},
    {OWNMAP, OWNMAP + 8 * PG, MEMDIFF_CAT_OWN, "memdiff", 0, 0, 0, 0, 0},
    {MAP, MAP + 64 * PG, MEMDIFF_CAT_PRIVATE, "anonymous", MAP, 0, 0, 0, 0},
};

static const synth_run before_runs[] = {
    {HEAP, 8, PRES | PRIV},
    {LIB, 4, PRES | FILEPG},
    {OWNMAP, 2, PRES | PRIV},
    {MAP, 64, PRES | PRIV},
};

/* Heap: pages 0-1 touched, 2-5 not, 6-7 freed, 8-9 new (so touched); the library resident and
 * untouched; Own grew by two pages, all touched; the mapping: 10 untouched pages (a piece that
 * is only persistent, before the block exists), 16 touched, 38 untouched. */
static const synth_run after_runs[] = {
    {HEAP, 2, PRES | PRIV | ACC},
    {HEAP + 2 * PG, 4, PRES | PRIV},
    {HEAP + 8 * PG, 2, PRES | PRIV | ACC},
    {LIB, 4, PRES | FILEPG},
    {OWNMAP, 4, PRES | PRIV | ACC},
    {MAP, 10, PRES | PRIV},
    {MAP + 10 * PG, 16, PRES | PRIV | ACC},
    {MAP + 26 * PG, 38, PRES | PRIV},
};

static memdiff_diff *synth_refs(unsigned flags, const memdiff__refs_in *refs)
{
    synth_spec b = {.regions = regions, .region_count = SYNTH_COUNT(regions),
                    .runs = before_runs, .run_count = SYNTH_COUNT(before_runs)};
    synth_spec a = {.regions = regions, .region_count = SYNTH_COUNT(regions),
                    .runs = after_runs, .run_count = SYNTH_COUNT(after_runs)};
    memdiff_snapshot *sb = synth_snapshot(&b), *sa = synth_snapshot(&a);
    memdiff_refset_info in;
    memset(&in, 0, sizeof in);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff__refset_diff(sb, sa, flags, refs, &in, NULL, &d), MEMDIFF_OK);
    memdiff_snapshot_free(sa);
    memdiff_snapshot_free(sb);
    return d;
}

static void check_impact(const memdiff_impact *m, uint64_t touched, uint64_t persistent,
                         uint64_t impacting, const char *what)
{
    ck_assert_msg(m->touched_bytes == touched * PG && m->persistent_bytes == persistent * PG &&
                      m->impacting_bytes == impacting * PG && m->transient_bytes == 0,
                  "%s: touched %llu persistent %llu impacting %llu pages; want %llu %llu %llu",
                  what, (unsigned long long)(m->touched_bytes / PG),
                  (unsigned long long)(m->persistent_bytes / PG),
                  (unsigned long long)(m->impacting_bytes / PG), (unsigned long long)touched,
                  (unsigned long long)persistent, (unsigned long long)impacting);
}

START_TEST(synthetic_per_page)
{
    memdiff__refs_in refs = {.accessed_bit = 1};
    memdiff_diff *d = synth_refs(0, &refs);
    memdiff_impact m;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &m), MEMDIFF_OK);
    check_impact(&m, 20, 74, 4, "total");
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_OWN, &m), MEMDIFF_OK);
    check_impact(&m, 4, 2, 2, "own");
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_IMAGE, &m), MEMDIFF_OK);
    check_impact(&m, 0, 4, 0, "image");

    /* Blocks: the heap (changed) and the mapping (touched only); the library, resident and
     * untouched, is in none. */
    ck_assert_uint_eq(memdiff_diff_block_count(d), 2);
    memdiff_block k = block(d, 0);
    ck_assert_uint_eq(k.start, HEAP);
    ck_assert_uint_eq(k.end, HEAP + 10 * PG);
    ck_assert_int_eq(k.change, MEMDIFF_CHANGE_MIXED);
    check_impact(&k.impact, 4, 6, 4, "heap block");
    k = block(d, 1);
    ck_assert_uint_eq(k.start, MAP + 10 * PG);
    ck_assert_uint_eq(k.end, MAP + 26 * PG);
    ck_assert_int_eq(k.change, MEMDIFF_CHANGE_TOUCHED);
    ck_assert_uint_eq(k.presence, BOTH);
    ck_assert_uint_eq(k.totals.new_bytes + k.totals.freed_bytes, 0);
    check_impact(&k.impact, 16, 64, 0, "mapping block (persistent pages before it included)");
    ck_assert_str_eq(memdiff_change_name(k.change), "touched");
    memdiff_diff_free(d);

    /* Verbose: one block per run; persistent pages that were not touched are in none. */
    d = synth_refs(MEMDIFF_COMPARE_VERBOSE, &refs);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 4);
    k = block(d, 3);
    ck_assert_uint_eq(k.start, MAP + 10 * PG);
    ck_assert_uint_eq(k.end, MAP + 26 * PG);
    ck_assert_uint_eq(k.attrs_after, PRES | PRIV | ACC);
    check_impact(&k.impact, 16, 16, 0, "verbose mapping block");
    memdiff_diff_free(d);
}
END_TEST

START_TEST(synthetic_per_mapping)
{
    /* Touched bytes per after region (as smaps gives them per VMA), accessed bits ignored. */
    uint64_t touched[SYNTH_COUNT(regions)] = {3 * PG, 0, 1 * PG, 5 * PG};
    memdiff__refs_in refs = {.region_touched = touched};
    memdiff_diff *d = synth_refs(0, &refs);
    memdiff_impact m;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &m), MEMDIFF_OK);
    check_impact(&m, 8, 74, 4, "total");
    ck_assert_uint_eq(memdiff_diff_block_count(d), 2);
    memdiff_block k = block(d, 1);
    /* Per-mapping touched bytes say how many, not which: the block spans the region. */
    ck_assert_uint_eq(k.start, MAP);
    ck_assert_uint_eq(k.end, MAP + 64 * PG);
    ck_assert_int_eq(k.change, MEMDIFF_CHANGE_TOUCHED);
    check_impact(&k.impact, 5, 64, 0, "mapping block");
    memdiff_diff_free(d);
}
END_TEST

/* Per-mapping figures through memdiff__refs_apportion: one VMA (as smaps lists it) holding two
 * heap chunks, 8 and 24 of whose pages are resident, and one holding a single region. The first
 * VMA's 12 referenced pages are divided 3 : 9 by resident pages, an estimate, each bounded by its
 * resident size and the VMA's figure (8 and 12 pages), the heap and the totals by the VMA's
 * figure (12 pages, 17 with the exact 5); the second VMA's 5 pages are exact, unmarked. */
static const synth_region chunk_regions[] = {
    {MAP, MAP + 16 * PG, MEMDIFF_CAT_HEAP, "malloc mmap chunk", MAP, 0, 0, 0, 0},
    {MAP + 16 * PG, MAP + 48 * PG, MEMDIFF_CAT_HEAP, "malloc mmap chunk", MAP + 16 * PG, 0, 0,
     0, 0},
    {MAP + 48 * PG, MAP + 64 * PG, MEMDIFF_CAT_PRIVATE, "anonymous", MAP + 48 * PG, 0, 0, 0, 0},
};
static const synth_run chunk_runs[] = {
    {MAP, 8, PRES | PRIV},
    {MAP + 16 * PG, 24, PRES | PRIV},
    {MAP + 48 * PG, 16, PRES | PRIV},
};

static void check_estimate(const memdiff_impact *m, uint64_t touched, uint64_t estimated,
                           uint64_t max, const char *what)
{
    ck_assert_msg(m->touched_bytes == touched * PG &&
                      m->touched_estimated_bytes == estimated * PG &&
                      m->touched_max_bytes == max * PG,
                  "%s: touched %llu, estimated %llu, at most %llu pages; want %llu %llu %llu",
                  what, (unsigned long long)(m->touched_bytes / PG),
                  (unsigned long long)(m->touched_estimated_bytes / PG),
                  (unsigned long long)(m->touched_max_bytes / PG), (unsigned long long)touched,
                  (unsigned long long)estimated, (unsigned long long)max);
}

START_TEST(synthetic_shared_mapping)
{
    synth_spec spec = {.regions = chunk_regions, .region_count = SYNTH_COUNT(chunk_regions),
                       .runs = chunk_runs, .run_count = SYNTH_COUNT(chunk_runs)};
    memdiff_snapshot *sb = synth_snapshot(&spec), *sa = synth_snapshot(&spec);
    const memdiff__plat_usage usage[] = {
        {MAP, MAP + 48 * PG, 32 * PG, 32 * PG, 12 * PG},
        {MAP + 48 * PG, MAP + 64 * PG, 16 * PG, 16 * PG, 5 * PG},
    };
    memdiff__arena arena = MEMDIFF__ARENA_INIT;
    memdiff__refs_in refs;
    memset(&refs, 0, sizeof refs);
    ck_assert_int_eq(memdiff__refs_apportion(&arena, sa, usage, 2, &refs), MEMDIFF_OK);
    memdiff_refset_info in;
    memset(&in, 0, sizeof in);
    in.sources = MEMDIFF_REFS_CLEARED | MEMDIFF_REFS_MAPPINGS;
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff__refset_diff(sb, sa, 0, &refs, &in, NULL, &d), MEMDIFF_OK);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 3);
    memdiff_block k[3] = {block(d, 0), block(d, 1), block(d, 2)};
    check_estimate(&k[0].impact, 3, 3, 8, "chunk 1");
    check_estimate(&k[1].impact, 9, 9, 12, "chunk 2");
    check_estimate(&k[2].impact, 5, 0, 5, "the mapping of its own");
    memdiff_impact m;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_HEAP, &m), MEMDIFF_OK);
    check_estimate(&m, 12, 12, 12, "heap");
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_PRIVATE, &m), MEMDIFF_OK);
    check_estimate(&m, 5, 0, 5, "private");
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &m), MEMDIFF_OK);
    check_estimate(&m, 17, 12, 17, "total");

    /* A check says the figure is an estimate and gives the bound, whether it holds or not;
     * one on exact figures says nothing of the kind. */
    char msg[2048];
    memdiff_figure f = {MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_TOUCHED, NULL};
    ck_assert_int_eq(memdiff_check(d, &f, MEMDIFF_CMP_LE, 20 * (int64_t)PG, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "= \xe2\x89\x88" "69,632, want") &&
                      strstr(msg, "estimated: 49,152 of these bytes") &&
                      strstr(msg, "at most 69,632"),
                  "%s", msg);
    f.category = MEMDIFF_CAT_PRIVATE;
    ck_assert_int_eq(memdiff_check(d, &f, MEMDIFF_CMP_LE, 20 * (int64_t)PG, msg, sizeof msg), 1);
    ck_assert_msg(!strstr(msg, "estimated") && !strstr(msg, "\xe2\x89\x88"), "%s", msg);
    f.category = MEMDIFF_CAT_HEAP;
    ck_assert_int_eq(memdiff_check_label(d, &f, "malloc mmap chunk", MEMDIFF_MATCH_EXACT, 0, msg,
                                         sizeof msg),
                     1);
    ck_assert_msg(strstr(msg, "estimated: 49,152") && strstr(msg, "at most 81,920"), "%s", msg);

    /* The text report puts "≈" before each estimated figure, the JSON report the fields. */
    char *r = scn_report(d, 0);
    ck_assert_msg(strstr(r, "touched \xe2\x89\x88" "12,288  heap") &&
                      strstr(r, "touched \xe2\x89\x88" "36,864  heap") &&
                      strstr(r, "touched  20,480  private") &&
                      strstr(r, " \xe2\x89\x88" "69,632 bytes  (\xe2\x89\x88" "17 pages") &&
                      strstr(r, "49,152 of it estimated, at most 69,632"),
                  "%s", r);
    free(r);
    char *j = NULL;
    size_t jn = 0;
    FILE *jf = open_memstream(&j, &jn);
    ck_assert_int_eq(memdiff_report_json(d, jf, 0), MEMDIFF_OK);
    fclose(jf);
    ck_assert_msg(strstr(j, "\"touched_bytes\": 69632, \"persistent_bytes\": 196608, "
                            "\"impacting_bytes\": 0, \"transient_bytes\": 0, "
                            "\"touched_estimated_bytes\": 49152, \"touched_max_bytes\": 69632}"),
                  "%s", j);
    free(j);
    memdiff_diff_free(d);
    memdiff__arena_release(&arena);
    memdiff_snapshot_free(sa);
    memdiff_snapshot_free(sb);
}
END_TEST

START_TEST(synthetic_resident_is_touched)
{
    /* Windows: after EmptyWorkingSet, every page resident at the end was touched. */
    memdiff__refs_in refs = {.resident_is_touched = 1};
    memdiff_diff *d = synth_refs(0, &refs);
    memdiff_impact m;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &m), MEMDIFF_OK);
    check_impact(&m, 8 + 4 + 64, 74, 4, "total");
    ck_assert_uint_eq(memdiff_diff_block_count(d), 3); /* the library's block appears */
    memdiff_diff_free(d);
}
END_TEST

/* All 0: what memdiff_diff_get_info() gives a diff of no reference-set bracket. */
static void expect_no_refset(const memdiff_refset_info *in)
{
    ck_assert_uint_eq(in->sources, 0);
    ck_assert_ptr_null(in->degraded);
    ck_assert_uint_eq(in->begin_rss_bytes | in->end_rss_bytes | in->peak_bytes |
                          in->peak_slack_bytes | in->transient_bytes | in->untracked_bytes,
                      0);
}

START_TEST(plain_diff_has_no_impact)
{
    synth_spec sb = {.regions = regions, .region_count = SYNTH_COUNT(regions),
                     .runs = before_runs, .run_count = SYNTH_COUNT(before_runs)};
    synth_spec sa = {.regions = regions, .region_count = SYNTH_COUNT(regions),
                     .runs = after_runs, .run_count = SYNTH_COUNT(after_runs)};
    memdiff_snapshot *b = synth_snapshot(&sb), *a = synth_snapshot(&sa);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(a, a, 0, &d), MEMDIFF_OK);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 0); /* touched attrs alone make no block */
    memdiff_impact m;
    memdiff_block k;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &m), MEMDIFF_EINVAL);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "reference-set bracket"));
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_HEAP, &m), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_diff_block(d, 0, &k), MEMDIFF_ERANGE); /* there is none */
    /* The reference-set info is part of every diff's info now: all 0 here, not an error. */
    memdiff_refset_info in = refset_of(d);
    expect_no_refset(&in);
    memdiff_diff_free(d);

    /* A plain diff that has blocks (the heap's, the library's...): each block's impact is all 0,
     * where the old per-block accessor refused the diff. */
    ck_assert_int_eq(memdiff_compare(b, a, 0, &d), MEMDIFF_OK);
    ck_assert_uint_gt(memdiff_diff_block_count(d), 0);
    for (size_t i = 0; i < memdiff_diff_block_count(d); i++) {
        k = block(d, i);
        ck_assert_msg(k.impact.touched_bytes == 0 && k.impact.persistent_bytes == 0 &&
                          k.impact.impacting_bytes == 0 && k.impact.transient_bytes == 0,
                      "block %zu of a plain diff has an impact: %s", i, scn_block_str(&k));
    }
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &m), MEMDIFF_EINVAL);
    in = refset_of(d);
    expect_no_refset(&in);
    memdiff_diff_free(d);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);

    memdiff__refs_in refs = {.accessed_bit = 1};
    d = synth_refs(0, &refs);
    ck_assert_int_eq(memdiff_diff_block(d, 2, &k), MEMDIFF_ERANGE); /* two blocks */
    /* MEMDIFF_CAT_COUNT is MEMDIFF_CAT_ALL now (the total, checked above); one past it is out
     * of range. */
    ck_assert_int_eq(memdiff_diff_impact(d, (memdiff_category)(MEMDIFF_CAT_COUNT + 1), &m),
                     MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_diff_block(d, 0, NULL), MEMDIFF_EINVAL);
    memdiff_diff_free(d);
}
END_TEST

/* The assertion module's touched and peak measures read a bracket's diff: touched per block and
 * category (filters apply), the peak above the start for the whole process. */
START_TEST(assert_measures)
{
    synth_spec b = {.regions = regions, .region_count = SYNTH_COUNT(regions),
                    .runs = before_runs, .run_count = SYNTH_COUNT(before_runs)};
    synth_spec a = {.regions = regions, .region_count = SYNTH_COUNT(regions),
                    .runs = after_runs, .run_count = SYNTH_COUNT(after_runs)};
    memdiff_refset_info in;
    memset(&in, 0, sizeof in);
    in.sources = MEMDIFF_REFS_CLEARED | MEMDIFF_REFS_PAGES | MEMDIFF_REFS_PEAK;
    in.begin_rss_bytes = 100 * PG;
    in.peak_bytes = 164 * PG;
    memdiff_diff *d = synth_bracket_diff(&b, &a, 0, &in);
    int64_t v = 0;
    memdiff_figure touched = {MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_TOUCHED, NULL};
    ck_assert_int_eq(memdiff_diff_figure(d, &touched, &v), MEMDIFF_OK);
    ck_assert_int_eq(v, 20 * (int64_t)PG);
    touched.category = MEMDIFF_CAT_PRIVATE;
    ck_assert_int_eq(memdiff_diff_figure(d, &touched, &v), MEMDIFF_OK);
    ck_assert_int_eq(v, 16 * (int64_t)PG);
    touched.category = MEMDIFF_CAT_OWN;
    ck_assert_int_eq(memdiff_diff_figure(d, &touched, &v), MEMDIFF_OK);
    ck_assert_int_eq(v, 4 * (int64_t)PG);
    memdiff_filter f = MEMDIFF_FILTER_INIT;
    f.ignore_categories = MEMDIFF_CAT_BIT(MEMDIFF_CAT_PRIVATE);
    touched.category = MEMDIFF_CAT_ALL;
    touched.filter = &f;
    ck_assert_int_eq(memdiff_diff_figure(d, &touched, &v), MEMDIFF_OK);
    ck_assert_int_eq(v, 4 * (int64_t)PG); /* the heap's */
    memdiff_figure peak = {MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_PEAK, NULL};
    ck_assert_int_eq(memdiff_diff_figure(d, &peak, &v), MEMDIFF_OK);
    ck_assert_int_eq(v, 64 * (int64_t)PG);
    peak.category = MEMDIFF_CAT_HEAP;
    ck_assert_int_eq(memdiff_diff_figure(d, &peak, &v), MEMDIFF_EINVAL);
    peak.category = MEMDIFF_CAT_ALL;
    char msg[2048];
    touched.filter = NULL;
    ck_assert_int_eq(memdiff_check(d, &touched, MEMDIFF_CMP_LE, 8 * (int64_t)PG, msg, sizeof msg),
                     0);
    ck_assert_msg(strstr(msg, "touched") && strstr(msg, "anonymous"), "%s", msg);
    ck_assert_int_eq(memdiff_check(d, &peak, MEMDIFF_CMP_LE, 64 * (int64_t)PG, msg, sizeof msg),
                     1);
    memdiff_diff_free(d);
}
END_TEST

/* ---- real brackets of this process ------------------------------------------------------- */

/* A reference-set bracket on this process, with the given MEMDIFF_BRACKET_* flags besides
 * MEMDIFF_BRACKET_REFSET and the compare flags of its diff. */
static memdiff_bracket *begin_self(unsigned flags, unsigned compare_flags)
{
    memdiff_bracket_options bo = MEMDIFF_BRACKET_OPTIONS_INIT;
    bo.flags = MEMDIFF_BRACKET_REFSET | flags;
    bo.compare_flags = compare_flags;
    memdiff_bracket *b = NULL;
    int rc = memdiff_bracket_begin(&bo, &b);
    ck_assert_msg(rc == MEMDIFF_OK, "memdiff_bracket_begin: %s: %s", memdiff_status_name(rc),
                  memdiff_last_error());
    return b;
}

static memdiff_diff *end_ok(memdiff_bracket *b)
{
    memdiff_diff *d = NULL;
    int rc = memdiff_bracket_end(b, &d);
    ck_assert_msg(rc == MEMDIFF_OK, "memdiff_bracket_end: %s: %s", memdiff_status_name(rc),
                  memdiff_last_error());
    if (getenv("MEMDIFF_SCN_DEBUG")) {
        char *r = scn_report(d, 0);
        fprintf(stderr, "%s\n", r);
        free(r);
    }
    return d;
}

/* The bracket measured touched pages (per mapping here: this kernel has no page_idle; per page
 * where a kernel has it and the test runs as root). */
static void expect_touched_known(const memdiff_diff *d)
{
    memdiff_refset_info in = refset_of(d);
    ck_assert_msg((in.sources & MEMDIFF_REFS_CLEARED) &&
                      (in.sources & (MEMDIFF_REFS_MAPPINGS | MEMDIFF_REFS_PAGES)),
                  "sources 0x%x: %s", in.sources, in.degraded ? in.degraded : "");
}

enum { MAP_PAGES = 64, K = 8 };

START_TEST(touched_resident_pages)
{
    size_t ps = scn_page();
    char *m = scn_map(MAP_PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(m, 1, MAP_PAGES * ps); /* all resident before the bracket */
    memdiff_bracket *b = begin_self(0, 0);
    volatile char *v = m;
    unsigned sum = 0;
    for (size_t i = 0; i < K; i++)
        sum += (unsigned char)v[(3 + 2 * i) * ps]; /* K pages read */
    for (size_t i = 0; i < K; i++)
        v[(40 + i) * ps + 7] = (char)(sum + i); /* K other pages written */
    memdiff_diff *d = end_ok(b);
    expect_touched_known(d);

    memdiff_block k = block_at(d, (uintptr_t)m + 3 * ps, MEMDIFF_CAT_PRIVATE);
    memdiff_impact im = k.impact;
    ck_assert_msg(pages(im.touched_bytes) == 2 * K, "touched %llu pages, want %d: %s",
                  (unsigned long long)pages(im.touched_bytes), 2 * K, scn_block_str(&k));
    ck_assert_uint_eq(k.totals.new_bytes, 0);
    ck_assert_uint_eq(k.totals.freed_bytes, 0);
    ck_assert_int_eq(k.change, MEMDIFF_CHANGE_TOUCHED);
    ck_assert_uint_eq(k.presence, BOTH);
    ck_assert_uint_eq(pages(im.persistent_bytes), MAP_PAGES);
    ck_assert_uint_eq(im.impacting_bytes, 0);
    /* A mapping of its own, one region: its figure is exact and says so. */
    ck_assert_uint_eq(im.touched_estimated_bytes, 0);
    ck_assert_uint_eq(im.touched_max_bytes, im.touched_bytes);
    ck_assert_uint_ge(k.start, (uintptr_t)m);
    ck_assert_uint_le(k.end, (uintptr_t)m + MAP_PAGES * ps);

    /* Touched is a reference set: the test's own stack and code were accessed as well. */
    memdiff_impact total;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &total), MEMDIFF_OK);
    ck_assert_uint_gt(total.touched_bytes, im.touched_bytes);
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
    scn_unmap(m, MAP_PAGES);
}
END_TEST

/* Through a pointer the compiler cannot see through, so that malloc, memset and free stay. */
static void *(*volatile alloc_fn)(size_t) = malloc;
static void (*volatile free_fn)(void *) = free;

#if !UNDER_ASAN
/* The Referenced bytes of the mapping (VMA) of this process that holds addr, as smaps gives
 * them, and its range. */
static uint64_t vma_referenced(uintptr_t addr, uint64_t *start, uint64_t *end)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int in = 0;
    uint64_t kb = UINT64_MAX;
    while (fgets(line, sizeof line, f) && kb == UINT64_MAX) {
        unsigned long long lo, hi, v;
        if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, ' ') &&
            strchr(line, '-') < strchr(line, ' ')) {
            in = lo <= addr && addr < hi;
            if (in) {
                *start = lo;
                *end = hi;
            }
        } else if (in && sscanf(line, "Referenced: %llu kB", &v) == 1) {
            kb = v;
        }
    }
    fclose(f);
    ck_assert_msg(kb != UINT64_MAX, "no mapping holds 0x%llx", (unsigned long long)addr);
    return kb * 1024;
}

enum { CHUNK = 4 << 20 };

/* Two 4 MiB malloc chunks: glibc maps each of its own (above M_MMAP_THRESHOLD), the second
 * right below the first, and the kernel merges the two anonymous mappings into one VMA, which
 * the classifier splits into two heap regions again by their chunk headers. smaps gives one
 * Referenced figure for the VMA, so each chunk's touched bytes are a share of it: both blocks
 * carry them as estimated, bounded by the VMA's figure and the chunk's resident size, which is
 * at least what the test touched in it (every page of the first, a quarter of the second). */
START_TEST(touched_chunks_sharing_a_vma)
{
    size_t ps = scn_page();
    char *a = alloc_fn(CHUNK), *c = alloc_fn(CHUNK);
    ck_assert(a && c);
    memset(a, 1, CHUNK);
    memset(c, 1, CHUNK);
    uint64_t vs, ve;
    vma_referenced((uintptr_t)a, &vs, &ve);
    ck_assert_msg(vs <= (uintptr_t)c && (uintptr_t)c < ve,
                  "the chunks %p and %p are not in one VMA (0x%llx-0x%llx)", (void *)a, (void *)c,
                  (unsigned long long)vs, (unsigned long long)ve);
    memdiff_bracket *b = begin_self(0, 0);
    volatile char *va = a, *vc = c;
    for (size_t i = 0; i < CHUNK; i += ps)
        va[i] = 2;
    for (size_t i = 0; i < CHUNK / 4; i += ps)
        vc[i] = 2;
    memdiff_diff *d = end_ok(b);
    expect_touched_known(d);
    int per_page = (refset_of(d).sources & MEMDIFF_REFS_PAGES) != 0;
    /* The VMA's figure now: what the end read and at most memdiff's after snapshot since. */
    uint64_t ref = vma_referenced((uintptr_t)a, &vs, &ve);
    memdiff_block ka = block_at(d, (uintptr_t)a, MEMDIFF_CAT_HEAP);
    memdiff_block kc = block_at(d, (uintptr_t)c, MEMDIFF_CAT_HEAP);
    ck_assert_msg(ka.start != kc.start, "one block for both chunks: %s", scn_block_str(&ka));
    const struct {
        const memdiff_block *k;
        uint64_t touched; /* pages the test touched in it */
    } chunks[] = {{&ka, CHUNK / ps}, {&kc, CHUNK / 4 / ps}};
    for (size_t i = 0; i < 2; i++) {
        const memdiff_impact *m = &chunks[i].k->impact;
        const char *what = scn_block_str(chunks[i].k);
        if (per_page) { /* page_idle: exact, unmarked */
            ck_assert_msg(m->touched_estimated_bytes == 0 &&
                              m->touched_max_bytes == m->touched_bytes,
                          "%s", what);
            continue;
        }
        ck_assert_msg(m->touched_bytes > 0 && m->touched_estimated_bytes == m->touched_bytes,
                      "chunk %zu: touched %llu, estimated %llu: %s", i,
                      (unsigned long long)m->touched_bytes,
                      (unsigned long long)m->touched_estimated_bytes, what);
        ck_assert_msg(m->touched_max_bytes >= chunks[i].touched * ps &&
                          m->touched_max_bytes <= ref,
                      "chunk %zu: at most %llu pages; touched %llu, VMA Referenced %llu: %s", i,
                      (unsigned long long)pages(m->touched_max_bytes),
                      (unsigned long long)chunks[i].touched, (unsigned long long)pages(ref),
                      what);
    }
    if (!per_page) {
        ck_assert_uint_le(ka.impact.touched_bytes + kc.impact.touched_bytes, ref);
        memdiff_impact total;
        ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &total), MEMDIFF_OK);
        ck_assert_uint_ge(total.touched_estimated_bytes,
                          ka.impact.touched_estimated_bytes + kc.impact.touched_estimated_bytes);
        ck_assert_uint_ge(total.touched_max_bytes, total.touched_bytes);
        char msg[4096];
        memdiff_figure f = {MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_TOUCHED, NULL};
        ck_assert_int_eq(memdiff_check(d, &f, MEMDIFF_CMP_GE, 0, msg, sizeof msg), 1);
        ck_assert_msg(strstr(msg, "estimated: ") && strstr(msg, "at most"), "%s", msg);
        char *r = scn_report(d, 0);
        ck_assert_msg(strstr(r, "touched \xe2\x89\x88"), "%s", r);
        free(r);
    }
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
    free_fn(a);
    free_fn(c);
}
END_TEST
#endif /* !UNDER_ASAN */

START_TEST(touched_new_pages)
{
    size_t ps = scn_page();
    char *m = scn_map(MAP_PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memdiff_bracket *b = begin_self(0, 0);
    volatile char *v = m;
    for (size_t i = 0; i < 10; i++)
        v[(2 * i) * ps] = 1; /* 10 new pages */
    for (size_t i = 0; i < 5; i++)
        (void)v[(40 + i) * ps]; /* read faults map the zero page: neither new nor touched */
    /* Where the kernel maps no zero page, a read fault allocates a page as a write does: those
     * five are new and touched too. */
    const uint64_t want = scn_zero_page_on_read() ? 10 : 15;
    memdiff_diff *d = end_ok(b);
    expect_touched_known(d);
    memdiff_block k = block_at(d, (uintptr_t)m, MEMDIFF_CAT_PRIVATE);
    memdiff_impact im = k.impact;
    ck_assert_uint_eq(pages(k.totals.new_bytes), want);
    ck_assert_uint_eq(pages(im.touched_bytes), want);
    ck_assert_uint_eq(im.persistent_bytes, 0);
    ck_assert_uint_eq(pages(im.impacting_bytes), want);
    ck_assert_int_eq(k.change, MEMDIFF_CHANGE_NEW);
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
    scn_unmap(m, MAP_PAGES);
}
END_TEST


enum { BIG = 64 << 20 };

/* A 64 MiB block allocated, written and freed inside the bracket. glibc serves it with a
 * mapping of its own (above M_MMAP_THRESHOLD) and unmaps it on free: it is resident at neither
 * end, so the diff holds no page of it (its net is exactly 0: no block covers its addresses) and
 * only the peak sees it. The peak is VmHWM: the kernel raises it from its RSS counter just
 * before unmapping (update_hiwater_rss()), and that counter is a per-CPU batched one
 * (percpu_counter, Linux 6.2): it lags the true count by less than the slack memdiff reports
 * (batch times CPUs), and so may the RSS read at the end, so transient is the block's 16,385
 * pages (64 MiB and glibc's header page) within twice that slack. Measured on 6.18, 2 CPUs: 0
 * to 66 pages short of 16,385 (slack 64 pages; 66 seen once in 12 parallel ctest runs). */
START_TEST(transient_block)
{
    size_t ps = scn_page();
    memdiff_bracket *b = begin_self(0, 0);
    char *big = alloc_fn(BIG);
    ck_assert_ptr_nonnull(big);
    memset(big, 1, BIG);
    __asm__ volatile("" : : "r"(big) : "memory");
    uintptr_t at = (uintptr_t)big;
    free_fn(big);
    memdiff_diff *d = end_ok(b);

    memdiff_refset_info in = refset_of(d);
    ck_assert_msg(in.sources & MEMDIFF_REFS_PEAK, "no peak: %s", in.degraded ? in.degraded : "");
    uint64_t want = BIG + ps; /* the block and glibc's chunk header page */
    int64_t off = (int64_t)in.transient_bytes - (int64_t)want;
    fprintf(stderr, "transient_block: transient %llu bytes (%lld pages from %llu), slack %llu "
                    "pages; peak %llu, begin %llu, end %llu\n",
            (unsigned long long)in.transient_bytes, (long long)(off / (int64_t)ps),
            (unsigned long long)(want / ps), (unsigned long long)(in.peak_slack_bytes / ps),
            (unsigned long long)in.peak_bytes, (unsigned long long)in.begin_rss_bytes,
            (unsigned long long)in.end_rss_bytes);
    /* The transient is the peak less an RSS reading, each off by up to the slack. */
    ck_assert_msg(in.transient_bytes + 2 * in.peak_slack_bytes >= want,
                  "transient %llu + 2 x slack %llu < %llu", (unsigned long long)in.transient_bytes,
                  (unsigned long long)in.peak_slack_bytes, (unsigned long long)want);
    /* Above: what else the code between begin and end had resident at the peak (a sanitizer's
     * shadow of the block: an eighth of it). */
    ck_assert_uint_le(in.transient_bytes, want + want / 8 + 2 * in.peak_slack_bytes);
    memdiff_impact im;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &im), MEMDIFF_OK);
    ck_assert_uint_eq(im.transient_bytes, in.transient_bytes);

    for (size_t i = 0; i < memdiff_diff_block_count(d); i++) {
        memdiff_block k = block(d, i);
        ck_assert_msg(k.end <= at || k.start >= at + BIG, "a block over the freed block: %s",
                      scn_block_str(&k));
    }
    memdiff_totals t;
    ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &t), MEMDIFF_OK);
    ck_assert_msg(t.net_bytes < (1 << 20) && t.net_bytes > -(1 << 20), "net %lld",
                  (long long)t.net_bytes);
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
}
END_TEST

/* Memory kept: nothing was given back during the bracket, so the kernel never lowered the RSS
 * counter and VmHWM is the exact current RSS: the peak is the end, to the page, and above the
 * start by the 16 MiB kept (plus what else the code between begin and end paged in: its stack
 * and first-call code; measured: nothing, 4,096 pages exactly). memdiff's own storage is the same
 * at both reads: the end reads the peak before it allocates. The diff's net agrees within one
 * fault-around window (16 file pages): the end pages in its own code after reading the peak and
 * before its snapshot (measured: 0 or 14 libc pages). */
START_TEST(peak_of_kept_memory)
{
    enum { KEPT = 4096 };
    size_t ps = scn_page();
    char *m = scn_map(KEPT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* No settling, as 0.1's reference-set bracket never settled: the peak is the end to the
     * page only when nothing is given back during the bracket, and a settling end calls
     * malloc_trim() before it reads the peak, which would take the RSS below VmHWM by whatever
     * free heap pages it gave back (none here so far: begin trimmed the heap; but the exact
     * figure should not rest on that). */
    memdiff_bracket *b = begin_self(MEMDIFF_BRACKET_NO_SETTLE, 0);
    memset(m, 1, (size_t)KEPT * ps);
    memdiff_diff *d = end_ok(b);
    memdiff_refset_info in = refset_of(d);
    ck_assert(in.sources & MEMDIFF_REFS_PEAK);
    memdiff_block k = block_at(d, (uintptr_t)m, MEMDIFF_CAT_PRIVATE);
    ck_assert_uint_eq(pages(k.totals.new_bytes), KEPT);
    ck_assert_uint_eq(in.peak_bytes, in.end_rss_bytes);
    ck_assert_uint_eq(in.transient_bytes, 0);
    memdiff_totals t;
    ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &t), MEMDIFF_OK);
    int64_t grew = (int64_t)(in.peak_bytes - in.begin_rss_bytes);
    fprintf(stderr, "peak_of_kept_memory: peak - begin %lld pages, diff net %lld pages\n",
            (long long)(grew / (int64_t)ps), (long long)(t.net_bytes / (int64_t)ps));
    /* The peak rose by at least what was kept; by how much more is whatever else the process
     * grew meanwhile (under ASan its shadow and allocator), which the diff sees too: the two
     * agree within the kernel's counter slack (per-CPU RSS batching), never a fixed guess. */
    int64_t slack = (int64_t)in.peak_slack_bytes;
    ck_assert_msg(grew >= (int64_t)KEPT * (int64_t)ps, "peak above the start: %lld pages, want %d",
                  (long long)(grew / (int64_t)ps), KEPT);
    ck_assert_msg(t.net_bytes - grew <= slack && grew - t.net_bytes <= slack,
                  "peak above the start %lld pages, diff net %lld pages, slack %lld pages",
                  (long long)(grew / (int64_t)ps), (long long)(t.net_bytes / (int64_t)ps),
                  (long long)(slack / (int64_t)ps));
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
    scn_unmap(m, KEPT);
}
END_TEST

START_TEST(api_errors)
{
    memdiff_bracket *b = NULL;
    memdiff_diff *d = (memdiff_diff *)&b;
    memdiff_refset_info in;
    memdiff_bracket_options bo = MEMDIFF_BRACKET_OPTIONS_INIT;
    bo.flags = MEMDIFF_BRACKET_REFSET;
    ck_assert_int_eq(memdiff_bracket_begin(&bo, NULL), MEMDIFF_EINVAL);
    bo.snapshot.pid = 999999999; /* above PID_MAX_LIMIT */
    b = (memdiff_bracket *)&d;
    ck_assert_int_eq(memdiff_bracket_begin(&bo, &b), MEMDIFF_ESRCH);
    ck_assert_ptr_null(b);
    /* Flags the bracket does not know, compare flags memdiff_compare() does not know, and
     * MEMDIFF_COMPARE_FORCE (a reference-set bracket compares one process with itself) are
     * refused at begin, which takes the compare flags now (0.1's memdiff_refset_end() refused
     * them at the end). */
    bo.snapshot.pid = 0;
    const unsigned bad[][2] = {{MEMDIFF_BRACKET_REFSET | 0x100u, 0},
                               {MEMDIFF_BRACKET_REFSET, 0x100u},
                               {MEMDIFF_BRACKET_REFSET, MEMDIFF_COMPARE_FORCE}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bo.flags = bad[i][0];
        bo.compare_flags = bad[i][1];
        b = (memdiff_bracket *)&d;
        ck_assert_int_eq(memdiff_bracket_begin(&bo, &b), MEMDIFF_EINVAL);
        ck_assert_ptr_null(b);
    }
    ck_assert_int_eq(memdiff_bracket_end(NULL, &d), MEMDIFF_EINVAL);
    ck_assert_ptr_null(d);

    b = begin_self(0, MEMDIFF_COMPARE_VERBOSE);
    ck_assert_int_eq(memdiff_bracket_get_info(b, &in), MEMDIFF_OK);
    ck_assert_uint_gt(in.begin_rss_bytes, 0);
    ck_assert_uint_eq(in.peak_bytes, 0); /* known at the end only */
    ck_assert_int_eq(memdiff_bracket_get_info(NULL, &in), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_bracket_get_info(b, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_bracket_end(b, NULL), MEMDIFF_EINVAL);
    d = end_ok(b); /* the end above was refused before it ended anything */
    memdiff_diff_info di;
    ck_assert_int_eq(memdiff_diff_get_info(d, &di), MEMDIFF_OK);
    ck_assert_uint_eq(di.compare_flags, MEMDIFF_COMPARE_VERBOSE); /* begin's, for the end */
    ck_assert_uint_gt(di.refset.peak_bytes, 0);
    /* An ended bracket: one end only; it stays to be freed and still answers. */
    memdiff_diff *again = (memdiff_diff *)&b;
    ck_assert_int_eq(memdiff_bracket_end(b, &again), MEMDIFF_EINVAL);
    ck_assert_ptr_null(again);
    ck_assert_int_eq(memdiff_bracket_get_info(b, &in), MEMDIFF_OK);
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
    memdiff_bracket_free(NULL);
}
END_TEST

/* A bracket without MEMDIFF_BRACKET_REFSET is a plain one: nothing cleared or reset, its info
 * and its diff's reference-set info all 0, no impact. */
START_TEST(plain_bracket_has_no_refset)
{
    memdiff_bracket *b = NULL;
    ck_assert_int_eq(memdiff_bracket_begin(NULL, &b), MEMDIFF_OK);
    memdiff_refset_info in;
    memset(&in, 0xa5, sizeof in);
    ck_assert_int_eq(memdiff_bracket_get_info(b, &in), MEMDIFF_OK);
    expect_no_refset(&in);
    memdiff_diff *d = end_ok(b);
    in = refset_of(d);
    expect_no_refset(&in);
    memdiff_impact m;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &m), MEMDIFF_EINVAL);
    int64_t v = 0;
    memdiff_figure touched = {MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_TOUCHED, NULL};
    ck_assert_int_eq(memdiff_diff_figure(d, &touched, &v), MEMDIFF_ENOTSUP);
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
}
END_TEST

/* Resident pages of [p, p + len), page aligned inward. */
static size_t resident_pages(const char *p, size_t len)
{
    size_t ps = scn_page();
    uintptr_t lo = ((uintptr_t)p + ps - 1) / ps * ps, hi = ((uintptr_t)p + len) / ps * ps;
    if (hi <= lo)
        return 0;
    unsigned char vec[1024];
    ck_assert_uint_le((hi - lo) / ps, sizeof vec);
    ck_assert_msg(mincore((void *)lo, hi - lo, vec) == 0, "mincore 0x%llx-0x%llx: %s",
                  (unsigned long long)lo, (unsigned long long)hi, strerror(errno));
    size_t n = 0;
    for (size_t i = 0; i < (hi - lo) / ps; i++)
        n += vec[i] & 1;
    return n;
}

/* A reference-set bracket on the calling process settles the heap before its before snapshot,
 * as every bracket does (0.1's memdiff_refset_begin() did not); MEMDIFF_BRACKET_NO_SETTLE keeps
 * the old way. The heap holds a freed 512 KiB chunk in its middle (below the mmap threshold, so
 * it is heap; kept blocks above it, so that it is not the top, which malloc_trim() would give
 * back whole): its pages stay resident until malloc_trim(0) discards them, which is what
 * settling calls. */
START_TEST(refset_begin_settles)
{
    if (UNDER_ASAN) /* AddressSanitizer's allocator: glibc's malloc_trim() has nothing to trim */
        return;
    enum { FREED = 512 << 10, FENCES = 1024 };
    ck_assert_int_eq(mallopt(M_MMAP_THRESHOLD, 4 << 20), 1);
    ck_assert_int_eq(mallopt(M_TRIM_THRESHOLD, 64 << 20), 1);
    for (int settle = 0; settle <= 1; settle++) {
        char *freed = alloc_fn(FREED);
        ck_assert_ptr_nonnull(freed);
        /* Small blocks until one comes from the top, above the chunk (those before it fill
         * free space below). */
        static char *fence[FENCES];
        size_t fences = 0;
        do {
            fence[fences] = alloc_fn(64);
            ck_assert_ptr_nonnull(fence[fences]);
        } while ((uintptr_t)fence[fences++] < (uintptr_t)freed && fences < FENCES);
        ck_assert((uintptr_t)fence[fences - 1] > (uintptr_t)freed);
        memset(freed, 1, FREED);
        __asm__ volatile("" : : "r"(freed) : "memory");
        free_fn(freed);
        /* The chunk's whole pages past the allocator's free-chunk header (its first 64 bytes,
         * which malloc_trim() keeps): all resident, free() gave nothing back. */
        char *lo = freed + 64;
        size_t len = FREED - 64, want = (((uintptr_t)lo + len) / scn_page() -
                                         ((uintptr_t)lo + scn_page() - 1) / scn_page());
        size_t resident = resident_pages(lo, len);
        ck_assert_uint_eq(resident, want);
        memdiff_bracket *b = begin_self(settle ? 0 : MEMDIFF_BRACKET_NO_SETTLE, 0);
        size_t after = resident_pages(lo, len);
        ck_assert_msg(settle ? after == 0 : after == resident,
                      "%s: %zu of the freed chunk's pages resident after begin, %zu before",
                      settle ? "settled" : "MEMDIFF_BRACKET_NO_SETTLE", after, resident);
        memdiff_bracket_free(b);
        for (size_t i = 0; i < fences; i++)
            free_fn(fence[i]);
    }
}
END_TEST

/* ---- the recorded tree ------------------------------------------------------------------- */

#define RECORDED_PID 4194305

typedef struct tree {
    char *root;
    uint64_t private_start; /* the target's "private" feature: 32 pages, the first 10 written */
} tree;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The expanded tree; with_clear_refs: the process's clear_refs file exists (the recorder could
 * not copy a write-only file), so that begin can write it. Without with_page_idle the copy's
 * sys/ (which holds the page_idle bitmap alone) is renamed away: a fixture root is read as /proc
 * and, at ROOT/sys, as /sys, so a tree without ROOT/sys is a system without page_idle. The
 * checked-in fixture is left as it is. */
static void tree_open(tree *t, int with_clear_refs, int with_page_idle)
{
    char err[512], path[4096];
    t->root = fixture_tree_expand(MEMDIFF_TEST_FIXTURES "/recorded", err, sizeof err);
    ck_assert_msg(t->root != NULL, "%s", err);
    if (!with_page_idle) {
        char to[4096];
        snprintf(path, sizeof path, "%s/sys", t->root);
        snprintf(to, sizeof to, "%s/no-sys", t->root);
        ck_assert_msg(rename(path, to) == 0, "%s: %s", path, strerror(errno));
    }
    if (with_clear_refs) {
        snprintf(path, sizeof path, "%s/%d/clear_refs", t->root, RECORDED_PID);
        write_file(path, "");
    }
    snprintf(path, sizeof path, "%s/features.txt", t->root);
    char *text = read_file(path);
    char *at = strstr(text, "\nprivate 0x");
    ck_assert_ptr_nonnull(at);
    t->private_start = strtoull(at + strlen("\nprivate "), NULL, 16);
}

/* A reference-set bracket on the recorded process of the tree at root (another process: no
 * settling, no warm-up). */
static memdiff_bracket *recorded_begin(const char *root)
{
    memdiff_bracket_options bo = MEMDIFF_BRACKET_OPTIONS_INIT;
    bo.snapshot.pid = RECORDED_PID;
    bo.snapshot.fixture_root = root;
    bo.flags = MEMDIFF_BRACKET_REFSET;
    memdiff_bracket *b = NULL;
    int rc = memdiff_bracket_begin(&bo, &b);
    ck_assert_msg(rc == MEMDIFF_OK, "%s: %s", memdiff_status_name(rc), memdiff_last_error());
    return b;
}

/* tree_open(), then a bracket on the recorded process through it. */
static memdiff_bracket *tree_begin(tree *t, int with_clear_refs, int with_page_idle)
{
    tree_open(t, with_clear_refs, with_page_idle);
    return recorded_begin(t->root);
}

static int open_in(const tree *t, const char *name, int flags)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", t->root, name);
    int fd = open(path, flags);
    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    return fd;
}

static uint64_t pagemap_entry(int fd, uint64_t addr)
{
    uint64_t e = 0;
    ck_assert_int_eq(pread(fd, &e, 8, (off_t)(addr / 4096 * 8)), 8);
    return e;
}

#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_EXCLUSIVE (UINT64_C(1) << 56)
#define PM_PFN(e) ((e) & ((UINT64_C(1) << 55) - 1))

/* Bit pfn of the page_idle bitmap: reads it, and when set >= 0 writes it first. */
static int idle_bit(int fd, uint64_t pfn, int set)
{
    uint64_t w = 0;
    ssize_t r = pread(fd, &w, 8, (off_t)(pfn / 64 * 8));
    ck_assert_int_ge(r, 0);
    if (set >= 0) {
        w = set ? w | UINT64_C(1) << (pfn % 64) : w & ~(UINT64_C(1) << (pfn % 64));
        ck_assert_int_eq(pwrite(fd, &w, 8, (off_t)(pfn / 64 * 8)), 8);
    }
    return (w >> (pfn % 64)) & 1;
}

/* Per page, through page_idle: begin marks every resident frame of the process idle (checked
 * in the bitmap), then the test plays the process: it clears the idle bit of four resident
 * pages of the "private" feature (accessed), maps a new page there with a frame begin never
 * saw, drops the tenth page (discarded), and raises VmHWM 64 MiB above VmRSS. Nothing else was
 * accessed, so every figure is exact: touched 5 pages, all in that block. */
START_TEST(page_idle_fixture)
{
    tree t;
    memdiff_bracket *b = tree_begin(&t, 1, 1);
    memdiff_refset_info in;
    ck_assert_int_eq(memdiff_bracket_get_info(b, &in), MEMDIFF_OK);
    ck_assert_uint_eq(in.sources, MEMDIFF_REFS_CLEARED | MEMDIFF_REFS_PAGES | MEMDIFF_REFS_PEAK);
    ck_assert_uint_eq(in.untracked_bytes, 0); /* a plain file keeps every bit written */
    ck_assert_msg(in.degraded == NULL, "%s", in.degraded);
    char path[4096];
    snprintf(path, sizeof path, "%s/%d/clear_refs", t.root, RECORDED_PID);
    ck_assert_str_eq(read_file(path), "5"); /* "1", "4" and "5", each written alone */

    char pm_name[64];
    snprintf(pm_name, sizeof pm_name, "%d/pagemap", RECORDED_PID);
    int pm = open_in(&t, pm_name, O_RDWR);
    int idle = open_in(&t, "sys/kernel/mm/page_idle/bitmap", O_RDWR);
    uint64_t p = t.private_start, ps = 4096;
    for (int i = 0; i < 10; i++) {
        uint64_t e = pagemap_entry(pm, p + i * ps);
        ck_assert(e & PM_PRESENT);
        ck_assert_msg(idle_bit(idle, PM_PFN(e), -1), "page %d's frame was not marked idle", i);
    }
    for (int i = 1; i <= 7; i += 2) /* accessed: the kernel clears the idle bit */
        idle_bit(idle, PM_PFN(pagemap_entry(pm, p + i * ps)), 0);
    uint64_t fresh = PM_PRESENT | PM_EXCLUSIVE | 0x3ffff0; /* a frame no bitmap word holds */
    ck_assert_int_eq(pwrite(pm, &fresh, 8, (off_t)((p + 12 * ps) / 4096 * 8)), 8);
    uint64_t gone = 0;
    ck_assert_int_eq(pwrite(pm, &gone, 8, (off_t)((p + 9 * ps) / 4096 * 8)), 8);
    close(idle);
    close(pm);
    snprintf(path, sizeof path, "%s/%d/status", t.root, RECORDED_PID);
    char *status = strdup(read_file(path));
    char *hwm = strstr(status, "VmHWM:"), *rss = strstr(status, "VmRSS:");
    ck_assert(hwm && rss);
    unsigned long long rss_kb = strtoull(rss + 6, NULL, 10);
    char line[64];
    int n = snprintf(line, sizeof line, "VmHWM:\t%8llu kB", rss_kb + 65536);
    char *nl = strchr(hwm, '\n');
    memmove(hwm + n, nl, strlen(nl) + 1);
    memcpy(hwm, line, (size_t)n);
    write_file(path, status);
    free(status);

    memdiff_diff *d = end_ok(b);
    in = refset_of(d);
    ck_assert_uint_eq(in.sources, MEMDIFF_REFS_CLEARED | MEMDIFF_REFS_PAGES | MEMDIFF_REFS_PEAK);
    ck_assert_uint_eq(in.begin_rss_bytes, rss_kb * 1024);
    ck_assert_uint_eq(in.end_rss_bytes, rss_kb * 1024);
    ck_assert_uint_eq(in.peak_bytes, (rss_kb + 65536) * 1024);
    ck_assert_uint_eq(in.transient_bytes, 64u << 20);

    memdiff_impact total;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &total), MEMDIFF_OK);
    ck_assert_uint_eq(total.touched_bytes, 5 * ps);
    ck_assert_uint_eq(total.impacting_bytes, 2 * ps);
    ck_assert_uint_eq(total.transient_bytes, 64u << 20);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    memdiff_block k = block(d, 0);
    ck_assert_uint_eq(k.start, p + 1 * ps);
    ck_assert_uint_eq(k.end, p + 13 * ps);
    ck_assert_int_eq(k.change, MEMDIFF_CHANGE_MIXED);
    ck_assert_uint_eq(k.totals.new_bytes, ps);
    ck_assert_uint_eq(k.totals.freed_discarded_bytes, ps);
    ck_assert_uint_eq(k.impact.touched_bytes, 5 * ps);
    ck_assert_uint_eq(k.impact.persistent_bytes, 9 * ps);
    ck_assert_uint_eq(k.impact.impacting_bytes, 2 * ps);
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
    fixture_tree_remove(t.root);
}
END_TEST

/* Per mapping: without page_idle, touched is what smaps says was referenced, per VMA. The
 * recorded smaps says 40 KiB for the "private" feature (its 10 written pages) and 6,276 KiB in
 * all; the recorded tree does not change between the two reads, so those are the figures. */
START_TEST(mappings_fixture)
{
    tree t;
    memdiff_bracket *b = tree_begin(&t, 1, 0);
    memdiff_diff *d = end_ok(b);
    memdiff_refset_info in = refset_of(d);
    ck_assert_uint_eq(in.sources, MEMDIFF_REFS_CLEARED | MEMDIFF_REFS_MAPPINGS | MEMDIFF_REFS_PEAK);
    ck_assert_ptr_nonnull(strstr(in.degraded, "page_idle"));

    char path[4096];
    snprintf(path, sizeof path, "%s/%d/smaps", t.root, RECORDED_PID);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    uint64_t referenced = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Referenced:", 11) == 0)
            referenced += strtoull(line + 11, NULL, 10) * 1024;
    fclose(f);
    memdiff_impact total;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &total), MEMDIFF_OK);
    ck_assert_uint_eq(total.touched_bytes, referenced);
    ck_assert_uint_eq(total.impacting_bytes, 0);
    memdiff_block k = block_at(d, (uintptr_t)t.private_start, MEMDIFF_CAT_PRIVATE);
    ck_assert_uint_eq(k.impact.touched_bytes, 40 * 1024);
    ck_assert_int_eq(k.change, MEMDIFF_CHANGE_TOUCHED);
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
    fixture_tree_remove(t.root);
}
END_TEST

/* clear_refs refused (here: missing): the bracket goes on, touched is unknown and says why,
 * and so does the peak (the lifetime peak may still rise during the bracket). */
START_TEST(degraded_without_clear_refs)
{
    tree t;
    memdiff_bracket *b = tree_begin(&t, 0, 1);
    memdiff_refset_info in;
    ck_assert_int_eq(memdiff_bracket_get_info(b, &in), MEMDIFF_OK);
    ck_assert_uint_eq(in.sources, 0);
    ck_assert_ptr_nonnull(in.degraded);
    ck_assert_msg(strstr(in.degraded, "clear_refs") && strstr(in.degraded, "lifetime peak"), "%s",
                  in.degraded);
    memdiff_diff *d = end_ok(b);
    memdiff_impact total;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &total), MEMDIFF_OK);
    ck_assert_uint_eq(total.touched_bytes, 0);
    ck_assert_uint_gt(total.persistent_bytes, 0);
    char *text = scn_report(d, MEMDIFF_REPORT_NO_HEADER);
    ck_assert_msg(strstr(text, "Touched:                        unknown\n") &&
                      strstr(text, "Peak resident:                  unknown\n") &&
                      strstr(text, "(reference set: write "),
                  "%s", text);
    free(text);
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
    fixture_tree_remove(t.root);
}
END_TEST

/* A peak the status file cannot give (no VmHWM, no VmRSS) is a degraded note that quotes the
 * backend's detail, path included. The note is escaped when it is printed, like any other:
 * it must hold the detail as formatted, so a root reached through "a\x41" (a backslash then
 * "x41", a name a target could choose) reads "a\x41" in the note, not "a\\x41" (escaped
 * twice: once by memdiff__set_error(), once more by the report). */
START_TEST(peak_note_escaped_once)
{
    tree t;
    tree_open(&t, 1, 1);
    char path[4096], link[4096];
    snprintf(path, sizeof path, "%s/%d/status", t.root, RECORDED_PID);
    char *status = strdup(read_file(path));
    const char *drop[] = {"VmHWM:", "VmRSS:"};
    for (int i = 0; i < 2; i++) {
        char *at = strstr(status, drop[i]);
        ck_assert_ptr_nonnull(at);
        char *nl = strchr(at, '\n');
        memmove(at, nl + 1, strlen(nl + 1) + 1);
    }
    write_file(path, status);
    free(status);
    snprintf(link, sizeof link, "%s/a\\x41", t.root);
    ck_assert_int_eq(symlink(t.root, link), 0);

    memdiff_bracket *b = recorded_begin(link); /* its sys/ through the link too */
    memdiff_refset_info in;
    ck_assert_int_eq(memdiff_bracket_get_info(b, &in), MEMDIFF_OK);
    ck_assert_uint_eq(in.sources & MEMDIFF_REFS_PEAK, 0);
    char want[4200];
    snprintf(want, sizeof want, "%s/%d/status has no VmHWM / VmRSS", link, RECORDED_PID);
    ck_assert_msg(in.degraded && strstr(in.degraded, want), "%s", in.degraded);
    memdiff_bracket_free(b);
    unlink(link);
    fixture_tree_remove(t.root);
}
END_TEST

Suite *refset_suite(void)
{
    Suite *s = suite_create("refset");
    TCase *tc = tcase_create("Synthetic");
    tcase_add_test(tc, synthetic_per_page);
    tcase_add_test(tc, synthetic_per_mapping);
    tcase_add_test(tc, synthetic_shared_mapping);
    tcase_add_test(tc, synthetic_resident_is_touched);
    tcase_add_test(tc, plain_diff_has_no_impact);
    tcase_add_test(tc, assert_measures);
    suite_add_tcase(s, tc);

    tc = tcase_create("Process");
    tcase_add_test(tc, touched_resident_pages);
#if !UNDER_ASAN /* ASan's allocator serves malloc: no glibc chunks (docs/categories.md) */
    tcase_add_test(tc, touched_chunks_sharing_a_vma);
#endif
    tcase_add_test(tc, touched_new_pages);
    tcase_add_test(tc, transient_block);
    tcase_add_test(tc, peak_of_kept_memory);
    tcase_add_test(tc, api_errors);
    tcase_add_test(tc, plain_bracket_has_no_refset);
    tcase_add_test(tc, refset_begin_settles);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("Recorded");
    tcase_add_test(tc, page_idle_fixture);
    tcase_add_test(tc, mappings_fixture);
    tcase_add_test(tc, degraded_without_clear_refs);
    tcase_add_test(tc, peak_note_escaped_once);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
