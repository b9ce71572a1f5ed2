/*
 * test_compare.c - the compare engine on synthetic snapshots (tests/synth.h): every outcome with
 * exact page counts, attribution, Own, blocks in both modes, reuse of snapshots, lifetime of the
 * diff, error paths and a large case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "internal.h"
#include "suites.h"
#include "synth.h"

#define PG ((uint64_t)SYNTH_PAGE)
#define PRES MEMDIFF_PAGE_PRESENT
#define PRIV MEMDIFF_PAGE_PRIVATE
#define FILEPG MEMDIFF_PAGE_FILE
#define SWAP MEMDIFF_PAGE_SWAPPED
#define ZERO MEMDIFF_PAGE_ZERO
#define BOTH (MEMDIFF_IN_BEFORE | MEMDIFF_IN_AFTER)

#define HEAP 0x10000000u
#define LIB 0x7f0000000000u
#define FILEMAP 0x7f1000000000u
#define OWNMAP 0x7f2000000000u

/* Expected totals, in pages. */
typedef struct pages {
    uint64_t new_private, new_shared, unmapped, discarded, swapped, replaced, became_private,
        became_shared;
} pages;

static void check_totals(const memdiff_totals *t, pages e)
{
    ck_assert_uint_eq(t->new_private_bytes, e.new_private * PG);
    ck_assert_uint_eq(t->new_shared_bytes, e.new_shared * PG);
    ck_assert_uint_eq(t->new_bytes, (e.new_private + e.new_shared) * PG);
    ck_assert_uint_eq(t->freed_unmapped_bytes, e.unmapped * PG);
    ck_assert_uint_eq(t->freed_discarded_bytes, e.discarded * PG);
    ck_assert_uint_eq(t->freed_swapped_bytes, e.swapped * PG);
    ck_assert_uint_eq(t->freed_bytes, (e.unmapped + e.discarded + e.swapped) * PG);
    ck_assert_uint_eq(t->replaced_bytes, e.replaced * PG);
    ck_assert_uint_eq(t->became_private_bytes, e.became_private * PG);
    ck_assert_uint_eq(t->became_shared_bytes, e.became_shared * PG);
    ck_assert_int_eq(t->net_bytes, ((int64_t)(e.new_private + e.new_shared) -
                                    (int64_t)(e.unmapped + e.discarded + e.swapped)) *
                                       (int64_t)PG);
}

static void check_diff_totals(const memdiff_diff *d, pages e)
{
    memdiff_totals t;
    ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &t), MEMDIFF_OK);
    check_totals(&t, e);
}

static void check_category(const memdiff_diff *d, memdiff_category c, pages e)
{
    memdiff_totals t;
    ck_assert_int_eq(memdiff_diff_totals(d, c, &t), MEMDIFF_OK);
    check_totals(&t, e);
}

/* Block i of d, which must exist (memdiff_diff_block() copies it out). */
static memdiff_block block_of(const memdiff_diff *d, size_t i)
{
    memdiff_block k;
    int rc = memdiff_diff_block(d, i, &k);
    ck_assert_msg(rc == MEMDIFF_OK, "block %zu: %s: %s", i, memdiff_status_name(rc),
                  memdiff_last_error());
    return k;
}

/* No block i in d: MEMDIFF_ERANGE with a detail, and *out left as it was (the accessors copy out
 * only on success, as memdiff_snapshot_region() does). */
static void check_no_block(const memdiff_diff *d, size_t i)
{
    memdiff_block k, untouched;
    memset(&k, 0xA5, sizeof k);
    memcpy(&untouched, &k, sizeof k);
    ck_assert_int_eq(memdiff_diff_block(d, i, &k), MEMDIFF_ERANGE);
    ck_assert_str_ne(memdiff_last_error(), "");
    ck_assert_int_eq(memcmp(&k, &untouched, sizeof k), 0);
}

static void check_block_totals(const memdiff_diff *d, size_t i, pages e)
{
    const memdiff_block k = block_of(d, i);
    check_totals(&k.totals, e);
}

static void check_block(const memdiff_diff *d, size_t i, uint64_t start, uint64_t end,
                        memdiff_category c, const char *label, memdiff_change change,
                        unsigned presence)
{
    const memdiff_block k = block_of(d, i);
    ck_assert_uint_eq(k.start, start);
    ck_assert_uint_eq(k.end, end);
    ck_assert_int_eq(k.category, c);
    ck_assert_str_eq(k.label, label);
    ck_assert_int_eq(k.change, change);
    ck_assert_uint_eq(k.presence, presence);
}

/* The diff of two snapshots made from tables; both snapshots are freed before returning, which
 * every test thereby checks the diff survives. */
static memdiff_diff *diff_specs(const synth_spec *b, const synth_spec *a, unsigned flags)
{
    memdiff_snapshot *sb = synth_snapshot(b), *sa = synth_snapshot(a);
    ck_assert_ptr_nonnull(sb);
    ck_assert_ptr_nonnull(sa);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(sb, sa, flags, &d), MEMDIFF_OK);
    ck_assert_ptr_nonnull(d);
    memdiff_snapshot_free(sa);
    memdiff_snapshot_free(sb);
    return d;
}

#define SPEC(regs, runs_) \
    ((synth_spec){.regions = (regs), .region_count = SYNTH_COUNT(regs), .runs = (runs_), \
                  .run_count = SYNTH_COUNT(runs_)})
#define SPEC_NORUNS(regs) ((synth_spec){.regions = (regs), .region_count = SYNTH_COUNT(regs)})

static const synth_region heap_only[] = {
    {HEAP, HEAP + 16 * PG, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
};

/* ---- outcomes ----------------------------------------------------------------------------- */

START_TEST(touched_pages_are_new)
{
    static const synth_run before[] = {{HEAP, 4, PRES | PRIV}};
    static const synth_run after[] = {
        {HEAP, 10, PRES | PRIV},
        {HEAP + 12 * PG, 2, PRES | FILEPG}, /* shared: exclusive bit clear */
    };
    memdiff_diff *d = diff_specs(&SPEC(heap_only, before), &SPEC(heap_only, after), 0);
    check_diff_totals(d, (pages){.new_private = 6, .new_shared = 2});
    check_category(d, MEMDIFF_CAT_HEAP, (pages){.new_private = 6, .new_shared = 2});
    check_category(d, MEMDIFF_CAT_PRIVATE, (pages){0});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, HEAP + 4 * PG, HEAP + 14 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_NEW, BOTH);
    check_block_totals(d, 0, (pages){.new_private = 6, .new_shared = 2});
    memdiff_diff_free(d);
}
END_TEST

START_TEST(discarded_pages_are_freed)
{
    static const synth_run before[] = {{HEAP, 8, PRES | PRIV}};
    static const synth_run after[] = {{HEAP, 3, PRES | PRIV}};
    memdiff_diff *d = diff_specs(&SPEC(heap_only, before), &SPEC(heap_only, after), 0);
    check_diff_totals(d, (pages){.discarded = 5});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, HEAP + 3 * PG, HEAP + 8 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_FREED, BOTH);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(swapped_out_and_back)
{
    static const synth_run before[] = {
        {HEAP, 4, PRES | PRIV},
        {HEAP + 4 * PG, 2, SWAP}, /* swapped in both: no change */
        {HEAP + 6 * PG, 3, SWAP}, /* swapped in again after: new */
    };
    static const synth_run after[] = {
        {HEAP, 6, SWAP},
        {HEAP + 6 * PG, 3, PRES | PRIV},
    };
    memdiff_diff *d = diff_specs(&SPEC(heap_only, before), &SPEC(heap_only, after), 0);
    check_diff_totals(d, (pages){.swapped = 4, .new_private = 3});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, HEAP, HEAP + 9 * PG, MEMDIFF_CAT_HEAP, "[heap]", MEMDIFF_CHANGE_MIXED,
                BOTH);
    memdiff_diff_free(d);
}
END_TEST

static const synth_region file_a[] = {
    {FILEMAP, FILEMAP + 8 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/a.bin", FILEMAP,
     MEMDIFF_REGION_FILE, 0x801, 11, 0},
};

START_TEST(unmapped_region_is_freed_before_only)
{
    static const synth_run before[] = {{HEAP, 2, PRES | PRIV}, {FILEMAP + PG, 3, PRES | FILEPG}};
    static const synth_run after[] = {{HEAP, 2, PRES | PRIV}};
    static const synth_region regs_before[] = {heap_only[0], file_a[0]};
    memdiff_diff *d = diff_specs(&SPEC(regs_before, before), &SPEC(heap_only, after), 0);
    check_diff_totals(d, (pages){.unmapped = 3});
    check_category(d, MEMDIFF_CAT_MAPPED_FILE, (pages){.unmapped = 3});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, FILEMAP + PG, FILEMAP + 4 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/a.bin",
                MEMDIFF_CHANGE_FREED, MEMDIFF_IN_BEFORE);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(new_region_is_new_after_only)
{
    static const synth_run before[] = {{HEAP, 2, PRES | PRIV}};
    static const synth_run after[] = {{HEAP, 2, PRES | PRIV}, {FILEMAP, 5, PRES | FILEPG}};
    static const synth_region regs_after[] = {heap_only[0], file_a[0]};
    memdiff_diff *d = diff_specs(&SPEC(heap_only, before), &SPEC(regs_after, after), 0);
    check_diff_totals(d, (pages){.new_shared = 5});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, FILEMAP, FILEMAP + 5 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/a.bin",
                MEMDIFF_CHANGE_NEW, MEMDIFF_IN_AFTER);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(remapped_with_another_file_is_freed_and_new)
{
    static const synth_region file_b[] = {
        {FILEMAP, FILEMAP + 8 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/b.bin", FILEMAP,
         MEMDIFF_REGION_FILE, 0x801, 12, 0},
    };
    static const synth_run runs[] = {{FILEMAP, 4, PRES | FILEPG}};
    memdiff_diff *d = diff_specs(&SPEC(file_a, runs), &SPEC(file_b, runs), 0);
    check_diff_totals(d, (pages){.unmapped = 4, .new_shared = 4});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 2);
    /* Same start, same category: the walk's order (freed first) is kept. */
    check_block(d, 0, FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/a.bin",
                MEMDIFF_CHANGE_FREED, MEMDIFF_IN_BEFORE);
    check_block(d, 1, FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/b.bin",
                MEMDIFF_CHANGE_NEW, MEMDIFF_IN_AFTER);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(same_file_other_offset_is_another_mapping)
{
    static const synth_region shifted[] = {
        {FILEMAP, FILEMAP + 8 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/a.bin", FILEMAP,
         MEMDIFF_REGION_FILE, 0x801, 11, 2 * PG},
    };
    static const synth_run runs[] = {{FILEMAP, 2, PRES | FILEPG}};
    memdiff_diff *d = diff_specs(&SPEC(file_a, runs), &SPEC(shifted, runs), 0);
    check_diff_totals(d, (pages){.unmapped = 2, .new_shared = 2});
    memdiff_diff_free(d);

    /* The same file at the same offset, split into two regions after: nothing changed. */
    static const synth_region split[] = {
        {FILEMAP, FILEMAP + PG, MEMDIFF_CAT_MAPPED_FILE, "/data/a.bin", FILEMAP,
         MEMDIFF_REGION_FILE, 0x801, 11, 0},
        {FILEMAP + PG, FILEMAP + 8 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/a.bin", FILEMAP,
         MEMDIFF_REGION_FILE, 0x801, 11, PG},
    };
    static const synth_run split_runs[] = {{FILEMAP, 1, PRES | FILEPG},
                                           {FILEMAP + PG, 1, PRES | FILEPG}};
    d = diff_specs(&SPEC(file_a, runs), &SPEC(split, split_runs), 0);
    check_diff_totals(d, (pages){0});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 0);
    memdiff_diff_free(d);
}
END_TEST

/* dlclose of one library and dlopen of another at the same address: the new module's anonymous
 * .bss lies where the old one's did, with new frames. Another owner is another mapping. */
START_TEST(another_owner_at_one_address_is_freed_and_new)
{
    static const synth_region old_bss[] = {
        {FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_IMAGE, "/lib/old.so", FILEMAP, 0, 0, 0, 0},
    };
    static const synth_region new_bss[] = {
        {FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_IMAGE, "/lib/new.so", FILEMAP, 0, 0, 0, 0},
    };
    static const synth_run runs[] = {{FILEMAP, 4, PRES | PRIV}};
    static const uint64_t pfn_before[] = {10, 11, 12, 13};
    static const uint64_t pfn_after[] = {20, 21, 22, 23};
    synth_spec b = SPEC(old_bss, runs), a = SPEC(new_bss, runs);
    b.pfn = pfn_before;
    a.pfn = pfn_after;
    memdiff_diff *d = diff_specs(&b, &a, 0);
    check_diff_totals(d, (pages){.unmapped = 4, .new_private = 4});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 2);
    check_block(d, 0, FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_IMAGE, "/lib/old.so",
                MEMDIFF_CHANGE_FREED, MEMDIFF_IN_BEFORE);
    check_block(d, 1, FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_IMAGE, "/lib/new.so",
                MEMDIFF_CHANGE_NEW, MEMDIFF_IN_AFTER);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(other_category_at_one_address_sorts_by_category)
{
    static const synth_region anon[] = {
        {HEAP, HEAP + 4 * PG, MEMDIFF_CAT_PRIVATE, "anonymous", 7, 0, 0, 0, 0},
    };
    static const synth_run runs[] = {{HEAP, 2, PRES | PRIV}};
    memdiff_diff *d = diff_specs(&SPEC(anon, runs), &SPEC(heap_only, runs), 0);
    check_diff_totals(d, (pages){.unmapped = 2, .new_private = 2});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 2);
    check_block(d, 0, HEAP, HEAP + 2 * PG, MEMDIFF_CAT_HEAP, "[heap]", MEMDIFF_CHANGE_NEW,
                MEMDIFF_IN_AFTER);
    check_block(d, 1, HEAP, HEAP + 2 * PG, MEMDIFF_CAT_PRIVATE, "anonymous", MEMDIFF_CHANGE_FREED,
                MEMDIFF_IN_BEFORE);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(replaced_frames)
{
    static const synth_run runs[] = {{HEAP, 6, PRES | PRIV}};
    static const uint64_t pfn_before[] = {100, 101, 102, 103, 0, 105};
    static const uint64_t pfn_after[] = {100, 201, 202, 103, 204, 0}; /* 0: frame unknown */
    synth_spec b = SPEC(heap_only, runs), a = SPEC(heap_only, runs);
    b.pfn = pfn_before;
    a.pfn = pfn_after;
    memdiff_diff *d = diff_specs(&b, &a, 0);
    check_diff_totals(d, (pages){.replaced = 2});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, HEAP + PG, HEAP + 3 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_REPLACED, BOTH);
    memdiff_diff_free(d);

    /* Frames on one side only: nothing can be said about frames. */
    b.pfn = NULL;
    d = diff_specs(&b, &a, 0);
    check_diff_totals(d, (pages){0});
    memdiff_diff_free(d);
}
END_TEST

START_TEST(became_private_and_shared)
{
    static const synth_run before[] = {{HEAP, 3, PRES}, {HEAP + 3 * PG, 2, PRES | PRIV}};
    static const synth_run after[] = {{HEAP, 1, PRES}, {HEAP + PG, 2, PRES | PRIV},
                                      {HEAP + 3 * PG, 2, PRES}};
    memdiff_diff *d = diff_specs(&SPEC(heap_only, before), &SPEC(heap_only, after), 0);
    check_diff_totals(d, (pages){.became_private = 2, .became_shared = 2});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, HEAP + PG, HEAP + 5 * PG, MEMDIFF_CAT_HEAP, "[heap]", MEMDIFF_CHANGE_MIXED,
                BOTH);
    memdiff_diff_free(d);

    d = diff_specs(&SPEC(heap_only, before), &SPEC(heap_only, after), MEMDIFF_COMPARE_VERBOSE);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 2);
    check_block(d, 0, HEAP + PG, HEAP + 3 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_BECAME_PRIVATE, BOTH);
    check_block(d, 1, HEAP + 3 * PG, HEAP + 5 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_BECAME_SHARED, BOTH);
    memdiff_diff_free(d);

    /* Exclusivity is only compared when both snapshots read it (MEMDIFF_SRC_PAGES). A fast
     * snapshot has the region list and presence but not that source (the PAGEMAP_SCAN ioctl it
     * may have used is no public source). */
    synth_spec fast = SPEC(heap_only, before);
    fast.sources = MEMDIFF_SRC_REGIONS;
    fast.depth = MEMDIFF_DEPTH_FAST;
    d = diff_specs(&fast, &SPEC(heap_only, after), 0);
    check_diff_totals(d, (pages){0});
    memdiff_diff_free(d);
}
END_TEST

/* One rule for a page resident in both snapshots whose exclusivity changed: became-private or
 * became-shared, whether its frame changed too or not. A copy-on-write copy does both (the
 * writer gets a frame of its own), and frames are known only with CAP_SYS_ADMIN: were the frame
 * to decide, root would see replaced where everyone else sees became-private (issue 22).
 * Replaced is a frame change with sharing unchanged. */
START_TEST(sharing_change_outranks_frame_change)
{
    /* Pages 0-3 shared before, private after: 0 and 2 in new frames (the copy-on-write writer),
     * 1 in its old frame (the other side of the copy, whose page is now its own), 3 with its
     * frame unknown after. Pages 4-7 private before, shared after: 4 in a new frame (KSM merged
     * it with an identical page), 5-7 in their old frames (a fork). Pages 8-9 private in both:
     * 8 in a new frame (migrated, or discarded and written again): replaced; 9 unchanged. */
    static const synth_run before[] = {{HEAP, 4, PRES}, {HEAP + 4 * PG, 6, PRES | PRIV}};
    static const synth_run after[] = {{HEAP, 4, PRES | PRIV}, {HEAP + 4 * PG, 4, PRES},
                                      {HEAP + 8 * PG, 2, PRES | PRIV}};
    static const uint64_t pfn_before[] = {100, 101, 102, 103, 104, 105, 106, 107, 108, 109};
    static const uint64_t pfn_after[] = {200, 101, 202, 0, 204, 105, 106, 107, 208, 109};
    synth_spec b = SPEC(heap_only, before), a = SPEC(heap_only, after);
    b.pfn = pfn_before;
    a.pfn = pfn_after;
    memdiff_diff *d = diff_specs(&b, &a, MEMDIFF_COMPARE_VERBOSE);
    check_diff_totals(d, (pages){.became_private = 4, .became_shared = 4, .replaced = 1});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 3);
    check_block(d, 0, HEAP, HEAP + 4 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_BECAME_PRIVATE, BOTH);
    check_block(d, 1, HEAP + 4 * PG, HEAP + 8 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_BECAME_SHARED, BOTH);
    check_block(d, 2, HEAP + 8 * PG, HEAP + 9 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_REPLACED, BOTH);
    memdiff_diff_free(d);

    /* Without frames (no CAP_SYS_ADMIN) the same sharing changes, page for page: frames add
     * only the page whose sharing stayed. */
    b.pfn = a.pfn = NULL;
    d = diff_specs(&b, &a, MEMDIFF_COMPARE_VERBOSE);
    check_diff_totals(d, (pages){.became_private = 4, .became_shared = 4});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 2);
    check_block(d, 0, HEAP, HEAP + 4 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_BECAME_PRIVATE, BOTH);
    check_block(d, 1, HEAP + 4 * PG, HEAP + 8 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_BECAME_SHARED, BOTH);
    memdiff_diff_free(d);

    /* Where one side does not know exclusivity (fast depth: no MEMDIFF_SRC_PAGES), sharing is
     * not compared, even with exclusive bits in its attrs: every frame change is replaced
     * (pages 0, 2, 4 and 8; page 3's frame is unknown after). */
    b.pfn = pfn_before;
    a.pfn = pfn_after;
    for (int fast_side = 0; fast_side < 2; fast_side++) {
        synth_spec fb = b, fa = a;
        synth_spec *fast = fast_side ? &fa : &fb;
        fast->sources = MEMDIFF_SRC_REGIONS;
        fast->depth = MEMDIFF_DEPTH_FAST;
        d = diff_specs(&fb, &fa, 0);
        check_diff_totals(d, (pages){.replaced = 4});
        ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
        check_block(d, 0, HEAP, HEAP + 9 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                    MEMDIFF_CHANGE_REPLACED, BOTH);
        memdiff_diff_free(d);
    }
}
END_TEST

START_TEST(fast_depth_estimates_private_and_shared)
{
    static const synth_run before[] = {{HEAP, 1, PRES}};
    /* At fast depth the exclusive bit is never set: file-backed pages are estimated shared,
     * anonymous ones private. */
    static const synth_run after[] = {{HEAP, 4, PRES}, {HEAP + 4 * PG, 3, PRES | FILEPG}};
    synth_spec b = SPEC(heap_only, before), a = SPEC(heap_only, after);
    b.sources = a.sources = MEMDIFF_SRC_REGIONS; /* no MEMDIFF_SRC_PAGES: fast */
    b.depth = a.depth = MEMDIFF_DEPTH_FAST;
    memdiff_diff *d = diff_specs(&b, &a, 0);
    check_diff_totals(d, (pages){.new_private = 3, .new_shared = 3});
    memdiff_diff_free(d);

    /* With pagemap the same attributes say: nothing exclusive, all shared. */
    d = diff_specs(&SPEC(heap_only, before), &SPEC(heap_only, after), 0);
    check_diff_totals(d, (pages){.new_shared = 6});
    memdiff_diff_free(d);
}
END_TEST

START_TEST(zero_pages_cost_nothing)
{
    static const synth_run before[] = {{HEAP, 4, PRES | PRIV}};
    static const synth_run after[] = {{HEAP, 2, PRES | ZERO}, {HEAP + 2 * PG, 2, PRES | PRIV},
                                      {HEAP + 4 * PG, 3, PRES | ZERO}};
    memdiff_diff *d = diff_specs(&SPEC(heap_only, before), &SPEC(heap_only, after), 0);
    check_diff_totals(d, (pages){.discarded = 2});
    memdiff_diff_free(d);

    d = diff_specs(&SPEC(heap_only, after), &SPEC(heap_only, before), 0);
    check_diff_totals(d, (pages){.new_private = 2});
    memdiff_diff_free(d);
}
END_TEST

START_TEST(unmapped_and_not_resident_pages_are_left_out)
{
    static const synth_region two[] = {
        {HEAP, HEAP + 4 * PG, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
        {HEAP + 100 * PG, HEAP + 104 * PG, MEMDIFF_CAT_PRIVATE, "anonymous", 2, 0, 0, 0, 0},
    };
    memdiff_diff *d = diff_specs(&SPEC_NORUNS(two), &SPEC_NORUNS(heap_only), 0);
    check_diff_totals(d, (pages){0});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 0);
    memdiff_diff_free(d);
}
END_TEST

/* ---- Own ---------------------------------------------------------------------------------- */

START_TEST(own_is_apart_from_totals_and_blocks)
{
    static const synth_region before_regs[] = {
        heap_only[0],
        {OWNMAP, OWNMAP + 16 * PG, MEMDIFF_CAT_OWN, "memdiff", 0, 0, 0, 0, 0},
    };
    static const synth_region after_regs[] = {
        heap_only[0],
        {OWNMAP, OWNMAP + 16 * PG, MEMDIFF_CAT_OWN, "memdiff", 0, 0, 0, 0, 0},
        {OWNMAP + 16 * PG, OWNMAP + 32 * PG, MEMDIFF_CAT_OWN, "memdiff", 0, 0, 0, 0, 0},
    };
    static const synth_run before[] = {{HEAP, 1, PRES | PRIV}, {OWNMAP, 4, PRES | PRIV}};
    static const synth_run after[] = {{HEAP, 2, PRES | PRIV},
                                      {OWNMAP, 2, PRES | PRIV},
                                      {OWNMAP + 16 * PG, 16, PRES | PRIV}};
    memdiff_diff *d = diff_specs(&SPEC(before_regs, before), &SPEC(after_regs, after), 0);
    check_diff_totals(d, (pages){.new_private = 1});
    check_category(d, MEMDIFF_CAT_OWN, (pages){.new_private = 16, .discarded = 2});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, HEAP + PG, HEAP + 2 * PG, MEMDIFF_CAT_HEAP, "[heap]", MEMDIFF_CHANGE_NEW,
                BOTH);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(own_address_reused_by_the_process)
{
    /* memdiff released a chunk after the first snapshot and malloc's next mmap took its
     * address: Own lost its pages, the heap gained its own. */
    static const synth_region before_regs[] = {
        {OWNMAP, OWNMAP + 4 * PG, MEMDIFF_CAT_OWN, "memdiff", 0, 0, 0, 0, 0},
    };
    static const synth_region after_regs[] = {
        {OWNMAP, OWNMAP + 4 * PG, MEMDIFF_CAT_HEAP, "malloc mmap chunk", OWNMAP, 0, 0, 0, 0},
    };
    static const synth_run runs[] = {{OWNMAP, 3, PRES | PRIV}};
    memdiff_diff *d = diff_specs(&SPEC(before_regs, runs), &SPEC(after_regs, runs), 0);
    check_diff_totals(d, (pages){.new_private = 3});
    check_category(d, MEMDIFF_CAT_OWN, (pages){.unmapped = 3});
    check_category(d, MEMDIFF_CAT_HEAP, (pages){.new_private = 3});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, OWNMAP, OWNMAP + 3 * PG, MEMDIFF_CAT_HEAP, "malloc mmap chunk",
                MEMDIFF_CHANGE_NEW, MEMDIFF_IN_AFTER);
    memdiff_diff_free(d);

    /* And the other way: the process unmapped, memdiff mapped its chunk there. */
    d = diff_specs(&SPEC(after_regs, runs), &SPEC(before_regs, runs), 0);
    check_diff_totals(d, (pages){.unmapped = 3});
    check_category(d, MEMDIFF_CAT_OWN, (pages){.new_private = 3});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, OWNMAP, OWNMAP + 3 * PG, MEMDIFF_CAT_HEAP, "malloc mmap chunk",
                MEMDIFF_CHANGE_FREED, MEMDIFF_IN_BEFORE);
    memdiff_diff_free(d);
}
END_TEST

/* ---- blocks ------------------------------------------------------------------------------- */

/* A module mapped as text, data (both file) and bss (anonymous), one unit; a heap beside it. */
static const synth_region module_regs[] = {
    {LIB, LIB + 4 * PG, MEMDIFF_CAT_IMAGE, "/usr/lib/libfoo.so", LIB, MEMDIFF_REGION_FILE, 0x801,
     42, 0},
    {LIB + 4 * PG, LIB + 6 * PG, MEMDIFF_CAT_IMAGE, "/usr/lib/libfoo.so", LIB,
     MEMDIFF_REGION_FILE, 0x801, 42, 4 * PG},
    {LIB + 6 * PG, LIB + 10 * PG, MEMDIFF_CAT_IMAGE, "/usr/lib/libfoo.so", LIB, 0, 0, 0, 0},
    {LIB + 16 * PG, LIB + 20 * PG, MEMDIFF_CAT_HEAP, "malloc arena 0x7f0000010000", 9, 0, 0, 0, 0},
};

static const synth_run module_before[] = {
    {LIB, 1, PRES | FILEPG},
};

static const synth_run module_after[] = {
    {LIB, 3, PRES | FILEPG},                   /* text paged in: new shared */
    {LIB + 4 * PG, 2, PRES | PRIV},            /* data written: new private */
    {LIB + 6 * PG, 1, PRES | PRIV},            /* bss touched */
    {LIB + 7 * PG, 1, PRES | PRIV | MEMDIFF_PAGE_SOFT_DIRTY},
    {LIB + 16 * PG, 2, PRES | PRIV},
};

START_TEST(default_blocks_group_a_module)
{
    memdiff_diff *d = diff_specs(&SPEC(module_regs, module_before),
                                 &SPEC(module_regs, module_after), 0);
    check_diff_totals(d, (pages){.new_shared = 2, .new_private = 6});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 2);
    check_block(d, 0, LIB + PG, LIB + 8 * PG, MEMDIFF_CAT_IMAGE, "/usr/lib/libfoo.so",
                MEMDIFF_CHANGE_NEW, BOTH);
    check_block_totals(d, 0, (pages){.new_shared = 2, .new_private = 4});
    ck_assert_uint_eq(block_of(d, 0).attrs_before, 0);
    ck_assert_uint_eq(block_of(d, 0).attrs_after, 0);
    check_block(d, 1, LIB + 16 * PG, LIB + 18 * PG, MEMDIFF_CAT_HEAP,
                "malloc arena 0x7f0000010000", MEMDIFF_CHANGE_NEW, BOTH);
    check_no_block(d, 2); /* one past the last */
    ck_assert_int_eq(memdiff_diff_block(d, 0, NULL), MEMDIFF_EINVAL); /* a block there, no out */
    memdiff_diff_free(d);
}
END_TEST

START_TEST(verbose_blocks_split_by_attributes)
{
    memdiff_diff *d = diff_specs(&SPEC(module_regs, module_before),
                                 &SPEC(module_regs, module_after), MEMDIFF_COMPARE_VERBOSE);
    check_diff_totals(d, (pages){.new_shared = 2, .new_private = 6});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 4);
    /* Text; data and the first bss page coalesce (same attributes, contiguous, one label). */
    check_block(d, 0, LIB + PG, LIB + 3 * PG, MEMDIFF_CAT_IMAGE, "/usr/lib/libfoo.so",
                MEMDIFF_CHANGE_NEW, BOTH);
    ck_assert_uint_eq(block_of(d, 0).attrs_before, 0);
    ck_assert_uint_eq(block_of(d, 0).attrs_after, PRES | FILEPG);
    check_block(d, 1, LIB + 4 * PG, LIB + 7 * PG, MEMDIFF_CAT_IMAGE, "/usr/lib/libfoo.so",
                MEMDIFF_CHANGE_NEW, BOTH);
    ck_assert_uint_eq(block_of(d, 1).attrs_after, PRES | PRIV);
    check_block(d, 2, LIB + 7 * PG, LIB + 8 * PG, MEMDIFF_CAT_IMAGE, "/usr/lib/libfoo.so",
                MEMDIFF_CHANGE_NEW, BOTH);
    ck_assert_uint_eq(block_of(d, 2).attrs_after,
                      PRES | PRIV | MEMDIFF_PAGE_SOFT_DIRTY);
    check_block(d, 3, LIB + 16 * PG, LIB + 18 * PG, MEMDIFF_CAT_HEAP,
                "malloc arena 0x7f0000010000", MEMDIFF_CHANGE_NEW, BOTH);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(verbose_keeps_freed_kinds_apart)
{
    static const synth_run before[] = {{HEAP, 6, PRES | PRIV}};
    static const synth_run after[] = {{HEAP, 2, SWAP}};
    memdiff_diff *d =
        diff_specs(&SPEC(heap_only, before), &SPEC(heap_only, after), MEMDIFF_COMPARE_VERBOSE);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 2);
    check_block(d, 0, HEAP, HEAP + 2 * PG, MEMDIFF_CAT_HEAP, "[heap]", MEMDIFF_CHANGE_FREED,
                BOTH);
    check_block_totals(d, 0, (pages){.swapped = 2});
    ck_assert_uint_eq(block_of(d, 0).attrs_after, SWAP);
    check_block(d, 1, HEAP + 2 * PG, HEAP + 6 * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_FREED, BOTH);
    check_block_totals(d, 1, (pages){.discarded = 4});
    ck_assert_uint_eq(block_of(d, 1).attrs_before, PRES | PRIV);
    ck_assert_uint_eq(block_of(d, 1).attrs_after, 0);
    memdiff_diff_free(d);
}
END_TEST

/* Bytes of every live arena chunk in the process (the arena's own count): equal before and
 * after a test that freed all it made, whatever failed on the way. */
static uint64_t live_arena_bytes(void)
{
    return memdiff__own_bytes();
}

/* ---- finding the block at an address (memdiff_diff_find_block) ------------------------------ */

/* A malloc arena of two mappings with an anonymous mapping between them, and a module further
 * up, each with 2 new pages. The default diff's arena block spans [HEAP + 2, HEAP + 22) pages,
 * over the anonymous block [HEAP + 10, HEAP + 12): nested spans. The verbose diff has one block
 * per run; the arena's first run is split by attributes into two blocks whose spans touch. */
static const synth_region nest_regs[] = {
    {HEAP, HEAP + 8 * PG, MEMDIFF_CAT_HEAP, "malloc arena 0x10000000", 1, 0, 0, 0, 0},
    {HEAP + 8 * PG, HEAP + 16 * PG, MEMDIFF_CAT_PRIVATE, "anonymous", 7, 0, 0, 0, 0},
    {HEAP + 16 * PG, HEAP + 24 * PG, MEMDIFF_CAT_HEAP, "malloc arena 0x10000000", 1, 0, 0, 0, 0},
    {LIB, LIB + 4 * PG, MEMDIFF_CAT_IMAGE, "/usr/lib/libfoo.so", LIB, 0, 0, 0, 0},
};
static const synth_run nest_after[] = {
    {HEAP + 2 * PG, 1, PRES | PRIV},
    {HEAP + 3 * PG, 1, PRES | PRIV | MEMDIFF_PAGE_SOFT_DIRTY},
    {HEAP + 10 * PG, 2, PRES | PRIV},
    {HEAP + 20 * PG, 2, PRES | PRIV},
    {LIB + PG, 2, PRES | FILEPG},
};

/* The block at addr must be the one spanning [start, end) with label; *out is written. */
static void check_found(const memdiff_diff *d, uint64_t addr, uint64_t start, uint64_t end,
                        const char *label)
{
    memdiff_block k;
    int rc = memdiff_diff_find_block(d, addr, &k);
    ck_assert_msg(rc == MEMDIFF_OK, "0x%llx: %s: %s", (unsigned long long)addr,
                  memdiff_status_name(rc), memdiff_last_error());
    ck_assert_msg(k.start == start && k.end == end && strcmp(k.label, label) == 0,
                  "0x%llx: found [0x%llx, 0x%llx) %s, want [0x%llx, 0x%llx) %s",
                  (unsigned long long)addr, (unsigned long long)k.start,
                  (unsigned long long)k.end, k.label, (unsigned long long)start,
                  (unsigned long long)end, label);
}

/* No block at addr: MEMDIFF_ERANGE with a detail, *out left as it was. */
static void check_not_found(const memdiff_diff *d, uint64_t addr)
{
    memdiff_block k, untouched;
    memset(&k, 0xA5, sizeof k);
    memcpy(&untouched, &k, sizeof k);
    memdiff__set_error(MEMDIFF_OK, "%s", "none yet"); /* the miss must write its own */
    ck_assert_msg(memdiff_diff_find_block(d, addr, &k) == MEMDIFF_ERANGE, "0x%llx found",
                  (unsigned long long)addr);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "no block holds"));
    ck_assert_int_eq(memcmp(&k, &untouched, sizeof k), 0);
}

/* The rule by definition: the last block in order whose span holds addr, by a linear scan. */
static int last_holding(const memdiff_diff *d, uint64_t addr, memdiff_block *out)
{
    int found = 0;
    for (size_t i = 0; i < memdiff_diff_block_count(d); i++) {
        memdiff_block k = block_of(d, i);
        if (k.start <= addr && addr < k.end) {
            *out = k;
            found = 1;
        }
    }
    return found;
}

/* find_block agrees with the linear scan at every page boundary, and one byte either side, from
 * below the first block to above the last. */
static void check_every_address(const memdiff_diff *d, uint64_t from, uint64_t to)
{
    for (uint64_t page = from; page <= to; page += PG) {
        for (uint64_t addr = page - 1; addr <= page + 1; addr++) {
            memdiff_block want, got;
            int rc = memdiff_diff_find_block(d, addr, &got);
            if (!last_holding(d, addr, &want)) {
                ck_assert_msg(rc == MEMDIFF_ERANGE, "0x%llx: %s", (unsigned long long)addr,
                              memdiff_status_name(rc));
                continue;
            }
            ck_assert_msg(rc == MEMDIFF_OK && got.start == want.start && got.end == want.end &&
                              got.category == want.category && got.label == want.label,
                          "0x%llx: not the last block holding it", (unsigned long long)addr);
        }
    }
}

START_TEST(find_block_in_nested_spans)
{
    memdiff_diff *d = diff_specs(&SPEC_NORUNS(nest_regs), &SPEC(nest_regs, nest_after), 0);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 3);
    check_block(d, 0, HEAP + 2 * PG, HEAP + 22 * PG, MEMDIFF_CAT_HEAP, "malloc arena 0x10000000",
                MEMDIFF_CHANGE_NEW, BOTH);
    check_block(d, 1, HEAP + 10 * PG, HEAP + 12 * PG, MEMDIFF_CAT_PRIVATE, "anonymous",
                MEMDIFF_CHANGE_NEW, BOTH);
    const char *arena = "malloc arena 0x10000000";
    /* The arena's own pages: at its start, inside, and at its last byte. */
    check_found(d, HEAP + 2 * PG, HEAP + 2 * PG, HEAP + 22 * PG, arena);
    check_found(d, HEAP + 3 * PG + 17, HEAP + 2 * PG, HEAP + 22 * PG, arena);
    check_found(d, HEAP + 22 * PG - 1, HEAP + 2 * PG, HEAP + 22 * PG, arena);
    /* The anonymous block nested in the arena's span wins inside its own span (the innermost),
     * from its first to its last byte; past its end the arena holds the address again. */
    check_found(d, HEAP + 10 * PG, HEAP + 10 * PG, HEAP + 12 * PG, "anonymous");
    check_found(d, HEAP + 12 * PG - 1, HEAP + 10 * PG, HEAP + 12 * PG, "anonymous");
    check_found(d, HEAP + 12 * PG, HEAP + 2 * PG, HEAP + 22 * PG, arena);
    /* Inside a span, though no changed page is there: the span is what counts. */
    check_found(d, HEAP + 15 * PG, HEAP + 2 * PG, HEAP + 22 * PG, arena);
    /* The module's block, last in order. */
    check_found(d, LIB + PG, LIB + PG, LIB + 3 * PG, "/usr/lib/libfoo.so");
    check_found(d, LIB + 3 * PG - 1, LIB + PG, LIB + 3 * PG, "/usr/lib/libfoo.so");
    /* Misses: below every block, in the gap between the arena and the module (its first byte and
     * the module's first unchanged page), past the last block, and the top of the space. */
    check_not_found(d, 0);
    check_not_found(d, HEAP + 2 * PG - 1);
    check_not_found(d, HEAP + 22 * PG);
    check_not_found(d, LIB);
    check_not_found(d, LIB + 3 * PG);
    check_not_found(d, UINT64_MAX);
    check_every_address(d, HEAP, HEAP + 24 * PG);
    check_every_address(d, LIB, LIB + 4 * PG);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(find_block_in_touching_verbose_spans)
{
    memdiff_diff *d = diff_specs(&SPEC_NORUNS(nest_regs), &SPEC(nest_regs, nest_after),
                                 MEMDIFF_COMPARE_VERBOSE);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 5);
    /* [HEAP + 2, HEAP + 3) and [HEAP + 3, HEAP + 4) pages touch: each holds only its own. */
    check_block(d, 0, HEAP + 2 * PG, HEAP + 3 * PG, MEMDIFF_CAT_HEAP, "malloc arena 0x10000000",
                MEMDIFF_CHANGE_NEW, BOTH);
    check_block(d, 1, HEAP + 3 * PG, HEAP + 4 * PG, MEMDIFF_CAT_HEAP, "malloc arena 0x10000000",
                MEMDIFF_CHANGE_NEW, BOTH);
    memdiff_block k;
    ck_assert_int_eq(memdiff_diff_find_block(d, HEAP + 3 * PG - 1, &k), MEMDIFF_OK);
    ck_assert_uint_eq(k.attrs_after, PRES | PRIV);
    ck_assert_int_eq(memdiff_diff_find_block(d, HEAP + 3 * PG, &k), MEMDIFF_OK);
    ck_assert_uint_eq(k.attrs_after, PRES | PRIV | MEMDIFF_PAGE_SOFT_DIRTY);
    ck_assert_uint_eq(k.start, HEAP + 3 * PG);
    /* The verbose arena is two blocks: between them, nothing but the anonymous run. */
    check_found(d, HEAP + 21 * PG, HEAP + 20 * PG, HEAP + 22 * PG, "malloc arena 0x10000000");
    check_not_found(d, HEAP + 4 * PG);
    check_not_found(d, HEAP + 15 * PG);
    check_every_address(d, HEAP, HEAP + 24 * PG);
    check_every_address(d, LIB, LIB + 4 * PG);
    memdiff_diff_free(d);
}
END_TEST

/* A freed mapping and the new one in its place start at one address: the last in order, the new
 * module's block (category order, then the order the walk made them), holds it. */
START_TEST(find_block_of_one_start)
{
    static const synth_region old_bss[] = {
        {FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_IMAGE, "/lib/old.so", FILEMAP, 0, 0, 0, 0},
    };
    static const synth_region new_bss[] = {
        {FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_IMAGE, "/lib/new.so", FILEMAP, 0, 0, 0, 0},
    };
    static const synth_run runs[] = {{FILEMAP, 4, PRES | PRIV}};
    memdiff_diff *d = diff_specs(&SPEC(old_bss, runs), &SPEC(new_bss, runs), 0);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 2);
    check_found(d, FILEMAP, FILEMAP, FILEMAP + 4 * PG, "/lib/new.so");
    check_found(d, FILEMAP + 4 * PG - 1, FILEMAP, FILEMAP + 4 * PG, "/lib/new.so");
    check_not_found(d, FILEMAP + 4 * PG);
    check_every_address(d, FILEMAP - PG, FILEMAP + 5 * PG);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(find_block_invalid_arguments)
{
    memdiff_diff *d = diff_specs(&SPEC_NORUNS(nest_regs), &SPEC(nest_regs, nest_after), 0);
    memdiff_block k;
    ck_assert_int_eq(memdiff_diff_find_block(NULL, HEAP + 2 * PG, &k), MEMDIFF_EINVAL);
    ck_assert_str_ne(memdiff_last_error(), "");
    ck_assert_int_eq(memdiff_diff_find_block(d, HEAP + 2 * PG, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_diff_find_block(NULL, 0, NULL), MEMDIFF_EINVAL);
    memdiff_diff_free(d);
    /* A diff without blocks holds no address. */
    d = diff_specs(&SPEC_NORUNS(nest_regs), &SPEC_NORUNS(nest_regs), 0);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 0);
    check_not_found(d, HEAP + 2 * PG);
    check_not_found(d, 0);
    memdiff_diff_free(d);
}
END_TEST

/* ---- snapshots as const inputs, diff lifetime ---------------------------------------------- */

static void check_same_diff(const memdiff_diff *x, const memdiff_diff *y)
{
    memdiff_totals tx, ty;
    /* Every category, then all of them (MEMDIFF_CAT_ALL == MEMDIFF_CAT_COUNT). */
    for (int c = 0; c <= MEMDIFF_CAT_ALL; c++) {
        ck_assert_int_eq(memdiff_diff_totals(x, (memdiff_category)c, &tx), MEMDIFF_OK);
        ck_assert_int_eq(memdiff_diff_totals(y, (memdiff_category)c, &ty), MEMDIFF_OK);
        ck_assert_int_eq(memcmp(&tx, &ty, sizeof tx), 0);
    }
    ck_assert_uint_eq(memdiff_diff_block_count(x), memdiff_diff_block_count(y));
    for (size_t i = 0; i < memdiff_diff_block_count(x); i++) {
        /* Field by field: the copies' padding bytes are nobody's business. totals and impact
         * are all 64-bit counts, without padding. */
        const memdiff_block bx = block_of(x, i), by = block_of(y, i);
        ck_assert_uint_eq(bx.start, by.start);
        ck_assert_uint_eq(bx.end, by.end);
        ck_assert_int_eq(bx.category, by.category);
        ck_assert_str_eq(bx.label, by.label);
        ck_assert_int_eq(bx.change, by.change);
        ck_assert_uint_eq(bx.presence, by.presence);
        ck_assert_int_eq(memcmp(&bx.totals, &by.totals, sizeof bx.totals), 0);
        ck_assert_uint_eq(bx.attrs_before, by.attrs_before);
        ck_assert_uint_eq(bx.attrs_after, by.attrs_after);
        ck_assert_int_eq(memcmp(&bx.impact, &by.impact, sizeof bx.impact), 0);
    }
}

START_TEST(compare_twice_gives_the_same_diff)
{
    uint64_t live = live_arena_bytes();
    memdiff_snapshot *b = synth_snapshot(&SPEC(module_regs, module_before));
    memdiff_snapshot *a = synth_snapshot(&SPEC(module_regs, module_after));
    memdiff_diff *d1 = NULL, *d2 = NULL, *d3 = NULL;
    ck_assert_int_eq(memdiff_compare(b, a, 0, &d1), MEMDIFF_OK);
    ck_assert_int_eq(memdiff_compare(b, a, MEMDIFF_COMPARE_VERBOSE, &d3), MEMDIFF_OK);
    ck_assert_int_eq(memdiff_compare(b, a, 0, &d2), MEMDIFF_OK);
    check_same_diff(d1, d2);
    memdiff_diff_free(d1);
    memdiff_diff_free(d2);
    memdiff_diff_free(d3);
    /* Reversed, the same snapshots give the mirror image. */
    ck_assert_int_eq(memdiff_compare(a, b, 0, &d1), MEMDIFF_OK);
    check_diff_totals(d1, (pages){.discarded = 8});
    memdiff_diff_free(d1);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
    ck_assert_uint_eq(live_arena_bytes(), live);
}
END_TEST

START_TEST(diff_outlives_its_snapshots)
{
    synth_spec sb = SPEC(module_regs, module_before), sa = SPEC(module_regs, module_after);
    sb.degraded = "frame numbers unavailable: needs CAP_SYS_ADMIN";
    sb.time_ns = 1000;
    sa.time_ns = 2000;
    memdiff_diff *d = diff_specs(&sb, &sa, 0); /* frees both snapshots */
    memdiff_diff_info di;
    ck_assert_int_eq(memdiff_diff_get_info(d, &di), MEMDIFF_OK);
    ck_assert_str_eq(di.before.host, "synthhost");
    ck_assert_str_eq(di.before.degraded, "frame numbers unavailable: needs CAP_SYS_ADMIN");
    ck_assert_uint_eq(di.before.time_ns, 1000);
    ck_assert_int_eq(di.before.pid, 4242);
    ck_assert_str_eq(di.after.host, "synthhost");
    ck_assert_ptr_null(di.after.degraded);
    ck_assert_uint_eq(di.after.time_ns, 2000);
    ck_assert_uint_eq(di.after.page_size, SYNTH_PAGE);
    ck_assert_str_eq(block_of(d, 0).label, "/usr/lib/libfoo.so");
    ck_assert_str_eq(block_of(d, 1).label, "malloc arena 0x7f0000010000");
    memdiff_diff_free(d);
}
END_TEST

/* ---- accessors ------------------------------------------------------------------------------ */

/* The four outcomes a category can have, in four categories and Own:
 *   heap [heap]           2 new private, 2 became private, 2 swapped out
 *   private anonymous     4 unmapped (before only)
 *   mapped-file /data/a   3 new shared
 *   own memdiff           6 new, 2 discarded (outside every total)
 * All but Own: new 5 (2 private, 3 shared), freed 6, became private 2. */
static const synth_region sum_before_regs[] = {
    {HEAP, HEAP + 16 * PG, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
    {HEAP + 100 * PG, HEAP + 108 * PG, MEMDIFF_CAT_PRIVATE, "anonymous", 2, 0, 0, 0, 0},
    {FILEMAP, FILEMAP + 8 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/a", FILEMAP, MEMDIFF_REGION_FILE,
     0x801, 7, 0},
    {OWNMAP, OWNMAP + 16 * PG, MEMDIFF_CAT_OWN, "memdiff", 0, 0, 0, 0, 0},
};
static const synth_run sum_before_runs[] = {
    {HEAP, 4, PRES | PRIV},
    {HEAP + 8 * PG, 2, PRES},
    {HEAP + 12 * PG, 2, PRES | PRIV},
    {HEAP + 100 * PG, 4, PRES | PRIV},
    {FILEMAP, 1, PRES | FILEPG},
    {OWNMAP, 4, PRES | PRIV},
};
static const synth_region sum_after_regs[] = {
    {HEAP, HEAP + 16 * PG, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
    {FILEMAP, FILEMAP + 8 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/a", FILEMAP, MEMDIFF_REGION_FILE,
     0x801, 7, 0},
    {OWNMAP, OWNMAP + 16 * PG, MEMDIFF_CAT_OWN, "memdiff", 0, 0, 0, 0, 0},
};
static const synth_run sum_after_runs[] = {
    {HEAP, 6, PRES | PRIV},
    {HEAP + 8 * PG, 2, PRES | PRIV},
    {HEAP + 12 * PG, 2, SWAP},
    {FILEMAP, 4, PRES | FILEPG},
    {OWNMAP, 2, PRES | PRIV},
    {OWNMAP + 8 * PG, 6, PRES | PRIV},
};

/* a += b, every count (net included: a sum of nets is the net of the sums). */
static void add_counts(memdiff_totals *a, const memdiff_totals *b)
{
    a->new_bytes += b->new_bytes;
    a->new_private_bytes += b->new_private_bytes;
    a->new_shared_bytes += b->new_shared_bytes;
    a->freed_bytes += b->freed_bytes;
    a->freed_unmapped_bytes += b->freed_unmapped_bytes;
    a->freed_discarded_bytes += b->freed_discarded_bytes;
    a->freed_swapped_bytes += b->freed_swapped_bytes;
    a->replaced_bytes += b->replaced_bytes;
    a->became_private_bytes += b->became_private_bytes;
    a->became_shared_bytes += b->became_shared_bytes;
    a->net_bytes += b->net_bytes;
}

/* memdiff_diff_totals(d, MEMDIFF_CAT_ALL) is the sum of every category but Own, count by count,
 * in both modes; Own, which has counts of its own here, is not in it. */
START_TEST(totals_of_all_are_the_sum_but_own)
{
    for (unsigned flags = 0; flags <= MEMDIFF_COMPARE_VERBOSE; flags++) {
        memdiff_diff *d = diff_specs(&SPEC(sum_before_regs, sum_before_runs),
                                     &SPEC(sum_after_regs, sum_after_runs), flags);
        check_diff_totals(d, (pages){.new_private = 2, .new_shared = 3, .unmapped = 4,
                                     .swapped = 2, .became_private = 2});
        check_category(d, MEMDIFF_CAT_HEAP,
                       (pages){.new_private = 2, .swapped = 2, .became_private = 2});
        check_category(d, MEMDIFF_CAT_PRIVATE, (pages){.unmapped = 4});
        check_category(d, MEMDIFF_CAT_MAPPED_FILE, (pages){.new_shared = 3});
        check_category(d, MEMDIFF_CAT_OWN, (pages){.new_private = 6, .discarded = 2});

        memdiff_totals all, sum, own, t;
        memset(&sum, 0, sizeof sum);
        for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
            ck_assert_int_eq(memdiff_diff_totals(d, (memdiff_category)c, &t), MEMDIFF_OK);
            if (c != MEMDIFF_CAT_OWN)
                add_counts(&sum, &t);
        }
        ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &all), MEMDIFF_OK);
        ck_assert_int_eq(memcmp(&all, &sum, sizeof all), 0);
        /* Own counted in would have made a difference. */
        ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_OWN, &own), MEMDIFF_OK);
        ck_assert_uint_gt(own.new_bytes, 0);
        add_counts(&sum, &own);
        ck_assert_int_ne(memcmp(&all, &sum, sizeof all), 0);
        memdiff_diff_free(d);
    }
}
END_TEST

/* One snapshot info and the diff's copy of it: the same fields, strings equal (the diff's own
 * copies: they outlive the snapshot). */
static void check_same_info(const memdiff_snapshot_info *in_diff, const memdiff_snapshot_info *s)
{
    ck_assert_int_eq(in_diff->pid, s->pid);
    ck_assert_int_eq(in_diff->depth_requested, s->depth_requested);
    ck_assert_int_eq(in_diff->depth, s->depth);
    ck_assert_uint_eq(in_diff->sources, s->sources);
    if (s->degraded)
        ck_assert_str_eq(in_diff->degraded, s->degraded);
    else
        ck_assert_ptr_null(in_diff->degraded);
    ck_assert_uint_eq(in_diff->page_size, s->page_size);
    ck_assert_uint_eq(in_diff->time_ns, s->time_ns);
    ck_assert_str_eq(in_diff->host, s->host);
    ck_assert_uint_eq(in_diff->region_count, s->region_count);
    ck_assert_uint_eq(in_diff->run_count, s->run_count);
    ck_assert_uint_eq(in_diff->resident_bytes, s->resident_bytes);
    ck_assert_uint_eq(in_diff->private_bytes, s->private_bytes);
    ck_assert_uint_eq(in_diff->shared_bytes, s->shared_bytes);
    ck_assert_uint_eq(in_diff->swapped_bytes, s->swapped_bytes);
    ck_assert_uint_eq(in_diff->own_bytes, s->own_bytes);
    ck_assert_uint_eq(in_diff->storage_bytes, s->storage_bytes);
    ck_assert_int_eq(memcmp(&in_diff->totals, &s->totals, sizeof s->totals), 0);
}

/* memdiff_diff_get_info: before and after are the infos of the snapshots compared (in that
 * order, not swapped), compare_flags the flags the diff was made with, and a plain compare has
 * no reference set (all 0). */
START_TEST(diff_info_is_the_snapshots_and_flags)
{
    synth_spec sb = SPEC(module_regs, module_before), sa = SPEC(module_regs, module_after);
    sb.degraded = "frame numbers unavailable: needs CAP_SYS_ADMIN";
    sb.time_ns = 1000;
    sa.time_ns = 2000;
    sa.sources = MEMDIFF_SRC_REGIONS; /* a fast snapshot after a standard one */
    sa.depth = MEMDIFF_DEPTH_FAST;
    memdiff_snapshot *b = synth_snapshot(&sb), *a = synth_snapshot(&sa);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(a);
    memdiff_snapshot_info ib, ia;
    for (int other_pid = 0; other_pid <= 1; other_pid++) {
        if (other_pid)
            a->info.pid = 4343; /* only a forced compare takes it */
        ck_assert_int_eq(memdiff_snapshot_get_info(b, &ib), MEMDIFF_OK);
        ck_assert_int_eq(memdiff_snapshot_get_info(a, &ia), MEMDIFF_OK);
        ck_assert_int_ne(ib.time_ns, ia.time_ns); /* before and after can be told apart */
        for (unsigned flags = 0; flags <= (MEMDIFF_COMPARE_VERBOSE | MEMDIFF_COMPARE_FORCE);
             flags++) {
            memdiff_diff *d = NULL;
            int rc = memdiff_compare(b, a, flags, &d);
            if (other_pid && !(flags & MEMDIFF_COMPARE_FORCE)) {
                ck_assert_int_eq(rc, MEMDIFF_EMISMATCH);
                continue;
            }
            ck_assert_int_eq(rc, MEMDIFF_OK);
            memdiff_diff_info di;
            memset(&di, 0xA5, sizeof di);
            ck_assert_int_eq(memdiff_diff_get_info(d, &di), MEMDIFF_OK);
            check_same_info(&di.before, &ib);
            check_same_info(&di.after, &ia);
            ck_assert_uint_eq(di.compare_flags, flags);
            ck_assert_uint_eq(di.refset.sources, 0);
            ck_assert_ptr_null(di.refset.degraded);
            ck_assert_uint_eq(di.refset.begin_rss_bytes, 0);
            ck_assert_uint_eq(di.refset.end_rss_bytes, 0);
            ck_assert_uint_eq(di.refset.peak_bytes, 0);
            ck_assert_uint_eq(di.refset.peak_slack_bytes, 0);
            ck_assert_uint_eq(di.refset.transient_bytes, 0);
            ck_assert_uint_eq(di.refset.untracked_bytes, 0);
            memdiff_diff_free(d);
        }
    }
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------------- */

START_TEST(invalid_arguments)
{
    static const synth_run runs[] = {{HEAP, 1, PRES | PRIV}};
    memdiff_snapshot *s = synth_snapshot(&SPEC(heap_only, runs));
    memdiff_diff *d = (memdiff_diff *)&d;
    ck_assert_int_eq(memdiff_compare(NULL, s, 0, &d), MEMDIFF_EINVAL);
    ck_assert_ptr_null(d);
    d = (memdiff_diff *)&d;
    ck_assert_int_eq(memdiff_compare(s, NULL, 0, &d), MEMDIFF_EINVAL);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(memdiff_compare(s, s, 0, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_compare(s, s, 0x80, &d), MEMDIFF_EINVAL);
    ck_assert_ptr_null(d);
    ck_assert_str_ne(memdiff_last_error(), "");

    memdiff_totals t;
    memdiff_diff_info di;
    memdiff_block k;
    ck_assert_int_eq(memdiff_diff_totals(NULL, MEMDIFF_CAT_ALL, &t), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_diff_totals(NULL, MEMDIFF_CAT_HEAP, &t), MEMDIFF_EINVAL);
    ck_assert_uint_eq(memdiff_diff_block_count(NULL), 0);
    ck_assert_int_eq(memdiff_diff_block(NULL, 0, &k), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_diff_get_info(NULL, &di), MEMDIFF_EINVAL);
    memdiff_diff_free(NULL);

    ck_assert_int_eq(memdiff_compare(s, s, 0, &d), MEMDIFF_OK);
    check_diff_totals(d, (pages){0});
    ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_HEAP, NULL), MEMDIFF_EINVAL);
    /* MEMDIFF_CAT_COUNT is MEMDIFF_CAT_ALL now, a category accepted: one past it is not. */
    ck_assert_int_eq(memdiff_diff_totals(d, (memdiff_category)(MEMDIFF_CAT_ALL + 1), &t),
                     MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_diff_totals(d, (memdiff_category)-1, &t), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_diff_get_info(d, NULL), MEMDIFF_EINVAL);
    check_no_block(d, 0); /* the diff has no blocks at all */
    check_no_block(d, SIZE_MAX);
    memdiff_diff_free(d);
    memdiff_snapshot_free(s);
}
END_TEST

START_TEST(page_size_mismatch)
{
    static const synth_region big_heap[] = {
        {HEAP, HEAP + 16 * 16384, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
    };
    static const synth_run runs[] = {{HEAP, 1, PRES | PRIV}};
    synth_spec sa = SPEC(big_heap, runs);
    sa.page_size = 16384;
    memdiff_snapshot *b = synth_snapshot(&SPEC(heap_only, runs)), *a = synth_snapshot(&sa);
    memdiff_diff *d = (memdiff_diff *)&d;
    ck_assert_int_eq(memdiff_compare(b, a, 0, &d), MEMDIFF_EMISMATCH);
    ck_assert_ptr_null(d);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
}
END_TEST

/* Runs are counted in pages by a shift (memdiff__in_pages): a snapshot whose page size is no
 * power of two, which neither the OS nor a checked file gives, is refused, not misread. */
START_TEST(page_size_not_a_power_of_two)
{
    static const synth_run runs[] = {{HEAP, 1, PRES | PRIV}};
    memdiff_snapshot *b = synth_snapshot(&SPEC(heap_only, runs));
    memdiff_snapshot *a = synth_snapshot(&SPEC(heap_only, runs));
    b->info.page_size = a->info.page_size = 3 * 4096;
    memdiff_diff *d = (memdiff_diff *)&d;
    ck_assert_int_eq(memdiff_compare(b, a, 0, &d), MEMDIFF_EINVAL);
    ck_assert_ptr_null(d);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "page size 12288 is not a power of two"));
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
}
END_TEST

START_TEST(out_of_memory_at_every_step)
{
    /* Enough regions (each its own unit and label) that blocks, labels and the unit table
     * outgrow the first arena chunk, so that failures hit each of them. */
    enum { REGIONS = 600 };
    static char labels[REGIONS][24];
    static synth_region regs[REGIONS];
    static synth_run runs[REGIONS];
    for (int i = 0; i < REGIONS; i++) {
        snprintf(labels[i], sizeof labels[i], "mapping %d", i);
        uint64_t start = HEAP + (uint64_t)i * 4 * PG;
        regs[i] = (synth_region){start, start + 2 * PG, MEMDIFF_CAT_PRIVATE, labels[i],
                                 (uint64_t)i, 0, 0, 0, 0};
        runs[i] = (synth_run){start + PG, 1, PRES | PRIV};
    }
    uint64_t live = live_arena_bytes();
    memdiff_snapshot *b = synth_snapshot(&SPEC_NORUNS(regs));
    memdiff_snapshot *a = synth_snapshot(&SPEC(regs, runs));
    for (unsigned flags = 0; flags <= MEMDIFF_COMPARE_VERBOSE; flags++) {
        int rc = MEMDIFF_ENOMEM;
        long n;
        for (n = 1; n < 1000 && rc == MEMDIFF_ENOMEM; n++) {
            memdiff_diff *d = (memdiff_diff *)&d;
            memdiff__test_fail_alloc_after(n);
            rc = memdiff_compare(b, a, flags, &d);
            memdiff__test_fail_alloc_after(0);
            if (rc == MEMDIFF_ENOMEM) {
                ck_assert_ptr_null(d);
            } else {
                ck_assert_int_eq(rc, MEMDIFF_OK);
                check_diff_totals(d, (pages){.new_private = REGIONS});
                ck_assert_uint_eq(memdiff_diff_block_count(d), REGIONS);
                ck_assert_str_eq(block_of(d, REGIONS - 1).label, "mapping 599");
                memdiff_diff_free(d);
            }
        }
        ck_assert_int_eq(rc, MEMDIFF_OK);
        ck_assert_int_gt(n, 4); /* several failures were injected and survived */
    }
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
    ck_assert_uint_eq(live_arena_bytes(), live);
}
END_TEST

/* ---- scale -------------------------------------------------------------------------------- */

START_TEST(million_alternating_runs)
{
    enum { RUNS = 1000000 };
    static const synth_region big[] = {
        {HEAP, HEAP + 2 * (uint64_t)RUNS * PG, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
    };
    synth_run *before = calloc(RUNS, sizeof *before), *after = calloc(RUNS, sizeof *after);
    ck_assert_ptr_nonnull(before);
    ck_assert_ptr_nonnull(after);
    for (uint64_t i = 0; i < RUNS; i++) {
        /* Even pages resident before, odd pages after: every page changes. */
        before[i] = (synth_run){HEAP + 2 * i * PG, 1, PRES | PRIV};
        after[i] = (synth_run){HEAP + (2 * i + 1) * PG, 1, PRES | (i % 2 ? PRIV : FILEPG)};
    }
    synth_spec sb = {.regions = big, .region_count = 1, .runs = before, .run_count = RUNS};
    synth_spec sa = {.regions = big, .region_count = 1, .runs = after, .run_count = RUNS};
    memdiff_diff *d = diff_specs(&sb, &sa, 0);
    check_diff_totals(d, (pages){.new_private = RUNS / 2, .new_shared = RUNS / 2,
                                 .discarded = RUNS});
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    check_block(d, 0, HEAP, HEAP + 2 * (uint64_t)RUNS * PG, MEMDIFF_CAT_HEAP, "[heap]",
                MEMDIFF_CHANGE_MIXED, BOTH);
    memdiff_diff_free(d);
    free(before);
    free(after);
}
END_TEST

/* ---- figures near and beyond 2^63 --------------------------------------------------------- */

/* A diff's figures are signed 64-bit. A snapshot file may map less than 2^63 bytes, so two
 * files cannot make a diff past the limit: the loader refuses a file that maps more, and the
 * writer never writes one. Snapshots made in memory can, and the compare refuses their diff;
 * one just below the limit has exact figures everywhere. */
#define TWO63 (UINT64_C(1) << 63)
#define NEAR63 (TWO63 - PG) /* the most bytes a figure holds, in whole pages */

/* s saved to a file and loaded back (freeing s): what a caller comparing files compares. */
static memdiff_snapshot *through_file(memdiff_snapshot *s)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(memdiff_snapshot_save(s, f), MEMDIFF_OK);
    rewind(f);
    memdiff_snapshot *t = NULL;
    ck_assert_msg(memdiff_snapshot_load(f, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    fclose(f);
    memdiff_snapshot_free(s);
    return t;
}

/* The detail of a refused compare: the count, where it is and its value. */
static const char *refused(char want[512], const char *what, const char *where, const char *bytes)
{
    snprintf(want, 512,
             "memdiff_compare: %s bytes in %s would be %s, more than the "
             "9,223,372,036,854,775,807 (2^63 - 1) a diff's signed 64-bit figures hold; these "
             "snapshots cannot be compared",
             what, where, bytes);
    return want;
}

/* Every way of comparing b with a (verbose or not, forced or not) is refused: MEMDIFF_ERANGE,
 * no diff, and the detail of refused(). */
static void assert_refused(const memdiff_snapshot *b, const memdiff_snapshot *a, const char *what,
                           const char *where, const char *bytes)
{
    char want[512];
    refused(want, what, where, bytes);
    for (unsigned flags = 0; flags <= (MEMDIFF_COMPARE_VERBOSE | MEMDIFF_COMPARE_FORCE); flags++) {
        memdiff_diff *d = (memdiff_diff *)&d;
        ck_assert_int_eq(memdiff_compare(b, a, flags, &d), MEMDIFF_ERANGE);
        ck_assert_ptr_null(d);
        ck_assert_str_eq(memdiff_last_error(), want);
    }
}

START_TEST(freeing_2_63_bytes_is_refused)
{
    synth_region r;
    synth_run u;
    synth_spec sf = synth_huge(&r, &u, TWO63, 1), se = synth_huge(&r, &u, TWO63, 0);
    memdiff_snapshot *full = synth_snapshot(&sf), *empty = synth_snapshot(&se);
    ck_assert_uint_eq(full->info.resident_bytes, TWO63); /* a snapshot's unsigned count holds it */
    assert_refused(full, empty, "freed", "all categories", "9,223,372,036,854,775,808");
    assert_refused(empty, full, "new", "all categories", "9,223,372,036,854,775,808");
    /* As files: the writer refuses both (its own output must load, and the loader refuses a file
     * mapping 2^63 bytes or more, so no pair of files reaches the compare). */
    memdiff_snapshot *both[] = {full, empty};
    for (size_t i = 0; i < 2; i++) {
        FILE *f = tmpfile();
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(memdiff_snapshot_save(both[i], f), MEMDIFF_EINVAL);
        ck_assert_msg(strstr(memdiff_last_error(),
                             "memdiff_snapshot_save: the snapshot breaks the data model: "
                             "snapshot file: the regions up to region 0 map 2251799813685248 "
                             "pages of 4096 bytes, more than 2^63 - 1 bytes: refused") != NULL,
                      "%s", memdiff_last_error());
        fclose(f);
    }
    memdiff_snapshot_free(empty);
    memdiff_snapshot_free(full);
}
END_TEST

START_TEST(sums_beyond_2_63_are_refused)
{
    /* 2^62 bytes freed in each of two categories: each fits, their total does not. */
    static const synth_region two[] = {
        {TWO63 / 2, TWO63, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
        {TWO63, TWO63 + TWO63 / 2, MEMDIFF_CAT_PRIVATE, "anon", 2, 0, 0, 0, 0},
    };
    static const synth_run both[] = {
        {TWO63 / 2, TWO63 / 2 / PG, PRES | PRIV},
        {TWO63, TWO63 / 2 / PG, PRES | PRIV},
    };
    memdiff_snapshot *b = synth_snapshot(&SPEC(two, both)), *a = synth_snapshot(&SPEC_NORUNS(two));
    assert_refused(b, a, "freed", "all categories", "9,223,372,036,854,775,808");
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);

    /* Own is outside the total but has figures of its own (memdiff_diff_figure, the reports). */
    static const synth_region own[] = {
        {TWO63 / 2, TWO63 / 2 + TWO63, MEMDIFF_CAT_OWN, "memdiff", 1, 0, 0, 0, 0},
    };
    static const synth_run all_own[] = {{TWO63 / 2, TWO63 / PG, PRES | PRIV}};
    b = synth_snapshot(&SPEC(own, all_own));
    a = synth_snapshot(&SPEC_NORUNS(own));
    assert_refused(b, a, "freed", "own", "9,223,372,036,854,775,808");
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
}
END_TEST

START_TEST(touching_2_63_bytes_is_refused)
{
    /* A bracket whose 2^63 bytes stayed resident and were all accessed: nothing new or freed,
     * but touched and persistent do not fit a figure (touched is one: MEMDIFF_MEASURE_TOUCHED). */
    synth_region r;
    synth_run u;
    synth_spec sb = synth_huge(&r, &u, TWO63, 1), sa = sb;
    synth_run accessed = u;
    accessed.attrs |= MEMDIFF_PAGE_ACCESSED;
    sa.runs = &accessed;
    memdiff_snapshot *b = synth_snapshot(&sb), *a = synth_snapshot(&sa);
    const memdiff__refs_in refs = {.accessed_bit = 1};
    memdiff_refset_info info;
    memset(&info, 0, sizeof info);
    memdiff_diff *d = (memdiff_diff *)&d;
    ck_assert_int_eq(memdiff__refset_diff(b, a, 0, &refs, &info, NULL, &d), MEMDIFF_ERANGE);
    ck_assert_ptr_null(d);
    char want[512];
    ck_assert_str_eq(memdiff_last_error(),
                     refused(want, "touched", "all categories", "9,223,372,036,854,775,808"));
    /* As a plain diff nothing changed. */
    ck_assert_int_eq(memdiff_compare(b, a, 0, &d), MEMDIFF_OK);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 0);
    memdiff_diff_free(d);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
}
END_TEST

/* The figure m of category c in d, unfiltered; the call must succeed. */
static int64_t figure_of(const memdiff_diff *d, memdiff_category c, memdiff_measure m)
{
    const memdiff_figure f = {c, m, NULL};
    int64_t v = -12345;
    ck_assert_int_eq(memdiff_diff_figure(d, &f, &v), MEMDIFF_OK);
    return v;
}

/* memdiff_check(d, all categories, m, cmp, 0) returns want, with the message want_msg (NULL:
 * any message). */
static void assert_check(const memdiff_diff *d, memdiff_measure m, memdiff_cmp cmp, int want,
                         const char *want_msg)
{
    char msg[2048];
    const memdiff_figure f = {MEMDIFF_CAT_ALL, m, NULL};
    ck_assert_int_eq(memdiff_check(d, &f, cmp, 0, msg, sizeof msg), want);
    if (want_msg)
        ck_assert_str_eq(msg, want_msg);
}

/* A text or JSON report of d, into buf. */
static const char *report(const memdiff_diff *d, int json, char *buf, size_t size)
{
    FILE *f = fmemopen(buf, size, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(json ? memdiff_report_json(d, f, 0) : memdiff_report_text(d, f, 0),
                     MEMDIFF_OK);
    fclose(f);
    return buf;
}

START_TEST(figures_just_below_2_63_are_exact)
{
    synth_region r;
    synth_run u;
    synth_spec sf = synth_huge(&r, &u, NEAR63, 1), se = synth_huge(&r, &u, NEAR63, 0);
    memdiff_snapshot *full = through_file(synth_snapshot(&sf));
    memdiff_snapshot *empty = through_file(synth_snapshot(&se));
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(full, empty, 0, &d), MEMDIFF_OK);
    check_diff_totals(d, (pages){.discarded = NEAR63 / PG});
    check_category(d, MEMDIFF_CAT_HEAP, (pages){.discarded = NEAR63 / PG});

    const int64_t near = (int64_t)NEAR63; /* 9,223,372,036,854,771,712 = 2^63 - 4096 */
    ck_assert_int_eq(figure_of(d, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_FREED), near);
    ck_assert_int_eq(figure_of(d, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET), -near);
    ck_assert_int_eq(figure_of(d, MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_NET_PRIVATE), -near);
    assert_check(d, MEMDIFF_MEASURE_FREED, MEMDIFF_CMP_GT, 1,
                 "memdiff check holds: freed bytes in all categories = "
                 "9,223,372,036,854,771,712, want > 0");
    assert_check(d, MEMDIFF_MEASURE_NET, MEMDIFF_CMP_GE, 0,
                 "memdiff check failed: net bytes in all categories = "
                 "-9,223,372,036,854,771,712, want >= 0\n"
                 "  blocks, largest first (1 of 1):\n"
                 "    -9,223,372,036,854,771,712  heap  freed  [heap]  0x10000-0x800000000000f000\n"
                 "  by category: heap -9,223,372,036,854,771,712");
    const memdiff_figure heap_freed = {MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_FREED, NULL};
    ck_assert_int_eq(memdiff_check_label(d, &heap_freed, "[heap]", MEMDIFF_MATCH_EXACT, near,
                                         NULL, 0),
                     1);

    static char text[8192];
    report(d, 0, text, sizeof text);
    ck_assert_msg(strstr(text, "Net change:            -9,223,372,036,854,771,712 bytes  "
                               "(-2,251,799,813,685,247 pages)\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "Memory freed:          -9,223,372,036,854,771,712 bytes  "
                               "(2,251,799,813,685,247 pages: 0 unmapped, "
                               "2,251,799,813,685,247 discarded, 0 swapped out)\n"),
                  "%s", text);
    report(d, 1, text, sizeof text);
    /* Beyond 2^53 the JSON writes them as strings, exact where a double would round. */
    ck_assert_ptr_nonnull(strstr(text, "\"freed_bytes\": \"9223372036854771712\", "));
    ck_assert_ptr_nonnull(strstr(text, "\"net_bytes\": \"-9223372036854771712\"}"));
    memdiff_diff_free(d);
    memdiff_snapshot_free(empty);
    memdiff_snapshot_free(full);
}
END_TEST

START_TEST(new_and_freed_each_just_below_2_63)
{
    /* The most a diff can hold both ways: 2^63 - 4096 bytes freed from address 0 and as many
     * new from 2^63 (up to the last page below 2^64). Net 0, impacting 2^64 - 8192. */
    static const synth_region two[] = {
        {0, NEAR63, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
        {TWO63, TWO63 + NEAR63, MEMDIFF_CAT_PRIVATE, "anon", 2, 0, 0, 0, 0},
    };
    static const synth_run before[] = {{0, NEAR63 / PG, PRES | PRIV}};
    static const synth_run after[] = {{TWO63, NEAR63 / PG, PRES | PRIV | MEMDIFF_PAGE_ACCESSED}};
    memdiff_diff *d = synth_bracket_diff(&SPEC(two, before), &SPEC(two, after), 0, NULL);
    check_diff_totals(d, (pages){.new_private = NEAR63 / PG, .discarded = NEAR63 / PG});
    memdiff_impact m;
    ck_assert_int_eq(memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &m), MEMDIFF_OK);
    ck_assert_uint_eq(m.impacting_bytes, UINT64_MAX - 2 * PG + 1);
    ck_assert_uint_eq(m.touched_bytes, NEAR63);
    ck_assert_uint_eq(m.persistent_bytes, 0);

    ck_assert_int_eq(figure_of(d, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET), 0);
    ck_assert_int_eq(figure_of(d, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_TOUCHED), (int64_t)NEAR63);
    assert_check(d, MEMDIFF_MEASURE_NEW, MEMDIFF_CMP_GT, 1, NULL);
    assert_check(d, MEMDIFF_MEASURE_NET_PRIVATE, MEMDIFF_CMP_EQ, 1, NULL);
    /* Equal sizes stay in address order; the two add up to 0. */
    assert_check(d, MEMDIFF_MEASURE_NET, MEMDIFF_CMP_NE, 0,
                 "memdiff check failed: net bytes in all categories = 0, want != 0\n"
                 "  blocks, largest first (2 of 2):\n"
                 "    -9,223,372,036,854,771,712  heap     freed  [heap]  0x0-0x7ffffffffffff000\n"
                 "    +9,223,372,036,854,771,712  private  new    anon  "
                 "0x8000000000000000-0xfffffffffffff000\n"
                 "  by category: heap -9,223,372,036,854,771,712; private "
                 "+9,223,372,036,854,771,712");
    memdiff_diff_free(d);
}
END_TEST

START_TEST(times_far_apart_in_the_header)
{
    /* Times are whatever a file says: their difference may not fit an int64_t. */
    static const struct {
        uint64_t before, after;
        const char *shown;
    } cases[] = {
        {1, UINT64_MAX, ", after +18446744073.710 s\n"},   /* 2^64 - 2 ns */
        {UINT64_MAX, 1, ", after -18446744073.710 s\n"},
        {1, TWO63 + 2, ", after +9223372036.855 s\n"},     /* 2^63 + 1 ns */
        {1000, 1000 + 499999, ", after +0.000 s\n"},
        {1000, 1000 + 500000, ", after +0.001 s\n"},
    };
    for (size_t i = 0; i < SYNTH_COUNT(cases); i++) {
        synth_spec sb = SPEC_NORUNS(heap_only), sa = sb;
        sb.time_ns = cases[i].before;
        sa.time_ns = cases[i].after;
        memdiff_diff *d = diff_specs(&sb, &sa, 0);
        char text[4096];
        report(d, 0, text, sizeof text);
        ck_assert_msg(strstr(text, cases[i].shown), "case %zu: %s", i, text);
        memdiff_diff_free(d);
    }
}
END_TEST

START_TEST(checked_arithmetic_saturates)
{
    ck_assert_uint_eq(memdiff__add_sat(UINT64_MAX - 1, 1), UINT64_MAX);
    ck_assert_uint_eq(memdiff__add_sat(UINT64_MAX - 1, 2), UINT64_MAX);
    ck_assert_uint_eq(memdiff__add_sat(TWO63, TWO63), UINT64_MAX);
    ck_assert_uint_eq(memdiff__add_sat(TWO63, TWO63 - 1), UINT64_MAX);
    ck_assert_int_eq(memdiff__to_figure(TWO63 - 1), INT64_MAX);
    ck_assert_int_eq(memdiff__to_figure(TWO63), INT64_MAX);
    ck_assert_int_eq(memdiff__sub_sat(NEAR63, 0), (int64_t)NEAR63);
    ck_assert_int_eq(memdiff__sub_sat(0, NEAR63), -(int64_t)NEAR63);
    ck_assert_int_eq(memdiff__sub_sat(0, TWO63), -INT64_MAX);
    ck_assert_int_eq(memdiff__sub_sat(UINT64_MAX, 0), INT64_MAX);
    ck_assert_int_eq(memdiff__sub_sat(5, 7), -2);
    ck_assert_int_eq(memdiff__add_sat_i64(INT64_MAX, 1), INT64_MAX);
    ck_assert_int_eq(memdiff__add_sat_i64(INT64_MAX - 1, 1), INT64_MAX);
    ck_assert_int_eq(memdiff__add_sat_i64(-INT64_MAX, -1), -INT64_MAX);
    ck_assert_int_eq(memdiff__add_sat_i64(INT64_MIN, 0), -INT64_MAX);
    ck_assert_int_eq(memdiff__add_sat_i64(INT64_MIN, 1), -INT64_MAX);
    ck_assert_int_eq(memdiff__add_sat_i64(INT64_MAX, -INT64_MAX), 0);
    ck_assert_int_eq(memdiff__sub_sat_i64(0, INT64_MIN), INT64_MAX);
    ck_assert_int_eq(memdiff__sub_sat_i64(-2, INT64_MAX), -INT64_MAX);
    ck_assert_int_eq(memdiff__sub_sat_i64(5, 7), -2);
}
END_TEST

Suite *compare_suite(void)
{
    Suite *s = suite_create("compare");
    TCase *tc = tcase_create("Outcomes");
    tcase_add_test(tc, touched_pages_are_new);
    tcase_add_test(tc, discarded_pages_are_freed);
    tcase_add_test(tc, swapped_out_and_back);
    tcase_add_test(tc, unmapped_region_is_freed_before_only);
    tcase_add_test(tc, new_region_is_new_after_only);
    tcase_add_test(tc, remapped_with_another_file_is_freed_and_new);
    tcase_add_test(tc, same_file_other_offset_is_another_mapping);
    tcase_add_test(tc, another_owner_at_one_address_is_freed_and_new);
    tcase_add_test(tc, other_category_at_one_address_sorts_by_category);
    tcase_add_test(tc, replaced_frames);
    tcase_add_test(tc, became_private_and_shared);
    tcase_add_test(tc, sharing_change_outranks_frame_change);
    tcase_add_test(tc, fast_depth_estimates_private_and_shared);
    tcase_add_test(tc, zero_pages_cost_nothing);
    tcase_add_test(tc, unmapped_and_not_resident_pages_are_left_out);
    suite_add_tcase(s, tc);

    tc = tcase_create("Own");
    tcase_add_test(tc, own_is_apart_from_totals_and_blocks);
    tcase_add_test(tc, own_address_reused_by_the_process);
    suite_add_tcase(s, tc);

    tc = tcase_create("Blocks");
    tcase_add_test(tc, default_blocks_group_a_module);
    tcase_add_test(tc, verbose_blocks_split_by_attributes);
    tcase_add_test(tc, verbose_keeps_freed_kinds_apart);
    tcase_add_test(tc, find_block_in_nested_spans);
    tcase_add_test(tc, find_block_in_touching_verbose_spans);
    tcase_add_test(tc, find_block_of_one_start);
    tcase_add_test(tc, find_block_invalid_arguments);
    suite_add_tcase(s, tc);

    tc = tcase_create("Lifetime");
    tcase_add_test(tc, compare_twice_gives_the_same_diff);
    tcase_add_test(tc, diff_outlives_its_snapshots);
    suite_add_tcase(s, tc);

    tc = tcase_create("Accessors");
    tcase_add_test(tc, totals_of_all_are_the_sum_but_own);
    tcase_add_test(tc, diff_info_is_the_snapshots_and_flags);
    suite_add_tcase(s, tc);

    tc = tcase_create("Errors");
    tcase_add_test(tc, invalid_arguments);
    tcase_add_test(tc, page_size_mismatch);
    tcase_add_test(tc, page_size_not_a_power_of_two);
    tcase_add_test(tc, out_of_memory_at_every_step);
    suite_add_tcase(s, tc);

    tc = tcase_create("Limits");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, million_alternating_runs);
    suite_add_tcase(s, tc);

    tc = tcase_create("Figures beyond 63 bits");
    tcase_add_test(tc, freeing_2_63_bytes_is_refused);
    tcase_add_test(tc, sums_beyond_2_63_are_refused);
    tcase_add_test(tc, touching_2_63_bytes_is_refused);
    tcase_add_test(tc, figures_just_below_2_63_are_exact);
    tcase_add_test(tc, new_and_freed_each_just_below_2_63);
    tcase_add_test(tc, times_far_apart_in_the_header);
    tcase_add_test(tc, checked_arithmetic_saturates);
    suite_add_tcase(s, tc);
    return s;
}
