/*
 * report_system_json.c - system snapshots and system diffs as JSON documents of "kind": "system"
 * and "system-diff" (schema version 3, docs/json-report.md, docs/schema/memdiff.schema.json),
 * through json.c like every other document: counts exact in jq, strings escaped, RFC 3339 times.
 */
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "json.h"

static const char *exact_name(unsigned bit)
{
    switch (bit) {
    case MEMDIFF_SYSPROC_EXACT_RSS:
        return "rss";
    case MEMDIFF_SYSPROC_EXACT_PSS:
        return "pss";
    case MEMDIFF_SYSPROC_EXACT_USS:
        return "uss";
    case MEMDIFF_SYSPROC_EXACT_SWAP:
        return "swap";
    case MEMDIFF_SYSPROC_EXACT_SWAP_PSS:
        return "swap-pss";
    case MEMDIFF_SYSPROC_EXACT_ANON:
        return "anon";
    case MEMDIFF_SYSPROC_EXACT_SPLIT:
        return "split";
    }
    return NULL;
}

static void put_info(memdiff__json *j, const char *key, const memdiff_system_info *i)
{
    memdiff__json_open(j, key, '{', 0);
    memdiff__json_string(j, "host", i->host);
    memdiff__json_time(j, "time", i->time_ns);
    memdiff__json_seconds(j, "duration_s", i->duration_ns);
    memdiff__json_seconds(j, "processes_s", i->processes_ns);
    /* No table, no time of its own: null rather than a 0 jq would turn into an integer. */
    if (i->phys_frames)
        memdiff__json_seconds(j, "phys_s", i->phys_ns);
    else
        memdiff__json_null(j, "phys_s");
    memdiff__json_uint(j, "page_size", i->page_size);
    memdiff__json_string(j, "boot_id", i->boot_id);
    memdiff__json_uint(j, "boot_time_s", i->boot_time_s);
    memdiff__json_uint(j, "clock_ticks", i->clock_ticks);
    memdiff__json_names(j, "sources", i->sources, memdiff__sys_source_name);
    memdiff__json_bool(j, "privileged", i->privileged);
    memdiff__json_uint(j, "processes", i->processes);
    memdiff__json_uint(j, "processes_read", i->processes_read);
    memdiff__json_uint(j, "processes_unreadable", i->processes_unreadable);
    memdiff__json_uint(j, "processes_exited", i->processes_exited);
    memdiff__json_uint(j, "kernel_threads", i->kernel_threads);
    memdiff__json_string(j, "hidden", i->hidden);
    memdiff__json_string(j, "degraded", i->degraded);
    memdiff__json_uint(j, "phys_frames", i->phys_frames);
    memdiff__json_uint(j, "phys_hole_frames", i->phys_hole_frames);
    memdiff__json_uint(j, "phys_conflict_frames", i->phys_conflict_frames);
    memdiff__json_close(j);
}

/* The figures of a process (or of a change: signed). */
static void put_figures(memdiff__json *j, const memdiff_sysproc *p)
{
    memdiff__json_uint(j, "rss_bytes", p->rss_bytes);
    memdiff__json_uint(j, "pss_bytes", p->pss_bytes);
    memdiff__json_uint(j, "uss_bytes", p->uss_bytes);
    memdiff__json_uint(j, "swap_bytes", p->swap_bytes);
    memdiff__json_uint(j, "swap_pss_bytes", p->swap_pss_bytes);
    memdiff__json_uint(j, "rss_anon_bytes", p->rss_anon_bytes);
    memdiff__json_uint(j, "rss_file_bytes", p->rss_file_bytes);
    memdiff__json_uint(j, "rss_shmem_bytes", p->rss_shmem_bytes);
}

static void put_process(memdiff__json *j, const char *key, const memdiff_sysproc *p)
{
    memdiff__json_open(j, key, '{', 1);
    memdiff__json_int(j, "pid", p->pid);
    memdiff__json_int(j, "ppid", p->ppid);
    memdiff__json_uint(j, "uid", p->uid);
    memdiff__json_uint(j, "start_ticks", p->start_ticks);
    memdiff__json_string(j, "name", p->name);
    memdiff__json_string(j, "cmdline", p->cmdline);
    memdiff__json_string(j, "state", memdiff_sysproc_state_name(p->state));
    if (p->state == MEMDIFF_SYSPROC_UNREADABLE) {
        memdiff__json_string(j, "error", memdiff_status_name(p->error));
        memdiff__json_string(j, "why", p->why);
    } else {
        memdiff__json_null(j, "error");
        memdiff__json_null(j, "why");
    }
    memdiff__json_names(j, "exact", p->exact, exact_name);
    put_figures(j, p);
    memdiff__json_close(j);
}

/* Bytes by kind and by owner (get: a snapshot's, or a diff's before or after side). */
typedef int (*phys_sum)(const void *src, int side, memdiff_frame_kind kind,
                        memdiff_frame_owner owner, uint64_t *out);

static void put_sums(memdiff__json *j, const void *src, int side, phys_sum get)
{
    uint64_t v = 0;
    memdiff__json_open(j, "kinds", '{', 1);
    for (int k = 0; k < MEMDIFF_FRAME_KIND_COUNT; k++)
        if (get(src, side, (memdiff_frame_kind)k, MEMDIFF_OWNER_ALL, &v) == MEMDIFF_OK)
            memdiff__json_uint(j, memdiff_frame_kind_name((memdiff_frame_kind)k), v);
    memdiff__json_close(j);
    memdiff__json_open(j, "owners", '{', 1);
    for (int o = 0; o < MEMDIFF_OWNER_COUNT; o++)
        if (get(src, side, MEMDIFF_FRAME_ALL, (memdiff_frame_owner)o, &v) == MEMDIFF_OK)
            memdiff__json_uint(j, memdiff_frame_owner_name((memdiff_frame_owner)o), v);
    memdiff__json_close(j);
    if (get(src, side, MEMDIFF_FRAME_ALL, MEMDIFF_OWNER_ALL, &v) == MEMDIFF_OK)
        memdiff__json_uint(j, "total_bytes", v);
}

/* A row of the physical table (or of its change), opened, with what names it. */
static void open_row(memdiff__json *j, memdiff_frame_kind kind, memdiff_frame_owner owner,
                     int pid, uint64_t start_ticks)
{
    memdiff__json_open(j, NULL, '{', 1);
    memdiff__json_string(j, "kind", memdiff_frame_kind_name(kind));
    memdiff__json_string(j, "owner", memdiff_frame_owner_name(owner));
    memdiff__json_int(j, "pid", pid);
    memdiff__json_uint(j, "start_ticks", start_ticks);
}

static int snapshot_sum(const void *src, int side, memdiff_frame_kind kind,
                        memdiff_frame_owner owner, uint64_t *out)
{
    (void)side;
    return memdiff_system_phys_bytes(src, kind, owner, out);
}

static int diff_sum(const void *src, int side, memdiff_frame_kind kind, memdiff_frame_owner owner,
                    uint64_t *out)
{
    uint64_t b = 0, a = 0;
    int rc = memdiff_system_diff_phys_bytes(src, kind, owner, &b, &a);
    *out = side ? a : b;
    return rc;
}

int memdiff_system_report_json(const memdiff_system *system, FILE *out,
                               const memdiff_system_report_options *options)
{
    static const char who[] = "memdiff_system_report_json";
    memdiff__sys_report rep;
    int rc = memdiff__sys_report_begin(&rep, system, NULL, out, options, 1, who);
    if (rc != MEMDIFF_OK)
        return rc;
    const memdiff_system_report_options o = rep.o;
    const memdiff_system_info i = rep.info[0];
    memdiff__json j;
    memdiff__json_init(&j, out, (o.flags & MEMDIFF_REPORT_LINE) != 0);
    memdiff__json_document(&j, "system");
    put_info(&j, "system", &i);
    memdiff__json_string(&j, "sort", memdiff_system_sort_name(o.sort));
    memdiff__json_open(&j, "processes", '[', 0);
    for (size_t k = 0; k < rep.n; k++) {
        memdiff_sysproc p;
        memdiff_system_process(system, rep.list[k], &p);
        put_process(&j, NULL, &p);
    }
    memdiff__json_close(&j);
    if (o.flags & MEMDIFF_REPORT_NO_BLOCKS || !memdiff_system_phys_count(system)) {
        memdiff__json_null(&j, "physical");
    } else {
        memdiff__json_open(&j, "physical", '{', 0);
        put_sums(&j, system, 0, snapshot_sum);
        memdiff__json_open(&j, "rows", '[', 0);
        for (size_t k = 0; k < memdiff_system_phys_count(system); k++) {
            memdiff_phys_row r;
            if (memdiff_system_phys_row(system, k, &r) != MEMDIFF_OK)
                continue;
            open_row(&j, r.kind, r.owner, r.pid, r.start_ticks);
            memdiff__json_uint(&j, "frames", r.frames);
            memdiff__json_uint(&j, "bytes", r.bytes);
            memdiff__json_close(&j);
        }
        memdiff__json_close(&j);
        memdiff__json_open(&j, "reconcile", '[', 0);
        for (size_t k = 0; k < memdiff_system_reconcile_count(system); k++) {
            memdiff_reconcile r;
            if (memdiff_system_reconcile(system, k, &r) != MEMDIFF_OK)
                continue;
            memdiff__json_open(&j, NULL, '{', 1);
            memdiff__json_string(&j, "name", r.name);
            memdiff__json_string(&j, "rule", r.rule);
            memdiff__json_uint(&j, "table_bytes", r.table_bytes);
            memdiff__json_uint(&j, "kernel_bytes", r.kernel_bytes);
            memdiff__json_uint(&j, "bound_bytes", r.bound_bytes);
            memdiff__json_bool(&j, "within", r.within);
            memdiff__json_close(&j);
        }
        memdiff__json_close(&j);
        memdiff__json_close(&j);
    }
    memdiff__json_close(&j);
    memdiff__arena_release(&rep.scratch);
    return memdiff__json_finish(out, who);
}

int memdiff_system_diff_report_json(const memdiff_system_diff *diff, FILE *out,
                                    const memdiff_system_report_options *options)
{
    static const char who[] = "memdiff_system_diff_report_json";
    memdiff__sys_report rep;
    int rc = memdiff__sys_report_begin(&rep, NULL, diff, out, options, 0, who);
    if (rc != MEMDIFF_OK)
        return rc;
    const memdiff_system_report_options o = rep.o;
    const memdiff_system_info b = rep.info[0], a = rep.info[1];
    memdiff__json j;
    memdiff__json_init(&j, out, (o.flags & MEMDIFF_REPORT_LINE) != 0);
    memdiff__json_document(&j, "system-diff");
    put_info(&j, "before", &b);
    put_info(&j, "after", &a);
    memdiff__json_string(&j, "sort", memdiff_system_sort_name(o.sort));
    memdiff__json_open(&j, "changes", '{', 1);
    for (int c = MEMDIFF_SYSCHG_SAME; c <= MEMDIFF_SYSCHG_UNKNOWN; c++)
        memdiff__json_uint(&j, memdiff_sysproc_change_name((memdiff_sysproc_change)c),
                           memdiff_system_diff_changed(diff, (memdiff_sysproc_change)c));
    memdiff__json_close(&j);
    memdiff__json_open(&j, "processes", '[', 0);
    for (size_t k = 0; k < rep.n; k++) {
        memdiff_sysproc_diff d;
        memdiff_system_diff_process(diff, rep.list[k], &d);
        memdiff__json_open(&j, NULL, '{', 0);
        memdiff__json_string(&j, "change", memdiff_sysproc_change_name(d.change));
        if (d.before_index != SIZE_MAX)
            put_process(&j, "before", &d.before);
        else
            memdiff__json_null(&j, "before");
        if (d.after_index != SIZE_MAX)
            put_process(&j, "after", &d.after);
        else
            memdiff__json_null(&j, "after");
        memdiff__json_open(&j, "delta", '{', 1);
        memdiff__json_int(&j, "rss_bytes", d.rss_bytes);
        memdiff__json_int(&j, "pss_bytes", d.pss_bytes);
        memdiff__json_int(&j, "uss_bytes", d.uss_bytes);
        memdiff__json_int(&j, "swap_bytes", d.swap_bytes);
        memdiff__json_int(&j, "swap_pss_bytes", d.swap_pss_bytes);
        memdiff__json_int(&j, "rss_anon_bytes", d.rss_anon_bytes);
        memdiff__json_int(&j, "rss_file_bytes", d.rss_file_bytes);
        memdiff__json_int(&j, "rss_shmem_bytes", d.rss_shmem_bytes);
        memdiff__json_close(&j);
        memdiff__json_close(&j);
    }
    memdiff__json_close(&j);
    if (o.flags & MEMDIFF_REPORT_NO_BLOCKS || !memdiff_system_diff_phys_count(diff) ||
        !b.phys_frames || !a.phys_frames) {
        memdiff__json_null(&j, "physical");
    } else {
        memdiff__json_open(&j, "physical", '{', 0);
        memdiff__json_open(&j, "before", '{', 0);
        put_sums(&j, diff, 0, diff_sum);
        memdiff__json_close(&j);
        memdiff__json_open(&j, "after", '{', 0);
        put_sums(&j, diff, 1, diff_sum);
        memdiff__json_close(&j);
        memdiff__json_open(&j, "rows", '[', 0);
        for (size_t k = 0; k < memdiff_system_diff_phys_count(diff); k++) {
            memdiff_phys_row_diff r;
            if (memdiff_system_diff_phys_row(diff, k, &r) != MEMDIFF_OK || !r.delta_bytes)
                continue; /* the changed rows: the unchanged are in both sums */
            open_row(&j, r.kind, r.owner, r.pid, r.start_ticks);
            memdiff__json_uint(&j, "before_bytes", r.before_bytes);
            memdiff__json_uint(&j, "after_bytes", r.after_bytes);
            memdiff__json_int(&j, "delta_bytes", r.delta_bytes);
            memdiff__json_close(&j);
        }
        memdiff__json_close(&j);
        memdiff__json_close(&j);
    }
    memdiff__json_close(&j);
    memdiff__arena_release(&rep.scratch);
    return memdiff__json_finish(out, who);
}
