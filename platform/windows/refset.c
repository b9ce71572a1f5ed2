/*
 * refset.c - reference tracking on Windows, for reference-set brackets and working-set sizes.
 *
 * Windows lets no user-mode caller read or clear a page's accessed bit, but it lets one empty a
 * process's working set (EmptyWorkingSet, psapi): every page leaves it, stays in memory on the
 * standby or modified list, and comes back with a soft fault at its next access. After that,
 * the working set holds exactly the pages accessed since, which is how Windows tools measure a
 * reference set; memdiff__refs_reset.resident_is_touched tells the core so. The cost: a page
 * the bracketed code did not touch is no longer in the working set at the end, so the diff
 * counts it as freed (discarded), and every first touch costs a soft fault.
 *
 * The peak working set (PeakWorkingSetSize) is a lifetime figure that nothing resets: the core
 * knows a bracket's peak only when it rose during the bracket. The counters are exact (no
 * per-CPU batching), so the slack is 0. docs/reference-set.md, docs/windows.md.
 */
#include <string.h>

#include "win.h"

/* PSAPI_WORKING_SET_BLOCK (psapi.h) bits. */
#define WS_SHARE_COUNT(f) (((f) >> 5) & 0x7u)
#define WS_SHARED ((ULONG_PTR)1 << 8)
#define WS_PAGE_MASK (~(ULONG_PTR)0xfff)

/* PSAPI_WORKING_SET_EX_BLOCK (psapi.h) bits. */
#define WSX_VALID ((ULONG_PTR)1 << 0)
#define WSX_SHARE_COUNT(f) (((f) >> 1) & 0x7u)
#define WSX_SHARED ((ULONG_PTR)1 << 15)

/* A reason with the system's text, in the proc's scratch arena. */
static const char *why(memdiff__proc *proc, const char *what, DWORD err)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s (pid %d): Windows error %lu", what, proc->pid,
             (unsigned long)err);
    const char *s = memdiff__arena_strndup(proc->scratch, buf, strlen(buf));
    return s ? s : what;
}

int memdiff__plat_refs_reset(memdiff__proc *proc, unsigned what, memdiff__refs_reset *out)
{
    memset(out, 0, sizeof *out);
    if (what & MEMDIFF__REFS_CLEAR) {
        /* EmptyWorkingSet needs PROCESS_SET_QUOTA, which the snapshot handle does not hold. */
        HANDLE h = proc->self ? GetCurrentProcess()
                              : OpenProcess(PROCESS_SET_QUOTA | PROCESS_QUERY_INFORMATION, FALSE,
                                            (DWORD)proc->pid);
        if (!h) {
            DWORD err = GetLastError();
            DWORD code;
            if (GetExitCodeProcess(proc->process, &code) && code != STILL_ACTIVE)
                return memdiff__set_error(MEMDIFF_ESRCH, "process %d has exited", proc->pid);
            out->clear_why = why(proc, "OpenProcess(PROCESS_SET_QUOTA) for EmptyWorkingSet", err);
        } else {
            if (EmptyWorkingSet(h)) {
                out->done |= MEMDIFF__REFS_CLEAR;
                out->resident_is_touched = 1;
                out->note = "the working set was emptied: pages not touched inside the bracket "
                            "show as freed (discarded)";
            } else {
                out->clear_why = why(proc, "EmptyWorkingSet", GetLastError());
            }
            if (!proc->self)
                CloseHandle(h);
        }
    }
    if (what & MEMDIFF__REFS_PEAK)
        out->peak_why = "Windows keeps no resettable peak: PeakWorkingSetSize is the process's "
                        "lifetime peak";
    return MEMDIFF_OK;
}

unsigned memdiff__plat_refs_track_pages(memdiff__proc *proc)
{
    (void)proc; /* per page, an emptied working set answers by itself (resident_is_touched) */
    return 0;
}

int memdiff__plat_refs_peak(memdiff__proc *proc, uint64_t *peak, uint64_t *rss)
{
    PROCESS_MEMORY_COUNTERS pmc;
    memset(&pmc, 0, sizeof pmc);
    pmc.cb = sizeof pmc;
    *peak = *rss = 0;
    if (!GetProcessMemoryInfo(proc->process, &pmc, sizeof pmc))
        return memdiff__win_error(proc->process, GetLastError(), "GetProcessMemoryInfo(pid %d)",
                                  proc->pid);
    *peak = pmc.PeakWorkingSetSize;
    *rss = pmc.WorkingSetSize;
    return MEMDIFF_OK;
}

/* The raw working-set entries (PSAPI_WORKING_SET_BLOCK.Flags), in a buffer of the proc's
 * scratch arena that later calls reuse (a working-set-size run reads once per sample). */
static int ws_entries(memdiff__proc *proc, const ULONG_PTR **out, size_t *count)
{
    size_t want = proc->refs_ws_entries ? proc->refs_ws_entries : 16384;
    for (int tries = 0; tries < 8; tries++) {
        size_t bytes = sizeof(ULONG_PTR) + want * sizeof(ULONG_PTR);
        if (want > proc->refs_ws_entries) {
            size_t had = proc->refs_ws ? sizeof(ULONG_PTR) * (proc->refs_ws_entries + 1) : 0;
            void *p = memdiff__arena_grow(proc->scratch, proc->refs_ws, had, bytes);
            if (!p)
                return MEMDIFF_ENOMEM;
            proc->refs_ws = p;
            proc->refs_ws_entries = want;
        }
        PSAPI_WORKING_SET_INFORMATION *buf = proc->refs_ws;
        if (QueryWorkingSet(proc->process, buf, (DWORD)bytes)) {
            *out = &buf->WorkingSetInfo[0].Flags;
            *count = buf->NumberOfEntries < want ? buf->NumberOfEntries : want;
            return MEMDIFF_OK;
        }
        DWORD err = GetLastError();
        if (err != ERROR_BAD_LENGTH)
            return memdiff__win_error(proc->process, err, "QueryWorkingSet(pid %d)", proc->pid);
        want = buf->NumberOfEntries + buf->NumberOfEntries / 8 + 1024;
    }
    return memdiff__set_error(MEMDIFF_ECHANGED, "QueryWorkingSet(pid %d): the working set kept "
                                                "growing", proc->pid);
}

/* Adds one page of the working set to u: resident, its proportional share, and referenced (the
 * working set after EmptyWorkingSet is the set of pages accessed since). share: ShareCount for a
 * shareable page (it saturates at 7; 0 when unknown), 1 for a private one. */
static void count_page(memdiff__plat_usage *u, unsigned share, uint64_t page)
{
    u->rss += page;
    u->pss += page / (share ? share : 7u);
    u->referenced += page;
}

static void count_entry(memdiff__plat_usage *u, ULONG_PTR f, uint64_t page)
{
    count_page(u, (f & WS_SHARED) ? WS_SHARE_COUNT(f) : 1u, page);
}

/* The usage in u of base's committed memory of [start, end) (proc->regions, from
 * memdiff__plat_regions), asked page by page of QueryWorkingSetEx in batches: the way when
 * QueryWorkingSet is refused (Wine 8). */
static int ex_usage(memdiff__proc *proc, uint64_t start, uint64_t end, memdiff__plat_usage *u)
{
    uint64_t ps = proc->page_size;
    if (!proc->ex &&
        !(proc->ex = memdiff__arena_alloc(proc->scratch, MEMDIFF__WIN_EX_BATCH * sizeof *proc->ex)))
        return MEMDIFF_ENOMEM;
    for (size_t r = 0; r < proc->region_count; r++) {
        const memdiff__win_region *g = &proc->regions[r];
        uint64_t lo = g->start > start ? g->start : start, hi = g->end < end ? g->end : end;
        if (g->state != MEM_COMMIT || lo >= hi)
            continue;
        for (uint64_t addr = lo; addr < hi;) {
            size_t n = (size_t)((hi - addr) / ps);
            if (n > MEMDIFF__WIN_EX_BATCH)
                n = MEMDIFF__WIN_EX_BATCH;
            for (size_t i = 0; i < n; i++) {
                proc->ex[i].VirtualAddress = (PVOID)(uintptr_t)(addr + i * ps);
                proc->ex[i].VirtualAttributes.Flags = 0;
            }
            if (!QueryWorkingSetEx(proc->process, proc->ex, (DWORD)(n * sizeof *proc->ex)))
                return memdiff__win_error(proc->process, GetLastError(),
                                          "QueryWorkingSetEx(pid %d)", proc->pid);
            for (size_t i = 0; i < n; i++) {
                ULONG_PTR f = proc->ex[i].VirtualAttributes.Flags;
                if (f & WSX_VALID)
                    count_page(u, (f & WSX_SHARED) ? WSX_SHARE_COUNT(f) : 1u, ps);
            }
            addr += n * ps;
        }
    }
    return MEMDIFF_OK;
}

int memdiff__plat_refs_usage(memdiff__proc *proc, memdiff__arena *arena,
                             memdiff__plat_usage **out, size_t *count)
{
    memdiff__plat_region *regions = NULL;
    size_t nr = 0, n = 0;
    const ULONG_PTR *e = NULL;
    *out = NULL;
    *count = 0;
    int rc = memdiff__plat_regions(proc, arena, &regions, &nr);
    if (!rc && proc->use_qws)
        rc = ws_entries(proc, &e, &n);
    if (rc)
        return rc;
    memdiff__plat_usage *u = memdiff__arena_alloc(arena, (nr ? nr : 1) * sizeof *u);
    if (!u)
        return MEMDIFF_ENOMEM;
    for (size_t i = 0; !rc && i < nr; i++) {
        u[i].start = regions[i].start;
        u[i].end = regions[i].end;
        if (!proc->use_qws)
            rc = ex_usage(proc, u[i].start, u[i].end, &u[i]);
    }
    if (rc)
        return rc;
    for (size_t k = 0; k < n; k++) {
        uint64_t addr = (uint64_t)(e[k] & WS_PAGE_MASK);
        size_t lo = 0, hi = nr;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (u[mid].end <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < nr && u[lo].start <= addr)
            count_entry(&u[lo], e[k], proc->page_size);
    }
    *out = u;
    *count = nr;
    return MEMDIFF_OK;
}

int memdiff__plat_refs_total(memdiff__proc *proc, memdiff__plat_usage *out)
{
    const ULONG_PTR *e = NULL;
    size_t n = 0;
    memset(out, 0, sizeof *out);
    if (!proc->use_qws) {
        /* The region list is read once per proc: a sample's committed ranges may be a little
         * stale, never its working-set bits. */
        if (!proc->regions) {
            memdiff__plat_region *regions;
            size_t nr;
            int rc = memdiff__plat_regions(proc, proc->scratch, &regions, &nr);
            if (rc)
                return rc;
        }
        return ex_usage(proc, 0, UINT64_MAX, out);
    }
    int rc = ws_entries(proc, &e, &n);
    if (rc)
        return rc;
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    uint64_t top = (uint64_t)(uintptr_t)si.lpMaximumApplicationAddress;
    for (size_t k = 0; k < n; k++) /* entries above the user range are page tables */
        if ((uint64_t)(e[k] & WS_PAGE_MASK) <= top)
            count_entry(out, e[k], proc->page_size);
    return MEMDIFF_OK;
}

int memdiff__plat_mapping_pss(memdiff__proc *proc, memdiff__arena *arena,
                              memdiff__plat_usage **out, size_t *count)
{
    (void)arena;
    *out = NULL;
    *count = 0;
    /* The working set gives a page's share count only up to 7 (WSX_SHARE_COUNT): a usage's pss
     * is an estimate, and PSS per mapping must be exact or absent. */
    return memdiff__set_error(MEMDIFF_ENOTSUP,
                              "PSS per mapping: Windows gives no exact figure (pid %d)", proc->pid);
}
