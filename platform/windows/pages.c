/*
 * pages.c - resident pages from the working set: QueryWorkingSet (the whole working set in one
 * call, as MemDiff read it) or QueryWorkingSetEx (per page of the committed ranges asked for).
 *
 * Which call serves a snapshot: QueryWorkingSetEx at standard depth and above, because it answers
 * for exactly the pages asked, at the moment they are asked, and also tells large pages
 * (MEMDIFF_PAGE_HUGE); QueryWorkingSet at fast depth, because one call covers the whole process.
 * Either is used alone when the other fails (Wine 8 fails QueryWorkingSet with
 * ERROR_INVALID_PARAMETER). Both report the same per-page facts otherwise: in the working set
 * (MEMDIFF_PAGE_PRESENT), and shareable or not.
 *
 * Private / shared: a page is MEMDIFF_PAGE_PRIVATE when the working set calls it not Shared
 * (private memory, or a copy-on-write page already copied); a Shared page belongs to a section
 * (image, mapped file, pagefile-backed section) that other processes can map, whatever its
 * ShareCount says at this instant, and is MEMDIFF_PAGE_FILE, like Linux page-cache and shared
 * anonymous pages. This is Process Explorer's "WS Private" / "WS Shareable" split.
 *
 * Windows has no per-page swap state in these calls: a page trimmed from the working set is
 * simply not present (it may sit on the standby or modified list, or in the paging file).
 */
#include <string.h>

#include "win.h"

/* PSAPI_WORKING_SET_BLOCK (psapi.h) bits. */
#define WS_SHARED (1u << 8)
#define WS_PAGE_MASK (~(ULONG_PTR)0xfff) /* VirtualPage, bits 12 and up: 4 KiB pages */

/* PSAPI_WORKING_SET_EX_BLOCK (psapi.h) bits. */
#define WSX_VALID ((ULONG_PTR)1 << 0)
#define WSX_SHARED ((ULONG_PTR)1 << 15)
#define WSX_LARGE_PAGE ((ULONG_PTR)1 << 23)

static unsigned shared_attrs(int shared, unsigned region_flags)
{
    if (!shared)
        return MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE;
    unsigned a = MEMDIFF_PAGE_PRESENT;
    if (region_flags & MEMDIFF__WIN_REGION_FILE)
        a |= MEMDIFF_PAGE_FILE;
    return a;
}

unsigned memdiff__win_decode_ws_entry(ULONG_PTR flags, unsigned region_flags)
{
    return shared_attrs((flags & WS_SHARED) != 0, region_flags);
}

unsigned memdiff__win_decode_ws_ex(ULONG_PTR flags, unsigned region_flags)
{
    if (!(flags & WSX_VALID))
        return 0;
    unsigned a = shared_attrs((flags & WSX_SHARED) != 0, region_flags);
    if (flags & WSX_LARGE_PAGE)
        a |= MEMDIFF_PAGE_HUGE;
    return a;
}

/* Heap sort by address: in place, no recursion, O(n log n) for working sets of any size. */
static void sift(memdiff__win_page *v, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && v[child + 1].addr > v[child].addr)
            child++;
        if (v[root].addr >= v[child].addr)
            return;
        memdiff__win_page t = v[root];
        v[root] = v[child];
        v[child] = t;
        root = child;
    }
}

static void sort_pages(memdiff__win_page *v, size_t n)
{
    for (size_t i = n / 2; i > 0; i--)
        sift(v, i - 1, n);
    for (size_t end = n; end > 1; end--) {
        memdiff__win_page t = v[0];
        v[0] = v[end - 1];
        v[end - 1] = t;
        sift(v, 0, end - 1);
    }
}

size_t memdiff__win_decode_ws(const ULONG_PTR *entries, size_t n, uint64_t max_addr,
                              unsigned (*region_flags_at)(void *ctx, uint64_t addr), void *ctx,
                              memdiff__win_page *out)
{
    /* The list is in working-set order, not address order: sort first, so that the region
     * lookup walks forward and equal pages meet. attrs holds the raw low bits until then. */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t addr = (uint64_t)(entries[i] & WS_PAGE_MASK);
        if (addr > max_addr)
            continue;
        out[k].addr = addr;
        out[k].attrs = (unsigned)(entries[i] & 0xfffu);
        k++;
    }
    sort_pages(out, k);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m > 0 && out[m - 1].addr == out[i].addr)
            continue; /* listed twice: once is the truth */
        unsigned raw = out[i].attrs;
        out[m].addr = out[i].addr;
        out[m].attrs = memdiff__win_decode_ws_entry(raw, region_flags_at(ctx, out[i].addr));
        m++;
    }
    return m;
}

/* ---- the region at an address, for the page walk (calls come in ascending order) ---------- */

static const memdiff__win_region *region_at(memdiff__proc *proc, uint64_t addr)
{
    size_t i = proc->region_cursor;
    if (i >= proc->region_count || proc->regions[i].start > addr) {
        size_t lo = 0, hi = proc->region_count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (proc->regions[mid].end <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        i = lo;
    }
    while (i < proc->region_count && proc->regions[i].end <= addr)
        i++;
    proc->region_cursor = i;
    if (i < proc->region_count && proc->regions[i].start <= addr)
        return &proc->regions[i];
    return NULL;
}

static unsigned flags_of(const memdiff__win_region *r)
{
    return r && (r->type == MEM_IMAGE || r->type == MEM_MAPPED) ? MEMDIFF__WIN_REGION_FILE : 0;
}

static unsigned region_flags_at(void *ctx, uint64_t addr)
{
    return flags_of(region_at(ctx, addr));
}

/* ---- QueryWorkingSet: the whole working set, read once --------------------------------- */

static int read_ws(memdiff__proc *proc)
{
    proc->ws_read = 1;
    /* NumberOfEntries, then the entries: as a plain array, since the SDK declares the entries
     * as a one-element array. */
    ULONG_PTR *buf = NULL;
    size_t bytes = 0, cap = 0; /* entries */
    size_t want = 16384;
    for (int tries = 0;; tries++) {
        size_t need = (1 + want) * sizeof(ULONG_PTR);
        ULONG_PTR *grown = memdiff__arena_grow(proc->scratch, buf, bytes, need);
        if (!grown)
            return MEMDIFF_ENOMEM;
        buf = grown;
        bytes = need;
        cap = want;
        if (QueryWorkingSet(proc->process, buf, (DWORD)bytes))
            break;
        DWORD err = GetLastError();
        if (err != ERROR_BAD_LENGTH || tries == 8)
            return memdiff__win_error(proc->process, err, "QueryWorkingSet(pid %d)", proc->pid);
        /* NumberOfEntries says how many there were: leave room for growth meanwhile. */
        want = buf[0] + buf[0] / 8 + 1024;
    }
    size_t n = buf[0] < cap ? buf[0] : cap;
    proc->ws = memdiff__arena_alloc(proc->scratch, (n ? n : 1) * sizeof *proc->ws);
    if (!proc->ws)
        return MEMDIFF_ENOMEM;
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    proc->region_cursor = 0;
    proc->ws_count = memdiff__win_decode_ws(buf + 1, n,
                                            (uint64_t)(uintptr_t)si.lpMaximumApplicationAddress,
                                            region_flags_at, proc, proc->ws);
    proc->region_cursor = 0;
    proc->ws_cursor = 0;
    return MEMDIFF_OK;
}

/* Hands v[0..n) (ascending addresses) to the sink as maximal runs. */
static int emit_pages(memdiff__proc *proc, const memdiff__win_page *v, size_t n,
                      const memdiff__page_sink *sink)
{
    uint64_t ps = proc->page_size;
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && v[j].attrs == v[i].attrs && v[j].addr == v[j - 1].addr + ps)
            j++;
        int rc = sink->run(sink->ctx, v[i].addr, j - i, v[i].attrs, NULL);
        if (rc)
            return rc;
        i = j;
    }
    return MEMDIFF_OK;
}

static int pages_from_ws(memdiff__proc *proc, uint64_t start, uint64_t end,
                         const memdiff__page_sink *sink)
{
    if (!proc->ws_read) {
        int rc = read_ws(proc);
        if (rc)
            return rc;
    }
    /* Ranges come in ascending order: go on from the last position, or search back. */
    size_t i = proc->ws_cursor;
    if (i > proc->ws_count || (i > 0 && proc->ws[i - 1].addr >= start)) {
        size_t lo = 0, hi = proc->ws_count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (proc->ws[mid].addr < start)
                lo = mid + 1;
            else
                hi = mid;
        }
        i = lo;
    }
    while (i < proc->ws_count && proc->ws[i].addr < start)
        i++;
    size_t j = i;
    while (j < proc->ws_count && proc->ws[j].addr < end)
        j++;
    proc->ws_cursor = j;
    return emit_pages(proc, proc->ws + i, j - i, sink);
}

/* ---- QueryWorkingSetEx: the committed pages of a range, in batches ----------------------- */

static int ex_batch(memdiff__proc *proc, uint64_t lo, size_t count, unsigned region_flags,
                    const memdiff__page_sink *sink)
{
    uint64_t ps = proc->page_size;
    for (size_t i = 0; i < count; i++) {
        proc->ex[i].VirtualAddress = (PVOID)(uintptr_t)(lo + i * ps);
        proc->ex[i].VirtualAttributes.Flags = 0;
    }
    if (!QueryWorkingSetEx(proc->process, proc->ex, (DWORD)(count * sizeof *proc->ex)))
        return memdiff__win_error(proc->process, GetLastError(),
                                  "QueryWorkingSetEx(pid %d, 0x%llx, %zu pages)", proc->pid,
                                  (unsigned long long)lo, count);
    size_t i = 0;
    while (i < count) {
        unsigned a = memdiff__win_decode_ws_ex(proc->ex[i].VirtualAttributes.Flags, region_flags);
        size_t j = i + 1;
        while (j < count &&
               memdiff__win_decode_ws_ex(proc->ex[j].VirtualAttributes.Flags, region_flags) == a)
            j++;
        if (a) {
            int rc = sink->run(sink->ctx, lo + i * ps, j - i, a, NULL);
            if (rc)
                return rc;
        }
        i = j;
    }
    return MEMDIFF_OK;
}

static int pages_from_ex(memdiff__proc *proc, uint64_t start, uint64_t end,
                         const memdiff__page_sink *sink)
{
    if (!proc->ex) {
        proc->ex = memdiff__arena_alloc(proc->scratch, MEMDIFF__WIN_EX_BATCH * sizeof *proc->ex);
        if (!proc->ex)
            return MEMDIFF_ENOMEM;
    }
    uint64_t ps = proc->page_size;
    uint64_t addr = start;
    while (addr < end) {
        const memdiff__win_region *r = region_at(proc, addr);
        if (!r) {
            /* Between regions (a range the walk did not see): skip to the next region. */
            size_t i = proc->region_cursor;
            if (i >= proc->region_count || proc->regions[i].start >= end)
                break;
            addr = proc->regions[i].start;
            continue;
        }
        uint64_t stop = r->end < end ? r->end : end;
        /* Reserved memory has no pages: only committed memory can be in the working set. */
        if (r->state == MEM_COMMIT) {
            unsigned rf = flags_of(r);
            for (uint64_t lo = addr; lo < stop;) {
                uint64_t left = (stop - lo) / ps;
                size_t count = left < MEMDIFF__WIN_EX_BATCH ? (size_t)left : MEMDIFF__WIN_EX_BATCH;
                if (count == 0)
                    break;
                int rc = ex_batch(proc, lo, count, rf, sink);
                if (rc)
                    return rc;
                lo += count * ps;
            }
        }
        addr = stop;
    }
    return MEMDIFF_OK;
}

int memdiff__plat_pages(memdiff__proc *proc, uint64_t start, uint64_t end, memdiff_depth depth,
                        const memdiff__page_sink *sink)
{
    int whole_set = proc->use_qws && (depth == MEMDIFF_DEPTH_FAST || !proc->use_qws_ex);
    return whole_set ? pages_from_ws(proc, start, end, sink)
                     : pages_from_ex(proc, start, end, sink);
}
