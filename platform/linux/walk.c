/*
 * walk.c - the page walk's strategy (memdiff__plat_pages): which stage reads which range
 * (walk.h lists the stages; measured costs: docs/performance.md).
 *
 * The kernel computes a pagemap entry from the page table entry and the page's struct page:
 * tens of ns per present page, a cache miss on struct page each. PAGEMAP_SCAN reads the page
 * table alone, a few ns per page, unless asked for PAGE_IS_FILE, which costs it the struct page
 * too. Hence:
 *  - fast with PAGEMAP_SCAN (Linux 6.7): the kernel returns ranges of present or swapped pages
 *    with their categories; no per-page data crosses to user space. The file bit is asked of the
 *    kernel only in private file mappings, where copy-on-write makes it differ page by page: in
 *    private anonymous memory no page is a file page, in shared memory every page is.
 *  - standard / deep: pagemap in batches, with no scan ahead of it while the pages are dense.
 *    Where a batch turns out sparse, PAGEMAP_SCAN finds the next present pages and pagemap is
 *    read only around them (huge sparse reservations, AddressSanitizer's shadow: terabytes,
 *    mostly empty, cost a few ioctls instead of gigabytes of pagemap); where the scan meets dense
 *    pages again, plain batches resume. Zero and huge pages, which pagemap does not flag, come
 *    from the scan: with frame numbers (root), only where the frames could be a huge page's (512
 *    consecutive, aligned frames) or the zero page is known by its frame; without, the scan asks
 *    the page table for just those two categories, in a batch with a page pagemap does not call
 *    exclusively mapped anonymous memory, or wherever /proc/meminfo says the system may have
 *    PMD-mapped anonymous memory or hugetlb pages (memdiff__linux_pmd_free_now).
 *  - without the scan (older kernels, a scan refused with EINVAL, fixture files): pagemap in
 *    batches over the whole range.
 * Deep adds kpageflags and kpagecount (kflags.c). No path makes a syscall per page.
 *
 * Owns one call's walker and the process's stages (proc->stages: each stage's buffers, created
 * here in an order that keeps the batch buffers together).
 */
#include <string.h>

#include "emit.h"

/* A batch with fewer present or swapped pages than 1/SPARSE_DIVISOR of it hands the walk to
 * the scan; a scan that finds at least half of its stretch present hands it back to pagemap. */
#define SPARSE_DIVISOR 8u

static int alloc_u64(memdiff__proc *p, uint64_t **slot, size_t count)
{
    if (!*slot) {
        *slot = memdiff__arena_alloc_raw(p->scratch, count * sizeof **slot);
        if (!*slot)
            return MEMDIFF_ENOMEM;
    }
    return MEMDIFF_OK;
}

/* Each stage's buffers this walk needs, from the scratch arena on first use. */
static int buffers(memdiff__linux_walker *w, int scan)
{
    memdiff__proc *p = w->proc;
    struct memdiff__linux_pagemap *pm = w->pagemap;
    struct memdiff__linux_emit *emit = w->emit;
    const size_t B = w->batch;
    if (scan && !w->scan->ranges) {
        w->scan->ranges =
            memdiff__arena_alloc_raw(p->scratch, MEMDIFF__LINUX_SCAN_VEC * sizeof *w->scan->ranges);
        if (!w->scan->ranges)
            return MEMDIFF_ENOMEM;
    }
    if (w->gather && !emit->gather_bits &&
        !(emit->gather_bits =
              memdiff__arena_alloc(p->scratch, MEMDIFF__LINUX_GATHER / 64 * sizeof(uint64_t))))
        return MEMDIFF_ENOMEM;
    if (w->gather && w->with_frames && alloc_u64(p, &emit->gather_frames, MEMDIFF__LINUX_GATHER))
        return MEMDIFF_ENOMEM;
    if (scan && w->fast)
        return MEMDIFF_OK;
    if (w->stretch_mode && !emit->stretches) {
        emit->stretches =
            memdiff__arena_alloc_raw(p->scratch, MEMDIFF__LINUX_FS * sizeof *emit->stretches);
        if (!emit->stretches)
            return MEMDIFF_ENOMEM;
    }
    if (pm->capacity < B) {
        /* First use, or a deeper walk than before on this proc: buffers of a batch's size
         * (the smaller ones stay in the scratch arena until it is released). */
        pm->entries = NULL;
        pm->attrs = NULL;
        w->facts->sort_keys = NULL;
        pm->capacity = B;
    }
    if (!pm->attrs) {
        pm->attrs = memdiff__arena_alloc_raw(p->scratch, B * sizeof *pm->attrs);
        if (!pm->attrs)
            return MEMDIFF_ENOMEM;
    }
    int rc = alloc_u64(p, &pm->entries, B);
    if (!rc && w->deep && !w->facts->sort_keys)
        rc = memdiff__linux_facts_buffers(p, w->facts, B);
    return rc;
}

/* Pages [addr, addr + npages) from pagemap, in batches. ranges (may be NULL) are the scan's
 * ranges over this window, for the zero / huge attributes; without them the scan is asked
 * itself (memdiff__linux_scan_huge_candidates, memdiff__linux_scan_extras) when the kernel has one.
 * *found counts the pages present or swapped. */
static int walk_pagemap(memdiff__linux_walker *w, uint64_t addr, uint64_t npages,
                        const struct page_region *ranges, size_t nranges, uint64_t *found)
{
    memdiff__proc *p = w->proc;
    struct memdiff__linux_pagemap *pm = w->pagemap;
    uint64_t ps = p->page_size;
    int arrays = w->with_frames || w->deep;
    int extras = !w->fast && !p->scan_refused && (p->sources & MEMDIFF__SRC_PAGEMAP_SCAN);
    while (npages > 0) {
        if (w->pending && w->run_start + w->run_pages * ps != addr) {
            int rc = memdiff__linux_flush(w);
            if (rc)
                return rc;
        }
        size_t base = arrays && w->pending && !w->run_stretched ? (size_t)w->run_pages : 0;
        if (base == w->batch) {
            /* A run of a whole batch: deliver it, it cannot carry further. */
            int rc = memdiff__linux_flush(w);
            if (rc)
                return rc;
            base = 0;
        }
        size_t n = w->batch - base;
        if (n > npages)
            n = (size_t)npages;
        int rc = memdiff__linux_read_pagemap(w, addr, base, n);
        if (rc)
            return rc;
        /* the scan's zero and huge page ranges, when the batch may hold some */
        const struct page_region *extras_found = NULL;
        size_t extras_count = 0;
        int whole = 1;
        if (w->stretch_mode && !ranges && extras &&
            memdiff__linux_maybe_huge(w, addr, pm->entries + base, n) &&
            (whole = memdiff__linux_scan_batch_extras(w, addr, n, &extras_found, &extras_count)) <
                0)
            return whole;
        if (w->stretch_mode && !ranges && whole) {
            int64_t got =
                memdiff__linux_decode_frames(w, addr, base, n, extras_found, extras_count);
            if (got < 0)
                return (int)got;
            *found += (uint64_t)got;
            addr += n * ps;
            npages -= n;
            continue;
        }
        if (w->pending && w->run_stretched && (rc = memdiff__linux_flush(w)))
            return rc;
        int cand = 1;
        size_t got = memdiff__linux_decode(w, base, n, &cand);
        *found += got;
        if (got && ranges)
            memdiff__linux_mark_extras(p, ranges, nranges, addr, n, pm->attrs);
        else if (got && extras && w->with_frames)
            rc = memdiff__linux_scan_huge_candidates(w, addr, n, pm->entries + base, pm->attrs);
        else if (got && extras && (cand || !memdiff__linux_pmd_free_now(p)))
            rc = memdiff__linux_scan_extras(w, addr, n, pm->attrs);
        if (!rc && got && w->deep)
            rc = memdiff__linux_frame_facts(w);
        if (!rc && got && w->with_frames && p->idle_fd >= 0)
            rc = memdiff__linux_idle_attrs(p, pm->entries + base, pm->attrs, n);
        if (rc)
            return rc;
        const unsigned *attrs = pm->attrs;
        size_t seg = 0;
        for (size_t i = 0; i < n;) {
            unsigned a = attrs[i];
            size_t j = i + 1;
            while (j + 4 <= n &&
                   !((attrs[j] ^ a) | (attrs[j + 1] ^ a) | (attrs[j + 2] ^ a) | (attrs[j + 3] ^ a)))
                j += 4;
            while (j < n && attrs[j] == a)
                j++;
            /* Deep delivers each run now, its pieces pointing into this batch's buffers (base
             * is 0: nothing is carried); the others extend the pending run. */
            rc = !a        ? memdiff__linux_flush(w)
                 : w->deep ? memdiff__linux_deep_run(w, addr, i, j, a, &seg)
                           : memdiff__linux_feed(w, addr + i * ps, j - i, a, base + i);
            if (rc)
                return rc;
            i = j;
        }
        memdiff__linux_carry(w);
        addr += n * ps;
        npages -= n;
    }
    return MEMDIFF_OK;
}

/* The scan's ranges r[0..n) deeper than fast: pagemap is read over windows of nearby ranges (at
 * most a batch long), never over the gaps between distant ones. */
static int pagemap_around(memdiff__linux_walker *w, const struct page_region *r, size_t n,
                          uint64_t *found)
{
    uint64_t ps = w->proc->page_size;
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && (r[j].end - r[i].start) / ps <= w->batch)
            j++;
        uint64_t start = r[i].start, end = r[j - 1].end;
        int rc = walk_pagemap(w, start, (end - start) / ps, r + i, j - i, found);
        if (rc)
            return rc;
        i = j;
    }
    return MEMDIFF_OK;
}

/* The scan's ranges r[0..n) as runs. Where memory is fragmented (a range of a few pages
 * between holes, thousands of them a call), a range that flush() would only add to the gathered
 * bitmap goes there straight: short, not joining the pending run, the range behind it not
 * adjacent (it would join this one), gather_joins, and no frames to carry (fast depth has none).
 * Everything else goes through feed(). */
static int feed_ranges(memdiff__linux_walker *w, const struct page_region *r, size_t n)
{
    const unsigned shift = w->proc->page_shift;
    const int direct = w->gather && !w->with_frames;
    uint64_t cat = ~UINT64_C(0);
    unsigned attrs = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t np = (r[i].end - r[i].start) >> shift;
        if (r[i].categories != cat) {
            cat = r[i].categories;
            attrs = memdiff__linux_region_attrs(w, cat);
        }
        if (direct && np <= MEMDIFF__GATHER_RUN_MAX && (attrs & MEMDIFF__RESIDENT) && i + 1 < n &&
            r[i + 1].start != r[i].end &&
            (!w->pending || w->run_start + (w->run_pages << shift) != r[i].start)) {
            int rc = memdiff__linux_flush(w); /* as open_run would: the pending run is not joined */
            if (rc)
                return rc;
            if (memdiff__linux_gather_joins(w, r[i].start, np, attrs)) {
                memdiff__linux_gather_add(w, r[i].start, np);
                i = memdiff__linux_gather_ranges(w, r, i + 1, n, cat) - 1; /* and those behind */
                continue;
            }
        }
        int rc = memdiff__linux_feed(w, r[i].start, np, attrs, 0);
        if (rc)
            return rc;
    }
    return MEMDIFF_OK;
}

/* Fast depth's scan of [*cur, end) on this thread, its ranges fed as runs. *found: a range
 * was found; *fallback: the kernel refused the scan, pagemap is to read on from *cur. */
static int scan_span(memdiff__linux_walker *w, uint64_t *cur, uint64_t end, uint64_t ret,
                     int *found, int *fallback)
{
    memdiff__proc *p = w->proc;
    while (*cur < end) {
        uint64_t next;
        int n = memdiff__linux_scan_once(w, *cur, end, PAGE_IS_PRESENT | PAGE_IS_SWAPPED, ret, 0,
                                         &next);
        if (n < 0) {
            /* memdiff__plat_pages keeps [vsyscall] away; any other range the scan refuses, and
             * all of it once refused, is read with pagemap. */
            int rc = memdiff__linux_scan_failure(p, n, *cur, end);
            if (!rc)
                *fallback = 1;
            return rc;
        }
        int rc = feed_ranges(w, w->scan->ranges, (size_t)n);
        if (rc)
            return rc;
        *found = *found || n > 0;
        *cur = next;
    }
    return MEMDIFF_OK;
}

/* Fast depth over a region the lanes scan ahead, chunk by chunk in order; a chunk whose scan
 * failed, filled its vector or found pages that may be moving is scanned (on) here. */
static int scan_lanes(memdiff__linux_walker *w, uint64_t ret, int *found, int *fallback,
                      uint64_t *cur, uint64_t end)
{
    memdiff__proc *p = w->proc;
    size_t chunks = memdiff__linux_lanes_chunks(p);
    int rc = MEMDIFF_OK;
    for (size_t i = 0; i < chunks && !rc && !*fallback; i++) {
        if (i && !memdiff__linux_lanes_active(p)) {
            /* the first chunk cost too little to hand the others over: the rest here */
            rc = scan_span(w, cur, end, ret, found, fallback);
            break;
        }
        const struct page_region *r;
        uint64_t lo, hi, walk_end, next = 0;
        int plain;
        int n = memdiff__linux_lanes_scan(p, i, &r, &lo, &hi, &walk_end, &plain);
        int k = n < 0 ? -1
                      : memdiff__linux_scan_accept(p, (struct page_region *)r, n, lo, hi,
                                                   memdiff__linux_scan_ret(p, ret), walk_end,
                                                   plain, &next);
        if (k >= 0) {
            rc = feed_ranges(w, r, (size_t)k);
            *found = *found || k > 0;
        }
        memdiff__linux_lanes_scan_done(p, i);
        *cur = k >= 0 ? next : lo;
        if (!rc)
            rc = scan_span(w, cur, hi, ret, found, fallback);
    }
    memdiff__linux_lanes_cancel(p);
    return rc;
}

/* Fast depth: the scan's ranges are the runs. */
static int walk_fast(memdiff__linux_walker *w, uint64_t start, uint64_t end, int *fallback,
                     uint64_t *cur_out)
{
    int rc;
    if (memdiff__linux_from_window(w, start, end, &rc) ||
        (!(rc = memdiff__linux_scan_window(w, start, end)) &&
         memdiff__linux_from_window(w, start, end, &rc))) {
        *fallback = 0;
        *cur_out = end;
        return rc;
    }
    if (rc)
        return rc;
    memdiff__proc *p = w->proc;
    uint64_t ret = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO | PAGE_IS_HUGE;
    if (w->file == MEMDIFF__FILE_ASK)
        ret |= PAGE_IS_FILE;
    uint64_t cur = start;
    int found = 0;
    *fallback = 0;
    /* A region lanes could read is scanned for its first pages first, timed: one whose scan
     * costs less than lanes would save (huge pages, an empty reservation: a few us where small
     * pages cost tens) is scanned on alone, and no lane is started for it. Lanes scan with what
     * the kernel is known to answer (the guard category, asked by then). */
    const int may = memdiff__linux_lanes_may(p, start, end);
    const uint64_t first = may ? MEMDIFF__MIN(end, start + ((uint64_t)MEMDIFF__LINUX_LANES_PROBE
                                                             << p->page_shift))
                               : end;
    const uint64_t t0 = may ? memdiff__os_monotonic_ns() : 0;
    rc = scan_span(w, &cur, first, ret, &found, fallback);
    if (!rc && !*fallback && cur < end) {
        if (may && (p->scan_guard_ok || p->scan_no_guard) &&
            memdiff__linux_lanes_worth((first - start) >> p->page_shift,
                                       memdiff__os_monotonic_ns() - t0) &&
            memdiff__linux_lanes_plan(p, MEMDIFF__LANES_SCAN, cur, end,
                                      PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
                                      memdiff__linux_scan_ret(p, ret)))
            rc = scan_lanes(w, ret, &found, fallback, &cur, end);
        else
            rc = scan_span(w, &cur, end, ret, &found, fallback);
    }
    if (rc || *fallback) {
        *cur_out = cur;
        return rc;
    }
    if (!found && (rc = memdiff__linux_exited_if_empty(p, start)))
        return rc;
    *cur_out = end;
    return MEMDIFF_OK;
}

/* Standard and deep: pagemap batches while pages are dense, the scan to skip where they are not
 * (see the top). */
static int walk_adaptive(memdiff__linux_walker *w, uint64_t start, uint64_t end)
{
    memdiff__proc *p = w->proc;
    const uint64_t B = w->batch;
    unsigned shift = p->page_shift;
    int can_scan = (p->sources & MEMDIFF__SRC_PAGEMAP_SCAN) != 0;
    uint64_t cur = start;
    int sparse = 0, planned = 0;
    while (cur < end) {
        uint64_t left = (end - cur) >> shift, found = 0;
        if (!sparse || !can_scan || p->scan_refused) {
            /* Dense: lanes read the batches ahead (while they stay dense). */
            if (!planned)
                planned = memdiff__linux_lanes_plan(p, MEMDIFF__LANES_PAGEMAP, cur, end, 0, 0);
            uint64_t n = MEMDIFF__MIN(left, B);
            int rc = walk_pagemap(w, cur, n, NULL, 0, &found);
            if (rc)
                return rc;
            cur += n << shift;
            sparse = found * SPARSE_DIVISOR < n;
            if (sparse && planned && can_scan && !p->scan_refused) {
                memdiff__linux_lanes_cancel(p);
                planned = 0;
            }
            continue;
        }
        uint64_t next;
        int n = memdiff__linux_scan_once(
            w, cur, end, PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
            PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO | PAGE_IS_HUGE, B, &next);
        if (n < 0) {
            int rc = memdiff__linux_scan_failure(p, n, cur, end); /* or pagemap from here on */
            if (rc)
                return rc;
            can_scan = 0;
            continue;
        }
        int rc = pagemap_around(w, w->scan->ranges, (size_t)n, &found);
        if (rc)
            return rc;
        if (n > 0) {
            uint64_t span = (w->scan->ranges[n - 1].end - w->scan->ranges[0].start) >> shift;
            sparse = found * 2 < span || found < B / 2;
        }
        cur = next;
    }
    return MEMDIFF_OK;
}

/* The process's stages, created on its first walk; what they read or scanned ahead is dropped
 * when the region list was read again (a new pass). */
static struct memdiff__linux_stages *stages(memdiff__proc *proc)
{
    struct memdiff__linux_stages *st = proc->stages;
    if (!st) {
        st = proc->stages = memdiff__arena_alloc(proc->scratch, sizeof *st);
        if (!st)
            return NULL;
        st->pagemap.table_fast = -1;
        st->regions_read = proc->regions_read;
    }
    if (st->regions_read != proc->regions_read) {
        st->pagemap.ahead_count = 0;
        st->scan.window_end = 0;
        st->regions_read = proc->regions_read;
    }
    return st;
}

int memdiff__plat_pages(memdiff__proc *proc, uint64_t start, uint64_t end, memdiff_depth depth,
                        const memdiff__page_sink *sink)
{
    uint64_t mask = proc->page_size - 1;
    if (start > end || (start & mask) || (end & mask))
        return memdiff__set_error(MEMDIFF_EINVAL, "pages: range 0x%llx-0x%llx is not page aligned",
                                  (unsigned long long)start, (unsigned long long)end);
    if (proc->pagemap_fd < 0)
        return memdiff__set_error(MEMDIFF_EACCES, "pages: %s/pagemap could not be opened",
                                  proc->dir);
    /* The kernel's half of the address space ([vsyscall]): pagemap reads nothing there and the
     * scan refuses it (EFAULT): no pages, and no syscall to learn it. */
    if (start == end || start >> 63)
        return MEMDIFF_OK;

    struct memdiff__linux_stages *st = stages(proc);
    if (!st)
        return MEMDIFF_ENOMEM;
    memdiff__linux_walker w;
    memset(&w, 0, sizeof w);
    w.proc = proc;
    w.sink = sink;
    w.pagemap = &st->pagemap;
    w.scan = &st->scan;
    w.facts = &st->facts;
    w.emit = &st->emit;
    w.fast = depth == MEMDIFF_DEPTH_FAST;
    w.with_frames = depth >= MEMDIFF_DEPTH_STANDARD && (proc->sources & MEMDIFF_SRC_FRAMES);
    w.deep = depth >= MEMDIFF_DEPTH_DEEP && (proc->sources & MEMDIFF_SRC_FRAMES) &&
             (proc->sources & MEMDIFF_SRC_PAGE_FLAGS) && (proc->sources & MEMDIFF_SRC_MAP_COUNTS);
    w.file = memdiff__linux_region_file_rule(proc, start, end);
    memdiff__linux_build_table(&w);
    w.batch = w.deep ? MEMDIFF__LINUX_DEEP_BATCH : MEMDIFF__LINUX_BATCH;
    w.stretch_mode = sink->run_frames && w.with_frames && !w.deep && proc->idle_fd < 0;
    if (w.deep && !sink->run_frames) {
        w.deep = 0; /* kernel flags go through run_frames only: a sink without it gets frames */
        w.batch = MEMDIFF__LINUX_BATCH;
    }
    w.gather = sink->run_bits && !w.deep; /* deep's runs carry kernel flags: run_frames */
    int scan = (proc->sources & MEMDIFF__SRC_PAGEMAP_SCAN) && !proc->scan_refused;
    int rc = buffers(&w, scan);
    if (rc)
        return rc;
    uint64_t found = 0;
    if (scan && w.fast) {
        int fallback;
        uint64_t cur;
        rc = walk_fast(&w, start, end, &fallback, &cur);
        if (!rc && fallback) {
            memdiff__linux_learn_zero_page(proc); /* the scan no longer names it */
            rc = buffers(&w, 0);
            if (!rc)
                rc = walk_pagemap(&w, cur, (end - cur) >> proc->page_shift, NULL, 0, &found);
        }
    } else if (w.fast) {
        memdiff__linux_learn_zero_page(proc); /* no scan to name it (refused since the open) */
        rc = walk_pagemap(&w, start, (end - start) >> proc->page_shift, NULL, 0, &found);
    } else {
        rc = walk_adaptive(&w, start, end);
    }
    memdiff__linux_lanes_cancel(proc);
    memdiff__linux_lanes_walked(proc, end);
    if (!rc)
        rc = memdiff__linux_flush(&w);
    if (!rc)
        rc = memdiff__linux_deliver_gathered(&w);
    if (rc &&
        w.gather_span) /* the bits are clear for the next walk, as deliver_gathered leaves them */
        memset(w.emit->gather_bits, 0,
               (size_t)(w.gather_span + 63) / 64 * sizeof *w.emit->gather_bits);
    return rc;
}
