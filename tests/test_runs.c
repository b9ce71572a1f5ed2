/* test_runs.c - page-run storage (memdiff/runs.c): plain and bitmap records, what the iterator
 * gives back, what the storage costs, and a snapshot file round trip of bitmap runs; frame
 * numbers stored as stretches (memdiff/seq.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "suites.h"
#include "synth.h"

#define P UINT64_C(4096)
#define BASE UINT64_C(0x10000000)
#define PRES MEMDIFF_PAGE_PRESENT
#define PRIV MEMDIFF_PAGE_PRIVATE

/* A snapshot of nregions regions of npages pages each, one after another from BASE, no runs. */
static memdiff_snapshot *empty_snapshot(size_t nregions, uint64_t npages)
{
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff_snapshot *s = memdiff__arena_alloc(&a, sizeof *s);
    ck_assert_ptr_nonnull(s);
    s->arena = a;
    s->info.page_size = (uint32_t)P;
    s->regions = memdiff__arena_alloc(&s->arena, nregions * sizeof *s->regions);
    ck_assert_ptr_nonnull(s->regions);
    for (size_t i = 0; i < nregions; i++) {
        s->regions[i].start = BASE + i * npages * P;
        s->regions[i].end = s->regions[i].start + npages * P;
        s->regions[i].label = s->regions[i].path = "";
    }
    s->region_count = nregions;
    return s;
}

/* Pages [page, page + n) counted from BASE. */
static void append(memdiff_snapshot *s, uint32_t region, uint64_t page, uint64_t n,
                   unsigned attrs, uint64_t aux)
{
    ck_assert_int_eq(memdiff__runs_append(s, region, BASE + page * P, n, attrs, aux), MEMDIFF_OK);
}

/* The runs of s (or of one region, region >= 0) into out[0..cap); returns how many. */
static size_t read_runs(const memdiff_snapshot *s, long region, memdiff__run *out, size_t cap)
{
    memdiff__runs_iter it;
    if (region < 0)
        memdiff__runs_begin(s, &it);
    else
        memdiff__runs_begin_region(s, (size_t)region, &it);
    size_t n = 0;
    memdiff__run r;
    while (memdiff__runs_next(&it, &r)) {
        ck_assert_uint_lt(n, cap);
        out[n++] = r;
    }
    return n;
}

START_TEST(a_long_run_is_one_record)
{
    const uint64_t N = UINT64_C(1) << 20; /* 4 GiB of pages */
    memdiff_snapshot *s = empty_snapshot(1, N);
    /* A backend may hand one run over in pieces (batch boundaries): they merge. */
    for (uint64_t k = 0; k < 4; k++)
        append(s, 0, k * (N / 4), N / 4, PRES | PRIV, MEMDIFF__NO_AUX);
    ck_assert_uint_eq(s->run_records, 1);
    ck_assert_uint_eq(memdiff__runs_bytes(s), sizeof(memdiff__run_rec));
    ck_assert_uint_eq(s->run_count, 1);
    memdiff__run r[2];
    ck_assert_uint_eq(read_runs(s, -1, r, 2), 1);
    ck_assert_uint_eq(r[0].start, BASE);
    ck_assert_uint_eq(r[0].npages, N);
    ck_assert_uint_eq(r[0].attrs, PRES | PRIV);
    ck_assert_uint_eq(r[0].aux, MEMDIFF__NO_AUX);
    ck_assert_uint_eq(s->regions[0].resident_pages, N);
    ck_assert_uint_eq(s->regions[0].private_pages, N);
    memdiff_snapshot_free(s);
}
END_TEST

START_TEST(alternate_pages_cost_a_bit_each)
{
    const uint64_t N = UINT64_C(1) << 18;
    memdiff_snapshot *s = empty_snapshot(1, N);
    for (uint64_t p = 0; p < N; p += 2)
        append(s, 0, p, 1, PRES | PRIV, MEMDIFF__NO_AUX);
    ck_assert_uint_eq(s->run_count, N / 2);
    /* 1 bit per page of the span, one record: well under 2 bits per mapped page. */
    ck_assert_uint_le(memdiff__runs_bytes(s) * 8, 2 * N);
    ck_assert_uint_le(memdiff__runs_bytes(s), N / 8 + 64);
    memdiff__run *r = malloc(N / 2 * sizeof *r);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(read_runs(s, -1, r, N / 2), N / 2);
    uint64_t wrong = 0; /* one assertion, not N: this runs under sanitizers too */
    for (uint64_t k = 0; k < N / 2; k++)
        wrong += r[k].start != BASE + 2 * k * P || r[k].npages != 1 ||
                 r[k].attrs != (PRES | PRIV) || r[k].region != 0;
    ck_assert_uint_eq(wrong, 0);
    free(r);
    ck_assert_uint_eq(s->regions[0].resident_pages, N / 2);
    memdiff_snapshot_free(s);
}
END_TEST

START_TEST(bitmap_runs_keep_their_frame_facts)
{
    memdiff_snapshot *s = empty_snapshot(1, 4096);
    uint64_t aux = 0;
    /* Short runs with frame facts, close together: one bitmap. */
    for (uint64_t p = 0; p < 1000; p += 3) {
        uint64_t n = 1 + p % 2;
        append(s, 0, p, n, PRES, aux);
        aux += n;
    }
    /* Adjacent runs with frame facts are never merged. */
    append(s, 0, 2000, 5, PRES, aux);
    append(s, 0, 2005, 5, PRES, aux + 5);
    aux += 10;
    memdiff__run r[400];
    size_t n = read_runs(s, -1, r, 400);
    ck_assert_uint_eq(n, s->run_count);
    uint64_t want_aux = 0, k = 0;
    for (uint64_t p = 0; p < 1000; p += 3, k++) {
        ck_assert_uint_eq(r[k].start, BASE + p * P);
        ck_assert_uint_eq(r[k].npages, 1 + p % 2);
        ck_assert_uint_eq(r[k].aux, want_aux);
        want_aux += 1 + p % 2;
    }
    ck_assert_uint_eq(n, k + 2);
    ck_assert_uint_eq(r[k].start, BASE + 2000 * P);
    ck_assert_uint_eq(r[k].npages, 5);
    ck_assert_uint_eq(r[k + 1].start, BASE + 2005 * P);
    ck_assert_uint_eq(r[k + 1].aux, want_aux + 5);
    ck_assert_uint_lt(s->run_records, 4);
    memdiff_snapshot_free(s);
}
END_TEST

START_TEST(a_long_run_continuing_a_bitmap_moves_out_of_it)
{
    memdiff_snapshot *s = empty_snapshot(1, 8192);
    append(s, 0, 0, 1, PRES, MEMDIFF__NO_AUX);
    append(s, 0, 2, 1, PRES, MEMDIFF__NO_AUX);
    append(s, 0, 4, 2, PRES, MEMDIFF__NO_AUX);
    append(s, 0, 6, 5000, PRES, MEMDIFF__NO_AUX); /* continues the run at page 4 */
    append(s, 0, 6000, 1, PRES, MEMDIFF__NO_AUX);
    memdiff__run r[8];
    ck_assert_uint_eq(read_runs(s, -1, r, 8), 4);
    ck_assert_uint_eq(s->run_count, 4);
    ck_assert_uint_eq(r[2].start, BASE + 4 * P);
    ck_assert_uint_eq(r[2].npages, 5002);
    ck_assert_uint_eq(r[3].start, BASE + 6000 * P);
    /* The bitmap did not take 5000 bits for it. */
    ck_assert_uint_le(memdiff__runs_bytes(s), 4 * sizeof(memdiff__run_rec) + 64);
    ck_assert_uint_eq(s->regions[0].resident_pages, 5005);
    memdiff_snapshot_free(s);
}
END_TEST

/* Random runs over several regions read back exactly as appended, with the one merge rule: a run
 * adjacent to the previous one, with the same attrs and region and no frame facts on either,
 * continues it. */
START_TEST(random_runs_read_back_as_appended)
{
    static const uint64_t gaps[] = {0, 1, 1, 2, 3, 7, 64, 255, 300, 5000};
    static const uint64_t lens[] = {1, 1, 2, 3, 17, 64, 200, 256, 257, 3000};
    static const unsigned attrs[] = {PRES | PRIV, PRES, MEMDIFF_PAGE_SWAPPED,
                                     PRES | MEMDIFF_PAGE_ZERO};
    enum { REGIONS = 5, PAGES = 1 << 18, MAX = 40000 };
    memdiff__run *want = malloc(MAX * sizeof *want), *got = malloc(MAX * sizeof *got);
    ck_assert(want && got);
    uint32_t x = 12345u + (uint32_t)_i * 7919u;
#define RND(n) ((x = x * 1103515245u + 12345u), (x >> 8) % (n))
    memdiff_snapshot *s = empty_snapshot(REGIONS, PAGES);
    size_t nw = 0;
    uint64_t aux = 0, resident[REGIONS] = {0};
    size_t per_region[REGIONS] = {0};
    for (uint32_t g = 0; g < REGIONS; g++) {
        uint64_t page = RND(3);
        int first = 1;
        while (nw < MAX) {
            uint64_t gap = first ? 0 : gaps[RND(10)], len = lens[RND(10)];
            if (page + gap + len > PAGES)
                break;
            page += gap;
            unsigned a = attrs[RND(4)];
            int with_aux = RND(3) == 0;
            uint64_t at = with_aux ? aux : MEMDIFF__NO_AUX;
            uint64_t abs = (uint64_t)g * PAGES + page; /* the page from BASE */
            append(s, g, abs, len, a, at);
            memdiff__run *prev = nw ? &want[nw - 1] : NULL;
            if (prev && prev->region == g && prev->start + prev->npages * P == BASE + abs * P &&
                prev->attrs == a && prev->aux == MEMDIFF__NO_AUX && !with_aux) {
                prev->npages += len;
            } else {
                want[nw].start = BASE + abs * P;
                want[nw].npages = len;
                want[nw].attrs = a;
                want[nw].region = g;
                want[nw].aux = at;
                nw++;
                per_region[g]++;
            }
            if (with_aux)
                aux += len;
            if (memdiff__attrs_resident(a))
                resident[g] += len;
            page += len;
            first = 0;
        }
    }
#undef RND
    ck_assert_uint_eq(s->run_count, nw);
    ck_assert_uint_eq(read_runs(s, -1, got, MAX), nw);
    for (size_t i = 0; i < nw; i++) {
        ck_assert_msg(got[i].start == want[i].start && got[i].npages == want[i].npages &&
                          got[i].attrs == want[i].attrs && got[i].region == want[i].region &&
                          got[i].aux == want[i].aux,
                      "run %zu: got 0x%llx+%llu attrs 0x%x region %u aux %lld, want 0x%llx+%llu "
                      "attrs 0x%x region %u aux %lld",
                      i, (unsigned long long)got[i].start, (unsigned long long)got[i].npages,
                      got[i].attrs, got[i].region, (long long)got[i].aux,
                      (unsigned long long)want[i].start, (unsigned long long)want[i].npages,
                      want[i].attrs, want[i].region, (long long)want[i].aux);
    }
    size_t at = 0;
    for (uint32_t g = 0; g < REGIONS; g++) {
        size_t n = read_runs(s, g, got, MAX);
        ck_assert_uint_eq(n, per_region[g]);
        ck_assert_uint_eq(s->regions[g].run_count, per_region[g]);
        ck_assert_mem_eq(got, want + at, n * sizeof *got);
        at += n;
        ck_assert_uint_eq(s->regions[g].resident_pages, resident[g]);
    }
    free(want);
    free(got);
    memdiff_snapshot_free(s);
}
END_TEST

/* memdiff__runs_append_bits stores what memdiff__runs_append stores run by run: the same
 * records, bitmap words and counts, for runs of every length and gap around BITMAP_STEP (256
 * pages), with and without frame facts, after plain runs and bitmaps alike; bits past npages
 * (set here on purpose) are ignored. */
START_TEST(bits_append_as_runs_one_by_one)
{
    static const uint64_t gaps[] = {1, 1, 1, 2, 3, 7, 64, 200, 255, 256, 300};
    static const uint64_t lens[] = {1, 1, 1, 2, 3, 17, 64, 200, 256, 257};
    static const unsigned attrs[] = {PRES | PRIV, PRES, MEMDIFF_PAGE_SWAPPED};
    enum { REGIONS = 3, PAGES = 1 << 17, SPAN = 4096 };
    uint64_t bits[SPAN / 64 + 2];
    uint32_t x = 777u + (uint32_t)_i * 104729u;
#define RND(n) ((x = x * 1103515245u + 12345u), (x >> 8) % (n))
    memdiff_snapshot *one = empty_snapshot(REGIONS, PAGES), *all = empty_snapshot(REGIONS, PAGES);
    uint64_t aux = 0;
    size_t calls = 0;
    for (uint32_t g = 0; g < REGIONS; g++) {
        uint64_t page = RND(3);
        for (;;) {
            page += RND(2) ? 0 : gaps[RND(11)];
            unsigned a = attrs[RND(3)];
            int with_aux = RND(2) == 0;
            if (RND(4) == 0) { /* a plain run, as a backend delivers a long one */
                uint64_t len = lens[RND(10)];
                if (page + len > PAGES)
                    break;
                uint64_t at = with_aux ? aux : MEMDIFF__NO_AUX;
                append(one, g, (uint64_t)g * PAGES + page, len, a, at);
                append(all, g, (uint64_t)g * PAGES + page, len, a, at);
                aux += with_aux ? len : 0;
                page += len + 1;
                continue;
            }
            /* Many runs in one bitmap: page 0 and the last page are in runs. */
            memset(bits, 0, sizeof bits);
            uint64_t n = 0, set = 0, at = with_aux ? aux : MEMDIFF__NO_AUX;
            int small = RND(4) != 0; /* gaps and runs that join a bitmap, or of every size */
            while (n < SPAN) {
                uint64_t gap = !n ? 0 : small || RND(4) ? 1 + RND(4) : gaps[RND(11)];
                uint64_t len = small || RND(3) ? 1 + RND(3) : lens[RND(10)];
                if (n + gap + len > SPAN || page + n + gap + len > PAGES)
                    break;
                for (uint64_t k = n + gap; k < n + gap + len; k++)
                    bits[k / 64] |= UINT64_C(1) << (k % 64);
                uint64_t abs = (uint64_t)g * PAGES + page + n + gap;
                append(one, g, abs, len, a, with_aux ? aux + set : MEMDIFF__NO_AUX);
                set += len;
                n += gap + len;
            }
            if (n == 0)
                break;
            bits[n / 64] |= ~UINT64_C(0) << (n % 64); /* ignored: past npages */
            bits[n / 64 + 1] = ~UINT64_C(0);
            uint64_t from = BASE + ((uint64_t)g * PAGES + page) * P;
            ck_assert_int_eq(memdiff__runs_append_bits(all, g, from, n, a, bits, at), MEMDIFF_OK);
            calls++;
            aux += with_aux ? set : 0;
            page += n + 1;
            if (page >= PAGES)
                break;
        }
    }
#undef RND
    ck_assert_uint_gt(calls, 20);
    ck_assert_uint_eq(all->run_records, one->run_records);
    for (size_t i = 0; i < one->run_records; i++) {
        const memdiff__run_rec *w = &one->runs[i], *h = &all->runs[i];
        ck_assert_msg(h->start == w->start && h->npages == w->npages && h->attrs == w->attrs &&
                          h->region == w->region && h->aux == w->aux,
                      "record %zu differs", i);
    }
    ck_assert_uint_eq(all->run_words, one->run_words);
    ck_assert_mem_eq(all->run_bits, one->run_bits, one->run_words * sizeof *one->run_bits);
    ck_assert_uint_eq(all->run_count, one->run_count);
    ck_assert_uint_eq(all->last_set, one->last_set);
    ck_assert_uint_gt(one->run_count, 1000);
    for (uint32_t g = 0; g < REGIONS; g++) {
        ck_assert_uint_eq(all->regions[g].run_count, one->regions[g].run_count);
        ck_assert_uint_eq(all->regions[g].run_records, one->regions[g].run_records);
        ck_assert_uint_eq(all->regions[g].resident_pages, one->regions[g].resident_pages);
        ck_assert_uint_eq(all->regions[g].private_pages, one->regions[g].private_pages);
        ck_assert_uint_eq(all->regions[g].swapped_pages, one->regions[g].swapped_pages);
    }
    memdiff_snapshot_free(one);
    memdiff_snapshot_free(all);
}
END_TEST

/* A synthetic snapshot's spec: one private region of npages pages from BASE, every other page
 * resident (runs[0..npages / 2) filled here), frames pfn (or NULL). */
static synth_spec alternate_spec(synth_run *runs, uint64_t npages, const uint64_t *pfn)
{
    static synth_region reg;
    reg = (synth_region){BASE, BASE + npages * P, MEMDIFF_CAT_PRIVATE, "anonymous", 1, 0, 0, 0, 0};
    for (size_t k = 0; k < npages / 2; k++)
        runs[k] = (synth_run){BASE + 2 * k * P, 1, PRES | PRIV};
    return (synth_spec){.regions = &reg, .region_count = 1, .runs = runs,
                        .run_count = npages / 2, .pfn = pfn};
}

/* Runs stored as bitmaps survive a snapshot file and compare as equal. */
START_TEST(bitmap_runs_round_trip_through_a_file)
{
    enum { N = 4096 };
    static synth_run runs[N / 2];
    synth_spec spec = alternate_spec(runs, N, NULL);
    memdiff_snapshot *a = synth_snapshot(&spec);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_le(memdiff__runs_bytes(a), N / 8 + 64);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(memdiff_snapshot_save(a, f), MEMDIFF_OK);
    fclose(f);
    f = fmemopen(buf, len, "rb");
    ck_assert_ptr_nonnull(f);
    memdiff_snapshot *b = NULL;
    ck_assert_msg(memdiff_snapshot_load(f, &b) == MEMDIFF_OK, "%s", memdiff_last_error());
    fclose(f);
    free(buf);
    ck_assert_uint_eq(b->run_count, N / 2);
    ck_assert_uint_eq(memdiff__runs_bytes(b), memdiff__runs_bytes(a));
    memdiff__run *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    ck_assert(x && y);
    ck_assert_uint_eq(read_runs(a, -1, x, N), N / 2);
    ck_assert_uint_eq(read_runs(b, -1, y, N), N / 2);
    ck_assert_mem_eq(x, y, N / 2 * sizeof *x);
    free(x);
    free(y);
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(a, b, 0, &d), MEMDIFF_OK);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 0);
    memdiff_diff_free(d);

    /* One page less after: one page freed, found inside the bitmap. */
    runs[100].npages = 0;
    memmove(&runs[100], &runs[101], (N / 2 - 101) * sizeof runs[0]);
    spec.run_count = N / 2 - 1;
    memdiff_snapshot *c = synth_snapshot(&spec);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(memdiff_compare(a, c, 0, &d), MEMDIFF_OK);
    memdiff_totals t;
    ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &t), MEMDIFF_OK);
    ck_assert_uint_eq(t.freed_bytes, P);
    ck_assert_uint_eq(t.freed_discarded_bytes, P);
    ck_assert_uint_eq(t.new_bytes, 0);
    memdiff_diff_free(d);
    memdiff_snapshot_free(c);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}
END_TEST

/* Compares pass identical bitmap records whole; one frame that moved is still found. */
START_TEST(compare_finds_a_replaced_frame_inside_a_bitmap)
{
    enum { N = 2048 };
    static synth_run runs[N / 2];
    static uint64_t pfn_b[N / 2], pfn_a[N / 2];
    for (size_t k = 0; k < N / 2; k++)
        pfn_b[k] = pfn_a[k] = 0x5000 + 3 * k;
    synth_spec spec = alternate_spec(runs, N, pfn_b);
    memdiff_snapshot *b = synth_snapshot(&spec);
    memdiff_snapshot *same = synth_snapshot(&spec);
    pfn_a[700] = 0x99999;
    spec.pfn = pfn_a;
    memdiff_snapshot *a = synth_snapshot(&spec);
    ck_assert(b && a && same);
    ck_assert_uint_lt(b->run_records, 4); /* the runs are in a bitmap */
    memdiff_diff *d = NULL;
    memdiff_totals t;
    ck_assert_int_eq(memdiff_compare(b, same, 0, &d), MEMDIFF_OK);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 0);
    memdiff_diff_free(d);
    ck_assert_int_eq(memdiff_compare(b, a, MEMDIFF_COMPARE_VERBOSE, &d), MEMDIFF_OK);
    ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &t), MEMDIFF_OK);
    ck_assert_uint_eq(t.replaced_bytes, P);
    ck_assert_uint_eq(t.new_bytes + t.freed_bytes, 0);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 1);
    memdiff_block blk;
    ck_assert_int_eq(memdiff_diff_block(d, 0, &blk), MEMDIFF_OK);
    ck_assert_uint_eq(blk.start, BASE + 1400 * P);
    memdiff_diff_free(d);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(same);
    memdiff_snapshot_free(b);
}
END_TEST

/* Frame numbers (memdiff/seq.c): stretches up, down and flat, appended in pieces, read back
 * page by page and stretch by stretch; equal stretches compare equal. */
/* memdiff__stretch_end against the definition, value by value: every step (1, 0, descending),
 * every length of stretch from 1 to 40 starting at every offset of a 48-value array, broken by a
 * value one off (a neighbouring frame) or by the array's end: whichever lane of the eight- and
 * four-value tests the break falls in. */
START_TEST(stretch_end_matches_its_definition)
{
    static const uint64_t steps[3] = {1, 0, UINT64_MAX};
    enum { N = 48 };
    uint64_t v[N];
    for (int s = 0; s < 3; s++)
        for (size_t i = 0; i < N; i++)
            for (size_t len = 1; len <= 40; len++) {
                uint64_t st = steps[s], base = UINT64_C(1) << 40;
                for (size_t k = 0; k < N; k++)
                    v[k] = base + 7 * k; /* no stretch of any step */
                size_t end = i + len < N ? i + len : N;
                for (size_t k = i; k < end; k++)
                    v[k] = base + st * (k - i);
                if (end < N)
                    v[end] = base + st * (end - i) + 1; /* one off: ends it */
                size_t want = i + 1;
                while (want < N && v[want] == v[i] + st * (want - i))
                    want++;
                ck_assert_uint_eq(want, end);
                ck_assert_uint_eq(memdiff__stretch_end(v, i, N, st), want);
                ck_assert_uint_eq(memdiff__stretch_end(v, i, end, st), end); /* the end stops it */
            }
}
END_TEST

START_TEST(frames_read_back_as_appended)
{
    enum { N = 20000 };
    static uint64_t v[N];
    uint32_t x = 777u + (uint32_t)_i * 31u;
#define RND(n) ((x = x * 1103515245u + 12345u), (x >> 8) % (n))
    for (size_t i = 0; i < N;) {
        size_t len = 1 + RND(600);
        uint64_t base = RND(4) == 0 ? 0 : 0x100000 + RND(1u << 20);
        unsigned kind = RND(4); /* up, down, flat, scattered */
        for (size_t k = 0; k < len && i < N; k++, i++)
            v[i] = kind == 0 ? base + k : kind == 1 ? base - k : kind == 2 ? base : RND(1u << 30);
    }
#undef RND
    memdiff_snapshot *s = empty_snapshot(1, 1);
    for (size_t i = 0; i < N;) { /* in pieces, as runs bring them */
        size_t m = MEMDIFF__MIN((size_t)N - i, 1 + (i * 7919) % 1500);
        ck_assert_int_eq(memdiff__seq_append(&s->arena, &s->frames, v + i, m), MEMDIFF_OK);
        i += m;
    }
    ck_assert(s->frames.present);
    ck_assert_uint_eq(s->frames.n, N);
    uint64_t wrong = 0;
    for (size_t i = 0; i < N; i++)
        wrong += memdiff__seq_get(&s->frames, i) != v[i];
    ck_assert_uint_eq(wrong, 0);
    memdiff__seq_iter it;
    memdiff__seq_seek(&s->frames, 1234, &it);
    for (size_t i = 1234; i < N;) {
        uint64_t base;
        int step;
        uint64_t len = memdiff__seq_peek(&it, N - i, &base, &step);
        ck_assert_uint_ge(len, 1);
        for (uint64_t k = 0; k < len; k++)
            wrong += base + (uint64_t)((int64_t)step * (int64_t)k) != v[i + k];
        memdiff__seq_skip(&it, len);
        i += len;
    }
    ck_assert_uint_eq(wrong, 0);
    /* The same frames in another snapshot, appended in other pieces, compare equal; one frame
     * changed does not. */
    memdiff_snapshot *t = empty_snapshot(1, 1);
    ck_assert_int_eq(memdiff__seq_append(&t->arena, &t->frames, v, N / 3), MEMDIFF_OK);
    ck_assert_int_eq(memdiff__seq_append(&t->arena, &t->frames, v + N / 3, N - N / 3), MEMDIFF_OK);
    ck_assert(memdiff__seq_equal(&s->frames, 0, &t->frames, 0, N));
    ck_assert(memdiff__seq_equal(&s->frames, 100, &t->frames, 100, N - 100));
    memdiff_snapshot *u = empty_snapshot(1, 1);
    v[N / 2] ^= 1;
    ck_assert_int_eq(memdiff__seq_append(&u->arena, &u->frames, v, N), MEMDIFF_OK);
    ck_assert(!memdiff__seq_equal(&s->frames, 0, &u->frames, 0, N));
    ck_assert_uint_eq(memdiff__seq_mismatch(&s->frames, 0, &u->frames, 0, N), N / 2);
    ck_assert_uint_eq(memdiff__seq_mismatch(&u->frames, 10, &s->frames, 10, N - 10),
                      N / 2 - 10);
    ck_assert(memdiff__seq_equal(&s->frames, 0, &u->frames, 0, N / 2));
    ck_assert(memdiff__seq_equal(&s->frames, N / 2 + 1, &u->frames, N / 2 + 1, N - N / 2 - 1));
    /* Segments cut elsewhere (frames appended from another start) still compare equal. */
    memdiff_snapshot *o = empty_snapshot(1, 1);
    ck_assert_int_eq(memdiff__seq_append(&o->arena, &o->frames, v + 5, N / 2 - 5), MEMDIFF_OK);
    ck_assert_uint_eq(memdiff__seq_mismatch(&s->frames, 5, &o->frames, 0, N / 2 - 5), N / 2 - 5);
    ck_assert_uint_eq(memdiff__seq_mismatch(&o->frames, 0, &s->frames, 5, N / 2 - 5), N / 2 - 5);
    memdiff_snapshot_free(o);
    memdiff_snapshot_free(u);
    memdiff_snapshot_free(t);
    memdiff_snapshot_free(s);
}
END_TEST

/* Frames appended as stretches (the backend's run_frames) are stored exactly as the same
 * values appended one by one: the same segments and literals. Stretches of every length from 1,
 * up, down and flat, some continuing the one before. */
START_TEST(frames_as_stretches_store_as_values)
{
    enum { N = 30000 };
    static uint64_t v[N];
    memdiff_snapshot *s = empty_snapshot(1, 1), *t = empty_snapshot(1, 1);
    uint32_t x = 4242u + (uint32_t)_i * 17u;
#define RND(n) ((x = x * 1103515245u + 12345u), (x >> 8) % (n))
    size_t i = 0;
    uint64_t next = 0x300000;
    while (i < N) {
        size_t len = RND(3) == 0 ? 1 + RND(4) : 1 + RND(300);
        len = MEMDIFF__MIN(len, (size_t)N - i);
        int64_t step = RND(3) == 0 ? 0 : RND(2) ? 1 : -1;
        uint64_t first = RND(3) == 0 ? next : 0x100000 + RND(1u << 20); /* continuing, or not */
        for (size_t k = 0; k < len; k++)
            v[i + k] = first + (uint64_t)step * k;
        memdiff__values piece = {first, step, len, NULL};
        ck_assert_int_eq(memdiff__seq_append_pieces(&s->arena, &s->frames, &piece, 1, 0, len),
                         MEMDIFF_OK);
        ck_assert_int_eq(memdiff__seq_append(&t->arena, &t->frames, v + i, len), MEMDIFF_OK);
        next = first + (uint64_t)step * len;
        i += len;
    }
#undef RND
    ck_assert_uint_eq(s->frames.n, N);
    ck_assert_uint_eq(s->frames.segs, t->frames.segs);
    ck_assert_uint_eq(s->frames.lits, t->frames.lits);
    ck_assert(memcmp(s->frames.at, t->frames.at, s->frames.segs * sizeof *s->frames.at) == 0);
    ck_assert(memcmp(s->frames.base, t->frames.base, s->frames.segs * sizeof *s->frames.base) ==
              0);
    ck_assert(memcmp(s->frames.lit, t->frames.lit, s->frames.lits * sizeof *s->frames.lit) == 0);
    uint64_t wrong = 0;
    for (size_t k = 0; k < N; k++)
        wrong += memdiff__seq_get(&s->frames, k) != v[k];
    ck_assert_uint_eq(wrong, 0);
    memdiff_snapshot_free(t);
    memdiff_snapshot_free(s);
}
END_TEST

/* The segments a sequence must get, read plainly off the rule (seq.c): from each position, the
 * longest stretch by +1, -1 or 0 is a segment if it has three values or more; otherwise values
 * are literals up to the first three that make a stretch. A short stretch at the very end, after
 * a stretch or at the start, stays a segment of its own (the next value would settle it). Kinds
 * as seq.c keeps them in the top bits of a segment's start: up 0, down 1, same 2, literal 3. */
typedef struct ref_seq {
    uint64_t at[4096], base[4096], lit[4096];
    size_t segs, lits;
} ref_seq;

static int ref_three(const uint64_t *v, size_t q)
{
    uint64_t d = v[q + 1] - v[q];
    return v[q + 2] - v[q + 1] == d && d + 1 <= 2;
}

static void ref_segments(const uint64_t *v, size_t n, ref_seq *r)
{
    r->segs = r->lits = 0;
    for (size_t p = 0; p < n;) {
        uint64_t d = p + 1 < n ? v[p + 1] - v[p] : 0;
        size_t e = p + 1;
        if (p + 1 < n && d + 1 <= 2)
            for (e = p + 2; e < n && v[e] - v[e - 1] == d; e++)
                ;
        uint64_t kind = d == 1 ? 0 : d == 0 ? 2 : 1;
        if (e - p >= 3 || e == n) {
            r->at[r->segs] = (uint64_t)p | (e - p == 1 ? 0 : kind) << 62;
            r->base[r->segs++] = v[p];
            p = e;
            continue;
        }
        size_t q = p + 1;
        while (q + 2 < n && !ref_three(v, q))
            q++;
        if (q + 2 >= n)
            q = n;
        r->at[r->segs] = (uint64_t)p | UINT64_C(3) << 62;
        r->base[r->segs++] = r->lits;
        for (; p < q; p++)
            r->lit[r->lits++] = v[p];
    }
}

/* The fast ways of appending (stretches after stretches and after literals, literals in bulk)
 * store exactly the segments of the rule above, however the values arrive: one by one, as
 * arrays, as stretch pieces, as literal pieces. Values from a small range make the awkward
 * cases common (a stretch that starts inside literals, one that continues the stretch before,
 * two short stretches in a row). */
START_TEST(every_way_of_appending_stores_the_rule)
{
    enum { N = 4000 };
    static uint64_t v[N];
    static ref_seq want;
    uint32_t x = 77u + (uint32_t)_i * 31u;
#define RND(n) ((x = x * 1103515245u + 12345u), (x >> 8) % (n))
    for (size_t i = 0; i < N;) {
        size_t most = RND(2) ? 3 : 12;
        size_t len = 1 + RND(most);
        int64_t step = RND(3) == 0 ? 0 : RND(2) ? 1 : -1;
        uint64_t first = RND(4) == 0 && i ? v[i - 1] + (uint64_t)step : 100 + RND(6);
        for (size_t k = 0; k < len && i < N; k++, i++)
            v[i] = first + (uint64_t)step * k;
    }
    ref_segments(v, N, &want);
    memdiff_snapshot *s = empty_snapshot(1, 1);
    memdiff__seq *q = &s->frames;
    size_t failed = 0; /* one assertion at the end: each costs a write(2) */
    for (size_t i = 0; i < N;) {
        size_t len = 1 + RND(9); /* not inside MEMDIFF__MIN: it evaluates twice */
        len = MEMDIFF__MIN(len, (size_t)N - i);
        int how = (int)RND(4);
        int64_t d = len > 1 ? (int64_t)(v[i + 1] - v[i]) : 1;
        int stretch = d >= -1 && d <= 1;
        for (size_t k = 2; k < len; k++)
            stretch = stretch && (int64_t)(v[i + k] - v[i + k - 1]) == d;
        if (how == 0) {
            for (size_t k = 0; k < len; k++)
                failed += memdiff__seq_append(&s->arena, q, v + i + k, 1) != MEMDIFF_OK;
        } else if (how == 1) {
            failed += memdiff__seq_append(&s->arena, q, v + i, len) != MEMDIFF_OK;
        } else {
            memdiff__values piece = {v[i], d, len, NULL}; /* a stretch */
            memdiff__values lits = {0, 1, len, v + i};    /* literal values */
            int as_stretch = stretch && how == 2; /* 3: values that go on by one step too */
            failed += memdiff__seq_append_pieces(&s->arena, q, as_stretch ? &piece : &lits, 1, 0,
                                                 len) != MEMDIFF_OK;
        }
        i += len;
    }
    ck_assert_uint_eq(failed, 0);
#undef RND
    ck_assert_uint_eq(q->n, N);
    ck_assert_uint_eq(q->segs, want.segs);
    ck_assert_uint_eq(q->lits, want.lits);
    size_t bad_at = 0, bad_base = 0, bad_lit = 0;
    for (size_t k = 0; k < want.segs; k++) {
        bad_at += q->at[k] != want.at[k];
        bad_base += q->base[k] != want.base[k];
    }
    for (size_t k = 0; k < want.lits; k++)
        bad_lit += q->lit[k] != want.lit[k];
    ck_assert_uint_eq(bad_at, 0);
    ck_assert_uint_eq(bad_base, 0);
    ck_assert_uint_eq(bad_lit, 0);
    memdiff_snapshot_free(s);
}
END_TEST

/* Consecutive frames cost a segment, not a page: 1M pages in four stretches. */
START_TEST(consecutive_frames_cost_a_segment)
{
    enum { N = 1 << 20 };
    uint64_t *v = malloc(N * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < N; i++)
        v[i] = i < N / 4 ? 0x200000 + i : i < N / 2 ? 0x900000 - i : i < 3 * (N / 4) ? 7 : 0;
    memdiff_snapshot *s = empty_snapshot(1, 1);
    ck_assert_int_eq(memdiff__seq_append(&s->arena, &s->frames, v, N), MEMDIFF_OK);
    ck_assert_uint_eq(s->frames.segs, 4);
    free(v);
    memdiff_snapshot_free(s);
}
END_TEST

/* Values that form no stretch are literals: no dearer than an array of them; stretches between
 * them still come out as stretches, and all read back. */
START_TEST(random_values_cost_no_more_than_an_array)
{
    enum { N = 10000 };
    static uint64_t v[N];
    uint32_t x = 99u;
    for (size_t i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        v[i] = (i / 1000) % 2 ? 0x5000 + i : x >> 4; /* random, then 1000 in a row, ... */
    }
    memdiff_snapshot *s = empty_snapshot(1, 1);
    ck_assert_int_eq(memdiff__seq_append(&s->arena, &s->kflags, v, N), MEMDIFF_OK);
    ck_assert_uint_le(memdiff__seq_bytes(&s->kflags), N / 2 * 8 + 64 * 16);
    uint64_t wrong = 0;
    for (size_t i = 0; i < N; i++)
        wrong += memdiff__seq_get(&s->kflags, i) != v[i];
    ck_assert_uint_eq(wrong, 0);
    memdiff_snapshot_free(s);
}
END_TEST

START_TEST(a_count_past_the_indices_is_refused)
{
    /* Counts come from files as any 64-bit value: 3 + (2^64 - 2) wraps to 1, which a check of
     * the sum against the limit would let through. */
    memdiff__arena arena = MEMDIFF__ARENA_INIT;
    memdiff__seq q;
    memset(&q, 0, sizeof q);
    const uint64_t v[3] = {7, 8, 9};
    ck_assert_int_eq(memdiff__seq_append(&arena, &q, v, 3), MEMDIFF_OK);
    ck_assert_int_eq(memdiff__seq_append(&arena, &q, NULL, UINT64_MAX - 1), MEMDIFF_ENOMEM);
    ck_assert_str_eq(memdiff_last_error(), "page facts: 18446744073709551615 pages are too many");
    const memdiff__values stretch = {100, 1, UINT64_MAX - 1, NULL};
    ck_assert_int_eq(memdiff__seq_append_pieces(&arena, &q, &stretch, 1, 0, UINT64_MAX - 1),
                     MEMDIFF_ENOMEM);
    ck_assert_uint_eq(q.n, 3);
    ck_assert_uint_eq(memdiff__seq_get(&q, 2), 9);
    memdiff__arena_release(&arena);
}
END_TEST

Suite *runs_suite(void)
{
    Suite *s = suite_create("runs");
    TCase *core = tcase_create("Core");
    tcase_add_test(core, a_long_run_is_one_record);
    tcase_add_test(core, stretch_end_matches_its_definition);
    tcase_add_test(core, alternate_pages_cost_a_bit_each);
    tcase_add_test(core, bitmap_runs_keep_their_frame_facts);
    tcase_add_test(core, a_long_run_continuing_a_bitmap_moves_out_of_it);
    tcase_add_loop_test(core, random_runs_read_back_as_appended, 0, 8);
    tcase_add_loop_test(core, bits_append_as_runs_one_by_one, 0, 16);
    tcase_add_test(core, bitmap_runs_round_trip_through_a_file);
    tcase_add_test(core, compare_finds_a_replaced_frame_inside_a_bitmap);
    tcase_add_loop_test(core, frames_read_back_as_appended, 0, 4);
    tcase_add_loop_test(core, frames_as_stretches_store_as_values, 0, 4);
    tcase_add_loop_test(core, every_way_of_appending_stores_the_rule, 0, 48);
    tcase_add_test(core, consecutive_frames_cost_a_segment);
    tcase_add_test(core, random_values_cost_no_more_than_an_array);
    tcase_add_test(core, a_count_past_the_indices_is_refused);
    suite_add_tcase(s, core);
    return s;
}
