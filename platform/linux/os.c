/*
 * os.c - OS memory, clock, host name and thread identity for the Linux backend.
 */
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "os.h" /* alone: the base layer's arena stands on these functions (os.h) */

/* Named anonymous memory (Linux 5.17, CONFIG_ANON_VMA_NAME; Documentation/filesystems/proc.rst
 * "[anon:<name>]"). Restated for headers that predate it. */
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
#define PR_SET_VMA_ANON_NAME 0
#endif

/* Large blocks (a snapshot's per-page frame arrays: 8 bytes a page) ask for transparent huge
 * pages where the system leaves it to madvise: one fault per 2 MiB instead of 512. Measured when
 * frames were stored page by page: a standard snapshot of 4 GiB resident spent a sixth of its
 * time faulting in 8 MiB of frame numbers otherwise (CHANGELOG.md). A system with THP off
 * ignores the advice. */
#define HUGE_ADVICE_MIN ((size_t)2 << 20)

/* Set once prctl has refused to name a chunk: a kernel without CONFIG_ANON_VMA_NAME (or before
 * 5.17) answers EINVAL to every call, and a seccomp policy that forbids it does not relent
 * either, so one refusal stands for the process instead of a failing syscall per chunk. ENOMEM
 * (the kernel could not split or allocate a VMA) is momentary and does not count. Relaxed: the
 * flag guards no other memory, and a thread that misses it only tries once more. */
static atomic_int naming_refused;

static void name_chunk(void *p, size_t size)
{
    if (atomic_load_explicit(&naming_refused, memory_order_relaxed))
        return;
    if (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, (unsigned long)size,
              (unsigned long)"memdiff") != 0 &&
        errno != ENOMEM)
        atomic_store_explicit(&naming_refused, 1, memory_order_relaxed);
}

/* Every mapping of memdiff's storage is kept out of core dumps (MADV_DONTDUMP, Linux 3.4:
 * VM_DONTDUMP, "dd" in smaps' VmFlags), first of all to keep it apart from the program's memory
 * (the one-page probes in proc.c and refs.c are unmapped by the function that maps them). The
 * kernel merges adjacent anonymous mappings whose flags are equal (mm/vma.c is_mergeable_vma: all
 * of vm_flags but soft-dirty), and smaps then reports one VMA, with one Rss and one Referenced,
 * for memdiff's storage and the program's memory together. The name keeps them apart where the
 * kernel has CONFIG_ANON_VMA_NAME; this flag does on every kernel, and changes nothing else (the
 * kernel reads it only to leave the mapping out of a core dump, fs/binfmt_elf.c vma_dump_size).
 * Without it, on a kernel without names, a reservation (MAP_NORESERVE, MADV_NOHUGEPAGE) merged
 * with program memory of those flags, a large chunk (MADV_HUGEPAGE) with huge-page advised memory
 * such as glibc's mmapped malloc chunks under GLIBC_TUNABLES=glibc.malloc.hugetlb=1, and where
 * the kernel has no transparent huge pages, any chunk with plain anonymous memory
 * (tests/test_arena.c). The flag moves with the pages when mremap grows or moves them. Where
 * madvise fails (ENOMEM: no VMA to split off what mmap had just merged) the storage is usable,
 * and merged as it would have been without the flag. */
static void keep_apart(void *p, size_t size)
{
    (void)madvise(p, size, MADV_DONTDUMP);
}

void *memdiff__os_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    keep_apart(p, size);
    if (size >= HUGE_ADVICE_MIN)
        (void)madvise(p, size, MADV_HUGEPAGE);
    /* The name shows as [anon:memdiff] in maps, which tells memdiff's storage apart, and also
     * keeps the kernel from merging it with the program's mappings (VMAs with different names
     * never merge). Kernels without the feature just leave it unnamed. */
    name_chunk(p, size);
    return p;
}

void memdiff__os_free(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}

void *memdiff__os_grow(void *p, size_t old_size, size_t new_size)
{
    /* The mapping keeps its name and its flags (keep_apart) when it grows in place and when it
     * moves (the VMA moves). */
    void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
        return NULL;
    if (new_size >= HUGE_ADVICE_MIN)
        (void)madvise(q, new_size, MADV_HUGEPAGE);
    return q;
}

void *memdiff__os_reserve(size_t size)
{
    /* Read-write from the start, so that committing a chunk is no syscall and the reservation
     * stays one VMA whatever is committed in it (mprotect per chunk would split it). Pages are
     * faulted in only when written; MAP_NORESERVE keeps the untouched rest out of the commit
     * charge (mm/mmap.c accountable_mapping, overcommit modes 0 and 1). No transparent huge
     * pages: a small chunk's first write would fault in 2 MiB, and decommitting a piece would
     * split it again; chunks of 2 MiB and more are mappings of their own (memdiff__os_alloc). */
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    keep_apart(p, size);
    (void)madvise(p, size, MADV_NOHUGEPAGE);
    name_chunk(p, size);
    return p;
}

int memdiff__os_commit(void *p, size_t size)
{
    /* Already read-write, and zero: never written, or discarded by memdiff__os_decommit. */
    (void)p;
    (void)size;
    return 0;
}

void memdiff__os_decommit(void *p, size_t size)
{
    /* A private anonymous page discarded with MADV_DONTNEED reads zero when touched again
     * (madvise(2)); the VMA is left as it is. */
    (void)madvise(p, size, MADV_DONTNEED);
}

void memdiff__os_unreserve(void *p, size_t size)
{
    munmap(p, size);
}

uint32_t memdiff__os_page_size(void)
{
    static atomic_uint cached;
    unsigned v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!v) {
        long s = sysconf(_SC_PAGESIZE);
        v = s > 0 ? (unsigned)s : 4096u;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

uint64_t memdiff__os_time_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

uint64_t memdiff__os_monotonic_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

void memdiff__os_sleep_ns(uint64_t ns)
{
    struct timespec ts, rem;
    ts.tv_sec = (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    while (nanosleep(&ts, &rem) != 0 && errno == EINTR)
        ts = rem;
}

void memdiff__os_hostname(char *buf, size_t size)
{
    if (size == 0)
        return;
    struct utsname u;
    buf[0] = '\0';
    if (uname(&u) == 0) {
        size_t n = strnlen(u.nodename, sizeof u.nodename);
        if (n >= size)
            n = size - 1;
        memcpy(buf, u.nodename, n);
        buf[n] = '\0';
    }
}

/* The frame address rather than a local's address: with AddressSanitizer's fake stacks
 * (detect_stack_use_after_return) locals may live on the heap, the frame never does. noinline so
 * that the frame is this function's own, on the caller's thread stack. */
__attribute__((noinline)) uint64_t memdiff__os_stack_hint(void)
{
    return (uint64_t)(uintptr_t)__builtin_frame_address(0);
}

int64_t memdiff__os_thread_id(void)
{
    return (int64_t)gettid();
}

unsigned memdiff__os_cpu_count(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    return n < 1 ? 1u : (unsigned)n;
}

/* glibc keeps freed memory for reuse; malloc_trim(0) (glibc 2.8+) returns the top of every arena
 * and discards the free pages inside them (MADV_DONTNEED). Other C libraries: nothing to do. */
void memdiff__os_settle_heap(void)
{
#ifdef __GLIBC__
    (void)malloc_trim(0);
#endif
}
