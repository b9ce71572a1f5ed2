/*
 * runs.c - a snapshot's page runs: how they are stored, appended and read back.
 *
 * A run of pages with identical attributes is one 32-byte record, which is what makes a 4 GiB
 * mapping resident in one piece cost 32 bytes. Where runs are short and close together (every
 * other page resident, a heap with holes) one record per run would cost 256 bits per run; there
 * a bitmap record takes over: one bit per page of its span, set for the pages of its runs, all
 * with the record's attrs. The builder chooses per append, by which costs fewer bits: a bitmap
 * grows while the next run and the gap before it are at most BITMAP_STEP pages together (less
 * than a record's 256 bits), and a plain record starts otherwise.
 *
 * Everyone reads runs through memdiff__runs_next (compare's merge walk, the file writer, the
 * accessors, the tests), so the representation can change without them. The iterator yields
 * the same runs whichever records hold them: the builder merges what is mergeable before it
 * chooses a representation (adjacent pages with the same attrs and region, no frame facts), so
 * a bitmap's stretches of set bits are exactly the runs appended.
 *
 * Storage comes from the snapshot's arena; the arrays grow with memdiff__arena_grow (pages moved,
 * not copied, where the OS allows). No malloc.
 */
#include <string.h>

#include "internal.h"

#define BITMAP_STEP 256u /* pages: a record is 256 bits */

static size_t words_for(uint64_t pages)
{
    return (size_t)((pages + 63) / 64);
}

static int test_bit(const uint64_t *w, uint64_t b)
{
    return (int)((w[b / 64] >> (b % 64)) & 1);
}

static int grow_records(memdiff_snapshot *s)
{
    memdiff__run_rec *v =
        memdiff__arena_room(&s->arena, s->runs, &s->run_cap, s->run_records, sizeof *v, 64);
    if (!v)
        return MEMDIFF_ENOMEM;
    s->runs = v;
    return MEMDIFF_OK;
}

/* Room for need words of bitmap in all; new words are zero. */
static int grow_bits(memdiff_snapshot *s, size_t need)
{
    if (need <= s->bits_cap)
        return MEMDIFF_OK;
    size_t cap = s->bits_cap ? s->bits_cap : 64;
    while (cap < need)
        cap *= 2;
    uint64_t *v = memdiff__arena_grow(&s->arena, s->run_bits, s->bits_cap * sizeof *v,
                                      cap * sizeof *v);
    if (!v)
        return MEMDIFF_ENOMEM;
    s->run_bits = v;
    s->bits_cap = cap;
    return MEMDIFF_OK;
}

static int new_record(memdiff_snapshot *s, uint32_t region, uint64_t start, uint64_t npages,
                      unsigned attrs, uint64_t aux)
{
    int rc = grow_records(s);
    if (rc)
        return rc;
    memdiff__region *g = &s->regions[region];
    if (!g->run_records) {
        g->run_first = s->run_records;
        g->bits_first = s->run_words;
    }
    g->run_records++;
    memdiff__run_rec *r = &s->runs[s->run_records++];
    r->start = start;
    r->npages = npages;
    r->attrs = attrs;
    r->region = region;
    r->aux = aux;
    s->last_set = npages;
    return MEMDIFF_OK;
}

/* The last record L, a bitmap, gives up its last run (which ends its span): its span shrinks to
 * its previous set page. Returns the pages given up. */
static uint64_t trim_last_run(memdiff_snapshot *s, memdiff__run_rec *L)
{
    uint64_t *w = s->run_bits + (s->run_words - words_for(L->npages));
    uint64_t end = L->npages, b = end;
    while (b > 0 && test_bit(w, b - 1))
        b--;
    uint64_t given = end - b;
    while (b > 0 && !test_bit(w, b - 1))
        b--;
    /* b > 0: a bitmap record holds two runs at least, so one is left. */
    size_t old_words = words_for(end), new_words = words_for(b);
    memset(w + new_words, 0, (old_words - new_words) * sizeof *w);
    if (b % 64)
        w[new_words - 1] &= (UINT64_C(1) << (b % 64)) - 1;
    s->run_words -= old_words - new_words;
    L->npages = b;
    s->last_set -= given;
    return given;
}

int memdiff__runs_append(memdiff_snapshot *s, uint32_t region, uint64_t start, uint64_t npages,
                         unsigned attrs, uint64_t aux)
{
    memdiff__region *g = &s->regions[region];
    uint64_t ps = s->info.page_size;
    memdiff__region_count(g, attrs, npages);
    memdiff__run_rec *L = s->run_records ? &s->runs[s->run_records - 1] : NULL;
    int with_aux = aux != MEMDIFF__NO_AUX;
    if (L && L->region == region && (L->attrs & ~MEMDIFF__RUN_BITMAP) == attrs &&
        start >= L->start + L->npages * ps &&
        (with_aux ? L->aux != MEMDIFF__NO_AUX && L->aux + s->last_set == aux
                  : L->aux == MEMDIFF__NO_AUX)) {
        uint64_t gap = memdiff__in_pages(start - (L->start + L->npages * ps), ps);
        int bitmap = (L->attrs & MEMDIFF__RUN_BITMAP) != 0;
        if (gap == 0 && with_aux) {
            /* Runs with frame facts stay apart: a new record. */
        } else if (gap == 0 && !bitmap) {
            L->npages += npages; /* the same run, continued */
            s->last_set += npages;
            return MEMDIFF_OK;
        } else if (gap + npages <= BITMAP_STEP && (bitmap || L->npages <= BITMAP_STEP)) {
            /* Into a bitmap: L's own, or one L becomes (its pages set, then these). */
            size_t at = bitmap ? s->run_words - words_for(L->npages) : s->run_words;
            uint64_t span = L->npages + gap + npages;
            int rc = grow_bits(s, at + words_for(span));
            if (rc)
                return rc;
            if (!bitmap) {
                if (g->run_records == 1)
                    g->bits_first = at; /* L is the region's first record */
                memdiff__set_bits(s->run_bits + at, 0, L->npages);
                L->attrs |= MEMDIFF__RUN_BITMAP;
            }
            memdiff__set_bits(s->run_bits + at, L->npages + gap, npages);
            s->run_words = at + words_for(span);
            L->npages = span;
            s->last_set += npages;
            if (gap > 0) {
                s->run_count++;
                g->run_count++;
            }
            return MEMDIFF_OK;
        } else if (gap == 0) {
            /* A long run continuing the bitmap's last one: that run moves out of the bitmap to
             * start a plain record with these pages. */
            uint64_t given = trim_last_run(s, L);
            return new_record(s, region, start - given * ps, given + npages, attrs,
                              MEMDIFF__NO_AUX);
        }
    }
    int rc = new_record(s, region, start, npages, attrs, aux);
    if (!rc) {
        s->run_count++;
        g->run_count++;
    }
    return rc;
}

/* Sets in dst, from bit to on, the set bits of src's [from, end) (ORs them in). */
static void or_bits(uint64_t *dst, uint64_t to, const uint64_t *src, uint64_t from, uint64_t end)
{
    while (from < end) {
        unsigned off = (unsigned)(from % 64);
        uint64_t take = MEMDIFF__MIN(64 - off, end - from);
        uint64_t x = src[from / 64] >> off;
        if (take < 64)
            x &= (UINT64_C(1) << take) - 1;
        unsigned at = (unsigned)(to % 64);
        dst[to / 64] |= x << at;
        if (at && take > 64 - at)
            dst[to / 64 + 1] |= x >> (64 - at);
        from += take;
        to += take;
    }
}

/* Appends the runs of bits from page *from on (see memdiff__runs_append_bits) one by one, the
 * one rule for each, and stops early once the last record is a bitmap when stop_at_bitmap;
 * *from: where the next run is looked for, *aux: its first frame facts. */
static int append_each(memdiff_snapshot *s, uint32_t region, uint64_t start, uint64_t npages,
                       unsigned attrs, const uint64_t *bits, uint64_t *from, uint64_t *aux,
                       int stop_at_bitmap)
{
    const uint64_t ps = s->info.page_size;
    uint64_t k = memdiff__find_bit(bits, *from, npages, 1);
    while (k < npages) {
        uint64_t e = memdiff__find_bit(bits, k, npages, 0);
        int rc = memdiff__runs_append(s, region, start + k * ps, e - k, attrs, *aux);
        if (rc)
            return rc;
        if (*aux != MEMDIFF__NO_AUX)
            *aux += e - k;
        k = memdiff__find_bit(bits, e, npages, 1);
        if (stop_at_bitmap && (s->runs[s->run_records - 1].attrs & MEMDIFF__RUN_BITMAP))
            break;
    }
    *from = k;
    return MEMDIFF_OK;
}

int memdiff__runs_append_bits(memdiff_snapshot *s, uint32_t region, uint64_t start,
                              uint64_t npages, unsigned attrs, const uint64_t *bits, uint64_t aux)
{
    const uint64_t ps = s->info.page_size;
    /* The first run or two through the rule: they may continue the last record, start one, or
     * turn a short one into a bitmap. */
    uint64_t k = 0;
    int rc = append_each(s, region, start, npages, attrs, bits, &k, &aux, 1);
    if (rc || k >= npages)
        return rc;
    /* The last record L is a bitmap ending with the last run appended. The rest joins it whole
     * when each of its runs would, the gap before it and its pages within BITMAP_STEP: one pass
     * over the bits instead of a call a run. */
    memdiff__run_rec *L = &s->runs[s->run_records - 1];
    uint64_t last = memdiff__in_pages(L->start + L->npages * ps - start, ps);
    uint64_t runs = 0, set = 0;
    for (uint64_t w = k / 64; w <= (npages - 1) / 64; w++) {
        /* This word's pages in runs from k on, and the ends of the runs: a page in a run whose
         * next page is not (bit 63's next is the next word's bit 0). */
        uint64_t x = bits[w], next = w + 1 <= (npages - 1) / 64 ? bits[w + 1] : 0;
        if (w == (npages - 1) / 64 && npages % 64) {
            x &= (UINT64_C(1) << (npages % 64)) - 1;
            next = 0;
        }
        if (w == k / 64)
            x &= ~UINT64_C(0) << (k % 64);
        set += memdiff__popcount64(x);
        uint64_t ends = x & ~(x >> 1 | next << 63);
        if (!ends)
            continue;
        /* Only the word's first run can be too far from the one before (gap + pages): the
         * others end within 64 pages of it. */
        if (w * 64 + memdiff__ctz64(ends) + 1 - last > BITMAP_STEP)
            return append_each(s, region, start, npages, attrs, bits, &k, &aux, 0);
        last = w * 64 + 64 - memdiff__clz64(ends);
        runs += memdiff__popcount64(ends);
    }
    /* Bit j of bits is bit j + before - within of L's bitmap (L may have begun before this
     * call or at one of its runs). */
    uint64_t before = L->start < start ? memdiff__in_pages(start - L->start, ps) : 0;
    uint64_t within = L->start > start ? memdiff__in_pages(L->start - start, ps) : 0;
    size_t at = s->run_words - words_for(L->npages);
    uint64_t span = last + before - within;
    rc = grow_bits(s, at + words_for(span));
    if (rc)
        return rc;
    or_bits(s->run_bits + at, k + before - within, bits, k, last);
    s->run_words = at + words_for(span);
    L->npages = span;
    s->last_set += set;
    s->run_count += runs;
    memdiff__region *g = &s->regions[region];
    g->run_count += runs;
    memdiff__region_count(g, attrs, set);
    return MEMDIFF_OK;
}

/* ---- reading ------------------------------------------------------------------------------ */

void memdiff__runs_begin(const memdiff_snapshot *s, memdiff__runs_iter *it)
{
    memset(it, 0, sizeof *it);
    it->s = s;
    it->rec_end = s->run_records;
}

void memdiff__runs_begin_region(const memdiff_snapshot *s, size_t region, memdiff__runs_iter *it)
{
    memset(it, 0, sizeof *it);
    it->s = s;
    if (region < s->region_count && s->regions[region].run_records) {
        const memdiff__region *g = &s->regions[region];
        it->rec = g->run_first;
        it->rec_end = MEMDIFF__MIN(g->run_first + g->run_records, s->run_records);
        it->word = g->bits_first;
    }
}

int memdiff__runs_next(memdiff__runs_iter *it, memdiff__run *out)
{
    const memdiff_snapshot *s = it->s;
    it->opened = 0;
    while (it->rec < it->rec_end) {
        const memdiff__run_rec *r = &s->runs[it->rec];
        if (!(r->attrs & MEMDIFF__RUN_BITMAP)) {
            out->start = r->start;
            out->npages = r->npages;
            out->attrs = r->attrs;
            out->region = r->region;
            out->aux = r->aux;
            it->rec++;
            return 1;
        }
        size_t words = words_for(r->npages);
        if (it->word + words > s->run_words) {
            it->rec = it->rec_end; /* corrupt: no bitmap behind the record */
            return 0;
        }
        const uint64_t *w = s->run_bits + it->word;
        uint64_t b = memdiff__find_bit(w, it->bit, r->npages, 1);
        if (b == r->npages) {
            it->rec++;
            it->word += words;
            it->bit = it->set = 0;
            continue;
        }
        uint64_t e = memdiff__find_bit(w, b, r->npages, 0);
        out->start = r->start + b * s->info.page_size;
        out->npages = e - b;
        out->attrs = r->attrs & ~MEMDIFF__RUN_BITMAP;
        out->region = r->region;
        out->aux = r->aux == MEMDIFF__NO_AUX ? MEMDIFF__NO_AUX : r->aux + it->set;
        it->opened = it->set == 0;
        it->set += e - b;
        it->bit = e;
        return 1;
    }
    return 0;
}

const memdiff__run_rec *memdiff__runs_bitmap(const memdiff__runs_iter *it, const uint64_t **bits)
{
    if (!it->opened)
        return NULL;
    *bits = it->s->run_bits + it->word;
    return &it->s->runs[it->rec];
}

void memdiff__runs_skip_bitmap(memdiff__runs_iter *it)
{
    if (it->rec < it->rec_end && (it->s->runs[it->rec].attrs & MEMDIFF__RUN_BITMAP)) {
        it->word += words_for(it->s->runs[it->rec].npages);
        it->rec++;
        it->bit = it->set = 0;
    }
    it->opened = 0;
}

size_t memdiff__runs_bytes(const memdiff_snapshot *s)
{
    return s->run_records * sizeof(memdiff__run_rec) + s->run_words * sizeof(uint64_t);
}
