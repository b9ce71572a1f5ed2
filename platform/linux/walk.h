/*
 * walk.h - the stages of the Linux page walk (memdiff__plat_pages), private to them.
 *
 * What each source costs decides the walk (measured: docs/performance.md; the paths: walk.c).
 * The walk is cut into stages, each a file that owns its state:
 *
 *   walk.c     the strategy: which source reads which range, one call's walker, the buffers
 *   pagemap.c  pagemap read in batches (with read-ahead) and decoded into attrs and frames
 *   scan.c     the PAGEMAP_SCAN wrapper: ranges of present pages, zero and huge pages, and the
 *              scan ahead that serves fast depth's small regions
 *   kflags.c   deep depth's kernel page facts: kpageflags and kpagecount of a batch's frames
 *   emit.h     run emission: the pending run, frames as stretches, short runs gathered as bitmaps
 *              (inline: it runs once a run)
 *
 * and presence.c (whether a page attribution reads is present) uses scan.c alone. Calls go one
 * way: walk.c -> pagemap.c -> kflags.c, scan.c (emit.h inline in each that emits); nothing calls
 * walk.c back. Outside the walk the stages call procfs.c (files, errors), maps.c (the region
 * list), proc.c (memdiff__linux_alive, memdiff__linux_learn_zero_page), lanes.c (reading ahead on
 * more than one core), radix.c and refs.c (the
 * page_idle bits, from walk.c), none of which calls a stage.
 *
 * State: a process's stages (struct memdiff__linux_stages, proc->stages) keep their buffers
 * and what they read ahead from one walk to the next, in the proc's scratch arena; one call's
 * state is its walker (struct memdiff__linux_walker), on the stack.
 */
#ifndef MEMDIFF_LINUX_WALK_H
#define MEMDIFF_LINUX_WALK_H

#include "linux.h"

#define MEMDIFF__RESIDENT (MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_SWAPPED)
#define MEMDIFF__MIN(a, b) ((a) < (b) ? (a) : (b))
#define MEMDIFF__MAX(a, b) ((a) > (b) ? (a) : (b))
/* pagemap bits 55-63: the flags, as an index of the attr table (pagemap.c) */
#define MEMDIFF__PM_TABLE_SHIFT 55

/* Read-ahead (pagemap.c) and the scan ahead (scan.c) take whole regions behind a small one up
 * to this many pages. */
#define MEMDIFF__AHEAD_PAGES 4096u

/* Short runs gathered for sink->run_bits (emit.h): runs of up to GATHER_RUN_MAX pages, no more
 * than GATHER_GAP_MAX pages apart. */
#define MEMDIFF__GATHER_RUN_MAX 64u
#define MEMDIFF__GATHER_GAP_MAX 192u

/* ---- each stage's state, kept by the process from walk to walk -------------------------- */

/* pagemap.c */
struct memdiff__linux_pagemap {
    uint64_t *entries; /* one batch, the pending run's at the front; with frame numbers,
                          decoded in place into the pages' frames */
    unsigned *attrs;   /* decoded attrs of one batch */
    size_t capacity;   /* pages the batch buffers (these and the deep ones) hold */
    /* attrs of pagemap's flag bits 55-63 (the index), built for the depth first asked
     * (table_fast: built for fast depth; -1: not built) */
    unsigned attr_table[512];
    int table_fast;
    /* entries read ahead with a small region's, for the regions right behind it: pages
     * [ahead_first, ahead_first + ahead_count), valid until ahead_used passes them or the
     * region list is read again */
    uint64_t *ahead;
    uint64_t ahead_first, ahead_count, ahead_used;
};

/* scan.c */
struct memdiff__linux_scan {
    struct page_region *ranges; /* one call's output, MEMDIFF__LINUX_SCAN_VEC */
    /* fast depth's scan ahead: the ranges of one scan over a small region and the small regions
     * behind it, [window_start, window_end) covered, served from window_pos on; valid until the
     * region list is read again (window_end 0: none) */
    struct page_region *window;
    size_t window_count, window_pos;
    uint64_t window_start, window_end;
};

/* Deep: pages [page, page + len) of a batch whose frames are consecutive. */
struct memdiff__linux_seg {
    uint32_t page, len;
    uint32_t flags; /* SEG_* of kflags.c: frames descending, facts alike */
    uint32_t off;   /* where its facts were read to in kernel_flags / map_counts */
};

/* kflags.c */
struct memdiff__linux_facts {
    uint64_t *sort_keys, *sort_tmp; /* segments by lowest frame (frame << SEG_BITS | index) */
    struct memdiff__linux_seg *segs;
    uint64_t *kernel_flags, *map_counts; /* kpageflags / kpagecount read for the segments */
    /* one run's kernel flags, map counts and frames as pieces (MEMDIFF__LINUX_FS each) */
    memdiff__values *flag_pieces, *count_pieces, *frame_pieces;
};

/* emit.h */
struct memdiff__linux_emit {
    memdiff__values *stretches; /* the pending run's frames as stretches (MEMDIFF__LINUX_FS) */
    /* the gathered runs: a bit a page of their span (MEMDIFF__LINUX_GATHER / 64 words, zero
     * past it), their pages' frames */
    uint64_t *gather_bits, *gather_frames;
};

struct memdiff__linux_stages {
    struct memdiff__linux_pagemap pagemap;
    struct memdiff__linux_scan scan;
    struct memdiff__linux_facts facts;
    struct memdiff__linux_emit emit;
    unsigned regions_read; /* proc->regions_read their read-ahead and scan ahead are for */
};

/* ---- one call's walker ----------------------------------------------------------------- */

typedef struct memdiff__linux_walker {
    memdiff__proc *proc;
    const memdiff__page_sink *sink;
    struct memdiff__linux_pagemap *pagemap;
    struct memdiff__linux_scan *scan;
    struct memdiff__linux_facts *facts;
    struct memdiff__linux_emit *emit;
    int with_frames; /* deliver frame numbers */
    int deep;        /* deliver kernel page flags and map counts */
    int fast;        /* fast depth: no exclusivity, no soft-dirty, as PAGEMAP_SCAN gives it */
    size_t batch;    /* pages a batch (MEMDIFF__LINUX_BATCH, _DEEP_BATCH at deep) */
    memdiff__file_rule file;
    const unsigned *attr_table; /* pagemap->attr_table, built for this depth */
    /* The pending run: pages [run_start, run_start + run_pages) with run_attrs, its frames
     * (arrays) at entries[run_index]. It stays open across batches so that runs come out
     * whole; its array entries move to index 0 (memdiff__linux_carry, emit.h). */
    int pending;
    uint64_t run_start, run_pages;
    unsigned run_attrs;
    size_t run_index;
    /* Frames as stretches (sink->run_frames): standard depth with frame numbers, where nothing
     * else needs the batch page by page. run_stretched: the pending run's frames are
     * emit->stretches[0..stretch_count), not array entries. */
    int stretch_mode;
    int run_stretched;
    size_t stretch_count;
    size_t seg_count; /* deep: segments of the batch in facts->segs */
    /* Short runs gathered for sink->run_bits: gather_runs runs with gather_attrs in pages
     * [gather_start, gather_start + gather_span pages), the last one ending there; their
     * pages' bits set in emit->gather_bits, their frames emit->gather_frames[0..gather_count). */
    int gather;
    uint64_t gather_start, gather_span, gather_count;
    unsigned gather_attrs;
    size_t gather_runs;
} memdiff__linux_walker;

/* ---- scan.c: PAGEMAP_SCAN ----------------------------------------------------------------- */

/* One PAGEMAP_SCAN call over [start, end) into vec. Returns the number of ranges (at most cap,
 * well-formed, inside the request and ascending) with *next set to where the following call
 * starts, or -errno. */
int memdiff__linux_scan_into(memdiff__proc *p, struct page_region *vec, size_t cap, uint64_t start,
                             uint64_t end, uint64_t anyof, uint64_t ret, uint64_t max_pages,
                             uint64_t *next);

/* memdiff__linux_scan_into, into w->scan->ranges. */
int memdiff__linux_scan_once(memdiff__linux_walker *w, uint64_t start, uint64_t end, uint64_t anyof,
                             uint64_t ret, uint64_t max_pages, uint64_t *next);

/* A scan over [start, end) that failed with n (-errno): MEMDIFF_OK when the caller is to go on
 * without it (the kernel refused the scan: p->scan_refused from then on; or this range), else
 * the error's status. */
int memdiff__linux_scan_failure(memdiff__proc *p, int n, uint64_t start, uint64_t end);

/* The ranges vec[0..n) a scan of [start, end) with ret returned elsewhere (a lane's), checked
 * as memdiff__linux_scan_into checks its own (plain: memdiff__linux_lanes_scan's verdict, which
 * spares the pass where it is 1 or 2): the number kept, *next where a following call starts; -1
 * when the scan must be made again here (it found swapped pages that may be moving). */
int memdiff__linux_scan_accept(memdiff__proc *p, struct page_region *vec, int n, uint64_t start,
                               uint64_t end, uint64_t ret, uint64_t walk_end, int plain,
                               uint64_t *next);

/* The return mask of a scan for present or swapped pages: ret, and PAGE_IS_GUARD where the
 * kernel is known to take it. */
uint64_t memdiff__linux_scan_ret(const memdiff__proc *p, uint64_t ret);

/* MEMDIFF_PAGE_* of a scan range's categories. */
unsigned memdiff__linux_scan_attrs(uint64_t categories);

/* ORs the zero / huge attributes of ranges r[0..n) into attrs[] of the pages [addr, addr +
 * count pages) (attrs[0] is addr's). */
void memdiff__linux_mark_extras(const memdiff__proc *p, const struct page_region *r, size_t n,
                                uint64_t addr, size_t count, unsigned *attrs);

/* Asks the scan which pages of [addr, addr + count pages) are zero or huge pages and marks
 * them in attrs[]: all of them, or (with frame numbers pfn[]) only those whose frames could be
 * a huge page's. */
int memdiff__linux_scan_extras(memdiff__linux_walker *w, uint64_t addr, size_t count,
                               unsigned *attrs);
int memdiff__linux_scan_huge_candidates(memdiff__linux_walker *w, uint64_t addr, size_t count,
                                        const uint64_t *pfn, unsigned *attrs);

/* Stretch mode's zero and huge pages of [addr, addr + count pages): the scan's ranges in *r,
 * *nr; 1 when one call covered the batch, 0 when they did not fit, or a negative status. */
int memdiff__linux_scan_batch_extras(memdiff__linux_walker *w, uint64_t addr, size_t count,
                                     const struct page_region **r, size_t *nr);

/* For a scan from start that found nothing: MEMDIFF_ESRCH when the process has exited,
 * MEMDIFF_ECHANGED when pagemap's address space is gone (memdiff__linux_space_gone), else
 * MEMDIFF_OK. */
int memdiff__linux_exited_if_empty(memdiff__proc *p, uint64_t start);

/* Fast depth's scan ahead: delivers [start, end) from the window when it covers the range (1),
 * else 0; scans a window from start over the small regions behind it. */
int memdiff__linux_from_window(memdiff__linux_walker *w, uint64_t start, uint64_t end, int *rc);
int memdiff__linux_scan_window(memdiff__linux_walker *w, uint64_t start, uint64_t end);

/* The attrs of a scan's range in the walker's region, its file rule applied. */
unsigned memdiff__linux_region_attrs(const memdiff__linux_walker *w, uint64_t categories);

/* ---- kflags.c: deep's kernel page facts -------------------------------------------------- */

/* The facts' buffers for batches of batch pages, one block from the scratch arena. */
int memdiff__linux_facts_buffers(memdiff__proc *p, struct memdiff__linux_facts *facts,
                                 size_t batch);

/* Pages [i, j) of the batch, a stretch with attrs a whose frames go from f by step, become
 * segments (from index m on); returns the new count. */
size_t memdiff__linux_add_segments(memdiff__linux_walker *w, size_t i, size_t j, unsigned a,
                                   uint64_t f, uint64_t step, size_t m);

/* Reads kpageflags and kpagecount for the batch's segments and merges the flags into attrs. */
int memdiff__linux_frame_facts(memdiff__linux_walker *w);

/* Delivers pages [i, j) of the batch (one run: attrs a, from addr) with their facts as
 * pieces, the segments from *u on. */
int memdiff__linux_deep_run(memdiff__linux_walker *w, uint64_t addr, size_t i, size_t j, unsigned a,
                            size_t *u);

/* ---- pagemap.c: pagemap ------------------------------------------------------------------ */

/* The attr table for the walk's depth (w->attr_table). */
void memdiff__linux_build_table(memdiff__linux_walker *w);

/* Reads pagemap for [addr, addr + n pages) into entries[base..base + n). */
int memdiff__linux_read_pagemap(memdiff__linux_walker *w, uint64_t addr, size_t base, size_t n);

/* Decodes entries[base..base + n) into attrs[0..n) (and frames in place); returns how many
 * pages are present or swapped, *cand whether one could be a zero or huge page. */
size_t memdiff__linux_decode(memdiff__linux_walker *w, size_t base, size_t n, int *cand);

/* Stretch mode: feeds entries[base..base + n) as stretches; the zero / huge pages' ranges
 * extras[0..nextras). Returns how many pages are present or swapped, or a negative status. */
int64_t memdiff__linux_decode_frames(memdiff__linux_walker *w, uint64_t addr, size_t base, size_t n,
                                     const struct page_region *extras, size_t nextras);

/* Whether pages [addr, addr + n) (entries pm[0..n)) could hold a huge page. */
int memdiff__linux_maybe_huge(const memdiff__linux_walker *w, uint64_t addr, const uint64_t *pm,
                              size_t n);

/* Whether a batch without frame numbers, no page of it zero_or_shared, may go without the zero
 * / huge page scan (meminfo). */
int memdiff__linux_pmd_free_now(memdiff__proc *p);

#endif /* MEMDIFF_LINUX_WALK_H */
