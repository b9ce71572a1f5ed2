/*
 * uthash_arena.h - the one place that includes uthash.h. uthash would call exit() on allocation
 * failure and use malloc; a library must do neither, so its allocator is routed to the arena of
 * the calling thread's current hash operation and out-of-memory is made non-fatal.
 */
#ifndef MEMDIFF_UTHASH_ARENA_H
#define MEMDIFF_UTHASH_ARENA_H

#include "internal.h"

/* The arena uthash allocates from; set around each HASH_ADD* by the caller. */
extern _Thread_local memdiff__arena *memdiff__uthash_arena;
/* Set when uthash could not allocate during the last HASH_ADD*. */
extern _Thread_local int memdiff__uthash_oom;

#define HASH_NONFATAL_OOM 1
#define uthash_malloc(sz) memdiff__arena_alloc(memdiff__uthash_arena, (sz))
#define uthash_free(ptr, sz) ((void)(ptr), (void)(sz)) /* arena memory goes with the arena */
#define uthash_nonfatal_oom(obj) ((void)(obj), memdiff__uthash_oom = 1)

#include <uthash.h>

#endif
