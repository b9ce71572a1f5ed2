/*
 * arena.c - memdiff's own storage: bump arenas over OS pages, registered process-wide.
 *
 * Why not malloc: a snapshot must not disturb the heap it measures, and memdiff's storage must be
 * known so that it can be reported as Own and kept out of every total. Every chunk of every live
 * arena is on one global list (guarded by a spinlock: holders never allocate or block).
 */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"

/* A bump chunk is 64 KiB mapped, header included (64 KiB of data would map 68 KiB): a small
 * process's snapshot fits in one. */
#define CHUNK_BYTES ((size_t)64 * 1024)
#define CHUNK_MIN (CHUNK_BYTES - offsetof(memdiff__chunk, data))
#define DEDICATED_MIN ((size_t)16 * 1024) /* larger requests get a chunk of their own */
#define ALIGN 16u

struct memdiff__chunk {
    memdiff__chunk *next;               /* in the arena, newest first */
    memdiff__chunk *gnext, *gprev;      /* in the process-wide registry */
    size_t size;                        /* bytes mapped, header included */
    size_t cap;                         /* usable bytes after the header */
    int dedicated;                      /* holds one block (from memdiff__arena_grow) */
    int roomy;                          /* from memdiff__arena_reserve: large blocks too */
    size_t dirty;                       /* data bytes an earlier use may have written (kept) */
    _Alignas(16) unsigned char data[];
};

static memdiff__chunk *registry;
static atomic_flag registry_lock = ATOMIC_FLAG_INIT;

/* Scratch kept between snapshots. An arena that recycles (a snapshot's storage, its scratch, a
 * bracket's) hands its chunks here when released, and the next such arena takes them instead of
 * mapping, faulting in and unmapping its buffers again: measured, that was 6% of a standard
 * snapshot of 1 GiB resident and 18% of one of 64 MiB. Arrays that grow start in and grow into
 * kept chunks of up to GROWN_SLACK times the size asked as well (grow_from_cache: a standard
 * snapshot of 1 GiB faulted in 21 pages and moved 3 arrays by mremap, then 1.5 pages and none;
 * its arrays' first chunks still came new each time until they could start in larger ones: see
 * cache_take). At most CACHE_SLOTS chunks and
 * CACHE_MAX bytes are kept; they stay registered (Own, like all of memdiff's storage) until
 * memdiff_trim(). Guarded by the registry's lock. */
#define CACHE_SLOTS 16
#define CACHE_MAX ((size_t)8 << 20)
static memdiff__chunk *cache[CACHE_SLOTS];
static size_t cached_bytes;
static atomic_long fail_countdown;

static void lock(void)
{
    while (atomic_flag_test_and_set_explicit(&registry_lock, memory_order_acquire)) {
    }
}

static void unlock(void)
{
    atomic_flag_clear_explicit(&registry_lock, memory_order_release);
}

void memdiff__test_fail_alloc_after(long n)
{
    atomic_store(&fail_countdown, n);
}

static int injected_failure(void)
{
    long n = atomic_load(&fail_countdown);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&fail_countdown, &n, n - 1))
            return n == 1;
    }
    return 0;
}

static void registry_add(memdiff__chunk *c)
{
    lock();
    c->gprev = NULL;
    c->gnext = registry;
    if (registry)
        registry->gprev = c;
    registry = c;
    unlock();
}

static void registry_remove(memdiff__chunk *c)
{
    lock();
    if (c->gprev)
        c->gprev->gnext = c->gnext;
    else
        registry = c->gnext;
    if (c->gnext)
        c->gnext->gprev = c->gprev;
    unlock();
}

/* A kept chunk for a mapping of size bytes (cap usable), out of the cache; NULL when none. Below
 * 1 MiB only one of that very size (a snapshot must not hold on to more than it would have
 * mapped: a fast snapshot of 4 GiB stays in its one 64 KiB chunk), or for an array that grows, up
 * to GROWN_SLACK times that size: the size it would have grown to (its own kept sizes are those it
 * grew through, so without this it would map its first chunk anew every time); above, the
 * smallest with room and not twice as much. */
#define CACHE_EXACT_BELOW ((size_t)1 << 20)
#define GROWN_SLACK 4u
static memdiff__chunk *cache_take(size_t size, size_t cap, int growable)
{
    lock();
    int best = -1;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        const memdiff__chunk *c = cache[i];
        int fits = c && (size < CACHE_EXACT_BELOW
                             ? c->size == size || (growable && c->size > size &&
                                                   c->size / GROWN_SLACK <= size)
                             : c->cap >= cap && c->cap / 2 <= cap);
        if (fits && (best < 0 || c->cap < cache[best]->cap))
            best = i;
    }
    memdiff__chunk *c = NULL;
    if (best >= 0) {
        c = cache[best];
        cache[best] = NULL;
        cached_bytes -= c->size;
    }
    unlock();
    return c;
}

/* Keeps c (still registered) for a later cache_take; 0 when there is no room for it. */
static int cache_put(memdiff__chunk *c)
{
    int kept = 0;
    lock();
    for (int i = 0; i < CACHE_SLOTS && !kept; i++) {
        if (!cache[i] && cached_bytes + c->size <= CACHE_MAX) {
            cache[i] = c;
            cached_bytes += c->size;
            kept = 1;
        }
    }
    unlock();
    return kept;
}

/* A chunk with room for cap bytes: kept scratch when the arena recycles and one fits, else new
 * OS pages (dirty 0: zeroed). */
static memdiff__chunk *chunk_new(size_t cap, int dedicated, int growable, int counted, int recycle)
{
    size_t page = memdiff__os_page_size();
    size_t header = offsetof(memdiff__chunk, data);
    if (cap > SIZE_MAX - header - page) {
        memdiff__set_error(MEMDIFF_ENOMEM, "arena: request of %zu bytes is too large", cap);
        return NULL;
    }
    size_t size = (header + cap + page - 1) / page * page;
    if (counted && injected_failure()) {
        memdiff__set_error(MEMDIFF_ENOMEM, "arena: cannot map %zu bytes", size);
        return NULL;
    }
    memdiff__chunk *c = recycle ? cache_take(size, cap, growable) : NULL;
    if (c) {
        c->dedicated = dedicated;
        c->roomy = 0;
        c->next = NULL;
        return c;
    }
    c = memdiff__os_alloc(size);
    if (!c) {
        memdiff__set_error(MEMDIFF_ENOMEM, "arena: cannot map %zu bytes", size);
        return NULL;
    }
    c->size = size;
    c->cap = size - header;
    c->dedicated = dedicated;
    c->roomy = 0;
    c->dirty = 0;
    registry_add(c);
    return c;
}

static void chunk_free(memdiff__chunk *c)
{
    registry_remove(c);
    memdiff__os_free(c, c->size);
}

/* Grows dedicated chunk c (reached through *link) to hold new_size bytes by moving its pages
 * (memdiff__os_grow): no copy, so an array that doubles costs its new pages only. The chunk is
 * out of the registry while it moves: a concurrent memdiff__own_ranges() misses it for that
 * instant, and finds its pages by their name where the OS names memory. NULL when the OS cannot
 * move pages (c is then unchanged). */
static void *grow_chunk(memdiff__chunk **link, memdiff__chunk *c, size_t new_size)
{
    size_t page = memdiff__os_page_size();
    size_t header = offsetof(memdiff__chunk, data);
    if (new_size > SIZE_MAX - header - page)
        return NULL;
    size_t size = (header + new_size + page - 1) / page * page;
    registry_remove(c);
    memdiff__chunk *q = memdiff__os_grow(c, c->size, size);
    if (!q) {
        registry_add(c);
        return NULL;
    }
    q->size = size;
    q->cap = size - header;
    registry_add(q);
    *link = q;
    return q->data;
}

/* Grows dedicated chunk c (reached through *link), which holds a block of old_size bytes, by
 * moving the block into a kept chunk with room for new_size, out of the cache: copying what it
 * holds costs a fraction of faulting in the pages that moving it would add (grow_chunk). c goes to
 * the cache in turn, for the next array to grow through its size. NULL when none is kept. */
static void *grow_from_cache(memdiff__chunk **link, memdiff__chunk *c, size_t old_size,
                             size_t new_size, int zero)
{
    size_t page = memdiff__os_page_size();
    size_t header = offsetof(memdiff__chunk, data);
    if (new_size > SIZE_MAX - header - page)
        return NULL;
    memdiff__chunk *q = cache_take((header + new_size + page - 1) / page * page, new_size, 1);
    if (!q)
        return NULL;
    memcpy(q->data, c->data, old_size);
    size_t end = q->dirty < new_size ? q->dirty : new_size;
    if (zero && end > old_size) /* what an earlier use wrote beyond the block */
        memset(q->data + old_size, 0, end - old_size);
    q->dirty = q->dirty > old_size ? q->dirty : old_size;
    q->dedicated = 1;
    q->roomy = 0;
    q->next = c->next;
    *link = q;
    c->dirty = c->cap;
    if (!cache_put(c))
        chunk_free(c);
    return q->data;
}

/* Dedicated chunks go behind the head so that the head stays the bump chunk. */
static void link_dedicated(memdiff__arena *arena, memdiff__chunk *c)
{
    if (arena->chunks && !arena->chunks->dedicated) {
        c->next = arena->chunks->next;
        arena->chunks->next = c;
    } else {
        c->next = arena->chunks;
        arena->chunks = c;
        arena->used = 0;
    }
}

/* memdiff__arena_alloc; counted says whether the chunk it may map counts as an OS allocation
 * for memdiff__test_fail_alloc_after (a grow counts once, whichever way it goes); growable,
 * whether the block comes from memdiff__arena_grow. */
static void *arena_alloc(memdiff__arena *arena, size_t size, int counted, int growable, int zero)
{
    if (size == 0)
        size = 1;
    size = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    memdiff__chunk *head = arena->chunks;
    int fits = head && !head->dedicated && head->cap - arena->used >= size;
    /* A large block gets a mapping of its own, unless it is fixed in size and fits the room
     * reserved for such blocks: one that grows moves its pages (grow_chunk), never a copy. */
    if (size >= DEDICATED_MIN && !(fits && head->roomy && !growable)) {
        memdiff__chunk *c = chunk_new(size, 1, growable, counted, arena->recycle);
        if (!c)
            return NULL;
        link_dedicated(arena, c);
        if (zero && c->dirty)
            memset(c->data, 0, size < c->dirty ? size : c->dirty);
        return c->data;
    }
    if (!fits) {
        memdiff__chunk *c = chunk_new(CHUNK_MIN, 0, 0, counted, arena->recycle);
        if (!c)
            return NULL;
        c->next = arena->chunks;
        arena->chunks = c;
        arena->used = 0;
        head = c;
    }
    void *p = head->data + arena->used;
    if (zero && head->dirty > arena->used) /* kept scratch: what an earlier use wrote */
        memset(p, 0, size < head->dirty - arena->used ? size : head->dirty - arena->used);
    arena->used += size;
    return p;
}

void *memdiff__arena_alloc(memdiff__arena *arena, size_t size)
{
    return arena_alloc(arena, size, 1, 0, 1);
}

void *memdiff__arena_alloc_raw(memdiff__arena *arena, size_t size)
{
    return arena_alloc(arena, size, 1, 0, 0);
}

int memdiff__arena_reserve(memdiff__arena *arena, size_t bytes)
{
    arena->recycle = 1;
    memdiff__chunk *c = chunk_new(bytes, 0, 0, 1, 1);
    if (!c)
        return MEMDIFF_ENOMEM;
    c->roomy = 1;
    c->next = arena->chunks;
    arena->chunks = c;
    arena->used = 0;
    return MEMDIFF_OK;
}

char *memdiff__arena_strndup(memdiff__arena *arena, const char *s, size_t len)
{
    char *p = memdiff__arena_alloc(arena, len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

/* memdiff__arena_grow; zero says whether the bytes the block gains must read 0. */
static void *grow(memdiff__arena *arena, void *old, size_t old_size, size_t new_size, int zero)
{
    if (old && new_size <= old_size)
        return old;
    memdiff__chunk *owner = NULL, **link = &arena->chunks;
    if (old) {
        for (memdiff__chunk *c = arena->chunks; c; link = &c->next, c = c->next) {
            if (c->dedicated && (void *)c->data == old) {
                owner = c;
                break;
            }
        }
        if (owner && zero && owner->dirty > old_size) {
            /* Kept scratch: what an earlier use left beyond the block is cleared as it grows. */
            size_t end = owner->dirty < new_size ? owner->dirty : new_size;
            end = end < owner->cap ? end : owner->cap;
            if (end > old_size)
                memset((unsigned char *)old + old_size, 0, end - old_size);
            if (owner->cap < new_size)
                owner->dirty = old_size; /* the pages it gains come zeroed */
        }
        if (owner && owner->cap >= new_size)
            return old;
    }
    if (owner) {
        if (injected_failure()) {
            memdiff__set_error(MEMDIFF_ENOMEM, "arena: cannot grow to %zu bytes", new_size);
            return NULL;
        }
        void *q = arena->recycle ? grow_from_cache(link, owner, old_size, new_size, zero) : NULL;
        if (!q)
            q = grow_chunk(link, owner, new_size);
        if (q)
            return q;
    }
    void *p = arena_alloc(arena, new_size, owner == NULL, 1, zero);
    if (!p)
        return NULL;
    if (old) {
        memcpy(p, old, old_size);
        if (owner) {
            /* Re-find the link: the allocation above may have inserted a chunk before it. */
            for (link = &arena->chunks; *link != owner; link = &(*link)->next) {
            }
            *link = owner->next;
            chunk_free(owner);
        }
    }
    return p;
}

void *memdiff__arena_grow(memdiff__arena *arena, void *old, size_t old_size, size_t new_size)
{
    return grow(arena, old, old_size, new_size, 1);
}

void *memdiff__arena_grow_raw(memdiff__arena *arena, void *old, size_t old_size, size_t new_size)
{
    return grow(arena, old, old_size, new_size, 0);
}

static void *room(memdiff__arena *arena, void *v, size_t *cap, size_t count, size_t elem,
                  size_t initial, int zero)
{
    if (count < *cap)
        return v;
    size_t ncap = *cap ? *cap : (initial ? initial : 1);
    if (*cap) {
        if (ncap > SIZE_MAX / 2 / elem) {
            memdiff__set_error(MEMDIFF_ENOMEM, "arena: an array of %zu elements cannot double",
                               ncap);
            return NULL;
        }
        ncap *= 2;
    } else if (ncap > SIZE_MAX / elem) {
        memdiff__set_error(MEMDIFF_ENOMEM, "arena: an array of %zu elements is too large", ncap);
        return NULL;
    }
    void *nv = grow(arena, v, *cap * elem, ncap * elem, zero);
    if (nv)
        *cap = ncap;
    return nv;
}

void *memdiff__arena_room(memdiff__arena *arena, void *v, size_t *cap, size_t count, size_t elem,
                          size_t initial)
{
    return room(arena, v, cap, count, elem, initial, 1);
}

void *memdiff__arena_room_raw(memdiff__arena *arena, void *v, size_t *cap, size_t count,
                              size_t elem, size_t initial)
{
    return room(arena, v, cap, count, elem, initial, 0);
}

void memdiff__arena_release(memdiff__arena *arena)
{
    memdiff__chunk *c = arena->chunks;
    while (c) {
        memdiff__chunk *next = c->next;
        if (arena->recycle) {
            /* What may hold data now: the bump chunk up to its use, the others whole. */
            size_t used = c == arena->chunks && !c->dedicated ? arena->used : c->cap;
            c->dirty = used > c->dirty ? used : c->dirty;
        }
        if (!arena->recycle || !cache_put(c))
            chunk_free(c);
        c = next;
    }
    arena->chunks = NULL;
    arena->used = 0;
    arena->recycle = 0;
}

void memdiff_trim(void)
{
    for (;;) {
        lock();
        memdiff__chunk *c = NULL;
        for (int i = 0; i < CACHE_SLOTS && !c; i++) {
            if (cache[i]) {
                c = cache[i];
                cache[i] = NULL;
                cached_bytes -= c->size;
            }
        }
        unlock();
        if (!c)
            return;
        chunk_free(c);
    }
}

size_t memdiff__arena_footprint(const memdiff__arena *arena)
{
    size_t total = 0;
    for (const memdiff__chunk *c = arena->chunks; c; c = c->next)
        total += c->size;
    return total;
}

static int range_cmp(const memdiff__range *a, const memdiff__range *b)
{
    return a->start < b->start ? -1 : a->start > b->start;
}

int memdiff__own_ranges(memdiff__arena *arena, memdiff__range **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    for (;;) {
        size_t n = 0;
        lock();
        for (memdiff__chunk *c = registry; c; c = c->gnext)
            n++;
        unlock();
        /* Room for chunks that appear meanwhile, this array's own among them. */
        size_t cap = n + 8;
        memdiff__range *r = memdiff__arena_alloc(arena, cap * sizeof *r);
        if (!r)
            return MEMDIFF_ENOMEM;
        size_t k = 0;
        int fits = 1;
        lock();
        for (memdiff__chunk *c = registry; c; c = c->gnext) {
            if (k == cap) {
                fits = 0;
                break;
            }
            r[k].start = (uint64_t)(uintptr_t)c;
            r[k].end = r[k].start + c->size;
            k++;
        }
        unlock();
        if (!fits)
            continue;
        /* Insertion sort: the list is short and mostly in reverse address order. */
        for (size_t i = 1; i < k; i++) {
            memdiff__range x = r[i];
            size_t j = i;
            while (j > 0 && range_cmp(&r[j - 1], &x) > 0) {
                r[j] = r[j - 1];
                j--;
            }
            r[j] = x;
        }
        size_t m = 0;
        for (size_t i = 0; i < k; i++) {
            if (m > 0 && r[i].start <= r[m - 1].end)
                r[m - 1].end = MEMDIFF__MAX(r[m - 1].end, r[i].end);
            else
                r[m++] = r[i];
        }
        *out = r;
        *count = m;
        return MEMDIFF_OK;
    }
}
