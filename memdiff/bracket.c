/*
 * bracket.c - measuring code: brackets of two snapshots (plain, or reference-set ones through
 * refset.c), settling the heap, warming code up, and leak slopes.
 *
 * What keeps these measurements steady (docs/testing-with-memdiff.md says more):
 *  - memdiff's first snapshot pages in memdiff's own code and the stack depth a snapshot uses;
 *    a bracket therefore takes one snapshot, 16 KiB further down the stack, and throws it away
 *    before the one it keeps.
 *  - Settling (malloc_trim on glibc) before each snapshot gives back what the code freed, so
 *    that an allocator holding freed memory does not look like a leak.
 *  - A leak slope samples the figure against the same before snapshot after every k-th call
 *    and fits a line: a leak of L bytes a call rises by L a call, whatever the page rounding,
 *    while memory kept once sits at one level. Snapshots and diffs live in memdiff's own
 *    storage (category Own, outside every figure), so sampling does not feed the samples.
 */
#include <string.h>

#include "internal.h"

void memdiff_settle_heap(void)
{
    memdiff__os_settle_heap();
}

int memdiff_warm_up(void (*fn)(void *arg), void *arg, unsigned times)
{
    if (!fn)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_warm_up: fn is NULL");
    for (unsigned i = 0; i < times; i++)
        fn(arg);
    return MEMDIFF_OK;
}

/* A bracket: a plain one keeps its before snapshot; a reference-set one, the refset (which
 * holds its own before snapshot and the process's resets). */
struct memdiff_bracket {
    memdiff__arena arena;            /* the struct itself and the fixture root */
    memdiff_bracket_options options; /* as begun, fixture_root copied into arena */
    memdiff_snapshot *before;        /* plain */
    memdiff__refset *refset;         /* MEMDIFF_BRACKET_REFSET */
    int ended;
};

static int bracket_options(const char *who, const memdiff_bracket_options *in,
                           memdiff_bracket_options *out)
{
    const memdiff_bracket_options defaults = MEMDIFF_BRACKET_OPTIONS_INIT;
    const unsigned known_compare = MEMDIFF_COMPARE_VERBOSE | MEMDIFF_COMPARE_FORCE;
    const unsigned known = MEMDIFF_BRACKET_REFSET | MEMDIFF_BRACKET_NO_SETTLE;
    *out = in ? *in : defaults;
    if ((unsigned)out->snapshot.depth > MEMDIFF_DEPTH_DEEP)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: depth %d out of range", who,
                                  (int)out->snapshot.depth);
    if (out->snapshot.pid < 0)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: invalid pid %d", who, out->snapshot.pid);
    if (out->flags & ~known)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown flags 0x%x", who,
                                  out->flags & ~known);
    if (out->compare_flags & ~known_compare)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown compare flags 0x%x", who,
                                  out->compare_flags & ~known_compare);
    if ((out->flags & MEMDIFF_BRACKET_REFSET) && (out->compare_flags & MEMDIFF_COMPARE_FORCE))
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: MEMDIFF_COMPARE_FORCE: a reference-set "
                                                  "bracket compares one process with itself",
                                  who);
    return MEMDIFF_OK;
}

/* Settling and warming up are for the calling process: another one's heap is out of reach, and
 * memdiff's own first-call costs are not in its memory. */
static int self_settles(const memdiff_bracket_options *o)
{
    return o->snapshot.pid == 0 && !(o->flags & MEMDIFF_BRACKET_NO_SETTLE);
}

static int snap(const memdiff_bracket_options *o, memdiff_snapshot **out)
{
    if (self_settles(o))
        memdiff__os_settle_heap();
    return memdiff_snapshot_take(&o->snapshot, out);
}

/* The stack a warm-up snapshot runs deeper than the snapshots that count. memdiff_bracket_end()
 * reaches a little further down the stack than memdiff_bracket_begin() (its own frames); a warm-up
 * at begin's depth left the page below unpaged in one run in 30 to 150 (check_example's fixed
 * cache: +4 KiB of new stack, as the stack's place within its page fell). */
#define WARM_STACK_MARGIN ((size_t)16 * 1024)

/* A snapshot thrown away, taken WARM_STACK_MARGIN further down the stack, every page between
 * touched: the stack pages any snapshot of the bracket reaches are paged in before the first. */
static MEMDIFF__NOINLINE int warm_up_snapshot(const memdiff_bracket_options *o)
{
    volatile char *pad = MEMDIFF__STACK_ALLOC(WARM_STACK_MARGIN);
    for (size_t i = 0; i < WARM_STACK_MARGIN; i += 1024)
        pad[i] = 0;
    memdiff_snapshot *warm = NULL;
    int rc = snap(o, &warm);
    memdiff_snapshot_free(warm);
    pad[0] = 0; /* the pad lives until the snapshot is done */
    return rc;
}

static int begin(memdiff_bracket *b)
{
    const memdiff_bracket_options *o = &b->options;
    if (o->snapshot.pid == 0) {
        int rc = warm_up_snapshot(o);
        if (rc)
            return rc;
    }
    if (!(o->flags & MEMDIFF_BRACKET_REFSET))
        return snap(o, &b->before);
    if (self_settles(o))
        memdiff__os_settle_heap();
    return memdiff__refset_begin(&o->snapshot, &b->refset);
}

int memdiff_bracket_begin(const memdiff_bracket_options *options, memdiff_bracket **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_bracket_begin: out is NULL");
    *out = NULL;
    memdiff_bracket_options o;
    int rc = bracket_options("memdiff_bracket_begin", options, &o);
    if (rc)
        return rc;
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff_bracket *b = memdiff__arena_alloc(&a, sizeof *b);
    if (!b)
        return MEMDIFF_ENOMEM;
    b->arena = a;
    b->options = o;
    const char *root = o.snapshot.fixture_root;
    if (root && !(b->options.snapshot.fixture_root =
                      memdiff__arena_strndup(&b->arena, root, strlen(root))))
        rc = MEMDIFF_ENOMEM;
    if (!rc)
        rc = begin(b);
    if (rc) {
        memdiff_bracket_free(b);
        return rc;
    }
    *out = b;
    return MEMDIFF_OK;
}

int memdiff_bracket_end(memdiff_bracket *bracket, memdiff_diff **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_bracket_end: out is NULL");
    *out = NULL;
    if (!bracket)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_bracket_end: bracket is NULL");
    if (bracket->ended)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_bracket_end: the bracket has ended");
    bracket->ended = 1;
    const memdiff_bracket_options *o = &bracket->options;
    if (bracket->refset) {
        if (self_settles(o))
            memdiff__os_settle_heap();
        return memdiff__refset_end(bracket->refset, o->compare_flags, out);
    }
    memdiff_snapshot *after = NULL;
    int rc = snap(o, &after);
    if (!rc)
        rc = memdiff_compare(bracket->before, after, o->compare_flags, out);
    memdiff_snapshot_free(after);
    return rc;
}

void memdiff_bracket_free(memdiff_bracket *bracket)
{
    if (!bracket)
        return;
    memdiff_snapshot_free(bracket->before);
    memdiff__refset_free(bracket->refset);
    memdiff__arena a = bracket->arena; /* the struct itself lives in the arena */
    memdiff__arena_release(&a);
}

int memdiff_bracket_get_info(const memdiff_bracket *bracket, memdiff_refset_info *out)
{
    if (!bracket || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_bracket_get_info: NULL argument");
    memset(out, 0, sizeof *out);
    if (bracket->refset)
        *out = *memdiff__refset_info(bracket->refset);
    return MEMDIFF_OK;
}

/* ---- leak slopes ------------------------------------------------------------------------ */

/* A least-squares line through (x, y) points, updated one point at a time (Welford's running
 * co-moments: no stored samples, and no loss of precision from large sums of squares). */
typedef struct fit {
    double n, mean_x, mean_y, cxy, sxx;
} fit;

static void fit_add(fit *f, double x, double y)
{
    f->n += 1.0;
    double dx = x - f->mean_x;
    f->mean_x += dx / f->n;
    f->mean_y += (y - f->mean_y) / f->n;
    f->cxy += dx * (y - f->mean_y);
    f->sxx += dx * (x - f->mean_x);
}

static int slope_options(const memdiff_slope_options *in, memdiff_slope_options *out)
{
    const memdiff_slope_options defaults = MEMDIFF_SLOPE_OPTIONS_INIT;
    *out = in ? *in : defaults;
    int rc = bracket_options("memdiff_leak_slope", &out->bracket, &out->bracket);
    if (rc)
        return rc;
    if (out->iterations < 2)
        return memdiff__set_error(MEMDIFF_EINVAL,
                                  "memdiff_leak_slope: %u iterations; a slope needs 2 or more",
                                  out->iterations);
    if (out->sample_every == 0 || out->sample_every >= out->iterations)
        return memdiff__set_error(MEMDIFF_EINVAL,
                                  "memdiff_leak_slope: sample_every %u; want 1 to %u (two "
                                  "samples at least)",
                                  out->sample_every, out->iterations - 1);
    if (out->bracket.snapshot.pid != 0)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_leak_slope: pid %d: the function "
                                                  "runs in the calling process (pid 0)",
                                  out->bracket.snapshot.pid);
    if (out->bracket.flags & MEMDIFF_BRACKET_REFSET)
        return memdiff__set_error(MEMDIFF_ENOTSUP, "memdiff_leak_slope: MEMDIFF_BRACKET_REFSET: "
                                                   "slopes are of plain diffs");
    return memdiff__figure_valid("memdiff_leak_slope", out->figure.filter, out->figure.category,
                                 out->figure.measure);
}

/* One sample: the figure from before to now. *keep receives the diff when keep is not NULL. */
static int sample(const memdiff_slope_options *o, const memdiff_snapshot *before, int64_t *y,
                  memdiff_diff **keep)
{
    memdiff_snapshot *now = NULL;
    memdiff_diff *d = NULL;
    int rc = snap(&o->bracket, &now);
    if (!rc)
        rc = memdiff_compare(before, now, o->bracket.compare_flags, &d);
    memdiff_snapshot_free(now);
    if (!rc)
        rc = memdiff_diff_figure(d, &o->figure, y);
    if (!rc && keep)
        *keep = d;
    else
        memdiff_diff_free(d);
    return rc;
}

int memdiff_leak_slope(void (*fn)(void *arg), void *arg, const memdiff_slope_options *options,
                       memdiff_slope *out, memdiff_diff **diff)
{
    if (diff)
        *diff = NULL;
    if (!fn || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_leak_slope: NULL argument");
    memset(out, 0, sizeof *out);
    memdiff_slope_options o;
    int rc = slope_options(options, &o);
    if (rc)
        return rc;
    out->warmup = o.warmup;
    out->iterations = o.iterations;
    out->figure = o.figure;

    for (unsigned i = 0; i < o.warmup; i++)
        fn(arg);
    memdiff_bracket *b = NULL;
    rc = memdiff_bracket_begin(&o.bracket, &b);
    fit f = {0, 0, 0, 0, 0};
    unsigned first_x = 0;
    for (unsigned i = 1; !rc && i <= o.iterations; i++) {
        fn(arg);
        if (i % o.sample_every != 0 && i != o.iterations)
            continue;
        int64_t y = 0;
        rc = sample(&o, b->before, &y, i == o.iterations ? diff : NULL);
        if (rc)
            break;
        if (!first_x) {
            first_x = i;
            out->first = y;
        }
        out->last = y;
        out->samples++;
        fit_add(&f, (double)i, (double)y);
    }
    memdiff_bracket_free(b);
    if (rc) {
        if (diff) {
            memdiff_diff_free(*diff);
            *diff = NULL;
        }
        return rc;
    }
    out->bytes_per_iteration = f.sxx > 0 ? f.cxy / f.sxx : 0.0;
    /* In doubles: last - first of two figures may not fit an int64_t. */
    out->endpoint_slope = ((double)out->last - (double)out->first) /
                          (double)(o.iterations - first_x);
    return MEMDIFF_OK;
}
