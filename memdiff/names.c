/*
 * names.c - the library's version, the names of the public enums (categories, depths, changes)
 * and the options' defaults.
 */
#include "internal.h"

/* Compiled into the library, so a program reads the version it runs with, not the one of the
 * header it was compiled against. */
const char *memdiff_version(void)
{
    return MEMDIFF_VERSION_STRING;
}

const char *memdiff_category_name(memdiff_category category)
{
    static const char *const names[MEMDIFF_CAT_COUNT] = {
        "image", "heap", "stack", "mapped-file", "shared", "private", "special", "own", "unknown",
    };
    if (category == MEMDIFF_CAT_ALL)
        return "all";
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
