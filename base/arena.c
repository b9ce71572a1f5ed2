/*
 * arena.c - memdiff's own storage: bump arenas over OS pages, accounted process-wide.
 *
 * Why not malloc: a snapshot must not disturb the heap it measures, and memdiff's storage must be
 * known so that it can be reported as Own and kept out of every total. Chunks below
 * OWN_MAPPING_MIN are carved from a few large reservations of address space, so that the OS's
 * list of mappings, which every snapshot reads, does not grow with the number of live snapshots
 * (one mapping each made 3,000 live snapshots cost 510 ms and 19 GB for the next one); larger
 * chunks are mappings of their own, on one global list. Both, and the count of bytes in chunks,
 * are guarded by one spinlock (base/lock.c): holders never allocate or block.
 */
#include <stdatomic.h>
#include <string.h>

#include "base/arena.h"
#include "base/bits.h"
#include "base/error.h"
#include "base/lock.h"
#include "memdiff.h"
#include "platform/os.h"

/* A bump chunk is 64 KiB mapped, header included (64 KiB of data would map 68 KiB): a small
 * process's snapshot fits in one. */
#define CHUNK_BYTES ((size_t)64 * 1024)
#define CHUNK_MIN (CHUNK_BYTES - offsetof(memdiff__chunk, data))
#define DEDICATED_MIN ((size_t)16 * 1024) /* larger requests get a chunk of their own */
#define ALIGN 16u

typedef struct reservation reservation;

struct memdiff__chunk {
    memdiff__chunk *next;               /* in the arena, newest first */
    memdiff__chunk *gnext, *gprev;      /* a mapping of its own: in the process-wide registry */
    reservation *home;                  /* the reservation it was carved from, or NULL */
    size_t size;                        /* bytes mapped, header included */
    size_t cap;                         /* usable bytes after the header */
    int dedicated;                      /* holds one block (from memdiff__arena_grow) */
    int roomy;                          /* from memdiff__arena_reserve: large blocks too */
    size_t dirty;                       /* data bytes an earlier use may have written (kept) */
    _Alignas(16) unsigned char data[];
};

/* Chunks from OWN_MAPPING_MIN up are mappings of their own (memdiff__os_alloc): they may ask
 * for huge pages and grow by moving their pages (memdiff__os_grow). A snapshot of a small
 * process has none. */
#define OWN_MAPPING_MIN ((size_t)2 << 20)

/* Address space reserved for smaller chunks (memdiff__os_reserve): RESERVATION_MIN bytes first,
 * then each as large as all before it (n bytes of chunks: O(log n) reservations). A bitmap of
 * carved pages follows the header in the first pages, which stay committed; other pages are
 * committed as chunks are carved and given back when they are freed. */
#define RESERVATION_MIN ((size_t)64 << 20)

struct reservation {
    reservation *next;   /* oldest first: chunks are carved from the oldest with room */
    size_t size;         /* bytes reserved */
    size_t pages;        /* pages reserved */
    size_t head;         /* pages of the header and bitmap */
    size_t hint;         /* no page below it is free */
    size_t used;         /* pages carved out, the header's included */
    uint64_t bits[];     /* bit k: page k is carved out */
};

static memdiff__chunk *registry; /* chunks that are mappings of their own */
static reservation *reservations;
static size_t reserved_bytes;
static atomic_size_t chunk_bytes; /* bytes of all chunks: memdiff__own_bytes() */

/* Scratch kept between snapshots: a recycling arena (a snapshot's storage, its scratch, a
 * bracket's) hands its chunks here when released and the next one takes them, instead of
 * mapping, faulting in and unmapping again (6% of a standard snapshot of 1 GiB, 18% of one of
 * 64 MiB). Growing arrays start in and grow into kept chunks of up to GROWN_SLACK times the size
 * asked (grow_from_cache, cache_take). At most CACHE_SLOTS chunks and CACHE_MAX bytes, Own and
 * registered until memdiff_trim(); guarded by the registry's lock. */
#define CACHE_SLOTS 16
#define CACHE_MAX ((size_t)8 << 20)
static memdiff__chunk *cache[CACHE_SLOTS];
static size_t cached_bytes;
static atomic_long fail_countdown;

size_t memdiff__own_bytes(void)
{
    return atomic_load(&chunk_bytes);
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

/* 0, or -1 when this thread is inside the lock already (memdiff__lock()). */
static int registry_add(memdiff__chunk *c)
{
    if (memdiff__lock())
        return -1;
    c->gprev = NULL;
    c->gnext = registry;
    if (registry)
        registry->gprev = c;
    registry = c;
    memdiff__unlock();
    return 0;
}

static int registry_remove(memdiff__chunk *c)
{
    if (memdiff__lock())
        return -1;
    if (c->gprev)
        c->gprev->gnext = c->gnext;
    else
        registry = c->gnext;
    if (c->gnext)
        c->gnext->gprev = c->gprev;
    memdiff__unlock();
    return 0;
}

/* Marks (on) or clears bits [from, from + n) of a reservation's bitmap. */
static void mark(uint64_t *bits, size_t from, size_t n, int on)
{
    for (size_t k = from; k < from + n;) {
        size_t w = k / 64, b = k % 64, len = MEMDIFF__MIN(64 - b, from + n - k);
        uint64_t m = (len == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << len) - 1)) << b;
        bits[w] = on ? bits[w] | m : bits[w] & ~m;
        k += len;
    }
}

/* The first page of n free ones in r, marked carved out; (size_t)-1 when r has none. First fit
 * from the lowest free page: chunks stay packed at the reservation's start. Under the lock. */
static size_t carve(reservation *r, size_t n)
{
    size_t first = (size_t)memdiff__find_bit(r->bits, r->hint, r->pages, 0);
    r->hint = first;
    for (size_t at = first; at + n <= r->pages;) {
        size_t busy = (size_t)memdiff__find_bit(r->bits, at, at + n, 1);
        if (busy == at + n) {
            mark(r->bits, at, n, 1);
            r->used += n;
            if (at == first)
                r->hint = at + n;
            return at;
        }
        at = (size_t)memdiff__find_bit(r->bits, busy, r->pages, 0);
    }
    return (size_t)-1;
}

/* A new reservation with room for a chunk of size bytes, linked last; NULL on failure. One as
 * large as all before, or RESERVATION_MIN where the OS refuses that much (an address-space
 * limit, a 32-bit process). */
static reservation *reserve_more(size_t size)
{
    size_t page = memdiff__os_page_size();
    if (memdiff__lock())
        return NULL;
    size_t bytes = MEMDIFF__MAX(RESERVATION_MIN, reserved_bytes);
    memdiff__unlock();
    reservation *r = memdiff__os_reserve(bytes);
    if (!r && bytes > RESERVATION_MIN)
        r = memdiff__os_reserve(bytes = RESERVATION_MIN);
    if (!r)
        return NULL;
    size_t pages = bytes / page;
    size_t head = (offsetof(reservation, bits) + (pages + 63) / 64 * 8 + page - 1) / page;
    if (size > (pages - head) * page) {
        memdiff__os_unreserve(r, bytes);
        return NULL;
    }
    if (memdiff__os_commit(r, head * page)) {
        memdiff__os_unreserve(r, bytes);
        return NULL;
    }
    r->next = NULL;
    r->size = bytes;
    r->pages = pages;
    r->head = head;
    mark(r->bits, 0, head, 1);
    r->hint = head;
    r->used = head;
    if (memdiff__lock()) {
        memdiff__os_unreserve(r, bytes);
        return NULL;
    }
    reservation **link = &reservations;
    while (*link)
        link = &(*link)->next;
    *link = r;
    reserved_bytes += bytes;
    memdiff__unlock();
    return r;
}

/* size bytes (a multiple of the page size, below OWN_MAPPING_MIN) carved from a reservation and
 * committed, zeroed; NULL on failure (detail set when this thread is inside the lock). */
static memdiff__chunk *carve_chunk(size_t size)
{
    size_t page = memdiff__os_page_size(), n = size / page;
    for (int tries = 0; tries < 2; tries++) {
        if (memdiff__lock())
            return NULL;
        reservation *home = NULL;
        size_t at = (size_t)-1;
        for (reservation *r = reservations; r && at == (size_t)-1; r = r->next) {
            at = carve(r, n);
            home = r;
        }
        memdiff__unlock();
        if (at != (size_t)-1) {
            memdiff__chunk *c = (memdiff__chunk *)((unsigned char *)home + at * page);
            if (memdiff__os_commit(c, size) == 0) {
                c->home = home;
                return c;
            }
            if (memdiff__lock() == 0) {
                mark(home->bits, at, n, 0);
                home->used -= n;
                home->hint = MEMDIFF__MIN(home->hint, at);
                memdiff__unlock();
            }
            return NULL;
        }
        if (tries == 0 && !reserve_more(size))
            return NULL;
    }
    return NULL;
}

/* Grows carved chunk c to size bytes in place, when the pages after it are free in its
 * reservation: no copy, and the pages it gains read zero. 0, or -1 when they are not free. */
static int extend_carved(memdiff__chunk *c, size_t size)
{
    reservation *home = c->home;
    size_t page = memdiff__os_page_size();
    size_t end = (size_t)((unsigned char *)c - (unsigned char *)home) / page + c->size / page;
    size_t n = (size - c->size) / page;
    if (end + n > home->pages || memdiff__lock())
        return -1;
    int free = (size_t)memdiff__find_bit(home->bits, end, end + n, 1) == end + n;
    if (free) {
        mark(home->bits, end, n, 1);
        home->used += n;
    }
    memdiff__unlock();
    if (!free)
        return -1;
    if (memdiff__os_commit((unsigned char *)home + end * page, n * page) == 0)
        return 0;
    if (memdiff__lock() == 0) {
        mark(home->bits, end, n, 0);
        home->used -= n;
        home->hint = MEMDIFF__MIN(home->hint, end);
        memdiff__unlock();
    }
    return -1;
}

/* Gives a carved chunk's pages back to the OS and its place back to its reservation. */
static void uncarve(memdiff__chunk *c, size_t size)
{
    reservation *home = c->home;
    size_t page = memdiff__os_page_size();
    size_t at = (size_t)((unsigned char *)c - (unsigned char *)home) / page, n = size / page;
    memdiff__os_decommit(c, size); /* c's header goes too */
    if (memdiff__lock())
        return; /* reentered from a signal handler: the place is lost, nothing is broken */
    mark(home->bits, at, n, 0);
    home->used -= n;
    home->hint = MEMDIFF__MIN(home->hint, at);
    memdiff__unlock();
}

/* A kept chunk for a mapping of size bytes (cap usable), out of the cache; NULL when none. Below
 * 1 MiB one of that very size (a snapshot holds no more than it would have mapped), or for a
 * growing array up to GROWN_SLACK times that size (the size it grows to; else it would map its
 * first chunk anew every time); above, the smallest with room and not twice as much. */
#define CACHE_EXACT_BELOW ((size_t)1 << 20)
#define GROWN_SLACK 4u
static memdiff__chunk *cache_take(size_t size, size_t cap, int growable)
{
    if (memdiff__lock())
        return NULL;
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
    memdiff__unlock();
    return c;
}

/* Keeps c (still registered) for a later cache_take; 0 when there is no room for it. */
static int cache_put(memdiff__chunk *c)
{
    int kept = 0;
    if (memdiff__lock())
        return 0;
    for (int i = 0; i < CACHE_SLOTS && !kept; i++) {
        if (!cache[i] && cached_bytes + c->size <= CACHE_MAX) {
            cache[i] = c;
            cached_bytes += c->size;
            kept = 1;
        }
    }
    memdiff__unlock();
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
    if (memdiff__lock_reentered())
        return NULL;
    if (size < OWN_MAPPING_MIN)
        c = carve_chunk(size);
    /* No reservation to carve from (the OS refused the address space): a mapping of its own. */
    if (!c && !memdiff__lock_reentered()) {
        c = memdiff__os_alloc(size);
        if (c) {
            c->home = NULL;
            if (registry_add(c)) {
                memdiff__os_free(c, size);
                return NULL;
            }
        }
    }
    if (!c) {
        if (!memdiff__lock_reentered())
            memdiff__set_error(MEMDIFF_ENOMEM, "arena: cannot map %zu bytes", size);
        return NULL;
    }
    c->size = size;
    c->cap = size - header;
    c->dedicated = dedicated;
    c->roomy = 0;
    c->dirty = 0;
    atomic_fetch_add(&chunk_bytes, size);
    return c;
}

static void chunk_free(memdiff__chunk *c)
{
    size_t size = c->size;
    if (c->home) {
        uncarve(c, size);
    } else {
        if (registry_remove(c))
            return; /* reentered from a signal handler: left mapped and listed, not broken */
        memdiff__os_free(c, size);
    }
    atomic_fetch_sub(&chunk_bytes, size);
}

/* Grows dedicated chunk c (reached through *link) to new_size bytes without a copy: a carved
 * chunk into the free pages after it, a mapping of its own by moving its pages
 * (memdiff__os_grow; out of the registry while it moves, where memdiff__own_ranges() misses it
 * but the OS's name for it does not). NULL when it cannot (c unchanged: the caller copies). */
static void *grow_chunk(memdiff__chunk **link, memdiff__chunk *c, size_t new_size)
{
    size_t page = memdiff__os_page_size();
    size_t header = offsetof(memdiff__chunk, data);
    if (new_size > SIZE_MAX - header - page)
        return NULL;
    size_t size = (header + new_size + page - 1) / page * page;
    if (c->home) {
        /* A carved chunk grows where it is, into free pages after it, or not at all (the caller
         * then copies it into a new chunk, of its own mapping from OWN_MAPPING_MIN up). */
        if (size >= OWN_MAPPING_MIN || extend_carved(c, size))
            return NULL;
        atomic_fetch_add(&chunk_bytes, size - c->size);
        c->size = size;
        c->cap = size - header;
        return c->data;
    }
    if (registry_remove(c))
        return NULL;
    size_t old = c->size;
    memdiff__chunk *q = memdiff__os_grow(c, old, size);
    if (!q)
        q = c;
    else
        q->size = size;
    q->cap = q->size - header;
    (void)registry_add(q); /* cannot fail: registry_remove() just took the lock */
    if (q == c)
        return NULL;
    atomic_fetch_add(&chunk_bytes, size - old);
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
        if (memdiff__lock())
            return;
        memdiff__chunk *c = NULL;
        for (int i = 0; i < CACHE_SLOTS && !c; i++) {
            if (cache[i]) {
                c = cache[i];
                cache[i] = NULL;
                cached_bytes -= c->size;
            }
        }
        memdiff__unlock();
        if (!c)
            break;
        chunk_free(c);
    }
    /* Reservations with no chunk left go too (one at a time: unmapping is not done under the
     * lock). What is carved out of the others is in use. */
    for (;;) {
        if (memdiff__lock())
            return;
        reservation **link = &reservations;
        while (*link && (*link)->used > (*link)->head)
            link = &(*link)->next;
        reservation *r = *link;
        if (r) {
            *link = r->next;
            reserved_bytes -= r->size;
        }
        memdiff__unlock();
        if (!r)
            return;
        memdiff__os_unreserve(r, r->size);
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
        if (memdiff__lock())
            return MEMDIFF_EBUSY;
        for (memdiff__chunk *c = registry; c; c = c->gnext)
            n++;
        for (reservation *v = reservations; v; v = v->next)
            n++;
        memdiff__unlock();
        /* Room for chunks and reservations that appear meanwhile, this array's own among them. */
        size_t cap = n + 8;
        memdiff__range *r = memdiff__arena_alloc(arena, cap * sizeof *r);
        if (!r)
            return MEMDIFF_ENOMEM;
        size_t k = 0;
        if (memdiff__lock())
            return MEMDIFF_EBUSY;
        for (memdiff__chunk *c = registry; c && k <= cap; c = c->gnext, k++)
            if (k < cap)
                r[k] = (memdiff__range){(uintptr_t)c, (uint64_t)(uintptr_t)c + c->size};
        for (reservation *v = reservations; v && k <= cap; v = v->next, k++)
            if (k < cap)
                r[k] = (memdiff__range){(uintptr_t)v, (uint64_t)(uintptr_t)v + v->size};
        memdiff__unlock();
        if (k > cap)
            continue;
        /* Insertion sort: the list is short (reservations, chunks of OWN_MAPPING_MIN up). */
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
