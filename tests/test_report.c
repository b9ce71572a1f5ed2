/*
 * test_report.c - the text and JSON report writers on a synthetic diff: golden files compared
 * byte for byte (tests/fixtures/reports/), escaping of hostile labels, the header, and write
 * errors.
 *
 * To rewrite the golden files after an intended change of layout, run the suite with
 * MEMDIFF_UPDATE_GOLDEN=1 in the environment, then read every changed file before committing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "memdiff.h"
#include "suites.h"
#include "synth.h"

#define PG ((uint64_t)SYNTH_PAGE)
#define PRES MEMDIFF_PAGE_PRESENT
#define PRIV MEMDIFF_PAGE_PRIVATE
#define FILEPG MEMDIFF_PAGE_FILE
#define SWAP MEMDIFF_PAGE_SWAPPED

#define HEAP 0x10000000u
#define LIB 0x7f0000000000u
#define FILEMAP 0x7f1000000000u
#define FILEMAP2 0x7f1000100000u
#define OWNMAP 0x7f2000000000u
#define STACK 0x7ffd00000000u

#define LIBFOO "/usr/lib/libfoo.so"
#define LIB_TEXT \
    {LIB, LIB + 4 * PG, MEMDIFF_CAT_IMAGE, LIBFOO, LIB, MEMDIFF_REGION_FILE, 0x801, 42, 0}
#define LIB_DATA                                                                               \
    {LIB + 4 * PG, LIB + 6 * PG, MEMDIFF_CAT_IMAGE, LIBFOO, LIB, MEMDIFF_REGION_FILE, 0x801, 42, \
     4 * PG}
#define LIB_BSS {LIB + 6 * PG, LIB + 10 * PG, MEMDIFF_CAT_IMAGE, LIBFOO, LIB, 0, 0, 0, 0}
#define HEAP_REG {HEAP, HEAP + 16 * PG, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0}
#define STACK_REG {STACK, STACK + 8 * PG, MEMDIFF_CAT_STACK, "thread 4242", 4242, 0, 0, 0, 0}
#define OWN_REG {OWNMAP, OWNMAP + 16 * PG, MEMDIFF_CAT_OWN, "memdiff", 0, 0, 0, 0, 0}

static const synth_region regions_before[] = {
    HEAP_REG,
    LIB_TEXT,
    LIB_DATA,
    LIB_BSS,
    {FILEMAP, FILEMAP + 8 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/a.bin", FILEMAP,
     MEMDIFF_REGION_FILE, 0x801, 11, 0},
    OWN_REG,
    STACK_REG,
};

static const synth_region regions_after[] = {
    HEAP_REG,
    LIB_TEXT,
    LIB_DATA,
    LIB_BSS,
    {FILEMAP2, FILEMAP2 + 8 * PG, MEMDIFF_CAT_MAPPED_FILE, "/data/b.bin", FILEMAP2,
     MEMDIFF_REGION_FILE | MEMDIFF_REGION_SHARED, 0x801, 12, 0},
    OWN_REG,
    {OWNMAP + 16 * PG, OWNMAP + 32 * PG, MEMDIFF_CAT_OWN, "memdiff", 0, 0, 0, 0, 0},
    STACK_REG,
};

static const synth_run runs_before[] = {
    {HEAP, 8, PRES | PRIV},
    {LIB, 1, PRES | FILEPG},
    {FILEMAP, 3, PRES | FILEPG},
    {OWNMAP, 4, PRES | PRIV},
    {STACK + 6 * PG, 2, PRES}, /* shared with a forked child */
};

static const synth_run runs_after[] = {
    {HEAP, 4, PRES | PRIV},
    {HEAP + 4 * PG, 2, SWAP},        /* swapped out */
    {HEAP + 7 * PG, 5, PRES | PRIV}, /* page 6 discarded, 8..11 new */
    {LIB, 3, PRES | FILEPG},
    {LIB + 4 * PG, 2, PRES | PRIV},
    {LIB + 6 * PG, 1, PRES | PRIV},
    {FILEMAP2, 5, PRES | FILEPG},
    {OWNMAP, 4, PRES | PRIV},
    {OWNMAP + 16 * PG, 16, PRES | PRIV},
    {STACK + 4 * PG, 4, PRES | PRIV}, /* grew by two pages; the child exited */
};

static memdiff_diff *sample_diff(unsigned flags, uint64_t time_before, uint64_t time_after)
{
    synth_spec b = {.regions = regions_before, .region_count = SYNTH_COUNT(regions_before),
                    .runs = runs_before, .run_count = SYNTH_COUNT(runs_before),
                    .time_ns = time_before};
    synth_spec a = {.regions = regions_after, .region_count = SYNTH_COUNT(regions_after),
                    .runs = runs_after, .run_count = SYNTH_COUNT(runs_after),
                    .time_ns = time_after,
                    .degraded = "frame numbers unavailable: needs CAP_SYS_ADMIN"};
    memdiff_snapshot *sb = synth_snapshot(&b), *sa = synth_snapshot(&a);
    ck_assert_ptr_nonnull(sb);
    ck_assert_ptr_nonnull(sa);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(sb, sa, flags, &d), MEMDIFF_OK);
    memdiff_snapshot_free(sa);
    memdiff_snapshot_free(sb);
    return d;
}

typedef int (*writer)(const memdiff_diff *, FILE *, const memdiff_report_options *);

/* What writer prints for d, as a NUL-terminated string the caller frees. */
static char *render(writer w, const memdiff_diff *d, unsigned flags, size_t *len)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    o.flags = flags;
    ck_assert_int_eq(w(d, f, &o), MEMDIFF_OK);
    long size = ftell(f);
    ck_assert_int_ge(size, 0);
    char *buf = malloc((size_t)size + 1);
    ck_assert_ptr_nonnull(buf);
    rewind(f);
    ck_assert_uint_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    buf[size] = '\0';
    fclose(f);
    *len = (size_t)size;
    return buf;
}

static void check_golden(const char *name, writer w, const memdiff_diff *d, unsigned flags)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/reports/%s", MEMDIFF_TEST_FIXTURES, name);
    size_t len;
    char *got = render(w, d, flags, &len);
    if (getenv("MEMDIFF_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        ck_assert_msg(f != NULL, "cannot write %s", path);
        fwrite(got, 1, len, f);
        ck_assert_int_eq(fclose(f), 0);
    }
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "missing golden file %s (MEMDIFF_UPDATE_GOLDEN=1 writes it)", path);
    char *want = malloc(len + 2);
    ck_assert_ptr_nonnull(want);
    size_t n = fread(want, 1, len + 1, f);
    fclose(f);
    want[n] = '\0';
    if (n != len || memcmp(got, want, len) != 0) {
        fprintf(stderr, "---- %s: got\n%s---- want\n%s----\n", name, got, want);
        ck_abort_msg("%s differs from its golden file", name);
    }
    free(want);
    free(got);
}

/* The golden files: the text ones without the header (it holds times and the host), the JSON
 * one with it (the synthetic snapshots carry time_ns 0). */
static const struct {
    const char *file;
    writer write;
    unsigned compare_flags, report_flags;
} goldens[] = {
    {"text.txt", memdiff_report_text, 0, MEMDIFF_REPORT_NO_HEADER},
    {"text-verbose.txt", memdiff_report_text, MEMDIFF_COMPARE_VERBOSE, MEMDIFF_REPORT_NO_HEADER},
    {"report.json", memdiff_report_json, 0, 0},
    {"report-verbose.json", memdiff_report_json, MEMDIFF_COMPARE_VERBOSE,
     MEMDIFF_REPORT_NO_HEADER},
};

START_TEST(golden)
{
    memdiff_diff *d = sample_diff(goldens[_i].compare_flags, 0, 0);
    check_golden(goldens[_i].file, goldens[_i].write, d, goldens[_i].report_flags);
    memdiff_diff_free(d);
}
END_TEST

/* The sample diff as a reference-set bracket's: runs_after with the pages accessed during the
 * bracket marked (every new page, and some that were resident before), and the bracket's own
 * figures. The goldens show touched, peak and impact beside new and freed. */
#define ACC MEMDIFF_PAGE_ACCESSED
static const synth_run runs_after_bracket[] = {
    {HEAP, 2, PRES | PRIV | ACC},     /* resident before, touched */
    {HEAP + 2 * PG, 2, PRES | PRIV},  /* resident before, not touched */
    {HEAP + 4 * PG, 2, SWAP},
    {HEAP + 7 * PG, 5, PRES | PRIV | ACC},
    {LIB, 1, PRES | FILEPG},
    {LIB + PG, 2, PRES | FILEPG | ACC},
    {LIB + 4 * PG, 2, PRES | PRIV | ACC},
    {LIB + 6 * PG, 1, PRES | PRIV | ACC},
    {FILEMAP2, 5, PRES | FILEPG | ACC},
    {OWNMAP, 4, PRES | PRIV | ACC},
    {OWNMAP + 16 * PG, 16, PRES | PRIV | ACC},
    {STACK + 4 * PG, 4, PRES | PRIV | ACC},
};

static memdiff_diff *bracket_diff(unsigned flags)
{
    synth_spec b = {.regions = regions_before, .region_count = SYNTH_COUNT(regions_before),
                    .runs = runs_before, .run_count = SYNTH_COUNT(runs_before)};
    synth_spec a = {.regions = regions_after, .region_count = SYNTH_COUNT(regions_after),
                    .runs = runs_after_bracket, .run_count = SYNTH_COUNT(runs_after_bracket)};
    memdiff_refset_info in;
    memset(&in, 0, sizeof in);
    in.sources = MEMDIFF_REFS_CLEARED | MEMDIFF_REFS_PAGES | MEMDIFF_REFS_PEAK;
    in.begin_rss_bytes = 100u << 20;
    in.end_rss_bytes = (100u << 20) + 32768;
    in.peak_bytes = 164u << 20;
    in.peak_slack_bytes = 262144;
    in.transient_bytes = in.peak_bytes - in.end_rss_bytes;
    return synth_bracket_diff(&b, &a, flags, &in);
}

static const struct {
    const char *file;
    writer write;
    unsigned compare_flags;
} bracket_goldens[] = {
    {"bracket.txt", memdiff_report_text, 0},
    {"bracket-verbose.txt", memdiff_report_text, MEMDIFF_COMPARE_VERBOSE},
    {"bracket.json", memdiff_report_json, 0},
};

START_TEST(bracket_golden)
{
    memdiff_diff *d = bracket_diff(bracket_goldens[_i].compare_flags);
    check_golden(bracket_goldens[_i].file, bracket_goldens[_i].write, d,
                 MEMDIFF_REPORT_NO_HEADER);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(text_header)
{
    /* 2026-11-22 10:00:00.123 UTC, and 250 ms later. */
    const uint64_t t0 = 1795341600123000000ull;
    memdiff_diff *d = sample_diff(0, t0, t0 + 250000000ull);
    size_t len;
    char *got = render(memdiff_report_text, d, 0, &len);
    const char *want =
        "memdiff: pid 4242 on synthhost, standard depth, 4096-byte pages; "
        "before 2026-11-22 10:00:00.123 UTC, after +0.250 s\n"
        "  (after: frame numbers unavailable: needs CAP_SYS_ADMIN)\n"
        "Net change:";
    ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "header:\n%s", got);
    free(got);
    memdiff_diff_free(d);

    d = sample_diff(0, 0, 0);
    got = render(memdiff_report_text, d, 0, &len);
    want = "memdiff: pid 4242 on synthhost, standard depth, 4096-byte pages; times unknown\n"
           "  (after: frame numbers unavailable: needs CAP_SYS_ADMIN)\n"
           "Net change:";
    ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "header:\n%s", got);
    free(got);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(no_change)
{
    static const synth_region regs[] = {HEAP_REG};
    static const synth_run runs[] = {{HEAP, 2, PRES | PRIV}};
    synth_spec spec = {.regions = regs, .region_count = 1, .runs = runs, .run_count = 1};
    memdiff_snapshot *s = synth_snapshot(&spec);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(s, s, 0, &d), MEMDIFF_OK);
    size_t len;
    char *got = render(memdiff_report_text, d, MEMDIFF_REPORT_NO_HEADER, &len);
    ck_assert_str_eq(got,
                     "Net change:                     0 bytes  (0 pages)\n"
                     "Memory allocated:               0 bytes  (0 pages: 0 private, 0 shared)\n"
                     "Memory freed:                   0 bytes  (0 pages: 0 unmapped, 0 discarded, "
                     "0 swapped out)\n"
                     "memdiff's own storage:          0 bytes  (0 after; excluded from all totals)\n"
                     "\n"
                     "No changed pages.\n");
    free(got);
    got = render(memdiff_report_json, d, MEMDIFF_REPORT_NO_HEADER, &len);
    ck_assert_ptr_nonnull(strstr(got, "\n  \"blocks\": []\n}\n"));
    free(got);
    memdiff_diff_free(d);
    memdiff_snapshot_free(s);
}
END_TEST

/* PSS, exact to the byte as the kernel's fixed point gives it (PSS_SHIFT 12; P = 4096 << 12):
 * before, 4 heap pages mapped once: 4P, 16,384 bytes. After, pages 0-2 mapped 3 times
 * (became shared: P / 3 = 5,592,405 each), page 3 gone (discarded), pages 4-5 new and mapped
 * once, page 6 new and mapped twice: 3 * 5,592,405 + 2P + P / 2 = 58,720,255, >> 12 = 14,335
 * bytes. The diff, page by page, rounded down per piece of one outcome: became shared loses
 * 3 * (P - 5,592,405) = 33,554,433 (8,192 bytes), the discarded page 4,096; the new private
 * pages gain 8,192, the new shared one 2,048: gained 10,240, lost 12,288, net -2,048 (the
 * snapshots' own figures differ by 2,049: each rounds its sum once). The same pages at standard
 * depth, without map counts: no PSS anywhere, not 0 passed off as a figure. */
START_TEST(pss_known_at_deep_only)
{
    static const synth_region regs[] = {HEAP_REG};
    static const synth_run rb[] = {{HEAP, 4, PRES | PRIV}};
    static const synth_run ra[] = {
        {HEAP, 3, PRES}, {HEAP + 4 * PG, 2, PRES | PRIV}, {HEAP + 6 * PG, 1, PRES}};
    static const uint64_t pfn_b[] = {100, 101, 102, 103}, mc_b[] = {1, 1, 1, 1};
    static const uint64_t pfn_a[] = {100, 101, 102, 200, 201, 202}, mc_a[] = {3, 3, 3, 1, 1, 2};
    const unsigned deep = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_PAGE_FLAGS;
    for (int with_counts = 1; with_counts >= 0; with_counts--) {
        synth_spec b = {.regions = regs, .region_count = 1, .runs = rb, .run_count = 1,
                        .pfn = pfn_b, .sources = deep, .depth = MEMDIFF_DEPTH_DEEP,
                        .mapcount = with_counts ? mc_b : NULL};
        synth_spec a = b;
        a.runs = ra;
        a.run_count = 3;
        a.pfn = pfn_a;
        a.mapcount = with_counts ? mc_a : NULL;
        memdiff_snapshot *sb = synth_snapshot(&b), *sa = synth_snapshot(&a);
        memdiff_snapshot_info ib, ia;
        memdiff_region r;
        ck_assert_int_eq(memdiff_snapshot_get_info(sb, &ib), MEMDIFF_OK);
        ck_assert_int_eq(memdiff_snapshot_get_info(sa, &ia), MEMDIFF_OK);
        ck_assert_int_eq(!!(ia.sources & MEMDIFF_SRC_PSS), with_counts);
        ck_assert_uint_eq(ib.pss_bytes, with_counts ? 16384 : 0);
        ck_assert_uint_eq(ia.pss_bytes, with_counts ? 14335 : 0);
        ck_assert_int_eq(memdiff_snapshot_region(sa, 0, &r), MEMDIFF_OK);
        ck_assert_uint_eq(r.pss_bytes, with_counts ? 14335 : 0);
        /* A file keeps the map counts, not PSS: loading sums it again, to the same bytes. */
        FILE *f = tmpfile();
        memdiff_snapshot *l = NULL;
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(memdiff_snapshot_save(sa, f), MEMDIFF_OK);
        rewind(f);
        ck_assert_int_eq(memdiff_snapshot_load(f, &l), MEMDIFF_OK);
        fclose(f);
        memdiff_snapshot_info il;
        ck_assert_int_eq(memdiff_snapshot_get_info(l, &il), MEMDIFF_OK);
        ck_assert_uint_eq(il.sources, ia.sources);
        ck_assert_uint_eq(il.pss_bytes, ia.pss_bytes);
        ck_assert_int_eq(memdiff_snapshot_region(l, 0, &r), MEMDIFF_OK);
        ck_assert_uint_eq(r.pss_bytes, with_counts ? 14335 : 0);
        memdiff_snapshot_free(l);
        memdiff_diff *d = NULL;
        memdiff_totals t;
        ck_assert_int_eq(memdiff_compare(sb, sa, 0, &d), MEMDIFF_OK);
        ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_HEAP, &t), MEMDIFF_OK);
        ck_assert_uint_eq(t.became_shared_bytes, 3 * PG);
        ck_assert_uint_eq(t.new_pss_bytes, with_counts ? 10240 : 0);
        ck_assert_uint_eq(t.freed_pss_bytes, with_counts ? 12288 : 0);
        size_t len;
        char *got = render(memdiff_report_text, d, MEMDIFF_REPORT_NO_HEADER, &len);
        const char *line = strstr(got, "Net PSS:");
        ck_assert_msg(with_counts ? line && strstr(line, "-2,048 bytes  (+10,240 gained, "
                                                         "-12,288 lost)\n") == strchr(line, '-')
                                  : !strstr(got, "PSS"),
                      "%s", got);
        ck_assert_msg(!with_counts || strstr(got, "Net PSS\nheap"), "%s", got);
        free(got);
        got = render(memdiff_report_json, d, 0, &len);
        /* Unknown PSS is null with the reason, never 0; a diff's PSS change is left out. */
        ck_assert_msg(with_counts ? strstr(got, "\"net_bytes\": 8192, \"new_pss_bytes\": "
                                                "10240, \"freed_pss_bytes\": 12288}") &&
                                        strstr(got, "\"pss_bytes\": 14335,\n") &&
                                        strstr(got, ", \"pss\"]") &&
                                        !strstr(got, "pss_bytes\": null")
                                  : !strstr(got, "pss_bytes\": 0") &&
                                        !strstr(got, "new_pss") &&
                                        strstr(got, "\"pss_bytes\": null,\n    \"pss_unknown\": "
                                                    "\"map counts unavailable (see degraded)\""),
                      "%.3000s", got);
        free(got);
        memdiff_diff_free(d);
        memdiff_snapshot_free(sa);
        memdiff_snapshot_free(sb);
    }
}
END_TEST

/* Quote, backslash, newline, control bytes, DEL, a lone 0xff, valid "é", a UTF-16 surrogate
 * encoded as UTF-8 (invalid), an overlong '/', and a truncated sequence at the end. */
#define HOSTILE "a\"b\\c\nd\x01" "e\x7f" "f\xff" "g\xc3\xa9h\xed\xa0\x80i\xc0\xafj\xe2\x82"

static memdiff_diff *hostile_diff(void)
{
    static const synth_region regs[] = {
        {FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_MAPPED_FILE, HOSTILE, 1, MEMDIFF_REGION_FILE,
         0x801, 66, 0},
    };
    static const synth_run runs[] = {{FILEMAP, 1, PRES | FILEPG}};
    synth_spec b = {.regions = regs, .region_count = 1};
    synth_spec a = {.regions = regs, .region_count = 1, .runs = runs, .run_count = 1};
    memdiff_snapshot *sb = synth_snapshot(&b), *sa = synth_snapshot(&a);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(sb, sa, 0, &d), MEMDIFF_OK);
    memdiff_snapshot_free(sa);
    memdiff_snapshot_free(sb);
    return d;
}

START_TEST(hostile_label_json)
{
    memdiff_diff *d = hostile_diff();
    size_t len;
    char *got = render(memdiff_report_json, d, MEMDIFF_REPORT_NO_HEADER, &len);
    /* The string valid UTF-8 and JSON, the exact bytes beside it (not UTF-8: label_hex). */
    const char *want = "\"label\": \"a\\\"b\\\\c\\nd\\u0001e\\u007ff\\ufffdg\xc3\xa9h"
                       "\\ufffd\\ufffd\\ufffdi\\ufffd\\ufffdj\\ufffd\\ufffd\", \"label_hex\": "
                       "\"6122625c630a6401657f66ff67c3a968eda08069c0af6ae282\", \"change\"";
    ck_assert_msg(strstr(got, want) != NULL, "escaped label not found in:\n%s", got);
    /* Nothing but the escapes' own backslashes and valid UTF-8 may remain. */
    for (size_t i = 0; i < len; i++)
        ck_assert_msg((unsigned char)got[i] >= 0x20 || got[i] == '\n', "raw byte %02x at %zu",
                      (unsigned char)got[i], i);
    free(got);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(hostile_label_text)
{
    memdiff_diff *d = hostile_diff();
    size_t len;
    char *got = render(memdiff_report_text, d, MEMDIFF_REPORT_NO_HEADER, &len);
    /* The backslash before 'c' cannot be read as an escape: it stays single. */
    const char *want = "new  a\"b\\c\\x0ad\\x01e\\x7ff\\xffg\xc3\xa9h\\xed\\xa0\\x80i\\xc0\\xafj"
                       "\\xe2\\x82\n";
    ck_assert_msg(strstr(got, want) != NULL, "escaped label not found in:\n%s", got);
    free(got);
    memdiff_diff_free(d);
}
END_TEST

/* A Windows path prints as it is; only a backslash that could start an escape is doubled. */
START_TEST(windows_path_label_text)
{
    static const synth_region regs[] = {
        {FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_MAPPED_FILE, "C:\\data\\xfiles\\\\a.bin", 1,
         MEMDIFF_REGION_FILE, 0x801, 67, 0},
    };
    static const synth_run runs[] = {{FILEMAP, 1, PRES | FILEPG}};
    synth_spec b = {.regions = regs, .region_count = 1};
    synth_spec a = {.regions = regs, .region_count = 1, .runs = runs, .run_count = 1};
    memdiff_snapshot *sb = synth_snapshot(&b), *sa = synth_snapshot(&a);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(sb, sa, 0, &d), MEMDIFF_OK);
    size_t len;
    char *got = render(memdiff_report_text, d, MEMDIFF_REPORT_NO_HEADER, &len);
    const char *want = "new  C:\\data\\\\xfiles\\\\\\a.bin\n";
    ck_assert_msg(strstr(got, want) != NULL, "label not found in:\n%s", got);
    free(got);
    memdiff_diff_free(d);
    memdiff_snapshot_free(sa);
    memdiff_snapshot_free(sb);
}
END_TEST

START_TEST(write_error_is_eio)
{
    FILE *f = fopen("/dev/full", "w");
    if (!f)
        return; /* no /dev/full on this system */
    memdiff_diff *d = sample_diff(0, 0, 0);
    ck_assert_int_eq(memdiff_report_text(d, f, 0), MEMDIFF_EIO);
    clearerr(f);
    ck_assert_int_eq(memdiff_report_json(d, f, 0), MEMDIFF_EIO);
    fclose(f);
    memdiff_diff_free(d);
}
END_TEST

START_TEST(invalid_arguments)
{
    memdiff_diff *d = sample_diff(0, 0, 0);
    ck_assert_int_eq(memdiff_report_text(NULL, stdout, 0), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_report_text(d, NULL, 0), MEMDIFF_EINVAL);
    memdiff_report_options bad = MEMDIFF_REPORT_OPTIONS_INIT;
    bad.flags = 0x100;
    ck_assert_int_eq(memdiff_report_text(d, stdout, &bad), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_report_json(NULL, stdout, 0), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_report_json(d, NULL, 0), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_report_json(d, stdout, &bad), MEMDIFF_EINVAL);
    bad.flags = 0;
    bad.sort = (memdiff_sort)9;
    ck_assert_int_eq(memdiff_report_text(d, stdout, &bad), MEMDIFF_EINVAL);
    bad.sort = MEMDIFF_SORT_ADDRESS;
    bad.categories = 1u << MEMDIFF_CAT_COUNT;
    ck_assert_int_eq(memdiff_report_json(d, stdout, &bad), MEMDIFF_EINVAL);
    memdiff_diff_free(d);
}
END_TEST

Suite *report_suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("Golden");
    tcase_add_loop_test(tc, golden, 0, (int)(sizeof goldens / sizeof goldens[0]));
    tcase_add_loop_test(tc, bracket_golden, 0,
                        (int)(sizeof bracket_goldens / sizeof bracket_goldens[0]));
    tcase_add_test(tc, text_header);
    tcase_add_test(tc, no_change);
    tcase_add_test(tc, pss_known_at_deep_only);
    suite_add_tcase(s, tc);

    tc = tcase_create("Escaping");
    tcase_add_test(tc, hostile_label_json);
    tcase_add_test(tc, hostile_label_text);
    tcase_add_test(tc, windows_path_label_text);
    suite_add_tcase(s, tc);

    tc = tcase_create("Errors");
    tcase_add_test(tc, write_error_is_eio);
    tcase_add_test(tc, invalid_arguments);
    suite_add_tcase(s, tc);
    return s;
}
