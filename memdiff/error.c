/*
 * error.c - status names and strings (from the one X-macro list in memdiff.h), the thread's
 * last detail message, and the names of the public enums.
 */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

/* Thread-local so that concurrent snapshots do not overwrite each other's details. Room for a
 * 511-byte detail with a few escapes; a detail of many control bytes is cut between escapes. */
static _Thread_local char last_error[1024];

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
    return status;
}

const char *memdiff_category_name(memdiff_category category)
{
    static const char *const names[MEMDIFF_CAT_COUNT] = {
        "image", "heap", "stack", "mapped-file", "shared", "private", "special", "own", "unknown",
    };
    if ((unsigned)category >= MEMDIFF_CAT_COUNT)
        return "invalid";
    return names[category];
}

const char *memdiff_depth_name(memdiff_depth depth)
{
    switch (depth) {
    case MEMDIFF_DEPTH_FAST:
        return "fast";
    case MEMDIFF_DEPTH_STANDARD:
        return "standard";
    case MEMDIFF_DEPTH_DEEP:
        return "deep";
    }
    return "invalid";
}

const char *memdiff_change_name(memdiff_change change)
{
    switch (change) {
    case MEMDIFF_CHANGE_NEW:
        return "new";
    case MEMDIFF_CHANGE_FREED:
        return "freed";
    case MEMDIFF_CHANGE_REPLACED:
        return "replaced";
    case MEMDIFF_CHANGE_BECAME_PRIVATE:
        return "became-private";
    case MEMDIFF_CHANGE_BECAME_SHARED:
        return "became-shared";
    case MEMDIFF_CHANGE_MIXED:
        return "mixed";
    case MEMDIFF_CHANGE_TOUCHED:
        return "touched";
    }
    return "invalid";
}

void memdiff_options_init(memdiff_options *options)
{
    if (options) {
        memdiff_options init = MEMDIFF_OPTIONS_INIT;
        *options = init;
    }
}
