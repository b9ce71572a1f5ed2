/*
 * classify.c - backend facts to categories and labels, with portable rules only.
 *
 * It runs when the snapshot is taken, so that a snapshot carries its own attribution and can be
 * read later without the live process (MemDiff attributed at compare time and misnamed ranges
 * reused meanwhile). The rules, their sources and their blind spots are in docs/categories.md;
 * the order of the rules below is the order of precedence stated there.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* A module segment, flattened out of the module list so that one sorted pass can find them. */
typedef struct seg_ref {
    uint64_t start, end;
    const memdiff__plat_module *module;
} seg_ref;

/* A sorted, non-overlapping list of labelled ranges walked in step with the regions. */
typedef struct cursor {
    size_t next;
} cursor;

typedef struct classifier {
    const memdiff__facts *f;
    memdiff__arena *arena;
    memdiff__strtab **table;
    seg_ref *segs;
    size_t seg_count;
    int64_t *stack_tid; /* per backend region: the thread whose stack it holds, or 0 */
    const memdiff__plat_region *last_pr; /* the mapping out[count - 1] is a piece of */
    const char *last_label, *last_path;  /* interned last: a module's regions come in a row */
    memdiff__region *out;
    size_t count, cap;
} classifier;

static int seg_less(const seg_ref *a, const seg_ref *b)
{
    return a->start < b->start;
}

/* Segments of different modules never overlap; sorting makes the walk linear. */
static void sort_segs(seg_ref *v, size_t n)
{
    /* Shell sort: no recursion, no allocation, fast enough for thousands of segments. */
    for (size_t gap = n / 2; gap > 0; gap /= 2) {
        for (size_t i = gap; i < n; i++) {
            seg_ref x = v[i];
            size_t j = i;
            while (j >= gap && seg_less(&x, &v[j - gap])) {
                v[j] = v[j - gap];
                j -= gap;
            }
            v[j] = x;
        }
    }
}

static int collect_segments(classifier *c)
{
    const memdiff__facts *f = c->f;
    size_t n = 0;
    for (size_t m = 0; m < f->module_count; m++)
        n += f->modules[m].segment_count;
    if (n == 0)
        return MEMDIFF_OK;
    c->segs = memdiff__arena_alloc(c->arena, n * sizeof *c->segs);
    if (!c->segs)
        return MEMDIFF_ENOMEM;
    for (size_t m = 0; m < f->module_count; m++) {
        const memdiff__plat_module *mod = &f->modules[m];
        for (size_t s = 0; s < mod->segment_count; s++) {
            if (mod->segments[s].end <= mod->segments[s].start)
                continue;
            c->segs[c->seg_count].start = mod->segments[s].start;
            c->segs[c->seg_count].end = mod->segments[s].end;
            c->segs[c->seg_count].module = mod;
            c->seg_count++;
        }
    }
    sort_segs(c->segs, c->seg_count);
    return MEMDIFF_OK;
}

/* Index of the backend region containing addr, or region_count. */
static size_t region_at(const memdiff__facts *f, uint64_t addr)
{
    size_t lo = 0, hi = f->region_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->regions[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < f->region_count && f->regions[lo].start <= addr)
        return lo;
    return f->region_count;
}

/* Which region holds which thread's stack: the one containing its stack pointer, or its
 * reported stack range. The calling thread of a self snapshot is "running" to the backend, so
 * its stack is found from an address on its own stack. */
static int locate_stacks(classifier *c)
{
    const memdiff__facts *f = c->f;
    if (f->region_count == 0)
        return MEMDIFF_OK;
    c->stack_tid = memdiff__arena_alloc(c->arena, f->region_count * sizeof *c->stack_tid);
    if (!c->stack_tid)
        return MEMDIFF_ENOMEM;
    for (size_t t = 0; t < f->thread_count; t++) {
        const memdiff__plat_thread *th = &f->threads[t];
        uint64_t where = th->sp;
        if (!where && th->stack_hi > th->stack_lo)
            where = th->stack_hi - 1;
        if (!where && f->self && th->tid == f->self_tid)
            where = f->self_stack_hint;
        if (!where)
            continue;
        size_t r = region_at(f, where);
        if (r < f->region_count)
            c->stack_tid[r] = th->tid;
    }
    if (f->self && f->self_stack_hint) {
        size_t r = region_at(f, f->self_stack_hint);
        if (r < f->region_count && !c->stack_tid[r])
            c->stack_tid[r] = f->self_tid ? f->self_tid : f->pid;
    }
    return MEMDIFF_OK;
}

/* s interned, the string interned last (*last) checked first: a module's regions, one after
 * another, share a path, and hashing a path of 60 bytes for each of python3's 300 regions was
 * a tenth of a snapshot's own work. */
static const char *intern_next(classifier *c, const char **last, const char *s)
{
    if (*last && strcmp(*last, s) == 0)
        return *last;
    const char *i = memdiff__intern(c->table, c->arena, s);
    if (i)
        *last = i;
    return i;
}

static int emit(classifier *c, const memdiff__plat_region *pr, uint64_t start, uint64_t end,
                memdiff_category cat, const char *label, uint64_t unit)
{
    /* Pieces of one mapping that end up with the same attribution stay one region; pieces of
     * two mappings never merge (memdiff.h: a region is a mapping or a part of one), even when
     * maps prints both alike (a module's read-only data next to its RELRO page). */
    if (c->count > 0 && c->last_pr == pr) {
        memdiff__region *last = &c->out[c->count - 1];
        if (last->end == start && last->category == cat && last->unit == unit &&
            last->dev == pr->dev && last->inode == pr->inode && last->prot == pr->prot &&
            last->flags == pr->flags && strcmp(last->label, label) == 0 &&
            (!(pr->flags & MEMDIFF_REGION_FILE) ||
             last->offset + (last->end - last->start) == pr->offset + (start - pr->start))) {
            last->end = end;
            return MEMDIFF_OK;
        }
    }
    /* Room for every mapping and a few splits at once: a small process's regions then sit in
     * the snapshot's first arena chunk, with no array left behind by a growth. */
    memdiff__region *v = memdiff__arena_room(c->arena, c->out, &c->cap, c->count, sizeof *v,
                                             c->f->region_count + 32);
    if (!v)
        return MEMDIFF_ENOMEM;
    c->out = v;
    const char *ilabel = intern_next(c, &c->last_label, label);
    const char *ipath = intern_next(c, &c->last_path, pr->path ? pr->path : "");
    if (!ilabel || !ipath)
        return MEMDIFF_ENOMEM;
    memdiff__region *r = &c->out[c->count++];
    c->last_pr = pr;
    memset(r, 0, sizeof *r);
    r->start = start;
    r->end = end;
    r->offset = pr->offset + (start - pr->start);
    r->dev = pr->dev;
    r->inode = pr->inode;
    r->prot = pr->prot;
    r->flags = pr->flags;
    r->hint = pr->hint;
    r->category = cat;
    r->label = ilabel;
    r->path = ipath;
    r->unit = unit;
    return MEMDIFF_OK;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int is_shared_memory(const memdiff__plat_region *pr)
{
    if (!(pr->flags & MEMDIFF_REGION_SHARED))
        return 0;
    if (!(pr->flags & MEMDIFF_REGION_FILE))
        return 1; /* MAP_SHARED|MAP_ANONYMOUS: shmem without a name */
    return pr->hint == MEMDIFF__HINT_MEMFD || pr->hint == MEMDIFF__HINT_SYSV_SHM ||
           starts_with(pr->path, "/dev/shm/") || strcmp(pr->path, "/dev/zero") == 0;
}

/* The category of a piece that no heap, own or module range claimed. */
static int classify_plain(classifier *c, size_t ri, uint64_t start, uint64_t end)
{
    const memdiff__facts *f = c->f;
    const memdiff__plat_region *pr = &f->regions[ri];
    char buf[96];
    uint64_t unit = pr->alloc_base ? pr->alloc_base : pr->start;

    switch (pr->hint) {
    case MEMDIFF__HINT_VDSO:
        return emit(c, pr, start, end, MEMDIFF_CAT_SPECIAL, "[vdso]", pr->start);
    case MEMDIFF__HINT_VVAR:
        return emit(c, pr, start, end, MEMDIFF_CAT_SPECIAL, "[vvar]", pr->start);
    case MEMDIFF__HINT_VSYSCALL:
        return emit(c, pr, start, end, MEMDIFF_CAT_SPECIAL, "[vsyscall]", pr->start);
    case MEMDIFF__HINT_PEB_TEB:
        return emit(c, pr, start, end, MEMDIFF_CAT_SPECIAL, pr->name[0] ? pr->name : "PEB/TEB",
                    unit);
    case MEMDIFF__HINT_MAIN_STACK:
        snprintf(buf, sizeof buf, "thread %d", f->pid);
        return emit(c, pr, start, end, MEMDIFF_CAT_STACK, buf, (uint64_t)f->pid);
    case MEMDIFF__HINT_BRK_HEAP:
        return emit(c, pr, start, end, MEMDIFF_CAT_HEAP, "[heap]", pr->start);
    default:
        break;
    }
    if (c->stack_tid && c->stack_tid[ri]) {
        snprintf(buf, sizeof buf, "thread %lld", (long long)c->stack_tid[ri]);
        return emit(c, pr, start, end, MEMDIFF_CAT_STACK, buf, (uint64_t)c->stack_tid[ri]);
    }
    if (is_shared_memory(pr)) {
        /* MAP_SHARED|MAP_ANONYMOUS is shmem the kernel names "/dev/zero (deleted)". */
        int anonymous = !(pr->flags & MEMDIFF_REGION_FILE) || strcmp(pr->path, "/dev/zero") == 0;
        const char *label = pr->hint == MEMDIFF__HINT_ANON_NAME ? pr->name
                            : anonymous                          ? "shared anonymous"
                                                                 : pr->path;
        return emit(c, pr, start, end, MEMDIFF_CAT_SHARED, label, unit);
    }
    if (pr->hint == MEMDIFF__HINT_IMAGE)
        return emit(c, pr, start, end, MEMDIFF_CAT_IMAGE, pr->path, unit);
    if (pr->flags & MEMDIFF_REGION_FILE) {
        /* One mmap of a file split by mprotect keeps start - offset: one allocation unit. */
        uint64_t file_unit = pr->alloc_base ? pr->alloc_base : pr->start - pr->offset;
        return emit(c, pr, start, end, MEMDIFF_CAT_MAPPED_FILE, pr->path, file_unit);
    }
    if (pr->hint == MEMDIFF__HINT_ANON_NAME) {
        snprintf(buf, sizeof buf, "[anon:%.80s]", pr->name);
        return emit(c, pr, start, end, MEMDIFF_CAT_PRIVATE, buf, unit);
    }
    if (pr->hint == MEMDIFF__HINT_OTHER)
        return emit(c, pr, start, end, MEMDIFF_CAT_UNKNOWN, pr->name[0] ? pr->name : "?", unit);
    if (pr->path[0])
        return emit(c, pr, start, end, MEMDIFF_CAT_UNKNOWN, pr->path, unit);
    return emit(c, pr, start, end, MEMDIFF_CAT_PRIVATE, "anonymous", unit);
}

/* Advances a cursor over sorted ranges past those ending at or before addr. */
#define SKIP_BEFORE(cur, arr, n, addr)                                  \
    while ((cur).next < (n) && (arr)[(cur).next].end <= (addr))         \
        (cur).next++

static int is_own_name(const memdiff__plat_region *pr)
{
    return pr->hint == MEMDIFF__HINT_ANON_NAME && strcmp(pr->name, "memdiff") == 0;
}

/* Splits one backend region at the boundaries of own, heap and module ranges inside it and
 * classifies each piece. Precedence: own, module image, heap, then the plain rules. */
static int classify_region(classifier *c, size_t ri, cursor *own, cursor *heap, cursor *seg)
{
    const memdiff__facts *f = c->f;
    const memdiff__plat_region *pr = &f->regions[ri];
    uint64_t pos = pr->start;
    while (pos < pr->end) {
        SKIP_BEFORE(*own, f->own, f->own_count, pos);
        SKIP_BEFORE(*heap, f->heaps, f->heap_count, pos);
        SKIP_BEFORE(*seg, c->segs, c->seg_count, pos);
        uint64_t next = pr->end;
        int rc;

        const memdiff__range *o = own->next < f->own_count ? &f->own[own->next] : NULL;
        const memdiff__plat_heap *h = heap->next < f->heap_count ? &f->heaps[heap->next] : NULL;
        const seg_ref *s = seg->next < c->seg_count ? &c->segs[seg->next] : NULL;

        if (is_own_name(pr) || (o && o->start <= pos)) {
            if (!is_own_name(pr))
                next = MEMDIFF__MIN(next, o->end);
            rc = emit(c, pr, pos, next, MEMDIFF_CAT_OWN, "memdiff", 0);
        } else if (s && s->start <= pos) {
            next = MEMDIFF__MIN(next, s->end);
            rc = emit(c, pr, pos, next, MEMDIFF_CAT_IMAGE, s->module->path, s->module->base);
        } else if (h && h->start <= pos && !(pr->flags & MEMDIFF_REGION_FILE)) {
            next = MEMDIFF__MIN(next, h->end);
            rc = emit(c, pr, pos, next, MEMDIFF_CAT_HEAP, h->label ? h->label : "heap", h->id);
        } else {
            /* Unclaimed up to the next range that starts inside this region. */
            if (o && o->start < next)
                next = o->start;
            if (s && s->start < next)
                next = s->start;
            if (h && h->start < next)
                next = h->start;
            rc = classify_plain(c, ri, pos, next);
        }
        if (rc)
            return rc;
        pos = next;
    }
    return MEMDIFF_OK;
}

int memdiff__classify(const memdiff__facts *facts, memdiff__arena *arena,
                      memdiff__strtab **table, memdiff__region **out, size_t *count)
{
    classifier c;
    memset(&c, 0, sizeof c);
    c.f = facts;
    c.arena = arena;
    c.table = table;
    *out = NULL;
    *count = 0;

    int rc = collect_segments(&c);
    if (!rc)
        rc = locate_stacks(&c);
    cursor own = {0}, heap = {0}, seg = {0};
    for (size_t i = 0; !rc && i < facts->region_count; i++) {
        const memdiff__plat_region *pr = &facts->regions[i];
        if (pr->end <= pr->start || (i > 0 && pr->start < facts->regions[i - 1].end))
            return memdiff__set_error(MEMDIFF_EFORMAT,
                                      "region list not ascending at 0x%llx-0x%llx",
                                      (unsigned long long)pr->start, (unsigned long long)pr->end);
        rc = classify_region(&c, i, &own, &heap, &seg);
    }
    if (rc)
        return rc == MEMDIFF_ENOMEM ? memdiff__set_error(rc, "classify: out of memory") : rc;
    *out = c.out;
    *count = c.count;
    return MEMDIFF_OK;
}
