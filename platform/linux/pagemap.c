/*
 * pagemap.c - the pagemap stage of the page walk: /proc/PID/pagemap read in batches and decoded
 * (Documentation/admin-guide/mm/pagemap.rst).
 *
 * The kernel computes an entry from the page table entry and the page's struct page
 * (exclusivity, file or anon): tens of ns per present page. The walk reads a batch of entries
 * with one pread (MEMDIFF__LINUX_BATCH), a small region's with those of the small regions right
 * behind it (read-ahead), and decodes the flag bits through a table built once per depth. With
 * frame numbers (root) the entries become the pages' frames in place, cut into stretches of
 * consecutive frames (dense memory: one test of four entries a stretch); deep depth's segments
 * come from the same cut (kflags.c). Zero and huge pages, which pagemap does not flag, come from
 * the scan (scan.c): decode tells where a batch may hold some.
 *
 * Owns struct memdiff__linux_pagemap (the batch's entries and attrs, the attr table, the
 * read-ahead). Stretch mode feeds its stretches to run emission (emit.h) as it decodes, and
 * fragmented memory's runs 64 entries at a time (sparse_block).
 */
#include <string.h>

#include "emit.h"

/* attrs of a pagemap entry from its flag bits 55-63 (the table index), zero page aside. */
static unsigned entry_attrs(const memdiff__linux_walker *w, uint64_t e)
{
    unsigned a = 0;
    if (e & MEMDIFF__PM_GUARD)
        return 0; /* a guard region's page is no memory (transient.c) */
    if (e & MEMDIFF__PM_PRESENT)
        a |= MEMDIFF_PAGE_PRESENT;
    else if (e & MEMDIFF__PM_SWAP)
        a |= MEMDIFF_PAGE_SWAPPED;
    else
        return 0;
    if (e & MEMDIFF__PM_FILE)
        a |= MEMDIFF_PAGE_FILE;
    /* Fast depth leaves these out so that it reports the same on kernels with and without
     * PAGEMAP_SCAN (whose categories have no exclusivity). */
    if (!w->fast) {
        if (e & MEMDIFF__PM_EXCLUSIVE)
            a |= MEMDIFF_PAGE_PRIVATE;
        if (e & MEMDIFF__PM_SOFT_DIRTY)
            a |= MEMDIFF_PAGE_SOFT_DIRTY;
    }
    return a;
}

/* The table of entry_attrs for the walk's depth: built once per process open and depth kind,
 * not once per region (512 entries: it cost as much as decoding a 64 MiB region). */
_Static_assert(sizeof((struct memdiff__linux_pagemap *)0)->attr_table / sizeof(unsigned) ==
                   1u << (64 - MEMDIFF__PM_TABLE_SHIFT),
               "attr_table holds an entry per value of pagemap bits 55-63");
void memdiff__linux_build_table(memdiff__linux_walker *w)
{
    struct memdiff__linux_pagemap *pm = w->pagemap;
    if (pm->table_fast != w->fast) {
        for (uint64_t i = 0; i < (1u << (64 - MEMDIFF__PM_TABLE_SHIFT)); i++)
            pm->attr_table[i] = entry_attrs(w, i << MEMDIFF__PM_TABLE_SHIFT);
        pm->table_fast = w->fast;
    }
    w->attr_table = pm->attr_table;
}

/* Read-ahead. A snapshot walks its regions in address order, one plat_pages call each, and
 * most are small and back to back (an image's four or five mappings, its .bss): one pread of a
 * small region's entries also takes those of the whole regions right behind it, up to
 * MEMDIFF__AHEAD_PAGES entries (64 MiB standard: the walk's 25 preads a snapshot -> 6). A
 * request that ends inside a mapping (a piece the core cut from it: a malloc chunk, a module's
 * segment) takes the rest of that mapping first (python3's eight 1 MiB chunks in one merged
 * mapping: one pread, not eight). Only whole mappings behind, so that each is read from it
 * entirely or not at all; only forward, so that no entry serves twice. In a snapshot of another
 * process the entries attribution's windows read (presence.c's spans) are taken from there, and
 * a read-ahead ends where the next of them begins. */

/* The end of the mapping holding [addr, addr + need pages) and of the mappings that follow it
 * without a gap, as far as they fit whole within MEMDIFF__AHEAD_PAGES pages of addr; addr +
 * need pages at least. */
static uint64_t ahead_reach(const memdiff__proc *p, uint64_t addr, uint64_t need)
{
    uint64_t reach = addr + (need << p->page_shift);
    uint64_t cap = addr + ((uint64_t)MEMDIFF__AHEAD_PAGES << p->page_shift);
    size_t lo = memdiff__linux_region_holding(p, addr, reach);
    if (lo == p->region_count || p->regions[lo].end > cap)
        return reach;
    reach = p->regions[lo].end;
    for (size_t j = lo + 1;
         j < p->region_count && p->regions[j].start == reach && p->regions[j].end <= cap; j++)
        reach = p->regions[j].end;
    return reach;
}

/* Entries [first, first + n) from the read-ahead into pm, when it holds them all. */
static int from_ahead(struct memdiff__linux_pagemap *s, uint64_t first, size_t n, uint64_t *pm)
{
    if (!s->ahead_count || first < s->ahead_used || first < s->ahead_first ||
        first + n > s->ahead_first + s->ahead_count)
        return 0;
    memcpy(pm, s->ahead + (first - s->ahead_first), n * sizeof *pm);
    s->ahead_used = first + n;
    return 1;
}

/* Whether pm[0..n) holds a swap entry (not present, swapped): an OR over the entries, eight a
 * step where the compiler has vector types (as memdiff__stretch_end); 0.1 ns an entry. */
static int any_swap_entry(const uint64_t *pm, size_t n)
{
    uint64_t acc = 0;
    size_t i = 0;
#if defined(__GNUC__)
    typedef uint64_t u64x2 __attribute__((vector_size(16)));
    u64x2 v = {0, 0};
    for (; i + 8 <= n; i += 8) {
        u64x2 a, b, c, d;
        memcpy(&a, pm + i, sizeof a);
        memcpy(&b, pm + i + 2, sizeof b);
        memcpy(&c, pm + i + 4, sizeof c);
        memcpy(&d, pm + i + 6, sizeof d);
        v |= (a & ~(a >> 1)) | (b & ~(b >> 1)) | (c & ~(c >> 1)) | (d & ~(d >> 1));
    }
    acc = v[0] | v[1];
#endif
    for (; i < n; i++)
        acc |= pm[i] & ~(pm[i] >> 1); /* bit 62 where swapped and not present (bit 63) */
    return (acc & MEMDIFF__PM_SWAP) != 0;
}

/* Reads pagemap for [addr, addr + n pages), n at most one batch, into entries[base..]. Entries
 * that may be pages caught moving are read again (transient.c). Entries past
 * the end of what could be read are 0 (not present): a fixture file ends early, and the kernel
 * stops at the end of the user address space. A live process that returns nothing has exited:
 * pagemap_read() finds no mm and reads 0 bytes. */
int memdiff__linux_read_pagemap(memdiff__linux_walker *w, uint64_t addr, size_t base, size_t n)
{
    memdiff__proc *p = w->proc;
    struct memdiff__linux_pagemap *s = w->pagemap;
    uint64_t *pm = s->entries + base;
    uint64_t first = addr >> p->page_shift;
    if (from_ahead(s, first, n, pm) ||
        (p->presence_pagemap && memdiff__linux_kept_pagemap(p, first, n, pm)))
        return any_swap_entry(pm, n) ? memdiff__linux_settle_entries(p, first, pm, n) : MEMDIFF_OK;
    if (p->lanes) {
        /* Read ahead by the lanes; what they did not give (a short read) is read here. */
        size_t got = memdiff__linux_lanes_pagemap(p, addr, pm, n);
        if (got) {
            uint64_t rest = addr + ((uint64_t)got << p->page_shift);
            int rc = got == n ? MEMDIFF_OK
                              : memdiff__linux_read_pagemap(w, rest, base + got, n - got);
            if (!rc && any_swap_entry(pm, got))
                rc = memdiff__linux_settle_entries(p, first, pm, got);
            return rc;
        }
    }
    uint64_t *dst = pm;
    size_t want = n;
    if (n < MEMDIFF__AHEAD_PAGES && p->regions) {
        uint64_t reach = ahead_reach(p, addr, n);
        const uint64_t kept =
            p->presence_pagemap ? memdiff__linux_kept_after(p, first) : UINT64_MAX;
        if (kept != UINT64_MAX && (kept << p->page_shift) < reach)
            reach = MEMDIFF__MAX(kept << p->page_shift, addr + ((uint64_t)n << p->page_shift));
        if (reach > addr + ((uint64_t)n << p->page_shift)) {
            if (!s->ahead && !(s->ahead = memdiff__arena_alloc_raw(
                                   p->scratch, MEMDIFF__AHEAD_PAGES * sizeof *s->ahead)))
                return MEMDIFF_ENOMEM;
            dst = s->ahead;
            want = (size_t)((reach - addr) >> p->page_shift);
        }
    }
    ssize_t r = memdiff__linux_pread_full(p->pagemap_fd, dst, want * 8, first * 8);
    if (dst != pm) {
        /* The request is the front of what was read; a failed read leaves nothing ahead. */
        s->ahead_first = first;
        s->ahead_count = r > 0 ? (uint64_t)r / 8 : 0;
        size_t got = MEMDIFF__MIN(n, (size_t)s->ahead_count);
        memcpy(pm, dst, got * sizeof *pm);
        s->ahead_used = first + got;
        if (r > 0)
            r = (ssize_t)(got * 8);
    }
    if (r < 0) {
        int e = (int)-r;
        return memdiff__set_error(memdiff__linux_status(e), "read %s/pagemap at 0x%llx: %s", p->dir,
                                  (unsigned long long)addr, memdiff__linux_errno_text(e));
    }
    size_t got = (size_t)r / 8;
    if (got < n) {
        /* pagemap reads nothing once the address space it was opened on is gone: the process
         * exited, or it is alive and exec'd a program during the snapshot, so that its regions
         * and these pages would be of two address spaces: taken again (ECHANGED). */
        int gone = got == 0 ? memdiff__linux_space_gone(p, "read") : MEMDIFF_OK;
        if (gone != MEMDIFF_OK)
            return gone;
        memset(pm + got, 0, (n - got) * sizeof *pm);
    }
    return any_swap_entry(pm, got) ? memdiff__linux_settle_entries(p, first, pm, got) : MEMDIFF_OK;
}

/* The stretch of entries pm[i..j) that starts at i, with frame numbers: present pages whose
 * frames go on by *step from *first (1 or -1, as the allocator hands frames out, 0 for the zero
 * page mapped again and again), or equal entries of absent pages (*first 0). In dense memory
 * most entries are the one before plus or minus 1 (the same flags, the next frame), which one
 * test of four entries confirms; a stretch's flags are decoded once, into *attrs. Returns j. */
static size_t stretch_at(const memdiff__linux_walker *w, const uint64_t *pm, size_t i, size_t n,
                         unsigned *attrs, uint64_t *first, uint64_t *step)
{
    uint64_t e = pm[i];
    *attrs = w->attr_table[e >> MEMDIFF__PM_TABLE_SHIFT];
    *first = 0;
    *step = 0;
    if (!(e & MEMDIFF__PM_PRESENT))
        return memdiff__stretch_end(pm, i, n, 0);
    uint64_t f = e & MEMDIFF__PM_PFN_MASK, zero = w->proc->zero_pfn;
    uint64_t d = i + 1 < n ? pm[i + 1] - e : 2; /* the next entry tells the way */
    *step = d == 1 || d == 0 || d == UINT64_MAX ? d : 1;
    size_t j = *step == d ? memdiff__stretch_end(pm, i, n, d) : i + 1;
    *first = f;
    /* The zero page: a stretch of its own (it is never part of one of other frames). */
    uint64_t dist = *step == 1 ? zero - f : *step == 0 ? (f == zero ? 0 : UINT64_MAX) : f - zero;
    if (zero && dist < j - i) {
        if (dist == 0)
            *attrs |= MEMDIFF_PAGE_ZERO;
        else
            j = i + (size_t)dist;
    }
    return j;
}

/* A present page that pagemap calls anything but exclusively mapped anonymous memory: the zero
 * page (neither bit: it has no struct page for pagemap to ask), the huge zero page (a file bit:
 * no anonymous folio), memory shared or a file page. Only such a page, or one of a PMD-mapped
 * or hugetlb page where meminfo says the system may have some, can be what the zero / huge
 * page scan looks for (pmd_free). */
static int zero_or_shared(uint64_t e)
{
    return (e & MEMDIFF__PM_PRESENT) &&
           (e & (MEMDIFF__PM_EXCLUSIVE | MEMDIFF__PM_FILE)) != MEMDIFF__PM_EXCLUSIVE;
}

/* Decodes entries[base..base + n) into attrs[0..n); with frame numbers, each entry becomes its
 * page's frame in place (no copy). Returns how many pages
 * are present or swapped; without frame numbers, *cand tells whether a page is zero_or_shared. */
size_t memdiff__linux_decode(memdiff__linux_walker *w, size_t base, size_t n, int *cand)
{
    uint64_t *pm = w->pagemap->entries + base;
    unsigned *attrs = w->pagemap->attrs;
    const uint64_t zero = w->proc->zero_pfn;
    size_t found = 0;
    if (w->with_frames) {
        w->seg_count = 0;
        for (size_t i = 0; i < n;) {
            unsigned a;
            uint64_t f, step;
            size_t j = stretch_at(w, pm, i, n, &a, &f, &step);
            if (w->deep)
                w->seg_count = memdiff__linux_add_segments(w, i, j, a, f, step, w->seg_count);
            for (size_t k = i; k < j; k++) {
                pm[k] = f;
                attrs[k] = a;
                f += step;
            }
            found += a ? j - i : 0;
            i = j;
        }
    } else if (!zero) {
        /* No frame numbers (unprivileged): the entries of a page's neighbours are its own in
         * dense memory, so they are decoded a stretch of equal entries at a time. */
        int c = 0;
        for (size_t i = 0; i < n;) {
            size_t j = memdiff__stretch_end(pm, i, n, 0);
            unsigned a = w->attr_table[pm[i] >> MEMDIFF__PM_TABLE_SHIFT];
            c |= zero_or_shared(pm[i]);
            for (size_t k = i; k < j; k++)
                attrs[k] = a;
            found += a ? j - i : 0;
            i = j;
        }
        *cand = c;
    } else {
        int c = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t e = pm[i];
            unsigned a = w->attr_table[e >> MEMDIFF__PM_TABLE_SHIFT];
            if ((e >> 63) && (e & MEMDIFF__PM_PFN_MASK) == zero)
                a |= MEMDIFF_PAGE_ZERO;
            c |= zero_or_shared(e);
            attrs[i] = a;
            found += a != 0;
        }
        *cand = c;
    }
    return found;
}

/* Whether a batch without frame numbers whose pages are all exclusively mapped anonymous
 * memory (no zero_or_shared page) may go without the zero / huge page scan: when meminfo says
 * no page of the system is PMD-mapped anonymous memory or a hugetlb page. The scan walks every
 * page table entry again, a quarter of pagemap's cost. meminfo is read once a walk, on first
 * need, and again by memdiff__plat_totals once a batch went without the scan: a huge page that
 * appeared in between makes the snapshot be taken again (MEMDIFF__OPEN_EXACT). */
int memdiff__linux_pmd_free_now(memdiff__proc *p)
{
    if (!p->meminfo_pmd_free)
        p->meminfo_pmd_free = memdiff__linux_pmd_free(p) ? 1 : -1;
    if (p->meminfo_pmd_free < 0)
        return 0;
    p->pmd_free_relied = 1;
    return 1;
}

/* decode_frames' next boundary of the zero and huge pages' ranges r[0..nr) after page i of n
 * from addr, *at the first range that ends above page i: its start, or its end with *extra its
 * attributes when page i is in it. */
static MEMDIFF__NOINLINE size_t next_extras(const struct page_region *r, size_t nr, size_t *at,
                                            uint64_t addr, unsigned shift, size_t i, size_t n,
                                            unsigned *extra)
{
    const uint64_t page = addr + ((uint64_t)i << shift);
    while (*at < nr && r[*at].end <= page)
        ++*at;
    *extra = 0;
    if (*at == nr)
        return n;
    if (r[*at].start > page)
        return (size_t)MEMDIFF__MIN((uint64_t)n, (r[*at].start - addr) >> shift);
    *extra = memdiff__linux_scan_attrs(r[*at].categories) & (MEMDIFF_PAGE_ZERO | MEMDIFF_PAGE_HUGE);
    return (size_t)MEMDIFF__MIN((uint64_t)n, (r[*at].end - addr) >> shift);
}

/* Fragmented memory (every other page resident, runs of a few pages between holes of a few),
 * 64 entries at a time: the entries pm[i..i + 64) (not past lim) that are holes or present pages
 * of one attrs, none the zero page, up to the last hole among them, go to the gathered bitmap
 * in one step, their frames copied in page order, instead of a stretch_at() and a
 * feed_frames() a run. The caller has no pending run (a hole flushed it), so each run in the
 * block is one the stretch path would make (runs of one attrs between holes, shorter than 64
 * pages: none is cut) and gather; how they reach the sink does not change what it stores
 * (runs.c). Returns how many entries it took (0: none, no hole among them), *found counting
 * the pages. */
static size_t sparse_block(memdiff__linux_walker *w, uint64_t addr, const uint64_t *pm, size_t i,
                           size_t lim, int64_t *found, int *rc)
{
    const size_t m = MEMDIFF__MIN((size_t)64, lim - i);
    *rc = MEMDIFF_OK;
    /* The pages' flag bits (the attr table's index) are the first page's; a hole is neither
     * present nor swapped (no attrs: entry_attrs). Other pages with the same attrs end the
     * block too (the stretch path takes them): no table look-up an entry, no branch. */
    size_t k0 = 0;
    while (k0 < m && !(pm[i + k0] >> 62))
        k0++;
    if (k0 == m)
        return k0; /* all holes, which only flush (there is nothing pending) */
    const uint64_t key = pm[i + k0] >> MEMDIFF__PM_TABLE_SHIFT;
    const unsigned attrs = w->attr_table[key];
    if (!(attrs & MEMDIFF_PAGE_PRESENT))
        return 0;
    /* the zero page's frame, or a value no frame has (bits 0-54) */
    const uint64_t zero = w->proc->zero_pfn ? w->proc->zero_pfn : UINT64_MAX;
    /* Without a branch an entry (runs of random lengths would mispredict one a run), the
     * pages' frames kept in page order while the entries are at hand; the block ends before
     * the first entry that is neither. */
    uint64_t holes = k0 ? (UINT64_C(1) << k0) - 1 : 0, pages = 0, frames[64];
    size_t c = 0;
    for (size_t k = k0; k < m; k++) {
        const uint64_t e = pm[i + k], t = e >> MEMDIFF__PM_TABLE_SHIFT;
        const uint64_t page = (uint64_t)(t == key) & (uint64_t)((e & MEMDIFF__PM_PFN_MASK) != zero);
        holes |= (uint64_t)(t >> 7 == 0) << k; /* neither present nor swapped (bits 63, 62) */
        pages |= page << k;
        frames[c] = e & MEMDIFF__PM_PFN_MASK; /* c <= k: within the array */
        c += page;
    }
    uint64_t other = ~(holes | pages);
    if (m < 64)
        other &= (UINT64_C(1) << m) - 1;
    if (other)
        holes &= (UINT64_C(1) << memdiff__ctz64(other)) - 1;
    if (!holes)
        return 0;
    const unsigned h = 64 - memdiff__clz64(holes);
    if (h < 64)
        pages &= (UINT64_C(1) << h) - 1;
    if (!pages)
        return h;
    uint64_t *dst;
    if ((*rc = memdiff__linux_gather_mask(w, addr + ((uint64_t)i << w->proc->page_shift), pages,
                                          attrs, &dst)))
        return h;
    const unsigned set = memdiff__popcount64(pages); /* the first of frames[0..c) */
    if (dst)
        memcpy(dst, frames, set * sizeof *dst);
    *found += set;
    return h;
}

/* Stretch mode: feeds entries[base..base + n) for pages from addr with their frames
 * as stretches, and where stretches are this short, as the frames themselves (decoded in place:
 * memory the allocator handed out piecemeal has one page in two in a stretch of its own, which
 * would cost a stretch each). The pending run is delivered at the end: it may point into pm.
 * Returns how many pages are present or swapped, or a negative status. */
#define LITERAL_MAX 2u
int64_t memdiff__linux_decode_frames(memdiff__linux_walker *w, uint64_t addr, size_t base, size_t n,
                                     const struct page_region *extras, size_t nextras)
{
    uint64_t *pm = w->pagemap->entries + base;
    unsigned shift = w->proc->page_shift;
    int64_t found = 0;
    const uint64_t zero = w->proc->zero_pfn;
    /* Stretches end where a range of the scan's zero or huge pages begins or ends (lim); inside
     * one, present pages take its attributes (extra). extras[r]: the first range that ends
     * above lim. */
    size_t r = 0, lim = nextras ? 0 : n;
    unsigned extra = 0;
    int blocks = 0; /* after a short hole: memory may be fragmented, try sparse_block() */
    for (size_t i = 0; i < n;) {
        if (i >= lim)
            lim = next_extras(extras, nextras, &r, addr, shift, i, n, &extra);
        if (blocks && !w->pending && !extra) {
            int rc;
            size_t took = sparse_block(w, addr, pm, i, lim, &found, &rc);
            if (rc)
                return rc;
            if (took) {
                i += took;
                continue;
            }
        }
        unsigned a;
        uint64_t f, step;
        size_t j = stretch_at(w, pm, i, lim, &a, &f, &step);
        if (extra && (a & MEMDIFF_PAGE_PRESENT))
            a |= extra;
        const uint64_t *values = NULL;
        if (j - i <= LITERAL_MAX && a) {
            for (size_t k = i; k < j; k++, f += step)
                pm[k] = f;
            /* More pages of these attrs where no stretch of three starts go with them: how the
             * values are cut does not change what the snapshot stores (seq.c). */
            while (!(a & MEMDIFF_PAGE_ZERO) && j + 2 < lim) {
                uint64_t e = pm[j], d = pm[j + 1] - e;
                if (w->attr_table[e >> MEMDIFF__PM_TABLE_SHIFT] != a ||
                    !(e & MEMDIFF__PM_PRESENT) || (e & MEMDIFF__PM_PFN_MASK) == zero ||
                    ((d == 1 || d == 0 || d == UINT64_MAX) && pm[j + 2] - pm[j + 1] == d))
                    break;
                pm[j++] = e & MEMDIFF__PM_PFN_MASK;
            }
            values = pm + i;
            step = 1; /* the values in page order */
        }
        int rc =
            memdiff__linux_feed_frames(w, addr + ((uint64_t)i << shift), j - i, a, f, step, values);
        if (rc)
            return rc;
        found += a ? (int64_t)(j - i) : 0;
        blocks = w->gather && !a && j - i < 64;
        i = j;
    }
    int rc = memdiff__linux_flush(w);
    return rc ? rc : found;
}

/* Whether pages [addr, addr + n) (entries pm[0..n)) could hold a huge page:
 * memdiff__linux_scan_huge_candidates' test on the ends of each page table's span alone, a
 * necessary condition (present, frames aligned with the addresses, the last frame as far from the
 * first as its page). */
int memdiff__linux_maybe_huge(const memdiff__linux_walker *w, uint64_t addr, const uint64_t *pm,
                              size_t n)
{
    const memdiff__proc *p = w->proc;
    const uint64_t per = p->page_size / 8, vpage = addr >> p->page_shift;
    for (size_t i = 0; i < n;) {
        size_t j = (size_t)MEMDIFF__MIN((uint64_t)n, i + (per - ((vpage + i) & (per - 1))));
        uint64_t a = pm[i], b = pm[j - 1];
        uint64_t fa = a & MEMDIFF__PM_PFN_MASK, fb = b & MEMDIFF__PM_PFN_MASK;
        uint64_t misaligned = (fa - ((vpage + i) & (per - 1))) & (per - 1);
        if ((a & b & MEMDIFF__PM_PRESENT) && fa && !misaligned && fb - fa == j - 1 - i)
            return 1;
        i = j;
    }
    return 0;
}

/* Pages [addr, addr + npages) from pagemap, in batches. ranges (may be NULL) are the scan's
 * ranges over this window, for the zero / huge attributes; without them the scan is asked
 * itself (scan_huge_candidates, scan_extras) when the kernel has one. *found counts the pages
 * present or swapped. */
