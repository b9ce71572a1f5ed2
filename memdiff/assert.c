/*
 * assert.c - assertions on a diff: figures (a measure over the blocks of a category that a filter
 * keeps), checks of a figure against a bound, of labelled blocks and of leak slopes, and their
 * messages.
 *
 * A failure message is the part of the text report that explains the figure:
 *
 *   memdiff check failed: net bytes in all categories = +266,240, want <= 4,096
 *     filter: image file pages ignored; labels ignored: "libcheck"
 *     blocks, largest first (2 of 2):
 *       +262,144  heap   new  [heap]  0x55d0c8a4d000-0x55d0c8a8e000
 *         +4,096  image  new  /usr/lib/x86_64-linux-gnu/libfoo.so.1  0x7f2bf2e80000-0x7f2bf2e81000
 *     by category: heap +262,144; image +4,096
 *     left out by the filter: 3 blocks, +12,288
 *
 * Lines come in order of importance, because a message that does not fit the caller's buffer is
 * cut after a whole line (with "..." after it): unit-test frameworks cap their messages (Check
 * at 4 KiB by default). Labels are written as the text report writes them (bytes that would
 * break a line as \xNN) and long ones keep their tail, where a path names its file.
 *
 * No allocation: blocks are ranked with a fixed array of MEMDIFF_CHECK_MAX_BLOCKS entries, lines
 * are formatted on the stack.
 *
 * Figures are sums of block counts. memdiff_compare() hands out only diffs whose counts fit an
 * int64_t, so the sums here are exact; they saturate all the same (internal.h), so that no diff
 * can make a check pass on a figure that wrapped around.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* ---- names ------------------------------------------------------------------------------ */

const char *memdiff_measure_name(memdiff_measure measure)
{
    static const char *const names[MEMDIFF_MEASURE_COUNT] = {
        "new", "freed", "net", "new private", "new shared", "net private", "touched", "peak",
        "replaced",
    };
    if ((unsigned)measure >= MEMDIFF_MEASURE_COUNT)
        return "invalid";
    return names[measure];
}

static const char *const cmp_symbols[] = {"<=", "<", "==", "!=", ">=", ">"};
#define CMP_COUNT (sizeof cmp_symbols / sizeof cmp_symbols[0])

const char *memdiff_cmp_symbol(memdiff_cmp cmp)
{
    return (unsigned)cmp < CMP_COUNT ? cmp_symbols[cmp] : "?";
}

int memdiff_cmp_parse(const char *symbol, memdiff_cmp *out)
{
    if (!symbol || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_cmp_parse: NULL argument");
    size_t len = strlen(symbol);
    while (len && (symbol[len - 1] == ' ' || symbol[len - 1] == '\t'))
        len--;
    while (len && (*symbol == ' ' || *symbol == '\t')) {
        symbol++;
        len--;
    }
    for (size_t i = 0; i < CMP_COUNT; i++) {
        if (strlen(cmp_symbols[i]) == len && memcmp(cmp_symbols[i], symbol, len) == 0) {
            *out = (memdiff_cmp)i;
            return MEMDIFF_OK;
        }
    }
    return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_cmp_parse: '%.*s' is not a comparison",
                              (int)(len > 16 ? 16 : len), symbol);
}

/* Whether a comparison holds, given how the figure orders against the bound (<0, 0, >0). */
static int holds(int order, memdiff_cmp cmp)
{
    switch (cmp) {
    case MEMDIFF_CMP_LE:
        return order <= 0;
    case MEMDIFF_CMP_LT:
        return order < 0;
    case MEMDIFF_CMP_EQ:
        return order == 0;
    case MEMDIFF_CMP_NE:
        return order != 0;
    case MEMDIFF_CMP_GE:
        return order >= 0;
    case MEMDIFF_CMP_GT:
        return order > 0;
    }
    return 0;
}

#define ORDER(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

/* ---- figures ---------------------------------------------------------------------------- */

static int64_t measure_of(const memdiff_totals *t, memdiff_measure m)
{
    switch (m) {
    case MEMDIFF_MEASURE_NEW:
        return memdiff__to_figure(t->new_bytes);
    case MEMDIFF_MEASURE_FREED:
        return memdiff__to_figure(t->freed_bytes);
    case MEMDIFF_MEASURE_NET:
        return memdiff__sub_sat(t->new_bytes, t->freed_bytes);
    case MEMDIFF_MEASURE_PRIVATE:
        return memdiff__to_figure(t->new_private_bytes);
    case MEMDIFF_MEASURE_SHARED:
        return memdiff__to_figure(t->new_shared_bytes);
    case MEMDIFF_MEASURE_NET_PRIVATE:
        return memdiff__sub_sat(t->new_private_bytes, t->freed_bytes);
    case MEMDIFF_MEASURE_REPLACED:
        return memdiff__to_figure(t->replaced_bytes);
    case MEMDIFF_MEASURE_TOUCHED:
    case MEMDIFF_MEASURE_PEAK:
    case MEMDIFF_MEASURE_COUNT:
        break;
    }
    return 0;
}

/* Net measures are signed: shown with + or -; the others are sizes. */
static int measure_signed(memdiff_measure m)
{
    return m == MEMDIFF_MEASURE_NET || m == MEMDIFF_MEASURE_NET_PRIVATE;
}

static int figure_in_range(const char *who, const memdiff_filter *filter,
                           memdiff_category category, memdiff_measure measure)
{
    if ((unsigned)category > MEMDIFF_CAT_ALL)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: category %d out of range", who,
                                  (int)category);
    if ((unsigned)measure >= MEMDIFF_MEASURE_COUNT)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: measure %d out of range", who,
                                  (int)measure);
    return memdiff__filter_valid(filter, who);
}

/* Touched and peak are figures of a reference-set bracket's diff (MEMDIFF_BRACKET_REFSET). */
static int refset_measure(memdiff_measure m)
{
    return m == MEMDIFF_MEASURE_TOUCHED || m == MEMDIFF_MEASURE_PEAK;
}

int memdiff__figure_valid(const char *who, const memdiff_filter *filter,
                          memdiff_category category, memdiff_measure measure)
{
    int rc = figure_in_range(who, filter, category, measure);
    if (!rc && refset_measure(measure))
        rc = memdiff__set_error(MEMDIFF_ENOTSUP,
                                "%s: the %s measure needs the diff of a reference-set bracket "
                                "(MEMDIFF_BRACKET_REFSET)",
                                who, memdiff_measure_name(measure));
    return rc;
}

static int valid_figure(const char *who, const memdiff_diff *diff, const memdiff_filter *filter,
                        memdiff_category category, memdiff_measure measure)
{
    if (!diff)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: diff is NULL", who);
    if (!diff->bracket)
        return memdiff__figure_valid(who, filter, category, measure);
    int rc = figure_in_range(who, filter, category, measure);
    if (!rc && measure == MEMDIFF_MEASURE_PEAK && category != MEMDIFF_CAT_ALL)
        rc = memdiff__set_error(MEMDIFF_EINVAL, "%s: the peak is the whole process's: "
                                                "category MEMDIFF_CAT_ALL only", who);
    return rc;
}

/* The figure of block k (totals t: all of it, or what the filter kept; kept: whether the filter
 * keeps it): the measure of the totals, or its touched bytes. A block has no peak. */
static int64_t block_figure(const memdiff_diff *d, const memdiff_block *k,
                            const memdiff_totals *t, int kept, memdiff_measure m)
{
    if (m == MEMDIFF_MEASURE_TOUCHED)
        return kept && d->bracket ? memdiff__to_figure(k->impact.touched_bytes) : 0;
    return measure_of(t, m);
}

/* The peak above the bracket's start, when the bracket knows it. */
static int64_t peak_above_start(const memdiff_diff *d)
{
    const memdiff_refset_info *in = &d->refs;
    if (!(in->sources & MEMDIFF_REFS_PEAK) || in->peak_bytes < in->begin_rss_bytes)
        return 0;
    return memdiff__to_figure(in->peak_bytes - in->begin_rss_bytes);
}

static int in_category(const memdiff_block *k, memdiff_category category)
{
    return category == MEMDIFF_CAT_ALL || k->category == category;
}

static int verbose_diff(const memdiff_diff *d)
{
    return (d->flags & MEMDIFF_COMPARE_VERBOSE) != 0;
}

/* What the filter kept and left out of one category (or all), and how many blocks. */
typedef struct tally {
    int64_t kept, dropped;
    size_t kept_blocks, dropped_blocks;
} tally;

static tally figure_tally(const memdiff_diff *d, const memdiff_filter *f,
                          memdiff_category category, memdiff_measure m)
{
    tally t = {0, 0, 0, 0};
    if (m == MEMDIFF_MEASURE_PEAK) { /* the process's, whatever the category and filter */
        t.kept = d->bracket ? peak_above_start(d) : 0;
        return t;
    }
    if (category == MEMDIFF_CAT_OWN) {
        t.kept = m == MEMDIFF_MEASURE_TOUCHED
                     ? memdiff__to_figure(d->impact_category[MEMDIFF_CAT_OWN].touched_bytes)
                     : measure_of(&d->category[MEMDIFF_CAT_OWN], m);
        return t;
    }
    for (size_t i = 0; i < d->block_count; i++) {
        const memdiff_block *k = &d->blocks[i];
        memdiff_totals kept;
        if (!in_category(k, category))
            continue;
        int keep = memdiff__filter_block(f, k, verbose_diff(d), &kept);
        int64_t all = block_figure(d, k, &k->totals, 1, m), v = block_figure(d, k, &kept, keep, m);
        t.kept = memdiff__add_sat_i64(t.kept, v);
        t.dropped = memdiff__add_sat_i64(t.dropped, memdiff__sub_sat_i64(all, v));
        t.kept_blocks += v != 0;
        t.dropped_blocks += all != v;
    }
    return t;
}

/* The figure a caller named, NULL standing for MEMDIFF_FIGURE_INIT. */
static memdiff_figure figure_or_default(const memdiff_figure *figure)
{
    const memdiff_figure fallback = MEMDIFF_FIGURE_INIT;
    return figure ? *figure : fallback;
}

int memdiff_diff_figure(const memdiff_diff *diff, const memdiff_figure *figure, int64_t *out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_diff_figure: out is NULL");
    *out = 0;
    const memdiff_figure f = figure_or_default(figure);
    int rc = valid_figure("memdiff_diff_figure", diff, f.filter, f.category, f.measure);
    if (rc)
        return rc;
    *out = figure_tally(diff, f.filter, f.category, f.measure).kept;
    return MEMDIFF_OK;
}

#define APPROX "\xe2\x89\x88" /* U+2248 (almost equal) in UTF-8, before an estimate */

/* ---- messages --------------------------------------------------------------------------- */

typedef struct msg {
    char *buf;
    size_t size;
    size_t used;
    int full; /* a line did not fit: nothing more is written */
} msg;

enum { MSG_LINE_MAX = 512, LABEL_SHOWN = 120, LABEL_BUF = 4 * LABEL_SHOWN + 8 };

static const char more_marker[] = "\n...";

static void msg_init(msg *m, char *buf, size_t size)
{
    m->buf = buf;
    m->size = buf ? size : 0;
    m->used = 0;
    m->full = 0;
    if (m->size)
        buf[0] = '\0';
}

/* Ends the message with "..." in place of its last three bytes (a first line cut itself). */
static void mark_cut_line(msg *m)
{
    m->used = MEMDIFF__MIN(m->used, m->size - 1);
    if (m->used >= 3)
        memcpy(m->buf + m->used - 3, "...", 3);
    m->buf[m->used] = '\0';
}

/* Appends one line. A line that does not fit ends the message: whole lines are dropped from its
 * end until more_marker fits after the rest, so that a cut message always says so. */
MEMDIFF__PRINTF(2, 3) static void msg_line(msg *m, const char *fmt, ...)
{
    if (m->full || m->size == 0)
        return;
    char line[MSG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t len = strlen(line), sep = m->used ? 1 : 0, marker = sizeof more_marker - 1;
    if (m->used + sep + len < m->size) {
        if (sep)
            m->buf[m->used++] = '\n';
        memcpy(m->buf + m->used, line, len + 1);
        m->used += len;
        return;
    }
    m->full = 1;
    if (!m->used) {
        memcpy(m->buf, line, m->size - 1);
        m->used = m->size - 1;
        mark_cut_line(m);
        return;
    }
    while (m->used + marker >= m->size) {
        size_t nl = m->used;
        while (nl > 0 && m->buf[nl - 1] != '\n')
            nl--;
        if (nl == 0)
            break; /* the first line is all that is left */
        m->used = nl - 1;
    }
    if (m->used + marker < m->size) {
        memcpy(m->buf + m->used, more_marker, marker + 1);
        m->used += marker;
    } else {
        mark_cut_line(m);
    }
}

/* label on one line, as the text report writes it (escape.c), its tail kept when it is long. */
static const char *shown_label(char out[LABEL_BUF], const char *label)
{
    const char *p = label ? label : "";
    size_t n = strlen(p), o = 0;
    if (n > LABEL_SHOWN) {
        p += n - LABEL_SHOWN;
        while (((unsigned char)*p & 0xC0) == 0x80) /* start at a character */
            p++;
        memcpy(out, "...", 3);
        o = 3;
    }
    memdiff_escape_text(out + o, LABEL_BUF - o, p); /* at most 4 bytes a byte: it fits */
    return out;
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* A figure of measure m: "+4,096" / "-4,096" / "0" for net measures, "4,096" for sizes. */
static const char *fmt_figure(char buf[MEMDIFF__NUM_MAX], int64_t v, memdiff_measure m)
{
    if (measure_signed(m) || v < 0)
        return memdiff__fmt_count(buf, magnitude(v), v < 0 ? '-' : '+');
    return memdiff__fmt_count(buf, (uint64_t)v, 0);
}

/* A bound: "-4,096" or "4,096". */
static const char *fmt_bound(char buf[MEMDIFF__NUM_MAX], int64_t v)
{
    return memdiff__fmt_count(buf, magnitude(v), v < 0 ? '-' : 0);
}

/* A rate with one decimal: "4,112.0", "-0.5". */
static const char *fmt_rate(char buf[MEMDIFF__NUM_MAX + 8], double v)
{
    double a = v < 0 ? -v : v;
    if (!(a < 1e15)) { /* NaN or beyond what tenths in 64 bits hold */
        snprintf(buf, MEMDIFF__NUM_MAX + 8, "%g", v);
        return buf;
    }
    uint64_t tenths = (uint64_t)(a * 10.0 + 0.5);
    char whole[MEMDIFF__NUM_MAX];
    memdiff__fmt_count(whole, tenths / 10, 0);
    snprintf(buf, MEMDIFF__NUM_MAX + 8, "%s%s.%u", v < 0 && tenths ? "-" : "", whole,
             (unsigned)(tenths % 10));
    return buf;
}

static const char *category_text(memdiff_category c)
{
    return c == MEMDIFF_CAT_ALL ? "all categories" : memdiff_category_name(c);
}

static void put_filter(msg *m, const memdiff_filter *f)
{
    if (!f || (!f->ignore_categories && !f->flags && !(f->ignore_labels && *f->ignore_labels)))
        return;
    char line[MSG_LINE_MAX], label[LABEL_BUF];
    size_t o = (size_t)snprintf(line, sizeof line, "  filter:");
    const char *sep = " ";
    if (f->ignore_categories) {
        o += (size_t)snprintf(line + o, sizeof line - o, "%scategories ignored:", sep);
        for (int c = 0; c < MEMDIFF_CAT_COUNT && o < sizeof line; c++) {
            if (f->ignore_categories & MEMDIFF_CAT_BIT(c))
                o += (size_t)snprintf(line + o, sizeof line - o, " %s",
                                      memdiff_category_name((memdiff_category)c));
        }
        sep = "; ";
    }
    if ((f->flags & MEMDIFF_FILTER_IGNORE_IMAGE_FILE) && o < sizeof line) {
        o += (size_t)snprintf(line + o, sizeof line - o, "%simage file pages ignored", sep);
        sep = "; ";
    }
    if (f->ignore_labels && *f->ignore_labels && o < sizeof line) {
        o += (size_t)snprintf(line + o, sizeof line - o, "%slabels ignored:", sep);
        for (const char *const *p = f->ignore_labels; *p && o < sizeof line; p++)
            o += (size_t)snprintf(line + o, sizeof line - o, " \"%s\"", shown_label(label, *p));
    }
    msg_line(m, "%s", line);
}

/* The blocks a message lists: those in the category with the largest |figure| after the filter,
 * or (pattern) those of them whose label matches. */
typedef struct ranking {
    const memdiff_block *blocks[MEMDIFF_CHECK_MAX_BLOCKS];
    int64_t values[MEMDIFF_CHECK_MAX_BLOCKS];
    size_t shown;
    size_t total;       /* blocks with a nonzero figure */
    int64_t rest;       /* the figure of those not shown */
} ranking;

typedef struct selection {
    memdiff_category category;
    memdiff_measure measure;
    const memdiff_filter *filter;
    const char *pattern; /* non-NULL: blocks whose label matches, of those the filter keeps */
    memdiff_match match;
} selection;

static int selected_value(const memdiff_diff *d, const selection *s, const memdiff_block *k,
                          int64_t *v)
{
    memdiff_totals kept;
    if (!in_category(k, s->category))
        return 0;
    if (s->pattern && !memdiff__label_match(k->label ? k->label : "", s->pattern, s->match))
        return 0;
    if (!memdiff__filter_block(s->filter, k, verbose_diff(d), &kept))
        return 0;
    if (s->pattern) {
        *v = block_figure(d, k, &kept, 1, s->measure);
        return 1;
    }
    *v = block_figure(d, k, &kept, 1, s->measure);
    return *v != 0;
}

static void rank(const memdiff_diff *d, const selection *s, ranking *r)
{
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < d->block_count; i++) {
        const memdiff_block *k = &d->blocks[i];
        int64_t v;
        if (!selected_value(d, s, k, &v))
            continue;
        r->total++;
        r->rest = memdiff__add_sat_i64(r->rest, v);
        /* Insert in order of |v|, largest first; blocks come by address, so equal sizes stay in
         * address order. */
        size_t j = r->shown;
        while (j > 0 && magnitude(v) > magnitude(r->values[j - 1]))
            j--;
        if (j == MEMDIFF_CHECK_MAX_BLOCKS)
            continue;
        size_t last = MEMDIFF__MIN(r->shown, (size_t)MEMDIFF_CHECK_MAX_BLOCKS - 1);
        for (size_t t = last; t > j; t--) {
            r->blocks[t] = r->blocks[t - 1];
            r->values[t] = r->values[t - 1];
        }
        r->blocks[j] = k;
        r->values[j] = v;
        if (r->shown < MEMDIFF_CHECK_MAX_BLOCKS)
            r->shown++;
    }
    for (size_t i = 0; i < r->shown; i++)
        r->rest = memdiff__sub_sat_i64(r->rest, r->values[i]);
}

static void put_blocks(msg *m, const memdiff_diff *d, const selection *s, const char *what)
{
    ranking r;
    rank(d, s, &r);
    if (r.total == 0) {
        msg_line(m, "  %s: none", what);
        return;
    }
    msg_line(m, "  %s, largest first (%zu of %zu):", what, r.shown, r.total);
    char num[MEMDIFF__NUM_MAX], label[LABEL_BUF];
    int wv = 0, wc = 0, wh = 0;
    for (size_t i = 0; i < r.shown; i++) {
        const memdiff_block *k = r.blocks[i];
        wv = MEMDIFF__MAX(wv, (int)strlen(fmt_figure(num, r.values[i], s->measure)));
        wc = MEMDIFF__MAX(wc, (int)strlen(memdiff_category_name(k->category)));
        wh = MEMDIFF__MAX(wh, (int)strlen(memdiff_change_name(k->change)));
    }
    for (size_t i = 0; i < r.shown; i++) {
        const memdiff_block *k = r.blocks[i];
        msg_line(m, "    %*s  %-*s  %-*s  %s  0x%llx-0x%llx", wv,
                 fmt_figure(num, r.values[i], s->measure), wc,
                 memdiff_category_name(k->category), wh, memdiff_change_name(k->change),
                 shown_label(label, k->label), (unsigned long long)k->start,
                 (unsigned long long)k->end);
    }
    if (r.total > r.shown)
        msg_line(m, "    ... %zu more blocks: %s", r.total - r.shown,
                 fmt_figure(num, r.rest, s->measure));
}

static void put_by_category(msg *m, const memdiff_diff *d, const selection *s)
{
    char line[MSG_LINE_MAX], num[MEMDIFF__NUM_MAX];
    size_t o = (size_t)snprintf(line, sizeof line, "  by category:");
    int parts = 0;
    for (int c = 0; c < MEMDIFF_CAT_COUNT && o < sizeof line; c++) {
        if (c == MEMDIFF_CAT_OWN)
            continue;
        int64_t v = figure_tally(d, s->filter, (memdiff_category)c, s->measure).kept;
        if (v)
            o += (size_t)snprintf(line + o, sizeof line - o, "%s %s %s", parts++ ? ";" : "",
                                  memdiff_category_name((memdiff_category)c),
                                  fmt_figure(num, v, s->measure));
    }
    if (parts)
        msg_line(m, "%s", line);
}

/* Of a touched figure (blocks: of the blocks s selects, else of s's category and filter, as
 * figure_tally counts it), the part that is an estimate, 0 when it is exact, and the figure's
 * upper bound (docs/reference-set.md). */
static uint64_t touched_estimate(const memdiff_diff *d, const selection *s, int blocks,
                                 uint64_t *bound)
{
    *bound = 0;
    if (s->measure != MEMDIFF_MEASURE_TOUCHED || !d->bracket)
        return 0;
    const memdiff_impact *whole =
        s->category == MEMDIFF_CAT_ALL ? &d->impact : &d->impact_category[s->category];
    uint64_t est = whole->touched_estimated_bytes, max = whole->touched_max_bytes;
    if (s->category != MEMDIFF_CAT_OWN) {
        int64_t v;
        uint64_t e = 0, x = 0;
        int all = !blocks;
        for (size_t i = 0; i < d->block_count; i++) {
            const memdiff_block *k = &d->blocks[i];
            memdiff_totals kept;
            if (blocks ? !selected_value(d, s, k, &v)
                       : !in_category(k, s->category) ||
                             !memdiff__filter_block(s->filter, k, verbose_diff(d), &kept)) {
                all = all && (!in_category(k, s->category) || !k->impact.touched_bytes);
                continue;
            }
            e = memdiff__add_sat(e, k->impact.touched_estimated_bytes);
            x = memdiff__add_sat(x, k->impact.touched_max_bytes);
        }
        est = e;
        max = all ? MEMDIFF__MIN(x, max) : x; /* the category's bound is capped: when whole */
    }
    *bound = max;
    return est;
}

/* The line after the first when a touched figure is an estimate. */
static void put_estimate(msg *m, uint64_t est, uint64_t bound)
{
    char e[MEMDIFF__NUM_MAX], x[MEMDIFF__NUM_MAX];
    if (est)
        msg_line(m, "  estimated: %s of these bytes were divided out of mappings that several "
                    "blocks share (touched per mapping); the touched bytes are at most %s",
                 memdiff__fmt_count(e, est, 0), memdiff__fmt_count(x, bound, 0));
}

/* The lines after the first of a failed check's message: what makes up the figure. */
static void put_detail(msg *m, const memdiff_diff *d, const selection *s)
{
    char num[MEMDIFF__NUM_MAX];
    put_filter(m, s->filter);
    if (s->category == MEMDIFF_CAT_OWN) {
        msg_line(m, "  (memdiff's own storage has no blocks)");
        return;
    }
    put_blocks(m, d, s, "blocks");
    if (s->category == MEMDIFF_CAT_ALL)
        put_by_category(m, d, s);
    tally t = figure_tally(d, s->filter, s->category, s->measure);
    if (t.dropped_blocks)
        msg_line(m, "  left out by the filter: %zu blocks, %s", t.dropped_blocks,
                 fmt_figure(num, t.dropped, s->measure));
}

static int error_message(msg *m, int rc)
{
    msg_line(m, "memdiff check error: %s: %s", memdiff_status_name(rc), memdiff_last_error());
    return rc;
}

/* ---- checks ----------------------------------------------------------------------------- */

int memdiff_check(const memdiff_diff *diff, const memdiff_figure *figure, memdiff_cmp cmp,
                  int64_t bound, char *msg_buf, size_t msg_size)
{
    msg m;
    msg_init(&m, msg_buf, msg_size);
    const memdiff_figure f = figure_or_default(figure);
    const memdiff_filter *filter = f.filter;
    const memdiff_category category = f.category;
    const memdiff_measure measure = f.measure;
    int rc = valid_figure("memdiff_check", diff, filter, category, measure);
    if (!rc && (unsigned)cmp >= CMP_COUNT)
        rc = memdiff__set_error(MEMDIFF_EINVAL, "memdiff_check: comparison %d out of range",
                                (int)cmp);
    if (rc)
        return error_message(&m, rc);
    int64_t v = figure_tally(diff, filter, category, measure).kept;
    int ok = holds(ORDER(v, bound), cmp);
    char num[MEMDIFF__NUM_MAX], lim[MEMDIFF__NUM_MAX];
    selection s = {category, measure, filter, NULL, MEMDIFF_MATCH_EXACT};
    uint64_t most, est = touched_estimate(diff, &s, 0, &most);
    msg_line(&m, "memdiff check %s: %s bytes in %s = %s%s, want %s %s", ok ? "holds" : "failed",
             memdiff_measure_name(measure), category_text(category), est ? APPROX : "",
             fmt_figure(num, v, measure), memdiff_cmp_symbol(cmp), fmt_bound(lim, bound));
    put_estimate(&m, est, most);
    if (!ok)
        put_detail(&m, diff, &s);
    return ok;
}

static const char *match_text(memdiff_match match)
{
    switch (match) {
    case MEMDIFF_MATCH_EXACT:
        return "is";
    case MEMDIFF_MATCH_PREFIX:
        return "starts with";
    case MEMDIFF_MATCH_SUFFIX:
        return "ends with";
    case MEMDIFF_MATCH_SUBSTRING:
        return "contains";
    }
    return "?";
}

int memdiff_check_label(const memdiff_diff *diff, const memdiff_figure *figure,
                        const char *pattern, memdiff_match match, int64_t min_bytes,
                        char *msg_buf, size_t msg_size)
{
    msg m;
    msg_init(&m, msg_buf, msg_size);
    const memdiff_figure f = figure_or_default(figure);
    const memdiff_category category = f.category;
    const memdiff_measure measure = f.measure;
    int rc = valid_figure("memdiff_check_label", diff, f.filter, category, measure);
    if (!rc && !pattern)
        rc = memdiff__set_error(MEMDIFF_EINVAL, "memdiff_check_label: pattern is NULL");
    if (!rc && (unsigned)match > MEMDIFF_MATCH_SUBSTRING)
        rc = memdiff__set_error(MEMDIFF_EINVAL, "memdiff_check_label: match %d out of range",
                                (int)match);
    if (rc)
        return error_message(&m, rc);
    selection s = {category, measure, f.filter, pattern, match};
    size_t found = 0;
    int64_t sum = 0, v;
    for (size_t i = 0; i < diff->block_count; i++) {
        if (selected_value(diff, &s, &diff->blocks[i], &v)) {
            found++;
            sum = memdiff__add_sat_i64(sum, v);
        }
    }
    int ok = found > 0 && sum >= min_bytes;
    char num[MEMDIFF__NUM_MAX], lim[MEMDIFF__NUM_MAX], label[LABEL_BUF];
    shown_label(label, pattern);
    if (!found) {
        msg_line(&m, "memdiff check failed: no block in %s has a label that %s \"%s\"",
                 category_text(category), match_text(match), label);
        put_filter(&m, f.filter);
        s.pattern = NULL; /* show what is there instead */
        put_blocks(&m, diff, &s, "blocks there");
        return 0;
    }
    uint64_t most, est = touched_estimate(diff, &s, 1, &most);
    msg_line(&m, "memdiff check %s: %s bytes in the %zu block%s of %s whose label %s \"%s\" = "
                 "%s%s, want >= %s",
             ok ? "holds" : "failed", memdiff_measure_name(measure), found, found == 1 ? "" : "s",
             category_text(category), match_text(match), label, est ? APPROX : "",
             fmt_figure(num, sum, measure), fmt_bound(lim, min_bytes));
    put_estimate(&m, est, most);
    if (!ok) {
        put_filter(&m, f.filter);
        put_blocks(&m, diff, &s, "those blocks");
    }
    return ok;
}

int memdiff_check_slope(const memdiff_slope *slope, const memdiff_diff *diff, memdiff_cmp cmp,
                        int64_t bound, char *msg_buf, size_t msg_size)
{
    msg m;
    msg_init(&m, msg_buf, msg_size);
    int rc = MEMDIFF_OK;
    if (!slope)
        rc = memdiff__set_error(MEMDIFF_EINVAL, "memdiff_check_slope: slope is NULL");
    else if ((unsigned)cmp >= CMP_COUNT)
        rc = memdiff__set_error(MEMDIFF_EINVAL, "memdiff_check_slope: comparison %d out of range",
                                (int)cmp);
    else if (diff)
        rc = valid_figure("memdiff_check_slope", diff, slope->figure.filter,
                          slope->figure.category, slope->figure.measure);
    if (rc)
        return error_message(&m, rc);
    double v = slope->bytes_per_iteration;
    int ok = holds(ORDER(v, (double)bound), cmp);
    char rate[MEMDIFF__NUM_MAX + 8], ends[MEMDIFF__NUM_MAX + 8], lim[MEMDIFF__NUM_MAX],
        first[MEMDIFF__NUM_MAX], last[MEMDIFF__NUM_MAX];
    msg_line(&m, "memdiff check %s: %s bytes in %s grow by %s bytes per call, want %s %s",
             ok ? "holds" : "failed", memdiff_measure_name(slope->figure.measure),
             category_text(slope->figure.category), fmt_rate(rate, v), memdiff_cmp_symbol(cmp),
             fmt_bound(lim, bound));
    if (ok)
        return 1;
    msg_line(&m, "  %u calls measured (%u before them to warm up), %u samples: first %s, last %s "
                 "(%s per call between them)",
             slope->iterations, slope->warmup, slope->samples,
             fmt_figure(first, slope->first, slope->figure.measure),
             fmt_figure(last, slope->last, slope->figure.measure),
             fmt_rate(ends, slope->endpoint_slope));
    if (diff) {
        selection s = {slope->figure.category, slope->figure.measure, slope->figure.filter, NULL,
                       MEMDIFF_MATCH_EXACT};
        put_detail(&m, diff, &s);
    }
    return 0;
}
