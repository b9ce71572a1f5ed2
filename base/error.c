/*
 * error.c - status names and strings (from the one X-macro list in memdiff.h) and the thread's
 * last detail message.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "memdiff.h"

/* Thread-local so that concurrent snapshots do not overwrite each other's details. Room for a
 * 511-byte detail with a few escapes; a detail of many control bytes is cut between escapes. */
static _Thread_local char last_error[1024];
/* The same detail unescaped, for a caller that keeps it in text the reports escape themselves
 * (refset.c's degraded note): escaping it twice would print "\\x1b" for "\x1b". */
static _Thread_local char last_raw[512];

const char *memdiff_status_name(int status)
{
    switch (status) {
#define NAME_CASE(name, code, text) \
    case MEMDIFF_##name:            \
        return "MEMDIFF_" #name;
        MEMDIFF_STATUS_MAP(NAME_CASE)
#undef NAME_CASE
    }
    return "MEMDIFF_UNKNOWN";
}

const char *memdiff_strerror(int status)
{
    switch (status) {
#define TEXT_CASE(name, code, text) \
    case MEMDIFF_##name:            \
        return text;
        MEMDIFF_STATUS_MAP(TEXT_CASE)
#undef TEXT_CASE
    }
    return "unknown status";
}

const char *memdiff_last_error(void)
{
    return last_error;
}

const char *memdiff__last_error_raw(void)
{
    return last_raw;
}

int memdiff__set_error(int status, const char *fmt, ...)
{
    /* Details embed paths from a target's maps and host names from files: escaped once, here,
     * so that memdiff_last_error() is always safe to print, whoever formatted the detail.
     * Formatted apart first: an argument may be memdiff_last_error() itself. */
    char raw[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    memdiff_escape_text(last_error, sizeof last_error, raw);
    memcpy(last_raw, raw, sizeof raw);
    return status;
}

int memdiff__file_open_error(const char *what, const char *path, int e)
{
    return memdiff__set_error(e == EACCES || e == EPERM || e == EROFS ? MEMDIFF_EACCES
                                                                      : MEMDIFF_EIO,
                              "%s %s: %s", what, path, strerror(e));
}
