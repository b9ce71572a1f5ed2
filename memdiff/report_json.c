/*
 * report_json.c - a diff as one JSON object; the schema, field by field, is docs/json-report.md.
 *
 * Strings are labels and paths that a process chose (file names may hold any byte but NUL), so
 * they are escaped for JSON (RFC 8259): quote, backslash and control characters escaped, DEL as
 * \u007f, valid UTF-8 passed through, and every byte that is not part of valid UTF-8 written as
 * \ufffd (U+FFFD REPLACEMENT CHARACTER), so that the output is always valid UTF-8 and valid JSON.
 * Byte counts are exact decimal integers (beyond 2^53 some parsers round them); addresses are
 * hex strings. Output is deterministic for a diff: no allocation, no locale.
 */
#include <inttypes.h>
#include <string.h>

#include "internal.h"

static void put_string(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    fputc('"', out);
    while (n > 0) {
        size_t len = memdiff__utf8_len(p, n);
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\b':
            fputs("\\b", out);
            break;
        case '\f':
            fputs("\\f", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            if (len == 0)
                fputs("\\ufffd", out);
            else if (*p < 0x20 || *p == 0x7F)
                fprintf(out, "\\u%04x", *p);
            else
                fwrite(p, 1, len, out);
        }
        if (len == 0)
            len = 1;
        p += len;
        n -= len;
    }
    fputc('"', out);
}

/* pss: the diff knows PSS; else its PSS figures (0, unknown) are left out. */
static void put_totals(FILE *out, const memdiff_totals *t, int pss)
{
    fprintf(out,
            "{\"new_bytes\": %" PRIu64 ", \"new_private_bytes\": %" PRIu64
            ", \"new_shared_bytes\": %" PRIu64 ", \"freed_bytes\": %" PRIu64
            ", \"freed_unmapped_bytes\": %" PRIu64 ", \"freed_discarded_bytes\": %" PRIu64
            ", \"freed_swapped_bytes\": %" PRIu64 ", \"replaced_bytes\": %" PRIu64
            ", \"became_private_bytes\": %" PRIu64 ", \"became_shared_bytes\": %" PRIu64
            ", \"net_bytes\": %" PRId64,
            t->new_bytes, t->new_private_bytes, t->new_shared_bytes, t->freed_bytes,
            t->freed_unmapped_bytes, t->freed_discarded_bytes, t->freed_swapped_bytes,
            t->replaced_bytes, t->became_private_bytes, t->became_shared_bytes, t->net_bytes);
    if (pss)
        fprintf(out, ", \"new_pss_bytes\": %" PRIu64 ", \"freed_pss_bytes\": %" PRIu64,
                t->new_pss_bytes, t->freed_pss_bytes);
    fputc('}', out);
}

/* A JSON array of the names of the bits set in bits; names(bit) is NULL for unknown bits, which
 * are left out. */
static void put_names(FILE *out, unsigned bits, const char *(*names)(unsigned bit))
{
    int first = 1;
    fputc('[', out);
    for (unsigned bit = 1; bit != 0; bit <<= 1) {
        const char *name = (bits & bit) ? names(bit) : NULL;
        if (name) {
            fprintf(out, "%s\"%s\"", first ? "" : ", ", name);
            first = 0;
        }
    }
    fputc(']', out);
}

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

/* One figure object per category but Own, keyed by name, in category order, one per line
 * after indent. */
static void put_categories(FILE *out, const char *indent, const memdiff_diff *diff,
                           void (*put)(FILE *out, const memdiff_diff *diff, int category))
{
    for (int c = 0, first = 1; c < MEMDIFF_CAT_COUNT; c++) {
        if (c == MEMDIFF_CAT_OWN)
            continue;
        fprintf(out, "%s%s\"%s\": ", first ? "" : ",\n", indent,
                memdiff_category_name((memdiff_category)c));
        put(out, diff, c);
        first = 0;
    }
}

static void put_category_totals(FILE *out, const memdiff_diff *diff, int category)
{
    put_totals(out, &diff->category[category], memdiff__diff_knows_pss(diff));
}

static void put_impact(FILE *out, const memdiff_impact *m)
{
    fprintf(out,
            "{\"touched_bytes\": %" PRIu64 ", \"persistent_bytes\": %" PRIu64
            ", \"impacting_bytes\": %" PRIu64 ", \"transient_bytes\": %" PRIu64
            ", \"touched_estimated_bytes\": %" PRIu64 ", \"touched_max_bytes\": %" PRIu64 "}",
            m->touched_bytes, m->persistent_bytes, m->impacting_bytes, m->transient_bytes,
            m->touched_estimated_bytes, m->touched_max_bytes);
}

static void put_category_impact(FILE *out, const memdiff_diff *diff, int category)
{
    put_impact(out, &diff->impact_category[category]);
}

/* A reference-set bracket's figures (docs/json-report.md, "bracket"). */
static void put_bracket(FILE *out, const memdiff_diff *diff)
{
    const memdiff_refset_info *in = &diff->refs;
    fputs("  \"bracket\": {\n    \"sources\": ", out);
    put_names(out, in->sources, refs_source_name);
    fputs(",\n    \"degraded\": ", out);
    put_string(out, in->degraded);
    fprintf(out,
            ",\n    \"begin_rss_bytes\": %" PRIu64 ",\n    \"end_rss_bytes\": %" PRIu64
            ",\n    \"peak_bytes\": %" PRIu64 ",\n    \"peak_slack_bytes\": %" PRIu64
            ",\n    \"transient_bytes\": %" PRIu64 ",\n    \"untracked_bytes\": %" PRIu64
            ",\n    \"impact\": ",
            in->begin_rss_bytes, in->end_rss_bytes, in->peak_bytes, in->peak_slack_bytes,
            in->transient_bytes, in->untracked_bytes);
    put_impact(out, &diff->impact);
    fputs(",\n    \"own\": ", out);
    put_impact(out, &diff->impact_category[MEMDIFF_CAT_OWN]);
    fputs(",\n    \"categories\": {\n", out);
    put_categories(out, "      ", diff, put_category_impact);
    fputs("\n    }\n  },\n", out);
}

static void put_info(FILE *out, const char *key, const memdiff_snapshot_info *i)
{
    const memdiff_process_totals *p = &i->totals;
    fprintf(out, "  \"%s\": {\n    \"pid\": %d,\n    \"depth\": \"%s\",\n", key, i->pid,
            memdiff_depth_name(i->depth));
    fprintf(out, "    \"depth_requested\": \"%s\",\n    \"sources\": ",
            memdiff_depth_name(i->depth_requested));
    put_names(out, i->sources, source_name);
    fputs(",\n    \"degraded\": ", out);
    put_string(out, i->degraded);
    fprintf(out, ",\n    \"page_size\": %" PRIu32 ",\n    \"time_ns\": %" PRIu64 ",\n",
            i->page_size, i->time_ns);
    fputs("    \"host\": ", out);
    put_string(out, i->host);
    fprintf(out,
            ",\n    \"region_count\": %zu,\n    \"run_count\": %zu,\n"
            "    \"resident_bytes\": %" PRIu64 ",\n    \"private_bytes\": %" PRIu64 ",\n"
            "    \"shared_bytes\": %" PRIu64 ",\n    \"swapped_bytes\": %" PRIu64 ",\n"
            "    \"own_bytes\": %" PRIu64 ",\n    \"storage_bytes\": %" PRIu64 ",\n",
            i->region_count, i->run_count, i->resident_bytes, i->private_bytes, i->shared_bytes,
            i->swapped_bytes, i->own_bytes, i->storage_bytes);
    if (memdiff__knows_pss(i))
        fprintf(out, "    \"pss_bytes\": %" PRIu64 ",\n", i->pss_bytes);
    fprintf(out,
            "    \"process\": {\"vm_size\": %" PRIu64 ", \"vm_rss\": %" PRIu64
            ", \"vm_hwm\": %" PRIu64 ", \"rss_anon\": %" PRIu64 ", \"rss_file\": %" PRIu64
            ", \"rss_shmem\": %" PRIu64 ", \"vm_pte\": %" PRIu64 ", \"vm_swap\": %" PRIu64 "}\n",
            p->vm_size, p->vm_rss, p->vm_hwm, p->rss_anon, p->rss_file, p->rss_shmem, p->vm_pte,
            p->vm_swap);
    fputs("  },\n", out);
}

static const char *presence_name(unsigned bit)
{
    return bit == MEMDIFF_IN_BEFORE ? "before" : bit == MEMDIFF_IN_AFTER ? "after" : NULL;
}

static void put_block(FILE *out, const memdiff_block *k, int verbose, int pss,
                      const memdiff_impact *m)
{
    fprintf(out, "    {\"start\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64
                 "\", \"category\": \"%s\", ",
            k->start, k->end, memdiff_category_name(k->category));
    fputs("\"label\": ", out);
    put_string(out, k->label);
    fprintf(out, ", \"change\": \"%s\", \"presence\": ", memdiff_change_name(k->change));
    put_names(out, k->presence, presence_name);
    fputs(", \"totals\": ", out);
    put_totals(out, &k->totals, pss);
    if (verbose) {
        fputs(", \"attrs_before\": ", out);
        put_names(out, k->attrs_before, memdiff__page_attr_name);
        fputs(", \"attrs_after\": ", out);
        put_names(out, k->attrs_after, memdiff__page_attr_name);
    }
    if (m) {
        fputs(", \"impact\": ", out);
        put_impact(out, m);
    }
    fputc('}', out);
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
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    const memdiff_block **list;
    size_t n;
    rc = memdiff__report_diff_blocks(diff, &o, &scratch, &list, &n);
    if (rc != MEMDIFF_OK) {
        memdiff__arena_release(&scratch);
        return rc;
    }
    unsigned flags = o.flags;
    int verbose = (diff->flags & MEMDIFF_COMPARE_VERBOSE) != 0;
    fputs("{\n  \"version\": 2,\n", out);
    if (!(flags & MEMDIFF_REPORT_NO_HEADER)) {
        put_info(out, "before", &diff->info[0]);
        put_info(out, "after", &diff->info[1]);
    }
    fprintf(out, "  \"verbose\": %s,\n  \"totals\": ", verbose ? "true" : "false");
    int pss = memdiff__diff_knows_pss(diff);
    put_totals(out, &diff->total, pss);
    fputs(",\n  \"own\": ", out);
    put_totals(out, &diff->category[MEMDIFF_CAT_OWN], pss);
    fputs(",\n  \"categories\": {\n", out);
    put_categories(out, "    ", diff, put_category_totals);
    fputs("\n  },\n", out);
    if (diff->bracket)
        put_bracket(out, diff);
    fputs("  \"blocks\": [", out);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n" : "\n", out);
        put_block(out, list[i], verbose, pss, diff->bracket ? &list[i]->impact : NULL);
    }
    fputs(n ? "\n  ]\n}\n" : "]\n}\n", out);
    memdiff__arena_release(&scratch);
    /* A stream reports write errors late (buffered): flush before asking. */
    if (fflush(out) != 0 || ferror(out))
        return memdiff__set_error(MEMDIFF_EIO, "memdiff_report_json: writing the report failed");
    return MEMDIFF_OK;
}
