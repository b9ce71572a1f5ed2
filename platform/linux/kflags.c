/*
 * kflags.c - deep depth's kernel page facts: kpageflags and kpagecount of the frames a pagemap
 * batch maps (Documentation/admin-guide/mm/pagemap.rst, "kpageflags", "kpagecount").
 *
 * Decoding a batch (pagemap.c) cuts its pages into segments of consecutive frames, up or down
 * (memdiff__linux_add_segments). memdiff__linux_frame_facts sorts the segments by their lowest
 * frame and reads both files per span of nearby frames into buffers that hold the whole batch;
 * kpagecount is not read where pagemap already said the count is 1 (small pages exclusively
 * mapped: most of a process's private memory), which halves deep's reads there. The facts go to
 * the sink as pieces pointing into those buffers (memdiff__linux_deep_run: one piece per segment,
 * or one value for all its pages), never copied page by page. No syscall per page.
 *
 * Owns struct memdiff__linux_facts (the sort keys, segments, read buffers and pieces); merges
 * the flags into the pagemap stage's attrs of the batch.
 */
#include <string.h>

#include "walk.h"

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
#define KPF_LARGE                                                                                  \
    (UINT64_C(1) << KPF_COMPOUND_HEAD | UINT64_C(1) << KPF_COMPOUND_TAIL |                         \
     UINT64_C(1) << KPF_HUGE | UINT64_C(1) << KPF_THP)

/* frame_facts sorts keys frame << SEG_BITS | segment index: a batch holds 2^SEG_BITS pages at
 * most, and frames from 2^(63 - SEG_BITS) on (far beyond any machine's) are not looked up. */
#define SEG_BITS 18
#define SEG_MASK ((UINT64_C(1) << SEG_BITS) - 1)
_Static_assert(MEMDIFF__LINUX_BATCH <= (1u << SEG_BITS) &&
                   MEMDIFF__LINUX_DEEP_BATCH <= (1u << SEG_BITS),
               "frame_facts packs a batch index in SEG_BITS bits");

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
size_t memdiff__linux_add_segments(memdiff__linux_walker *w, size_t i, size_t j, unsigned a,
                                   uint64_t f, uint64_t step, size_t m)
{
    struct memdiff__linux_facts *facts = w->facts;
    const uint64_t limit = UINT64_C(1) << (63 - SEG_BITS); /* frames a key holds */
    uint64_t len = j - i, low = step == 1 ? f : f - (step ? len - 1 : 0);
    if (!(a & MEMDIFF_PAGE_PRESENT))
        return m;
    if (low == 0 || f + (step == 1 ? len - 1 : 0) >= limit) {
        if (len == 1) /* frame 0, or beyond what a key holds: nothing to ask about */
            return m;
        for (size_t k = i; k < j; k++, f += step) /* page by page */
            m = memdiff__linux_add_segments(w, k, k + 1, a, f, 1, m);
        return m;
    }
    if (step == 0) { /* one frame again and again (the zero page): a segment a page */
        for (size_t k = i; k < j; k++) {
            facts->segs[m] = (struct memdiff__linux_seg){(uint32_t)k, 1, 0, 0};
            facts->sort_keys[m] = f << SEG_BITS | m;
            m++;
        }
        return m;
    }
    unsigned flags =
        (step != 1 && len > 1 ? SEG_DOWN : 0u) | (a & MEMDIFF_PAGE_PRIVATE ? SEG_EXCLUSIVE : 0u);
    facts->segs[m] = (struct memdiff__linux_seg){(uint32_t)i, (uint32_t)len, flags, 0};
    facts->sort_keys[m] = low << SEG_BITS | m;
    return m + 1;
}

/* The facts of segment g's page k (from its first), in the read buffer buf. */
static uint64_t seg_value(const uint64_t *buf, const struct memdiff__linux_seg *g, size_t k)
{
    return buf[g->off + ((g->flags & SEG_DOWN) ? g->len - 1 - k : k)];
}

/* After segment g's kernel flags were read (seg_flags, one a page): whether its pages have one
 * flags word, and whether their map count is known without kpagecount. It is where pagemap called
 * the pages exclusively mapped and they are small pages: pagemap sets that bit where the page's own
 * map count is 1 (page_mapcount() == 1 since Linux 4.2, later folio_precise_page_mapcount()),
 * and that count is what kpagecount reports. For the pages of a large folio the two may differ:
 * older kernels decided the bit for a whole PMD on its head page, and kernels built without
 * CONFIG_PAGE_MAPCOUNT report the folio's average count and set the bit where the folio is not
 * maybe shared. */
static void flag_facts(struct memdiff__linux_seg *g, const uint64_t *seg_flags)
{
    uint64_t f0 = seg_flags[0], diff = 0, any = f0;
    for (size_t k = 1; k < g->len; k++) {
        diff |= seg_flags[k] ^ f0;
        any |= seg_flags[k];
    }
    g->flags |= diff ? 0u : SEG_SAME_FLAGS;
    if ((g->flags & SEG_EXCLUSIVE) && !(any & KPF_LARGE))
        g->flags |= SEG_ONE_MAP | SEG_SAME_COUNT;
}

/* Reads kpagecount for the segments keys[0..n), sorted by frame, whose kernel flags one pread
 * read to frame_flags from index used on (frames from lo): those flag_facts did not find mapped
 * once, per span of nearby frames, each count to where its frame's flags are. */
static int read_counts(memdiff__proc *p, struct memdiff__linux_facts *facts, const uint64_t *keys,
                       size_t n, size_t used, uint64_t lo)
{
    uint64_t count_lo = 0, count_hi = 0;
    int open = 0;
    for (size_t u = 0; u <= n; u++) {
        const struct memdiff__linux_seg *g = u < n ? &facts->segs[keys[u] & SEG_MASK] : NULL;
        if (g && (g->flags & SEG_ONE_MAP))
            continue;
        uint64_t f = g ? keys[u] >> SEG_BITS : 0;
        if (g && open && f <= count_hi + FRAME_GAP) {
            count_hi = MEMDIFF__MAX(count_hi, f + g->len);
            continue;
        }
        if (open) {
            int rc = read_facts(p, 1, facts->map_counts + used + (count_lo - lo), count_lo,
                                (size_t)(count_hi - count_lo));
            if (rc)
                return rc;
        }
        open = g != NULL;
        count_lo = f;
        count_hi = g ? f + g->len : 0;
    }
    return MEMDIFF_OK;
}

/* After the reads: merges each segment's kernel flags into its pages' attrs and notes which
 * segments have one map count for all their pages (one piece each later). */
static void place_facts(struct memdiff__linux_facts *facts, unsigned *batch_attrs, size_t m)
{
    const uint64_t *all_flags = facts->kernel_flags, *all_counts = facts->map_counts;
    for (size_t u = 0; u < m; u++) {
        struct memdiff__linux_seg *g = &facts->segs[u];
        unsigned *attrs = batch_attrs + g->page;
        size_t len = g->len;
        if (!(g->flags & SEG_SAME_COUNT)) {
            const uint64_t *seg_counts = all_counts + g->off;
            uint64_t c0 = seg_counts[0], cdiff = 0;
            for (size_t k = 1; k < len; k++)
                cdiff |= seg_counts[k] ^ c0;
            g->flags |= cdiff ? 0u : SEG_SAME_COUNT;
        }
        if (g->flags & SEG_SAME_FLAGS) {
            unsigned a = kpf_attrs(all_flags[g->off]);
            for (size_t k = 0; k < len; k++)
                attrs[k] |= a;
            continue;
        }
        uint64_t last =
            seg_value(all_flags, g, 0); /* neighbouring pages mostly share their flags */
        unsigned a = kpf_attrs(last);
        for (size_t k = 0; k < len; k++) {
            uint64_t v = seg_value(all_flags, g, k);
            if (v != last) {
                last = v;
                a = kpf_attrs(v);
            }
            attrs[k] |= a;
        }
    }
}

/* Reads kpageflags and kpagecount for the batch's segments (w->seg_count, from decode()) and merges
 * the flags into attrs: the segments sorted by their lowest frame, neighbouring ones share a
 * pread of each file, into read buffers that hold the whole batch; kpagecount is read only where
 * pagemap and the flags leave the count open (flag_facts). */
int memdiff__linux_frame_facts(memdiff__linux_walker *w)
{
    memdiff__proc *p = w->proc;
    struct memdiff__linux_facts *facts = w->facts;
    size_t m = w->seg_count;
    if (m == 0)
        return MEMDIFF_OK;
    /* By frame alone: the index below it only breaks ties, which a stable sort of keys made in
     * index order breaks the same way (two of the four passes). */
    const uint64_t *keys =
        memdiff__linux_radix_sort(facts->sort_keys, facts->sort_tmp, m, SEG_BITS);
    /* Room: every segment's frames, and what is left of it for holes read through. */
    size_t need = 0;
    for (size_t u = 0; u < m; u++)
        need += facts->segs[u].len;
    size_t room = (size_t)FACT_ROOM * w->batch - need, used = 0, s = 0;
    while (s < m) {
        const struct memdiff__linux_seg *g = &facts->segs[keys[s] & SEG_MASK];
        uint64_t lo = keys[s] >> SEG_BITS, hi = lo + g->len;
        size_t t = s + 1;
        while (t < m) {
            uint64_t f = keys[t] >> SEG_BITS, e = f + facts->segs[keys[t] & SEG_MASK].len;
            if (f > hi + FRAME_GAP || (f > hi && f - hi > room))
                break;
            if (f > hi)
                room -= (size_t)(f - hi);
            hi = MEMDIFF__MAX(hi, e);
            t++;
        }
        int rc = read_facts(p, 0, facts->kernel_flags + used, lo, (size_t)(hi - lo));
        if (rc)
            return rc;
        for (size_t u = s; u < t; u++) {
            struct memdiff__linux_seg *h = &facts->segs[keys[u] & SEG_MASK];
            h->off = (uint32_t)(used + (keys[u] >> SEG_BITS) - lo);
            flag_facts(h, facts->kernel_flags + h->off);
        }
        if ((rc = read_counts(p, facts, keys + s, t - s, used, lo)))
            return rc;
        used += (size_t)(hi - lo);
        s = t;
    }
    place_facts(facts, w->pagemap->attrs, m);
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
int memdiff__linux_deep_run(memdiff__linux_walker *w, uint64_t addr, size_t i, size_t j, unsigned a,
                            size_t *u)
{
    struct memdiff__linux_facts *facts = w->facts;
    const struct memdiff__linux_seg *segs = facts->segs;
    const uint64_t *frames = w->pagemap->entries;
    memdiff__values *kernel_flags = facts->flag_pieces, *map_counts = facts->count_pieces,
                    *frame_pieces = facts->frame_pieces;
    const size_t m = w->seg_count;
    uint64_t ps = w->proc->page_size;
    size_t from = i, np = 0;
    for (size_t k = i; k <= j;) {
        while (*u < m && segs[*u].page + segs[*u].len <= k)
            (*u)++;
        if (k == j || np == MEMDIFF__LINUX_FS) {
            int rc = w->sink->run_frames(w->sink->ctx, addr + from * ps, k - from, a, frame_pieces,
                                         np, kernel_flags, np, map_counts, np);
            if (rc || k == j)
                return rc;
            from = k;
            np = 0;
        }
        size_t n;
        if (*u < m && segs[*u].page <= k) {
            const struct memdiff__linux_seg *g = &segs[*u];
            n = MEMDIFF__MIN(j, (size_t)g->page + g->len) - k;
            kernel_flags[np] = seg_piece(facts->kernel_flags, g, k - g->page, n, SEG_SAME_FLAGS);
            map_counts[np] = (g->flags & SEG_ONE_MAP)
                                 ? (memdiff__values){1, 0, n, NULL}
                                 : seg_piece(facts->map_counts, g, k - g->page, n, SEG_SAME_COUNT);
            /* The segment's frames: a stretch from the frame of page k. */
            frame_pieces[np] =
                (memdiff__values){frames[k], (g->flags & SEG_DOWN) ? -1 : 1, n, NULL};
        } else {
            n = (*u < m && segs[*u].page < j ? segs[*u].page : j) - k;
            kernel_flags[np] = map_counts[np] = (memdiff__values){0, 0, n, NULL};
            frame_pieces[np] = (memdiff__values){0, 1, n, frames + k}; /* as decoded */
        }
        np++;
        k += n;
    }
    return MEMDIFF_OK;
}

int memdiff__linux_facts_buffers(memdiff__proc *p, struct memdiff__linux_facts *facts, size_t batch)
{
    /* One block, about 1 MiB at 16K pages a batch: the sort keys and their scratch, the
     * segments, the read buffers (room for a batch of frames and as many entries again read
     * through holes) and the pieces of one run. */
    const size_t B = batch;
    size_t bytes =
        (2 * sizeof(uint64_t) + sizeof *facts->segs + 2 * FACT_ROOM * sizeof(uint64_t)) * B +
        3 * MEMDIFF__LINUX_FS * sizeof *facts->flag_pieces;
    uint64_t *block = memdiff__arena_alloc_raw(p->scratch, bytes);
    if (!block)
        return MEMDIFF_ENOMEM;
    facts->sort_keys = block;
    facts->sort_tmp = block + B;
    facts->kernel_flags = block + 2 * B;
    facts->map_counts = facts->kernel_flags + FACT_ROOM * B;
    facts->segs = (struct memdiff__linux_seg *)(facts->map_counts + FACT_ROOM * B);
    facts->flag_pieces = (memdiff__values *)(facts->segs + B);
    facts->count_pieces = facts->flag_pieces + MEMDIFF__LINUX_FS;
    facts->frame_pieces = facts->count_pieces + MEMDIFF__LINUX_FS;
    return MEMDIFF_OK;
}
