/*
 * pages.c - page runs of a range from pagemap, PAGEMAP_SCAN, kpageflags and kpagecount
 * (Documentation/admin-guide/mm/pagemap.rst).
 *
 * Paths, cheapest first:
 *  - fast with PAGEMAP_SCAN (Linux 6.7): the kernel returns ranges of present or swapped pages
 *    with their categories; no per-page data crosses to user space at all.
 *  - standard / deep with PAGEMAP_SCAN: the scan finds where pages are, and pagemap is read only
 *    there. Huge sparse reservations (AddressSanitizer's shadow: terabytes, mostly empty) then
 *    cost a few ioctls instead of gigabytes of pagemap.
 *  - without the scan (older kernels, fixture files): pagemap in batches over the whole range.
 * Deep adds kpageflags and kpagecount, read per run of nearby frames after sorting and
 * deduplicating the frames of a batch. No path makes a syscall per page.
 */
#include <errno.h>
#include <string.h>

#include "linux.h"

/* kpageflags bits (include/uapi/linux/kernel-page-flags.h; pagemap.rst "kpageflags"). */
#define KPF_REFERENCED 2
#define KPF_DIRTY 4
#define KPF_ACTIVE 6
#define KPF_HUGE 17
#define KPF_KSM 21
#define KPF_THP 22
#define KPF_ZERO_PAGE 24

/* Frames no further apart than this share one pread of kpageflags / kpagecount: reading a few
 * unneeded 8-byte entries is cheaper than another syscall. SPAN bounds one read (32 KiB). */
#define FRAME_GAP 64u
#define SPAN 4096u

#define RESIDENT (MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_SWAPPED)

typedef struct walker {
    memdiff__proc *proc;
    const memdiff__page_sink *sink;
    int pfn;        /* deliver frame numbers */
    int deep;       /* deliver kernel page flags and map counts */
    int fast;       /* fast depth: no exclusivity, no soft-dirty, as PAGEMAP_SCAN gives it */
    /* The pending run: pages [start, start + n) with attrs, arrays at index off. It stays open
     * across batches so that runs come out whole; its array entries move to index 0. */
    int pending;
    uint64_t start, n;
    unsigned attrs;
    size_t off;
} walker;

static int flush(walker *w)
{
    if (!w->pending)
        return MEMDIFF_OK;
    w->pending = 0;
    memdiff__proc *p = w->proc;
    return w->sink->run(w->sink->ctx, w->start, w->n, w->attrs, w->pfn ? p->pfn + w->off : NULL,
                        w->deep ? p->kflags + w->off : NULL, w->deep ? p->mapcount + w->off : NULL);
}

/* Pages [addr, addr + n) with attrs and (when arrays are delivered) entries from index idx. */
static int feed(walker *w, uint64_t addr, uint64_t n, unsigned attrs, size_t idx)
{
    uint64_t ps = w->proc->page_size;
    if (!(attrs & RESIDENT))
        return flush(w);
    if (w->pending && w->attrs == attrs && w->start + w->n * ps == addr &&
        (!(w->pfn || w->deep) || w->off + w->n == idx)) {
        w->n += n;
        return MEMDIFF_OK;
    }
    int rc = flush(w);
    if (rc)
        return rc;
    w->pending = 1;
    w->start = addr;
    w->n = n;
    w->attrs = attrs;
    w->off = idx;
    return MEMDIFF_OK;
}

/* Moves the pending run's array entries to index 0 so that the next batch can extend it. */
static void carry(walker *w)
{
    memdiff__proc *p = w->proc;
    if (!w->pending || w->off == 0 || !(w->pfn || w->deep))
        return;
    memmove(p->pfn, p->pfn + w->off, w->n * sizeof *p->pfn);
    if (w->deep) {
        memmove(p->kflags, p->kflags + w->off, w->n * sizeof *p->kflags);
        memmove(p->mapcount, p->mapcount + w->off, w->n * sizeof *p->mapcount);
    }
    w->off = 0;
}

static int alloc_u64(memdiff__proc *p, uint64_t **slot, size_t count)
{
    if (!*slot) {
        *slot = memdiff__arena_alloc(p->scratch, count * sizeof **slot);
        if (!*slot)
            return MEMDIFF_ENOMEM;
    }
    return MEMDIFF_OK;
}

static int buffers(walker *w, int scan)
{
    memdiff__proc *p = w->proc;
    const size_t B = MEMDIFF__LINUX_BATCH;
    int rc = MEMDIFF_OK;
    if (scan && !p->vec) {
        p->vec = memdiff__arena_alloc(p->scratch, MEMDIFF__LINUX_SCAN_VEC * sizeof *p->vec);
        if (!p->vec)
            return MEMDIFF_ENOMEM;
    }
    if (scan && w->fast)
        return MEMDIFF_OK;
    if (!p->attrs) {
        p->attrs = memdiff__arena_alloc(p->scratch, B * sizeof *p->attrs);
        if (!p->attrs)
            return MEMDIFF_ENOMEM;
    }
    rc = alloc_u64(p, &p->pm, B);
    if (!rc && w->pfn)
        rc = alloc_u64(p, &p->pfn, B);
    if (!rc && w->deep) {
        rc = alloc_u64(p, &p->kflags, B);
        if (!rc)
            rc = alloc_u64(p, &p->mapcount, B);
        if (!rc)
            rc = alloc_u64(p, &p->frames, B);
        if (!rc)
            rc = alloc_u64(p, &p->frame_flags, B);
        if (!rc)
            rc = alloc_u64(p, &p->frame_counts, B);
        if (!rc)
            rc = alloc_u64(p, &p->span, SPAN);
    }
    return rc;
}

/* ---- deep: frame facts ------------------------------------------------------------------- */

static void sift_down(uint64_t *a, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && a[child + 1] > a[child])
            child++;
        if (a[root] >= a[child])
            return;
        uint64_t t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

/* In place, O(n log n), no allocation: the frames of one batch. */
static void heap_sort(uint64_t *a, size_t n)
{
    if (n < 2)
        return;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n - 1; end > 0; end--) {
        uint64_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end);
    }
}

static size_t find_frame(const uint64_t *a, size_t n, uint64_t pfn)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < pfn)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* out[i] = the 8-byte entry of frames[i] in fd (kpageflags or kpagecount), for the sorted
 * unique frames[0..n). One pread per span of nearby frames. Frames past the end of the file
 * (beyond max_pfn) read as 0. */
static int read_frame_table(memdiff__proc *p, int fd, const char *name, const uint64_t *frames,
                            size_t n, uint64_t *out)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && frames[j] - frames[j - 1] <= FRAME_GAP && frames[j] - frames[i] < SPAN)
            j++;
        uint64_t first = frames[i];
        size_t count = (size_t)(frames[j - 1] - first + 1);
        if (first > (UINT64_MAX >> 4)) {
            for (size_t k = i; k < j; k++)
                out[k] = 0;
            i = j;
            continue;
        }
        ssize_t r = memdiff__linux_pread_full(fd, p->span, count * 8, first * 8);
        if (r < 0)
            return memdiff__set_error(memdiff__linux_status((int)-r), "read %s/%s: %s",
                                      p->proc_root, name, memdiff__linux_errno_text((int)-r));
        size_t got = (size_t)r / 8;
        for (size_t k = i; k < j; k++) {
            size_t at = (size_t)(frames[k] - first);
            out[k] = at < got ? p->span[at] : 0;
        }
        i = j;
    }
    return MEMDIFF_OK;
}

static unsigned kpf_attrs(uint64_t f)
{
    unsigned a = 0;
    if (f >> KPF_REFERENCED & 1)
        a |= MEMDIFF_PAGE_REFERENCED;
    if (f >> KPF_DIRTY & 1)
        a |= MEMDIFF_PAGE_DIRTY;
    if (f >> KPF_ACTIVE & 1)
        a |= MEMDIFF_PAGE_ACTIVE;
    if ((f >> KPF_HUGE & 1) || (f >> KPF_THP & 1))
        a |= MEMDIFF_PAGE_HUGE;
    if (f >> KPF_KSM & 1)
        a |= MEMDIFF_PAGE_KSM;
    if (f >> KPF_ZERO_PAGE & 1)
        a |= MEMDIFF_PAGE_ZERO;
    return a;
}

/* Fills kflags / mapcount at [base, base + n) for the batch's pages and merges the flags into
 * attrs[0..n). */
static int frame_facts(walker *w, size_t base, size_t n)
{
    memdiff__proc *p = w->proc;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        p->kflags[base + i] = 0;
        p->mapcount[base + i] = 0;
        if ((p->attrs[i] & MEMDIFF_PAGE_PRESENT) && p->pfn[base + i])
            p->frames[m++] = p->pfn[base + i];
    }
    if (m == 0)
        return MEMDIFF_OK;
    heap_sort(p->frames, m);
    size_t u = 1;
    for (size_t i = 1; i < m; i++)
        if (p->frames[i] != p->frames[u - 1])
            p->frames[u++] = p->frames[i];
    int rc = read_frame_table(p, p->kpageflags_fd, "kpageflags", p->frames, u, p->frame_flags);
    if (!rc)
        rc = read_frame_table(p, p->kpagecount_fd, "kpagecount", p->frames, u, p->frame_counts);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        uint64_t pfn = p->pfn[base + i];
        if (!(p->attrs[i] & MEMDIFF_PAGE_PRESENT) || !pfn)
            continue;
        size_t k = find_frame(p->frames, u, pfn);
        p->kflags[base + i] = p->frame_flags[k];
        p->mapcount[base + i] = p->frame_counts[k];
        p->attrs[i] |= kpf_attrs(p->frame_flags[k]);
    }
    return MEMDIFF_OK;
}

/* ---- pagemap ----------------------------------------------------------------------------- */

static unsigned scan_attrs(uint64_t categories)
{
    unsigned a = 0;
    if (categories & PAGE_IS_PRESENT)
        a |= MEMDIFF_PAGE_PRESENT;
    if (categories & PAGE_IS_SWAPPED)
        a |= MEMDIFF_PAGE_SWAPPED;
    if (categories & PAGE_IS_FILE)
        a |= MEMDIFF_PAGE_FILE;
    if (categories & PAGE_IS_PFNZERO)
        a |= MEMDIFF_PAGE_ZERO;
    if (categories & PAGE_IS_HUGE)
        a |= MEMDIFF_PAGE_HUGE;
    return a;
}

static unsigned entry_attrs(const walker *w, uint64_t e)
{
    unsigned a = 0;
    if (e & MEMDIFF__PM_PRESENT) {
        a |= MEMDIFF_PAGE_PRESENT;
        uint64_t pfn = e & MEMDIFF__PM_PFN_MASK;
        if (w->proc->zero_pfn && pfn == w->proc->zero_pfn)
            a |= MEMDIFF_PAGE_ZERO;
    } else if (e & MEMDIFF__PM_SWAP) {
        a |= MEMDIFF_PAGE_SWAPPED;
    } else {
        return 0;
    }
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

/* Reads pagemap for [addr, addr + n pages), n at most one batch, into p->pm. Entries past the
 * end of what could be read are 0 (not present): a fixture file ends early, and the kernel
 * stops at the end of the user address space. A live process that returns nothing has exited:
 * pagemap_read() finds no mm and reads 0 bytes. */
static int read_pagemap(walker *w, uint64_t addr, size_t n)
{
    memdiff__proc *p = w->proc;
    ssize_t r = memdiff__linux_pread_full(p->pagemap_fd, p->pm, n * 8,
                                          (addr >> p->page_shift) * 8);
    if (r < 0) {
        int e = (int)-r;
        return memdiff__set_error(memdiff__linux_status(e), "read %s/pagemap at 0x%llx: %s",
                                  p->dir, (unsigned long long)addr, memdiff__linux_errno_text(e));
    }
    size_t got = (size_t)r / 8;
    if (got < n) {
        if (got == 0 && !memdiff__linux_alive(p))
            return memdiff__set_error(MEMDIFF_ESRCH, "read %s/pagemap: the process has exited",
                                      p->dir);
        memset(p->pm + got, 0, (n - got) * sizeof *p->pm);
    }
    return MEMDIFF_OK;
}

/* The extra attributes the scan knows and pagemap does not (zero page, huge page), for a page
 * at addr, from the ascending ranges[*at..count). */
static unsigned scan_extra(const struct page_region *ranges, size_t count, size_t *at,
                           uint64_t addr)
{
    if (!ranges)
        return 0;
    while (*at < count && ranges[*at].end <= addr)
        (*at)++;
    if (*at < count && ranges[*at].start <= addr)
        return scan_attrs(ranges[*at].categories) & (MEMDIFF_PAGE_ZERO | MEMDIFF_PAGE_HUGE);
    return 0;
}

/* Pages [addr, addr + npages) from pagemap, in batches. ranges (may be NULL) are the scan's
 * ranges over this window, for the zero / huge attributes. */
static int walk_pagemap(walker *w, uint64_t addr, uint64_t npages,
                        const struct page_region *ranges, size_t nranges)
{
    memdiff__proc *p = w->proc;
    uint64_t ps = p->page_size;
    int arrays = w->pfn || w->deep;
    size_t at = 0;
    while (npages > 0) {
        if (w->pending && w->start + w->n * ps != addr) {
            int rc = flush(w);
            if (rc)
                return rc;
        }
        size_t base = arrays && w->pending ? (size_t)w->n : 0;
        if (base == MEMDIFF__LINUX_BATCH) {
            /* A run of a whole batch: deliver it, it cannot carry further. */
            int rc = flush(w);
            if (rc)
                return rc;
            base = 0;
        }
        size_t n = MEMDIFF__LINUX_BATCH - base;
        if (n > npages)
            n = (size_t)npages;
        int rc = read_pagemap(w, addr, n);
        if (rc)
            return rc;
        for (size_t i = 0; i < n; i++) {
            uint64_t e = p->pm[i];
            unsigned a = entry_attrs(w, e);
            if (a)
                a |= scan_extra(ranges, nranges, &at, addr + i * ps);
            p->attrs[i] = a;
            if (w->pfn)
                p->pfn[base + i] = (a & MEMDIFF_PAGE_PRESENT) ? e & MEMDIFF__PM_PFN_MASK : 0;
        }
        if (w->deep) {
            rc = frame_facts(w, base, n);
            if (rc)
                return rc;
        }
        for (size_t i = 0; i < n; i++) {
            rc = feed(w, addr + i * ps, 1, p->attrs[i], base + i);
            if (rc)
                return rc;
        }
        carry(w);
        addr += n * ps;
        npages -= n;
    }
    return MEMDIFF_OK;
}

/* ---- PAGEMAP_SCAN ------------------------------------------------------------------------ */

/* The scan's ranges[0..n): at fast depth they are the runs; deeper, pagemap is read over
 * windows of nearby ranges (at most a batch long), never over the gaps between distant ones. */
static int use_ranges(walker *w, const struct page_region *r, size_t n)
{
    uint64_t ps = w->proc->page_size;
    if (w->fast) {
        for (size_t i = 0; i < n; i++) {
            int rc = feed(w, r[i].start, (r[i].end - r[i].start) / ps, scan_attrs(r[i].categories),
                          0);
            if (rc)
                return rc;
        }
        return MEMDIFF_OK;
    }
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && (r[j].end - r[i].start) / ps <= MEMDIFF__LINUX_BATCH)
            j++;
        uint64_t start = r[i].start, end = r[j - 1].end;
        int rc = walk_pagemap(w, start, (end - start) / ps, r + i, j - i);
        if (rc)
            return rc;
        i = j;
    }
    return MEMDIFF_OK;
}

static int walk_scan(walker *w, uint64_t start, uint64_t end)
{
    memdiff__proc *p = w->proc;
    uint64_t cur = start;
    int found = 0;
    while (cur < end) {
        struct pm_scan_arg arg;
        memset(&arg, 0, sizeof arg);
        arg.size = sizeof arg;
        arg.start = cur;
        arg.end = end;
        arg.vec = (uint64_t)(uintptr_t)p->vec;
        arg.vec_len = MEMDIFF__LINUX_SCAN_VEC;
        arg.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED;
        arg.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_FILE | PAGE_IS_PFNZERO |
                          PAGE_IS_HUGE;
        int n = ioctl(p->pagemap_fd, PAGEMAP_SCAN, &arg);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            if (e == EFAULT) {
                /* The scan checks its range with access_ok(): [vsyscall] lies above the user
                 * address space. pagemap answers there (with nothing: it stops at TASK_SIZE). */
                int rc = buffers(w, 0);
                return rc ? rc : walk_pagemap(w, cur, (end - cur) >> p->page_shift, NULL, 0);
            }
            return memdiff__set_error(memdiff__linux_status(e),
                                      "PAGEMAP_SCAN %s/pagemap 0x%llx-0x%llx: %s", p->dir,
                                      (unsigned long long)cur, (unsigned long long)end,
                                      memdiff__linux_errno_text(e));
        }
        if (n == 0)
            break;
        if ((size_t)n > MEMDIFF__LINUX_SCAN_VEC)
            n = (int)MEMDIFF__LINUX_SCAN_VEC;
        /* Keep only well-formed ranges inside the request, in order: the kernel's answer
         * decides how far the next call starts, so it must not move us backwards. */
        size_t k = 0;
        uint64_t floor = cur;
        for (int i = 0; i < n; i++) {
            struct page_region r = p->vec[i];
            if (r.start < floor)
                r.start = floor;
            if (r.end > end)
                r.end = end;
            if (r.start >= r.end || ((r.start | r.end) & (p->page_size - 1)))
                continue;
            p->vec[k++] = r;
            floor = r.end;
        }
        found = found || k > 0;
        int rc = use_ranges(w, p->vec, k);
        if (rc)
            return rc;
        /* When one call fills the vector, walk_end is where the kernel stopped; but it has been
         * seen pointing behind ranges it already returned (it is kept from an earlier internal
         * pass). Never go back over what was returned. */
        uint64_t next = arg.walk_end;
        if (k > 0 && p->vec[k - 1].end > next)
            next = p->vec[k - 1].end;
        if (next <= cur)
            break;
        cur = next;
    }
    /* The scan of an exited process walks an empty mm and finds nothing, without an error. */
    if (!found && !memdiff__linux_alive(p))
        return memdiff__set_error(MEMDIFF_ESRCH, "PAGEMAP_SCAN %s/pagemap: the process has exited",
                                  p->dir);
    return MEMDIFF_OK;
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
    if (start == end)
        return MEMDIFF_OK;

    walker w;
    memset(&w, 0, sizeof w);
    w.proc = proc;
    w.sink = sink;
    w.fast = depth == MEMDIFF_DEPTH_FAST;
    w.pfn = depth >= MEMDIFF_DEPTH_STANDARD && (proc->sources & MEMDIFF_SRC_PFN);
    w.deep = depth >= MEMDIFF_DEPTH_DEEP && (proc->sources & MEMDIFF_SRC_PFN) &&
             (proc->sources & MEMDIFF_SRC_KPAGEFLAGS) && (proc->sources & MEMDIFF_SRC_KPAGECOUNT);
    int scan = (proc->sources & MEMDIFF_SRC_PAGEMAP_SCAN) != 0;
    int rc = buffers(&w, scan);
    if (rc)
        return rc;
    if (scan)
        rc = walk_scan(&w, start, end);
    else
        rc = walk_pagemap(&w, start, (end - start) >> proc->page_shift, NULL, 0);
    if (!rc)
        rc = flush(&w);
    return rc;
}
