/*
 * system.c - taking a system snapshot, and its accessors.
 *
 * Order: the physical table's kernel flags first (one pass of large reads over every frame,
 * with /proc/meminfo read just before and just after), then the processes one by one, then
 * the join. A process is read either through its page map with frame numbers (privileged:
 * memdiff__plat_open, _regions, _pages at standard depth into a sink that keeps figures, not
 * runs), or through the OS's own sums (memdiff__plat_sys_rollup). The page map's frames mark
 * an owner per frame (one 32-bit word per frame: the one process that maps it, or shared) and
 * look up the frame's class for the file / shmem split; the shared frames' map counts give PSS
 * as smaps sums it. The join then counts every frame into its (kind, owner) row.
 *
 * Memory (scratch, released at the end): one byte of class and four of owner per frame (6.3M
 * frames on 24 GiB: 31.5 MiB), the process list, and per process its shared frames (8 bytes
 * each, twice for the sort); the snapshot itself keeps only figures.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "system.h"

#define FRAMES_BATCH ((size_t)512 * 1024) /* frames per kpageflags read: 4 MiB of flags */
#define OWNER_SHARED UINT32_MAX
#define NO_INDEX ((size_t)-1)

static _Thread_local int taking;
static void (*_Atomic test_hook)(int pid);

void memdiff__system_test_hook(void (*fn)(int pid))
{
    atomic_store(&test_hook, fn);
}

static const char *const kind_names[MEMDIFF_FRAME_KIND_COUNT] = {
    "reserved", "free",  "slab",  "page-table", "zero",      "hugetlb",     "ksm",
    "unevictable", "anon-thp", "anon", "shmem", "writeback", "dirty", "file-active",
    "file-inactive", "kernel"};
static const char *const owner_names[MEMDIFF_OWNER_COUNT] = {"process", "shared", "unread",
                                                             "unmapped", "kernel", "free"};

const char *memdiff_frame_kind_name(memdiff_frame_kind kind)
{
    if (kind == MEMDIFF_FRAME_ALL)
        return "all";
    return (unsigned)kind < MEMDIFF_FRAME_KIND_COUNT ? kind_names[kind] : "invalid";
}

const char *memdiff_frame_owner_name(memdiff_frame_owner owner)
{
    if (owner == MEMDIFF_OWNER_ALL)
        return "all";
    return (unsigned)owner < MEMDIFF_OWNER_COUNT ? owner_names[owner] : "invalid";
}

const char *memdiff_sysproc_state_name(memdiff_sysproc_state state)
{
    static const char *const names[] = {"read", "unreadable", "exited"};
    return (unsigned)state < 3 ? names[state] : "invalid";
}

void memdiff_system_options_init(memdiff_system_options *options)
{
    if (options) {
        memdiff_system_options o = MEMDIFF_SYSTEM_OPTIONS_INIT;
        *options = o;
    }
}

memdiff_system *memdiff__system_new(void)
{
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    a.recycle = 1;
    memdiff_system *s = memdiff__arena_alloc(&a, sizeof *s);
    if (!s)
        return NULL;
    s->arena = a; /* the object lives inside its own arena, as a snapshot does */
    return s;
}

const char *memdiff__system_str(memdiff_system *s, const char *str)
{
    if (!str)
        str = "";
    return memdiff__arena_strndup(&s->arena, str, strlen(str));
}

void memdiff_system_free(memdiff_system *system)
{
    if (system) {
        memdiff__arena a = system->arena;
        memdiff__arena_release(&a);
    }
}

/* ---- reading one process ---------------------------------------------------------------- */

/* Frames some process maps, in the order first seen: the join visits these, not every frame's
 * owner word (4 bytes a mapped frame; a frame number fits 32 bits below 16 TiB of 4 KiB). */
struct seen {
    uint32_t *v;
    size_t n, cap;
    memdiff__arena *arena;
    int failed;
};

/* Frames of every process's resident pages that pagemap does not call exclusively mapped, as
 * keys (frame << PENDING_SHIFT | the process's id): their map counts are read once for all
 * processes, each frame once however many map it (libc's pages: hundreds), after the last
 * process is read. A frame at or above 2^44 or an id above PENDING_ID_MAX goes the per-process
 * way. */
#define PENDING_SHIFT 20
#define PENDING_ID_MAX ((UINT32_C(1) << PENDING_SHIFT) - 1)
struct pending {
    uint64_t *keys;
    size_t n, cap;
    uint64_t *pss; /* per process (id - 1): PSS of its exclusive pages, 1/4096 bytes;
                      UINT64_MAX: its counts were not deferred */
    memdiff__arena *arena;
};

/* What the page sink gathers of one process (counts in pages). */
typedef struct reader {
    uint32_t page_size;
    uint32_t id;                /* index + 1 in the owner words */
    uint32_t *owner;            /* per frame, or NULL without the table */
    struct seen *seen;          /* the frames whose owner word was set, for the join */
    const unsigned char *klass; /* per frame, or NULL */
    uint64_t frames;            /* entries of owner and klass */
    int region_shmem;           /* the region being read is shared memory (no table) */
    uint64_t rss, uss, swap, anon, file, shmem;
    uint64_t no_frame;          /* resident pages delivered without their frame */
    uint64_t *shared;           /* frames of resident pages not exclusively mapped */
    size_t nshared, shared_cap;
    struct pending *pending;    /* NULL: map counts read per process */
    int frames_shown;           /* memdiff__plat_sys_open saw frame numbers shown */
    memdiff__arena *scratch;
    int failed;
} reader;

static void count_frame(reader *r, uint64_t pfn, unsigned attrs)
{
    r->rss++;
    int shmem = r->region_shmem;
    if (r->klass && pfn < r->frames)
        shmem = (r->klass[pfn] & MEMDIFF__FRAME_SHMEM) != 0;
    if (!(attrs & MEMDIFF_PAGE_FILE))
        r->anon++;
    else if (shmem)
        r->shmem++;
    else
        r->file++;
    if (attrs & MEMDIFF_PAGE_PRIVATE) {
        r->uss++;
    } else {
        uint64_t *v = memdiff__arena_room_raw(r->scratch, r->shared, &r->shared_cap, r->nshared,
                                              sizeof *v, 4096);
        if (!v) {
            r->failed = MEMDIFF_ENOMEM;
            return;
        }
        r->shared = v;
        r->shared[r->nshared++] = pfn;
    }
    if (r->owner && pfn < r->frames) {
        uint32_t o = r->owner[pfn];
        r->owner[pfn] = o == 0 || o == r->id ? r->id : OWNER_SHARED;
        if (o == 0) {
            struct seen *q = r->seen;
            uint32_t *v = memdiff__arena_room_raw(q->arena, q->v, &q->cap, q->n, sizeof *v,
                                                  65536);
            if (!v) {
                r->failed = MEMDIFF_ENOMEM;
                return;
            }
            q->v = v;
            q->v[q->n++] = (uint32_t)pfn;
        }
    }
}

/* Pages without frames (a run whose frames the walk did not give): counted, not joined. */
static void count_blind(reader *r, uint64_t n, unsigned attrs)
{
    r->rss += n;
    r->no_frame += n;
    if (!(attrs & MEMDIFF_PAGE_FILE))
        r->anon += n;
    else if (r->region_shmem)
        r->shmem += n;
    else
        r->file += n;
    if (attrs & MEMDIFF_PAGE_PRIVATE)
        r->uss += n;
}

static int on_run_frames(void *ctx, uint64_t start, uint64_t npages, unsigned attrs,
                         const memdiff__values *frames, size_t nframes,
                         const memdiff__values *kflags, size_t nkflags,
                         const memdiff__values *mapcount, size_t nmapcount)
{
    (void)start;
    (void)kflags;
    (void)nkflags;
    (void)mapcount;
    (void)nmapcount;
    reader *r = ctx;
    if (attrs & MEMDIFF_PAGE_SWAPPED)
        r->swap += npages;
    if (!(attrs & MEMDIFF_PAGE_PRESENT) || (attrs & MEMDIFF_PAGE_ZERO))
        return MEMDIFF_OK; /* smaps counts no zero page: it costs no memory */
    uint64_t left = npages;
    for (size_t k = 0; k < nframes && left; k++) {
        const memdiff__values *v = &frames[k];
        uint64_t n = MEMDIFF__MIN(v->count, left);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t pfn = v->values ? v->values[(int64_t)i * v->step]
                                     : v->first + (uint64_t)((int64_t)i * v->step);
            count_frame(r, pfn, attrs);
        }
        left -= n;
    }
    if (left)
        count_blind(r, left, attrs);
    return r->failed;
}

static int on_run(void *ctx, uint64_t start, uint64_t npages, unsigned attrs, const uint64_t *pfn)
{
    memdiff__values f = {0, 1, npages, pfn};
    return on_run_frames(ctx, start, npages, attrs, &f, pfn ? 1 : 0, NULL, 0, NULL, 0);
}

static int on_run_bits(void *ctx, uint64_t start, uint64_t npages, unsigned attrs,
                       const uint64_t *bits, const uint64_t *pfn)
{
    uint64_t set = 0;
    for (uint64_t w = 0; w < (npages + 63) / 64; w++) {
        uint64_t x = bits[w];
        if (w == npages / 64)
            x &= (UINT64_C(1) << (npages % 64)) - 1;
        set += memdiff__popcount64(x);
    }
    memdiff__values f = {0, 1, set, pfn};
    return on_run_frames(ctx, start, set, attrs, &f, pfn ? 1 : 0, NULL, 0, NULL, 0);
}

/* Shared memory as its mapping names it, where no frame's class says (no table): shared
 * anonymous memory (maps names it "/dev/zero (deleted)"), SysV, memfd, /dev/shm. A file of
 * another tmpfs counts as a file: the split is then no exact one (MEMDIFF_SYSPROC_EXACT_SPLIT
 * is left out). */
static int region_is_shmem(const memdiff__plat_region *pr)
{
    if (pr->hint == MEMDIFF__HINT_SYSV_SHM || pr->hint == MEMDIFF__HINT_MEMFD)
        return 1;
    if ((pr->flags & MEMDIFF_REGION_SHARED) &&
        (!(pr->flags & MEMDIFF_REGION_FILE) ||
         ((pr->flags & MEMDIFF__RF_DELETED) && strcmp(pr->path, "/dev/zero") == 0)))
        return 1;
    return strncmp(pr->path, "/dev/shm/", 9) == 0;
}

/* Reads a process through its page map; fills p's figures. */
static int read_pagemap(memdiff__sys *sys, const char *root, int pid, reader *r,
                        memdiff_sysproc *p)
{
    memdiff__proc *proc = NULL;
    memdiff__caps caps;
    /* One thread a process: a system snapshot reads many small processes, where lanes do not
     * start (lanes.c), and its costs are per process. */
    memdiff__open_args args = {pid, root, NULL,
                               MEMDIFF__OPEN_NO_DEEP | MEMDIFF__OPEN_NO_MEM |
                                   (r->frames_shown ? MEMDIFF__OPEN_FRAMES_SHOWN : 0u),
                               1};
    int rc = memdiff__plat_open(&args, r->scratch, &proc, &caps);
    memdiff__plat_region *regions = NULL;
    size_t count = 0;
    if (!rc && !(caps.sources & MEMDIFF_SRC_FRAMES))
        rc = memdiff__set_error(MEMDIFF_EACCES, "process %d: frame numbers are hidden: %s", pid,
                                caps.pfn_why ? caps.pfn_why : "unknown");
    if (!rc)
        rc = memdiff__plat_regions(proc, r->scratch, &regions, &count);
    memdiff__page_sink sink = {on_run, r, on_run_frames, on_run_bits};
    for (size_t i = 0; !rc && i < count; i++) {
        /* vvar is a PFN mapping: pagemap shows its frames, smaps counts them nowhere. */
        if (regions[i].hint == MEMDIFF__HINT_VVAR)
            continue;
        r->region_shmem = region_is_shmem(&regions[i]);
        rc = memdiff__plat_pages(proc, regions[i].start, regions[i].end,
                                 MEMDIFF_DEPTH_STANDARD, &sink);
    }
    memdiff__plat_close(proc);
    if (rc)
        return rc;
    struct pending *q = r->pending;
    int defer = q && r->id <= PENDING_ID_MAX;
    for (size_t i = 0; defer && i < r->nshared; i++)
        defer = r->shared[i] < (UINT64_C(1) << (64 - PENDING_SHIFT));
    if (defer && r->nshared) {
        uint64_t *v = memdiff__arena_room_raw(q->arena, q->keys, &q->cap, q->n + r->nshared - 1,
                                              sizeof *v, 65536);
        if (!v)
            return MEMDIFF_ENOMEM;
        q->keys = v;
        for (size_t i = 0; i < r->nshared; i++)
            q->keys[q->n++] = r->shared[i] << PENDING_SHIFT | r->id;
        r->nshared = 0; /* their shares are added when the counts are read (settle_pss) */
    }
    uint64_t *counts = NULL;
    if (r->nshared) {
        counts = memdiff__arena_alloc_raw(r->scratch, r->nshared * sizeof *counts);
        if (!counts)
            return MEMDIFF_ENOMEM;
        rc = memdiff__plat_sys_mapcounts(sys, r->shared, r->nshared, 0, counts);
        if (rc)
            return rc;
    }
    uint64_t ps = r->page_size, pss = memdiff__mul_sat(r->uss, ps << 12);
    for (size_t i = 0; i < r->nshared; i++) {
        pss = memdiff__add_sat(pss, memdiff__pss_fixed(ps, counts[i]));
        if (counts[i] < 2)
            r->uss++; /* mapped once by the time its count was read: smaps says private */
    }
    if (defer)
        q->pss[r->id - 1] = MEMDIFF__MIN(pss, UINT64_MAX - 1);
    p->rss_bytes = r->rss * ps;
    p->uss_bytes = r->uss * ps;
    p->pss_bytes = pss >> 12;
    p->swap_bytes = r->swap * ps;
    p->rss_anon_bytes = r->anon * ps;
    p->rss_file_bytes = r->file * ps;
    p->rss_shmem_bytes = r->shmem * ps;
    p->exact = MEMDIFF_SYSPROC_EXACT_RSS | MEMDIFF_SYSPROC_EXACT_SWAP |
               MEMDIFF_SYSPROC_EXACT_ANON | (r->klass ? MEMDIFF_SYSPROC_EXACT_SPLIT : 0u) |
               (r->no_frame ? 0u : MEMDIFF_SYSPROC_EXACT_PSS | MEMDIFF_SYSPROC_EXACT_USS);
    return MEMDIFF_OK;
}

/* The command line as one escaped line: arguments joined by spaces, cut to fit. */
static const char *command_line(memdiff_system *s, const char *args, size_t len)
{
    char joined[MEMDIFF__SYS_ARGS_MAX + 1], out[MEMDIFF_SYSPROC_CMDLINE_MAX + 1];
    len = MEMDIFF__MIN(len, (size_t)MEMDIFF__SYS_ARGS_MAX);
    while (len && args[len - 1] == '\0')
        len--;
    for (size_t i = 0; i < len; i++)
        joined[i] = args[i] ? args[i] : ' ';
    joined[len] = '\0';
    size_t full = memdiff_escape_text(out, sizeof out, joined);
    if (full >= sizeof out || len == MEMDIFF__SYS_ARGS_MAX) {
        size_t keep = MEMDIFF__MIN(strlen(out), sizeof out - 4);
        while (keep && ((unsigned char)out[keep] & 0xC0) == 0x80)
            keep--; /* whole characters: the escaped text is valid UTF-8 */
        memcpy(out + keep, "...", 4);
    }
    return memdiff__system_str(s, out);
}

static const char *escaped(memdiff_system *s, const char *text)
{
    char out[256];
    memdiff_escape_text(out, sizeof out, text);
    return memdiff__system_str(s, out);
}

/* Reads process pid into s->procs[s->nprocs] (or counts a kernel thread). ENOMEM and the like
 * fail the snapshot; what a process does (exit, refuse) is its state. */
static int read_process(memdiff_system *s, memdiff__sys *sys, const memdiff_system_options *o,
                        int pagemap, int pid, reader *base)
{
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    scratch.recycle = 1;
    memdiff_sysproc *p = &s->procs[s->nprocs];
    size_t mark = base->pending ? base->pending->n : 0;
    if (base->pending)
        base->pending->pss[s->nprocs] = UINT64_MAX;
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->name = p->cmdline = p->why = "";
    memdiff__sys_ident id;
    int rc = memdiff__plat_sys_ident(sys, pid, &scratch, &id);
    if (!rc && id.kernel_thread) {
        s->info.kernel_threads++;
        memdiff__arena_release(&scratch);
        return MEMDIFF_OK;
    }
    if (!rc) {
        p->ppid = id.ppid;
        p->start_ticks = id.start_ticks;
        p->name = escaped(s, id.name);
        p->cmdline = command_line(s, id.args, id.args_len);
        if (!p->name || !p->cmdline)
            rc = MEMDIFF_ENOMEM;
        else if (id.zombie)
            rc = memdiff__set_error(MEMDIFF_ESRCH, "process %d is a zombie", pid);
    }
    void (*hook)(int) = atomic_load_explicit(&test_hook, memory_order_relaxed);
    if (!rc && hook)
        hook(pid);
    if (!rc) {
        if (pagemap) {
            reader r = *base;
            r.id = (uint32_t)s->nprocs + 1;
            r.scratch = &scratch;
            rc = read_pagemap(sys, o->fixture_root, pid, &r, p);
        } else {
            memdiff__sys_usage u;
            rc = memdiff__plat_sys_rollup(sys, pid, &scratch, &u);
            p->rss_bytes = u.rss;
            p->pss_bytes = u.pss;
            p->uss_bytes = u.uss;
            p->swap_bytes = u.swap;
            p->swap_pss_bytes = u.swap_pss;
            p->rss_anon_bytes = u.anon;
            p->exact = u.exact;
        }
    }
    /* The status after the read: whether the process still held its memory all along. */
    memdiff__sys_status st;
    int src = rc == MEMDIFF_ESRCH ? rc : memdiff__plat_sys_status(sys, pid, &scratch, &st);
    if (!src) {
        p->uid = st.uid;
        if (!pagemap && !rc) {
            p->rss_shmem_bytes = MEMDIFF__MIN(st.rss_shmem, p->rss_bytes - p->rss_anon_bytes);
            p->rss_file_bytes = p->rss_bytes - p->rss_anon_bytes - p->rss_shmem_bytes;
        }
    }
    if (rc == MEMDIFF_ENOTSUP && !p->name[0]) {
        /* A kernel thread the ident did not catch (it raced): no user memory, not listed. */
        s->info.kernel_threads++;
        memdiff__arena_release(&scratch);
        return MEMDIFF_OK;
    }
    if (rc == MEMDIFF_ESRCH || src == MEMDIFF_ESRCH) {
        p->state = MEMDIFF_SYSPROC_EXITED;
        rc = MEMDIFF_OK;
    } else if (rc == MEMDIFF_EACCES || rc == MEMDIFF_EIO || rc == MEMDIFF_EFORMAT ||
               rc == MEMDIFF_ENOTSUP) {
        p->state = MEMDIFF_SYSPROC_UNREADABLE;
        p->error = rc;
        p->why = memdiff__system_str(s, memdiff_last_error());
        rc = p->why ? MEMDIFF_OK : MEMDIFF_ENOMEM;
    }
    if (p->state != MEMDIFF_SYSPROC_READ) { /* what was read of it stands for nothing */
        p->exact = 0;
        p->rss_bytes = p->pss_bytes = p->uss_bytes = p->swap_bytes = p->swap_pss_bytes = 0;
        p->rss_anon_bytes = p->rss_file_bytes = p->rss_shmem_bytes = 0;
    }
    memdiff__arena_release(&scratch);
    if (base->pending && (rc || p->state != MEMDIFF_SYSPROC_READ))
        base->pending->n = mark; /* its frames count for no process */
    if (!rc)
        s->nprocs++;
    return rc;
}

/* The shares of the frames every process mapped but not exclusively: their map counts, read
 * once, added to the PSS of each process that maps them; a frame mapped once by the time its
 * count is read is that process's alone (smaps says private). */
static int settle_pss(memdiff_system *s, memdiff__sys *sys, struct pending *q,
                      memdiff__arena *scratch)
{
    uint64_t ps = s->info.page_size;
    if (q->n) {
        uint64_t *counts = memdiff__arena_alloc_raw(scratch, q->n * sizeof *counts);
        if (!counts)
            return MEMDIFF_ENOMEM;
        int rc = memdiff__plat_sys_mapcounts(sys, q->keys, q->n, PENDING_SHIFT, counts);
        if (rc)
            return rc;
        for (size_t k = 0; k < q->n; k++) {
            size_t i = (size_t)(q->keys[k] & PENDING_ID_MAX) - 1;
            q->pss[i] = MEMDIFF__MIN(memdiff__add_sat(q->pss[i], memdiff__pss_fixed(ps, counts[k])),
                                     UINT64_MAX - 1);
            if (counts[k] < 2)
                s->procs[i].uss_bytes += ps;
        }
    }
    for (size_t i = 0; i < s->nprocs && i < PENDING_ID_MAX; i++)
        if (s->procs[i].state == MEMDIFF_SYSPROC_READ && q->pss[i] != UINT64_MAX)
            s->procs[i].pss_bytes = q->pss[i] >> 12;
    return MEMDIFF_OK;
}

/* ---- the physical table ----------------------------------------------------------------- */

static memdiff_frame_owner owner_of_unowned(unsigned klass)
{
    switch (klass & MEMDIFF__FRAME_KIND) {
    case MEMDIFF_FRAME_FREE:
        return MEMDIFF_OWNER_FREE;
    case MEMDIFF_FRAME_RESERVED:
    case MEMDIFF_FRAME_SLAB:
    case MEMDIFF_FRAME_PAGE_TABLE:
    case MEMDIFF_FRAME_ZERO:
    case MEMDIFF_FRAME_KERNEL:
        return MEMDIFF_OWNER_KERNEL;
    default:
        return klass & MEMDIFF__FRAME_MAPPED ? MEMDIFF_OWNER_UNREAD : MEMDIFF_OWNER_UNMAPPED;
    }
}

int memdiff__phys_row_cmp(memdiff_frame_kind ka, memdiff_frame_owner oa, int pa, uint64_t sa,
                          memdiff_frame_kind kb, memdiff_frame_owner ob, int pb, uint64_t sb)
{
    if (ka != kb)
        return ka < kb ? -1 : 1;
    if (oa != ob)
        return oa < ob ? -1 : 1;
    if (pa != pb)
        return pa < pb ? -1 : 1;
    return sa < sb ? -1 : sa > sb;
}

/* The table's kind of a frame class (the kernel's large compound pages are kernel memory). */
static unsigned kind_of(unsigned klass)
{
    unsigned k = klass & MEMDIFF__FRAME_KIND;
    return k == MEMDIFF__FRAME_KERNEL_LARGE ? MEMDIFF_FRAME_KERNEL : k;
}

/* Counts every frame into cells[kind][slot] (slots: one per process, in pid order, then the
 * owners after MEMDIFF_OWNER_PROCESS), then keeps the cells that hold frames as rows, which
 * are then in the table's order: kind, owner, process. hist counts every frame by class (read
 * as the classes came); the frames a process maps are visited from the seen list, and the
 * others are counted by class (hist less owned): no pass over every frame. */
static int join(memdiff_system *s, const unsigned char *klass, const uint32_t *owner,
                const struct seen *seen, uint64_t hist[256], memdiff__arena *scratch)
{
    size_t np = s->nprocs, slots = np + MEMDIFF_OWNER_COUNT;
    uint64_t *cells = memdiff__arena_alloc(scratch, (size_t)MEMDIFF_FRAME_KIND_COUNT * slots *
                                                        sizeof *cells);
    if (!cells)
        return MEMDIFF_ENOMEM;
    uint64_t owned[256] = {0}, conflicts = 0;
    for (size_t i = 0; i < seen->n; i++) {
        uint32_t f = seen->v[i];
        unsigned c = klass[f];
        uint32_t o = owner[f];
        owned[c]++;
        unsigned kind = kind_of(c);
        size_t slot;
        if (o == OWNER_SHARED)
            slot = np + MEMDIFF_OWNER_SHARED;
        else if (s->procs[o - 1].state != MEMDIFF_SYSPROC_READ)
            slot = np + MEMDIFF_OWNER_UNREAD; /* it exited while read: no owner to name */
        else
            slot = o - 1;
        if (kind == MEMDIFF_FRAME_FREE || kind == MEMDIFF_FRAME_SLAB ||
            kind == MEMDIFF_FRAME_PAGE_TABLE || kind == MEMDIFF__FRAME_HOLE)
            conflicts++; /* no process maps such a frame: it changed hands while read */
        if (kind != MEMDIFF__FRAME_HOLE)
            cells[kind * slots + slot]++;
    }
    for (unsigned c = 0; c < 256; c++) {
        unsigned kind = kind_of(c);
        if (kind != MEMDIFF__FRAME_HOLE && kind < MEMDIFF_FRAME_KIND_COUNT)
            cells[kind * slots + np + owner_of_unowned(kind | (c & ~MEMDIFF__FRAME_KIND))] +=
                hist[c] - owned[c];
    }
    size_t n = 0;
    for (size_t i = 0; i < (size_t)MEMDIFF_FRAME_KIND_COUNT * slots; i++)
        n += cells[i] != 0;
    s->rows = memdiff__arena_alloc(&s->arena, (n ? n : 1) * sizeof *s->rows);
    if (!s->rows)
        return MEMDIFF_ENOMEM;
    uint64_t ps = s->info.page_size, holes = 0;
    for (unsigned c = 0; c < 256; c++)
        if ((c & MEMDIFF__FRAME_KIND) == MEMDIFF__FRAME_HOLE)
            holes += hist[c];
    for (size_t k = 0; k < MEMDIFF_FRAME_KIND_COUNT; k++)
        for (size_t slot = 0; slot < slots; slot++) {
            uint64_t c = cells[k * slots + slot];
            if (!c)
                continue;
            memdiff_phys_row *r = &s->rows[s->nrows++];
            r->kind = (memdiff_frame_kind)k;
            r->owner = slot < np ? MEMDIFF_OWNER_PROCESS : (memdiff_frame_owner)(slot - np);
            r->process = slot < np ? slot : NO_INDEX;
            r->frames = c;
            r->bytes = c * ps;
        }
    uint64_t frames = 0;
    for (unsigned c = 0; c < 256; c++)
        frames += hist[c];
    s->info.phys_frames = frames - holes;
    s->info.phys_hole_frames = holes;
    s->info.phys_conflict_frames = conflicts;
    return MEMDIFF_OK;
}

void memdiff__system_tally(memdiff_system *s)
{
    memdiff_system_info *in = &s->info;
    in->processes = s->nprocs;
    in->processes_read = in->processes_unreadable = in->processes_exited = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        switch (s->procs[i].state) {
        case MEMDIFF_SYSPROC_READ:
            in->processes_read++;
            break;
        case MEMDIFF_SYSPROC_UNREADABLE:
            in->processes_unreadable++;
            break;
        default:
            in->processes_exited++;
        }
    }
    for (size_t i = 0; i < s->nrows; i++) {
        memdiff_phys_row *r = &s->rows[i];
        if (r->owner == MEMDIFF_OWNER_PROCESS && r->process < s->nprocs) {
            r->pid = s->procs[r->process].pid;
            r->start_ticks = s->procs[r->process].start_ticks;
        } else {
            r->pid = 0;
            r->start_ticks = 0;
        }
    }
}

/* ---- reconciliation --------------------------------------------------------------------- */

static uint64_t table_bytes(const memdiff_system *s, unsigned kinds)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < s->nrows; i++)
        if (kinds >> s->rows[i].kind & 1u)
            sum += s->rows[i].bytes;
    return sum;
}

static uint64_t diff_abs(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

#define K(kind) (1u << MEMDIFF_FRAME_##kind)

/* The figures the table and the kernel both count, each with the bound their counters give:
 * what the figure moved by while the flags were read (meminfo before and after), the per-CPU
 * counter drift (vm stats threshold x CPUs, per zone), and what each rule states. */
static int reconcile(memdiff_system *s, const memdiff__sys_meminfo *m0,
                     const memdiff__sys_meminfo *m1, const uint64_t hist[256])
{
    uint64_t ps = s->info.page_size, anon_mapped = 0, shmem_frames = 0, large = 0;
    for (unsigned c = 0; c < 256; c++) {
        if ((c & MEMDIFF__FRAME_KIND) == MEMDIFF__FRAME_HOLE)
            continue;
        if ((c & (MEMDIFF__FRAME_ANON | MEMDIFF__FRAME_MAPPED)) ==
            (MEMDIFF__FRAME_ANON | MEMDIFF__FRAME_MAPPED))
            anon_mapped += hist[c] * ps;
        if (c & MEMDIFF__FRAME_SHMEM)
            shmem_frames += hist[c] * ps;
        if ((c & MEMDIFF__FRAME_KIND) == MEMDIFF__FRAME_KERNEL_LARGE)
            large += hist[c] * ps;
    }
    /* /proc/meminfo counts pages of no zone (memory whose page structs the kernel has not
     * initialised yet: deferred_init) in MemTotal and MemFree; zoneinfo counts the zones'. */
    uint64_t deferred = m1->zone_managed && m1->mem_total > m1->zone_managed
                            ? m1->mem_total - m1->zone_managed
                            : 0;
    uint64_t unmanaged = m1->zone_spanned > m1->zone_managed
                             ? m1->zone_spanned - m1->zone_managed
                             : 0;
    uint64_t frames = (s->info.phys_frames + s->info.phys_hole_frames) * s->info.page_size;
    uint64_t outside = frames > m1->zone_spanned ? frames - m1->zone_spanned : 0;
    struct {
        const char *name, *rule;
        uint64_t table, k0, k1, extra;
    } f[] = {
        {"MemTotal",
         "frames not reserved nor holes; bound: frames the zones span but do not manage (holes, "
         "boot-time reservations) and frames outside every zone, less the pages of no zone "
         "MemTotal counts (deferred page init)",
         table_bytes(s, ~K(RESERVED)), m0->mem_total, m1->mem_total,
         (unmanaged > deferred ? unmanaged - deferred : deferred - unmanaged) + outside},
        {"MemFree",
         "free frames (buddy); kernel: MemFree less the pages of no zone (MemTotal - zone "
         "managed); bound: change while read + per-CPU counter drift",
         table_bytes(s, K(FREE)), m0->mem_free - MEMDIFF__MIN(deferred, m0->mem_free),
         m1->mem_free - MEMDIFF__MIN(deferred, m1->mem_free), m1->drift},
        {"AnonPages",
         "mapped anonymous frames (KPF_ANON with KPF_MMAP); bound: change while read + drift",
         anon_mapped, m0->anon_pages, m1->anon_pages, m1->drift},
        {"Shmem", "shared-memory frames (swap-backed, not anonymous); bound: change + drift",
         shmem_frames, m0->shmem, m1->shmem, m1->drift},
        {"Buffers+Cached",
         "page cache frames (file kinds, shmem, unevictable not anonymous); kernel: Buffers + "
         "Cached + SwapCached; bound: change + drift + Unevictable (its anonymous part is not "
         "told apart by kind)",
         table_bytes(s, K(WRITEBACK) | K(DIRTY) | K(FILE_ACTIVE) | K(FILE_INACTIVE) |
                            K(SHMEM) | K(UNEVICTABLE)),
         m0->buffers + m0->cached + m0->swap_cached, m1->buffers + m1->cached + m1->swap_cached,
         m1->drift + m1->unevictable},
        {"Slab",
         "slab frames; bound: change + drift + kernel frames in compound pages (large kmalloc "
         "allocations, which Slab counts, carry no slab flag)",
         table_bytes(s, K(SLAB)), m0->slab, m1->slab, m1->drift + large},
        {"PageTables", "page-table frames; kernel: PageTables + SecPageTables; bound: change + "
                       "drift",
         table_bytes(s, K(PAGE_TABLE)), m0->page_tables + m0->sec_page_tables,
         m1->page_tables + m1->sec_page_tables, m1->drift},
    };
    size_t n = sizeof f / sizeof f[0];
    s->rec = memdiff__arena_alloc(&s->arena, n * sizeof *s->rec);
    if (!s->rec)
        return MEMDIFF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        memdiff_reconcile *r = &s->rec[i];
        r->name = f[i].name;
        r->rule = f[i].rule;
        r->table_bytes = f[i].table;
        r->kernel_bytes = f[i].k1;
        r->bound_bytes = diff_abs(f[i].k0, f[i].k1) + f[i].extra;
        /* The table was read between the two readings: anything between them is as good. */
        uint64_t lo = MEMDIFF__MIN(f[i].k0, f[i].k1), hi = MEMDIFF__MAX(f[i].k0, f[i].k1);
        uint64_t off = f[i].table < lo ? lo - f[i].table : f[i].table > hi ? f[i].table - hi : 0;
        r->within = off <= f[i].extra + diff_abs(f[i].k0, f[i].k1);
    }
    s->nrec = n;
    return MEMDIFF_OK;
}

/* ---- taking ----------------------------------------------------------------------------- */

/* Every frame's class, and how many frames have each class (counted while a batch is in the
 * cache). */
static int read_table(memdiff__sys *sys, uint64_t frames, unsigned char *klass,
                      uint64_t hist[256])
{
    for (uint64_t first = 0; first < frames; first += FRAMES_BATCH) {
        size_t want = (size_t)MEMDIFF__MIN((uint64_t)FRAMES_BATCH, frames - first), got;
        unsigned char *k = klass + first;
        int rc = memdiff__plat_sys_frames(sys, first, want, k, &got);
        if (rc)
            return rc;
        if (got < want)
            memset(k + got, MEMDIFF__FRAME_HOLE, want - got);
        /* By runs of one class (long: free blocks, kernel memory, a file's pages), so that
         * increments of one counter do not wait for each other. */
        unsigned char prev = k[0];
        uint64_t run = 0;
        for (size_t i = 0; i < want; i++) {
            if (k[i] == prev) {
                run++;
            } else {
                hist[prev] += run;
                prev = k[i];
                run = 1;
            }
        }
        hist[prev] += run;
    }
    return MEMDIFF_OK;
}

static int set_info_string(memdiff_system *s, const char **dst, const char *src)
{
    *dst = src ? memdiff__system_str(s, src) : NULL;
    return src && !*dst ? MEMDIFF_ENOMEM : MEMDIFF_OK;
}

static int take(const memdiff_system_options *o, memdiff_system *s, memdiff__arena *scratch)
{
    uint64_t t0 = memdiff__os_monotonic_ns();
    memdiff_system_info *in = &s->info;
    char host[256];
    in->time_ns = memdiff__os_time_ns();
    memdiff__os_hostname(host, sizeof host);
    memdiff__sys *sys = NULL;
    memdiff__sys_caps caps;
    int rc = memdiff__plat_sys_open(o->fixture_root, scratch, &sys, &caps);
    if (!rc)
        rc = set_info_string(s, &in->host, host);
    if (!rc)
        rc = set_info_string(s, &in->boot_id, caps.boot_id);
    if (!rc)
        rc = set_info_string(s, &in->hidden, caps.hidden);
    if (rc) {
        memdiff__plat_sys_close(sys);
        return rc;
    }
    in->page_size = caps.page_size;
    in->boot_time_s = caps.boot_time_s;
    in->clock_ticks = caps.clock_ticks;
    int pagemap = caps.frames && caps.mapcounts && !(o->flags & MEMDIFF_SYSTEM_ROLLUP);
    /* Frame numbers are kept in 32 bits (struct seen): 16 TiB of 4 KiB frames. */
    int phys = caps.frames && caps.max_frame && caps.max_frame <= UINT32_MAX &&
               !(o->flags & MEMDIFF_SYSTEM_NO_PHYS);
    in->privileged = caps.frames && caps.mapcounts;
    const char *why = o->flags & MEMDIFF_SYSTEM_NO_PHYS ? "left out (MEMDIFF_SYSTEM_NO_PHYS)"
                      : !phys ? (caps.phys_why                    ? caps.phys_why
                                 : caps.max_frame > UINT32_MAX ? "over 2^32 frames: not read"
                                                                : "no kernel page flags")
                              : NULL;
    rc = set_info_string(s, &in->degraded, why);

    reader base;
    memset(&base, 0, sizeof base);
    base.page_size = caps.page_size;
    base.frames_shown = caps.frames;
    struct seen seen = {NULL, 0, 0, scratch, 0};
    base.seen = &seen;
    unsigned char *klass = NULL;
    memdiff__sys_meminfo m0, m1;
    uint64_t hist[256] = {0};
    if (!rc && phys) {
        uint64_t p0 = memdiff__os_monotonic_ns();
        /* A byte and an owner word a frame (31.5 MiB for 24 GiB) and the kpageflags batches
         * are more than the kept scratch holds: kept, they would push out what the next
         * snapshot's process reads reuse. */
        scratch->recycle = 0;
        klass = memdiff__arena_alloc_raw(scratch, (size_t)caps.max_frame);
        base.owner = memdiff__arena_alloc(scratch, (size_t)caps.max_frame * sizeof *base.owner);
        if (!klass || !base.owner)
            rc = MEMDIFF_ENOMEM;
        if (!rc)
            rc = memdiff__plat_sys_meminfo(sys, &m0);
        if (!rc)
            rc = read_table(sys, caps.max_frame, klass, hist);
        if (!rc)
            rc = memdiff__plat_sys_meminfo(sys, &m1);
        base.klass = klass;
        base.frames = caps.max_frame;
        in->phys_ns += memdiff__os_monotonic_ns() - p0;
    }
    uint64_t q0 = memdiff__os_monotonic_ns();
    int *pids = NULL;
    size_t npids = 0;
    if (!rc)
        rc = memdiff__plat_sys_pids(sys, scratch, &pids, &npids);
    struct pending pend = {NULL, 0, 0, NULL, scratch};
    if (!rc && npids) {
        s->procs = memdiff__arena_alloc(&s->arena, npids * sizeof *s->procs);
        pend.pss = memdiff__arena_alloc(scratch, npids * sizeof *pend.pss);
        if (!s->procs || !pend.pss)
            rc = MEMDIFF_ENOMEM;
        if (pagemap)
            base.pending = &pend;
    }
    for (size_t i = 0; !rc && i < npids; i++)
        rc = read_process(s, sys, o, pagemap, pids[i], &base);
    if (!rc && base.pending)
        rc = settle_pss(s, sys, &pend, scratch);
    in->processes_ns = memdiff__os_monotonic_ns() - q0;
    if (!rc && phys) {
        uint64_t p0 = memdiff__os_monotonic_ns();
        rc = seen.failed ? seen.failed : join(s, klass, base.owner, &seen, hist, scratch);
        s->phys = !rc;
        if (!rc)
            rc = reconcile(s, &m0, &m1, hist);
        in->phys_ns += memdiff__os_monotonic_ns() - p0;
    }
    in->sources = (pagemap ? MEMDIFF_SYS_SRC_PAGEMAP | MEMDIFF_SYS_SRC_MAPCOUNT
                           : MEMDIFF_SYS_SRC_ROLLUP) |
                  (s->phys ? MEMDIFF_SYS_SRC_PHYS | MEMDIFF_SYS_SRC_MEMINFO : 0u);
    memdiff__plat_sys_close(sys);
    if (rc)
        return rc;
    memdiff__system_tally(s);
    in->duration_ns = memdiff__os_monotonic_ns() - t0;
    in->storage_bytes = memdiff__arena_footprint(&s->arena);
    return MEMDIFF_OK;
}

int memdiff_system_take(const memdiff_system_options *options, memdiff_system **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_take: out is NULL");
    *out = NULL;
    memdiff_system_options o = MEMDIFF_SYSTEM_OPTIONS_INIT;
    if (options)
        o = *options;
    if (o.flags & ~(MEMDIFF_SYSTEM_NO_PHYS | MEMDIFF_SYSTEM_ROLLUP))
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_take: unknown flags 0x%x",
                                  o.flags);
    if (taking || memdiff__arena_busy())
        return memdiff__set_error(MEMDIFF_EBUSY, "memdiff_system_take: this thread is inside "
                                                 "memdiff already (a signal handler?)");
    memdiff_system *s = memdiff__system_new();
    if (!s)
        return MEMDIFF_ENOMEM;
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    scratch.recycle = 1; /* kept for the next snapshot (base/arena.c); see take() */
    taking = 1;
    int rc = take(&o, s, &scratch);
    taking = 0;
    memdiff__arena_release(&scratch);
    if (rc) {
        memdiff_system_free(s);
        return rc;
    }
    *out = s;
    return MEMDIFF_OK;
}

/* ---- accessors -------------------------------------------------------------------------- */

int memdiff_system_get_info(const memdiff_system *system, memdiff_system_info *out)
{
    if (!system || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_get_info: NULL argument");
    *out = system->info;
    return MEMDIFF_OK;
}

size_t memdiff_system_process_count(const memdiff_system *system)
{
    return system ? system->nprocs : 0;
}

int memdiff_system_process(const memdiff_system *system, size_t index, memdiff_sysproc *out)
{
    if (!system || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_process: NULL argument");
    if (index >= system->nprocs)
        return memdiff__set_error(MEMDIFF_ERANGE, "memdiff_system_process: index %zu of %zu",
                                  index, system->nprocs);
    *out = system->procs[index];
    return MEMDIFF_OK;
}

int memdiff_system_find_process(const memdiff_system *system, int pid, memdiff_sysproc *out,
                                size_t *index)
{
    if (!system || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_find_process: NULL argument");
    size_t lo = 0, hi = system->nprocs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (system->procs[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == system->nprocs || system->procs[lo].pid != pid)
        return memdiff__set_error(MEMDIFF_ERANGE, "no process %d in the system snapshot", pid);
    *out = system->procs[lo];
    if (index)
        *index = lo;
    return MEMDIFF_OK;
}

size_t memdiff_system_phys_count(const memdiff_system *system)
{
    return system ? system->nrows : 0;
}

int memdiff_system_phys_row(const memdiff_system *system, size_t index, memdiff_phys_row *out)
{
    if (!system || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_phys_row: NULL argument");
    if (index >= system->nrows)
        return memdiff__set_error(MEMDIFF_ERANGE, "memdiff_system_phys_row: index %zu of %zu",
                                  index, system->nrows);
    *out = system->rows[index];
    return MEMDIFF_OK;
}

int memdiff_system_phys_bytes(const memdiff_system *system, memdiff_frame_kind kind,
                              memdiff_frame_owner owner, uint64_t *out)
{
    if (!system || !out || (unsigned)kind > MEMDIFF_FRAME_ALL ||
        (unsigned)owner > MEMDIFF_OWNER_ALL)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_phys_bytes: bad argument");
    *out = 0;
    if (!system->phys)
        return memdiff__set_error(MEMDIFF_ENOTSUP, "no physical table: %s",
                                  system->info.degraded ? system->info.degraded : "not read");
    for (size_t i = 0; i < system->nrows; i++) {
        const memdiff_phys_row *r = &system->rows[i];
        if ((kind == MEMDIFF_FRAME_ALL || r->kind == kind) &&
            (owner == MEMDIFF_OWNER_ALL || r->owner == owner))
            *out += r->bytes;
    }
    return MEMDIFF_OK;
}

size_t memdiff_system_reconcile_count(const memdiff_system *system)
{
    return system ? system->nrec : 0;
}

int memdiff_system_reconcile(const memdiff_system *system, size_t index, memdiff_reconcile *out)
{
    if (!system || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_reconcile: NULL argument");
    if (index >= system->nrec)
        return memdiff__set_error(MEMDIFF_ERANGE, "memdiff_system_reconcile: index %zu of %zu",
                                  index, system->nrec);
    *out = system->rec[index];
    return MEMDIFF_OK;
}
