/*
 * scan.c - the PAGEMAP_SCAN stage of the page walk (Linux 6.7, Documentation/admin-guide/mm/
 * pagemap.rst): ranges of present or swapped pages with their categories, read from the page
 * table alone (a few ns a page; PAGE_IS_FILE costs the kernel each page's struct page too).
 *
 * The walk uses it three ways: fast depth's runs are its ranges (with the scan ahead of window.c,
 * one ioctl for a small region and the small regions behind it); standard and deep ask it where a
 * batch turns out sparse (walk.c) and for the zero and huge pages that pagemap does not flag
 * (memdiff__linux_scan_extras and its kin). presence.c asks it for attribution. Every answer is
 * checked (memdiff__linux_scan_into) before it moves the walk: the kernel's walk_end has been
 * seen pointing backwards. A kernel that refuses the scan as a whole (EINVAL, ENOTTY,
 * EOPNOTSUPP) turns it off for the process (proc->scan_refused): pagemap takes over.
 *
 * Owns struct memdiff__linux_scan's output vector of one call (window.c owns its window).
 */
#include <errno.h>
#include <string.h>

#include "emit.h"

/* A scan the kernel refused as a whole (EINVAL, ENOTTY: a kernel without this use of it): the
 * pagemap path takes over, for this and every later range of the process. */
static int scan_refused(int e)
{
    return e == EINVAL || e == ENOTTY || e == EOPNOTSUPP;
}

/* The ioctl over [start, end) into vec[0..cap), at most max_pages pages (0: no bound), asking
 * the pages whose categories, inverted where `inverted` says, have all of `mask` and any of
 * `anyof` (0: no such test), and returning `ret` of them; restarted after a signal. The number
 * of ranges, or -errno. */
static int scan_call(const memdiff__proc *p, struct pm_scan_arg *arg, struct page_region *vec,
                     size_t cap, uint64_t start, uint64_t end, uint64_t inverted, uint64_t mask,
                     uint64_t anyof, uint64_t ret, uint64_t max_pages)
{
    int n;
    do {
        memset(arg, 0, sizeof *arg);
        arg->size = sizeof *arg;
        arg->start = start;
        arg->end = end;
        arg->vec = (uint64_t)(uintptr_t)vec;
        arg->vec_len = cap;
        arg->max_pages = max_pages;
        arg->category_inverted = inverted;
        arg->category_mask = mask;
        arg->category_anyof_mask = anyof;
        arg->return_mask = ret;
        n = ioctl(p->pagemap_fd, PAGEMAP_SCAN, arg);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

int memdiff__linux_scan_presence(const memdiff__proc *p, struct page_region *vec, size_t cap,
                                 uint64_t start, uint64_t end, int absent, uint64_t max_pages)
{
    struct pm_scan_arg arg;
    return scan_call(p, &arg, vec, cap, start, end, absent ? PAGE_IS_PRESENT : 0, PAGE_IS_PRESENT,
                     0, PAGE_IS_PRESENT, max_pages);
}

/* Keeps the well-formed ranges of vec[0..n) inside [start, end), in order, guard ranges left out,
 * categories masked by ret: the kernel's answer decides how far the next call starts, so it must
 * not move us backwards. Returns how many were kept; *moving: one is swapped. */
static size_t keep_ranges(const memdiff__proc *p, struct page_region *vec, size_t n,
                          uint64_t start, uint64_t end, uint64_t ret, uint64_t guard, int *moving)
{
    if (memdiff__linux_ranges_plain(vec, n, start, end, p->page_size - 1, ret, moving))
        return n; /* kept as the kernel wrote them */
    uint64_t floor = start;
    size_t k = 0;
    *moving = 0;
    for (size_t i = 0; i < n; i++) {
        struct page_region r = vec[i];
        if (r.start < floor)
            r.start = floor;
        if (r.end > end)
            r.end = end;
        if (r.start >= r.end || ((r.start | r.end) & (p->page_size - 1)))
            continue;
        floor = r.end;
        if (r.categories & guard)
            continue;
        *moving = *moving || (r.categories & PAGE_IS_SWAPPED);
        r.categories &= ret;
        vec[k++] = r;
    }
    return k;
}

/* When one call fills the vector (or max_pages), walk_end is where the kernel stopped; but it
 * has been seen pointing behind ranges it already returned (it is kept from an earlier internal
 * pass). Never go back over what was returned. */
static uint64_t next_start(const struct page_region *vec, size_t k, size_t n, uint64_t walk_end,
                           uint64_t start, uint64_t end)
{
    uint64_t to = walk_end;
    if (k > 0 && vec[k - 1].end > to)
        to = vec[k - 1].end;
    if (n == 0 || to <= start || to > end)
        to = end;
    return to;
}

uint64_t memdiff__linux_scan_ret(const memdiff__proc *p, uint64_t ret)
{
    return p->scan_no_guard ? ret : ret | PAGE_IS_GUARD;
}

/* One PAGEMAP_SCAN call over [start, end) into vec (walk.h). A scan for swapped pages also asks
 * which are a guard region's and leaves those out (no memory), and is made again while it finds
 * swapped pages that may be pages caught moving (transient.c). */
int memdiff__linux_scan_into(memdiff__proc *p, struct page_region *vec, size_t cap, uint64_t start,
                             uint64_t end, uint64_t anyof, uint64_t ret, uint64_t max_pages,
                             uint64_t *next)
{
    struct pm_scan_arg arg;
    if (p->scan_refuse_at_call && --p->scan_refuse_at_call == 0)
        return -EINVAL;
    const int swapped = (anyof & PAGE_IS_SWAPPED) != 0;
    int n, moving;
    size_t k;
    for (;;) {
        uint64_t guard = swapped && !p->scan_no_guard ? PAGE_IS_GUARD : 0;
        n = scan_call(p, &arg, vec, cap, start, end, 0, 0, anyof, ret | guard, max_pages);
        if (n == -EINVAL && guard) {
            p->scan_no_guard = 1; /* before Linux 6.15: no such category */
            continue;
        }
        if (n < 0)
            return n;
        if (guard)
            p->scan_guard_ok = 1;
        if ((size_t)n > cap)
            n = (int)cap;
        k = keep_ranges(p, vec, (size_t)n, start, end, ret, guard, &moving);
        if (!moving || !memdiff__linux_swap_free_now(p) || !memdiff__linux_transient_wait(p))
            break;
    }
    *next = next_start(vec, k, (size_t)n, arg.walk_end, start, end);
    return (int)k;
}

int memdiff__linux_scan_accept(memdiff__proc *p, struct page_region *vec, int n, uint64_t start,
                               uint64_t end, uint64_t ret, uint64_t walk_end, int plain,
                               uint64_t *next)
{
    int moving = plain == 2;
    uint64_t guard = ret & PAGE_IS_GUARD;
    size_t k = plain ? (size_t)n
                     : keep_ranges(p, vec, (size_t)n, start, end, ret & ~guard, guard, &moving);
    if (moving && memdiff__linux_swap_free_now(p))
        return -1; /* maybe caught moving: memdiff__linux_scan_into's waits decide */
    *next = next_start(vec, k, (size_t)n, walk_end, start, end);
    return (int)k;
}

int memdiff__linux_scan_once(memdiff__linux_walker *w, uint64_t start, uint64_t end, uint64_t anyof,
                             uint64_t ret, uint64_t max_pages, uint64_t *next)
{
    return memdiff__linux_scan_into(w->proc, w->scan->ranges, MEMDIFF__LINUX_SCAN_VEC, start, end,
                                    anyof, ret, max_pages, next);
}

static int scan_error(const memdiff__proc *p, int e, uint64_t start, uint64_t end)
{
    return memdiff__set_error(memdiff__linux_status(e), "PAGEMAP_SCAN %s/pagemap 0x%llx-0x%llx: %s",
                              p->dir, (unsigned long long)start, (unsigned long long)end,
                              memdiff__linux_errno_text(e));
}

/* A scan over [start, end) that failed with n (-errno): MEMDIFF_OK when the caller is to go on
 * without it, because the kernel refused the scan (EINVAL, ENOTTY, EOPNOTSUPP: off for the
 * process from then on) or this range (EFAULT, above what access_ok() takes: pagemap answers
 * there); for ESRCH (the address space the file was opened on is gone) MEMDIFF_ESRCH when the
 * process exited, MEMDIFF_ECHANGED when it exec'd (memdiff__linux_space_gone); else the error's
 * status. */
int memdiff__linux_scan_failure(memdiff__proc *p, int n, uint64_t start, uint64_t end)
{
    if (-n == ESRCH) /* the mm the file was opened on is gone: exited, or exec'd */
        return memdiff__linux_space_gone(p, "PAGEMAP_SCAN");
    if (-n != EFAULT && !scan_refused(-n))
        return scan_error(p, -n, start, end);
    p->scan_refused = p->scan_refused || scan_refused(-n);
    return MEMDIFF_OK;
}

unsigned memdiff__linux_scan_attrs(uint64_t categories)
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

/* ORs the zero / huge attributes of ranges[0..n) into attrs[] of the pages [addr, addr + count
 * pages) (attrs[0] is addr's). Ranges outside are ignored. */
void memdiff__linux_mark_extras(const memdiff__proc *p, const struct page_region *r, size_t n,
                                uint64_t addr, size_t count, unsigned *attrs)
{
    unsigned shift = p->page_shift;
    uint64_t end = addr + ((uint64_t)count << shift);
    for (size_t i = 0; i < n; i++) {
        unsigned extra =
            memdiff__linux_scan_attrs(r[i].categories) & (MEMDIFF_PAGE_ZERO | MEMDIFF_PAGE_HUGE);
        uint64_t lo = MEMDIFF__MAX(r[i].start, addr), hi = MEMDIFF__MIN(r[i].end, end);
        if (!extra || lo >= hi)
            continue;
        for (size_t k = (size_t)((lo - addr) >> shift); k < (size_t)((hi - addr) >> shift); k++)
            if (attrs[k] & MEMDIFF_PAGE_PRESENT)
                attrs[k] |= extra;
    }
}

/* Asks the scan which pages of [addr, addr + count pages) are zero or huge pages and marks them
 * in attrs[] (attrs[0] is addr's). A refused scan marks nothing: the kernel has no scan for us. */
int memdiff__linux_scan_extras(memdiff__linux_walker *w, uint64_t addr, size_t count,
                               unsigned *attrs)
{
    memdiff__proc *p = w->proc;
    if (p->scan_refused)
        return MEMDIFF_OK;
    uint64_t cur = addr, end = addr + ((uint64_t)count << p->page_shift);
    const uint64_t mask = PAGE_IS_PFNZERO | PAGE_IS_HUGE;
    while (cur < end) {
        uint64_t next;
        int n = memdiff__linux_scan_once(w, cur, end, mask, mask, 0, &next);
        if (n < 0)
            return memdiff__linux_scan_failure(p, n, cur,
                                               end); /* without the scan: nothing to mark */
        memdiff__linux_mark_extras(p, w->scan->ranges, (size_t)n, addr, count, attrs);
        cur = next;
    }
    return MEMDIFF_OK;
}

/* With frame numbers: a page table entry at the PMD level (a transparent huge page, a 2 MiB
 * hugetlb page) maps frames that are consecutive and aligned to the PMD's span, so only pages
 * whose frames are could be huge. Those stretches, usually none in memory of small pages, are
 * asked of the scan. pfn[] and attrs[] are the batch's, from index 0 for page addr. */
int memdiff__linux_scan_huge_candidates(memdiff__linux_walker *w, uint64_t addr, size_t count,
                                        const uint64_t *pfn, unsigned *attrs)
{
    memdiff__proc *p = w->proc;
    const uint64_t per = p->page_size / 8; /* entries of a page table page: pages per PMD */
    uint64_t vpage = addr >> p->page_shift;
    size_t i = 0, lo = 0, hi = 0; /* candidates [lo, hi) not yet asked about */
    while (i < count) {
        size_t j = (size_t)MEMDIFF__MIN((uint64_t)count, i + (per - ((vpage + i) & (per - 1))));
        uint64_t base = pfn[i] - ((vpage + i) & (per - 1));
        int cand = (attrs[i] & MEMDIFF_PAGE_PRESENT) && pfn[i] && !(base & (per - 1));
        for (size_t k = i + 1; cand && k < j; k++)
            cand = (attrs[k] & MEMDIFF_PAGE_PRESENT) && pfn[k] - ((vpage + k) & (per - 1)) == base;
        if (cand) {
            if (hi != i) {
                int rc = hi > lo
                             ? memdiff__linux_scan_extras(w, addr + ((uint64_t)lo << p->page_shift),
                                                          hi - lo, attrs + lo)
                             : MEMDIFF_OK;
                if (rc)
                    return rc;
                lo = i;
            }
            hi = j;
        }
        i = j;
    }
    return hi > lo ? memdiff__linux_scan_extras(w, addr + ((uint64_t)lo << p->page_shift), hi - lo,
                                                attrs + lo)
                   : MEMDIFF_OK;
}

/* Stretch mode's way to the zero and huge pages of [addr, addr + count pages), for a batch
 * where maybe_huge() saw a candidate: the scan's ranges (in w->scan->ranges), whose attributes
 * decode_frames() gives the stretches inside them, so that the batch is not decoded page by page
 * (a transparent huge page is a stretch of 512 frames). 1 when one call covered the batch (a
 * refused scan covers it with no range), 0 when the ranges did not fit in the vector (the caller
 * then decodes page by page), or a negative status. */
int memdiff__linux_scan_batch_extras(memdiff__linux_walker *w, uint64_t addr, size_t count,
                                     const struct page_region **r, size_t *nr)
{
    memdiff__proc *p = w->proc;
    *r = w->scan->ranges;
    *nr = 0;
    if (p->scan_refused)
        return 1;
    const uint64_t end = addr + ((uint64_t)count << p->page_shift);
    const uint64_t mask = PAGE_IS_PFNZERO | PAGE_IS_HUGE;
    uint64_t next;
    int n = memdiff__linux_scan_once(w, addr, end, mask, mask, 0, &next);
    if (n < 0) {
        int rc = memdiff__linux_scan_failure(p, n, addr, end);
        return rc ? rc : 1;
    }
    *nr = (size_t)n;
    return next >= end;
}

/* The scan of an exited process walks an empty mm and finds nothing, without an error. One
 * pagemap entry tells (pagemap_read() reads nothing once the mm is gone) for one pread, where
 * memdiff__linux_alive() costs five syscalls for every region without pages. For a scan from
 * start that found nothing: MEMDIFF_ESRCH when the process has exited, else MEMDIFF_OK. */
int memdiff__linux_exited_if_empty(memdiff__proc *p, uint64_t start)
{
    uint64_t e;
    if (memdiff__linux_pread_full(p->pagemap_fd, &e, sizeof e, (start >> p->page_shift) * 8) == 0)
        return memdiff__linux_space_gone(p, "PAGEMAP_SCAN");
    return MEMDIFF_OK;
}
