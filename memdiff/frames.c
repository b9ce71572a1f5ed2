/*
 * frames.c - a snapshot's per-page frame numbers, stored as segments.
 *
 * Frames of neighbouring pages are mostly neighbours: the page allocator hands out pages from
 * per-CPU lists and buddy blocks in ascending or descending order, a huge page is 512 in a row,
 * and every zero-page mapping has the one frame of the zero page. Measured (memdiff_bench, 4 GiB
 * resident in 4 KiB pages): 1,048,954 pages in 31,481 runs of consecutive frames. So a segment
 * holds the frames of consecutive aux indices [at, next segment's at) as base + step * k, step
 * +1, -1 or 0: 16 bytes a segment where 8 bytes a page took 8 MiB, and two snapshots' frames
 * compare segment by segment (compare.c) instead of 16 MiB of memcmp.
 *
 * Frames are appended in aux order (snapshot.c, the file loader, synth.c) and read through
 * memdiff__frame (one page) or the stretch reader (memdiff__frames_seek / _peek / _skip).
 * Storage comes from the snapshot's arena. No malloc.
 */
#include "internal.h"

/* The step of a segment, in the top bits of its start index (aux indices stay below 2^62). */
#define STEP_SHIFT 62
#define STEP_UP UINT64_C(0)   /* base + k */
#define STEP_DOWN UINT64_C(1) /* base - k */
#define STEP_SAME UINT64_C(2) /* base */
#define AT_MASK ((UINT64_C(1) << STEP_SHIFT) - 1)

static uint64_t seg_at(const memdiff_snapshot *s, size_t k)
{
    return s->frame_at[k] & AT_MASK;
}

static int seg_step(const memdiff_snapshot *s, size_t k)
{
    switch (s->frame_at[k] >> STEP_SHIFT) {
    case STEP_DOWN:
        return -1;
    case STEP_SAME:
        return 0;
    default:
        return 1;
    }
}

static uint64_t seg_end(const memdiff_snapshot *s, size_t k)
{
    return k + 1 < s->frame_segs ? seg_at(s, k + 1) : s->frame_pages;
}

static int grow(memdiff_snapshot *s)
{
    if (s->frame_segs < s->frame_cap)
        return MEMDIFF_OK;
    size_t cap = s->frame_cap ? s->frame_cap * 2 : 256;
    uint64_t *at = memdiff__arena_grow(&s->arena, s->frame_at, s->frame_cap * sizeof *at,
                                       cap * sizeof *at);
    if (!at)
        return MEMDIFF_ENOMEM;
    s->frame_at = at;
    uint64_t *base = memdiff__arena_grow(&s->arena, s->frame_base,
                                         s->frame_cap * sizeof *base, cap * sizeof *base);
    if (!base)
        return MEMDIFF_ENOMEM;
    s->frame_base = base;
    s->frame_cap = cap;
    return MEMDIFF_OK;
}

int memdiff__frames_append(memdiff_snapshot *s, const uint64_t *pfn, uint64_t n)
{
    if (s->frame_pages + n > AT_MASK)
        return memdiff__set_error(MEMDIFF_ENOMEM, "frames: %llu pages are too many",
                                  (unsigned long long)(s->frame_pages + n));
    s->frames = 1;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = pfn ? pfn[i] : 0, at = s->frame_pages + i;
        if (s->frame_segs) {
            size_t k = s->frame_segs - 1;
            uint64_t len = at - seg_at(s, k), base = s->frame_base[k];
            uint64_t step = s->frame_at[k] >> STEP_SHIFT;
            if ((step == STEP_UP && v == base + len) || (step == STEP_DOWN && v == base - len) ||
                (step == STEP_SAME && v == base))
                continue;
            if (len == 1 && step == STEP_UP && (v == base - 1 || v == base)) {
                /* The second page decides which way a segment goes. */
                s->frame_at[k] = seg_at(s, k) | (v == base ? STEP_SAME : STEP_DOWN) << STEP_SHIFT;
                continue;
            }
        }
        int rc = grow(s);
        if (rc)
            return rc;
        s->frame_at[s->frame_segs] = at; /* STEP_UP until a second page says otherwise */
        s->frame_base[s->frame_segs] = v;
        s->frame_segs++;
    }
    s->frame_pages += n;
    return MEMDIFF_OK;
}

void memdiff__frames_seek(const memdiff_snapshot *s, uint64_t i, memdiff__frames_iter *it)
{
    size_t lo = 0, hi = s->frame_segs;
    while (hi - lo > 1) { /* the last segment that starts at or before i */
        size_t mid = lo + (hi - lo) / 2;
        if (seg_at(s, mid) <= i)
            lo = mid;
        else
            hi = mid;
    }
    it->s = s;
    it->seg = lo;
    it->i = i;
}

uint64_t memdiff__frames_peek(const memdiff__frames_iter *it, uint64_t max, uint64_t *base,
                              int *step)
{
    const memdiff_snapshot *s = it->s;
    if (it->seg >= s->frame_segs || it->i >= s->frame_pages) {
        *base = 0; /* past the frames: unknown, as frame 0 */
        *step = 0;
        return max;
    }
    size_t k = it->seg;
    uint64_t off = it->i - seg_at(s, k);
    *step = seg_step(s, k);
    *base = s->frame_base[k] + (uint64_t)((int64_t)*step * (int64_t)off);
    return MEMDIFF__MIN(max, seg_end(s, k) - it->i);
}

void memdiff__frames_skip(memdiff__frames_iter *it, uint64_t n)
{
    const memdiff_snapshot *s = it->s;
    it->i += n;
    while (it->seg + 1 < s->frame_segs && seg_at(s, it->seg + 1) <= it->i)
        it->seg++;
}

uint64_t memdiff__frame(const memdiff_snapshot *s, uint64_t i)
{
    memdiff__frames_iter it;
    uint64_t base;
    int step;
    memdiff__frames_seek(s, i, &it);
    memdiff__frames_peek(&it, 1, &base, &step);
    return base;
}

/* A position in the frames with its stretch decoded: the loop below walks two of them. */
typedef struct cursor {
    const memdiff_snapshot *s;
    size_t seg;
    uint64_t left;  /* pages left in the stretch */
    uint64_t value; /* frame of the current page */
    int step;
} cursor;

static void cursor_load(cursor *c, uint64_t i)
{
    const memdiff_snapshot *s = c->s;
    if (c->seg >= s->frame_segs || i >= s->frame_pages) {
        c->left = UINT64_MAX; /* past the frames: unknown, as frame 0 */
        c->value = 0;
        c->step = 0;
        return;
    }
    uint64_t off = i - seg_at(s, c->seg);
    c->step = seg_step(s, c->seg);
    c->value = s->frame_base[c->seg] + (uint64_t)((int64_t)c->step * (int64_t)off);
    c->left = seg_end(s, c->seg) - i;
}

uint64_t memdiff__frames_mismatch(const memdiff_snapshot *a, uint64_t ia,
                                  const memdiff_snapshot *b, uint64_t ib, uint64_t n)
{
    memdiff__frames_iter x, y;
    memdiff__frames_seek(a, ia, &x);
    memdiff__frames_seek(b, ib, &y);
    cursor ca = {a, x.seg, 0, 0, 0}, cb = {b, y.seg, 0, 0, 0};
    cursor_load(&ca, ia);
    cursor_load(&cb, ib);
    uint64_t done = 0;
    while (done < n) {
        /* Both at the start of a segment: segments that match pairwise (same length, step and
         * base), as two snapshots of unchanged memory have, pass in bulk. */
        if (ca.seg < a->frame_segs && cb.seg < b->frame_segs &&
            seg_at(a, ca.seg) == ia + done && seg_at(b, cb.seg) == ib + done) {
            size_t sx = ca.seg, sy = cb.seg;
            while (sx + 1 < a->frame_segs && sy + 1 < b->frame_segs) {
                uint64_t ex = seg_at(a, sx + 1) - ia, ey = seg_at(b, sy + 1) - ib;
                if (ex != ey || ex > n || a->frame_base[sx] != b->frame_base[sy] ||
                    (a->frame_at[sx] >> STEP_SHIFT) != (b->frame_at[sy] >> STEP_SHIFT))
                    break;
                sx++;
                sy++;
            }
            if (sx > ca.seg) {
                done = seg_at(a, sx) - ia;
                ca.seg = sx;
                cb.seg = sy;
                cursor_load(&ca, ia + done);
                cursor_load(&cb, ib + done);
                continue;
            }
        }
        if (ca.value != cb.value)
            return done;
        uint64_t len = MEMDIFF__MIN(MEMDIFF__MIN(ca.left, cb.left), n - done);
        if (ca.step != cb.step && len > 1)
            return done + 1; /* equal at the first page, apart from the second on */
        done += len;
        ca.left -= len;
        cb.left -= len;
        ca.value += (uint64_t)((int64_t)ca.step * (int64_t)len);
        cb.value += (uint64_t)((int64_t)cb.step * (int64_t)len);
        if (ca.left == 0) {
            ca.seg++;
            cursor_load(&ca, ia + done);
        }
        if (cb.left == 0) {
            cb.seg++;
            cursor_load(&cb, ib + done);
        }
    }
    return n;
}

int memdiff__frames_equal(const memdiff_snapshot *a, uint64_t ia, const memdiff_snapshot *b,
                          uint64_t ib, uint64_t n)
{
    return memdiff__frames_mismatch(a, ia, b, ib, n) == n;
}
