/*
 * os.h - the OS services below everything of memdiff's: memory, clocks, host name and thread
 * identity. Part of the backend contract (platform.h includes it), kept apart because the base
 * layer's arena (base/arena.c) stands on it: these functions take and return plain C values,
 * set no error detail and use nothing of memdiff, so that platform/<os>/os.c, which implements
 * them, includes this header alone and the layers stay one above the other (README.md,
 * "Layout"). memdiff__os_settle_heap is implemented apart on Windows (settle.c).
 */
#ifndef MEMDIFF_PLATFORM_OS_H
#define MEMDIFF_PLATFORM_OS_H

#include <stddef.h>
#include <stdint.h>

/* size bytes (a multiple of memdiff__os_page_size()) of zeroed, read-write, page-aligned memory
 * that no allocator of the process owns; NULL on failure. It shares no OS mapping with the
 * program's memory next to it, so that the OS's figures per mapping are the program's alone
 * (Linux: flagged out of core dumps, so the kernel merges it only with memory the program left
 * out of its core dumps too, and named [anon:memdiff] where the kernel can; Windows never merges
 * two allocations). */
void *memdiff__os_alloc(size_t size);

/* Returns memory from memdiff__os_alloc; size as it was allocated. */
void memdiff__os_free(void *p, size_t size);

/* Grows memory from memdiff__os_alloc from old_size to new_size bytes (multiples of the page
 * size, new_size the larger), keeping its contents, the rest zeroed, by moving pages instead of
 * copying them where the OS can (Linux mremap). The memory may move, and stays apart as
 * memdiff__os_alloc's is. NULL when the OS cannot: the old memory is then untouched, and the
 * caller allocates and copies. */
void *memdiff__os_grow(void *p, size_t old_size, size_t new_size);

/* Address space for memdiff's small chunks: size bytes (a multiple of the page size), page
 * aligned, in one piece, of which memdiff__os_commit() makes parts usable; NULL on failure. The
 * reservation counts as one mapping however it is used, so that the OS's list of mappings (Linux
 * /proc/PID/maps, read by every snapshot) does not grow with the chunks carved from it. Apart
 * from the program's memory and named as memdiff__os_alloc's memory is. */
void *memdiff__os_reserve(size_t size);

/* Makes size bytes at p (page aligned, inside a reservation, not committed now) usable: read-write
 * and zeroed. 0, or -1 when the OS has no memory for it. */
int memdiff__os_commit(void *p, size_t size);

/* Gives the pages of size bytes at p (committed) back to the OS; the range stays reserved, and
 * reads zero once committed again. */
void memdiff__os_decommit(void *p, size_t size);

/* Returns a whole reservation (p and size as memdiff__os_reserve returned and took them). */
void memdiff__os_unreserve(void *p, size_t size);

/* The page size of the calling process. */
uint32_t memdiff__os_page_size(void);

/* Wall-clock time in nanoseconds since the Unix epoch. */
uint64_t memdiff__os_time_ns(void);

/* Monotonic time in nanoseconds (an arbitrary origin), for measuring spans. */
uint64_t memdiff__os_monotonic_ns(void);

/* Sleeps the calling thread for at least ns nanoseconds (resumed after signals). */
void memdiff__os_sleep_ns(uint64_t ns);

/* The host name into buf (NUL-terminated, truncated to size); "" when unknown. */
void memdiff__os_hostname(char *buf, size_t size);

/* The calling thread's stack pointer, or an address inside the calling thread's stack. */
uint64_t memdiff__os_stack_hint(void);

/* The calling thread's OS thread id (Linux gettid, Windows GetCurrentThreadId). */
int64_t memdiff__os_thread_id(void);

/* Processors the calling thread may run on (at least 1). */
unsigned memdiff__os_cpu_count(void);

/* Returns heap memory the process freed to the OS where its allocator can (glibc: malloc_trim(0);
 * Windows: HeapCompact on the process heaps); does nothing where it cannot. Must not allocate. */
void memdiff__os_settle_heap(void);

#endif /* MEMDIFF_PLATFORM_OS_H */
