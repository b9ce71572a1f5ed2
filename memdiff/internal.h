/*
 * internal.h - private to the core (the .c files under memdiff/). Not installed.
 *
 * The data model: a snapshot is a sorted array of classified regions and a sorted array of page
 * runs (one record per run of pages with identical attributes), plus optional per-page arrays of
 * frame facts. All of it lives in the snapshot's own arena.
 */
#ifndef MEMDIFF_INTERNAL_H
#define MEMDIFF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/attrs.h"
#include "base/bits.h"
#include "base/error.h"
#include "base/escape.h"
#include "memdiff.h"
#include "platform.h"

/* ---- checked arithmetic ----------------------------------------------------------------- */

/* Byte counts come from snapshot files (any value the format allows) and from sums of them,
 * and a diff hands them out as signed 64-bit figures (net_bytes, memdiff_figure). Two files
 * within the documented ranges can free 2^63 bytes at once, which no int64_t holds. So every
 * sum of counts here saturates instead of wrapping (a sum that does not fit reads as too large,
 * never as small or negative), signed figures stay within [-INT64_MAX, INT64_MAX] (negating or
 * taking the magnitude of one is always exact), and memdiff_compare() refuses with
 * MEMDIFF_ERANGE a diff with any byte count above MEMDIFF__FIGURE_MAX, so that the figures of
 * every diff it returns are exact. The one place for this arithmetic: use it wherever counts
 * are added, subtracted or made signed. */
#define MEMDIFF__FIGURE_MAX ((uint64_t)INT64_MAX)

/* a + b, or UINT64_MAX when the sum does not fit. */
static inline uint64_t memdiff__add_sat(uint64_t a, uint64_t b)
{
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* a * b, or UINT64_MAX when the product does not fit. */
static inline uint64_t memdiff__mul_sat(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* a as a signed figure: at most INT64_MAX. */
static inline int64_t memdiff__to_figure(uint64_t a)
{
    return a > MEMDIFF__FIGURE_MAX ? INT64_MAX : (int64_t)a;
}

/* a - b as a signed figure, within [-INT64_MAX, INT64_MAX]. */
static inline int64_t memdiff__sub_sat(uint64_t a, uint64_t b)
{
    return a >= b ? memdiff__to_figure(a - b) : -memdiff__to_figure(b - a);
}

/* a + b of signed figures, within [-INT64_MAX, INT64_MAX]. */
static inline int64_t memdiff__add_sat_i64(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < -INT64_MAX - b)
        return -INT64_MAX;
    return a + b < -INT64_MAX ? -INT64_MAX : a + b;
}

/* a - b of signed figures, within [-INT64_MAX, INT64_MAX]. */
static inline int64_t memdiff__sub_sat_i64(int64_t a, int64_t b)
{
    return memdiff__add_sat_i64(a, b < -INT64_MAX ? INT64_MAX : -b);
}

/* ---- snapshot storage ------------------------------------------------------------------- */

#define MEMDIFF__NO_AUX UINT64_MAX

/* A classified region. A mapping the classifier split (a heap range inside an anonymous
 * mapping, memdiff's own chunk) becomes several regions with the same file identity. */
typedef struct memdiff__region {
    uint64_t start, end;
    uint64_t offset;           /* file offset of start */
    uint64_t dev, inode;
    unsigned prot;             /* MEMDIFF_PROT_* */
    unsigned flags;            /* MEMDIFF_REGION_*, MEMDIFF__RF_* */
    memdiff__hint hint;
    memdiff_category category;
    const char *label;         /* never NULL; interned in the snapshot arena */
    const char *path;          /* never NULL */
    uint64_t unit;             /* allocation unit: regions with equal (category, unit, label)
                                  are one block in a default diff */
    /* Its page runs: records runs[run_first .. run_first + run_records), their bitmaps from
     * word run_bits[bits_first]; run_count runs (memdiff__runs_begin_region reads them). */
    size_t run_first, run_records, bits_first;
    size_t run_count;
    uint64_t resident_pages;   /* present, zero page excluded */
    uint64_t private_pages;
    uint64_t swapped_pages;
    uint64_t pss_fixed;        /* PSS in 1/4096 bytes (memdiff__pss_fixed): MEMDIFF_SRC_PSS;
                                  MEMDIFF_SRC_PSS_MAPPINGS: of [start, pss_end) (mapping_pss.c) */
    uint64_t pss_end;          /* MEMDIFF_SRC_PSS_MAPPINGS: memdiff_region.pss_end, else 0 */
} memdiff__region;

/* A run: pages [start, start + npages * page_size) share attrs (MEMDIFF_PAGE_*). Only pages that
 * are present or swapped are in runs; a page inside a region and in no run is mapped, not
 * resident. Runs are read in address order with memdiff__runs_next (runs.c), never from the
 * storage directly: adjacent runs always differ in attrs, region or aux (a run with frame facts
 * is never merged with another). */
typedef struct memdiff__run {
    uint64_t start;
    uint64_t npages;
    uint32_t attrs;
    uint32_t region;           /* index into regions */
    uint64_t aux;              /* index of the first page in pfn/kflags/mapcount, or NO_AUX */
} memdiff__run;

/* Per-page values (frame facts) in index order, stored as stretches (seq.c). */
typedef struct memdiff__seq {
    uint64_t *at, *base;  /* segments: start index | kind, first value (or literal index) */
    size_t segs, cap;
    uint64_t *lit;        /* values of literal segments */
    size_t lits, lit_cap;
    uint64_t n;           /* values appended */
    int present;          /* collected (set by the first append) */
} memdiff__seq;

/* How runs are stored (runs.c): records of 32 bytes. A plain record is one run. A bitmap record
 * (MEMDIFF__RUN_BITMAP in attrs) spans npages pages from start with one bit per page in
 * run_bits: the set pages share the record's attrs, and each stretch of set bits is one run; its
 * aux counts the set pages only. Records of a region are consecutive, bitmaps follow in record
 * order. Alternate resident pages cost 1 bit per page instead of 256 per run. */
#define MEMDIFF__RUN_BITMAP 0x80000000u

typedef struct memdiff__run_rec {
    uint64_t start;
    uint64_t npages;
    uint32_t attrs;
    uint32_t region;
    uint64_t aux;
} memdiff__run_rec;

struct memdiff_snapshot {
    memdiff__arena arena;
    memdiff_snapshot_info info; /* strings point into arena */
    memdiff__region *regions;
    size_t region_count;
    memdiff__run_rec *runs;     /* the records (runs.c), run_records of run_cap */
    size_t run_records, run_cap;
    uint64_t *run_bits;         /* bitmap words, run_words of bits_cap */
    size_t run_words, bits_cap;
    size_t run_count;           /* runs, as memdiff__runs_next gives them */
    uint64_t last_set;          /* pages in runs of the last record (the builder's) */
    /* Per-page frame facts of the runs that have them (run.aux indexes them), aux_count pages
     * each where present: frame numbers, kernel page flags, map counts (seq.c). */
    memdiff__seq frames, kflags, mapcount;
    size_t aux_count;
};

/* A page costs memory: present and not the shared zero page. */
static inline int memdiff__attrs_resident(unsigned attrs)
{
    return (attrs & MEMDIFF_PAGE_PRESENT) && !(attrs & MEMDIFF_PAGE_ZERO);
}

/* Counts npages pages with attrs into the region's resident, private and swapped pages: the one
 * rule, for the snapshot builder and the file loader alike. */
static inline void memdiff__region_count(memdiff__region *r, unsigned attrs, uint64_t npages)
{
    if (memdiff__attrs_resident(attrs)) {
        r->resident_pages += npages;
        if (attrs & MEMDIFF_PAGE_PRIVATE)
            r->private_pages += npages;
    }
    if (attrs & MEMDIFF_PAGE_SWAPPED)
        r->swapped_pages += npages;
}

/* Sets the info's region and run counts and its byte totals (resident, private, shared,
 * swapped, own) from the regions' page counts. A snapshot taken of the calling process then
 * replaces own_bytes by the arena's count (its Own regions have no pages). With map counts
 * (MEMDIFF_SRC_MAP_COUNTS) it also sets MEMDIFF_SRC_PSS and every region's and the info's PSS. */
void memdiff__snapshot_tally(memdiff_snapshot *s);

/* PSS of a resident page mapped n times, in 1/4096 bytes: what smaps adds for it
 * (fs/proc/task_mmu.c, smaps_account(), PSS_SHIFT 12); a count below 2, or unknown (0), is
 * the whole page. smaps prints the sum >> 12 >> 10 kB; memdiff hands out sum >> 12 bytes. */
static inline uint64_t memdiff__pss_fixed(uint64_t page_size, uint64_t n)
{
    return n >= 2 ? (page_size << 12) / n : page_size << 12;
}

/* PSS in 1/4096 bytes of the n resident pages whose frame facts begin at aux (a run's; NO_AUX:
 * none, each page whole), from s->mapcount stretch by stretch; saturating. */
uint64_t memdiff__pss_of(const memdiff_snapshot *s, uint64_t aux, uint64_t n);

/* Where a snapshot gets no map counts and was asked for MEMDIFF_SNAPSHOT_SMAPS_PSS: every
 * mapping's PSS (memdiff__plat_mapping_pss) put whole on the mapping's first region (pss_fixed,
 * pss_end; mapping_pss.c), *sources then MEMDIFF_SRC_PSS_MAPPINGS. *note: NULL, or (in scratch)
 * why the OS gave no figure (*sources 0), or how many mappings changed meanwhile. */
int memdiff__mapping_pss(memdiff__proc *proc, memdiff__arena *scratch, memdiff_snapshot *s,
                         unsigned *sources, const char **note);

/* ---- page runs (runs.c) ----------------------------------------------------------------- */

/* Appends npages pages from start with attrs to the runs of region (an index into s->regions),
 * and counts them into the region (memdiff__region_count). aux: the index of the first page's
 * frame facts (s->frames, s->kflags, s->mapcount: seq.c), or MEMDIFF__NO_AUX. Calls come in
 * address order, region by region, pages not overlapping; a run that continues the previous one (adjacent, same
 * attrs and region, neither with frame facts) extends it. MEMDIFF_ENOMEM from the arena. */
int memdiff__runs_append(memdiff_snapshot *s, uint32_t region, uint64_t start, uint64_t npages,
                         unsigned attrs, uint64_t aux);

/* Appends many short runs with attrs at once, as memdiff__runs_append would one by one (the same
 * records and bitmaps): page k of [start, start + npages) is in a run when bit k of bits is set
 * (bits[k / 64] >> k % 64 & 1; bits past npages are ignored). aux: the frame facts of the first
 * set page, the others' following on, or MEMDIFF__NO_AUX. */
int memdiff__runs_append_bits(memdiff_snapshot *s, uint32_t region, uint64_t start,
                              uint64_t npages, unsigned attrs, const uint64_t *bits, uint64_t aux);

/* Reads runs in address order: all of a snapshot's, or one region's. */
typedef struct memdiff__runs_iter {
    const memdiff_snapshot *s;
    size_t rec, rec_end; /* records left: [rec, rec_end) */
    size_t word;         /* first bitmap word of record rec */
    uint64_t bit;        /* in a bitmap record: the next page to look at */
    uint64_t set;        /* in a bitmap record: set pages before bit (for aux) */
    int opened;          /* the last run returned was the first of bitmap record rec */
} memdiff__runs_iter;

void memdiff__runs_begin(const memdiff_snapshot *s, memdiff__runs_iter *it);
void memdiff__runs_begin_region(const memdiff_snapshot *s, size_t region, memdiff__runs_iter *it);

/* The next run into *out: 1, or 0 at the end. */
int memdiff__runs_next(memdiff__runs_iter *it, memdiff__run *out);

/* When the last run it returned was the first of a bitmap record: that record, with its bitmap
 * in *bits (one bit per page of its span); else NULL. For comparing whole bitmaps at once. */
const memdiff__run_rec *memdiff__runs_bitmap(const memdiff__runs_iter *it, const uint64_t **bits);

/* Passes the rest of the bitmap record memdiff__runs_bitmap returned: the next run comes from
 * the record after it. */
void memdiff__runs_skip_bitmap(memdiff__runs_iter *it);

/* Bytes the runs take as stored (records and bitmaps in use; frame facts not included). */
size_t memdiff__runs_bytes(const memdiff_snapshot *s);

/* ---- frame facts (seq.c) ----------------------------------------------------------------- */

/* Appends n values (v[0..n), or all 0 when v is NULL: unknown) at the next indices of q, in
 * arena, and marks q present. MEMDIFF_ENOMEM from the arena. */
int memdiff__seq_append(memdiff__arena *arena, memdiff__seq *q, const uint64_t *v, uint64_t n);

/* Appends count values from pieces ps[0..n) (memdiff__values), the first skip values passed
 * over; values the pieces do not give are 0 (unknown). The segments are those memdiff__seq_append
 * makes of the same values one by one; a stretch piece costs the same whatever its length once
 * the stretch is under way. */
int memdiff__seq_append_pieces(memdiff__arena *arena, memdiff__seq *q, const memdiff__values *ps,
                               size_t n, uint64_t skip, uint64_t count);

/* Value i of q (0 when unknown or beyond the values). */
uint64_t memdiff__seq_get(const memdiff__seq *q, uint64_t i);

/* Reads values as stretches: from the position, len values base + step * k (step +1, -1 or 0;
 * literal values come one at a time). peek returns len (at most max) without moving; skip moves
 * n values on. */
typedef struct memdiff__seq_iter {
    const memdiff__seq *q;
    size_t seg;
    uint64_t i;
} memdiff__seq_iter;

void memdiff__seq_seek(const memdiff__seq *q, uint64_t i, memdiff__seq_iter *it);
uint64_t memdiff__seq_peek(const memdiff__seq_iter *it, uint64_t max, uint64_t *base, int *step);
void memdiff__seq_skip(memdiff__seq_iter *it, uint64_t n);

/* The first j < n at which value ia + j of a differs from value ib + j of b, or n: segment by
 * segment, a few ns a segment whatever its length. */
uint64_t memdiff__seq_mismatch(const memdiff__seq *a, uint64_t ia, const memdiff__seq *b,
                               uint64_t ib, uint64_t n);

/* Whether values [ia, ia + n) of a equal values [ib, ib + n) of b. */
int memdiff__seq_equal(const memdiff__seq *a, uint64_t ia, const memdiff__seq *b, uint64_t ib,
                       uint64_t n);

/* Bytes q takes as stored. */
size_t memdiff__seq_bytes(const memdiff__seq *q);

/* ---- snapshot files (file_common.c) ----------------------------------------------------- */

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32()) of data[0..n) continuing from crc (0 to
 * start). Exposed for tests and the fuzz target, which forge files with valid checksums. */
uint32_t memdiff__crc32(uint32_t crc, const void *data, size_t n);

/* A byte buffer that grows in an arena, for encoders (snapshot and timeline files,
 * file_common.c). An append that cannot grow it sets failed (MEMDIFF_ENOMEM, detail set) and
 * every later append does nothing, so an encoder checks once at the end. */
typedef struct memdiff__wbuf {
    memdiff__arena *arena;
    unsigned char *p;
    size_t len, cap;
    int failed;
} memdiff__wbuf;

void memdiff__wbuf_put(memdiff__wbuf *b, const void *data, size_t n);

/* v as an unsigned LEB128 varint (docs/file-format.md). */
void memdiff__wbuf_varint(memdiff__wbuf *b, uint64_t v);

/* The same into out (10 bytes at most); returns its length. */
unsigned memdiff__varint_encode(unsigned char *out, uint64_t v);

/* The snapshot file of s (docs/file-format.md), assembled in scratch: *p, *n (file_write.c).
 * Errors: as memdiff_snapshot_save() before it writes. The timeline stores snapshots so. */
int memdiff__snapshot_encode(const memdiff_snapshot *s, memdiff__arena *scratch,
                             const unsigned char **p, size_t *n);

/* memdiff_snapshot_load() of the file p[0..n) held in memory (file_read.c): the same checks
 * and memory bound. */
int memdiff__snapshot_decode(const unsigned char *p, size_t n, memdiff_snapshot **out);

/* Writes object to the file at path atomically with write (memdiff_snapshot_save_file()'s
 * way: a new file beside it, renamed over path once whole; path nothing or a regular file),
 * api naming the caller in messages (file_write.c). */
int memdiff__save_file_atomic(const char *path, const char *api,
                              int (*write)(const void *object, FILE *out), const void *object);

/* Opens path for reading and calls load on it (memdiff_snapshot_load_file()'s way: the detail
 * of a failure starts with path; api names the caller when path is NULL; file_read.c). */
int memdiff__load_file(const char *path, const char *api, int (*load)(FILE *in, void *out),
                       void *out);

/* What memdiff_snapshot_save_file() allows at path: nothing, or a regular file (no symbolic
 * link, device, FIFO...); else MEMDIFF_EINVAL with detail (file_write.c). */
int memdiff__check_save_target(const char *path);

/* ---- testing hooks (snapshot.c) --------------------------------------------------------- */

/* Testing hook: fn (NULL: none) is called once in the middle of every snapshot, after the
 * region list is read: tests raise signals there to enter memdiff again (the arena's hooks are
 * in base/arena.h). */
void memdiff__test_while_taking(void (*fn)(void));

/* ---- strings ---------------------------------------------------------------------------- */

typedef struct memdiff__strtab memdiff__strtab; /* uthash-backed, arena-allocated */

/* An interned copy of s (equal strings give the same pointer); NULL on allocation failure. */
const char *memdiff__intern(memdiff__strtab **table, memdiff__arena *arena, const char *s);

/* ---- classification --------------------------------------------------------------------- */

/* Facts from the backend, as read for one snapshot. */
typedef struct memdiff__facts {
    int pid;
    int self;                  /* the snapshot is of the calling process */
    uint64_t self_stack_hint;  /* memdiff__os_stack_hint() when self, else 0 */
    int64_t self_tid;          /* memdiff__os_thread_id() when self, else 0 */
    const memdiff__plat_region *regions;
    size_t region_count;
    const memdiff__plat_thread *threads;
    size_t thread_count;
    const memdiff__plat_module *modules;
    size_t module_count;
    const memdiff__plat_heap *heaps;
    size_t heap_count;
    const memdiff__range *own;
    size_t own_count;
} memdiff__facts;

/* Turns facts into classified regions (category, label, unit), splitting regions at heap, own
 * and module-segment boundaries. Labels and paths are interned into arena via table. Runs are
 * not filled (run_first = run_count = 0). Portable rules only: docs/categories.md. */
int memdiff__classify(const memdiff__facts *facts, memdiff__arena *arena,
                      memdiff__strtab **table, memdiff__region **out, size_t *count);

/* ---- diff ------------------------------------------------------------------------------- */

struct memdiff_diff {
    memdiff__arena arena;
    unsigned flags;                /* MEMDIFF_COMPARE_* */
    memdiff_snapshot_info info[2]; /* before, after; strings copied into arena */
    memdiff_totals total;          /* Own excluded */
    memdiff_totals category[MEMDIFF_CAT_COUNT];
    memdiff_block *blocks;
    size_t block_count;
    size_t *outer; /* per block: the nearest earlier block that ends later, or SIZE_MAX
                      (memdiff_diff_find_block() skips along it) */
    /* Reference-set brackets only (refset.c): bracket is nonzero and the rest is set. */
    int bracket;
    memdiff_refset_info refs;       /* strings in arena */
    memdiff_impact impact;          /* Own excluded */
    memdiff_impact impact_category[MEMDIFF_CAT_COUNT];
};

/* Whether a snapshot tells private pages from shared ones: pages read with their exclusive bit,
 * which fast depth leaves out (from the scan or pagemap alike). */
static inline int memdiff__knows_privacy(const memdiff_snapshot_info *info)
{
    return info->depth >= MEMDIFF_DEPTH_STANDARD && (info->sources & MEMDIFF_SRC_PAGES);
}

/* Whether a snapshot's PSS is known, per page (deep) or per mapping (smaps). */
static inline int memdiff__knows_pss(const memdiff_snapshot_info *info)
{
    return (info->sources & (MEMDIFF_SRC_PSS | MEMDIFF_SRC_PSS_MAPPINGS)) != 0;
}

/* Whether a diff's PSS figures are known: both snapshots knew PSS (MEMDIFF_SRC_PSS); else 0. */
static inline int memdiff__diff_knows_pss(const memdiff_diff *d)
{
    return (d->info[0].sources & d->info[1].sources & MEMDIFF_SRC_PSS) != 0;
}

/* Adds b into a (all fields, net recomputed; totals.c). */
void memdiff__totals_add(memdiff_totals *a, const memdiff_totals *b);

/* Adds PSS gained and lost (a piece's) into t's new_pss_bytes and freed_pss_bytes. */
void memdiff__totals_pss(memdiff_totals *t, uint64_t gain, uint64_t loss);

/* ---- compare, coalesce and report internals (compare.c, totals.c, coalesce.c, report_*.c) */

/* What one page did between two snapshots, freed and new split by their kinds. */
typedef enum memdiff__outcome {
    MEMDIFF__OUT_NEW_PRIVATE = 0,
    MEMDIFF__OUT_NEW_SHARED,
    MEMDIFF__OUT_FREED_UNMAPPED,
    MEMDIFF__OUT_FREED_DISCARDED,
    MEMDIFF__OUT_FREED_SWAPPED,
    MEMDIFF__OUT_REPLACED,
    MEMDIFF__OUT_BECAME_PRIVATE,
    MEMDIFF__OUT_BECAME_SHARED,
    MEMDIFF__OUT_NONE /* unchanged: never counted */
} memdiff__outcome;

/* Counts bytes of one outcome into t (net kept up to date; totals.c). */
void memdiff__totals_count(memdiff_totals *t, memdiff__outcome outcome, uint64_t bytes);

/* Pages [start, end) with one outcome, as the compare walk hands them to the block builder.
 * label is interned in the diff's arena, so equal labels are equal pointers. */
typedef struct memdiff__piece {
    uint64_t start, end;
    memdiff__outcome outcome;
    memdiff_category category;
    const char *label;
    uint64_t unit;
    unsigned presence;   /* MEMDIFF_IN_* */
    unsigned attrs_before, attrs_after;
    uint64_t touched;    /* bracket diffs: bytes of it accessed during the bracket */
    uint64_t touched_estimated, touched_max; /* memdiff_impact's: of touched, an estimate; bound */
    uint64_t persistent; /* bracket diffs: bytes of it resident before and after */
    uint64_t pss_gain, pss_loss; /* PSS after minus before, in bytes (new_pss_bytes...) */
} memdiff__piece;

typedef struct memdiff__blocks memdiff__blocks; /* block builder, arena-allocated */

/* A builder of a diff's blocks in arena: per allocation unit, or (verbose) per run of contiguous
 * pages with identical attributes. Pieces must come in ascending order of start. A piece with
 * outcome NONE (bracket diffs only) makes a block when it was touched; one that is only
 * persistent adds to its unit's block, if the unit has one, in default diffs. */
int memdiff__blocks_new(memdiff__arena *arena, int verbose, memdiff__blocks **out);
int memdiff__blocks_add(memdiff__blocks *b, const memdiff__piece *piece);
/* The blocks sorted by start, then category, with their change set; storage in the arena. With
 * with_impact (a reference-set bracket's diff), each block's impact is set; else it is 0. */
int memdiff__blocks_finish(memdiff__blocks *b, memdiff_block **out, int with_impact,
                           size_t *count);

/* ---- reference sets (refset.c, compare.c) ------------------------------------------------ */

/* Where a bracket diff's touched pages come from (memdiff__compare_refs). */
typedef struct memdiff__refs_in {
    int accessed_bit;               /* per page: after pages with MEMDIFF_PAGE_ACCESSED */
    int resident_is_touched;        /* per page: every page resident after */
    const uint64_t *region_touched; /* per mapping: touched bytes of each after region, or NULL */
    /* With region_touched: of each region's bytes, those divided out of a mapping that other
     * regions share (an estimate), and each region's upper bound; shared_max: per category
     * (MEMDIFF_CAT_ALL: all but Own), the shared mappings' whole figures, which cap the sum of
     * the regions' bounds. */
    const uint64_t *region_estimated, *region_max;
    uint64_t shared_max[MEMDIFF_CAT_COUNT + 1];
} memdiff__refs_in;

/* Fills refs' region_touched, region_estimated, region_max and shared_max (arrays in arena) for
 * the after snapshot s from the per-mapping figures u (ascending; refset.c says how). */
int memdiff__refs_apportion(memdiff__arena *arena, const memdiff_snapshot *s,
                            const memdiff__plat_usage *u, size_t nu, memdiff__refs_in *refs);

/* memdiff_compare() that also counts, with refs, the impact figures of a bracket diff: touched
 * and persistent bytes per category and block, and blocks for pages that were touched while
 * resident all along. refs NULL: a plain diff. */
int memdiff__compare_refs(const memdiff_snapshot *before, const memdiff_snapshot *after,
                          unsigned flags, const memdiff__refs_in *refs, memdiff_diff **out);

/* A reference-set bracket's own state (refset.c): the before snapshot, the backend's process
 * handle, the resets made and what they allow. A memdiff_bracket with MEMDIFF_BRACKET_REFSET
 * (bracket.c) holds one. */
typedef struct memdiff__refset memdiff__refset;

/* Takes the before snapshot of the process options name, then makes the resets. */
int memdiff__refset_begin(const memdiff_options *options, memdiff__refset **out);

/* Reads the peak and the referenced state, takes the after snapshot and compares (flags:
 * MEMDIFF_COMPARE_VERBOSE). Once per refset. */
int memdiff__refset_end(memdiff__refset *refset, unsigned flags, memdiff_diff **out);

void memdiff__refset_free(memdiff__refset *refset);

/* What the bracket measures so far (begin's figures). */
const memdiff_refset_info *memdiff__refset_info(const memdiff__refset *refset);

/* The diff memdiff__refset_end() hands out: memdiff__compare_refs() with refs, then the
 * bracket's figures (info; extra: one more reason to add to its degraded text, or NULL), strings
 * copied into the diff. Tests build bracket diffs of synthetic snapshots with it. */
int memdiff__refset_diff(const memdiff_snapshot *before, const memdiff_snapshot *after,
                         unsigned flags, const memdiff__refs_in *refs,
                         const memdiff_refset_info *info, const char *extra, memdiff_diff **out);

/* memdiff__snapshot_take_flags() flags. */
#define MEMDIFF__TAKE_ACCESSED 0x1u /* mark pages accessed since a PAGES reset (refset.c) */
#define MEMDIFF__TAKE_EXACT 0x2u    /* no backend shortcuts (MEMDIFF__OPEN_EXACT): a second try */

/* memdiff_snapshot_take() with MEMDIFF__TAKE_* flags. */
int memdiff__snapshot_take_flags(const memdiff_options *options, unsigned flags,
                                 memdiff_snapshot **out);

/* The name of one MEMDIFF_PAGE_* bit ("present", "soft-dirty"), or NULL for an unknown bit. */
const char *memdiff__page_attr_name(unsigned bit);

/* ---- what reports list (report_select.c) ----------------------------------------------- */

/* options (NULL: MEMDIFF_REPORT_OPTIONS_INIT) checked into *out: MEMDIFF_OK, or MEMDIFF_EINVAL
 * with detail prefixed with who for unknown flags, sort or categories. */
int memdiff__report_options(const memdiff_report_options *in, const char *who,
                            memdiff_report_options *out);

/* The name of one MEMDIFF_SYS_SRC_* bit ("pagemap", "smaps-rollup"), NULL for an unknown one
 * (report_select.c), as both system report writers name them. */
const char *memdiff__sys_source_name(unsigned bit);

/* What a system report has before it writes (memdiff__sys_report_begin). */
typedef struct memdiff__sys_report {
    memdiff_system_report_options o; /* checked; NULL given: the defaults */
    memdiff_system_info info[2];     /* the snapshot's, or the diff's before and after */
    memdiff__arena scratch;          /* holds list and what the writer adds: release it */
    size_t *list, n;                 /* the processes to list, in order (indexes) */
} memdiff__sys_report;

/* The start of a system report of system (diff NULL) or of diff: arguments and options checked
 * (MEMDIFF_EINVAL, detail prefixed with who: NULL, unknown flags or sort, a select index out of
 * range), the infos read, and the processes to list: of a system those read (every one with
 * every_state), of a diff those not SAME, among o.select when given, sorted by o.sort, cut to
 * o.top. MEMDIFF_OK, or an error with nothing left to release. */
int memdiff__sys_report_begin(memdiff__sys_report *r, const memdiff_system *system,
                              const memdiff_system_diff *diff, FILE *out,
                              const memdiff_system_report_options *options, int every_state,
                              const char *who);

/* Whether the options list category (its blocks and its table row). */
int memdiff__report_lists(const memdiff_report_options *o, memdiff_category category);

/* The blocks of diff a report lists, in its order: filtered by category, sorted, cut to the
 * top; an array of *n pointers into the diff in scratch. MEMDIFF_OK or MEMDIFF_ENOMEM. */
int memdiff__report_diff_blocks(const memdiff_diff *diff, const memdiff_report_options *o,
                                memdiff__arena *scratch, const memdiff_block ***out, size_t *n);

/* A snapshot's block: adjacent regions of one category and label, or one region
 * (MEMDIFF_REPORT_REGIONS); r has the first's start, the last's end, the figures summed. */
typedef struct memdiff__snap_block {
    memdiff_region r;
    size_t regions;
} memdiff__snap_block;

/* The blocks of snapshot s a report lists (Own left out), in its order, in scratch. MEMDIFF_OK,
 * MEMDIFF_ENOMEM, or the status of reading a region. */
int memdiff__report_snapshot_blocks(const memdiff_snapshot *s, const memdiff_report_options *o,
                                    memdiff__arena *scratch, memdiff__snap_block **out, size_t *n);

/* A snapshot's figures per category (saturating sums of its regions'; PSS only where it is
 * known per page, MEMDIFF_SRC_PSS). */
typedef struct memdiff__snap_sum {
    uint64_t resident_bytes, private_bytes, shared_bytes, swapped_bytes, pss_bytes;
    size_t regions;
} memdiff__snap_sum;

void memdiff__report_snapshot_sums(const memdiff_snapshot *s,
                                   memdiff__snap_sum sums[MEMDIFF_CAT_COUNT]);

/* ---- text report formatting (report_fmt.c) ------------------------------------------------ */

/* Room for one number with thousands separators and a sign ("-9,223,372,036,854,775,808"). */
#define MEMDIFF__NUM_MAX 40

/* v with thousands separators into buf; sign '+' or '-' in front unless v is 0, or 0 for none
 * (report_fmt.c, shared with the check messages). Returns buf. */
const char *memdiff__fmt_count(char buf[MEMDIFF__NUM_MAX], uint64_t v, char sign);

/* ANSI SGR sequences of MEMDIFF_REPORT_COLOR: memory that grew, that shrank, headings. */
#define MEMDIFF__SGR_GROW "\033[31m"
#define MEMDIFF__SGR_SHRINK "\033[32m"
#define MEMDIFF__SGR_HEAD "\033[1m"
#define MEMDIFF__SGR_RESET "\033[0m"

/* A byte count as a table cell: with thousands separators, or with MEMDIFF_REPORT_HUMAN in flags
 * in KiB, MiB, GiB... with one decimal ("1.5 MiB"; below 1 KiB "512 B"); sign as
 * memdiff__fmt_count's. memdiff__fmt_amount: the same with " bytes" after a plain number. */
const char *memdiff__fmt_bytes(char buf[MEMDIFF__NUM_MAX], uint64_t v, char sign, unsigned flags);
const char *memdiff__fmt_amount(char buf[MEMDIFF__NUM_MAX], uint64_t v, char sign,
                                unsigned flags);

/* Columns the printable (escaped) text s takes on a terminal. */
int memdiff__text_cols(const char *s);

void memdiff__put_pad(FILE *out, int n);

/* text padded to |width| columns (width > 0: right-aligned, < 0: left-aligned), in colour sgr
 * (NULL: none) when flags has MEMDIFF_REPORT_COLOR; the padding stays uncoloured. */
void memdiff__put_cell(FILE *out, unsigned flags, const char *text, int width, const char *sgr);

/* The colour of a signed cell: growth for "+...", shrinkage for "-...", else NULL. */
const char *memdiff__sgr_of(const char *signed_text);

/* label escaped (memdiff_escape_text) in at most cols columns (<= 0: whole): a longer one keeps
 * its end, cut from the left after U+2026 ("…/lib/libfoo.so"). MEMDIFF_OK or MEMDIFF_ENOMEM. */
int memdiff__put_label(FILE *out, memdiff__arena *scratch, const char *label, int cols);

/* Whether label, in cols columns, keeps at least its last path component ("…/libc.so.6"):
 * a label that does not goes on a line of its own rather than lose the end of its name. */
int memdiff__label_fits(memdiff__arena *scratch, const char *label, int cols);

/* lead, then text escaped, then tail, broken at spaces into lines of at most width columns
 * (0: one line), the following lines indented by indent. MEMDIFF_OK or MEMDIFF_ENOMEM. */
int memdiff__put_wrapped(FILE *out, memdiff__arena *scratch, const char *lead, const char *text,
                         const char *tail, int indent, int width);

/* The same after a lead the caller wrote, at column at. */
int memdiff__put_wrapped_at(FILE *out, memdiff__arena *scratch, int at, const char *text,
                            const char *tail, int indent, int width);

/* The narrowest width the text reports keep to: a width below it is taken as this one (the
 * fields of a block line take up to 80 columns before its label). */
#define MEMDIFF__WIDTH_MIN 80

/* The width the text reports keep to for options o: 0 for none, else at least
 * MEMDIFF__WIDTH_MIN. */
int memdiff__report_width(const memdiff_report_options *o);

/* A table of the text reports: a row per category (or per kind of physical frame, the larger
 * count) and the total, right-aligned cells. */
#define MEMDIFF__TABLE_COLS 11
#define MEMDIFF__TABLE_ROWS (MEMDIFF__MAX((int)MEMDIFF_CAT_COUNT, (int)MEMDIFF_FRAME_KIND_COUNT) + 1)

typedef struct memdiff__table {
    const char *corner; /* "Category" */
    int ncols, nrows;
    const char *heads[MEMDIFF__TABLE_COLS];
    unsigned signed_cols; /* a bit per column: coloured by the sign of its cells */
    const char *names[MEMDIFF__TABLE_ROWS];
    char cells[MEMDIFF__TABLE_ROWS][MEMDIFF__TABLE_COLS][MEMDIFF__NUM_MAX];
} memdiff__table;

/* t with columns as wide as their widest cell, the row names' at least 12; a table wider than
 * width (0: no limit) continues below with the columns that did not fit. */
void memdiff__put_table(FILE *out, unsigned flags, int width, const memdiff__table *t);

/* The names of the bits set in bits, lowest first, separated by spaces, into buf (cut at size);
 * a bit whose name() is NULL is left out. Returns buf ("" for none). */
const char *memdiff__bit_names(char *buf, size_t size, unsigned bits,
                               const char *(*name)(unsigned bit));

/* Hex digits of v. */
int memdiff__hex_digits(uint64_t v);

/* The digits of a range column ("0x%0*x-0x%0*x") after a line ending at end, from digits so
 * far (start with 8): user space addresses widen it, those above 2^48 (x86-64's vsyscall page)
 * do not. */
int memdiff__range_digits(int digits, uint64_t end);

/* The columns a range ending at end takes beyond a column of digits: its line's label has that
 * much less room. */
int memdiff__range_extra(int digits, uint64_t end);

/* ns since 1970 as "2026-11-22 10:00:00.123 UTC". */
void memdiff__put_time(FILE *out, uint64_t ns);

/* Why a snapshot without MEMDIFF_SRC_PSS does not know PSS, in a few words. */
const char *memdiff__pss_unknown(const memdiff_snapshot_info *info);

/* ---- assertions and filters (assert.c, filter.c, bracket.c) ----------------------------- */

/* MEMDIFF_OK, or MEMDIFF_EINVAL (detail prefixed with who) for a filter with unknown flags or
 * categories. NULL is a valid filter. */
int memdiff__filter_valid(const memdiff_filter *f, const char *who);

/* Whether label matches pattern the way match says (exact, prefix, suffix, substring). */
int memdiff__label_match(const char *label, const char *pattern, memdiff_match match);

/* The part of block k's totals that filter f (NULL: none) keeps, into *kept. Returns 1 when the
 * block is kept (in part or whole), 0 when the filter leaves it out (*kept then all zero). */
int memdiff__filter_block(const memdiff_filter *f, const memdiff_block *k, int verbose,
                          memdiff_totals *kept);

/* Checks the arguments of a figure: category (or MEMDIFF_CAT_ALL), measure (MEMDIFF_ENOTSUP
 * for a reserved one), filter. MEMDIFF_OK or the status, with detail prefixed with who. */
int memdiff__figure_valid(const char *who, const memdiff_filter *filter,
                          memdiff_category category, memdiff_measure measure);

#endif /* MEMDIFF_INTERNAL_H */
