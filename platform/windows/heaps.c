/*
 * heaps.c - the process's heaps as address ranges, each labelled with its heap.
 *
 * Own process: GetProcessHeaps + HeapWalk. Every PROCESS_HEAP_REGION entry is a segment of the
 * heap; every busy entry outside those segments is a large block the heap served with its own
 * VirtualAlloc (on Windows above about 512 KiB on x64, on Wine above about 1 MiB minus a
 * little). Each is reported as the whole allocation it lies in (AllocationBase through the last
 * region with that base), reserve included, so that pages the heap commits later stay Heap.
 *
 * Other processes: HeapWalk works on the caller's own heaps only, so the heap list is read from
 * the target's PEB (ProcessHeap, and ProcessHeaps / NumberOfHeaps) and each heap's first segment
 * (the allocation at the heap handle) is reported; further segments and large blocks stay
 * Private, and the CRT heap is not told apart (the "CRT heap" label needs the target's CRT).
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "win.h"

#include <winternl.h>

/* PEB fields (winternl.h leaves them out): offsets in the 64-bit and 32-bit PEB. */
#define PEB64_PROCESS_HEAP 0x30
#define PEB64_NUMBER_OF_HEAPS 0xe8
#define PEB64_PROCESS_HEAPS 0xf0
#define PEB32_PROCESS_HEAP 0x18
#define PEB32_NUMBER_OF_HEAPS 0x88
#define PEB32_PROCESS_HEAPS 0x90

typedef struct heap_list {
    memdiff__plat_heap *v;
    size_t n, cap;
} heap_list;

/* Index of the region containing addr, or count. */
static size_t region_at(const memdiff__plat_region *r, size_t count, uint64_t addr)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < count && r[lo].start <= addr ? lo : count;
}

/* The allocation (VirtualAlloc reservation) containing addr: [AllocationBase, end of the last
 * region with that base). 0 when addr is in no region. */
static int allocation_of(const memdiff__plat_region *r, size_t count, uint64_t addr,
                         uint64_t *start, uint64_t *end)
{
    size_t i = region_at(r, count, addr);
    if (i == count)
        return 0;
    uint64_t base = r[i].alloc_base ? r[i].alloc_base : r[i].start;
    size_t first = region_at(r, count, base);
    if (first == count)
        first = i;
    size_t last = i;
    while (last + 1 < count && r[last + 1].alloc_base == base && r[last + 1].start == r[last].end)
        last++;
    *start = r[first].start;
    *end = r[last].end;
    return 1;
}

static int add(heap_list *l, memdiff__arena *arena, uint64_t start, uint64_t end, uint64_t id,
               const char *label)
{
    for (size_t i = l->n; i > 0 && i + 8 > l->n; i--) {
        if (l->v[i - 1].start == start) /* the same allocation seen again: once is enough */
            return MEMDIFF_OK;
    }
    memdiff__plat_heap *v = memdiff__arena_room(arena, l->v, &l->cap, l->n, sizeof *v, 64);
    if (!v)
        return MEMDIFF_ENOMEM;
    l->v = v;
    memdiff__plat_heap *h = &l->v[l->n++];
    h->start = start;
    h->end = end;
    h->kind = MEMDIFF__HEAP_OS;
    h->id = id;
    h->label = label;
    return MEMDIFF_OK;
}

static const char *label_of(memdiff__arena *arena, uint64_t heap, uint64_t process_heap,
                            uint64_t crt_heap)
{
    char buf[48];
    if (heap == process_heap && heap == crt_heap)
        return "process heap (CRT heap)";
    if (heap == process_heap)
        return "process heap";
    if (heap == crt_heap)
        return "CRT heap";
    snprintf(buf, sizeof buf, "heap 0x%llx", (unsigned long long)heap);
    return memdiff__arena_strndup(arena, buf, strlen(buf));
}

/* Walks one heap of the calling process. HeapLock keeps other threads from changing it
 * meanwhile; nothing here allocates from any heap, so holding the lock cannot deadlock us. */
static int walk_heap(heap_list *l, memdiff__arena *arena, HANDLE heap, const char *label,
                     const memdiff__plat_region *regions, size_t region_count)
{
    uint64_t id = (uint64_t)(uintptr_t)heap;
    int locked = HeapLock(heap) != 0;
    int rc = MEMDIFF_OK;
    uint64_t lo = 0, hi = 0; /* the allocation of the last segment or large block */
    PROCESS_HEAP_ENTRY e;
    memset(&e, 0, sizeof e);
    while (!rc && HeapWalk(heap, &e)) {
        uint64_t a = (uint64_t)(uintptr_t)e.lpData;
        int region = (e.wFlags & PROCESS_HEAP_REGION) != 0;
        if (!region && (!(e.wFlags & PROCESS_HEAP_ENTRY_BUSY) || (a >= lo && a < hi)))
            continue;
        /* HeapWalk lists a segment's region entry before the segment's blocks, so a busy block
         * outside the allocation of the last segment is a large block with its own. */
        uint64_t s, t;
        if (!allocation_of(regions, region_count, a, &s, &t))
            continue;
        lo = s;
        hi = t;
        rc = add(l, arena, s, t, id, label);
    }
    if (locked)
        HeapUnlock(heap);
    return rc;
}

static int own_heaps(memdiff__proc *proc, heap_list *l, memdiff__arena *arena,
                     const memdiff__plat_region *regions, size_t region_count)
{
    HANDLE *heaps = NULL;
    DWORD n = GetProcessHeaps(0, NULL), cap = 0;
    for (int tries = 0; tries < 8 && n > cap; tries++) {
        cap = n + 16;
        heaps = memdiff__arena_alloc(proc->scratch, cap * sizeof *heaps);
        if (!heaps)
            return MEMDIFF_ENOMEM;
        n = GetProcessHeaps(cap, heaps);
    }
    if (n > cap)
        n = cap;
    uint64_t process_heap = (uint64_t)(uintptr_t)GetProcessHeap();
    uint64_t crt_heap = (uint64_t)_get_heap_handle(); /* the heap malloc uses */
    for (DWORD i = 0; i < n; i++) {
        const char *label = label_of(arena, (uint64_t)(uintptr_t)heaps[i], process_heap, crt_heap);
        if (!label)
            return MEMDIFF_ENOMEM;
        int rc = walk_heap(l, arena, heaps[i], label, regions, region_count);
        if (rc)
            return rc;
    }
    return MEMDIFF_OK;
}

static int other_heaps(memdiff__proc *proc, heap_list *l, memdiff__arena *arena,
                       const memdiff__plat_region *regions, size_t region_count)
{
    if (!proc->peb)
        return MEMDIFF_OK;
#if defined(_WIN64)
    BOOL wow = FALSE;
    if (IsWow64Process(proc->process, &wow) && wow)
        return MEMDIFF_OK; /* its heaps are listed in its 32-bit PEB: not read */
#endif
    int wide = sizeof(void *) == 8;
    uint64_t process_heap = 0, list = 0;
    uint32_t count = 0;
    if (wide) {
        if (!memdiff__win_read(proc->process, proc->peb + PEB64_PROCESS_HEAP, &process_heap, 8) ||
            !memdiff__win_read(proc->process, proc->peb + PEB64_NUMBER_OF_HEAPS, &count, 4) ||
            !memdiff__win_read(proc->process, proc->peb + PEB64_PROCESS_HEAPS, &list, 8))
            return MEMDIFF_OK;
    } else {
        uint32_t ph = 0, ls = 0;
        if (!memdiff__win_read(proc->process, proc->peb + PEB32_PROCESS_HEAP, &ph, 4) ||
            !memdiff__win_read(proc->process, proc->peb + PEB32_NUMBER_OF_HEAPS, &count, 4) ||
            !memdiff__win_read(proc->process, proc->peb + PEB32_PROCESS_HEAPS, &ls, 4))
            return MEMDIFF_OK;
        process_heap = ph;
        list = ls;
    }
    /* The process heap first: Wine 8 sets PEB.ProcessHeap but leaves the list empty. */
    uint64_t s, t;
    if (process_heap && allocation_of(regions, region_count, process_heap, &s, &t)) {
        int rc = add(l, arena, s, t, process_heap, "process heap");
        if (rc)
            return rc;
    }
    if (count > 4096 || !list)
        return MEMDIFF_OK;
    size_t width = wide ? 8 : 4;
    unsigned char *raw = memdiff__arena_alloc(proc->scratch, (size_t)count * width + 8);
    if (!raw)
        return MEMDIFF_ENOMEM;
    if (count && !memdiff__win_read(proc->process, list, raw, (size_t)count * width))
        return MEMDIFF_OK;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t heap = 0;
        memcpy(&heap, raw + i * width, width); /* little-endian: the low bytes */
        if (!heap || heap == process_heap || !allocation_of(regions, region_count, heap, &s, &t))
            continue;
        const char *label = label_of(arena, heap, process_heap, 0);
        if (!label)
            return MEMDIFF_ENOMEM;
        int rc = add(l, arena, s, t, heap, label);
        if (rc)
            return rc;
    }
    return MEMDIFF_OK;
}

int memdiff__plat_heaps(memdiff__proc *proc, memdiff__arena *arena,
                        const memdiff__plat_region *regions, size_t region_count,
                        memdiff__plat_heap **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    heap_list l = {NULL, 0, 0};
    int rc = proc->self ? own_heaps(proc, &l, arena, regions, region_count)
                        : other_heaps(proc, &l, arena, regions, region_count);
    if (rc)
        return rc;
    /* Ascending and non-overlapping, as the contract asks: Shell sort (no recursion, no
     * allocation; a process with many large blocks has thousands of ranges), then drop a range
     * that overlaps its predecessor (two heaps never share an allocation). */
    for (size_t gap = l.n / 2; gap > 0; gap /= 2) {
        for (size_t i = gap; i < l.n; i++) {
            memdiff__plat_heap x = l.v[i];
            size_t j = i;
            while (j >= gap && l.v[j - gap].start > x.start) {
                l.v[j] = l.v[j - gap];
                j -= gap;
            }
            l.v[j] = x;
        }
    }
    size_t m = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (m > 0 && l.v[i].start < l.v[m - 1].end)
            continue;
        l.v[m++] = l.v[i];
    }
    *out = l.v;
    *count = m;
    return MEMDIFF_OK;
}
