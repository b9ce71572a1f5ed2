/*
 * test_json.c - the JSON writer (memdiff/json.c) and the documents only it writes, exact to the
 * byte: numbers beyond 2^53 as strings, RFC 3339 times, one-line layout; a snapshot report, a
 * watch tick and a wss sample on synthetic input. The schema check of every command's output is
 * tests/json_schema_check.py; the diff report's golden files are test_report.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "json.h"
#include "memdiff.h"
#include "suites.h"
#include "synth.h"

#define PG ((uint64_t)SYNTH_PAGE)
#define HEAP 0x10000000u
#define STACK 0x7ffd00000000u
#define PRES_PRIV (MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE)
/* 2026-11-26 06:18:35 UTC and 456,608,910 ns: more digits than a double holds (issue 23). */
#define T_NS UINT64_C(1795673915456608910)

static const synth_region regs[] = {
    {HEAP, HEAP + 16 * PG, MEMDIFF_CAT_HEAP, "[heap]", 1, 0, 0, 0, 0},
    {STACK, STACK + 8 * PG, MEMDIFF_CAT_STACK, "thread 4242", 4242, 0, 0, 0, 0},
};

/* What f holds, NUL-terminated; f closed. */
static char *slurp(FILE *f)
{
    long size = ftell(f);
    ck_assert_int_ge(size, 0);
    char *buf = malloc((size_t)size + 1);
    ck_assert_ptr_nonnull(buf);
    rewind(f);
    ck_assert_uint_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    buf[size] = '\0';
    fclose(f);
    return buf;
}

static void assert_has(const char *got, const char *want)
{
    ck_assert_msg(strstr(got, want) != NULL, "want %s\nin %.3000s", want, got);
}

/* ---- the writer ------------------------------------------------------------------------------ */

/* 2^53 is the last integer every double holds, and its neighbours the first that are not: the
 * number form up to it, the string form past it, in both signs; the extremes as strings. */
START_TEST(numbers_exact_in_any_reader)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    memdiff__json j;
    memdiff__json_init(&j, f, 1);
    memdiff__json_open(&j, NULL, '{', 0);
    memdiff__json_uint(&j, "a", UINT64_C(9007199254740992));
    memdiff__json_uint(&j, "b", UINT64_C(9007199254740993));
    memdiff__json_uint(&j, "c", UINT64_MAX);
    memdiff__json_int(&j, "d", -INT64_C(9007199254740992));
    memdiff__json_int(&j, "e", -INT64_C(9007199254740993));
    memdiff__json_int(&j, "f", INT64_MIN);
    memdiff__json_open(&j, "g", '[', 0);
    memdiff__json_seconds(&j, NULL, 1500000000u);
    memdiff__json_address(&j, NULL, UINT64_MAX);
    memdiff__json_null(&j, NULL);
    memdiff__json_bool(&j, NULL, 1);
    memdiff__json_close(&j);
    memdiff__json_open(&j, "h", '{', 0);
    memdiff__json_close(&j);
    memdiff__json_close(&j);
    char *got = slurp(f);
    ck_assert_str_eq(got, "{\"a\":9007199254740992,\"b\":\"9007199254740993\","
                          "\"c\":\"18446744073709551615\",\"d\":-9007199254740992,"
                          "\"e\":\"-9007199254740993\",\"f\":\"-9223372036854775808\","
                          "\"g\":[1.500000000,\"0xffffffffffffffff\",null,true],\"h\":{}}\n");
    free(got);
}
END_TEST

/* Dates computed without gmtime: the epoch, a leap day, a century that is no leap year's
 * neighbour, and the last second 2^64 ns reach. */
START_TEST(times_in_rfc3339)
{
    static const struct {
        uint64_t ns;
        const char *want;
    } cases[] = {
        {0, "1970-01-01T00:00:00.000000000Z"},
        {UINT64_C(951782400000000001), "2000-02-29T00:00:00.000000001Z"},
        {UINT64_C(4102444799999999999), "2099-12-31T23:59:59.999999999Z"},
        {UINT64_C(4102444800000000000), "2100-01-01T00:00:00.000000000Z"},
        {T_NS, "2026-11-26T06:18:35.456608910Z"},
        {UINT64_MAX, "2554-07-21T23:34:33.709551615Z"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[48];
        memdiff__json_rfc3339(buf, cases[i].ns);
        ck_assert_str_eq(buf, cases[i].want);
    }
    /* In a document: the string and the seconds; unknown (0) as null both. */
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    memdiff__json j;
    memdiff__json_init(&j, f, 0);
    memdiff__json_open(&j, NULL, '{', 0);
    memdiff__json_time(&j, "time", T_NS);
    memdiff__json_time(&j, "since", 0);
    memdiff__json_close(&j);
    char *got = slurp(f);
    ck_assert_str_eq(got, "{\n  \"time\": \"2026-11-26T06:18:35.456608910Z\",\n"
                          "  \"time_s\": 1795673915.456608910,\n  \"since\": null,\n"
                          "  \"since_s\": null\n}\n");
    free(got);
}
END_TEST

/* A string that is valid UTF-8 has no sibling, however many escapes it needs; one that is not
 * has its exact bytes beside it; an array element (no key) cannot, and never holds such text. */
START_TEST(strings_and_their_bytes)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    memdiff__json j;
    memdiff__json_init(&j, f, 1);
    memdiff__json_open(&j, NULL, '{', 0);
    memdiff__json_string(&j, "ok", "tab\there \xe2\x82\xac \x1b[0m");
    memdiff__json_string(&j, "bad", "a\xff\n");
    memdiff__json_string(&j, "none", NULL);
    memdiff__json_close(&j);
    char *got = slurp(f);
    ck_assert_str_eq(got, "{\"ok\":\"tab\\there \xe2\x82\xac \\u001b[0m\",\"bad\":\"a\\ufffd\\n\","
                          "\"bad_hex\":\"61ff0a\",\"none\":null}\n");
    free(got);
}
END_TEST

/* ---- documents --------------------------------------------------------------------------------- */

static char *snapshot_doc(const memdiff_snapshot *s, unsigned flags, unsigned categories)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    o.flags = flags | MEMDIFF_REPORT_LINE;
    o.categories = categories;
    ck_assert_int_eq(memdiff_snapshot_report_json(s, f, &o), MEMDIFF_OK);
    return slurp(f);
}

/* A heap of 2 resident private pages and a stack of 1: the totals 3 pages, each category its
 * own, PSS unknown (standard depth) as null with the reason; the filter keeps the heap only. */
START_TEST(snapshot_report)
{
    static const synth_run runs[] = {{HEAP, 2, PRES_PRIV}, {STACK + 7 * PG, 1, PRES_PRIV}};
    synth_spec spec = {.regions = regs, .region_count = 2, .runs = runs, .run_count = 2,
                       .time_ns = T_NS};
    memdiff_snapshot *s = synth_snapshot(&spec);
    ck_assert_ptr_nonnull(s);
    char *got = snapshot_doc(s, 0, 0);
    assert_has(got, "{\"version\":3,\"kind\":\"snapshot\",\"snapshot\":{\"pid\":4242,"
                    "\"host\":\"synthhost\",\"time\":\"2026-11-26T06:18:35.456608910Z\","
                    "\"time_s\":1795673915.456608910,\"depth\":\"standard\",");
    assert_has(got, "\"pss_bytes\":null,\"pss_unknown\":\"measured at deep depth only\"");
    assert_has(got, "},\"totals\":{\"resident_bytes\":12288,\"private_bytes\":12288,"
                    "\"shared_bytes\":0,\"swapped_bytes\":0,\"pss_bytes\":null,\"regions\":2},");
    assert_has(got, "\"heap\":{\"resident_bytes\":8192,\"private_bytes\":8192,\"shared_bytes\":0,"
                    "\"swapped_bytes\":0,\"pss_bytes\":null,\"regions\":1},\"stack\":{"
                    "\"resident_bytes\":4096,");
    assert_has(got, "\"blocks\":[{\"start\":\"0x10000000\",\"end\":\"0x10010000\",\"prot\":"
                    "\"rw-\",\"regions\":1,\"category\":\"heap\",\"label\":\"[heap]\",\"path\":"
                    "\"\",\"size_bytes\":65536,\"resident_bytes\":8192,");
    ck_assert_ptr_null(strstr(got, "\n{")); /* one line: JSON Lines */
    free(got);

    got = snapshot_doc(s, MEMDIFF_REPORT_REGIONS, 1u << MEMDIFF_CAT_HEAP);
    assert_has(got, "\"categories\":{\"heap\":{");
    ck_assert_ptr_null(strstr(got, "\"stack\""));
    ck_assert_ptr_null(strstr(got, "\"blocks\""));
    ck_assert_ptr_nonnull(strstr(got, "\"regions\":[{"));
    ck_assert_ptr_null(strstr(strstr(got, "\"regions\":[{") + 1, "\"category\":\"stack\""));
    free(got);

    got = snapshot_doc(s, MEMDIFF_REPORT_NO_BLOCKS | MEMDIFF_REPORT_NO_HEADER, 0);
    ck_assert_ptr_null(strstr(got, "\"blocks\""));
    ck_assert_ptr_null(strstr(got, "\"snapshot\":{"));
    free(got);
    memdiff_snapshot_free(s);
}
END_TEST

/* 2^63 - 1 page-aligned bytes resident: more than a double holds, so strings. */
START_TEST(snapshot_report_beyond_2_53)
{
    synth_region r;
    synth_run run;
    uint64_t bytes = (UINT64_C(1) << 62);
    synth_spec spec = synth_huge(&r, &run, bytes, 1);
    memdiff_snapshot *s = synth_snapshot(&spec);
    ck_assert_ptr_nonnull(s);
    char *got = snapshot_doc(s, 0, 0);
    assert_has(got, "\"totals\":{\"resident_bytes\":\"4611686018427387904\",");
    assert_has(got, "\"size_bytes\":\"4611686018427387904\"");
    free(got);
    memdiff_snapshot_free(s);
}
END_TEST

/* The heap grows from 2 to 4 resident pages between ticks: the tick's absolutes are after's,
 * its change the diff's; another snapshot than the diff's after is refused. */
START_TEST(watch_record)
{
    static const synth_run rb[] = {{HEAP, 2, PRES_PRIV}};
    static const synth_run ra[] = {{HEAP, 4, PRES_PRIV}};
    synth_spec b = {.regions = regs, .region_count = 2, .runs = rb, .run_count = 1,
                    .time_ns = T_NS};
    synth_spec a = b;
    a.runs = ra;
    a.time_ns = T_NS + 500000000u;
    memdiff_snapshot *sb = synth_snapshot(&b), *sa = synth_snapshot(&a);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(sb, sa, 0, &d), MEMDIFF_OK);
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    o.flags = MEMDIFF_REPORT_LINE | MEMDIFF_REPORT_NO_BLOCKS | MEMDIFF_REPORT_NO_HEADER;
    ck_assert_int_eq(memdiff_watch_report_json(d, sa, 7, f, &o), MEMDIFF_OK);
    char *got = slurp(f);
    assert_has(got, "{\"version\":3,\"kind\":\"watch\",\"tick\":7,\"pid\":4242,\"time\":"
                    "\"2026-11-26T06:18:35.956608910Z\",\"time_s\":1795673915.956608910,"
                    "\"since\":\"2026-11-26T06:18:35.456608910Z\",\"since_s\":"
                    "1795673915.456608910,\"pss_unknown\":\"measured at deep depth only\","
                    "\"totals\":{\"resident_bytes\":16384,");
    assert_has(got, "\"heap\":{\"resident_bytes\":16384,\"private_bytes\":16384,"
                    "\"shared_bytes\":0,\"swapped_bytes\":0,\"pss_bytes\":null,\"regions\":1,"
                    "\"change\":{\"new_bytes\":8192,\"new_private_bytes\":8192,");
    assert_has(got, "\"net_bytes\":8192}}");
    ck_assert_ptr_null(strstr(got, "\"blocks\""));
    ck_assert_ptr_null(strstr(got, "\"after\""));
    ck_assert_ptr_eq(strchr(got, '\n'), got + strlen(got) - 1);
    free(got);
    f = tmpfile();
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(memdiff_watch_report_json(d, sb, 7, f, &o), MEMDIFF_EINVAL);
    fclose(f);
    memdiff_diff_free(d);
    memdiff_snapshot_free(sa);
    memdiff_snapshot_free(sb);
}
END_TEST

START_TEST(wss_record)
{
    memdiff_wss_options run = MEMDIFF_WSS_OPTIONS_INIT;
    run.pid = 77;
    run.mode = MEMDIFF_WSS_PROFILE;
    run.interval_ns = 1000000u;
    memdiff_wss_sample s = {3, 8100000u, 8200000u, 8000000u, 150000u, 50000u,
                            UINT64_C(10485760), UINT64_C(5242880), UINT64_C(1048576), T_NS};
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    o.flags = MEMDIFF_REPORT_LINE;
    ck_assert_int_eq(memdiff_wss_report_json(&run, &s, f, &o), MEMDIFF_OK);
    char *got = slurp(f);
    ck_assert_str_eq(got, "{\"version\":3,\"kind\":\"wss\",\"pid\":77,\"mode\":\"profile\","
                          "\"interval_s\":0.001000000,\"index\":3,\"time\":"
                          "\"2026-11-26T06:18:35.456608910Z\",\"time_s\":1795673915.456608910,"
                          "\"span_s\":0.008100000,\"duration_s\":0.008200000,\"slept_s\":"
                          "0.008000000,\"clear_s\":0.000150000,\"read_s\":0.000050000,"
                          "\"rss_bytes\":10485760,\"pss_bytes\":5242880,\"referenced_bytes\":"
                          "1048576}\n");
    free(got);
    run.mode = (memdiff_wss_mode)9;
    ck_assert_int_eq(memdiff_wss_report_json(&run, &s, stdout, &o), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_wss_report_json(NULL, &s, stdout, &o), MEMDIFF_EINVAL);
}
END_TEST

Suite *json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("Writer");
    tcase_add_test(tc, numbers_exact_in_any_reader);
    tcase_add_test(tc, times_in_rfc3339);
    tcase_add_test(tc, strings_and_their_bytes);
    suite_add_tcase(s, tc);
    tc = tcase_create("Documents");
    tcase_add_test(tc, snapshot_report);
    tcase_add_test(tc, snapshot_report_beyond_2_53);
    tcase_add_test(tc, watch_record);
    tcase_add_test(tc, wss_record);
    suite_add_tcase(s, tc);
    return s;
}
