/*
 * coalesce.c - groups the compare walk's pieces of changed pages into a diff's blocks.
 *
 * Default: one block per allocation unit, the key (category, unit, label) of the region the
 * pages are attributed to, so that a module's text, data and bss, or a heap's several mappings,
 * read as one line. Verbose: one block per maximal run of contiguous pages with identical
 * (outcome, freed kind included; attributes before and after; category; label).
 *
 * Pieces arrive in ascending order of start, so blocks are made in ascending order of start
 * too; two blocks can only start at the same address when one interval both freed an old
 * mapping's pages and brought a new mapping's, which the final sort puts in category order.
 *
 * Bracket diffs also send pieces whose pages did not change (outcome NONE) for their touched
 * and persistent bytes. A touched one makes or grows a block like a change does. One that is
 * only persistent never makes a block (unchanged, untouched pages are in no block): in default
 * diffs its bytes wait in its unit's hash entry and join the unit's block if a later piece makes
 * one; in verbose diffs, where a block is one run of identical pages, it is dropped.
 */
#include <string.h>

#include "uthash_arena.h"

typedef struct work {
    memdiff_block b;
    memdiff_impact impact;    /* bracket diffs: touched and persistent bytes */
    uint64_t unit;
    memdiff__outcome outcome; /* verbose: the one outcome of all the block's pages */
} work;

/* Default diffs: the key of an allocation unit. All fields 64-bit: no padding in the hash key. */
typedef struct unit_key {
    uint64_t category;
    uint64_t unit;
    uint64_t label; /* the interned label's address: equal labels are equal pointers */
} unit_key;

typedef struct unit_entry {
    unit_key key;
    size_t index;        /* the unit's block, or SIZE_MAX while it has none */
    uint64_t persistent; /* bytes of persistent-only pieces that came before the block */
    UT_hash_handle hh;
} unit_entry;

struct memdiff__blocks {
    memdiff__arena *arena;
    int verbose;
    work *v;
    size_t n, cap;
    unit_entry *units;
    /* The two blocks last added to. The walk alternates between at most two blocks at a time
     * (the before region's and the after region's), so these spare most hash lookups, and in
     * verbose diffs they are the only blocks a piece can extend. */
    size_t recent[2];
};

int memdiff__blocks_new(memdiff__arena *arena, int verbose, memdiff__blocks **out)
{
    memdiff__blocks *b = memdiff__arena_alloc(arena, sizeof *b);
    *out = b;
    if (!b)
        return MEMDIFF_ENOMEM;
    b->arena = arena;
    b->verbose = verbose;
    b->recent[0] = b->recent[1] = SIZE_MAX;
    return MEMDIFF_OK;
}

static void touch(memdiff__blocks *b, size_t index)
{
    if (b->recent[0] != index) {
        b->recent[1] = b->recent[0];
        b->recent[0] = index;
    }
}

/* A piece that makes or grows a block's span: pages that changed, or were touched. */
static int visible(const memdiff__piece *p)
{
    return p->outcome != MEMDIFF__OUT_NONE || p->touched;
}

static void grow_block(work *w, const memdiff__piece *p)
{
    w->impact.touched_bytes = memdiff__add_sat(w->impact.touched_bytes, p->touched);
    w->impact.touched_estimated_bytes =
        memdiff__add_sat(w->impact.touched_estimated_bytes, p->touched_estimated);
    w->impact.touched_max_bytes = memdiff__add_sat(w->impact.touched_max_bytes, p->touched_max);
    w->impact.persistent_bytes = memdiff__add_sat(w->impact.persistent_bytes, p->persistent);
    if (!visible(p))
        return;
    w->b.start = MEMDIFF__MIN(w->b.start, p->start);
    w->b.end = MEMDIFF__MAX(w->b.end, p->end);
    w->b.presence |= p->presence;
    memdiff__totals_count(&w->b.totals, p->outcome, p->end - p->start);
    memdiff__totals_pss(&w->b.totals, p->pss_gain, p->pss_loss);
}

static int new_block(memdiff__blocks *b, const memdiff__piece *p, size_t *index)
{
    work *v = memdiff__arena_room(b->arena, b->v, &b->cap, b->n, sizeof *v, 64);
    if (!v)
        return MEMDIFF_ENOMEM;
    b->v = v;
    work *w = &b->v[b->n];
    memset(w, 0, sizeof *w);
    w->b.start = p->start;
    w->b.end = p->end;
    w->b.category = p->category;
    w->b.label = p->label;
    w->b.attrs_before = p->attrs_before;
    w->b.attrs_after = p->attrs_after;
    w->unit = p->unit;
    w->outcome = p->outcome;
    grow_block(w, p);
    *index = b->n++;
    touch(b, *index);
    return MEMDIFF_OK;
}

static int extends(const work *w, const memdiff__piece *p)
{
    return w->b.end == p->start && w->outcome == p->outcome && w->b.category == p->category &&
           w->b.label == p->label && w->b.attrs_before == p->attrs_before &&
           w->b.attrs_after == p->attrs_after;
}

static int add_verbose(memdiff__blocks *b, const memdiff__piece *p)
{
    if (!visible(p))
        return MEMDIFF_OK;
    for (int i = 0; i < 2; i++) {
        if (b->recent[i] != SIZE_MAX && extends(&b->v[b->recent[i]], p)) {
            grow_block(&b->v[b->recent[i]], p);
            touch(b, b->recent[i]);
            return MEMDIFF_OK;
        }
    }
    size_t index;
    return new_block(b, p, &index);
}

static int add_default(memdiff__blocks *b, const memdiff__piece *p)
{
    for (int i = 0; i < 2; i++) {
        size_t k = b->recent[i];
        if (k != SIZE_MAX && b->v[k].b.category == p->category && b->v[k].unit == p->unit &&
            b->v[k].b.label == p->label) {
            grow_block(&b->v[k], p);
            touch(b, k);
            return MEMDIFF_OK;
        }
    }
    unit_key key;
    key.category = (uint64_t)p->category;
    key.unit = p->unit;
    key.label = (uint64_t)(uintptr_t)p->label;
    unit_entry *e = NULL;
    HASH_FIND(hh, b->units, &key, sizeof key, e);
    if (e && e->index != SIZE_MAX) {
        grow_block(&b->v[e->index], p);
        touch(b, e->index);
        return MEMDIFF_OK;
    }
    if (e) { /* the unit had persistent pages only, so far */
        if (!visible(p)) {
            e->persistent = memdiff__add_sat(e->persistent, p->persistent);
            return MEMDIFF_OK;
        }
        int rc = new_block(b, p, &e->index);
        if (!rc) {
            memdiff_impact *m = &b->v[e->index].impact;
            m->persistent_bytes = memdiff__add_sat(m->persistent_bytes, e->persistent);
        }
        return rc;
    }
    e = memdiff__arena_alloc(b->arena, sizeof *e);
    if (!e)
        return MEMDIFF_ENOMEM;
    e->key = key;
    e->index = SIZE_MAX;
    int rc = MEMDIFF_OK;
    if (visible(p))
        rc = new_block(b, p, &e->index);
    else
        e->persistent = p->persistent;
    if (rc)
        return rc;
    memdiff__uthash_arena = b->arena;
    memdiff__uthash_oom = 0;
    HASH_ADD(hh, b->units, key, sizeof key, e);
    return memdiff__uthash_oom ? MEMDIFF_ENOMEM : MEMDIFF_OK;
}

int memdiff__blocks_add(memdiff__blocks *b, const memdiff__piece *piece)
{
    if (piece->end <= piece->start ||
        (piece->outcome == MEMDIFF__OUT_NONE && !piece->touched && !piece->persistent))
        return MEMDIFF_OK;
    return b->verbose ? add_verbose(b, piece) : add_default(b, piece);
}

/* The one kind of change a block's pages had, MIXED, or TOUCHED for a block of a bracket diff
 * whose pages did not change (it exists because they were touched). */
static memdiff_change change_of(const memdiff_totals *t)
{
    const struct {
        uint64_t bytes;
        memdiff_change change;
    } kinds[] = {
        {t->new_bytes, MEMDIFF_CHANGE_NEW},
        {t->freed_bytes, MEMDIFF_CHANGE_FREED},
        {t->replaced_bytes, MEMDIFF_CHANGE_REPLACED},
        {t->became_private_bytes, MEMDIFF_CHANGE_BECAME_PRIVATE},
        {t->became_shared_bytes, MEMDIFF_CHANGE_BECAME_SHARED},
    };
    memdiff_change found = MEMDIFF_CHANGE_MIXED;
    int count = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (kinds[i].bytes) {
            found = kinds[i].change;
            count++;
        }
    }
    if (count == 0)
        return MEMDIFF_CHANGE_TOUCHED;
    return count == 1 ? found : MEMDIFF_CHANGE_MIXED;
}

static int block_before(const memdiff_block *x, const memdiff_block *y)
{
    if (x->start != y->start)
        return x->start < y->start;
    return x->category < y->category;
}

int memdiff__blocks_finish(memdiff__blocks *b, memdiff_block **out, int with_impact,
                           size_t *count)
{
    *out = NULL;
    *count = 0;
    if (b->n == 0)
        return MEMDIFF_OK;
    memdiff_block *v = memdiff__arena_alloc(b->arena, b->n * sizeof *v);
    if (!v)
        return MEMDIFF_ENOMEM;
    /* Insertion sort, stable: the blocks are made in order of start (see the top), so this is
     * linear; it only orders the pairs that start at one address. A bracket diff's blocks of
     * per-mapping touched bytes span their mapping and may come a little out of order. */
    for (size_t i = 0; i < b->n; i++) {
        memdiff_block x = b->v[i].b;
        x.change = change_of(&x.totals);
        memset(&x.impact, 0, sizeof x.impact);
        if (with_impact) {
            x.impact = b->v[i].impact;
            x.impact.impacting_bytes =
                memdiff__add_sat(x.totals.new_bytes, x.totals.freed_bytes);
        }
        size_t j = i;
        while (j > 0 && block_before(&x, &v[j - 1])) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    *out = v;
    *count = b->n;
    return MEMDIFF_OK;
}
