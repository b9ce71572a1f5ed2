/*
 * test_escape.c - the one escaping routine (base/escape.c) over every class of byte, with
 * exact expected text, and the library's text paths that use it: memdiff_last_error() (a
 * detail embedding a hostile path, the EMISMATCH message of two hostile host names) and the
 * text report's header and labels. The CLI's show, diff and watch are in test_cli.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "suites.h"
#include "synth.h"

/* text through memdiff_escape_text() with room to spare; also checks that memdiff__put_text()
 * writes the same bytes and that the returned length is the written one. */
static const char *esc(const char *text)
{
    static char buf[1024];
    size_t n = memdiff_escape_text(buf, sizeof buf, text);
    ck_assert_uint_eq(n, strlen(buf));
    ck_assert_uint_le(n, 4 * strlen(text ? text : ""));
    char *streamed = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&streamed, &len);
    ck_assert_ptr_nonnull(f);
    memdiff__put_text(f, text);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_uint_eq(len, n);
    ck_assert_mem_eq(streamed, buf, n);
    free(streamed);
    return buf;
}

START_TEST(printable_text_is_kept)
{
    ck_assert_str_eq(esc(""), "");
    ck_assert_str_eq(esc(NULL), "");
    ck_assert_str_eq(esc("/usr/lib/x86_64-linux-gnu/libc.so.6 [heap] ~!@#$%^&*()'\"{}|<>?"),
                     "/usr/lib/x86_64-linux-gnu/libc.so.6 [heap] ~!@#$%^&*()'\"{}|<>?");
    /* Valid UTF-8 of every length stays: é (2), U+00A0 NO-BREAK SPACE (2, the first code point
     * after C1), 日 (3), U+FFFD (3), 😀 (4), U+10FFFF (4, the last code point). */
    ck_assert_str_eq(esc("caf\xc3\xa9 \xc2\xa0 \xe6\x97\xa5 \xef\xbf\xbd \xf0\x9f\x98\x80 "
                         "\xf4\x8f\xbf\xbf"),
                     "caf\xc3\xa9 \xc2\xa0 \xe6\x97\xa5 \xef\xbf\xbd \xf0\x9f\x98\x80 "
                     "\xf4\x8f\xbf\xbf");
}
END_TEST

/* Each byte alone, all 256 but NUL (the end of the text): printable ASCII is itself, a lone
 * backslash is doubled (it ends the text), everything else is \xNN: C0, DEL, the raw C1 bytes
 * 0x80-0x9F, and every byte >= 0xA0, which alone is a stray continuation or a truncated
 * sequence. */
START_TEST(every_single_byte)
{
    for (unsigned b = 1; b < 256; b++) {
        char in[2] = {(char)b, 0}, want[8];
        if (b == '\\')
            strcpy(want, "\\\\");
        else if (b >= 0x20 && b < 0x7F)
            snprintf(want, sizeof want, "%c", (int)b);
        else
            snprintf(want, sizeof want, "\\x%02x", b);
        ck_assert_msg(strcmp(esc(in), want) == 0, "byte 0x%02x: got '%s', want '%s'", b,
                      esc(in), want);
    }
}
END_TEST

START_TEST(controls_are_escaped)
{
    /* C0: an ESC sequence that sets the window title and clears the screen, BEL, CR, LF, tab. */
    ck_assert_str_eq(esc("a\x1b]0;owned\x07\x1b[2J\r\n\tb\x7f"),
                     "a\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x0a\\x09b\\x7f");
    /* C1 as raw bytes: 0x9B is CSI to a terminal that takes 8-bit controls. */
    ck_assert_str_eq(esc("\x9b" "31mred\x85\x80\x9f"), "\\x9b31mred\\x85\\x80\\x9f");
    /* C1 as UTF-8, U+0080-U+009F: valid UTF-8, still controls; the first and last of the range,
     * CSI, and U+00A0 after them (a character: kept). */
    ck_assert_str_eq(esc("\xc2\x80|\xc2\x9b" "1m|\xc2\x9f|\xc2\xa0"),
                     "\\xc2\\x80|\\xc2\\x9b1m|\\xc2\\x9f|\xc2\xa0");
    for (unsigned b = 0x80; b < 0xC0; b++) {
        char in[3] = {(char)0xC2, (char)b, 0}, want[16];
        if (b < 0xA0)
            snprintf(want, sizeof want, "\\xc2\\x%02x", b);
        else
            snprintf(want, sizeof want, "\xc2%c", (int)b);
        ck_assert_msg(strcmp(esc(in), want) == 0, "C2 %02x: got '%s'", b, esc(in));
    }
}
END_TEST

START_TEST(invalid_utf8_is_escaped_byte_by_byte)
{
    /* Overlong forms of '/' (2 and 3 bytes) and of U+0800 (4 bytes). */
    ck_assert_str_eq(esc("\xc0\xaf|\xc1\xbf|\xe0\x80\xaf|\xf0\x80\xa0\x80"),
                     "\\xc0\\xaf|\\xc1\\xbf|\\xe0\\x80\\xaf|\\xf0\\x80\\xa0\\x80");
    /* UTF-16 surrogates encoded as UTF-8 (U+D800, U+DFFF). */
    ck_assert_str_eq(esc("\xed\xa0\x80|\xed\xbf\xbf"), "\\xed\\xa0\\x80|\\xed\\xbf\\xbf");
    /* Beyond U+10FFFF: F4 90.., and lead bytes F5-FF that start nothing. */
    ck_assert_str_eq(esc("\xf4\x90\x80\x80|\xf5\x80|\xff\xfe"),
                     "\\xf4\\x90\\x80\\x80|\\xf5\\x80|\\xff\\xfe");
    /* Truncated: at the end, before ASCII, before another lead byte; the valid character
     * after a broken one is kept. */
    ck_assert_str_eq(esc("\xe2\x82"), "\\xe2\\x82");
    ck_assert_str_eq(esc("\xe2\x82z\xf0\x9f\x98\xc3\xa9"), "\\xe2\\x82z\\xf0\\x9f\\x98\xc3\xa9");
}
END_TEST

/* A backslash is doubled where it could begin an escape (before "\", "x", an escaped byte, at
 * the end), else kept: Windows paths read as they are, and the output reads back one way. */
START_TEST(backslashes)
{
    ck_assert_str_eq(esc("C:\\Windows\\System32\\kernel32.dll"),
                     "C:\\Windows\\System32\\kernel32.dll");
    ck_assert_str_eq(esc("C:\\data\\xfiles\\\\a.bin"), "C:\\data\\\\xfiles\\\\\\a.bin");
    ck_assert_str_eq(esc("dir\\"), "dir\\\\");
    /* A raw backslash before ESC is doubled: kept single, "\\x1b" would read back as backslash,
     * "x1b". */
    ck_assert_str_eq(esc("a\\\x1b"), "a\\\\\\x1b");
    ck_assert_str_eq(esc("a\\\xc2\x9b"), "a\\\\\\xc2\\x9b");
    ck_assert_str_eq(esc("a\\\xff"), "a\\\\\\xff");
    /* What looks like an escape in the input is not one: it reads back as itself. */
    ck_assert_str_eq(esc("\\x1b[31m"), "\\\\x1b[31m");
    /* Before a character that is kept (here é), a backslash stays single. */
    ck_assert_str_eq(esc("\\\xc3\xa9\\n"), "\\\xc3\xa9\\n");
}
END_TEST

/* snprintf's contract: the length of the whole escaped text, at most size - 1 bytes written,
 * cut only between whole escapes and characters, always terminated. */
START_TEST(short_buffers_cut_between_units)
{
    char buf[16];
    ck_assert_uint_eq(memdiff_escape_text(NULL, 0, "ab\x1b"), 6);
    memset(buf, '#', sizeof buf);
    ck_assert_uint_eq(memdiff_escape_text(buf, 6, "ab\x1b"), 6); /* "\x1b" needs 4 of 3 left */
    ck_assert_str_eq(buf, "ab");
    ck_assert_uint_eq(memdiff_escape_text(buf, 7, "ab\x1b"), 6);
    ck_assert_str_eq(buf, "ab\\x1b");
    /* A character is not split, and nothing after a unit that did not fit is written. */
    ck_assert_uint_eq(memdiff_escape_text(buf, 3, "a\xc3\xa9z"), 4);
    ck_assert_str_eq(buf, "a");
    ck_assert_uint_eq(memdiff_escape_text(buf, 4, "a\\\\z"), 5); /* a, doubled, single, z */
    ck_assert_str_eq(buf, "a\\\\");
    memset(buf, '#', sizeof buf);
    ck_assert_uint_eq(memdiff_escape_text(buf, 1, "abc"), 3);
    ck_assert_int_eq(buf[0], '\0');
    ck_assert_int_eq(buf[1], '#');
}
END_TEST

/* A detail that embeds a path from a target comes out of memdiff_last_error() escaped. */
START_TEST(last_error_is_escaped)
{
    memdiff__set_error(MEMDIFF_EIO, "open /proc/1/root%s: %s", "/tmp/\x1b]0;x\x07\n\x9b\xc2\x9b",
                       "failed");
    ck_assert_str_eq(memdiff_last_error(),
                     "open /proc/1/root/tmp/\\x1b]0;x\\x07\\x0a\\x9b\\xc2\\x9b: failed");
    /* An argument may be the last detail itself (formatted apart, then escaped again). */
    memdiff__set_error(MEMDIFF_EIO, "plain");
    memdiff__set_error(MEMDIFF_EIO, "%s, then %s", memdiff_last_error(), "more");
    ck_assert_str_eq(memdiff_last_error(), "plain, then more");
    /* A detail of 511 control bytes (the most vsnprintf keeps) is cut between escapes. */
    char many[600];
    memset(many, '\x1b', sizeof many);
    many[sizeof many - 1] = '\0';
    memdiff__set_error(MEMDIFF_EIO, "%s", many);
    const char *e = memdiff_last_error();
    ck_assert_uint_eq(strlen(e), 1020); /* 255 escapes of 4 in 1023 bytes */
    ck_assert_int_eq(strncmp(e + 1016, "\\x1b", 4), 0);
}
END_TEST

#define HOST_B "evil\x1b]0;pwned\x07\nhost\x9b\xc2\x9b\xff"
#define HOST_B_SHOWN "evil\\x1b]0;pwned\\x07\\x0ahost\\x9b\\xc2\\x9b\\xff"
#define HOST_A "other\x1b[2J\r"
#define HOST_A_SHOWN "other\\x1b[2J\\x0d"
#define LABEL "/tmp/\x1b[31mred\n\xc2\x85label\xed\xa0\x80"
#define LABEL_SHOWN "/tmp/\\x1b[31mred\\x0a\\xc2\\x85label\\xed\\xa0\\x80"

/* Two snapshots of "pid 4242" on hosts named by an attacker (as a loaded file could be). */
static void hostile_pair(memdiff_snapshot **b, memdiff_snapshot **a)
{
    static const synth_region regs[] = {
        {0x10000000, 0x10004000, MEMDIFF_CAT_MAPPED_FILE, LABEL, 1, MEMDIFF_REGION_FILE, 0x801,
         66, 0},
    };
    static const synth_run runs[] = {{0x10000000, 1, MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_FILE}};
    synth_spec sb = {.regions = regs, .region_count = 1, .degraded = "why\x1b[0m"};
    synth_spec sa = {.regions = regs, .region_count = 1, .runs = runs, .run_count = 1};
    *b = synth_snapshot(&sb);
    *a = synth_snapshot(&sa);
    ck_assert(*b && *a);
    (*b)->info.host = HOST_B; /* a literal outlives the snapshot; nothing frees it */
    (*a)->info.host = HOST_A;
}

START_TEST(mismatch_error_names_hosts_escaped)
{
    memdiff_snapshot *b, *a;
    hostile_pair(&b, &a);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(b, a, 0, &d), MEMDIFF_EMISMATCH);
    ck_assert_str_eq(memdiff_last_error(),
                     "memdiff_compare: the snapshots are of different processes (before: pid "
                     "4242 on host '" HOST_B_SHOWN "'; after: pid 4242 on host '" HOST_A_SHOWN
                     "')");
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
}
END_TEST

/* The report of a forced comparison: both hosts in the header, the degraded note and the
 * label, escaped; and no raw control byte anywhere. */
START_TEST(report_header_and_label_escaped)
{
    memdiff_snapshot *b, *a;
    hostile_pair(&b, &a);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(b, a, MEMDIFF_COMPARE_FORCE, &d), MEMDIFF_OK);
    char *got = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&got, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(memdiff_report_text(d, f, 0), MEMDIFF_OK);
    ck_assert_int_eq(fclose(f), 0);
    static const char head[] = "memdiff: pid 4242 on " HOST_B_SHOWN " -> " HOST_A_SHOWN
                               ", standard depth, 4096-byte pages\n  times unknown\n";
    ck_assert_msg(strncmp(got, head, strlen(head)) == 0, "header:\n%s", got);
    ck_assert_msg(strstr(got, "\n  (before: why\\x1b[0m)\n") != NULL, "%s", got);
    ck_assert_msg(strstr(got, "  new  " LABEL_SHOWN "\n") != NULL, "%s", got);
    /* Only printable ASCII and line ends: none of the test's texts has a character to keep.
     * The report's own dash (U+2013, PSS unknown) is the one character beyond ASCII. */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)got[i];
        if (strncmp(got + i, "\xe2\x80\x93", 3) == 0) {
            i += 2;
            continue;
        }
        ck_assert_msg((c >= 0x20 && c < 0x7F) || c == '\n', "raw byte %02x at %zu", c, i);
    }
    free(got);
    memdiff_diff_free(d);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
}
END_TEST

Suite *escape_suite(void)
{
    Suite *s = suite_create("escape");
    TCase *tc = tcase_create("Routine");
    tcase_add_test(tc, printable_text_is_kept);
    tcase_add_test(tc, every_single_byte);
    tcase_add_test(tc, controls_are_escaped);
    tcase_add_test(tc, invalid_utf8_is_escaped_byte_by_byte);
    tcase_add_test(tc, backslashes);
    tcase_add_test(tc, short_buffers_cut_between_units);
    suite_add_tcase(s, tc);

    tc = tcase_create("Library");
    tcase_add_test(tc, last_error_is_escaped);
    tcase_add_test(tc, mismatch_error_names_hosts_escaped);
    tcase_add_test(tc, report_header_and_label_escaped);
    suite_add_tcase(s, tc);
    return s;
}
