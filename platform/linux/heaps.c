/*
 * heaps.c - address ranges glibc's malloc owns, found from the region list and from malloc's
 * own headers in process memory (glibc 2.36 malloc/malloc.c and malloc/arena.c).
 *
 *  - The main arena grows the brk heap: the region maps names [heap].
 *  - Every other arena lives in heaps of its own: mmap'd reservations of HEAP_MAX_SIZE, aligned
 *    to HEAP_MAX_SIZE (so that heap_for_ptr() is a mask), made read-write as they grow and
 *    PROT_NONE beyond. Each starts with a heap_info {ar_ptr, prev, size, mprotect_size,
 *    pagesize (2.35+), pad}; the first heap of an arena holds the arena (malloc_state) right
 *    behind it, so ar_ptr == heap + sizeof(heap_info); later heaps link to earlier ones by prev.
 *    HEAP_MAX_SIZE = 2 * DEFAULT_MMAP_THRESHOLD_MAX = 64 MiB on LP64, 1 MiB on 32-bit.
 *  - A request above the mmap threshold gets a mapping of its own (sysmalloc_mmap): a chunk at
 *    the mapping start with prev_size = 0 (or the alignment correction) and size = mapping
 *    length | IS_MMAPPED, so that munmap_chunk() can free [p - prev_size, p + size). The kernel
 *    merges adjacent anonymous mappings, so one region may hold several such chunks, back to
 *    back, or a chunk behind a newer mapping of another kind; the walk tries the region start,
 *    each chunk's end, and the start of each later resident island (a blind spot remains: a
 *    chunk right behind other memory resident up to its first page stays Private).
 * Only resident pages are read (memdiff__linux_read_mem), and what cannot be read is left out:
 * those ranges then classify as Private, which is honest, not wrong.
 *
 * Known limits: glibc.malloc.hugetlb (heaps of 4 huge pages) is not recognised; a 64-bit memdiff
 * takes a process's word size from its address space (any mapping above 4 GiB: 64-bit).
 */
#include <stdio.h>
#include <string.h>

#include "linux.h"

#define IS_MMAPPED 0x2u
#define SIZE_BITS 0x7u /* PREV_INUSE | IS_MMAPPED | NON_MAIN_ARENA */
#define MAX_HEAP_INFO_BYTES 64u /* sizeof(heap_info) is 32 or 48 on LP64, 24 on 32-bit */

typedef struct ctx {
    memdiff__proc *proc;
    memdiff__arena *arena;
    const memdiff__plat_region *regions;
    size_t region_count;
    unsigned word;
    uint64_t heap_max;
    memdiff__plat_heap *heaps; /* scratch, grown */
    size_t count, cap;
} ctx;

static uint64_t word_at(const unsigned char *p, unsigned word)
{
    if (word == 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static int add(ctx *c, uint64_t start, uint64_t end, memdiff__heap_kind kind, uint64_t id,
               const char *label)
{
    memdiff__plat_heap *v =
        memdiff__arena_room(c->proc->scratch, c->heaps, &c->cap, c->count, sizeof *v, 64);
    if (!v)
        return MEMDIFF_ENOMEM;
    c->heaps = v;
    c->heaps[c->count++] = (memdiff__plat_heap){start, end, kind, id, label};
    return MEMDIFF_OK;
}

/* Anonymous private memory malloc could have mapped: unnamed, or named by glibc itself
 * (2.39's glibc.mem.decorate_maps: "[anon: glibc: malloc arena]", "[anon: glibc: malloc]"). */
static int anon_private(const memdiff__plat_region *r)
{
    if (r->inode != 0 || (r->flags & (MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE)))
        return 0;
    if (r->hint == MEMDIFF__HINT_NONE)
        return 1;
    return r->hint == MEMDIFF__HINT_ANON_NAME && strstr(r->name, "glibc: malloc") != NULL;
}

static int read_write(const memdiff__plat_region *r)
{
    return (r->prot & (MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE)) ==
           (MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE);
}

/* The heap header offset is plausible: behind four or five words, within the padded size. */
static int header_offset_ok(const ctx *c, uint64_t off)
{
    return off >= 4u * c->word && off <= MAX_HEAP_INFO_BYTES && off % c->word == 0;
}

/* A heap_info at h, in region i? Then the heap's whole reservation is added as an arena range. A
 * live heap keeps all of its reservation mapped (glibc's arena.c: grown by mprotect, shrunk by a
 * PROT_NONE mmap over its top, unmapped whole): where the contiguous anonymous mappings from h
 * end short of HEAP_MAX_SIZE no heap starts at h, and nothing is read (a presence scan and a
 * read of process memory fewer: the last aligned address of a large mapping). */
static int try_heap(ctx *c, size_t i, uint64_t h, int *found)
{
    unsigned char buf[5 * 8];
    const unsigned w = c->word;
    *found = 0;
    uint64_t end = h + c->heap_max;
    uint64_t reach = c->regions[i].end;
    for (size_t j = i + 1; j < c->region_count && c->regions[j].start == reach &&
                           anon_private(&c->regions[j]) && reach < end;
         j++)
        reach = c->regions[j].end;
    if (reach < end)
        return MEMDIFF_OK;
    if (memdiff__linux_read_mem(c->proc, h, buf, 4u * w) != MEMDIFF_OK)
        return MEMDIFF_OK;
    uint64_t ar_ptr = word_at(buf, w), prev = word_at(buf + w, w);
    uint64_t size = word_at(buf + 2 * w, w), mprotect_size = word_at(buf + 3 * w, w);
    uint64_t mask = c->heap_max - 1;
    if (size == 0 || size > c->heap_max || mprotect_size < size || mprotect_size > c->heap_max)
        return MEMDIFF_OK;
    if (prev == 0) {
        if (ar_ptr < h || !header_offset_ok(c, ar_ptr - h))
            return MEMDIFF_OK; /* a first heap holds its arena right behind heap_info */
    } else {
        if ((prev & mask) != 0 || prev == h || !header_offset_ok(c, ar_ptr & mask))
            return MEMDIFF_OK;
    }
    char label[64];
    snprintf(label, sizeof label, "malloc arena 0x%llx", (unsigned long long)ar_ptr);
    const char *l = memdiff__arena_strndup(c->arena, label, strlen(label));
    if (!l)
        return MEMDIFF_ENOMEM;
    *found = 1;
    return add(c, h, end, MEMDIFF__HEAP_ARENA, ar_ptr, l);
}

/* Where a heap_info can be in read-write region i: at an aligned start, or, when the kernel
 * merged the heap with an anonymous mapping below it, at the last aligned address inside, or
 * HEAP_MAX_SIZE below the end of the PROT_NONE reserve that follows. */
static int find_arenas(ctx *c, size_t i)
{
    const memdiff__plat_region *r = &c->regions[i];
    uint64_t mask = c->heap_max - 1;
    uint64_t cand[3];
    size_t n = 0;
    if ((r->start & mask) == 0)
        cand[n++] = r->start;
    uint64_t last = (r->end - 1) & ~mask;
    if (last > r->start)
        cand[n++] = last;
    if (i + 1 < c->region_count) {
        const memdiff__plat_region *p = &c->regions[i + 1];
        if (p->start == r->end && anon_private(p) && p->prot == 0 && (p->end & mask) == 0 &&
            p->end - c->heap_max > r->start && p->end - c->heap_max < r->end)
            cand[n++] = p->end - c->heap_max;
    }
    for (size_t k = 0; k < n; k++) {
        if ((k > 0 && cand[k] == cand[0]) || (k > 1 && cand[k] == cand[1]))
            continue;
        int found;
        int rc = try_heap(c, i, cand[k], &found);
        if (rc)
            return rc;
    }
    return MEMDIFF_OK;
}

/* The first page of [from, to) whose presence is (present ? present : not present), or to.
 * max_pages = 1 stops the kernel at that page; scanning for holes returns no range for the
 * present pages it passes (pagemap_scan_output is not called for them), the cheaper walk. */
static uint64_t first_page(memdiff__proc *p, uint64_t from, uint64_t to, int present)
{
    uint64_t at;
    if (memdiff__linux_first_page_known(p, from, to, present, &at))
        return at; /* the scan kept for attribution reaches far enough */
    struct page_region vec[1];
    int n = memdiff__linux_scan_presence(p, vec, 1, from, to, !present, 1);
    return n == 1 && vec[0].start >= from && vec[0].start < to ? vec[0].start : to;
}

/* A resident island that may start a chunk behind other memory: its first page, and the length
 * of the hole (absent pages) right before it. */
typedef struct island {
    uint64_t start, hole;
} island;
#define ISLANDS 64u /* islands listed by one scan */

/* The islands that begin in (from, end) after the holes of [from, limit), from one PAGEMAP_SCAN
 * for those holes: asking for absent pages, the kernel outputs nothing for the present ones it
 * passes (the cheaper walk). A hole that reaches limit goes on to the first present page after
 * it (a second scan, which stops there), however far. In order of the hole before them, longest
 * first, address order among equals: a chunk lies right behind a newer mapping (mmap places
 * each below the last), and memory of other kinds (python's object arenas, a buffer written from
 * its start) leaves the tail of its mapping absent, so the chunk behind it follows a longer hole
 * than the islands inside that memory do. *more: where the next list begins (end when there is
 * none to list). */
static size_t islands_from(memdiff__proc *p, uint64_t from, uint64_t limit, uint64_t end,
                           island *out, uint64_t *more)
{
    struct page_region vec[ISLANDS];
    size_t k, count = 0;
    int n = memdiff__linux_holes_kept(p, from, limit, vec, ISLANDS, &limit);
    if (n >= 0) {
        k = (size_t)n; /* a window kept answers: no scan */
        *more = limit;
    } else {
        n = memdiff__linux_scan_presence(p, vec, ISLANDS, from, limit, 1, 0);
        if (n <= 0 || n > (int)ISLANDS) {
            *more = end;
            return 0;
        }
        k = (size_t)n;
        *more = limit;
        if (k == ISLANDS)
            *more = vec[--k].start; /* the last hole may go on: the next list begins with it */
    }
    uint64_t after = from;
    for (size_t i = 0; i < k; i++) {
        if (vec[i].start < after || vec[i].end <= vec[i].start || vec[i].end > limit)
            return 0; /* not ascending holes of [from, limit): nothing to go by */
        after = vec[i].end;
        island x = {vec[i].end, vec[i].end - vec[i].start};
        if (x.start == limit) {
            x.start = limit < end ? first_page(p, limit, end, 1) : end;
            x.hole = x.start - vec[i].start;
            *more = x.start;
            if (x.start == end)
                break;
        }
        size_t j = count++;
        for (; j > 0 && out[j - 1].hole < x.hole; j--)
            out[j] = out[j - 1];
        out[j] = x;
    }
    return count;
}

/* The islands to try after pos, which holds no chunk (pos_absent: its page is absent, so it is
 * the first hole): those of MEMDIFF__LINUX_ISLAND_PAGES pages from the first hole, which must come
 * within that many pages of pos. The kernel walks every page table entry of an island it passes
 * (a few ns each): an island that long (a large resident mapping, which the snapshot reads anyway)
 * ends the search, and a chunk merged above it stays unsplit. Without the scan the search ends
 * (the blind spot in docs/categories.md). */
static size_t islands_after(const ctx *c, uint64_t pos, uint64_t end, int pos_absent,
                            island *out, uint64_t *more)
{
    memdiff__proc *p = c->proc;
    *more = end;
    if (!(p->sources & MEMDIFF__SRC_PAGEMAP_SCAN) || p->pagemap_fd < 0)
        return 0;
    uint64_t window = (uint64_t)MEMDIFF__LINUX_ISLAND_PAGES * p->page_size;
    uint64_t limit = end - pos > window ? pos + window : end;
    uint64_t hole = pos_absent ? pos : first_page(p, pos, limit, 0);
    if (hole == limit)
        return 0;
    limit = end - hole > window ? hole + window : end;
    return islands_from(p, hole, limit, end, out, more);
}

/* Where two chunks came back to back, more usually follow (python's bytes objects of 1 MiB: 20
 * in one mapping); the presence of the next AHEAD_CHUNKS chunks of the last one's size, at most
 * AHEAD_PAGES, is then asked at once (memdiff__linux_presence_ahead: in a snapshot of another
 * process what the walk reads of those pages anyway, else one scan for the holes there) instead
 * of a window of 64 pages at each chunk start. The scan for holes costs the kernel about 2 ns a
 * present page it passes, the window 2 us a call: it pays where chunks are at most 4 MiB (1024
 * pages), and a chain that ends behind the first of them costs at most AHEAD_PAGES of it. */
#define AHEAD_CHUNKS 16u
#define AHEAD_PAGES 4096u

/* Chunks of their own mapping in read-write region r: back to back from its start, and at the
 * start of resident islands after it (islands_after; bounded: a region is not read page by
 * page). */
static int find_chunks(ctx *c, const memdiff__plat_region *r)
{
    const uint64_t ps = c->proc->page_size;
    const unsigned w = c->word;
    island cand[ISLANDS];
    size_t ncand = 0, tried = 0;
    uint64_t more = r->end; /* where the islands listed end */
    uint64_t pos = r->start;
    unsigned misses = 0, chain = 0; /* chain: chunks found back to back just now */
    while (pos < r->end) {
        /* With MALLOC_ALIGNMENT above two words (i386: 16 vs 8) the chunk starts after an
         * alignment correction, recorded in its prev_size. */
        uint64_t offsets[2] = {0, 2u * w};
        size_t noff = w == 4 ? 2 : 1;
        uint64_t len = 0;
        int absent = 0;
        for (size_t k = 0; k < noff && !len; k++) {
            unsigned char buf[16];
            int got = memdiff__linux_read_mem(c->proc, pos + offsets[k], buf, 2u * w);
            /* pos is page aligned (a region start, a chunk's end, an island's start) and the
             * offsets are within its page: not resident says pos's page is absent. */
            absent = got == MEMDIFF__LINUX_NOT_RESIDENT;
            if (got != MEMDIFF_OK)
                break;
            uint64_t prev_size = word_at(buf, w), size = word_at(buf + w, w);
            uint64_t chunk = size & ~(uint64_t)SIZE_BITS;
            if (prev_size != offsets[k] || (size & SIZE_BITS) != IS_MMAPPED || chunk < ps ||
                chunk > r->end - pos || (prev_size + chunk) % ps != 0 ||
                prev_size + chunk > r->end - pos)
                continue;
            len = prev_size + chunk;
        }
        if (len) {
            int rc = add(c, pos, pos + len, MEMDIFF__HEAP_MMAP_CHUNK, pos, "malloc mmap chunk");
            if (rc)
                return rc;
            pos += len;
            ncand = tried = 0; /* the islands listed lie below the chunk's end, or after it */
            more = r->end;
            if (++chain >= 2 && len <= (uint64_t)MEMDIFF__LINUX_ISLAND_PAGES * ps && pos < r->end)
                memdiff__linux_presence_ahead(
                    c->proc, pos,
                    MEMDIFF__MIN((r->end - pos) / ps, MEMDIFF__MIN(AHEAD_CHUNKS * len / ps,
                                                                   (uint64_t)AHEAD_PAGES)));
            continue;
        }
        chain = 0;
        if (++misses > MEMDIFF__LINUX_CHUNK_MISSES)
            break;
        if (tried == ncand) {
            /* none listed (a chain of chunks ended at pos), or all tried: the next list */
            int first = ncand == 0;
            tried = 0;
            ncand = first ? islands_after(c, pos, r->end, absent, cand, &more)
                   : more < r->end ? islands_after(c, more, r->end, 0, cand, &more)
                                   : 0;
            if (ncand == 0)
                break;
        }
        pos = cand[tried++].start;
    }
    return MEMDIFF_OK;
}

static int overlaps_found(const ctx *c, size_t upto, uint64_t start, uint64_t end)
{
    for (size_t k = 0; k < upto; k++)
        if (c->heaps[k].start < end && start < c->heaps[k].end)
            return 1;
    return 0;
}

int memdiff__plat_heaps(memdiff__proc *proc, memdiff__arena *arena,
                        const memdiff__plat_region *regions, size_t region_count,
                        memdiff__plat_heap **out, size_t *count)
{
    ctx c;
    memset(&c, 0, sizeof c);
    c.proc = proc;
    c.arena = arena;
    c.regions = regions;
    c.region_count = region_count;
    *out = NULL;
    *count = 0;
    c.word = 4;
    for (size_t i = 0; i < region_count; i++)
        if (regions[i].end > UINT64_C(0x100000000))
            c.word = 8;
    c.heap_max = c.word == 8 ? UINT64_C(64) << 20 : UINT64_C(1) << 20;

    int rc = MEMDIFF_OK;
    for (size_t i = 0; !rc && i < region_count; i++)
        if (regions[i].hint == MEMDIFF__HINT_BRK_HEAP)
            rc = add(&c, regions[i].start, regions[i].end, MEMDIFF__HEAP_BRK, regions[i].start,
                     "[heap]");
    for (size_t i = 0; !rc && i < region_count; i++)
        if (anon_private(&regions[i]) && read_write(&regions[i]))
            rc = find_arenas(&c, i);
    /* Chunks lie inside their region, so one in a region a module's segments cover (its .bss)
     * would change nothing: the image outranks a heap (docs/categories.md). Such a region is
     * not read. Arenas are looked for everywhere: a heap reaches past its region. */
    size_t claimed = c.count;
    for (size_t i = 0; !rc && i < region_count; i++) {
        const memdiff__plat_region *r = &regions[i];
        if (anon_private(r) && read_write(r) && !overlaps_found(&c, claimed, r->start, r->end) &&
            !memdiff__linux_module_covers(proc, r->start, r->end))
            rc = find_chunks(&c, r);
    }
    if (rc)
        return rc;

    /* Ascending, and none overlapping the one before (a stale heap_info in reused memory could
     * claim what a live one does: the first found stays). */
    memdiff__plat_heap *h = c.heaps;
    for (size_t i = 1; i < c.count; i++) {
        memdiff__plat_heap x = h[i];
        size_t j = i;
        while (j > 0 && h[j - 1].start > x.start) {
            h[j] = h[j - 1];
            j--;
        }
        h[j] = x;
    }
    memdiff__plat_heap *res = memdiff__arena_alloc(arena, (c.count ? c.count : 1) * sizeof *res);
    if (!res)
        return MEMDIFF_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < c.count; i++) {
        if (n > 0 && h[i].start < res[n - 1].end)
            continue;
        res[n++] = h[i];
    }
    *out = res;
    *count = n;
    return MEMDIFF_OK;
}
