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
 * Rules that hold for every function below:
 *  - Functions that can fail return 0 (MEMDIFF_OK) or a negative memdiff_status. On failure a
 *    detail message for the calling thread is available from memdiff_last_error().
 *  - A function that creates an object returns it through an out-parameter, which is set to NULL
 *    on failure. The caller owns the object and frees it with the matching *_free function.
 *    Every *_free function accepts NULL.
 *  - Strings returned by accessors (labels, paths) are owned by the object they come from and
 *    stay valid until that object is freed.
 *  - Snapshots and diffs are immutable once made: any number of threads may read them at once,
 *    a snapshot may be compared any number of times, and snapshots may be taken concurrently
 *    from several threads.
 *  - Taking a snapshot and comparing never call malloc: memdiff's storage comes from its own
 *    mmap'd arena, which every snapshot reports as category Own and keeps out of all totals.
 */
#ifndef MEMDIFF_H
#define MEMDIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMDIFF_VERSION_MAJOR 0
#define MEMDIFF_VERSION_MINOR 1
#define MEMDIFF_VERSION_PATCH 0
#define MEMDIFF_VERSION_STRING "0.1.0"

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
    X(ERANGE, -10, "index or value out of range")

typedef enum memdiff_status {
#define MEMDIFF__STATUS_ENUM(name, code, text) MEMDIFF_##name = (code),
    MEMDIFF_STATUS_MAP(MEMDIFF__STATUS_ENUM)
#undef MEMDIFF__STATUS_ENUM
} memdiff_status;

/* The status's symbolic name ("MEMDIFF_ESRCH"); "MEMDIFF_UNKNOWN" for a value not in the list. */
const char *memdiff_status_name(int status);

/* A short English description of the status; never NULL. */
const char *memdiff_strerror(int status);

/* The detail message of the calling thread's last failure ("open /proc/4242/maps: no such
 * process"), or "" when the thread has had none. The string is thread-local and valid until the
 * thread's next call into memdiff. */
const char *memdiff_last_error(void);

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

/* "image", "heap", "stack", "mapped-file", "shared", "private", "special", "own", "unknown";
 * "invalid" for a value out of range. */
const char *memdiff_category_name(memdiff_category category);

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
const char *memdiff_depth_name(memdiff_depth depth);

/* Where the figures of a snapshot came from (memdiff_snapshot_info.sources). */
#define MEMDIFF_SRC_MAPS 0x0001u        /* region list (/proc/PID/maps) */
#define MEMDIFF_SRC_PAGEMAP 0x0002u     /* per-page presence, swap, exclusivity (pagemap) */
#define MEMDIFF_SRC_PAGEMAP_SCAN 0x0004u /* present ranges from the PAGEMAP_SCAN ioctl */
#define MEMDIFF_SRC_PFN 0x0008u         /* physical frame numbers (privileged) */
#define MEMDIFF_SRC_KPAGEFLAGS 0x0010u  /* kernel page flags per frame */
#define MEMDIFF_SRC_KPAGECOUNT 0x0020u  /* map count per frame */
#define MEMDIFF_SRC_STATUS 0x0040u      /* process totals (/proc/PID/status) */
#define MEMDIFF_SRC_THREADS 0x0080u     /* thread list with stack pointers */
#define MEMDIFF_SRC_HEAPS 0x0100u       /* allocator structures read from process memory */
#define MEMDIFF_SRC_MODULES 0x0200u     /* module segment tables read from process memory */

/* Options for memdiff_snapshot_take(). Initialise with MEMDIFF_OPTIONS_INIT or
 * memdiff_options_init() so that fields added later get their defaults. */
typedef struct memdiff_options {
    int pid;               /* 0: the calling process */
    memdiff_depth depth;   /* requested depth; degraded (and recorded) when not permitted */
    const char *proc_root; /* NULL: "/proc". Tests point this at a recorded fixture tree. */
    const char *sys_root;  /* NULL: "/sys" */
} memdiff_options;

#define MEMDIFF_OPTIONS_INIT {0, MEMDIFF_DEPTH_STANDARD, NULL, NULL}

void memdiff_options_init(memdiff_options *options);

typedef struct memdiff_snapshot memdiff_snapshot;

/* Takes a snapshot as described by options (NULL: the calling process at standard depth).
 * Errors: MEMDIFF_EINVAL (out NULL, bad option), MEMDIFF_ESRCH (no such process, or it exited
 * during the snapshot), MEMDIFF_EACCES (the process may not be read at all), MEMDIFF_ENOMEM,
 * MEMDIFF_EIO. A depth the caller is not allowed is not an error: the snapshot is taken at the
 * depth available and records why (memdiff_snapshot_info.degraded). */
int memdiff_snapshot_take(const memdiff_options *options, memdiff_snapshot **out);

/* Shorthand: the calling process at the given depth. */
int memdiff_snapshot_self(memdiff_depth depth, memdiff_snapshot **out);

/* Releases the snapshot and all its storage. NULL is allowed. */
void memdiff_snapshot_free(memdiff_snapshot *snapshot);

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
    uint64_t own_bytes;      /* resident pages of memdiff's own storage */
    uint64_t storage_bytes;  /* bytes of memory this snapshot occupies */
    memdiff_process_totals totals;
} memdiff_snapshot_info;

/* Fills *info. Strings point into the snapshot. Errors: MEMDIFF_EINVAL. */
int memdiff_snapshot_get_info(const memdiff_snapshot *snapshot, memdiff_snapshot_info *info);

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
} memdiff_region;

size_t memdiff_snapshot_region_count(const memdiff_snapshot *snapshot);

/* Fills *out with region index (0 .. count-1, ascending addresses). Errors: MEMDIFF_EINVAL,
 * MEMDIFF_ERANGE. */
int memdiff_snapshot_region(const memdiff_snapshot *snapshot, size_t index, memdiff_region *out);

/* Finds the region containing addr; MEMDIFF_ERANGE when no region does. */
int memdiff_snapshot_find(const memdiff_snapshot *snapshot, uint64_t addr, memdiff_region *out);

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

/* What happened to the pages of a block. */
typedef enum memdiff_change {
    MEMDIFF_CHANGE_NEW = 0,        /* resident after, not before */
    MEMDIFF_CHANGE_FREED,          /* resident before, not after */
    MEMDIFF_CHANGE_REPLACED,       /* resident in both, in another frame (frames known) */
    MEMDIFF_CHANGE_BECAME_PRIVATE, /* shared before, private after */
    MEMDIFF_CHANGE_BECAME_SHARED,  /* private before, shared after */
    MEMDIFF_CHANGE_MIXED           /* a block whose pages changed in several ways */
} memdiff_change;

/* "new", "freed", "replaced", "became-private", "became-shared", "mixed". */
const char *memdiff_change_name(memdiff_change change);

/* memdiff_compare() flags. */
#define MEMDIFF_COMPARE_VERBOSE 0x1u /* coalesce contiguous pages with identical attributes,
                                        not allocation units, and keep the attributes */
#define MEMDIFF_COMPARE_FORCE 0x2u   /* compare snapshots of different processes or hosts
                                        (refused with MEMDIFF_EMISMATCH otherwise) */

/* Whether a block's mapping exists in one snapshot only (memdiff_block.presence). */
#define MEMDIFF_IN_BEFORE 0x1u
#define MEMDIFF_IN_AFTER 0x2u

/* Byte counts of a diff, a category or a block. new = private + shared;
 * freed = unmapped + discarded + swapped; net = new - freed. */
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
} memdiff_totals;

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
} memdiff_block;

typedef struct memdiff_diff memdiff_diff;

/* Compares two snapshots of the same process. Both stay untouched and usable. The diff does not
 * refer to the snapshots: they may be freed before it.
 * Errors: MEMDIFF_EINVAL (a NULL argument, unknown flag), MEMDIFF_EMISMATCH (different page
 * sizes; or different pids or host names without MEMDIFF_COMPARE_FORCE, the detail naming
 * both), MEMDIFF_ENOMEM. */
int memdiff_compare(const memdiff_snapshot *before, const memdiff_snapshot *after,
                    unsigned flags, memdiff_diff **out);

/* Releases a diff. NULL is allowed. */
void memdiff_diff_free(memdiff_diff *diff);

/* Totals over all categories but Own. Errors: MEMDIFF_EINVAL. */
int memdiff_diff_totals(const memdiff_diff *diff, memdiff_totals *out);

/* Totals of one category (Own included here, to see memdiff's own cost).
 * Errors: MEMDIFF_EINVAL (NULL, category out of range). */
int memdiff_diff_category_totals(const memdiff_diff *diff, memdiff_category category,
                                 memdiff_totals *out);

/* Blocks in ascending address order. memdiff_diff_block() returns NULL when index is out of
 * range; the pointer stays valid until the diff is freed. */
size_t memdiff_diff_block_count(const memdiff_diff *diff);
const memdiff_block *memdiff_diff_block(const memdiff_diff *diff, size_t index);

/* The infos of the two snapshots the diff was made from (strings point into the diff). */
int memdiff_diff_snapshot_info(const memdiff_diff *diff, int which_after,
                               memdiff_snapshot_info *out);

/* ---------------------------------------------------------------------------------------------
 * Reports. Both writers return MEMDIFF_EIO when writing to the stream fails.
 * ------------------------------------------------------------------------------------------- */

#define MEMDIFF_REPORT_NO_HEADER 0x1u /* leave out the snapshot header lines */

/* MemDiff-style text: net change, allocated, freed, new private/shared; a table per category;
 * the blocks with sizes and names (with page attributes for a verbose diff). */
int memdiff_report_text(const memdiff_diff *diff, FILE *out, unsigned flags);

/* The same as one JSON object; schema in docs/json-report.md. */
int memdiff_report_json(const memdiff_diff *diff, FILE *out, unsigned flags);

/* ---------------------------------------------------------------------------------------------
 * Snapshot files: keep a snapshot, compare it later or elsewhere. The format is versioned,
 * little-endian, run-length and checksummed (CRC-32); docs/file-format.md describes every byte.
 * A loaded snapshot is a snapshot like any other: compare it, query it, free it.
 * ------------------------------------------------------------------------------------------- */

/* The format this library writes. It reads every file of the same major version (minor versions
 * only add what older readers may skip) and refuses other majors with MEMDIFF_EFORMAT. */
#define MEMDIFF_FILE_VERSION_MAJOR 1
#define MEMDIFF_FILE_VERSION_MINOR 0

/* Writes the snapshot to out (opened in binary mode) and flushes it. Everything the snapshot
 * holds is kept: info, regions with labels and paths, page runs, per-page frame facts.
 * The stream stays open and owned by the caller. Errors: MEMDIFF_EINVAL (a NULL argument, or a
 * snapshot that breaks the data model, e.g. overlapping regions), MEMDIFF_ENOMEM, MEMDIFF_EIO
 * (writing or flushing failed; the stream then holds a partial file). */
int memdiff_snapshot_save(const memdiff_snapshot *snapshot, FILE *out);

/* Writes the snapshot to the file at path, atomically: into a new file beside it, renamed over
 * path once complete, so that a reader sees the old file or the new one, never a partial one.
 * The file is created like any fopen()ed file (mode 0666 less the umask: 0644 usually).
 * Errors: as memdiff_snapshot_save(), MEMDIFF_EACCES (path may not be written), MEMDIFF_EIO.
 * On failure path is left as it was. */
int memdiff_snapshot_save_file(const memdiff_snapshot *snapshot, const char *path);

/* Reads one snapshot from in (binary mode), to the end of the stream, and checks all of it:
 * checksum, bounds of every count and index, order of regions and runs, enums. The result is
 * freed with memdiff_snapshot_free(); its storage_bytes is the loaded copy's own. Files up to
 * 4 GiB are accepted. Errors: MEMDIFF_EINVAL (a NULL argument), MEMDIFF_EFORMAT (not a snapshot
 * file, unsupported version, truncated, corrupt: the detail names what and where, e.g.
 * "snapshot file: truncated in the run table (need 120 bytes at offset 4711, 3 left)"),
 * MEMDIFF_EIO (reading failed), MEMDIFF_ENOMEM. */
int memdiff_snapshot_load(FILE *in, memdiff_snapshot **out);

/* memdiff_snapshot_load() from the file at path; the detail message starts with path.
 * Errors: as memdiff_snapshot_load(), MEMDIFF_EACCES (path may not be read), MEMDIFF_EIO (it
 * cannot be opened, e.g. it does not exist). */
int memdiff_snapshot_load_file(const char *path, memdiff_snapshot **out);

#ifdef __cplusplus
}
#endif

#endif /* MEMDIFF_H */
