/*
 * os.c - OS memory, clock, host name and thread identity for the Windows backend.
 */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <stdatomic.h>
#include <string.h>

#include "os.h" /* alone: the base layer's arena stands on these functions (os.h) */

void *memdiff__os_alloc(size_t size)
{
    /* VirtualAlloc, not HeapAlloc: memdiff's storage must stay out of the heaps it measures.
     * Chunks of 2 MiB and more are allocations of their own, the others are carved from
     * reservations (memdiff__os_reserve); the arena lists both as Own, since Windows has no way
     * to name private memory. Nothing keeps them apart from the program's memory: Windows never
     * merges two allocations, and VirtualQuery ends a region where its allocation ends. */
    return VirtualAlloc(NULL, size, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
}

void memdiff__os_free(void *p, size_t size)
{
    (void)size; /* MEM_RELEASE frees the whole allocation and requires size 0 */
    if (p)
        VirtualFree(p, 0, MEM_RELEASE);
}

void *memdiff__os_grow(void *p, size_t old_size, size_t new_size)
{
    /* No VirtualAlloc call moves committed pages: the arena copies. */
    (void)p;
    (void)old_size;
    (void)new_size;
    return NULL;
}

void *memdiff__os_reserve(size_t size)
{
    /* Reserved only: each chunk is committed as it is carved out and decommitted when freed, so
     * that the reservation holds no memory it does not use. */
    return VirtualAlloc(NULL, size, MEM_RESERVE, PAGE_NOACCESS);
}

int memdiff__os_commit(void *p, size_t size)
{
    return VirtualAlloc(p, size, MEM_COMMIT, PAGE_READWRITE) ? 0 : -1;
}

void memdiff__os_decommit(void *p, size_t size)
{
    VirtualFree(p, size, MEM_DECOMMIT);
}

void memdiff__os_unreserve(void *p, size_t size)
{
    (void)size; /* MEM_RELEASE frees the whole reservation and requires size 0 */
    VirtualFree(p, 0, MEM_RELEASE);
}

uint32_t memdiff__os_page_size(void)
{
    static atomic_uint cached;
    unsigned v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!v) {
        SYSTEM_INFO si;
        GetSystemInfo(&si);
        v = si.dwPageSize ? (unsigned)si.dwPageSize : 4096u;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

uint64_t memdiff__os_time_ns(void)
{
    /* FILETIME counts 100 ns intervals since 1601-01-01; the Unix epoch is 11644473600 s later. */
    FILETIME ft;
    GetSystemTimeAsFileTime(&ft);
    uint64_t t = ((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime;
    const uint64_t epoch = UINT64_C(116444736000000000);
    return t > epoch ? (t - epoch) * 100u : 0;
}

uint64_t memdiff__os_monotonic_ns(void)
{
    LARGE_INTEGER f, c;
    if (!QueryPerformanceFrequency(&f) || !QueryPerformanceCounter(&c) || f.QuadPart <= 0)
        return (uint64_t)GetTickCount64() * 1000000u;
    uint64_t q = (uint64_t)c.QuadPart, hz = (uint64_t)f.QuadPart;
    return q / hz * 1000000000u + q % hz * 1000000000u / hz;
}

void memdiff__os_sleep_ns(uint64_t ns)
{
    uint64_t ms = (ns + 999999u) / 1000000u;
    while (ms > 0) {
        DWORD step = ms > 0x7fffffffu ? 0x7fffffffu : (DWORD)ms;
        Sleep(step);
        ms -= step;
    }
}

void memdiff__os_hostname(char *buf, size_t size)
{
    if (size == 0)
        return;
    char name[MAX_COMPUTERNAME_LENGTH + 1];
    DWORD n = sizeof name;
    if (!GetComputerNameA(name, &n))
        n = 0;
    name[n < sizeof name ? n : sizeof name - 1] = '\0';
    size_t len = strlen(name);
    if (len >= size)
        len = size - 1;
    memcpy(buf, name, len);
    buf[len] = '\0';
}

uint64_t memdiff__os_stack_hint(void)
{
    volatile char here = 0;
    return (uint64_t)(uintptr_t)&here;
}

int64_t memdiff__os_thread_id(void)
{
    return (int64_t)GetCurrentThreadId();
}

unsigned memdiff__os_cpu_count(void)
{
    DWORD_PTR process = 0, system = 0;
    unsigned n = 0;
    if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system))
        for (; process; process &= process - 1)
            n++;
    return n ? n : 1u;
}
