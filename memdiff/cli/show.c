/*
 * show.c - memdiff show: one snapshot file, as text or JSON (memdiff_snapshot_report_json). Only
 * the public API is used (memdiff_snapshot_get_info, memdiff_snapshot_region), as any program
 * reading a file would.
 */
#include <string.h>
#include <time.h>

#include "cli.h"

enum { OPT_JSON = 1, OPT_REGIONS };

typedef struct show_args {
    int help, json, regions;
} show_args;

static int on_opt(void *ctx, int id, const char *v)
{
    show_args *a = ctx;
    (void)v;
    if (id == CLI_OPT_HELP)
        a->help = 1;
    else if (id == OPT_JSON)
        a->json = 1;
    else
        a->regions = 1;
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
    {MEMDIFF_SRC_PSS_MAPPINGS, "pss-mappings"},
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

static void fmt_time(char *buf, size_t size, uint64_t ns)
{
    time_t t = (time_t)(ns / 1000000000u);
    struct tm *tm = gmtime(&t);
    if (!tm || !strftime(buf, size, "%Y-%m-%d %H:%M:%S", tm))
        snprintf(buf, size, "?");
    else
        snprintf(buf + strlen(buf), size - strlen(buf), ".%03u UTC",
                 (unsigned)(ns % 1000000000u / 1000000u));
}

static const char *prot_str(char buf[4], unsigned prot)
{
    buf[0] = prot & MEMDIFF_PROT_READ ? 'r' : '-';
    buf[1] = prot & MEMDIFF_PROT_WRITE ? 'w' : '-';
    buf[2] = prot & MEMDIFF_PROT_EXEC ? 'x' : '-';
    buf[3] = '\0';
    return buf;
}

/* ---- text ------------------------------------------------------------------------------- */

typedef struct text_ctx {
    FILE *out;
    int pss; /* the snapshot knows PSS: a pss column (per mapping: "-" after a mapping's first
                region, whose figure covers the mapping) */
} text_ctx;

static int text_block(void *ctx, const block *b)
{
    FILE *out = ((text_ctx *)ctx)->out;
    char sz[32], res[32], priv[32], swp[32], pss[32], prot[4];
    fprintf(out, "  0x%012llx-0x%012llx %s %15s %13s %13s %11s", (unsigned long long)b->r.start,
            (unsigned long long)b->r.end, b->regions == 1 ? prot_str(prot, b->r.prot) : "   ",
            cli_fmt_uint(sz, b->r.end - b->r.start), cli_fmt_uint(res, b->r.resident_bytes),
            cli_fmt_uint(priv, b->r.private_bytes), cli_fmt_uint(swp, b->r.swapped_bytes));
    if (((text_ctx *)ctx)->pss)
        fprintf(out, " %13s", b->r.pss_end ? cli_fmt_uint(pss, b->r.pss_bytes) : "-");
    fprintf(out, "  %-11s ", memdiff_category_name(b->r.category));
    cli_put_text(out, b->r.label);
    fputc('\n', out);
    return 0;
}

static int count_block(void *ctx, const block *b)
{
    (void)b;
    ++*(size_t *)ctx;
    return 0;
}

static void show_text(const memdiff_snapshot *s, int per_region, FILE *out)
{
    memdiff_snapshot_info i;
    memdiff_snapshot_get_info(s, &i);
    char when[64], b1[32], b2[32], b3[32], b4[32];
    fmt_time(when, sizeof when, i.time_ns);
    fprintf(out, "memdiff snapshot: pid %d on ", i.pid);
    cli_put_text(out, i.host); /* whatever the file says: it may come from anywhere */
    fprintf(out, ", %s depth", memdiff_depth_name(i.depth));
    if (i.depth != i.depth_requested)
        fprintf(out, " (%s requested)", memdiff_depth_name(i.depth_requested));
    fprintf(out, ", %u-byte pages, taken %s\n", (unsigned)i.page_size, when);
    if (i.degraded) {
        fputs("Degraded: ", out);
        cli_put_text(out, i.degraded);
        fputc('\n', out);
    }
    fprintf(out, "Sources:");
    for (size_t k = 0; k < NSOURCES; k++)
        if (i.sources & sources[k].bit)
            fprintf(out, " %s", sources[k].name);
    fprintf(out, "\n%zu regions, %zu page runs\n\n", i.region_count, i.run_count);
    fprintf(out, "Resident:  %15s bytes  (private %s, shared %s)\n",
            cli_fmt_uint(b1, i.resident_bytes), cli_fmt_uint(b2, i.private_bytes),
            cli_fmt_uint(b3, i.shared_bytes));
    fprintf(out, "Swapped:   %15s bytes\n", cli_fmt_uint(b1, i.swapped_bytes));
    int pss = (i.sources & MEMDIFF_SRC_PSS) != 0; /* else unknown: no PSS column */
    if (pss)
        fprintf(out, "PSS:       %15s bytes  (page size / map count per page, as smaps)\n",
                cli_fmt_uint(b1, i.pss_bytes));
    /* Per mapping, a figure covers the mapping's regions, which may be of several categories and
     * blocks: shown per region only. */
    int pss_mappings = (i.sources & MEMDIFF_SRC_PSS_MAPPINGS) != 0;
    if (pss_mappings)
        fprintf(out, "PSS:       %15s bytes  (smaps' Pss per mapping, whole kB; --regions: on each "
                "mapping's first region)\n",
                cli_fmt_uint(b1, i.pss_bytes));
    fprintf(out, "memdiff's own storage: %s bytes (excluded from all totals)\n",
            cli_fmt_uint(b1, i.own_bytes));
    const memdiff_process_totals *t = &i.totals;
    if (t->vm_rss || t->vm_size)
        fprintf(out, "Kernel's figures: VmRSS %s, VmHWM %s, VmSize %s, VmSwap %s bytes\n",
                cli_fmt_uint(b1, t->vm_rss), cli_fmt_uint(b2, t->vm_hwm),
                cli_fmt_uint(b3, t->vm_size), cli_fmt_uint(b4, t->vm_swap));

    cat_sum sums[MEMDIFF_CAT_COUNT];
    sum_categories(s, sums);
    fprintf(out, "\n%-12s %15s %15s %15s %15s %8s%s\n", "Category", "Resident", "Private",
            "Shared", "Swapped", "Regions", pss ? "             PSS" : "");
    cat_sum total;
    memset(&total, 0, sizeof total);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        const cat_sum *x = &sums[c];
        if (!x->regions)
            continue;
        fprintf(out, "%-12s %15s %15s %15s %15s %8zu",
                memdiff_category_name((memdiff_category)c), cli_fmt_uint(b1, x->resident),
                cli_fmt_uint(b2, x->private_), cli_fmt_uint(b3, x->shared),
                cli_fmt_uint(b4, x->swapped), x->regions);
        fprintf(out, pss ? " %15s\n" : "\n", cli_fmt_uint(b1, x->pss));
        if (c == MEMDIFF_CAT_OWN)
            continue; /* as in every total: Own apart */
        total.resident += x->resident;
        total.private_ += x->private_;
        total.shared += x->shared;
        total.swapped += x->swapped;
        total.pss += x->pss;
        total.regions += x->regions;
    }
    fprintf(out, "%-12s %15s %15s %15s %15s %8zu", "total", cli_fmt_uint(b1, total.resident),
            cli_fmt_uint(b2, total.private_), cli_fmt_uint(b3, total.shared),
            cli_fmt_uint(b4, total.swapped), total.regions);
    fprintf(out, pss ? " %15s\n" : "\n", cli_fmt_uint(b1, total.pss));

    size_t nblocks = 0;
    each_block(s, per_region, count_block, &nblocks);
    fprintf(out, "\n%s (%zu%s):\n", per_region ? "Regions" : "Blocks", nblocks,
            per_region ? "" : ", adjacent regions with one category and label");
    fprintf(out, "  %-29s %3s %15s %13s %13s %11s%s  %-11s %s\n", "range", "", "size",
            "resident", "private", "swapped",
            pss ? "           pss" : pss_mappings && per_region ? "   mapping pss" : "",
            "category", "label");
    text_ctx tc = {out, pss || (pss_mappings && per_region)};
    each_block(s, per_region, text_block, &tc);
}

int cli_cmd_show(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"json", 0, 0, OPT_JSON}, {"regions", 'r', 0, OPT_REGIONS}, {NULL, 0, 0, 0}};
    show_args a = {0, 0, 0};
    const char *pos[1];
    int npos = 0;
    int rc = cli_parse("show", argc, argv, opts, on_opt, &a, pos, 1, &npos);
    if (rc)
        return rc;
    if (a.help) {
        cli_help("show", stdout);
        return CLI_EXIT_OK;
    }
    if (npos != 1)
        return cli_usage_error("show", "expected one snapshot file");
    memdiff_snapshot *s = NULL;
    rc = strcmp(pos[0], "-") == 0 ? memdiff_snapshot_load(stdin, &s)
                                  : memdiff_snapshot_load_file(pos[0], &s);
    if (rc)
        return cli_error("show", rc, "cannot load the snapshot");
    memdiff_report_options ro = MEMDIFF_REPORT_OPTIONS_INIT;
    ro.flags = a.regions ? MEMDIFF_REPORT_REGIONS : 0;
    if (a.json)
        rc = memdiff_snapshot_report_json(s, stdout, &ro);
    else
        show_text(s, a.regions, stdout);
    memdiff_snapshot_free(s);
    if (rc)
        return cli_error("show", rc, "cannot write the report");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "memdiff show: cannot write the output\n");
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}
