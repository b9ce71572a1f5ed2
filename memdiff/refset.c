/*
 * refset.c - reference-set brackets: what code touched (already resident pages included), the
 * peak resident size it reached, and WPA's impact types; the diff's impact accessors.
 * docs/reference-set.md is the user's side of this file.
 *
 * begin: the before snapshot first, then the resets (backend: memdiff__plat_refs_reset), so
 * that the snapshot's own page walk is not part of the reference set and the bracket starts
 * when begin returns. The backend's process handle stays open until the end: reading the peak
 * there must not allocate (a new arena chunk would raise the very figure being read).
 *
 * end, in this order: the peak and the resident size (nothing allocated yet); the touched bytes
 * per mapping when there is no per-page tracking (smaps is read before the after snapshot, whose
 * own page walk would otherwise count as touched); the after snapshot, with per-page accessed
 * bits when tracking; the compare, which counts touched and persistent pages
 * (memdiff__compare_refs).
 *
 * Touched per mapping (smaps "Referenced") is per VMA, and the classifier may split a VMA into
 * several regions (a malloc chunk inside an anonymous mapping): a VMA's touched bytes are then
 * shared among its regions in proportion to their resident pages, the one place where a touched
 * figure is an estimate. Nothing here calls malloc: the bracket, its strings and its buffers live
 * in its own arenas.
 */
#include <string.h>

#include "internal.h"

struct memdiff__refset {
    memdiff__arena arena;   /* the struct itself and its strings */
    memdiff__arena scratch; /* the backend's process handle and buffers, until freed */
    memdiff__proc *proc;
    memdiff_options options; /* fixture_root copied into arena */
    memdiff_snapshot *before;
    memdiff__refs_reset reset;
    memdiff_refset_info info;
    uint64_t begin_peak;     /* the OS's peak figure right after the reset */
    int peak_read;           /* begin_peak and info.begin_rss_bytes were read */
    int ended;
};

/* "a; b; c" of the non-NULL reasons, in arena; NULL when there is none. */
static const char *join(memdiff__arena *arena, const char *const *parts, size_t n)
{
    char buf[2048];
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!parts[i] || used + 1 >= sizeof buf)
            continue;
        int w = snprintf(buf + used, sizeof buf - used, "%s%s", used ? "; " : "", parts[i]);
        if (w > 0)
            used = MEMDIFF__MIN(sizeof buf - 1, used + (size_t)w);
    }
    if (!used)
        return NULL;
    return memdiff__arena_strndup(arena, buf, used);
}

static const char *copy_str(memdiff__arena *arena, const char *s)
{
    return s ? memdiff__arena_strndup(arena, s, strlen(s)) : NULL;
}

static int begin(memdiff__refset *rs)
{
    memdiff__open_args args = {rs->options.pid, rs->options.fixture_root, NULL, 0, 1};
    memdiff__caps caps;
    int rc = memdiff__plat_open(&args, &rs->scratch, &rs->proc, &caps);
    if (rc)
        return rc;
    /* A dry run of the reset and the peak read (the peak alone: cheap, and reset again below),
     * so that the code and buffers they use are resident before the before snapshot: what they
     * page in the first time would otherwise be new in the diff but not above begin_rss_bytes. */
    memdiff__refs_reset dry;
    uint64_t ignore[2];
    rc = memdiff__plat_refs_reset(rs->proc, MEMDIFF__REFS_PEAK, &dry);
    if (rc)
        return rc;
    (void)memdiff__plat_refs_peak(rs->proc, &ignore[0], &ignore[1]);
    rc = memdiff_snapshot_take(&rs->options, &rs->before);
    if (rc)
        return rc;

    /* Per-page tracking needs the after snapshot's frame numbers: standard depth at least. */
    int pages = rs->options.depth >= MEMDIFF_DEPTH_STANDARD;
    unsigned what = MEMDIFF__REFS_CLEAR | MEMDIFF__REFS_PEAK | (pages ? MEMDIFF__REFS_PAGES : 0);
    memdiff__refs_reset *r = &rs->reset;
    rc = memdiff__plat_refs_reset(rs->proc, what, r);
    if (rc)
        return rc;
    const char *peak_why = r->peak_why, *lifetime = NULL;
    rc = memdiff__plat_refs_peak(rs->proc, &rs->begin_peak, &rs->info.begin_rss_bytes);
    if (rc == MEMDIFF_OK)
        rs->peak_read = 1;
    else if (rc == MEMDIFF_ENOTSUP)
        peak_why = copy_str(&rs->arena, memdiff__last_error_raw()); /* escaped when printed */
    else
        return rc;

    memdiff_refset_info *in = &rs->info;
    const char *pages_why = NULL;
    if (r->done & MEMDIFF__REFS_CLEAR) {
        in->sources |= MEMDIFF_REFS_CLEARED;
        if ((r->done & MEMDIFF__REFS_PAGES) || r->resident_is_touched) {
            in->sources |= MEMDIFF_REFS_PAGES;
            in->untracked_bytes = r->untracked_bytes;
        } else {
            in->sources |= MEMDIFF_REFS_MAPPINGS;
            pages_why = pages ? r->pages_why
                              : "per-page tracking needs standard depth (frame numbers): touched "
                                "per mapping only";
        }
    }
    if (rs->peak_read && (r->done & MEMDIFF__REFS_PEAK)) {
        in->sources |= MEMDIFF_REFS_PEAK;
        in->peak_slack_bytes = r->peak_slack;
    } else if (rs->peak_read) {
        lifetime = "the peak is known only if the lifetime peak rises during the bracket";
    }
    const char *parts[] = {r->clear_why, r->note, pages_why, peak_why, lifetime};
    in->degraded = join(&rs->arena, parts, sizeof parts / sizeof parts[0]);
    return MEMDIFF_OK;
}

int memdiff__refset_begin(const memdiff_options *options, memdiff__refset **out)
{
    *out = NULL;
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff__refset *rs = memdiff__arena_alloc(&a, sizeof *rs);
    if (!rs)
        return MEMDIFF_ENOMEM;
    rs->arena = a;
    rs->options = *options;
    rs->options.fixture_root = copy_str(&rs->arena, options->fixture_root);
    int rc = options->fixture_root && !rs->options.fixture_root ? MEMDIFF_ENOMEM : begin(rs);
    if (rc) {
        memdiff__refset_free(rs);
        return rc;
    }
    *out = rs;
    return MEMDIFF_OK;
}

void memdiff__refset_free(memdiff__refset *refset)
{
    if (!refset)
        return;
    memdiff_snapshot_free(refset->before);
    memdiff__plat_close(refset->proc);
    memdiff__arena_release(&refset->scratch);
    memdiff__arena a = refset->arena; /* the struct itself lives in the arena */
    memdiff__arena_release(&a);
}

const memdiff_refset_info *memdiff__refset_info(const memdiff__refset *refset)
{
    return &refset->info;
}

/* The touched bytes of each after region, from per-mapping figures (ascending, like regions):
 * a mapping's bytes go to the one region inside it, exact; a mapping that several regions share
 * has its bytes divided among them in proportion to their resident pages (overlap-weighted when
 * a region straddles it), in whole pages, largest remainders first: an estimate, marked in
 * region_estimated, and bounded per region by the mapping's whole figure and the region's
 * resident size, per category and in all by the sum of the shared mappings' figures. */
int memdiff__refs_apportion(memdiff__arena *arena, const memdiff_snapshot *s,
                            const memdiff__plat_usage *u, size_t nu, memdiff__refs_in *refs)
{
    size_t n = s->region_count ? s->region_count : 1;
    uint64_t *out = memdiff__arena_alloc(arena, 4 * n * 8);
    if (!out)
        return MEMDIFF_ENOMEM;
    memset(out, 0, 4 * n * 8);
    uint64_t *est = out + n, *shared = est + n, *max = shared + n;
    uint64_t ps = s->info.page_size;
    size_t first = 0;
    for (size_t k = 0; k < nu; k++) {
        uint64_t pages = u[k].referenced / ps;
        while (first < s->region_count && s->regions[first].end <= u[k].start)
            first++;
        if (!pages)
            continue;
        double total = 0;
        size_t last = first, best = SIZE_MAX;
        uint64_t best_overlap = 0;
        for (; last < s->region_count && s->regions[last].start < u[k].end; last++) {
            const memdiff__region *r = &s->regions[last];
            uint64_t ov = MEMDIFF__MIN(r->end, u[k].end) - MEMDIFF__MAX(r->start, u[k].start);
            total += (double)r->resident_pages * (double)ov / (double)(r->end - r->start);
            if (ov > best_overlap) {
                best_overlap = ov;
                best = last;
            }
        }
        if (best == SIZE_MAX)
            continue; /* the mapping went before the after snapshot */
        int split = last - first > 1;
        if (split) {
            unsigned cats = 0;
            for (size_t i = first; i < last; i++) {
                shared[i] = memdiff__add_sat(shared[i], pages * ps);
                if ((unsigned)s->regions[i].category < MEMDIFF_CAT_COUNT)
                    cats |= 1u << s->regions[i].category;
            }
            for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
                if (cats & (1u << c))
                    refs->shared_max[c] = memdiff__add_sat(refs->shared_max[c], pages * ps);
            }
            if (cats & ~(1u << MEMDIFF_CAT_OWN))
                refs->shared_max[MEMDIFF_CAT_ALL] =
                    memdiff__add_sat(refs->shared_max[MEMDIFF_CAT_ALL], pages * ps);
        }
        uint64_t given = 0;
        for (size_t i = first; i < last && total > 0; i++) {
            const memdiff__region *r = &s->regions[i];
            uint64_t ov = MEMDIFF__MIN(r->end, u[k].end) - MEMDIFF__MAX(r->start, u[k].start);
            double share = (double)r->resident_pages * (double)ov / (double)(r->end - r->start);
            uint64_t g = (uint64_t)((double)pages * share / total);
            out[i] = memdiff__add_sat(out[i], g * ps);
            est[i] = memdiff__add_sat(est[i], split ? g * ps : 0);
            given += g;
        }
        /* What rounding left (all of it when no region is resident): the largest overlap's. */
        uint64_t left = given < pages ? (pages - given) * ps : 0;
        out[best] = memdiff__add_sat(out[best], left);
        est[best] = memdiff__add_sat(est[best], split ? left : 0);
    }
    /* The estimated part of a region's bytes is at most the shared mappings' figures and the
     * region's resident size (Referenced counts resident pages only). */
    for (size_t i = 0; i < s->region_count; i++) {
        uint64_t cap = MEMDIFF__MIN(shared[i], s->regions[i].resident_pages * ps);
        max[i] = MEMDIFF__MAX(out[i], memdiff__add_sat(out[i] - est[i], cap));
    }
    refs->region_touched = out;
    refs->region_estimated = est;
    refs->region_max = max;
    return MEMDIFF_OK;
}

int memdiff__refset_diff(const memdiff_snapshot *before, const memdiff_snapshot *after,
                         unsigned flags, const memdiff__refs_in *refs,
                         const memdiff_refset_info *info, const char *extra, memdiff_diff **out)
{
    int rc = memdiff__compare_refs(before, after, flags, refs, out);
    if (rc)
        return rc;
    memdiff_diff *d = *out;
    d->refs = *info;
    const char *parts[] = {info->degraded, extra};
    d->refs.degraded = join(&d->arena, parts, 2);
    d->impact.transient_bytes = info->transient_bytes;
    if ((info->degraded || extra) && !d->refs.degraded) {
        memdiff_diff_free(d);
        *out = NULL;
        return MEMDIFF_ENOMEM;
    }
    return MEMDIFF_OK;
}

int memdiff__refset_end(memdiff__refset *rs, unsigned flags, memdiff_diff **out)
{
    memdiff_refset_info in = rs->info;
    const memdiff__refs_reset *r = &rs->reset;
    const char *extra = NULL;
    uint64_t peak = 0, rss = 0;
    int rc = rs->peak_read ? memdiff__plat_refs_peak(rs->proc, &peak, &rss) : MEMDIFF_ENOTSUP;
    if (rc && rc != MEMDIFF_ENOTSUP)
        return rc;
    if (rc && rs->peak_read) {
        in.sources &= ~MEMDIFF_REFS_PEAK;
        extra = "the peak could not be read at the end";
    }
    if (rc == MEMDIFF_OK) {
        in.end_rss_bytes = rss;
        if ((in.sources & MEMDIFF_REFS_PEAK) || peak > rs->begin_peak) {
            in.sources |= MEMDIFF_REFS_PEAK;
            in.peak_bytes = peak;
            uint64_t ends = MEMDIFF__MAX(in.begin_rss_bytes, rss);
            in.transient_bytes = peak > ends ? peak - ends : 0;
        }
    }

    memdiff__plat_usage *usage = NULL;
    size_t nusage = 0;
    if (in.sources & MEMDIFF_REFS_MAPPINGS) {
        rc = memdiff__plat_refs_usage(rs->proc, &rs->scratch, &usage, &nusage);
        if (rc)
            return rc;
    }
    int accessed_bit = (in.sources & MEMDIFF_REFS_PAGES) && !r->resident_is_touched;
    memdiff_snapshot *after = NULL;
    rc = memdiff__snapshot_take_flags(&rs->options, accessed_bit ? MEMDIFF__TAKE_ACCESSED : 0,
                                      &after);
    if (rc)
        return rc;
    if (accessed_bit && !(after->info.sources & MEMDIFF_SRC_PAGE_ACCESS)) {
        extra = "the page_idle bitmap could not be read at the end: no touched information";
        in.sources &= ~MEMDIFF_REFS_PAGES;
        accessed_bit = 0;
    }
    memdiff__refs_in refs;
    memset(&refs, 0, sizeof refs);
    refs.accessed_bit = accessed_bit;
    refs.resident_is_touched = (in.sources & MEMDIFF_REFS_PAGES) && r->resident_is_touched;
    if (usage)
        rc = memdiff__refs_apportion(&rs->scratch, after, usage, nusage, &refs);
    if (!rc)
        rc = memdiff__refset_diff(rs->before, after, flags, &refs, &in, extra, out);
    memdiff_snapshot_free(after);
    return rc;
}

/* ---- the diff's accessors ---------------------------------------------------------------- */

int memdiff_diff_impact(const memdiff_diff *diff, memdiff_category category,
                        memdiff_impact *out)
{
    if (!diff || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_diff_impact: NULL argument");
    if (!diff->bracket)
        return memdiff__set_error(MEMDIFF_EINVAL,
                                  "memdiff_diff_impact: the diff did not come from a "
                                  "reference-set bracket (MEMDIFF_BRACKET_REFSET)");
    if ((unsigned)category > MEMDIFF_CAT_ALL)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_diff_impact: category %d",
                                  (int)category);
    *out = category == MEMDIFF_CAT_ALL ? diff->impact : diff->impact_category[category];
    return MEMDIFF_OK;
}
