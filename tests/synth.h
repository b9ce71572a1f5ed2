/*
 * synth.h - synthetic snapshots for tests: a snapshot built from terse tables of regions and
 * page runs, stored exactly as snapshot.c stores a real one (in its own arena, labels interned,
 * runs linked to regions), so that the compare engine and the report writers can be tested with
 * exact expectations and no live process. Free with memdiff_snapshot_free().
 */
#ifndef MEMDIFF_TEST_SYNTH_H
#define MEMDIFF_TEST_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "memdiff.h"

#define SYNTH_PAGE 4096u
#define SYNTH_COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct synth_region {
    uint64_t start, end;
    memdiff_category category;
    const char *label;
    uint64_t unit;   /* allocation unit; 0 is a unit too */
    unsigned flags;  /* MEMDIFF_REGION_SHARED / _FILE */
    uint64_t dev, inode, offset;
} synth_region;

/* npages pages from start, all with attrs (MEMDIFF_PAGE_*). Each run must lie inside a region. */
typedef struct synth_run {
    uint64_t start, npages;
    unsigned attrs;
} synth_run;

typedef struct synth_spec {
    const synth_region *regions; /* ascending, non-overlapping */
    size_t region_count;
    const synth_run *runs; /* ascending, non-overlapping */
    size_t run_count;
    const uint64_t *pfn; /* NULL, or one frame number per page of the runs, in run order */
    unsigned sources;    /* 0: REGIONS | PAGES | PROCESS_TOTALS at standard depth (depth is
                            ignored) */
    memdiff_depth depth;
    uint32_t page_size;  /* 0: SYNTH_PAGE */
    uint64_t time_ns;
    const char *degraded;
    const uint64_t *mapcount; /* NULL, or one map count per page of the runs (deep's
                                 MEMDIFF_SRC_MAP_COUNTS, so PSS is known), in run order */
} synth_spec;

/* The snapshot described by spec (pid 4242 on host "synthhost"); aborts on a malformed table,
 * returns NULL only when out of memory. */
memdiff_snapshot *synth_snapshot(const synth_spec *spec);

/* Figures near and beyond 2^63: a heap region "[heap]" of `bytes` bytes (a multiple of
 * SYNTH_PAGE) from SYNTH_HUGE_START, all of whose pages are resident (resident nonzero, as one
 * run) or none. Two such snapshots make a diff that frees or brings `bytes` bytes at once. The
 * spec points to *region and *run. */
#define SYNTH_HUGE_START 0x10000u
synth_spec synth_huge(synth_region *region, synth_run *run, uint64_t bytes, int resident);

/* The diff a reference-set bracket's end (memdiff_bracket_end()) would make of before and
 * after, with per-page tracking (touched: the after pages whose attrs have
 * MEMDIFF_PAGE_ACCESSED) and the bracket's figures from info (NULL: none known). flags are the
 * bracket's compare_flags. Aborts on failure. */
memdiff_diff *synth_bracket_diff(const synth_spec *before, const synth_spec *after, unsigned flags,
                                 const memdiff_refset_info *info);

#endif
