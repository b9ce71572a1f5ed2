/*
 * strtab.c - interned strings: labels and paths repeat across regions (a module's segments, many
 * mappings of one file), so a snapshot stores each once and compares them by pointer.
 */
#include <string.h>

#include "uthash_arena.h"

_Thread_local memdiff__arena *memdiff__uthash_arena;
_Thread_local int memdiff__uthash_oom;

struct memdiff__strtab {
    const char *str;
    UT_hash_handle hh;
};

const char *memdiff__intern(memdiff__strtab **table, memdiff__arena *arena, const char *s)
{
    size_t len = strlen(s);
    memdiff__strtab *e = NULL;
    HASH_FIND(hh, *table, s, len, e);
    if (e)
        return e->str;
    e = memdiff__arena_alloc(arena, sizeof *e);
    char *copy = memdiff__arena_strndup(arena, s, len);
    if (!e || !copy)
        return NULL;
    e->str = copy;
    memdiff__uthash_arena = arena;
    memdiff__uthash_oom = 0;
    HASH_ADD_KEYPTR(hh, *table, e->str, len, e);
    if (memdiff__uthash_oom) {
        memdiff__set_error(MEMDIFF_ENOMEM, "interning a string: out of memory");
        return NULL;
    }
    return e->str;
}
