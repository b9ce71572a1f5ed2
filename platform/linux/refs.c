/*
 * refs.c - reference tracking for reference-set brackets and working-set sizes: clear_refs,
 * VmHWM, and page_idle (Documentation/filesystems/proc.rst, "clear_refs";
 * Documentation/admin-guide/mm/idle_page_tracking.rst). smaps "Referenced", which clear_refs
 * resets, is read in smaps.c.
 *
 * clear_refs acts on the whole address space (every thread) and is writable only by the
 * process's owner (or root): "1" clears the accessed bit of every present PTE and the page's
 * referenced flag (2.6.22), "5" sets the peak RSS to the current RSS (4.0). Clearing an accessed
 * bit does not flush the TLB (fs/proc/task_mmu.c flushes only for "4", soft-dirty), and the CPU
 * sets the bit only when it walks the page table: an access through a translation still cached
 * goes unseen. Measured on 6.18: of 10 pages accessed right after a "1", 0 to 8 were reported.
 * Writing "4" after "1" flushes the TLB of the mm; on a kernel without soft-dirty tracking
 * (CONFIG_MEM_SOFT_DIRTY off) that is all it does, so it is written there, and left out (with a
 * note) where it would reset the soft-dirty bits that other tools (CRIU) rely on.
 *
 * page_idle: one bit per frame, read and written as native 8-byte words; a write ORs its set
 * bits in (marks those frames idle, clearing their PTEs' accessed bits), a read reports a frame
 * idle only when no mapping accessed it since. Frames not on an LRU list cannot be marked and
 * read as not idle (accessed). sysfs serves at most a page per read or write call, so words go
 * in spans of at most a page, one span per group of nearby frames: never a call per page.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "linux.h"

#define RESIDENT(a) (((a) & MEMDIFF_PAGE_PRESENT) && !((a) & MEMDIFF_PAGE_ZERO))

#define SPAN_WORDS 512u /* one sysfs call: 4 KiB of bitmap, 32768 frames */
#define WORD_GAP 8u     /* frames at most this many words apart share a span */

static const char SOFT_DIRTY_NOTE[] =
    "TLB not flushed (clear_refs \"4\" would reset this kernel's soft-dirty bits): an access "
    "through a translation the CPU still caches is not seen";
static const char NO_IDLE_WHY[] = "no page_idle bitmap (/sys/kernel/mm/page_idle/bitmap: "
                                  "CONFIG_IDLE_PAGE_TRACKING, Linux 4.3): touched per mapping only";

/* ---- small helpers ----------------------------------------------------------------------- */

/* A reason string in the proc's scratch arena: "<what> <path>: <errno text>". */
static const char *why(memdiff__proc *proc, const char *what, const char *path, int err,
                       const char *hint)
{
    char buf[PATH_MAX + 256];
    int n = snprintf(buf, sizeof buf, "%s %s: %s%s%s", what, path,
                     memdiff__linux_errno_text(err), hint ? "; " : "",
                     hint ? hint : "");
    if (n < 0)
        return what;
    const char *s = memdiff__arena_strndup(proc->scratch, buf, strlen(buf));
    return s ? s : what;
}

/* Writes value to <dir>/clear_refs; 0 or an errno. */
static int write_clear_refs(memdiff__proc *proc, const char *value, char *path, size_t size)
{
    if (memdiff__linux_path(path, size, proc->dir, "clear_refs"))
        return ENAMETOOLONG;
    int fd = memdiff__linux_open(path, O_WRONLY);
    if (fd < 0)
        return errno;
    int err = 0;
    ssize_t r;
    do
        r = write(fd, value, strlen(value));
    while (r < 0 && errno == EINTR);
    if (r < 0)
        err = errno;
    close(fd);
    return err;
}

/* Whether this kernel tracks soft-dirty bits: a page of a new mapping is soft-dirty in pagemap
 * (bit 55) there and never elsewhere. 1, 0, or -1 when pagemap cannot say (a fixture tree). */
static int kernel_soft_dirty(const char *proc_root, uint32_t page_size)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/self/pagemap", proc_root) >= (int)sizeof path)
        return -1;
    char *p = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    *(volatile char *)p = 1;
    int result = -1;
    int fd = memdiff__linux_open(path, 0);
    if (fd >= 0) {
        uint64_t e = 0;
        if (memdiff__linux_pread_full(fd, &e, sizeof e, (uint64_t)(uintptr_t)p / page_size * 8) ==
                sizeof e &&
            (e & MEMDIFF__PM_PRESENT))
            result = (e & MEMDIFF__PM_SOFT_DIRTY) != 0;
        close(fd);
    }
    munmap(p, page_size);
    return result;
}

/* How far VmHWM may be off: since Linux 6.2 mm->rss_stat is a percpu_counter, and hiwater_rss
 * is set from its global part alone (get_mm_rss()), which lags the true count by less than
 * percpu_counter_batch (max(32, 2 * online CPUs)) per CPU. Older kernels cached up to 64 events
 * per thread (TASK_RSS_EVENTS_THRESH): the same order. */
static uint64_t peak_slack(uint32_t page_size)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN), conf = sysconf(_SC_NPROCESSORS_CONF);
    if (online < 1)
        online = 1;
    if (conf < online)
        conf = online;
    uint64_t batch = (uint64_t)(2 * online > 32 ? 2 * online : 32);
    return batch * (uint64_t)conf * page_size;
}

/* ---- page_idle --------------------------------------------------------------------------- */

/* The index of the first of the ascending a[0..n) not below v (n when none). */
static size_t lower_bound(const uint64_t *a, size_t n, uint64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The page_idle bits' buffers, for a batch of frames (proc->idle, kept for the next batch). */
struct memdiff__linux_idle {
    uint64_t *frames;    /* sorted unique frames of one batch */
    uint64_t *sort_tmp;  /* the sort's scratch, swapped with frames as it needs */
    uint8_t *state;      /* 1: that frame reads idle */
    uint64_t *words;     /* one read or write of the bitmap */
};

static int idle_buffers(memdiff__proc *p)
{
    struct memdiff__linux_idle *s = p->idle;
    if (!s && !(s = p->idle = memdiff__arena_alloc(p->scratch, sizeof *s)))
        return MEMDIFF_ENOMEM;
    if (!s->frames)
        s->frames = memdiff__arena_alloc(p->scratch, MEMDIFF__LINUX_BATCH * sizeof(uint64_t));
    if (!s->sort_tmp)
        s->sort_tmp = memdiff__arena_alloc(p->scratch, MEMDIFF__LINUX_BATCH * sizeof(uint64_t));
    if (!s->state)
        s->state = memdiff__arena_alloc(p->scratch, MEMDIFF__LINUX_BATCH);
    if (!s->words)
        s->words = memdiff__arena_alloc(p->scratch, SPAN_WORDS * sizeof(uint64_t));
    return s->frames && s->sort_tmp && s->state && s->words ? MEMDIFF_OK : MEMDIFF_ENOMEM;
}

/* The frames of the resident pages among pfn[0..n) (attrs: MEMDIFF_PAGE_*, or NULL for pagemap
 * entries in pfn), sorted and unique, into p->idle->frames; returns how many. */
static size_t batch_frames(memdiff__proc *p, const uint64_t *pfn, const unsigned *attrs, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t f;
        if (attrs) {
            if (!RESIDENT(attrs[i]))
                continue;
            f = pfn[i];
        } else {
            if (!(pfn[i] & MEMDIFF__PM_PRESENT))
                continue;
            f = pfn[i] & MEMDIFF__PM_PFN_MASK;
        }
        if (f && f != p->zero_pfn)
            p->idle->frames[m++] = f;
    }
    uint64_t *sorted = memdiff__linux_radix_sort(p->idle->frames, p->idle->sort_tmp, m, 0);
    if (sorted != p->idle->frames) {
        p->idle->sort_tmp = p->idle->frames;
        p->idle->frames = sorted;
    }
    size_t u = m ? 1 : 0;
    for (size_t i = 1; i < m; i++)
        if (p->idle->frames[i] != p->idle->frames[u - 1])
            p->idle->frames[u++] = p->idle->frames[i];
    return u;
}

/* The end of the span that starts at frames[i]: frames whose words lie close together and
 * within SPAN_WORDS of the first. */
static size_t span_end(const uint64_t *frames, size_t i, size_t u)
{
    uint64_t first = frames[i] / 64;
    size_t j = i + 1;
    while (j < u && frames[j] / 64 - frames[j - 1] / 64 <= WORD_GAP &&
           frames[j] / 64 - first < SPAN_WORDS)
        j++;
    return j;
}

/* Reads the bitmap words of frames[i..j) into p->idle->words and sets idle->state for them. */
static int read_span(memdiff__proc *p, int fd, const char *path, size_t i, size_t j)
{
    uint64_t w0 = p->idle->frames[i] / 64;
    size_t nw = (size_t)(p->idle->frames[j - 1] / 64 - w0 + 1);
    ssize_t r = memdiff__linux_pread_full(fd, p->idle->words, nw * 8, w0 * 8);
    if (r < 0)
        return memdiff__linux_fail((int)-r, "read", path);
    size_t got = (size_t)r / 8; /* words past the end of the bitmap read as "not idle" */
    for (size_t k = i; k < j; k++) {
        size_t at = (size_t)(p->idle->frames[k] / 64 - w0);
        p->idle->state[k] = at < got && ((p->idle->words[at] >> (p->idle->frames[k] % 64)) & 1);
    }
    return MEMDIFF_OK;
}

/* Marks the sorted unique frames p->idle->frames[0..u) idle, then reads them back: frames that did
 * not take the mark (not on an LRU list) add to *untracked. The words are read first and written
 * back with our bits added: the kernel ORs what is written, a plain file (a fixture) would not,
 * and frames of another batch may share a word. */
static int mark_frames(memdiff__proc *p, int fd, const char *path, size_t u, uint64_t *untracked)
{
    for (size_t i = 0; i < u;) {
        size_t j = span_end(p->idle->frames, i, u);
        uint64_t w0 = p->idle->frames[i] / 64;
        size_t nw = (size_t)(p->idle->frames[j - 1] / 64 - w0 + 1);
        ssize_t got = memdiff__linux_pread_full(fd, p->idle->words, nw * 8, w0 * 8);
        if (got < 0)
            return memdiff__linux_fail((int)-got, "read", path);
        memset((char *)p->idle->words + got, 0, nw * 8 - (size_t)got);
        for (size_t k = i; k < j; k++)
            p->idle->words[p->idle->frames[k] / 64 - w0] |= UINT64_C(1)
                                                             << (p->idle->frames[k] % 64);
        /* One call: a span is at most a page, which sysfs writes whole. */
        ssize_t r;
        do
            r = pwrite(fd, p->idle->words, nw * 8, (off_t)(w0 * 8));
        while (r < 0 && errno == EINTR);
        if (r < 0)
            return memdiff__linux_fail(errno, "write", path);
        if ((size_t)r != nw * 8)
            return memdiff__set_error(MEMDIFF_EIO, "write %s: %zd of %zu bytes", path, r,
                                      nw * 8);
        int rc = read_span(p, fd, path, i, j);
        if (rc)
            return rc;
        for (size_t k = i; k < j; k++)
            if (!p->idle->state[k])
                *untracked += p->page_size;
        i = j;
    }
    return MEMDIFF_OK;
}

/* Marks every resident frame of the process idle: the regions' pagemap in batches. */
static int mark_idle(memdiff__proc *p, memdiff__refs_reset *out)
{
    if (!(p->sources & MEMDIFF_SRC_FRAMES)) {
        out->pages_why = "page_idle is indexed by frame number, and frame numbers need "
                         "CAP_SYS_ADMIN: touched per mapping only";
        return MEMDIFF_OK;
    }
    char path[PATH_MAX];
    if (memdiff__linux_path(path, sizeof path, p->sys_root, "kernel/mm/page_idle/bitmap"))
        return MEMDIFF_EINVAL;
    int fd = memdiff__linux_open(path, O_RDWR);
    if (fd < 0) {
        int e = errno;
        out->pages_why = e == ENOENT ? NO_IDLE_WHY : why(p, "open", path, e, "touched per mapping only");
        return MEMDIFF_OK;
    }
    memdiff__plat_region *regions = NULL;
    size_t count = 0;
    int rc = memdiff__plat_regions(p, p->scratch, &regions, &count);
    if (!rc)
        rc = idle_buffers(p);
    uint64_t *pm = NULL;
    if (!rc && !(pm = memdiff__arena_alloc(p->scratch, MEMDIFF__LINUX_BATCH * sizeof *pm)))
        rc = MEMDIFF_ENOMEM;
    for (size_t i = 0; !rc && i < count; i++) {
        uint64_t addr = regions[i].start, npages = (regions[i].end - addr) >> p->page_shift;
        while (!rc && npages > 0) {
            size_t n = npages < MEMDIFF__LINUX_BATCH ? (size_t)npages : MEMDIFF__LINUX_BATCH;
            ssize_t r = memdiff__linux_pread_full(p->pagemap_fd, pm, n * 8,
                                                  (addr >> p->page_shift) * 8);
            if (r < 0) {
                rc = memdiff__set_error(memdiff__linux_status((int)-r), "read %s/pagemap: %s",
                                        p->dir, memdiff__linux_errno_text((int)-r));
                break;
            }
            size_t u = batch_frames(p, pm, NULL, (size_t)r / 8);
            rc = mark_frames(p, fd, path, u, &out->untracked_bytes);
            addr += (uint64_t)n << p->page_shift;
            npages -= n;
        }
    }
    close(fd);
    if (!rc)
        out->done |= MEMDIFF__REFS_PAGES;
    return rc;
}

unsigned memdiff__plat_refs_track_pages(memdiff__proc *proc)
{
    char path[PATH_MAX];
    if (!(proc->sources & MEMDIFF_SRC_FRAMES) ||
        memdiff__linux_path(path, sizeof path, proc->sys_root, "kernel/mm/page_idle/bitmap"))
        return 0;
    if (proc->idle_fd < 0)
        proc->idle_fd = memdiff__linux_open(path, 0);
    if (proc->idle_fd < 0)
        return 0;
    proc->sources |= MEMDIFF_SRC_PAGE_ACCESS;
    return MEMDIFF_SRC_PAGE_ACCESS;
}

int memdiff__linux_idle_attrs(memdiff__proc *p, const uint64_t *pfn, unsigned *attrs, size_t n)
{
    char path[PATH_MAX];
    if (memdiff__linux_path(path, sizeof path, p->sys_root, "kernel/mm/page_idle/bitmap"))
        return MEMDIFF_EINVAL;
    int rc = idle_buffers(p);
    if (rc)
        return rc;
    size_t u = batch_frames(p, pfn, attrs, n);
    for (size_t i = 0; i < u;) {
        size_t j = span_end(p->idle->frames, i, u);
        rc = read_span(p, p->idle_fd, path, i, j);
        if (rc)
            return rc;
        i = j;
    }
    for (size_t i = 0; i < n; i++) {
        if (!RESIDENT(attrs[i]) || !pfn[i] || pfn[i] == p->zero_pfn)
            continue;
        size_t k = lower_bound(p->idle->frames, u, pfn[i]);
        if (k < u && !p->idle->state[k])
            attrs[i] |= MEMDIFF_PAGE_ACCESSED;
    }
    return MEMDIFF_OK;
}

/* ---- the reset --------------------------------------------------------------------------- */

/* A failed clear_refs write: the process's end is an error, anything else a reason. */
static int refused(memdiff__proc *proc, int err, const char *path, const char **slot,
                   const char *hint)
{
    if ((err == ENOENT || err == ESRCH) && !memdiff__linux_alive(proc))
        return memdiff__set_error(MEMDIFF_ESRCH, "write %s: the process has exited", path);
    if (err == EACCES || err == EPERM)
        hint = "clear_refs is writable by the process's owner and root only";
    else if (err == ENOENT)
        hint = "clear_refs needs Linux 2.6.22";
    *slot = why(proc, "write", path, err, hint);
    return MEMDIFF_OK;
}

int memdiff__plat_refs_reset(memdiff__proc *proc, unsigned what, memdiff__refs_reset *out)
{
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    int err, rc;
    int soft_dirty = kernel_soft_dirty(proc->proc_root, proc->page_size);
    out->peak_slack = peak_slack(proc->page_size);
    if (what & MEMDIFF__REFS_CLEAR) {
        err = write_clear_refs(proc, "1", path, sizeof path);
        if (err) {
            rc = refused(proc, err, path, &out->clear_why, NULL);
            if (rc)
                return rc;
        } else {
            out->done |= MEMDIFF__REFS_CLEAR;
            if (soft_dirty == 1)
                out->note = SOFT_DIRTY_NOTE;
            else if ((err = write_clear_refs(proc, "4", path, sizeof path)) != 0)
                out->note = why(proc, "write \"4\" (TLB flush) to", path, err,
                                "accesses through cached translations may be missed");
        }
    }
    if (what & MEMDIFF__REFS_PEAK) {
        err = write_clear_refs(proc, "5", path, sizeof path);
        if (err) {
            rc = refused(proc, err, path, &out->peak_why,
                         err == EINVAL ? "resetting the peak (\"5\") needs Linux 4.0" : NULL);
            if (rc)
                return rc;
        } else {
            out->done |= MEMDIFF__REFS_PEAK;
        }
    }
    if (what & MEMDIFF__REFS_PAGES) {
        if (!(out->done & MEMDIFF__REFS_CLEAR))
            out->pages_why = "page_idle is not used without clear_refs";
        else if ((rc = mark_idle(proc, out)) != 0)
            return rc;
    }
    return MEMDIFF_OK;
}

/* ---- peak --------------------------------------------------------------------------------- */

int memdiff__plat_refs_peak(memdiff__proc *proc, uint64_t *peak, uint64_t *rss)
{
    /* Stack storage: the peak must be read before anything of the reading itself is resident.
     * VmHWM and VmRSS come in the first kilobyte of status (proc.rst, "status"). */
    char path[PATH_MAX], buf[4096];
    *peak = *rss = 0;
    int rc = memdiff__linux_path(path, sizeof path, proc->dir, "status");
    if (rc)
        return rc;
    ssize_t n = memdiff__linux_read_small(path, buf, sizeof buf);
    if (n < 0) {
        if (!memdiff__linux_alive(proc))
            return memdiff__set_error(MEMDIFF_ESRCH, "read %s: the process has exited", path);
        return memdiff__linux_fail((int)-n, "read", path);
    }
    *peak = memdiff__linux_status_field(buf, (size_t)n, "VmHWM", 10) * 1024;
    *rss = memdiff__linux_status_field(buf, (size_t)n, "VmRSS", 10) * 1024;
    if (*peak == 0 && *rss == 0)
        return memdiff__set_error(MEMDIFF_ENOTSUP, "%s has no VmHWM / VmRSS", path);
    return MEMDIFF_OK;
}
