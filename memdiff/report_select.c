/*
 * report_select.c - what a report lists and in which order, shared by the text and JSON writers
 * of diffs and snapshots: the report options checked, a diff's blocks filtered by category,
 * sorted and cut to the top N, and a snapshot's regions grouped into blocks (adjacent regions of
 * one category and label: a module's segments, a heap's pieces) the same way.
 *
 * The lists are arrays of pointers or records in a scratch arena the caller releases; the
 * writers themselves stay free of allocation.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define KNOWN_FLAGS                                                                             \
    (MEMDIFF_REPORT_NO_HEADER | MEMDIFF_REPORT_HUMAN | MEMDIFF_REPORT_COLOR |                   \
     MEMDIFF_REPORT_REGIONS | MEMDIFF_REPORT_LINE | MEMDIFF_REPORT_NO_BLOCKS)

int memdiff__report_options(const memdiff_report_options *in, const char *who,
                            memdiff_report_options *out)
{
    static const memdiff_report_options defaults = MEMDIFF_REPORT_OPTIONS_INIT;
    *out = in ? *in : defaults;
    if (out->flags & ~KNOWN_FLAGS)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown flags 0x%x", who,
                                  out->flags & ~KNOWN_FLAGS);
    if ((unsigned)out->sort > MEMDIFF_SORT_NAME)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown sort %d", who, (int)out->sort);
    if (out->categories & ~((1u << MEMDIFF_CAT_COUNT) - 1))
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown categories 0x%x", who,
                                  out->categories & ~((1u << MEMDIFF_CAT_COUNT) - 1));
    return MEMDIFF_OK;
}

int memdiff__report_lists(const memdiff_report_options *o, memdiff_category category)
{
    return o->categories == 0 || (o->categories & (1u << category)) != 0;
}

/* ---- diff blocks ----------------------------------------------------------------------------- */

/* Sort keys in a record so that the comparators need no context; index keeps ties in address
 * order (qsort is not stable). */
typedef struct keyed {
    uint64_t key; /* larger first */
    const char *label;
    size_t index;
    const void *item;
} keyed;

static int by_key(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int by_label(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->label ? x->label : "", y->label ? y->label : "");
    if (c)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Maps a signed net to an unsigned key that orders most grown first, most shrunk last. */
static uint64_t net_key(int64_t net)
{
    return (uint64_t)net ^ (UINT64_C(1) << 63);
}

static void sort_keyed(keyed *k, size_t n, memdiff_sort sort)
{
    if (sort == MEMDIFF_SORT_NAME)
        qsort(k, n, sizeof *k, by_label);
    else if (sort != MEMDIFF_SORT_ADDRESS)
        qsort(k, n, sizeof *k, by_key);
}

int memdiff__report_diff_blocks(const memdiff_diff *diff, const memdiff_report_options *o,
                                memdiff__arena *scratch, const memdiff_block ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (diff->block_count == 0 || (o->flags & MEMDIFF_REPORT_NO_BLOCKS))
        return MEMDIFF_OK;
    keyed *k = memdiff__arena_alloc(scratch, diff->block_count * sizeof *k);
    if (!k)
        return MEMDIFF_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < diff->block_count; i++) {
        const memdiff_block *b = &diff->blocks[i];
        if (!memdiff__report_lists(o, b->category))
            continue;
        uint64_t key = 0;
        if (o->sort == MEMDIFF_SORT_SIZE)
            key = memdiff__add_sat(b->totals.new_bytes, b->totals.freed_bytes);
        else if (o->sort == MEMDIFF_SORT_NET)
            key = net_key(b->totals.net_bytes);
        k[m++] = (keyed){key, b->label, i, b};
    }
    sort_keyed(k, m, o->sort);
    if (o->top && m > o->top)
        m = o->top;
    const memdiff_block **list = memdiff__arena_alloc(scratch, (m ? m : 1) * sizeof *list);
    if (!list)
        return MEMDIFF_ENOMEM;
    for (size_t i = 0; i < m; i++)
        list[i] = k[i].item;
    *out = list;
    *n = m;
    return MEMDIFF_OK;
}

/* ---- snapshot blocks ------------------------------------------------------------------------- */

static void add_region(memdiff__snap_block *b, const memdiff_region *r)
{
    b->r.end = r->end;
    b->r.resident_bytes = memdiff__add_sat(b->r.resident_bytes, r->resident_bytes);
    b->r.private_bytes = memdiff__add_sat(b->r.private_bytes, r->private_bytes);
    b->r.shared_bytes = memdiff__add_sat(b->r.shared_bytes, r->shared_bytes);
    b->r.swapped_bytes = memdiff__add_sat(b->r.swapped_bytes, r->swapped_bytes);
    b->r.pss_bytes = memdiff__add_sat(b->r.pss_bytes, r->pss_bytes);
    b->regions++;
}

int memdiff__report_snapshot_blocks(const memdiff_snapshot *s, const memdiff_report_options *o,
                                    memdiff__arena *scratch, memdiff__snap_block **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t count = memdiff_snapshot_region_count(s);
    if (count == 0 || (o->flags & MEMDIFF_REPORT_NO_BLOCKS))
        return MEMDIFF_OK;
    memdiff__snap_block *blocks = memdiff__arena_alloc(scratch, count * sizeof *blocks);
    if (!blocks)
        return MEMDIFF_ENOMEM;
    int per_region = (o->flags & MEMDIFF_REPORT_REGIONS) != 0;
    /* PSS per mapping (smaps) covers a mapping, whose regions may be of several blocks: a
     * region keeps its figure, a block has none (docs/api.md, "PSS"). */
    int block_pss = per_region || (s->info.sources & MEMDIFF_SRC_PSS);
    size_t m = 0;
    for (size_t i = 0; i < count; i++) {
        memdiff_region r;
        int rc = memdiff_snapshot_region(s, i, &r);
        if (rc != MEMDIFF_OK)
            return rc;
        if (!block_pss)
            r.pss_bytes = r.pss_end = 0;
        if (r.category == MEMDIFF_CAT_OWN || !memdiff__report_lists(o, r.category))
            continue;
        memdiff__snap_block *last = m ? &blocks[m - 1] : NULL;
        if (last && !per_region && r.start == last->r.end && r.category == last->r.category &&
            strcmp(r.label, last->r.label) == 0) {
            add_region(last, &r);
            continue;
        }
        blocks[m].r = r;
        blocks[m].regions = 1;
        m++;
    }
    if (o->sort != MEMDIFF_SORT_ADDRESS) {
        keyed *k = memdiff__arena_alloc(scratch, (m ? m : 1) * sizeof *k);
        memdiff__snap_block *sorted = memdiff__arena_alloc(scratch, (m ? m : 1) * sizeof *sorted);
        if (!k || !sorted)
            return MEMDIFF_ENOMEM;
        for (size_t i = 0; i < m; i++) {
            const memdiff_region *r = &blocks[i].r;
            uint64_t key = o->sort == MEMDIFF_SORT_SIZE ? r->resident_bytes : r->private_bytes;
            k[i] = (keyed){key, r->label, i, &blocks[i]};
        }
        sort_keyed(k, m, o->sort);
        for (size_t i = 0; i < m; i++)
            sorted[i] = *(const memdiff__snap_block *)k[i].item;
        blocks = sorted;
    }
    if (o->top && m > o->top)
        m = o->top;
    *out = blocks;
    *n = m;
    return MEMDIFF_OK;
}

void memdiff__report_snapshot_sums(const memdiff_snapshot *s,
                                   memdiff__snap_sum sums[MEMDIFF_CAT_COUNT])
{
    memset(sums, 0, sizeof(memdiff__snap_sum) * MEMDIFF_CAT_COUNT);
    size_t n = memdiff_snapshot_region_count(s);
    for (size_t i = 0; i < n; i++) {
        memdiff_region r;
        if (memdiff_snapshot_region(s, i, &r) != MEMDIFF_OK ||
            (unsigned)r.category >= MEMDIFF_CAT_COUNT)
            continue;
        memdiff__snap_sum *c = &sums[r.category];
        if (!(s->info.sources & MEMDIFF_SRC_PSS))
            r.pss_bytes = 0; /* per mapping: no category's (see memdiff__report_snapshot_blocks) */
        c->resident_bytes = memdiff__add_sat(c->resident_bytes, r.resident_bytes);
        c->private_bytes = memdiff__add_sat(c->private_bytes, r.private_bytes);
        c->shared_bytes = memdiff__add_sat(c->shared_bytes, r.shared_bytes);
        c->swapped_bytes = memdiff__add_sat(c->swapped_bytes, r.swapped_bytes);
        c->pss_bytes = memdiff__add_sat(c->pss_bytes, r.pss_bytes);
        c->regions++;
    }
}

/* ---- processes of a system snapshot or diff ---------------------------------------------- */

const char *memdiff_system_sort_name(memdiff_system_sort sort)
{
    static const char *const names[] = {"pid", "rss", "pss", "uss", "swap"};
    return (unsigned)sort < sizeof names / sizeof names[0] ? names[sort] : "invalid";
}

const char *memdiff__sys_source_name(unsigned bit)
{
    switch (bit) {
    case MEMDIFF_SYS_SRC_PAGEMAP:
        return "pagemap";
    case MEMDIFF_SYS_SRC_MAPCOUNT:
        return "map-counts";
    case MEMDIFF_SYS_SRC_ROLLUP:
        return "smaps-rollup";
    case MEMDIFF_SYS_SRC_PHYS:
        return "physical";
    case MEMDIFF_SYS_SRC_MEMINFO:
        return "meminfo";
    }
    return NULL;
}

static uint64_t sysproc_key(const memdiff_sysproc *p, memdiff_system_sort sort)
{
    switch (sort) {
    case MEMDIFF_SYSTEM_SORT_RSS:
        return p->rss_bytes;
    case MEMDIFF_SYSTEM_SORT_PSS:
        return p->pss_bytes;
    case MEMDIFF_SYSTEM_SORT_USS:
        return p->uss_bytes;
    case MEMDIFF_SYSTEM_SORT_SWAP:
        return p->swap_bytes;
    case MEMDIFF_SYSTEM_SORT_PID:
        break;
    }
    return 0;
}

static int64_t sysdiff_key(const memdiff_sysproc_diff *d, memdiff_system_sort sort)
{
    switch (sort) {
    case MEMDIFF_SYSTEM_SORT_RSS:
        return d->rss_bytes;
    case MEMDIFF_SYSTEM_SORT_PSS:
        return d->pss_bytes;
    case MEMDIFF_SYSTEM_SORT_USS:
        return d->uss_bytes;
    case MEMDIFF_SYSTEM_SORT_SWAP:
        return d->swap_bytes;
    case MEMDIFF_SYSTEM_SORT_PID:
        break;
    }
    return 0;
}

static int system_options(const memdiff_system_report_options *in, const char *who,
                          memdiff_system_report_options *out)
{
    static const memdiff_system_report_options defaults = MEMDIFF_SYSTEM_REPORT_OPTIONS_INIT;
    const unsigned known = MEMDIFF_REPORT_NO_HEADER | MEMDIFF_REPORT_HUMAN |
                           MEMDIFF_REPORT_COLOR | MEMDIFF_REPORT_LINE | MEMDIFF_REPORT_NO_BLOCKS;
    *out = in ? *in : defaults;
    if (out->flags & ~known)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown flags 0x%x", who,
                                  out->flags & ~known);
    if ((unsigned)out->sort > MEMDIFF_SYSTEM_SORT_SWAP)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown sort %d", who, (int)out->sort);
    if (out->select_count && !out->select)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: select NULL with select_count %zu", who,
                                  out->select_count);
    return MEMDIFF_OK;
}

/* The processes to list into r->list: see memdiff__sys_report_begin. */
static int system_list(memdiff__sys_report *r, const memdiff_system *system,
                       const memdiff_system_diff *diff, int every_state, const char *who)
{
    const memdiff_system_report_options *o = &r->o;
    size_t count = diff ? memdiff_system_diff_process_count(diff)
                        : memdiff_system_process_count(system);
    size_t pick = o->select ? o->select_count : count;
    keyed *k = memdiff__arena_alloc(&r->scratch, (pick ? pick : 1) * sizeof *k);
    r->list = memdiff__arena_alloc(&r->scratch, (pick ? pick : 1) * sizeof *r->list);
    if (!k || !r->list)
        return memdiff__set_error(MEMDIFF_ENOMEM, "%s: out of memory", who);
    size_t m = 0;
    for (size_t i = 0; i < pick; i++) {
        size_t index = o->select ? o->select[i] : i;
        if (index >= count)
            return memdiff__set_error(MEMDIFF_EINVAL, "%s: select[%zu] = %zu, of %zu processes",
                                      who, i, index, count);
        uint64_t key;
        if (diff) {
            memdiff_sysproc_diff d;
            int rc = memdiff_system_diff_process(diff, index, &d);
            if (rc != MEMDIFF_OK)
                return rc;
            if (d.change == MEMDIFF_SYSCHG_SAME)
                continue; /* counted, not listed */
            key = net_key(sysdiff_key(&d, o->sort));
        } else {
            memdiff_sysproc p;
            int rc = memdiff_system_process(system, index, &p);
            if (rc != MEMDIFF_OK)
                return rc;
            if (p.state != MEMDIFF_SYSPROC_READ && !every_state)
                continue; /* counted by reason, not listed */
            key = sysproc_key(&p, o->sort);
        }
        /* Processes come in pid order: the index keeps ties so. */
        k[m++] = (keyed){key, NULL, index, NULL};
    }
    if (o->sort != MEMDIFF_SYSTEM_SORT_PID)
        qsort(k, m, sizeof *k, by_key);
    if (o->top && m > o->top)
        m = o->top;
    for (size_t i = 0; i < m; i++)
        r->list[i] = k[i].index;
    r->n = m;
    return MEMDIFF_OK;
}

int memdiff__sys_report_begin(memdiff__sys_report *r, const memdiff_system *system,
                              const memdiff_system_diff *diff, FILE *out,
                              const memdiff_system_report_options *options, int every_state,
                              const char *who)
{
    memset(r, 0, sizeof *r);
    if ((!system && !diff) || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: NULL argument", who);
    int rc = system_options(options, who, &r->o);
    if (rc == MEMDIFF_OK)
        rc = diff ? memdiff_system_diff_info(diff, &r->info[0], &r->info[1])
                  : memdiff_system_get_info(system, &r->info[0]);
    if (rc == MEMDIFF_OK)
        rc = system_list(r, system, diff, every_state, who);
    if (rc != MEMDIFF_OK)
        memdiff__arena_release(&r->scratch);
    return rc;
}
