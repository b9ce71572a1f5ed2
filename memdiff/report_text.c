/*
 * report_text.c - the MemDiff-style text report of a diff, and the small helpers both report
 * writers share (UTF-8 validation, page attribute names).
 *
 * Layout (every number with thousands separators; sizes of changes signed, + new, - freed;
 * tests/fixtures/reports/text*.txt are complete examples):
 *
 *   memdiff: pid 4242 on host, standard depth, 4096-byte pages
 *     before 2026-11-22 10:00:00.123 UTC, after +0.250 s
 *     (after: frame numbers unavailable: needs CAP_SYS_ADMIN)
 *   Net change:               +40,960 bytes  (+10 pages)
 *   Memory allocated:         +65,536 bytes  (16 pages: 9 private, 7 shared)
 *   Memory freed:             -24,576 bytes  (6 pages: 3 unmapped, 1 discarded, 2 swapped out)
 *   Net PSS:                              –  (needs deep depth: map counts, CAP_SYS_ADMIN)
 *   Replaced: 0 bytes  Became private: 8,192 bytes  Became shared: 0 bytes
 *   memdiff's own storage:    +65,536 bytes  (131,072 after; excluded from all totals)
 *
 *   Category         New   Freed      Net  Private  Shared  Replaced  Became private  ...
 *   heap          16,384  12,288   +4,096   16,384       0         0               0
 *   total         65,536  24,576  +40,960   36,864  28,672         0           8,192
 *
 *   Blocks (5, by allocation unit):
 *     0x000010004000-0x00001000c000   +4,096  heap         mixed (new, freed)       [heap]
 *     0x7f1000100000-0x7f1000105000  +20,480  mapped-file  new (mapped after only)  /data/b.bin
 *
 * A reference-set bracket's diff (MEMDIFF_BRACKET_REFSET) adds, after the summary:
 *
 *   Touched:                 69,632 bytes  (17 pages accessed, resident before or new)
 *   Peak resident:       68,968,448 bytes  (+67,018,752 above the start, within 262,144)
 *   Persistent:           1,835,008 bytes  (resident before and after)
 *   Impacting:               90,112 bytes  (new and kept, or freed)
 *   Transient:           67,014,656 bytes  (the peak above both ends: allocated and freed inside)
 *     (reference set: no page_idle bitmap ...: touched per mapping only)
 *
 * and Touched and Persistent columns to the table, and a "touched N" column to the blocks;
 * blocks whose pages did not change but were touched read "touched". A touched figure that is in
 * part an estimate (memdiff_impact) has APPROX in front, and the Touched line then ends with
 * "; N of it estimated, at most M". tests/fixtures/reports/
 * bracket*.txt are complete examples.
 *
 * MEMDIFF_REPORT_NO_HEADER leaves out the header (two lines and degraded notes). The Replaced line
 * appears only when a page was replaced or changed exclusivity, the table's Replaced /
 * Became-private / Became-shared columns likewise. Verbose diffs add the page attributes before
 * and after ("present,private -> -") before the label. Labels come last because they are as
 * long as paths. Labels, host names and degraded notes are escaped (escape.c) so that what a
 * target or a file chose as a name can neither break a line nor drive the terminal. A diff of
 * two snapshots that know PSS (MEMDIFF_SRC_PSS: deep) has after Memory freed
 *   Net PSS:                  -40,960 bytes  (+0 gained, -40,960 lost)
 * and a Net PSS column (new_pss_bytes - freed_pss_bytes) in the table. Where a side knows PSS
 * per mapping only (MEMDIFF_SRC_PSS_MAPPINGS, smaps) the line is the snapshots' totals
 *   Net PSS:                  +12,288 bytes  (1,000,448 before, 1,012,736 after: per mapping,
 *   no blocks)
 * and there is no column; other diffs say there why PSS is unknown, with a dash, never a 0.
 *
 * The options (report_select.c checks them and lists the blocks): MEMDIFF_REPORT_HUMAN sizes in
 * binary units, MEMDIFF_REPORT_COLOR signed sizes and headings in colour, categories, sort, top
 * ("Blocks (3 of 5, ...)"), and a width every line keeps to (report_fmt.c: a label cut from the
 * left, or moved below with what else does not fit; summary lines wrapped; a wide table
 * continued below). tests/fixtures/reports/text-*.txt show each.
 *
 * Numbers are formatted into stack buffers; the block list and long labels use a scratch
 * arena. Output is deterministic for a diff and its options.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>

#include "internal.h"

const char *memdiff__page_attr_name(unsigned bit)
{
    switch (bit) {
    case MEMDIFF_PAGE_PRESENT:
        return "present";
    case MEMDIFF_PAGE_SWAPPED:
        return "swapped";
    case MEMDIFF_PAGE_PRIVATE:
        return "private";
    case MEMDIFF_PAGE_FILE:
        return "file";
    case MEMDIFF_PAGE_ZERO:
        return "zero";
    case MEMDIFF_PAGE_HUGE:
        return "huge";
    case MEMDIFF_PAGE_SOFT_DIRTY:
        return "soft-dirty";
    case MEMDIFF_PAGE_KSM:
        return "ksm";
    case MEMDIFF_PAGE_DIRTY:
        return "dirty";
    case MEMDIFF_PAGE_ACTIVE:
        return "active";
    case MEMDIFF_PAGE_REFERENCED:
        return "referenced";
    case MEMDIFF_PAGE_ACCESSED:
        return "accessed";
    }
    return NULL;
}

/* ---- formatting --------------------------------------------------------------------------- */

#define NUM_MAX MEMDIFF__NUM_MAX /* "-9,223,372,036,854,775,808 bytes" and more */

/* One report being written: where, how (the checked options), and scratch for long labels. */
typedef struct rt {
    FILE *out;
    unsigned flags;
    int width; /* 0: no limit */
    memdiff__arena *scratch;
    int rc; /* the first failure (MEMDIFF_ENOMEM), else MEMDIFF_OK */
} rt;

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static const char *fmt_num(char buf[NUM_MAX], uint64_t v, char sign)
{
    return memdiff__fmt_count(buf, v, sign);
}

static const char *fmt_signed(char buf[NUM_MAX], int64_t v)
{
    return fmt_num(buf, magnitude(v), v < 0 ? '-' : '+');
}

/* Byte counts as cells: separators, or binary units with MEMDIFF_REPORT_HUMAN. */
static const char *fmt_size(const rt *t, char buf[NUM_MAX], uint64_t v, char sign)
{
    return memdiff__fmt_bytes(buf, v, sign, t->flags);
}

static const char *fmt_size_signed(const rt *t, char buf[NUM_MAX], int64_t v)
{
    return memdiff__fmt_bytes(buf, magnitude(v), v < 0 ? '-' : '+', t->flags);
}

/* "40,960 bytes", or "40.0 KiB". */
static const char *fmt_amount(const rt *t, char buf[NUM_MAX], uint64_t v, char sign)
{
    return memdiff__fmt_amount(buf, v, sign, t->flags);
}

static const char *fmt_amount_signed(const rt *t, char buf[NUM_MAX], int64_t v)
{
    return memdiff__fmt_amount(buf, magnitude(v), v < 0 ? '-' : '+', t->flags);
}

#define APPROX "\xe2\x89\x88" /* U+2248 (almost equal) in UTF-8: 3 bytes, 1 column */
#define DASH "\xe2\x80\x93"   /* U+2013 (en dash): a figure that is not known */

/* Touched bytes, APPROX in front when part of them is an estimate (docs/reference-set.md);
 * amount: with " bytes" after a plain number. */
static const char *fmt_touched(const rt *t, char buf[NUM_MAX], const memdiff_impact *m,
                               int amount)
{
    int est = m->touched_estimated_bytes != 0;
    if (est)
        memcpy(buf, APPROX, 3);
    if (amount)
        fmt_amount(t, buf + 3 * est, m->touched_bytes, 0);
    else
        fmt_size(t, buf + 3 * est, m->touched_bytes, 0);
    return buf;
}

static int text_cols(const char *s)
{
    return memdiff__text_cols(s);
}

/* A cell right-aligned to w columns, coloured by its sign when color. */
static void put_num(const rt *t, const char *cell, int w, int color)
{
    memdiff__put_cell(t->out, t->flags, cell, w, color ? memdiff__sgr_of(cell) : NULL);
}

static void put_head(const rt *t, const char *text, int w)
{
    memdiff__put_cell(t->out, t->flags, text, w, MEMDIFF__SGR_HEAD);
}

static void put_label(rt *t, const char *label, int cols)
{
    int rc = memdiff__put_label(t->out, t->scratch, label, cols);
    if (rc && !t->rc)
        t->rc = rc;
}

/* "present,private", or "-" for none. */
static const char *fmt_attrs(char *buf, size_t size, unsigned attrs)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned bit = 1; bit != 0 && used < size; bit <<= 1) {
        const char *name = (attrs & bit) ? memdiff__page_attr_name(bit) : NULL;
        if (name)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "," : "", name);
    }
    if (!buf[0])
        snprintf(buf, size, "-");
    return buf;
}

/* ---- the report --------------------------------------------------------------------------- */

static void put_header(rt *t, const memdiff_diff *diff)
{
    FILE *out = t->out;
    const memdiff_snapshot_info *b = &diff->info[0], *a = &diff->info[1];
    char head[64], tail[96];
    if (b->pid == a->pid)
        snprintf(head, sizeof head, "memdiff: pid %d", a->pid);
    else
        snprintf(head, sizeof head, "memdiff: pid %d -> %d", b->pid, a->pid);
    if (b->depth == a->depth)
        snprintf(tail, sizeof tail, ", %s depth, %" PRIu32 "-byte pages",
                 memdiff_depth_name(a->depth), a->page_size);
    else
        snprintf(tail, sizeof tail, ", %s depth before, %s after, %" PRIu32 "-byte pages",
                 memdiff_depth_name(b->depth), memdiff_depth_name(a->depth), a->page_size);
    fputs(head, out);
    if (a->host && a->host[0]) {
        /* A forced comparison across hosts names both; host names get what the line leaves,
         * at least 16 columns each. */
        int cross = b->host && b->host[0] && strcmp(b->host, a->host) != 0;
        int room = t->width - (int)strlen(head) - 4 - (int)strlen(tail) - 4 * cross;
        int each = t->width ? MEMDIFF__MAX(16, cross ? room / 2 : room) : 0;
        fputs(" on ", out);
        if (cross) {
            put_label(t, b->host, each);
            fputs(" -> ", out);
        }
        put_label(t, a->host, each);
    }
    fprintf(out, "%s\n  ", tail);
    /* Times are UTC so that a report reads the same wherever it is printed. */
    if (b->time_ns && a->time_ns) {
        fputs("before ", out);
        memdiff__put_time(out, b->time_ns);
        /* Times come from files as any 64-bit value: the difference is taken unsigned, in
         * the direction that does not wrap, and rounded without adding to it. */
        int later = a->time_ns >= b->time_ns;
        uint64_t dt = later ? a->time_ns - b->time_ns : b->time_ns - a->time_ns;
        uint64_t ms = dt / 1000000u + (dt % 1000000u >= 500000u);
        fprintf(out, ", after %c%" PRIu64 ".%03u s\n", later ? '+' : '-', ms / 1000,
                (unsigned)(ms % 1000));
    } else {
        fputs("times unknown\n", out);
    }
    const char *why[2] = {b->degraded, a->degraded};
    int both = why[0] && why[1] && strcmp(why[0], why[1]) == 0;
    for (int i = both; i < 2; i++) {
        if (!why[i])
            continue;
        int rc = memdiff__put_wrapped(out, t->scratch,
                                      both ? "  (before and after: " : i ? "  (after: "
                                                                         : "  (before: ",
                                      why[i], ")\n", 4, t->width);
        if (rc && !t->rc)
            t->rc = rc;
    }
}

/* The rest of a summary line after its figure, which ends at column at: wrapped within the
 * width, the following lines under the text after its opening "  (". */
static void put_rest(rt *t, int at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void put_rest(rt *t, int at, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    int rc = memdiff__put_wrapped_at(t->out, t->scratch, at, buf, "\n", at + 3, t->width);
    if (rc && !t->rc)
        t->rc = rc;
}

/* "Net PSS:" when one of the snapshots does not know PSS: a dash and why. */
static void put_pss_unknown(rt *t, const memdiff_diff *diff, int w)
{
    int known_b = memdiff__knows_pss(&diff->info[0]);
    int known_a = memdiff__knows_pss(&diff->info[1]);
    fprintf(t->out, "%-23s", "Net PSS:");
    memdiff__put_cell(t->out, t->flags, DASH, w, NULL);
    put_rest(t, 23 + w, "  (%s%s)", known_b == known_a ? "" : known_a ? "before: " : "after: ",
             memdiff__pss_unknown(&diff->info[known_a ? 0 : 1]));
}

static void put_summary(rt *t, const memdiff_diff *diff)
{
    FILE *out = t->out;
    const memdiff_totals *tt = &diff->total, *own = &diff->category[MEMDIFF_CAT_OWN];
    uint64_t ps = diff->info[1].page_size ? diff->info[1].page_size : 1;
    char net[NUM_MAX], alloc[NUM_MAX], freed[NUM_MAX], mine[NUM_MAX], pss[NUM_MAX], x[NUM_MAX],
        y[NUM_MAX], z[NUM_MAX];
    fmt_amount_signed(t, net, tt->net_bytes);
    fmt_amount(t, alloc, tt->new_bytes, '+');
    fmt_amount(t, freed, tt->freed_bytes, '-');
    fmt_amount_signed(t, pss, memdiff__sub_sat(tt->new_pss_bytes, tt->freed_pss_bytes));
    /* Own's pages are not read now (docs/categories.md): the change is the allocator's count in
     * the two snapshots; a file that recorded Own pages gives theirs. */
    int64_t own_net = own->new_bytes || own->freed_bytes
                          ? own->net_bytes
                          : memdiff__sub_sat_i64(memdiff__to_figure(diff->info[1].own_bytes),
                                                 memdiff__to_figure(diff->info[0].own_bytes));
    fmt_amount_signed(t, mine, own_net);
    int w = MEMDIFF__MAX(MEMDIFF__MAX(text_cols(net), text_cols(alloc)),
                         MEMDIFF__MAX(text_cols(freed), text_cols(mine)));
    w = MEMDIFF__MAX(w, 16);
    int knows_pss = memdiff__diff_knows_pss(diff);
    if (knows_pss)
        w = MEMDIFF__MAX(w, text_cols(pss));
    int64_t net_pages = tt->net_bytes / (int64_t)ps;
    fprintf(out, "%-23s", "Net change:");
    put_num(t, net, w, 1);
    put_rest(t, 23 + w, "  (%s pages)", fmt_signed(x, net_pages));
    fprintf(out, "%-23s", "Memory allocated:");
    put_num(t, alloc, w, 1);
    put_rest(t, 23 + w, "  (%s pages: %s private, %s shared%s)",
             fmt_num(x, tt->new_bytes / ps, 0), fmt_num(y, tt->new_private_bytes / ps, 0),
             fmt_num(z, tt->new_shared_bytes / ps, 0),
             memdiff__knows_privacy(&diff->info[1]) ? "" : ", estimated");
    fprintf(out, "%-23s", "Memory freed:");
    put_num(t, freed, w, 1);
    char p[NUM_MAX];
    put_rest(t, 23 + w, "  (%s pages: %s unmapped, %s discarded, %s swapped out)",
             fmt_num(x, tt->freed_bytes / ps, 0), fmt_num(y, tt->freed_unmapped_bytes / ps, 0),
             fmt_num(z, tt->freed_discarded_bytes / ps, 0),
             fmt_num(p, tt->freed_swapped_bytes / ps, 0));
    if (knows_pss) {
        fprintf(out, "%-23s", "Net PSS:");
        put_num(t, pss, w, 1);
        put_rest(t, 23 + w, "  (%s gained, %s lost)", fmt_size(t, x, tt->new_pss_bytes, '+'),
                 fmt_size(t, y, tt->freed_pss_bytes, '-'));
    } else if (memdiff__knows_pss(&diff->info[0]) && memdiff__knows_pss(&diff->info[1])) {
        /* PSS per mapping (smaps) on a side: the snapshots' totals; no page, block or category
         * says how it divides. */
        fmt_amount_signed(t, z, memdiff__sub_sat_i64(memdiff__to_figure(diff->info[1].pss_bytes),
                                                     memdiff__to_figure(diff->info[0].pss_bytes)));
        fprintf(out, "%-23s", "Net PSS:");
        put_num(t, z, w, 1);
        put_rest(t, 23 + w, "  (%s before, %s after: per mapping, no blocks)",
                 fmt_size(t, x, diff->info[0].pss_bytes, 0),
                 fmt_size(t, y, diff->info[1].pss_bytes, 0));
    } else {
        put_pss_unknown(t, diff, w);
    }
    if (tt->replaced_bytes || tt->became_private_bytes || tt->became_shared_bytes)
        put_rest(t, 0, "Replaced: %s  Became private: %s  Became shared: %s",
                 fmt_amount(t, x, tt->replaced_bytes, 0),
                 fmt_amount(t, y, tt->became_private_bytes, 0),
                 fmt_amount(t, z, tt->became_shared_bytes, 0));
    fprintf(out, "%-23s", "memdiff's own storage:");
    put_num(t, mine, w, 0);
    put_rest(t, 23 + w, "  (%s after; excluded from all totals)",
             fmt_size(t, x, diff->info[1].own_bytes, 0));
}

/* The reference-set lines of a bracket's diff (see the top of the file). */
static void put_refset(rt *t, const memdiff_diff *diff)
{
    FILE *out = t->out;
    const memdiff_refset_info *in = &diff->refs;
    const memdiff_impact *m = &diff->impact;
    uint64_t ps = diff->info[1].page_size ? diff->info[1].page_size : 1;
    char v[5][NUM_MAX], x[NUM_MAX], y[NUM_MAX];
    int known = (in->sources & MEMDIFF_REFS_CLEARED) &&
                (in->sources & (MEMDIFF_REFS_PAGES | MEMDIFF_REFS_MAPPINGS));
    int peak = (in->sources & MEMDIFF_REFS_PEAK) != 0;
    fmt_touched(t, v[0], m, 1);
    fmt_amount(t, v[1], in->peak_bytes, 0);
    fmt_amount(t, v[2], m->persistent_bytes, 0);
    fmt_amount(t, v[3], m->impacting_bytes, 0);
    fmt_amount(t, v[4], in->transient_bytes, 0);
    int w = 16;
    for (int i = 0; i < 5; i++)
        w = MEMDIFF__MAX(w, text_cols(v[i]));
    fprintf(out, "%-23s", "Touched:");
    if (known) {
        put_num(t, v[0], w, 0);
        char est[2 * NUM_MAX + 40] = "";
        if (m->touched_estimated_bytes)
            snprintf(est, sizeof est, "; %s of it estimated, at most %s",
                     fmt_size(t, y, m->touched_estimated_bytes, 0),
                     fmt_size(t, x, m->touched_max_bytes, 0));
        put_rest(t, 23 + w, "  (%s%s pages accessed, resident before or new%s%s)",
                 m->touched_estimated_bytes ? APPROX : "", fmt_num(x, m->touched_bytes / ps, 0),
                 (in->sources & MEMDIFF_REFS_PAGES) ? "" : "; per mapping", est);
    } else {
        put_num(t, "unknown", w, 0);
        fputc('\n', out);
    }
    fprintf(out, "%-23s", "Peak resident:");
    if (peak) {
        uint64_t above = in->peak_bytes > in->begin_rss_bytes
                             ? in->peak_bytes - in->begin_rss_bytes : 0;
        put_num(t, v[1], w, 0);
        char within[NUM_MAX + 16] = "";
        if (in->peak_slack_bytes)
            snprintf(within, sizeof within, ", within %s",
                     fmt_size(t, y, in->peak_slack_bytes, 0));
        put_rest(t, 23 + w, "  (%s above the start%s)", fmt_size(t, x, above, '+'), within);
    } else {
        put_num(t, "unknown", w, 0);
        fputc('\n', out);
    }
    fprintf(out, "%-23s", "Persistent:");
    put_num(t, v[2], w, 0);
    fputs("  (resident before and after)\n", out);
    fprintf(out, "%-23s", "Impacting:");
    put_num(t, v[3], w, 0);
    fputs("  (new and kept, or freed)\n", out);
    fprintf(out, "%-23s", "Transient:");
    if (peak) {
        put_num(t, v[4], w, 0);
        put_rest(t, 23 + w, "  (the peak above both ends: allocated and freed inside)");
    } else {
        put_num(t, "unknown", w, 0);
        fputc('\n', out);
    }
    if (in->degraded) {
        int rc = memdiff__put_wrapped(out, t->scratch, "  (reference set: ", in->degraded, ")\n",
                                      4, t->width);
        if (rc && !t->rc)
            t->rc = rc;
    }
}

static int totals_empty(const memdiff_totals *t)
{
    return !t->new_bytes && !t->freed_bytes && !t->replaced_bytes && !t->became_private_bytes &&
           !t->became_shared_bytes;
}

/* A category row is left out when nothing of it changed (and, in a bracket's diff, nothing of
 * it was touched or stayed resident). */
static int row_empty(const memdiff_diff *diff, int c)
{
    if (!totals_empty(&diff->category[c]))
        return 0;
    return !diff->bracket || (!diff->impact_category[c].touched_bytes &&
                              !diff->impact_category[c].persistent_bytes);
}

enum { COLS_MAX = MEMDIFF__TABLE_COLS, NET_PSS_COL = 10 };

/* One table row's cells, formatted; *signed_cols: which (as a bit per cell) are signed.
 * m: the row's impact in a bracket's diff, else NULL. */
static int table_cells(const rt *t, const memdiff_totals *tt, const memdiff_impact *m, int wide,
                       int pss, char cells[COLS_MAX][NUM_MAX], unsigned *signed_cols)
{
    int n = 0;
    *signed_cols = 0;
    fmt_size(t, cells[n++], tt->new_bytes, 0);
    fmt_size(t, cells[n++], tt->freed_bytes, 0);
    *signed_cols |= 1u << n;
    fmt_size_signed(t, cells[n++], tt->net_bytes);
    fmt_size(t, cells[n++], tt->new_private_bytes, 0);
    fmt_size(t, cells[n++], tt->new_shared_bytes, 0);
    if (wide) {
        fmt_size(t, cells[n++], tt->replaced_bytes, 0);
        fmt_size(t, cells[n++], tt->became_private_bytes, 0);
        fmt_size(t, cells[n++], tt->became_shared_bytes, 0);
    }
    if (m) {
        fmt_touched(t, cells[n++], m, 0);
        fmt_size(t, cells[n++], m->persistent_bytes, 0);
    }
    if (pss) {
        *signed_cols |= 1u << n;
        fmt_size_signed(t, cells[n++], memdiff__sub_sat(tt->new_pss_bytes, tt->freed_pss_bytes));
    }
    return n;
}

/* The table: a row per category that changed (and that the options list), Own apart, then the
 * total (always the whole process's). */
static void put_table(const rt *t, const memdiff_diff *diff, const memdiff_report_options *o)
{
    static const char *const all_heads[COLS_MAX] = {
        "New", "Freed", "Net", "Private", "Shared", "Replaced", "Became private", "Became shared",
        "Touched", "Persistent", "Net PSS",
    };
    const memdiff_totals *tt = &diff->total;
    int wide = tt->replaced_bytes || tt->became_private_bytes || tt->became_shared_bytes;
    int pss = memdiff__diff_knows_pss(diff);
    memdiff__table tab;
    tab.corner = "Category";
    tab.ncols = tab.nrows = 0;
    for (int i = 0; i < COLS_MAX; i++) {
        if ((i >= 5 && i < 8 && !wide) || (i >= 8 && i < 10 && !diff->bracket) ||
            (i == NET_PSS_COL && !pss))
            continue;
        tab.heads[tab.ncols++] = all_heads[i];
    }
    for (int c = 0; c <= MEMDIFF_CAT_COUNT; c++) {
        if (c < MEMDIFF_CAT_COUNT && (c == MEMDIFF_CAT_OWN || row_empty(diff, c) ||
                                      !memdiff__report_lists(o, (memdiff_category)c)))
            continue;
        const memdiff_totals *row = c < MEMDIFF_CAT_COUNT ? &diff->category[c] : tt;
        const memdiff_impact *m = !diff->bracket            ? NULL
                                  : c < MEMDIFF_CAT_COUNT ? &diff->impact_category[c]
                                                          : &diff->impact;
        tab.names[tab.nrows] =
            c < MEMDIFF_CAT_COUNT ? memdiff_category_name((memdiff_category)c) : "total";
        table_cells(t, row, m, wide, pss, tab.cells[tab.nrows], &tab.signed_cols);
        tab.nrows++;
    }
    memdiff__put_table(t->out, t->flags, t->width, &tab);
}

/* The size shown for a block: the net change when pages came or went, else the bytes whose
 * frames or exclusivity changed (unsigned: nothing was added or taken away). */
static const char *block_size(const rt *t, char buf[NUM_MAX], const memdiff_block *k)
{
    const memdiff_totals *kt = &k->totals;
    if (kt->new_bytes || kt->freed_bytes)
        return fmt_size_signed(t, buf, kt->net_bytes);
    return fmt_size(t, buf,
                    memdiff__add_sat(memdiff__add_sat(kt->replaced_bytes,
                                                      kt->became_private_bytes),
                                     kt->became_shared_bytes),
                    0);
}

static void add_part(char *buf, size_t size, size_t *used, int *parts, const char *part)
{
    if (*used < size)
        *used += (size_t)snprintf(buf + *used, size - *used, "%s%s", *parts ? ", " : " (", part);
    (*parts)++;
}

/* "new (mapped after only)", "freed (discarded, swapped out)", "mixed (new, freed)". */
static const char *block_change(char *buf, size_t size, const memdiff_block *k)
{
    static const char *const names[] = {
        "new", "freed", "replaced", "became private", "became shared", "mixed", "touched",
    };
    const memdiff_totals *t = &k->totals;
    size_t used = (size_t)snprintf(buf, size, "%s", names[k->change]);
    int parts = 0;
    if (k->change == MEMDIFF_CHANGE_FREED) {
        if (t->freed_unmapped_bytes)
            add_part(buf, size, &used, &parts, "unmapped");
        if (t->freed_discarded_bytes)
            add_part(buf, size, &used, &parts, "discarded");
        if (t->freed_swapped_bytes)
            add_part(buf, size, &used, &parts, "swapped out");
    }
    if (k->change == MEMDIFF_CHANGE_MIXED) {
        const uint64_t bytes[] = {t->new_bytes, t->freed_bytes, t->replaced_bytes,
                                  t->became_private_bytes, t->became_shared_bytes};
        for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
            if (bytes[i])
                add_part(buf, size, &used, &parts, names[i]);
        }
    }
    if (k->presence == MEMDIFF_IN_AFTER)
        add_part(buf, size, &used, &parts, "mapped after only");
    else if (k->presence == MEMDIFF_IN_BEFORE && k->change != MEMDIFF_CHANGE_FREED)
        add_part(buf, size, &used, &parts, "mapped before only");
    if (parts && used + 1 < size) {
        buf[used++] = ')';
        buf[used] = '\0';
    }
    return buf;
}

#define CHANGE_MAX 96
#define ATTR_SIDE_MAX 112 /* every attribute name, comma separated */
#define ATTRS_MAX (2 * ATTR_SIDE_MAX + 8)

static const char *block_attrs(char buf[ATTRS_MAX], const memdiff_block *k)
{
    char before[ATTR_SIDE_MAX], after[ATTR_SIDE_MAX];
    snprintf(buf, ATTRS_MAX, "%s -> %s", fmt_attrs(before, sizeof before, k->attrs_before),
             fmt_attrs(after, sizeof after, k->attrs_after));
    return buf;
}

/* A label needs this many columns beside the other fields of its line ("…/libc.so.6" and
 * "thread 12345" fit); with less, or when not even its last path component fits, it goes on a
 * line of its own below them. */
#define LABEL_MIN 12

static void put_blocks(rt *t, const memdiff_diff *diff, const memdiff_block *const *list,
                       size_t n)
{
    FILE *out = t->out;
    int verbose = (diff->flags & MEMDIFF_COMPARE_VERBOSE) != 0;
    const char *unit = verbose ? "contiguous pages with identical attributes"
                               : "by allocation unit";
    char head[160];
    if (n == 0 && diff->block_count == 0)
        snprintf(head, sizeof head, "Blocks: none");
    else if (n < diff->block_count)
        snprintf(head, sizeof head, "Blocks (%zu of %zu, %s)%s", n, diff->block_count, unit,
                 n ? ":" : "");
    else
        snprintf(head, sizeof head, "Blocks (%zu, %s):", n, unit);
    put_head(t, head, 0);
    fputc('\n', out);
    char size[NUM_MAX], change[CHANGE_MAX], attrs[ATTRS_MAX], touched[NUM_MAX];
    int wa = 8, ws = 0, wc = 0, wh = 0, wt = 0, wr = 0;
    for (size_t i = 0; i < n; i++) {
        const memdiff_block *k = list[i];
        wa = memdiff__range_digits(wa, k->end);
        ws = MEMDIFF__MAX(ws, text_cols(block_size(t, size, k)));
        if (diff->bracket)
            wr = MEMDIFF__MAX(wr, text_cols(fmt_touched(t, touched, &k->impact, 0)));
        wc = MEMDIFF__MAX(wc, (int)strlen(memdiff_category_name(k->category)));
        wh = MEMDIFF__MAX(wh, (int)strlen(block_change(change, sizeof change, k)));
        if (verbose)
            wt = MEMDIFF__MAX(wt, (int)strlen(block_attrs(attrs, k)));
    }
    /* Every line has the same fields before its label: the columns stay in place, and the room
     * left for labels is the same for all. Within a width, what does not fit goes on a second
     * line, from the right: the label; in a verbose diff the attributes with it when they leave
     * too little room; the change too when even it does not fit. */
    int base = 2 + 2 * (wa + 2) + 1 + 2 + ws + 2 + (diff->bracket ? 8 + wr + 2 : 0) + wc;
    int change_below = t->width && base + 2 + wh > t->width;
    int attrs_below = verbose && t->width &&
                      (change_below || base + 2 + wh + 2 + wt + 2 + LABEL_MIN > t->width);
    int fixed = base + 2 + wh + (verbose && !attrs_below ? 2 + wt : 0);
    int room = t->width ? t->width - fixed - 2 : 0;
    for (size_t i = 0; i < n; i++) {
        const memdiff_block *k = list[i];
        int labelled = k->label && k->label[0];
        fprintf(out, "  0x%0*" PRIx64 "-0x%0*" PRIx64 "  ", wa, k->start, wa, k->end);
        block_size(t, size, k);
        put_num(t, size, ws, k->totals.new_bytes || k->totals.freed_bytes);
        fputs("  ", out);
        if (diff->bracket) {
            fmt_touched(t, touched, &k->impact, 0);
            fputs("touched ", out);
            put_num(t, touched, wr, 0);
            fputs("  ", out);
        }
        const char *category = memdiff_category_name(k->category);
        block_change(change, sizeof change, k);
        if (change_below || attrs_below) {
            int col = 6;
            if (change_below)
                fprintf(out, "%s\n      %s", category, change);
            else
                fprintf(out, "%-*s  %s\n      ", wc, category, change);
            col += change_below ? (int)strlen(change) : 0;
            if (verbose) {
                fprintf(out, "%s%s", change_below ? "  " : "", block_attrs(attrs, k));
                col += 2 * change_below + (int)strlen(attrs);
            }
            if (labelled) {
                int left = t->width - col - 2;
                if (left < LABEL_MIN || !memdiff__label_fits(t->scratch, k->label, left)) {
                    fputs("\n    ", out);
                    left = t->width - 4;
                } else if (col > 6) {
                    fputs("  ", out);
                }
                put_label(t, k->label, left);
            }
            fputc('\n', out);
            continue;
        }
        fprintf(out, "%-*s  ", wc, category);
        int line_room = room - memdiff__range_extra(wa, k->end);
        int beside = labelled && (!t->width || (line_room >= LABEL_MIN &&
                                                memdiff__label_fits(t->scratch, k->label,
                                                                    line_room)));
        if (verbose)
            fprintf(out, "%-*s  %-*s", wh, change, beside ? wt : 0, block_attrs(attrs, k));
        else
            fprintf(out, "%-*s", beside ? wh : 0, change);
        if (beside) {
            fputs("  ", out);
            put_label(t, k->label, line_room);
        } else if (labelled) {
            fputs("\n    ", out);
            put_label(t, k->label, t->width - 4);
        }
        fputc('\n', out);
    }
}

int memdiff_report_text(const memdiff_diff *diff, FILE *out,
                        const memdiff_report_options *options)
{
    if (!diff || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_report_text: NULL argument");
    memdiff_report_options o;
    int rc = memdiff__report_options(options, "memdiff_report_text", &o);
    if (rc != MEMDIFF_OK)
        return rc;
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    const memdiff_block **list;
    size_t n;
    rc = memdiff__report_diff_blocks(diff, &o, &scratch, &list, &n);
    if (rc != MEMDIFF_OK) {
        memdiff__arena_release(&scratch);
        return memdiff__set_error(rc, "memdiff_report_text: out of memory");
    }
    rt t = {out, o.flags, memdiff__report_width(&o), &scratch, MEMDIFF_OK};
    if (!(o.flags & MEMDIFF_REPORT_NO_HEADER))
        put_header(&t, diff);
    put_summary(&t, diff);
    if (diff->bracket)
        put_refset(&t, diff);
    if (totals_empty(&diff->total) && diff->block_count == 0) {
        fputs("\nNo changed pages.\n", out);
    } else {
        fputc('\n', out);
        put_table(&t, diff, &o);
        if (!(o.flags & MEMDIFF_REPORT_NO_BLOCKS)) {
            fputc('\n', out);
            put_blocks(&t, diff, list, n);
        }
    }
    memdiff__arena_release(&scratch);
    if (t.rc != MEMDIFF_OK)
        return memdiff__set_error(t.rc, "memdiff_report_text: out of memory");
    /* A stream reports write errors late (buffered): flush before asking. */
    if (fflush(out) != 0 || ferror(out))
        return memdiff__set_error(MEMDIFF_EIO, "memdiff_report_text: writing the report failed");
    return MEMDIFF_OK;
}
