/*
 * mapping_pss.c - PSS per kernel mapping (MEMDIFF_SNAPSHOT_SMAPS_PSS): the OS's figure per
 * mapping (Linux: smaps' Pss, whole kB; memdiff__plat_mapping_pss) put on the snapshot's
 * regions, where no map counts give PSS page by page (docs/api.md, "PSS").
 *
 * The classifier splits one mapping into several regions (malloc chunks inside one anonymous
 * mapping, adjacent chunks the kernel merged), and how a mapping's PSS divides among them is
 * not known: a mapping's figure goes whole on its first region, whose pss_end says where the
 * figure ends; the later regions carry 0 with pss_end 0. A figure is thus never divided, and
 * a sum over regions from a mapping's first to its end is the mapping's.
 *
 * Mappings and regions are matched as spans: the smallest address ranges that no region and
 * no mapping crosses. Of a process that did not change its mappings between the region list
 * and smaps, every span is one mapping. A process that ran meanwhile may have split, joined,
 * made or removed mappings: a span of several mappings carries their sum (smaps', at its
 * read), and the snapshot's degraded note counts such spans. A mapping no region overlaps (made
 * after the region list) is not in the snapshot. The span's first region carries the figure:
 * an Own one keeps it out of the totals, which is exact because memdiff's storage never shares
 * a mapping with program memory (architecture.md, "Storage").
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct span {
    uint64_t lo, hi;          /* the addresses the span's regions and mappings cover */
    size_t first, end;        /* its regions: [first, end) */
    uint64_t pss;             /* bytes, summed over its mappings */
    size_t mappings;
    uint64_t mapped;          /* bytes of its mappings */
} span;

/* Puts the span's figure on its first region. 1 when the span is one mapping whose bounds are
 * those of its regions, 0 when mappings changed. */
static int carry(memdiff_snapshot *s, const span *sp)
{
    memdiff__region *r = &s->regions[sp->first];
    r->pss_fixed = memdiff__mul_sat(sp->pss, 4096);
    r->pss_end = sp->hi;
    uint64_t covered = 0;
    for (size_t i = sp->first; i < sp->end; i++)
        covered += s->regions[i].end - s->regions[i].start;
    return sp->mappings == 1 && sp->mapped == covered && sp->lo == r->start;
}

/* Matches mappings m[0..n) (ascending, non-overlapping) to the regions. *changed: the spans
 * that are not one mapping with its regions' bounds. MEMDIFF_EFORMAT for a mapping whose PSS
 * exceeds its size, or a list out of order. */
static int match(memdiff_snapshot *s, const memdiff__plat_usage *m, size_t n, size_t *changed)
{
    size_t i = 0, j = 0;
    *changed = 0;
    for (size_t k = 0; k < n; k++)
        if (m[k].end <= m[k].start || m[k].pss > m[k].end - m[k].start ||
            (k && m[k].start < m[k - 1].end))
            return memdiff__set_error(MEMDIFF_EFORMAT,
                                      "PSS per mapping: mapping %zu (0x%llx-0x%llx, Pss %llu "
                                      "bytes) is out of order or larger than itself",
                                      k, (unsigned long long)m[k].start,
                                      (unsigned long long)m[k].end,
                                      (unsigned long long)m[k].pss);
    while (i < s->region_count || j < n) {
        span sp;
        memset(&sp, 0, sizeof sp);
        sp.first = sp.end = i;
        int open = 0;
        for (;;) {
            int take_region = i < s->region_count &&
                              (j == n || s->regions[i].start <= m[j].start);
            if (!take_region && j == n)
                break;
            uint64_t lo = take_region ? s->regions[i].start : m[j].start;
            uint64_t hi = take_region ? s->regions[i].end : m[j].end;
            if (open && lo >= sp.hi)
                break;
            if (!open)
                sp.lo = lo;
            open = 1;
            sp.hi = MEMDIFF__MAX(sp.hi, hi);
            if (take_region) {
                sp.end = ++i;
            } else {
                sp.pss = memdiff__add_sat(sp.pss, m[j].pss);
                sp.mapped += m[j].end - m[j].start;
                sp.mappings++;
                j++;
            }
        }
        if (sp.end > sp.first && !carry(s, &sp))
            (*changed)++;
    }
    return MEMDIFF_OK;
}

int memdiff__mapping_pss(memdiff__proc *proc, memdiff__arena *scratch, memdiff_snapshot *s,
                         unsigned *sources, const char **note)
{
    memdiff__plat_usage *m = NULL;
    size_t n = 0, changed = 0;
    char buf[160];
    *sources = 0;
    *note = NULL;
    int rc = memdiff__plat_mapping_pss(proc, scratch, &m, &n);
    if (rc == MEMDIFF_ENOTSUP || rc == MEMDIFF_EACCES) {
        /* The snapshot goes without the figure, saying why: PSS stays unknown (0). */
        snprintf(buf, sizeof buf, "%s", memdiff__last_error_raw());
    } else if (rc) {
        return rc;
    } else {
        rc = match(s, m, n, &changed);
        if (rc)
            return rc;
        *sources = MEMDIFF_SRC_PSS_MAPPINGS;
        if (!changed)
            return MEMDIFF_OK;
        snprintf(buf, sizeof buf,
                 "PSS per mapping: %zu mapping%s changed between the region list and smaps (the "
                 "process ran): their PSS is smaps' over the changed range",
                 changed, changed == 1 ? "" : "s");
    }
    *note = memdiff__arena_strndup(scratch, buf, strlen(buf));
    return *note ? MEMDIFF_OK : MEMDIFF_ENOMEM;
}
