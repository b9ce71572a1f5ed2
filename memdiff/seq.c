/*
 * seq.c - a snapshot's per-page frame facts (frame numbers, kernel page flags, map counts),
 * stored as stretches.
 *
 * Neighbouring pages mostly have related facts: the page allocator hands out frames in ascending
 * or descending order, a huge page is 512 frames in a row, every zero-page mapping has the zero
 * page's frame, and pages of one mapping mostly share their kernel flags and map count. Measured
 * (memdiff_bench, 4 GiB resident in 4 KiB pages): 1,048,954 pages in 31,481 runs of consecutive
 * frames. A segment holds the values of consecutive indices as base + step * k (step +1, -1 or
 * 0), 16 bytes whatever its length; values that form no stretch go to a literal segment, 8
 * bytes a value as a flat array would take, so no sequence costs much more than one. Two
 * snapshots' sequences compare segment by segment (memdiff__seq_mismatch), not value by value.
 *
 * Values are appended in index order (snapshot.c, the file loader, synth.c) and read through
 * memdiff__seq_get (one value) or the stretch reader (seek / peek / skip). Storage comes from
 * the snapshot's arena; no malloc.
 */
#include <string.h>

#include "internal.h"

/* A segment's kind, in the top bits of its start index (indices stay below 2^62). */
#define KIND_SHIFT 62
#define KIND_UP UINT64_C(0)   /* base + k */
#define KIND_DOWN UINT64_C(1) /* base - k */
#define KIND_SAME UINT64_C(2) /* base */
#define KIND_LIT UINT64_C(3)  /* lit[base + k] */
#define AT_MASK ((UINT64_C(1) << KIND_SHIFT) - 1)

/* Segments this short cost no less than their values as literals. */
#define SHORT 2u

static uint64_t seg_at(const memdiff__seq *q, size_t k)
{
    return q->at[k] & AT_MASK;
}

static uint64_t seg_kind(const memdiff__seq *q, size_t k)
{
    return q->at[k] >> KIND_SHIFT;
}

static uint64_t seg_end(const memdiff__seq *q, size_t k)
{
    return k + 1 < q->segs ? seg_at(q, k + 1) : q->n;
}

static uint64_t seg_value(const memdiff__seq *q, size_t k, uint64_t off)
{
    uint64_t b = q->base[k];
    switch (seg_kind(q, k)) {
    case KIND_UP:
        return b + off;
    case KIND_DOWN:
        return b - off;
    case KIND_SAME:
        return b;
    default:
        return q->lit[b + off];
    }
}

/* The segment arrays, full, double. */
MEMDIFF__NOINLINE static int grow_segs(memdiff__arena *arena, memdiff__seq *q)
{
    size_t cap = q->cap ? q->cap * 2 : 256;
    /* Written before read (segs counts them): the new room is not zeroed. */
    uint64_t *at = memdiff__arena_grow_raw(arena, q->at, q->cap * sizeof *at, cap * sizeof *at);
    if (!at)
        return MEMDIFF_ENOMEM;
    q->at = at;
    uint64_t *base =
        memdiff__arena_grow_raw(arena, q->base, q->cap * sizeof *base, cap * sizeof *base);
    if (!base)
        return MEMDIFF_ENOMEM;
    q->base = base;
    q->cap = cap;
    return MEMDIFF_OK;
}

/* Room for one more literal: the array doubles when full. Written before read (lits counts
 * them), so the new room is not zeroed. */
static int lit_room(memdiff__arena *arena, memdiff__seq *q)
{
    if (q->lits < q->lit_cap)
        return MEMDIFF_OK;
    uint64_t *lit =
        memdiff__arena_room_raw(arena, q->lit, &q->lit_cap, q->lits, sizeof *lit, 512);
    if (!lit)
        return MEMDIFF_ENOMEM;
    q->lit = lit;
    return MEMDIFF_OK;
}

static int push_lit(memdiff__arena *arena, memdiff__seq *q, uint64_t v)
{
    int rc = lit_room(arena, q);
    if (rc)
        return rc;
    q->lit[q->lits++] = v;
    return MEMDIFF_OK;
}

/* The last segment, k, ends before index i: if it is short, its values become literals (of
 * the literal segment before it, or of itself turned literal). */
static int settle_short(memdiff__arena *arena, memdiff__seq *q, uint64_t i)
{
    size_t k = q->segs - 1;
    uint64_t len = i - seg_at(q, k);
    if (seg_kind(q, k) == KIND_LIT || len > SHORT)
        return MEMDIFF_OK;
    uint64_t v[SHORT];
    for (uint64_t j = 0; j < len; j++)
        v[j] = seg_value(q, k, j);
    if (k > 0 && seg_kind(q, k - 1) == KIND_LIT) {
        q->segs--; /* its values continue the literals before it */
    } else {
        q->at[k] = seg_at(q, k) | KIND_LIT << KIND_SHIFT;
        q->base[k] = q->lits;
    }
    for (uint64_t j = 0; j < len; j++) {
        int rc = push_lit(arena, q, v[j]);
        if (rc)
            return rc;
    }
    return MEMDIFF_OK;
}

static inline int new_segment(memdiff__arena *arena, memdiff__seq *q, uint64_t at,
                              uint64_t kind, uint64_t base)
{
    int rc = q->segs < q->cap ? MEMDIFF_OK : grow_segs(arena, q);
    if (rc)
        return rc;
    q->at[q->segs] = at | kind << KIND_SHIFT;
    q->base[q->segs] = base;
    q->segs++;
    return MEMDIFF_OK;
}

/* Whether x, y, z go on by +1, -1 or 0: three values that make a segment of their own. */
static inline int three(uint64_t x, uint64_t y, uint64_t z)
{
    return y - x == z - y && y - x + 1 <= 2;
}

/* Values v[j..n) (all 0 when v is NULL) into the literal segment, the last, until one makes a
 * stretch with the two literals before it: those three then leave the literals as a segment of
 * their own. The loop keeps its state in locals (stores to lit[] could alias the seq's fields)
 * and takes as many values as there is room for between growths. Sets *taken to how many were
 * taken. */
static int absorb(memdiff__arena *arena, memdiff__seq *q, const uint64_t *v, uint64_t j,
                  uint64_t n, uint64_t *taken)
{
    const uint64_t from = j;
    uint64_t len = q->n - seg_at(q, q->segs - 1);
    uint64_t a = len >= 2 ? q->lit[q->lits - 2] : 0, b = len >= 1 ? q->lit[q->lits - 1] : 0;
    while (j < n) {
        int rc = lit_room(arena, q);
        if (rc) {
            q->n += j - from;
            *taken = j - from;
            return rc;
        }
        uint64_t *lit = q->lit;
        size_t lits = q->lits;
        const uint64_t stop = MEMDIFF__MIN(n, j + (q->lit_cap - lits));
        for (; j < stop; j++) {
            uint64_t x = v ? v[j] : 0, d = b - a;
            if (len >= 2 && three(a, b, x)) { /* a and b are literals when len >= 2 */
                q->lits = lits - 2; /* a and b leave the literals with x */
                q->n += j - from;
                if (len == 2)
                    q->segs--; /* the literals were all these two */
                rc = new_segment(arena, q, q->n - 2,
                                 d == 1 ? KIND_UP : d == 0 ? KIND_SAME : KIND_DOWN, a);
                q->n++;
                *taken = j + 1 - from;
                return rc;
            }
            lit[lits++] = x;
            len++;
            a = b;
            b = x;
        }
        q->lits = lits;
    }
    q->n += j - from;
    *taken = j - from;
    return MEMDIFF_OK;
}

/* How many of v[j..n) (all 0 when v is NULL) continue a stretch whose next value is next and
 * which moves by step: the tight loop that takes most values. */
static uint64_t continuing(const uint64_t *v, uint64_t j, uint64_t n, uint64_t next, int step)
{
    if (!v)
        return next == 0 && step == 0 ? n - j : next == 0 ? 1 : 0;
    if (j >= n || v[j] != next)
        return 0;
    return memdiff__stretch_end(v, (size_t)j, (size_t)n, (uint64_t)(int64_t)step) - j;
}

int memdiff__seq_append(memdiff__arena *arena, memdiff__seq *q, const uint64_t *v, uint64_t n)
{
    if (n > AT_MASK - q->n) /* n from a file may be anything: q->n + n could wrap */
        return memdiff__set_error(MEMDIFF_ENOMEM, "page facts: %llu pages are too many",
                                  (unsigned long long)memdiff__add_sat(q->n, n));
    q->present = 1;
    for (uint64_t j = 0; j < n;) {
        uint64_t x = v ? v[j] : 0, i = q->n;
        int rc;
        if (q->segs) {
            size_t k = q->segs - 1;
            uint64_t len = i - seg_at(q, k), base = q->base[k], kind = seg_kind(q, k);
            if (kind != KIND_LIT) {
                int step = kind == KIND_UP ? 1 : kind == KIND_DOWN ? -1 : 0;
                uint64_t next = base + (uint64_t)((int64_t)step * (int64_t)len);
                uint64_t more = continuing(v, j, n, next, step);
                if (more) {
                    q->n += more;
                    j += more;
                    continue;
                }
            }
            if (kind == KIND_UP && len == 1 && (x == base - 1 || x == base)) {
                /* The second value decides which way a stretch goes. */
                q->at[k] = seg_at(q, k) | (x == base ? KIND_SAME : KIND_DOWN) << KIND_SHIFT;
                q->n++;
                j++;
                continue;
            }
            if ((rc = settle_short(arena, q, i)))
                return rc;
            if (seg_kind(q, q->segs - 1) == KIND_LIT) {
                uint64_t taken;
                if ((rc = absorb(arena, q, v, j, n, &taken)))
                    return rc;
                j += taken;
                continue;
            }
        }
        if ((rc = new_segment(arena, q, i, KIND_UP, x)))
            return rc;
        q->n++;
        j++;
    }
    return MEMDIFF_OK;
}

/* append_stretch's general way: the first values go the ordinary way, which decides the
 * segments; once the last segment is this stretch, the rest only extend it (continuing() would
 * take them all). */
MEMDIFF__NOINLINE static int append_stretch_slow(memdiff__arena *arena, memdiff__seq *q,
                                                 uint64_t first, uint64_t s, uint64_t count)
{
    uint64_t v[64];
    uint64_t start = q->n;
    while (count > 0) {
        uint64_t kind = s == 1 ? KIND_UP : s == 0 ? KIND_SAME : KIND_DOWN;
        if (q->segs && seg_kind(q, q->segs - 1) == kind && q->n > seg_at(q, q->segs - 1) + 1 &&
            (s == 1 || s == 0 || s == UINT64_MAX)) {
            size_t k = q->segs - 1;
            uint64_t len = q->n - seg_at(q, k);
            if (q->base[k] + s * len == first) {
                q->present = 1;
                q->n += count;
                return MEMDIFF_OK;
            }
        }
        /* Three values make any stretch a segment of its own (absorb); later chunks only come
         * when something is amiss, and are plain appends. */
        uint64_t m = MEMDIFF__MIN(count, (uint64_t)(q->n == start ? 3 : sizeof v / sizeof v[0]));
        for (uint64_t k = 0; k < m; k++)
            v[k] = first + s * k;
        int rc = memdiff__seq_append(arena, q, v, m);
        if (rc)
            return rc;
        first += s * m;
        count -= m;
    }
    return MEMDIFF_OK;
}

/* Appends count values first + step * k (step 1, -1 or 0), with the segments memdiff__seq_append
 * would make of them. */
static inline int append_stretch(memdiff__arena *arena, memdiff__seq *q, uint64_t first,
                                 int64_t step, uint64_t count)
{
    uint64_t s = (uint64_t)step;
    if (count == 0)
        return MEMDIFF_OK;
    if (count > AT_MASK - q->n)
        return memdiff__set_error(MEMDIFF_ENOMEM, "page facts: %llu pages are too many",
                                  (unsigned long long)memdiff__add_sat(q->n, count));
    if (s + 1 <= 2) {
        /* The common cases: the stretch starts a segment of its own, as its first value would
         * (new_segment, the kind decided by the second), after a stretch it does not continue,
         * or after literals that it leaves at its third value (absorb) because no three values
         * went on by one step before. */
        int fresh = q->segs == 0;
        if (!fresh) {
            size_t k = q->segs - 1;
            uint64_t kind = seg_kind(q, k), len = q->n - seg_at(q, k);
            uint64_t ks = kind == KIND_UP ? 1 : kind == KIND_DOWN ? UINT64_MAX : 0;
            if (kind != KIND_LIT) {
                fresh = len > SHORT && q->base[k] + ks * len != first;
            } else if (count > SHORT) {
                uint64_t b = q->lit[q->lits - 1];
                fresh = !(len >= 2 && three(q->lit[q->lits - 2], b, first)) &&
                        !three(b, first, first + s);
            }
        }
        if (fresh) {
            uint64_t mine = count == 1 || s == 1 ? KIND_UP : s == 0 ? KIND_SAME : KIND_DOWN;
            int rc = new_segment(arena, q, q->n, mine, first);
            if (rc)
                return rc;
            q->present = 1;
            q->n += count;
            return MEMDIFF_OK;
        }
    }
    return append_stretch_slow(arena, q, first, s, count);
}

/* Values v[k * -1] for k in [0, n): reversed, appended through a small buffer. */
static int append_reversed(memdiff__arena *arena, memdiff__seq *q, const uint64_t *v, uint64_t n)
{
    uint64_t buf[64];
    while (n > 0) {
        uint64_t m = MEMDIFF__MIN(n, (uint64_t)(sizeof buf / sizeof buf[0]));
        for (uint64_t k = 0; k < m; k++)
            buf[k] = *(v - k);
        int rc = memdiff__seq_append(arena, q, buf, m);
        if (rc)
            return rc;
        v -= m;
        n -= m;
    }
    return MEMDIFF_OK;
}

int memdiff__seq_append_pieces(memdiff__arena *arena, memdiff__seq *q, const memdiff__values *ps,
                               size_t n, uint64_t skip, uint64_t count)
{
    for (size_t k = 0; k < n && count > 0; k++) {
        uint64_t len = ps[k].count;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        len = MEMDIFF__MIN(len - skip, count);
        int rc;
        if (!ps[k].values)
            rc = append_stretch(arena, q, ps[k].first + (uint64_t)ps[k].step * skip, ps[k].step,
                                len);
        else if (ps[k].step >= 0)
            rc = memdiff__seq_append(arena, q, ps[k].values + skip, len);
        else
            rc = append_reversed(arena, q, ps[k].values - skip, len);
        if (rc)
            return rc;
        skip = 0;
        count -= len;
    }
    return count ? memdiff__seq_append(arena, q, NULL, count) : MEMDIFF_OK;
}

/* ---- reading ------------------------------------------------------------------------------ */

void memdiff__seq_seek(const memdiff__seq *q, uint64_t i, memdiff__seq_iter *it)
{
    size_t lo = 0, hi = q->segs;
    while (hi - lo > 1) { /* the last segment that starts at or before i */
        size_t mid = lo + (hi - lo) / 2;
        if (seg_at(q, mid) <= i)
            lo = mid;
        else
            hi = mid;
    }
    it->q = q;
    it->seg = lo;
    it->i = i;
}

uint64_t memdiff__seq_peek(const memdiff__seq_iter *it, uint64_t max, uint64_t *base, int *step)
{
    const memdiff__seq *q = it->q;
    if (it->seg >= q->segs || it->i >= q->n) {
        *base = 0; /* past the values: unknown, as 0 */
        *step = 0;
        return max;
    }
    size_t k = it->seg;
    uint64_t off = it->i - seg_at(q, k), kind = seg_kind(q, k);
    *base = seg_value(q, k, off);
    *step = kind == KIND_UP ? 1 : kind == KIND_DOWN ? -1 : 0;
    if (kind == KIND_LIT)
        return MEMDIFF__MIN(max, 1);
    return MEMDIFF__MIN(max, seg_end(q, k) - it->i);
}

void memdiff__seq_skip(memdiff__seq_iter *it, uint64_t n)
{
    const memdiff__seq *q = it->q;
    it->i += n;
    while (it->seg + 1 < q->segs && seg_at(q, it->seg + 1) <= it->i)
        it->seg++;
}

uint64_t memdiff__seq_get(const memdiff__seq *q, uint64_t i)
{
    memdiff__seq_iter it;
    uint64_t base;
    int step;
    memdiff__seq_seek(q, i, &it);
    memdiff__seq_peek(&it, 1, &base, &step);
    return base;
}

/* Whether segment x of a and segment y of b hold the same values over their (equal) length. */
static int same_segment(const memdiff__seq *a, size_t x, const memdiff__seq *b, size_t y,
                        uint64_t len)
{
    uint64_t kind = seg_kind(a, x);
    if (kind != seg_kind(b, y))
        return 0;
    if (kind != KIND_LIT)
        return a->base[x] == b->base[y];
    return memcmp(a->lit + a->base[x], b->lit + b->base[y], len * sizeof *a->lit) == 0;
}

uint64_t memdiff__seq_mismatch(const memdiff__seq *a, uint64_t ia, const memdiff__seq *b,
                               uint64_t ib, uint64_t n)
{
    memdiff__seq_iter x, y;
    memdiff__seq_seek(a, ia, &x);
    memdiff__seq_seek(b, ib, &y);
    uint64_t done = 0;
    while (done < n) {
        /* Both at the start of a segment: segments that match pairwise (same length, kind and
         * values), as two snapshots of unchanged memory have, pass in bulk. */
        if (x.seg < a->segs && y.seg < b->segs && x.i < a->n && y.i < b->n &&
            seg_at(a, x.seg) == x.i && seg_at(b, y.seg) == y.i) {
            size_t sx = x.seg, sy = y.seg;
            while (sx + 1 < a->segs && sy + 1 < b->segs) {
                uint64_t ex = seg_at(a, sx + 1) - ia, ey = seg_at(b, sy + 1) - ib;
                if (ex != ey || ex > n ||
                    !same_segment(a, sx, b, sy, seg_at(a, sx + 1) - seg_at(a, sx)))
                    break;
                sx++;
                sy++;
            }
            if (sx > x.seg) {
                uint64_t to = seg_at(a, sx) - ia;
                memdiff__seq_skip(&x, to - done);
                memdiff__seq_skip(&y, to - done);
                done = to;
                continue;
            }
        }
        /* Inside segments: the stretch both are in, value by value where a literal is
         * involved (memcmp where both are), by bases where neither is. */
        if (x.seg >= a->segs || x.i >= a->n || y.seg >= b->segs || y.i >= b->n) {
            uint64_t vx, vy;
            int tx, ty;
            uint64_t len = memdiff__seq_peek(&x, n - done, &vx, &tx);
            len = memdiff__seq_peek(&y, len, &vy, &ty);
            if (vx != vy || (tx != ty && len > 1))
                return done + (vx == vy);
            memdiff__seq_skip(&x, len);
            memdiff__seq_skip(&y, len);
            done += len;
            continue;
        }
        uint64_t ox = x.i - seg_at(a, x.seg), oy = y.i - seg_at(b, y.seg);
        uint64_t len = MEMDIFF__MIN(MEMDIFF__MIN(seg_end(a, x.seg) - x.i, seg_end(b, y.seg) - y.i),
                                    n - done);
        uint64_t kx = seg_kind(a, x.seg), ky = seg_kind(b, y.seg);
        if (kx == KIND_LIT && ky == KIND_LIT &&
            memcmp(a->lit + a->base[x.seg] + ox, b->lit + b->base[y.seg] + oy,
                   len * sizeof *a->lit) == 0) {
            /* equal throughout */
        } else if (kx != KIND_LIT && ky != KIND_LIT) {
            uint64_t vx = seg_value(a, x.seg, ox), vy = seg_value(b, y.seg, oy);
            if (vx != vy || (kx != ky && len > 1))
                return done + (vx == vy);
        } else {
            for (uint64_t k = 0; k < len; k++)
                if (seg_value(a, x.seg, ox + k) != seg_value(b, y.seg, oy + k))
                    return done + k;
        }
        memdiff__seq_skip(&x, len);
        memdiff__seq_skip(&y, len);
        done += len;
    }
    return n;
}

int memdiff__seq_equal(const memdiff__seq *a, uint64_t ia, const memdiff__seq *b, uint64_t ib,
                       uint64_t n)
{
    return memdiff__seq_mismatch(a, ia, b, ib, n) == n;
}

size_t memdiff__seq_bytes(const memdiff__seq *q)
{
    return q->segs * 2 * sizeof(uint64_t) + q->lits * sizeof(uint64_t);
}
