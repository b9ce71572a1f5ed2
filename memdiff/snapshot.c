/*
 * snapshot.c - taking a snapshot: facts from the backend, classified at once, then the page runs
 * of every region stored run-length in the snapshot's own arena. Also the snapshot accessors.
 *
 * Order matters for honesty: the region list is read first and classified before any page is
 * read, so a mapping that appears during the page walk is simply not in this snapshot, and one
 * that vanishes reports no pages. The process totals are read last, after the page walk, so
 * that a process that exited meanwhile fails the snapshot (MEMDIFF_ESRCH) instead of passing
 * off a half torn-down address space as whole. memdiff's own storage is named (Linux
 * [anon:memdiff]) and also listed from the arena, so it is Own either way; its pages are never
 * read: each live snapshot adds to it, and reading it made the next snapshot cost O(live
 * snapshots). The arena's count of its bytes stands for it (memdiff__own_bytes).
 */
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>

#include "internal.h"

/* Set while this thread takes a snapshot: a signal handler that interrupted it and takes
 * another is refused (MEMDIFF_EBUSY) instead of meeting the arena's lock held by its own
 * thread. */
static _Thread_local volatile sig_atomic_t taking;
static void (*_Atomic while_taking)(void);

void memdiff__test_while_taking(void (*fn)(void))
{
    atomic_store(&while_taking, fn);
}

typedef struct builder {
    memdiff_snapshot *s;
    size_t region;   /* index of the region being read */
    int want_pfn, want_kflags, want_mapcount;
} builder;

/* Clips a run to the region being read: a backend must not report outside it, and a snapshot
 * must not lie. 0 when nothing is left; else *skip is how many pages were cut at the start. */
static int clip(const builder *b, uint64_t *start, uint64_t *npages, uint64_t *skip)
{
    const memdiff__region *r = &b->s->regions[b->region];
    uint64_t ps = b->s->info.page_size;
    uint64_t lo = *start, end = lo + *npages * ps;
    *skip = 0;
    if (*npages == 0 || end <= r->start || lo >= r->end)
        return 0;
    if (lo < r->start) {
        *skip = memdiff__in_pages(r->start - lo, ps);
        lo = r->start;
    }
    if (end > r->end)
        end = r->end;
    *start = lo;
    *npages = memdiff__in_pages(end - lo, ps);
    return *npages > 0;
}

/* Appends npages pages' frame facts, the first skip of the pieces passed over, for the facts
 * this snapshot keeps (a fact the backend did not give is 0, unknown): *at is where they begin,
 * MEMDIFF__NO_AUX when it keeps none. */
static int append_facts(const builder *b, const memdiff__values *frames, size_t nframes,
                        const memdiff__values *kflags, size_t nkflags,
                        const memdiff__values *mapcount, size_t nmapcount, uint64_t skip,
                        uint64_t npages, uint64_t *at)
{
    memdiff_snapshot *s = b->s;
    *at = MEMDIFF__NO_AUX;
    if (!((b->want_pfn && nframes) || (b->want_kflags && nkflags) ||
          (b->want_mapcount && nmapcount)))
        return MEMDIFF_OK;
    /* Frame facts as stretches of related values (seq.c). */
    *at = s->aux_count;
    memdiff__seq *dst[3] = {&s->frames, &s->kflags, &s->mapcount};
    const memdiff__values *src[3] = {frames, kflags, mapcount};
    const size_t nsrc[3] = {nframes, nkflags, nmapcount};
    const int want[3] = {b->want_pfn, b->want_kflags, b->want_mapcount};
    for (int k = 0; k < 3; k++)
        if (want[k] && memdiff__seq_append_pieces(&s->arena, dst[k], src[k],
                                                  src[k] ? nsrc[k] : 0, skip, npages))
            return MEMDIFF_ENOMEM;
    s->aux_count += npages;
    return MEMDIFF_OK;
}

/* The page sink for a run whose facts come as pieces (frames; kernel flags and map counts at
 * deep depth). */
static int on_run_frames(void *ctx, uint64_t start, uint64_t npages, unsigned attrs,
                         const memdiff__values *frames, size_t nframes,
                         const memdiff__values *kflags, size_t nkflags,
                         const memdiff__values *mapcount, size_t nmapcount)
{
    builder *b = ctx;
    uint64_t skip, at;
    if (!clip(b, &start, &npages, &skip))
        return MEMDIFF_OK;
    if (append_facts(b, frames, nframes, kflags, nkflags, mapcount, nmapcount, skip, npages, &at))
        return MEMDIFF_ENOMEM;
    /* Runs continuing the last one (a backend may split them at batch boundaries) merge there;
     * short ones close together share a bitmap (runs.c). */
    return memdiff__runs_append(b->s, (uint32_t)b->region, start, npages, attrs, at);
}

/* The page sink for short runs gathered as a bitmap, their frames (or NULL) in page order. A
 * bitmap that reaches outside the region (a backend must not send one) goes run by run, each
 * clipped. */
static int on_run_bits(void *ctx, uint64_t start, uint64_t npages, unsigned attrs,
                       const uint64_t *bits, const uint64_t *pfn)
{
    builder *b = ctx;
    const memdiff__region *r = &b->s->regions[b->region];
    uint64_t ps = b->s->info.page_size;
    if (start < r->start || start >= r->end || npages > memdiff__in_pages(r->end - start, ps)) {
        uint64_t set = 0;
        for (uint64_t k = memdiff__find_bit(bits, 0, npages, 1); k < npages;) {
            uint64_t e = memdiff__find_bit(bits, k, npages, 0);
            memdiff__values f = {0, 1, e - k, pfn ? pfn + set : NULL};
            int rc = on_run_frames(ctx, start + k * ps, e - k, attrs, &f, pfn ? 1 : 0, NULL, 0,
                                   NULL, 0);
            if (rc)
                return rc;
            set += e - k;
            k = memdiff__find_bit(bits, e, npages, 1);
        }
        return MEMDIFF_OK;
    }
    uint64_t set = 0, at;
    for (uint64_t w = 0; w < (npages + 63) / 64; w++) {
        uint64_t x = bits[w];
        if (w == npages / 64)
            x &= (UINT64_C(1) << (npages % 64)) - 1;
        set += memdiff__popcount64(x);
    }
    memdiff__values f = {0, 1, set, pfn};
    if (append_facts(b, &f, pfn ? 1 : 0, NULL, 0, NULL, 0, 0, set, &at))
        return MEMDIFF_ENOMEM;
    return memdiff__runs_append_bits(b->s, (uint32_t)b->region, start, npages, attrs, bits, at);
}

/* The page sink for a run with its frames as an array (or none). */
static int on_run(void *ctx, uint64_t start, uint64_t npages, unsigned attrs, const uint64_t *pfn)
{
    memdiff__values frames = {0, 1, npages, pfn};
    return on_run_frames(ctx, start, npages, attrs, &frames, pfn ? 1 : 0, NULL, 0, NULL, 0);
}

static memdiff_depth effective_depth(memdiff_depth want, const memdiff__caps *caps,
                                     const char **why)
{
    *why = NULL;
    if (want == MEMDIFF_DEPTH_DEEP) {
        unsigned need = MEMDIFF_SRC_FRAMES | MEMDIFF_SRC_PAGE_FLAGS | MEMDIFF_SRC_MAP_COUNTS;
        if ((caps->sources & need) != need) {
            *why = caps->deep_why ? caps->deep_why
                                  : caps->pfn_why ? caps->pfn_why
                                                  : "kernel page flags are unavailable";
            want = MEMDIFF_DEPTH_STANDARD;
        }
    }
    if (want >= MEMDIFF_DEPTH_STANDARD && !(caps->sources & MEMDIFF_SRC_PAGES)) {
        /* The deeper reason, if any, follows from this one: say the first cause. */
        *why = "per-page exclusivity is unavailable (no pagemap)";
        want = MEMDIFF_DEPTH_FAST;
    }
    return want;
}

/* Which sources this depth actually used. */
static unsigned used_sources(memdiff_depth depth, unsigned avail)
{
    /* Pages: every depth reads them, fast from the scan where the kernel has one (a faster way
     * to the same page tables, MEMDIFF__SRC_PAGEMAP_SCAN, not reported). */
    unsigned keep = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_PROCESS_TOTALS |
                    MEMDIFF_SRC_THREADS | MEMDIFF_SRC_HEAPS | MEMDIFF_SRC_MODULES;
    if (depth >= MEMDIFF_DEPTH_STANDARD)
        keep |= MEMDIFF_SRC_FRAMES | MEMDIFF_SRC_PAGE_ACCESS;
    if (depth >= MEMDIFF_DEPTH_DEEP)
        keep |= MEMDIFF_SRC_PAGE_FLAGS | MEMDIFF_SRC_MAP_COUNTS;
    return avail & keep;
}

uint64_t memdiff__pss_of(const memdiff_snapshot *s, uint64_t aux, uint64_t n)
{
    uint64_t ps = s->info.page_size, sum = 0;
    if (aux == MEMDIFF__NO_AUX || !s->mapcount.present)
        return memdiff__mul_sat(memdiff__pss_fixed(ps, 1), n);
    memdiff__seq_iter it;
    memdiff__seq_seek(&s->mapcount, aux, &it);
    while (n) {
        uint64_t base;
        int step;
        uint64_t len = memdiff__seq_peek(&it, n, &base, &step);
        if (step == 0) {
            sum = memdiff__add_sat(sum, memdiff__mul_sat(memdiff__pss_fixed(ps, base), len));
        } else {
            for (uint64_t k = 0; k < len; k++)
                sum = memdiff__add_sat(
                    sum, memdiff__pss_fixed(ps, base + (uint64_t)((int64_t)step * (int64_t)k)));
        }
        memdiff__seq_skip(&it, len);
        n -= len;
    }
    return sum;
}

/* Each region's PSS from its resident runs' map counts: smaps' sum, page by page. */
static uint64_t tally_pss(memdiff_snapshot *s)
{
    uint64_t total = 0;
    for (size_t i = 0; i < s->region_count; i++) {
        memdiff__region *r = &s->regions[i];
        memdiff__runs_iter it;
        memdiff__run run;
        r->pss_fixed = 0;
        memdiff__runs_begin_region(s, i, &it);
        while (memdiff__runs_next(&it, &run))
            if (memdiff__attrs_resident(run.attrs))
                r->pss_fixed = memdiff__add_sat(r->pss_fixed, memdiff__pss_of(s, run.aux,
                                                                              run.npages));
        if (r->category != MEMDIFF_CAT_OWN)
            total = memdiff__add_sat(total, r->pss_fixed);
    }
    return total >> 12;
}

void memdiff__snapshot_tally(memdiff_snapshot *s)
{
    memdiff_snapshot_info *in = &s->info;
    uint64_t ps = in->page_size;
    in->resident_bytes = in->private_bytes = in->swapped_bytes = in->own_bytes = 0;
    /* PSS per page needs every resident page's map count: deep depth (a file keeps its
     * sources). PSS per mapping (MEMDIFF_SRC_PSS_MAPPINGS) is the regions' figures as smaps
     * gave them (mapping_pss.c), whole bytes each. */
    in->sources &= ~MEMDIFF_SRC_PSS;
    in->pss_bytes = 0;
    if (in->sources & MEMDIFF_SRC_MAP_COUNTS) {
        in->sources &= ~MEMDIFF_SRC_PSS_MAPPINGS;
        in->sources |= MEMDIFF_SRC_PSS;
        in->pss_bytes = tally_pss(s);
    } else if (in->sources & MEMDIFF_SRC_PSS_MAPPINGS) {
        for (size_t i = 0; i < s->region_count; i++)
            if (s->regions[i].category != MEMDIFF_CAT_OWN)
                in->pss_bytes = memdiff__add_sat(in->pss_bytes, s->regions[i].pss_fixed >> 12);
    }
    for (size_t i = 0; i < s->region_count; i++) {
        const memdiff__region *r = &s->regions[i];
        if (r->category == MEMDIFF_CAT_OWN) {
            /* Pages of Own are recorded by files and tests only: a snapshot taken now reads
             * none, and puts the arena's count here instead (take). */
            in->own_bytes += r->resident_pages * ps;
            continue;
        }
        in->resident_bytes += r->resident_pages * ps;
        in->private_bytes += r->private_pages * ps;
        in->swapped_bytes += r->swapped_pages * ps;
    }
    in->shared_bytes = in->resident_bytes - in->private_bytes;
    in->region_count = s->region_count;
    in->run_count = s->run_count;
}

/* The regions that are not wholly memdiff's own storage, in order, copied into arena: the
 * backend looks for heaps in anonymous memory by reading it, and memdiff's reservations, which
 * hold every live snapshot, are not the program's heaps (on kernels that cannot name memory they
 * look like any anonymous mapping). */
static int outside_own(const memdiff__plat_region *regions, size_t count,
                       const memdiff__range *own, size_t own_count, memdiff__arena *arena,
                       const memdiff__plat_region **out, size_t *out_count)
{
    memdiff__plat_region *kept = memdiff__arena_alloc_raw(arena, (count ? count : 1) *
                                                                     sizeof *kept);
    if (!kept)
        return MEMDIFF_ENOMEM;
    size_t n = 0, k = 0;
    for (size_t i = 0; i < count; i++) {
        while (k < own_count && own[k].end <= regions[i].start)
            k++;
        if (!(k < own_count && own[k].start <= regions[i].start && regions[i].end <= own[k].end))
            kept[n++] = regions[i];
    }
    *out = kept;
    *out_count = n;
    return MEMDIFF_OK;
}

static int take(const memdiff_options *o, unsigned flags, memdiff_snapshot *s,
                memdiff__arena *scratch)
{
    memdiff__proc *proc = NULL;
    memdiff__caps caps;
    memset(&caps, 0, sizeof caps);
    /* kpageflags and kpagecount are opened only for a deep snapshot (two opens and two closes
     * fewer for the others); a fast one, which stores no frames, need not ask whether frames
     * could be read (four syscalls fewer on Linux). */
    int frames_unused = o->depth == MEMDIFF_DEPTH_FAST && !(flags & MEMDIFF__TAKE_ACCESSED);
    memdiff__open_args args = {
        o->pid, o->fixture_root, NULL,
        (o->depth >= MEMDIFF_DEPTH_DEEP ? 0u : MEMDIFF__OPEN_NO_DEEP) |
            (flags & MEMDIFF__TAKE_EXACT ? MEMDIFF__OPEN_EXACT : 0u) |
            (frames_unused ? MEMDIFF__OPEN_NO_FRAMES : 0u),
        o->threads};
    char host[256];

    s->info.time_ns = memdiff__os_time_ns();
    memdiff__os_hostname(host, sizeof host);
    s->info.host = memdiff__arena_strndup(&s->arena, host, strlen(host));
    if (!s->info.host)
        return MEMDIFF_ENOMEM;

    int rc = memdiff__plat_open(&args, scratch, &proc, &caps);
    if (rc)
        return rc;
    if (flags & MEMDIFF__TAKE_ACCESSED)
        caps.sources |= memdiff__plat_refs_track_pages(proc);

    memdiff__facts f;
    memset(&f, 0, sizeof f);
    f.pid = caps.pid;
    f.self = o->pid == 0;
    if (f.self) {
        f.self_stack_hint = memdiff__os_stack_hint();
        f.self_tid = memdiff__os_thread_id();
    }
    const char *why = NULL;
    memdiff_depth depth = effective_depth(o->depth, &caps, &why);

    memdiff__plat_region *regions = NULL;
    memdiff__plat_thread *threads = NULL;
    memdiff__plat_module *modules = NULL;
    memdiff__plat_heap *heaps = NULL;
    memdiff__range *own = NULL;
    rc = memdiff__plat_regions(proc, scratch, &regions, &f.region_count);
    if (!rc)
        rc = memdiff__plat_threads(proc, scratch, &threads, &f.thread_count);
    if (!rc)
        rc = memdiff__plat_modules(proc, scratch, regions, f.region_count, &modules,
                                   &f.module_count);
    if (!rc && f.self)
        rc = memdiff__own_ranges(scratch, &own, &f.own_count);
    const memdiff__plat_region *probed = regions;
    size_t probed_count = f.region_count;
    if (!rc && f.own_count)
        rc = outside_own(regions, f.region_count, own, f.own_count, scratch, &probed,
                         &probed_count);
    if (!rc)
        rc = memdiff__plat_heaps(proc, scratch, probed, probed_count, &heaps, &f.heap_count);
    f.regions = regions;
    f.threads = threads;
    f.modules = modules;
    f.heaps = heaps;
    f.own = own;
    void (*hook)(void) = atomic_load_explicit(&while_taking, memory_order_relaxed);
    if (hook)
        hook();

    memdiff__strtab *table = NULL;
    if (!rc)
        rc = memdiff__classify(&f, &s->arena, &table, &s->regions, &s->region_count);
    /* PSS per mapping is read right after the region list it is matched to, so that a process
     * that runs has little time to change its mappings in between (mapping_pss.c). */
    unsigned pss_source = 0;
    const char *pss_note = NULL;
    if (!rc && (o->flags & MEMDIFF_SNAPSHOT_SMAPS_PSS) && depth < MEMDIFF_DEPTH_DEEP)
        rc = memdiff__mapping_pss(proc, scratch, s, &pss_source, &pss_note);

    builder b;
    memset(&b, 0, sizeof b);
    b.s = s;
    b.want_pfn = depth >= MEMDIFF_DEPTH_STANDARD && (caps.sources & MEMDIFF_SRC_FRAMES);
    b.want_kflags = depth >= MEMDIFF_DEPTH_DEEP;
    b.want_mapcount = depth >= MEMDIFF_DEPTH_DEEP;
    s->info.page_size = caps.page_size;
    memdiff__page_sink sink = {on_run, &b, on_run_frames, on_run_bits};
    for (size_t i = 0; !rc && i < s->region_count; i++) {
        if (s->regions[i].category == MEMDIFF_CAT_OWN)
            continue; /* no pages, no runs, no frames: memdiff__own_bytes() stands for them */
        b.region = i;
        rc = memdiff__plat_pages(proc, s->regions[i].start, s->regions[i].end, depth, &sink);
        if (rc == MEMDIFF_ENOMEM)
            memdiff__set_error(rc, "snapshot: out of memory storing page runs");
    }
    /* Totals come last: the backend then also tells whether the process exited during the
     * snapshot, which would have left some regions read whole and others torn down. */
    if (!rc)
        rc = memdiff__plat_totals(proc, &s->info.totals);
    /* A process maps its stack at least, resident or in swap: a walk that found no page at all
     * while the totals read after it count some read an address space caught in an exec (its
     * regions listed from the one torn down, or from the new one before its program was mapped
     * and its stack moved: tests/test_hostile.c). Taken again. */
    if (!rc && !f.self && s->run_count == 0 &&
        s->info.totals.vm_rss + s->info.totals.vm_swap > 0)
        rc = memdiff__set_error(MEMDIFF_ECHANGED,
                                "snapshot of %d: no page found where the process has %llu bytes "
                                "resident or in swap (it exec'd a program during the snapshot)",
                                caps.pid,
                                (unsigned long long)(s->info.totals.vm_rss +
                                                     s->info.totals.vm_swap));
    s->info.threads = memdiff__plat_pages_threads(proc);
    memdiff__plat_close(proc);
    if (rc)
        return rc;

    s->info.pid = caps.pid;
    s->info.depth_requested = o->depth;
    s->info.depth = depth;
    s->info.sources = used_sources(depth, caps.sources) | pss_source;
    if (why || pss_note) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s%s%s", why ? why : "", why && pss_note ? "; " : "",
                 pss_note ? pss_note : "");
        s->info.degraded = memdiff__arena_strndup(&s->arena, buf, strlen(buf));
        if (!s->info.degraded)
            return MEMDIFF_ENOMEM;
    }
    memdiff__snapshot_tally(s);
    s->info.own_bytes = f.self ? memdiff__own_bytes() : 0;
    s->info.storage_bytes = memdiff__arena_footprint(&s->arena);
    return MEMDIFF_OK;
}

/* memdiff__snapshot_take_flags() with checked options. */
static int take_retrying(const memdiff_options *o, unsigned flags, memdiff_snapshot **out)
{
    /* MEMDIFF_ECHANGED from the backend: what a shortcut of its walk rested on changed during
     * it (platform.h, MEMDIFF__OPEN_EXACT); once more without shortcuts, which cannot fail so. */
    for (unsigned attempts = 1;; attempts++) {
        /* The snapshot lives inside its own arena: one release frees everything, and keeps the
         * chunks for the next snapshot (memdiff_trim). */
        memdiff__arena a = MEMDIFF__ARENA_INIT;
        a.recycle = 1;
        memdiff_snapshot *s = memdiff__arena_alloc(&a, sizeof *s);
        if (!s)
            return MEMDIFF_ENOMEM;
        s->arena = a;
        memdiff__arena scratch = MEMDIFF__ARENA_INIT;
        int rc = take(o, flags, s, &scratch);
        memdiff__arena_release(&scratch);
        if (rc) {
            memdiff_snapshot_free(s);
            if (rc == MEMDIFF_ECHANGED && !(flags & MEMDIFF__TAKE_EXACT)) {
                flags |= MEMDIFF__TAKE_EXACT;
                continue;
            }
            return rc;
        }
        s->info.attempts = attempts;
        *out = s;
        return MEMDIFF_OK;
    }
}

int memdiff_snapshot_take(const memdiff_options *options, memdiff_snapshot **out)
{
    return memdiff__snapshot_take_flags(options, 0, out);
}

int memdiff__snapshot_take_flags(const memdiff_options *options, unsigned flags,
                                 memdiff_snapshot **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_take: out is NULL");
    *out = NULL;
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    if (options)
        o = *options;
    if (o.depth < MEMDIFF_DEPTH_FAST || o.depth > MEMDIFF_DEPTH_DEEP)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_take: unknown depth %d",
                                  (int)o.depth);
    if (o.pid < 0)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_take: invalid pid %d", o.pid);
    if (o.flags & ~(unsigned)MEMDIFF_SNAPSHOT_SMAPS_PSS)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_take: unknown flags 0x%x",
                                  o.flags);
    if (taking || memdiff__arena_busy())
        return memdiff__set_error(MEMDIFF_EBUSY, "memdiff_snapshot_take: this thread is inside "
                                                 "memdiff already (called from a signal handler "
                                                 "that interrupted it?); memdiff is not "
                                                 "async-signal-safe");
    taking = 1;
    int rc = take_retrying(&o, flags, out);
    taking = 0;
    return rc;
}

int memdiff_snapshot_self(memdiff_depth depth, memdiff_snapshot **out)
{
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.depth = depth;
    return memdiff_snapshot_take(&o, out);
}

void memdiff_snapshot_free(memdiff_snapshot *snapshot)
{
    if (snapshot) {
        memdiff__arena a = snapshot->arena; /* the struct itself lives in the arena */
        memdiff__arena_release(&a);
    }
}

int memdiff_snapshot_get_info(const memdiff_snapshot *snapshot, memdiff_snapshot_info *info)
{
    if (!snapshot || !info)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_get_info: NULL argument");
    *info = snapshot->info;
    return MEMDIFF_OK;
}

size_t memdiff_snapshot_region_count(const memdiff_snapshot *snapshot)
{
    return snapshot ? snapshot->region_count : 0;
}

static void export_region(const memdiff_snapshot *s, const memdiff__region *r, memdiff_region *out)
{
    uint64_t ps = s->info.page_size;
    out->start = r->start;
    out->end = r->end;
    out->prot = r->prot;
    out->flags = r->flags & (MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE);
    out->category = r->category;
    out->label = r->label;
    out->path = r->path;
    out->resident_bytes = r->resident_pages * ps;
    out->private_bytes = r->private_pages * ps;
    out->shared_bytes = (r->resident_pages - r->private_pages) * ps;
    out->swapped_bytes = r->swapped_pages * ps;
    unsigned pss = s->info.sources & (MEMDIFF_SRC_PSS | MEMDIFF_SRC_PSS_MAPPINGS);
    out->pss_bytes = pss ? r->pss_fixed >> 12 : 0;
    out->pss_end = pss & MEMDIFF_SRC_PSS ? r->end : pss ? r->pss_end : 0;
}

int memdiff_snapshot_region(const memdiff_snapshot *snapshot, size_t index, memdiff_region *out)
{
    if (!snapshot || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_region: NULL argument");
    if (index >= snapshot->region_count)
        return memdiff__set_error(MEMDIFF_ERANGE, "memdiff_snapshot_region: index %zu of %zu",
                                  index, snapshot->region_count);
    export_region(snapshot, &snapshot->regions[index], out);
    return MEMDIFF_OK;
}

int memdiff_snapshot_find(const memdiff_snapshot *snapshot, uint64_t addr, memdiff_region *out)
{
    if (!snapshot || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_find: NULL argument");
    size_t lo = 0, hi = snapshot->region_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (snapshot->regions[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == snapshot->region_count || snapshot->regions[lo].start > addr)
        return memdiff__set_error(MEMDIFF_ERANGE, "no region contains 0x%llx",
                                  (unsigned long long)addr);
    export_region(snapshot, &snapshot->regions[lo], out);
    return MEMDIFF_OK;
}
