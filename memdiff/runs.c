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

static void set_bits(uint64_t *w, uint64_t from, uint64_t n)
{
    for (uint64_t b = from; b < from + n;) {
        unsigned off = (unsigned)(b % 64);
        uint64_t take = MEMDIFF__MIN(64 - off, from + n - b);
        uint64_t mask = take == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << take) - 1) << off;
        w[b / 64] |= mask;
        b += take;
    }
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
                set_bits(s->run_bits + at, 0, L->npages);
                L->attrs |= MEMDIFF__RUN_BITMAP;
            }
            set_bits(s->run_bits + at, L->npages + gap, npages);
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

/* The first page at or after b (below n) whose bit is want, or n. */
static uint64_t find_bit(const uint64_t *w, uint64_t b, uint64_t n, int want)
{
    while (b < n) {
        uint64_t x = w[b / 64];
        if (!want)
            x = ~x;
        x &= ~UINT64_C(0) << (b % 64);
        if (x)
            return MEMDIFF__MIN(n, b / 64 * 64 + memdiff__ctz64(x));
        b = (b / 64 + 1) * 64;
    }
    return n;
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
        uint64_t b = find_bit(w, it->bit, r->npages, 1);
        if (b == r->npages) {
            it->rec++;
            it->word += words;
            it->bit = it->set = 0;
            continue;
        }
        uint64_t e = find_bit(w, b, r->npages, 0);
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
