/*
 * bracket.c - measuring code in the calling process: settling the heap, warming code up,
 * brackets of two snapshots and leak slopes.
 *
 * What keeps these measurements steady (docs/testing-with-memdiff.md says more):
 *  - memdiff's first snapshot pages in memdiff's own code and the stack depth a snapshot uses;
 *    a bracket therefore takes one snapshot and throws it away before the one it keeps.
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

static int bracket_options(const char *who, const memdiff_bracket_options *in,
                           memdiff_bracket_options *out)
{
    const memdiff_bracket_options defaults = MEMDIFF_BRACKET_OPTIONS_INIT;
    const unsigned known = MEMDIFF_COMPARE_VERBOSE | MEMDIFF_COMPARE_FORCE;
    *out = in ? *in : defaults;
    if ((unsigned)out->depth > MEMDIFF_DEPTH_DEEP)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: depth %d out of range", who,
                                  (int)out->depth);
    if (out->compare_flags & ~known)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: unknown compare flags 0x%x", who,
                                  out->compare_flags & ~known);
    return MEMDIFF_OK;
}

static int snap(const memdiff_bracket_options *o, memdiff_snapshot **out)
{
    if (o->settle)
        memdiff__os_settle_heap();
    return memdiff_snapshot_self(o->depth, out);
}

int memdiff_bracket_begin(const memdiff_bracket_options *options, memdiff_snapshot **before)
{
    if (!before)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_bracket_begin: before is NULL");
    *before = NULL;
    memdiff_bracket_options o;
    int rc = bracket_options("memdiff_bracket_begin", options, &o);
    if (rc)
        return rc;
    memdiff_snapshot *warm = NULL;
    rc = snap(&o, &warm);
    memdiff_snapshot_free(warm);
    return rc ? rc : snap(&o, before);
}

int memdiff_bracket_end(memdiff_snapshot *before, const memdiff_bracket_options *options,
                        memdiff_diff **out)
{
    memdiff_bracket_options o;
    memdiff_snapshot *after = NULL;
    int rc = bracket_options("memdiff_bracket_end", options, &o);
    if (!rc && (!before || !out))
        rc = memdiff__set_error(MEMDIFF_EINVAL, "memdiff_bracket_end: NULL argument");
    if (out)
        *out = NULL;
    if (!rc)
        rc = snap(&o, &after);
    if (!rc)
        rc = memdiff_compare(before, after, o.compare_flags, out);
    memdiff_snapshot_free(after);
    memdiff_snapshot_free(before);
    return rc;
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
    return memdiff__figure_valid("memdiff_leak_slope", out->filter, out->category,
                                 out->measure);
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
        rc = memdiff_figure(d, o->filter, o->category, o->measure, y);
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
    out->category = o.category;
    out->measure = o.measure;
    out->filter = o.filter;

    for (unsigned i = 0; i < o.warmup; i++)
        fn(arg);
    memdiff_snapshot *before = NULL;
    rc = memdiff_bracket_begin(&o.bracket, &before);
    fit f = {0, 0, 0, 0, 0};
    unsigned first_x = 0;
    for (unsigned i = 1; !rc && i <= o.iterations; i++) {
        fn(arg);
        if (i % o.sample_every != 0 && i != o.iterations)
            continue;
        int64_t y = 0;
        rc = sample(&o, before, &y, i == o.iterations ? diff : NULL);
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
    memdiff_snapshot_free(before);
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
