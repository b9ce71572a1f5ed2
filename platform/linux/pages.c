/*
 * pages.c - page runs of a range from pagemap, PAGEMAP_SCAN, kpageflags and kpagecount
 * (Documentation/admin-guide/mm/pagemap.rst).
 *
 * What each source costs decides the paths (measured: docs/performance.md). The kernel computes a
 * pagemap entry from the page table entry and the page's struct page (exclusivity, file or anon):
 * tens of ns per present page, a cache miss on struct page each. PAGEMAP_SCAN reads the page
 * table alone, a few ns per page, unless asked for PAGE_IS_FILE, which costs it the struct page
 * too. Hence:
 *  - fast with PAGEMAP_SCAN (Linux 6.7): the kernel returns ranges of present or swapped pages
 *    with their categories; no per-page data crosses to user space. The file bit is asked of the
 *    kernel only in private file mappings, where copy-on-write makes it differ page by page: in
 *    private anonymous memory no page is a file page, in shared memory every page is.
 *  - standard / deep: pagemap in batches, with no scan ahead of it while the pages are dense.
 *    Where a batch turns out sparse, PAGEMAP_SCAN finds the next present pages and pagemap is
 *    read only around them (huge sparse reservations, AddressSanitizer's shadow: terabytes,
 *    mostly empty, cost a few ioctls instead of gigabytes of pagemap); where the scan meets dense
 *    pages again, plain batches resume. Zero and huge pages, which pagemap does not flag, come
 *    from the scan: with frame numbers (root), only where the frames could be a huge page's (512
 *    consecutive, aligned frames) or the zero page is known by its frame; without, the scan asks
 *    the page table for just those two categories, in a batch with a page pagemap does not call
 *    exclusively mapped anonymous memory, or wherever /proc/meminfo says the system may have
 *    PMD-mapped anonymous memory or hugetlb pages (pmd_free).
 *  - without the scan (older kernels, a scan refused with EINVAL, fixture files): pagemap in
 *    batches over the whole range.
 * Deep adds kpageflags and kpagecount, read per span of nearby frames after sorting a batch's
 * runs of consecutive frames into buffers that hold the whole batch; the facts go to the sink as
 * pieces pointing there (one per run of frames, or one value for all its pages), never copied
 * page by page. kpagecount is not read where pagemap already said the count is 1 (small pages
 * exclusively mapped: most of a process's private memory), which halves deep's reads there. No
 * path makes a syscall per page.
 */
#include <errno.h>
#include <string.h>

#include "linux.h"

/* kpageflags bits (include/uapi/linux/kernel-page-flags.h; pagemap.rst "kpageflags"). */
#define KPF_REFERENCED 2
#define KPF_DIRTY 4
#define KPF_ACTIVE 6
#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16
#define KPF_HUGE 17
#define KPF_KSM 21
#define KPF_THP 22
#define KPF_ZERO_PAGE 24

/* Frames at most this far apart share one pread of kpageflags / kpagecount. An entry costs the
 * kernel about half a syscall to produce (stable_page_flags: ~70 ns against ~125 ns of syscall
 * on the test machine), so only the smallest holes are worth reading through. */
#define FRAME_GAP 2u

/* The read buffers hold FACT_ROOM entries a page of the batch: its frames, and as many again
 * read through holes between them (FRAME_GAP), while that room lasts. */
#define FACT_ROOM 2u
/* A segment's flags: its frames run down from its first page (else up); its pages have one
 * kernel flags word, one map count (place_facts); pagemap calls them exclusively mapped; their
 * map count is 1 without reading kpagecount (frame_facts). */
#define SEG_DOWN 1u
#define SEG_SAME_FLAGS 2u
#define SEG_SAME_COUNT 4u
#define SEG_EXCLUSIVE 8u
#define SEG_ONE_MAP 16u

/* Pages of a large folio (compound: THP, mTHP, hugetlb): their map count is not the one
 * pagemap's exclusive bit was decided on in every kernel configuration (see one_map). */
#define KPF_LARGE                                                                           \
    (UINT64_C(1) << KPF_COMPOUND_HEAD | UINT64_C(1) << KPF_COMPOUND_TAIL |                 \
     UINT64_C(1) << KPF_HUGE | UINT64_C(1) << KPF_THP)

/* A batch with fewer present or swapped pages than 1/SPARSE_DIVISOR of it hands the walk to
 * the scan; a scan that finds at least half of its stretch present hands it back to pagemap. */
#define SPARSE_DIVISOR 8u

/* frame_facts sorts keys frame << SEG_BITS | segment index: a batch holds 2^SEG_BITS pages at
 * most, and frames from 2^(63 - SEG_BITS) on (far beyond any machine's) are not looked up. */
#define SEG_BITS 18
#define SEG_MASK ((UINT64_C(1) << SEG_BITS) - 1)
_Static_assert(MEMDIFF__LINUX_BATCH <= (1u << SEG_BITS) &&
                   MEMDIFF__LINUX_DEEP_BATCH <= (1u << SEG_BITS),
               "frame_facts packs a batch index in SEG_BITS bits");

#define RESIDENT (MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_SWAPPED)
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define PM_TABLE_SHIFT 55 /* pagemap bits 55-63: the flags, as a table index */

/* Whom to believe about MEMDIFF_PAGE_FILE in a region, from its mapping (see the top). */
typedef enum file_rule { FILE_ASK = 0, FILE_NEVER, FILE_ALWAYS } file_rule;

typedef struct walker {
    memdiff__proc *proc;
    const memdiff__page_sink *sink;
    int pfn;        /* deliver frame numbers */
    int deep;       /* deliver kernel page flags and map counts */
    int fast;       /* fast depth: no exclusivity, no soft-dirty, as PAGEMAP_SCAN gives it */
    size_t batch;   /* pages a batch (MEMDIFF__LINUX_BATCH, _DEEP_BATCH at deep) */
    file_rule file;
    const unsigned *table; /* attrs of pagemap bits 55-63 (build_table) */
    /* The pending run: pages [start, start + n) with attrs, arrays at index off. It stays open
     * across batches so that runs come out whole; its array entries move to index 0. */
    int pending;
    uint64_t start, n;
    unsigned attrs;
    size_t off;
    /* Frames as stretches (sink->run_frames): standard depth with frame numbers, where nothing
     * else needs the batch page by page. pending_fs: the pending run's frames are p->fs[0..nfs),
     * not array entries. */
    int stretches;
    int pending_fs;
    size_t nfs;
    size_t nseg; /* deep: segments of the batch in p->segs (add_segments) */
    /* Short runs gathered for sink->run_bits (gather): g_runs runs with g_attrs in pages
     * [g_start, g_start + g_n pages), the last one ending there; their pages' bits set in
     * p->gather_bits, their frames (w->pfn) p->gather_pfn[0..g_set). */
    int gather;
    uint64_t g_start, g_n, g_set;
    unsigned g_attrs;
    size_t g_runs;
} walker;

/* Where memory is fragmented (every other page resident, a file mapped in scattered pages),
 * a call a run to the sink costs more than the run: runs of up to GATHER_RUN_MAX pages, no
 * more than GATHER_GAP_MAX pages apart and with the same attrs, go to the sink together as a
 * bitmap of up to MEMDIFF__LINUX_GATHER pages (sink->run_bits). The two limits add up to the
 * core's bitmap step (runs.c, BITMAP_STEP), so that its bitmap takes them whole. */
#define GATHER_RUN_MAX 64u
#define GATHER_GAP_MAX 192u

/* The pending run to the sink. */
static int deliver(walker *w)
{
    memdiff__proc *p = w->proc;
    if (w->pending_fs)
        return w->sink->run_frames(w->sink->ctx, w->start, w->n, w->attrs, p->fs, w->nfs, NULL, 0,
                                   NULL, 0);
    return w->sink->run(w->sink->ctx, w->start, w->n, w->attrs, w->pfn ? p->pfn + w->off : NULL);
}

/* The gathered runs to the sink: one alone as a run, more as a bitmap. */
static int deliver_gathered(walker *w)
{
    if (!w->g_n)
        return MEMDIFF_OK;
    memdiff__proc *p = w->proc;
    const uint64_t n = w->g_n;
    const uint64_t *pfn = w->pfn ? p->gather_pfn : NULL;
    w->g_n = 0;
    int rc = w->g_runs == 1
                 ? w->sink->run(w->sink->ctx, w->g_start, n, w->g_attrs, pfn)
                 : w->sink->run_bits(w->sink->ctx, w->g_start, n, w->g_attrs, p->gather_bits, pfn);
    memset(p->gather_bits, 0, (size_t)(n + 63) / 64 * sizeof *p->gather_bits);
    return rc;
}

/* Whether pages [addr, addr + n pages) with attrs join the gathered runs: some are gathered,
 * with these attrs, and the pages come after them (not adjacent: a run in a bitmap ends before
 * a page not in it), not too far, inside the bitmap's span. */
static int gather_joins(const walker *w, uint64_t addr, uint64_t n, unsigned attrs)
{
    const unsigned shift = w->proc->page_shift;
    const uint64_t end = w->g_start + (w->g_n << shift);
    return w->g_n && attrs == w->g_attrs && addr > end &&
           ((addr - end) >> shift) <= GATHER_GAP_MAX &&
           ((addr - w->g_start) >> shift) + n <= MEMDIFF__LINUX_GATHER;
}

/* Pages [addr, addr + n pages) join the gathered runs (their frames are the caller's to copy). */
static void gather_pages(walker *w, uint64_t addr, uint64_t n)
{
    const uint64_t at = (addr - w->g_start) >> w->proc->page_shift;
    memdiff__set_bits(w->proc->gather_bits, at, n);
    w->g_set += n;
    w->g_n = at + n;
    w->g_runs++;
}

/* The pending run (short) joins the gathered ones, which go to the sink first when it cannot
 * (gather_joins). Its frames are copied: the pending run's may point into the batch. */
static int gather(walker *w)
{
    memdiff__proc *p = w->proc;
    if (w->g_n && !gather_joins(w, w->start, w->n, w->attrs)) {
        int rc = deliver_gathered(w);
        if (rc)
            return rc;
    }
    if (!w->g_n) {
        w->g_start = w->start;
        w->g_attrs = w->attrs;
        w->g_runs = 0;
        w->g_set = 0;
    }
    if (w->pfn) {
        uint64_t *dst = p->gather_pfn + w->g_set;
        if (!w->pending_fs) {
            memcpy(dst, p->pfn + w->off, w->n * sizeof *dst);
        } else {
            for (size_t k = 0; k < w->nfs; k++) {
                const memdiff__values *v = &p->fs[k];
                for (uint64_t i = 0; i < v->count; i++)
                    *dst++ = v->values ? v->values[(int64_t)i * v->step]
                                       : v->first + (uint64_t)v->step * i;
            }
        }
    }
    gather_pages(w, w->start, w->n);
    return MEMDIFF_OK;
}

/* Delivers the pending run: gathered, when short and the sink takes bitmaps, else after the
 * gathered ones. */
static int flush(walker *w)
{
    if (!w->pending)
        return MEMDIFF_OK;
    w->pending = 0;
    if (w->gather && w->n <= GATHER_RUN_MAX)
        return gather(w);
    int rc = deliver_gathered(w);
    return rc ? rc : deliver(w);
}

/* Delivers the pending run and opens one of pages [addr, addr + n) with attrs: its frames as
 * stretches (fs), or array entries from index idx. */
static int open_run(walker *w, uint64_t addr, uint64_t n, unsigned attrs, int fs, size_t idx)
{
    int rc = flush(w);
    if (rc)
        return rc;
    w->pending = 1;
    w->pending_fs = fs;
    w->start = addr;
    w->n = n;
    w->attrs = attrs;
    w->off = idx;
    return MEMDIFF_OK;
}

/* Pages [addr, addr + n) with attrs whose frames are first, first + step, ... or, when values
 * is not NULL, values[0..n) (stretch mode). */
static int feed_frames(walker *w, uint64_t addr, uint64_t n, unsigned attrs, uint64_t first,
                       uint64_t step, const uint64_t *values)
{
    memdiff__proc *p = w->proc;
    if (!(attrs & RESIDENT))
        return flush(w);
    memdiff__values piece = {first, (int64_t)step, n, values};
    if (w->pending && w->pending_fs && w->attrs == attrs &&
        w->start + w->n * p->page_size == addr) {
        memdiff__values *last = &p->fs[w->nfs - 1];
        if (values ? last->values && last->values + last->count == values
                   : !last->values && (uint64_t)last->step == step &&
                         last->first + step * last->count == first) {
            last->count += n;
            w->n += n;
            return MEMDIFF_OK;
        }
        if (w->nfs < MEMDIFF__LINUX_FS) {
            p->fs[w->nfs++] = piece;
            w->n += n;
            return MEMDIFF_OK;
        }
    }
    int rc = open_run(w, addr, n, attrs, 1, 0);
    if (rc)
        return rc;
    p->fs[0] = piece;
    w->nfs = 1;
    return MEMDIFF_OK;
}

/* Pages [addr, addr + n) with attrs and (when arrays are delivered) entries from index idx. */
static int feed(walker *w, uint64_t addr, uint64_t n, unsigned attrs, size_t idx)
{
    uint64_t ps = w->proc->page_size;
    if (!(attrs & RESIDENT))
        return flush(w);
    if (w->pending && !w->pending_fs && w->attrs == attrs && w->start + w->n * ps == addr &&
        (!(w->pfn || w->deep) || w->off + w->n == idx)) {
        w->n += n;
        return MEMDIFF_OK;
    }
    return open_run(w, addr, n, attrs, 0, idx);
}

/* Moves the pending run's array entries to index 0 so that the next batch can extend it. */
static void carry(walker *w)
{
    memdiff__proc *p = w->proc;
    if (!w->pending || w->pending_fs || w->off == 0 || !w->pfn)
        return;
    memmove(p->pfn, p->pfn + w->off, w->n * sizeof *p->pfn);
    w->off = 0;
}

static int alloc_u64(memdiff__proc *p, uint64_t **slot, size_t count)
{
    if (!*slot) {
        *slot = memdiff__arena_alloc_raw(p->scratch, count * sizeof **slot);
        if (!*slot)
            return MEMDIFF_ENOMEM;
    }
    return MEMDIFF_OK;
}

static int buffers(walker *w, int scan)
{
    memdiff__proc *p = w->proc;
    const size_t B = w->batch;
    if (scan && !p->vec) {
        p->vec = memdiff__arena_alloc_raw(p->scratch, MEMDIFF__LINUX_SCAN_VEC * sizeof *p->vec);
        if (!p->vec)
            return MEMDIFF_ENOMEM;
    }
    if (w->gather && !p->gather_bits &&
        !(p->gather_bits =
              memdiff__arena_alloc(p->scratch, MEMDIFF__LINUX_GATHER / 64 * sizeof(uint64_t))))
        return MEMDIFF_ENOMEM;
    if (w->gather && w->pfn && alloc_u64(p, &p->gather_pfn, MEMDIFF__LINUX_GATHER))
        return MEMDIFF_ENOMEM;
    if (scan && w->fast)
        return MEMDIFF_OK;
    if (w->stretches && !p->fs) {
        p->fs = memdiff__arena_alloc_raw(p->scratch, MEMDIFF__LINUX_FS * sizeof *p->fs);
        if (!p->fs)
            return MEMDIFF_ENOMEM;
    }
    if (p->batch_cap < B) {
        /* First use, or a deeper walk than before on this proc: buffers of a batch's size
         * (the smaller ones stay in the scratch arena until it is released). */
        p->pm = p->pfn = NULL;
        p->frames = p->frame_tmp = p->frame_flags = p->frame_counts = NULL;
        p->attrs = NULL;
        p->segs = NULL;
        p->batch_cap = B;
    }
    if (!p->attrs) {
        p->attrs = memdiff__arena_alloc_raw(p->scratch, B * sizeof *p->attrs);
        if (!p->attrs)
            return MEMDIFF_ENOMEM;
    }
    int rc = alloc_u64(p, &p->pm, B);
    if (!rc && w->pfn)
        p->pfn = p->pm; /* decode() turns entries into frames in place */
    if (!rc && w->deep && !p->frames) {
        /* Deep's arrays as one block, about 1 MiB at 16K pages a batch: the sort keys and their
         * scratch, the segments, the read buffers (room for a batch of frames and as many
         * entries again read through holes) and the pieces of one run. */
        size_t bytes = (2 * sizeof(uint64_t) + sizeof *p->segs + 2 * FACT_ROOM * sizeof(uint64_t)) *
                           B +
                       3 * MEMDIFF__LINUX_FS * sizeof *p->kp;
        uint64_t *block = memdiff__arena_alloc_raw(p->scratch, bytes);
        if (!block)
            return MEMDIFF_ENOMEM;
        p->frames = block;
        p->frame_tmp = block + B;
        p->frame_flags = block + 2 * B;
        p->frame_counts = p->frame_flags + FACT_ROOM * B;
        p->segs = (struct memdiff__linux_seg *)(p->frame_counts + FACT_ROOM * B);
        p->kp = (memdiff__values *)(p->segs + B);
        p->mp = p->kp + MEMDIFF__LINUX_FS;
        p->fp = p->mp + MEMDIFF__LINUX_FS;
    }
    return rc;
}

/* ---- the regions' file rule -------------------------------------------------------------- */

static int anon_shared_name(const memdiff__plat_region *r)
{
    return r->hint == MEMDIFF__HINT_SYSV_SHM || r->hint == MEMDIFF__HINT_MEMFD ||
           r->hint == MEMDIFF__HINT_ANON_NAME ||
           ((r->flags & MEMDIFF__RF_DELETED) && strcmp(r->path, "/dev/zero") == 0);
}

/* The index of the region of the list memdiff__plat_regions read that holds [start, end)
 * (start alone when end is start), or region_count when no one region does. */
static size_t region_holding(const memdiff__proc *p, uint64_t start, uint64_t end)
{
    size_t lo = 0, hi = p->region_count;
    while (lo < hi) { /* the first region that ends above start */
        size_t mid = lo + (hi - lo) / 2;
        if (p->regions[mid].end <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->region_count && p->regions[lo].start <= start && p->regions[lo].end >= end
               ? lo
               : p->region_count;
}

/* The rule for [start, end), from the region list memdiff__plat_regions read (FILE_ASK when
 * there is none, or the range is not inside one region). Device mappings (VM_PFNMAP) have pages
 * without a struct page, which pagemap does not call file pages: only shared memory the kernel
 * names as such is FILE_ALWAYS. */
static file_rule region_file_rule(const memdiff__proc *p, uint64_t start, uint64_t end)
{
    size_t lo = region_holding(p, start, end);
    if (lo == p->region_count)
        return FILE_ASK;
    const memdiff__plat_region *r = &p->regions[lo];
    if (r->flags & MEMDIFF_REGION_SHARED)
        return anon_shared_name(r) ? FILE_ALWAYS : FILE_ASK;
    if (r->inode != 0)
        return FILE_ASK;
    switch (r->hint) {
    case MEMDIFF__HINT_NONE:
    case MEMDIFF__HINT_BRK_HEAP:
    case MEMDIFF__HINT_MAIN_STACK:
    case MEMDIFF__HINT_ANON_NAME:
        return FILE_NEVER;
    default:
        return FILE_ASK; /* vdso, vvar, vsyscall, other special mappings */
    }
}

/* ---- PAGEMAP_SCAN ------------------------------------------------------------------------ */

/* A scan the kernel refused as a whole (EINVAL, ENOTTY: a kernel without this use of it): the
 * pagemap path takes over, for this and every later range of the process. */
static int scan_refused(int e)
{
    return e == EINVAL || e == ENOTTY || e == EOPNOTSUPP;
}

/* One PAGEMAP_SCAN call over [start, end) into vec. Returns the number of ranges (at most cap,
 * well-formed, inside the request and ascending) with *next set to where the following call
 * starts, or -errno. scan_once: into p->vec. */
static int scan_into(memdiff__proc *p, struct page_region *vec, size_t cap, uint64_t start,
                     uint64_t end, uint64_t anyof, uint64_t ret, uint64_t max_pages,
                     uint64_t *next)
{
    struct pm_scan_arg arg;
    int n;
    if (p->scan_refuse_at && --p->scan_refuse_at == 0)
        return -EINVAL;
    do {
        memset(&arg, 0, sizeof arg);
        arg.size = sizeof arg;
        arg.start = start;
        arg.end = end;
        arg.vec = (uint64_t)(uintptr_t)vec;
        arg.vec_len = cap;
        arg.max_pages = max_pages;
        arg.category_anyof_mask = anyof;
        arg.return_mask = ret;
        n = ioctl(p->pagemap_fd, PAGEMAP_SCAN, &arg);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    if ((size_t)n > cap)
        n = (int)cap;
    /* Keep only well-formed ranges inside the request, in order: the kernel's answer decides
     * how far the next call starts, so it must not move us backwards. */
    size_t k = 0;
    uint64_t floor = start;
    for (int i = 0; i < n; i++) {
        struct page_region r = vec[i];
        if (r.start < floor)
            r.start = floor;
        if (r.end > end)
            r.end = end;
        if (r.start >= r.end || ((r.start | r.end) & (p->page_size - 1)))
            continue;
        vec[k++] = r;
        floor = r.end;
    }
    /* When one call fills the vector (or max_pages), walk_end is where the kernel stopped; but
     * it has been seen pointing behind ranges it already returned (it is kept from an earlier
     * internal pass). Never go back over what was returned. */
    uint64_t to = arg.walk_end;
    if (k > 0 && vec[k - 1].end > to)
        to = vec[k - 1].end;
    if (n == 0 || to <= start || to > end)
        to = end;
    *next = to;
    return (int)k;
}

static int scan_once(memdiff__proc *p, uint64_t start, uint64_t end, uint64_t anyof,
                     uint64_t ret, uint64_t max_pages, uint64_t *next)
{
    return scan_into(p, p->vec, MEMDIFF__LINUX_SCAN_VEC, start, end, anyof, ret, max_pages, next);
}

static int scan_error(const memdiff__proc *p, int e, uint64_t start, uint64_t end)
{
    return memdiff__set_error(memdiff__linux_status(e), "PAGEMAP_SCAN %s/pagemap 0x%llx-0x%llx: %s",
                              p->dir, (unsigned long long)start, (unsigned long long)end,
                              memdiff__linux_errno_text(e));
}

/* A scan over [start, end) that failed with n (-errno): MEMDIFF_OK when the caller is to go on
 * without it, because the kernel refused the scan (EINVAL, ENOTTY, EOPNOTSUPP: off for the
 * process from then on) or this range (EFAULT, above what access_ok() takes: pagemap answers
 * there); else the error's status. */
static int scan_failure(memdiff__proc *p, int n, uint64_t start, uint64_t end)
{
    if (-n != EFAULT && !scan_refused(-n))
        return scan_error(p, -n, start, end);
    p->scan_off = p->scan_off || scan_refused(-n);
    return MEMDIFF_OK;
}

static unsigned scan_attrs(uint64_t categories)
{
    unsigned a = 0;
    if (categories & PAGE_IS_PRESENT)
        a |= MEMDIFF_PAGE_PRESENT;
    if (categories & PAGE_IS_SWAPPED)
        a |= MEMDIFF_PAGE_SWAPPED;
    if (categories & PAGE_IS_FILE)
        a |= MEMDIFF_PAGE_FILE;
    if (categories & PAGE_IS_PFNZERO)
        a |= MEMDIFF_PAGE_ZERO;
    if (categories & PAGE_IS_HUGE)
        a |= MEMDIFF_PAGE_HUGE;
    return a;
}

/* ORs the zero / huge attributes of ranges[0..n) into attrs[] of the pages [addr, addr + count
 * pages) (attrs[0] is addr's). Ranges outside are ignored. */
static void mark_extras(walker *w, const struct page_region *r, size_t n, uint64_t addr,
                        size_t count, unsigned *attrs)
{
    unsigned shift = w->proc->page_shift;
    uint64_t end = addr + ((uint64_t)count << shift);
    for (size_t i = 0; i < n; i++) {
        unsigned extra = scan_attrs(r[i].categories) & (MEMDIFF_PAGE_ZERO | MEMDIFF_PAGE_HUGE);
        uint64_t lo = MAX(r[i].start, addr), hi = MIN(r[i].end, end);
        if (!extra || lo >= hi)
            continue;
        for (size_t k = (size_t)((lo - addr) >> shift); k < (size_t)((hi - addr) >> shift); k++)
            if (attrs[k] & MEMDIFF_PAGE_PRESENT)
                attrs[k] |= extra;
    }
}

/* Asks the scan which pages of [addr, addr + count pages) are zero or huge pages and marks them
 * in attrs[] (attrs[0] is addr's). A refused scan marks nothing: the kernel has no scan for us. */
static int scan_extras(walker *w, uint64_t addr, size_t count, unsigned *attrs)
{
    memdiff__proc *p = w->proc;
    if (p->scan_off)
        return MEMDIFF_OK;
    uint64_t cur = addr, end = addr + ((uint64_t)count << p->page_shift);
    const uint64_t mask = PAGE_IS_PFNZERO | PAGE_IS_HUGE;
    while (cur < end) {
        uint64_t next;
        int n = scan_once(p, cur, end, mask, mask, 0, &next);
        if (n < 0)
            return scan_failure(p, n, cur, end); /* without the scan: nothing to mark */
        mark_extras(w, p->vec, (size_t)n, addr, count, attrs);
        cur = next;
    }
    return MEMDIFF_OK;
}

/* With frame numbers: a page table entry at the PMD level (a transparent huge page, a 2 MiB
 * hugetlb page) maps frames that are consecutive and aligned to the PMD's span, so only pages
 * whose frames are could be huge. Those stretches, usually none in memory of small pages, are
 * asked of the scan. pfn[] and attrs[] are the batch's, from index 0 for page addr. */
static int scan_huge_candidates(walker *w, uint64_t addr, size_t count, const uint64_t *pfn,
                                unsigned *attrs)
{
    memdiff__proc *p = w->proc;
    const uint64_t per = p->page_size / 8; /* entries of a page table page: pages per PMD */
    uint64_t vpage = addr >> p->page_shift;
    size_t i = 0, lo = 0, hi = 0; /* candidates [lo, hi) not yet asked about */
    while (i < count) {
        size_t j = (size_t)MIN((uint64_t)count, i + (per - ((vpage + i) & (per - 1))));
        uint64_t base = pfn[i] - ((vpage + i) & (per - 1));
        int cand = (attrs[i] & MEMDIFF_PAGE_PRESENT) && pfn[i] && !(base & (per - 1));
        for (size_t k = i + 1; cand && k < j; k++)
            cand = (attrs[k] & MEMDIFF_PAGE_PRESENT) && pfn[k] - ((vpage + k) & (per - 1)) == base;
        if (cand) {
            if (hi != i) {
                int rc = hi > lo ? scan_extras(w, addr + ((uint64_t)lo << p->page_shift), hi - lo,
                                               attrs + lo)
                                 : MEMDIFF_OK;
                if (rc)
                    return rc;
                lo = i;
            }
            hi = j;
        }
        i = j;
    }
    return hi > lo ? scan_extras(w, addr + ((uint64_t)lo << p->page_shift), hi - lo, attrs + lo)
                   : MEMDIFF_OK;
}

/* Stretch mode's way to the zero and huge pages of [addr, addr + count pages), for a batch
 * where maybe_huge() saw a candidate: the scan's ranges (in p->vec), whose attributes
 * decode_frames() gives the stretches inside them, so that the batch is not decoded page by page
 * (a transparent huge page is a stretch of 512 frames). 1 when one call covered the batch (a
 * refused scan covers it with no range), 0 when the ranges did not fit in the vector (the caller
 * then decodes page by page), or a negative status. */
static int scan_batch_extras(walker *w, uint64_t addr, size_t count,
                             const struct page_region **r, size_t *nr)
{
    memdiff__proc *p = w->proc;
    *r = p->vec;
    *nr = 0;
    if (p->scan_off)
        return 1;
    const uint64_t end = addr + ((uint64_t)count << p->page_shift);
    const uint64_t mask = PAGE_IS_PFNZERO | PAGE_IS_HUGE;
    uint64_t next;
    int n = scan_once(p, addr, end, mask, mask, 0, &next);
    if (n < 0) {
        int rc = scan_failure(p, n, addr, end);
        return rc ? rc : 1;
    }
    *nr = (size_t)n;
    return next >= end;
}

/* ---- deep: frame facts ------------------------------------------------------------------- */

uint64_t *memdiff__linux_radix_sort(uint64_t *a, uint64_t *tmp, size_t n, unsigned from)
{
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++)
        max |= a[i];
    uint32_t count[2048];
    for (unsigned shift = from; shift < 64 && (max >> shift); shift += 11) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++)
            count[(a[i] >> shift) & 2047]++;
        uint32_t sum = 0;
        for (size_t d = 0; d < 2048; d++) {
            uint32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp[count[(a[i] >> shift) & 2047]++] = a[i];
        uint64_t *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

static unsigned kpf_attrs(uint64_t f)
{
    unsigned a = 0;
    if (f >> KPF_REFERENCED & 1)
        a |= MEMDIFF_PAGE_REFERENCED;
    if (f >> KPF_DIRTY & 1)
        a |= MEMDIFF_PAGE_DIRTY;
    if (f >> KPF_ACTIVE & 1)
        a |= MEMDIFF_PAGE_ACTIVE;
    if ((f >> KPF_HUGE & 1) || (f >> KPF_THP & 1))
        a |= MEMDIFF_PAGE_HUGE;
    if (f >> KPF_KSM & 1)
        a |= MEMDIFF_PAGE_KSM;
    if (f >> KPF_ZERO_PAGE & 1)
        a |= MEMDIFF_PAGE_ZERO;
    return a;
}

/* Reads entries [first, first + count) of kpageflags (k 0) or kpagecount (k 1) into out; entries
 * past the end of the file (beyond max_pfn) read as 0. */
static int read_facts(memdiff__proc *p, int k, uint64_t *out, uint64_t first, size_t count)
{
    static const char *const names[2] = {"kpageflags", "kpagecount"};
    int fd = k ? p->kpagecount_fd : p->kpageflags_fd;
    ssize_t r = memdiff__linux_pread_full(fd, out, count * 8, first * 8);
    if (r < 0)
        return memdiff__set_error(memdiff__linux_status((int)-r), "read %s/%s: %s", p->proc_root,
                                  names[k], memdiff__linux_errno_text((int)-r));
    size_t got = (size_t)r / 8;
    if (got < count)
        memset(out + got, 0, (count - got) * 8);
    return MEMDIFF_OK;
}

/* Deep depth: the pages [i, j) of the batch, a stretch whose frames go from f by step
 * (decode's), become segments for frame_facts: runs of consecutive frames, up or down, in page
 * order. Pages without a frame to ask about get no segment (their facts are 0). Returns the new
 * count. */
static size_t add_segments(walker *w, size_t i, size_t j, unsigned a, uint64_t f, uint64_t step,
                           size_t m)
{
    memdiff__proc *p = w->proc;
    const uint64_t limit = UINT64_C(1) << (63 - SEG_BITS); /* frames a key holds */
    uint64_t len = j - i, low = step == 1 ? f : f - (step ? len - 1 : 0);
    if (!(a & MEMDIFF_PAGE_PRESENT))
        return m;
    if (low == 0 || f + (step == 1 ? len - 1 : 0) >= limit) {
        if (len == 1) /* frame 0, or beyond what a key holds: nothing to ask about */
            return m;
        for (size_t k = i; k < j; k++, f += step) /* page by page */
            m = add_segments(w, k, k + 1, a, f, 1, m);
        return m;
    }
    if (step == 0) { /* one frame again and again (the zero page): a segment a page */
        for (size_t k = i; k < j; k++) {
            p->segs[m] = (struct memdiff__linux_seg){(uint32_t)k, 1, 0, 0};
            p->frames[m] = f << SEG_BITS | m;
            m++;
        }
        return m;
    }
    unsigned flags = (step != 1 && len > 1 ? SEG_DOWN : 0u) |
                     (a & MEMDIFF_PAGE_PRIVATE ? SEG_EXCLUSIVE : 0u);
    p->segs[m] = (struct memdiff__linux_seg){(uint32_t)i, (uint32_t)len, flags, 0};
    p->frames[m] = low << SEG_BITS | m;
    return m + 1;
}

/* The facts of segment g's page k (from its first), in the read buffer buf. */
static uint64_t seg_value(const uint64_t *buf, const struct memdiff__linux_seg *g, size_t k)
{
    return buf[g->off + ((g->flags & SEG_DOWN) ? g->len - 1 - k : k)];
}

/* After segment g's kernel flags were read (kf, one a page): whether its pages have one flags
 * word, and whether their map count is known without kpagecount. It is where pagemap called the
 * pages exclusively mapped and they are small pages: pagemap sets that bit where the page's own
 * map count is 1 (page_mapcount() == 1 since Linux 4.2, later folio_precise_page_mapcount()),
 * and that count is what kpagecount reports. For the pages of a large folio the two may differ:
 * older kernels decided the bit for a whole PMD on its head page, and kernels built without
 * CONFIG_PAGE_MAPCOUNT report the folio's average count and set the bit where the folio is not
 * maybe shared. */
static void flag_facts(struct memdiff__linux_seg *g, const uint64_t *kf)
{
    uint64_t f0 = kf[0], diff = 0, any = f0;
    for (size_t k = 1; k < g->len; k++) {
        diff |= kf[k] ^ f0;
        any |= kf[k];
    }
    g->flags |= diff ? 0u : SEG_SAME_FLAGS;
    if ((g->flags & SEG_EXCLUSIVE) && !(any & KPF_LARGE))
        g->flags |= SEG_ONE_MAP | SEG_SAME_COUNT;
}

/* Reads kpagecount for the segments keys[0..n), sorted by frame, whose kernel flags one pread
 * read to frame_flags from index used on (frames from lo): those flag_facts did not find mapped
 * once, per span of nearby frames, each count to where its frame's flags are. */
static int read_counts(memdiff__proc *p, const uint64_t *keys, size_t n, size_t used, uint64_t lo)
{
    uint64_t clo = 0, chi = 0;
    int open = 0;
    for (size_t u = 0; u <= n; u++) {
        const struct memdiff__linux_seg *g = u < n ? &p->segs[keys[u] & SEG_MASK] : NULL;
        if (g && (g->flags & SEG_ONE_MAP))
            continue;
        uint64_t f = g ? keys[u] >> SEG_BITS : 0;
        if (g && open && f <= chi + FRAME_GAP) {
            chi = MAX(chi, f + g->len);
            continue;
        }
        if (open) {
            int rc = read_facts(p, 1, p->frame_counts + used + (clo - lo), clo, (size_t)(chi - clo));
            if (rc)
                return rc;
        }
        open = g != NULL;
        clo = f;
        chi = g ? f + g->len : 0;
    }
    return MEMDIFF_OK;
}

/* After the reads: merges each segment's kernel flags into its pages' attrs and notes which
 * segments have one map count for all their pages (one piece each later). */
static void place_facts(memdiff__proc *p, size_t m)
{
    const uint64_t *ff = p->frame_flags, *fc = p->frame_counts;
    for (size_t u = 0; u < m; u++) {
        struct memdiff__linux_seg *g = &p->segs[u];
        unsigned *attrs = p->attrs + g->page;
        size_t len = g->len;
        if (!(g->flags & SEG_SAME_COUNT)) {
            const uint64_t *mc = fc + g->off;
            uint64_t c0 = mc[0], cdiff = 0;
            for (size_t k = 1; k < len; k++)
                cdiff |= mc[k] ^ c0;
            g->flags |= cdiff ? 0u : SEG_SAME_COUNT;
        }
        if (g->flags & SEG_SAME_FLAGS) {
            unsigned a = kpf_attrs(ff[g->off]);
            for (size_t k = 0; k < len; k++)
                attrs[k] |= a;
            continue;
        }
        uint64_t last = seg_value(ff, g, 0); /* neighbouring pages mostly share their flags */
        unsigned a = kpf_attrs(last);
        for (size_t k = 0; k < len; k++) {
            uint64_t v = seg_value(ff, g, k);
            if (v != last) {
                last = v;
                a = kpf_attrs(v);
            }
            attrs[k] |= a;
        }
    }
}

/* Reads kpageflags and kpagecount for the batch's segments (w->nseg, from decode()) and merges
 * the flags into attrs: the segments sorted by their lowest frame, neighbouring ones share a
 * pread of each file, into read buffers that hold the whole batch; kpagecount is read only where
 * pagemap and the flags leave the count open (flag_facts). */
static int frame_facts(walker *w)
{
    memdiff__proc *p = w->proc;
    size_t m = w->nseg;
    if (m == 0)
        return MEMDIFF_OK;
    /* By frame alone: the index below it only breaks ties, which a stable sort of keys made in
     * index order breaks the same way (two of the four passes). */
    const uint64_t *keys = memdiff__linux_radix_sort(p->frames, p->frame_tmp, m, SEG_BITS);
    /* Room: every segment's frames, and what is left of it for holes read through. */
    size_t need = 0;
    for (size_t u = 0; u < m; u++)
        need += p->segs[u].len;
    size_t room = (size_t)FACT_ROOM * w->batch - need, used = 0, s = 0;
    while (s < m) {
        const struct memdiff__linux_seg *g = &p->segs[keys[s] & SEG_MASK];
        uint64_t lo = keys[s] >> SEG_BITS, hi = lo + g->len;
        size_t t = s + 1;
        while (t < m) {
            uint64_t f = keys[t] >> SEG_BITS, e = f + p->segs[keys[t] & SEG_MASK].len;
            if (f > hi + FRAME_GAP || (f > hi && f - hi > room))
                break;
            if (f > hi)
                room -= (size_t)(f - hi);
            hi = MAX(hi, e);
            t++;
        }
        int rc = read_facts(p, 0, p->frame_flags + used, lo, (size_t)(hi - lo));
        if (rc)
            return rc;
        for (size_t u = s; u < t; u++) {
            struct memdiff__linux_seg *h = &p->segs[keys[u] & SEG_MASK];
            h->off = (uint32_t)(used + (keys[u] >> SEG_BITS) - lo);
            flag_facts(h, p->frame_flags + h->off);
        }
        if ((rc = read_counts(p, keys + s, t - s, used, lo)))
            return rc;
        used += (size_t)(hi - lo);
        s = t;
    }
    place_facts(p, m);
    return MEMDIFF_OK;
}

/* The pieces of segment g's facts for its pages [k, k + n) (k from its first), from buf. */
static memdiff__values seg_piece(const uint64_t *buf, const struct memdiff__linux_seg *g, size_t k,
                                size_t n, unsigned same)
{
    if (g->flags & same)
        return (memdiff__values){buf[g->off], 0, n, NULL};
    if (g->flags & SEG_DOWN)
        return (memdiff__values){0, -1, n, buf + g->off + g->len - 1 - k};
    return (memdiff__values){0, 1, n, buf + g->off + k};
}

/* Deep: delivers pages [i, j) of the batch (one run: attrs a, from addr) with their facts as
 * pieces, the segments from *u on (in page order) giving kernel flags and map counts; pages
 * between segments have none (0). A run of more pieces than fit goes in parts. */
static int deep_run(walker *w, uint64_t addr, size_t i, size_t j, unsigned a, size_t *u)
{
    memdiff__proc *p = w->proc;
    const struct memdiff__linux_seg *segs = p->segs;
    const size_t m = w->nseg;
    uint64_t ps = p->page_size;
    size_t from = i, np = 0;
    for (size_t k = i; k <= j;) {
        while (*u < m && segs[*u].page + segs[*u].len <= k)
            (*u)++;
        if (k == j || np == MEMDIFF__LINUX_FS) {
            int rc = w->sink->run_frames(w->sink->ctx, addr + from * ps, k - from, a, p->fp, np,
                                         p->kp, np, p->mp, np);
            if (rc || k == j)
                return rc;
            from = k;
            np = 0;
        }
        size_t n;
        if (*u < m && segs[*u].page <= k) {
            const struct memdiff__linux_seg *g = &segs[*u];
            n = MIN(j, (size_t)g->page + g->len) - k;
            p->kp[np] = seg_piece(p->frame_flags, g, k - g->page, n, SEG_SAME_FLAGS);
            p->mp[np] = (g->flags & SEG_ONE_MAP)
                            ? (memdiff__values){1, 0, n, NULL}
                            : seg_piece(p->frame_counts, g, k - g->page, n, SEG_SAME_COUNT);
            /* The segment's frames: a stretch from the frame of page k. */
            p->fp[np] = (memdiff__values){p->pfn[k], (g->flags & SEG_DOWN) ? -1 : 1, n, NULL};
        } else {
            n = (*u < m && segs[*u].page < j ? segs[*u].page : j) - k;
            p->kp[np] = p->mp[np] = (memdiff__values){0, 0, n, NULL};
            p->fp[np] = (memdiff__values){0, 1, n, p->pfn + k}; /* as decoded */
        }
        np++;
        k += n;
    }
    return MEMDIFF_OK;
}

/* ---- pagemap ----------------------------------------------------------------------------- */

/* attrs of a pagemap entry from its flag bits 55-63 (the table index), zero page aside. */
static unsigned entry_attrs(const walker *w, uint64_t e)
{
    unsigned a = 0;
    if (e & MEMDIFF__PM_PRESENT)
        a |= MEMDIFF_PAGE_PRESENT;
    else if (e & MEMDIFF__PM_SWAP)
        a |= MEMDIFF_PAGE_SWAPPED;
    else
        return 0;
    if (e & MEMDIFF__PM_FILE)
        a |= MEMDIFF_PAGE_FILE;
    /* Fast depth leaves these out so that it reports the same on kernels with and without
     * PAGEMAP_SCAN (whose categories have no exclusivity). */
    if (!w->fast) {
        if (e & MEMDIFF__PM_EXCLUSIVE)
            a |= MEMDIFF_PAGE_PRIVATE;
        if (e & MEMDIFF__PM_SOFT_DIRTY)
            a |= MEMDIFF_PAGE_SOFT_DIRTY;
    }
    return a;
}

/* The table of entry_attrs for the walk's depth: built once per process open and depth kind,
 * not once per region (512 entries: it cost as much as decoding a 64 MiB region). */
_Static_assert(sizeof ((memdiff__proc *)0)->pm_table / sizeof(unsigned) ==
                   1u << (64 - PM_TABLE_SHIFT),
               "pm_table holds an entry per value of pagemap bits 55-63");
static void build_table(walker *w)
{
    memdiff__proc *p = w->proc;
    if (p->pm_table_fast != w->fast) {
        for (uint64_t i = 0; i < (1u << (64 - PM_TABLE_SHIFT)); i++)
            p->pm_table[i] = entry_attrs(w, i << PM_TABLE_SHIFT);
        p->pm_table_fast = w->fast;
    }
    w->table = p->pm_table;
}

/* Read-ahead. A snapshot walks its regions in address order, one plat_pages call each, and
 * most are small and back to back (an image's four or five mappings, its .bss): one pread of a
 * small region's entries also takes those of the whole regions right behind it, up to
 * AHEAD_PAGES entries (64 MiB standard: the walk's 25 preads a snapshot -> 6). Only whole
 * regions, so that each is read from it entirely or not at all; only forward, so that no entry
 * serves twice. */
#define AHEAD_PAGES 4096u

/* The end of the regions that follow the one holding addr without a gap, as far as they fit
 * whole within AHEAD_PAGES pages of addr; addr + need pages at least. */
static uint64_t ahead_reach(const memdiff__proc *p, uint64_t addr, uint64_t need)
{
    uint64_t reach = addr + (need << p->page_shift);
    uint64_t cap = addr + ((uint64_t)AHEAD_PAGES << p->page_shift);
    size_t lo = region_holding(p, addr, reach);
    if (lo == p->region_count || p->regions[lo].end != reach)
        return reach; /* only from the tail of a region: the request ends where it does */
    for (size_t j = lo + 1;
         j < p->region_count && p->regions[j].start == reach && p->regions[j].end <= cap; j++)
        reach = p->regions[j].end;
    return reach;
}

/* Entries [first, first + n) from the read-ahead into pm, when it holds them all. */
static int from_ahead(memdiff__proc *p, uint64_t first, size_t n, uint64_t *pm)
{
    if (!p->ahead_n || first < p->ahead_used || first < p->ahead_first ||
        first + n > p->ahead_first + p->ahead_n)
        return 0;
    memcpy(pm, p->ahead + (first - p->ahead_first), n * sizeof *pm);
    p->ahead_used = first + n;
    return 1;
}

/* Reads pagemap for [addr, addr + n pages), n at most one batch, into p->pm. Entries past the
 * end of what could be read are 0 (not present): a fixture file ends early, and the kernel
 * stops at the end of the user address space. A live process that returns nothing has exited:
 * pagemap_read() finds no mm and reads 0 bytes. */
static int read_pagemap(walker *w, uint64_t addr, size_t base, size_t n)
{
    memdiff__proc *p = w->proc;
    uint64_t *pm = p->pm + base;
    uint64_t first = addr >> p->page_shift;
    if (from_ahead(p, first, n, pm))
        return MEMDIFF_OK;
    uint64_t *dst = pm;
    size_t want = n;
    if (n < AHEAD_PAGES && p->regions) {
        uint64_t reach = ahead_reach(p, addr, n);
        if (reach > addr + ((uint64_t)n << p->page_shift)) {
            if (alloc_u64(p, &p->ahead, AHEAD_PAGES))
                return MEMDIFF_ENOMEM;
            dst = p->ahead;
            want = (size_t)((reach - addr) >> p->page_shift);
        }
    }
    ssize_t r = memdiff__linux_pread_full(p->pagemap_fd, dst, want * 8, first * 8);
    if (dst != pm) {
        /* The request is the front of what was read; a failed read leaves nothing ahead. */
        p->ahead_first = first;
        p->ahead_n = r > 0 ? (uint64_t)r / 8 : 0;
        size_t got = MIN(n, (size_t)p->ahead_n);
        memcpy(pm, dst, got * sizeof *pm);
        p->ahead_used = first + got;
        if (r > 0)
            r = (ssize_t)(got * 8);
    }
    if (r < 0) {
        int e = (int)-r;
        return memdiff__set_error(memdiff__linux_status(e), "read %s/pagemap at 0x%llx: %s",
                                  p->dir, (unsigned long long)addr, memdiff__linux_errno_text(e));
    }
    size_t got = (size_t)r / 8;
    if (got < n) {
        if (got == 0 && !memdiff__linux_alive(p))
            return memdiff__set_error(MEMDIFF_ESRCH, "read %s/pagemap: the process has exited",
                                      p->dir);
        memset(pm + got, 0, (n - got) * sizeof *pm);
    }
    return MEMDIFF_OK;
}

/* The stretch of entries pm[i..j) that starts at i, with frame numbers: present pages whose
 * frames go on by *step from *first (1 or -1, as the allocator hands frames out, 0 for the zero
 * page mapped again and again), or equal entries of absent pages (*first 0). In dense memory
 * most entries are the one before plus or minus 1 (the same flags, the next frame), which one
 * test of four entries confirms; a stretch's flags are decoded once, into *attrs. Returns j. */
static size_t stretch_at(const walker *w, const uint64_t *pm, size_t i, size_t n,
                         unsigned *attrs, uint64_t *first, uint64_t *step)
{
    uint64_t e = pm[i];
    *attrs = w->table[e >> PM_TABLE_SHIFT];
    *first = 0;
    *step = 0;
    if (!(e & MEMDIFF__PM_PRESENT))
        return memdiff__stretch_end(pm, i, n, 0);
    uint64_t f = e & MEMDIFF__PM_PFN_MASK, zero = w->proc->zero_pfn;
    uint64_t d = i + 1 < n ? pm[i + 1] - e : 2; /* the next entry tells the way */
    *step = d == 1 || d == 0 || d == UINT64_MAX ? d : 1;
    size_t j = *step == d ? memdiff__stretch_end(pm, i, n, d) : i + 1;
    *first = f;
    /* The zero page: a stretch of its own (it is never part of one of other frames). */
    uint64_t dist = *step == 1 ? zero - f : *step == 0 ? (f == zero ? 0 : UINT64_MAX) : f - zero;
    if (zero && dist < j - i) {
        if (dist == 0)
            *attrs |= MEMDIFF_PAGE_ZERO;
        else
            j = i + (size_t)dist;
    }
    return j;
}

/* A present page that pagemap calls anything but exclusively mapped anonymous memory: the zero
 * page (neither bit: it has no struct page for pagemap to ask), the huge zero page (a file bit:
 * no anonymous folio), memory shared or a file page. Only such a page, or one of a PMD-mapped
 * or hugetlb page where meminfo says the system may have some, can be what the zero / huge
 * page scan looks for (pmd_free). */
static int zero_or_shared(uint64_t e)
{
    return (e & MEMDIFF__PM_PRESENT) &&
           (e & (MEMDIFF__PM_EXCLUSIVE | MEMDIFF__PM_FILE)) != MEMDIFF__PM_EXCLUSIVE;
}

/* Decodes the entries p->pm[base..base + n) into p->attrs[0..n); with frame numbers, each
 * entry becomes its page's frame in place (p->pfn is p->pm: no copy). Returns how many pages
 * are present or swapped; without frame numbers, *cand tells whether a page is zero_or_shared. */
static size_t decode(walker *w, size_t base, size_t n, int *cand)
{
    memdiff__proc *p = w->proc;
    uint64_t *pm = p->pm + base;
    unsigned *attrs = p->attrs;
    const uint64_t zero = p->zero_pfn;
    size_t found = 0;
    if (w->pfn) {
        w->nseg = 0;
        for (size_t i = 0; i < n;) {
            unsigned a;
            uint64_t f, step;
            size_t j = stretch_at(w, pm, i, n, &a, &f, &step);
            if (w->deep)
                w->nseg = add_segments(w, i, j, a, f, step, w->nseg);
            for (size_t k = i; k < j; k++) {
                pm[k] = f;
                attrs[k] = a;
                f += step;
            }
            found += a ? j - i : 0;
            i = j;
        }
    } else if (!zero) {
        /* No frame numbers (unprivileged): the entries of a page's neighbours are its own in
         * dense memory, so they are decoded a stretch of equal entries at a time. */
        int c = 0;
        for (size_t i = 0; i < n;) {
            size_t j = memdiff__stretch_end(pm, i, n, 0);
            unsigned a = w->table[pm[i] >> PM_TABLE_SHIFT];
            c |= zero_or_shared(pm[i]);
            for (size_t k = i; k < j; k++)
                attrs[k] = a;
            found += a ? j - i : 0;
            i = j;
        }
        *cand = c;
    } else {
        int c = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t e = pm[i];
            unsigned a = w->table[e >> PM_TABLE_SHIFT];
            if ((e >> 63) && (e & MEMDIFF__PM_PFN_MASK) == zero)
                a |= MEMDIFF_PAGE_ZERO;
            c |= zero_or_shared(e);
            attrs[i] = a;
            found += a != 0;
        }
        *cand = c;
    }
    return found;
}

/* Whether a batch without frame numbers whose pages are all exclusively mapped anonymous
 * memory (no zero_or_shared page) may go without the zero / huge page scan: when meminfo says
 * no page of the system is PMD-mapped anonymous memory or a hugetlb page. The scan walks every
 * page table entry again, a quarter of pagemap's cost. meminfo is read once a walk, on first
 * need, and again by memdiff__plat_totals once a batch went without the scan: a huge page that
 * appeared in between makes the snapshot be taken again (MEMDIFF__OPEN_EXACT). */
static int pmd_free(memdiff__proc *p)
{
    if (!p->pmd_free)
        p->pmd_free = memdiff__linux_pmd_free(p) ? 1 : -1;
    if (p->pmd_free < 0)
        return 0;
    p->pmd_free_used = 1;
    return 1;
}

/* decode_frames' next boundary of the zero and huge pages' ranges r[0..nr) after page i of n
 * from addr, *at the first range that ends above page i: its start, or its end with *extra its
 * attributes when page i is in it. */
static MEMDIFF__NOINLINE size_t next_extras(const struct page_region *r, size_t nr, size_t *at,
                                            uint64_t addr, unsigned shift, size_t i, size_t n,
                                            unsigned *extra)
{
    const uint64_t page = addr + ((uint64_t)i << shift);
    while (*at < nr && r[*at].end <= page)
        ++*at;
    *extra = 0;
    if (*at == nr)
        return n;
    if (r[*at].start > page)
        return (size_t)MIN((uint64_t)n, (r[*at].start - addr) >> shift);
    *extra = scan_attrs(r[*at].categories) & (MEMDIFF_PAGE_ZERO | MEMDIFF_PAGE_HUGE);
    return (size_t)MIN((uint64_t)n, (r[*at].end - addr) >> shift);
}

/* Stretch mode: feeds the entries p->pm[base..base + n) for pages from addr with their frames
 * as stretches, and where stretches are this short, as the frames themselves (decoded in place:
 * memory the allocator handed out piecemeal has one page in two in a stretch of its own, which
 * would cost a stretch each). The pending run is delivered at the end: it may point into pm.
 * Returns how many pages are present or swapped, or a negative status. */
#define LITERAL_MAX 2u
static int64_t decode_frames(walker *w, uint64_t addr, size_t base, size_t n,
                             const struct page_region *extras, size_t nextras)
{
    memdiff__proc *p = w->proc;
    uint64_t *pm = p->pm + base;
    unsigned shift = p->page_shift;
    int64_t found = 0;
    const uint64_t zero = p->zero_pfn;
    /* Stretches end where a range of the scan's zero or huge pages begins or ends (lim); inside
     * one, present pages take its attributes (extra). extras[r]: the first range that ends
     * above lim. */
    size_t r = 0, lim = nextras ? 0 : n;
    unsigned extra = 0;
    for (size_t i = 0; i < n;) {
        if (i >= lim)
            lim = next_extras(extras, nextras, &r, addr, shift, i, n, &extra);
        unsigned a;
        uint64_t f, step;
        size_t j = stretch_at(w, pm, i, lim, &a, &f, &step);
        if (extra && (a & MEMDIFF_PAGE_PRESENT))
            a |= extra;
        const uint64_t *values = NULL;
        if (j - i <= LITERAL_MAX && a) {
            for (size_t k = i; k < j; k++, f += step)
                pm[k] = f;
            /* More pages of these attrs where no stretch of three starts go with them: how the
             * values are cut does not change what the snapshot stores (seq.c). */
            while (!(a & MEMDIFF_PAGE_ZERO) && j + 2 < lim) {
                uint64_t e = pm[j], d = pm[j + 1] - e;
                if (w->table[e >> PM_TABLE_SHIFT] != a || !(e & MEMDIFF__PM_PRESENT) ||
                    (e & MEMDIFF__PM_PFN_MASK) == zero ||
                    ((d == 1 || d == 0 || d == UINT64_MAX) && pm[j + 2] - pm[j + 1] == d))
                    break;
                pm[j++] = e & MEMDIFF__PM_PFN_MASK;
            }
            values = pm + i;
            step = 1; /* the values in page order */
        }
        int rc = feed_frames(w, addr + ((uint64_t)i << shift), j - i, a, f, step, values);
        if (rc)
            return rc;
        found += a ? (int64_t)(j - i) : 0;
        i = j;
    }
    int rc = flush(w);
    return rc ? rc : found;
}

/* Whether pages [addr, addr + n) (entries pm[0..n)) could hold a huge page: scan_huge_candidates'
 * test on the ends of each page table's span alone, a necessary condition (present, frames
 * aligned with the addresses, the last frame as far from the first as its page). */
static int maybe_huge(const walker *w, uint64_t addr, const uint64_t *pm, size_t n)
{
    const memdiff__proc *p = w->proc;
    const uint64_t per = p->page_size / 8, vpage = addr >> p->page_shift;
    for (size_t i = 0; i < n;) {
        size_t j = (size_t)MIN((uint64_t)n, i + (per - ((vpage + i) & (per - 1))));
        uint64_t a = pm[i], b = pm[j - 1];
        uint64_t fa = a & MEMDIFF__PM_PFN_MASK, fb = b & MEMDIFF__PM_PFN_MASK;
        uint64_t misaligned = (fa - ((vpage + i) & (per - 1))) & (per - 1);
        if ((a & b & MEMDIFF__PM_PRESENT) && fa && !misaligned && fb - fa == j - 1 - i)
            return 1;
        i = j;
    }
    return 0;
}

/* Pages [addr, addr + npages) from pagemap, in batches. ranges (may be NULL) are the scan's
 * ranges over this window, for the zero / huge attributes; without them the scan is asked
 * itself (scan_huge_candidates, scan_extras) when the kernel has one. *found counts the pages
 * present or swapped. */
static int walk_pagemap(walker *w, uint64_t addr, uint64_t npages,
                        const struct page_region *ranges, size_t nranges, uint64_t *found)
{
    memdiff__proc *p = w->proc;
    uint64_t ps = p->page_size;
    int arrays = w->pfn || w->deep;
    int extras = !w->fast && !p->scan_off && (p->sources & MEMDIFF_SRC_PAGEMAP_SCAN);
    while (npages > 0) {
        if (w->pending && w->start + w->n * ps != addr) {
            int rc = flush(w);
            if (rc)
                return rc;
        }
        size_t base = arrays && w->pending && !w->pending_fs ? (size_t)w->n : 0;
        if (base == w->batch) {
            /* A run of a whole batch: deliver it, it cannot carry further. */
            int rc = flush(w);
            if (rc)
                return rc;
            base = 0;
        }
        size_t n = w->batch - base;
        if (n > npages)
            n = (size_t)npages;
        int rc = read_pagemap(w, addr, base, n);
        if (rc)
            return rc;
        const struct page_region *zh = NULL; /* zero and huge pages, when the batch may hold some */
        size_t nzh = 0;
        int whole = 1;
        if (w->stretches && !ranges && extras && maybe_huge(w, addr, p->pm + base, n) &&
            (whole = scan_batch_extras(w, addr, n, &zh, &nzh)) < 0)
            return whole;
        if (w->stretches && !ranges && whole) {
            int64_t got = decode_frames(w, addr, base, n, zh, nzh);
            if (got < 0)
                return (int)got;
            *found += (uint64_t)got;
            addr += n * ps;
            npages -= n;
            continue;
        }
        if (w->pending && w->pending_fs && (rc = flush(w)))
            return rc;
        int cand = 1;
        size_t got = decode(w, base, n, &cand);
        *found += got;
        if (got && ranges)
            mark_extras(w, ranges, nranges, addr, n, p->attrs);
        else if (got && extras && w->pfn)
            rc = scan_huge_candidates(w, addr, n, p->pfn + base, p->attrs);
        else if (got && extras && (cand || !pmd_free(p)))
            rc = scan_extras(w, addr, n, p->attrs);
        if (!rc && got && w->deep)
            rc = frame_facts(w);
        if (!rc && got && w->pfn && p->idle_fd >= 0)
            rc = memdiff__linux_idle_attrs(p, p->pfn + base, p->attrs, n);
        if (rc)
            return rc;
        const unsigned *attrs = p->attrs;
        size_t seg = 0;
        for (size_t i = 0; i < n;) {
            unsigned a = attrs[i];
            size_t j = i + 1;
            while (j + 4 <= n &&
                   !((attrs[j] ^ a) | (attrs[j + 1] ^ a) | (attrs[j + 2] ^ a) | (attrs[j + 3] ^ a)))
                j += 4;
            while (j < n && attrs[j] == a)
                j++;
            /* Deep delivers each run now, its pieces pointing into this batch's buffers (base
             * is 0: nothing is carried); the others extend the pending run. */
            rc = !a        ? flush(w)
                 : w->deep ? deep_run(w, addr, i, j, a, &seg)
                           : feed(w, addr + i * ps, j - i, a, base + i);
            if (rc)
                return rc;
            i = j;
        }
        carry(w);
        addr += n * ps;
        npages -= n;
    }
    return MEMDIFF_OK;
}

/* The scan's ranges r[0..n) deeper than fast: pagemap is read over windows of nearby ranges (at
 * most a batch long), never over the gaps between distant ones. */
static int pagemap_around(walker *w, const struct page_region *r, size_t n, uint64_t *found)
{
    uint64_t ps = w->proc->page_size;
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && (r[j].end - r[i].start) / ps <= w->batch)
            j++;
        uint64_t start = r[i].start, end = r[j - 1].end;
        int rc = walk_pagemap(w, start, (end - start) / ps, r + i, j - i, found);
        if (rc)
            return rc;
        i = j;
    }
    return MEMDIFF_OK;
}

/* ---- the walks ----------------------------------------------------------------------------- */

/* The scan of an exited process walks an empty mm and finds nothing, without an error. One
 * pagemap entry tells (pagemap_read() reads nothing once the mm is gone) for one pread, where
 * memdiff__linux_alive() costs five syscalls for every region without pages. For a scan from
 * start that found nothing: MEMDIFF_ESRCH when the process has exited, else MEMDIFF_OK. */
static int exited_if_empty(memdiff__proc *p, uint64_t start)
{
    uint64_t e;
    if (memdiff__linux_pread_full(p->pagemap_fd, &e, sizeof e, (start >> p->page_shift) * 8) == 0 &&
        !memdiff__linux_alive(p))
        return memdiff__set_error(MEMDIFF_ESRCH, "PAGEMAP_SCAN %s/pagemap: the process has exited",
                                  p->dir);
    return MEMDIFF_OK;
}

/* Scan ahead (fast depth). A snapshot walks its regions in address order and most are small and
 * close together (an image's four or five mappings, its .bss, a thread's stack and its guard):
 * one scan over a small region also takes the small regions behind it, holes and all (the scan
 * walks mappings only), so that they cost no ioctl each (a fast snapshot of sleep(1): 48 ioctls
 * -> 13; the presence scans below then took it to 5). The window asks PAGE_IS_FILE when a region
 * in it needs the kernel's word (FILE_ASK); one whose rule makes that needless joins such a
 * window only while it is small (WINDOW_PLAIN_PAGES), as the file bit costs the kernel each
 * present page's struct page. Only forward: no range serves twice. */
#define WINDOW_VEC 512u
#define WINDOW_PLAIN_PAGES 64u

/* The attrs of a scan's range in the walker's region, its file rule applied (a window may have
 * asked the file bit for another region: no page of private anonymous memory has it anyway). */
static unsigned region_attrs(const walker *w, uint64_t categories)
{
    unsigned a = scan_attrs(categories);
    if (w->file == FILE_NEVER)
        a &= ~MEMDIFF_PAGE_FILE;
    else if (w->file == FILE_ALWAYS && !(a & MEMDIFF_PAGE_ZERO))
        a |= MEMDIFF_PAGE_FILE;
    return a;
}

/* Delivers [start, end) from the window when it covers the range: 1, else 0. */
static int from_window(walker *w, uint64_t start, uint64_t end, int *rc)
{
    memdiff__proc *p = w->proc;
    *rc = MEMDIFF_OK;
    if (!p->win_end || start < p->win_start || end > p->win_end)
        return 0;
    size_t i = p->win_pos;
    while (i < p->win_n && p->win[i].end <= start)
        i++;
    for (; i < p->win_n && p->win[i].start < end; i++) {
        const struct page_region *r = &p->win[i];
        uint64_t a = MAX(r->start, start), b = MIN(r->end, end);
        if ((*rc = feed(w, a, (b - a) >> p->page_shift, region_attrs(w, r->categories), 0)))
            return 1;
        if (r->end > end)
            break; /* it goes on into the next region */
    }
    p->win_pos = i;
    p->win_start = end;
    return 1;
}

/* Scans from start over the region holding [start, end) and the small regions behind it, when
 * at least one joins: the window, for from_window. A scan that fails leaves none (each region
 * then scans itself and meets the error, or falls back, on its own). */
static int scan_window(walker *w, uint64_t start, uint64_t end)
{
    memdiff__proc *p = w->proc;
    const unsigned shift = p->page_shift;
    if (!p->regions || ((end - start) >> shift) >= AHEAD_PAGES)
        return MEMDIFF_OK;
    size_t lo = region_holding(p, start, end);
    if (lo == p->region_count)
        return MEMDIFF_OK;
    uint64_t pages = (p->regions[lo].end - start) >> shift, wend = p->regions[lo].end;
    int ask = w->file == FILE_ASK;
    int plain_big = !ask && pages > WINDOW_PLAIN_PAGES; /* a region the file bit would cost */
    size_t j = lo + 1;
    for (; j < p->region_count; j++) {
        const memdiff__plat_region *r = &p->regions[j];
        uint64_t rp = (r->end - r->start) >> shift;
        int r_ask = region_file_rule(p, r->start, r->end) == FILE_ASK;
        if (r->start >> 63 || pages + rp > AHEAD_PAGES || (r_ask && plain_big) ||
            (!r_ask && rp > WINDOW_PLAIN_PAGES && ask))
            break;
        plain_big = plain_big || (!r_ask && rp > WINDOW_PLAIN_PAGES);
        ask = ask || r_ask;
        pages += rp;
        wend = r->end;
    }
    if (j == lo + 1)
        return MEMDIFF_OK; /* nothing joins: the region scans itself */
    if (!p->win && !(p->win = memdiff__arena_alloc_raw(p->scratch, WINDOW_VEC * sizeof *p->win)))
        return MEMDIFF_ENOMEM;
    uint64_t ret = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO | PAGE_IS_HUGE |
                   (ask ? PAGE_IS_FILE : 0);
    uint64_t next;
    int n = scan_into(p, p->win, WINDOW_VEC, start, wend, PAGE_IS_PRESENT | PAGE_IS_SWAPPED, ret,
                      0, &next);
    if (n < 0)
        return MEMDIFF_OK;
    int rc = n == 0 ? exited_if_empty(p, start) : MEMDIFF_OK;
    if (rc)
        return rc;
    p->win_n = (size_t)n;
    p->win_pos = 0;
    p->win_start = start;
    p->win_end = next; /* short of wend when the vector filled */
    return MEMDIFF_OK;
}

/* The scan's ranges r[0..n) as runs. Where memory is fragmented (a range of a few pages
 * between holes, thousands of them a call), a range that flush() would only add to the gathered
 * bitmap goes there straight: short, not joining the pending run, the range behind it not
 * adjacent (it would join this one), gather_joins, and no frames to carry (fast depth has none).
 * Everything else goes through feed(). */
static int feed_ranges(walker *w, const struct page_region *r, size_t n)
{
    const unsigned shift = w->proc->page_shift;
    const int direct = w->gather && !w->pfn;
    uint64_t cat = ~UINT64_C(0);
    unsigned attrs = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t np = (r[i].end - r[i].start) >> shift;
        if (r[i].categories != cat) {
            cat = r[i].categories;
            attrs = region_attrs(w, cat);
        }
        if (direct && np <= GATHER_RUN_MAX && (attrs & RESIDENT) && i + 1 < n &&
            r[i + 1].start != r[i].end &&
            (!w->pending || w->start + (w->n << shift) != r[i].start)) {
            int rc = flush(w); /* as open_run would: the pending run is not joined */
            if (rc)
                return rc;
            if (gather_joins(w, r[i].start, np, attrs)) {
                gather_pages(w, r[i].start, np);
                continue;
            }
        }
        int rc = feed(w, r[i].start, np, attrs, 0);
        if (rc)
            return rc;
    }
    return MEMDIFF_OK;
}

/* Fast depth: the scan's ranges are the runs. */
static int walk_fast(walker *w, uint64_t start, uint64_t end, int *fallback, uint64_t *cur_out)
{
    int rc;
    if (from_window(w, start, end, &rc) ||
        (!(rc = scan_window(w, start, end)) && from_window(w, start, end, &rc))) {
        *fallback = 0;
        *cur_out = end;
        return rc;
    }
    if (rc)
        return rc;
    memdiff__proc *p = w->proc;
    uint64_t ret = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO | PAGE_IS_HUGE;
    if (w->file == FILE_ASK)
        ret |= PAGE_IS_FILE;
    uint64_t cur = start;
    int found = 0;
    *fallback = 0;
    while (cur < end) {
        uint64_t next;
        int n = scan_once(p, cur, end, PAGE_IS_PRESENT | PAGE_IS_SWAPPED, ret, 0, &next);
        if (n < 0) {
            /* memdiff__plat_pages keeps [vsyscall] away; any other range the scan refuses, and
             * all of it once refused, is read with pagemap. */
            if ((rc = scan_failure(p, n, cur, end)))
                return rc;
            *fallback = 1;
            *cur_out = cur;
            return MEMDIFF_OK;
        }
        if ((rc = feed_ranges(w, p->vec, (size_t)n)))
            return rc;
        found = found || n > 0;
        cur = next;
    }
    if (!found && (rc = exited_if_empty(p, start)))
        return rc;
    *cur_out = end;
    return MEMDIFF_OK;
}

/* ---- presence, for attribution ----------------------------------------------------------- */

/* Attribution reads a few words of many small regions (ELF headers, malloc's headers), each only
 * when its page is present; one scan from the first page asked over PRESENCE_PAGES of mappings
 * (the region's own, then the regions behind it) answers most of the questions that follow. The
 * scan asks presence alone: the page table, no struct page. Every window scanned is kept for the
 * snapshot (modules ask, then heaps ask again from the bottom of the address space): p->pres
 * holds the present ranges of all of them by address, p->pres_win the windows covered. */
#define PRESENCE_PAGES 1024u
#define PRESENCE_VEC 256u

/* The first of ascending ranges r[0..n) that ends above addr (n when none). */
static size_t ending_above(const struct page_region *r, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The window holding addr: its index in p->pres_win, or pres_wn when none does. */
static size_t window_at(const memdiff__proc *p, uint64_t addr)
{
    size_t w = ending_above(p->pres_win, p->pres_wn, addr);
    return w < p->pres_wn && p->pres_win[w].start <= addr ? w : p->pres_wn;
}

/* The first of the kept ranges that ends after addr (pres_n when none). */
static size_t presence_at(const memdiff__proc *p, uint64_t addr)
{
    return ending_above(p->pres, p->pres_n, addr);
}

static void reverse_ranges(struct page_region *r, size_t n)
{
    for (size_t i = 0; i < n / 2; i++) {
        struct page_region t = r[i];
        r[i] = r[n - 1 - i];
        r[n - 1 - i] = t;
    }
}

/* Scans a new window from addr's page (not covered by any), up to the next window kept, and
 * files its ranges and itself in address order. Returns its index, or pres_wn when it cannot. */
static size_t presence_scan(memdiff__proc *p, uint64_t addr)
{
    if (!(p->sources & MEMDIFF_SRC_PAGEMAP_SCAN) || p->scan_off || !p->regions ||
        p->pagemap_fd < 0 || addr >> 63)
        return p->pres_wn;
    const unsigned shift = p->page_shift;
    const uint64_t start = addr >> shift << shift;
    size_t lo = region_holding(p, start, start);
    if (lo == p->region_count)
        return p->pres_wn;
    uint64_t pages = 0, end = start;
    for (size_t j = lo; j < p->region_count && !(p->regions[j].start >> 63); j++) {
        uint64_t from = MAX(p->regions[j].start, start);
        uint64_t rp = (p->regions[j].end - from) >> shift;
        if (pages + rp > PRESENCE_PAGES) {
            if (j == lo)
                end = from + ((uint64_t)PRESENCE_PAGES << shift);
            break;
        }
        pages += rp;
        end = p->regions[j].end;
    }
    /* start is in no window: the first one above it (w) bounds this one, and this one goes
     * in at w. */
    const size_t w = ending_above(p->pres_win, p->pres_wn, start);
    if (w < p->pres_wn && p->pres_win[w].start < end)
        end = p->pres_win[w].start; /* known from there on */
    struct page_region *pv = memdiff__arena_room_raw(p->scratch, p->pres, &p->pres_cap,
                                                     p->pres_n + PRESENCE_VEC - 1, sizeof *pv,
                                                     PRESENCE_VEC);
    if (!pv)
        return p->pres_wn;
    p->pres = pv; /* one doubling gives the room: pres_n <= pres_cap, PRESENCE_VEC <= pres_cap */
    struct page_region *wv = memdiff__arena_room_raw(p->scratch, p->pres_win, &p->pres_win_cap,
                                                     p->pres_wn, sizeof *wv, 16);
    if (!wv)
        return p->pres_wn;
    p->pres_win = wv;
    /* The new ranges go behind all kept ones, then into place. */
    struct page_region *fresh = p->pres + p->pres_n;
    uint64_t next;
    int n = scan_into(p, fresh, PRESENCE_VEC, start, end, PAGE_IS_PRESENT, PAGE_IS_PRESENT, 0,
                      &next);
    if (n < 0)
        return p->pres_wn;
    /* Kept ranges from at on lie above the window: rotate the new ones in front of them. */
    const size_t at = presence_at(p, start), total = p->pres_n + (size_t)n;
    reverse_ranges(p->pres + at, p->pres_n - at);
    reverse_ranges(fresh, (size_t)n);
    reverse_ranges(p->pres + at, total - at);
    p->pres_n = total;
    memmove(p->pres_win + w + 1, p->pres_win + w, (p->pres_wn - w) * sizeof *p->pres_win);
    /* next: short of end when the vector filled */
    p->pres_win[w] = (struct page_region){start, next, 0};
    p->pres_wn++;
    return w;
}

/* The window covering addr, scanned now if none does; pres_wn when presence is unknown. */
static size_t presence_covers(memdiff__proc *p, uint64_t addr)
{
    size_t w = window_at(p, addr);
    return w < p->pres_wn ? w : presence_scan(p, addr);
}

int memdiff__linux_page_present(memdiff__proc *proc, uint64_t addr)
{
    if (presence_covers(proc, addr) == proc->pres_wn)
        return -1;
    size_t i = presence_at(proc, addr);
    return i < proc->pres_n && proc->pres[i].start <= addr;
}

int memdiff__linux_first_page_known(memdiff__proc *proc, uint64_t from, uint64_t to, int present,
                                    uint64_t *at)
{
    if (from >= to) {
        *at = to;
        return 1;
    }
    size_t w = presence_covers(proc, from);
    if (w == proc->pres_wn)
        return 0;
    const uint64_t hi = proc->pres_win[w].end;
    uint64_t cur = from;
    size_t i = presence_at(proc, from);
    if (present) {
        cur = i < proc->pres_n ? MAX(proc->pres[i].start, from) : hi;
    } else {
        /* the first hole: skip ranges that cover cur */
        for (; i < proc->pres_n && proc->pres[i].start <= cur; i++)
            cur = MAX(cur, proc->pres[i].end);
    }
    if (cur < MIN(to, hi)) {
        *at = cur;
        return 1;
    }
    if (to <= hi) {
        *at = to;
        return 1;
    }
    return 0;
}

/* Standard and deep: pagemap batches while pages are dense, the scan to skip where they are not
 * (see the top). */
static int walk_adaptive(walker *w, uint64_t start, uint64_t end)
{
    memdiff__proc *p = w->proc;
    const uint64_t B = w->batch;
    unsigned shift = p->page_shift;
    int can_scan = (p->sources & MEMDIFF_SRC_PAGEMAP_SCAN) != 0;
    uint64_t cur = start;
    int sparse = 0;
    while (cur < end) {
        uint64_t left = (end - cur) >> shift, found = 0;
        if (!sparse || !can_scan || p->scan_off) {
            uint64_t n = MIN(left, B);
            int rc = walk_pagemap(w, cur, n, NULL, 0, &found);
            if (rc)
                return rc;
            cur += n << shift;
            sparse = found * SPARSE_DIVISOR < n;
            continue;
        }
        uint64_t next;
        int n = scan_once(p, cur, end, PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
                          PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO | PAGE_IS_HUGE, B,
                          &next);
        if (n < 0) {
            int rc = scan_failure(p, n, cur, end); /* or pagemap from here on */
            if (rc)
                return rc;
            can_scan = 0;
            continue;
        }
        int rc = pagemap_around(w, p->vec, (size_t)n, &found);
        if (rc)
            return rc;
        if (n > 0) {
            uint64_t span = (p->vec[n - 1].end - p->vec[0].start) >> shift;
            sparse = found * 2 < span || found < B / 2;
        }
        cur = next;
    }
    return MEMDIFF_OK;
}

int memdiff__plat_pages(memdiff__proc *proc, uint64_t start, uint64_t end, memdiff_depth depth,
                        const memdiff__page_sink *sink)
{
    uint64_t mask = proc->page_size - 1;
    if (start > end || (start & mask) || (end & mask))
        return memdiff__set_error(MEMDIFF_EINVAL, "pages: range 0x%llx-0x%llx is not page aligned",
                                  (unsigned long long)start, (unsigned long long)end);
    if (proc->pagemap_fd < 0)
        return memdiff__set_error(MEMDIFF_EACCES, "pages: %s/pagemap could not be opened",
                                  proc->dir);
    /* The kernel's half of the address space ([vsyscall]): pagemap reads nothing there and the
     * scan refuses it (EFAULT): no pages, and no syscall to learn it. */
    if (start == end || start >> 63)
        return MEMDIFF_OK;

    walker w;
    memset(&w, 0, sizeof w);
    w.proc = proc;
    w.sink = sink;
    w.fast = depth == MEMDIFF_DEPTH_FAST;
    w.pfn = depth >= MEMDIFF_DEPTH_STANDARD && (proc->sources & MEMDIFF_SRC_PFN);
    w.deep = depth >= MEMDIFF_DEPTH_DEEP && (proc->sources & MEMDIFF_SRC_PFN) &&
             (proc->sources & MEMDIFF_SRC_KPAGEFLAGS) && (proc->sources & MEMDIFF_SRC_KPAGECOUNT);
    w.file = region_file_rule(proc, start, end);
    build_table(&w);
    w.batch = w.deep ? MEMDIFF__LINUX_DEEP_BATCH : MEMDIFF__LINUX_BATCH;
    w.stretches = sink->run_frames && w.pfn && !w.deep && proc->idle_fd < 0;
    if (w.deep && !sink->run_frames) {
        w.deep = 0; /* kernel flags go through run_frames only: a sink without it gets frames */
        w.batch = MEMDIFF__LINUX_BATCH;
    }
    w.gather = sink->run_bits && !w.deep; /* deep's runs carry kernel flags: run_frames */
    int scan = (proc->sources & MEMDIFF_SRC_PAGEMAP_SCAN) && !proc->scan_off;
    int rc = buffers(&w, scan);
    if (rc)
        return rc;
    uint64_t found = 0;
    if (scan && w.fast) {
        int fallback;
        uint64_t cur;
        rc = walk_fast(&w, start, end, &fallback, &cur);
        if (!rc && fallback) {
            memdiff__linux_learn_zero_page(proc); /* the scan no longer names it */
            rc = buffers(&w, 0);
            if (!rc)
                rc = walk_pagemap(&w, cur, (end - cur) >> proc->page_shift, NULL, 0, &found);
        }
    } else if (w.fast) {
        memdiff__linux_learn_zero_page(proc); /* no scan to name it (refused since the open) */
        rc = walk_pagemap(&w, start, (end - start) >> proc->page_shift, NULL, 0, &found);
    } else {
        rc = walk_adaptive(&w, start, end);
    }
    if (!rc)
        rc = flush(&w);
    if (!rc)
        rc = deliver_gathered(&w);
    if (rc && w.g_n) /* the bits are clear for the next walk, as deliver_gathered leaves them */
        memset(proc->gather_bits, 0, (size_t)(w.g_n + 63) / 64 * sizeof *proc->gather_bits);
    return rc;
}
