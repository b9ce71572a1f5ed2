/*
 * fuzz_pair.c - libFuzzer target for comparing two snapshot files: both are loaded, compared
 * both ways, plain, verbose and forced, and as a reference-set bracket; the totals are checked
 * against each other, every report is written and every figure and check is evaluated.
 *
 * Built like fuzz_load.c, with UBSan fatal, signed-integer overflow included: two valid files can
 * describe 2^63 bytes and more, which no int64_t figure holds, so this is where arithmetic on
 * counts from files is tried.
 *
 * Input: two snapshot files back to back. The second starts at the first "MEMDIFF\0" after
 * offset 0; without one, both are the whole input. So `cat a.mds b.mds` is a seed. Each part is
 * given the right CRC-32 in its last four bytes, so that mutations reach the section parsers and
 * the compare (fuzz_load.c tries the checksum itself).
 *
 * What must hold for every pair that loads (docs/api.md, memdiff.h):
 *  - a compare returns a diff, or MEMDIFF_EMISMATCH (other process, host or page size),
 *    MEMDIFF_ERANGE (counts beyond INT64_MAX) or MEMDIFF_ENOMEM, with a detail and no diff;
 *  - every count of a diff is at most INT64_MAX; new = private + shared, freed = unmapped +
 *    discarded + swapped, net = new - freed; the total is the sum of the categories but Own,
 *    and each category but Own the sum of its blocks; blocks are non-empty, in address order;
 *  - verbose and forced change the blocks, never the totals;
 *  - the other way round, new and freed swap, and so do became-private and became-shared,
 *    category by category; replaced stays; one way is refused (ERANGE) exactly when the other is;
 *  - every figure equals the totals' count it names, a check holds exactly when its figure
 *    says so, a filter keeps no more than there is;
 *  - a bracket's impacting bytes are new + freed, its touched bytes those of its blocks.
 * Anything else aborts, which libFuzzer reports as a crash.
 *
 * Build: cmake -S . -B build-fuzz -DMEMDIFF_BUILD_FUZZ=ON -DCMAKE_C_COMPILER=clang
 * Run:   build-fuzz/tests/fuzz/memdiff_fuzz_pair -max_total_time=60 CORPUS_DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_pair.c:%d: %s does not hold (%s)\n", __LINE__, #cond,        \
                    memdiff_last_error());                                                     \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

static FILE *sink(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "wb");
    CHECK(f != NULL);
    return f;
}

/* The part data[0..size) as a snapshot, with its checksum made right; NULL when it does not
 * load, which must then be EFORMAT with a detail. */
static memdiff_snapshot *load(const uint8_t *data, size_t size)
{
    if (size <= 4)
        return NULL;
    uint8_t *copy = malloc(size);
    CHECK(copy != NULL);
    memcpy(copy, data, size);
    uint32_t crc = memdiff__crc32(0, copy, size - 4);
    for (int i = 0; i < 4; i++)
        copy[size - 4 + i] = (uint8_t)(crc >> (8 * i));
    FILE *f = fmemopen(copy, size, "rb");
    memdiff_snapshot *s = NULL;
    int rc = f ? memdiff_snapshot_load(f, &s) : MEMDIFF_EFORMAT;
    if (f)
        fclose(f);
    free(copy);
    CHECK(rc == MEMDIFF_OK || (rc == MEMDIFF_EFORMAT && !s && memdiff_last_error()[0]) ||
          (rc == MEMDIFF_ENOMEM && !s));
    return s;
}

/* ---- one diff ------------------------------------------------------------------------------ */

static void check_shape(const memdiff_totals *t)
{
    const uint64_t max = MEMDIFF__FIGURE_MAX;
    CHECK(t->new_bytes <= max && t->freed_bytes <= max && t->replaced_bytes <= max &&
          t->became_private_bytes <= max && t->became_shared_bytes <= max);
    CHECK(t->new_private_bytes + t->new_shared_bytes == t->new_bytes);
    CHECK(t->freed_unmapped_bytes + t->freed_discarded_bytes + t->freed_swapped_bytes ==
          t->freed_bytes);
    CHECK(t->net_bytes == (int64_t)t->new_bytes - (int64_t)t->freed_bytes);
}

/* Adds b into a, field by field; every sum must fit (they are sums of counts that do). */
static void add_totals(memdiff_totals *a, const memdiff_totals *b)
{
    uint64_t *x = &a->new_bytes;
    const uint64_t *y = &b->new_bytes;
    for (size_t i = 0; i < offsetof(memdiff_totals, net_bytes) / sizeof *x; i++)
        CHECK(!__builtin_add_overflow(x[i], y[i], &x[i]));
    a->net_bytes = (int64_t)a->new_bytes - (int64_t)a->freed_bytes;
    CHECK(!__builtin_add_overflow(a->new_pss_bytes, b->new_pss_bytes, &a->new_pss_bytes));
    CHECK(!__builtin_add_overflow(a->freed_pss_bytes, b->freed_pss_bytes, &a->freed_pss_bytes));
}

static int same_totals(const memdiff_totals *a, const memdiff_totals *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

static void check_blocks(const memdiff_diff *d)
{
    memdiff_totals sum[MEMDIFF_CAT_COUNT];
    memset(sum, 0, sizeof sum);
    uint64_t prev = 0;
    memdiff_block k, last;
    memset(&k, 0, sizeof k);
    for (size_t i = 0; i < memdiff_diff_block_count(d); i++) {
        CHECK(memdiff_diff_block(d, i, &k) == MEMDIFF_OK);
        CHECK(k.start < k.end && k.start >= prev && k.label);
        CHECK((unsigned)k.category < MEMDIFF_CAT_COUNT && k.category != MEMDIFF_CAT_OWN);
        check_shape(&k.totals);
        add_totals(&sum[k.category], &k.totals);
        prev = k.start;
    }
    /* One past the last: refused, and *out left as it was (the last block, or zeros). */
    memcpy(&last, &k, sizeof k);
    CHECK(memdiff_diff_block(d, memdiff_diff_block_count(d), &k) == MEMDIFF_ERANGE);
    CHECK(memcmp(&k, &last, sizeof k) == 0);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        memdiff_totals t;
        CHECK(memdiff_diff_totals(d, (memdiff_category)c, &t) == MEMDIFF_OK);
        if (c != MEMDIFF_CAT_OWN)
            CHECK(same_totals(&sum[c], &t));
    }
}

static int64_t count_of(const memdiff_totals *t, memdiff_measure m)
{
    switch (m) {
    case MEMDIFF_MEASURE_NEW:
        return (int64_t)t->new_bytes;
    case MEMDIFF_MEASURE_FREED:
        return (int64_t)t->freed_bytes;
    case MEMDIFF_MEASURE_NET:
        return t->net_bytes;
    case MEMDIFF_MEASURE_PRIVATE:
        return (int64_t)t->new_private_bytes;
    case MEMDIFF_MEASURE_SHARED:
        return (int64_t)t->new_shared_bytes;
    case MEMDIFF_MEASURE_NET_PRIVATE:
        return (int64_t)t->new_private_bytes - (int64_t)t->freed_bytes;
    case MEMDIFF_MEASURE_REPLACED:
        return (int64_t)t->replaced_bytes;
    default:
        abort();
    }
}

static const memdiff_measure plain_measures[] = {
    MEMDIFF_MEASURE_NEW,     MEMDIFF_MEASURE_FREED,       MEMDIFF_MEASURE_NET,
    MEMDIFF_MEASURE_PRIVATE, MEMDIFF_MEASURE_SHARED,      MEMDIFF_MEASURE_NET_PRIVATE,
    MEMDIFF_MEASURE_REPLACED,
};

/* Figures of every category (all, each, Own) and plain measure against the totals, checks
 * against the figures, and a filter that leaves out some. */
static void check_figures(const memdiff_diff *d)
{
    static const char *const labels[] = {"lib", "[heap]", NULL};
    const memdiff_filter filter = {MEMDIFF_CAT_BIT(MEMDIFF_CAT_STACK),
                                   MEMDIFF_FILTER_IGNORE_IMAGE_FILE, labels};
    char msg[600];
    for (int c = 0; c <= MEMDIFF_CAT_ALL; c++) {
        memdiff_totals t;
        CHECK(memdiff_diff_totals(d, (memdiff_category)c, &t) == MEMDIFF_OK);
        for (size_t i = 0; i < sizeof plain_measures / sizeof plain_measures[0]; i++) {
            const memdiff_figure plain = {(memdiff_category)c, plain_measures[i], NULL};
            const memdiff_figure kept_fig = {(memdiff_category)c, plain_measures[i], &filter};
            memdiff_measure m = plain_measures[i];
            int64_t v = 0, kept = 0;
            CHECK(memdiff_diff_figure(d, &plain, &v) == MEMDIFF_OK);
            CHECK(v == count_of(&t, m));
            int holds = memdiff_check(d, &plain, MEMDIFF_CMP_GT, 0, msg, sizeof msg);
            CHECK(holds == (v > 0) && strlen(msg) < sizeof msg);
            CHECK(memdiff_check(d, &plain, MEMDIFF_CMP_LE, -1, NULL, 0) == (v <= -1));
            CHECK(memdiff_diff_figure(d, &kept_fig, &kept) == MEMDIFF_OK);
            if (m == MEMDIFF_MEASURE_NEW || m == MEMDIFF_MEASURE_FREED)
                CHECK(kept >= 0 && kept <= v);
            CHECK(memdiff_check(d, &kept_fig, MEMDIFF_CMP_NE, 0, msg, sizeof msg) == (kept != 0));
        }
    }
    /* A NULL figure is net bytes of all categories, unfiltered. */
    memdiff_totals all;
    int64_t net = 1;
    CHECK(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &all) == MEMDIFF_OK);
    CHECK(memdiff_diff_figure(d, NULL, &net) == MEMDIFF_OK && net == all.net_bytes);
    CHECK(memdiff_check(d, NULL, MEMDIFF_CMP_EQ, all.net_bytes, NULL, 0) == 1);
    int any = memdiff_diff_block_count(d) > 0;
    const memdiff_figure all_net = {MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, NULL};
    const memdiff_figure heap_freed = {MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_FREED, NULL};
    CHECK(memdiff_check_label(d, &all_net, "", MEMDIFF_MATCH_SUBSTRING, INT64_MIN, msg,
                              sizeof msg) == any);
    CHECK(memdiff_check_label(d, NULL, "", MEMDIFF_MATCH_SUBSTRING, INT64_MIN, NULL, 0) == any);
    CHECK(memdiff_check_label(d, &heap_freed, "[heap]", MEMDIFF_MATCH_EXACT, INT64_MAX, msg,
                              64) >= 0);
}

static void check_reports(const memdiff_diff *d)
{
    CHECK(memdiff_report_text(d, sink(), 0) == MEMDIFF_OK);
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    o.flags = MEMDIFF_REPORT_NO_HEADER;
    CHECK(memdiff_report_text(d, sink(), &o) == MEMDIFF_OK);
    o.sort = MEMDIFF_SORT_NET;
    o.top = 3;
    CHECK(memdiff_report_json(d, sink(), &o) == MEMDIFF_OK);
    CHECK(memdiff_report_json(d, sink(), 0) == MEMDIFF_OK);
}

static void check_diff(const memdiff_diff *d)
{
    memdiff_totals t, sum;
    memset(&sum, 0, sizeof sum);
    CHECK(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &t) == MEMDIFF_OK);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        memdiff_totals k;
        CHECK(memdiff_diff_totals(d, (memdiff_category)c, &k) == MEMDIFF_OK);
        check_shape(&k);
        if (c != MEMDIFF_CAT_OWN)
            add_totals(&sum, &k);
    }
    check_shape(&t);
    CHECK(same_totals(&t, &sum));
    check_blocks(d);
    check_figures(d);
    check_reports(d);
}

/* compare(b, a, flags): a diff that passes check_diff, or a refusal as the top says. */
static memdiff_diff *compare(const memdiff_snapshot *b, const memdiff_snapshot *a,
                             unsigned flags, int *rc)
{
    memdiff_diff *d = (memdiff_diff *)&d;
    *rc = memdiff_compare(b, a, flags, &d);
    if (*rc == MEMDIFF_OK) {
        CHECK(d != NULL);
        memdiff_diff_info di;
        CHECK(memdiff_diff_get_info(d, &di) == MEMDIFF_OK && di.compare_flags == flags);
        CHECK(di.before.pid == b->info.pid && di.after.pid == a->info.pid);
        CHECK(di.before.time_ns == b->info.time_ns && di.after.time_ns == a->info.time_ns);
        CHECK(di.refset.sources == 0);
        check_diff(d);
        /* The documents that read the after snapshot as well as the diff. */
        memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
        o.flags = MEMDIFF_REPORT_LINE;
        CHECK(memdiff_watch_report_json(d, a, 1, sink(), &o) == MEMDIFF_OK);
        CHECK(memdiff_snapshot_report_json(a, sink(), &o) == MEMDIFF_OK);
        return d;
    }
    CHECK(d == NULL && memdiff_last_error()[0]);
    CHECK(*rc == MEMDIFF_EMISMATCH || *rc == MEMDIFF_ERANGE || *rc == MEMDIFF_ENOMEM);
    if (*rc == MEMDIFF_EMISMATCH && (flags & MEMDIFF_COMPARE_FORCE))
        CHECK(strstr(memdiff_last_error(), "page sizes differ"));
    return NULL;
}

/* ---- pairs of diffs ------------------------------------------------------------------------ */

static void same_figures(const memdiff_diff *x, const memdiff_diff *y)
{
    memdiff_totals a, b;
    for (int c = 0; c <= MEMDIFF_CAT_ALL; c++) {
        CHECK(memdiff_diff_totals(x, (memdiff_category)c, &a) == MEMDIFF_OK);
        CHECK(memdiff_diff_totals(y, (memdiff_category)c, &b) == MEMDIFF_OK);
        CHECK(same_totals(&a, &b));
    }
}

/* x compares b with a, y a with b. */
static void mirrored(const memdiff_diff *x, const memdiff_diff *y)
{
    for (int c = 0; c <= MEMDIFF_CAT_ALL; c++) {
        memdiff_totals a, b;
        CHECK(memdiff_diff_totals(x, (memdiff_category)c, &a) == MEMDIFF_OK);
        CHECK(memdiff_diff_totals(y, (memdiff_category)c, &b) == MEMDIFF_OK);
        CHECK(a.new_bytes == b.freed_bytes && a.freed_bytes == b.new_bytes);
        CHECK(a.net_bytes == -b.net_bytes && a.replaced_bytes == b.replaced_bytes);
        CHECK(a.became_private_bytes == b.became_shared_bytes &&
              a.became_shared_bytes == b.became_private_bytes);
    }
}

/* A reference-set bracket's diff of b and a (touched: the after pages marked accessed, or every
 * page resident after), with its impact figures. */
static void bracket(const memdiff_snapshot *b, const memdiff_snapshot *a, unsigned flags,
                    int resident_is_touched)
{
    memdiff__refs_in refs;
    memset(&refs, 0, sizeof refs); /* no per-mapping figures: every touched byte is exact */
    refs.accessed_bit = !resident_is_touched;
    refs.resident_is_touched = resident_is_touched;
    memdiff_refset_info info;
    memset(&info, 0, sizeof info);
    memdiff_diff *d = NULL;
    int rc = memdiff__refset_diff(b, a, flags | MEMDIFF_COMPARE_FORCE, &refs, &info, NULL, &d);
    if (rc != MEMDIFF_OK) {
        CHECK(d == NULL);
        CHECK(rc == MEMDIFF_EMISMATCH || rc == MEMDIFF_ERANGE || rc == MEMDIFF_ENOMEM);
        return;
    }
    check_diff(d);
    memdiff_totals t;
    memdiff_impact m, sum;
    memdiff_block block;
    memset(&sum, 0, sizeof sum);
    CHECK(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &t) == MEMDIFF_OK &&
          memdiff_diff_impact(d, MEMDIFF_CAT_ALL, &m) == MEMDIFF_OK);
    CHECK(m.impacting_bytes == t.new_bytes + t.freed_bytes);
    CHECK(m.touched_bytes <= MEMDIFF__FIGURE_MAX && m.persistent_bytes <= MEMDIFF__FIGURE_MAX);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        memdiff_impact k;
        CHECK(memdiff_diff_impact(d, (memdiff_category)c, &k) == MEMDIFF_OK);
        if (c == MEMDIFF_CAT_OWN)
            continue;
        CHECK(!__builtin_add_overflow(sum.touched_bytes, k.touched_bytes, &sum.touched_bytes));
        CHECK(!__builtin_add_overflow(sum.persistent_bytes, k.persistent_bytes,
                                      &sum.persistent_bytes));
    }
    CHECK(sum.touched_bytes == m.touched_bytes && sum.persistent_bytes == m.persistent_bytes);
    uint64_t touched = 0;
    for (size_t i = 0; i < memdiff_diff_block_count(d); i++) {
        CHECK(memdiff_diff_block(d, i, &block) == MEMDIFF_OK);
        CHECK(!__builtin_add_overflow(touched, block.impact.touched_bytes, &touched));
    }
    CHECK(touched == m.touched_bytes);
    int64_t v = -1;
    const memdiff_figure touched_fig = {MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_TOUCHED, NULL};
    const memdiff_figure peak_fig = {MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_PEAK, NULL};
    CHECK(memdiff_diff_figure(d, &touched_fig, &v) == MEMDIFF_OK);
    CHECK(v == (int64_t)m.touched_bytes);
    CHECK(memdiff_diff_figure(d, &peak_fig, &v) == MEMDIFF_OK && v == 0);
    memdiff_diff_free(d);
}

static void compare_pair(const memdiff_snapshot *b, const memdiff_snapshot *a)
{
    memdiff_diff *d[2][4]; /* [way][flags]: b with a, a with b; VERBOSE | FORCE */
    int rc[2][4];
    for (unsigned f = 0; f < 4; f++) {
        d[0][f] = compare(b, a, f, &rc[0][f]);
        d[1][f] = compare(a, b, f, &rc[1][f]);
    }
    for (int w = 0; w < 2; w++) {
        CHECK(rc[w][0] == rc[w][MEMDIFF_COMPARE_VERBOSE]);
        CHECK(rc[w][MEMDIFF_COMPARE_FORCE] == rc[w][3]);
        for (unsigned f = 0; f < 4; f++) {
            if (d[w][f] && d[w][f & MEMDIFF_COMPARE_FORCE])
                same_figures(d[w][f], d[w][f & MEMDIFF_COMPARE_FORCE]); /* verbose or not */
            if (d[w][f] && d[w][f | MEMDIFF_COMPARE_FORCE])
                same_figures(d[w][f], d[w][f | MEMDIFF_COMPARE_FORCE]); /* forced or not */
        }
    }
    for (unsigned f = 0; f < 4; f++) {
        CHECK(rc[0][f] == rc[1][f]); /* what refuses one way refuses the other */
        if (d[0][f] && d[1][f])
            mirrored(d[0][f], d[1][f]);
    }
    for (int w = 0; w < 2; w++)
        for (unsigned f = 0; f < 4; f++)
            memdiff_diff_free(d[w][f]);
    bracket(b, a, 0, 0);
    bracket(b, a, MEMDIFF_COMPARE_VERBOSE, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t magic[8] = {'M', 'E', 'M', 'D', 'I', 'F', 'F', 0};
    size_t split = 0;
    for (size_t i = 1; !split && i + sizeof magic <= size; i++) {
        if (memcmp(data + i, magic, sizeof magic) == 0)
            split = i;
    }
    memdiff_snapshot *b = split ? load(data, split) : load(data, size);
    memdiff_snapshot *a = split ? load(data + split, size - split) : NULL;
    if (b && (a || !split))
        compare_pair(b, a ? a : b);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
    return 0;
}
