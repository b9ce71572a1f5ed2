/*
 * report_text.c - the MemDiff-style text report of a diff, and the small helpers both report
 * writers share (UTF-8 validation, page attribute names).
 *
 * Layout (every number with thousands separators; sizes of changes signed, + new, - freed;
 * tests/fixtures/reports/text*.txt are complete examples):
 *
 *   memdiff: pid 4242 on host, standard depth, 4096-byte pages; before 2026-11-22 10:00:00.123 UTC,
 *   after +0.250 s                       (one line; folded here)
 *     (after: frame numbers unavailable: needs CAP_SYS_ADMIN)
 *   Net change:               +40,960 bytes  (+10 pages)
 *   Memory allocated:         +65,536 bytes  (16 pages: 9 private, 7 shared)
 *   Memory freed:             -24,576 bytes  (6 pages: 3 unmapped, 1 discarded, 2 swapped out)
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
 * MEMDIFF_REPORT_NO_HEADER leaves out the header (first line and degraded notes). The Replaced line
 * appears only when a page was replaced or changed exclusivity, the table's Replaced /
 * Became-private / Became-shared columns likewise. Verbose diffs add the page attributes before
 * and after ("present,private -> -") before the label. Labels come last because they are as
 * long as paths. Labels, host names and degraded notes are escaped (escape.c) so that what a
 * target or a file chose as a name can neither break a line nor drive the terminal. A diff of
 * two snapshots that know PSS (MEMDIFF_SRC_PSS: deep) adds after Memory freed
 *   Net PSS:                  -40,960 bytes  (+0 gained, -40,960 lost)
 * and a Net PSS column (new_pss_bytes - freed_pss_bytes) to the table. Where a side knows PSS
 * per mapping only (MEMDIFF_SRC_PSS_MAPPINGS, smaps) the line is the snapshots' totals
 *   Net PSS:                  +12,288 bytes  (1,000,448 before, 1,012,736 after: per mapping,
 *   no blocks)
 * and there is no column; other diffs have no PSS.
 *
 * No allocation: numbers are formatted into stack buffers; output is deterministic for a diff.
 */
#include <inttypes.h>
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

#define NUM_MAX MEMDIFF__NUM_MAX /* "-9,223,372,036,854,775,808" and more */

/* v with thousands separators; sign: '+' or '-' in front unless v is 0, or 0 for none. */
static const char *fmt_num(char buf[NUM_MAX], uint64_t v, char sign)
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, v);
    char *p = buf;
    if (sign && v)
        *p++ = sign;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            *p++ = ',';
        *p++ = digits[i];
    }
    *p = '\0';
    return buf;
}

const char *memdiff__fmt_count(char buf[MEMDIFF__NUM_MAX], uint64_t v, char sign)
{
    return fmt_num(buf, v, sign);
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static const char *fmt_signed(char buf[NUM_MAX], int64_t v)
{
    return fmt_num(buf, magnitude(v), v < 0 ? '-' : '+');
}

#define APPROX "\xe2\x89\x88" /* U+2248 (almost equal) in UTF-8: 3 bytes, 1 column */

/* Touched bytes, APPROX in front when part of them is an estimate (docs/reference-set.md). */
static const char *fmt_touched(char buf[NUM_MAX], const memdiff_impact *m)
{
    int est = m->touched_estimated_bytes != 0;
    if (est)
        memcpy(buf, APPROX, 3);
    fmt_num(buf + 3 * est, m->touched_bytes, 0);
    return buf;
}

/* The width in bytes that right-aligns s to cols columns: its UTF-8 tail bytes take none. */
static int pad_width(const char *s, int cols)
{
    for (; *s; s++)
        cols += ((unsigned char)*s & 0xC0) == 0x80;
    return cols;
}

/* s's width in columns. */
static int text_cols(const char *s)
{
    return (int)strlen(s) - pad_width(s, 0);
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

/* Civil date from days since 1970-01-01 (Howard Hinnant's algorithm): no gmtime, which is
 * neither thread-safe nor available as gmtime_r everywhere. */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static void put_time(FILE *out, uint64_t ns)
{
    uint64_t secs = ns / 1000000000u;
    int64_t y;
    unsigned mo, d;
    civil_from_days((int64_t)(secs / 86400), &y, &mo, &d);
    unsigned sod = (unsigned)(secs % 86400);
    fprintf(out, "%04" PRId64 "-%02u-%02u %02u:%02u:%02u.%03u UTC", y, mo, d, sod / 3600,
            sod / 60 % 60, sod % 60, (unsigned)(ns / 1000000u % 1000u));
}

/* ---- the report --------------------------------------------------------------------------- */

static void put_header(const memdiff_diff *diff, FILE *out)
{
    const memdiff_snapshot_info *b = &diff->info[0], *a = &diff->info[1];
    fputs("memdiff: ", out);
    if (b->pid == a->pid)
        fprintf(out, "pid %d", a->pid);
    else
        fprintf(out, "pid %d -> %d", b->pid, a->pid);
    if (a->host && a->host[0]) {
        fputs(" on ", out);
        if (b->host && b->host[0] && strcmp(b->host, a->host) != 0) {
            memdiff__put_text(out, b->host); /* a forced comparison across hosts */
            fputs(" -> ", out);
        }
        memdiff__put_text(out, a->host);
    }
    if (b->depth == a->depth)
        fprintf(out, ", %s depth", memdiff_depth_name(a->depth));
    else
        fprintf(out, ", %s depth before, %s after", memdiff_depth_name(b->depth),
                memdiff_depth_name(a->depth));
    fprintf(out, ", %" PRIu32 "-byte pages; ", a->page_size);
    /* Times are UTC so that a report reads the same wherever it is printed. */
    if (b->time_ns && a->time_ns) {
        fputs("before ", out);
        put_time(out, b->time_ns);
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
    if (why[0] && why[1] && strcmp(why[0], why[1]) == 0) {
        fputs("  (before and after: ", out);
        memdiff__put_text(out, why[0]);
        fputs(")\n", out);
        return;
    }
    for (int i = 0; i < 2; i++) {
        if (why[i]) {
            fprintf(out, "  (%s: ", i ? "after" : "before");
            memdiff__put_text(out, why[i]);
            fputs(")\n", out);
        }
    }
}

static void put_summary(const memdiff_diff *diff, FILE *out)
{
    const memdiff_totals *t = &diff->total, *own = &diff->category[MEMDIFF_CAT_OWN];
    uint64_t ps = diff->info[1].page_size ? diff->info[1].page_size : 1;
    char net[NUM_MAX], alloc[NUM_MAX], freed[NUM_MAX], mine[NUM_MAX], x[NUM_MAX], y[NUM_MAX],
        z[NUM_MAX];
    fmt_signed(net, t->net_bytes);
    fmt_num(alloc, t->new_bytes, '+');
    fmt_num(freed, t->freed_bytes, '-');
    /* Own's pages are not read now (docs/categories.md): the change is the allocator's count in
     * the two snapshots; a file that recorded Own pages gives theirs. */
    int64_t own_net = own->new_bytes || own->freed_bytes
                          ? own->net_bytes
                          : memdiff__sub_sat_i64(memdiff__to_figure(diff->info[1].own_bytes),
                                                 memdiff__to_figure(diff->info[0].own_bytes));
    fmt_signed(mine, own_net);
    int w = (int)MEMDIFF__MAX(MEMDIFF__MAX(strlen(net), strlen(alloc)),
                              MEMDIFF__MAX(strlen(freed), strlen(mine)));
    w = MEMDIFF__MAX(w, 10);
    int64_t net_pages = t->net_bytes / (int64_t)ps;
    fprintf(out, "%-23s%*s bytes  (%s pages)\n", "Net change:", w, net, fmt_signed(x, net_pages));
    fprintf(out, "%-23s%*s bytes  (%s pages: %s private, %s shared%s)\n", "Memory allocated:", w,
            alloc, fmt_num(x, t->new_bytes / ps, 0), fmt_num(y, t->new_private_bytes / ps, 0),
            fmt_num(z, t->new_shared_bytes / ps, 0),
            memdiff__knows_privacy(&diff->info[1]) ? "" : ", estimated");
    fprintf(out, "%-23s%*s bytes  (%s pages: %s unmapped, %s discarded, ", "Memory freed:", w,
            freed, fmt_num(x, t->freed_bytes / ps, 0), fmt_num(y, t->freed_unmapped_bytes / ps, 0),
            fmt_num(z, t->freed_discarded_bytes / ps, 0));
    fprintf(out, "%s swapped out)\n", fmt_num(x, t->freed_swapped_bytes / ps, 0));
    if (memdiff__diff_knows_pss(diff)) /* else its PSS is 0: unknown, not shown */
        fprintf(out, "%-23s%*s bytes  (%s gained, %s lost)\n", "Net PSS:", w,
                fmt_signed(z, memdiff__sub_sat(t->new_pss_bytes, t->freed_pss_bytes)),
                fmt_num(x, t->new_pss_bytes, '+'), fmt_num(y, t->freed_pss_bytes, '-'));
    else if (memdiff__knows_pss(&diff->info[0]) && memdiff__knows_pss(&diff->info[1]))
        /* PSS per mapping (smaps) on a side: the snapshots' totals; no page, block or category
         * says how it divides. */
        fprintf(out, "%-23s%*s bytes  (%s before, %s after: per mapping, no blocks)\n",
                "Net PSS:", w,
                fmt_signed(z, memdiff__sub_sat_i64(memdiff__to_figure(diff->info[1].pss_bytes),
                                                   memdiff__to_figure(diff->info[0].pss_bytes))),
                fmt_num(x, diff->info[0].pss_bytes, 0), fmt_num(y, diff->info[1].pss_bytes, 0));
    if (t->replaced_bytes || t->became_private_bytes || t->became_shared_bytes)
        fprintf(out, "Replaced: %s bytes  Became private: %s bytes  Became shared: %s bytes\n",
                fmt_num(x, t->replaced_bytes, 0), fmt_num(y, t->became_private_bytes, 0),
                fmt_num(z, t->became_shared_bytes, 0));
    fprintf(out, "%-23s%*s bytes  (%s after; excluded from all totals)\n",
            "memdiff's own storage:", w, mine, fmt_num(x, diff->info[1].own_bytes, 0));
}

/* The reference-set lines of a bracket's diff (see the top of the file). */
static void put_refset(const memdiff_diff *diff, FILE *out)
{
    const memdiff_refset_info *in = &diff->refs;
    const memdiff_impact *m = &diff->impact;
    uint64_t ps = diff->info[1].page_size ? diff->info[1].page_size : 1;
    char v[5][NUM_MAX], x[NUM_MAX], y[NUM_MAX];
    int known = (in->sources & MEMDIFF_REFS_CLEARED) &&
                (in->sources & (MEMDIFF_REFS_PAGES | MEMDIFF_REFS_MAPPINGS));
    int peak = (in->sources & MEMDIFF_REFS_PEAK) != 0;
    fmt_touched(v[0], m);
    fmt_num(v[1], in->peak_bytes, 0);
    fmt_num(v[2], m->persistent_bytes, 0);
    fmt_num(v[3], m->impacting_bytes, 0);
    fmt_num(v[4], in->transient_bytes, 0);
    int w = 10;
    for (int i = 0; i < 5; i++)
        w = MEMDIFF__MAX(w, text_cols(v[i]));
    if (known) {
        fprintf(out, "%-23s%*s bytes  (%s%s pages accessed, resident before or new%s", "Touched:",
                pad_width(v[0], w), v[0], m->touched_estimated_bytes ? APPROX : "",
                fmt_num(x, m->touched_bytes / ps, 0),
                (in->sources & MEMDIFF_REFS_PAGES) ? "" : "; per mapping");
        if (m->touched_estimated_bytes)
            fprintf(out, "; %s of it estimated, at most %s",
                    fmt_num(y, m->touched_estimated_bytes, 0), fmt_num(x, m->touched_max_bytes, 0));
        fputs(")\n", out);
    } else
        fprintf(out, "%-23s%*s\n", "Touched:", w, "unknown");
    if (peak) {
        uint64_t above = in->peak_bytes > in->begin_rss_bytes
                             ? in->peak_bytes - in->begin_rss_bytes : 0;
        fprintf(out, "%-23s%*s bytes  (%s above the start", "Peak resident:", w, v[1],
                fmt_num(x, above, '+'));
        if (in->peak_slack_bytes)
            fprintf(out, ", within %s", fmt_num(y, in->peak_slack_bytes, 0));
        fputs(")\n", out);
    } else {
        fprintf(out, "%-23s%*s\n", "Peak resident:", w, "unknown");
    }
    fprintf(out, "%-23s%*s bytes  (resident before and after)\n", "Persistent:", w, v[2]);
    fprintf(out, "%-23s%*s bytes  (new and kept, or freed)\n", "Impacting:", w, v[3]);
    if (peak)
        fprintf(out, "%-23s%*s bytes  (the peak above both ends: allocated and freed inside)\n",
                "Transient:", w, v[4]);
    else
        fprintf(out, "%-23s%*s\n", "Transient:", w, "unknown");
    if (in->degraded) {
        fputs("  (reference set: ", out);
        memdiff__put_text(out, in->degraded);
        fputs(")\n", out);
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

enum { COLS_MAX = 11 };

/* One table row's cells, formatted. m: the row's impact in a bracket's diff, else NULL. */
static int table_cells(const memdiff_totals *t, const memdiff_impact *m, int wide, int pss,
                       char cells[COLS_MAX][NUM_MAX])
{
    int n = 0;
    fmt_num(cells[n++], t->new_bytes, 0);
    fmt_num(cells[n++], t->freed_bytes, 0);
    fmt_signed(cells[n++], t->net_bytes);
    fmt_num(cells[n++], t->new_private_bytes, 0);
    fmt_num(cells[n++], t->new_shared_bytes, 0);
    if (wide) {
        fmt_num(cells[n++], t->replaced_bytes, 0);
        fmt_num(cells[n++], t->became_private_bytes, 0);
        fmt_num(cells[n++], t->became_shared_bytes, 0);
    }
    if (m) {
        fmt_touched(cells[n++], m);
        fmt_num(cells[n++], m->persistent_bytes, 0);
    }
    if (pss)
        fmt_signed(cells[n++], memdiff__sub_sat(t->new_pss_bytes, t->freed_pss_bytes));
    return n;
}

static void put_table(const memdiff_diff *diff, FILE *out)
{
    static const char *const all_heads[COLS_MAX] = {
        "New", "Freed", "Net", "Private", "Shared", "Replaced", "Became private", "Became shared",
        "Touched", "Persistent", "Net PSS",
    };
    const memdiff_totals *t = &diff->total;
    int wide = t->replaced_bytes || t->became_private_bytes || t->became_shared_bytes;
    int pss = memdiff__diff_knows_pss(diff);
    char cells[COLS_MAX][NUM_MAX];
    const char *heads[COLS_MAX];
    int width[COLS_MAX];
    int ncols = 0;
    for (int i = 0; i < COLS_MAX; i++) {
        if ((i >= 5 && i < 8 && !wide) || (i >= 8 && i < 10 && !diff->bracket) ||
            (i == 10 && !pss))
            continue;
        heads[ncols] = all_heads[i];
        width[ncols] = (int)strlen(all_heads[i]);
        ncols++;
    }
    /* Two passes: widths from every printed row (the total row is the widest), then rows. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            fprintf(out, "%-12s", "Category");
            for (int i = 0; i < ncols; i++)
                fprintf(out, "  %*s", width[i], heads[i]);
            fputc('\n', out);
        }
        for (int c = 0; c <= MEMDIFF_CAT_COUNT; c++) {
            const memdiff_totals *row = c < MEMDIFF_CAT_COUNT ? &diff->category[c] : t;
            const memdiff_impact *m = !diff->bracket            ? NULL
                                      : c < MEMDIFF_CAT_COUNT ? &diff->impact_category[c]
                                                              : &diff->impact;
            if (c == MEMDIFF_CAT_OWN || (c < MEMDIFF_CAT_COUNT && row_empty(diff, c)))
                continue;
            table_cells(row, m, wide, pss, cells);
            for (int i = 0; i < ncols; i++) {
                if (pass == 0)
                    width[i] = MEMDIFF__MAX(width[i], text_cols(cells[i]));
            }
            if (pass == 0)
                continue;
            fprintf(out, "%-12s",
                    c < MEMDIFF_CAT_COUNT ? memdiff_category_name((memdiff_category)c) : "total");
            for (int i = 0; i < ncols; i++)
                fprintf(out, "  %*s", pad_width(cells[i], width[i]), cells[i]);
            fputc('\n', out);
        }
    }
}

/* The size shown for a block: the net change when pages came or went, else the bytes whose
 * frames or exclusivity changed (unsigned: nothing was added or taken away). */
static const char *block_size(char buf[NUM_MAX], const memdiff_block *k)
{
    const memdiff_totals *t = &k->totals;
    if (t->new_bytes || t->freed_bytes)
        return fmt_signed(buf, t->net_bytes);
    return fmt_num(buf,
                   memdiff__add_sat(memdiff__add_sat(t->replaced_bytes, t->became_private_bytes),
                                    t->became_shared_bytes),
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

static int hex_digits(uint64_t v)
{
    int n = 1;
    while (v >>= 4)
        n++;
    return n;
}

static void put_blocks(const memdiff_diff *diff, const memdiff_block *const *list, size_t n,
                       FILE *out)
{
    int verbose = (diff->flags & MEMDIFF_COMPARE_VERBOSE) != 0;
    if (n == 0) {
        fputs("Blocks: none\n", out);
        return;
    }
    if (n < diff->block_count)
        fprintf(out, "Blocks (%zu of %zu, %s):\n", n, diff->block_count,
                verbose ? "contiguous pages with identical attributes" : "by allocation unit");
    else
        fprintf(out, "Blocks (%zu, %s):\n", n,
                verbose ? "contiguous pages with identical attributes" : "by allocation unit");
    char size[NUM_MAX], change[CHANGE_MAX], attrs[ATTRS_MAX], touched[NUM_MAX];
    int wa = 8, ws = 0, wc = 0, wh = 0, wt = 0, wr = 0;
    for (size_t i = 0; i < n; i++) {
        const memdiff_block *k = list[i];
        wa = MEMDIFF__MAX(wa, hex_digits(k->end));
        ws = MEMDIFF__MAX(ws, (int)strlen(block_size(size, k)));
        if (diff->bracket)
            wr = MEMDIFF__MAX(wr, text_cols(fmt_touched(touched, &k->impact)));
        wc = MEMDIFF__MAX(wc, (int)strlen(memdiff_category_name(k->category)));
        wh = MEMDIFF__MAX(wh, (int)strlen(block_change(change, sizeof change, k)));
        if (verbose)
            wt = MEMDIFF__MAX(wt, (int)strlen(block_attrs(attrs, k)));
    }
    for (size_t i = 0; i < n; i++) {
        const memdiff_block *k = list[i];
        int labelled = k->label && k->label[0];
        fprintf(out, "  0x%0*" PRIx64 "-0x%0*" PRIx64 "  %*s  ", wa, k->start, wa, k->end, ws,
                block_size(size, k));
        if (diff->bracket) {
            fmt_touched(touched, &k->impact);
            fprintf(out, "touched %*s  ", pad_width(touched, wr), touched);
        }
        fprintf(out, "%-*s  ", wc, memdiff_category_name(k->category));
        block_change(change, sizeof change, k);
        if (verbose) {
            fprintf(out, "%-*s  %-*s", wh, change, labelled ? wt : 0, block_attrs(attrs, k));
        } else {
            fprintf(out, "%-*s", labelled ? wh : 0, change);
        }
        if (labelled) {
            fputs("  ", out);
            memdiff__put_text(out, k->label);
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
        return rc;
    }
    if (!(o.flags & MEMDIFF_REPORT_NO_HEADER))
        put_header(diff, out);
    put_summary(diff, out);
    if (diff->bracket)
        put_refset(diff, out);
    if (totals_empty(&diff->total) && diff->block_count == 0) {
        fputs("\nNo changed pages.\n", out);
    } else {
        fputc('\n', out);
        put_table(diff, out);
        if (!(o.flags & MEMDIFF_REPORT_NO_BLOCKS)) {
            fputc('\n', out);
            put_blocks(diff, list, n, out);
        }
    }
    memdiff__arena_release(&scratch);
    /* A stream reports write errors late (buffered): flush before asking. */
    if (fflush(out) != 0 || ferror(out))
        return memdiff__set_error(MEMDIFF_EIO, "memdiff_report_text: writing the report failed");
    return MEMDIFF_OK;
}
