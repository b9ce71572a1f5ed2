/*
 * test_files.c - saving a snapshot on Windows: a new path and an existing file are written (the
 * file replaced by MoveFileEx, which the C runtime's rename() would refuse); a directory and the
 * NUL device are refused and left as they were. A timeline written and read back: a poll, a
 * snapshot, an exit; marks have no channel on Windows yet.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <string.h>

#include "wintest.h"

static void test_save_targets(void)
{
    char dir[MAX_PATH], path[MAX_PATH + 32], sub[MAX_PATH + 32];
    DWORD n = GetTempPathA(sizeof dir, dir);
    REQUIRE(n > 0 && n < sizeof dir);
    snprintf(path, sizeof path, "%smemdiff_save_%lu", dir, (unsigned long)GetCurrentProcessId());
    REQUIRE(CreateDirectoryA(path, NULL));
    memdiff_snapshot *s = NULL, *t = NULL;
    REQUIRE_OK(memdiff_snapshot_self(MEMDIFF_DEPTH_FAST, &s));

    snprintf(sub, sizeof sub, "%s\\new.mds", path);
    CHECK(memdiff_snapshot_save_file(s, sub) == MEMDIFF_OK); /* a new path */
    CHECK(memdiff_snapshot_save_file(s, sub) == MEMDIFF_OK); /* replaces it */
    CHECK(memdiff_snapshot_load_file(sub, &t) == MEMDIFF_OK);
    memdiff_snapshot_free(t);
    CHECK(DeleteFileA(sub));

    /* The directory itself (empty now): refused, still there. */
    CHECK(memdiff_snapshot_save_file(s, path) == MEMDIFF_EINVAL);
    CHECK(strstr(memdiff_last_error(), "is a directory, not a regular file") != NULL);
    DWORD attrs = GetFileAttributesA(path);
    CHECK(attrs != INVALID_FILE_ATTRIBUTES && (attrs & FILE_ATTRIBUTE_DIRECTORY));

    /* The NUL device. */
    CHECK(memdiff_snapshot_save_file(s, "NUL") == MEMDIFF_EINVAL);
    CHECK_STR(memdiff_last_error(), "NUL: is a character device, not a regular file");

    memdiff_snapshot_free(s);
    CHECK(RemoveDirectoryA(path)); /* empty: no temporary was left behind */
}

static void test_timeline(void)
{
    char dir[MAX_PATH], path[MAX_PATH + 32];
    DWORD n = GetTempPathA(sizeof dir, dir);
    REQUIRE(n > 0 && n < sizeof dir);
    snprintf(path, sizeof path, "%smemdiff_timeline_%lu.mdt", dir,
             (unsigned long)GetCurrentProcessId());
    memdiff_process_totals t;
    REQUIRE_OK(memdiff_poll(0, &t));
    /* GetProcessMemoryInfo: the working set and its peak; nothing else is known here. */
    CHECK(t.vm_rss > 0 && t.vm_hwm >= t.vm_rss && t.rss_anon == 0);
    memdiff_timeline_header h = MEMDIFF_TIMELINE_HEADER_INIT;
    h.pid = (int)GetCurrentProcessId();
    memdiff_timeline_writer *w = NULL;
    REQUIRE_OK(memdiff_timeline_create(path, &h, &w));
    CHECK(memdiff_timeline_add_sample(w, 1000, &t) == MEMDIFF_OK);
    memdiff_snapshot *s = NULL;
    REQUIRE_OK(memdiff_snapshot_self(MEMDIFF_DEPTH_FAST, &s));
    CHECK(memdiff_timeline_add_snapshot(w, s, MEMDIFF_CAUSE_START) == MEMDIFF_OK);
    CHECK(memdiff_timeline_add_exit(w, 2000, MEMDIFF_EXIT_DETACHED, 0) == MEMDIFF_OK);
    CHECK(memdiff_timeline_close(w) == MEMDIFF_OK);

    memdiff_timeline *tl = NULL;
    REQUIRE_OK(memdiff_timeline_open(path, &tl));
    memdiff_timeline_info info;
    CHECK(memdiff_timeline_get_info(tl, &info) == MEMDIFF_OK);
    CHECK(info.samples == 1 && info.snapshots == 1 && info.exits == 1 && !info.torn);
    memdiff_timeline_record r;
    CHECK(memdiff_timeline_next(tl, &r) == 1 && r.kind == MEMDIFF_RECORD_SAMPLE &&
          r.totals.vm_rss == t.vm_rss);
    memdiff_snapshot *back = NULL;
    CHECK(memdiff_timeline_snapshot(tl, 0, &back) == MEMDIFF_OK);
    memdiff_diff *d = NULL;
    CHECK(back && memdiff_compare(s, back, 0, &d) == MEMDIFF_OK &&
          memdiff_diff_block_count(d) == 0);
    memdiff_diff_free(d);
    memdiff_snapshot_free(back);
    memdiff_snapshot_free(s);
    memdiff_timeline_free(tl);
    CHECK(DeleteFileA(path));

    memdiff_mark_listener *l = NULL;
    CHECK(memdiff_mark("no channel") == 0);
    CHECK(memdiff_mark_listen(0, &l) == MEMDIFF_ENOTSUP && l == NULL);
}

const wintest_case wintest_files_cases[] = {
    {"save_targets", test_save_targets},
    {"timeline", test_timeline},
    {NULL, NULL},
};
