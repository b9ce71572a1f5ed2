/*
 * synth.c - synthetic snapshots (see synth.h). The layout written here must match what
 * snapshot.c writes: the snapshot struct lives inside its own arena, labels and strings are
 * interned in it, runs point to their region and regions to their runs, per-page frame numbers
 * are indexed by run.aux.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "synth.h"

static void malformed(const char *what, size_t index)
{
    fprintf(stderr, "synth: malformed table: %s (entry %zu)\n", what, index);
    abort();
}

static int fill(memdiff_snapshot *s, const synth_spec *spec)
{
    memdiff__strtab *table = NULL;
    uint64_t ps = spec->page_size ? spec->page_size : SYNTH_PAGE;
    memdiff_snapshot_info *info = &s->info;
    info->pid = 4242;
    info->page_size = (uint32_t)ps;
    info->time_ns = spec->time_ns;
    if (spec->sources) {
        info->sources = spec->sources;
        info->depth = info->depth_requested = spec->depth;
    } else {
        info->sources = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_PROCESS_TOTALS;
        info->depth = info->depth_requested = MEMDIFF_DEPTH_STANDARD;
    }
    if (spec->pfn)
        info->sources |= MEMDIFF_SRC_FRAMES;
    if (spec->mapcount)
        info->sources |= MEMDIFF_SRC_MAP_COUNTS;
    info->host = memdiff__intern(&table, &s->arena, "synthhost");
    if (!info->host)
        return MEMDIFF_ENOMEM;
    if (spec->degraded && !(info->degraded = memdiff__intern(&table, &s->arena, spec->degraded)))
        return MEMDIFF_ENOMEM;

    size_t nr = spec->region_count, nu = spec->run_count;
    s->regions = memdiff__arena_grow(&s->arena, NULL, 0, (nr ? nr : 1) * sizeof *s->regions);
    if (!s->regions)
        return MEMDIFF_ENOMEM;
    for (size_t i = 0; i < nr; i++) {
        const synth_region *in = &spec->regions[i];
        memdiff__region *r = &s->regions[i];
        if (in->start >= in->end || in->start % ps || in->end % ps ||
            (i > 0 && in->start < spec->regions[i - 1].end))
            malformed("region", i);
        r->start = in->start;
        r->end = in->end;
        r->offset = in->offset;
        r->dev = in->dev;
        r->inode = in->inode;
        r->prot = MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE;
        r->flags = in->flags;
        r->category = in->category;
        r->label = memdiff__intern(&table, &s->arena, in->label ? in->label : "");
        r->path = memdiff__intern(&table, &s->arena, "");
        if (!r->label || !r->path)
            return MEMDIFF_ENOMEM;
        r->unit = in->unit;
    }

    s->region_count = nr;
    uint64_t aux = 0, prev_end = 0;
    size_t ri = 0;
    for (size_t i = 0; i < nu; i++) {
        const synth_run *in = &spec->runs[i];
        uint64_t end = in->start + in->npages * ps;
        if (!in->npages || in->start % ps || (i > 0 && in->start < prev_end))
            malformed("run", i);
        while (ri < nr && s->regions[ri].end <= in->start)
            ri++;
        if (ri == nr || s->regions[ri].start > in->start || s->regions[ri].end < end)
            malformed("run outside every region", i);
        /* Stored and counted into the region as snapshot.c does (memdiff__runs_append). */
        int rc = memdiff__runs_append(s, (uint32_t)ri, in->start, in->npages, in->attrs,
                                      spec->pfn || spec->mapcount ? aux : MEMDIFF__NO_AUX);
        if (rc)
            return rc;
        aux += in->npages;
        prev_end = end;
    }
    if (spec->pfn) {
        /* As snapshot.c stores them (seq.c). */
        int rc = memdiff__seq_append(&s->arena, &s->frames, spec->pfn, aux);
        if (rc)
            return rc;
        s->aux_count = aux;
    }
    if (spec->mapcount) {
        int rc = memdiff__seq_append(&s->arena, &s->mapcount, spec->mapcount, aux);
        if (rc)
            return rc;
        s->aux_count = aux;
    }

    memdiff__snapshot_tally(s); /* info's counts and byte totals, as snapshot.c sets them */
    return MEMDIFF_OK;
}

synth_spec synth_huge(synth_region *region, synth_run *run, uint64_t bytes, int resident)
{
    *region = (synth_region){SYNTH_HUGE_START, SYNTH_HUGE_START + bytes, MEMDIFF_CAT_HEAP,
                             "[heap]", 1, 0, 0, 0, 0};
    *run = (synth_run){SYNTH_HUGE_START, bytes / SYNTH_PAGE,
                       MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE};
    return (synth_spec){.regions = region, .region_count = 1, .runs = run,
                        .run_count = resident ? 1 : 0};
}

memdiff_diff *synth_bracket_diff(const synth_spec *before, const synth_spec *after, unsigned flags,
                                 const memdiff_refset_info *info)
{
    memdiff_snapshot *b = synth_snapshot(before), *a = synth_snapshot(after);
    memdiff__refs_in refs = {.accessed_bit = 1};
    memdiff_refset_info none;
    memset(&none, 0, sizeof none);
    memdiff_diff *d = NULL;
    if (!b || !a ||
        memdiff__refset_diff(b, a, flags, &refs, info ? info : &none, NULL, &d) != MEMDIFF_OK) {
        fprintf(stderr, "synth: bracket diff: %s\n", memdiff_last_error());
        abort();
    }
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
    return d;
}

memdiff_snapshot *synth_snapshot(const synth_spec *spec)
{
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff_snapshot *s = memdiff__arena_alloc(&a, sizeof *s);
    if (!s)
        return NULL;
    s->arena = a; /* from here on the snapshot's arena is s->arena */
    if (fill(s, spec) != MEMDIFF_OK) {
        memdiff_snapshot_free(s);
        return NULL;
    }
    return s;
}
