/*
 * platform.h - the backend contract: all that memdiff's portable core knows of an OS.
 *
 * A backend (platform/<os>/) reports facts, never verdicts: regions, page runs, threads,
 * modules, heaps and process totals. The core classifies, stores and compares. To port memdiff,
 * implement every function declared under "The backend implements" in platform/<os>/ and list
 * the folder's sources in CMakeLists.txt; nothing else is needed (a POSIX system can take the
 * file functions from platform/posix/).
 *
 * Rules that hold for every function here:
 *  - Pointer arguments are non-NULL unless a comment says otherwise.
 *  - Functions return 0 or a negative memdiff status (MEMDIFF_E*). Native errors (errno,
 *    GetLastError) are translated inside the backend, by one function per backend, and the
 *    detail message is set with memdiff__set_error() before returning.
 *  - No malloc: memory comes from the memdiff__arena passed in (or memdiff__os_alloc), so that a
 *    snapshot does not disturb the heap it measures. Results allocated from an arena live as long
 *    as that arena.
 *  - Addresses are uint64_t so that 32-bit builds can read 64-bit targets; ranges are half-open
 *    [start, end) and page aligned.
 *  - Every function may be called from any thread; a memdiff__proc is used by one thread at a
 *    time.
 */
#ifndef MEMDIFF_PLATFORM_H
#define MEMDIFF_PLATFORM_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memdiff.h"

/* =============================================================================================
 * What the core gives a backend
 * =========================================================================================== */

/* Checks printf-style arguments where the compiler can. mingw-w64: "printf" would mean
 * msvcrt's formats (no %zu, %llx as %I64x), while vsnprintf here is mingw's C99 one under
 * -std=c11, which __MINGW_PRINTF_FORMAT names. */
#if defined(__MINGW_PRINTF_FORMAT)
#define MEMDIFF__PRINTF(fmt, args) __attribute__((format(__MINGW_PRINTF_FORMAT, fmt, args)))
#elif defined(__GNUC__)
#define MEMDIFF__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define MEMDIFF__PRINTF(fmt, args)
#endif

/* Keeps a rarely taken path out of its caller, so that the common path stays small. */
#if defined(__GNUC__)
#define MEMDIFF__NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define MEMDIFF__NOINLINE __declspec(noinline)
#else
#define MEMDIFF__NOINLINE
#endif

/* The lowest set bit of x (x != 0). */
static inline unsigned memdiff__ctz64(uint64_t x)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned n = 0;
    while (!(x & 1)) {
        x >>= 1;
        n++;
    }
    return n;
#endif
}

/* bytes in pages of ps bytes, ps a power of two (every page size is; a snapshot file's is
 * checked on load): a shift, where a 64-bit division costs tens of cycles (on the AMD EPYC of
 * docs/performance.md, a fifth of the time of the snapshot's sink for a run of one page). */
static inline uint64_t memdiff__in_pages(uint64_t bytes, uint64_t ps)
{
    return bytes >> memdiff__ctz64(ps);
}

/* Sets bits [from, from + n) of the bitmap w (bit b: w[b / 64] >> b % 64). */
static inline void memdiff__set_bits(uint64_t *w, uint64_t from, uint64_t n)
{
    for (uint64_t b = from; b < from + n;) {
        unsigned off = (unsigned)(b % 64);
        uint64_t take = 64 - off < from + n - b ? 64 - off : from + n - b;
        w[b / 64] |= (take == 64 ? ~UINT64_C(0) : (UINT64_C(1) << take) - 1) << off;
        b += take;
    }
}

/* The set bits of x. */
static inline unsigned memdiff__popcount64(uint64_t x)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_popcountll(x);
#else
    unsigned n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
#endif
}

/* The first bit at or after b (below n) of the bitmap w that is want (1 or 0), or n. */
static inline uint64_t memdiff__find_bit(const uint64_t *w, uint64_t b, uint64_t n, int want)
{
    while (b < n) {
        uint64_t x = w[b / 64];
        if (!want)
            x = ~x;
        x &= ~UINT64_C(0) << (b % 64);
        if (x) {
            uint64_t at = b / 64 * 64 + memdiff__ctz64(x);
            return at < n ? at : n;
        }
        b = (b / 64 + 1) * 64;
    }
    return n;
}

/* The end of the stretch v[i..) that goes on from v[i] by step: the first k > i (at most n)
 * with v[k] != v[i] + (k - i) * step (step 1 for consecutive frames or pagemap entries, 0 for
 * repeats, UINT64_MAX for descending). The tight loop of dense memory, shared by the backends'
 * decoding and the core's page facts: eight values a test where the compiler has vector types
 * (two to a 128-bit register: SSE2 on any x86-64, NEON on arm64), then four, with no branch
 * among them. On a recorded 1 GiB process's pagemap, 0.49 -> 0.40 ns an entry. */
static inline size_t memdiff__stretch_end(const uint64_t *v, size_t i, size_t n, uint64_t step)
{
    size_t k = i + 1;
    uint64_t x = v[i] + step; /* the value expected at k */
    /* Memory the allocator handed out piecemeal is mostly stretches of one to eight pages: a
     * few plain tests end those before the vector loop's setup would cost more than they do. */
    for (size_t probe = k + 4 < n ? k + 4 : n; k < probe; k++, x += step)
        if (v[k] != x)
            return k;
#if defined(__GNUC__)
    typedef uint64_t memdiff__u64x2 __attribute__((vector_size(16)));
    memdiff__u64x2 e0 = {x, x + step}, e1 = e0 + 2 * step, e2 = e0 + 4 * step,
                   e3 = e0 + 6 * step;
    for (; k + 8 <= n; k += 8) {
        memdiff__u64x2 a, b, c, d;
        memcpy(&a, v + k, sizeof a);
        memcpy(&b, v + k + 2, sizeof b);
        memcpy(&c, v + k + 4, sizeof c);
        memcpy(&d, v + k + 6, sizeof d);
        memdiff__u64x2 diff = (a ^ e0) | (b ^ e1) | (c ^ e2) | (d ^ e3);
        if (diff[0] | diff[1])
            break;
        e0 += 8 * step;
        e1 += 8 * step;
        e2 += 8 * step;
        e3 += 8 * step;
    }
    x = e0[0];
#endif
    for (; k + 4 <= n; k += 4, x += 4 * step)
        if ((v[k] ^ x) | (v[k + 1] ^ (x + step)) | (v[k + 2] ^ (x + 2 * step)) |
            (v[k + 3] ^ (x + 3 * step)))
            break;
    for (; k < n && v[k] == x; k++)
        x += step;
    return k;
}

typedef struct memdiff__chunk memdiff__chunk;

/* A bump allocator over OS memory (chunks carved from memdiff__os_reserve's reservations, large
 * ones from memdiff__os_alloc). All of it is accounted process-wide, so that snapshots can report
 * memdiff's own storage as Own. Initialise
 * with MEMDIFF__ARENA_INIT; release everything with memdiff__arena_release(). */
typedef struct memdiff__arena {
    memdiff__chunk *chunks; /* newest first */
    size_t used;            /* bytes used in chunks->data */
    int recycle;            /* set by memdiff__arena_reserve: chunks are kept when released */
} memdiff__arena;

#define MEMDIFF__ARENA_INIT {0, 0, 0}

/* size bytes, 16-byte aligned and zeroed; NULL (with MEMDIFF_ENOMEM detail set) on failure. */
void *memdiff__arena_alloc(memdiff__arena *arena, size_t size);

/* As memdiff__arena_alloc, but the bytes are not zeroed when the memory is kept scratch: for
 * buffers that are always written before they are read. */
void *memdiff__arena_alloc_raw(memdiff__arena *arena, size_t size);

/* Maps one chunk with room for at least bytes and makes it the arena's bump chunk: the next
 * blocks, large ones from memdiff__arena_alloc included, are carved from it while they fit,
 * instead of a mapping each (blocks from memdiff__arena_grow still get their own, which grow by
 * moving pages). Pages are touched only as blocks use them. For an arena that holds many large
 * buffers for a short while, such as a snapshot's scratch; on an arena already in use, the room
 * left in its bump chunk is given up. Such an arena also recycles: its chunks are kept when it is
 * released, for the next one to take (at most 8 MiB; memdiff_trim() unmaps them). MEMDIFF_ENOMEM
 * (with detail) when it cannot be mapped. */
int memdiff__arena_reserve(memdiff__arena *arena, size_t bytes);

/* A NUL-terminated copy of s[0..len); NULL on failure. */
char *memdiff__arena_strndup(memdiff__arena *arena, const char *s, size_t len);

/* Grows a block of the arena (or NULL) to at least new_size bytes, keeping its contents; the
 * large blocks it returns get chunks of their own, which grow by moving their pages (a block
 * carved from a bump chunk is copied the first time). NULL on failure, with the old block still
 * valid. For arrays that grow (runs, regions). */
void *memdiff__arena_grow(memdiff__arena *arena, void *old, size_t old_size, size_t new_size);

/* As memdiff__arena_grow, but the bytes the block gains are not zeroed where the memory was used
 * before (kept chunks): for arrays whose elements are written before they are read. */
void *memdiff__arena_grow_raw(memdiff__arena *arena, void *old, size_t old_size, size_t new_size);

/* Room for one more element in an array that grows by doubling: returns v itself while
 * count < *cap, else its contents moved to a block of twice the room (initial elements the first
 * time, when v is NULL and *cap 0), with *cap updated. NULL when out of memory: v and *cap are
 * then unchanged. Callers write `T *nv = memdiff__arena_room(a, v, &cap, n, sizeof *nv, 64);`. */
void *memdiff__arena_room(memdiff__arena *arena, void *v, size_t *cap, size_t count, size_t elem,
                          size_t initial);

/* As memdiff__arena_room, but the room gained is not zeroed where the memory was used before
 * (memdiff__arena_grow_raw): for arrays whose elements are written before they are read. */
void *memdiff__arena_room_raw(memdiff__arena *arena, void *v, size_t *cap, size_t count,
                              size_t elem, size_t initial);

/* Unmaps every chunk of the arena and resets it to empty. */
void memdiff__arena_release(memdiff__arena *arena);

/* Bytes of OS memory the arena holds. */
size_t memdiff__arena_footprint(const memdiff__arena *arena);

/* Records a detail message for memdiff_last_error() and returns status, so a backend can write
 * `return memdiff__set_error(MEMDIFF_ESRCH, "open %s: %s", path, strerror(e));`. */
int memdiff__set_error(int status, const char *fmt, ...) MEMDIFF__PRINTF(2, 3);

/* =============================================================================================
 * The backend implements: OS memory and clock
 * =========================================================================================== */

/* size bytes (a multiple of memdiff__os_page_size()) of zeroed, read-write, page-aligned memory
 * that no allocator of the process owns; NULL on failure. Where the OS allows, the memory is
 * named as memdiff's (Linux: [anon:memdiff]) so that it is recognisable and not merged. */
void *memdiff__os_alloc(size_t size);

/* Returns memory from memdiff__os_alloc; size as it was allocated. */
void memdiff__os_free(void *p, size_t size);

/* Grows memory from memdiff__os_alloc from old_size to new_size bytes (multiples of the page
 * size, new_size the larger), keeping its contents, the rest zeroed, by moving pages instead of
 * copying them where the OS can (Linux mremap). The memory may move. NULL when the OS cannot: the
 * old memory is then untouched, and the caller allocates and copies. */
void *memdiff__os_grow(void *p, size_t old_size, size_t new_size);

/* Address space for memdiff's small chunks: size bytes (a multiple of the page size), page
 * aligned, in one piece, of which memdiff__os_commit() makes parts usable; NULL on failure. The
 * reservation counts as one mapping however it is used, so that the OS's list of mappings (Linux
 * /proc/PID/maps, read by every snapshot) does not grow with the chunks carved from it. Named as
 * memdiff's where the OS allows, as memdiff__os_alloc names its memory. */
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

/* The host name into buf (NUL-terminated, truncated to size); "" when unknown. */
void memdiff__os_hostname(char *buf, size_t size);

/* The calling thread's stack pointer, or an address inside the calling thread's stack. */
uint64_t memdiff__os_stack_hint(void);

/* The calling thread's OS thread id (Linux gettid, Windows GetCurrentThreadId). */
int64_t memdiff__os_thread_id(void);

/* Returns heap memory the process freed to the OS where its allocator can (glibc: malloc_trim(0);
 * Windows: HeapCompact on the process heaps); does nothing where it cannot. Must not allocate. */
void memdiff__os_settle_heap(void);

/* =============================================================================================
 * The backend implements: files (saving a snapshot, file_format.c)
 * =========================================================================================== */

/* What a path names, a final symbolic link not followed. */
typedef enum memdiff__path_kind {
    MEMDIFF__PATH_NONE = 0,     /* nothing by that name (yet) */
    MEMDIFF__PATH_REGULAR,
    MEMDIFF__PATH_DIRECTORY,
    MEMDIFF__PATH_SYMLINK,      /* Windows: any reparse point (symbolic link, junction) */
    MEMDIFF__PATH_CHAR_DEVICE,  /* Windows: NUL, CON, COM1 and the like */
    MEMDIFF__PATH_BLOCK_DEVICE,
    MEMDIFF__PATH_FIFO,         /* Windows: a named pipe */
    MEMDIFF__PATH_SOCKET,
    MEMDIFF__PATH_OTHER
} memdiff__path_kind;

/* What path names, into *out, without opening it for reading or writing (so that a FIFO or a
 * device cannot block or react). MEMDIFF__PATH_NONE when nothing has that name, also when a
 * directory on the way is missing (creating the file will then fail and say so). Other failures
 * (a directory on the way not searchable) are MEMDIFF_EACCES or MEMDIFF_EIO with detail. */
int memdiff__os_path_kind(const char *path, memdiff__path_kind *out);

/* Renames the file from to to in one step, replacing a regular file at to: a reader of to sees
 * the old file or the new one, never neither. Never deletes to first (POSIX rename(); Windows
 * MoveFileEx with MOVEFILE_REPLACE_EXISTING, whose C rename() refuses an existing target), and
 * fails rather than replace a directory. On failure from is left as it was; MEMDIFF_EACCES or
 * MEMDIFF_EIO with a detail naming to. */
int memdiff__os_replace_file(const char *from, const char *to);

/* =============================================================================================
 * The backend implements: reading a process
 * =========================================================================================== */

typedef struct memdiff__proc memdiff__proc; /* backend-private */

typedef struct memdiff__open_args {
    int pid;               /* 0: the calling process */
    const char *proc_root; /* NULL: the OS default ("/proc") */
    const char *sys_root;  /* NULL: the OS default ("/sys") */
    unsigned flags;        /* MEMDIFF__OPEN_*; 0: everything the backend can read */
} memdiff__open_args;

/* The caller will walk no deeper than standard: the system-wide page files of deep depth
 * (Linux: kpageflags, kpagecount) are not opened, nor reported in caps. */
#define MEMDIFF__OPEN_NO_DEEP 0x1u

/* No shortcut that rests on the state of the whole system as read once (Linux: a page walk
 * without frame numbers that leaves out the zero / huge page scan where /proc/meminfo says no
 * such page exists). The core asks for it when it takes a snapshot again after
 * memdiff__plat_totals said MEMDIFF_ECHANGED. */
#define MEMDIFF__OPEN_EXACT 0x2u

/* The caller will walk at fast depth only and track no references: frame numbers go unused, so
 * the backend may leave MEMDIFF_SRC_PFN out of caps without asking whether it could read them
 * (Linux: where PAGEMAP_SCAN names the zero page itself; a walk that has to fall back to
 * pagemap then learns the zero page's frame on its own). */
#define MEMDIFF__OPEN_NO_FRAMES 0x4u

/* What the backend can deliver for this process and caller, decided once at open. A source
 * that is missing has its reason in the matching *_why string (static or arena storage). */
typedef struct memdiff__caps {
    uint32_t page_size;  /* of the target process */
    int pid;             /* resolved pid (never 0) */
    unsigned sources;    /* MEMDIFF_SRC_* the backend can read for this process */
    const char *pfn_why; /* NULL, or why frame numbers are unavailable */
    const char *deep_why; /* NULL, or why kernel page flags / map counts are unavailable */
} memdiff__caps;

/* Opens the process. The backend keeps scratch buffers in scratch (an arena the core releases
 * after memdiff__plat_close). Errors: MEMDIFF_ESRCH (no such process), MEMDIFF_EACCES (the caller
 * may not read its memory map), MEMDIFF_ENOMEM, MEMDIFF_EIO. */
int memdiff__plat_open(const memdiff__open_args *args, memdiff__arena *scratch,
                       memdiff__proc **out, memdiff__caps *caps);

/* Closes handles opened by memdiff__plat_open. NULL is allowed. */
void memdiff__plat_close(memdiff__proc *proc);

/* OS hints on a region, as named by the OS (memdiff__plat_region.hint). */
typedef enum memdiff__hint {
    MEMDIFF__HINT_NONE = 0,
    MEMDIFF__HINT_BRK_HEAP,  /* Linux [heap] */
    MEMDIFF__HINT_MAIN_STACK, /* Linux [stack] */
    MEMDIFF__HINT_VDSO,
    MEMDIFF__HINT_VVAR,
    MEMDIFF__HINT_VSYSCALL,
    MEMDIFF__HINT_ANON_NAME, /* Linux [anon:NAME] / [anon_shmem:NAME]; name holds NAME */
    MEMDIFF__HINT_IMAGE,     /* Windows MEM_IMAGE */
    MEMDIFF__HINT_PEB_TEB,   /* Windows PEB / TEB */
    MEMDIFF__HINT_SYSV_SHM,  /* Linux /SYSV<key> (deleted) */
    MEMDIFF__HINT_MEMFD,     /* Linux /memfd:NAME (deleted) */
    MEMDIFF__HINT_OTHER      /* another bracketed name the core does not know, in name */
} memdiff__hint;

/* Region flags (memdiff__plat_region.flags), beyond MEMDIFF_REGION_SHARED / _FILE. */
#define MEMDIFF__RF_DELETED 0x100u /* the backing file was deleted */

/* One mapping, as the OS reports it. */
typedef struct memdiff__plat_region {
    uint64_t start, end;
    uint64_t offset;       /* file offset of start */
    uint64_t dev, inode;   /* file identity; 0 for anonymous */
    unsigned prot;         /* MEMDIFF_PROT_* */
    unsigned flags;        /* MEMDIFF_REGION_*, MEMDIFF__RF_* */
    memdiff__hint hint;
    const char *path;      /* file path without " (deleted)", or "" */
    const char *name;      /* for ANON_NAME / OTHER hints: the name, else "" */
    uint64_t alloc_base;   /* start of the allocation this region belongs to (Windows'
                              AllocationBase), or 0 when the OS has no such notion */
} memdiff__plat_region;

/* All regions in ascending, non-overlapping order. Errors: as memdiff__plat_open, and
 * MEMDIFF_EFORMAT when the OS's list cannot be parsed. */
int memdiff__plat_regions(memdiff__proc *proc, memdiff__arena *arena,
                          memdiff__plat_region **out, size_t *count);

typedef struct memdiff__plat_thread {
    int64_t tid;
    uint64_t sp;                  /* a stack pointer, or 0 when unknown (thread running) */
    uint64_t stack_lo, stack_hi;  /* the stack's reserved range, or 0, 0 when unknown */
} memdiff__plat_thread;

/* The process's threads. A thread whose stack cannot be located is listed with zeros; a thread
 * that exits during the read is left out. */
int memdiff__plat_threads(memdiff__proc *proc, memdiff__arena *arena,
                          memdiff__plat_thread **out, size_t *count);

typedef enum memdiff__seg_kind {
    MEMDIFF__SEG_HEADERS = 0, /* file headers, read-only */
    MEMDIFF__SEG_TEXT,
    MEMDIFF__SEG_RODATA,
    MEMDIFF__SEG_DATA,
    MEMDIFF__SEG_BSS,         /* anonymous tail past the file-backed data */
    MEMDIFF__SEG_OTHER
} memdiff__seg_kind;

typedef struct memdiff__plat_segment {
    uint64_t start, end;
    memdiff__seg_kind kind;
} memdiff__plat_segment;

typedef struct memdiff__plat_module {
    const char *path;
    uint64_t base;            /* load address: the module's allocation unit */
    memdiff__plat_segment *segments;
    size_t segment_count;
} memdiff__plat_module;

/* Loaded modules with all their segments, bss tails included, found from regions (as returned
 * by memdiff__plat_regions for the same proc) and the process's memory. */
int memdiff__plat_modules(memdiff__proc *proc, memdiff__arena *arena,
                          const memdiff__plat_region *regions, size_t region_count,
                          memdiff__plat_module **out, size_t *count);

typedef enum memdiff__heap_kind {
    MEMDIFF__HEAP_BRK = 0,    /* the main arena's brk heap */
    MEMDIFF__HEAP_ARENA,      /* a non-main malloc arena heap */
    MEMDIFF__HEAP_MMAP_CHUNK, /* a malloc chunk served by its own mmap */
    MEMDIFF__HEAP_OS          /* an OS heap (Windows process heaps) */
} memdiff__heap_kind;

typedef struct memdiff__plat_heap {
    uint64_t start, end;
    memdiff__heap_kind kind;
    uint64_t id;        /* the heap or arena this range belongs to (its allocation unit) */
    const char *label;  /* e.g. "malloc arena 0x7f...", "malloc mmap chunk" */
} memdiff__plat_heap;

/* Address ranges the process's allocators own, in ascending order, non-overlapping. A range may
 * cover part of a region. Heaps that cannot be read are left out (regions then stay Private). */
int memdiff__plat_heaps(memdiff__proc *proc, memdiff__arena *arena,
                        const memdiff__plat_region *regions, size_t region_count,
                        memdiff__plat_heap **out, size_t *count);

/* Process totals in bytes. Missing figures are 0. The core calls it last, after the page walk:
 * MEMDIFF_ESRCH when the process has exited (or begun to) since memdiff__plat_open, so that
 * pages read from an address space being torn down are never passed off as a snapshot;
 * MEMDIFF_ECHANGED when what a shortcut of the walk rested on no longer holds (see
 * MEMDIFF__OPEN_EXACT), so that the core takes the snapshot once more without it. */
int memdiff__plat_totals(memdiff__proc *proc, memdiff_process_totals *out);

/* One fact of count consecutive pages (their frames, kernel flags or map counts): first,
 * first + step, first + 2 * step, ... (step 1 or -1, as the page allocator hands frames out, 0
 * for one value again and again); or, when values is not NULL, values[k * step] for page k (step
 * 1, or -1 for values stored in the opposite order). */
typedef struct memdiff__values {
    uint64_t first;
    int64_t step;
    uint64_t count;
    const uint64_t *values;
} memdiff__values;

/* Receives page runs from memdiff__plat_pages. npages pages from start share attrs. Returns 0
 * or a negative status, which stops the walk and is returned by memdiff__plat_pages.
 *
 * run takes a run with its frame numbers, if the depth gave them (MEMDIFF_SRC_PFN), as pfn[0..
 * npages); NULL otherwise, and always from backends without frame numbers.
 *
 * run_frames takes a run with its facts as pieces whose counts add up to npages each: frames
 * (nframes pieces), and at deep depth kernel flags and map counts (NULL and 0 when not read).
 * Dense memory has a piece for tens of pages, so neither side spends time per page on those.
 * Sinks that want kernel flags and map counts must set it; without it (NULL), runs come through
 * run only.
 *
 * run_bits takes many short runs with one attrs at once, where memory is fragmented (every
 * other page resident, a file mapped in scattered pages): page k of [start, start + npages) is
 * in a run when bit k of bits is set (bits[k / 64] >> k % 64 & 1), the first and the last page
 * are, and runs in one call are apart (a page between them at least); pfn, when frames are
 * delivered, holds the set pages' frames in page order. It saves a call a run (tens of ns
 * each). Without it (NULL), such runs come one by one. Pointers are valid only during the
 * call. */
typedef struct memdiff__page_sink {
    int (*run)(void *ctx, uint64_t start, uint64_t npages, unsigned attrs, const uint64_t *pfn);
    void *ctx;
    int (*run_frames)(void *ctx, uint64_t start, uint64_t npages, unsigned attrs,
                      const memdiff__values *frames, size_t nframes, const memdiff__values *kflags,
                      size_t nkflags, const memdiff__values *mapcount, size_t nmapcount);
    int (*run_bits)(void *ctx, uint64_t start, uint64_t npages, unsigned attrs,
                    const uint64_t *bits, const uint64_t *pfn);
} memdiff__page_sink;

/* Reports the pages of [start, end) that are resident or swapped, as runs (MEMDIFF_PAGE_*
 * attrs), in ascending order; pages not reported are mapped but not resident. Calls come in
 * ascending address order over one proc (the backend may read ahead across calls). depth is the
 * depth to deliver, already limited by caps. MEMDIFF_ESRCH when the process exited; a range
 * that was unmapped meanwhile reports no pages. */
int memdiff__plat_pages(memdiff__proc *proc, uint64_t start, uint64_t end, memdiff_depth depth,
                        const memdiff__page_sink *sink);

/* =============================================================================================
 * The backend implements: reference tracking (brackets and working-set sizes: memdiff/refset.c,
 * memdiff/wss.c; the Linux side is platform/linux/refs.c, the Windows side
 * platform/windows/refset.c)
 *
 * A bracket asks the OS to forget which pages the process accessed and how high its resident
 * size went, lets the code under test run, then asks again. The OS keeps all of this per address
 * space: every reset acts on the whole process, every figure covers all of its threads.
 * =========================================================================================== */

/* Monotonic time in nanoseconds (an arbitrary origin), for measuring spans. */
uint64_t memdiff__os_monotonic_ns(void);

/* Sleeps the calling thread for at least ns nanoseconds (resumed after signals). */
void memdiff__os_sleep_ns(uint64_t ns);

/* memdiff__plat_refs_reset() requests. */
#define MEMDIFF__REFS_CLEAR 0x1u /* forget which pages were accessed (referenced / accessed bits) */
#define MEMDIFF__REFS_PEAK 0x2u  /* restart the peak resident size from the current one */
#define MEMDIFF__REFS_PAGES 0x4u /* also track accesses page by page, where the OS can */

/* What memdiff__plat_refs_reset() did. Strings are static or in the proc's scratch arena. */
typedef struct memdiff__refs_reset {
    unsigned done;            /* the MEMDIFF__REFS_* of the request that were done */
    const char *clear_why;    /* NULL, or why CLEAR was not done */
    const char *peak_why;     /* NULL, or why PEAK was not done (or the peak cannot be read) */
    const char *pages_why;    /* NULL, or why PAGES was not done */
    const char *note;         /* NULL, or a limit of what was done that a report should show */
    int resident_is_touched;  /* after CLEAR, every page resident later was accessed since
                                 (Windows: CLEAR empties the working set); per-page touched
                                 information then needs no PAGES */
    uint64_t untracked_bytes; /* PAGES: resident bytes whose frames the OS would not track (they
                                 read as accessed at the end) */
    uint64_t peak_slack;      /* bytes by which the OS's peak figure may be off (0: exact) */
} memdiff__refs_reset;

/* Does what `what` (MEMDIFF__REFS_*) asks for the process; a part the OS or the caller's
 * rights do not allow is left undone, with its reason in *out, and is not an error. Linux:
 * clear_refs "1" (then "4" to flush the TLB where that resets no soft-dirty bits), "5", and
 * page_idle marks for the frames pagemap names. Errors: MEMDIFF_ESRCH (the process exited),
 * MEMDIFF_ENOMEM, MEMDIFF_EIO (a kernel interface failed midway). */
int memdiff__plat_refs_reset(memdiff__proc *proc, unsigned what, memdiff__refs_reset *out);

/* From this call on, memdiff__plat_pages on proc (standard depth and deeper) adds
 * MEMDIFF_PAGE_ACCESSED to each resident page accessed since the process's last PAGES reset
 * (Linux: its frame's page_idle bit is clear). Returns the sources this adds to the caps
 * (MEMDIFF_SRC_PAGE_IDLE), or 0 where the backend cannot mark pages so (Windows, whose per-page
 * answer is memdiff__refs_reset.resident_is_touched; Linux without a readable bitmap). */
unsigned memdiff__plat_refs_track_pages(memdiff__proc *proc);

/* The peak resident size (since the last PEAK reset, or since the process started when that
 * reset was not done) and the current resident size, in bytes, as the OS counts them (memdiff's
 * own storage included). Reads without allocating, so that reading does not raise the figure.
 * Errors: MEMDIFF_ESRCH, MEMDIFF_ENOTSUP (the OS gives no such figure; detail set). */
int memdiff__plat_refs_peak(memdiff__proc *proc, uint64_t *peak, uint64_t *rss);

/* What one mapping (or the whole process) occupies, in bytes. */
typedef struct memdiff__plat_usage {
    uint64_t start, end; /* the mapping; 0, 0 for a process total */
    uint64_t rss;        /* resident */
    uint64_t pss;        /* proportional: each resident page divided by its number of mappers */
    uint64_t referenced; /* resident and accessed since the last CLEAR */
} memdiff__plat_usage;

/* The usage of every mapping, in ascending order (Linux: smaps; Windows: the working set per
 * region). Errors: as memdiff__plat_regions. */
int memdiff__plat_refs_usage(memdiff__proc *proc, memdiff__arena *arena,
                             memdiff__plat_usage **out, size_t *count);

/* The usage summed over the process, read as quickly as the OS allows (Linux: smaps_rollup,
 * else smaps). start and end are 0. Errors: as memdiff__plat_regions. */
int memdiff__plat_refs_total(memdiff__proc *proc, memdiff__plat_usage *out);

#endif /* MEMDIFF_PLATFORM_H */
