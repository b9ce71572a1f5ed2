/*
 * memdiff_bench.c - how close memdiff comes to the kernel's limit, in one run, side by side.
 *
 * For each target (a child process with known memory, target.c) it times, interleaved and
 * repeated, memdiff snapshots at each depth, the raw floors (floors.c: batched pagemap,
 * PAGEMAP_SCAN, kpageflags + kpagecount in sorted runs of frames and one read per frame) and the
 * peer (reading smaps), a standard snapshot with PSS per mapping from smaps
 * (MEMDIFF_SNAPSHOT_SMAPS_PSS), plus a compare of two snapshots; it reports medians, the ratios the
 * targets of docs/performance.md are stated in, and the snapshots' storage.
 *
 * Interleaving: every repetition runs each measurement once, in an order shuffled anew for each
 * repetition, so that the noise of a shared machine (other builds, page cache pressure,
 * frequency changes) falls on all of them alike; medians, not means, are compared. What a
 * measurement leaves in the caches would fall on the next (a standard snapshot of 64 MiB right
 * after a deep one takes twice as long as after another standard one), and a shuffle spreads
 * that unevenly over a few repetitions: "memdiff fast" and "memdiff fast, 1 thread", the same
 * work on python3, came out 0.68 and 0.94 ms over 21. So each timed run follows an untimed run
 * of the same measurement (warm: the steady cost of each side, as a program that snapshots
 * again and again pays it); --cold leaves the untimed runs out.
 *
 *   memdiff_bench [--quick] [--json] [--reps N] [--only NAME] [--cold]
 *   memdiff_bench --live N [--reps N]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "memdiff.h"

#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

static const bench_target_spec all_targets[] = {
    {"64 MiB", BENCH_DENSE, 64 * MIB, 0},
    {"1 GiB", BENCH_DENSE, 1 * GIB, 0},
    {"4 GiB", BENCH_DENSE, 4 * GIB, 0},
    {"1 GiB alternate", BENCH_ALT, 1 * GIB, 0},
    {"4 GiB alternate", BENCH_ALT, 4 * GIB, 0},
    {"1 GiB runs", BENCH_RUNS, 1 * GIB, 0},
    {"4 GiB runs", BENCH_RUNS, 4 * GIB, 0},
    {"python3", BENCH_PYTHON, 20 * MIB, 0},
    {"4 GiB THP", BENCH_THP, 4 * GIB, 0},
    {"64 GiB sparse", BENCH_SPARSE, 64 * GIB, 1 * GIB},
};
#define NTARGETS (sizeof all_targets / sizeof all_targets[0])

/* What is timed. */
enum {
    M_FAST,
    M_STANDARD,
    M_DEEP,
    M_PAGEMAP,
    M_SCAN,
    M_KSORTED,
    M_KEACH,
    M_SMAPS,
    M_CMP_FAST,
    M_CMP_STANDARD,
    M_STANDARD_PSS,
    M_FAST_1T,
    M_STANDARD_1T,
    M_PAGEMAP_2T,
    M_COUNT
};

static const char *const m_names[M_COUNT] = {
    "memdiff fast",         "memdiff standard",        "memdiff deep",
    "floor: pagemap",       "floor: PAGEMAP_SCAN",     "floor: kpage sorted runs",
    "floor: kpage per frame", "peer: smaps",           "compare fast",
    "compare standard",     "memdiff standard --pss",  "memdiff fast, 1 thread",
    "memdiff standard, 1 thread", "floor: pagemap, 2 threads",
};

static const char *const m_keys[M_COUNT] = {
    "memdiff_fast", "memdiff_standard", "memdiff_deep", "floor_pagemap", "floor_scan",
    "floor_kpage_sorted", "floor_kpage_each", "peer_smaps", "compare_fast", "compare_standard",
    "memdiff_standard_pss", "memdiff_fast_1_thread", "memdiff_standard_1_thread",
    "floor_pagemap_2_threads",
};

typedef struct result {
    const bench_target_spec *spec;
    bench_target t;
    int ok;
    int have[M_COUNT];
    double median_ms[M_COUNT];
    int reps;        /* repetitions of each measurement (reps_for) */
    double *samples; /* [m * reps + rep], ms, or -1 where that repetition has none */
    int64_t present_pages;
    size_t frame_runs; /* runs of consecutive frames among the present pages (root) */
    size_t mappings;   /* lines of its maps */
    int runs_timed[M_COUNT];   /* timed snapshots of each measurement */
    int runs_lanes[M_COUNT];   /* of them, read on two threads or more (info.threads) */
    int scan_missing;
    memdiff_depth got_depth[3];
    uint64_t storage_bytes[3];
    bench_storage storage[3];
    uint64_t mapped_pages;
    unsigned threads; /* threads a standard snapshot read pages on (memdiff_snapshot_info) */
} result;

static int reps = 11;
static int cold; /* --cold: no untimed run of a measurement before each timed one */
static unsigned bench_threads; /* memdiff_options.threads of the "memdiff" measurements */

double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void bench_shuffle(int *order, int n, uint64_t *rng)
{
    for (int j = 0; j < n; j++)
        order[j] = j;
    for (int j = n - 1; j > 0; j--) { /* Fisher-Yates, xorshift64 */
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        int k = (int)(*rng % (uint64_t)(j + 1)), t = order[j];
        order[j] = order[k];
        order[k] = t;
    }
}

static memdiff_snapshot *snap_threads(pid_t pid, memdiff_depth depth, unsigned flags,
                                      unsigned threads)
{
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = (int)pid;
    o.depth = depth;
    o.flags = flags;
    o.threads = threads;
    memdiff_snapshot *s = NULL;
    int rc = memdiff_snapshot_take(&o, &s);
    if (rc) {
        fprintf(stderr, "memdiff_bench: snapshot of %d at %s: %s\n", (int)pid,
                memdiff_depth_name(depth), memdiff_last_error());
        return NULL;
    }
    return s;
}

static memdiff_snapshot *snap_flags(pid_t pid, memdiff_depth depth, unsigned flags)
{
    return snap_threads(pid, depth, flags, bench_threads);
}

static memdiff_snapshot *snap(pid_t pid, memdiff_depth depth)
{
    return snap_flags(pid, depth, 0);
}

/* One timed run of measurement m; returns ms, or -1 on failure. */
static double run_one(result *r, int m, const bench_frame_runs *runs,
                      memdiff_snapshot *const pair[2][2], int timed)
{
    pid_t pid = r->t.pid;
    double t0 = bench_now_ms(), t1;
    switch (m) {
    case M_FAST:
    case M_STANDARD:
    case M_STANDARD_PSS:
    case M_FAST_1T:
    case M_STANDARD_1T:
    case M_DEEP: {
        memdiff_depth d = m == M_FAST || m == M_FAST_1T ? MEMDIFF_DEPTH_FAST
                          : m == M_DEEP                 ? MEMDIFF_DEPTH_DEEP
                                                        : MEMDIFF_DEPTH_STANDARD;
        memdiff_snapshot *s =
            snap_threads(pid, d, m == M_STANDARD_PSS ? MEMDIFF_SNAPSHOT_SMAPS_PSS : 0,
                         m == M_FAST_1T || m == M_STANDARD_1T ? 1 : bench_threads);
        t1 = bench_now_ms();
        if (!s)
            return -1;
        memdiff_snapshot_info info;
        if (timed && memdiff_snapshot_get_info(s, &info) == MEMDIFF_OK) {
            r->runs_timed[m]++;
            r->runs_lanes[m] += info.threads >= 2;
        }
        memdiff_snapshot_free(s);
        return t1 - t0;
    }
    case M_PAGEMAP:
        if (floor_pagemap(pid, 0) < 0)
            return -1;
        break;
    case M_PAGEMAP_2T:
        if (floor_pagemap_two_threads(pid) < 0)
            return -1;
        break;
    case M_SCAN:
        if (floor_scan(pid) < 0)
            return -1;
        break;
    case M_KSORTED:
        if (floor_kpage_sorted(pid, runs) < 0)
            return -1;
        break;
    case M_KEACH:
        if (floor_kpage_each(pid) < 0)
            return -1;
        break;
    case M_SMAPS:
        if (peer_smaps(pid) < 0)
            return -1;
        break;
    case M_CMP_FAST:
    case M_CMP_STANDARD: {
        const int k = m == M_CMP_STANDARD;
        memdiff_diff *d = NULL;
        int rc = memdiff_compare(pair[k][0], pair[k][1], 0, &d);
        t1 = bench_now_ms();
        memdiff_diff_free(d);
        if (rc) {
            fprintf(stderr, "memdiff_bench: compare: %s\n", memdiff_last_error());
            return -1;
        }
        return t1 - t0;
    }
    }
    return bench_now_ms() - t0;
}

/* Repetitions for a target: SMALL_REPS times --reps below 1 GiB, where each measurement takes
 * under a millisecond and the host's jitter is the larger part of it (at 11, "standard" and
 * "standard, 1 thread", the same work on 64 MiB, came out 1.46 and 1.27 in one run). */
#define SMALL_REPS 5
static int reps_for(const result *r)
{
    return r->spec->map_bytes < GIB ? reps * SMALL_REPS : reps;
}

static void measure(result *r, int want_deep_floors)
{
    pid_t pid = r->t.pid;
    bench_frame_runs runs;
    memset(&runs, 0, sizeof runs);
    int have_runs = bench_frame_runs_prepare(pid, 0, &runs) == 0 && runs.frames > 0;
    r->frame_runs = runs.n;
    r->present_pages = floor_pagemap(pid, 1);
    r->mappings = bench_mappings(pid);
    r->scan_missing = floor_scan(pid) == -2;

    /* Storage, and the depth each request got (a non-root run degrades deep and standard). */
    const memdiff_depth depths[3] = {MEMDIFF_DEPTH_FAST, MEMDIFF_DEPTH_STANDARD,
                                     MEMDIFF_DEPTH_DEEP};
    for (int i = 0; i < 3; i++) {
        memdiff_snapshot *s = snap(pid, depths[i]);
        if (!s)
            return;
        memdiff_snapshot_info info;
        memdiff_snapshot_get_info(s, &info);
        r->got_depth[i] = info.depth;
        if (depths[i] == MEMDIFF_DEPTH_STANDARD)
            r->threads = info.threads;
        r->storage_bytes[i] = info.storage_bytes;
        bench_storage_of(s, &r->storage[i]);
        if (i == 0)
            r->mapped_pages = info.totals.vm_size / info.page_size;
        memdiff_snapshot_free(s);
    }

    memdiff_snapshot *pair[2][2] = {{snap(pid, MEMDIFF_DEPTH_FAST), snap(pid, MEMDIFF_DEPTH_FAST)},
                                    {snap(pid, MEMDIFF_DEPTH_STANDARD),
                                     snap(pid, MEMDIFF_DEPTH_STANDARD)}};
    int enabled[M_COUNT];
    for (int m = 0; m < M_COUNT; m++)
        enabled[m] = 1;
    enabled[M_SCAN] = !r->scan_missing;
    /* Deep degraded to standard (no CAP_SYS_ADMIN) would time standard twice under two names. */
    enabled[M_DEEP] = r->got_depth[2] == MEMDIFF_DEPTH_DEEP;
    enabled[M_KSORTED] = enabled[M_KEACH] = want_deep_floors && have_runs;
    enabled[M_CMP_FAST] = pair[0][0] && pair[0][1];
    enabled[M_CMP_STANDARD] = pair[1][0] && pair[1][1];
    /* The two-thread floor where memdiff reads on two threads or more: 1 GiB and up, dense or
     * fragmented (where the target against the one-thread floor applies). */
    enabled[M_PAGEMAP_2T] = r->threads >= 2 && r->spec->map_bytes >= GIB &&
                            (r->spec->kind == BENCH_DENSE || r->spec->kind == BENCH_ALT ||
                             r->spec->kind == BENCH_RUNS);

    const int n_reps = r->reps = reps_for(r); /* this target's */
    double *samples = malloc((size_t)n_reps * M_COUNT * sizeof *samples);
    double *v = malloc((size_t)n_reps * sizeof *v);
    if (!samples || !v) {
        perror("malloc");
        exit(1);
    }
    for (int i = 0; i < n_reps * M_COUNT; i++)
        samples[i] = -1;
    uint64_t rng = UINT64_C(0x9e3779b97f4a7c15); /* fixed: a run's orders can be repeated */
    for (int rep = 0; rep < n_reps; rep++) {
        int order[M_COUNT];
        bench_shuffle(order, M_COUNT, &rng);
        for (int j = 0; j < M_COUNT; j++) {
            int m = order[j];
            if (!enabled[m])
                continue;
            double ms = cold ? 0 : run_one(r, m, &runs, pair, 0); /* the warm-up, untimed */
            if (ms >= 0)
                ms = run_one(r, m, &runs, pair, 1);
            if (ms < 0) {
                enabled[m] = 0;
                continue;
            }
            samples[m * n_reps + rep] = ms;
        }
    }
    for (int m = 0; m < M_COUNT; m++) {
        int n = 0;
        for (int rep = 0; rep < n_reps; rep++)
            if (samples[m * n_reps + rep] >= 0)
                v[n++] = samples[m * n_reps + rep];
        if (!n)
            continue;
        r->have[m] = 1;
        r->median_ms[m] = bench_median(v, n);
    }
    free(v);
    r->samples = samples;
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 2; j++)
            memdiff_snapshot_free(pair[k][j]);
    bench_frame_runs_free(&runs);
    r->ok = 1;
}

/* ---- reporting --------------------------------------------------------------------------- */

static void read_first_line_with(const char *path, const char *key, char *out, size_t size)
{
    snprintf(out, size, "unknown");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, strlen(key)) == 0) {
            const char *v = strchr(line, ':');
            v = v ? v + 1 : line;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t len = strcspn(v, "\n");
            if (len >= size)
                len = size - 1;
            memcpy(out, v, len);
            out[len] = '\0';
            break;
        }
    }
    fclose(f);
}

typedef struct machine {
    long nproc;
    char kernel[256];
    char cpu[256];
    char thp[128];
    char mem[64];
    int root;
} machine;

static void describe_machine(machine *m)
{
    struct utsname u;
    m->nproc = sysconf(_SC_NPROCESSORS_ONLN);
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname, u.release, u.machine);
    else
        snprintf(m->kernel, sizeof m->kernel, "unknown");
    read_first_line_with("/proc/cpuinfo", "model name", m->cpu, sizeof m->cpu);
    read_first_line_with("/proc/meminfo", "MemTotal", m->mem, sizeof m->mem);
    m->thp[0] = '\0';
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (!fgets(m->thp, sizeof m->thp, f))
            m->thp[0] = '\0';
        fclose(f);
    }
    m->thp[strcspn(m->thp, "\n")] = '\0';
    m->root = geteuid() == 0;
}

/* The ratio a / b: the median over repetitions of each repetition's own ratio. Both ran in the
 * same repetition, seconds apart at most, so a change of the machine's load between
 * repetitions cancels out; the medians of the two columns are printed beside it. */
double bench_paired_ratio(const double *a, const double *b, int n)
{
    double *v = malloc((size_t)n * sizeof *v);
    int k = 0;
    for (int rep = 0; v && rep < n; rep++)
        if (a[rep] >= 0 && b[rep] > 0)
            v[k++] = a[rep] / b[rep];
    double ratio = k ? bench_median(v, k) : 0;
    free(v);
    return ratio;
}

static double paired_ratio(const result *r, int a, int b)
{
    return bench_paired_ratio(r->samples + a * r->reps, r->samples + b * r->reps, r->reps);
}

/* A row of the ratio table: measurement a against b, with the target when the issue states
 * one for this target size (limit 0: informational, with note in the target column). */
void bench_ratio_row(const char *target, const char *a, double a_ms, const char *b, double b_ms,
                     double ratio, double limit, const char *note)
{
    char goal[64] = "", met[8] = "";
    if (limit > 0) {
        snprintf(goal, sizeof goal, "<= %.2f", limit);
        snprintf(met, sizeof met, "%s", ratio <= limit ? "yes" : "NO");
    } else if (note) {
        snprintf(goal, sizeof goal, "%s", note);
    }
    printf("| %s | %s | %.3f | %s | %.3f | %.3f | %s | %s |\n", target, a, a_ms, b, b_ms, ratio,
           goal, met);
}

static void ratio_row(const result *r, int a, int b, double limit, const char *note)
{
    if (!r->have[a] || !r->have[b])
        return;
    bench_ratio_row(r->spec->name, m_names[a], r->median_ms[a], m_names[b], r->median_ms[b],
                    paired_ratio(r, a, b), limit, note);
}

static int is_main_size(const result *r)
{
    return r->spec->kind == BENCH_DENSE && r->spec->map_bytes >= GIB;
}

/* Resident memory in short runs: every other page, or runs of random length. */
static int is_fragmented(const result *r)
{
    return r->spec->kind == BENCH_ALT || r->spec->kind == BENCH_RUNS;
}

/* Small processes, where fixed costs count: the 64 MiB target and python3. */
static int is_small(const result *r)
{
    return r->spec->kind == BENCH_PYTHON ||
           (r->spec->kind == BENCH_DENSE && r->spec->map_bytes < GIB);
}

static void print_header(const machine *mc, const char *cmd)
{
    printf("## memdiff_bench\n\n");
    printf("Machine: %ld CPUs, %s, %s; %s RAM; THP %s; %s.\n", mc->nproc, mc->cpu, mc->kernel,
           mc->mem, mc->thp, mc->root ? "run as root" : "run without root");
    printf("Command: `%s` (%d repetitions, %d below 1 GiB; interleaved, %s; medians).\n\n",
           cmd, reps, reps * SMALL_REPS, cold ? "cold" : "each after an untimed run of itself");
}

static void print_tables(const result *res, size_t n, const machine *mc, const char *cmd)
{
    print_header(mc, cmd);

    printf("### Targets\n\n");
    printf("| target | mapping | resident (VmRSS) | present pages | runs of consecutive frames | "
           "AnonHugePages | mappings |\n");
    printf("|---|---|---|---|---|---|---|\n");
    int python = 0;
    for (size_t i = 0; i < n; i++) {
        const result *r = &res[i];
        if (!r->ok)
            continue;
        printf("| %s | %" PRIu64 " MiB | %" PRIu64 " MiB | %" PRId64 " | %zu | %" PRIu64
               " MiB | %zu |\n",
               r->spec->name, r->spec->map_bytes / MIB, r->t.rss_bytes / MIB, r->present_pages,
               r->frame_runs, r->t.anon_huge / MIB, r->mappings);
        python = python || r->spec->kind == BENCH_PYTHON;
    }
    if (python)
        printf("\npython3: `%s` (MEMDIFF_BENCH_PYTHON chooses another).\n", bench_python());

    printf("\n### Medians (ms) and ns per present page\n\n");
    printf("| target |");
    for (int m = 0; m < M_COUNT; m++)
        printf(" %s |", m_names[m]);
    printf("\n|---|");
    for (int m = 0; m < M_COUNT; m++)
        printf("---|");
    printf("\n");
    for (size_t i = 0; i < n; i++) {
        const result *r = &res[i];
        if (!r->ok)
            continue;
        printf("| %s |", r->spec->name);
        for (int m = 0; m < M_COUNT; m++) {
            if (!r->have[m]) {
                printf(" - |");
                continue;
            }
            double ns = r->present_pages > 0 ? r->median_ms[m] * 1e6 / (double)r->present_pages
                                             : 0;
            printf(" %.3f (%.1f) |", r->median_ms[m], ns);
        }
        printf("\n");
    }

    /* Whether lanes ran in each timed snapshot: a slow two-thread median with few of them
     * says the lanes did not start (a busy machine), one with all of them that they ran and
     * were slow. */
    int said = 0;
    for (size_t i = 0; i < n; i++) {
        const result *r = &res[i];
        if (!r->ok || r->threads < 2)
            continue;
        printf("%s%s: read on two threads or more in %d of %d fast and %d of %d standard "
               "snapshots.\n",
               said++ ? "" : "\n", r->spec->name, r->runs_lanes[M_FAST], r->runs_timed[M_FAST],
               r->runs_lanes[M_STANDARD], r->runs_timed[M_STANDARD]);
    }

    printf("\n### Ratios\n\nRatio: the median over the repetitions of each repetition's own "
           "ratio (both sides measured in the same repetition, so that changes of the machine's "
           "load between repetitions cancel); ms: the medians of each side.\n\n");
    printf("| target | memdiff | ms | against | ms | ratio | target | met |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const result *r = &res[i];
        if (!r->ok)
            continue;
        int main_size = is_main_size(r), frag = is_fragmented(r), small = is_small(r);
        int big = r->spec->map_bytes >= 4 * GIB && r->spec->kind == BENCH_DENSE;
        /* Past the single-thread floor: a standard snapshot of 1 GiB or more of dense memory
         * read on two threads or more, against the single-thread floor. */
        int lanes = r->threads >= 2 && main_size;
        ratio_row(r, M_FAST, M_SCAN, main_size || frag || small ? 1.3 : 0, NULL);
        ratio_row(r, M_FAST_1T, M_SCAN, main_size || frag || small ? 1.3 : 0, NULL);
        ratio_row(r, M_FAST, M_SMAPS, main_size ? 0.4 : 0, NULL);
        /* What the floors themselves reach against smaps: the bound of any reader of them. */
        ratio_row(r, M_SCAN, M_SMAPS, 0, "(floor: no target)");
        ratio_row(r, M_STANDARD, M_PAGEMAP,
                  lanes ? 0.65 : main_size || frag ? 1.15 : small ? 1.3 : 0, NULL);
        ratio_row(r, M_STANDARD_1T, M_PAGEMAP, main_size || frag ? 1.15 : small ? 1.3 : 0,
                  NULL);
        /* Where the kernel stops two threads scaling: memdiff on its threads against the same
         * reads split over two, and that floor against the one-thread floor. */
        ratio_row(r, M_STANDARD, M_PAGEMAP_2T, 0, "(two-thread floor)");
        ratio_row(r, M_PAGEMAP_2T, M_PAGEMAP, 0, "(floor: no target)");
        ratio_row(r, M_STANDARD, M_SMAPS, main_size || frag ? 1.0 : 0, NULL);
        ratio_row(r, M_STANDARD_1T, M_SMAPS, main_size || frag ? 1.0 : 0, NULL);
        ratio_row(r, M_PAGEMAP, M_SMAPS, 0, "(floor: no target)");
        ratio_row(r, M_DEEP, M_KSORTED, main_size ? 1.15 : 0, NULL);
        ratio_row(r, M_DEEP, M_KEACH, main_size ? 0.4 : 0, NULL);
        ratio_row(r, M_CMP_STANDARD, M_STANDARD, big ? 0.02 : 0, NULL);
        ratio_row(r, M_CMP_FAST, M_FAST, big ? 0.02 : 0, NULL);
        /* PSS per mapping costs one smaps read on top of a standard snapshot. */
        ratio_row(r, M_STANDARD_PSS, M_STANDARD, 0, "(cost of --pss)");
        ratio_row(r, M_STANDARD_PSS, M_SMAPS, 0, "(cost of --pss)");
    }

    printf("\n### Storage\n\n");
    printf("Run bytes: the page runs as stored (records and presence bitmaps); frame bytes: "
           "per-page frame numbers, flags and map counts (root only). Bits per mapped page: run "
           "bytes x 8 / the process's mapped pages (VmSize).\n\n");
    printf("| target | depth | storage_bytes | run bytes | frame bytes | runs | bits per mapped "
           "page | target | met |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const result *r = &res[i];
        if (!r->ok)
            continue;
        for (int d = 0; d < 3; d++) {
            if (d > 0 && r->got_depth[d] == r->got_depth[d - 1])
                continue; /* degraded: the same depth as the row before */
            const bench_storage *st = &r->storage[d];
            double bits = r->mapped_pages ? (double)st->run_bytes * 8 / (double)r->mapped_pages
                                          : 0;
            char target[32] = "", met[8] = "";
            int big = r->spec->map_bytes == 4 * GIB;
            if (big && r->spec->kind == BENCH_DENSE) {
                snprintf(target, sizeof target, "runs <= 64 KiB");
                snprintf(met, sizeof met, "%s", st->run_bytes <= 65536 ? "yes" : "NO");
            } else if (is_fragmented(r)) {
                snprintf(target, sizeof target, "<= 2 bits/page");
                snprintf(met, sizeof met, "%s", bits <= 2.0 ? "yes" : "NO");
            }
            printf("| %s | %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64
                   " | %.3f | %s | %s |\n",
                   r->spec->name, memdiff_depth_name(r->got_depth[d]), r->storage_bytes[d],
                   st->run_bytes, st->aux_bytes, st->runs, bits, target, met);
        }
    }
}

static void print_json(const result *res, size_t n, const machine *mc, const char *cmd)
{
    printf("{\n  \"machine\": {\"nproc\": %ld, \"cpu\": \"%s\", \"kernel\": \"%s\", "
           "\"memory\": \"%s\", \"thp\": \"%s\", \"root\": %s},\n",
           mc->nproc, mc->cpu, mc->kernel, mc->mem, mc->thp, mc->root ? "true" : "false");
    printf("  \"command\": \"%s\",\n  \"repetitions\": %d,\n  \"repetitions_below_1gib\": %d,\n"
           "  \"targets\": [",
           cmd, reps, reps * SMALL_REPS);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        const result *r = &res[i];
        if (!r->ok)
            continue;
        printf("%s\n    {\"name\": \"%s\", \"map_bytes\": %" PRIu64 ", \"rss_bytes\": %" PRIu64
               ", \"anon_huge_bytes\": %" PRIu64 ", \"present_pages\": %" PRId64
               ", \"mapped_pages\": %" PRIu64 ", \"mappings\": %zu, \"threads\": %u,",
               first ? "" : ",", r->spec->name, r->spec->map_bytes, r->t.rss_bytes, r->t.anon_huge,
               r->present_pages, r->mapped_pages, r->mappings, r->threads);
        if (r->spec->kind == BENCH_PYTHON) {
            printf(" \"python\": \"");
            for (const char *c = bench_python(); *c; c++)
                printf((unsigned char)*c < 0x20 ? "\\u%04x" : *c == '"' || *c == '\\' ? "\\%c" : "%c",
                       *c);
            printf("\",");
        }
        printf(" \"lane_snapshots\": {\"fast\": [%d, %d], \"standard\": [%d, %d]},",
               r->runs_lanes[M_FAST], r->runs_timed[M_FAST], r->runs_lanes[M_STANDARD],
               r->runs_timed[M_STANDARD]);
        printf("\n     \"median_ms\": {");
        first = 0;
        int f2 = 1;
        for (int m = 0; m < M_COUNT; m++) {
            if (!r->have[m])
                continue;
            printf("%s\"%s\": %.4f", f2 ? "" : ", ", m_keys[m], r->median_ms[m]);
            f2 = 0;
        }
        static const struct {
            const char *key;
            int a, b;
        } pairs[] = {
            {"fast_vs_scan", M_FAST, M_SCAN},
            {"fast_vs_smaps", M_FAST, M_SMAPS},
            {"scan_floor_vs_smaps", M_SCAN, M_SMAPS},
            {"standard_vs_pagemap", M_STANDARD, M_PAGEMAP},
            {"standard_vs_smaps", M_STANDARD, M_SMAPS},
            {"pagemap_floor_vs_smaps", M_PAGEMAP, M_SMAPS},
            {"deep_vs_sorted_runs", M_DEEP, M_KSORTED},
            {"deep_vs_per_frame", M_DEEP, M_KEACH},
            {"compare_standard_vs_standard", M_CMP_STANDARD, M_STANDARD},
            {"compare_fast_vs_fast", M_CMP_FAST, M_FAST},
            {"fast_1_thread_vs_scan", M_FAST_1T, M_SCAN},
            {"standard_1_thread_vs_pagemap", M_STANDARD_1T, M_PAGEMAP},
            {"standard_1_thread_vs_smaps", M_STANDARD_1T, M_SMAPS},
        };
        printf("},\n     \"ratios\": {");
        int f3 = 1;
        for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
            if (!r->have[pairs[k].a] || !r->have[pairs[k].b])
                continue;
            printf("%s\"%s\": %.4f", f3 ? "" : ", ", pairs[k].key,
                   paired_ratio(r, pairs[k].a, pairs[k].b));
            f3 = 0;
        }
        printf("},\n     \"storage\": [");
        for (int d = 0; d < 3; d++) {
            const bench_storage *st = &r->storage[d];
            printf("%s{\"requested\": \"%s\", \"depth\": \"%s\", \"storage_bytes\": %" PRIu64
                   ", \"run_bytes\": %" PRIu64 ", \"frame_bytes\": %" PRIu64 ", \"runs\": %" PRIu64
                   "}",
                   d ? ", " : "", memdiff_depth_name((memdiff_depth)d),
                   memdiff_depth_name(r->got_depth[d]), r->storage_bytes[d],
                   st->run_bytes, st->aux_bytes, st->runs);
        }
        printf("]}");
    }
    printf("\n  ]\n}\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: memdiff_bench [--quick] [--json] [--reps N] [--only S] [--profile D]\n"
               "                     [--pair D [--pid P]] [--record] [--threads N] [--cold]\n"
               "  --quick      targets of at most 1 GiB only (a smoke run)\n"
               "  --cold       no untimed run of each measurement before its timed one (the\n"
               "               timed run then finds what the one before left in the caches)\n"
               "  --json       results as one JSON object instead of tables\n"
               "  --reps N     repetitions per measurement (default 11, at least 3; five\n"
               "               times as many for targets under 1 GiB)\n"
               "  --only S     targets whose name contains S (e.g. \"alternate\"); \"system\":\n"
               "               200 processes against smem and the floors (not in a default\n"
               "               run: about a minute; tables only)\n"
               "  --profile D  only take N snapshots at depth D (fast, standard, deep) or\n"
               "               compares (compare) of the first target selected, for perf\n"
               "  --pair D     memdiff at depth D and its floor, alternately on the first target\n"
               "               selected: wall medians and this process's user / system CPU\n"
               "               (D pss: standard with --pss, without, and smaps alone)\n"
               "  --pid P      with --pair: on running process P instead of a target (two\n"
               "               builds compared on one process, their ratios side by side)\n"
               "  --threads N  memdiff_options.threads of the memdiff measurements (default 0:\n"
               "               every processor); the \"1 thread\" ones always use 1\n"
               "  --live N     the next standard self snapshot with 0 and with N live ones\n"
               "  --record     memdiff record of the first target selected, 20 polls/s: its CPU\n"
               "               and timeline growth; memdiff run's cost on a 4 GiB churn, --reps\n"
               "               pairs\n");
}

/* The depth a --profile or --pair argument names (standard for anything else). */
static memdiff_depth depth_named(const char *what)
{
    return strcmp(what, "fast") == 0   ? MEMDIFF_DEPTH_FAST
           : strcmp(what, "deep") == 0 ? MEMDIFF_DEPTH_DEEP
                                       : MEMDIFF_DEPTH_STANDARD;
}

/* --profile: the snapshots alone, for a profiler to look at (floors and peers left out). */
static int profile(const bench_target_spec *spec, const char *what)
{
    bench_target t;
    if (bench_target_start(spec, &t))
        return 1;
    memdiff_depth d = depth_named(what);
    int cmp = strcmp(what, "compare") == 0;
    memdiff_snapshot *a = cmp ? snap(t.pid, d) : NULL, *b = cmp ? snap(t.pid, d) : NULL;
    double *v = calloc((size_t)reps, sizeof *v);
    for (int i = 0; v && i < reps; i++) {
        double t0 = bench_now_ms();
        if (cmp) {
            memdiff_diff *diff = NULL;
            if (a && b && memdiff_compare(a, b, 0, &diff) == MEMDIFF_OK)
                memdiff_diff_free(diff);
        } else {
            memdiff_snapshot_free(snap(t.pid, d));
        }
        v[i] = bench_now_ms() - t0;
    }
    if (v)
        fprintf(stderr, "memdiff_bench: %s of %s: median %.3f ms over %d\n", what, spec->name,
                bench_median(v, reps), reps);

    free(v);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
    bench_target_stop(&t);
    return 0;
}

/* The benchmark's own resident bytes (/proc/self/statm), 0 when unreadable. */
static uint64_t self_resident(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, res = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%llu %llu", &size, &res) != 2)
        res = 0;
    fclose(f);
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The next standard self snapshot's wall and CPU time (the thread's: less moved by other load
 * on a shared machine), resident growth of the process (the snapshot kept until measured),
 * storage, regions and runs: medians over reps snapshots, each freed after. */
#define NEXT_FIGURES 6
typedef struct next_cost {
    double ms, cpu_ms, resident, storage, regions, runs;
} next_cost;

static int measure_next(next_cost *out)
{
    double *v[NEXT_FIGURES];
    int ok = 1;
    for (int k = 0; k < NEXT_FIGURES; k++)
        ok = (v[k] = calloc((size_t)reps, sizeof(double))) != NULL && ok;
    for (int i = 0; ok && i < reps; i++) {
        uint64_t r0 = self_resident();
        double t0 = bench_now_ms(), c0 = thread_cpu_ms();
        memdiff_snapshot *s = snap(0, MEMDIFF_DEPTH_STANDARD);
        v[5][i] = thread_cpu_ms() - c0;
        v[0][i] = bench_now_ms() - t0;
        v[1][i] = (double)(self_resident() - r0);
        memdiff_snapshot_info in;
        ok = s && memdiff_snapshot_get_info(s, &in) == MEMDIFF_OK;
        if (ok) {
            v[2][i] = (double)in.storage_bytes;
            v[3][i] = (double)in.region_count;
            v[4][i] = (double)in.run_count;
        }
        memdiff_snapshot_free(s);
    }
    if (ok) {
        out->ms = bench_median(v[0], reps);
        out->resident = bench_median(v[1], reps);
        out->storage = bench_median(v[2], reps);
        out->regions = bench_median(v[3], reps);
        out->runs = bench_median(v[4], reps);
        out->cpu_ms = bench_median(v[5], reps);
    }
    for (int k = 0; k < NEXT_FIGURES; k++)
        free(v[k]);
    return ok ? 0 : -1;
}

/* --live N: what the next standard self snapshot costs with none, with N snapshots live in the
 * process (memdiff's own storage must not make it dearer: issue 20), and with none again (after
 * memdiff_trim: the machine's drift meanwhile). Self snapshots, since only the process holding
 * them has them as Own. */
static int live(int n)
{
    memdiff_snapshot **held = calloc((size_t)n, sizeof *held);
    next_cost c[3];
    memset(c, 0, sizeof c);
    memdiff_snapshot_free(snap(0, MEMDIFF_DEPTH_STANDARD)); /* working buffers, kept */
    int rc = !held || measure_next(&c[0]);
    for (int i = 0; !rc && i < n; i++)
        rc = !(held[i] = snap(0, MEMDIFF_DEPTH_STANDARD));
    uint64_t all = self_resident();
    if (!rc)
        rc = measure_next(&c[1]);
    for (int i = 0; held && i < n; i++)
        memdiff_snapshot_free(held[i]);
    free(held);
    memdiff_trim();
    if (!rc)
        rc = measure_next(&c[2]);
    if (rc)
        return 1;
    printf("Next standard self snapshot, medians of %d (the benchmark's own process, VmRSS %.1f "
           "MiB with %d live):\n\n", reps, (double)all / (double)MIB, n);
    printf("| live snapshots | wall ms | CPU ms | resident growth (KiB) | storage (KiB) | regions "
           "| runs |\n|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < 3; k++)
        printf("| %d%s | %.3f | %.3f | %.0f | %.0f | %.0f | %.0f |\n", k == 1 ? n : 0,
               k == 2 ? " (again)" : "", c[k].ms, c[k].cpu_ms,
               c[k].resident / 1024, c[k].storage / 1024, c[k].regions, c[k].runs);
    return 0;
}

static double cpu_ms(const struct timeval *t)
{
    return (double)t->tv_sec * 1e3 + (double)t->tv_usec / 1e3;
}

/* --pair: a snapshot at depth what and its floor (PAGEMAP_SCAN, batched pagemap, or kpage sorted
 * runs), one after the other on one target, N times each, the order swapped every repetition.
 * Besides wall times, getrusage tells user and system CPU apart: where memdiff's extra time goes
 * (its own code, or more of the kernel's). "pss": a standard snapshot with PSS per mapping
 * (MEMDIFF_SNAPSHOT_SMAPS_PSS) against one without, and against reading smaps alone, in a
 * rotating order. */
static int pair(const bench_target_spec *spec, const char *what, pid_t attach)
{
    memdiff_depth d = depth_named(what);
    int pss = strcmp(what, "pss") == 0, nk = pss ? 3 : 2;
    bench_target t;
    memset(&t, 0, sizeof t);
    t.pid = attach;
    t.release_fd = -1;
    if (!attach && bench_target_start(spec, &t))
        return 1;
    bench_frame_runs runs;
    memset(&runs, 0, sizeof runs);
    if (d == MEMDIFF_DEPTH_DEEP && bench_frame_runs_prepare(t.pid, 0, &runs)) {
        if (!attach)
            bench_target_stop(&t);
        return 1;
    }
    double *wall[3], *ratio[2], user[3] = {0, 0, 0}, sys[3] = {0, 0, 0};
    int ok = 1;
    for (int k = 0; k < 3; k++)
        ok &= (wall[k] = calloc((size_t)reps, sizeof(double))) != NULL;
    for (int k = 0; k < 2; k++)
        ok &= (ratio[k] = calloc((size_t)reps, sizeof(double))) != NULL;
    for (int i = 0; ok && i < reps; i++) {
        for (int k = 0; k < nk; k++) {
            int which = (i + k) % nk; /* 0: memdiff, 1: the floor, 2: smaps (pss) */
            struct rusage r0, r1;
            memdiff_snapshot *s = NULL;
            getrusage(RUSAGE_SELF, &r0);
            double t0 = bench_now_ms();
            if (which == 0)
                s = snap_flags(t.pid, d, pss ? MEMDIFF_SNAPSHOT_SMAPS_PSS : 0); /* free untimed */
            else if (pss && which == 1)
                s = snap(t.pid, d);
            else if (pss)
                (void)peer_smaps(t.pid);
            else if (d == MEMDIFF_DEPTH_FAST)
                (void)floor_scan(t.pid);
            else if (d == MEMDIFF_DEPTH_STANDARD)
                (void)floor_pagemap(t.pid, 0);
            else
                (void)floor_kpage_sorted(t.pid, &runs);
            wall[which][i] = bench_now_ms() - t0;
            getrusage(RUSAGE_SELF, &r1);
            memdiff_snapshot_free(s);
            user[which] += cpu_ms(&r1.ru_utime) - cpu_ms(&r0.ru_utime);
            sys[which] += cpu_ms(&r1.ru_stime) - cpu_ms(&r0.ru_stime);
        }
        for (int k = 1; k < nk; k++)
            ratio[k - 1][i] = wall[k][i] > 0 ? wall[0][i] / wall[k][i] : 0;
    }
    if (ok) {
        static const char *const floors[] = {"PAGEMAP_SCAN", "pagemap", "kpage sorted runs"};
        static const char *const names[2][3] = {{"memdiff", "floor", ""},
                                                {"--pss", "standard", "smaps"}};
        const char *against = pss ? "standard without it, smaps alone" : floors[d];
        if (attach)
            printf("process %d, memdiff %s against %s, %d repetitions\n", (int)attach, what,
                   against, reps);
        else
            printf("%s, memdiff %s against %s, %d repetitions\n", spec->name, what, against,
                   reps);
        for (int k = 0; k < nk; k++)
            printf("  %-8s wall median %8.3f ms   user %7.3f ms   system %7.3f ms (means)\n",
                   names[pss][k], bench_median(wall[k], reps), user[k] / reps, sys[k] / reps);
        for (int k = 1; k < nk; k++)
            printf("  median of the paired ratios to %s: %.3f\n", names[pss][k],
                   bench_median(ratio[k - 1], reps));
    }
    for (int k = 0; k < 3; k++)
        free(wall[k]);
    for (int k = 0; k < 2; k++)
        free(ratio[k]);
    bench_frame_runs_free(&runs);
    if (!attach)
        bench_target_stop(&t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], BENCH_TARGET_ARG) == 0)
        bench_target_main(argc, argv);
    if (argc > 1 && strcmp(argv[1], BENCH_CHURN_ARG) == 0)
        bench_churn_main();
    if (argc > 1 && strcmp(argv[1], BENCH_THREADS_ARG) == 0)
        bench_threads_main();
    int quick = 0, json = 0;
    const char *only = NULL, *prof = NULL, *pairing = NULL;
    pid_t attach = 0;
    int live_n = 0, record = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cold") == 0) {
            cold = 1;
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 3) {
                usage(stderr);
                return 2;
            }
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc) {
            prof = argv[++i];
        } else if (strcmp(argv[i], "--pair") == 0 && i + 1 < argc) {
            pairing = argv[++i];
        } else if (strcmp(argv[i], "--pid") == 0 && i + 1 < argc) {
            attach = (pid_t)atoi(argv[++i]);
            if (attach <= 0) {
                usage(stderr);
                return 2;
            }
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            bench_threads = (unsigned)atoi(argv[++i]);
        } else if (strcmp(argv[i], "--record") == 0) {
            record = 1;
        } else if (strcmp(argv[i], "--live") == 0 && i + 1 < argc) {
            live_n = atoi(argv[++i]);
            if (live_n <= 0) {
                usage(stderr);
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (live_n)
        return live(live_n);
    char cmd[512] = "";
    size_t at = 0;
    for (int i = 0; i < argc && at < sizeof cmd; i++) {
        const char *q = strchr(argv[i], ' ') ? "'" : "";
        at += (size_t)snprintf(cmd + at, sizeof cmd - at, "%s%s%s%s", i ? " " : "", q, argv[i], q);
    }

    machine mc;
    describe_machine(&mc);
    result res[NTARGETS];
    memset(res, 0, sizeof res);
    size_t n = 0;
    for (size_t i = 0; i < NTARGETS; i++) {
        const bench_target_spec *spec = &all_targets[i];
        if (quick && spec->map_bytes > GIB)
            continue;
        if (only && !strstr(spec->name, only))
            continue;
        if (prof)
            return profile(spec, prof);
        if (pairing)
            return pair(spec, pairing, attach);
        if (record)
            return bench_recording(MEMDIFF_CLI_PATH, "/proc/self/exe", spec, reps) ? 1 : 0;
        result *r = &res[n++];
        r->spec = spec;
        fprintf(stderr, "memdiff_bench: target %s...\n", spec->name);
        if (bench_target_start(spec, &r->t))
            continue;
        measure(r, 1);
        bench_target_stop(&r->t);
    }
    /* The whole machine takes about a minute (smem): only when asked for by name. */
    int system = only && strstr("system", only) && !prof && !pairing && !record;
    if (json)
        print_json(res, n, &mc, cmd);
    else if (n || !system)
        print_tables(res, n, &mc, cmd);
    if (system && json)
        fprintf(stderr, "memdiff_bench: system: tables only, no --json\n");
    else if (system && !n)
        print_header(&mc, cmd);
    if (system && !json && bench_system(reps))
        return 1;
    for (size_t i = 0; i < n; i++)
        free(res[i].samples);
    return 0;
}
