/*
 * report_system_text.c - the text reports of a system snapshot (memdiff system, memdiff show of
 * a system file) and of a system diff (memdiff diff of two system files), docs/cli.md:
 *
 *   memdiff system: vm, taken 2026-11-26 16:00:00.123 UTC in 0.710 s
 *     50 processes: 45 read, 1 unreadable, 4 exited; 57 kernel threads; 4096-byte pages
 *   Sources: pagemap map-counts physical meminfo
 *
 *   Processes (2 of 45 read, by pss):
 *       PID  UID        RSS        PSS        USS  SWAP       ANON     FILE  SHMEM  NAME
 *     14105    0    1.0 GiB    1.0 GiB    1.0 GiB   0 B    1.0 GiB  1.4 MiB    0 B  target
 *   Sum of the 45 read: RSS 4.3 GiB, PSS 4.2 GiB, USS 4.2 GiB, SWAP 0 B
 *   Unreadable: 1 process (permission denied 1): pid 1 (init)
 *
 *   Physical memory (6,553,600 frames): rows by kind, columns by owner
 *   Kind            process      shared     unread   unmapped     kernel     free      total
 *   anon            4.1 GiB     2.9 MiB    3.8 MiB  140.0 KiB        0 B      0 B    4.1 GiB
 *   ...
 *   Against the kernel's own figures (/proc/meminfo): table, kernel, bound, agree
 *
 * The split (ANON, FILE, SHMEM) where the width leaves room for it; names last, whole.
 * A figure the kernel did not count exactly (memdiff_sysproc.exact) is shown with "~" in front,
 * an unknown one (not exact, 0) as a dash: an estimate never reads as a count.
 */
#include <inttypes.h>
#include <string.h>

#include "internal.h"

#define NUM_MAX MEMDIFF__NUM_MAX
#define DASH "\xe2\x80\x93" /* U+2013 (en dash): a figure that is not known */

typedef struct st {
    FILE *out;
    unsigned flags;
    int width; /* 0: no limit */
    memdiff__arena *scratch;
    int rc;
} st;

static void keep_rc(st *t, int rc)
{
    if (rc && !t->rc)
        t->rc = rc;
}

/* ---- the header -------------------------------------------------------------------------- */

static void put_seconds(FILE *out, uint64_t ns)
{
    fprintf(out, "%" PRIu64 ".%03u s", ns / 1000000000u, (unsigned)(ns / 1000000u % 1000u));
}

static void put_header(st *t, const char *what, const memdiff_system_info *i)
{
    FILE *out = t->out;
    fprintf(out, "memdiff %s: ", what);
    keep_rc(t, memdiff__put_label(out, t->scratch, i->host,
                                  t->width ? MEMDIFF__MAX(16, t->width - 40) : 0));
    if (i->time_ns) {
        fputs(", taken ", out);
        memdiff__put_time(out, i->time_ns);
    } else {
        fputs(", time unknown", out);
    }
    fputs(" in ", out);
    put_seconds(out, i->duration_ns);
    fprintf(out, "\n  %zu processes: %zu read, %zu unreadable, %zu exited; %zu kernel threads; "
                 "%" PRIu32 "-byte pages\n",
            i->processes, i->processes_read, i->processes_unreadable, i->processes_exited,
            i->kernel_threads, i->page_size);
    if (i->hidden)
        keep_rc(t, memdiff__put_wrapped(out, t->scratch, "Hidden: ", i->hidden, "\n", 4,
                                        t->width));
    char names[96];
    memdiff__bit_names(names, sizeof names, i->sources, memdiff__sys_source_name);
    keep_rc(t, memdiff__put_wrapped(out, t->scratch, "Sources: ", names[0] ? names : "none", "\n",
                                    2, t->width));
}

/* ---- the processes ----------------------------------------------------------------------- */

enum { C_PID, C_UID, C_RSS, C_PSS, C_USS, C_SWAP, C_ANON, C_FILE, C_SHMEM, NCOLS };

static const char *const heads[NCOLS] = {"PID", "UID", "RSS", "PSS", "USS",
                                         "SWAP", "ANON", "FILE", "SHMEM"};

/* The exact bit each figure column needs. */
static const unsigned exact_bit[NCOLS] = {
    0, 0, MEMDIFF_SYSPROC_EXACT_RSS, MEMDIFF_SYSPROC_EXACT_PSS, MEMDIFF_SYSPROC_EXACT_USS,
    MEMDIFF_SYSPROC_EXACT_SWAP, MEMDIFF_SYSPROC_EXACT_ANON, MEMDIFF_SYSPROC_EXACT_SPLIT,
    MEMDIFF_SYSPROC_EXACT_SPLIT,
};

/* One row: the change in front (a diff), then the cells of the columns, the name last. */
typedef struct row {
    const char *change;
    const char *name;
    char cells[NCOLS][NUM_MAX + 2];
} row;

static void figures_of(const memdiff_sysproc *p, uint64_t v[NCOLS])
{
    v[C_RSS] = p->rss_bytes;
    v[C_PSS] = p->pss_bytes;
    v[C_USS] = p->uss_bytes;
    v[C_SWAP] = p->swap_bytes;
    v[C_ANON] = p->rss_anon_bytes;
    v[C_FILE] = p->rss_file_bytes;
    v[C_SHMEM] = p->rss_shmem_bytes;
}

/* A figure of p: a count, "~" and an estimate, or a dash (not exact and 0: unknown). */
static void fill_figure(char *cell, uint64_t v, unsigned exact, int col, unsigned flags)
{
    char num[NUM_MAX];
    memdiff__fmt_bytes(num, v, 0, flags);
    if (exact & exact_bit[col])
        snprintf(cell, NUM_MAX + 2, "%s", num);
    else if (v)
        snprintf(cell, NUM_MAX + 2, "~%s", num);
    else
        snprintf(cell, NUM_MAX + 2, "%s", DASH);
}

static void fill_ids(row *r, const memdiff_sysproc *p)
{
    snprintf(r->cells[C_PID], sizeof r->cells[C_PID], "%d", p->pid);
    snprintf(r->cells[C_UID], sizeof r->cells[C_UID], "%" PRIu32, p->uid);
    r->name = p->name;
}

/* The table: ncols columns (the split left out when it does not fit the width), a change
 * column first when rows have one, the name last, left-aligned and cut to the line. */
static void put_rows(st *t, const row *rows, size_t n, int with_change, int signed_figures)
{
    int w[NCOLS], wc = with_change ? 7 : 0;
    for (int c = 0; c < NCOLS; c++) {
        w[c] = (int)strlen(heads[c]);
        for (size_t i = 0; i < n; i++)
            w[c] = MEMDIFF__MAX(w[c], memdiff__text_cols(rows[i].cells[c]));
    }
    int ncols = NCOLS, used = 2 + (wc ? wc + 2 : 0) + 4 + 2 /* NAME and its space */;
    for (int c = 0; c < NCOLS; c++)
        used += w[c] + 2;
    if (t->width && used + 8 > t->width)
        ncols = C_ANON; /* the split: where it fits */
    fputs("  ", t->out);
    if (wc)
        fprintf(t->out, "%-*s  ", wc, "CHANGE");
    for (int c = 0; c < ncols; c++) {
        memdiff__put_cell(t->out, t->flags, heads[c], w[c], MEMDIFF__SGR_HEAD);
        fputs("  ", t->out);
    }
    memdiff__put_cell(t->out, t->flags, "NAME", -4, MEMDIFF__SGR_HEAD);
    fputc('\n', t->out);
    for (size_t i = 0; i < n; i++) {
        fputs("  ", t->out);
        if (wc)
            fprintf(t->out, "%-*s  ", wc, rows[i].change);
        for (int c = 0; c < ncols; c++) {
            const char *cell = rows[i].cells[c];
            memdiff__put_cell(t->out, t->flags, cell, w[c],
                              signed_figures && c >= C_RSS ? memdiff__sgr_of(cell) : NULL);
            fputs("  ", t->out);
        }
        /* Already escaped by the snapshot (memdiff_sysproc.name): printable as it is. */
        fputs(rows[i].name, t->out);
        fputc('\n', t->out);
    }
}

/* ---- unreadable processes, by reason --------------------------------------------------- */

#define NAMED_MAX 8 /* unreadable processes named one by one; the rest counted */

static void put_unreadable(st *t, const memdiff_system *s, const memdiff_system_info *i)
{
    if (!i->processes_unreadable)
        return;
    /* Reasons are statuses: a few kinds at most (permission, hidden fields). */
    int status[8];
    size_t count[8], nstatus = 0, named = 0;
    for (size_t k = 0; k < i->processes; k++) {
        memdiff_sysproc p;
        if (memdiff_system_process(s, k, &p) != MEMDIFF_OK ||
            p.state != MEMDIFF_SYSPROC_UNREADABLE)
            continue;
        size_t j = 0;
        while (j < nstatus && status[j] != p.error)
            j++;
        if (j == nstatus && nstatus < 8) {
            status[nstatus] = p.error;
            count[nstatus++] = 0;
        }
        if (j < nstatus)
            count[j]++;
    }
    /* "Unreadable: 70 processes (permission denied 70): pid 1 (systemd), ..." wrapped to the
     * width; names come escaped (memdiff_sysproc.name), printable as they are. */
    int at = fprintf(t->out, "Unreadable: %zu process%s (", i->processes_unreadable,
                     i->processes_unreadable == 1 ? "" : "es");
    for (size_t j = 0; j < nstatus; j++)
        at += fprintf(t->out, "%s%s %zu", j ? ", " : "", memdiff_strerror(status[j]), count[j]);
    at += fprintf(t->out, "):");
    for (size_t k = 0; k < i->processes && named < NAMED_MAX; k++) {
        memdiff_sysproc p;
        if (memdiff_system_process(s, k, &p) != MEMDIFF_OK ||
            p.state != MEMDIFF_SYSPROC_UNREADABLE)
            continue;
        char item[96];
        int len = snprintf(item, sizeof item, " pid %d (%.60s)%s", p.pid, p.name,
                           named + 1 < i->processes_unreadable ? "," : "");
        if (t->width && at + len > t->width) {
            fputs("\n   ", t->out);
            at = 3;
        }
        fputs(item, t->out);
        at += len;
        named++;
    }
    if (i->processes_unreadable > named)
        fprintf(t->out, "%s and %zu more", t->width && at + 16 > t->width ? "\n   " : "",
                i->processes_unreadable - named);
    fputc('\n', t->out);
}

/* ---- the physical table ------------------------------------------------------------------ */

/* owner columns, then total; kind rows (those with frames), then total. get(kind, owner) is the
 * figure, ALL for a sum. */
typedef int (*phys_get)(const void *src, memdiff_frame_kind kind, memdiff_frame_owner owner,
                        int64_t *v);

static int get_snapshot(const void *src, memdiff_frame_kind kind, memdiff_frame_owner owner,
                        int64_t *v)
{
    uint64_t b = 0;
    int rc = memdiff_system_phys_bytes(src, kind, owner, &b);
    *v = (int64_t)MEMDIFF__MIN(b, (uint64_t)INT64_MAX);
    return rc;
}

static void put_phys_table(st *t, const void *src, phys_get get, char sign)
{
    memdiff__table tab;
    memset(&tab, 0, sizeof tab);
    tab.corner = "Kind";
    tab.ncols = MEMDIFF_OWNER_COUNT + 1;
    for (int o = 0; o < MEMDIFF_OWNER_COUNT; o++)
        tab.heads[o] = memdiff_frame_owner_name((memdiff_frame_owner)o);
    tab.heads[MEMDIFF_OWNER_COUNT] = "total";
    tab.signed_cols = sign ? ~0u : 0u;
    for (int k = 0; k <= MEMDIFF_FRAME_KIND_COUNT; k++) {
        int64_t all = 0;
        if (get(src, (memdiff_frame_kind)k, MEMDIFF_OWNER_ALL, &all) != MEMDIFF_OK)
            continue;
        if (all == 0 && k < MEMDIFF_FRAME_KIND_COUNT) {
            /* A kind with no frames (a change: none moved) is left out: 16 rows of zeros
             * hide the few that matter. */
            int any = 0;
            for (int o = 0; o < MEMDIFF_OWNER_COUNT && !any; o++) {
                int64_t v = 0;
                any = get(src, (memdiff_frame_kind)k, (memdiff_frame_owner)o, &v) ==
                          MEMDIFF_OK &&
                      v != 0;
            }
            if (!any)
                continue;
        }
        int r = tab.nrows++;
        tab.names[r] = k < MEMDIFF_FRAME_KIND_COUNT
                           ? memdiff_frame_kind_name((memdiff_frame_kind)k)
                           : "total";
        for (int o = 0; o <= MEMDIFF_OWNER_COUNT; o++) {
            int64_t v = 0;
            if (get(src, (memdiff_frame_kind)k, (memdiff_frame_owner)o, &v) != MEMDIFF_OK)
                v = 0;
            memdiff__fmt_bytes(tab.cells[r][o], (uint64_t)(v < 0 ? -(uint64_t)v : (uint64_t)v),
                               sign ? (v < 0 ? '-' : '+') : 0, t->flags);
        }
    }
    memdiff__put_table(t->out, t->flags, t->width, &tab);
}

static void put_reconcile(st *t, const memdiff_system *s)
{
    size_t n = memdiff_system_reconcile_count(s);
    if (!n)
        return;
    fputs("\nAgainst the kernel's own figures (/proc/meminfo):\n", t->out);
    memdiff__table tab;
    memset(&tab, 0, sizeof tab);
    tab.corner = "Figure";
    tab.ncols = 4;
    tab.heads[0] = "table";
    tab.heads[1] = "kernel";
    tab.heads[2] = "bound";
    tab.heads[3] = "agree";
    for (size_t k = 0; k < n && tab.nrows < MEMDIFF__TABLE_ROWS; k++) {
        memdiff_reconcile r;
        if (memdiff_system_reconcile(s, k, &r) != MEMDIFF_OK)
            continue;
        int i = tab.nrows++;
        tab.names[i] = r.name;
        memdiff__fmt_bytes(tab.cells[i][0], r.table_bytes, 0, t->flags);
        memdiff__fmt_bytes(tab.cells[i][1], r.kernel_bytes, 0, t->flags);
        memdiff__fmt_bytes(tab.cells[i][2], r.bound_bytes, 0, t->flags);
        snprintf(tab.cells[i][3], NUM_MAX, "%s", r.within ? "yes" : "NO");
    }
    memdiff__put_table(t->out, t->flags, t->width, &tab);
}

/* ---- a system snapshot ------------------------------------------------------------------- */

/* A row for each process to list, in r's scratch; NULL (r released, error set) when out of
 * memory. */
static row *alloc_rows(memdiff__sys_report *r, const char *who)
{
    row *rows = memdiff__arena_alloc(&r->scratch, (r->n ? r->n : 1) * sizeof *rows);
    if (!rows) {
        memdiff__arena_release(&r->scratch);
        memdiff__set_error(MEMDIFF_ENOMEM, "%s: out of memory", who);
    }
    return rows;
}

static int report_width(const memdiff_system_report_options *o)
{
    return o->width ? (int)MEMDIFF__MAX(o->width, (unsigned)MEMDIFF__WIDTH_MIN) : 0;
}

static const char *sort_word(memdiff_system_sort sort)
{
    return sort == MEMDIFF_SYSTEM_SORT_PID ? "pid" : memdiff_system_sort_name(sort);
}

static int finish(st *t, const char *who)
{
    if (t->rc != MEMDIFF_OK)
        return memdiff__set_error(t->rc, "%s: out of memory", who);
    if (fflush(t->out) != 0 || ferror(t->out))
        return memdiff__set_error(MEMDIFF_EIO, "%s: writing the report failed", who);
    return MEMDIFF_OK;
}

int memdiff_system_report_text(const memdiff_system *system, FILE *out,
                               const memdiff_system_report_options *options)
{
    static const char who[] = "memdiff_system_report_text";
    memdiff__sys_report r;
    int rc = memdiff__sys_report_begin(&r, system, NULL, out, options, 0, who);
    if (rc != MEMDIFF_OK)
        return rc;
    const memdiff_system_report_options o = r.o;
    const memdiff_system_info i = r.info[0];
    const size_t *list = r.list, n = r.n;
    row *rows = alloc_rows(&r, who);
    if (!rows)
        return MEMDIFF_ENOMEM;
    st t = {out, o.flags, report_width(&o), &r.scratch, MEMDIFF_OK};
    if (!(o.flags & MEMDIFF_REPORT_NO_HEADER))
        put_header(&t, "system", &i);
    for (size_t k = 0; k < n; k++) {
        memdiff_sysproc p;
        uint64_t v[NCOLS];
        memdiff_system_process(system, list[k], &p);
        fill_ids(&rows[k], &p);
        rows[k].change = "";
        figures_of(&p, v);
        for (int c = C_RSS; c < NCOLS; c++)
            fill_figure(rows[k].cells[c], v[c], p.exact, c, o.flags);
    }
    fprintf(out, "\nProcesses (%zu of %zu read, by %s):\n", n, i.processes_read,
            sort_word(o.sort));
    put_rows(&t, rows, n, 0, 0);
    /* The sums of every process read, whatever the selection shows. */
    uint64_t sum[NCOLS] = {0};
    unsigned exact = ~0u;
    for (size_t k = 0; k < i.processes; k++) {
        memdiff_sysproc p;
        uint64_t v[NCOLS];
        if (memdiff_system_process(system, k, &p) != MEMDIFF_OK ||
            p.state != MEMDIFF_SYSPROC_READ)
            continue;
        figures_of(&p, v);
        for (int c = C_RSS; c < NCOLS; c++)
            sum[c] = memdiff__add_sat(sum[c], v[c]);
        exact &= p.exact;
    }
    fprintf(out, "Sum of the %zu read:", i.processes_read);
    for (int c = C_RSS; c <= C_SWAP; c++) {
        char cell[NUM_MAX + 2];
        fill_figure(cell, sum[c], exact, c, o.flags);
        fprintf(out, "%s %s %s", c == C_RSS ? "" : ",", heads[c], cell);
    }
    fputs(o.flags & MEMDIFF_REPORT_HUMAN ? "\n" : " bytes\n", out);
    put_unreadable(&t, system, &i);
    if (!(o.flags & MEMDIFF_REPORT_NO_BLOCKS)) {
        if (memdiff_system_phys_count(system)) {
            char frames[NUM_MAX];
            fprintf(out, "\nPhysical memory (%s frames): rows by kind, columns by owner\n",
                    memdiff__fmt_count(frames, i.phys_frames, 0));
            put_phys_table(&t, system, get_snapshot, 0);
            if (i.phys_conflict_frames)
                fprintf(out, "%" PRIu64 " frames changed hands while read (mapped by a process, "
                             "then free, slab or page table)\n", i.phys_conflict_frames);
            put_reconcile(&t, system);
        } else {
            keep_rc(&t, memdiff__put_wrapped(out, &r.scratch, "\nPhysical memory: ",
                                             i.degraded ? i.degraded : "not taken", "\n", 4,
                                             t.width));
        }
    }
    rc = finish(&t, who);
    memdiff__arena_release(&r.scratch);
    return rc;
}

/* ---- a system diff ------------------------------------------------------------------------ */

static void diff_figures(const memdiff_sysproc_diff *d, int64_t v[NCOLS])
{
    v[C_RSS] = d->rss_bytes;
    v[C_PSS] = d->pss_bytes;
    v[C_USS] = d->uss_bytes;
    v[C_SWAP] = d->swap_bytes;
    v[C_ANON] = d->rss_anon_bytes;
    v[C_FILE] = d->rss_file_bytes;
    v[C_SHMEM] = d->rss_shmem_bytes;
}

static void fill_signed(char *cell, int64_t v, unsigned flags)
{
    memdiff__fmt_bytes(cell, v < 0 ? -(uint64_t)v : (uint64_t)v, v < 0 ? '-' : '+', flags);
}

static int get_diff_after_minus_before(const void *src, memdiff_frame_kind kind,
                                       memdiff_frame_owner owner, int64_t *v)
{
    uint64_t b = 0, a = 0;
    int rc = memdiff_system_diff_phys_bytes(src, kind, owner, &b, &a);
    *v = (int64_t)(a - b); /* two's complement: a table holds far below 2^63 bytes */
    return rc;
}

static void put_phys_side(st *t, const char *side, const memdiff_system_info *i)
{
    fprintf(t->out, "  %s: ", side);
    keep_rc(t, memdiff__put_wrapped_at(t->out, t->scratch, 4 + (int)strlen(side),
                                       i->degraded ? i->degraded : "not taken", "\n", 4,
                                       t->width));
}

int memdiff_system_diff_report_text(const memdiff_system_diff *diff, FILE *out,
                                    const memdiff_system_report_options *options)
{
    static const char who[] = "memdiff_system_diff_report_text";
    memdiff__sys_report r;
    int rc = memdiff__sys_report_begin(&r, NULL, diff, out, options, 0, who);
    if (rc != MEMDIFF_OK)
        return rc;
    const memdiff_system_report_options o = r.o;
    const memdiff_system_info b = r.info[0], a = r.info[1];
    const size_t *list = r.list, n = r.n;
    row *rows = alloc_rows(&r, who);
    if (!rows)
        return MEMDIFF_ENOMEM;
    st t = {out, o.flags, report_width(&o), &r.scratch, MEMDIFF_OK};
    if (!(o.flags & MEMDIFF_REPORT_NO_HEADER)) {
        fputs("memdiff system diff: ", out);
        keep_rc(&t, memdiff__put_label(out, &r.scratch, a.host,
                                       t.width ? MEMDIFF__MAX(16, t.width - 24) : 0));
        fputs("\n  before ", out);
        memdiff__put_time(out, b.time_ns);
        fputs(", after ", out);
        memdiff__put_time(out, a.time_ns);
        if (a.time_ns >= b.time_ns) {
            fputs(" (+", out);
            put_seconds(out, a.time_ns - b.time_ns);
            fputc(')', out);
        }
        fputc('\n', out);
    }
    fputs("Processes:", out);
    for (int c = MEMDIFF_SYSCHG_STARTED; c <= MEMDIFF_SYSCHG_UNKNOWN; c++)
        fprintf(out, " %zu %s,", memdiff_system_diff_changed(diff, (memdiff_sysproc_change)c),
                memdiff_sysproc_change_name((memdiff_sysproc_change)c));
    fprintf(out, " %zu same\n", memdiff_system_diff_changed(diff, MEMDIFF_SYSCHG_SAME));
    /* The sums' changes: every process but those not read on one side (unknown). */
    int64_t sum[NCOLS] = {0};
    size_t count = memdiff_system_diff_process_count(diff);
    for (size_t k = 0; k < count; k++) {
        memdiff_sysproc_diff d;
        int64_t v[NCOLS];
        if (memdiff_system_diff_process(diff, k, &d) != MEMDIFF_OK ||
            d.change == MEMDIFF_SYSCHG_UNKNOWN)
            continue;
        diff_figures(&d, v);
        for (int c = C_RSS; c < NCOLS; c++)
            sum[c] = memdiff__add_sat_i64(sum[c], v[c]);
    }
    fputs("Change of the sums:", out);
    for (int c = C_RSS; c <= C_SWAP; c++) {
        char cell[NUM_MAX];
        fill_signed(cell, sum[c], o.flags);
        fprintf(out, "%s %s ", c == C_RSS ? "" : ",", heads[c]);
        memdiff__put_cell(out, o.flags, cell, 0, memdiff__sgr_of(cell));
    }
    fputs(o.flags & MEMDIFF_REPORT_HUMAN ? "\n" : " bytes\n", out);
    for (size_t k = 0; k < n; k++) {
        memdiff_sysproc_diff d;
        int64_t v[NCOLS];
        memdiff_system_diff_process(diff, list[k], &d);
        fill_ids(&rows[k], d.change == MEMDIFF_SYSCHG_STARTED ? &d.after : &d.before);
        rows[k].change = memdiff_sysproc_change_name(d.change);
        diff_figures(&d, v);
        for (int c = C_RSS; c < NCOLS; c++) {
            if (d.change == MEMDIFF_SYSCHG_UNKNOWN)
                snprintf(rows[k].cells[c], sizeof rows[k].cells[c], "%s", DASH);
            else
                fill_signed(rows[k].cells[c], v[c], o.flags);
        }
    }
    if (n) {
        fprintf(out, "\nProcesses that changed (%zu of %zu, by %s; the change of each figure):\n",
                n, count - memdiff_system_diff_changed(diff, MEMDIFF_SYSCHG_SAME),
                sort_word(o.sort));
        put_rows(&t, rows, n, 1, 1);
    }
    if (!(o.flags & MEMDIFF_REPORT_NO_BLOCKS)) {
        if (memdiff_system_diff_phys_count(diff) && b.phys_frames && a.phys_frames) {
            fputs("\nPhysical memory, the change: rows by kind, columns by owner\n", out);
            put_phys_table(&t, diff, get_diff_after_minus_before, '+');
        } else {
            fputs("\nPhysical table: not in both snapshots\n", out);
            if (!b.phys_frames)
                put_phys_side(&t, "before", &b);
            if (!a.phys_frames)
                put_phys_side(&t, "after", &a);
        }
    }
    rc = finish(&t, who);
    memdiff__arena_release(&r.scratch);
    return rc;
}
