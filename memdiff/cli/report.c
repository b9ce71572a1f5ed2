/*
 * report.c - memdiff report: a timeline file (docs/timeline-format.md) as one self-contained
 * HTML page (--html) or a static SVG chart (--svg), docs/cli.md "report". The page's picture is
 * report_svg.c's chart; its script (report_template.html, compiled in by cmake/embed.cmake)
 * reads one JSON document embedded in the page: the samples and marks, every snapshot's figures
 * as memdiff_snapshot_report_json writes them, and the exact diffs of the pairs of snapshots
 * the page offers, as memdiff_report_json writes them. The page fetches nothing: it works from
 * a file, offline, and in print.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report.h"

extern const char memdiff_report_template[];
extern const size_t memdiff_report_template_size;

enum { OPT_HTML = 1, OPT_SVG, OPT_WSS, OPT_TOP };

/* Up to this many snapshots the page holds the diff of every pair (780 at 40); beyond, of
 * consecutive snapshots and of start, peak and end, so that the page stays a few MB. */
#define ALL_PAIRS_MAX 40
#define DEFAULT_TOP 10

typedef struct report_args {
    int help;
    const char *html, *svg, *wss;
    int top;
} report_args;

static int on_opt(void *ctx, int id, const char *v)
{
    report_args *a = ctx;
    switch (id) {
    case CLI_OPT_HELP: a->help = 1; return 0;
    case OPT_HTML: a->html = v; return 0;
    case OPT_SVG: a->svg = v; return 0;
    case OPT_WSS: a->wss = v; return 0;
    case OPT_TOP:
        if (cli_parse_count(v, &a->top))
            return cli_usage_error("report", "bad --top '%s' (a number from 1)", v);
        return 0;
    }
    return cli_usage_error("report", "internal error: option %d", id);
}

/* ---- the model ---------------------------------------------------------------------------- */

static char *escaped(const char *text)
{
    size_t n = memdiff_escape_text(NULL, 0, text);
    char *s = malloc(n + 1);
    if (s)
        memdiff_escape_text(s, n + 1, text);
    return s;
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64;
    void *q = realloc(*p, c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static void model_free(rp_model *m)
{
    for (size_t i = 0; i < m->nmarks; i++)
        free(m->marks[i].label);
    free(m->marks);
    free(m->samples);
    free(m->snaps);
    free(m->wss);
}

static int load_snapshot(const memdiff_timeline *t, size_t i, memdiff_snapshot **s)
{
    int rc = memdiff_timeline_snapshot(t, i, s);
    if (rc) {
        fprintf(stderr, "memdiff report: snapshot %zu: ", i);
        cli_put_text(stderr, cli_detail(rc));
        fputc('\n', stderr);
        return CLI_EXIT_ERROR;
    }
    return 0;
}

static double seconds(uint64_t time_ns, uint64_t start_ns)
{
    /* A mark's time is its sender's clock and may precede the header's. */
    return time_ns >= start_ns ? (double)(time_ns - start_ns) / 1e9
                               : -(double)(start_ns - time_ns) / 1e9;
}

static int oom(void)
{
    fputs("memdiff report: out of memory\n", stderr);
    return CLI_EXIT_ERROR;
}

static int build_model(memdiff_timeline *t, const memdiff_timeline_info *info, rp_model *m)
{
    size_t cap_samples = 0, cap_marks = 0, cap_snaps = 0;
    memdiff_timeline_record r;
    memdiff_timeline_rewind(t);
    while (memdiff_timeline_next(t, &r) == 1) {
        double sec = seconds(r.time_ns, info->start_ns);
        if (sec > m->t_end)
            m->t_end = sec;
        if (r.kind == MEMDIFF_RECORD_SAMPLE) {
            if (grow((void **)&m->samples, &cap_samples, m->nsamples, sizeof *m->samples))
                return oom();
            m->samples[m->nsamples++] = (rp_sample){sec, r.totals.vm_rss, r.totals.vm_hwm};
        } else if (r.kind == MEMDIFF_RECORD_MARK) {
            if (grow((void **)&m->marks, &cap_marks, m->nmarks, sizeof *m->marks))
                return oom();
            char *label = escaped(r.label);
            if (!label)
                return oom();
            m->marks[m->nmarks++] = (rp_mark){sec, label};
        } else if (r.kind == MEMDIFF_RECORD_SNAPSHOT) {
            if (grow((void **)&m->snaps, &cap_snaps, m->nsnaps, sizeof *m->snaps))
                return oom();
            memdiff_snapshot *s = NULL;
            int rc = load_snapshot(t, r.snapshot, &s);
            if (rc)
                return rc;
            rp_snap *p = &m->snaps[m->nsnaps++];
            memset(p, 0, sizeof *p);
            p->t = sec;
            p->cause = r.cause;
            size_t n = memdiff_snapshot_region_count(s);
            for (size_t i = 0; i < n; i++) {
                memdiff_region g;
                if (memdiff_snapshot_region(s, i, &g) == MEMDIFF_OK &&
                    g.category != MEMDIFF_CAT_OWN && g.category < MEMDIFF_CAT_COUNT) {
                    p->cat[g.category] += g.resident_bytes;
                    p->resident += g.resident_bytes;
                }
            }
            memdiff_snapshot_free(s);
            if (p->resident > m->snaps[m->peak].resident)
                m->peak = m->nsnaps - 1;
        }
    }
    if (!(m->t_end > 0))
        m->t_end = 1; /* one instant: a second of axis rather than a division by zero */
    return 0;
}

/* A number after "key": in one line of memdiff wss --json (null reads as 0). -1 when absent. */
static int json_number(const char *line, const char *key, double *out)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    if (strncmp(p, "null", 4) == 0) {
        *out = 0;
        return 0;
    }
    char *end;
    *out = strtod(p, &end);
    return end == p ? -1 : 0;
}

static int read_wss(const char *path, rp_model *m)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "memdiff report: --wss ");
        cli_put_text(stderr, path);
        fputs(": cannot open it\n", stderr);
        return CLI_EXIT_ERROR;
    }
    char line[8192];
    size_t cap = 0, lineno = 0;
    int rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue;
        double span, rss, pss, ref;
        if (!strstr(line, "\"kind\":\"wss\"") || json_number(line, "span_s", &span) ||
            json_number(line, "rss_bytes", &rss) || json_number(line, "pss_bytes", &pss) ||
            json_number(line, "referenced_bytes", &ref) || span < 0 || rss < 0 || pss < 0 ||
            ref < 0) {
            fprintf(stderr, "memdiff report: --wss ");
            cli_put_text(stderr, path);
            fprintf(stderr, ": line %zu is not a record of memdiff wss --json\n", lineno);
            rc = CLI_EXIT_ERROR;
        } else if (grow((void **)&m->wss, &cap, m->nwss, sizeof *m->wss)) {
            rc = oom();
        } else {
            m->wss[m->nwss++] = (rp_wss){span, (uint64_t)rss, (uint64_t)pss, (uint64_t)ref};
        }
    }
    if (!rc && !m->nwss) {
        fprintf(stderr, "memdiff report: --wss ");
        cli_put_text(stderr, path);
        fputs(": no records in it\n", stderr);
        rc = CLI_EXIT_ERROR;
    }
    fclose(f);
    return rc;
}

/* ---- the embedded JSON -------------------------------------------------------------------- */

/* The bytes of a JSON document (the library's writers' output, or ours) copied into the page's
 * <script> element: '<', '>' and '&' as \u escapes, which JSON allows inside strings (the only
 * place they occur), so that no label, path or host name can end the element ("</script>") or
 * open a comment ("<!--"). */
static void put_script_json(FILE *out, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '<')
            fputs("\\u003c", out);
        else if (p[i] == '>')
            fputs("\\u003e", out);
        else if (p[i] == '&')
            fputs("\\u0026", out);
        else if (p[i] != '\n')
            fputc(p[i], out);
    }
}

/* A JSON string of text escaped first as memdiff prints it (so valid, printable UTF-8). */
static void put_json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const char *p = text; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else
            put_script_json(out, p, 1);
    }
    fputc('"', out);
}

static void put_json_text(FILE *out, const char *text)
{
    char *s = escaped(text ? text : "");
    put_json_string(out, s ? s : "");
    free(s);
}

/* What a library writer wrote into scratch, into out as embedded JSON; scratch is emptied. */
static int copy_scratch(FILE *scratch, FILE *out)
{
    long len = ftell(scratch);
    if (len < 0)
        return -1;
    rewind(scratch);
    char buf[65536];
    size_t left = (size_t)len;
    while (left) {
        size_t n = fread(buf, 1, left < sizeof buf ? left : sizeof buf, scratch);
        if (!n)
            return -1;
        put_script_json(out, buf, n);
        left -= n;
    }
    rewind(scratch);
    return 0;
}

static void put_causes(FILE *out, unsigned cause)
{
    static const char *const names[] = {"start", "change", "peak", "mark", "exit", "request"};
    int first = 1;
    fputc('[', out);
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (cause & (1u << i)) {
            fprintf(out, "%s\"%s\"", first ? "" : ",", names[i]);
            first = 0;
        }
    }
    fputc(']', out);
}

typedef struct pair {
    size_t a, b;
} pair;

/* The pairs whose exact diff the page holds (see ALL_PAIRS_MAX), a < b, each once. */
static pair *choose_pairs(const rp_model *m, size_t *npairs)
{
    size_t n = m->nsnaps, cap = n <= ALL_PAIRS_MAX ? n * (n - (n > 0)) / 2 + 1 : n + 3;
    pair *p = malloc(cap * sizeof *p);
    size_t k = 0;
    if (!p)
        return NULL;
    if (n <= ALL_PAIRS_MAX) {
        for (size_t a = 0; a < n; a++)
            for (size_t b = a + 1; b < n; b++)
                p[k++] = (pair){a, b};
    } else {
        for (size_t a = 0; a + 1 < n; a++)
            p[k++] = (pair){a, a + 1};
        pair extra[3] = {{0, m->peak}, {m->peak, n - 1}, {0, n - 1}};
        for (size_t e = 0; e < 3; e++) {
            if (extra[e].a >= extra[e].b || extra[e].b == extra[e].a + 1)
                continue;
            int dup = 0;
            for (size_t i = n - 1; i < k; i++)
                dup |= p[i].a == extra[e].a && p[i].b == extra[e].b;
            if (!dup)
                p[k++] = extra[e];
        }
    }
    *npairs = k;
    return p;
}

static int write_diffs(FILE *out, FILE *scratch, const memdiff_timeline *t, const rp_model *m,
                       int top)
{
    size_t npairs = 0;
    pair *pairs = choose_pairs(m, &npairs);
    if (!pairs)
        return oom();
    memdiff_report_options ro = MEMDIFF_REPORT_OPTIONS_INIT;
    ro.flags = MEMDIFF_REPORT_LINE | MEMDIFF_REPORT_NO_HEADER;
    ro.sort = MEMDIFF_SORT_SIZE;
    ro.top = (size_t)top;
    memdiff_snapshot *sa = NULL;
    size_t loaded_a = (size_t)-1;
    int rc = 0;
    fputs("\"diffs\":{", out);
    for (size_t i = 0; i < npairs && !rc; i++) {
        if (pairs[i].a != loaded_a) {
            memdiff_snapshot_free(sa);
            sa = NULL;
            loaded_a = (size_t)-1;
            if ((rc = load_snapshot(t, pairs[i].a, &sa)))
                break;
            loaded_a = pairs[i].a;
        }
        memdiff_snapshot *sb = NULL;
        if ((rc = load_snapshot(t, pairs[i].b, &sb)))
            break;
        memdiff_diff *d = NULL;
        int st = memdiff_compare(sa, sb, 0, &d);
        if (!st)
            st = memdiff_report_json(d, scratch, &ro);
        memdiff_diff_free(d);
        memdiff_snapshot_free(sb);
        if (st) {
            fprintf(stderr, "memdiff report: snapshots %zu and %zu: ", pairs[i].a, pairs[i].b);
            cli_put_text(stderr, cli_detail(st));
            fputc('\n', stderr);
            rc = CLI_EXIT_ERROR;
            break;
        }
        fprintf(out, "%s\"%zu-%zu\":", i ? "," : "", pairs[i].a, pairs[i].b);
        if (copy_scratch(scratch, out))
            rc = oom();
    }
    fputs("}", out);
    memdiff_snapshot_free(sa);
    free(pairs);
    return rc;
}

static int write_data(FILE *out, const memdiff_timeline *t, const memdiff_timeline_info *info,
                      const rp_model *m, int top)
{
    FILE *scratch = tmpfile();
    if (!scratch) {
        fputs("memdiff report: cannot create a temporary file\n", stderr);
        return CLI_EXIT_ERROR;
    }
    fprintf(out, "{\"format\":\"memdiff-report\",\"version\":1,\"pid\":%d,\"host\":", info->pid);
    put_json_text(out, info->host);
    fputs(",\"argv\":[", out);
    for (size_t i = 0; info->argv && info->argv[i]; i++) {
        if (i)
            fputc(',', out);
        put_json_text(out, info->argv[i]);
    }
    fprintf(out, "],\"start_s\":%.9f,\"interval_s\":%.9f,\"t_end\":%.9f,\"torn\":%s,"
                 "\"torn_record\":%zu,\"torn_offset\":%llu,\"all_pairs_max\":%d,\"top\":%d,",
            (double)info->start_ns / 1e9, (double)info->interval_ns / 1e9, m->t_end,
            info->torn ? "true" : "false", info->records, (unsigned long long)info->torn_offset,
            ALL_PAIRS_MAX,
            top);
    fputs("\"samples\":[", out);
    for (size_t i = 0; i < m->nsamples; i++)
        fprintf(out, "%s[%.9f,%llu,%llu]", i ? "," : "", m->samples[i].t,
                (unsigned long long)m->samples[i].vm_rss,
                (unsigned long long)m->samples[i].vm_hwm);
    fputs("],\"marks\":[", out);
    for (size_t i = 0; i < m->nmarks; i++) {
        fprintf(out, "%s{\"t\":%.9f,\"label\":", i ? "," : "", m->marks[i].t);
        put_json_string(out, m->marks[i].label);
        fputc('}', out);
    }
    fprintf(out, "],\"peak\":%zu,\"snapshots\":[", m->nsnaps ? m->peak : (size_t)0);
    memdiff_report_options ro = MEMDIFF_REPORT_OPTIONS_INIT;
    ro.flags = MEMDIFF_REPORT_LINE | MEMDIFF_REPORT_NO_BLOCKS;
    int rc = 0;
    for (size_t i = 0; i < m->nsnaps && !rc; i++) {
        memdiff_snapshot *s = NULL;
        if ((rc = load_snapshot(t, i, &s)))
            break;
        int st = memdiff_snapshot_report_json(s, scratch, &ro);
        memdiff_snapshot_free(s);
        if (st) {
            rc = cli_error("report", st, "cannot write a snapshot's figures");
            break;
        }
        fprintf(out, "%s{\"t\":%.9f,\"cause\":", i ? "," : "", m->snaps[i].t);
        put_causes(out, m->snaps[i].cause);
        fputs(",\"report\":", out);
        if (copy_scratch(scratch, out))
            rc = oom();
        fputc('}', out);
    }
    fputs("],", out);
    if (!rc)
        rc = write_diffs(out, scratch, t, m, top);
    fputs(",\"wss\":[", out);
    for (size_t i = 0; i < m->nwss; i++)
        fprintf(out, "%s[%.9f,%llu,%llu,%llu]", i ? "," : "", m->wss[i].span_s,
                (unsigned long long)m->wss[i].rss, (unsigned long long)m->wss[i].pss,
                (unsigned long long)m->wss[i].referenced);
    fputs("]}", out);
    fclose(scratch);
    return rc;
}

/* ---- the page ----------------------------------------------------------------------------- */

static void put_title(FILE *out, const memdiff_timeline_info *info)
{
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d", info->pid);
    rp_put_xml(out, pid);
    if (info->argv && info->argv[0]) {
        fputs(" (", out);
        for (size_t i = 0; info->argv[i]; i++) {
            char *s = escaped(info->argv[i]);
            if (i)
                fputc(' ', out);
            rp_put_xml(out, s ? s : "?");
            free(s);
        }
        fputc(')', out);
    }
    char *host = escaped(info->host ? info->host : "");
    fputs(" on ", out);
    rp_put_xml(out, host ? host : "?");
    free(host);
}

/* The template with its @@NAME@@ slots filled. */
static int write_html(FILE *out, const memdiff_timeline *t, const memdiff_timeline_info *info,
                      const rp_model *m, int top)
{
    const char *p = memdiff_report_template, *end = p + memdiff_report_template_size;
    while (p < end) {
        const char *slot = strstr(p, "@@");
        if (!slot) {
            fwrite(p, 1, (size_t)(end - p), out);
            break;
        }
        fwrite(p, 1, (size_t)(slot - p), out);
        const char *close = strstr(slot + 2, "@@");
        if (!close)
            return cli_error("report", MEMDIFF_EFORMAT, "the built-in template is broken");
        size_t len = (size_t)(close - slot - 2);
        if (len == 5 && strncmp(slot + 2, "TITLE", 5) == 0) {
            put_title(out, info);
        } else if (len == 5 && strncmp(slot + 2, "CHART", 5) == 0) {
            rp_svg_timeline(out, m, 0);
        } else if (len == 3 && strncmp(slot + 2, "WSS", 3) == 0) {
            if (m->nwss)
                rp_svg_wss(out, m);
        } else if (len == 4 && strncmp(slot + 2, "DATA", 4) == 0) {
            int rc = write_data(out, t, info, m, top);
            if (rc)
                return rc;
        } else {
            fwrite(slot, 1, (size_t)(close + 2 - slot), out);
        }
        p = close + 2;
    }
    return 0;
}

typedef int (*writer_fn)(FILE *out, const memdiff_timeline *t, const memdiff_timeline_info *info,
                         const rp_model *m, int top);

static int write_svg(FILE *out, const memdiff_timeline *t, const memdiff_timeline_info *info,
                     const rp_model *m, int top)
{
    (void)t, (void)info, (void)top;
    rp_svg_timeline(out, m, 1);
    return 0;
}

/* Writes path ("-": standard output) with fn; a file left half written is removed. */
static int write_output(const char *path, writer_fn fn, const memdiff_timeline *t,
                        const memdiff_timeline_info *info, const rp_model *m, int top)
{
    int to_stdout = strcmp(path, "-") == 0;
    FILE *out = to_stdout ? stdout : fopen(path, "wb");
    if (!out) {
        fputs("memdiff report: cannot create ", stderr);
        cli_put_text(stderr, path);
        fputc('\n', stderr);
        return CLI_EXIT_ERROR;
    }
    int rc = fn(out, t, info, m, top);
    int failed = ferror(out);
    if (to_stdout)
        failed |= fflush(out) != 0;
    else
        failed |= fclose(out) != 0;
    if (!rc && failed) {
        fputs("memdiff report: cannot write ", stderr);
        cli_put_text(stderr, path);
        fputc('\n', stderr);
        rc = CLI_EXIT_ERROR;
    }
    if (rc && !to_stdout)
        remove(path);
    return rc;
}

int cli_cmd_report(int argc, char **argv)
{
    static const cli_opt opts[] = {{"html", 0, 1, OPT_HTML},
                                   {"svg", 0, 1, OPT_SVG},
                                   {"wss", 0, 1, OPT_WSS},
                                   {"top", 0, 1, OPT_TOP},
                                   {NULL, 0, 0, 0}};
    report_args a;
    memset(&a, 0, sizeof a);
    a.top = DEFAULT_TOP;
    const char *pos[2];
    int npos = 0;
    int rc = cli_parse("report", argc, argv, opts, on_opt, &a, pos, 2, &npos);
    if (rc)
        return rc;
    if (a.help) {
        cli_help("report", stdout);
        return CLI_EXIT_OK;
    }
    if (npos != 1)
        return cli_usage_error("report", "expected one timeline FILE");
    if (!a.html && !a.svg)
        return cli_usage_error("report", "nothing to write: give --html OUT.html or --svg OUT.svg");
    if ((a.html && strcmp(a.html, pos[0]) == 0) || (a.svg && strcmp(a.svg, pos[0]) == 0))
        return cli_usage_error("report", "the output would overwrite the timeline '%s'", pos[0]);
    if (a.html && a.svg && strcmp(a.html, "-") == 0 && strcmp(a.svg, "-") == 0)
        return cli_usage_error("report", "--html - and --svg - both on standard output");

    memdiff_timeline *t = NULL;
    rc = memdiff_timeline_open(pos[0], &t);
    if (rc) {
        /* The library's detail names the file, the record and its offset. */
        fputs("memdiff report: ", stderr);
        cli_put_text(stderr, cli_detail(rc));
        fputc('\n', stderr);
        return CLI_EXIT_ERROR;
    }
    memdiff_timeline_info info;
    memdiff_timeline_get_info(t, &info);
    if (info.torn)
        fprintf(stderr, "memdiff report: warning: the file ends inside record %zu at offset %llu "
                        "(the recording was cut); the records before it are shown\n",
                info.records, (unsigned long long)info.torn_offset);
    rp_model m;
    memset(&m, 0, sizeof m);
    rc = build_model(t, &info, &m);
    if (!rc && a.wss)
        rc = read_wss(a.wss, &m);
    if (!rc && a.html)
        rc = write_output(a.html, write_html, t, &info, &m, a.top);
    if (!rc && a.svg)
        rc = write_output(a.svg, write_svg, t, &info, &m, a.top);
    model_free(&m);
    memdiff_timeline_free(t);
    return rc;
}
