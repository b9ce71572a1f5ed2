/*
 * test_files.c - saving a snapshot on Windows: a new path and an existing file are written (the
 * file replaced by MoveFileEx, which the C runtime's rename() would refuse); a directory and the
 * NUL device are refused and left as they were.
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

const wintest_case wintest_files_cases[] = {
    {"save_targets", test_save_targets},
    {NULL, NULL},
};
