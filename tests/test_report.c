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

#include "internal.h"
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

/* What was written to f (closed here), as a NUL-terminated string the caller frees. */
static char *take_text(FILE *f, size_t *len)
{
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

/* What writer prints for d with options o. */
static char *render_opts(writer w, const memdiff_diff *d, const memdiff_report_options *o,
                         size_t *len)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(w(d, f, o), MEMDIFF_OK);
    return take_text(f, len);
}

/* What writer prints for d with flags and the other options' defaults. */
static char *render(writer w, const memdiff_diff *d, unsigned flags, size_t *len)
{
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    o.flags = flags;
    return render_opts(w, d, &o, len);
}

/* What memdiff_snapshot_report_text prints for s with options o. */
static char *render_snapshot(const memdiff_snapshot *s, const memdiff_report_options *o,
                             size_t *len)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(memdiff_snapshot_report_text(s, f, o), MEMDIFF_OK);
    return take_text(f, len);
}

/* Compares got (len bytes, freed here) with the golden file name. */
static void check_golden_text(const char *name, char *got, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/reports/%s", MEMDIFF_TEST_FIXTURES, name);
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

static void check_golden(const char *name, writer w, const memdiff_diff *d, unsigned flags)
{
    size_t len;
    char *got = render(w, d, flags, &len);
    check_golden_text(name, got, len);
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
        "memdiff: pid 4242 on synthhost, standard depth, 4096-byte pages\n"
        "  before 2026-11-22 10:00:00.123 UTC, after +0.250 s\n"
        "  (after: frame numbers unavailable: needs CAP_SYS_ADMIN)\n"
        "Net change:";
    ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "header:\n%s", got);
    free(got);
    memdiff_diff_free(d);

    d = sample_diff(0, 0, 0);
    got = render(memdiff_report_text, d, 0, &len);
    want = "memdiff: pid 4242 on synthhost, standard depth, 4096-byte pages\n  times unknown\n"
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
                     "Net PSS:                              \xe2\x80\x93  (needs deep depth: map "
                     "counts, CAP_SYS_ADMIN)\n"
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
                                  : line && strncmp(line, "Net PSS:                  "
                                                          "            \xe2\x80\x93  (no map "
                                                          "counts: needs CAP_SYS_ADMIN)\n",
                                                    strlen(line) - strlen(strchr(line, '\n')) + 1)
                                                == 0,
                      "%s", got);
        /* The column only where the figure is known; the dash line says why it is not. */
        ck_assert_msg(with_counts == (strstr(got, "Net PSS\nheap") != NULL), "%s", got);
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

/* The diff of a file mapping named label, one page of it new. */
static memdiff_diff *new_file_diff(const char *label)
{
    const synth_region regs[] = {
        {FILEMAP, FILEMAP + 4 * PG, MEMDIFF_CAT_MAPPED_FILE, label, 1, MEMDIFF_REGION_FILE, 0x801,
         66, 0},
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
    memdiff_diff *d = new_file_diff(HOSTILE);
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
    memdiff_diff *d = new_file_diff(HOSTILE);
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
    memdiff_diff *d = new_file_diff("C:\\data\\xfiles\\\\a.bin");
    size_t len;
    char *got = render(memdiff_report_text, d, MEMDIFF_REPORT_NO_HEADER, &len);
    const char *want = "new  C:\\data\\\\xfiles\\\\\\a.bin\n";
    ck_assert_msg(strstr(got, want) != NULL, "label not found in:\n%s", got);
    free(got);
    memdiff_diff_free(d);
}
END_TEST

/* ---- report options -------------------------------------------------------------------- */

#define CAT(c) (1u << MEMDIFF_CAT_##c)

/* The goldens of the options, each on the sample diff (d) or on its after snapshot (s): the
 * files show what each option does to the whole report; the tests after them pin the rules. */
static const struct {
    const char *file;
    int snapshot;
    unsigned compare_flags;
    memdiff_report_options o;
} option_goldens[] = {
    /* Most grown first, the top 3 of 5: "Blocks (3 of 5, ...)". */
    {"text-sort-net-top.txt", 0, 0,
     {MEMDIFF_REPORT_NO_HEADER, MEMDIFF_SORT_NET, 3, 0, 0}},
    {"text-sort-name.txt", 0, 0, {MEMDIFF_REPORT_NO_HEADER, MEMDIFF_SORT_NAME, 0, 0, 0}},
    /* Heap and stack rows and blocks; the total row the whole process's. */
    {"text-category.txt", 0, 0,
     {MEMDIFF_REPORT_NO_HEADER, MEMDIFF_SORT_ADDRESS, 0, CAT(HEAP) | CAT(STACK), 0}},
    {"text-human.txt", 0, MEMDIFF_COMPARE_VERBOSE,
     {MEMDIFF_REPORT_NO_HEADER | MEMDIFF_REPORT_HUMAN, MEMDIFF_SORT_ADDRESS, 0, 0, 0}},
    {"text-color.txt", 0, 0, {MEMDIFF_REPORT_COLOR, MEMDIFF_SORT_ADDRESS, 0, 0, 0}},
    /* 80 columns: the table in two parts, labels on lines of their own. */
    {"text-width-80.txt", 0, 0, {0, MEMDIFF_SORT_ADDRESS, 0, 0, 80}},
    /* A verbose diff in 100 columns: attributes and label on a second line. */
    {"text-verbose-width-100.txt", 0, MEMDIFF_COMPARE_VERBOSE,
     {MEMDIFF_REPORT_NO_HEADER, MEMDIFF_SORT_ADDRESS, 0, 0, 100}},
    {"snapshot.txt", 1, 0, {0, MEMDIFF_SORT_ADDRESS, 0, 0, 0}},
    {"snapshot-regions.txt", 1, 0, {MEMDIFF_REPORT_REGIONS, MEMDIFF_SORT_ADDRESS, 0, 0, 0}},
    {"snapshot-options.txt", 1, 0,
     {MEMDIFF_REPORT_HUMAN | MEMDIFF_REPORT_NO_HEADER, MEMDIFF_SORT_SIZE, 2,
      CAT(IMAGE) | CAT(HEAP) | CAT(STACK), 80}},
};

START_TEST(option_golden)
{
    const memdiff_report_options *o = &option_goldens[_i].o;
    size_t len;
    char *got;
    if (option_goldens[_i].snapshot) {
        synth_spec a = {.regions = regions_after, .region_count = SYNTH_COUNT(regions_after),
                        .runs = runs_after, .run_count = SYNTH_COUNT(runs_after),
                        .degraded = "frame numbers unavailable: needs CAP_SYS_ADMIN"};
        memdiff_snapshot *s = synth_snapshot(&a);
        ck_assert_ptr_nonnull(s);
        got = render_snapshot(s, o, &len);
        memdiff_snapshot_free(s);
    } else {
        memdiff_diff *d = sample_diff(option_goldens[_i].compare_flags, 0, 0);
        got = render_opts(memdiff_report_text, d, o, &len);
        memdiff_diff_free(d);
    }
    check_golden_text(option_goldens[_i].file, got, len);
}
END_TEST

/* One decimal, rounded half up, in the largest unit the value reaches; bytes below 1 KiB. */
START_TEST(human_units)
{
    static const struct {
        uint64_t v;
        char sign;
        const char *want;
    } cases[] = {
        {0, '+', "0 B"}, /* no sign on 0, as without units */
        {1023, 0, "1023 B"},
        {1024, '+', "+1.0 KiB"},
        {1536, '-', "-1.5 KiB"},
        {1075, 0, "1.0 KiB"},            /* 1.0498: down */
        {1076, 0, "1.1 KiB"},            /* 1.0508: up */
        {1048524, 0, "1023.9 KiB"},      /* 1023.949 KiB */
        {1048525, 0, "1.0 MiB"},         /* 1023.950 KiB rounds to 1024.0: the next unit */
        {UINT64_C(5) << 30, 0, "5.0 GiB"},
        {UINT64_MAX, 0, "16.0 EiB"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[MEMDIFF__NUM_MAX];
        ck_assert_str_eq(memdiff__fmt_bytes(buf, cases[i].v, cases[i].sign, MEMDIFF_REPORT_HUMAN),
                         cases[i].want);
    }
    char buf[MEMDIFF__NUM_MAX];
    ck_assert_str_eq(memdiff__fmt_amount(buf, 40960, '+', 0), "+40,960 bytes");
    ck_assert_str_eq(memdiff__fmt_amount(buf, 40960, '+', MEMDIFF_REPORT_HUMAN), "+40.0 KiB");
}
END_TEST

/* Removes every ANSI SGR sequence (ESC [ ... m) from s in place. */
static void strip_sgr(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        if (r[0] == '\033' && r[1] == '[') {
            r += 2 + strspn(r + 2, "0123456789;");
            ck_assert_int_eq(*r, 'm');
            r++;
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
}

/* Colour changes nothing but the colour: without its sequences the report is the plain one;
 * growth red, shrinkage green, headings bold. */
START_TEST(color_changes_nothing_else)
{
    memdiff_diff *d = sample_diff(0, 0, 0);
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    size_t len, plain_len;
    char *plain = render_opts(memdiff_report_text, d, &o, &plain_len);
    o.flags = MEMDIFF_REPORT_COLOR;
    char *got = render_opts(memdiff_report_text, d, &o, &len);
    /* The label's padding to 23 columns and the cell's to 16 stay outside the colour. */
    ck_assert_ptr_nonnull(
        strstr(got, "Net change:" "               \033[31m+40,960 bytes\033[0m  (+10 pages)"));
    ck_assert_ptr_nonnull(strstr(got, "Memory freed:" "             \033[32m-24,576 bytes\033[0m"));
    ck_assert_ptr_nonnull(strstr(got, "\033[1mCategory\033[0m    "));
    ck_assert_ptr_nonnull(strstr(got, "\033[1mBlocks (5, by allocation unit):\033[0m\n"));
    ck_assert_ptr_nonnull(strstr(got, "  \033[32m-12,288\033[0m  mapped-file"));
    strip_sgr(got);
    ck_assert_str_eq(got, plain);
    free(got);
    free(plain);
    memdiff_diff_free(d);
}
END_TEST

/* A label as long as a deep path: cut from the left after U+2026, its end kept, whole path
 * components where one fits; the line within the width. JSON keeps it whole. */
#define DEEP_DIR "/opt/vendor/product/releases/2026.11/lib/python3.12/site-packages/numpy/core/"
#define DEEP_PATH DEEP_DIR "_multiarray_umath.cpython-312-x86_64-linux-gnu.so"

START_TEST(width_cuts_labels_from_the_left)
{
    memdiff_diff *d = new_file_diff(DEEP_PATH);
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    o.flags = MEMDIFF_REPORT_NO_HEADER;
    o.width = 100;
    size_t len;
    char *got = render_opts(memdiff_report_text, d, &o, &len);
    /* "  0x7f1000000000-0x7f1000001000  +4,096  mapped-file  new  ": 59 columns, 41 left for
     * the label, less than its file name (50 with its '/'): the label goes on a line of its
     * own, indented 4, its last 95 columns after U+2026 from the next '/' on. */
    ck_assert_msg(strstr(got, "  0x7f1000000000-0x7f1000001000  +4,096  mapped-file  new\n    "
                              "\xe2\x80\xa6/lib/python3.12/site-packages/numpy/core/"
                              "_multiarray_umath.cpython-312-x86_64-linux-gnu.so\n"),
                  "%s", got);
    for (const char *line = got; *line;) {
        const char *end = strchr(line, '\n');
        char buf[512];
        size_t n = (size_t)(end - line);
        ck_assert_uint_lt(n, sizeof buf);
        memcpy(buf, line, n);
        buf[n] = '\0';
        ck_assert_msg(memdiff__text_cols(buf) <= 100, "%d columns: %s", memdiff__text_cols(buf),
                      buf);
        line = end + 1;
    }
    free(got);
    /* 130 columns: 71 for the label, its last 70 characters "ackages/numpy/core/..." from the
     * next '/' on: whole path components. */
    o.width = 130;
    got = render_opts(memdiff_report_text, d, &o, &len);
    ck_assert_msg(strstr(got, "new  \xe2\x80\xa6/numpy/core/_multiarray_umath.cpython-312-x86_64-"
                              "linux-gnu.so\n"),
                  "%s", got);
    free(got);
    o.width = 0;
    got = render_opts(memdiff_report_text, d, &o, &len);
    ck_assert_ptr_nonnull(strstr(got, "new  " DEEP_PATH "\n"));
    free(got);
    o.width = 100;
    got = render_opts(memdiff_report_json, d, &o, &len);
    ck_assert_ptr_nonnull(strstr(got, "\"" DEEP_PATH "\""));
    free(got);
    memdiff_diff_free(d);
}
END_TEST

/* Every line of every report of the sample (plain, verbose, bracket; diff and snapshot) within
 * each width from 80 (MEMDIFF__WIDTH_MIN: narrower is taken as 80) to 140 columns, units or
 * not. */
START_TEST(every_line_fits_the_width)
{
    memdiff_diff *d[3] = {sample_diff(0, 1795341600123000000ull, 1795341600373000000ull),
                          sample_diff(MEMDIFF_COMPARE_VERBOSE, 0, 0), bracket_diff(0)};
    synth_spec a = {.regions = regions_after, .region_count = SYNTH_COUNT(regions_after),
                    .runs = runs_after, .run_count = SYNTH_COUNT(runs_after),
                    .degraded = "frame numbers unavailable: needs CAP_SYS_ADMIN; page flags "
                                "unavailable: needs CAP_SYS_ADMIN; map counts unavailable"};
    memdiff_snapshot *s = synth_snapshot(&a);
    for (unsigned width = 20; width <= 140; width += 4) {
        for (int human = 0; human < 2; human++) {
            memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
            o.width = width;
            o.flags = human ? MEMDIFF_REPORT_HUMAN : 0;
            for (int k = 0; k < 4; k++) {
                size_t len;
                char *got = k < 3 ? render_opts(memdiff_report_text, d[k], &o, &len)
                                  : render_snapshot(s, &o, &len);
                for (char *line = strtok(got, "\n"); line; line = strtok(NULL, "\n"))
                    ck_assert_msg(memdiff__text_cols(line) <= (int)MEMDIFF__MAX(width, 80),
                                  "report %d, width %u: %d columns: %s", k, width,
                                  memdiff__text_cols(line), line);
                free(got);
            }
        }
    }
    for (int k = 0; k < 3; k++)
        memdiff_diff_free(d[k]);
    memdiff_snapshot_free(s);
}
END_TEST

/* The snapshot's PSS: a column (table and blocks) where known, else the dash and why. */
START_TEST(snapshot_pss_column_where_known)
{
    static const synth_region regs[] = {HEAP_REG};
    static const synth_run ra[] = {{HEAP, 3, PRES}, {HEAP + 4 * PG, 2, PRES | PRIV}};
    static const uint64_t pfn[] = {100, 101, 102, 200, 201}, mc[] = {3, 3, 3, 1, 1};
    synth_spec a = {.regions = regs, .region_count = 1, .runs = ra, .run_count = 2, .pfn = pfn,
                    .sources = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_PAGE_FLAGS,
                    .depth = MEMDIFF_DEPTH_DEEP, .mapcount = mc};
    memdiff_snapshot *s = synth_snapshot(&a);
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    o.flags = MEMDIFF_REPORT_NO_HEADER;
    size_t len;
    char *got = render_snapshot(s, &o, &len);
    /* 3 pages mapped 3 times (4096 / 3 each, in the kernel's fixed point) and 2 once: 4095 +
     * 8192 = 12,287 bytes. */
    ck_assert_msg(strstr(got, "\nPSS:                       12,287 bytes  (page size / map count "
                              "per page, as smaps)\n"), "%s", got);
    ck_assert_msg(strstr(got, "Category      Resident  Private  Shared     PSS  Regions\n"
                              "heap            20,480    8,192  12,288  12,287        1\n"),
                  "%s", got);
    ck_assert_msg(strstr(got, "   pss  category  label\n"), "%s", got);
    free(got);
    memdiff_snapshot_free(s);
    a.mapcount = NULL;
    s = synth_snapshot(&a);
    got = render_snapshot(s, &o, &len);
    ck_assert_msg(strstr(got, "\nPSS:                                  \xe2\x80\x93  (no map counts: "
                              "needs CAP_SYS_ADMIN)\n"), "%s", got);
    ck_assert_msg(!strstr(got, " PSS ") && !strstr(got, " pss "), "%s", got);
    free(got);
    memdiff_snapshot_free(s);
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

    tc = tcase_create("Options");
    tcase_add_loop_test(tc, option_golden, 0,
                        (int)(sizeof option_goldens / sizeof option_goldens[0]));
    tcase_add_test(tc, human_units);
    tcase_add_test(tc, color_changes_nothing_else);
    tcase_add_test(tc, width_cuts_labels_from_the_left);
    tcase_add_test(tc, every_line_fits_the_width);
    tcase_add_test(tc, snapshot_pss_column_where_known);
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
