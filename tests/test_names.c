/*
 * test_names.c - hostile file names end to end. Real files in a temporary directory, named with a
 * newline, a quote, a backslash, the four bytes \012 spelt out, ESC, a C1 control as UTF-8
 * (U+009B) and invalid UTF-8, are mapped by this process. Then:
 *   - the library's region path and label are the file's name, byte for byte (the kernel's \012
 *     in /proc/PID/maps decoded, and told apart from a name that spells it);
 *   - the text report of a diff (memdiff_report_text), and the memdiff command's snap + show
 *     and diff, print each name only as the visible escapes of docs/cli.md "Text output",
 *     never a raw control byte;
 *   - show --json holds each name that is valid UTF-8 exactly (read back by python3's json).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/escape.h"
#include "internal.h"
#include "scenario_util.h"
#include "suites.h"

/* Each name, and how the text output shows it (docs/cli.md, "Text output"): a control byte and
 * a byte of no valid UTF-8 as \xNN, U+009B as \xc2\x9b, a backslash before 'x' or another
 * backslash doubled, any other backslash itself. */
static const struct {
    const char *name, *shown;
    int utf8; /* valid UTF-8: JSON holds it exactly */
} names[] = {
    {"new\nline", "new\\x0aline", 1},
    {"quo\"te", "quo\"te", 1},
    {"back\\slash", "back\\slash", 1},
    {"spelt\\012out", "spelt\\012out", 1},       /* the four bytes: not a newline */
    {"both\n\\012", "both\\x0a\\012", 1},         /* a newline and the four bytes */
    {"esc\x1b[31mred", "esc\\x1b[31mred", 1},
    {"csi\xc2\x9b" "2J", "csi\\xc2\\x9b2J", 1},   /* U+009B as UTF-8 */
    {"bad\xff\xc0\xafutf8", "bad\\xff\\xc0\\xafutf8", 0},
    {"x\\x41", "x\\\\x41", 1},                    /* would read back as "xA" undoubled */
};
enum { N = sizeof names / sizeof names[0] };

static char dir[64];
static char paths[N][128];
static void *maps[N];
static long page;
static char out[1 << 19];

/* Maps each file (one page, shared) and writes to it: resident. */
static void map_all(void)
{
    for (int i = 0; i < N; i++) {
        int fd = open(paths[i], O_RDWR);
        ck_assert_msg(fd >= 0, "cannot open %s", names[i].shown);
        maps[i] = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ck_assert_ptr_ne(maps[i], MAP_FAILED);
        close(fd);
        memset(maps[i], 'y', 1);
    }
}

static void unmap_all(void)
{
    for (int i = 0; i < N; i++)
        if (maps[i]) {
            munmap(maps[i], (size_t)page);
            maps[i] = NULL;
        }
}

/* Creates each file in a new directory, and maps it. */
static void setup(void)
{
    page = sysconf(_SC_PAGESIZE);
    strcpy(dir, "/tmp/memdiff_names_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (int i = 0; i < N; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", dir, names[i].name);
        int fd = open(paths[i], O_RDWR | O_CREAT | O_EXCL, 0600);
        ck_assert_msg(fd >= 0, "cannot create %s", names[i].shown);
        ck_assert_int_eq(ftruncate(fd, page), 0);
        close(fd);
    }
    map_all();
}

static void teardown(void)
{
    unmap_all();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_names: could not remove %s\n", dir);
}

/* No byte of text is a raw control: only printable ASCII, newlines ending lines, and valid
 * UTF-8 characters beyond the C1 controls (a "…" that cuts a label). */
static void assert_no_raw_control(const char *what, const char *text)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + strlen(text);
    while (p < end) {
        size_t n = memdiff__utf8_len(p, (size_t)(end - p));
        int ok = n == 1 ? (*p >= 0x20 && *p < 0x7f) || *p == '\n'
                        : n > 1 && !(p[0] == 0xc2 && p[1] < 0xa0);
        size_t at = (size_t)(p - (const unsigned char *)text);
        ck_assert_msg(ok, "%s: raw byte 0x%02x at %zu, after:\n%.200s", what, *p, at,
                      text + (at > 200 ? at - 200 : 0));
        p += n ? n : 1;
    }
}

/* Each name shows as its escaped form at the end of a line: the label's last part, which a
 * label cut to fit the width keeps. */
static void assert_names_shown(const char *what, const char *text)
{
    for (int i = 0; i < N; i++) {
        char want[128];
        snprintf(want, sizeof want, "/%s\n", names[i].shown);
        /* Check passes a message through a pipe of limited size: the report's start only. */
        ck_assert_msg(strstr(text, want) != NULL, "%s: no line ending in %s in:\n%.3000s", what,
                      want, text);
    }
    assert_no_raw_control(what, text);
}

/* Runs a shell command in dir, its standard output into out; its exit status. */
#define run(fmt, ...) scn_sh(out, sizeof out, "cd %s && " fmt, dir, __VA_ARGS__)

START_TEST(region_path_and_label_are_the_names_bytes)
{
    memdiff_snapshot *s = NULL;
    ck_assert_int_eq(memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &s), MEMDIFF_OK);
    for (int i = 0; i < N; i++) {
        memdiff_region r;
        ck_assert_int_eq(memdiff_snapshot_find(s, (uint64_t)(uintptr_t)maps[i], &r), MEMDIFF_OK);
        ck_assert_msg(strcmp(r.path, paths[i]) == 0, "%s: path \"%s\"", names[i].shown, r.path);
        ck_assert_msg(strcmp(r.label, paths[i]) == 0, "%s: label \"%s\"", names[i].shown,
                      r.label);
        ck_assert_int_eq(r.category, MEMDIFF_CAT_MAPPED_FILE);
        ck_assert_uint_eq(r.resident_bytes, (uint64_t)page); /* the page written */
    }
    memdiff_snapshot_free(s);
}
END_TEST

START_TEST(text_report_shows_names_escaped)
{
    /* before: none of the files mapped; after: all, each one page new. */
    unmap_all();
    memdiff_snapshot *a = NULL, *b = NULL;
    ck_assert_int_eq(memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &a), MEMDIFF_OK);
    map_all();
    ck_assert_int_eq(memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &b), MEMDIFF_OK);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(a, b, 0, &d), MEMDIFF_OK);
    for (int i = 0; i < N; i++) {
        memdiff_block blk;
        ck_assert_int_eq(memdiff_diff_find_block(d, (uint64_t)(uintptr_t)maps[i], &blk),
                         MEMDIFF_OK);
        ck_assert_str_eq(blk.label, paths[i]);
    }
    char *text = scn_report(d, 0);
    assert_names_shown("memdiff_report_text", text);
    free(text);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}
END_TEST

/* The command, another process, reads this one's maps: snap, show, diff. */
START_TEST(command_shows_names_escaped)
{
    pid_t self = getpid();
    ck_assert_int_eq(run("'%s' snap %d -o after.mds -q", MEMDIFF_CLI_PATH, (int)self), 0);
    ck_assert_int_eq(run("'%s' show after.mds", MEMDIFF_CLI_PATH), 0);
    assert_names_shown("memdiff show", out);
    ck_assert_int_eq(run("'%s' show --regions after.mds", MEMDIFF_CLI_PATH), 0);
    assert_names_shown("memdiff show --regions", out);

    unmap_all();
    ck_assert_int_eq(run("'%s' snap %d -o before.mds -q", MEMDIFF_CLI_PATH, (int)self), 0);
    map_all();
    ck_assert_int_eq(run("'%s' snap %d -o after.mds -q", MEMDIFF_CLI_PATH, (int)self), 0);
    ck_assert_int_eq(run("'%s' diff before.mds after.mds", MEMDIFF_CLI_PATH), 0);
    assert_names_shown("memdiff diff", out);
}
END_TEST

/* JSON holds a name exactly where it is valid UTF-8 (the rest is for the JSON writer's own
 * rules): python3's json reads the blocks' labels back, compared with the names as bytes. */
START_TEST(json_holds_utf8_names_exactly)
{
    ck_assert_int_eq(run("'%s' snap %d -o s.mds -q", MEMDIFF_CLI_PATH, (int)getpid()), 0);
    ck_assert_int_eq(run("'%s' show --json s.mds > s.json", MEMDIFF_CLI_PATH), 0);
    char hex[N * 64 * 2 + N * 2] = "", cmd[sizeof hex + 512];
    int want = 0;
    for (int i = 0; i < N; i++) {
        if (!names[i].utf8)
            continue;
        strcat(hex, " ");
        for (const unsigned char *p = (const unsigned char *)paths[i]; *p; p++)
            sprintf(hex + strlen(hex), "%02x", *p);
        want++;
    }
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json, sys\n"
             "labels = set()\n"
             "def walk(v):\n"
             "    if isinstance(v, dict):\n"
             "        if isinstance(v.get(\"label\"), str): labels.add(v[\"label\"])\n"
             "        for x in v.values(): walk(x)\n"
             "    elif isinstance(v, list):\n"
             "        for x in v: walk(x)\n"
             "walk(json.load(open(\"s.json\", encoding=\"utf-8\")))\n"
             "found = [h for h in sys.argv[1:] if bytes.fromhex(h).decode() in labels]\n"
             "print(len(found))' %s",
             hex);
    ck_assert_int_eq(run("%s", cmd), 0);
    ck_assert_int_eq(atoi(out), want);
}
END_TEST

Suite *names_suite(void)
{
    Suite *s = suite_create("names");
    TCase *tc = tcase_create("hostile file names");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, region_path_and_label_are_the_names_bytes);
    tcase_add_test(tc, text_report_shows_names_escaped);
    tcase_add_test(tc, command_shows_names_escaped);
    tcase_add_test(tc, json_holds_utf8_names_exactly);
    suite_add_tcase(s, tc);
    return s;
}
