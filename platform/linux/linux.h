/*
 * linux.h - private to the Linux backend (platform/linux/). Not installed.
 *
 * The backend reads /proc (and /sys) through the root paths of memdiff__open_args only, so a
 * test can point it at a recorded or constructed fixture tree. It never calls malloc and never
 * uses stdio streams or opendir: a snapshot must not touch the heap it measures. Memory comes
 * from arenas; files are read with open/read/pread; directories with getdents64.
 *
 * Files, each calling only those listed after it: heaps.c, modules.c, threads.c (attribution
 * and threads); walk.c and its stages (walk.h) and presence.c (the page walk, and which pages
 * attribution may read); refs.c (reference tracking); smaps.c (figures per mapping: usage,
 * PSS); transient.c (pages caught moving, read again); maps.c (the region list); paths.c (mapped
 * files' paths); proc.c (the open process, alive or not); lanes.c (threads that read a large
 * region's pages ahead of the walk); poll.c and mark.c (memory over time: the cheap poll, the
 * mark channel); system.c (the whole machine: process list, identities, kpageflags classes,
 * kpagecount, meminfo); procfs.c (files and errors), radix.c (the frame sort) and os.c.
 *
 * Device numbers: /proc/PID/maps prints MAJOR(dev):MINOR(dev) in hex. memdiff__plat_region.dev
 * packs them as (major << 32) | minor; memdiff__linux_dev() packs a stat st_dev the same way so
 * the two compare equal.
 */
#ifndef MEMDIFF_LINUX_H
#define MEMDIFF_LINUX_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <linux/fs.h>
#include <linux/types.h>

#include "base/attrs.h"
#include "base/bits.h"
#include "platform.h"

/* ---- PAGEMAP_SCAN (Linux 6.7, include/uapi/linux/fs.h; Documentation/admin-guide/mm/pagemap.rst)
 * Debian 12's kernel headers predate it, so the uapi is restated here. The layout is ABI: the
 * kernel rejects a call whose size field differs from sizeof(struct pm_scan_arg). */
#ifndef PAGEMAP_SCAN
#define PAGE_IS_WPALLOWED (1 << 0)
#define PAGE_IS_WRITTEN (1 << 1)
#define PAGE_IS_FILE (1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
#define PAGE_IS_HUGE (1 << 6)
#define PAGE_IS_SOFT_DIRTY (1 << 7)

struct page_region {
    __u64 start;
    __u64 end;
    __u64 categories;
};

struct pm_scan_arg {
    __u64 size;
    __u64 flags;
    __u64 start;
    __u64 end;
    __u64 walk_end;
    __u64 vec;
    __u64 vec_len;
    __u64 max_pages;
    __u64 category_inverted;
    __u64 category_mask;
    __u64 category_anyof_mask;
    __u64 return_mask;
};

#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif
#ifndef PAGE_IS_GUARD
#define PAGE_IS_GUARD (1 << 8) /* Linux 6.15: a guard region's page (MADV_GUARD_INSTALL) */
#endif

/* Code a lane may run (lanes.c): no sanitizer instrumentation, whose runtime keeps per-thread
 * state a lane does not have. */
#define MEMDIFF__LINUX_LANE_CODE __attribute__((no_sanitize_address, no_sanitize("undefined")))

/* Whether the ranges vec[0..n) of a scan over [start, end) are as the kernel documents them:
 * ascending, page aligned (page_mask), inside the request, with no category but ret's (none a
 * guard region's). *moving: one holds swapped pages. One pass without a branch a range, where a
 * scan of fragmented memory returns thousands; made where the ranges were read, by the walk
 * (scan.c) or by a lane, which runs it while the cache holds them (lanes.c). */
MEMDIFF__LINUX_LANE_CODE static inline int memdiff__linux_ranges_plain(
    const struct page_region *vec, size_t n, uint64_t start, uint64_t end, uint64_t page_mask,
    uint64_t ret, int *moving)
{
    uint64_t floor = start, bad = 0, cats = 0;
    for (size_t i = 0; i < n; i++) {
        bad |= (uint64_t)(vec[i].start < floor) | (uint64_t)(vec[i].start >= vec[i].end) |
               ((vec[i].start | vec[i].end) & page_mask);
        cats |= vec[i].categories;
        floor = vec[i].end;
    }
    *moving = (cats & PAGE_IS_SWAPPED) != 0;
    return !bad && floor <= end && !(cats & ~ret);
}

/* ---- pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst) ----------------------- */
#define MEMDIFF__PM_PFN_MASK ((UINT64_C(1) << 55) - 1) /* bits 0-54: PFN when present */
#define MEMDIFF__PM_SOFT_DIRTY (UINT64_C(1) << 55)
#define MEMDIFF__PM_EXCLUSIVE (UINT64_C(1) << 56)     /* page exclusively mapped (4.2) */
#define MEMDIFF__PM_GUARD (UINT64_C(1) << 58)         /* guard region, no page (6.15) */
#define MEMDIFF__PM_FILE (UINT64_C(1) << 61)          /* file page or shared anon (3.5) */
#define MEMDIFF__PM_SWAP (UINT64_C(1) << 62)
#define MEMDIFF__PM_PRESENT (UINT64_C(1) << 63)

/* Batch sizes: no syscall per page anywhere. 64K pagemap entries (512 KiB) cover 256 MiB of
 * address space with 4 KiB pages in one pread. Each pread of pagemap costs the kernel more than
 * its syscall (a buffer, the mmap lock, the VMA looked up again): read over a 1 GiB region,
 * 512 KiB reads took 3-3.5% less time than 128 KiB ones, 256 KiB ones 0.6% more, 1 and 2 MiB
 * no less; a standard snapshot of 1 GiB took 1.6-4.7% less at 64K pages a batch than at 16K
 * (paired medians, both libraries linked side by side). */
#define MEMDIFF__LINUX_BATCH 65536u
/* Deep depth reads kpageflags and kpagecount per span of the sorted frames of a batch: larger
 * batches join more frames into one span (fewer preads), smaller ones keep the batch's arrays
 * in the CPU's cache (about 1 MiB at 16K). Measured on one target at a time (memdiff_bench
 * --pair deep), 16K was never slower than 32K or 64K. */
#define MEMDIFF__LINUX_DEEP_BATCH 16384u
/* Ranges one PAGEMAP_SCAN call may return (24 bytes each: 192 KiB). Where every other page is
 * resident a call returns that many and is made again from where it stopped: 8192 made a fast
 * snapshot of 1 GiB of it on one thread 2.2 to 2.4% faster than 4096 (paired medians, 400 and
 * 600 pairs); 16384 no faster again. */
#define MEMDIFF__LINUX_SCAN_VEC 8192u
/* Frame stretches a run delivered by run_frames holds at most (dense memory: tens of pages a
 * stretch); a longer run goes out in parts, which the core joins. */
#define MEMDIFF__LINUX_FS 1024u
/* Threads that may read one process's pages, the calling thread included (lanes.c), and the
 * pages of the chunks they read: 128 KiB of pagemap entries, 64 MiB of 4 KiB pages. */
#define MEMDIFF__LINUX_LANES_MAX 4u
#define MEMDIFF__LINUX_LANES_CHUNK 16384u
/* Resident islands of a region that heaps.c tries in vain before its chunk search there ends:
 * where memory is fragmented (every other page resident, python's object arenas) each costs a
 * 16-byte read of process memory (1.5 to 2.7 us); a chunk tried after more islands of other
 * memory in the same mapping (they are tried longest hole before them first) stays Private. */
#define MEMDIFF__LINUX_CHUNK_MISSES 8u
/* The longest resident island heaps.c looks past for a chunk behind it, and the span of the
 * islands it lists at a time: the kernel walks each page table entry of it (about 2 to 3 ns
 * each), and a large mapping resident throughout would cost the search a second walk of it
 * (4096 pages: 7 us of a 0.19 ms snapshot of 64 MiB). */
#define MEMDIFF__LINUX_ISLAND_PAGES 1024u
/* Pages the short runs gathered into one call of the sink's run_bits may span (emit.h). */
#define MEMDIFF__LINUX_GATHER 4096u

struct memdiff__linux_stages;   /* the page walk's stages (walk.h) */
struct memdiff__linux_idle;     /* the page_idle bits' buffers (refs.c) */

/* Spans of pagemap entries presence.c keeps for the walk (proc->presence_pagemap): a window's
 * mappings back to back, a chain of chunks' look-ahead. More windows than this are scanned. */
#define MEMDIFF__LINUX_KEPT_SPANS 32u

/* What presence.c keeps for attribution: the ranges of every window (ranges[0..range_count), by
 * address: present pages, and where proc->presence_walk swapped ones too, with the fast walk's
 * categories) and the windows they cover (windows[0..window_count), by address, none
 * overlapping; a window's categories: those its ranges were asked for, which tell whether the
 * walk may take them); where proc->presence_pagemap, the pagemap entries windows were read from
 * (spans[0..span_count), by address); emptied when the region list is read again. */
struct memdiff__linux_presence {
    struct page_region *ranges;
    size_t range_count, range_cap;
    struct page_region *windows;
    size_t window_count, window_cap;
    struct memdiff__linux_kept_span {
        uint64_t first, count; /* entries of pages [first, first + count) */
        uint64_t *entries;
    } spans[MEMDIFF__LINUX_KEPT_SPANS];
    size_t span_count;
    unsigned regions_read; /* proc->regions_read the windows are for */
};

/* The backend's view of an open process: its descriptors and what the caller may read of it,
 * decided at the open (proc.c), and the state each part of the backend keeps from call to call,
 * owned by that part and created on first use from the scratch arena given to
 * memdiff__plat_open. */
struct memdiff__proc {
    int pid;                  /* resolved, never 0 */
    int self;                 /* the calling process */
    int live;                 /* the live /proc (no proc root given), not a fixture tree */
    /* MEMDIFF__OPEN_NO_FRAMES left frames unasked, zero_pfn with them: learned by
     * memdiff__linux_learn_zero_page if a walk needs it after all. */
    int frames_unasked;
    /* Fast depth of another process: presence.c's windows ask the walk's categories
     * (MEMDIFF__LINUX_PRESENCE_WALK), and the walk takes its small regions' ranges from them
     * instead of scanning them again (memdiff__linux_presence_walk). */
    int presence_walk;
    /* Standard and deep depth of another process: presence.c's windows (small regions, the
     * look-ahead of a chain of chunks outside regions lanes read) are read from pagemap, and
     * the walk takes their entries instead of reading them again (memdiff__linux_kept_pagemap). */
    int presence_pagemap;
    const char *proc_root;    /* copies in scratch */
    const char *sys_root;
    char dir[PATH_MAX];       /* "<proc_root>/<pid>" or "<proc_root>/self" */
    uint32_t page_size;
    unsigned page_shift;
    int pagemap_fd, mem_fd, kpageflags_fd, kpagecount_fd; /* -1 when unavailable */
    int idle_fd;              /* page_idle bitmap, read by the page walk (-1: not tracking) */
    unsigned sources;         /* MEMDIFF_SRC_* as reported in caps */
    uint64_t zero_pfn;        /* frame of the shared zero page, 0 when unknown */
    int scan_refused;         /* the kernel refused a scan (EINVAL): pagemap only from then on */
    /* Whether a batch read without frame numbers may go without the zero / huge page scan
     * where its entries allow (pagemap.c, memdiff__linux_pmd_free_now): 0 not yet asked, 1
     * meminfo said so (memdiff__linux_pmd_free), -1 it did not, or MEMDIFF__OPEN_EXACT.
     * pmd_free_relied: a batch went without the scan, so memdiff__plat_totals asks meminfo
     * again. */
    int meminfo_pmd_free, pmd_free_relied;
    /* The system has no swap (memdiff__linux_swap_free_now): 0 not yet asked, 1 yes, -1 no.
     * scan_no_guard: the kernel refused PAGE_IS_GUARD (before 6.15), which is then not asked.
     * transient_*: the waits for pages caught moving (transient.c): when the first began, how
     * many, and (tests only) what runs in place of the wait. */
    int swap_free, scan_no_guard;
    uint64_t transient_since;
    unsigned transient_waits;
    void (*transient_hook)(memdiff__proc *p);
    unsigned scan_refuse_at_call; /* tests only: the scan call that fails with EINVAL, counting
                                     from 1 (0: none), as a kernel may refuse mid-walk */
    memdiff__arena *scratch;

    char *text;               /* reusable buffer for whole-file reads */
    size_t text_cap;

    /* The region list memdiff__plat_regions returned (in the caller's arena, which outlives
     * the proc): the page walk reads a region's mapping kind from it. NULL until then.
     * regions_read counts the lists read: what was read or scanned ahead for one holds for
     * no other. */
    const memdiff__plat_region *regions;
    size_t region_count;
    unsigned regions_read;

    /* The modules memdiff__plat_modules found in the region list of pass modules_read (in
     * the caller's arena): heaps.c reads no malloc header in memory that is a module's (the
     * module's image claims it whatever a header there says). */
    const memdiff__plat_module *modules;
    size_t module_count;
    unsigned modules_read;

    struct memdiff__linux_stages *stages;     /* the page walk (walk.c) */
    /* Lanes (lanes.c): threads that read a large region's pages ahead of the walk. lanes_want:
     * threads the caller allows, its own included (0: every processor, 1: none);
     * lanes_refused: this process is read on one thread (the caller's own address space, or
     * no memory for lanes); lanes_used: threads that read pages, when the process closed. */
    struct memdiff__linux_lanes *lanes;
    unsigned lanes_want, lanes_used, lanes_plans;
    int lanes_refused;
    int scan_guard_ok;                        /* a scan asking PAGE_IS_GUARD was answered */
    struct memdiff__linux_presence *presence; /* attribution's presence (presence.c) */
    struct memdiff__linux_idle *idle;         /* reference tracking (refs.c) */
};

/* ---- lanes.c: more than one core --------------------------------------------------------- */

#define MEMDIFF__LANES_PAGEMAP 1
#define MEMDIFF__LANES_SCAN 2

/* Sets how many threads may read p's pages, the calling one included (memdiff__open_args.threads:
 * 0 as many as the processors, 1 it alone; capped at MEMDIFF__LINUX_LANES_MAX). */
int memdiff__linux_lanes_setup(memdiff__proc *p, unsigned want);

/* Whether the plan still has lanes reading ahead: a plan's first chunk is read by the walk,
 * timed, and where it cost the kernel less than handing chunks over would (a 4 GiB THP
 * region's scan: 5 us a chunk; 1 GiB of small pages: 100 us), the plan ends there. */
int memdiff__linux_lanes_active(const memdiff__proc *p);

/* Whether lanes could read [start, end) of p (large enough, another process's live memory, lanes
 * allowed and not refused), from what p knows: no system call. The pages of the first
 * MEMDIFF__LINUX_LANES_PROBE of such a region are read by the walk, timed, before a plan at
 * fast depth (memdiff__linux_lanes_worth). */
int memdiff__linux_lanes_may(const memdiff__proc *p, uint64_t start, uint64_t end);
/* The walk's scan of 2048 pages took 3.2 to 3.4 us over huge pages and 22 us over small ones
 * (medians; the bar, at the 40 us a chunk rule: 5 us). Over 1024, huge pages took 2.2 to 3.3 us
 * against a 2.5 us bar. */
#define MEMDIFF__LINUX_LANES_PROBE 2048u

/* Whether pages that cost the kernel ns to read are worth lanes (40 us a chunk's worth). */
int memdiff__linux_lanes_worth(uint64_t pages, uint64_t ns);

/* Plans the chunks of [start, end) for the lanes to read ahead: pagemap, or PAGEMAP_SCAN with
 * anyof and ret. 1 when planned; 0 when the walk reads it alone (a region too small, the
 * caller's own address space, no lanes). Replaces a plan not yet done. */
int memdiff__linux_lanes_plan(memdiff__proc *p, int mode, uint64_t start, uint64_t end,
                              uint64_t anyof, uint64_t ret);

/* Ends the plan (the walk goes elsewhere); chunks being read are read to the end. */
void memdiff__linux_lanes_cancel(memdiff__proc *p);

/* The walk is done below end (memdiff__plat_pages' end): where no region above it is large
 * enough for a plan, the lanes are told to exit now, so that they are gone by the time the
 * process closes, and the rest of the snapshot does not wait for them to be joined. A plan
 * after that (a walk again) starts them again. */
void memdiff__linux_lanes_walked(memdiff__proc *p, uint64_t end);

/* A pagemap plan: copies the entries of the pages [addr, addr + n) read ahead into dst, reads
 * from addr following one another; returns how many pages from addr it gave (the rest: the
 * caller reads itself, e.g. after a short read). 0 without a plan at addr. */
size_t memdiff__linux_lanes_pagemap(memdiff__proc *p, uint64_t addr, uint64_t *dst, size_t n);

/* A scan plan: its chunk count, and chunk i (taken in order) - its pages [lo, hi), the ranges as
 * the kernel gave them (to be checked: memdiff__linux_scan_accept), walk_end, and *plain: 1 when
 * they passed memdiff__linux_ranges_plain where they were read, 2 when so and one holds swapped
 * pages, 0 when not; the number of ranges, or -errno. memdiff__linux_lanes_scan_done when the
 * ranges are used. */
size_t memdiff__linux_lanes_chunks(const memdiff__proc *p);
int memdiff__linux_lanes_scan(memdiff__proc *p, size_t i, const struct page_region **ranges,
                              uint64_t *lo, uint64_t *hi, uint64_t *walk_end, int *plain);
void memdiff__linux_lanes_scan_done(memdiff__proc *p, size_t i);

/* Tests only: processors taken as idle when lanes start, in place of what /proc/loadavg says
 * (-1: read it again); whether chunks are worth lanes, in place of the walk's timing (1 yes,
 * 0 no, -1: time them again). */
void memdiff__linux_lanes_test_idle(int idle);
void memdiff__linux_lanes_test_worth(int worth);

/* The processors lanes may take of want asked, from /proc/loadavg's text (NULL: unread) and the
 * processors online; realtime: the caller runs at SCHED_FIFO or SCHED_RR (lanes.c). */
unsigned memdiff__linux_lanes_idle(const char *loadavg, long online, unsigned want, int realtime);

/* Joins the lanes (memdiff__plat_close); p->lanes_used says how many threads read pages. */
void memdiff__linux_lanes_stop(memdiff__proc *p);

/* ---- errors (procfs.c) ------------------------------------------------------------------ */

/* The one errno → status translation of the backend: ENOENT/ESRCH → MEMDIFF_ESRCH,
 * EACCES/EPERM → MEMDIFF_EACCES, ENOMEM → MEMDIFF_ENOMEM, anything else → MEMDIFF_EIO. */
int memdiff__linux_status(int err);

/* The C-locale text of an errno value, without strerror's gettext (which may allocate). */
const char *memdiff__linux_errno_text(int err);

/* Sets the detail "<what> <path>: <errno text>" and returns memdiff__linux_status(err); err may
 * be memdiff__linux_open's value for a file of the wrong type. */
int memdiff__linux_fail(int err, const char *what, const char *path);

/* ---- paths and files (procfs.c) --------------------------------------------------------- */

/* "<dir>/<name>" into buf; MEMDIFF_EINVAL (with detail) when it does not fit. */
int memdiff__linux_path(char *buf, size_t size, const char *dir, const char *name);

/* The one open of every file the backend reads or writes: open(path, flags | O_NONBLOCK |
 * O_NOCTTY | O_CLOEXEC | O_NOFOLLOW), retried on EINTR. The file must be a directory when flags
 * hold O_DIRECTORY (open(2)'s own check), else a regular file (an fstat: every /proc and /sys
 * file the backend uses is one), checked before any read or write. flags: O_RDONLY, O_WRONLY or
 * O_RDWR, and O_DIRECTORY or O_PATH. Returns the fd, or -1 with errno set: a file of another type
 * sets a private value above every errno that memdiff__linux_errno_text names ("a FIFO, not a
 * regular file") and memdiff__linux_status makes MEMDIFF_EIO; a directory expected, ENOTDIR. No
 * final symlink is followed (ELOOP, or with O_PATH the link itself, refused as no file). A FIFO's
 * open never waits; with O_PATH no FIFO's or device's open is called at all, which is what a path
 * another process chooses needs (the module probe: memdiff__linux_reopen). */
int memdiff__linux_open(const char *path, int flags);

/* memdiff__linux_open, with the fstat of the file opened in *st. st NULL is for O_DIRECTORY
 * alone: open(2) refuses anything but a directory there itself, so no fstat is made (an fd from
 * the test hook is still checked). memdiff__linux_open passes NULL for O_DIRECTORY. */
int memdiff__linux_open_stat(const char *path, int flags, struct stat *st);

/* Tests only: when set, memdiff__linux_open asks it first, with its own arguments. It returns
 * an fd to use in place of opening path (type-checked like one opened), -1 with errno set to
 * fail the open, or MEMDIFF__LINUX_OPEN_PASS to open path as usual. A test sets it while no
 * other thread takes a snapshot, and clears it (NULL) before it returns. */
#define MEMDIFF__LINUX_OPEN_PASS (-2)
typedef int (*memdiff__linux_open_hook_fn)(const char *path, int flags);
extern memdiff__linux_open_hook_fn memdiff__linux_open_hook;

/* Opens for reading the regular file an O_PATH fd of memdiff__linux_open_stat holds, whose
 * fstat is *st: through <proc_root>/self/fd/N, the magic link to that very inode, so that what
 * the path names meanwhile (a FIFO or device mounted over it) is never opened; the result is
 * checked to be that inode. -1 when it cannot (no such link under the proc root: a fixture
 * tree). */
int memdiff__linux_reopen(const memdiff__proc *proc, int path_fd, const struct stat *st);

/* The most the backend reads of one file whole (memdiff__linux_read_file): a /proc/PID/smaps
 * of 65530 mappings (vm.max_map_count's default) is about 100 MiB. */
#define MEMDIFF__LINUX_TEXT_MAX ((size_t)1 << 30)

/* How far memdiff__linux_read_file reads. /proc files report size 0, so it reads until EOF
 * (READ_ALL), except where a read shows the end: a /proc file of one record (made by single_open:
 * stat, statm, status, a thread's syscall) hands out the whole record in the first read that has
 * room for it, and a regular (fixture) file all it has (READ_RECORD: a read that returns less
 * than it asked for is the last); maps ends with x86-64's gate VMA ([vsyscall], at
 * 0xffffffffff600000, above every user address), which the kernel prints last (m_next,
 * fs/proc/task_mmu.c) (READ_MAPS: a read whose text ends with that line is the last). Each saves
 * the read that would only say "end". Files of many records (maps, smaps) hand out a page or so
 * per read. */
#define MEMDIFF__LINUX_READ_ALL 0
#define MEMDIFF__LINUX_READ_RECORD 1
#define MEMDIFF__LINUX_READ_MAPS 2

/* Reads the whole file at path into *buf (grown from arena as needed, NUL-terminated, reusable
 * across calls through *buf / *cap), as far as how (MEMDIFF__LINUX_READ_*) says. Errors:
 * translated errno with detail (a file that is no regular file: MEMDIFF_EIO; one over
 * MEMDIFF__LINUX_TEXT_MAX: MEMDIFF_EIO, "File too large"); MEMDIFF_ENOMEM. */
int memdiff__linux_read_file(memdiff__arena *arena, const char *path, char **buf, size_t *cap,
                             size_t *len, int how);

/* Reads at most size - 1 bytes of a small file of one record (see memdiff__linux_read_file)
 * into buf, NUL-terminated. Returns the length, or -errno (no detail set: callers decide whether
 * a missing file is an error). */
ssize_t memdiff__linux_read_small(const char *path, char *buf, size_t size);

/* A process or thread id as a /proc directory names it: decimal digits alone, 1 to max. 0, or
 * -1 when s is no such name. */
int memdiff__linux_parse_id(const char *s, int64_t max, int64_t *out);

/* The numeric entries (1 to max) of the directory open on fd (path: for errors), in the order
 * getdents64 lists them, into arena; whole (0: none) is how many make the listing whole, the
 * last read that would only say "end" then not made. The caller closes fd. */
int memdiff__linux_list_ids(int fd, const char *path, memdiff__arena *arena, int64_t max,
                            size_t whole, int64_t **out, size_t *count);

/* pread of exactly len bytes at off, retried on EINTR and short reads. Returns the bytes read
 * (less than len only at end of file), or -errno. */
ssize_t memdiff__linux_pread_full(int fd, void *buf, size_t len, uint64_t off);

/* The value of "<key>:" in a /proc status text, in the field's own unit; 0 when missing. base is
 * 10 for "VmRSS:   1234 kB" style fields, 16 for "CapEff:  000001ff..". */
uint64_t memdiff__linux_status_field(const char *text, size_t len, const char *key, int base);

/* The figures of memdiff_process_totals from a /proc/PID/status text (kB lines), in bytes;
 * missing ones 0. */
void memdiff__linux_status_totals(const char *text, size_t len, memdiff_process_totals *out);

/* The same, telling a field that reads (1, *value set) from one missing or without a figure
 * (0). */
int memdiff__linux_status_find(const char *text, size_t len, const char *key, int base,
                               uint64_t *value);

/* Whether a status text shows a task that is neither zombie nor dead and still holds its
 * memory: proc_pid_status() prints the Vm* lines only while get_task_mm() finds an mm
 * (fs/proc/array.c), which is what memdiff__linux_alive() reads statm for, and the text was read
 * just now. 0 says nothing either way (a tree may not record these fields). */
int memdiff__linux_status_alive(const char *text, size_t len);

/* Whether a /proc/meminfo text says that no page of the system is mapped by a PMD as anonymous
 * memory (AnonHugePages: 0 kB; NR_ANON_THPS counts the PMD-mapped anonymous folios) and that no
 * hugetlb page exists (Hugetlb: 0 kB, every pool size). Then a present page that pagemap calls
 * exclusively mapped and not a file page is neither part of a huge page nor the zero page (whose
 * entries carry neither bit: the zero page has no struct page for pagemap to ask, the huge zero
 * page is no anonymous folio). 0 when a field is missing or not 0. */
int memdiff__linux_meminfo_pmd_free(const char *text, size_t len);

/* memdiff__linux_meminfo_pmd_free of <proc_root>/meminfo; 0 when it cannot be read. */
int memdiff__linux_pmd_free(const memdiff__proc *proc);

/* Whether <proc_root>/meminfo says the system has no swap (SwapTotal: 0 kB); 0 when it cannot
 * be read. */
int memdiff__linux_swap_free(const memdiff__proc *proc);

/* (major << 32) | minor of a stat st_dev, as memdiff__plat_region.dev packs maps' dev field. */
uint64_t memdiff__linux_dev(dev_t dev);

/* ---- pages caught moving (transient.c) --------------------------------------------------- */

/* memdiff__linux_swap_free, asked once per open. */
int memdiff__linux_swap_free_now(memdiff__proc *p);

/* Whether pagemap entry e may be a page the kernel is moving (a migration entry) rather than a
 * page swapped out or a marker. */
int memdiff__linux_transient_entry(memdiff__proc *p, uint64_t e);

/* Before a page caught moving is read again: 1 while the open's budget for such waits lasts, 0
 * once it is spent (what was read then stands). */
int memdiff__linux_transient_wait(memdiff__proc *p);

/* Reads again, until none is left or the budget is spent, the entries of pm[0..n) (pagemap
 * entries of pages first, first + 1, ...) that may be pages caught moving. */
int memdiff__linux_settle_entries(memdiff__proc *p, uint64_t first, uint64_t *pm, size_t n);

/* ---- the process (proc.c) --------------------------------------------------------------- */

/* Whether the process still runs: the calling process always does; another one has exited once
 * its /proc directory is gone, its state is zombie or dead, or its memory is gone (statm reads
 * size 0: the task is exiting and has dropped its mm). */
int memdiff__linux_alive(memdiff__proc *proc);

/* pagemap (opened on the process's address space when the snapshot began) read nothing: the
 * space is gone. MEMDIFF_ESRCH when the process has exited, else MEMDIFF_ECHANGED: it exec'd a
 * program, and the snapshot is taken again on the new one; MEMDIFF_OK for a fixture tree (whose
 * pagemap file may be shorter than its regions). how: what read ("read", "PAGEMAP_SCAN"). */
int memdiff__linux_space_gone(memdiff__proc *p, const char *how);

/* Reads <dir>/name of the process whole into proc->text (memdiff__linux_read_file, how:
 * MEMDIFF__LINUX_READ_*). An empty file of a process that is gone is MEMDIFF_ESRCH. */
int memdiff__linux_read_proc(memdiff__proc *proc, const char *name, int how, size_t *len);

/* For a process opened with MEMDIFF__OPEN_NO_FRAMES: learns the zero page's frame now (a fast
 * walk that falls back to pagemap, where only the frame tells the zero page), as the open does
 * otherwise. Nothing to report: without it the zero page is not told from other pages, as
 * for any caller without CAP_SYS_ADMIN. */
void memdiff__linux_learn_zero_page(memdiff__proc *proc);

/* ---- reference tracking (refs.c) -------------------------------------------------------- */

/* The page walk's hook: for the n pages of one batch (attrs[i], frame pfn[i]), adds
 * MEMDIFF_PAGE_ACCESSED to each resident page whose frame's page_idle bit is clear. One read of
 * the bitmap per span of nearby frames, never one per page. */
int memdiff__linux_idle_attrs(memdiff__proc *proc, const uint64_t *pfn, unsigned *attrs,
                              size_t n);

/* ---- presence (presence.c) -------------------------------------------------------------- */

/* Reads len (at most 64 KiB) bytes of the process's memory at addr through <dir>/mem, but only
 * when every page involved is present (memdiff__linux_page_present, else pagemap), so that
 * reading never faults in a page and disturbs what is measured. MEMDIFF__LINUX_NOT_RESIDENT
 * when addr's page is not present; MEMDIFF_ENOTSUP when memory cannot be read that way
 * otherwise (no mem or pagemap file, a later page not resident, a fixture tree); no detail is
 * set: callers treat unreadable memory as a fact to work around, not as a failure. */
#define MEMDIFF__LINUX_NOT_RESIDENT 1
int memdiff__linux_read_mem(memdiff__proc *proc, uint64_t addr, void *buf, size_t len);

/* Whether addr's page is present (1) or not (0), from one PAGEMAP_SCAN over the region that
 * holds it and the small regions behind it (a window; at standard and deep depth of another
 * process one pread of pagemap for each run of its mappings, proc->presence_pagemap), kept with
 * every other window for the next questions (what attribution reads is a few pages of each of
 * many small regions: one call instead of a pread each); -1 when no scan can tell (none,
 * refused, not mapped). Swapped pages count as not present. */
int memdiff__linux_page_present(memdiff__proc *proc, uint64_t addr);

/* The categories a window kept for the walk was asked for: the fast walk's, PAGE_IS_FILE always
 * (a window may hold regions whose rule asks it). */
#define MEMDIFF__LINUX_PRESENCE_WALK                                                          \
    (PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO | PAGE_IS_HUGE | PAGE_IS_FILE)
/* The same without the file bit: a window inside one private anonymous mapping, where no page is
 * a file page (memdiff__linux_presence_ahead). */
#define MEMDIFF__LINUX_PRESENCE_WALK_ANON (MEMDIFF__LINUX_PRESENCE_WALK & ~(uint64_t)PAGE_IS_FILE)

/* The ranges of the windows kept for the walk (proc->presence_walk) from `from` on, as far as
 * such windows reach without a gap: up to cap of them into vec, cut to start at from; *next:
 * where what they tell ends. Their count, or -1 when no such window holds from. */
int memdiff__linux_presence_walk(memdiff__proc *proc, uint64_t from, struct page_region *vec,
                                 size_t cap, uint64_t *next);

/* Where the first window kept for the walk above from begins (UINT64_MAX: none): a scan of the
 * walk stops there, and takes what follows from memdiff__linux_presence_walk. */
uint64_t memdiff__linux_presence_walk_after(memdiff__proc *proc, uint64_t from);

/* One PAGEMAP_SCAN (scan.c) for the pages of [start, end) that are present (absent 0) or not
 * (absent 1): up to cap ranges into vec and max_pages pages of them (0: no bound). Asking for
 * absent pages, the kernel outputs nothing for the present ones it passes, the cheaper walk.
 * The count, or -errno; the ranges as the kernel gave them, which the caller checks. */
int memdiff__linux_scan_presence(const memdiff__proc *p, struct page_region *vec, size_t cap,
                                 uint64_t start, uint64_t end, int absent, uint64_t max_pages);

/* Makes presence known ahead, for pages [addr, addr + pages) of addr's mapping, where a chain
 * of questions will go (malloc's chunks, back to back), kept as a window: in a snapshot of
 * another process what the walk reads there anyway (pagemap at standard and deep, outside
 * mappings lanes read; at fast the walk's categories, where the mapping is private anonymous
 * memory), else one PAGEMAP_SCAN for the holes there, which costs the kernel less a present page
 * it passes than the windows of memdiff__linux_page_present (it outputs nothing for them).
 * Nothing when a window kept holds addr, or the pages go past its mapping. */
void memdiff__linux_presence_ahead(memdiff__proc *proc, uint64_t addr, uint64_t pages);

/* The first page of [from, to) that is present (present 1) or not (present 0), from the window
 * that holds from: 1 with *at set (to when there is none), or 0 when it does not reach far
 * enough to tell. */
int memdiff__linux_first_page_known(memdiff__proc *proc, uint64_t from, uint64_t to, int present,
                                    uint64_t *at);

/* The holes (absent pages) of [from, to) as far as a window kept so far reaches, without a scan:
 * up to cap of them into vec, ascending; *end: where what they tell ends (to, the window's end,
 * or the start of the last hole when cap were found). Their count, or -1 when no window kept
 * holds from. */
int memdiff__linux_holes_kept(memdiff__proc *proc, uint64_t from, uint64_t to,
                              struct page_region *vec, size_t cap, uint64_t *end);

/* Entries [first, first + n) of pagemap into pm from a span presence.c kept (whole, not in
 * part): 1, else 0. */
int memdiff__linux_kept_pagemap(memdiff__proc *proc, uint64_t first, size_t n, uint64_t *pm);

/* The first page above first where a span presence.c kept begins (UINT64_MAX: none): the walk's
 * read-ahead stops there. */
uint64_t memdiff__linux_kept_after(memdiff__proc *proc, uint64_t first);

/* ---- frames (radix.c) ------------------------------------------------------------------- */

/* LSD radix sort of a[0..n) (tmp: scratch of n) by their bits from bit `from` up (stable: keys
 * equal there keep their order), 11 bits a pass, as many passes as the largest key needs: a
 * batch of frame numbers sorts in a few linear passes, without allocation. Returns the buffer
 * that holds the result (a or tmp). */
uint64_t *memdiff__linux_radix_sort(uint64_t *a, uint64_t *tmp, size_t n, unsigned from);

/* ---- maps (maps.c) ---------------------------------------------------------------------- */

/* The index of the region of the list memdiff__plat_regions read (proc->regions) that holds
 * [start, end) (start alone when end is start), or region_count when no one region does. */
size_t memdiff__linux_region_holding(const memdiff__proc *p, uint64_t start, uint64_t end);

/* Whom the page walk believes about MEMDIFF_PAGE_FILE in a range, from its region's mapping:
 * the kernel's word (ASK: also when there is no region list, or the range is not inside one
 * region), never a file page (private anonymous memory), always one (shared memory the kernel
 * names as such). */
typedef enum memdiff__file_rule {
    MEMDIFF__FILE_ASK = 0,
    MEMDIFF__FILE_NEVER,
    MEMDIFF__FILE_ALWAYS
} memdiff__file_rule;
memdiff__file_rule memdiff__linux_region_file_rule(const memdiff__proc *p, uint64_t start,
                                                   uint64_t end);

/* Parses the text of a /proc/PID/maps file (len bytes, not necessarily NUL-terminated) into
 * regions allocated from arena, in ascending order. The kernel's "\012" escape in a path is
 * decoded as a newline, and *escaped (NULL: not wanted) counts the regions whose path had one
 * (memdiff__linux_resolve_escapes picks the reading that is the file); one trailing
 * " (deleted)" is stripped into MEMDIFF__RF_DELETED. Errors: MEMDIFF_EFORMAT with the line
 * number in the detail, MEMDIFF_ENOMEM. */
int memdiff__linux_parse_maps(const char *text, size_t len, memdiff__arena *arena,
                              memdiff__plat_region **out, size_t *count, size_t *escaped);

/* ---- modules (modules.c) ----------------------------------------------------------------- */

/* Whether the segments of one module that memdiff__plat_modules found for the current region
 * list cover [start, end) whole (0 when no list of modules is for it). */
int memdiff__linux_module_covers(const memdiff__proc *p, uint64_t start, uint64_t end);

/* ---- mapped files' paths (paths.c) ------------------------------------------------------- */

/* The process's <dir>/mountinfo, read on first need (memdiff__linux_served_by_a_process) from
 * proc->scratch; start it zeroed, one per listing. */
typedef struct memdiff__linux_mounts {
    char *text;
    size_t cap, len;
    int state; /* 0: not read, 1: read, -1: unreadable */
} memdiff__linux_mounts;

/* Whether a file on device dev lies on a file system whose answers come from a process: FUSE
 * (fuse, fuse.NAME; FS_USERNS_MOUNT since Linux 4.18), which a process can mount in a user
 * namespace of its own and then stop answering. Looking its path up, or stat-ing the file,
 * would then wait forever (request_wait_answer, fs/fuse/dev.c), so such a file is not touched.
 * 1 too when the process's mountinfo cannot tell. Only a device of major 0 is looked for
 * (FUSE's superblocks take an anonymous device; fuseblk's block device needs privilege to
 * mount), so a file on a disk costs nothing here. */
int memdiff__linux_served_by_a_process(memdiff__proc *proc, uint64_t dev,
                                       memdiff__linux_mounts *m);

/* An O_PATH fd (memdiff__linux_open_stat: nothing opened, no final symlink followed) of the
 * regular file that absolute path names in the process's root (<dir>/root<path>), with its
 * stat in *st, when it is the file of device dev and inode inode and lies on no file system a
 * process serves; else -1. */
int memdiff__linux_open_mapped(memdiff__proc *proc, const char *path, uint64_t dev,
                               uint64_t inode, memdiff__linux_mounts *m, struct stat *st);

/* For each region whose path memdiff__linux_parse_maps decoded (it holds a newline): the
 * reading of the kernel's text (each \012 a newline or those four bytes) that names the
 * mapped file itself (memdiff__linux_open_mapped), tried with every \012 a newline first;
 * the decoded path stays when no reading does (a deleted file, one renamed since, a file
 * system a process serves, a path the caller may not look up) and past 4096 lookups in one
 * call. Errors: MEMDIFF_ENOMEM. */
int memdiff__linux_resolve_escapes(memdiff__proc *proc, memdiff__arena *arena,
                                   memdiff__plat_region *regions, size_t count);

#endif /* MEMDIFF_LINUX_H */
