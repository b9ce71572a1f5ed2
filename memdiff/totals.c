/*
 * totals.c - counting bytes into a diff's totals: the compare walk counts into categories
 * (compare.c) and the block builder into blocks (coalesce.c), both with these, so that a block's
 * totals and its category's add up the same way.
 */
#include "internal.h"

/* Sums saturate (internal.h): a count that does not fit reads as too large, and compare.c
 * refuses the diff (check_range). net follows new and freed. */
void memdiff__totals_count(memdiff_totals *t, memdiff__outcome outcome, uint64_t bytes)
{
    uint64_t *kind = NULL, *sum = NULL;
    switch (outcome) {
    case MEMDIFF__OUT_NEW_PRIVATE:
        kind = &t->new_private_bytes;
        sum = &t->new_bytes;
        break;
    case MEMDIFF__OUT_NEW_SHARED:
        kind = &t->new_shared_bytes;
        sum = &t->new_bytes;
        break;
    case MEMDIFF__OUT_FREED_UNMAPPED:
        kind = &t->freed_unmapped_bytes;
        sum = &t->freed_bytes;
        break;
    case MEMDIFF__OUT_FREED_DISCARDED:
        kind = &t->freed_discarded_bytes;
        sum = &t->freed_bytes;
        break;
    case MEMDIFF__OUT_FREED_SWAPPED:
        kind = &t->freed_swapped_bytes;
        sum = &t->freed_bytes;
        break;
    case MEMDIFF__OUT_REPLACED:
        kind = &t->replaced_bytes;
        break;
    case MEMDIFF__OUT_BECAME_PRIVATE:
        kind = &t->became_private_bytes;
        break;
    case MEMDIFF__OUT_BECAME_SHARED:
        kind = &t->became_shared_bytes;
        break;
    case MEMDIFF__OUT_NONE:
        return;
    }
    *kind = memdiff__add_sat(*kind, bytes);
    if (sum) {
        *sum = memdiff__add_sat(*sum, bytes);
        t->net_bytes = memdiff__sub_sat(t->new_bytes, t->freed_bytes);
    }
}

void memdiff__totals_add(memdiff_totals *a, const memdiff_totals *b)
{
    a->new_bytes = memdiff__add_sat(a->new_bytes, b->new_bytes);
    a->new_private_bytes = memdiff__add_sat(a->new_private_bytes, b->new_private_bytes);
    a->new_shared_bytes = memdiff__add_sat(a->new_shared_bytes, b->new_shared_bytes);
    a->freed_bytes = memdiff__add_sat(a->freed_bytes, b->freed_bytes);
    a->freed_unmapped_bytes = memdiff__add_sat(a->freed_unmapped_bytes, b->freed_unmapped_bytes);
    a->freed_discarded_bytes =
        memdiff__add_sat(a->freed_discarded_bytes, b->freed_discarded_bytes);
    a->freed_swapped_bytes = memdiff__add_sat(a->freed_swapped_bytes, b->freed_swapped_bytes);
    a->replaced_bytes = memdiff__add_sat(a->replaced_bytes, b->replaced_bytes);
    a->became_private_bytes = memdiff__add_sat(a->became_private_bytes, b->became_private_bytes);
    a->became_shared_bytes = memdiff__add_sat(a->became_shared_bytes, b->became_shared_bytes);
    a->net_bytes = memdiff__sub_sat(a->new_bytes, a->freed_bytes);
    memdiff__totals_pss(a, b->new_pss_bytes, b->freed_pss_bytes);
}

void memdiff__totals_pss(memdiff_totals *t, uint64_t gain, uint64_t loss)
{
    t->new_pss_bytes = memdiff__add_sat(t->new_pss_bytes, gain);
    t->freed_pss_bytes = memdiff__add_sat(t->freed_pss_bytes, loss);
}
