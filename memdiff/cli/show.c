/*
 * show.c - memdiff show: a snapshot file, or live processes, as text (the library's
 * memdiff_snapshot_report_text) or JSON. The JSON uses only the public accessors
 * (memdiff_snapshot_get_info, memdiff_snapshot_region), as any program reading a file would.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_JSON = 1, OPT_REGIONS, OPT_DEPTH, OPT_NO_HEADER };

typedef struct show_args {
    int help, json, regions, no_header;
    memdiff_depth depth;
    cli_view view;
    cli_select sel;
} show_args;

static int on_opt(void *ctx, int id, const char *v)
{
    show_args *a = ctx;
    int rc = cli_view_opt(&a->view, "show", id, v);
    if (rc != 1)
        return rc;
    if (cli_select_opt(&a->sel, id, v) == 0)
        return 0;
    if (id == CLI_OPT_HELP)
        a->help = 1;
    else if (id == OPT_JSON)
        a->json = 1;
    else if (id == OPT_REGIONS)
        a->regions = 1;
    else if (id == OPT_NO_HEADER)
        a->no_header = 1;
    else if (cli_parse_depth(v, &a->depth))
        return cli_usage_error("show", "bad depth '%s' (fast, standard or deep)", v);
    return 0;
}

/* MEMDIFF_SRC_* bits by name, for the header and JSON: the names the core's JSON report uses. */
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
};

#define NSOURCES (sizeof sources / sizeof sources[0])

/* A block: adjacent regions with one category and label (a module's segments, a heap's pieces),
 * or one region with --regions. */
typedef struct block {
    memdiff_region r; /* start of the first, end of the last, figures summed */
    size_t regions;
} block;

/* Calls fn for each block of s; returns what fn returns when nonzero. */
static int each_block(const memdiff_snapshot *s, int per_region,
                      int (*fn)(void *ctx, const block *b), void *ctx)
{
    size_t n = memdiff_snapshot_region_count(s);
    block b;
    memset(&b, 0, sizeof b);
    for (size_t i = 0; i < n; i++) {
        memdiff_region r;
        if (memdiff_snapshot_region(s, i, &r) != MEMDIFF_OK)
            return -1;
        if (b.regions && !per_region && r.start == b.r.end && r.category == b.r.category &&
            strcmp(r.label, b.r.label) == 0) {
            b.r.end = r.end;
            b.r.resident_bytes += r.resident_bytes;
            b.r.private_bytes += r.private_bytes;
            b.r.shared_bytes += r.shared_bytes;
            b.r.swapped_bytes += r.swapped_bytes;
            b.r.pss_bytes += r.pss_bytes;
            b.regions++;
            continue;
        }
        if (b.regions) {
            int rc = fn(ctx, &b);
            if (rc)
                return rc;
        }
        b.r = r;
        b.regions = 1;
    }
    return b.regions ? fn(ctx, &b) : 0;
}

typedef struct cat_sum {
    uint64_t resident, private_, shared, swapped, pss;
    size_t regions;
} cat_sum;

static void sum_categories(const memdiff_snapshot *s, cat_sum sums[MEMDIFF_CAT_COUNT])
{
    memset(sums, 0, sizeof(cat_sum) * MEMDIFF_CAT_COUNT);
    size_t n = memdiff_snapshot_region_count(s);
    for (size_t i = 0; i < n; i++) {
        memdiff_region r;
        if (memdiff_snapshot_region(s, i, &r) != MEMDIFF_OK ||
            (unsigned)r.category >= MEMDIFF_CAT_COUNT)
            continue;
        cat_sum *c = &sums[r.category];
        c->resident += r.resident_bytes;
        c->private_ += r.private_bytes;
        c->shared += r.shared_bytes;
        c->swapped += r.swapped_bytes;
        c->pss += r.pss_bytes;
        c->regions++;
    }
}

static const char *prot_str(char buf[4], unsigned prot)
{
    buf[0] = prot & MEMDIFF_PROT_READ ? 'r' : '-';
    buf[1] = prot & MEMDIFF_PROT_WRITE ? 'w' : '-';
    buf[2] = prot & MEMDIFF_PROT_EXEC ? 'x' : '-';
    buf[3] = '\0';
    return buf;
}

/* ---- JSON ------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1 for ASCII), 0 for a byte that starts none. */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || (n == 2 && c < 0xC2) || (n == 4 && c > 0xF4))
        return 0;
    for (size_t k = 1; k < n; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0) ||
        (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))
        return 0; /* overlong, surrogate, beyond U+10FFFF */
    return n;
}

/* A JSON string (RFC 8259): escapes as required, bytes that are not UTF-8 as U+FFFD. */
static void put_json_string(FILE *out, const char *str)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(str ? str : ""); *p;) {
        size_t n = utf8_seq(p);
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else if (n == 0)
            fputs("\\ufffd", out);
        else
            fwrite(p, 1, n, out);
        p += n ? n : 1;
    }
    fputc('"', out);
}

typedef struct json_ctx {
    FILE *out;
    int first;
    int pss; /* the snapshot knows PSS: pss_bytes fields */
} json_ctx;

static int json_block(void *ctx, const block *b)
{
    json_ctx *j = ctx;
    char prot[4];
    /* A block of several regions has no one protection: null, as the text leaves it blank. */
    char protq[8] = "null";
    if (b->regions == 1)
        snprintf(protq, sizeof protq, "\"%s\"", prot_str(prot, b->r.prot));
    fprintf(j->out, "%s\n    {\"start\": \"0x%llx\", \"end\": \"0x%llx\", \"prot\": %s, "
            "\"regions\": %zu, \"category\": \"%s\", \"label\": ",
            j->first ? "" : ",", (unsigned long long)b->r.start, (unsigned long long)b->r.end,
            protq, b->regions, memdiff_category_name(b->r.category));
    put_json_string(j->out, b->r.label);
    fprintf(j->out, ", \"path\": ");
    put_json_string(j->out, b->r.path);
    fprintf(j->out, ", \"size_bytes\": %llu, \"resident_bytes\": %llu, \"private_bytes\": %llu, "
            "\"shared_bytes\": %llu, \"swapped_bytes\": %llu",
            (unsigned long long)(b->r.end - b->r.start), (unsigned long long)b->r.resident_bytes,
            (unsigned long long)b->r.private_bytes, (unsigned long long)b->r.shared_bytes,
            (unsigned long long)b->r.swapped_bytes);
    if (j->pss)
        fprintf(j->out, ", \"pss_bytes\": %llu", (unsigned long long)b->r.pss_bytes);
    fputc('}', j->out);
    j->first = 0;
    return 0;
}

static void show_json(const memdiff_snapshot *s, int per_region, FILE *out)
{
    memdiff_snapshot_info i;
    memdiff_snapshot_get_info(s, &i);
    fprintf(out, "{\n  \"snapshot\": {\n    \"pid\": %d,\n    \"host\": ", i.pid);
    put_json_string(out, i.host);
    fprintf(out, ",\n    \"time_ns\": %llu,\n    \"page_size\": %u,\n    \"depth\": \"%s\",\n"
            "    \"depth_requested\": \"%s\",\n    \"degraded\": ",
            (unsigned long long)i.time_ns, (unsigned)i.page_size, memdiff_depth_name(i.depth),
            memdiff_depth_name(i.depth_requested));
    if (i.degraded)
        put_json_string(out, i.degraded);
    else
        fputs("null", out);
    fputs(",\n    \"sources\": [", out);
    int first = 1;
    for (size_t k = 0; k < NSOURCES; k++) {
        if (i.sources & sources[k].bit) {
            fprintf(out, "%s\"%s\"", first ? "" : ", ", sources[k].name);
            first = 0;
        }
    }
    const memdiff_process_totals *t = &i.totals;
    int pss = (i.sources & MEMDIFF_SRC_PSS) != 0; /* else unknown: no pss_bytes fields */
    char pss_field[64] = "";
    if (pss)
        snprintf(pss_field, sizeof pss_field, "    \"pss_bytes\": %llu,\n",
                 (unsigned long long)i.pss_bytes);
    fprintf(out, "],\n    \"region_count\": %zu,\n    \"run_count\": %zu,\n"
            "    \"resident_bytes\": %llu,\n    \"private_bytes\": %llu,\n"
            "    \"shared_bytes\": %llu,\n    \"swapped_bytes\": %llu,\n    \"own_bytes\": %llu,\n"
            "%s    \"process_totals\": {\"vm_size\": %llu, \"vm_rss\": %llu, \"vm_hwm\": %llu, "
            "\"rss_anon\": %llu, \"rss_file\": %llu, \"rss_shmem\": %llu, \"vm_pte\": %llu, "
            "\"vm_swap\": %llu}\n  },\n  \"categories\": {",
            i.region_count, i.run_count, (unsigned long long)i.resident_bytes,
            (unsigned long long)i.private_bytes, (unsigned long long)i.shared_bytes,
            (unsigned long long)i.swapped_bytes, (unsigned long long)i.own_bytes, pss_field,
            (unsigned long long)t->vm_size, (unsigned long long)t->vm_rss,
            (unsigned long long)t->vm_hwm, (unsigned long long)t->rss_anon,
            (unsigned long long)t->rss_file, (unsigned long long)t->rss_shmem,
            (unsigned long long)t->vm_pte, (unsigned long long)t->vm_swap);
    cat_sum sums[MEMDIFF_CAT_COUNT];
    sum_categories(s, sums);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        const cat_sum *x = &sums[c];
        fprintf(out, "%s\n    \"%s\": {\"resident_bytes\": %llu, \"private_bytes\": %llu, "
                "\"shared_bytes\": %llu, \"swapped_bytes\": %llu, \"regions\": %zu",
                c ? "," : "", memdiff_category_name((memdiff_category)c),
                (unsigned long long)x->resident, (unsigned long long)x->private_,
                (unsigned long long)x->shared, (unsigned long long)x->swapped, x->regions);
        if (pss)
            fprintf(out, ", \"pss_bytes\": %llu", (unsigned long long)x->pss);
        fputc('}', out);
    }
    fprintf(out, "\n  },\n  \"%s\": [", per_region ? "regions" : "blocks");
    json_ctx j = {out, 1, pss};
    each_block(s, per_region, json_block, &j);
    fputs("\n  ]\n}\n", out);
}

static int show_one(const show_args *a, const memdiff_snapshot *s, int lines)
{
    memdiff_report_options ro = cli_view_report(&a->view);
    ro.flags |= (a->regions ? MEMDIFF_REPORT_REGIONS : 0) |
                (a->no_header ? MEMDIFF_REPORT_NO_HEADER : 0) | (lines ? MEMDIFF_REPORT_LINE : 0);
    if (a->json) {
        show_json(s, a->regions, stdout);
        return 0;
    }
    int rc = memdiff_snapshot_report_text(s, stdout, &ro);
    return rc ? cli_error("show", rc, "cannot write the report") : 0;
}

/* Live processes: every snapshot taken before anything is printed, so that an error (a process
 * that exits meanwhile) comes before any output. */
static int show_processes(const show_args *a, const char *const *words, int nwords)
{
    int *pids, n;
    int rc = cli_select_pids("show", &a->sel, words, nwords, 1, 1, &pids, &n);
    if (rc)
        return rc;
    memdiff_snapshot **snaps = calloc((size_t)n, sizeof *snaps);
    if (!snaps) {
        free(pids);
        fputs("memdiff show: out of memory\n", stderr);
        return CLI_EXIT_ERROR;
    }
    for (int i = 0; i < n && !rc; i++)
        rc = cli_take("show", pids[i], a->depth, &snaps[i]);
    for (int i = 0; i < n && !rc; i++) {
        if (i && !a->json)
            fputc('\n', stdout); /* a table per process, apart */
        rc = show_one(a, snaps[i], n > 1);
    }
    for (int i = 0; i < n; i++)
        memdiff_snapshot_free(snaps[i]);
    free(snaps);
    free(pids);
    return rc;
}

int cli_cmd_show(int argc, char **argv)
{
    static const cli_opt opts[] = {{"json", 0, 0, OPT_JSON},
                                   {"regions", 'r', 0, OPT_REGIONS},
                                   {"depth", 'd', 1, OPT_DEPTH},
                                   {"no-header", 0, 0, OPT_NO_HEADER},
                                   CLI_VIEW_OPTS,
                                   CLI_SELECT_OPTS,
                                   {NULL, 0, 0, 0}};
    show_args a;
    memset(&a, 0, sizeof a);
    a.depth = MEMDIFF_DEPTH_STANDARD;
    cli_view_init(&a.view);
    const char *pos[64];
    int npos = 0;
    int rc = cli_parse("show", argc, argv, opts, on_opt, &a, pos, 64, &npos);
    if (rc)
        return rc;
    if (a.help) {
        cli_help("show", stdout);
        return CLI_EXIT_OK;
    }
    /* One word that is not a process (docs/cli.md, "Choosing processes") is a file. */
    if (npos == 1 && !a.sel.name && !cli_word_is_process(pos[0])) {
        memdiff_snapshot *s = NULL;
        rc = strcmp(pos[0], "-") == 0 ? memdiff_snapshot_load(stdin, &s)
                                      : memdiff_snapshot_load_file(pos[0], &s);
        if (rc)
            return cli_error("show", rc, "cannot load the snapshot");
        rc = show_one(&a, s, 0);
        memdiff_snapshot_free(s);
    } else {
        if (npos == 0 && !a.sel.name)
            return cli_usage_error("show", "expected a snapshot file or processes");
        for (int i = 0; i < npos; i++) {
            if (!cli_word_is_process(pos[i]))
                return cli_usage_error("show", "'%s' is neither a process nor the only word: "
                                               "show takes one file, or processes", pos[i]);
        }
        rc = show_processes(&a, pos, npos);
    }
    if (rc)
        return rc;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "memdiff show: cannot write the output\n");
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}
