/*
 * window.c - fast depth's scan ahead (memdiff__linux_from_window, memdiff__linux_scan_window):
 * one PAGEMAP_SCAN over a small region and the small regions behind it, or, in a snapshot of
 * another process, attribution's presence windows (presence.c) where they hold the region; and
 * the file rule applied to a scan's categories (memdiff__linux_region_attrs).
 *
 * Owns the window fields of struct memdiff__linux_scan (walk.h).
 */
#include "emit.h"

/* Scan ahead (fast depth). A snapshot walks its regions in address order and most are small and
 * close together (an image's four or five mappings, its .bss, a thread's stack and its guard):
 * one scan over a small region also takes the small regions behind it, holes and all (the scan
 * walks mappings only), so that they cost no ioctl each (a fast snapshot of sleep(1): 48 ioctls
 * -> 13; presence.c's scans then took it to 5). The window asks PAGE_IS_FILE when a region
 * in it needs the kernel's word (MEMDIFF__FILE_ASK); one whose rule makes that needless joins such
 * a window only while it is small (WINDOW_PLAIN_PAGES), as the file bit costs the kernel each
 * present page's struct page. Only forward: no range serves twice. In a fast snapshot of another
 * process the window comes from attribution's presence windows where they hold the region
 * (memdiff__linux_presence_walk: they asked the same categories a moment before), and a window
 * scanned here ends where they begin. */
#define WINDOW_VEC 512u
#define WINDOW_PLAIN_PAGES 64u

/* The attrs of a scan's range in the walker's region, its file rule applied (a window may have
 * asked the file bit for another region: no page of private anonymous memory has it anyway). */
unsigned memdiff__linux_region_attrs(const memdiff__linux_walker *w, uint64_t categories)
{
    unsigned a = memdiff__linux_scan_attrs(categories);
    if (w->file == MEMDIFF__FILE_NEVER)
        a &= ~MEMDIFF_PAGE_FILE;
    else if (w->file == MEMDIFF__FILE_ALWAYS && !(a & MEMDIFF_PAGE_ZERO))
        a |= MEMDIFF_PAGE_FILE;
    return a;
}

/* Delivers [start, end) from the window when it covers the range: 1, else 0. */
int memdiff__linux_from_window(memdiff__linux_walker *w, uint64_t start, uint64_t end, int *rc)
{
    struct memdiff__linux_scan *s = w->scan;
    *rc = MEMDIFF_OK;
    if (!s->window_end || start < s->window_start || end > s->window_end)
        return 0;
    size_t i = s->window_pos;
    while (i < s->window_count && s->window[i].end <= start)
        i++;
    for (; i < s->window_count && s->window[i].start < end; i++) {
        const struct page_region *r = &s->window[i];
        uint64_t a = MEMDIFF__MAX(r->start, start), b = MEMDIFF__MIN(r->end, end);
        if ((*rc = memdiff__linux_feed(w, a, (b - a) >> w->proc->page_shift,
                                       memdiff__linux_region_attrs(w, r->categories), 0)))
            return 1;
        if (r->end > end)
            break; /* it goes on into the next region */
    }
    s->window_pos = i;
    s->window_start = end;
    return 1;
}

/* The window's vector of WINDOW_VEC ranges, from the scratch arena on first use: 0 without. */
static int window_buffer(memdiff__proc *p, struct memdiff__linux_scan *s)
{
    return s->window ||
           (s->window = memdiff__arena_alloc_raw(p->scratch, WINDOW_VEC * sizeof *s->window));
}

/* The window's n ranges, in s->window, cover [start, next): served from start on. A window with
 * no range may be a process that has exited (memdiff__linux_exited_if_empty). */
static int use_window(memdiff__proc *p, struct memdiff__linux_scan *s, int n, uint64_t start,
                      uint64_t next)
{
    int rc = n == 0 ? memdiff__linux_exited_if_empty(p, start) : MEMDIFF_OK;
    if (rc)
        return rc;
    s->window_count = (size_t)n;
    s->window_pos = 0;
    s->window_start = start;
    s->window_end = next;
    return MEMDIFF_OK;
}

/* Scans from start over the region holding [start, end) and the small regions behind it, when
 * at least one joins: the window, for from_window. A scan that fails leaves none (each region
 * then scans itself and meets the error, or falls back, on its own). */
int memdiff__linux_scan_window(memdiff__linux_walker *w, uint64_t start, uint64_t end)
{
    memdiff__proc *p = w->proc;
    const unsigned shift = p->page_shift;
    if (!p->regions || ((end - start) >> shift) >= MEMDIFF__AHEAD_PAGES)
        return MEMDIFF_OK;
    size_t lo = memdiff__linux_region_holding(p, start, end);
    if (lo == p->region_count)
        return MEMDIFF_OK;
    struct memdiff__linux_scan *s = w->scan;
    if (p->presence_walk) {
        /* attribution's windows asked the same of the same regions: no second scan */
        if (!window_buffer(p, s))
            return MEMDIFF_ENOMEM;
        uint64_t next;
        int n = memdiff__linux_presence_walk(p, start, s->window, WINDOW_VEC, &next);
        if (n >= 0 && next >= end)
            return use_window(p, s, n, start, next);
    }
    uint64_t pages = (p->regions[lo].end - start) >> shift, wend = p->regions[lo].end;
    int ask = w->file == MEMDIFF__FILE_ASK;
    int plain_big = !ask && pages > WINDOW_PLAIN_PAGES; /* a region the file bit would cost */
    /* regions from there on come from attribution's windows */
    const uint64_t kept = p->presence_walk ? memdiff__linux_presence_walk_after(p, start)
                                           : UINT64_MAX;
    size_t j = lo + 1;
    for (; j < p->region_count; j++) {
        const memdiff__plat_region *r = &p->regions[j];
        uint64_t rp = (r->end - r->start) >> shift;
        int r_ask = memdiff__linux_region_file_rule(p, r->start, r->end) == MEMDIFF__FILE_ASK;
        if (r->start >> 63 || r->start >= kept || pages + rp > MEMDIFF__AHEAD_PAGES ||
            (r_ask && plain_big) || (!r_ask && rp > WINDOW_PLAIN_PAGES && ask))
            break;
        plain_big = plain_big || (!r_ask && rp > WINDOW_PLAIN_PAGES);
        ask = ask || r_ask;
        pages += rp;
        wend = r->end;
    }
    if (kept >= end && kept < wend)
        wend = kept; /* a window kept begins inside the last region joined */
    if (j == lo + 1 && wend == p->regions[lo].end)
        return MEMDIFF_OK; /* nothing joins: the region scans itself */
    if (!window_buffer(p, s))
        return MEMDIFF_ENOMEM;
    uint64_t ret = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO | PAGE_IS_HUGE |
                   (ask ? PAGE_IS_FILE : 0);
    uint64_t next;
    int n = memdiff__linux_scan_into(p, s->window, WINDOW_VEC, start, wend,
                                     PAGE_IS_PRESENT | PAGE_IS_SWAPPED, ret, 0, &next);
    if (n < 0)
        return MEMDIFF_OK;
    return use_window(p, s, n, start, next); /* next: short of wend when the vector filled */
}
