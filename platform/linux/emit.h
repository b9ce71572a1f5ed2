/*
 * emit.h - the page walk's run emission: how pages, once decoded, reach the sink.
 *
 * Inline, in the files of the stages that emit (pagemap.c, scan.c, walk.c): it runs once a run
 * or a stretch, and as calls into a file of its own it made a snapshot of memory with every other
 * page resident 5% (fast) to 7% (standard) slower (paired A/B, 101 pairs).
 *
 * The walker keeps one pending run open across batches so that runs come out whole; its frames
 * are either array entries of the batch (moved to the front by memdiff__linux_carry) or, in
 * stretch mode, pieces "first, first + step, ..." (struct memdiff__linux_emit's stretches), so
 * that dense memory is never copied page by page. Where memory is fragmented (every other page
 * resident, a file mapped in scattered pages), a call a run to the sink costs more than the run:
 * runs of up to MEMDIFF__GATHER_RUN_MAX pages, no more than MEMDIFF__GATHER_GAP_MAX pages apart
 * and with the same attrs, go to the sink together as a bitmap of up to MEMDIFF__LINUX_GATHER
 * pages (sink->run_bits). The two limits add up to the core's bitmap step (runs.c, BITMAP_STEP),
 * so that its bitmap takes them whole. Where memory is that fragmented the decoders skip the
 * pending run altogether: pagemap.c hands over 64 entries' runs as one mask (gather_mask),
 * fast depth its scan's short ranges in one loop (gather_ranges), under the same limits.
 *
 * Owns struct memdiff__linux_emit (the stretches and the gathered bitmap and frames); reads the
 * pagemap stage's batch (the frames a pending run points into). Calls nothing of the backend.
 */
#ifndef MEMDIFF_LINUX_EMIT_H
#define MEMDIFF_LINUX_EMIT_H

#include <string.h>

#include "walk.h"

/* The pending run to the sink. */
static inline int deliver(memdiff__linux_walker *w)
{
    if (w->run_stretched)
        return w->sink->run_frames(w->sink->ctx, w->run_start, w->run_pages, w->run_attrs,
                                   w->emit->stretches, w->stretch_count, NULL, 0, NULL, 0);
    return w->sink->run(w->sink->ctx, w->run_start, w->run_pages, w->run_attrs,
                        w->with_frames ? w->pagemap->entries + w->run_index : NULL);
}

static inline int memdiff__linux_deliver_gathered(memdiff__linux_walker *w)
{
    if (!w->gather_span)
        return MEMDIFF_OK;
    struct memdiff__linux_emit *e = w->emit;
    const uint64_t n = w->gather_span;
    const uint64_t *frames = w->with_frames ? e->gather_frames : NULL;
    w->gather_span = 0;
    int rc = w->gather_runs == 1
                 ? w->sink->run(w->sink->ctx, w->gather_start, n, w->gather_attrs, frames)
                 : w->sink->run_bits(w->sink->ctx, w->gather_start, n, w->gather_attrs,
                                     e->gather_bits, frames);
    memset(e->gather_bits, 0, (size_t)(n + 63) / 64 * sizeof *e->gather_bits);
    return rc;
}

/* Some runs are gathered, with these attrs, and the pages come after them (not adjacent: a run
 * in a bitmap ends before a page not in it), not too far, inside the bitmap's span. */
static inline int memdiff__linux_gather_joins(const memdiff__linux_walker *w, uint64_t addr,
                                              uint64_t n, unsigned attrs)
{
    const unsigned shift = w->proc->page_shift;
    const uint64_t end = w->gather_start + (w->gather_span << shift);
    return w->gather_span && attrs == w->gather_attrs && addr > end &&
           ((addr - end) >> shift) <= MEMDIFF__GATHER_GAP_MAX &&
           ((addr - w->gather_start) >> shift) + n <= MEMDIFF__LINUX_GATHER;
}

static inline void memdiff__linux_gather_add(memdiff__linux_walker *w, uint64_t addr, uint64_t n)
{
    const uint64_t at = (addr - w->gather_start) >> w->proc->page_shift;
    memdiff__set_bits(w->emit->gather_bits, at, n);
    w->gather_count += n;
    w->gather_span = at + n;
    w->gather_runs++;
}

/* Fast depth's scan ranges r[i..n) with categories cat, whose attrs are the gathered ones, into
 * the gathered bitmap (no run pending) while each joins it as feed_ranges() (walk.c) would put
 * it there: short, the range behind it not adjacent, memdiff__linux_gather_joins. A range at a
 * time in a tight loop: where memory is fragmented a scan returns thousands. Returns the first
 * range not taken. */
static inline size_t memdiff__linux_gather_ranges(memdiff__linux_walker *w,
                                                  const struct page_region *r, size_t i, size_t n,
                                                  uint64_t cat)
{
    const unsigned shift = w->proc->page_shift;
    const uint64_t gs = w->gather_start, lim = gs + ((uint64_t)MEMDIFF__LINUX_GATHER << shift);
    uint64_t end = gs + (w->gather_span << shift), count = 0;
    uint64_t *bits = w->emit->gather_bits;
    size_t runs = 0;
    /* The bitmap word being filled stays in a register (word, acc): an OR into memory a range
     * would chain each range to the last through store forwarding (some 30 ranges a word). */
    uint64_t word = UINT64_MAX, acc = 0;
    for (; i + 1 < n && r[i].categories == cat; i++) {
        const uint64_t a = r[i].start, b = r[i].end, np = (b - a) >> shift;
        if (a <= end || ((a - end) >> shift) > MEMDIFF__GATHER_GAP_MAX || b > lim ||
            np > MEMDIFF__GATHER_RUN_MAX || r[i + 1].start == b)
            break;
        const uint64_t at = (a - gs) >> shift;
        const uint64_t m = np == 64 ? ~UINT64_C(0) : (UINT64_C(1) << np) - 1;
        const unsigned off = (unsigned)(at % 64);
        if (at / 64 != word) {
            if (word != UINT64_MAX)
                bits[word] |= acc;
            word = at / 64;
            acc = 0;
        }
        acc |= m << off;
        if (off + np > 64) { /* the range goes on into the next word */
            bits[word] |= acc;
            word++;
            acc = m >> (64 - off);
        }
        count += np;
        runs++;
        end = b;
    }
    if (word != UINT64_MAX)
        bits[word] |= acc;
    w->gather_count += count;
    w->gather_runs += runs;
    w->gather_span = (end - gs) >> shift;
    return i;
}

/* Short runs with attrs straight into the gathered bitmap, with no pending run: the pages of
 * mask's set bits, bit k for page addr + k pages, each run whole (a hole, not another page of
 * these attrs, on either side). The gathered runs go to the sink first where these cannot join
 * them (memdiff__linux_gather_joins, for the span of them all: within it no gap is too long).
 * *frames: where the caller puts their frames, in page order (NULL without frames). */
static inline int memdiff__linux_gather_mask(memdiff__linux_walker *w, uint64_t addr,
                                             uint64_t mask, unsigned attrs, uint64_t **frames)
{
    const unsigned shift = w->proc->page_shift;
    const unsigned lo = memdiff__ctz64(mask), len = 64 - memdiff__clz64(mask) - lo;
    const uint64_t first = addr + ((uint64_t)lo << shift);
    if (!memdiff__linux_gather_joins(w, first, len, attrs)) {
        int rc = memdiff__linux_deliver_gathered(w);
        if (rc)
            return rc;
        w->gather_start = first;
        w->gather_attrs = attrs;
        w->gather_runs = 0;
        w->gather_count = 0;
    }
    uint64_t *bits = w->emit->gather_bits;
    const uint64_t at = (first - w->gather_start) >> shift, x = mask >> lo;
    const unsigned off = (unsigned)(at % 64);
    bits[at / 64] |= x << off;
    if (off && len > 64 - off)
        bits[at / 64 + 1] |= x >> (64 - off);
    *frames = w->with_frames ? w->emit->gather_frames + w->gather_count : NULL;
    w->gather_count += memdiff__popcount64(mask);
    w->gather_span = at + len;
    w->gather_runs += memdiff__popcount64(mask & ~(mask << 1)); /* a run begins at each */
    return MEMDIFF_OK;
}

/* The pending run (short) joins the gathered ones, which go to the sink first when it cannot
 * (memdiff__linux_gather_joins). Its frames are copied: the pending run's may point into the
 * batch. */
static inline int gather(memdiff__linux_walker *w)
{
    if (w->gather_span &&
        !memdiff__linux_gather_joins(w, w->run_start, w->run_pages, w->run_attrs)) {
        int rc = memdiff__linux_deliver_gathered(w);
        if (rc)
            return rc;
    }
    if (!w->gather_span) {
        w->gather_start = w->run_start;
        w->gather_attrs = w->run_attrs;
        w->gather_runs = 0;
        w->gather_count = 0;
    }
    if (w->with_frames) {
        uint64_t *dst = w->emit->gather_frames + w->gather_count;
        if (!w->run_stretched) {
            memcpy(dst, w->pagemap->entries + w->run_index, w->run_pages * sizeof *dst);
        } else {
            for (size_t k = 0; k < w->stretch_count; k++) {
                const memdiff__values *v = &w->emit->stretches[k];
                for (uint64_t i = 0; i < v->count; i++)
                    *dst++ = v->values ? v->values[(int64_t)i * v->step]
                                       : v->first + (uint64_t)v->step * i;
            }
        }
    }
    memdiff__linux_gather_add(w, w->run_start, w->run_pages);
    return MEMDIFF_OK;
}

static inline int memdiff__linux_flush(memdiff__linux_walker *w)
{
    if (!w->pending)
        return MEMDIFF_OK;
    w->pending = 0;
    if (w->gather && w->run_pages <= MEMDIFF__GATHER_RUN_MAX)
        return gather(w);
    int rc = memdiff__linux_deliver_gathered(w);
    return rc ? rc : deliver(w);
}

/* Delivers the pending run and opens one of pages [addr, addr + n) with attrs: its frames as
 * stretches (stretched), or array entries from index idx. */
static inline int open_run(memdiff__linux_walker *w, uint64_t addr, uint64_t n, unsigned attrs,
                           int stretched, size_t idx)
{
    int rc = memdiff__linux_flush(w);
    if (rc)
        return rc;
    w->pending = 1;
    w->run_stretched = stretched;
    w->run_start = addr;
    w->run_pages = n;
    w->run_attrs = attrs;
    w->run_index = idx;
    return MEMDIFF_OK;
}

static inline int memdiff__linux_feed_frames(memdiff__linux_walker *w, uint64_t addr, uint64_t n,
                                             unsigned attrs, uint64_t first, uint64_t step,
                                             const uint64_t *values)
{
    if (!(attrs & MEMDIFF__RESIDENT))
        return memdiff__linux_flush(w);
    memdiff__values *stretches = w->emit->stretches;
    memdiff__values piece = {first, (int64_t)step, n, values};
    if (w->pending && w->run_stretched && w->run_attrs == attrs &&
        w->run_start + w->run_pages * w->proc->page_size == addr) {
        memdiff__values *last = &stretches[w->stretch_count - 1];
        if (values ? last->values && last->values + last->count == values
                   : !last->values && (uint64_t)last->step == step &&
                         last->first + step * last->count == first) {
            last->count += n;
            w->run_pages += n;
            return MEMDIFF_OK;
        }
        if (w->stretch_count < MEMDIFF__LINUX_FS) {
            stretches[w->stretch_count++] = piece;
            w->run_pages += n;
            return MEMDIFF_OK;
        }
    }
    int rc = open_run(w, addr, n, attrs, 1, 0);
    if (rc)
        return rc;
    stretches[0] = piece;
    w->stretch_count = 1;
    return MEMDIFF_OK;
}

static inline int memdiff__linux_feed(memdiff__linux_walker *w, uint64_t addr, uint64_t n,
                                      unsigned attrs, size_t idx)
{
    uint64_t ps = w->proc->page_size;
    if (!(attrs & MEMDIFF__RESIDENT))
        return memdiff__linux_flush(w);
    if (w->pending && !w->run_stretched && w->run_attrs == attrs &&
        w->run_start + w->run_pages * ps == addr &&
        (!(w->with_frames || w->deep) || w->run_index + w->run_pages == idx)) {
        w->run_pages += n;
        return MEMDIFF_OK;
    }
    return open_run(w, addr, n, attrs, 0, idx);
}

static inline void memdiff__linux_carry(memdiff__linux_walker *w)
{
    if (!w->pending || w->run_stretched || w->run_index == 0 || !w->with_frames)
        return;
    uint64_t *entries = w->pagemap->entries;
    memmove(entries, entries + w->run_index, w->run_pages * sizeof *entries);
    w->run_index = 0;
}

#endif /* MEMDIFF_LINUX_EMIT_H */
