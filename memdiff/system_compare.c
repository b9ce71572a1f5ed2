/*
 * system_compare.c - two system snapshots into a system diff: processes matched by pid and
 * start time (a reused pid is one process that exited and another that started), each with
 * its change and the differences of its figures; the physical tables' rows matched by kind,
 * owner and process, with their bytes before and after. The diff copies what it hands out
 * (strings included) into its own arena and outlives both snapshots.
 */
#include <string.h>

#include "system.h"

const char *memdiff_sysproc_change_name(memdiff_sysproc_change change)
{
    static const char *const names[] = {"same",   "started", "exited", "grew",
                                        "shrank", "changed", "unknown"};
    return (unsigned)change < sizeof names / sizeof names[0] ? names[change] : "invalid";
}

static const char *copy_str(memdiff_system_diff *d, const char *s)
{
    if (!s)
        return NULL;
    return memdiff__arena_strndup(&d->arena, s, strlen(s));
}

static int copy_info(memdiff_system_diff *d, memdiff_system_info *dst,
                     const memdiff_system_info *src)
{
    *dst = *src;
    dst->host = copy_str(d, src->host);
    dst->boot_id = copy_str(d, src->boot_id);
    dst->hidden = copy_str(d, src->hidden);
    dst->degraded = copy_str(d, src->degraded);
    if ((src->host && !dst->host) || (src->boot_id && !dst->boot_id) ||
        (src->hidden && !dst->hidden) || (src->degraded && !dst->degraded))
        return MEMDIFF_ENOMEM;
    return MEMDIFF_OK;
}

static int copy_proc(memdiff_system_diff *d, memdiff_sysproc *dst, const memdiff_sysproc *src)
{
    *dst = *src;
    dst->name = copy_str(d, src->name);
    dst->cmdline = copy_str(d, src->cmdline);
    dst->why = copy_str(d, src->why);
    return dst->name && dst->cmdline && dst->why ? MEMDIFF_OK : MEMDIFF_ENOMEM;
}

/* Every figure of p at most INT64_MAX, so that the differences are exact. */
static int in_range(const memdiff_sysproc *p)
{
    const uint64_t v[] = {p->rss_bytes,      p->pss_bytes,      p->uss_bytes,
                          p->swap_bytes,     p->swap_pss_bytes, p->rss_anon_bytes,
                          p->rss_file_bytes, p->rss_shmem_bytes};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i] > MEMDIFF__FIGURE_MAX)
            return 0;
    return 1;
}

static memdiff_sysproc_change change_of(const memdiff_sysproc_diff *pd)
{
    const memdiff_sysproc *b = &pd->before, *a = &pd->after;
    if (pd->before_index == (size_t)-1)
        return MEMDIFF_SYSCHG_STARTED;
    if (pd->after_index == (size_t)-1 || a->state == MEMDIFF_SYSPROC_EXITED)
        return MEMDIFF_SYSCHG_EXITED;
    if (b->state != MEMDIFF_SYSPROC_READ || a->state != MEMDIFF_SYSPROC_READ)
        return MEMDIFF_SYSCHG_UNKNOWN;
    int64_t held = pd->rss_bytes + pd->swap_bytes;
    if (held > 0)
        return MEMDIFF_SYSCHG_GREW;
    if (held < 0)
        return MEMDIFF_SYSCHG_SHRANK;
    if (pd->pss_bytes || pd->uss_bytes || pd->swap_pss_bytes || pd->rss_anon_bytes ||
        pd->rss_file_bytes || pd->rss_shmem_bytes)
        return MEMDIFF_SYSCHG_CHANGED;
    return MEMDIFF_SYSCHG_SAME;
}

/* One process of the diff: in before (bi), after (ai) or both; SIZE_MAX for a side without. */
static int add_proc(memdiff_system_diff *d, const memdiff_system *before,
                    const memdiff_system *after, size_t bi, size_t ai)
{
    memdiff_sysproc_diff *pd = &d->procs[d->nprocs];
    memset(pd, 0, sizeof *pd);
    pd->before.name = pd->before.cmdline = pd->before.why = "";
    pd->after = pd->before;
    pd->before_index = bi;
    pd->after_index = ai;
    int rc = MEMDIFF_OK;
    if (bi != (size_t)-1)
        rc = copy_proc(d, &pd->before, &before->procs[bi]);
    if (!rc && ai != (size_t)-1)
        rc = copy_proc(d, &pd->after, &after->procs[ai]);
    if (rc)
        return rc;
    const memdiff_sysproc *b = &pd->before, *a = &pd->after;
    if (!in_range(b) || !in_range(a))
        return memdiff__set_error(MEMDIFF_ERANGE, "process %d: a figure above INT64_MAX",
                                  a->pid ? a->pid : b->pid);
    pd->rss_bytes = memdiff__sub_sat(a->rss_bytes, b->rss_bytes);
    pd->pss_bytes = memdiff__sub_sat(a->pss_bytes, b->pss_bytes);
    pd->uss_bytes = memdiff__sub_sat(a->uss_bytes, b->uss_bytes);
    pd->swap_bytes = memdiff__sub_sat(a->swap_bytes, b->swap_bytes);
    pd->swap_pss_bytes = memdiff__sub_sat(a->swap_pss_bytes, b->swap_pss_bytes);
    pd->rss_anon_bytes = memdiff__sub_sat(a->rss_anon_bytes, b->rss_anon_bytes);
    pd->rss_file_bytes = memdiff__sub_sat(a->rss_file_bytes, b->rss_file_bytes);
    pd->rss_shmem_bytes = memdiff__sub_sat(a->rss_shmem_bytes, b->rss_shmem_bytes);
    pd->change = change_of(pd);
    d->nprocs++;
    return MEMDIFF_OK;
}

static int merge_procs(memdiff_system_diff *d, const memdiff_system *b, const memdiff_system *a)
{
    size_t cap = b->nprocs + a->nprocs;
    d->procs = memdiff__arena_alloc(&d->arena, (cap ? cap : 1) * sizeof *d->procs);
    if (!d->procs)
        return MEMDIFF_ENOMEM;
    size_t i = 0, j = 0;
    int rc = MEMDIFF_OK;
    while (!rc && (i < b->nprocs || j < a->nprocs)) {
        int cmp;
        if (i == b->nprocs)
            cmp = 1;
        else if (j == a->nprocs)
            cmp = -1;
        else {
            const memdiff_sysproc *x = &b->procs[i], *y = &a->procs[j];
            cmp = x->pid != y->pid ? (x->pid < y->pid ? -1 : 1)
                                   : x->start_ticks < y->start_ticks ? -1
                                   : x->start_ticks > y->start_ticks ? 1
                                                                      : 0;
        }
        if (cmp < 0)
            rc = add_proc(d, b, a, i++, (size_t)-1);
        else if (cmp > 0)
            rc = add_proc(d, b, a, (size_t)-1, j++);
        else
            rc = add_proc(d, b, a, i++, j++);
    }
    return rc;
}

static int merge_rows(memdiff_system_diff *d, const memdiff_system *b, const memdiff_system *a)
{
    size_t cap = b->nrows + a->nrows;
    d->rows = memdiff__arena_alloc(&d->arena, (cap ? cap : 1) * sizeof *d->rows);
    if (!d->rows)
        return MEMDIFF_ENOMEM;
    size_t i = 0, j = 0;
    while (i < b->nrows || j < a->nrows) {
        const memdiff_phys_row *x = i < b->nrows ? &b->rows[i] : NULL;
        const memdiff_phys_row *y = j < a->nrows ? &a->rows[j] : NULL;
        int cmp = !x ? 1
                  : !y ? -1
                       : memdiff__phys_row_cmp(x->kind, x->owner, x->pid, x->start_ticks,
                                               y->kind, y->owner, y->pid, y->start_ticks);
        const memdiff_phys_row *r = cmp <= 0 ? x : y;
        if (r->bytes > MEMDIFF__FIGURE_MAX || (cmp == 0 && y->bytes > MEMDIFF__FIGURE_MAX))
            return memdiff__set_error(MEMDIFF_ERANGE, "a physical table row above INT64_MAX");
        memdiff_phys_row_diff *rd = &d->rows[d->nrows++];
        memset(rd, 0, sizeof *rd);
        rd->kind = r->kind;
        rd->owner = r->owner;
        rd->pid = r->pid;
        rd->start_ticks = r->start_ticks;
        rd->before_bytes = cmp <= 0 ? x->bytes : 0;
        rd->after_bytes = cmp >= 0 ? y->bytes : 0;
        rd->delta_bytes = memdiff__sub_sat(rd->after_bytes, rd->before_bytes);
        i += cmp <= 0;
        j += cmp >= 0;
    }
    return MEMDIFF_OK;
}

int memdiff_system_compare(const memdiff_system *before, const memdiff_system *after,
                           unsigned flags, memdiff_system_diff **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_compare: out is NULL");
    *out = NULL;
    if (!before || !after)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_compare: NULL snapshot");
    if (flags & ~(unsigned)MEMDIFF_COMPARE_FORCE)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_compare: unknown flags 0x%x",
                                  flags);
    const memdiff_system_info *bi = &before->info, *ai = &after->info;
    if (bi->page_size != ai->page_size)
        return memdiff__set_error(MEMDIFF_EMISMATCH, "page sizes differ: %u and %u",
                                  (unsigned)bi->page_size, (unsigned)ai->page_size);
    if (!(flags & MEMDIFF_COMPARE_FORCE)) {
        const char *bh = bi->host ? bi->host : "", *ah = ai->host ? ai->host : "";
        const char *bb = bi->boot_id ? bi->boot_id : "", *ab = ai->boot_id ? ai->boot_id : "";
        if (strcmp(bh, ah) != 0)
            return memdiff__set_error(MEMDIFF_EMISMATCH, "hosts differ: %s and %s", bh, ah);
        if (bb[0] && ab[0] && strcmp(bb, ab) != 0)
            return memdiff__set_error(MEMDIFF_EMISMATCH, "boot ids differ (%s and %s): pids "
                                                         "and start times name other "
                                                         "processes after a reboot",
                                      bb, ab);
    }
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff_system_diff *d = memdiff__arena_alloc(&a, sizeof *d);
    if (!d)
        return MEMDIFF_ENOMEM;
    d->arena = a;
    int rc = copy_info(d, &d->before, bi);
    if (!rc)
        rc = copy_info(d, &d->after, ai);
    if (!rc)
        rc = merge_procs(d, before, after);
    if (!rc)
        rc = merge_rows(d, before, after);
    d->phys_before = before->phys;
    d->phys_after = after->phys;
    if (rc) {
        memdiff_system_diff_free(d);
        return rc;
    }
    *out = d;
    return MEMDIFF_OK;
}

void memdiff_system_diff_free(memdiff_system_diff *diff)
{
    if (diff) {
        memdiff__arena a = diff->arena;
        memdiff__arena_release(&a);
    }
}

int memdiff_system_diff_info(const memdiff_system_diff *diff, memdiff_system_info *before,
                             memdiff_system_info *after)
{
    if (!diff || !before || !after)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_diff_info: NULL argument");
    *before = diff->before;
    *after = diff->after;
    return MEMDIFF_OK;
}

size_t memdiff_system_diff_process_count(const memdiff_system_diff *diff)
{
    return diff ? diff->nprocs : 0;
}

int memdiff_system_diff_process(const memdiff_system_diff *diff, size_t index,
                                memdiff_sysproc_diff *out)
{
    if (!diff || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_diff_process: NULL argument");
    if (index >= diff->nprocs)
        return memdiff__set_error(MEMDIFF_ERANGE, "memdiff_system_diff_process: index %zu of "
                                                  "%zu",
                                  index, diff->nprocs);
    *out = diff->procs[index];
    return MEMDIFF_OK;
}

size_t memdiff_system_diff_changed(const memdiff_system_diff *diff,
                                   memdiff_sysproc_change change)
{
    size_t n = 0;
    for (size_t i = 0; diff && i < diff->nprocs; i++)
        n += diff->procs[i].change == change;
    return n;
}

size_t memdiff_system_diff_phys_count(const memdiff_system_diff *diff)
{
    return diff ? diff->nrows : 0;
}

int memdiff_system_diff_phys_row(const memdiff_system_diff *diff, size_t index,
                                 memdiff_phys_row_diff *out)
{
    if (!diff || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_diff_phys_row: NULL argument");
    if (index >= diff->nrows)
        return memdiff__set_error(MEMDIFF_ERANGE, "memdiff_system_diff_phys_row: index %zu of "
                                                  "%zu",
                                  index, diff->nrows);
    *out = diff->rows[index];
    return MEMDIFF_OK;
}

int memdiff_system_diff_phys_bytes(const memdiff_system_diff *diff, memdiff_frame_kind kind,
                                   memdiff_frame_owner owner, uint64_t *before, uint64_t *after)
{
    if (!diff || !before || !after || (unsigned)kind > MEMDIFF_FRAME_ALL ||
        (unsigned)owner > MEMDIFF_OWNER_ALL)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_diff_phys_bytes: bad "
                                                  "argument");
    *before = *after = 0;
    if (!diff->phys_before || !diff->phys_after)
        return memdiff__set_error(MEMDIFF_ENOTSUP, "the %s snapshot has no physical table",
                                  diff->phys_before ? "after" : "before");
    for (size_t i = 0; i < diff->nrows; i++) {
        const memdiff_phys_row_diff *r = &diff->rows[i];
        if ((kind == MEMDIFF_FRAME_ALL || r->kind == kind) &&
            (owner == MEMDIFF_OWNER_ALL || r->owner == owner)) {
            *before += r->before_bytes;
            *after += r->after_bytes;
        }
    }
    return MEMDIFF_OK;
}
