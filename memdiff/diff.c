/*
 * diff.c - a diff's accessors: its totals, blocks (by index and by address) and where it came
 * from. compare.c makes the diff; reports and assertions read it through internal.h.
 */
#include <string.h>

#include "internal.h"

void memdiff_diff_free(memdiff_diff *diff)
{
    if (diff) {
        memdiff__arena a = diff->arena; /* the struct itself lives in the arena */
        memdiff__arena_release(&a);
    }
}

int memdiff_diff_totals(const memdiff_diff *diff, memdiff_category category, memdiff_totals *out)
{
    if (!diff || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_diff_totals: NULL argument");
    if ((unsigned)category > MEMDIFF_CAT_ALL)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_diff_totals: category %d",
                                  (int)category);
    *out = category == MEMDIFF_CAT_ALL ? diff->total : diff->category[category];
    return MEMDIFF_OK;
}

size_t memdiff_diff_block_count(const memdiff_diff *diff)
{
    return diff ? diff->block_count : 0;
}

int memdiff_diff_block(const memdiff_diff *diff, size_t index, memdiff_block *out)
{
    if (!diff || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_diff_block: NULL argument");
    if (index >= diff->block_count)
        return memdiff__set_error(MEMDIFF_ERANGE, "memdiff_diff_block: index %zu of %zu blocks",
                                  index, diff->block_count);
    *out = diff->blocks[index];
    return MEMDIFF_OK;
}

/* The last block in order that starts at or below addr, then back along the outer links past
 * blocks that end at or below it: a block skipped ends no later than the one skipped from, so
 * none of them holds addr. O(log blocks + nesting depth). */
int memdiff_diff_find_block(const memdiff_diff *diff, uint64_t addr, memdiff_block *out)
{
    if (!diff || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_diff_find_block: NULL argument");
    size_t lo = 0, hi = diff->block_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (diff->blocks[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo - 1; /* SIZE_MAX when every block starts above addr */
    while (i != SIZE_MAX && diff->blocks[i].end <= addr)
        i = diff->outer[i];
    if (i == SIZE_MAX)
        return memdiff__set_error(MEMDIFF_ERANGE, "memdiff_diff_find_block: no block holds 0x%llx",
                                  (unsigned long long)addr);
    *out = diff->blocks[i];
    return MEMDIFF_OK;
}

int memdiff_diff_get_info(const memdiff_diff *diff, memdiff_diff_info *out)
{
    if (!diff || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_diff_get_info: NULL argument");
    memset(out, 0, sizeof *out);
    out->before = diff->info[0];
    out->after = diff->info[1];
    out->compare_flags = diff->flags;
    if (diff->bracket)
        out->refset = diff->refs;
    return MEMDIFF_OK;
}
