/*
 * presence.c - which pages attribution may read, and reading them (memdiff__linux_read_mem).
 *
 * Attribution (modules, heaps) reads a few words of many small regions, each only when its page
 * is present: /proc/PID/mem reads with FOLL_FORCE and would fault a page in, changing what a
 * snapshot sees. Presence comes from PAGEMAP_SCAN (scan.c) over windows of mappings, kept for
 * the whole pass (one ioctl instead of a pread each), else from a pread of pagemap. The walk
 * reads those pages too: in a fast snapshot of another process the windows ask its categories
 * and it takes their ranges (window.c), at standard and deep they are read from pagemap itself
 * and it takes their entries (pagemap.c), so that no page is read twice.
 *
 * Owns struct memdiff__linux_presence (proc->presence): the windows and their ranges, the
 * pagemap entries kept, emptied when the region list is read again.
 */
#include <string.h>

#include "walk.h"

/* Attribution reads a few words of many small regions (ELF headers, malloc's headers), each only
 * when its page is present; one scan from the first page asked over PRESENCE_PAGES of mappings
 * (the region's own, then the regions behind it) answers most of the questions that follow. The
 * scan asks presence alone: the page table, no struct page. Every window scanned is kept for the
 * snapshot (modules ask, then heaps ask again from the bottom of the address space): the
 * presence state holds the present ranges of all of them by address, and the windows covered. */
#define PRESENCE_PAGES 1024u
#define PRESENCE_VEC 256u
/* A region with more than PRESENCE_PAGES pages from the page asked is scanned PRESENCE_ALONE pages
 * at a time: the questions there are few and far apart (a heap_info at a 64 MiB boundary, the
 * chunk header at the start), and each present page a scan passes costs the kernel about 6 ns:
 * 1024 resident pages 8 us a scan, 64 pages 2.6 us, 4 pages 2.2 us (PVM guest, 2026-11-26). */
#define PRESENCE_ALONE 64u

/* The first of ascending ranges r[0..n) that ends above addr (n when none). */
static size_t ending_above(const struct page_region *r, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The window holding addr: its index in s->windows, or window_count when none does. */
static size_t window_at(const struct memdiff__linux_presence *s, uint64_t addr)
{
    size_t w = ending_above(s->windows, s->window_count, addr);
    return w < s->window_count && s->windows[w].start <= addr ? w : s->window_count;
}

/* The first of the kept ranges that ends after addr (range_count when none). */
static size_t presence_at(const struct memdiff__linux_presence *s, uint64_t addr)
{
    return ending_above(s->ranges, s->range_count, addr);
}

static void reverse_ranges(struct page_region *r, size_t n)
{
    for (size_t i = 0; i < n / 2; i++) {
        struct page_region t = r[i];
        r[i] = r[n - 1 - i];
        r[n - 1 - i] = t;
    }
}

/* Whether a window from addr can be scanned: the scan there, not refused, a region list to
 * bound it, and an address the kernel takes. */
static int can_scan(const memdiff__proc *p, uint64_t addr)
{
    return (p->sources & MEMDIFF__SRC_PAGEMAP_SCAN) && !p->scan_refused && p->regions &&
           p->pagemap_fd >= 0 && !(addr >> 63);
}

/* Files window [start, next), not overlapping any kept, whose present ranges are the fresh[0..n)
 * kept behind all others (s->ranges + s->range_count): rotates them into address order. Returns
 * the window's index. */
static size_t file_window(struct memdiff__linux_presence *s, uint64_t start, uint64_t next,
                          size_t n, uint64_t asked)
{
    const size_t w = ending_above(s->windows, s->window_count, start);
    struct page_region *fresh = s->ranges + s->range_count;
    /* Kept ranges from at on lie above the window: rotate the new ones in front of them. */
    const size_t at = presence_at(s, start), total = s->range_count + n;
    reverse_ranges(s->ranges + at, s->range_count - at);
    reverse_ranges(fresh, n);
    reverse_ranges(s->ranges + at, total - at);
    s->range_count = total;
    memmove(s->windows + w + 1, s->windows + w, (s->window_count - w) * sizeof *s->windows);
    s->windows[w] = (struct page_region){start, next, asked};
    s->window_count++;
    return w;
}

/* Room for n more ranges and one more window; 0 when there is none. */
static int window_room(memdiff__proc *p, struct memdiff__linux_presence *s, size_t n)
{
    struct page_region *pv = memdiff__arena_room_raw(p->scratch, s->ranges, &s->range_cap,
                                                     s->range_count + n - 1, sizeof *pv, n);
    if (!pv)
        return 0;
    /* one doubling gives the room: range_count <= range_cap, n <= range_cap */
    s->ranges = pv;
    struct page_region *wv = memdiff__arena_room_raw(p->scratch, s->windows, &s->window_cap,
                                                     s->window_count, sizeof *wv, 16);
    if (!wv)
        return 0;
    s->windows = wv;
    return 1;
}

/* Reads window [start, end) from pagemap (proc->presence_pagemap): the entries of its mappings,
 * a pread for each run of them back to back, kept as spans for the walk; the window's present
 * ranges filed with it (categories PAGE_IS_PRESENT: presence alone, no walk window). Where the
 * spans or the ranges run out the window ends short (no pread once the ranges are full: its
 * entries could file none). Its index, or window_count when nothing could be read (the caller
 * then scans). Room for PRESENCE_VEC ranges is there. */
static size_t pagemap_window(memdiff__proc *p, struct memdiff__linux_presence *s, uint64_t start,
                             uint64_t end)
{
    const unsigned shift = p->page_shift;
    struct page_region *fresh = s->ranges + s->range_count;
    size_t m = 0, j = memdiff__linux_region_holding(p, start, start);
    uint64_t wend = start;
    while (j < p->region_count && p->regions[j].start < end && m < PRESENCE_VEC &&
           s->span_count < MEMDIFF__LINUX_KEPT_SPANS) {
        const uint64_t a = MEMDIFF__MAX(p->regions[j].start, start);
        uint64_t b = p->regions[j++].end;
        while (j < p->region_count && p->regions[j].start == b && b < end)
            b = p->regions[j++].end;
        b = MEMDIFF__MIN(b, end);
        size_t n = (size_t)((b - a) >> shift);
        uint64_t *e = memdiff__arena_alloc_raw(p->scratch, n * sizeof *e);
        if (!e || memdiff__linux_pread_full(p->pagemap_fd, e, n * sizeof *e, (a >> shift) * 8) !=
                      (ssize_t)(n * sizeof *e))
            break; /* what the walk reads there shows why */
        size_t i = 0;
        while (i < n && m < PRESENCE_VEC) {
            size_t q = i;
            while (q < n && (e[q] & MEMDIFF__PM_PRESENT))
                q++;
            if (q > i)
                fresh[m++] = (struct page_region){a + ((uint64_t)i << shift),
                                                  a + ((uint64_t)q << shift), PAGE_IS_PRESENT};
            while (q < n && !(e[q] & MEMDIFF__PM_PRESENT))
                q++;
            i = q;
        }
        s->spans[s->span_count++] = (struct memdiff__linux_kept_span){a >> shift, i, e};
        wend = a + ((uint64_t)i << shift);
        if (i < n)
            break; /* the ranges filled: the window ends where they do */
    }
    return wend == start ? s->window_count : file_window(s, start, wend, m, PAGE_IS_PRESENT);
}

/* Scans window [start, end) for the pages present or swapped, asking categories ret, and files
 * it with its ranges (short of end where the vector filled). Its index, or window_count when the
 * scan failed. Room for PRESENCE_VEC ranges is there. */
static size_t scan_window(memdiff__proc *p, struct memdiff__linux_presence *s, uint64_t start,
                          uint64_t end, uint64_t ret)
{
    uint64_t next;
    int n = memdiff__linux_scan_into(p, s->ranges + s->range_count, PRESENCE_VEC, start, end,
                                     ret & (PAGE_IS_PRESENT | PAGE_IS_SWAPPED), ret, 0, &next);
    return n < 0 ? s->window_count : file_window(s, start, next, (size_t)n, ret);
}

/* Scans a new window from addr's page (not covered by any), up to the next window kept, and
 * files its ranges and itself in address order. Returns its index, or window_count when it
 * cannot. */
static size_t presence_scan(memdiff__proc *p, struct memdiff__linux_presence *s, uint64_t addr)
{
    if (!can_scan(p, addr))
        return s->window_count;
    const unsigned shift = p->page_shift;
    const uint64_t start = addr >> shift << shift;
    size_t lo = memdiff__linux_region_holding(p, start, start);
    if (lo == p->region_count)
        return s->window_count;
    uint64_t pages = 0, end = start;
    int alone = 0; /* a window of PRESENCE_ALONE pages inside one large region */
    for (size_t j = lo; j < p->region_count && !(p->regions[j].start >> 63); j++) {
        uint64_t from = MEMDIFF__MAX(p->regions[j].start, start);
        uint64_t rp = (p->regions[j].end - from) >> shift;
        if (pages + rp > PRESENCE_PAGES) {
            if (j == lo) {
                end = from + ((uint64_t)PRESENCE_ALONE << shift);
                alone = 1;
            }
            break;
        }
        pages += rp;
        end = p->regions[j].end;
    }
    /* start is in no window: the first one above it bounds this one */
    const size_t w = ending_above(s->windows, s->window_count, start);
    if (w < s->window_count && s->windows[w].start < end)
        end = s->windows[w].start; /* known from there on */
    if (!window_room(p, s, PRESENCE_VEC))
        return s->window_count;
    if (p->presence_pagemap && !alone) {
        size_t read = pagemap_window(p, s, start, end);
        if (read < s->window_count)
            return read;
    }
    /* A window inside a large region is not the walk's: it reads such a region on its own,
     * split where attribution split it. */
    return scan_window(p, s, start, end,
                       p->presence_walk && !alone ? MEMDIFF__LINUX_PRESENCE_WALK : PAGE_IS_PRESENT);
}

/* The process's presence state, emptied when the region list was read again (a new pass);
 * NULL when it cannot be had. */
static struct memdiff__linux_presence *presence_state(memdiff__proc *p)
{
    struct memdiff__linux_presence *s = p->presence;
    if (!s && !(s = p->presence = memdiff__arena_alloc(p->scratch, sizeof *s)))
        return NULL;
    if (s->regions_read != p->regions_read) {
        s->range_count = s->window_count = s->span_count = 0;
        s->regions_read = p->regions_read;
    }
    return s;
}

/* The window covering addr, scanned now if none does; window_count when presence is unknown. */
static size_t presence_covers(memdiff__proc *p, struct memdiff__linux_presence *s, uint64_t addr)
{
    size_t w = window_at(s, addr);
    return w < s->window_count ? w : presence_scan(p, s, addr);
}

int memdiff__linux_page_present(memdiff__proc *proc, uint64_t addr)
{
    struct memdiff__linux_presence *s = presence_state(proc);
    if (!s || presence_covers(proc, s, addr) == s->window_count)
        return -1;
    size_t i = presence_at(s, addr);
    return i < s->range_count && s->ranges[i].start <= addr &&
           (s->ranges[i].categories & PAGE_IS_PRESENT);
}

void memdiff__linux_presence_ahead(memdiff__proc *proc, uint64_t addr, uint64_t pages)
{
    struct memdiff__linux_presence *s = presence_state(proc);
    if (!s || window_at(s, addr) < s->window_count || !can_scan(proc, addr))
        return;
    const uint64_t start = addr >> proc->page_shift << proc->page_shift;
    size_t r = memdiff__linux_region_holding(proc, start, start);
    if (r == proc->region_count || pages > (proc->regions[r].end - start) >> proc->page_shift)
        return; /* past its region: holes of the gap behind it are not told */
    uint64_t end = start + (pages << proc->page_shift);
    const size_t w = ending_above(s->windows, s->window_count, start);
    if (w < s->window_count && s->windows[w].start < end)
        end = s->windows[w].start;
    if (proc->presence_pagemap &&
        !memdiff__linux_lanes_may(proc, proc->regions[r].start, proc->regions[r].end)) {
        /* The walk reads these entries anyway, on its own thread (no lanes in this mapping):
         * read here, it takes them, and the pages cost no scan. */
        if (window_room(proc, s, PRESENCE_VEC) &&
            pagemap_window(proc, s, start, end) < s->window_count)
            return;
    }
    if (proc->presence_walk &&
        memdiff__linux_region_file_rule(proc, start, end) == MEMDIFF__FILE_NEVER) {
        /* The fast walk scans these pages anyway, with the categories it asks of private
         * anonymous memory (no file bit, which would cost the kernel each page's struct page):
         * asked them here, the window is the walk's too, and the pages are scanned once. */
        if (window_room(proc, s, PRESENCE_VEC))
            scan_window(proc, s, start, end, MEMDIFF__LINUX_PRESENCE_WALK_ANON);
        return;
    }
    struct page_region holes[PRESENCE_VEC];
    int n = memdiff__linux_scan_presence(proc, holes, PRESENCE_VEC, start, end, 1, 0);
    if (n < 0 || n > (int)PRESENCE_VEC || !window_room(proc, s, PRESENCE_VEC + 1))
        return;
    size_t k = (size_t)n;
    if (k == PRESENCE_VEC)
        end = holes[--k].start; /* the last hole may go on: the window ends where it begins */
    /* The present ranges are what lies between the holes. */
    struct page_region *fresh = s->ranges + s->range_count;
    size_t m = 0;
    uint64_t cur = start;
    for (size_t i = 0; i < k; i++) {
        if (holes[i].start < cur || holes[i].end <= holes[i].start || holes[i].end > end)
            return; /* not ascending holes of the window: nothing kept */
        if (holes[i].start > cur)
            fresh[m++] = (struct page_region){cur, holes[i].start, PAGE_IS_PRESENT};
        cur = holes[i].end;
    }
    if (cur < end)
        fresh[m++] = (struct page_region){cur, end, PAGE_IS_PRESENT};
    file_window(s, start, end, m, PAGE_IS_PRESENT);
}

int memdiff__linux_kept_pagemap(memdiff__proc *proc, uint64_t first, size_t n, uint64_t *pm)
{
    const struct memdiff__linux_presence *s = proc->presence;
    if (!s || s->regions_read != proc->regions_read)
        return 0;
    for (size_t k = 0; k < s->span_count; k++) {
        const struct memdiff__linux_kept_span *x = &s->spans[k];
        if (first >= x->first && first + n <= x->first + x->count) {
            memcpy(pm, x->entries + (first - x->first), n * sizeof *pm);
            return 1;
        }
    }
    return 0;
}

uint64_t memdiff__linux_kept_after(memdiff__proc *proc, uint64_t first)
{
    const struct memdiff__linux_presence *s = proc->presence;
    uint64_t at = UINT64_MAX;
    if (s && s->regions_read == proc->regions_read)
        for (size_t k = 0; k < s->span_count; k++)
            if (s->spans[k].first > first && s->spans[k].first < at)
                at = s->spans[k].first;
    return at;
}

int memdiff__linux_first_page_known(memdiff__proc *proc, uint64_t from, uint64_t to, int present,
                                    uint64_t *at)
{
    if (from >= to) {
        *at = to;
        return 1;
    }
    struct memdiff__linux_presence *s = presence_state(proc);
    if (!s)
        return 0;
    size_t w = presence_covers(proc, s, from);
    if (w == s->window_count)
        return 0;
    const uint64_t hi = s->windows[w].end;
    uint64_t cur = from;
    size_t i = presence_at(s, from);
    if (present) {
        /* the first present range (swapped ones are holes) */
        while (i < s->range_count && !(s->ranges[i].categories & PAGE_IS_PRESENT))
            i++;
        cur = i < s->range_count ? MEMDIFF__MAX(s->ranges[i].start, from) : hi;
    } else {
        /* the first hole: skip present ranges that cover cur */
        for (; i < s->range_count && s->ranges[i].start <= cur &&
               (s->ranges[i].categories & PAGE_IS_PRESENT);
             i++)
            cur = MEMDIFF__MAX(cur, s->ranges[i].end);
    }
    if (cur < MEMDIFF__MIN(to, hi)) {
        *at = cur;
        return 1;
    }
    if (to <= hi) {
        *at = to;
        return 1;
    }
    return 0;
}

/* Whether a window was asked what the fast walk asks of the pages it covers. */
static int walks(const struct page_region *window)
{
    return window->categories == MEMDIFF__LINUX_PRESENCE_WALK ||
           window->categories == MEMDIFF__LINUX_PRESENCE_WALK_ANON;
}

int memdiff__linux_presence_walk(memdiff__proc *proc, uint64_t from, struct page_region *vec,
                                 size_t cap, uint64_t *next)
{
    struct memdiff__linux_presence *s = proc->presence;
    if (!s || s->regions_read != proc->regions_read)
        return -1;
    size_t w = window_at(s, from);
    if (w == s->window_count || !walks(&s->windows[w]))
        return -1;
    uint64_t hi = s->windows[w].end;
    for (; w + 1 < s->window_count && s->windows[w + 1].start == hi && walks(&s->windows[w + 1]);
         w++)
        hi = s->windows[w + 1].end;
    size_t n = 0;
    for (size_t i = presence_at(s, from); i < s->range_count && s->ranges[i].start < hi; i++) {
        if (n == cap) {
            hi = vec[n - 1].end; /* what follows is left to a scan */
            break;
        }
        vec[n] = s->ranges[i];
        vec[n].start = MEMDIFF__MAX(vec[n].start, from);
        n++;
    }
    *next = hi;
    return (int)n;
}

uint64_t memdiff__linux_presence_walk_after(memdiff__proc *proc, uint64_t from)
{
    struct memdiff__linux_presence *s = proc->presence;
    if (!s || s->regions_read != proc->regions_read)
        return UINT64_MAX;
    for (size_t w = ending_above(s->windows, s->window_count, from); w < s->window_count; w++)
        if (s->windows[w].start > from && walks(&s->windows[w]))
            return s->windows[w].start;
    return UINT64_MAX;
}

int memdiff__linux_holes_kept(memdiff__proc *proc, uint64_t from, uint64_t to,
                              struct page_region *vec, size_t cap, uint64_t *end)
{
    struct memdiff__linux_presence *s = presence_state(proc);
    size_t w = s ? window_at(s, from) : 0;
    if (!s || w == s->window_count)
        return -1;
    const uint64_t hi = MEMDIFF__MIN(to, s->windows[w].end);
    uint64_t cur = from;
    size_t n = 0;
    *end = hi;
    for (size_t i = presence_at(s, from); cur < hi; i++) {
        while (i < s->range_count && !(s->ranges[i].categories & PAGE_IS_PRESENT))
            i++; /* swapped pages: part of a hole */
        uint64_t next = i < s->range_count ? MEMDIFF__MIN(s->ranges[i].start, hi) : hi;
        if (next > cur) {
            if (n == cap) {
                *end = cur; /* the hole from cur is left for the next call */
                break;
            }
            vec[n++] = (struct page_region){cur, next, 0};
        }
        if (i >= s->range_count)
            break;
        cur = MEMDIFF__MAX(cur, s->ranges[i].end);
    }
    return (int)n;
}

int memdiff__linux_read_mem(memdiff__proc *proc, uint64_t addr, void *buf, size_t len)
{
    enum { MAX_PAGES = 17 };
    uint64_t entries[MAX_PAGES];
    if (proc->mem_fd < 0 || proc->pagemap_fd < 0)
        return MEMDIFF_ENOTSUP;
    if (len == 0 || len > 64 * 1024 || addr > UINT64_MAX - len)
        return MEMDIFF_ENOTSUP;
    uint64_t first = addr >> proc->page_shift;
    uint64_t last = (addr + len - 1) >> proc->page_shift;
    size_t npages = (size_t)(last - first + 1);
    if (npages > MAX_PAGES)
        return MEMDIFF_ENOTSUP;
    /* /proc/PID/mem reads with FOLL_FORCE: a page not yet faulted in would be faulted in (the
     * zero page for untouched anonymous memory, a page cache page for a file). Only resident
     * pages are read, so that looking does not change what a snapshot sees. */
    size_t known = 0; /* pages the scan kept for attribution answers (no pread) */
    for (; known < npages; known++) {
        int present = memdiff__linux_page_present(proc, (first + known) << proc->page_shift);
        if (present < 0)
            break;
        if (!present)
            return known == 0 ? MEMDIFF__LINUX_NOT_RESIDENT : MEMDIFF_ENOTSUP;
    }
    ssize_t r;
    if (known < npages) {
        size_t rest = npages - known;
        r = memdiff__linux_pread_full(proc->pagemap_fd, entries, rest * 8, (first + known) * 8);
        if (r != (ssize_t)(rest * 8))
            return MEMDIFF_ENOTSUP;
        for (size_t i = 0; i < rest; i++)
            if (!(entries[i] & MEMDIFF__PM_PRESENT))
                return known + i == 0 ? MEMDIFF__LINUX_NOT_RESIDENT : MEMDIFF_ENOTSUP;
    }
    r = memdiff__linux_pread_full(proc->mem_fd, buf, len, addr);
    if (r != (ssize_t)len)
        return MEMDIFF_ENOTSUP;
    return MEMDIFF_OK;
}
