/*
 * regions.c - the region list from a VirtualQueryEx walk of the whole user address space.
 *
 * One region per VirtualQueryEx answer that is not MEM_FREE: committed and reserved memory alike
 * (reserved memory has no pages, as a PROT_NONE mapping on Linux). AllocationBase is kept as the
 * allocation unit, as MemDiff coalesced by it: the sections of one image, the parts of one
 * VirtualAlloc reservation, the committed top and reserved rest of a thread stack.
 */
#include <string.h>

#include "win.h"

/* PAGE_* protection (winnt.h) to MEMDIFF_PROT_*. Modifiers (PAGE_GUARD, PAGE_NOCACHE,
 * PAGE_WRITECOMBINE) are dropped: a guard page is ordinary memory once touched. */
static unsigned prot_of(DWORD protect)
{
    switch (protect & 0xffu) {
    case PAGE_READONLY:
        return MEMDIFF_PROT_READ;
    case PAGE_READWRITE:
    case PAGE_WRITECOPY:
        return MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE;
    case PAGE_EXECUTE:
        return MEMDIFF_PROT_EXEC;
    case PAGE_EXECUTE_READ:
        return MEMDIFF_PROT_READ | MEMDIFF_PROT_EXEC;
    case PAGE_EXECUTE_READWRITE:
    case PAGE_EXECUTE_WRITECOPY:
        return MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE | MEMDIFF_PROT_EXEC;
    default: /* PAGE_NOACCESS, or reserved memory (Protect undefined) */
        return 0;
    }
}

static int is_copy_on_write(DWORD protect)
{
    DWORD p = protect & 0xffu;
    return p == PAGE_WRITECOPY || p == PAGE_EXECUTE_WRITECOPY;
}

/* "PEB", "TEB", "PEB/TEB" for a region holding those structures, else NULL. */
static const char *peb_teb_name(const memdiff__proc *proc, uint64_t start, uint64_t end)
{
    int peb = proc->peb >= start && proc->peb < end;
    int teb = 0;
    for (size_t i = 0; i < proc->thread_count && !teb; i++)
        teb = proc->threads[i].teb >= start && proc->threads[i].teb < end;
    if (peb && teb)
        return "PEB/TEB";
    return peb ? "PEB" : teb ? "TEB" : NULL;
}

/* Fills the file facts of an image or mapped view. path is looked up once per allocation: every
 * region of one image or view shares its AllocationBase and its file. */
static int file_facts(memdiff__proc *proc, memdiff__arena *arena, const MEMORY_BASIC_INFORMATION *m,
                      memdiff__plat_region *r, uint64_t *cached_base, const char **cached_path)
{
    uint64_t base = (uint64_t)(uintptr_t)m->AllocationBase;
    if (*cached_base != base || !*cached_path) {
        *cached_path = memdiff__win_mapped_name(proc, arena, base);
        if (!*cached_path)
            return MEMDIFF_ENOMEM;
        *cached_base = base;
    }
    r->path = *cached_path;
    memdiff__win_file_id(r->path, &r->dev, &r->inode);
    /* The offset into the image (its RVA) or into the view: constant for one mapping, which is
     * what the compare checks. Windows does not tell a view's offset into its file cheaply. */
    r->offset = r->start - base;
    if (m->Type == MEM_IMAGE) {
        r->hint = MEMDIFF__HINT_IMAGE;
        r->flags = MEMDIFF_REGION_FILE; /* images are copy-on-write, never MAP_SHARED */
        return MEMDIFF_OK;
    }
    /* MEM_MAPPED: a view of a section. Shared unless mapped copy-on-write (FILE_MAP_COPY), which
     * AllocationProtect keeps even after written pages turned PAGE_READWRITE. A view of a
     * pagefile-backed section has no file name: shared anonymous memory. */
    r->flags = is_copy_on_write(m->AllocationProtect) ? 0 : MEMDIFF_REGION_SHARED;
    if (r->path[0])
        r->flags |= MEMDIFF_REGION_FILE;
    else
        r->dev = r->inode = 0;
    return MEMDIFF_OK;
}

int memdiff__plat_regions(memdiff__proc *proc, memdiff__arena *arena,
                          memdiff__plat_region **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    int rc = memdiff__win_read_threads(proc);
    if (rc)
        return rc;

    memdiff__plat_region *v = NULL;
    memdiff__win_region *w = NULL;
    size_t n = 0, cap = 0;
    uint64_t cached_base = 0;
    const char *cached_path = NULL;
    uint64_t addr = 0;
    for (;;) {
        MEMORY_BASIC_INFORMATION m;
        if (!VirtualQueryEx(proc->process, (LPCVOID)(uintptr_t)addr, &m, sizeof m)) {
            DWORD err = GetLastError();
            if (err == ERROR_INVALID_PARAMETER)
                break; /* past the highest user address */
            return memdiff__win_error(proc->process, err, "VirtualQueryEx(pid %d, 0x%llx)",
                                      proc->pid, (unsigned long long)addr);
        }
        uint64_t start = (uint64_t)(uintptr_t)m.BaseAddress;
        uint64_t end = start + m.RegionSize;
        if (m.RegionSize == 0 || end <= addr)
            break;
        addr = end;
        if (m.State == MEM_FREE)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 512;
            memdiff__plat_region *nv =
                memdiff__arena_grow(arena, v, cap * sizeof *v, ncap * sizeof *v);
            memdiff__win_region *nw =
                nv ? memdiff__arena_grow(proc->scratch, w, cap * sizeof *w, ncap * sizeof *w)
                   : NULL;
            if (!nv || !nw)
                return MEMDIFF_ENOMEM;
            v = nv;
            w = nw;
            cap = ncap;
        }
        memdiff__plat_region *r = &v[n];
        memset(r, 0, sizeof *r);
        r->start = start;
        r->end = end;
        r->alloc_base = (uint64_t)(uintptr_t)m.AllocationBase;
        r->prot = m.State == MEM_COMMIT ? prot_of(m.Protect) : 0;
        r->path = "";
        r->name = "";
        if (m.Type == MEM_IMAGE || m.Type == MEM_MAPPED) {
            rc = file_facts(proc, arena, &m, r, &cached_base, &cached_path);
            if (rc)
                return rc;
        }
        const char *special = peb_teb_name(proc, start, end);
        if (special) {
            r->hint = MEMDIFF__HINT_PEB_TEB;
            r->name = special;
        }
        w[n].start = start;
        w[n].end = end;
        w[n].alloc_base = r->alloc_base;
        w[n].state = m.State;
        w[n].type = m.Type;
        w[n].protect = m.Protect;
        n++;
    }
    DWORD code;
    if (!proc->self && GetExitCodeProcess(proc->process, &code) && code != STILL_ACTIVE)
        return memdiff__set_error(MEMDIFF_ESRCH, "process %d exited during the region walk",
                                  proc->pid);
    proc->regions = w;
    proc->region_count = n;
    proc->region_cursor = 0;
    *out = v;
    *count = n;
    return MEMDIFF_OK;
}
