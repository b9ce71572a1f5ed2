/*
 * filter.c - noise control for figures: which part of a diff's blocks a memdiff_filter keeps, and
 * how a label is matched.
 *
 * A filter works on blocks, never on category totals: the blocks of a category sum to its totals
 * (compare.c hands every counted page to a block, Own excepted), so a figure over the blocks a
 * filter keeps is the category's figure less what the filter left out.
 */
#include <string.h>

#include "internal.h"

int memdiff__filter_valid(const memdiff_filter *f, const char *who)
{
    const unsigned known_flags = MEMDIFF_FILTER_IGNORE_IMAGE_FILE;
    const unsigned known_categories = MEMDIFF_CAT_BIT(MEMDIFF_CAT_COUNT) - 1u;
    if (!f)
        return MEMDIFF_OK;
    if (f->flags & ~known_flags)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown filter flags 0x%x", who,
                                  f->flags & ~known_flags);
    if (f->ignore_categories & ~known_categories)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown categories 0x%x in the filter",
                                  who, f->ignore_categories & ~known_categories);
    return MEMDIFF_OK;
}

int memdiff__label_match(const char *label, const char *pattern, memdiff_match match)
{
    size_t n = strlen(label), m = strlen(pattern);
    switch (match) {
    case MEMDIFF_MATCH_EXACT:
        return strcmp(label, pattern) == 0;
    case MEMDIFF_MATCH_PREFIX:
        return strncmp(label, pattern, m) == 0;
    case MEMDIFF_MATCH_SUFFIX:
        return n >= m && memcmp(label + n - m, pattern, m) == 0;
    case MEMDIFF_MATCH_SUBSTRING:
        return strstr(label, pattern) != NULL;
    }
    return 0;
}

static int label_ignored(const memdiff_filter *f, const char *label)
{
    for (const char *const *p = f->ignore_labels; p && *p; p++) {
        if (strstr(label, *p))
            return 1;
    }
    return 0;
}

/* Page cache pages of an image block: in a verbose diff the block's one kind of page tells
 * (freed pages by what they were before); in a default diff only the split by kind that the
 * totals carry is known: new shared pages and discarded ones (a private anonymous page, as
 * written data or bss, cannot be discarded, only swapped out or unmapped). */
static int drop_image_file_pages(const memdiff_block *k, int verbose, memdiff_totals *t)
{
    if (verbose) {
        unsigned attrs = k->change == MEMDIFF_CHANGE_FREED ? k->attrs_before : k->attrs_after;
        return (attrs & MEMDIFF_PAGE_FILE) != 0;
    }
    t->new_bytes -= t->new_shared_bytes;
    t->new_shared_bytes = 0;
    t->freed_bytes -= t->freed_discarded_bytes;
    t->freed_discarded_bytes = 0;
    t->net_bytes = memdiff__sub_sat(t->new_bytes, t->freed_bytes);
    return 0;
}

int memdiff__filter_block(const memdiff_filter *f, const memdiff_block *k, int verbose,
                          memdiff_totals *kept)
{
    *kept = k->totals;
    if (!f)
        return 1;
    if (((unsigned)k->category < MEMDIFF_CAT_COUNT &&
         (f->ignore_categories & MEMDIFF_CAT_BIT(k->category))) ||
        label_ignored(f, k->label ? k->label : "") ||
        ((f->flags & MEMDIFF_FILTER_IGNORE_IMAGE_FILE) && k->category == MEMDIFF_CAT_IMAGE &&
         drop_image_file_pages(k, verbose, kept))) {
        memset(kept, 0, sizeof *kept);
        return 0;
    }
    return 1;
}
