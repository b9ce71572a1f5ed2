/*
 * transient.c - pages the kernel is moving while the walk reads them.
 *
 * While the kernel migrates a page (compaction, NUMA balancing, memory offlining), the page
 * table holds a migration entry for it: pagemap calls the page swapped (bit 62) and never
 * exclusively mapped, and PAGEMAP_SCAN calls it PAGE_IS_SWAPPED. The page is resident all the
 * while; a microsecond later the entry is a present page again. A snapshot that took such an
 * entry at its word reported a private page as a swapped, shared one, and the next snapshot's
 * diff "new private" memory that was never allocated (kcompactd moves pages of idle processes).
 * So an entry that can be one is read again until it is not, within a budget per snapshot: an
 * entry that stays is something that lasts (a hardware-poisoned page, device memory), and stays
 * as read.
 *
 * Which swap entries can be one: pagemap shows root the entry's swap type (bits 0-4). Real swap
 * areas are types 0 to MAX_SWAPFILES - 1; the kernel's own entries are the types above, in this
 * order: hardware poison, migration (3), device memory (3), PTE markers (31, which lasts: guard
 * regions, userfaultfd write-protection). MAX_SWAPFILES is 24 when every kind is built in, and
 * larger without some; 24 to 30 is taken for a possible migration (a real area of type 24 or
 * more takes 25 swap areas). Without the type (unprivileged callers; the scan never shows it),
 * a swap entry can be one when the system has no swap at all (SwapTotal 0).
 *
 * Guard regions (MADV_GUARD_INSTALL, Linux 6.13) are PTE markers as well: pagemap calls their
 * pages swapped too, and tells them by bit 58 (6.15); the scan by PAGE_IS_GUARD. Neither is
 * memory: pagemap.c decodes such an entry as no page, scan.c drops such ranges.
 */
#include <string.h>
#include <time.h>

#include "linux.h"

/* Waiting for moving pages, per process open: a migration takes microseconds (a huge page's, a
 * few hundred). The entries are read again at once, each pread about a microsecond; the wait
 * does not give up the CPU, which would page in code of the C library (sched_yield) in the
 * middle of a measured bracket. */
#define TRANSIENT_BUDGET_NS (10u * 1000u * 1000u)

#define SWP_TYPE_MASK 0x1fu
#define SWP_FIRST_KERNEL 24u /* MAX_SWAPFILES with every kind of kernel entry built in */
#define SWP_PTE_MARKER 31u

int memdiff__linux_swap_free_now(memdiff__proc *p)
{
    if (!p->swap_free)
        p->swap_free = memdiff__linux_swap_free(p) ? 1 : -1;
    return p->swap_free > 0;
}

int memdiff__linux_transient_entry(memdiff__proc *p, uint64_t e)
{
    if ((e & (MEMDIFF__PM_PRESENT | MEMDIFF__PM_SWAP | MEMDIFF__PM_GUARD)) != MEMDIFF__PM_SWAP)
        return 0;
    if (e & MEMDIFF__PM_PFN_MASK) {
        unsigned type = (unsigned)(e & SWP_TYPE_MASK);
        return type >= SWP_FIRST_KERNEL && type != SWP_PTE_MARKER;
    }
    return memdiff__linux_swap_free_now(p);
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec + 1; /* never 0 */
}

int memdiff__linux_transient_wait(memdiff__proc *p)
{
    uint64_t now = monotonic_ns();
    if (!p->transient_since)
        p->transient_since = now;
    if (now - p->transient_since >= TRANSIENT_BUDGET_NS)
        return 0;
    p->transient_waits++;
    if (p->transient_hook)
        p->transient_hook(p);
    return 1;
}

int memdiff__linux_settle_entries(memdiff__proc *p, uint64_t first, uint64_t *pm, size_t n)
{
    for (;;) {
        size_t lo = n, hi = 0;
        for (size_t i = 0; i < n; i++) {
            if (memdiff__linux_transient_entry(p, pm[i])) {
                lo = MEMDIFF__MIN(lo, i);
                hi = i + 1;
            }
        }
        if (lo >= hi || !memdiff__linux_transient_wait(p))
            return MEMDIFF_OK;
        /* The whole span again: its other pages are read later than their neighbours, as any
         * page of a walk that is not atomic is. */
        ssize_t r = memdiff__linux_pread_full(p->pagemap_fd, pm + lo, (hi - lo) * 8,
                                              (first + lo) * 8);
        if (r < 0) {
            int e = (int)-r;
            return memdiff__set_error(memdiff__linux_status(e), "read %s/pagemap at 0x%llx: %s",
                                      p->dir, (unsigned long long)((first + lo) << p->page_shift),
                                      memdiff__linux_errno_text(e));
        }
        if ((size_t)r < (hi - lo) * 8)
            memset((char *)(pm + lo) + r, 0, (hi - lo) * 8 - (size_t)r);
    }
}
