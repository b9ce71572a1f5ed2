/*
 * report_json.c - memdiff's JSON documents, schema version 3 (docs/json-report.md, checked by
 * docs/schema/memdiff.schema.json): a diff, a snapshot, a watch tick and a wss sample, each an
 * object with "version" and "kind". All of them are written through json.c, whose rules (strings
 * with a "_hex" sibling when not UTF-8, counts exact in jq, RFC 3339 times) hold for every field.
 * Output is deterministic for its input: no allocation but the report's scratch lists, no
 * locale.
 */
#include <string.h>

#include "internal.h"
#include "json.h"

/* ---- names ----------------------------------------------------------------------------------- */

static const char *source_name(unsigned bit)
{
    switch (bit) {
    case MEMDIFF_SRC_REGIONS:
        return "regions";
    case MEMDIFF_SRC_PAGES:
        return "pages";
    case MEMDIFF_SRC_FRAMES:
        return "frames";
    case MEMDIFF_SRC_PAGE_FLAGS:
        return "page-flags";
    case MEMDIFF_SRC_MAP_COUNTS:
        return "map-counts";
    case MEMDIFF_SRC_PROCESS_TOTALS:
        return "process-totals";
    case MEMDIFF_SRC_THREADS:
        return "threads";
    case MEMDIFF_SRC_HEAPS:
        return "heaps";
    case MEMDIFF_SRC_MODULES:
        return "modules";
    case MEMDIFF_SRC_PAGE_ACCESS:
        return "page-access";
    case MEMDIFF_SRC_PSS:
        return "pss";
    case MEMDIFF_SRC_PSS_MAPPINGS:
        return "pss-mappings";
    }
    return NULL;
}

static const char *refs_source_name(unsigned bit)
{
    switch (bit) {
    case MEMDIFF_REFS_CLEARED:
        return "cleared";
    case MEMDIFF_REFS_MAPPINGS:
        return "mappings";
    case MEMDIFF_REFS_PAGES:
        return "pages";
    case MEMDIFF_REFS_PEAK:
        return "peak";
    }
    return NULL;
}

static const char *presence_name(unsigned bit)
{
    return bit == MEMDIFF_IN_BEFORE ? "before" : bit == MEMDIFF_IN_AFTER ? "after" : NULL;
}

/* ---- pieces every document shares -------------------------------------------------------- */

/* Why a snapshot's figures have no PSS: it is summed from every resident page's map count, or
 * known per mapping only. */
static const char *pss_unknown(const memdiff_snapshot_info *i)
{
    if (i->sources & MEMDIFF_SRC_PSS_MAPPINGS) /* the figures of a watch tick: none divided */
        return "per mapping only (pss-mappings): in the snapshot's total and its regions";
    return i->depth < MEMDIFF_DEPTH_DEEP ? "measured at deep depth only"
                                         : "map counts unavailable (see degraded)";
}

/* pss_bytes: the figure, or null and (with_reason) pss_unknown saying why. with_reason is the
 * snapshot's own total, which PSS per mapping (pss-mappings) knows too; its figures are no
 * category's or block's (docs/api.md, "PSS"). */
static void put_pss(memdiff__json *j, const memdiff_snapshot_info *i, uint64_t pss,
                    int with_reason)
{
    if ((i->sources & MEMDIFF_SRC_PSS) ||
        (with_reason && (i->sources & MEMDIFF_SRC_PSS_MAPPINGS))) {
        memdiff__json_uint(j, "pss_bytes", pss);
        return;
    }
    memdiff__json_null(j, "pss_bytes");
    if (with_reason)
        memdiff__json_string(j, "pss_unknown", pss_unknown(i));
}

/* A snapshot's header: the fields of memdiff_snapshot_info. */
static void put_info(memdiff__json *j, const char *key, const memdiff_snapshot_info *i)
{
    const memdiff_process_totals *p = &i->totals;
    memdiff__json_open(j, key, '{', 0);
    memdiff__json_int(j, "pid", i->pid);
    memdiff__json_string(j, "host", i->host);
    memdiff__json_time(j, "time", i->time_ns);
    memdiff__json_string(j, "depth", memdiff_depth_name(i->depth));
    memdiff__json_string(j, "depth_requested", memdiff_depth_name(i->depth_requested));
    memdiff__json_names(j, "sources", i->sources, source_name);
    memdiff__json_string(j, "degraded", i->degraded);
    memdiff__json_uint(j, "page_size", i->page_size);
    memdiff__json_uint(j, "region_count", i->region_count);
    memdiff__json_uint(j, "run_count", i->run_count);
    memdiff__json_uint(j, "resident_bytes", i->resident_bytes);
    memdiff__json_uint(j, "private_bytes", i->private_bytes);
    memdiff__json_uint(j, "shared_bytes", i->shared_bytes);
    memdiff__json_uint(j, "swapped_bytes", i->swapped_bytes);
    put_pss(j, i, i->pss_bytes, 1);
    memdiff__json_uint(j, "own_bytes", i->own_bytes);
    memdiff__json_uint(j, "storage_bytes", i->storage_bytes);
    memdiff__json_open(j, "process", '{', 1);
    memdiff__json_uint(j, "vm_size", p->vm_size);
    memdiff__json_uint(j, "vm_rss", p->vm_rss);
    memdiff__json_uint(j, "vm_hwm", p->vm_hwm);
    memdiff__json_uint(j, "rss_anon", p->rss_anon);
    memdiff__json_uint(j, "rss_file", p->rss_file);
    memdiff__json_uint(j, "rss_shmem", p->rss_shmem);
    memdiff__json_uint(j, "vm_pte", p->vm_pte);
    memdiff__json_uint(j, "vm_swap", p->vm_swap);
    memdiff__json_close(j);
    memdiff__json_close(j);
}

/* A change: the fields of memdiff_totals (PSS ones when the diff knows PSS). */
static void put_totals(memdiff__json *j, const char *key, const memdiff_totals *t, int pss)
{
    memdiff__json_open(j, key, '{', 1);
    memdiff__json_uint(j, "new_bytes", t->new_bytes);
    memdiff__json_uint(j, "new_private_bytes", t->new_private_bytes);
    memdiff__json_uint(j, "new_shared_bytes", t->new_shared_bytes);
    memdiff__json_uint(j, "freed_bytes", t->freed_bytes);
    memdiff__json_uint(j, "freed_unmapped_bytes", t->freed_unmapped_bytes);
    memdiff__json_uint(j, "freed_discarded_bytes", t->freed_discarded_bytes);
    memdiff__json_uint(j, "freed_swapped_bytes", t->freed_swapped_bytes);
    memdiff__json_uint(j, "replaced_bytes", t->replaced_bytes);
    memdiff__json_uint(j, "became_private_bytes", t->became_private_bytes);
    memdiff__json_uint(j, "became_shared_bytes", t->became_shared_bytes);
    memdiff__json_int(j, "net_bytes", t->net_bytes);
    if (pss) {
        memdiff__json_uint(j, "new_pss_bytes", t->new_pss_bytes);
        memdiff__json_uint(j, "freed_pss_bytes", t->freed_pss_bytes);
    }
    memdiff__json_close(j);
}

/* A snapshot's absolute figures over some regions (a category, all, a block's). The object is
 * left open for the caller to add to. */
static void open_figures(memdiff__json *j, const char *key, const memdiff__snap_sum *x,
                         const memdiff_snapshot_info *i)
{
    memdiff__json_open(j, key, '{', 1);
    memdiff__json_uint(j, "resident_bytes", x->resident_bytes);
    memdiff__json_uint(j, "private_bytes", x->private_bytes);
    memdiff__json_uint(j, "shared_bytes", x->shared_bytes);
    memdiff__json_uint(j, "swapped_bytes", x->swapped_bytes);
    put_pss(j, i, x->pss_bytes, 0);
    memdiff__json_uint(j, "regions", x->regions);
}

/* The sum of every category's figures but Own's. */
static memdiff__snap_sum sum_but_own(const memdiff__snap_sum sums[MEMDIFF_CAT_COUNT])
{
    memdiff__snap_sum t;
    memset(&t, 0, sizeof t);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        if (c == MEMDIFF_CAT_OWN)
            continue;
        t.resident_bytes = memdiff__add_sat(t.resident_bytes, sums[c].resident_bytes);
        t.private_bytes = memdiff__add_sat(t.private_bytes, sums[c].private_bytes);
        t.shared_bytes = memdiff__add_sat(t.shared_bytes, sums[c].shared_bytes);
        t.swapped_bytes = memdiff__add_sat(t.swapped_bytes, sums[c].swapped_bytes);
        t.pss_bytes = memdiff__add_sat(t.pss_bytes, sums[c].pss_bytes);
        t.regions += sums[c].regions;
    }
    return t;
}

/* ---- diff ------------------------------------------------------------------------------------ */

static void put_impact(memdiff__json *j, const char *key, const memdiff_impact *m)
{
    memdiff__json_open(j, key, '{', 1);
    memdiff__json_uint(j, "touched_bytes", m->touched_bytes);
    memdiff__json_uint(j, "persistent_bytes", m->persistent_bytes);
    memdiff__json_uint(j, "impacting_bytes", m->impacting_bytes);
    memdiff__json_uint(j, "transient_bytes", m->transient_bytes);
    memdiff__json_uint(j, "touched_estimated_bytes", m->touched_estimated_bytes);
    memdiff__json_uint(j, "touched_max_bytes", m->touched_max_bytes);
    memdiff__json_close(j);
}

/* A reference-set bracket's figures (docs/json-report.md, "bracket"). */
static void put_bracket(memdiff__json *j, const memdiff_diff *diff,
                        const memdiff_report_options *o)
{
    const memdiff_refset_info *in = &diff->refs;
    memdiff__json_open(j, "bracket", '{', 0);
    memdiff__json_names(j, "sources", in->sources, refs_source_name);
    memdiff__json_string(j, "degraded", in->degraded);
    memdiff__json_uint(j, "begin_rss_bytes", in->begin_rss_bytes);
    memdiff__json_uint(j, "end_rss_bytes", in->end_rss_bytes);
    memdiff__json_uint(j, "peak_bytes", in->peak_bytes);
    memdiff__json_uint(j, "peak_slack_bytes", in->peak_slack_bytes);
    memdiff__json_uint(j, "transient_bytes", in->transient_bytes);
    memdiff__json_uint(j, "untracked_bytes", in->untracked_bytes);
    put_impact(j, "impact", &diff->impact);
    put_impact(j, "own", &diff->impact_category[MEMDIFF_CAT_OWN]);
    memdiff__json_open(j, "categories", '{', 0);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++)
        if (c != MEMDIFF_CAT_OWN && memdiff__report_lists(o, (memdiff_category)c))
            put_impact(j, memdiff_category_name((memdiff_category)c), &diff->impact_category[c]);
    memdiff__json_close(j);
    memdiff__json_close(j);
}

static void put_block(memdiff__json *j, const memdiff_diff *diff, const memdiff_block *k)
{
    memdiff__json_open(j, NULL, '{', 1);
    memdiff__json_address(j, "start", k->start);
    memdiff__json_address(j, "end", k->end);
    memdiff__json_string(j, "category", memdiff_category_name(k->category));
    memdiff__json_string(j, "label", k->label);
    memdiff__json_string(j, "change", memdiff_change_name(k->change));
    memdiff__json_names(j, "presence", k->presence, presence_name);
    put_totals(j, "totals", &k->totals, memdiff__diff_knows_pss(diff));
    if (diff->flags & MEMDIFF_COMPARE_VERBOSE) {
        memdiff__json_names(j, "attrs_before", k->attrs_before, memdiff__page_attr_name);
        memdiff__json_names(j, "attrs_after", k->attrs_after, memdiff__page_attr_name);
    }
    if (diff->bracket)
        put_impact(j, "impact", &k->impact);
    memdiff__json_close(j);
}

/* A diff's blocks as options list them ("blocks"); nothing with MEMDIFF_REPORT_NO_BLOCKS. */
static int put_diff_blocks(memdiff__json *j, const memdiff_diff *diff,
                           const memdiff_report_options *o)
{
    if (o->flags & MEMDIFF_REPORT_NO_BLOCKS)
        return MEMDIFF_OK;
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    const memdiff_block **list;
    size_t n;
    int rc = memdiff__report_diff_blocks(diff, o, &scratch, &list, &n);
    if (rc == MEMDIFF_OK) {
        memdiff__json_open(j, "blocks", '[', 0);
        for (size_t i = 0; i < n; i++)
            put_block(j, diff, list[i]);
        memdiff__json_close(j);
    }
    memdiff__arena_release(&scratch);
    return rc;
}

int memdiff_report_json(const memdiff_diff *diff, FILE *out,
                        const memdiff_report_options *options)
{
    if (!diff || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_report_json: NULL argument");
    memdiff_report_options o;
    int rc = memdiff__report_options(options, "memdiff_report_json", &o);
    if (rc != MEMDIFF_OK)
        return rc;
    memdiff__json j;
    memdiff__json_init(&j, out, (o.flags & MEMDIFF_REPORT_LINE) != 0);
    memdiff__json_document(&j, "diff");
    if (!(o.flags & MEMDIFF_REPORT_NO_HEADER)) {
        put_info(&j, "before", &diff->info[0]);
        put_info(&j, "after", &diff->info[1]);
    }
    memdiff__json_bool(&j, "verbose", (diff->flags & MEMDIFF_COMPARE_VERBOSE) != 0);
    int pss = memdiff__diff_knows_pss(diff);
    put_totals(&j, "totals", &diff->total, pss);
    put_totals(&j, "own", &diff->category[MEMDIFF_CAT_OWN], pss);
    memdiff__json_open(&j, "categories", '{', 0);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++)
        if (c != MEMDIFF_CAT_OWN && memdiff__report_lists(&o, (memdiff_category)c))
            put_totals(&j, memdiff_category_name((memdiff_category)c), &diff->category[c], pss);
    memdiff__json_close(&j);
    if (diff->bracket)
        put_bracket(&j, diff, &o);
    rc = put_diff_blocks(&j, diff, &o);
    if (rc != MEMDIFF_OK)
        return rc;
    memdiff__json_close(&j);
    return memdiff__json_finish(out, "memdiff_report_json");
}

/* ---- snapshot -------------------------------------------------------------------------------- */

/* The arguments of a writer of a snapshot's figures: s and out not NULL, options known; *o
 * the options, *i the snapshot's info. */
static int check_snapshot_args(const char *who, const memdiff_snapshot *s, FILE *out,
                               const memdiff_report_options *options, memdiff_report_options *o,
                               memdiff_snapshot_info *i)
{
    if (!s || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: NULL argument", who);
    int rc = memdiff__report_options(options, who, o);
    return rc != MEMDIFF_OK ? rc : memdiff_snapshot_get_info(s, i);
}

static void put_snap_block(memdiff__json *j, const memdiff__snap_block *b,
                           const memdiff_snapshot_info *i)
{
    const memdiff_region *r = &b->r;
    memdiff__json_open(j, NULL, '{', 1);
    memdiff__json_address(j, "start", r->start);
    memdiff__json_address(j, "end", r->end);
    if (b->regions == 1) {
        char prot[4] = {r->prot & MEMDIFF_PROT_READ ? 'r' : '-',
                        r->prot & MEMDIFF_PROT_WRITE ? 'w' : '-',
                        r->prot & MEMDIFF_PROT_EXEC ? 'x' : '-', '\0'};
        memdiff__json_string(j, "prot", prot);
    } else {
        memdiff__json_null(j, "prot"); /* regions of several protections have no one */
    }
    memdiff__json_uint(j, "regions", b->regions);
    memdiff__json_string(j, "category", memdiff_category_name(r->category));
    memdiff__json_string(j, "label", r->label);
    memdiff__json_string(j, "path", r->path);
    memdiff__json_uint(j, "size_bytes", r->end - r->start);
    memdiff__json_uint(j, "resident_bytes", r->resident_bytes);
    memdiff__json_uint(j, "private_bytes", r->private_bytes);
    memdiff__json_uint(j, "shared_bytes", r->shared_bytes);
    memdiff__json_uint(j, "swapped_bytes", r->swapped_bytes);
    if ((i->sources & MEMDIFF_SRC_PSS_MAPPINGS) && r->pss_end) {
        /* a listed region that begins a mapping: the mapping's figure, to its end */
        memdiff__json_uint(j, "pss_bytes", r->pss_bytes);
        memdiff__json_address(j, "pss_end", r->pss_end);
    } else {
        put_pss(j, i, r->pss_bytes, 0);
    }
    memdiff__json_close(j);
}

/* "totals", "own" and "categories": a snapshot's absolute figures. change: a diff whose after
 * is this snapshot, its change added to each ("change"); NULL: none. */
static void put_snap_figures(memdiff__json *j, const memdiff_snapshot *s,
                             const memdiff_snapshot_info *i, const memdiff_report_options *o,
                             const memdiff_diff *change)
{
    memdiff__snap_sum sums[MEMDIFF_CAT_COUNT];
    memdiff__report_snapshot_sums(s, sums);
    memdiff__snap_sum all = sum_but_own(sums);
    int pss = change && memdiff__diff_knows_pss(change);
    open_figures(j, "totals", &all, i);
    if (change)
        put_totals(j, "change", &change->total, pss);
    memdiff__json_close(j);
    open_figures(j, "own", &sums[MEMDIFF_CAT_OWN], i);
    if (change)
        put_totals(j, "change", &change->category[MEMDIFF_CAT_OWN], pss);
    memdiff__json_close(j);
    memdiff__json_open(j, "categories", '{', 0);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        if (c == MEMDIFF_CAT_OWN || !memdiff__report_lists(o, (memdiff_category)c))
            continue;
        open_figures(j, memdiff_category_name((memdiff_category)c), &sums[c], i);
        if (change)
            put_totals(j, "change", &change->category[c], pss);
        memdiff__json_close(j);
    }
    memdiff__json_close(j);
}

int memdiff_snapshot_report_json(const memdiff_snapshot *snapshot, FILE *out,
                                 const memdiff_report_options *options)
{
    static const char who[] = "memdiff_snapshot_report_json";
    memdiff_report_options o;
    memdiff_snapshot_info i;
    int rc = check_snapshot_args(who, snapshot, out, options, &o, &i);
    if (rc != MEMDIFF_OK)
        return rc;
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    memdiff__snap_block *blocks;
    size_t n;
    rc = memdiff__report_snapshot_blocks(snapshot, &o, &scratch, &blocks, &n);
    if (rc != MEMDIFF_OK) {
        memdiff__arena_release(&scratch);
        return rc;
    }
    memdiff__json j;
    memdiff__json_init(&j, out, (o.flags & MEMDIFF_REPORT_LINE) != 0);
    memdiff__json_document(&j, "snapshot");
    if (!(o.flags & MEMDIFF_REPORT_NO_HEADER))
        put_info(&j, "snapshot", &i);
    put_snap_figures(&j, snapshot, &i, &o, NULL);
    if (!(o.flags & MEMDIFF_REPORT_NO_BLOCKS)) {
        memdiff__json_open(&j, (o.flags & MEMDIFF_REPORT_REGIONS) ? "regions" : "blocks", '[',
                           0);
        for (size_t k = 0; k < n; k++)
            put_snap_block(&j, &blocks[k], &i);
        memdiff__json_close(&j);
    }
    memdiff__json_close(&j);
    memdiff__arena_release(&scratch);
    return memdiff__json_finish(out, who);
}

/* ---- streamed records: watch ticks, wss samples ---------------------------------------------- */

int memdiff_watch_report_json(const memdiff_diff *diff, const memdiff_snapshot *after,
                              unsigned tick, FILE *out, const memdiff_report_options *options)
{
    static const char who[] = "memdiff_watch_report_json";
    if (!diff)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: NULL argument", who);
    memdiff_report_options o;
    memdiff_snapshot_info i;
    int rc = check_snapshot_args(who, after, out, options, &o, &i);
    if (rc != MEMDIFF_OK)
        return rc;
    const memdiff_snapshot_info *a = &diff->info[1];
    if (i.pid != a->pid || i.time_ns != a->time_ns || i.region_count != a->region_count)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: the snapshot is not the diff's after "
                                                  "snapshot", who);
    memdiff__json j;
    memdiff__json_init(&j, out, (o.flags & MEMDIFF_REPORT_LINE) != 0);
    memdiff__json_document(&j, "watch");
    memdiff__json_uint(&j, "tick", tick);
    memdiff__json_int(&j, "pid", i.pid);
    memdiff__json_time(&j, "time", i.time_ns);
    memdiff__json_time(&j, "since", diff->info[0].time_ns);
    if (!(i.sources & MEMDIFF_SRC_PSS))
        memdiff__json_string(&j, "pss_unknown", pss_unknown(&i));
    if (!(o.flags & MEMDIFF_REPORT_NO_HEADER))
        put_info(&j, "after", &i);
    put_snap_figures(&j, after, &i, &o, diff);
    rc = put_diff_blocks(&j, diff, &o);
    if (rc != MEMDIFF_OK)
        return rc;
    memdiff__json_close(&j);
    return memdiff__json_finish(out, who);
}

static const char *wss_mode_name(memdiff_wss_mode mode)
{
    return mode == MEMDIFF_WSS_CUMULATIVE ? "cumulative"
           : mode == MEMDIFF_WSS_PROFILE  ? "profile"
                                          : "interval";
}

int memdiff_wss_report_json(const memdiff_wss_options *run, const memdiff_wss_sample *sample,
                            FILE *out, const memdiff_report_options *options)
{
    static const char who[] = "memdiff_wss_report_json";
    if (!run || !sample || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: NULL argument", who);
    memdiff_report_options o;
    int rc = memdiff__report_options(options, who, &o);
    if (rc != MEMDIFF_OK)
        return rc;
    if ((unsigned)run->mode > MEMDIFF_WSS_PROFILE)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown mode %d", who, (int)run->mode);
    memdiff__json j;
    memdiff__json_init(&j, out, (o.flags & MEMDIFF_REPORT_LINE) != 0);
    memdiff__json_document(&j, "wss");
    memdiff__json_int(&j, "pid", run->pid);
    memdiff__json_string(&j, "mode", wss_mode_name(run->mode));
    memdiff__json_seconds(&j, "interval_s", run->interval_ns);
    memdiff__json_uint(&j, "index", sample->index);
    memdiff__json_time(&j, "time", sample->time_ns);
    memdiff__json_seconds(&j, "span_s", sample->span_ns);
    memdiff__json_seconds(&j, "duration_s", sample->duration_ns);
    memdiff__json_seconds(&j, "slept_s", sample->slept_ns);
    memdiff__json_seconds(&j, "clear_s", sample->clear_ns);
    memdiff__json_seconds(&j, "read_s", sample->read_ns);
    memdiff__json_uint(&j, "rss_bytes", sample->rss_bytes);
    memdiff__json_uint(&j, "pss_bytes", sample->pss_bytes);
    memdiff__json_uint(&j, "referenced_bytes", sample->referenced_bytes);
    memdiff__json_close(&j);
    return memdiff__json_finish(out, who);
}
