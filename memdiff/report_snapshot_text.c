/*
 * report_snapshot_text.c - the text report of one snapshot (memdiff show): its header, totals,
 * a table per category and its blocks (adjacent regions of one category and label, or every
 * region with MEMDIFF_REPORT_REGIONS). tests/fixtures/reports/snapshot*.txt are complete
 * examples:
 *
 *   memdiff snapshot: pid 4242 on host
 *     standard depth (deep requested), 4096-byte pages, taken 2026-11-22 10:00:00.123 UTC
 *   Degraded: frame numbers unavailable: needs CAP_SYS_ADMIN
 *   Sources: regions pages process-totals
 *   7 regions, 9 page runs
 *
 *   Resident:                 86,016 bytes  (private 61,440, shared 24,576)
 *   Swapped:                   8,192 bytes
 *   PSS:                           –  (needs deep depth: map counts, CAP_SYS_ADMIN)
 *   memdiff's own storage:    81,920 bytes  (excluded from all totals)
 *   Kernel's figures: VmRSS 1,234, VmHWM 2,345, VmSize 3,456, VmSwap 0 bytes
 *
 *   Category      Resident  Private  Shared  Swapped  Regions
 *   image           24,576   12,288  12,288        0        3
 *   total           86,016   61,440  24,576    8,192        6
 *
 *   Blocks (5, adjacent regions with one category and label):
 *     range                          prot    size  resident  private  swapped  category  label
 *     0x000010000000-0x000010010000  rw-   65,536    36,864   36,864    8,192  heap      [heap]
 *
 * A PSS column (table and blocks) where the snapshot knows PSS (MEMDIFF_SRC_PSS), the Swapped
 * column where something is swapped out; prot only for a block of one region. The options act
 * as on a diff's report (report_text.c): units, colours (headings), categories (table rows and
 * blocks; the total stays the process's), order, top, and the width, within which labels are
 * cut from the left or written on a line of their own.
 */
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "internal.h"

/* MEMDIFF_SRC_* bits by name, as the JSON reports name them. */
static const struct {
    unsigned bit;
    const char *name;
} sources[] = {
    {MEMDIFF_SRC_REGIONS, "regions"},
    {MEMDIFF_SRC_PAGES, "pages"},
    {MEMDIFF_SRC_FRAMES, "frames"},
    {MEMDIFF_SRC_PAGE_FLAGS, "page-flags"},
    {MEMDIFF_SRC_MAP_COUNTS, "map-counts"},
    {MEMDIFF_SRC_PROCESS_TOTALS, "process-totals"},
    {MEMDIFF_SRC_THREADS, "threads"},
    {MEMDIFF_SRC_HEAPS, "heaps"},
    {MEMDIFF_SRC_MODULES, "modules"},
    {MEMDIFF_SRC_PAGE_ACCESS, "page-access"},
    {MEMDIFF_SRC_PSS, "pss"},
    {MEMDIFF_SRC_PSS_MAPPINGS, "pss-mappings"},
};

static const char *source_name(unsigned bit)
{
    for (size_t k = 0; k < sizeof sources / sizeof sources[0]; k++)
        if (sources[k].bit == bit)
            return sources[k].name;
    return NULL;
}

#define NUM_MAX MEMDIFF__NUM_MAX
#define DASH "\xe2\x80\x93" /* U+2013 (en dash): a figure that is not known */
#define LABEL_MIN 12        /* as report_text.c's */

typedef struct st {
    FILE *out;
    unsigned flags;
    int width; /* 0: no limit */
    memdiff__arena *scratch;
    int rc;
    unsigned sources; /* the snapshot's MEMDIFF_SRC_* */
} st;

static void keep_rc(st *t, int rc)
{
    if (rc && !t->rc)
        t->rc = rc;
}

static const char *prot_str(char buf[4], unsigned prot)
{
    buf[0] = prot & MEMDIFF_PROT_READ ? 'r' : '-';
    buf[1] = prot & MEMDIFF_PROT_WRITE ? 'w' : '-';
    buf[2] = prot & MEMDIFF_PROT_EXEC ? 'x' : '-';
    buf[3] = '\0';
    return buf;
}

static void put_header(st *t, const memdiff_snapshot_info *i)
{
    FILE *out = t->out;
    char head[48], tail[96];
    snprintf(head, sizeof head, "memdiff snapshot: pid %d on ", i->pid);
    int n = snprintf(tail, sizeof tail, ", %s depth", memdiff_depth_name(i->depth));
    if (i->depth != i->depth_requested)
        n += snprintf(tail + n, sizeof tail - (size_t)n, " (%s requested)",
                      memdiff_depth_name(i->depth_requested));
    snprintf(tail + n, sizeof tail - (size_t)n, ", %" PRIu32 "-byte pages", i->page_size);
    fputs(head, out);
    /* The host name as the file says: it may come from anywhere, so escaped, and cut to the
     * line (a real one, at most 64 bytes, fits). */
    keep_rc(t, memdiff__put_label(out, t->scratch, i->host,
                                  t->width ? MEMDIFF__MAX(16, t->width - (int)strlen(head)) : 0));
    fprintf(out, "\n  %s", tail + 2);
    if (i->time_ns) {
        fputs(", taken ", out);
        memdiff__put_time(out, i->time_ns);
        fputc('\n', out);
    } else {
        fputs(", time unknown\n", out);
    }
    if (i->degraded)
        keep_rc(t, memdiff__put_wrapped(out, t->scratch, "Degraded: ", i->degraded, "\n", 4,
                                        t->width));
    char names[160];
    if (memdiff__bit_names(names, sizeof names, i->sources, source_name)[0])
        keep_rc(t, memdiff__put_wrapped(out, t->scratch, "Sources: ", names, "\n", 2, t->width));
    else
        fputs("Sources:\n", out);
    fprintf(out, "%zu regions, %zu page runs\n", i->region_count, i->run_count);
}

/* The rest of a line after its figure, which ends at column at: wrapped within the width. */
static void put_rest(st *t, int at, const char *text)
{
    keep_rc(t, memdiff__put_wrapped_at(t->out, t->scratch, at, text, "\n", at + 3, t->width));
}

static void put_totals(st *t, const memdiff_snapshot_info *i)
{
    FILE *out = t->out;
    char res[NUM_MAX], swp[NUM_MAX], pss[NUM_MAX], own[NUM_MAX], x[NUM_MAX], y[NUM_MAX];
    memdiff__fmt_amount(res, i->resident_bytes, 0, t->flags);
    memdiff__fmt_amount(swp, i->swapped_bytes, 0, t->flags);
    memdiff__fmt_amount(pss, i->pss_bytes, 0, t->flags);
    memdiff__fmt_amount(own, i->own_bytes, 0, t->flags);
    int knows_pss = memdiff__knows_pss(i);
    int w = MEMDIFF__MAX(MEMDIFF__MAX(memdiff__text_cols(res), memdiff__text_cols(swp)),
                         MEMDIFF__MAX(memdiff__text_cols(own),
                                      knows_pss ? memdiff__text_cols(pss) : 0));
    w = MEMDIFF__MAX(w, 16);
    if (!(t->flags & MEMDIFF_REPORT_NO_HEADER))
        fputc('\n', out);
    fprintf(out, "%-23s", "Resident:");
    memdiff__put_cell(out, t->flags, res, w, NULL);
    char rest[2 * NUM_MAX + 64];
    snprintf(rest, sizeof rest, "  (private %s, shared %s)",
             memdiff__fmt_bytes(x, i->private_bytes, 0, t->flags),
             memdiff__fmt_bytes(y, i->shared_bytes, 0, t->flags));
    put_rest(t, 23 + w, rest);
    fprintf(out, "%-23s", "Swapped:");
    memdiff__put_cell(out, t->flags, swp, w, NULL);
    fprintf(out, "\n%-23s", "PSS:");
    if (knows_pss) {
        memdiff__put_cell(out, t->flags, pss, w, NULL);
        /* Per mapping, a figure covers the mapping's regions, which may be of several categories
         * and blocks: shown per region only. */
        put_rest(t, 23 + w,
                 (i->sources & MEMDIFF_SRC_PSS)
                     ? "  (page size / map count per page, as smaps)"
                     : "  (smaps' Pss per mapping, in whole kB)");
    } else {
        memdiff__put_cell(out, t->flags, DASH, w, NULL);
        snprintf(rest, sizeof rest, "  (%s)", memdiff__pss_unknown(i));
        put_rest(t, 23 + w, rest);
    }
    fprintf(out, "%-23s", "memdiff's own storage:");
    memdiff__put_cell(out, t->flags, own, w, NULL);
    put_rest(t, 23 + w, "  (excluded from all totals)");
    const memdiff_process_totals *k = &i->totals;
    if (k->vm_rss || k->vm_size) {
        char line[256], a[NUM_MAX], b[NUM_MAX], c[NUM_MAX], d[NUM_MAX];
        snprintf(line, sizeof line, "VmRSS %s, VmHWM %s, VmSize %s, VmSwap %s",
                 memdiff__fmt_bytes(a, k->vm_rss, 0, t->flags),
                 memdiff__fmt_bytes(b, k->vm_hwm, 0, t->flags),
                 memdiff__fmt_bytes(c, k->vm_size, 0, t->flags),
                 memdiff__fmt_amount(d, k->vm_swap, 0, t->flags));
        keep_rc(t, memdiff__put_wrapped(out, t->scratch, "Kernel's figures: ", line, "\n", 2,
                                        t->width));
    }
}

static void put_table(st *t, const memdiff_snapshot *s, const memdiff_snapshot_info *i,
                      const memdiff_report_options *o)
{
    memdiff__snap_sum sums[MEMDIFF_CAT_COUNT], total;
    memdiff__report_snapshot_sums(s, sums);
    memset(&total, 0, sizeof total);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        const memdiff__snap_sum *x = &sums[c];
        if (c == MEMDIFF_CAT_OWN)
            continue; /* as in every total: Own apart */
        total.resident_bytes = memdiff__add_sat(total.resident_bytes, x->resident_bytes);
        total.private_bytes = memdiff__add_sat(total.private_bytes, x->private_bytes);
        total.shared_bytes = memdiff__add_sat(total.shared_bytes, x->shared_bytes);
        total.swapped_bytes = memdiff__add_sat(total.swapped_bytes, x->swapped_bytes);
        total.pss_bytes = memdiff__add_sat(total.pss_bytes, x->pss_bytes);
        total.regions += x->regions;
    }
    int pss = (i->sources & MEMDIFF_SRC_PSS) != 0, swapped = total.swapped_bytes != 0;
    memdiff__table tab;
    tab.corner = "Category";
    tab.ncols = tab.nrows = 0;
    tab.signed_cols = 0;
    tab.heads[tab.ncols++] = "Resident";
    tab.heads[tab.ncols++] = "Private";
    tab.heads[tab.ncols++] = "Shared";
    if (swapped)
        tab.heads[tab.ncols++] = "Swapped";
    if (pss)
        tab.heads[tab.ncols++] = "PSS";
    tab.heads[tab.ncols++] = "Regions";
    for (int c = 0; c <= MEMDIFF_CAT_COUNT; c++) {
        const memdiff__snap_sum *x = c < MEMDIFF_CAT_COUNT ? &sums[c] : &total;
        if (c < MEMDIFF_CAT_COUNT && (!x->regions || !memdiff__report_lists(o, c)))
            continue;
        char(*cell)[NUM_MAX] = tab.cells[tab.nrows];
        int n = 0;
        memdiff__fmt_bytes(cell[n++], x->resident_bytes, 0, t->flags);
        memdiff__fmt_bytes(cell[n++], x->private_bytes, 0, t->flags);
        memdiff__fmt_bytes(cell[n++], x->shared_bytes, 0, t->flags);
        if (swapped)
            memdiff__fmt_bytes(cell[n++], x->swapped_bytes, 0, t->flags);
        if (pss)
            memdiff__fmt_bytes(cell[n++], x->pss_bytes, 0, t->flags);
        memdiff__fmt_count(cell[n++], x->regions, 0);
        tab.names[tab.nrows++] =
            c < MEMDIFF_CAT_COUNT ? memdiff_category_name((memdiff_category)c) : "total";
    }
    fputc('\n', t->out);
    memdiff__put_table(t->out, t->flags, t->width, &tab);
}

enum { B_SIZE, B_RES, B_PRIV, B_SWAP, B_PSS, B_COLS };

static void block_cells(const st *t, const memdiff_region *r, char cells[B_COLS][NUM_MAX])
{
    memdiff__fmt_bytes(cells[B_SIZE], r->end - r->start, 0, t->flags);
    memdiff__fmt_bytes(cells[B_RES], r->resident_bytes, 0, t->flags);
    memdiff__fmt_bytes(cells[B_PRIV], r->private_bytes, 0, t->flags);
    memdiff__fmt_bytes(cells[B_SWAP], r->swapped_bytes, 0, t->flags);
    /* Per mapping (smaps), a region after a mapping's first carries none of its figure. */
    if (r->pss_end || (t->sources & MEMDIFF_SRC_PSS))
        memdiff__fmt_bytes(cells[B_PSS], r->pss_bytes, 0, t->flags);
    else
        snprintf(cells[B_PSS], NUM_MAX, "%s", DASH);
}

static void put_blocks(st *t, const memdiff_snapshot_info *i, const memdiff__snap_block *b,
                       size_t n, size_t all)
{
    FILE *out = t->out;
    int per_region = (t->flags & MEMDIFF_REPORT_REGIONS) != 0;
    int mapping_pss = per_region && !(i->sources & MEMDIFF_SRC_PSS) &&
                      (i->sources & MEMDIFF_SRC_PSS_MAPPINGS);
    const char *const heads[B_COLS] = {"size", "resident", "private", "swapped",
                                       mapping_pss ? "mapping pss" : "pss"};
    int show[B_COLS] = {1, 1, 1, i->swapped_bytes != 0,
                        (i->sources & MEMDIFF_SRC_PSS) != 0 || mapping_pss};
    const char *what = per_region ? "Regions" : "Blocks";
    const char *unit = per_region ? "" : ", adjacent regions with one category and label";
    char head[160];
    if (n < all)
        snprintf(head, sizeof head, "%s (%zu of %zu%s)%s", what, n, all, unit, n ? ":" : "");
    else
        snprintf(head, sizeof head, "%s (%zu%s):", what, n, unit);
    fputc('\n', out);
    memdiff__put_cell(out, t->flags, head, 0, MEMDIFF__SGR_HEAD);
    fputc('\n', out);
    if (n == 0)
        return;
    char cells[B_COLS][NUM_MAX];
    int w[B_COLS], wa = 8, wc = (int)strlen("category");
    for (int k = 0; k < B_COLS; k++)
        w[k] = (int)strlen(heads[k]);
    for (size_t j = 0; j < n; j++) {
        wa = memdiff__range_digits(wa, b[j].r.end);
        wc = MEMDIFF__MAX(wc, (int)strlen(memdiff_category_name(b[j].r.category)));
        block_cells(t, &b[j].r, cells);
        for (int k = 0; k < B_COLS; k++)
            w[k] = MEMDIFF__MAX(w[k], memdiff__text_cols(cells[k]));
    }
    /* The same fields before every label: the room left for labels is the same for all. When
     * the figures leave no room for the category, it goes on a second line with the label. */
    int fixed = 2 + 2 * (wa + 2) + 1 + 2 + 4;
    for (int k = 0; k < B_COLS; k++)
        fixed += show[k] ? 2 + w[k] : 0;
    int category_below = t->width && fixed + 2 + wc > t->width;
    fixed += 2 + wc;
    int room = t->width ? t->width - fixed - 2 : 0;
    fprintf(out, "  %-*s  prot", 2 * (wa + 2) + 1, "range");
    for (int k = 0; k < B_COLS; k++) {
        if (show[k])
            fprintf(out, "  %*s", w[k], heads[k]);
    }
    if (category_below)
        fputs("\n      category  label\n", out);
    else if (t->width && room < LABEL_MIN)
        fputs("  category\n    label\n", out); /* the labels are on lines of their own */
    else
        fprintf(out, "  %-*s  label\n", wc, "category");
    for (size_t j = 0; j < n; j++) {
        const memdiff_region *r = &b[j].r;
        char prot[4];
        /* A block of several regions has no one protection: left blank. */
        fprintf(out, "  0x%0*" PRIx64 "-0x%0*" PRIx64 "  %-4s", wa, r->start, wa, r->end,
                b[j].regions == 1 ? prot_str(prot, r->prot) : "");
        block_cells(t, r, cells);
        for (int k = 0; k < B_COLS; k++) {
            if (show[k])
                fprintf(out, "  %*s", w[k] + (int)strlen(cells[k]) -
                                          memdiff__text_cols(cells[k]), cells[k]);
        }
        const char *category = memdiff_category_name(r->category);
        if (category_below) {
            int left = t->width - 6 - (int)strlen(category) - 2;
            fprintf(out, "\n      %s", category);
            if (r->label[0]) {
                int below = left < LABEL_MIN || !memdiff__label_fits(t->scratch, r->label, left);
                fputs(below ? "\n    " : "  ", out);
                keep_rc(t, memdiff__put_label(out, t->scratch, r->label,
                                              below ? t->width - 4 : left));
            }
            fputc('\n', out);
            continue;
        }
        int line_room = room - memdiff__range_extra(wa, r->end);
        int beside = r->label[0] &&
                     (!t->width || (line_room >= LABEL_MIN &&
                                    memdiff__label_fits(t->scratch, r->label, line_room)));
        fprintf(out, "  %-*s", beside ? wc : 0, category);
        if (r->label[0]) {
            fputs(beside ? "  " : "\n    ", out);
            keep_rc(t, memdiff__put_label(out, t->scratch, r->label,
                                          beside ? line_room : t->width - 4));
        }
        fputc('\n', out);
    }
}

int memdiff_snapshot_report_text(const memdiff_snapshot *snapshot, FILE *out,
                                 const memdiff_report_options *options)
{
    if (!snapshot || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_report_text: NULL argument");
    memdiff_report_options o, all_o;
    int rc = memdiff__report_options(options, "memdiff_snapshot_report_text", &o);
    if (rc != MEMDIFF_OK)
        return rc;
    memdiff_snapshot_info i;
    rc = memdiff_snapshot_get_info(snapshot, &i);
    if (rc != MEMDIFF_OK)
        return rc;
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    memdiff__snap_block *blocks = NULL, *every;
    size_t n = 0, all = 0;
    /* "5 of 40": the blocks before the categories and the top cut them. */
    all_o = o;
    all_o.categories = 0;
    all_o.top = 0;
    all_o.sort = MEMDIFF_SORT_ADDRESS;
    if (!(o.flags & MEMDIFF_REPORT_NO_BLOCKS)) {
        rc = memdiff__report_snapshot_blocks(snapshot, &o, &scratch, &blocks, &n);
        if (rc == MEMDIFF_OK)
            rc = memdiff__report_snapshot_blocks(snapshot, &all_o, &scratch, &every, &all);
        if (rc != MEMDIFF_OK) {
            memdiff__arena_release(&scratch);
            return rc == MEMDIFF_ENOMEM
                       ? memdiff__set_error(rc, "memdiff_snapshot_report_text: out of memory")
                       : rc;
        }
    }
    st t = {out, o.flags, memdiff__report_width(&o), &scratch, MEMDIFF_OK, i.sources};
    if (!(o.flags & MEMDIFF_REPORT_NO_HEADER))
        put_header(&t, &i);
    put_totals(&t, &i);
    put_table(&t, snapshot, &i, &o);
    if (!(o.flags & MEMDIFF_REPORT_NO_BLOCKS))
        put_blocks(&t, &i, blocks, n, all);
    memdiff__arena_release(&scratch);
    if (t.rc != MEMDIFF_OK)
        return memdiff__set_error(t.rc, "memdiff_snapshot_report_text: out of memory");
    if (fflush(out) != 0 || ferror(out))
        return memdiff__set_error(MEMDIFF_EIO,
                                  "memdiff_snapshot_report_text: writing the report failed");
    return MEMDIFF_OK;
}
