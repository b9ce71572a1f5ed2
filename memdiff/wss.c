/*
 * wss.c - working-set size over time, measured the way Brendan Gregg's wss.pl does it
 * (github.com/brendangregg/wss): clear the process's referenced state, sleep, read the
 * referenced size summed over the process, with its RSS and PSS. docs/reference-set.md.
 *
 * The span a sample covers is not the sleep: pages are touched while the kernel clears the bits
 * (it walks every page table of the process) and while it reads them back, which for a large
 * process takes longer than a short sleep. Like wss.pl's "Est(s)" column, a sample's span runs
 * from the middle of the clear to the middle of the read:
 *
 *     duration = end of read - start of clear
 *     span     = duration - clear time / 2 - read time / 2
 *
 * Cumulative and profile modes clear once, so their clear time is the first one's. Profile mode
 * sleeps interval, interval, 2 interval, 4 interval... (wss.pl -P): reads at 1, 2, 4, 8...
 * intervals after the clear. The clear is the backend's (memdiff__plat_refs_reset), so it also
 * flushes the TLB where that is harmless (platform/linux/refs.c says why): wss.pl does not, and
 * misses accesses through cached translations at short intervals.
 */
#include <string.h>

#include "internal.h"

static int run(memdiff__proc *proc, const memdiff_wss_options *o, memdiff_wss_callback callback,
               void *ctx)
{
    uint64_t clear_start = 0, clear_ns = 0, slept = 0;
    for (unsigned i = 0; o->count == 0 || i < o->count; i++) {
        if (i == 0 || o->mode == MEMDIFF_WSS_INTERVAL) {
            memdiff__refs_reset r;
            clear_start = memdiff__os_monotonic_ns();
            int rc = memdiff__plat_refs_reset(proc, MEMDIFF__REFS_CLEAR, &r);
            clear_ns = memdiff__os_monotonic_ns() - clear_start;
            if (rc)
                return rc;
            if (!(r.done & MEMDIFF__REFS_CLEAR))
                return memdiff__set_error(MEMDIFF_EACCES,
                                          "memdiff_wss: the referenced state cannot be cleared "
                                          "(%s): without it the working set would read as the "
                                          "resident set",
                                          r.clear_why ? r.clear_why : "no reason given");
            slept = 0;
        }
        uint64_t sleep = o->interval_ns;
        if (o->mode == MEMDIFF_WSS_PROFILE && i > 1) {
            if (i - 1 >= 63 || sleep > (UINT64_MAX >> (i - 1)))
                return memdiff__set_error(MEMDIFF_ERANGE, "memdiff_wss: profile step %u is "
                                                          "beyond any clock", i);
            sleep <<= i - 1;
        }
        uint64_t t0 = memdiff__os_monotonic_ns();
        memdiff__os_sleep_ns(sleep);
        uint64_t t1 = memdiff__os_monotonic_ns();
        slept += t1 - t0;
        memdiff__plat_usage u;
        int rc = memdiff__plat_refs_total(proc, &u);
        uint64_t t2 = memdiff__os_monotonic_ns();
        if (rc)
            return rc;

        memdiff_wss_sample s;
        memset(&s, 0, sizeof s);
        s.index = i;
        s.clear_ns = clear_ns;
        s.read_ns = t2 - t1;
        s.slept_ns = slept;
        s.duration_ns = t2 - clear_start;
        s.span_ns = s.duration_ns - clear_ns / 2 - s.read_ns / 2;
        s.rss_bytes = u.rss;
        s.pss_bytes = u.pss;
        s.referenced_bytes = u.referenced;
        s.time_ns = memdiff__os_time_ns();
        rc = callback(ctx, &s);
        if (rc)
            return rc;
    }
    return MEMDIFF_OK;
}

int memdiff_wss_run(const memdiff_wss_options *options, memdiff_wss_callback callback,
                    void *ctx)
{
    memdiff_wss_options o = MEMDIFF_WSS_OPTIONS_INIT;
    if (options)
        o = *options;
    if (!callback)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_wss_run: callback is NULL");
    if (o.interval_ns == 0)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_wss_run: interval 0");
    if (o.mode < MEMDIFF_WSS_INTERVAL || o.mode > MEMDIFF_WSS_PROFILE)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_wss_run: unknown mode %d", (int)o.mode);
    if (o.pid < 0)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_wss_run: invalid pid %d", o.pid);
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    memdiff__open_args args = {o.pid, o.fixture_root, NULL, 0, 1};
    memdiff__proc *proc = NULL;
    memdiff__caps caps;
    int rc = memdiff__plat_open(&args, &scratch, &proc, &caps);
    if (!rc)
        rc = run(proc, &o, callback, ctx);
    memdiff__plat_close(proc);
    memdiff__arena_release(&scratch);
    return rc;
}

typedef struct collect {
    memdiff_wss_sample *v;
    size_t n, cap;
} collect;

static int store(void *ctx, const memdiff_wss_sample *s)
{
    collect *c = ctx;
    c->v[c->n++] = *s;
    return c->n == c->cap ? 1 : 0;
}

int memdiff_wss_measure(const memdiff_wss_options *options, memdiff_wss_sample *samples,
                        size_t capacity, size_t *count)
{
    if (count)
        *count = 0;
    if (!samples || !capacity || !count)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_wss_measure: %s",
                                  !count ? "count is NULL" : "no room for samples");
    memdiff_wss_options o = MEMDIFF_WSS_OPTIONS_INIT;
    if (options)
        o = *options;
    if (o.count == 0 || o.count > capacity)
        o.count = capacity > UINT32_MAX ? UINT32_MAX : (unsigned)capacity;
    collect c = {samples, 0, o.count};
    int rc = memdiff_wss_run(&o, store, &c);
    *count = c.n;
    return rc == 1 ? MEMDIFF_OK : rc; /* 1: store() stopped the run when the array was full */
}
