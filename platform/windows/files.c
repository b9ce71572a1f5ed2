/*
 * files.c - what a path names, and atomic replacement, for the Windows backend.
 *
 * Paths are narrow strings in the ANSI code page, as the C runtime's fopen() (which
 * file_write.c creates the file with) takes them.
 */
#include "win.h"

/* File errors are EACCES or EIO: memdiff__win_error's mapping is for process handles (where an
 * invalid parameter means a pid that does not exist). */
static int file_error(DWORD err, const char *what, const char *path)
{
    int status = err == ERROR_ACCESS_DENIED || err == ERROR_SHARING_VIOLATION ||
                         err == ERROR_WRITE_PROTECT || err == ERROR_PRIVILEGE_NOT_HELD
                     ? MEMDIFF_EACCES
                     : MEMDIFF_EIO;
    return memdiff__win_error_as(status, NULL, err, "%s %s", what, path);
}

int memdiff__os_path_kind(const char *path, memdiff__path_kind *out)
{
    *out = MEMDIFF__PATH_NONE;
    /* No access asked (0): opening a device or a pipe this way neither blocks nor reaches the
     * device; FILE_FLAG_OPEN_REPARSE_POINT opens a link itself, BACKUP_SEMANTICS a directory. */
    HANDLE h = CreateFileA(path, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT,
                           NULL);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD err = GetLastError();
        if (err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND)
            return MEMDIFF_OK;
        return file_error(err, "open", path);
    }
    DWORD type = GetFileType(h);
    BY_HANDLE_FILE_INFORMATION fi;
    int have_info = type == FILE_TYPE_DISK && GetFileInformationByHandle(h, &fi);
    DWORD err = GetLastError();
    CloseHandle(h);
    if (type == FILE_TYPE_CHAR)
        *out = MEMDIFF__PATH_CHAR_DEVICE;
    else if (type == FILE_TYPE_PIPE)
        *out = MEMDIFF__PATH_FIFO;
    else if (type != FILE_TYPE_DISK)
        *out = MEMDIFF__PATH_OTHER;
    else if (!have_info)
        return file_error(err, "query", path);
    else if (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
        *out = MEMDIFF__PATH_SYMLINK;
    else if (fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
        *out = MEMDIFF__PATH_DIRECTORY;
    else
        *out = MEMDIFF__PATH_REGULAR;
    return MEMDIFF_OK;
}

int memdiff__os_replace_file(const char *from, const char *to)
{
    /* The C runtime's rename() refuses an existing target; MoveFileEx replaces a file in one
     * step (and refuses a directory), as POSIX rename() does. */
    if (!MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING))
        return file_error(GetLastError(), "rename to", to);
    return MEMDIFF_OK;
}

const char *memdiff__os_last_separator(const char *path)
{
    const char *slash = strrchr(path, '/'), *back = strrchr(path, '\\');
    return back && (!slash || back > slash) ? back : slash;
}
