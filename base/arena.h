/*
 * arena.h - memdiff's own storage (base/arena.c): bump arenas over memory from the OS layer
 * (platform/os.h), accounted process-wide so that snapshots report it as Own. Core and backends
 * allocate from arenas only, never with malloc.
 */
#ifndef MEMDIFF_BASE_ARENA_H
#define MEMDIFF_BASE_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "base/lock.h" /* memdiff__arena_busy() and the lock's testing hook */

typedef struct memdiff__chunk memdiff__chunk;

/* A bump allocator over OS memory (chunks carved from memdiff__os_reserve's reservations, large
 * ones from memdiff__os_alloc). All of it is accounted process-wide, so that snapshots can report
 * memdiff's own storage as Own. Initialise with MEMDIFF__ARENA_INIT; release everything with
 * memdiff__arena_release(). */
typedef struct memdiff__arena {
    memdiff__chunk *chunks; /* newest first */
    size_t used;            /* bytes used in chunks->data */
    int recycle;            /* set by memdiff__arena_reserve: chunks are kept when released */
} memdiff__arena;

#define MEMDIFF__ARENA_INIT {0, 0, 0}

/* size bytes, 16-byte aligned and zeroed; NULL (with MEMDIFF_ENOMEM detail set) on failure. */
void *memdiff__arena_alloc(memdiff__arena *arena, size_t size);

/* As memdiff__arena_alloc, but the bytes are not zeroed when the memory is kept scratch: for
 * buffers that are always written before they are read. */
void *memdiff__arena_alloc_raw(memdiff__arena *arena, size_t size);

/* Maps one chunk with room for at least bytes and makes it the arena's bump chunk: the next
 * blocks, large ones from memdiff__arena_alloc included, are carved from it while they fit,
 * instead of a mapping each (blocks from memdiff__arena_grow still get their own, which grow by
 * moving pages). Pages are touched only as blocks use them. For an arena that holds many large
 * buffers for a short while, such as a snapshot's scratch; on an arena already in use, the room
 * left in its bump chunk is given up. Such an arena also recycles: its chunks are kept when it is
 * released, for the next one to take (at most 8 MiB; memdiff_trim() unmaps them). MEMDIFF_ENOMEM
 * (with detail) when it cannot be mapped. */
int memdiff__arena_reserve(memdiff__arena *arena, size_t bytes);

/* A NUL-terminated copy of s[0..len); NULL on failure. */
char *memdiff__arena_strndup(memdiff__arena *arena, const char *s, size_t len);

/* Grows a block of the arena (or NULL) to at least new_size bytes, keeping its contents; the
 * large blocks it returns get chunks of their own, which grow by moving their pages (a block
 * carved from a bump chunk is copied the first time). NULL on failure, with the old block still
 * valid. For arrays that grow (runs, regions). */
void *memdiff__arena_grow(memdiff__arena *arena, void *old, size_t old_size, size_t new_size);

/* As memdiff__arena_grow, but the bytes the block gains are not zeroed where the memory was used
 * before (kept chunks): for arrays whose elements are written before they are read. */
void *memdiff__arena_grow_raw(memdiff__arena *arena, void *old, size_t old_size, size_t new_size);

/* Room for one more element in an array that grows by doubling: returns v itself while
 * count < *cap, else its contents moved to a block of twice the room (initial elements the first
 * time, when v is NULL and *cap 0), with *cap updated. NULL when out of memory: v and *cap are
 * then unchanged. Callers write `T *nv = memdiff__arena_room(a, v, &cap, n, sizeof *nv, 64);`. */
void *memdiff__arena_room(memdiff__arena *arena, void *v, size_t *cap, size_t count, size_t elem,
                          size_t initial);

/* As memdiff__arena_room, but the room gained is not zeroed where the memory was used before
 * (memdiff__arena_grow_raw): for arrays whose elements are written before they are read. */
void *memdiff__arena_room_raw(memdiff__arena *arena, void *v, size_t *cap, size_t count,
                              size_t elem, size_t initial);

/* Unmaps every chunk of the arena and resets it to empty. */
void memdiff__arena_release(memdiff__arena *arena);

/* Bytes of OS memory the arena holds. */
size_t memdiff__arena_footprint(const memdiff__arena *arena);

/* A half-open address range [start, end). */
typedef struct memdiff__range {
    uint64_t start, end;
} memdiff__range;

/* The address ranges of memdiff's storage in the process, sorted and merged, copied into arena:
 * its reservations whole (chunks are carved from them) and the chunks that are mappings of their
 * own. Their number grows with the logarithm of the bytes held, not with the number of chunks.
 * Safe against concurrent snapshots. MEMDIFF_EBUSY when this thread is inside the arena's lock
 * (a signal handler). */
int memdiff__own_ranges(memdiff__arena *arena, memdiff__range **out, size_t *count);

/* Bytes of all live chunks in the process: those of live arenas and those kept for the next
 * snapshot (memdiff_trim() unmaps these). The arena's own count, exact; bytes committed for
 * memdiff's use, not pages known to be resident (a page of a chunk is resident once written).
 * Reservation bookkeeping (a header and a bit per page, in each reservation's first pages) is
 * not counted. */
size_t memdiff__own_bytes(void);


/* Testing hook: make the nth OS allocation from now fail (1 = the next one); 0 disables. */
void memdiff__test_fail_alloc_after(long n);

#endif /* MEMDIFF_BASE_ARENA_H */
