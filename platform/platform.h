/*
 * platform.h - the backend contract: all that memdiff's portable core knows of an OS, and all
 * that a backend implements. Nothing else lives here.
 *
 * A backend (platform/<os>/) reports facts, never verdicts: regions, page runs, threads,
 * modules, heaps and process totals. The core classifies, stores and compares. To port memdiff,
 * implement every function declared in os.h (OS memory, clocks, host, thread: in
 * platform/<os>/os.c, which includes os.h alone) and under "The backend implements" below in
 * platform/<os>/, and list the folder's sources in CMakeLists.txt; nothing else is needed (a
 * POSIX system can take the file functions from platform/posix/).
 *
 * What a backend may use (README.md, "Layout"): the public types of memdiff.h, the base layer
 * (base/: arenas, error details, bit helpers, attribute macros; the arena and the error setter
 * come with this header, a backend's private header includes the others it needs) and its own
 * folder. Never the core's memdiff/internal.h, nor another backend's folder.
 *
 * Rules that hold for every function here:
 *  - Pointer arguments are non-NULL unless a comment says otherwise.
 *  - Functions return 0 or a negative memdiff status (MEMDIFF_E*). Native errors (errno,
 *    GetLastError) are translated inside the backend, by one function per backend, and the
 *    detail message is set with memdiff__set_error() (base/error.h) before returning.
 *  - No malloc: memory comes from the memdiff__arena passed in (base/arena.h) or
 *    memdiff__os_alloc, so that a snapshot does not disturb the heap it measures. Results
 *    allocated from an arena live as long as that arena.
 *  - Addresses are uint64_t so that 32-bit builds can read 64-bit targets; ranges are half-open
 *    [start, end) and page aligned.
 *  - Every function may be called from any thread; a memdiff__proc is used by one thread at a
 *    time.
 */
#ifndef MEMDIFF_PLATFORM_H
#define MEMDIFF_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "memdiff.h"
#include "os.h"

/* =============================================================================================
 * The backend implements: files (saving a snapshot, file_write.c)
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

/* Where path's last separator is (POSIX '/'; Windows '/' or '\\'), or NULL when it names a file
 * of the current directory. For messages that name a path's directory. */
const char *memdiff__os_last_separator(const char *path);

/* =============================================================================================
 * The backend implements: reading a process
 * =========================================================================================== */

typedef struct memdiff__proc memdiff__proc; /* backend-private */

/* proc_root: memdiff_options.fixture_root, a recorded tree read in place of the live system
 * (Linux: /proc; tests may name sys_root apart, else it is <proc_root>/sys). */
typedef struct memdiff__open_args {
    int pid;               /* 0: the calling process */
    const char *proc_root; /* NULL: the OS default ("/proc") */
    const char *sys_root;  /* NULL: <proc_root>/sys, or the OS default ("/sys") */
    unsigned flags;        /* MEMDIFF__OPEN_*; 0: everything the backend can read */
    unsigned threads;      /* threads that may read pages, the calling one included: 0 as
                              many as the processors the caller may run on, 1 the calling
                              thread alone. A backend may use fewer (never more than those
                              processors), and none of its own in the caller's address space */
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
 * the backend may leave MEMDIFF_SRC_FRAMES out of caps without asking whether it could read them
 * (Linux: where PAGEMAP_SCAN names the zero page itself; a walk that has to fall back to
 * pagemap then learns the zero page's frame on its own). */
#define MEMDIFF__OPEN_NO_FRAMES 0x4u

/* The caller reads regions and pages only, no process memory (no heaps; a system snapshot):
 * the backend need not open it (Linux: /proc/PID/mem, an open, fstat and close fewer), and
 * leaves MEMDIFF_SRC_HEAPS out of caps. */
#define MEMDIFF__OPEN_NO_MEM 0x8u

/* The caller has seen, in this call, that pagemap shows the caller frame numbers (Linux: a
 * system snapshot checks once for all its processes): the backend need not check again where
 * it knows the zero page's frame (an open, fstat, pread and close fewer a process). */
#define MEMDIFF__OPEN_FRAMES_SHOWN 0x10u

/* What the backend can deliver for this process and caller, decided once at open. A source
 * that is missing has its reason in the matching *_why string (static or arena storage). */
/* A source of caps.sources beside the public MEMDIFF_SRC_*: the pages' ranges can be scanned
 * (Linux: the PAGEMAP_SCAN ioctl), a faster way to the same facts, not one the user is told of
 * (memdiff_snapshot_info.sources leaves it out). */
#define MEMDIFF__SRC_PAGEMAP_SCAN 0x0004u

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

/* Closes handles opened by memdiff__plat_open, and ends any thread it started. NULL is allowed. */
void memdiff__plat_close(memdiff__proc *proc);

/* Threads that have read pages of proc so far (memdiff__plat_pages): 1 when the calling thread
 * alone did. */
unsigned memdiff__plat_pages_threads(const memdiff__proc *proc);

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
 * run takes a run with its frame numbers, if the depth gave them (MEMDIFF_SRC_FRAMES), as pfn[0..
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
 * (MEMDIFF_SRC_PAGE_ACCESS), or 0 where the backend cannot mark pages so (Windows, whose per-page
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

/* =============================================================================================
 * The backend implements: PSS per mapping (snapshots with MEMDIFF_SNAPSHOT_SMAPS_PSS that get no
 * map counts; memdiff/mapping_pss.c)
 * =========================================================================================== */

/* Every mapping's proportional set size as the OS itself counts it, in ascending order, as
 * memdiff__plat_refs_usage lists mappings; pss is the figure the OS gives per mapping (Linux:
 * smaps "Pss", whole kB as bytes), the other fields as memdiff__plat_refs_usage sets them.
 * MEMDIFF_ENOTSUP (detail set) where the OS has no exact figure per mapping (Windows, whose
 * usage pss is an estimate from share counts). Errors: as memdiff__plat_regions. */
int memdiff__plat_mapping_pss(memdiff__proc *proc, memdiff__arena *arena,
                              memdiff__plat_usage **out, size_t *count);

/* =============================================================================================
 * The backend implements: polls and marks (memory over time: the core's poll.c and mark.c)
 * =========================================================================================== */

/* The process's totals now, in bytes (missing figures 0), without memdiff__plat_open: the one
 * cheapest read the OS offers (Linux: <pid>/status under /proc; Windows: GetProcessMemoryInfo).
 * pid 0: the calling process. Errors: MEMDIFF_ESRCH (none, or it has exited: a zombie),
 * MEMDIFF_EACCES, MEMDIFF_EIO. */
int memdiff__plat_poll(int pid, memdiff_process_totals *out);

/* The longest mark datagram: what memdiff_mark() sends (docs/api.md, "Marks"). */
#define MEMDIFF__MARK_MSG_MAX 1033u

/* Sends one mark datagram msg[0..len) to the calling process's recorder: through the descriptor
 * the environment variable MEMDIFF_MARK_FD names (looked up once per process), else where the
 * OS has a rendezvous a recorder attached to this pid binds. Must not allocate, nor block on a
 * recorder that is not the caller's parent. Returns 1 sent, 0 no recorder (nothing to send to,
 * it went away, marks turned off), never an error. */
int memdiff__plat_mark_send(const void *msg, size_t len);

/* A recorder's end of the mark channel; the backend fills it, the core keeps it. */
typedef struct memdiff__mark_chan {
    int fd;       /* what the recorder receives on (-1: none) */
    int child_fd; /* pid 0: the end the child inherits (-1: none) */
    int pid;      /* the process whose marks are taken (0: any sender) */
} memdiff__mark_chan;

/* Opens the recorder's end: pid > 0 for a running process, 0 for a child about to start.
 * Errors: MEMDIFF_ENOTSUP (no such channel on this OS), MEMDIFF_EIO (the rendezvous is taken:
 * another recorder), MEMDIFF_ENOMEM. */
int memdiff__plat_mark_listen(int pid, memdiff__mark_chan *out);

/* Receives one datagram into buf[0..cap) (a longer one is cut), waiting up to timeout_ns.
 * Returns 1 with *len and *sender (the sending process as the kernel states it, 0 unknown), 0
 * when none came, MEMDIFF_EIO. Datagrams from other senders than chan->pid are dropped. */
int memdiff__plat_mark_recv(memdiff__mark_chan *chan, uint64_t timeout_ns, void *buf, size_t cap,
                            size_t *len, int *sender);

/* Closes what memdiff__plat_mark_listen opened. */
void memdiff__plat_mark_close(memdiff__mark_chan *chan);


/* =============================================================================================
 * The backend implements: the whole machine (system snapshots, memdiff/system.c). A system
 * snapshot lists the processes, reads each one (through memdiff__plat_open and the page walk
 * where frames are shown, else through memdiff__plat_sys_rollup), and where the kernel's page
 * files are readable, every physical frame's kind.
 * =========================================================================================== */

typedef struct memdiff__sys memdiff__sys; /* backend-private: the machine's open files */

/* What the backend can read of the machine, decided once at memdiff__plat_sys_open. Strings are
 * static or in the arena passed to the open. */
typedef struct memdiff__sys_caps {
    uint32_t page_size;
    uint32_t clock_ticks;  /* ticks per second of start_ticks */
    uint64_t boot_time_s;  /* seconds since the Unix epoch; 0 unknown */
    const char *boot_id;   /* "" unknown */
    int frames;            /* processes' page maps show frame numbers */
    int mapcounts;         /* memdiff__plat_sys_mapcounts works */
    uint64_t max_frame;    /* frames memdiff__plat_sys_frames can classify (0: none) */
    const char *phys_why;  /* NULL, or why frames cannot be classified */
    const char *hidden;    /* NULL, or why the process list itself may be incomplete */
} memdiff__sys_caps;

/* Opens the machine under proc_root (NULL: the OS's own). Errors: MEMDIFF_ENOTSUP (an OS without
 * it), MEMDIFF_ENOMEM, MEMDIFF_EIO. */
int memdiff__plat_sys_open(const char *proc_root, memdiff__arena *arena, memdiff__sys **out,
                           memdiff__sys_caps *caps);

/* Closes what memdiff__plat_sys_open opened. NULL is allowed. */
void memdiff__plat_sys_close(memdiff__sys *sys);

/* The ids of every process listed now, in ascending order, in arena. Errors: MEMDIFF_EACCES,
 * MEMDIFF_EIO (the list cannot be read), MEMDIFF_ENOMEM. */
int memdiff__plat_sys_pids(memdiff__sys *sys, memdiff__arena *arena, int **out, size_t *count);

/* Who a process is. Strings in the arena passed in: name the kernel's short name, args the
 * command line's bytes (arguments NUL-separated, as many as fit MEMDIFF__SYS_ARGS_MAX). */
#define MEMDIFF__SYS_ARGS_MAX 4096u
typedef struct memdiff__sys_ident {
    int ppid;
    uint64_t start_ticks;  /* ticks after boot */
    int kernel_thread;     /* no user address space */
    int zombie;            /* exited, not yet reaped */
    const char *name;
    const char *args;
    size_t args_len;
} memdiff__sys_ident;

/* Errors: MEMDIFF_ESRCH (gone), MEMDIFF_EACCES (hidden), MEMDIFF_EIO, MEMDIFF_EFORMAT,
 * MEMDIFF_ENOMEM. */
int memdiff__plat_sys_ident(memdiff__sys *sys, int pid, memdiff__arena *arena,
                            memdiff__sys_ident *out);

/* A process's figures as the OS counts them, in bytes (memdiff_sysproc's fields); exact holds
 * the MEMDIFF_SYSPROC_EXACT_* bits of the figures that are the OS's exact count. */
typedef struct memdiff__sys_usage {
    uint64_t rss, pss, uss, swap, swap_pss, anon, file, shmem;
    unsigned exact;
} memdiff__sys_usage;

/* The process's usage summed over its mappings by the OS (Linux: smaps_rollup). Errors:
 * MEMDIFF_ESRCH, MEMDIFF_EACCES, MEMDIFF_EIO, MEMDIFF_ENOTSUP (no such figure). */
int memdiff__plat_sys_rollup(memdiff__sys *sys, int pid, memdiff__arena *scratch,
                             memdiff__sys_usage *out);

/* What a process's status says after it was read: its real user id, the OS's counters of its
 * resident file and shared-memory pages (per-CPU counters: not exact), and that it still runs
 * and holds its memory. Errors: MEMDIFF_ESRCH (it exited, or is exiting), MEMDIFF_EACCES,
 * MEMDIFF_EIO. */
typedef struct memdiff__sys_status {
    uint32_t uid;
    uint64_t rss_file, rss_shmem, swap;
} memdiff__sys_status;
int memdiff__plat_sys_status(memdiff__sys *sys, int pid, memdiff__arena *scratch,
                             memdiff__sys_status *out);

/* Map counts of frames: key[0..n) holds frame << shift (the low shift bits are the caller's,
 * e.g. who asked); sorts key in place, ascending, then counts[i] is how many times the frame of
 * key[i] is mapped (Linux: kpagecount), read once per span of nearby frames, however many keys
 * name a frame. Errors: MEMDIFF_EIO, MEMDIFF_ENOMEM. */
int memdiff__plat_sys_mapcounts(memdiff__sys *sys, uint64_t *key, size_t n, unsigned shift,
                                uint64_t *counts);

/* A frame's class, one byte (memdiff__plat_sys_frames): the memdiff_frame_kind in the low five
 * bits (MEMDIFF__FRAME_HOLE: no memory behind the number) and the facts below. */
#define MEMDIFF__FRAME_KIND 0x1fu
#define MEMDIFF__FRAME_HOLE 0x1fu
/* Kernel memory in a compound page (MEMDIFF_FRAME_KERNEL in the table): among them the large
 * kmalloc allocations, which /proc/meminfo counts as Slab though they are no slab pages. */
#define MEMDIFF__FRAME_KERNEL_LARGE 0x1eu
#define MEMDIFF__FRAME_MAPPED 0x20u  /* mapped into some address space */
#define MEMDIFF__FRAME_ANON 0x40u    /* anonymous memory */
#define MEMDIFF__FRAME_SHMEM 0x80u   /* shared memory: swap-backed, not anonymous */

/* Classifies frames [first, first + n) into class[0..n) (n and first multiples of 1024, so
 * that a free block of the buddy allocator is never cut) and sets *got to how many exist (less
 * than n past the last). Errors: MEMDIFF_EIO, MEMDIFF_ENOMEM. */
int memdiff__plat_sys_frames(memdiff__sys *sys, uint64_t first, size_t n, unsigned char *klass,
                             size_t *got);

/* The kernel's own accounting, in bytes (0 unknown), for the physical table's reconciliation. */
typedef struct memdiff__sys_meminfo {
    uint64_t mem_total, mem_free, buffers, cached, swap_cached, anon_pages, shmem, slab,
        page_tables, sec_page_tables, kernel_stack, unevictable, mlocked, hugetlb;
    uint64_t zone_managed;  /* pages the zones manage (Linux: zoneinfo), in bytes */
    uint64_t zone_spanned;  /* bytes the zones span, holes included */
    uint64_t zone_present;  /* bytes of memory present in the zones */
    uint64_t zone_free;     /* the zones' free pages (nr_free_pages), in bytes */
    uint64_t pcp;           /* pages on the per-CPU free lists, in bytes */
    uint64_t drift;         /* bytes per counter the per-CPU differences may hide: the sum
                               over zones of the vm stats threshold x CPUs */
} memdiff__sys_meminfo;

/* Errors: MEMDIFF_EIO, MEMDIFF_ENOTSUP. */
int memdiff__plat_sys_meminfo(memdiff__sys *sys, memdiff__sys_meminfo *out);

#endif /* MEMDIFF_PLATFORM_H */
