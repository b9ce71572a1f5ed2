/*
 * memdiff.h - page-level snapshots of a process's address space, and their differences.
 *
 * The whole public API of memdiff. A program brackets code with two snapshots, compares them,
 * and reads the difference through accessors or prints it:
 *
 *     memdiff_snapshot *a = NULL, *b = NULL;
 *     memdiff_diff *d = NULL;
 *     if (memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &a) != MEMDIFF_OK) ...
 *     suspect_code();
 *     if (memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &b) != MEMDIFF_OK) ...
 *     if (memdiff_compare(a, b, 0, &d) == MEMDIFF_OK)
 *         memdiff_report_text(d, stdout, 0);
 *     memdiff_diff_free(d);
 *     memdiff_snapshot_free(b);
 *     memdiff_snapshot_free(a);
 *
 * Code of the calling process is measured with a bracket, which also keeps memdiff's own first-
 * call costs out of the figures (memdiff_bracket_begin(), below):
 *
 *     memdiff_bracket *b = NULL;
 *     memdiff_diff *d = NULL;
 *     if (memdiff_bracket_begin(NULL, &b) != MEMDIFF_OK) ...
 *     suspect_code();
 *     if (memdiff_bracket_end(b, &d) == MEMDIFF_OK)
 *         memdiff_report_text(d, stdout, 0);
 *     memdiff_diff_free(d);
 *     memdiff_bracket_free(b);
 *
 * Rules that hold for every function below:
 *  - Functions that can fail return 0 (MEMDIFF_OK) or a negative memdiff_status. On failure a
 *    detail message for the calling thread is available from memdiff_last_error().
 *  - A function that creates an object returns it through an out-parameter, which is set to NULL
 *    on failure. The caller owns the object and frees it with the matching *_free function.
 *    Every *_free function accepts NULL.
 *  - Accessors copy into a struct the caller provides (memdiff_snapshot_region(s, i, &region))
 *    and return a status; counts are returned directly (memdiff_diff_block_count()). Strings in
 *    those structs (labels, paths) are owned by the object they come from and stay valid until
 *    that object is freed.
 *  - Where a function takes a category, MEMDIFF_CAT_ALL stands for every category but Own.
 *  - Snapshots and diffs are immutable once made: any number of threads may read them at once,
 *    a snapshot may be compared any number of times, and snapshots may be taken concurrently
 *    from several threads.
 *  - Taking a snapshot and comparing never call malloc: memdiff's storage comes from its own
 *    mmap'd arena, which every snapshot reports as category Own and keeps out of all totals.
 *  - No function is async-signal-safe. Called again from a signal handler that interrupted
 *    memdiff on the same thread, memdiff_snapshot_take() fails at once with MEMDIFF_EBUSY, and
 *    nothing deadlocks (docs/api.md).
 */
#ifndef MEMDIFF_H
#define MEMDIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* MEMDIFF_API marks the exported functions; the library is built with hidden visibility (a
 * shared build exports nothing internal). On Windows a shared build (CMake's BUILD_SHARED_LIBS)
 * defines MEMDIFF_BUILD_DLL while compiling the library; programs using the DLL need nothing
 * (functions link through the import library). */
#ifndef MEMDIFF_API
#if (defined(_WIN32) || defined(__CYGWIN__)) && defined(MEMDIFF_BUILD_DLL)
#define MEMDIFF_API __declspec(dllexport)
#elif (defined(__GNUC__) || defined(__clang__)) && !defined(_WIN32) && !defined(__CYGWIN__)
#define MEMDIFF_API __attribute__((visibility("default")))
#else
#define MEMDIFF_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header. CMakeLists.txt refuses to configure when these disagree with its
 * project version, so the header, the library and its package always say the same. */
#define MEMDIFF_VERSION_MAJOR 0
#define MEMDIFF_VERSION_MINOR 4
#define MEMDIFF_VERSION_PATCH 0
#define MEMDIFF_VERSION_STRING "0.4.0"

/* The version of the library linked at run time, "major.minor.patch" (the MEMDIFF_VERSION_STRING
 * it was built with; a shared library's can differ from the program's): static, never NULL. */
MEMDIFF_API const char *memdiff_version(void);

/* ---------------------------------------------------------------------------------------------
 * Status codes. One list generates the enum, memdiff_status_name() and memdiff_strerror().
 * ------------------------------------------------------------------------------------------- */

#define MEMDIFF_STATUS_MAP(X)                                                              \
    X(OK, 0, "success")                                                                   \
    X(EINVAL, -1, "invalid argument")                                                     \
    X(ENOMEM, -2, "out of memory")                                                        \
    X(ESRCH, -3, "no such process (it does not exist or has exited)")                     \
    X(EACCES, -4, "permission denied")                                                    \
    X(EIO, -5, "read error")                                                              \
    X(ECHANGED, -6, "the process changed while it was being read")                        \
    X(ENOTSUP, -7, "not supported on this system")                                        \
    X(EFORMAT, -8, "malformed or corrupt data")                                           \
    X(EMISMATCH, -9, "the snapshots are not comparable")                                  \
    X(ERANGE, -10, "index or value out of range")                                       \
    X(EBUSY, -11, "called again on a thread already inside memdiff (from a signal handler)")

typedef enum memdiff_status {
#define MEMDIFF__STATUS_ENUM(name, code, text) MEMDIFF_##name = (code),
    MEMDIFF_STATUS_MAP(MEMDIFF__STATUS_ENUM)
#undef MEMDIFF__STATUS_ENUM
} memdiff_status;

/* The status's symbolic name ("MEMDIFF_ESRCH"); "MEMDIFF_UNKNOWN" for a value not in the list. */
MEMDIFF_API const char *memdiff_status_name(int status);

/* A short English description of the status; never NULL. */
MEMDIFF_API const char *memdiff_strerror(int status);

/* The detail of the calling thread's last failure ("open /proc/4242/maps: no such process"), or
 * "" when it has had none: thread-local, valid until the thread's next call into memdiff. */
MEMDIFF_API const char *memdiff_last_error(void);

/* ---------------------------------------------------------------------------------------------
 * Categories: where a page is attributed. docs/categories.md states each rule and its sources.
 * ------------------------------------------------------------------------------------------- */

typedef enum memdiff_category {
    MEMDIFF_CAT_IMAGE = 0,   /* a loaded module: code, read-only data, data, bss; label = path */
    MEMDIFF_CAT_HEAP,        /* brk heap, malloc arenas, mmapped malloc chunks, OS heaps */
    MEMDIFF_CAT_STACK,       /* a thread's stack; label = "thread <tid>" */
    MEMDIFF_CAT_MAPPED_FILE, /* a private or shared mapping of a file; label = path */
    MEMDIFF_CAT_SHARED,      /* shared memory: MAP_SHARED anonymous, memfd, /dev/shm, SysV */
    MEMDIFF_CAT_PRIVATE,     /* anonymous private memory nobody else claims */
    MEMDIFF_CAT_SPECIAL,     /* vdso, vvar, vsyscall, PEB/TEB */
    MEMDIFF_CAT_OWN,         /* memdiff's own storage: outside every total */
    MEMDIFF_CAT_UNKNOWN,
    MEMDIFF_CAT_COUNT
} memdiff_category;

/* Every category but Own, where a function takes a category. */
#define MEMDIFF_CAT_ALL MEMDIFF_CAT_COUNT

/* "image", "heap", "stack", "mapped-file", "shared", "private", "special", "own", "unknown";
 * "all" for MEMDIFF_CAT_ALL; "invalid" for a value out of range. */
MEMDIFF_API const char *memdiff_category_name(memdiff_category category);

/* ---------------------------------------------------------------------------------------------
 * Snapshots.
 * ------------------------------------------------------------------------------------------- */

/* How much a snapshot learns per page. Cost grows with depth (docs/performance.md). */
typedef enum memdiff_depth {
    MEMDIFF_DEPTH_FAST = 0,     /* presence, swap, file/anon, zero page, huge page */
    MEMDIFF_DEPTH_STANDARD = 1, /* + private/shared per page; frame numbers where privileged */
    MEMDIFF_DEPTH_DEEP = 2      /* + kernel page flags and map counts (needs CAP_SYS_ADMIN) */
} memdiff_depth;

/* "fast", "standard", "deep". */
MEMDIFF_API const char *memdiff_depth_name(memdiff_depth depth);

/* Where a snapshot's figures came from (memdiff_snapshot_info.sources; per OS: categories.md). */
#define MEMDIFF_SRC_REGIONS 0x0001u        /* the region list */
#define MEMDIFF_SRC_PAGES 0x0002u          /* per-page presence, swap; exclusivity beyond fast */
#define MEMDIFF_SRC_FRAMES 0x0008u         /* physical frame numbers (privileged) */
#define MEMDIFF_SRC_PAGE_FLAGS 0x0010u     /* the kernel's flags per frame (deep) */
#define MEMDIFF_SRC_MAP_COUNTS 0x0020u     /* how many mappings each frame has (deep) */
#define MEMDIFF_SRC_PROCESS_TOTALS 0x0040u /* memdiff_process_totals, as the OS counts them */
#define MEMDIFF_SRC_THREADS 0x0080u        /* thread list with stack pointers */
#define MEMDIFF_SRC_HEAPS 0x0100u          /* allocator structures read from process memory */
#define MEMDIFF_SRC_MODULES 0x0200u        /* module segment tables read from process memory */
#define MEMDIFF_SRC_PAGE_ACCESS 0x0400u    /* per-page accessed state in a reference-set bracket */
#define MEMDIFF_SRC_PSS 0x0800u            /* PSS known per page (deep: map counts) */
#define MEMDIFF_SRC_PSS_MAPPINGS 0x1000u   /* PSS known per kernel mapping (smaps' Pss, kB):
                                              MEMDIFF_SNAPSHOT_SMAPS_PSS; neither: PSS is 0 */

/* Options for memdiff_snapshot_take(). Initialise with MEMDIFF_OPTIONS_INIT or
 * memdiff_options_init() so that fields added later get their defaults. */
typedef struct memdiff_options {
    int pid;                  /* 0: the calling process */
    memdiff_depth depth;      /* requested depth; degraded (and recorded) when not permitted */
    const char *fixture_root; /* NULL: the live system. Tests: a recorded tree read in its place
                                 (Linux: /proc as ROOT, /sys as ROOT/sys; Windows: none,
                                 MEMDIFF_ENOTSUP) */
    unsigned flags;           /* MEMDIFF_SNAPSHOT_* */
    unsigned threads;         /* threads that may read pages, the calling one included: 0 as
                                 many as the processors the caller may run on, 1 the calling
                                 thread alone; never more than those processors, nor 4. Only
                                 large regions of another process are read on more than one
                                 (Linux; docs/api.md "Threads") */
} memdiff_options;

#define MEMDIFF_OPTIONS_INIT {0, MEMDIFF_DEPTH_STANDARD, NULL, 0u, 0u}

/* memdiff_options.flags: where the snapshot gets no map counts (below deep, or deep degraded),
 * read PSS per kernel mapping from smaps (Linux; docs/api.md "PSS", its cost docs/performance.md).
 * Sets MEMDIFF_SRC_PSS_MAPPINGS; where the OS has no such figure (Windows) the snapshot goes
 * without it and says so in memdiff_snapshot_info.degraded. */
#define MEMDIFF_SNAPSHOT_SMAPS_PSS 0x1u

MEMDIFF_API void memdiff_options_init(memdiff_options *options);

typedef struct memdiff_snapshot memdiff_snapshot;

/* Takes a snapshot as described by options (NULL: the calling process at standard depth). A
 * depth the caller is not allowed is no error: the snapshot records why it has less
 * (memdiff_snapshot_info.degraded). Errors: MEMDIFF_EINVAL (out NULL, bad option), MEMDIFF_ESRCH
 * (no such process, or it exited during the snapshot), MEMDIFF_EACCES, MEMDIFF_ENOMEM,
 * MEMDIFF_EIO, MEMDIFF_ECHANGED (the process changed under the read, again when taken once
 * more), MEMDIFF_EBUSY (from a signal handler that interrupted memdiff on this thread). */
MEMDIFF_API int memdiff_snapshot_take(const memdiff_options *options, memdiff_snapshot **out);

/* Shorthand: the calling process at the given depth. */
MEMDIFF_API int memdiff_snapshot_self(memdiff_depth depth, memdiff_snapshot **out);

MEMDIFF_API void memdiff_snapshot_free(memdiff_snapshot *snapshot); /* NULL is allowed */

/* Unmaps the scratch memory memdiff keeps between snapshots (working buffers, freed snapshots'
 * storage: 8 MiB at most, counted as Own, never as the program's: docs/api.md) and the address
 * space it reserved where nothing live is left. Any thread, any time; snapshots are unaffected. */
MEMDIFF_API void memdiff_trim(void);

/* Figures the process itself reports (Linux: /proc/PID/status), in bytes; 0 when unknown. */
typedef struct memdiff_process_totals {
    uint64_t vm_size;    /* VmSize: mapped virtual memory */
    uint64_t vm_rss;     /* VmRSS: resident set */
    uint64_t vm_hwm;     /* VmHWM: peak resident set */
    uint64_t rss_anon;   /* RssAnon */
    uint64_t rss_file;   /* RssFile */
    uint64_t rss_shmem;  /* RssShmem */
    uint64_t vm_pte;     /* VmPTE: page tables */
    uint64_t vm_swap;    /* VmSwap */
} memdiff_process_totals;

typedef struct memdiff_snapshot_info {
    int pid;
    memdiff_depth depth_requested;
    memdiff_depth depth;     /* what was obtained */
    unsigned sources;        /* MEMDIFF_SRC_* */
    const char *degraded;    /* NULL, or why less than requested was obtained */
    uint32_t page_size;
    uint64_t time_ns;        /* wall clock (ns since the Unix epoch) when the snapshot began */
    const char *host;        /* host name */
    size_t region_count;
    size_t run_count;        /* stored runs of pages with identical attributes */
    uint64_t resident_bytes; /* resident pages of the process, Own excluded */
    uint64_t private_bytes;  /* of resident_bytes, mapped by this process only */
    uint64_t shared_bytes;   /* of resident_bytes, mapped elsewhere too (or unknown at fast) */
    uint64_t swapped_bytes;
    uint64_t pss_bytes;      /* proportional set size, Own excluded (docs/api.md, "PSS") */
    uint64_t own_bytes;      /* snapshot of the calling process: bytes of memdiff's storage
                                committed when it ended (the allocator's count, exact; not a
                                count of resident pages); else 0 (docs/api.md) */
    uint64_t storage_bytes;  /* bytes of memory this snapshot occupies */
    memdiff_process_totals totals;
    unsigned threads;        /* threads that read its pages (1: the calling thread alone; fewer
                                than memdiff_options.threads allows where no region is large
                                enough, processors were busy or a region read too cheaply:
                                docs/api.md, "Threads"; a loaded snapshot: 0, not recorded) */
    unsigned attempts;       /* times it was taken: 1, or 2 when what a shortcut of the first
                                walk rested on changed during it (docs/api.md, "Take a
                                snapshot"); a loaded snapshot: 0, not recorded */
} memdiff_snapshot_info;

/* Fills *info; strings point into the snapshot. Errors: MEMDIFF_EINVAL. */
MEMDIFF_API int memdiff_snapshot_get_info(const memdiff_snapshot *snapshot,
                                          memdiff_snapshot_info *info);

/* Region protection and kind (memdiff_region.prot / .flags). */
#define MEMDIFF_PROT_READ 0x1u
#define MEMDIFF_PROT_WRITE 0x2u
#define MEMDIFF_PROT_EXEC 0x4u
#define MEMDIFF_REGION_SHARED 0x1u /* MAP_SHARED (else private / copy-on-write) */
#define MEMDIFF_REGION_FILE 0x2u   /* backed by a file */

/* One region of a snapshot after classification (a mapping, or a part of one when the
 * classifier split it, e.g. a malloc chunk inside a larger anonymous mapping). */
typedef struct memdiff_region {
    uint64_t start, end;       /* [start, end), page aligned */
    unsigned prot;             /* MEMDIFF_PROT_* */
    unsigned flags;            /* MEMDIFF_REGION_* */
    memdiff_category category;
    const char *label;         /* who it belongs to: module path, "thread 4242", "[heap]"... */
    const char *path;          /* backing file as the OS names it, or "" */
    uint64_t resident_bytes;
    uint64_t private_bytes;
    uint64_t shared_bytes;
    uint64_t swapped_bytes;
    uint64_t pss_bytes;        /* proportional: page_size / map count per page, as smaps; of
                                  [start, pss_end) (docs/api.md "PSS") */
    uint64_t pss_end;          /* end, or (MEMDIFF_SRC_PSS_MAPPINGS) the end of the kernel
                                  mapping this region begins; 0 in a mapping's later regions
                                  (their PSS is in the first one's) and where PSS is unknown */
} memdiff_region;

MEMDIFF_API size_t memdiff_snapshot_region_count(const memdiff_snapshot *snapshot);

/* Fills *out with region index (0 .. count-1, ascending addresses). Errors: MEMDIFF_EINVAL,
 * MEMDIFF_ERANGE. */
MEMDIFF_API int memdiff_snapshot_region(const memdiff_snapshot *snapshot, size_t index,
                                        memdiff_region *out);

/* Finds the region containing addr; MEMDIFF_ERANGE when no region does. */
MEMDIFF_API int memdiff_snapshot_find(const memdiff_snapshot *snapshot, uint64_t addr,
                                      memdiff_region *out);

/* ---------------------------------------------------------------------------------------------
 * Comparing snapshots.
 * ------------------------------------------------------------------------------------------- */

/* Page attributes (memdiff_block.attrs_before / attrs_after in verbose diffs). */
#define MEMDIFF_PAGE_PRESENT 0x001u   /* resident */
#define MEMDIFF_PAGE_SWAPPED 0x002u   /* in swap */
#define MEMDIFF_PAGE_PRIVATE 0x004u   /* mapped by this process only (pagemap exclusive bit) */
#define MEMDIFF_PAGE_FILE 0x008u      /* page cache or shared anonymous (else private anon) */
#define MEMDIFF_PAGE_ZERO 0x010u      /* the shared zero page: costs no memory */
#define MEMDIFF_PAGE_HUGE 0x020u      /* part of a huge page */
#define MEMDIFF_PAGE_SOFT_DIRTY 0x040u
#define MEMDIFF_PAGE_KSM 0x080u       /* merged by KSM (deep) */
#define MEMDIFF_PAGE_DIRTY 0x100u     /* kernel page flag (deep) */
#define MEMDIFF_PAGE_ACTIVE 0x200u    /* on the active LRU (deep) */
#define MEMDIFF_PAGE_REFERENCED 0x400u /* kernel page flag (deep) */
#define MEMDIFF_PAGE_ACCESSED 0x800u   /* accessed since a reference-set bracket began (the after
                                          snapshot of a bracket with per-page tracking) */

/* What happened to the pages of a block. */
typedef enum memdiff_change {
    MEMDIFF_CHANGE_NEW = 0,        /* resident after, not before */
    MEMDIFF_CHANGE_FREED,          /* resident before, not after */
    MEMDIFF_CHANGE_REPLACED,       /* resident in both, new frame (frames known), same sharing */
    MEMDIFF_CHANGE_BECAME_PRIVATE, /* shared before, private after, new frame or not (COW) */
    MEMDIFF_CHANGE_BECAME_SHARED,  /* private before, shared after, new frame or not */
    MEMDIFF_CHANGE_MIXED,          /* a block whose pages changed in several ways */
    MEMDIFF_CHANGE_TOUCHED         /* reference-set diffs only: no page came, went or changed,
                                      but pages resident before and after were accessed */
} memdiff_change;

/* "new", "freed", "replaced", "became-private", "became-shared", "mixed", "touched". */
MEMDIFF_API const char *memdiff_change_name(memdiff_change change);

/* memdiff_compare() flags. VERBOSE: blocks of contiguous pages with identical attributes, not
 * allocation units, with the attributes kept. FORCE: compare snapshots of different processes or
 * hosts (else refused with MEMDIFF_EMISMATCH). */
#define MEMDIFF_COMPARE_VERBOSE 0x1u
#define MEMDIFF_COMPARE_FORCE 0x2u

/* Whether a block's mapping exists in one snapshot only (memdiff_block.presence). */
#define MEMDIFF_IN_BEFORE 0x1u
#define MEMDIFF_IN_AFTER 0x2u

/* Byte counts of a diff, a category or a block. new = private + shared;
 * freed = unmapped + discarded + swapped; net = new - freed. Every count is at most INT64_MAX
 * (2^63 - 1), so that net and every figure (memdiff_figure) are exact: memdiff_compare()
 * refuses a diff whose counts would not fit. */
typedef struct memdiff_totals {
    uint64_t new_bytes;
    uint64_t new_private_bytes;
    uint64_t new_shared_bytes; /* without per-page exclusivity (fast depth) the split is an
                                  estimate: file and shared-anonymous pages count as shared */
    uint64_t freed_bytes;
    uint64_t freed_unmapped_bytes;  /* the mapping is gone */
    uint64_t freed_discarded_bytes; /* still mapped, not resident: MADV_DONTNEED, reclaim */
    uint64_t freed_swapped_bytes;   /* still mapped, now in swap */
    uint64_t replaced_bytes;
    uint64_t became_private_bytes;
    uint64_t became_shared_bytes;
    int64_t net_bytes;
    uint64_t new_pss_bytes;   /* PSS the counted pages gained / lost, page by page (net PSS = */
    uint64_t freed_pss_bytes; /* new - freed; docs/api.md): both MEMDIFF_SRC_PSS, else 0 */
} memdiff_totals;

/* A diff's impact types (WPA's reference-set terms), in bytes, from a reference-set bracket
 * (MEMDIFF_BRACKET_REFSET); all 0 in other diffs. Counted per page like the totals. */
typedef struct memdiff_impact {
    uint64_t touched_bytes;    /* the reference set: pages resident at the end that were
                                  accessed during the bracket, already resident or new */
    uint64_t persistent_bytes; /* resident before and after, in the same mapping */
    uint64_t impacting_bytes;  /* residency the bracket changed: new and kept, or freed
                                  (new_bytes + freed_bytes of the totals) */
    uint64_t transient_bytes;  /* the whole diff only (0 per category and block): the peak
                                  above both ends, memory allocated and freed inside */
    uint64_t touched_estimated_bytes; /* of touched_bytes, what was divided out of a mapping's
                                  figure among the regions sharing it: an estimate; 0: exact */
    uint64_t touched_max_bytes; /* at most this many touched (mapping figures, resident sizes) */
} memdiff_impact;

/* A group of changed pages: by default one allocation unit (a module with all its segments, a
 * heap, a thread's stack, one mapping); in verbose diffs, contiguous pages with identical
 * attributes. Unchanged pages are never part of a block. */
typedef struct memdiff_block {
    uint64_t start, end;       /* the address span the block's pages lie in */
    memdiff_category category;
    const char *label;
    memdiff_change change;
    unsigned presence;         /* MEMDIFF_IN_BEFORE | MEMDIFF_IN_AFTER: where the mapping was */
    memdiff_totals totals;
    unsigned attrs_before;     /* verbose diffs: MEMDIFF_PAGE_* before and after; else 0 */
    unsigned attrs_after;
    memdiff_impact impact;     /* a reference-set bracket's diff; else all 0 */
} memdiff_block;

typedef struct memdiff_diff memdiff_diff;

/* Compares two snapshots of the same process. Both stay untouched and usable; the diff does not
 * refer to them (they may be freed before it). Errors: MEMDIFF_EINVAL (a NULL argument, unknown
 * flag), MEMDIFF_EMISMATCH (different page sizes; or different pids or host names without
 * MEMDIFF_COMPARE_FORCE, the detail naming both), MEMDIFF_ERANGE (a byte count of the diff, of
 * all categories or of one, would be above INT64_MAX, the detail naming the count and its value:
 * a guard, not a case met in practice: a loaded file maps under 2^63 bytes), MEMDIFF_ENOMEM. */
MEMDIFF_API int memdiff_compare(const memdiff_snapshot *before, const memdiff_snapshot *after,
                                unsigned flags, memdiff_diff **out);

MEMDIFF_API void memdiff_diff_free(memdiff_diff *diff); /* NULL is allowed */

/* Totals of category, or of every category but Own (MEMDIFF_CAT_ALL). Own's own totals are empty
 * for snapshots taken by this version, which do not read Own's pages (memdiff's cost is
 * memdiff_snapshot_info.own_bytes). Errors: MEMDIFF_EINVAL (NULL, category out of range). */
MEMDIFF_API int memdiff_diff_totals(const memdiff_diff *diff, memdiff_category category,
                                    memdiff_totals *out);

/* Impact (a reference-set bracket's diff) of category or MEMDIFF_CAT_ALL, as memdiff_diff_totals().
 * Errors: MEMDIFF_EINVAL (NULL, category out of range, a diff of no reference-set bracket). */
MEMDIFF_API int memdiff_diff_impact(const memdiff_diff *diff, memdiff_category category,
                                    memdiff_impact *out);

/* Blocks in ascending address order: block index (0 .. count-1) into *out.
 * Errors: MEMDIFF_EINVAL (NULL), MEMDIFF_ERANGE (index). */
MEMDIFF_API size_t memdiff_diff_block_count(const memdiff_diff *diff);
MEMDIFF_API int memdiff_diff_block(const memdiff_diff *diff, size_t index, memdiff_block *out);

/* Copies into *out the block whose span [start, end) holds addr. Spans can nest (a default diff's
 * unit spans the mappings between its own) or share a start (a freed mapping and the next): the
 * last of them in block order wins, of nested spans the innermost; O(log blocks) unless nested.
 * Errors: MEMDIFF_EINVAL (NULL), MEMDIFF_ERANGE (no span holds addr; *out is left as it was). */
MEMDIFF_API int memdiff_diff_find_block(const memdiff_diff *diff, uint64_t addr,
                                        memdiff_block *out);

/* What a reference-set bracket measured, and the process-wide figures of its end (how each OS
 * measures each source: docs/reference-set.md). Sizes are the process's own resident-size figures
 * (memdiff's storage included, unlike the diff's page counts) in bytes, 0 when unknown. All 0 for
 * a bracket without MEMDIFF_BRACKET_REFSET and for memdiff_compare()'s diffs. */
#define MEMDIFF_REFS_CLEARED 0x1u  /* the referenced state was cleared at begin */
#define MEMDIFF_REFS_MAPPINGS 0x2u /* touched bytes per mapping */
#define MEMDIFF_REFS_PAGES 0x4u    /* touched per page */
#define MEMDIFF_REFS_PEAK 0x8u     /* the peak resident size since begin */

typedef struct memdiff_refset_info {
    unsigned sources;          /* MEMDIFF_REFS_*; 0: no reference set */
    const char *degraded;      /* NULL, or what could not be measured and why */
    uint64_t begin_rss_bytes;  /* resident size when the peak was reset */
    uint64_t end_rss_bytes;    /* resident size when the peak was read (diffs only) */
    uint64_t peak_bytes;       /* peak resident size during the bracket (diffs only) */
    uint64_t peak_slack_bytes; /* by how much the OS's peak figure may be off (Linux: the
                                  per-CPU batching of its RSS counters) */
    uint64_t transient_bytes;  /* peak above both ends: peak - max(begin, end) (diffs only);
                                  off by up to 2 * peak_slack_bytes */
    uint64_t untracked_bytes;  /* per-page tracking: bytes resident at begin in frames the
                                  kernel does not track; touched if resident at the end */
} memdiff_refset_info;

/* Where a diff came from. Strings point into the diff. */
typedef struct memdiff_diff_info {
    memdiff_snapshot_info before, after; /* the infos of the two snapshots */
    unsigned compare_flags;              /* MEMDIFF_COMPARE_* it was made with */
    memdiff_refset_info refset;          /* a reference-set bracket's figures; else all 0 */
} memdiff_diff_info;

/* Fills *out. Errors: MEMDIFF_EINVAL. */
MEMDIFF_API int memdiff_diff_get_info(const memdiff_diff *diff, memdiff_diff_info *out);

/* ---------------------------------------------------------------------------------------------
 * Reports. Both writers return MEMDIFF_EIO when writing to the stream fails.
 * ------------------------------------------------------------------------------------------- */

/* What a report shows and how (memdiff_report_options.flags). */
#define MEMDIFF_REPORT_NO_HEADER 0x01u /* leave out the snapshot header lines */
#define MEMDIFF_REPORT_HUMAN 0x02u     /* text: sizes in KiB, MiB, GiB with one decimal */
#define MEMDIFF_REPORT_COLOR 0x04u     /* text: ANSI colours (growth, shrinkage, headings) */
#define MEMDIFF_REPORT_REGIONS 0x08u   /* snapshot reports: every region, not blocks */
#define MEMDIFF_REPORT_LINE 0x10u      /* JSON: the whole object on one line (JSON Lines) */
#define MEMDIFF_REPORT_NO_BLOCKS 0x20u /* leave out the blocks: summary and categories only */

/* Order of the blocks in a report. */
typedef enum memdiff_sort {
    MEMDIFF_SORT_ADDRESS = 0, /* ascending address, then category */
    MEMDIFF_SORT_SIZE,        /* largest first: a diff block's new + freed, a snapshot's resident */
    MEMDIFF_SORT_NET,         /* a diff: most grown first, most shrunk last; a snapshot: private */
    MEMDIFF_SORT_NAME         /* label in byte order, then address */
} memdiff_sort;

/* Options of the report writers; initialise with MEMDIFF_REPORT_OPTIONS_INIT (NULL as options:
 * those defaults). Ties keep address order. */
typedef struct memdiff_report_options {
    unsigned flags;      /* MEMDIFF_REPORT_* */
    memdiff_sort sort;   /* order of the blocks */
    size_t top;          /* at most this many blocks, the first after sorting; 0: all */
    unsigned categories; /* blocks and table rows of these categories only, bit 1u << category;
                            0: every one. The totals stay the whole process's */
    unsigned width;      /* text: every line fits this many columns (at least 80: less is
                            taken as 80), labels cut from the left after U+2026 (ellipsis) or
                            on a line of their own (JSON keeps them whole); 0: no limit */
} memdiff_report_options;

#define MEMDIFF_REPORT_OPTIONS_INIT {0, MEMDIFF_SORT_ADDRESS, 0, 0, 0}

/* MemDiff-style text: net change, allocated, freed, new private/shared; a table per category;
 * the blocks with sizes and names (with page attributes for a verbose diff). */
MEMDIFF_API int memdiff_report_text(const memdiff_diff *diff, FILE *out,
                                    const memdiff_report_options *options);

/* The same as one JSON object ("kind": "diff"; schema version 3: docs/json-report.md and
 * docs/schema/memdiff.schema.json); with MEMDIFF_REPORT_LINE on one line. */
MEMDIFF_API int memdiff_report_json(const memdiff_diff *diff, FILE *out,
                                    const memdiff_report_options *options);

/* One snapshot: header, resident, private, shared, swapped (and PSS where known; else, in text,
 * a dash and why) per category, and its blocks (adjacent regions of one category and label) or
 * regions; the text as memdiff show prints it (docs/cli.md). The JSON one is a document of
 * "kind": "snapshot" (docs/json-report.md); MEMDIFF_REPORT_NO_BLOCKS gives the summary
 * memdiff snap --json prints. */
MEMDIFF_API int memdiff_snapshot_report_text(const memdiff_snapshot *snapshot, FILE *out,
                                             const memdiff_report_options *options);
MEMDIFF_API int memdiff_snapshot_report_json(const memdiff_snapshot *snapshot, FILE *out,
                                             const memdiff_report_options *options);

/* One tick of watching a process as one JSON object ("kind": "watch"; one line with
 * MEMDIFF_REPORT_LINE, for JSON Lines): after's absolute figures (resident, private, shared,
 * swapped, PSS where known) in total and per category, each with the change diff measured
 * (diff's after snapshot must be after: else MEMDIFF_EINVAL), and diff's blocks unless
 * MEMDIFF_REPORT_NO_BLOCKS. tick numbers the record (the CLI counts from 1). */
MEMDIFF_API int memdiff_watch_report_json(const memdiff_diff *diff, const memdiff_snapshot *after,
                                          unsigned tick, FILE *out,
                                          const memdiff_report_options *options);

/* text (NULL as "") as one line of printable text, as memdiff prints labels, paths and host
 * names from a target or a file: control bytes and invalid UTF-8 as \xNN, a backslash doubled
 * where it could start an escape (docs/cli.md, "Text output"). Writes at most size bytes into
 * buf (NULL when size is 0), NUL included, cut between whole escapes and characters. Returns
 * the length of the whole escaped text (as snprintf does): at most 4 * strlen(text). */
MEMDIFF_API size_t memdiff_escape_text(char *buf, size_t size, const char *text);

/* ---------------------------------------------------------------------------------------------
 * Snapshot files: keep a snapshot, compare it later or elsewhere. The format is versioned,
 * little-endian, run-length and checksummed (CRC-32); docs/file-format.md describes every byte.
 * A loaded snapshot is a snapshot like any other: compare it, query it, free it.
 * ------------------------------------------------------------------------------------------- */

/* The format this library writes. It reads every file of the same major version (minor versions
 * only add what older readers may skip) and refuses other majors with MEMDIFF_EFORMAT. */
#define MEMDIFF_FILE_VERSION_MAJOR 1
#define MEMDIFF_FILE_VERSION_MINOR 1

/* Writes the snapshot to out (opened in binary mode) and flushes it. Everything the snapshot
 * holds is kept: info, regions with labels and paths, page runs, per-page frame facts, PSS per
 * mapping (format 1.1).
 * The stream stays open and owned by the caller. Errors: MEMDIFF_EINVAL (a NULL argument, or a
 * snapshot that breaks the data model, e.g. overlapping regions), MEMDIFF_ENOMEM, MEMDIFF_EIO
 * (writing or flushing failed; the stream then holds a partial file). */
MEMDIFF_API int memdiff_snapshot_save(const memdiff_snapshot *snapshot, FILE *out);

/* Writes the snapshot to the file at path atomically (a new file beside it, renamed over path
 * once complete; mode 0666 less the umask). path must not exist yet or be a regular file: a
 * directory, device, FIFO, socket or symbolic link is refused and left as it is. Errors: as
 * memdiff_snapshot_save(), MEMDIFF_EINVAL (also an empty path, or one that names anything but a
 * regular file), MEMDIFF_EACCES (path may not be written). On failure path is as it was. */
MEMDIFF_API int memdiff_snapshot_save_file(const memdiff_snapshot *snapshot, const char *path);

/* Reads one snapshot from in (binary mode) and checks all of it (header after 16 bytes, then
 * each section: checksum, bounds, order, enums; trailing data is an error). Files up to 4 GiB;
 * a loaded snapshot's arrays take at most 3 x the file's size + 16 MiB (docs/file-format.md,
 * "Memory"). The result is freed with memdiff_snapshot_free(). Errors: MEMDIFF_EINVAL (NULL),
 * MEMDIFF_EFORMAT (not a snapshot file, unsupported version, truncated, corrupt, over the
 * memory bound: the detail names what and where), MEMDIFF_EIO (reading), MEMDIFF_ENOMEM. */
MEMDIFF_API int memdiff_snapshot_load(FILE *in, memdiff_snapshot **out);

/* memdiff_snapshot_load() from the file at path; the detail message starts with path.
 * Errors: as memdiff_snapshot_load(), MEMDIFF_EACCES (path may not be read), MEMDIFF_EIO (it
 * cannot be opened, e.g. it does not exist). */
MEMDIFF_API int memdiff_snapshot_load_file(const char *path, memdiff_snapshot **out);

/* ---------------------------------------------------------------------------------------------
 * Assertions on a diff, for unit tests; memdiff_check.h wraps them for the Check framework and
 * docs/testing-with-memdiff.md shows how to write a memory test that does not flake. A figure is
 * one measure summed over the blocks of one category, or of all, that a filter keeps; a check
 * compares it with a bound and, when that fails, writes a message that shows the blocks behind
 * it, largest first. Nothing here calls malloc: messages go into the caller's buffer.
 * ------------------------------------------------------------------------------------------- */

/* What a figure counts, in bytes (fields of memdiff_totals). */
typedef enum memdiff_measure {
    MEMDIFF_MEASURE_NEW = 0,     /* new_bytes: resident after, not before */
    MEMDIFF_MEASURE_FREED,       /* freed_bytes: resident before, not after */
    MEMDIFF_MEASURE_NET,         /* net_bytes = new - freed; negative when memory went back */
    MEMDIFF_MEASURE_PRIVATE,     /* new_private_bytes: new pages mapped by this process only */
    MEMDIFF_MEASURE_SHARED,      /* new_shared_bytes: new pages mapped elsewhere too */
    MEMDIFF_MEASURE_NET_PRIVATE, /* new private - freed: what a leak leaves behind. Freed pages
                                    are not split by exclusivity, so all of them count */
    MEMDIFF_MEASURE_TOUCHED,     /* the reference set: pages accessed in a reference-set bracket
                                    (MEMDIFF_BRACKET_REFSET), resident before or not, maybe in
                                    part estimated (memdiff_impact); else MEMDIFF_ENOTSUP */
    MEMDIFF_MEASURE_PEAK,        /* the peak resident size inside a reference-set bracket,
                                    above its start: the whole process's (MEMDIFF_CAT_ALL
                                    only, no filter applies); else MEMDIFF_ENOTSUP likewise */
    MEMDIFF_MEASURE_REPLACED,    /* replaced_bytes: resident in both, new frame, same sharing */
    MEMDIFF_MEASURE_COUNT
} memdiff_measure;

/* "new", "freed", "net", "new private", "new shared", "net private", "touched", "peak",
 * "replaced"; "invalid" for a value out of range. */
MEMDIFF_API const char *memdiff_measure_name(memdiff_measure measure);

/* How a figure is compared with a bound: "figure <= bound" for MEMDIFF_CMP_LE. */
typedef enum memdiff_cmp {
    MEMDIFF_CMP_LE = 0,
    MEMDIFF_CMP_LT,
    MEMDIFF_CMP_EQ,
    MEMDIFF_CMP_NE,
    MEMDIFF_CMP_GE,
    MEMDIFF_CMP_GT
} memdiff_cmp;

/* "<=", "<", "==", "!=", ">=", ">"; "?" for a value out of range. */
MEMDIFF_API const char *memdiff_cmp_symbol(memdiff_cmp cmp);

/* The comparison written as symbol (blanks around allowed), for macros that take the operator
 * itself. Errors: MEMDIFF_EINVAL (NULL, or not one of the six). */
MEMDIFF_API int memdiff_cmp_parse(const char *symbol, memdiff_cmp *out);

/* The bit of category c in memdiff_filter.ignore_categories. */
#define MEMDIFF_CAT_BIT(c) (1u << (unsigned)(c))

/* memdiff_filter.flags. MEMDIFF_FILTER_IGNORE_IMAGE_FILE leaves out module image pages that come
 * and go with the page cache: code, read-only and unwritten data, which a function's first call
 * pages in (demand paging) and the kernel may reclaim at any time; what a module's writable data
 * and bss gain still counts. A verbose diff knows each page's kind (MEMDIFF_PAGE_FILE) and leaves
 * out exactly those; a default diff leaves out an image block's new shared and its discarded
 * pages, so a module mapped by this process alone (the test program) still counts its code
 * pages as private there: warm up, or compare with MEMDIFF_COMPARE_VERBOSE. */
#define MEMDIFF_FILTER_IGNORE_IMAGE_FILE 0x1u

/* Noise control: what a figure leaves out; only read. MEMDIFF_FILTER_INIT or NULL: nothing. */
typedef struct memdiff_filter {
    unsigned ignore_categories;       /* MEMDIFF_CAT_BIT()s of categories left out */
    unsigned flags;                   /* MEMDIFF_FILTER_* */
    const char *const *ignore_labels; /* NULL, or a NULL-terminated list of substrings: a block
                                         whose label contains one is left out (the test
                                         runner's own module, e.g. "libcheck") */
} memdiff_filter;

#define MEMDIFF_FILTER_INIT {0, 0, NULL}

/* Which figure: measure summed over the blocks of category (or MEMDIFF_CAT_ALL) that filter
 * (NULL: none) keeps. For MEMDIFF_CAT_OWN, which has no blocks, the category's totals,
 * unfiltered. Initialise with MEMDIFF_FIGURE_INIT: net bytes of all categories, no filter. */
typedef struct memdiff_figure {
    memdiff_category category;
    memdiff_measure measure;
    const memdiff_filter *filter;
} memdiff_figure;

#define MEMDIFF_FIGURE_INIT {MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, NULL}

/* The value of figure (NULL: MEMDIFF_FIGURE_INIT) in diff. Errors: MEMDIFF_EINVAL (NULL diff or
 * out; category, measure or filter flags out of range), MEMDIFF_ENOTSUP (touched or peak of a
 * diff of no reference-set bracket). */
MEMDIFF_API int memdiff_diff_figure(const memdiff_diff *diff, const memdiff_figure *figure,
                                    int64_t *out);

#define MEMDIFF_CHECK_MAX_BLOCKS 10 /* blocks a failure message lists at most */
/* Checks "figure cmp bound" (figure NULL: MEMDIFF_FIGURE_INIT). Returns 1 when it holds, 0 when
 * not, or a negative status (as memdiff_diff_figure(); MEMDIFF_EINVAL for cmp). msg receives at
 * most msg_size bytes, NUL included (msg may be NULL when msg_size is 0): a first line with the
 * figure, the comparison and the bound (a touched figure in part estimated, memdiff_impact:
 * U+2248 before it, and a line with that part and the bound); on failure, the filter, the
 * blocks behind the figure (largest first, at most MEMDIFF_CHECK_MAX_BLOCKS), the figure per
 * category and what the filter left out; on an error, the error. A message that does not fit
 * is cut after a whole line and ends with "...". */
MEMDIFF_API int memdiff_check(const memdiff_diff *diff, const memdiff_figure *figure,
                              memdiff_cmp cmp, int64_t bound, char *msg, size_t msg_size);

/* How a label is matched (memdiff_check_label). */
typedef enum memdiff_match {
    MEMDIFF_MATCH_EXACT = 0,
    MEMDIFF_MATCH_PREFIX,
    MEMDIFF_MATCH_SUFFIX,   /* e.g. "/libfoo.so" for a module wherever it was loaded from */
    MEMDIFF_MATCH_SUBSTRING
} memdiff_match;

/* Checks that blocks whose label matches pattern exist in figure's category (or MEMDIFF_CAT_ALL),
 * of those its filter keeps, and together have at least min_bytes of its measure (INT64_MIN: that
 * one exists at all); figure NULL: MEMDIFF_FIGURE_INIT. Returns 1, 0 or a negative status and
 * writes msg as memdiff_check(); on failure it lists the matching blocks, or when none matches,
 * the category's largest blocks, so that their labels are seen. Errors: MEMDIFF_EINVAL (NULL
 * diff or pattern, an argument out of range), MEMDIFF_ENOTSUP (as memdiff_diff_figure()). */
MEMDIFF_API int memdiff_check_label(const memdiff_diff *diff, const memdiff_figure *figure,
                                    const char *pattern, memdiff_match match, int64_t min_bytes,
                                    char *msg, size_t msg_size);

/* Keeps the memory at p for the optimizer: the compiler must assume it is read here, so the
 * allocation and the stores into it stay. At -O1 and up, GCC and Clang delete a leaked malloc
 * with its memset, and stores into an array nothing reads, so a leak a test looks for never
 * happens (docs/testing-with-memdiff.md). Call it before the bracket ends. GCC, Clang: an empty
 * asm, no instruction; elsewhere a call of an empty function through a volatile pointer, which
 * the compiler must make without knowing what the callee reads. */
#if defined(__GNUC__) || defined(__clang__)
static inline void memdiff_keep(const void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }
#else
static inline void memdiff__keep_nothing(const void *p) { (void)p; }
static inline void memdiff_keep(const void *p)
{
    static void (*volatile keep)(const void *) = memdiff__keep_nothing;
    keep(p);
}
#endif

/* ---- measuring code: brackets, warm-up, settling, leak slopes ---------------------------- */

/* Gives heap memory the program freed back to the OS where the allocator can (glibc:
 * malloc_trim(0), which also discards free pages inside the heap; Windows: HeapCompact on each
 * process heap); elsewhere it does nothing. Called before a snapshot, it keeps memory a test
 * freed from counting as retained. Never allocates; safe from any thread. */
MEMDIFF_API void memdiff_settle_heap(void);

/* Calls fn(arg) `times` times before measuring, so that first-call costs (code paged in, lazy
 * binding, caches filled, allocator arenas) fall outside the bracket. Errors: MEMDIFF_EINVAL. */
MEMDIFF_API int memdiff_warm_up(void (*fn)(void *arg), void *arg, unsigned times);

/* ---- brackets ----------------------------------------------------------------------------
 * A bracket measures what code does to a process's memory: begin takes the before snapshot,
 * end the after snapshot and the diff. It is the one way to measure code: on the calling
 * process it first settles the heap and warms memdiff up; with MEMDIFF_BRACKET_REFSET it is a
 * reference-set bracket, which also sees the pages the code accessed that were resident all
 * along and memory it allocated and freed before the end (through the peak resident size):
 * touched and peak figures, impact (docs/reference-set.md).
 *
 * A reference-set bracket's side effects: begin clears the referenced state of every page of
 * the process, which the kernel's page reclaim reads to age its LRU lists, and resets the
 * process's peak resident size (VmHWM), losing the lifetime peak. Both act on the whole
 * process, every thread. What the OS or the caller's rights do not allow is left out and
 * recorded (memdiff_refset_info.degraded), never guessed. */

#define MEMDIFF_BRACKET_REFSET 0x1u    /* a reference-set bracket: touched, peak and impact */
#define MEMDIFF_BRACKET_NO_SETTLE 0x2u /* the calling process: no memdiff_settle_heap() */

/* Initialise with MEMDIFF_BRACKET_OPTIONS_INIT: this process, standard depth, settled, plain. */
typedef struct memdiff_bracket_options {
    memdiff_options snapshot; /* the process, depth (and fixture) of both snapshots */
    unsigned flags;           /* MEMDIFF_BRACKET_* */
    unsigned compare_flags;   /* MEMDIFF_COMPARE_* of the diff */
} memdiff_bracket_options;

#define MEMDIFF_BRACKET_OPTIONS_INIT {MEMDIFF_OPTIONS_INIT, 0u, 0u}

typedef struct memdiff_bracket memdiff_bracket;

/* Begins a bracket as options say (NULL: the defaults). On the calling process it settles the
 * heap (unless MEMDIFF_BRACKET_NO_SETTLE), takes and frees one snapshot, which pages in
 * memdiff's own code and the stack depth it uses so that they do not show as new, settles again
 * and takes the before snapshot. With MEMDIFF_BRACKET_REFSET it then clears the process's
 * referenced state, resets its peak resident size and, where the kernel has page_idle and frame
 * numbers are visible, marks its resident frames idle; a reset that is refused (clear_refs
 * needs the process's owner or root) is no error: it is recorded in the bracket's info.
 * Errors: as memdiff_snapshot_take(); MEMDIFF_EINVAL (out NULL, bad options, a reference-set
 * bracket with MEMDIFF_COMPARE_FORCE). The caller frees *out with memdiff_bracket_free(). */
MEMDIFF_API int memdiff_bracket_begin(const memdiff_bracket_options *options,
                                      memdiff_bracket **out);

/* Ends the bracket: settles (as at begin), takes the after snapshot (a reference-set bracket
 * also reads the peak and the referenced state per mapping or per page) and compares into *out.
 * A bracket ends once, and stays to be freed. Errors: MEMDIFF_EINVAL (NULL, ended already), and
 * those of memdiff_snapshot_take() and memdiff_compare(). */
MEMDIFF_API int memdiff_bracket_end(memdiff_bracket *bracket, memdiff_diff **out);

/* Releases a bracket, ended or not (unended, a reference-set one leaves the process's bits). */
MEMDIFF_API void memdiff_bracket_free(memdiff_bracket *bracket); /* NULL is allowed */

/* Begin's figures of a reference-set bracket (all 0 without MEMDIFF_BRACKET_REFSET; those marked
 * "diffs only" are 0: see memdiff_diff_info.refset). Errors: MEMDIFF_EINVAL. */
MEMDIFF_API int memdiff_bracket_get_info(const memdiff_bracket *bracket, memdiff_refset_info *out);

/* ---- leak slopes ------------------------------------------------------------------------- */

/* How memdiff_leak_slope() runs. Initialise with MEMDIFF_SLOPE_OPTIONS_INIT. */
typedef struct memdiff_slope_options {
    memdiff_bracket_options bracket; /* the calling process only (snapshot.pid 0); no
                                        MEMDIFF_BRACKET_REFSET: slopes are of plain diffs */
    unsigned warmup;                 /* calls before the first snapshot */
    unsigned iterations;             /* calls measured; at least 2 */
    unsigned sample_every;           /* a snapshot after every k-th call (and after the last) */
    memdiff_figure figure;           /* the figure sampled; its filter is kept in the result */
} memdiff_slope_options;

#define MEMDIFF_SLOPE_OPTIONS_INIT {MEMDIFF_BRACKET_OPTIONS_INIT, 1, 64, 1, MEMDIFF_FIGURE_INIT}

/* What a function retains per call: a leak of L bytes per call has a slope near L (over many
 * calls: pages round it), memory kept once (a cache filled on the first call) near 0. */
typedef struct memdiff_slope {
    double bytes_per_iteration; /* least-squares slope of the figure over the samples, against
                                   the number of calls made since the first snapshot */
    double endpoint_slope;      /* (last - first) / (calls between the first and last sample) */
    int64_t first;              /* the figure at the first sample (after sample_every calls) */
    int64_t last;               /* the figure after the last call: all that was retained */
    unsigned warmup, iterations, samples;
    memdiff_figure figure;      /* as in the options (memdiff_check_slope() reads its filter) */
} memdiff_slope;

/* Runs fn(arg) warmup times, begins a bracket, then runs it iterations times, sampling the figure
 * (against the before snapshot) after every sample_every-th call, and fits a line through the
 * samples: growth in the first measured call alone moves `first`, not the slope. Sampling does
 * not disturb what it measures (memdiff's storage is Own). diff (may be NULL) receives the diff
 * from the before snapshot to the last, which the caller frees. Errors: MEMDIFF_EINVAL (fn or
 * out NULL, iterations < 2, sample_every 0 or above iterations, bad figure, another process),
 * MEMDIFF_ENOTSUP (touched or peak, MEMDIFF_BRACKET_REFSET: slopes are of plain diffs), those of
 * snapshots and compares. */
MEMDIFF_API int memdiff_leak_slope(void (*fn)(void *arg), void *arg,
                                   const memdiff_slope_options *options, memdiff_slope *out,
                                   memdiff_diff **diff);

/* Checks "slope->bytes_per_iteration cmp bound". Returns 1, 0 or a negative status and writes
 * msg as memdiff_check(): the slope, the bound, first and last figures, and (when diff, from
 * memdiff_leak_slope(), is not NULL) the blocks behind the last figure. Errors: MEMDIFF_EINVAL. */
MEMDIFF_API int memdiff_check_slope(const memdiff_slope *slope, const memdiff_diff *diff,
                                    memdiff_cmp cmp, int64_t bound, char *msg, size_t msg_size);

/* ---------------------------------------------------------------------------------------------
 * Working-set size over time, the way Brendan Gregg's wss.pl measures it: clear the referenced
 * state, sleep, read the referenced size summed over the process (docs/reference-set.md). The
 * side effects are those of a reference-set bracket's clearing.
 * ------------------------------------------------------------------------------------------- */

typedef enum memdiff_wss_mode {
    MEMDIFF_WSS_INTERVAL = 0, /* every sample: clear, sleep interval, read */
    MEMDIFF_WSS_CUMULATIVE,   /* clear once; every sample: sleep interval, read (the growth) */
    MEMDIFF_WSS_PROFILE       /* clear once; read after interval, 2, 4, 8... times interval */
} memdiff_wss_mode;

/* Initialise with MEMDIFF_WSS_OPTIONS_INIT. */
typedef struct memdiff_wss_options {
    int pid;                  /* 0: the calling process */
    const char *fixture_root; /* as in memdiff_options (Windows: MEMDIFF_ENOTSUP) */
    memdiff_wss_mode mode;
    uint64_t interval_ns;  /* the sleep per sample; in profile mode, the first step */
    unsigned count;        /* samples (profile: steps); 0: until the callback stops the run */
} memdiff_wss_options;

#define MEMDIFF_WSS_OPTIONS_INIT {0, NULL, MEMDIFF_WSS_INTERVAL, 1000000u, 1u}

/* One measurement. Sizes in bytes, times in nanoseconds. */
typedef struct memdiff_wss_sample {
    unsigned index;            /* 0, 1, ... */
    uint64_t span_ns;          /* estimated span (wss.pl's Est): middle of clearing to middle
                                  of reading, as pages are touched during both too */
    uint64_t duration_ns;      /* from the start of the clear to the end of the read (Dur) */
    uint64_t slept_ns;         /* time slept since the clear (Slp) */
    uint64_t clear_ns;         /* time the clear took */
    uint64_t read_ns;          /* time reading the referenced state took */
    uint64_t rss_bytes;        /* resident (smaps Rss summed) */
    uint64_t pss_bytes;        /* proportional (Pss) */
    uint64_t referenced_bytes; /* accessed during the span: the working-set size (Referenced) */
    uint64_t time_ns;          /* wall clock (ns since the Unix epoch) at the end of the read */
} memdiff_wss_sample;

/* Receives each sample as measured; returns 0 to go on, else stops the run (returned by it). */
typedef int (*memdiff_wss_callback)(void *ctx, const memdiff_wss_sample *sample);

/* Measures as options say, handing every sample to callback. Errors: MEMDIFF_EINVAL (NULL
 * callback, interval 0, unknown mode), MEMDIFF_ESRCH, MEMDIFF_EACCES (clear_refs refused: a WSS
 * without clearing would be the RSS), MEMDIFF_ENOTSUP (no referenced state), MEMDIFF_EIO. */
MEMDIFF_API int memdiff_wss_run(const memdiff_wss_options *options, memdiff_wss_callback callback,
                                void *ctx);

/* The same into the caller's array: min(options->count, capacity) samples (count 0: capacity),
 * how many into *count, also those measured before an error. Errors: as memdiff_wss_run();
 * MEMDIFF_EINVAL for NULL samples or capacity 0. */
MEMDIFF_API int memdiff_wss_measure(const memdiff_wss_options *options, memdiff_wss_sample *samples,
                                    size_t capacity, size_t *count);

/* One sample as one JSON object ("kind": "wss"; one line with MEMDIFF_REPORT_LINE): the run's
 * pid and mode, the sample's times (wall clock, span, duration) and sizes. Errors:
 * MEMDIFF_EINVAL (a NULL argument, unknown options or mode), MEMDIFF_EIO. */
MEMDIFF_API int memdiff_wss_report_json(const memdiff_wss_options *run,
                                        const memdiff_wss_sample *sample, FILE *out,
                                        const memdiff_report_options *options);

/* ---------------------------------------------------------------------------------------------
 * Memory over time: cheap polls, timelines, marks (docs/api.md "Memory over time"; the format is
 * docs/timeline-format.md). A recorder polls a process's totals at an interval, takes snapshots
 * when it chooses, and appends both to a timeline file with the marks the program sent; a reader
 * iterates the records and hands out any recorded snapshot for memdiff_compare().
 * ------------------------------------------------------------------------------------------- */

/* The process's totals as its OS reports them now, in one read and without a snapshot (Linux:
 * /proc/PID/status, every figure of memdiff_process_totals; Windows: GetProcessMemoryInfo,
 * vm_rss and vm_hwm only). pid 0: the calling process. Linux's figures are the kernel's counters,
 * kept per CPU: they may be off by the kernel's batch per CPU (docs/api.md). Errors:
 * MEMDIFF_EINVAL, MEMDIFF_ESRCH (no such process, or it has exited: a zombie has no memory),
 * MEMDIFF_EACCES, MEMDIFF_EIO. */
MEMDIFF_API int memdiff_poll(int pid, memdiff_process_totals *out);

/* The format this library writes; it reads every minor of its major (as snapshot files). */
#define MEMDIFF_TIMELINE_VERSION_MAJOR 1
#define MEMDIFF_TIMELINE_VERSION_MINOR 0

/* Why a recorder took a snapshot (memdiff_timeline_add_snapshot; bits, any combination). */
#define MEMDIFF_CAUSE_START 0x01u   /* the first one */
#define MEMDIFF_CAUSE_CHANGE 0x02u  /* memory changed beyond the recorder's threshold */
#define MEMDIFF_CAUSE_PEAK 0x04u    /* a new peak */
#define MEMDIFF_CAUSE_MARK 0x08u    /* at a mark */
#define MEMDIFF_CAUSE_EXIT 0x10u    /* at exit, the address space still there */
#define MEMDIFF_CAUSE_REQUEST 0x20u /* asked for (a signal to the recorder) */

/* How the recorded process ended (exit record). */
typedef enum memdiff_exit_how {
    MEMDIFF_EXIT_STATUS = 1, /* exited; code: its exit status */
    MEMDIFF_EXIT_SIGNAL = 2, /* killed; code: the signal number */
    MEMDIFF_EXIT_VANISHED = 3, /* gone, status unknown (not the recorder's child) */
    MEMDIFF_EXIT_DETACHED = 4  /* the recording ended, the process still running */
} memdiff_exit_how;

/* The first record of a timeline. Initialise with MEMDIFF_TIMELINE_HEADER_INIT. */
typedef struct memdiff_timeline_header {
    int pid;                  /* the recorded process */
    uint32_t page_size;       /* 0: this system's */
    uint64_t start_ns;        /* wall clock, ns since the Unix epoch; 0: now */
    uint64_t interval_ns;     /* the poll interval; 0: none stated */
    const char *host;         /* NULL: this machine's name */
    const char *const *argv;  /* NULL-terminated command line, or NULL when not known */
} memdiff_timeline_header;

#define MEMDIFF_TIMELINE_HEADER_INIT {0, 0u, 0u, 0u, NULL, NULL}

typedef struct memdiff_timeline_writer memdiff_timeline_writer;

/* Creates the timeline file at path (nothing there, or a regular file, which is replaced; a
 * symbolic link, directory, device, FIFO or socket is refused) and writes its header. Every
 * record is written whole and flushed before its add returns, so a recorder killed at any moment
 * leaves a file readable up to the last record added. Errors: MEMDIFF_EINVAL (NULL, empty path,
 * what path names, a host name or argument over 64 KiB, over 65,536 arguments, a page size that
 * is no power of two in [512, 1 GiB]), MEMDIFF_EACCES, MEMDIFF_EIO, MEMDIFF_ENOMEM. The caller
 * ends it with memdiff_timeline_close(). */
MEMDIFF_API int memdiff_timeline_create(const char *path, const memdiff_timeline_header *header,
                                        memdiff_timeline_writer **out);

/* The same onto a stream opened in binary mode, which stays the caller's (close() flushes it,
 * does not close it). */
MEMDIFF_API int memdiff_timeline_create_stream(FILE *stream, const memdiff_timeline_header *header,
                                               memdiff_timeline_writer **out);

/* Appends a sample: the totals polled at time_ns (memdiff_poll()). A sample whose figures equal
 * the previous one's takes 11 bytes + its time step's varint (15 at a 50 ms step). Errors, for
 * every add: MEMDIFF_EINVAL (NULL), MEMDIFF_EIO (writing failed, e.g. a full disk: the detail
 * names the record and offset; the file holds every record before it whole, possibly followed
 * by part of this one, which readers report as torn; the writer then refuses every add),
 * MEMDIFF_ENOMEM. */
MEMDIFF_API int memdiff_timeline_add_sample(memdiff_timeline_writer *w, uint64_t time_ns,
                                            const memdiff_process_totals *totals);

/* Appends a snapshot (stored whole as a snapshot file, docs/file-format.md) at its time, cause
 * MEMDIFF_CAUSE_* bits. Errors: also those of memdiff_snapshot_save(). */
MEMDIFF_API int memdiff_timeline_add_snapshot(memdiff_timeline_writer *w,
                                              const memdiff_snapshot *snapshot, unsigned cause);

/* Appends a mark sent by process pid (0: unknown) at time_ns; label: at most
 * MEMDIFF_MARK_LABEL_MAX bytes are kept, no NUL. */
MEMDIFF_API int memdiff_timeline_add_mark(memdiff_timeline_writer *w, uint64_t time_ns, int pid,
                                          const char *label);

/* Appends how the process ended (code: exit status or signal; 0 otherwise). */
MEMDIFF_API int memdiff_timeline_add_exit(memdiff_timeline_writer *w, uint64_t time_ns,
                                          memdiff_exit_how how, int code);

/* Bytes of the complete records written so far, the file header included. */
MEMDIFF_API uint64_t memdiff_timeline_writer_bytes(const memdiff_timeline_writer *w);

/* Flushes and closes the file (a stream: flushes it) and frees the writer. Returns MEMDIFF_OK,
 * or the first write error of the writer's life (MEMDIFF_EIO) again. NULL is allowed. */
MEMDIFF_API int memdiff_timeline_close(memdiff_timeline_writer *w);

typedef struct memdiff_timeline memdiff_timeline;

/* What a timeline file holds (memdiff_timeline_get_info); strings point into the reader. */
typedef struct memdiff_timeline_info {
    unsigned version_major, version_minor;
    int pid;
    uint32_t page_size;
    uint64_t start_ns, interval_ns;
    const char *host;
    const char *const *argv;  /* NULL-terminated; argv[0] NULL when not recorded */
    size_t records;           /* complete records, the header included */
    size_t samples, snapshots, marks, exits, skipped; /* skipped: kinds of a newer minor */
    int torn;                 /* 1: the file ends inside a record (the writer was stopped) */
    uint64_t torn_offset;     /* where that record begins (= complete_bytes) */
    uint64_t complete_bytes;  /* bytes up to the end of the last complete record */
    uint64_t file_bytes;
    uint64_t storage_bytes;   /* memory the reader holds: at most 4 x file_bytes + 2 MiB */
} memdiff_timeline_info;

/* Opens and checks a whole timeline file: header first, then every record's frame, checksums
 * and fields (a snapshot record's snapshot file only when asked for). A file that ends inside
 * its last record is no error: info.torn says so, and the records before it read. Errors:
 * MEMDIFF_EINVAL (NULL), MEMDIFF_EIO or MEMDIFF_EACCES (opening, reading), MEMDIFF_EFORMAT (not a
 * timeline, unsupported major, a corrupt record: the detail names the path, the record's index
 * and byte offset and what is wrong), MEMDIFF_ENOMEM. Free with memdiff_timeline_free(). */
MEMDIFF_API int memdiff_timeline_open(const char *path, memdiff_timeline **out);

/* memdiff_timeline_open() from a stream (binary mode), read to its end; errors name no path. */
MEMDIFF_API int memdiff_timeline_open_stream(FILE *stream, memdiff_timeline **out);

MEMDIFF_API void memdiff_timeline_free(memdiff_timeline *timeline); /* NULL is allowed */

MEMDIFF_API int memdiff_timeline_get_info(const memdiff_timeline *timeline,
                                          memdiff_timeline_info *out);

typedef enum memdiff_record_kind {
    MEMDIFF_RECORD_SAMPLE = 2,
    MEMDIFF_RECORD_SNAPSHOT = 3,
    MEMDIFF_RECORD_MARK = 4,
    MEMDIFF_RECORD_EXIT = 5
} memdiff_record_kind;

/* One record, as memdiff_timeline_next() hands it out. */
typedef struct memdiff_timeline_record {
    memdiff_record_kind kind;
    size_t index;                  /* in the file: the header is record 0 */
    uint64_t offset;               /* byte offset of the record in the file */
    uint64_t time_ns;              /* wall clock, ns since the Unix epoch */
    memdiff_process_totals totals; /* a sample's figures; other kinds: the last sample's */
    size_t snapshot;               /* snapshot: its number for memdiff_timeline_snapshot() */
    unsigned cause;                /* snapshot: MEMDIFF_CAUSE_* */
    int pid;                       /* mark: the sender (0: unknown) */
    const char *label;             /* mark: its text, valid until the next call; else "" */
    memdiff_exit_how exit_how;     /* exit; else 0 */
    int exit_code;                 /* exit: status or signal */
} memdiff_timeline_record;

/* The next record after the header, in file order (records of kinds this version does not know
 * are skipped). Returns 1 with *out filled, 0 after the last, or MEMDIFF_EINVAL. */
MEMDIFF_API int memdiff_timeline_next(memdiff_timeline *timeline, memdiff_timeline_record *out);

/* Starts memdiff_timeline_next() from the first record again. */
MEMDIFF_API void memdiff_timeline_rewind(memdiff_timeline *timeline);

/* Recorded snapshot number index (0 .. info.snapshots - 1, in file order), loaded and checked as
 * memdiff_snapshot_load() would; compare two with memdiff_compare(). Errors: MEMDIFF_EINVAL,
 * MEMDIFF_ERANGE, MEMDIFF_EFORMAT (its snapshot file is corrupt: the detail names the record and
 * offset), MEMDIFF_ENOMEM. Free with memdiff_snapshot_free(). */
MEMDIFF_API int memdiff_timeline_snapshot(const memdiff_timeline *timeline, size_t index,
                                          memdiff_snapshot **out);

/* ---- marks: a program says where it is; a recorder puts it on the timeline ----------------
 * memdiff_mark() sends the label to the recorder of the calling process, if there is one:
 * through the descriptor named by the environment variable MEMDIFF_MARK_FD (set by a recorder
 * that starts the program), else (Linux) to a datagram socket a recorder attached to this pid
 * has bound. No recorder: one failing system call, about a microsecond (docs/api.md, "Marks").
 * MEMDIFF_MARK_FD=off turns marks off. */

#define MEMDIFF_MARK_LABEL_MAX 1024 /* bytes of a label kept; the rest is cut */

/* Sends a mark stamped with the wall clock now. Returns 1 when a recorder's channel took it, 0
 * when no recorder listens (or marks are off), MEMDIFF_EINVAL for a NULL label. Any thread; it
 * never allocates. */
MEMDIFF_API int memdiff_mark(const char *label);

typedef struct memdiff_mark_listener memdiff_mark_listener;

/* The recorder's end. pid > 0: marks of that running process (Linux: binds the abstract UNIX
 * socket "memdiff-mark-PID"; only datagrams its kernel-stated sender is pid are taken). pid 0:
 * a channel for a child the caller is about to start, which must inherit
 * memdiff_mark_listener_child_fd() and find its number in MEMDIFF_MARK_FD. Errors:
 * MEMDIFF_EINVAL, MEMDIFF_ENOTSUP (Windows), MEMDIFF_EIO (pid's name bound already: another
 * recorder), MEMDIFF_ENOMEM. */
MEMDIFF_API int memdiff_mark_listen(int pid, memdiff_mark_listener **out);

/* pid 0 listeners: the descriptor the child inherits (close-on-exec in this process: the child
 * side clears that, e.g. with posix_spawn_file_actions_adddup2(fd, fd)); else -1. */
MEMDIFF_API int memdiff_mark_listener_child_fd(const memdiff_mark_listener *listener);

/* A received mark; label is the listener's, valid until its next receive. */
typedef struct memdiff_mark_msg {
    uint64_t time_ns; /* the sender's wall clock when it sent */
    int pid;          /* the sender as the kernel states it (0: unknown) */
    const char *label;
} memdiff_mark_msg;

/* The next mark, waiting up to timeout_ns for one (0: do not wait). Returns 1 with *out
 * filled, 0 when none came, or MEMDIFF_EINVAL, MEMDIFF_EIO. */
MEMDIFF_API int memdiff_mark_receive(memdiff_mark_listener *listener, uint64_t timeout_ns,
                                     memdiff_mark_msg *out);

MEMDIFF_API void memdiff_mark_listener_free(memdiff_mark_listener *listener); /* NULL: ok */

/* ---------------------------------------------------------------------------------------------
 * The whole machine: system snapshots (docs/api.md "The whole machine"). One object holds every
 * process the caller may list (each read, unreadable with the reason, or exited during the
 * snapshot: never silently dropped) with its resident, proportional, unique and swapped bytes,
 * and, where the caller may read the kernel's page tables (Linux: CAP_SYS_ADMIN for pagemap's
 * frame numbers and /proc/kpageflags, /proc/kpagecount), the physical table: every physical
 * frame in exactly one row of page kind x owner. Two system snapshots compare into a system
 * diff; a system snapshot saves to a file of its own (docs/file-format.md, "System files").
 * Windows: memdiff_system_take() fails with MEMDIFF_ENOTSUP; files load and compare anywhere.
 * ------------------------------------------------------------------------------------------- */

/* memdiff_system_options.flags. */
#define MEMDIFF_SYSTEM_NO_PHYS 0x1u   /* no physical table, even where it could be read */
#define MEMDIFF_SYSTEM_ROLLUP 0x2u    /* per-process figures from smaps_rollup also when
                                         privileged (slower: the way an unprivileged caller
                                         reads them; the physical table is unaffected) */

/* Initialise with MEMDIFF_SYSTEM_OPTIONS_INIT or memdiff_system_options_init(). */
typedef struct memdiff_system_options {
    unsigned flags;           /* MEMDIFF_SYSTEM_* */
    const char *fixture_root; /* NULL: the live system; else a recorded tree as
                                 memdiff_options.fixture_root (Windows: MEMDIFF_ENOTSUP) */
} memdiff_system_options;

#define MEMDIFF_SYSTEM_OPTIONS_INIT {0u, NULL}

MEMDIFF_API void memdiff_system_options_init(memdiff_system_options *options);

typedef struct memdiff_system memdiff_system;

/* Where a system snapshot's figures came from (memdiff_system_info.sources). */
#define MEMDIFF_SYS_SRC_PAGEMAP 0x01u   /* per-process pagemap with frame numbers (privileged) */
#define MEMDIFF_SYS_SRC_MAPCOUNT 0x02u  /* kpagecount of the processes' shared frames (PSS) */
#define MEMDIFF_SYS_SRC_ROLLUP 0x04u    /* per-process smaps_rollup (unprivileged, or
                                           MEMDIFF_SYSTEM_ROLLUP) */
#define MEMDIFF_SYS_SRC_PHYS 0x08u      /* kpageflags of every frame: the physical table */
#define MEMDIFF_SYS_SRC_MEMINFO 0x10u   /* /proc/meminfo, /proc/zoneinfo: the reconciliation */

/* What a system snapshot is, and how complete (memdiff_system_get_info). Strings point into the
 * snapshot. Counts of processes: listed = read + unreadable + exited; kernel threads (no user
 * memory) are counted apart and not listed. */
typedef struct memdiff_system_info {
    uint64_t time_ns;           /* wall clock (ns since the Unix epoch) when it began */
    uint64_t duration_ns;       /* how long taking it took (monotonic clock), of which: */
    uint64_t processes_ns;      /* listing and reading the processes */
    uint64_t phys_ns;           /* the physical table: kpageflags read, joined, reconciled */
    const char *host;
    uint32_t page_size;
    const char *boot_id;        /* the kernel's boot id (Linux: random/boot_id); "" unknown */
    uint64_t boot_time_s;       /* boot time, seconds since the Unix epoch (Linux: btime);
                                   0 unknown. Start times count from it */
    uint32_t clock_ticks;       /* ticks per second of memdiff_sysproc.start_ticks */
    unsigned sources;           /* MEMDIFF_SYS_SRC_* */
    int privileged;             /* 1: frame numbers and kernel page files were readable */
    size_t processes;           /* listed (memdiff_system_process_count) */
    size_t processes_read;
    size_t processes_unreadable; /* each named, with why, in its memdiff_sysproc */
    size_t processes_exited;    /* listed, then gone before they were read whole */
    size_t kernel_threads;      /* not listed: no user address space */
    const char *hidden;         /* NULL, or why processes may be missing from the listing
                                   itself (Linux: /proc mounted with hidepid=, subset=pid) */
    const char *degraded;       /* NULL, or why the physical table is absent ("needs
                                   CAP_SYS_ADMIN to read /proc/kpageflags") or incomplete */
    uint64_t phys_frames;       /* frames the physical table covers (0: absent); holes with
                                   no memory behind them (KPF_NOPAGE) are not counted */
    uint64_t phys_hole_frames;  /* frame numbers below the highest with no page (KPF_NOPAGE) */
    uint64_t phys_conflict_frames; /* frames a process mapped that kpageflags, read after the
                                   processes, calls free, slab or page table: pages that
                                   changed hands while read (docs/api.md, the bound) */
    uint64_t storage_bytes;     /* memory this object occupies */
} memdiff_system_info;

/* Takes a system snapshot as options say (NULL: the defaults). A process that cannot be read
 * (permission, hidden fields) or that exits meanwhile is no error: it is listed so. A physical
 * table the caller may not read is no error either: info.degraded says why. Errors:
 * MEMDIFF_EINVAL (out NULL, unknown flags), MEMDIFF_ENOTSUP (Windows), MEMDIFF_EACCES or
 * MEMDIFF_EIO (the process list itself cannot be read), MEMDIFF_ENOMEM, MEMDIFF_EBUSY. Never
 * calls malloc. Free with memdiff_system_free(). */
MEMDIFF_API int memdiff_system_take(const memdiff_system_options *options,
                                    memdiff_system **out);

MEMDIFF_API void memdiff_system_free(memdiff_system *system); /* NULL is allowed */

/* Errors: MEMDIFF_EINVAL. */
MEMDIFF_API int memdiff_system_get_info(const memdiff_system *system, memdiff_system_info *out);

/* A process's state in a system snapshot. */
typedef enum memdiff_sysproc_state {
    MEMDIFF_SYSPROC_READ = 0,   /* figures read (memdiff_sysproc.exact says which) */
    MEMDIFF_SYSPROC_UNREADABLE, /* listed, figures not readable: error and why say so */
    MEMDIFF_SYSPROC_EXITED      /* exited while read: figures 0 */
} memdiff_sysproc_state;

/* "read", "unreadable", "exited"; "invalid" out of range. */
MEMDIFF_API const char *memdiff_sysproc_state_name(memdiff_sysproc_state state);

/* Which figures of a memdiff_sysproc are exact (bits of .exact): the kernel's own count
 * at the moment it was read, as smaps_rollup would give it; a figure not marked is 0 (unknown)
 * or an estimate (docs/api.md says which). */
#define MEMDIFF_SYSPROC_EXACT_RSS 0x01u
#define MEMDIFF_SYSPROC_EXACT_PSS 0x02u
#define MEMDIFF_SYSPROC_EXACT_USS 0x04u
#define MEMDIFF_SYSPROC_EXACT_SWAP 0x08u
#define MEMDIFF_SYSPROC_EXACT_SWAP_PSS 0x10u
#define MEMDIFF_SYSPROC_EXACT_ANON 0x20u  /* rss_anon_bytes */
#define MEMDIFF_SYSPROC_EXACT_SPLIT 0x40u /* rss_file_bytes and rss_shmem_bytes */

/* The longest command line kept, in bytes after escaping; longer ones are cut, and end "...". */
#define MEMDIFF_SYSPROC_CMDLINE_MAX 4096

/* One process of a system snapshot. Sizes in bytes. Strings point into the snapshot. */
typedef struct memdiff_sysproc {
    int pid;
    int ppid;
    uint32_t uid;              /* real user id */
    uint64_t start_ticks;      /* start time in clock ticks after boot (Linux: stat field 22):
                                  (pid, start_ticks) names one process, a reused pid does not */
    const char *name;          /* the kernel's short name (comm), escaped as
                                  memdiff_escape_text() escapes */
    const char *cmdline;       /* the arguments joined by spaces, escaped likewise and at most
                                  MEMDIFF_SYSPROC_CMDLINE_MAX bytes; "" when none (zombie) or
                                  unreadable */
    memdiff_sysproc_state state;
    int error;                 /* UNREADABLE: why as a status (MEMDIFF_EACCES...); else 0 */
    const char *why;           /* UNREADABLE: the detail ("open /proc/1/pagemap: permission
                                  denied"); else "" */
    unsigned exact;            /* MEMDIFF_SYSPROC_EXACT_* */
    uint64_t rss_bytes;        /* resident pages mapped, the zero page left out (smaps Rss) */
    uint64_t pss_bytes;        /* proportional: each page's size divided by its map count, summed
                                  as the kernel does, rounded down to a byte (smaps_rollup:
                                  to a KiB) */
    uint64_t uss_bytes;        /* mapped once (map count 1): smaps Private_Clean + _Dirty */
    uint64_t swap_bytes;       /* swapped out (smaps Swap) */
    uint64_t swap_pss_bytes;   /* proportional swap (smaps SwapPss); 0 when not read */
    uint64_t rss_anon_bytes;   /* of rss, anonymous */
    uint64_t rss_file_bytes;   /* of rss, page cache of files */
    uint64_t rss_shmem_bytes;  /* of rss, shared memory (tmpfs, shared anonymous, SysV) */
} memdiff_sysproc;

/* Processes in ascending pid order: process index into *out. Errors: MEMDIFF_EINVAL,
 * MEMDIFF_ERANGE (index). */
MEMDIFF_API size_t memdiff_system_process_count(const memdiff_system *system);
MEMDIFF_API int memdiff_system_process(const memdiff_system *system, size_t index,
                                       memdiff_sysproc *out);

/* The process with this pid, and its index (index may be NULL). Errors: MEMDIFF_EINVAL,
 * MEMDIFF_ERANGE (no such pid listed). */
MEMDIFF_API int memdiff_system_find_process(const memdiff_system *system, int pid,
                                            memdiff_sysproc *out, size_t *index);

/* ---- the physical table ------------------------------------------------------------------
 * Each frame gets one kind from its kernel flags (kpageflags), the first that applies in this
 * order (docs/api.md "The physical table" gives each rule and its flags), and one owner. */
typedef enum memdiff_frame_kind {
    MEMDIFF_FRAME_RESERVED = 0, /* reserved, offline or poisoned: no allocator hands it out */
    MEMDIFF_FRAME_FREE,         /* in the buddy allocator's free lists (a block's head is
                                   flagged; its other pages are told by the block's order) */
    MEMDIFF_FRAME_SLAB,         /* slab allocator */
    MEMDIFF_FRAME_PAGE_TABLE,   /* page tables */
    MEMDIFF_FRAME_ZERO,         /* the shared zero page(s) */
    MEMDIFF_FRAME_HUGETLB,      /* hugetlbfs pages */
    MEMDIFF_FRAME_KSM,          /* merged by KSM */
    MEMDIFF_FRAME_UNEVICTABLE,  /* on the unevictable list: mlocked, ramfs, SHM_LOCK */
    MEMDIFF_FRAME_ANON_THP,     /* anonymous, in a transparent huge page */
    MEMDIFF_FRAME_ANON,         /* anonymous (in swap cache too) */
    MEMDIFF_FRAME_SHMEM,        /* shared memory: swap-backed, not anonymous (tmpfs, shm) */
    MEMDIFF_FRAME_WRITEBACK,    /* page cache being written back */
    MEMDIFF_FRAME_DIRTY,        /* page cache, dirty */
    MEMDIFF_FRAME_FILE_ACTIVE,  /* page cache on the active list */
    MEMDIFF_FRAME_FILE_INACTIVE, /* page cache on the inactive list (or not yet on one) */
    MEMDIFF_FRAME_KERNEL,       /* none of the above: other kernel memory (vmalloc, kernel
                                   stacks, drivers, the per-CPU free lists) */
    MEMDIFF_FRAME_KIND_COUNT
} memdiff_frame_kind;

/* Every kind, where a function takes a kind. */
#define MEMDIFF_FRAME_ALL MEMDIFF_FRAME_KIND_COUNT

/* "reserved", "free", "slab", "page-table", "zero", "hugetlb", "ksm", "unevictable",
 * "anon-thp", "anon", "shmem", "writeback", "dirty", "file-active", "file-inactive", "kernel";
 * "all" for MEMDIFF_FRAME_ALL; "invalid" out of range. */
MEMDIFF_API const char *memdiff_frame_kind_name(memdiff_frame_kind kind);

/* Who holds a frame. A frame mapped by one process read is that process's; one mapped by two
 * or more is SHARED and counted there once (the PSS of each process splits it). */
typedef enum memdiff_frame_owner {
    MEMDIFF_OWNER_PROCESS = 0, /* mapped by this process alone (memdiff_phys_row.process) */
    MEMDIFF_OWNER_SHARED,      /* mapped by two or more processes read */
    MEMDIFF_OWNER_UNREAD,      /* mapped (KPF_MMAP), but by no process read: unreadable ones,
                                  ones that exited or started during the snapshot */
    MEMDIFF_OWNER_UNMAPPED,    /* user memory mapped by none: page cache, swap cache, tmpfs */
    MEMDIFF_OWNER_KERNEL,      /* kernel memory: reserved, slab, page tables, kernel kind */
    MEMDIFF_OWNER_FREE,        /* free */
    MEMDIFF_OWNER_COUNT
} memdiff_frame_owner;

#define MEMDIFF_OWNER_ALL MEMDIFF_OWNER_COUNT

/* "process", "shared", "unread", "unmapped", "kernel", "free"; "all"; "invalid". */
MEMDIFF_API const char *memdiff_frame_owner_name(memdiff_frame_owner owner);

/* One row of the physical table: the frames of one kind and one owner. */
typedef struct memdiff_phys_row {
    memdiff_frame_kind kind;
    memdiff_frame_owner owner;
    size_t process;            /* OWNER_PROCESS: its index (memdiff_system_process()); else
                                  SIZE_MAX */
    int pid;                   /* OWNER_PROCESS: its pid and start time; else 0 */
    uint64_t start_ticks;
    uint64_t frames;
    uint64_t bytes;            /* frames x page size */
} memdiff_phys_row;

/* Rows with at least one frame, ordered by kind, then owner, then process index; 0 rows when
 * the table is absent (info.degraded says why). Errors: MEMDIFF_EINVAL, MEMDIFF_ERANGE. */
MEMDIFF_API size_t memdiff_system_phys_count(const memdiff_system *system);
MEMDIFF_API int memdiff_system_phys_row(const memdiff_system *system, size_t index,
                                        memdiff_phys_row *out);

/* Bytes of the table's frames of kind (or MEMDIFF_FRAME_ALL) and owner (or MEMDIFF_OWNER_ALL)
 * into *out. Errors: MEMDIFF_EINVAL (NULL, out of range), MEMDIFF_ENOTSUP (no table). */
MEMDIFF_API int memdiff_system_phys_bytes(const memdiff_system *system, memdiff_frame_kind kind,
                                          memdiff_frame_owner owner, uint64_t *out);

/* One figure of the kernel's own accounting (/proc/meminfo) against the physical table's sum
 * of the frames it counts: |table - kernel| <= bound holds unless memory moved faster than the
 * bound allows while read. The bound is derived from the kernel's counters (per-CPU free
 * lists, per-CPU counter drift, pages the snapshot saw change): docs/api.md says how. */
typedef struct memdiff_reconcile {
    const char *name;          /* the meminfo field(s): "MemTotal", "MemFree",
                                  "Buffers+Cached", "AnonPages", "Shmem", "Slab", ... */
    const char *rule;          /* which table rows are summed, in words */
    uint64_t table_bytes;
    uint64_t kernel_bytes;     /* the meminfo figure, read right after kpageflags */
    uint64_t bound_bytes;
    int within;                /* 1: |table - kernel| <= bound */
} memdiff_reconcile;

/* The reconciled figures (0 without the table). Errors: MEMDIFF_EINVAL, MEMDIFF_ERANGE. */
MEMDIFF_API size_t memdiff_system_reconcile_count(const memdiff_system *system);
MEMDIFF_API int memdiff_system_reconcile(const memdiff_system *system, size_t index,
                                         memdiff_reconcile *out);

/* ---- comparing two system snapshots ----------------------------------------------------- */

typedef struct memdiff_system_diff memdiff_system_diff;

/* What happened to a process between two system snapshots. A process is the same when pid and
 * start_ticks are: a pid reused by a new process is one EXITED and one STARTED. */
typedef enum memdiff_sysproc_change {
    MEMDIFF_SYSCHG_SAME = 0, /* in both, read in both, every figure equal */
    MEMDIFF_SYSCHG_STARTED,  /* in after only */
    MEMDIFF_SYSCHG_EXITED,   /* in before only, or listed in after as exited */
    MEMDIFF_SYSCHG_GREW,     /* rss + swap grew (figures may have moved between kinds) */
    MEMDIFF_SYSCHG_SHRANK,   /* rss + swap shrank */
    MEMDIFF_SYSCHG_CHANGED,  /* rss + swap equal, other figures not */
    MEMDIFF_SYSCHG_UNKNOWN   /* in both, not read in one of them at least */
} memdiff_sysproc_change;

/* "same", "started", "exited", "grew", "shrank", "changed", "unknown"; "invalid". */
MEMDIFF_API const char *memdiff_sysproc_change_name(memdiff_sysproc_change change);

/* One process of a system diff; before and after are all 0 (state READ, strings "") on the
 * side it is not on. Differences are after - before. */
typedef struct memdiff_sysproc_diff {
    memdiff_sysproc_change change;
    memdiff_sysproc before, after;
    size_t before_index, after_index; /* in each snapshot; SIZE_MAX when not there */
    int64_t rss_bytes, pss_bytes, uss_bytes, swap_bytes, swap_pss_bytes;
    int64_t rss_anon_bytes, rss_file_bytes, rss_shmem_bytes;
} memdiff_sysproc_diff;

/* Compares two system snapshots of one machine (host and boot id equal, else
 * MEMDIFF_EMISMATCH unless flags holds MEMDIFF_COMPARE_FORCE); both stay usable and the diff
 * refers to neither. Errors: MEMDIFF_EINVAL (NULL, unknown flags), MEMDIFF_EMISMATCH (also
 * different page sizes), MEMDIFF_ERANGE (a figure above INT64_MAX), MEMDIFF_ENOMEM. */
MEMDIFF_API int memdiff_system_compare(const memdiff_system *before, const memdiff_system *after,
                                       unsigned flags, memdiff_system_diff **out);

MEMDIFF_API void memdiff_system_diff_free(memdiff_system_diff *diff); /* NULL is allowed */

/* The infos of the two snapshots (strings point into the diff). Errors: MEMDIFF_EINVAL. */
MEMDIFF_API int memdiff_system_diff_info(const memdiff_system_diff *diff,
                                         memdiff_system_info *before, memdiff_system_info *after);

/* Every process of either snapshot, SAME ones included, ordered by pid, then start_ticks.
 * Errors: MEMDIFF_EINVAL, MEMDIFF_ERANGE. */
MEMDIFF_API size_t memdiff_system_diff_process_count(const memdiff_system_diff *diff);
MEMDIFF_API int memdiff_system_diff_process(const memdiff_system_diff *diff, size_t index,
                                            memdiff_sysproc_diff *out);

/* How many processes had change (memdiff_sysproc_change) in the diff. */
MEMDIFF_API size_t memdiff_system_diff_changed(const memdiff_system_diff *diff,
                                               memdiff_sysproc_change change);

/* One row of the physical table's change: kind x owner (a process by pid and start time), with
 * its bytes before and after; both 0 where the table is absent on that side. */
typedef struct memdiff_phys_row_diff {
    memdiff_frame_kind kind;
    memdiff_frame_owner owner;
    int pid;                   /* OWNER_PROCESS: the process (pid, start_ticks); else 0 */
    uint64_t start_ticks;
    uint64_t before_bytes, after_bytes;
    int64_t delta_bytes;       /* after - before */
} memdiff_phys_row_diff;

/* Rows of either table, ordered as memdiff_system_phys_row(), unchanged ones included; 0 when
 * neither snapshot has a table. Errors: MEMDIFF_EINVAL, MEMDIFF_ERANGE. */
MEMDIFF_API size_t memdiff_system_diff_phys_count(const memdiff_system_diff *diff);
MEMDIFF_API int memdiff_system_diff_phys_row(const memdiff_system_diff *diff, size_t index,
                                             memdiff_phys_row_diff *out);

/* Bytes of kind (or MEMDIFF_FRAME_ALL) and owner (or MEMDIFF_OWNER_ALL) before and after.
 * Errors: MEMDIFF_EINVAL, MEMDIFF_ENOTSUP (a side without a table). */
MEMDIFF_API int memdiff_system_diff_phys_bytes(const memdiff_system_diff *diff,
                                               memdiff_frame_kind kind, memdiff_frame_owner owner,
                                               uint64_t *before, uint64_t *after);

/* ---- system files ------------------------------------------------------------------------
 * A format of its own (magic "MEMDSYS\0"; docs/file-format.md, "System files"): little-endian,
 * sectioned, CRC-32 checked, the reader bounded as memdiff_snapshot_load(). */
#define MEMDIFF_SYSTEM_FILE_VERSION_MAJOR 1
#define MEMDIFF_SYSTEM_FILE_VERSION_MINOR 0

/* Whether the first len bytes of a file (at least 8) begin a system file (1) or not (0): to
 * tell one from a snapshot file before loading it. */
MEMDIFF_API int memdiff_system_file_sniff(const void *head, size_t len);

/* As memdiff_snapshot_save(), memdiff_snapshot_save_file(), memdiff_snapshot_load() and
 * memdiff_snapshot_load_file(), errors included, for system snapshots. A loaded system snapshot
 * takes at most 4 x the file's size + 1 MiB of memory. */
MEMDIFF_API int memdiff_system_save(const memdiff_system *system, FILE *out);
MEMDIFF_API int memdiff_system_save_file(const memdiff_system *system, const char *path);
MEMDIFF_API int memdiff_system_load(FILE *in, memdiff_system **out);
MEMDIFF_API int memdiff_system_load_file(const char *path, memdiff_system **out);

/* ---- reports of system snapshots and their diffs (memdiff system, memdiff diff) ----------
 * Text as memdiff system and memdiff diff print it (docs/cli.md), JSON as documents of "kind":
 * "system" and "system-diff" (docs/json-report.md). Errors: MEMDIFF_EINVAL (NULL, unknown
 * flags or sort, an index out of range in select), MEMDIFF_ENOMEM, MEMDIFF_EIO (writing). */

/* The order of the processes (largest first, ties by pid); in a diff, by that figure's change,
 * most grown first. */
typedef enum memdiff_system_sort {
    MEMDIFF_SYSTEM_SORT_PID = 0, /* ascending pid (then start time) */
    MEMDIFF_SYSTEM_SORT_RSS,
    MEMDIFF_SYSTEM_SORT_PSS,
    MEMDIFF_SYSTEM_SORT_USS,
    MEMDIFF_SYSTEM_SORT_SWAP
} memdiff_system_sort;

/* Initialise with MEMDIFF_SYSTEM_REPORT_OPTIONS_INIT (NULL as options: those defaults). */
typedef struct memdiff_system_report_options {
    unsigned flags;            /* MEMDIFF_REPORT_NO_HEADER, _HUMAN, _COLOR, _LINE; and
                                  MEMDIFF_REPORT_NO_BLOCKS: without the physical table */
    memdiff_system_sort sort;
    size_t top;                /* at most this many processes, the first after sorting; 0: all */
    unsigned width;            /* text: as memdiff_report_options.width */
    const size_t *select;      /* NULL: every process; else only these (indexes as
                                  memdiff_system_process() or memdiff_system_diff_process()
                                  take them), select_count of them. Totals stay the whole's */
    size_t select_count;
} memdiff_system_report_options;

#define MEMDIFF_SYSTEM_REPORT_OPTIONS_INIT {0u, MEMDIFF_SYSTEM_SORT_PID, 0, 0u, NULL, 0}

/* "pid", "rss", "pss", "uss", "swap"; "invalid" out of range. */
MEMDIFF_API const char *memdiff_system_sort_name(memdiff_system_sort sort);

/* A system snapshot: header, the processes read (pid, uid, name, RSS, PSS, USS, swap and the
 * anonymous / file / shmem split; a figure that is no exact count marked), the unreadable ones
 * counted by reason, and the physical table (kind x owner) or why it is absent. */
MEMDIFF_API int memdiff_system_report_text(const memdiff_system *system, FILE *out,
                                           const memdiff_system_report_options *options);
MEMDIFF_API int memdiff_system_report_json(const memdiff_system *system, FILE *out,
                                           const memdiff_system_report_options *options);

/* A system diff: processes started, exited, grew, shrank, changed and unknown with their
 * figures' changes (unchanged ones counted, not listed), the sums' changes, and the physical
 * table's change by kind and by owner (in JSON also its rows that changed). */
MEMDIFF_API int memdiff_system_diff_report_text(const memdiff_system_diff *diff, FILE *out,
                                                const memdiff_system_report_options *options);
MEMDIFF_API int memdiff_system_diff_report_json(const memdiff_system_diff *diff, FILE *out,
                                                const memdiff_system_report_options *options);

#ifdef __cplusplus
}
#endif

#endif /* MEMDIFF_H */
