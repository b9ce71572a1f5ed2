/*
 * compare.c - the difference of two snapshots: a merge walk over both snapshots' regions and page
 * runs, in address order, and the diff's accessors.
 *
 * The walk visits maximal intervals over which four things are constant: the before region (or
 * none), the before page attributes (0 where no run covers the page: mapped, not resident), the
 * after region and the after attributes. Every interval ends at a region or run boundary of one
 * side, so the walk costs O(regions + runs) whatever the size of the address space; it goes page
 * by page only where both snapshots carry frame numbers for the pages and exclusivity did not
 * change, because only there can pages of one interval differ. What each interval means:
 *
 *  - A page costs memory when memdiff__attrs_resident() (present, not the shared zero page).
 *    Pages resident on neither side are left out, swapped or not.
 *  - Mapping identity: the before and after regions at an address are the same mapping when both
 *    exist with equal device, inode, SHARED and FILE flags, category and label (owner: a library
 *    loaded where another was unloaded has an anonymous .bss at the same address), and, for file
 *    regions, the same file offset at that address. Otherwise the address was unmapped and
 *    mapped again (or never mapped on one side): before's resident pages are freed-unmapped
 *    (before region), after's resident pages are new (after region).
 *  - Same mapping: resident after only: new. Resident before only: freed, swapped out when the
 *    after page is in swap, else discarded (MADV_DONTNEED, reclaim, truncation). Resident in both:
 *    became-private / became-shared when both snapshots know exclusivity (standard depth and
 *    deeper: memdiff__knows_privacy) and the exclusive bit differs, whether or not the frame
 *    changed too; else replaced when both sides know the page's frame (nonzero) and the frames
 *    differ; else unchanged. Sharing comes first so that one event has one name with and
 *    without privilege: a copy-on-write copy is a new frame that became private, and frames
 *    are known only with CAP_SYS_ADMIN, exclusivity without it. Replaced is thus a frame change
 *    with sharing unchanged (migration, compaction, a private page discarded and written
 *    again) or unknown (fast depth).
 *  - New pages are private or shared by the after page's PRIVATE bit when the after snapshot
 *    knows exclusivity. Without it (fast depth) exclusivity is unknown and estimated:
 *    a page the kernel calls file-backed (page cache, shared anonymous: MEMDIFF_PAGE_FILE) counts
 *    as shared, anything else as private. Blind spot: anonymous pages still shared copy-on-write
 *    with a forked parent or child count as private.
 *  - Attribution: new, replaced and became-* pages belong to the after region (its category,
 *    label and allocation unit), freed pages to the before region.
 *  - Own: pages attributed to a region of memdiff's own storage are counted in category[OWN]
 *    only: never in the diff's total, never in a block. The attributed region decides, not
 *    either side: memdiff releases scratch chunks right after a snapshot and the process's next
 *    mmap often lands on their address, so "Own on either side" would hide the process's new
 *    pages (it hid a fresh 32 KiB mapping in the first real run). There, before's Own pages
 *    are freed-unmapped in Own and after's pages are new in their own category.
 *  - A block's presence says in which snapshot the block's mapping exists: both for changes
 *    within one mapping, before only for pages freed because their mapping went (even when
 *    another mapping took its place), after only for pages of a mapping that is new.
 *  - Range: the diff's figures are signed 64-bit, and two valid files can free 2^63 bytes (a
 *    region may end just below 2^64). Counts add up saturating (internal.h) and a diff with a
 *    count above INT64_MAX is refused with MEMDIFF_ERANGE (check_range), so that every figure
 *    of a diff handed out is exact.
 *  - Reference-set brackets (memdiff__compare_refs, refs not NULL) also count per page:
 *    persistent, resident in both snapshots of one mapping (unchanged pages too, which then go
 *    to the walk as pieces with outcome NONE); touched, a page resident after that the after
 *    snapshot marks MEMDIFF_PAGE_ACCESSED (per-page tracking), or any page resident after when
 *    the OS's reset emptied residency (Windows). With per-mapping figures instead
 *    (region_touched), each after region's touched bytes go to its block as one piece spanning
 *    the region, when the walk enters the region (the mapping says how many, not which).
 *
 * Storage: everything the diff holds (blocks, labels, the infos' strings) is copied into the
 * diff's own arena, so that it outlives both snapshots; nothing is taken from malloc.
 */
#include <string.h>

#include "internal.h"

/* One snapshot's position in the walk. */
typedef struct side {
    const memdiff_snapshot *snap;
    size_t ri;                    /* first region that ends above the walk's address */
    memdiff__runs_iter runs;      /* the runs after next_run */
    memdiff__run next_run;        /* first run that ends above the walk's address, if have_run */
    int have_run;
    const memdiff__region *region; /* the region at the address, or NULL */
    const memdiff__run *run;      /* the run at the address (&next_run), or NULL */
    unsigned attrs;               /* the run's attrs, 0 when not resident (or unmapped) */
    const memdiff__region *label_of; /* one-entry cache: region whose label was last interned */
    const char *label;
    /* Where the last piece's map counts ended (PSS): pieces come in address order, so the next
     * one's usually lie at or after it, a forward skip instead of a binary search. */
    memdiff__seq_iter counts_at;
    int counts_kept;
} side;

typedef struct walk {
    memdiff_diff *diff;
    memdiff__strtab *strings;
    memdiff__blocks *blocks;
    side b, a;
    uint64_t page_size;
    const memdiff__region *same_b, *same_a; /* one-entry cache of same_mapping() */
    int same;
    int frames;   /* both snapshots carry frame numbers */
    int privacy;  /* both snapshots read the pagemap exclusive bit */
    int new_by_private_bit;
    int pss;      /* both snapshots know PSS (MEMDIFF_SRC_PSS) */
    const memdiff__refs_in *refs; /* bracket diffs: where touched pages come from; else NULL */
    size_t touched_region;        /* the after region whose per-mapping touched bytes went last */
} walk;

static uint64_t run_end(const side *sd, const memdiff__run *r)
{
    return r->start + r->npages * sd->snap->info.page_size;
}

/* Positions sd at addr and returns the next address above addr where its state changes
 * (UINT64_MAX when none). Cursors only move forward: the walk's addresses ascend. */
static uint64_t side_seek(side *sd, uint64_t addr)
{
    const memdiff_snapshot *s = sd->snap;
    uint64_t next = UINT64_MAX;
    while (sd->ri < s->region_count && s->regions[sd->ri].end <= addr)
        sd->ri++;
    sd->region = NULL;
    if (sd->ri < s->region_count) {
        const memdiff__region *r = &s->regions[sd->ri];
        if (r->start <= addr) {
            sd->region = r;
            next = r->end;
        } else {
            next = r->start;
        }
    }
    while (sd->have_run && run_end(sd, &sd->next_run) <= addr)
        sd->have_run = memdiff__runs_next(&sd->runs, &sd->next_run);
    sd->run = NULL;
    if (sd->have_run) {
        const memdiff__run *u = &sd->next_run;
        if (u->start <= addr) {
            sd->run = u;
            next = MEMDIFF__MIN(next, run_end(sd, u));
        } else {
            next = MEMDIFF__MIN(next, u->start);
        }
    }
    if (!sd->region)
        sd->run = NULL; /* a run outside every region would be corrupt: the page is unmapped */
    sd->attrs = sd->run ? sd->run->attrs : 0;
    return next;
}

/* Whether the snapshot has frame numbers for sd's current run (from aux index run.aux). */
static int run_frames(const side *sd)
{
    const memdiff_snapshot *s = sd->snap;
    const memdiff__run *r = sd->run;
    return s->frames.present && r && r->aux != MEMDIFF__NO_AUX && r->aux <= s->aux_count &&
           r->npages <= s->aux_count - r->aux;
}

/* Whether regions b and a are one mapping. The file offset test holds at every address or at
 * none (offset - start on both sides), so the answer depends on the pair alone and is kept for
 * the next interval, which usually has the same pair. */
static int same_mapping(walk *w, const memdiff__region *b, const memdiff__region *a)
{
    if (b == w->same_b && a == w->same_a && b)
        return w->same;
    const unsigned kind = MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE;
    int same = b && a && b->dev == a->dev && b->inode == a->inode &&
               (b->flags & kind) == (a->flags & kind) && b->category == a->category &&
               strcmp(b->label, a->label) == 0 &&
               (!(b->flags & MEMDIFF_REGION_FILE) || b->offset - b->start == a->offset - a->start);
    w->same_b = b;
    w->same_a = a;
    w->same = same;
    return same;
}

static const char *label_of(walk *w, side *sd, const memdiff__region *r)
{
    if (sd->label_of != r) {
        sd->label = memdiff__intern(&w->strings, &w->diff->arena, r->label);
        if (!sd->label)
            return NULL;
        sd->label_of = r;
    }
    return sd->label;
}

/* Counts piece p (its range and outcome set) into the category of region r (or Own) and hands
 * it to the block builder. */
static int emit_piece(walk *w, side *sd, const memdiff__region *r, memdiff__piece *p)
{
    if ((unsigned)r->category >= MEMDIFF_CAT_COUNT)
        return memdiff__set_error(MEMDIFF_EFORMAT, "region 0x%llx: category %d out of range",
                                  (unsigned long long)r->start, (int)r->category);
    memdiff_category cat = r->category;
    memdiff_impact *m = &w->diff->impact_category[cat];
    memdiff__totals_count(&w->diff->category[cat], p->outcome, p->end - p->start);
    memdiff__totals_pss(&w->diff->category[cat], p->pss_gain, p->pss_loss);
    m->touched_bytes = memdiff__add_sat(m->touched_bytes, p->touched);
    m->touched_estimated_bytes = memdiff__add_sat(m->touched_estimated_bytes, p->touched_estimated);
    m->touched_max_bytes = memdiff__add_sat(m->touched_max_bytes, p->touched_max);
    m->persistent_bytes = memdiff__add_sat(m->persistent_bytes, p->persistent);
    if (cat == MEMDIFF_CAT_OWN)
        return MEMDIFF_OK;
    p->category = cat;
    p->label = label_of(w, sd, r);
    if (!p->label)
        return MEMDIFF_ENOMEM;
    p->unit = r->unit;
    return memdiff__blocks_add(w->blocks, p);
}

/* Bracket diffs: whether pages resident after with attrs_after were accessed, per page. */
static int touched_page(const walk *w, unsigned attrs_after)
{
    const memdiff__refs_in *r = w->refs;
    if (!r || !memdiff__attrs_resident(attrs_after))
        return 0;
    return r->resident_is_touched || (r->accessed_bit && (attrs_after & MEMDIFF_PAGE_ACCESSED));
}

/* A side's map counts from a page on: those of its current run, or none (each page whole). */
typedef struct mapcounts {
    memdiff__seq_iter it;
    int none;
} mapcounts;

static void counts_open(mapcounts *c, const walk *w, const side *sd, uint64_t lo)
{
    const memdiff__run *r = sd->run;
    const memdiff_snapshot *s = sd->snap;
    c->none = !r || r->aux == MEMDIFF__NO_AUX || !s->mapcount.present;
    if (c->none)
        return;
    uint64_t i = r->aux + memdiff__in_pages(lo - r->start, w->page_size);
    if (sd->counts_kept && sd->counts_at.i <= i) {
        c->it = sd->counts_at;
        memdiff__seq_skip(&c->it, i - c->it.i);
    } else {
        memdiff__seq_seek(&s->mapcount, i, &c->it);
    }
}

/* Keeps where a piece's map counts ended, for the next piece's counts_open. */
static void counts_keep(side *sd, const mapcounts *c)
{
    if (!c->none) {
        sd->counts_at = c->it;
        sd->counts_kept = 1;
    }
}

static uint64_t counts_peek(const mapcounts *c, uint64_t max, uint64_t *base, int *step)
{
    if (c->none) {
        *base = 0;
        *step = 0;
        return max;
    }
    return memdiff__seq_peek(&c->it, max, base, step);
}

/* p's PSS gained and lost, page by page: after's PSS where the after page counts (res_a) less
 * before's where the before page counts (res_b), a stretch of constant map counts at once; each
 * sum is rounded down to bytes once per piece. */
static void piece_pss(walk *w, memdiff__piece *p, int res_b, int res_a)
{
    uint64_t ps = w->page_size, n = memdiff__in_pages(p->end - p->start, ps);
    uint64_t gain = 0, loss = 0;
    mapcounts cb, ca;
    counts_open(&cb, w, &w->b, p->start);
    counts_open(&ca, w, &w->a, p->start);
    while (n) {
        uint64_t bb, ba;
        int sb, sa;
        uint64_t len = counts_peek(&cb, n, &bb, &sb);
        len = counts_peek(&ca, len, &ba, &sa);
        for (uint64_t k = 0; k < len;) {
            int64_t j = (int64_t)k;
            uint64_t xb = res_b ? memdiff__pss_fixed(ps, bb + (uint64_t)(sb * j)) : 0;
            uint64_t xa = res_a ? memdiff__pss_fixed(ps, ba + (uint64_t)(sa * j)) : 0;
            uint64_t m = sb || sa ? 1 : len - k;
            if (xa > xb)
                gain = memdiff__add_sat(gain, memdiff__mul_sat(xa - xb, m));
            else
                loss = memdiff__add_sat(loss, memdiff__mul_sat(xb - xa, m));
            k += m;
        }
        if (!cb.none)
            memdiff__seq_skip(&cb.it, len);
        if (!ca.none)
            memdiff__seq_skip(&ca.it, len);
        n -= len;
    }
    counts_keep(&w->b, &cb);
    counts_keep(&w->a, &ca);
    p->pss_gain = gain >> 12;
    p->pss_loss = loss >> 12;
}

/* Counts [lo, hi) with one outcome into the attributed region's category (or Own) and hands it
 * to the block builder. from_after: the pages belong to the after region, else to the before.
 * In bracket diffs the pages are persistent when they were resident on both sides (outcomes
 * that keep a page, and NONE), and touched as touched_page() says for pages of the after side. */
static int emit(walk *w, uint64_t lo, uint64_t hi, memdiff__outcome outcome, int from_after,
                unsigned presence, unsigned attrs_before, unsigned attrs_after)
{
    side *sd = from_after ? &w->a : &w->b;
    memdiff__piece p;
    memset(&p, 0, sizeof p);
    p.start = lo;
    p.end = hi;
    p.outcome = outcome;
    p.presence = presence;
    if (w->diff->flags & MEMDIFF_COMPARE_VERBOSE) {
        p.attrs_before = attrs_before;
        p.attrs_after = attrs_after;
    }
    if (w->refs) {
        if (outcome == MEMDIFF__OUT_REPLACED || outcome == MEMDIFF__OUT_BECAME_PRIVATE ||
            outcome == MEMDIFF__OUT_BECAME_SHARED || outcome == MEMDIFF__OUT_NONE)
            p.persistent = hi - lo;
        if (from_after && touched_page(w, attrs_after))
            p.touched = p.touched_max = hi - lo;
    }
    if (w->pss && outcome != MEMDIFF__OUT_NONE) {
        int kept = outcome == MEMDIFF__OUT_REPLACED || outcome == MEMDIFF__OUT_BECAME_PRIVATE ||
                   outcome == MEMDIFF__OUT_BECAME_SHARED;
        int is_new = outcome == MEMDIFF__OUT_NEW_PRIVATE || outcome == MEMDIFF__OUT_NEW_SHARED;
        piece_pss(w, &p, !is_new, kept || is_new);
    }
    return emit_piece(w, sd, sd->region, &p);
}

/* Bracket diffs with per-mapping touched bytes: those of the after region the walk just
 * entered, as one piece over the whole region (the mapping says how many pages were touched,
 * not which). */
static int emit_region_touched(walk *w)
{
    const memdiff_snapshot *s = w->a.snap;
    const memdiff__region *r = w->a.region;
    size_t index = (size_t)(r - s->regions);
    if (index == w->touched_region)
        return MEMDIFF_OK;
    w->touched_region = index;
    uint64_t bytes = w->refs->region_touched[index];
    if (!bytes)
        return MEMDIFF_OK;
    memdiff__piece p;
    memset(&p, 0, sizeof p);
    p.start = r->start;
    p.end = r->end;
    p.outcome = MEMDIFF__OUT_NONE;
    p.touched = bytes;
    p.touched_estimated = w->refs->region_estimated ? w->refs->region_estimated[index] : 0;
    p.touched_max = w->refs->region_max ? w->refs->region_max[index] : bytes;
    p.presence = MEMDIFF_IN_AFTER | (same_mapping(w, w->b.region, r) ? MEMDIFF_IN_BEFORE : 0);
    return emit_piece(w, &w->a, r, &p);
}

static memdiff__outcome new_outcome(const walk *w, unsigned attrs_after)
{
    if (w->new_by_private_bit)
        return (attrs_after & MEMDIFF_PAGE_PRIVATE) ? MEMDIFF__OUT_NEW_PRIVATE
                                                    : MEMDIFF__OUT_NEW_SHARED;
    return (attrs_after & MEMDIFF_PAGE_FILE) ? MEMDIFF__OUT_NEW_SHARED : MEMDIFF__OUT_NEW_PRIVATE;
}

/* Pages resident in both snapshots of one mapping, with frame numbers on both sides. Frames are
 * stored as stretches base + step * k (seq.c): memdiff__seq_mismatch passes equal
 * stretches whole, and only where frames differ are pages looked at one by one (from the
 * stretches' bases, without reading memory). Consecutive pages with the same outcome are handed
 * on as one piece. */
typedef struct pieces {
    uint64_t start;
    memdiff__outcome cur;
} pieces;

/* Pages [addr, end) have outcome o: extends the current piece or emits it and starts another. */
static int piece_to(walk *w, pieces *p, uint64_t addr, memdiff__outcome o)
{
    if (o == p->cur)
        return MEMDIFF_OK;
    if (addr > p->start && (p->cur != MEMDIFF__OUT_NONE || w->refs)) { /* brackets: NONE too */
        int rc = emit(w, p->start, addr, p->cur, 1, MEMDIFF_IN_BEFORE | MEMDIFF_IN_AFTER,
                      w->b.attrs, w->a.attrs);
        if (rc)
            return rc;
    }
    p->cur = o;
    p->start = addr;
    return MEMDIFF_OK;
}

/* [lo, hi) of one interval whose exclusivity did not change (or is unknown): replaced where
 * both frames are known and differ, else unchanged. */
static int compare_frames(walk *w, uint64_t lo, uint64_t hi)
{
    uint64_t ps = w->page_size;
    const memdiff_snapshot *sb = w->b.snap, *sa = w->a.snap;
    uint64_t ib = w->b.run->aux + memdiff__in_pages(lo - w->b.run->start, ps);
    uint64_t ia = w->a.run->aux + memdiff__in_pages(lo - w->a.run->start, ps);
    uint64_t n = memdiff__in_pages(hi - lo, ps);
    pieces p = {lo, MEMDIFF__OUT_NONE};
    for (uint64_t k = 0; k < n;) {
        uint64_t same = memdiff__seq_mismatch(&sb->frames, ib + k, &sa->frames, ia + k, n - k);
        int rc = same ? piece_to(w, &p, lo + k * ps, MEMDIFF__OUT_NONE) : MEMDIFF_OK;
        if (rc)
            return rc;
        k += same;
        if (k == n)
            break;
        /* Frames differ from page k: the stretch pair there, page by page. */
        memdiff__seq_iter fb, fa;
        uint64_t bb, ba;
        int stb, sta;
        memdiff__seq_seek(&sb->frames, ib + k, &fb);
        memdiff__seq_seek(&sa->frames, ia + k, &fa);
        uint64_t len = memdiff__seq_peek(&fb, n - k, &bb, &stb);
        len = memdiff__seq_peek(&fa, len, &ba, &sta);
        for (uint64_t j = 0; j < len; j++) {
            uint64_t xb = bb + (uint64_t)((int64_t)stb * (int64_t)j);
            uint64_t xa = ba + (uint64_t)((int64_t)sta * (int64_t)j);
            memdiff__outcome o =
                xb && xa && xb != xa ? MEMDIFF__OUT_REPLACED : MEMDIFF__OUT_NONE;
            if ((rc = piece_to(w, &p, lo + (k + j) * ps, o)))
                return rc;
        }
        k += len;
    }
    if (hi > p.start && (p.cur != MEMDIFF__OUT_NONE || w->refs))
        return emit(w, p.start, hi, p.cur, 1, MEMDIFF_IN_BEFORE | MEMDIFF_IN_AFTER, w->b.attrs,
                    w->a.attrs);
    return MEMDIFF_OK;
}

static int compare_interval(walk *w, uint64_t lo, uint64_t hi)
{
    const memdiff__region *rb = w->b.region, *ra = w->a.region;
    unsigned ab = w->b.attrs, aa = w->a.attrs;
    int res_b = rb && memdiff__attrs_resident(ab);
    int res_a = ra && memdiff__attrs_resident(aa);
    if (!res_b && !res_a)
        return MEMDIFF_OK;

    if (!same_mapping(w, rb, ra)) {
        /* The other side's attributes belong to another mapping: a block shows its own only. */
        int rc = MEMDIFF_OK;
        if (res_b)
            rc = emit(w, lo, hi, MEMDIFF__OUT_FREED_UNMAPPED, 0, MEMDIFF_IN_BEFORE, ab, 0);
        if (!rc && res_a)
            rc = emit(w, lo, hi, new_outcome(w, aa), 1, MEMDIFF_IN_AFTER, 0, aa);
        return rc;
    }

    const unsigned both = MEMDIFF_IN_BEFORE | MEMDIFF_IN_AFTER;
    if (!res_a) {
        memdiff__outcome o = (aa & MEMDIFF_PAGE_SWAPPED) ? MEMDIFF__OUT_FREED_SWAPPED
                                                         : MEMDIFF__OUT_FREED_DISCARDED;
        return emit(w, lo, hi, o, 0, both, ab, aa);
    }
    if (!res_b)
        return emit(w, lo, hi, new_outcome(w, aa), 1, both, ab, aa);

    /* Exclusivity is one per interval (it is in the attrs): when it changed, it names every
     * page of the interval, frames or not (the header comment says why). */
    if (w->privacy && ((ab ^ aa) & MEMDIFF_PAGE_PRIVATE))
        return emit(w, lo, hi,
                    (aa & MEMDIFF_PAGE_PRIVATE) ? MEMDIFF__OUT_BECAME_PRIVATE
                                                : MEMDIFF__OUT_BECAME_SHARED,
                    1, both, ab, aa);
    if (w->frames && run_frames(&w->b) && run_frames(&w->a))
        return compare_frames(w, lo, hi);
    if (w->refs)
        return emit(w, lo, hi, MEMDIFF__OUT_NONE, 1, both, ab, aa);
    return MEMDIFF_OK;
}

/* A copy of info whose strings live in the diff. */
static int copy_info(walk *w, const memdiff_snapshot_info *in, memdiff_snapshot_info *out)
{
    *out = *in;
    if (in->host && !(out->host = memdiff__intern(&w->strings, &w->diff->arena, in->host)))
        return MEMDIFF_ENOMEM;
    if (in->degraded &&
        !(out->degraded = memdiff__intern(&w->strings, &w->diff->arena, in->degraded)))
        return MEMDIFF_ENOMEM;
    return MEMDIFF_OK;
}

static uint64_t popcount64(uint64_t x)
{
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
    return (x * UINT64_C(0x0101010101010101)) >> 56;
}

/* Whether the frames of the set pages of a bitmap record are the same on both sides (or not
 * both known, when frames cannot tell pages apart). */
static int same_frames(const walk *w, const memdiff__run_rec *rb, const memdiff__run_rec *ra,
                       const uint64_t *bits, size_t words)
{
    if (!w->frames || rb->aux == MEMDIFF__NO_AUX || ra->aux == MEMDIFF__NO_AUX)
        return 1;
    uint64_t n = 0;
    for (size_t i = 0; i < words; i++)
        n += popcount64(bits[i]);
    const memdiff_snapshot *b = w->b.snap, *a = w->a.snap;
    if (rb->aux > b->aux_count || n > b->aux_count - rb->aux || ra->aux > a->aux_count ||
        n > a->aux_count - ra->aux)
        return 0; /* let the page walk find what is wrong */
    return memdiff__seq_equal(&b->frames, rb->aux, &a->frames, ra->aux, n);
}

/* When both snapshots hold the same bitmap record at addr (same span, attrs, bits and frames)
 * in one mapping, nothing changed in its span: the walk passes it whole, with a memcmp and a
 * look at the frame stretches instead of an interval per run. Sets *to to the span's end. */
static int skip_same_bitmap(walk *w, uint64_t addr, uint64_t *to)
{
    side *b = &w->b, *a = &w->a;
    /* Reference-set brackets count unchanged pages too (persistent, touched per mapping when the
     * walk enters a region): they visit every interval. */
    if (w->refs || !b->have_run || !a->have_run || b->next_run.start != addr ||
        a->next_run.start != addr)
        return 0;
    const uint64_t *xb, *xa;
    const memdiff__run_rec *rb = memdiff__runs_bitmap(&b->runs, &xb);
    const memdiff__run_rec *ra = memdiff__runs_bitmap(&a->runs, &xa);
    if (!rb || !ra || rb->start != addr || ra->start != addr || rb->npages != ra->npages ||
        rb->attrs != ra->attrs || rb->region >= b->snap->region_count ||
        ra->region >= a->snap->region_count)
        return 0;
    uint64_t end = addr + rb->npages * w->page_size;
    size_t words = (size_t)((rb->npages + 63) / 64);
    const memdiff__region *gb = &b->snap->regions[rb->region];
    const memdiff__region *ga = &a->snap->regions[ra->region];
    if (gb->start > addr || gb->end < end || ga->start > addr || ga->end < end ||
        !same_mapping(w, gb, ga) || memcmp(xb, xa, words * sizeof *xb) != 0 ||
        !same_frames(w, rb, ra, xb, words))
        return 0;
    memdiff__runs_skip_bitmap(&b->runs);
    memdiff__runs_skip_bitmap(&a->runs);
    b->have_run = memdiff__runs_next(&b->runs, &b->next_run);
    a->have_run = memdiff__runs_next(&a->runs, &a->next_run);
    *to = end;
    return 1;
}

/* The first byte count of t or m above MEMDIFF__FIGURE_MAX: its name, and its value in *v;
 * NULL when all fit. Impacting bytes are new + freed, two figures that fit: they
 * fit a uint64_t and are no figure of their own. */
static const char *too_large(const memdiff_totals *t, const memdiff_impact *m, uint64_t *v)
{
    const struct {
        const char *name;
        uint64_t bytes;
    } counts[] = {
        {"new", t->new_bytes},
        {"new private", t->new_private_bytes},
        {"new shared", t->new_shared_bytes},
        {"freed", t->freed_bytes},
        {"freed unmapped", t->freed_unmapped_bytes},
        {"freed discarded", t->freed_discarded_bytes},
        {"freed swapped", t->freed_swapped_bytes},
        {"replaced", t->replaced_bytes},
        {"became private", t->became_private_bytes},
        {"became shared", t->became_shared_bytes},
        {"new PSS", t->new_pss_bytes},
        {"freed PSS", t->freed_pss_bytes},
        {"touched", m->touched_bytes},
        {"persistent", m->persistent_bytes},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        if (counts[i].bytes > MEMDIFF__FIGURE_MAX) {
            *v = counts[i].bytes;
            return counts[i].name;
        }
    }
    return NULL;
}

/* A diff's figures are signed 64-bit (net_bytes, memdiff_figure): one whose byte counts do not
 * all fit would be wrong, so it is refused. Two snapshots of real address spaces never get
 * near; two files can (a region of 2^63 bytes is valid). The categories' counts are at most
 * the total's, and a block's at most its category's, except Own, which the total leaves out. */
static int check_range(const memdiff_diff *d)
{
    uint64_t v = 0;
    const char *what = too_large(&d->total, &d->impact, &v), *where = "all categories";
    for (int c = 0; !what && c < MEMDIFF_CAT_COUNT; c++) {
        what = too_large(&d->category[c], &d->impact_category[c], &v);
        where = memdiff_category_name((memdiff_category)c);
    }
    if (!what)
        return MEMDIFF_OK;
    char num[MEMDIFF__NUM_MAX], max[MEMDIFF__NUM_MAX];
    return memdiff__set_error(MEMDIFF_ERANGE,
                              "memdiff_compare: %s bytes in %s would be %s%s, more than the %s "
                              "(2^63 - 1) a diff's signed 64-bit figures hold; these snapshots "
                              "cannot be compared",
                              what, where, v == UINT64_MAX ? "at least " : "",
                              memdiff__fmt_count(num, v, 0),
                              memdiff__fmt_count(max, MEMDIFF__FIGURE_MAX, 0));
}

/* Fills d->outer for memdiff_diff_find_block(): for each block, the nearest earlier block that
 * ends later (blocks are in order of start, but a default diff's unit spans the mappings between
 * its own, so ends are in no order). Following the links from a block visits only blocks that
 * end later and skips only blocks that end no later, each link at most once: O(blocks) here. */
static int link_outer(memdiff_diff *d)
{
    if (d->block_count == 0)
        return MEMDIFF_OK;
    d->outer = memdiff__arena_alloc(&d->arena, d->block_count * sizeof *d->outer);
    if (!d->outer)
        return MEMDIFF_ENOMEM;
    for (size_t i = 0; i < d->block_count; i++) {
        size_t j = i - 1; /* SIZE_MAX for the first */
        while (j != SIZE_MAX && d->blocks[j].end <= d->blocks[i].end)
            j = d->outer[j];
        d->outer[i] = j;
    }
    return MEMDIFF_OK;
}

/* A sum of regions' bounds counts a mapping shared by several regions once per region: the
 * exact part and the shared mappings' whole figures (shared) are a bound too, often lower. */
static void cap_touched_max(memdiff_impact *m, uint64_t shared)
{
    uint64_t cap = memdiff__add_sat(m->touched_bytes - m->touched_estimated_bytes, shared);
    m->touched_max_bytes = MEMDIFF__MAX(m->touched_bytes, MEMDIFF__MIN(m->touched_max_bytes, cap));
}

static int compare(walk *w)
{
    memdiff_diff *d = w->diff;
    int rc = copy_info(w, &w->b.snap->info, &d->info[0]);
    if (!rc)
        rc = copy_info(w, &w->a.snap->info, &d->info[1]);
    if (!rc)
        rc = memdiff__blocks_new(&d->arena, (d->flags & MEMDIFF_COMPARE_VERBOSE) != 0, &w->blocks);
    for (uint64_t addr = 0; !rc;) {
        uint64_t to;
        if (skip_same_bitmap(w, addr, &to)) {
            addr = to;
            continue;
        }
        uint64_t next = MEMDIFF__MIN(side_seek(&w->b, addr), side_seek(&w->a, addr));
        if (w->a.region && w->refs && w->refs->region_touched)
            rc = emit_region_touched(w);
        if (!rc && (w->b.region || w->a.region))
            rc = compare_interval(w, addr, next);
        if (next == UINT64_MAX)
            break;
        addr = next;
    }
    if (!rc)
        rc = memdiff__blocks_finish(w->blocks, &d->blocks, w->refs != NULL,
                                    &d->block_count);
    if (!rc)
        rc = link_outer(d);
    if (rc)
        return rc;
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        memdiff_impact *m = &d->impact_category[c];
        m->impacting_bytes = memdiff__add_sat(d->category[c].new_bytes, d->category[c].freed_bytes);
        if (c == MEMDIFF_CAT_OWN)
            continue;
        memdiff__totals_add(&d->total, &d->category[c]);
        d->impact.touched_bytes = memdiff__add_sat(d->impact.touched_bytes, m->touched_bytes);
        d->impact.touched_estimated_bytes =
            memdiff__add_sat(d->impact.touched_estimated_bytes, m->touched_estimated_bytes);
        d->impact.touched_max_bytes =
            memdiff__add_sat(d->impact.touched_max_bytes, m->touched_max_bytes);
        d->impact.persistent_bytes =
            memdiff__add_sat(d->impact.persistent_bytes, m->persistent_bytes);
        d->impact.impacting_bytes =
            memdiff__add_sat(d->impact.impacting_bytes, m->impacting_bytes);
    }
    if (w->refs && w->refs->region_estimated) {
        for (int c = 0; c <= MEMDIFF_CAT_ALL; c++) /* MEMDIFF_CAT_ALL: the diff's */
            cap_touched_max(c < MEMDIFF_CAT_ALL ? &d->impact_category[c] : &d->impact,
                            w->refs->shared_max[c]);
    }
    return check_range(d);
}

int memdiff_compare(const memdiff_snapshot *before, const memdiff_snapshot *after,
                    unsigned flags, memdiff_diff **out)
{
    return memdiff__compare_refs(before, after, flags, NULL, out);
}

int memdiff__compare_refs(const memdiff_snapshot *before, const memdiff_snapshot *after,
                          unsigned flags, const memdiff__refs_in *refs, memdiff_diff **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_compare: out is NULL");
    *out = NULL;
    if (!before || !after)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_compare: NULL snapshot");
    const unsigned known = MEMDIFF_COMPARE_VERBOSE | MEMDIFF_COMPARE_FORCE;
    if (flags & ~known)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_compare: unknown flags 0x%x",
                                  flags & ~known);
    /* Snapshots loaded from files may come from anywhere: a diff of two processes would name
     * every page new or freed and mean nothing, unless the caller says it knows. */
    const char *host_b = before->info.host ? before->info.host : "";
    const char *host_a = after->info.host ? after->info.host : "";
    if (!(flags & MEMDIFF_COMPARE_FORCE) &&
        (before->info.pid != after->info.pid || strcmp(host_b, host_a) != 0))
        return memdiff__set_error(MEMDIFF_EMISMATCH,
                                  "memdiff_compare: the snapshots are of different processes "
                                  "(before: pid %d on host '%s'; after: pid %d on host '%s')",
                                  before->info.pid, host_b, after->info.pid, host_a);
    if (before->info.page_size != after->info.page_size)
        return memdiff__set_error(MEMDIFF_EMISMATCH,
                                  "memdiff_compare: page sizes differ (%u before, %u after)",
                                  (unsigned)before->info.page_size,
                                  (unsigned)after->info.page_size);
    if (before->info.page_size == 0)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_compare: snapshot without page size");
    if (before->info.page_size & (before->info.page_size - 1))
        return memdiff__set_error(MEMDIFF_EINVAL,
                                  "memdiff_compare: page size %u is not a power of two",
                                  (unsigned)before->info.page_size);

    /* The diff lives inside its own arena, like a snapshot: one release frees everything. */
    memdiff__arena arena = MEMDIFF__ARENA_INIT;
    memdiff_diff *d = memdiff__arena_alloc(&arena, sizeof *d);
    if (!d)
        return MEMDIFF_ENOMEM;
    d->arena = arena;
    d->flags = flags;

    walk w;
    memset(&w, 0, sizeof w);
    w.diff = d;
    w.b.snap = before;
    w.a.snap = after;
    memdiff__runs_begin(before, &w.b.runs);
    memdiff__runs_begin(after, &w.a.runs);
    w.b.have_run = memdiff__runs_next(&w.b.runs, &w.b.next_run);
    w.a.have_run = memdiff__runs_next(&w.a.runs, &w.a.next_run);
    w.page_size = before->info.page_size;
    w.frames = before->frames.present && after->frames.present;
    w.privacy = memdiff__knows_privacy(&before->info) && memdiff__knows_privacy(&after->info);
    w.new_by_private_bit = memdiff__knows_privacy(&after->info);
    w.pss = (before->info.sources & after->info.sources & MEMDIFF_SRC_PSS) != 0;
    w.refs = refs;
    w.touched_region = SIZE_MAX;
    d->bracket = refs != NULL;
    int rc = compare(&w);
    if (rc) {
        memdiff_diff_free(d);
        if (rc == MEMDIFF_ENOMEM)
            memdiff__set_error(rc, "memdiff_compare: out of memory");
        return rc;
    }
    *out = d;
    return MEMDIFF_OK;
}
