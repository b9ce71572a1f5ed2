/*
 * files.c - what a path names, and atomic replacement, for POSIX systems (the Linux backend).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "platform.h"

int memdiff__os_path_kind(const char *path, memdiff__path_kind *out)
{
    struct stat st;
    *out = MEMDIFF__PATH_NONE;
    /* lstat, not stat: a symbolic link is reported as one, whatever it points to (or not). */
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return MEMDIFF_OK;
        return memdiff__file_open_error("stat", path, errno);
    }
    if (S_ISREG(st.st_mode))
        *out = MEMDIFF__PATH_REGULAR;
    else if (S_ISDIR(st.st_mode))
        *out = MEMDIFF__PATH_DIRECTORY;
    else if (S_ISLNK(st.st_mode))
        *out = MEMDIFF__PATH_SYMLINK;
    else if (S_ISCHR(st.st_mode))
        *out = MEMDIFF__PATH_CHAR_DEVICE;
    else if (S_ISBLK(st.st_mode))
        *out = MEMDIFF__PATH_BLOCK_DEVICE;
    else if (S_ISFIFO(st.st_mode))
        *out = MEMDIFF__PATH_FIFO;
    else if (S_ISSOCK(st.st_mode))
        *out = MEMDIFF__PATH_SOCKET;
    else
        *out = MEMDIFF__PATH_OTHER;
    return MEMDIFF_OK;
}

int memdiff__os_replace_file(const char *from, const char *to)
{
    /* POSIX rename() replaces the directory entry to in one step and refuses a directory
     * (EISDIR, or ENOTEMPTY/EEXIST for a directory over a directory). */
    if (rename(from, to) != 0)
        return memdiff__file_open_error("rename to", to, errno);
    return MEMDIFF_OK;
}

const char *memdiff__os_last_separator(const char *path)
{
    return strrchr(path, '/');
}
