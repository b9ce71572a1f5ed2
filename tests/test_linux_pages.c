/* test_linux_pages.c - the page walk: exact runs and attributes at each depth on a constructed
 * fixture tree (the pagemap read path), batch boundaries on a tree built at run time, and the
 * real kernel (PAGEMAP_SCAN where it exists) on pages this test touches itself. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture_tree.h"
#include "internal.h"
#include "walk.h"
#include "scenario_util.h"
#include "suites.h"

#define P MEMDIFF_PAGE_PRESENT
#define S MEMDIFF_PAGE_SWAPPED
#define F MEMDIFF_PAGE_FILE
#define X MEMDIFF_PAGE_PRIVATE
#define Z MEMDIFF_PAGE_ZERO
#define SD MEMDIFF_PAGE_SOFT_DIRTY

#define MAX_RUNS 8192
#define MAX_AUX 200000

typedef struct recorded {
    uint64_t start, n;
    unsigned attrs;
    size_t aux; /* index into the recorder's arrays */
    int has_pfn, has_kflags, has_mapcount;
} recorded;

typedef struct recorder {
    recorded runs[MAX_RUNS];
    size_t count;
    uint64_t pfn[MAX_AUX], kflags[MAX_AUX], mapcount[MAX_AUX];
    size_t aux;
    size_t bitmaps, bitmap_runs; /* run_bits calls, and the runs they brought */
} recorder;

static recorder *rec;
static memdiff__arena arena;

static void setup(void)
{
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    arena = a;
    rec = mmap(NULL, sizeof *rec, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(rec, MAP_FAILED);
}

static void teardown(void)
{
    munmap(rec, sizeof *rec);
    memdiff__arena_release(&arena);
}

/* Records a run and its facts (NULL: not given). */
static int record(void *ctx, uint64_t start, uint64_t npages, unsigned attrs, const uint64_t *pfn,
                  const uint64_t *kflags, const uint64_t *mapcount)
{
    recorder *r = ctx;
    if (r->count == MAX_RUNS || r->aux + npages > MAX_AUX)
        return MEMDIFF_ENOMEM;
    recorded *x = &r->runs[r->count++];
    x->start = start;
    x->n = npages;
    x->attrs = attrs;
    x->aux = r->aux;
    x->has_pfn = pfn != NULL;
    x->has_kflags = kflags != NULL;
    x->has_mapcount = mapcount != NULL;
    for (uint64_t i = 0; i < npages; i++) {
        r->pfn[r->aux + i] = pfn ? pfn[i] : 0;
        r->kflags[r->aux + i] = kflags ? kflags[i] : 0;
        r->mapcount[r->aux + i] = mapcount ? mapcount[i] : 0;
    }
    r->aux += npages;
    return MEMDIFF_OK;
}

static int on_run(void *ctx, uint64_t start, uint64_t npages, unsigned attrs, const uint64_t *pfn)
{
    return record(ctx, start, npages, attrs, pfn, NULL, NULL);
}

/* Expands pieces ps[0..n) into out[0..npages): they must cover the run exactly (none: NULL). */
static const uint64_t *expand(const memdiff__values *ps, size_t n, uint64_t npages, uint64_t *out)
{
    if (!ps)
        return NULL;
    uint64_t at = 0;
    for (size_t k = 0; k < n; k++) {
        ck_assert_uint_gt(ps[k].count, 0);
        ck_assert(ps[k].step == 1 || ps[k].step == -1 || (ps[k].step == 0 && !ps[k].values));
        for (uint64_t i = 0; i < ps[k].count && at < npages; i++)
            out[at++] = ps[k].values ? ps[k].values[(int64_t)i * ps[k].step]
                                     : ps[k].first + (uint64_t)ps[k].step * i;
    }
    ck_assert_uint_eq(at, npages);
    return out;
}

/* Records a run whose facts come as pieces as record() takes arrays. */
static int on_run_frames(void *ctx, uint64_t start, uint64_t npages, unsigned attrs,
                         const memdiff__values *fs, size_t nfs, const memdiff__values *kf,
                         size_t nkf, const memdiff__values *mc, size_t nmc)
{
    recorder *r = ctx;
    if (r->aux + npages > MAX_AUX)
        return MEMDIFF_ENOMEM;
    /* record copies the arrays to the same places: expanded there, they are copied onto
     * themselves. */
    const uint64_t *pfn = expand(fs, nfs, npages, r->pfn + r->aux);
    const uint64_t *flags = expand(kf, nkf, npages, r->kflags + r->aux);
    const uint64_t *counts = expand(mc, nmc, npages, r->mapcount + r->aux);
    return record(ctx, start, npages, attrs, pfn, flags, counts);
}

/* Records the runs of a bitmap one by one, checking what the sink contract promises: the first
 * and the last page in runs, a page between runs (the bits tell them apart), more than one. */
static int on_run_bits(void *ctx, uint64_t start, uint64_t npages, unsigned attrs,
                       const uint64_t *bits, const uint64_t *pfn)
{
    recorder *r = ctx;
    const uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
#define BIT(k) ((bits[(k) / 64] >> ((k) % 64)) & 1)
    ck_assert(npages > 0 && BIT(0) && BIT(npages - 1));
    size_t runs = 0;
    uint64_t set = 0;
    for (uint64_t k = 0; k < npages;) {
        uint64_t e = k;
        while (e < npages && BIT(e))
            e++;
        int rc = record(ctx, start + k * ps, e - k, attrs, pfn ? pfn + set : NULL, NULL, NULL);
        if (rc)
            return rc;
        runs++;
        set += e - k;
        for (k = e; k < npages && !BIT(k); k++)
            ;
    }
#undef BIT
    ck_assert_uint_gt(runs, 1);
    r->bitmaps++;
    r->bitmap_runs += runs;
    return MEMDIFF_OK;
}

/* The page walk into the recorder; at deep depth through run_frames, the only way kernel flags
 * come (standard gets arrays: what walk_stretches is compared with). */
static int walk(memdiff__proc *proc, uint64_t start, uint64_t end, memdiff_depth depth)
{
    memdiff__page_sink sink = {on_run, rec, depth == MEMDIFF_DEPTH_DEEP ? on_run_frames : NULL,
                              NULL};
    rec->count = 0;
    rec->aux = 0;
    return memdiff__plat_pages(proc, start, end, depth, &sink);
}

/* walk() with a sink that takes frames as stretches where the backend gives them so, and short
 * runs as bitmaps. */
static int walk_stretches(memdiff__proc *proc, uint64_t start, uint64_t end, memdiff_depth depth)
{
    memdiff__page_sink sink = {on_run, rec, on_run_frames, on_run_bits};
    rec->count = 0;
    rec->aux = 0;
    rec->bitmaps = rec->bitmap_runs = 0;
    return memdiff__plat_pages(proc, start, end, depth, &sink);
}

static void expect_run(size_t i, uint64_t start, uint64_t n, unsigned attrs)
{
    ck_assert_uint_gt(rec->count, i);
    const recorded *x = &rec->runs[i];
    ck_assert_msg(x->start == start && x->n == n && x->attrs == attrs,
                  "run %zu: got 0x%llx +%llu attrs 0x%x, want 0x%llx +%llu attrs 0x%x", i,
                  (unsigned long long)x->start, (unsigned long long)x->n, x->attrs,
                  (unsigned long long)start, (unsigned long long)n, attrs);
}

static uint64_t pfn_of(size_t run, size_t page)
{
    return rec->pfn[rec->runs[run].aux + page];
}

static uint64_t kflags_of(size_t run, size_t page)
{
    return rec->kflags[rec->runs[run].aux + page];
}

static uint64_t mapcount_of(size_t run, size_t page)
{
    return rec->mapcount[rec->runs[run].aux + page];
}

static uint64_t pages_with(unsigned all, unsigned none)
{
    uint64_t n = 0;
    for (size_t i = 0; i < rec->count; i++)
        if ((rec->runs[i].attrs & all) == all && !(rec->runs[i].attrs & none))
            n += rec->runs[i].n;
    return n;
}

static memdiff__proc *open_fixture(memdiff__caps *caps)
{
    memdiff__open_args args = {0, MEMDIFF_TEST_FIXTURES "/pages", NULL, 0, 1};
    memdiff__proc *proc = NULL;
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, caps), MEMDIFF_OK);
    return proc;
}

/* ---- the constructed fixture ------------------------------------------------------------ */

START_TEST(fixture_caps_and_totals)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_fixture(&caps);
    unsigned want = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_FRAMES |
                    MEMDIFF_SRC_PAGE_FLAGS | MEMDIFF_SRC_MAP_COUNTS | MEMDIFF_SRC_PROCESS_TOTALS;
    ck_assert_uint_eq(caps.sources & want, want);
    ck_assert_uint_eq(caps.sources & (MEMDIFF__SRC_PAGEMAP_SCAN | MEMDIFF_SRC_THREADS), 0);
    ck_assert_ptr_null(caps.pfn_why);
    ck_assert_ptr_null(caps.deep_why);
    ck_assert_int_eq(caps.pid, getpid());
    ck_assert_uint_eq(caps.page_size, 4096);

    memdiff_process_totals t;
    ck_assert_int_eq(memdiff__plat_totals(proc, &t), MEMDIFF_OK);
    ck_assert_uint_eq(t.vm_size, 2000 * 1024);
    ck_assert_uint_eq(t.vm_rss, 64 * 1024);
    ck_assert_uint_eq(t.vm_hwm, 80 * 1024);
    ck_assert_uint_eq(t.rss_anon, 40 * 1024);
    ck_assert_uint_eq(t.rss_file, 16 * 1024);
    ck_assert_uint_eq(t.rss_shmem, 8 * 1024);
    ck_assert_uint_eq(t.vm_pte, 12 * 1024);
    ck_assert_uint_eq(t.vm_swap, 8 * 1024);
    memdiff__plat_close(proc);
}
END_TEST

START_TEST(fixture_fast)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_fixture(&caps);
    /* Fast leaves out exclusivity and soft-dirty, as PAGEMAP_SCAN would: runs merge. */
    ck_assert_int_eq(walk(proc, 0x400000, 0x410000, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 1);
    expect_run(0, 0x400000, 5, P | F);
    ck_assert(!rec->runs[0].has_pfn && !rec->runs[0].has_kflags && !rec->runs[0].has_mapcount);

    ck_assert_int_eq(walk(proc, 0x410000, 0x420000, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 3);
    expect_run(0, 0x410000, 6, P);
    expect_run(1, 0x416000, 2, S);
    expect_run(2, 0x418000, 3, P);

    /* The pagemap file ends inside this region: what it does not hold is not present. */
    ck_assert_int_eq(walk(proc, 0x420000, 0x424000, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 1);
    expect_run(0, 0x420000, 2, P | F);

    ck_assert_int_eq(walk(proc, 0x500000, 0x600000, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 0);
    memdiff__plat_close(proc);
}
END_TEST

START_TEST(fixture_standard)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_fixture(&caps);
    ck_assert_int_eq(walk(proc, 0x400000, 0x410000, MEMDIFF_DEPTH_STANDARD), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 2);
    expect_run(0, 0x400000, 4, P | F);
    expect_run(1, 0x404000, 1, P | F | X);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(pfn_of(0, (size_t)i), 0x100u + (unsigned)i);
    ck_assert_uint_eq(pfn_of(1, 0), 0x200);
    ck_assert(rec->runs[0].has_pfn && !rec->runs[0].has_kflags && !rec->runs[0].has_mapcount);

    ck_assert_int_eq(walk(proc, 0x410000, 0x420000, MEMDIFF_DEPTH_STANDARD), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 5);
    expect_run(0, 0x410000, 5, P | X);
    expect_run(1, 0x415000, 1, P); /* the zero page, but its frame is not known here */
    expect_run(2, 0x416000, 2, S);
    expect_run(3, 0x418000, 1, P | X | SD);
    expect_run(4, 0x419000, 2, P);
    for (int i = 0; i < 5; i++)
        ck_assert_uint_eq(pfn_of(0, (size_t)i), 0x300u + (unsigned)i);
    ck_assert_uint_eq(pfn_of(1, 0), 0x400);
    ck_assert_uint_eq(pfn_of(2, 0), 0); /* swap entries hold no frame */
    ck_assert_uint_eq(pfn_of(2, 1), 0);
    ck_assert_uint_eq(pfn_of(3, 0), 0x305);
    ck_assert_uint_eq(pfn_of(4, 0), 0x500);
    ck_assert_uint_eq(pfn_of(4, 1), 0x500);

    ck_assert_int_eq(walk(proc, 0x420000, 0x424000, MEMDIFF_DEPTH_STANDARD), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 1);
    expect_run(0, 0x420000, 2, P | F);
    ck_assert_uint_eq(pfn_of(0, 1), 0x601);
    memdiff__plat_close(proc);
}
END_TEST

START_TEST(fixture_deep)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_fixture(&caps);
    const uint64_t REF = MEMDIFF_PAGE_REFERENCED, ACT = MEMDIFF_PAGE_ACTIVE,
                   DIRTY = MEMDIFF_PAGE_DIRTY;
    ck_assert_int_eq(walk(proc, 0x400000, 0x410000, MEMDIFF_DEPTH_DEEP), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 2);
    expect_run(0, 0x400000, 4, P | F | (unsigned)REF);
    expect_run(1, 0x404000, 1, P | F | X | (unsigned)(REF | ACT));
    ck_assert(rec->runs[0].has_pfn && rec->runs[0].has_kflags && rec->runs[0].has_mapcount);
    ck_assert_uint_eq(kflags_of(0, 2), (1u << 3) | (1u << 5) | (1u << 11) | (1u << 2));
    ck_assert_uint_eq(mapcount_of(0, 3), 3);
    ck_assert_uint_eq(mapcount_of(1, 0), 1);

    ck_assert_int_eq(walk(proc, 0x410000, 0x420000, MEMDIFF_DEPTH_DEEP), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 5);
    expect_run(0, 0x410000, 5, P | X | (unsigned)(DIRTY | ACT));
    expect_run(1, 0x415000, 1, P | Z);
    expect_run(2, 0x416000, 2, S);
    expect_run(3, 0x418000, 1, P | X | SD | MEMDIFF_PAGE_HUGE);
    expect_run(4, 0x419000, 2, P | MEMDIFF_PAGE_KSM);
    ck_assert_uint_eq(mapcount_of(1, 0), 50);
    ck_assert_uint_eq(kflags_of(2, 0), 0);
    ck_assert_uint_eq(mapcount_of(2, 1), 0);
    ck_assert_uint_eq(mapcount_of(4, 0), 2); /* one frame, twice: deduplicated, both filled */
    ck_assert_uint_eq(mapcount_of(4, 1), 2);
    ck_assert_uint_eq(kflags_of(4, 1), (1u << 12) | (1u << 11) | (1u << 21));

    ck_assert_int_eq(walk(proc, 0x420000, 0x424000, MEMDIFF_DEPTH_DEEP), MEMDIFF_OK);
    expect_run(0, 0x420000, 2, P | F);
    ck_assert_uint_eq(mapcount_of(0, 0), 4);
    memdiff__plat_close(proc);
}
END_TEST

START_TEST(bad_ranges)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_fixture(&caps);
    ck_assert_int_eq(walk(proc, 0x400001, 0x410000, MEMDIFF_DEPTH_FAST), MEMDIFF_EINVAL);
    ck_assert_int_eq(walk(proc, 0x410000, 0x400000, MEMDIFF_DEPTH_FAST), MEMDIFF_EINVAL);
    ck_assert_int_eq(walk(proc, 0x410000, 0x410000, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 0);
    memdiff__plat_close(proc);
}
END_TEST

/* The whole contract through the core: a snapshot of the fixture tree (no task/ or mem in it:
 * those facts are simply absent). Byte figures only; categories are the classifier's. */
START_TEST(fixture_snapshot)
{
    static const struct {
        uint64_t start, resident, priv, swapped;
    } want[3][4] = {
        /* fast: no exclusivity, the zero page's frame unknown */
        {{0x400000, 5 * 4096, 0, 0}, {0x410000, 9 * 4096, 0, 2 * 4096},
         {0x420000, 2 * 4096, 0, 0}, {0x500000, 0, 0, 0}},
        /* standard: exclusivity from pagemap */
        {{0x400000, 5 * 4096, 1 * 4096, 0}, {0x410000, 9 * 4096, 6 * 4096, 2 * 4096},
         {0x420000, 2 * 4096, 0, 0}, {0x500000, 0, 0, 0}},
        /* deep: kpageflags names the zero page, which costs nothing */
        {{0x400000, 5 * 4096, 1 * 4096, 0}, {0x410000, 8 * 4096, 6 * 4096, 2 * 4096},
         {0x420000, 2 * 4096, 0, 0}, {0x500000, 0, 0, 0}},
    };
    for (memdiff_depth d = MEMDIFF_DEPTH_FAST; d <= MEMDIFF_DEPTH_DEEP; d++) {
        memdiff_options o = MEMDIFF_OPTIONS_INIT;
        o.depth = d;
        o.fixture_root = MEMDIFF_TEST_FIXTURES "/pages";
        memdiff_snapshot *snap = NULL;
        ck_assert_msg(memdiff_snapshot_take(&o, &snap) == MEMDIFF_OK, "%s", memdiff_last_error());
        memdiff_snapshot_info in;
        ck_assert_int_eq(memdiff_snapshot_get_info(snap, &in), MEMDIFF_OK);
        ck_assert_int_eq(in.depth, d);
        ck_assert_ptr_null(in.degraded);
        ck_assert_uint_eq(in.sources & MEMDIFF__SRC_PAGEMAP_SCAN, 0);
        ck_assert_uint_eq(!!(in.sources & MEMDIFF_SRC_PAGE_FLAGS), d == MEMDIFF_DEPTH_DEEP);
        ck_assert_uint_eq(in.totals.vm_rss, 64 * 1024);
        for (int i = 0; i < 4; i++) {
            memdiff_region r;
            ck_assert_int_eq(memdiff_snapshot_find(snap, want[d][i].start, &r), MEMDIFF_OK);
            ck_assert_msg(r.resident_bytes == want[d][i].resident &&
                              r.private_bytes == want[d][i].priv &&
                              r.swapped_bytes == want[d][i].swapped,
                          "depth %d region 0x%llx: resident %llu private %llu swapped %llu", d,
                          (unsigned long long)want[d][i].start,
                          (unsigned long long)r.resident_bytes, (unsigned long long)r.private_bytes,
                          (unsigned long long)r.swapped_bytes);
        }
        memdiff_snapshot_free(snap);
    }
}
END_TEST

/* ---- batch boundaries, on a tree written now ---------------------------------------------- */

#define BIG (MEMDIFF__LINUX_BATCH + 4464u) /* pages: more than one batch, less than two */
#define R1 UINT64_C(0x10000000)
#define R2 UINT64_C(0x30000000)
/* One page not present, so that the second run straddles the batch boundary. */
#define HOLE (MEMDIFF__LINUX_BATCH - 535u)

static char tree[64];

static void put(const char *name, const void *data, size_t len, uint64_t off)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tree, name);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, data, len, (off_t)off), (ssize_t)len);
    close(fd);
}

/* A new tree whose caller holds CAP_SYS_ADMIN (self/status), with self/maps yet to write. */
static void new_tree(void)
{
    snprintf(tree, sizeof tree, "/tmp/memdiff-pages-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tree));
    char sub[128];
    snprintf(sub, sizeof sub, "%s/self", tree);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    const char status[] = "Name:\tx\nCapEff:\t0000000000200000\n";
    put("self/status", status, sizeof status - 1, 0);
}

/* new_tree() with one private anonymous region of n pages at R1. */
static void new_tree_one_region(uint64_t n)
{
    new_tree();
    char maps[128];
    int len = snprintf(maps, sizeof maps, "%08llx-%08llx rw-p 00000000 00:00 0\n",
                       (unsigned long long)R1, (unsigned long long)(R1 + n * 4096ull));
    put("self/maps", maps, (size_t)len, 0);
}

static void make_tree(void)
{
    new_tree();
    char maps[256];
    int n = snprintf(maps, sizeof maps,
                     "%08llx-%08llx rw-p 00000000 00:00 0\n%08llx-%08llx rw-p 00000000 00:00 0\n",
                     (unsigned long long)R1, (unsigned long long)(R1 + BIG * 4096ull),
                     (unsigned long long)R2, (unsigned long long)(R2 + BIG * 4096ull));
    put("self/maps", maps, (size_t)n, 0);
    put("kpageflags", "", 0, 0); /* empty: every frame reads as no flags, count 0 */
    put("kpagecount", "", 0, 0);
    uint64_t *e = calloc(BIG, 8);
    ck_assert_ptr_nonnull(e);
    for (uint32_t i = 0; i < BIG; i++)
        e[i] = i == HOLE ? 0 : MEMDIFF__PM_PRESENT | MEMDIFF__PM_EXCLUSIVE | (0x1000u + i);
    put("self/pagemap", e, BIG * 8ull, R1 / 4096 * 8);
    for (uint32_t i = 0; i < BIG; i++)
        e[i] = MEMDIFF__PM_PRESENT | MEMDIFF__PM_EXCLUSIVE | (0x100000u + i);
    put("self/pagemap", e, BIG * 8ull, R2 / 4096 * 8);
    free(e);
}

static void remove_tree(void)
{
    const char *names[] = {"self/maps", "self/status", "self/pagemap", "kpageflags",
                           "kpagecount", "self", ""};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", tree, names[i]);
        if (unlink(path) != 0)
            rmdir(path);
    }
}

/* A proc over the tree at root (pid 0: "self"), opened or the test fails. */
static memdiff__proc *open_root(const char *root, int pid, memdiff__caps *caps)
{
    memdiff__open_args args = {pid, root, NULL, 0, 1};
    memdiff__proc *proc = NULL;
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, caps), MEMDIFF_OK);
    return proc;
}

/* Runs from index k: pages [from, to) of the region at base, cut wherever a page is a
 * multiple of batch from base. Returns the index after them. */
static size_t expect_cut(size_t k, uint64_t base, uint64_t from, uint64_t to, uint64_t batch,
                         unsigned attrs)
{
    while (from < to) {
        uint64_t stop = (from / batch + 1) * batch;
        if (stop > to)
            stop = to;
        expect_run(k++, base + from * 4096ull, stop - from, attrs);
        from = stop;
    }
    return k;
}

START_TEST(runs_carry_across_batches)
{
    make_tree();
    memdiff__caps caps;
    memdiff__proc *proc = open_root(tree, 0, &caps);
    ck_assert_uint_ne(caps.sources & MEMDIFF_SRC_FRAMES, 0);
    const uint64_t end1 = R1 + BIG * 4096ull, end2 = R2 + BIG * 4096ull;

    /* Without arrays a run has no length limit. */
    ck_assert_int_eq(walk(proc, R1, end1, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 2);
    expect_run(0, R1, HOLE, P);
    expect_run(1, R1 + (HOLE + 1) * 4096ull, BIG - HOLE - 1, P);
    ck_assert_int_eq(walk(proc, R2, end2, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 1);
    expect_run(0, R2, BIG, P);

    /* With frame arrays the run that straddles the batch boundary still comes out whole.
     * Deep delivers a batch's runs at its end (their facts point into the batch's buffers):
     * there runs come cut at every deep batch boundary, which the snapshot joins. */
    for (memdiff_depth d = MEMDIFF_DEPTH_STANDARD; d <= MEMDIFF_DEPTH_DEEP; d++) {
        ck_assert_int_eq(walk(proc, R1, end1, d), MEMDIFF_OK);
        if (d == MEMDIFF_DEPTH_DEEP) {
            size_t k = expect_cut(0, R1, 0, HOLE, MEMDIFF__LINUX_DEEP_BATCH, P | X);
            k = expect_cut(k, R1, HOLE + 1, BIG, MEMDIFF__LINUX_DEEP_BATCH, P | X);
            ck_assert_uint_eq(rec->count, k);
        } else {
            ck_assert_uint_eq(rec->count, 2);
            expect_run(0, R1, HOLE, P | X);
            expect_run(1, R1 + (HOLE + 1) * 4096ull, BIG - HOLE - 1, P | X);
        }
        ck_assert_uint_eq(pfn_of(0, 0), 0x1000u);
        uint64_t wrong = 0;
        for (size_t r = 0; r < rec->count; r++)
            for (uint32_t i = 0; i < rec->runs[r].n; i++)
                wrong += pfn_of(r, i) != 0x1000u + (rec->runs[r].start - R1) / 4096 + i;
        ck_assert_uint_eq(wrong, 0);
        ck_assert(rec->runs[1].has_kflags == (d == MEMDIFF_DEPTH_DEEP));

        /* A run longer than a batch is delivered in batch-sized pieces, frames in order. */
        ck_assert_int_eq(walk(proc, R2, end2, d), MEMDIFF_OK);
        size_t batch = d == MEMDIFF_DEPTH_DEEP ? MEMDIFF__LINUX_DEEP_BATCH : MEMDIFF__LINUX_BATCH;
        ck_assert_uint_eq(rec->count, expect_cut(0, R2, 0, BIG, batch, P | X));
        wrong = 0;
        for (size_t r = 0; r < rec->count; r++)
            for (uint32_t i = 0; i < rec->runs[r].n; i++)
                wrong += pfn_of(r, i) != 0x100000u + (rec->runs[r].start - R2) / 4096 + i;
        ck_assert_uint_eq(wrong, 0);
    }
    memdiff__plat_close(proc);
    remove_tree();
}
END_TEST

/* The recorder's pages of [a, a + n pages) one by one: attrs (0: not reported) and frames. */
static void per_page(uint64_t a, uint64_t ps, size_t n, unsigned *attrs, uint64_t *pfn)
{
    memset(attrs, 0, n * sizeof *attrs);
    memset(pfn, 0, n * sizeof *pfn);
    for (size_t r = 0; r < rec->count; r++) {
        const recorded *x = &rec->runs[r];
        for (uint64_t i = 0; i < x->n; i++) {
            size_t at = (size_t)((x->start - a) / ps + i);
            ck_assert_uint_lt(at, n);
            attrs[at] = x->attrs;
            pfn[at] = x->has_pfn ? pfn_of(r, (size_t)i) : 0;
        }
    }
}

/* A walk at depth over [a, a + n pages) delivers the same pages, attributes and frames whether
 * the sink takes everything run by run (frames as arrays) or also frames as stretches and
 * short runs as bitmaps. Returns the pages with a frame. */
static size_t expect_sinks_match(memdiff__proc *proc, uint64_t a, uint64_t ps, size_t n,
                                 memdiff_depth depth)
{
    unsigned *a1 = calloc(n, sizeof *a1), *a2 = calloc(n, sizeof *a2);
    uint64_t *f1 = calloc(n, sizeof *f1), *f2 = calloc(n, sizeof *f2);
    ck_assert(a1 && a2 && f1 && f2);
    uint64_t e = a + n * ps;
    ck_assert_int_eq(walk(proc, a, e, depth), MEMDIFF_OK);
    per_page(a, ps, n, a1, f1);
    ck_assert_int_eq(walk_stretches(proc, a, e, depth), MEMDIFF_OK);
    per_page(a, ps, n, a2, f2);
    size_t framed = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(a1[i] == a2[i] && f1[i] == f2[i],
                      "page %zu: arrays attrs 0x%x frame 0x%llx, stretches attrs 0x%x frame 0x%llx",
                      i, a1[i], (unsigned long long)f1[i], a2[i], (unsigned long long)f2[i]);
        framed += f1[i] != 0;
    }
    free(a1);
    free(a2);
    free(f1);
    free(f2);
    return framed;
}

static size_t expect_stretches_match(memdiff__proc *proc, uint64_t a, uint64_t ps, size_t n)
{
    return expect_sinks_match(proc, a, ps, n, MEMDIFF_DEPTH_STANDARD);
}

/* On the tree: a run across the batch boundary, a hole, a run longer than a batch. */
START_TEST(stretches_match_arrays_fixture)
{
    make_tree();
    memdiff__caps caps;
    memdiff__proc *proc = open_root(tree, 0, &caps);
    ck_assert_uint_eq(expect_stretches_match(proc, R1, 4096, BIG), BIG - 1);
    ck_assert_uint_eq(expect_stretches_match(proc, R2, 4096, BIG), BIG);
    /* Stretch mode delivers a batch's run at its end (short stretches point into the batch):
     * here one run a batch, which the snapshot joins. */
    ck_assert_int_eq(walk_stretches(proc, R2, R2 + BIG * 4096ull, MEMDIFF_DEPTH_STANDARD),
                     MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 2);
    expect_run(0, R2, MEMDIFF__LINUX_BATCH, P | X);
    expect_run(1, R2 + MEMDIFF__LINUX_BATCH * 4096ull, BIG - MEMDIFF__LINUX_BATCH, P | X);
    memdiff__plat_close(proc);
    remove_tree();
}
END_TEST

/* Opens the tree and walks its region of n pages at R1 at deep depth into the recorder. */
static memdiff__proc *walk_tree_deep(uint64_t n)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_root(tree, 0, &caps);
    ck_assert_int_eq(walk(proc, R1, R1 + n * 4096ull, MEMDIFF_DEPTH_DEEP), MEMDIFF_OK);
    return proc;
}

/* Deep facts follow the frames whatever their order: a tree whose pages map frames up, down,
 * scattered and repeated, with a different map count and flags word for every frame (none of
 * them exclusively mapped: their counts are read). Every seventh frame is referenced
 * (KPF_REFERENCED), which splits runs inside runs of frames. */
#define FLAGS_OF(f) (((uint64_t)(f) & 0xffff) << 32 | ((f) % 7 == 0 ? UINT64_C(1) << 2 : 0))
START_TEST(fixture_deep_facts_follow_frames)
{
    enum { N = 96 };
    new_tree_one_region(N);
    uint64_t frame[N], e[N];
    for (uint32_t i = 0; i < N; i++) {
        frame[i] = i < 30 ? 0x2000u + i                     /* up */
                   : i < 60 ? 0x3000u - i                   /* down */
                   : i < 80 ? 0x4000u + (i * 37u) % 101u    /* scattered */
                            : 0x2005u;                      /* one frame again and again */
        e[i] = MEMDIFF__PM_PRESENT | frame[i];
    }
    put("self/pagemap", e, sizeof e, R1 / 4096 * 8);
    for (uint64_t f = 0x1f00; f < 0x4100; f++) { /* every frame its own facts */
        uint64_t flags = FLAGS_OF(f), count = f % 251 + 1;
        put("kpageflags", &flags, 8, f * 8);
        put("kpagecount", &count, 8, f * 8);
    }
    memdiff__proc *proc = walk_tree_deep(N);
    size_t page = 0;
    for (size_t r = 0; r < rec->count; r++)
        for (uint64_t k = 0; k < rec->runs[r].n; k++, page++) {
            ck_assert_uint_eq(pfn_of(r, (size_t)k), frame[page]);
            ck_assert_uint_eq(kflags_of(r, (size_t)k), FLAGS_OF(frame[page]));
            ck_assert_uint_eq(!!(rec->runs[r].attrs & MEMDIFF_PAGE_REFERENCED),
                              frame[page] % 7 == 0);
            ck_assert_uint_eq(mapcount_of(r, (size_t)k), frame[page] % 251 + 1);
        }
    ck_assert_uint_eq(page, N);
    memdiff__plat_close(proc);
    remove_tree();
}
END_TEST

/* Map counts pagemap already tells: a small page it calls exclusively mapped is mapped once, and
 * deep does not ask kpagecount about it. The tree's kpagecount says 99 for those frames, which a
 * read would report. Pages (frames nearby one another, so that reads of flags span them):
 *   0-15   exclusive, small, frames up from 0x2000        1 (not read)
 *   16-31  not exclusive, small, up from 0x2011           2, 3, ... 17 (read; after a hole of
 *                                                         one frame, into the flags' span)
 *   32-47  exclusive, small, down from 0x2030             1 (not read)
 *   48-55  exclusive, a large folio's head and tails       3 (read: kpagecount may differ there)
 *   56-63  exclusive, small but for one THP tail frame     1 and 3 (read, all eight)
 *   64-71  exclusive, small, up from 0x2040               1 (not read) */
START_TEST(fixture_deep_counts_from_pagemap)
{
    enum { N = 72 };
    const uint64_t HEAD = UINT64_C(1) << 15, TAIL = UINT64_C(1) << 16, THP = UINT64_C(1) << 22;
    new_tree_one_region(N);
    uint64_t frame[N], e[N], want[N];
    for (uint32_t i = 0; i < N; i++) {
        frame[i] = i < 16   ? 0x2000u + i
                   : i < 32 ? 0x2011u + (i - 16)
                   : i < 48 ? 0x2030u - (i - 32)
                   : i < 56 ? 0x3000u + (i - 48)
                   : i < 64 ? 0x3100u + (i - 56)
                            : 0x2040u + (i - 64);
        int exclusive = i < 16 || i >= 32;
        e[i] = MEMDIFF__PM_PRESENT | (exclusive ? MEMDIFF__PM_EXCLUSIVE : 0) | frame[i];
        uint64_t flags = i == 48 ? HEAD : i < 56 && i > 48 ? TAIL | THP : i == 60 ? TAIL | THP : 0;
        uint64_t count = i >= 16 && i < 32 ? 2 + (i - 16) : i >= 48 && i < 56 ? 3 : i == 60 ? 3 : 99;
        if (i >= 56 && i < 64 && i != 60)
            count = 1; /* read with the tail frame's: the truth */
        want[i] = count == 99 ? 1 : count;
        put("kpageflags", &flags, 8, frame[i] * 8);
        put("kpagecount", &count, 8, frame[i] * 8);
    }
    put("self/pagemap", e, sizeof e, R1 / 4096 * 8);
    memdiff__proc *proc = walk_tree_deep(N);
    size_t page = 0;
    for (size_t r = 0; r < rec->count; r++)
        for (uint64_t k = 0; k < rec->runs[r].n; k++, page++) {
            ck_assert_uint_eq(pfn_of(r, (size_t)k), frame[page]);
            ck_assert_msg(mapcount_of(r, (size_t)k) == want[page], "page %zu: map count %llu, want %llu",
                          page, (unsigned long long)mapcount_of(r, (size_t)k),
                          (unsigned long long)want[page]);
        }
    ck_assert_uint_eq(page, N);
    memdiff__plat_close(proc);
    remove_tree();
}
END_TEST

/* The recorded process (tests/fixtures/recorded): every region gives page for page the same
 * attributes and frames through stretches as through arrays. */
START_TEST(recorded_stretches_match_arrays)
{
    char err[256];
    char *root = fixture_tree_expand(MEMDIFF_TEST_FIXTURES "/recorded", err, sizeof err);
    ck_assert_msg(root != NULL, "%s", err);
    memdiff__caps caps;
    memdiff__proc *proc = open_root(root, 4194305, &caps);
    memdiff__plat_region *r = NULL;
    size_t nr = 0, framed = 0;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &nr), MEMDIFF_OK);
    for (size_t i = 0; i < nr; i++)
        if (r[i].end - r[i].start <= (uint64_t)MAX_AUX * 4096)
            framed += expect_stretches_match(proc, r[i].start, 4096,
                                             (r[i].end - r[i].start) / 4096);
    ck_assert_uint_gt(framed, 1000);
    memdiff__plat_close(proc);
    fixture_tree_remove(root);
}
END_TEST

/* ---- the real kernel ------------------------------------------------------------------ */

static int kernel_at_least(int major, int minor)
{
    struct utsname u;
    int ma = 0, mi = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
        return 0;
    return ma > major || (ma == major && mi >= minor);
}

/* n private anonymous pages, not yet touched, in small pages only (no THP: a huge or
 * multi-size folio would make untouched neighbours resident too). extra: more mmap flags. */
static char *map_pages(long ps, size_t n, int extra)
{
    char *p = mmap(NULL, (size_t)ps * n, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    madvise(p, (size_t)ps * n, MADV_NOHUGEPAGE);
    return p;
}

static const long touched[] = {0, 3, 4, 9, 15};

/* 16 private anonymous pages, exactly 5 of them written. */
static char *map_sixteen(long ps)
{
    char *p = map_pages(ps, 16, 0);
    for (size_t i = 0; i < sizeof touched / sizeof touched[0]; i++)
        p[touched[i] * ps] = 1;
    return p;
}

static memdiff__proc *open_self(memdiff__caps *caps)
{
    memdiff__open_args args = {0, NULL, NULL, 0, 1};
    memdiff__proc *proc = NULL;
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, caps), MEMDIFF_OK);
    return proc;
}

/* open_self, where the kernel has PAGEMAP_SCAN; else NULL, and the test says it checked nothing. */
static memdiff__proc *open_self_with_scan(const char *test)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    if (caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN)
        return proc;
    memdiff__plat_close(proc);
    fprintf(stderr, "%s: no PAGEMAP_SCAN here; checked nothing\n", test);
    return NULL;
}

/* Reads the process's region list again, as a snapshot does before its walk: the walk and
 * presence.c find mappings in it, and presence.c's windows are emptied with it. */
static void read_regions(memdiff__proc *proc)
{
    memdiff__plat_region *regions = NULL;
    size_t count = 0;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &regions, &count), MEMDIFF_OK);
}

START_TEST(real_touched_pages)
{
    long ps = sysconf(_SC_PAGESIZE);
    char *p = map_sixteen(ps);
    uint64_t a = (uint64_t)(uintptr_t)p, e = a + (uint64_t)ps * 16;
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    if (kernel_at_least(6, 7))
        ck_assert_uint_ne(caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN, 0);

    ck_assert_int_eq(walk(proc, a, e, MEMDIFF_DEPTH_STANDARD), MEMDIFF_OK);
    ck_assert_uint_eq(pages_with(P, 0), 5);
    ck_assert_uint_eq(pages_with(P | X, F | Z | S), 5);
    ck_assert_uint_eq(rec->count, 4); /* pages 0, 3-4, 9, 15 */
    for (size_t i = 0; i < rec->count; i++) {
        uint64_t page = (rec->runs[i].start - a) / (uint64_t)ps;
        ck_assert(page == 0 || page == 3 || page == 9 || page == 15);
        if (caps.sources & MEMDIFF_SRC_FRAMES) {
            ck_assert(rec->runs[i].has_pfn);
            ck_assert_uint_ne(pfn_of(i, 0), 0);
        }
    }

    ck_assert_int_eq(walk(proc, a, e, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    ck_assert_uint_eq(pages_with(P, 0), 5);
    ck_assert_uint_eq(pages_with(0, 0), 5);
    ck_assert_uint_eq(pages_with(X, 0), 0); /* fast knows no exclusivity */

    if (caps.sources & MEMDIFF_SRC_PAGE_FLAGS) {
        ck_assert_int_eq(walk(proc, a, e, MEMDIFF_DEPTH_DEEP), MEMDIFF_OK);
        ck_assert_uint_eq(pages_with(P | X, F | Z), 5);
        for (size_t i = 0; i < rec->count; i++) {
            ck_assert(rec->runs[i].has_kflags && rec->runs[i].has_mapcount);
            ck_assert_uint_eq(mapcount_of(i, 0), 1);
            ck_assert_uint_ne(kflags_of(i, 0) & (1u << 12), 0); /* KPF_ANON */
        }
    }
    memdiff__plat_close(proc);
    munmap(p, (size_t)ps * 16);
}
END_TEST

/* Twelve pages, 0, 1, 5 and 9 written, walked in three pieces of four at standard depth: the
 * first walk reads pagemap for all twelve in one pread (the read-ahead), and the other two are
 * served from it, not read again, with the same pages as a pread of their own would give. With
 * split, a protection makes each piece a mapping of its own (the whole regions behind); without,
 * they are pieces of one mapping (the rest of it, as the core cuts malloc chunks). Returns the
 * process opened, the pages in *out. */
static memdiff__proc *walk_twelve_in_fours(int split, char **out)
{
    long ps = sysconf(_SC_PAGESIZE);
    char *p = scn_map(12, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p[0] = p[ps] = p[5 * ps] = p[9 * ps] = 1;
    if (split)
        ck_assert_int_eq(mprotect(p + 4 * ps, (size_t)ps * 4, PROT_READ), 0);
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    read_regions(proc);
    uint64_t a = (uint64_t)(uintptr_t)p, first = a / (uint64_t)ps, P4 = (uint64_t)ps * 4;
    const unsigned attrs = P | X;
    for (uint64_t k = 0; k < 3; k++) {
        ck_assert_int_eq(walk(proc, a + k * P4, a + (k + 1) * P4, MEMDIFF_DEPTH_STANDARD),
                         MEMDIFF_OK);
        ck_assert_uint_eq(proc->stages->pagemap.ahead_first, first);
        ck_assert_uint_ge(proc->stages->pagemap.ahead_count, 12);
        ck_assert_uint_eq(proc->stages->pagemap.ahead_used, first + 4 * (k + 1));
        ck_assert_uint_eq(rec->count, 1);
        expect_run(0, a + (k ? 4 * k + 1 : 0) * (uint64_t)ps, k ? 1 : 2, attrs);
    }
    *out = p;
    return proc;
}

/* Three mappings back to back (their protections keep them apart): walking the first reads
 * the whole regions behind it. Only forward: the first walked again after a write sees it. */
START_TEST(read_ahead_takes_whole_regions_behind)
{
    long ps = sysconf(_SC_PAGESIZE);
    char *p;
    memdiff__proc *proc = walk_twelve_in_fours(1, &p);
    uint64_t a = (uint64_t)(uintptr_t)p, P4 = (uint64_t)ps * 4;
    p[2 * ps] = 1; /* behind the read-ahead's use: read again, not served stale */
    ck_assert_int_eq(walk(proc, a, a + P4, MEMDIFF_DEPTH_STANDARD), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 1);
    expect_run(0, a, 3, P | X);
    memdiff__plat_close(proc);
    scn_unmap(p, 12);
}
END_TEST

/* One mapping walked in pieces: walking the first piece reads the rest of the mapping. */
START_TEST(read_ahead_takes_the_rest_of_its_mapping)
{
    char *p;
    memdiff__proc *proc = walk_twelve_in_fours(0, &p);
    memdiff__plat_close(proc);
    scn_unmap(p, 12);
}
END_TEST

/* A new pass (the region list read again) reads pagemap again, and fast depth scans again:
 * what the last pass read or scanned ahead is dropped, not served stale. Three mappings back to
 * back (a protection keeps the second apart); walking the first at depth takes the second
 * ahead; the second gets a page between the passes, and walked in the second pass shows it. */
static void new_pass_sees_a_write(memdiff__proc *proc, memdiff_depth depth, unsigned attrs)
{
    long ps = sysconf(_SC_PAGESIZE);
    char *p = scn_map(12, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p[0] = p[5 * ps] = 1;
    ck_assert_int_eq(mprotect(p + 4 * ps, (size_t)ps * 4, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
    read_regions(proc);
    uint64_t a = (uint64_t)(uintptr_t)p, P4 = (uint64_t)ps * 4;
    ck_assert_int_eq(walk(proc, a, a + P4, depth), MEMDIFF_OK);
    if (depth == MEMDIFF_DEPTH_FAST) /* the second one scanned, or read, ahead */
        ck_assert_uint_ge(proc->stages->scan.window_end, a + 2 * P4);
    else
        ck_assert_uint_ge(proc->stages->pagemap.ahead_first + proc->stages->pagemap.ahead_count,
                          (a + 2 * P4) / (uint64_t)ps);

    p[6 * ps] = 1;
    read_regions(proc);
    ck_assert_int_eq(walk(proc, a + P4, a + 2 * P4, depth), MEMDIFF_OK);
    ck_assert_uint_eq(rec->count, 1);
    expect_run(0, a + 5 * (uint64_t)ps, 2, attrs); /* pages 5 and 6: read in this pass */
    memdiff__plat_close(proc);
    scn_unmap(p, 12);
}

START_TEST(read_ahead_dropped_with_a_new_region_list)
{
    memdiff__caps caps;
    new_pass_sees_a_write(open_self(&caps), MEMDIFF_DEPTH_STANDARD, P | X);
}
END_TEST

START_TEST(scan_ahead_dropped_with_a_new_region_list)
{
    memdiff__proc *proc = open_self_with_scan("scan_ahead_dropped_with_a_new_region_list");
    if (proc)
        new_pass_sees_a_write(proc, MEMDIFF_DEPTH_FAST, P);
}
END_TEST

/* Walks the regions [cut[r], cut[r + 1]) for r < n at fast depth, one call each, and puts the
 * attributes of their pages, from cut[0] on, into attrs. */
static void walk_regions_at(memdiff__proc *proc, const uint64_t *cut, int n, memdiff_depth depth,
                            unsigned *attrs)
{
    const uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t frames[64];
    for (int r = 0; r < n; r++) {
        ck_assert_int_eq(walk(proc, cut[r], cut[r + 1], depth), MEMDIFF_OK);
        ck_assert_uint_le((cut[r + 1] - cut[r]) / ps, 64);
        per_page(cut[r], ps, (size_t)((cut[r + 1] - cut[r]) / ps), attrs + (cut[r] - cut[0]) / ps,
                 frames);
    }
}

static void walk_regions(memdiff__proc *proc, const uint64_t *cut, int n, unsigned *attrs)
{
    walk_regions_at(proc, cut, n, MEMDIFF_DEPTH_FAST, attrs);
}

/* Four small regions in a row at the start of a mapping of `pages` (12 or more) pages of
 * private anonymous memory, each with its own file rule: a private file mapping of 4 pages
 * (page 0 read: a file page; page 2 written: copied on write), private anonymous memory of 2
 * (page 4 written), the same read-only (page 6 written before), shared anonymous memory of 4
 * (pages 8 and 11 written). */
static char *small_regions(size_t pages)
{
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE), P4 = ps * 4;
    char path[] = "/tmp/memdiff-small-regions-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    ck_assert_int_eq(ftruncate(fd, (off_t)P4), 0);
    char *p = scn_map(pages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_eq(mmap(p, P4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0), p);
    ck_assert_ptr_eq(mmap(p + 2 * P4, P4, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
                     p + 2 * P4);
    close(fd);
    volatile char sink = p[0];  /* a file page */
    (void)sink;
    p[2 * ps] = 1;              /* copied on write: anonymous */
    p[4 * ps] = p[6 * ps] = 1;  /* private anonymous */
    ck_assert_int_eq(mprotect(p + 6 * ps, ps * 2, PROT_READ), 0);
    p[8 * ps] = p[11 * ps] = 1; /* shared anonymous */
    return p;
}

/* Fast depth's scan ahead: four small regions in a row, each with its own file rule (a private
 * file mapping: the kernel's word; private anonymous memory, twice: never a file page; shared
 * anonymous memory: always one). Walking the first scans the others too; they are then served
 * without a scan of their own (a scan would be refused here: scan_refuse_at_call), with the
 * pages and attributes that a walk without scan ahead (no region list) delivers. Only forward:
 * the first walked again after a write sees the write. */
START_TEST(scan_ahead_serves_small_regions_behind)
{
    long ps = sysconf(_SC_PAGESIZE);
    const uint64_t P4 = (uint64_t)ps * 4;
    memdiff__proc *proc = open_self_with_scan("scan_ahead_serves_small_regions_behind");
    if (!proc)
        return;
    char *p = small_regions(12);

    const uint64_t a = (uint64_t)(uintptr_t)p;
    const uint64_t cut[5] = {a, a + P4, a + P4 + 2 * (uint64_t)ps, a + 2 * P4, a + 3 * P4};
    unsigned want[12], got[12];
    uint64_t frames[12];
    /* Without the region list: each region scanned by itself, the file bit asked everywhere. */
    walk_regions(proc, cut, 4, want);
    ck_assert_uint_eq(want[0], P | F);
    ck_assert_uint_eq(want[2], P);
    ck_assert_uint_eq(want[4], P);
    ck_assert_uint_eq(want[5], 0);
    ck_assert_uint_eq(want[6], P);
    ck_assert_uint_eq(want[8], P | F);
    ck_assert_uint_eq(want[9], 0);
    ck_assert_uint_eq(want[11], P | F);

    read_regions(proc);
    for (int r = 0; r < 4; r++) {
        ck_assert_int_eq(walk(proc, cut[r], cut[r + 1], MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
        if (r == 0) {
            ck_assert_uint_ge(proc->stages->scan.window_end, cut[4]); /* the window reaches past the last */
            proc->scan_refuse_at_call = 1;                 /* from here on, a scan is refused */
        }
        per_page(cut[r], (uint64_t)ps, (size_t)((cut[r + 1] - cut[r]) / (uint64_t)ps),
                 got + (cut[r] - a) / (uint64_t)ps, frames);
    }
    ck_assert(!proc->scan_refused); /* no scan was made for the three behind */
    for (int i = 0; i < 12; i++)
        ck_assert_msg(got[i] == want[i], "page %d: attrs 0x%x, want 0x%x", i, got[i], want[i]);

    proc->scan_refuse_at_call = 0;
    p[3 * ps] = 1; /* behind the window's use: scanned again, not served stale */
    ck_assert_int_eq(walk(proc, cut[0], cut[1], MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    per_page(cut[0], (uint64_t)ps, 4, got, frames);
    ck_assert_uint_eq(got[3], P);
    memdiff__plat_close(proc);
    scn_unmap(p, 12);
}
END_TEST

/* Fast depth of another process (presence_walk, set here by hand on a snapshot of this one):
 * attribution's presence windows ask the walk's categories, and the walk takes small regions'
 * ranges from them instead of scanning again. Four small regions, each with its own file rule
 * (a private file mapping: a file page and a page copied on write; private anonymous memory
 * with a page only read; shared anonymous memory; an empty one), then a large one (2048 pages, every other one
 * written). One presence question at the first region, one inside the large one, then the next
 * scan is refused (scan_refuse_at_call): the small regions are served by the walk page for page
 * as a walk without the region list delivers them, and the first scan made is the large
 * region's, which meets the refusal: its presence window (64 pages inside it) is attribution's
 * alone. A walk that scanned a small region would meet the refusal there instead. */
START_TEST(walk_takes_presence_windows_of_small_regions)
{
    long ps = sysconf(_SC_PAGESIZE);
    const uint64_t P4 = (uint64_t)ps * 4;
    enum { SMALL = 16, LARGE = 2048 };
    memdiff__proc *proc = open_self_with_scan("walk_takes_presence_windows_of_small_regions");
    if (!proc)
        return;
    char *p = small_regions(SMALL + LARGE);
    volatile char sink = p[5 * ps]; /* the zero page, where the kernel maps one */
    (void)sink;
    ck_assert_int_eq(mprotect(p + 3 * P4, P4, PROT_READ), 0); /* a region of its own, empty */
    char *big = p + (size_t)SMALL * (size_t)ps;
    for (size_t i = 0; i < LARGE; i += 2)
        big[i * (size_t)ps] = 1;

    const uint64_t a = (uint64_t)(uintptr_t)p;
    const uint64_t cut[6] = {a,          a + P4,     a + P4 + 2 * (uint64_t)ps,
                             a + 2 * P4, a + 3 * P4, a + 4 * P4};
    unsigned want[SMALL], got[SMALL];
    walk_regions(proc, cut, 5, want);
    ck_assert_uint_eq(want[0], P | F);
    ck_assert_uint_eq(want[2], P);
    ck_assert_uint_eq(want[4], P);
    ck_assert_uint_ne(want[5] & P, 0); /* Z too where the kernel maps the zero page */
    ck_assert_uint_eq(want[8], P | F);
    ck_assert_uint_eq(want[12], 0);

    read_regions(proc);
    proc->presence_walk = 1;
    ck_assert_int_eq(memdiff__linux_page_present(proc, a), 1);
    const uint64_t b = (uint64_t)(uintptr_t)big;
    ck_assert_int_eq(memdiff__linux_page_present(proc, b + 2 * (uint64_t)ps * 600), 1);
    proc->scan_refuse_at_call = 1; /* the next scan is refused */
    walk_regions(proc, cut, 5, got);
    ck_assert(!proc->scan_refused);
    ck_assert_int_eq(proc->scan_refuse_at_call, 1); /* no scan was made for the small regions */
    for (int i = 0; i < SMALL; i++)
        ck_assert_msg(got[i] == want[i], "page %d: attrs 0x%x, want 0x%x", i, got[i], want[i]);
    /* The large region: its window of 64 pages is attribution's alone; the walk scans, and is
     * refused (the pagemap path reads it then). */
    ck_assert_int_eq(walk(proc, b, b + (uint64_t)ps * LARGE, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    ck_assert(proc->scan_refused);
    memdiff__plat_close(proc);
    scn_unmap(p, SMALL + LARGE);
}
END_TEST

/* Attribution's look-ahead over a chain of malloc chunks (memdiff__linux_presence_ahead) in a
 * fast snapshot of another process asks the walk's categories there (private anonymous memory:
 * no file bit), and the walk takes the chunks from it. 64 pages of private anonymous memory,
 * walked in four pieces as chunks would be: pages 0 to 15 every other one written, page 17 the
 * zero page, 30 to 33 absent, the rest written. With the look-ahead over pages 16 to 63, the
 * walk makes one scan, of pages 0 to 15 only: page 31, written after the look-ahead, is still
 * absent in the walk (a scan of the whole mapping, which the walk makes without the look-ahead's
 * window or without ending its own where that window begins, would find it). Every other page
 * has the attributes a walk without the look-ahead delivers; the look-ahead alone answers
 * presence. */
START_TEST(chunk_look_ahead_serves_the_walk)
{
    long ps = sysconf(_SC_PAGESIZE);
    enum { N = 64, AHEAD = 16 };
    memdiff__proc *proc = open_self_with_scan("chunk_look_ahead_serves_the_walk");
    if (!proc)
        return;
    char *p = scn_map(N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < N; i++)
        if ((i < AHEAD && i % 2 == 0) || (i >= AHEAD && i != 17 && (i < 30 || i > 33)))
            p[(size_t)i * (size_t)ps] = 1;
    volatile char sink = p[17 * ps];
    (void)sink;
    const uint64_t a = (uint64_t)(uintptr_t)p, P1 = (uint64_t)ps;
    const uint64_t cut[5] = {a, a + 8 * P1, a + AHEAD * P1, a + 40 * P1, a + N * P1};
    unsigned want[N], got[N];
    walk_regions(proc, cut, 4, want);
    ck_assert_uint_eq(want[0], P);
    ck_assert_uint_eq(want[1], 0);
    ck_assert_uint_ne(want[17] & P, 0); /* Z too where the kernel maps the zero page */
    ck_assert_uint_eq(want[31], 0);
    ck_assert_uint_eq(want[63], P);

    read_regions(proc);
    proc->presence_walk = 1;
    memdiff__linux_presence_ahead(proc, a + AHEAD * P1, N - AHEAD);
    proc->scan_refuse_at_call = 1; /* from here on, a scan is refused */
    ck_assert_int_eq(memdiff__linux_page_present(proc, a + 31 * P1), 0);
    ck_assert_int_eq(memdiff__linux_page_present(proc, a + 40 * P1), 1);
    p[31 * ps] = 1;
    proc->scan_refuse_at_call = 2; /* one scan, then refusal */
    walk_regions(proc, cut, 4, got);
    ck_assert(!proc->scan_refused);
    ck_assert_int_eq(proc->scan_refuse_at_call, 1); /* exactly one scan was made */
    for (int i = 0; i < N; i++)
        ck_assert_msg(got[i] == want[i], "page %d: attrs 0x%x, want 0x%x", i, got[i], want[i]);
    ck_assert_uint_eq(scn_pagemap_entry(p + 31 * ps) & MEMDIFF__PM_PRESENT, MEMDIFF__PM_PRESENT);
    memdiff__plat_close(proc);
    scn_unmap(p, N);
}
END_TEST

/* Standard depth of another process (presence_pagemap, set here by hand on a snapshot of this
 * one): attribution's windows are read from pagemap and the walk takes their entries instead of
 * reading them again. 64 pages of private anonymous memory, walked in four pieces: pages 0 to 15
 * every other one written, 30 to 33 absent, the rest written. A presence question at page 0 reads
 * a window over the mapping (it is small); pages 40 and 41, written after it, are still absent in
 * the walk, and every other page has the attributes of a walk without the window. Then the
 * look-ahead of a chain of chunks (memdiff__linux_presence_ahead) in a second such mapping: its
 * answers need no scan (one would be refused), and page 31, written after it, is still absent
 * in the walk. A walk that read pagemap again would find those pages present. */
START_TEST(standard_walk_takes_presence_entries)
{
    long ps = sysconf(_SC_PAGESIZE);
    enum { N = 64, AHEAD = 16 };
    memdiff__proc *proc = open_self_with_scan("standard_walk_takes_presence_entries");
    if (!proc)
        return;
    char *m[2];
    for (int k = 0; k < 2; k++) {
        m[k] = scn_map(N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        for (int i = 0; i < N; i++)
            if ((i < AHEAD && i % 2 == 0) || (i >= AHEAD && (i < 30 || i > 33) && i != 40 &&
                                              i != 41))
                m[k][(size_t)i * (size_t)ps] = 1;
    }
    const uint64_t P1 = (uint64_t)ps;
    unsigned want[2][N], got[N];
    uint64_t cut[2][5];
    for (int k = 0; k < 2; k++) {
        const uint64_t a = (uint64_t)(uintptr_t)m[k];
        const uint64_t c[5] = {a, a + 8 * P1, a + AHEAD * P1, a + 40 * P1, a + N * P1};
        memcpy(cut[k], c, sizeof c);
        walk_regions_at(proc, cut[k], 4, MEMDIFF_DEPTH_STANDARD, want[k]);
        ck_assert_uint_ne(want[k][0] & P, 0);
        ck_assert_uint_eq(want[k][1], 0);
        ck_assert_uint_eq(want[k][31], 0);
        ck_assert_uint_eq(want[k][40], 0);
        ck_assert_uint_ne(want[k][63] & P, 0);
    }

    read_regions(proc);
    proc->presence_pagemap = 1;
    const uint64_t a0 = (uint64_t)(uintptr_t)m[0];
    ck_assert_int_eq(memdiff__linux_page_present(proc, a0), 1);
    m[0][40 * ps] = m[0][41 * ps] = 1;
    walk_regions_at(proc, cut[0], 4, MEMDIFF_DEPTH_STANDARD, got);
    for (int i = 0; i < N; i++)
        ck_assert_msg(got[i] == want[0][i], "window, page %d: attrs 0x%x, want 0x%x", i, got[i],
                      want[0][i]);

    const uint64_t a1 = (uint64_t)(uintptr_t)m[1];
    memdiff__linux_presence_ahead(proc, a1 + AHEAD * P1, N - AHEAD);
    proc->scan_refuse_at_call = 1; /* from here on, a scan is refused */
    ck_assert_int_eq(memdiff__linux_page_present(proc, a1 + 31 * P1), 0);
    ck_assert_int_eq(memdiff__linux_page_present(proc, a1 + 39 * P1), 1);
    ck_assert(!proc->scan_refused);
    proc->scan_refuse_at_call = 0;
    m[1][31 * ps] = 1;
    walk_regions_at(proc, cut[1], 4, MEMDIFF_DEPTH_STANDARD, got);
    for (int i = 0; i < N; i++)
        ck_assert_msg(got[i] == want[1][i], "look-ahead, page %d: attrs 0x%x, want 0x%x", i,
                      got[i], want[1][i]);
    ck_assert_uint_eq(scn_pagemap_entry(m[0] + 40 * ps) & MEMDIFF__PM_PRESENT, MEMDIFF__PM_PRESENT);
    ck_assert_uint_eq(scn_pagemap_entry(m[1] + 31 * ps) & MEMDIFF__PM_PRESENT, MEMDIFF__PM_PRESENT);
    memdiff__plat_close(proc);
    scn_unmap(m[0], N);
    scn_unmap(m[1], N);
}
END_TEST

/* What attribution asks of page presence (is this page present? where is the first page, or
 * hole, from here?) is answered from one scan kept for the next questions: the answers equal
 * this process's own pagemap, page by page, and after the first question none needs a scan of
 * its own (a scan would be refused: scan_refuse_at_call). read_mem reads a present page and
 * calls an absent one not resident, without faulting it in. */
START_TEST(presence_answers_from_one_scan)
{
    long ps = sysconf(_SC_PAGESIZE);
    enum { N = 12 };
    memdiff__proc *proc = open_self_with_scan("presence_answers_from_one_scan");
    if (!proc)
        return;
    char *p = scn_map(N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const int written[] = {0, 1, 4, 7, 8, 11};
    for (size_t i = 0; i < sizeof written / sizeof written[0]; i++)
        p[written[i] * ps] = (char)(10 + written[i]);
    read_regions(proc);
    const uint64_t a = (uint64_t)(uintptr_t)p, e = a + (uint64_t)ps * N;
    int truth[N];
    for (int i = 0; i < N; i++)
        truth[i] = (scn_pagemap_entry(p + i * ps) & MEMDIFF__PM_PRESENT) != 0;
    ck_assert_int_eq(truth[0] + truth[1] + truth[4] + truth[7] + truth[8] + truth[11], 6);
    ck_assert_int_eq(truth[2] + truth[3] + truth[5] + truth[6] + truth[9] + truth[10], 0);

    ck_assert_int_eq(memdiff__linux_page_present(proc, a), 1);
    proc->scan_refuse_at_call = 1; /* from here on, a scan is refused */
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(memdiff__linux_page_present(proc, a + (uint64_t)i * ps), truth[i]);
    for (int from = 0; from < N; from++)
        for (int want = 0; want <= 1; want++) {
            int k = from;
            while (k < N && truth[k] != want)
                k++;
            uint64_t at = 0;
            ck_assert(memdiff__linux_first_page_known(proc, a + (uint64_t)from * ps, e, want, &at));
            ck_assert_msg(at == a + (uint64_t)k * ps, "from page %d, first %s: page %lld, want %d",
                          from, want ? "present" : "hole", (long long)((at - a) / ps), k);
        }
    char b = 0;
    ck_assert_int_eq(memdiff__linux_read_mem(proc, a + 7 * (uint64_t)ps, &b, 1), MEMDIFF_OK);
    ck_assert_int_eq(b, 17);
    ck_assert_int_eq(memdiff__linux_read_mem(proc, a + 2 * (uint64_t)ps, &b, 1),
                     MEMDIFF__LINUX_NOT_RESIDENT);
    ck_assert_uint_eq(scn_pagemap_entry(p + 2 * ps) & MEMDIFF__PM_PRESENT, 0); /* not faulted */
    ck_assert(!proc->scan_refused);
    memdiff__plat_close(proc);
    scn_unmap(p, N);
}
END_TEST

/* Presence is kept for every window scanned, not just the last: modules ask about their
 * headers, then heaps ask again from the bottom of the address space. Two 8-page mappings A and
 * B with 2,048 PROT_NONE pages between (one window covers 1,024 pages of mappings: A's ends
 * inside the gap): after a question about A and one about B, questions about both are answered
 * with every further scan refused; a window scanned between them stops where B's begins. */
START_TEST(presence_windows_kept)
{
    long ps = sysconf(_SC_PAGESIZE);
    enum { N = 8, GAP = 2048 };
    memdiff__proc *proc = open_self_with_scan("presence_windows_kept");
    if (!proc)
        return;
    char *p = scn_map(N + GAP + N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_int_eq(mprotect(p + N * ps, (size_t)GAP * (size_t)ps, PROT_NONE), 0);
    char *q = p + (size_t)(N + GAP) * (size_t)ps;
    p[0] = p[5 * ps] = q[ps] = q[7 * ps] = 1;
    read_regions(proc);
    const uint64_t a = (uint64_t)(uintptr_t)p, b = (uint64_t)(uintptr_t)q, gap_end = b;
    ck_assert_int_eq(memdiff__linux_page_present(proc, a), 1);
    ck_assert_int_eq(memdiff__linux_page_present(proc, b + (uint64_t)ps), 1);
    ck_assert_uint_eq(proc->presence->window_count, 2);
    /* The last gap page: a window of its own, up to B's. */
    ck_assert_int_eq(memdiff__linux_page_present(proc, gap_end - (uint64_t)ps), 0);
    ck_assert_uint_eq(proc->presence->window_count, 3);
    for (size_t w = 0; w + 1 < proc->presence->window_count; w++)
        ck_assert_uint_le(proc->presence->windows[w].end, proc->presence->windows[w + 1].start);
    ck_assert_uint_eq(proc->presence->windows[1].end, proc->presence->windows[2].start);

    proc->scan_refuse_at_call = 1; /* from here on, a scan is refused */
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(memdiff__linux_page_present(proc, a + (uint64_t)i * ps),
                         i == 0 || i == 5);
        ck_assert_int_eq(memdiff__linux_page_present(proc, b + (uint64_t)i * ps),
                         i == 1 || i == 7);
    }
    uint64_t at = 0;
    ck_assert(memdiff__linux_first_page_known(proc, a + (uint64_t)ps, a + (uint64_t)ps * N, 1, &at));
    ck_assert_uint_eq(at, a + 5 * (uint64_t)ps);
    ck_assert(memdiff__linux_first_page_known(proc, b + (uint64_t)ps, b + (uint64_t)ps * N, 0, &at));
    ck_assert_uint_eq(at, b + 2 * (uint64_t)ps);
    /* Outside every window: unknown now (the scan it needs is refused). */
    ck_assert_int_eq(memdiff__linux_page_present(proc, gap_end - (uint64_t)ps * (GAP / 2)), -1);
    memdiff__plat_close(proc);
    scn_unmap(p, N + GAP + N);
}
END_TEST

/* Presence kept for attribution holds for one pass: after the region list is read again, a page
 * that became present since is seen, where the last pass's window said it was not. */
START_TEST(presence_dropped_with_a_new_region_list)
{
    long ps = sysconf(_SC_PAGESIZE);
    memdiff__proc *proc = open_self_with_scan("presence_dropped_with_a_new_region_list");
    if (!proc)
        return;
    char *p = scn_map(8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p[0] = 1;
    read_regions(proc);
    const uint64_t a = (uint64_t)(uintptr_t)p;
    ck_assert_int_eq(memdiff__linux_page_present(proc, a), 1);
    ck_assert_int_eq(memdiff__linux_page_present(proc, a + (uint64_t)ps), 0);
    p[ps] = 1;
    read_regions(proc);
    ck_assert_int_eq(memdiff__linux_page_present(proc, a + (uint64_t)ps), 1);
    memdiff__plat_close(proc);
    scn_unmap(p, 8);
}
END_TEST

/* An open for no deeper than standard leaves the system-wide page files alone (two opens and
 * two closes a snapshot): no kpageflags or kpagecount descriptor, no such source; frames are
 * still checked, as standard depth uses them. */
START_TEST(open_without_deep_leaves_kpage_files)
{
    memdiff__caps all, some;
    memdiff__proc *proc = open_self(&all);
    memdiff__plat_close(proc);
    memdiff__open_args args = {0, NULL, NULL, MEMDIFF__OPEN_NO_DEEP, 1};
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, &some), MEMDIFF_OK);
    ck_assert_int_eq(proc->kpageflags_fd, -1);
    ck_assert_int_eq(proc->kpagecount_fd, -1);
    ck_assert_uint_eq(some.sources & (MEMDIFF_SRC_PAGE_FLAGS | MEMDIFF_SRC_MAP_COUNTS), 0);
    ck_assert_uint_eq(some.sources,
                      all.sources & ~(unsigned)(MEMDIFF_SRC_PAGE_FLAGS | MEMDIFF_SRC_MAP_COUNTS));
    if (geteuid() == 0)
        ck_assert_uint_ne(all.sources & MEMDIFF_SRC_PAGE_FLAGS, 0);
    memdiff__plat_close(proc);
}
END_TEST

/* Two pages read, never written: the shared zero page at every depth that can tell it (zero
 * pages in fast from the scan, in standard from the frame, in deep from kpageflags too). On a
 * kernel that maps no zero page (scn_zero_page_on_read) they are pages of the test's own,
 * resident and private, and no depth may call them zero. */
START_TEST(real_zero_page)
{
    long ps = sysconf(_SC_PAGESIZE);
    const size_t zero = scn_zero_page_on_read() ? 2 : 0, own = 2 - zero;
    volatile char *p = mmap(NULL, (size_t)ps * 4, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne((void *)p, MAP_FAILED);
    madvise((void *)p, (size_t)ps * 4, MADV_NOHUGEPAGE);
    (void)p[0];
    (void)p[2 * ps];
    uint64_t a = (uint64_t)(uintptr_t)p, e = a + (uint64_t)ps * 4;
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    ck_assert_int_eq(walk(proc, a, e, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    if (caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN) {
        ck_assert_uint_eq(pages_with(P | Z, 0), zero);
        ck_assert_uint_eq(pages_with(P, Z), own);
    }
    if (caps.sources & MEMDIFF_SRC_FRAMES) {
        /* The frame memdiff knows the zero page by: the one our read mapped, or none at all
         * where no zero page maps (the page memdiff's own probe read was freed again, to
         * become anyone's page: taken for the zero page, it would hide a resident page). Both
         * when learned (this process's first open may have been earlier) and when kept. */
        uint64_t entry = scn_pagemap_entry((const void *)p);
        const uint64_t want_zero = zero ? entry & MEMDIFF__PM_PFN_MASK : 0;
        ck_assert_uint_eq(proc->zero_pfn, want_zero);
        memdiff__proc *again = open_self(&caps);
        ck_assert_uint_eq(again->zero_pfn, want_zero);
        memdiff__plat_close(again);
        ck_assert_int_eq(walk(proc, a, e, MEMDIFF_DEPTH_STANDARD), MEMDIFF_OK);
        ck_assert_uint_eq(pages_with(P | Z, X), zero);
        ck_assert_uint_eq(pages_with(P | X, Z), own);
    }
    if (caps.sources & MEMDIFF_SRC_PAGE_FLAGS) {
        ck_assert_int_eq(walk(proc, a, e, MEMDIFF_DEPTH_DEEP), MEMDIFF_OK);
        ck_assert_uint_eq(pages_with(P | Z, X), zero);
        ck_assert_uint_eq(pages_with(P | X, Z), own);
    }
    memdiff__plat_close(proc);
    munmap((void *)p, (size_t)ps * 4);
}
END_TEST

/* Real memory of every shape the decoder meets: frames as the allocator hands them out (up and
 * down), every third page, zero pages read (pages of its own where the kernel maps no zero
 * page), untouched pages. */
START_TEST(real_stretches_match_arrays)
{
    long ps = sysconf(_SC_PAGESIZE);
    const size_t n = 700;
    char *p = map_pages(ps, n, 0);
    size_t written = 0;
    for (size_t i = 0; i < 500; i++)
        if (i < 300 || i % 3 == 0) {
            p[i * (size_t)ps] = 1;
            written++;
        }
    for (size_t i = 500; i < 600; i++)
        (void)((volatile char *)p)[i * (size_t)ps];
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    size_t framed = expect_stretches_match(proc, (uint64_t)(uintptr_t)p, (uint64_t)ps, n);
    if (caps.sources & MEMDIFF_SRC_FRAMES) {
        const size_t zero = scn_zero_page_on_read() ? 100 : 0;
        ck_assert_uint_eq(framed, written + 100); /* the zero page has a frame too */
        ck_assert_int_eq(walk_stretches(proc, (uint64_t)(uintptr_t)p,
                                        (uint64_t)(uintptr_t)p + (uint64_t)ps * n,
                                        MEMDIFF_DEPTH_STANDARD),
                         MEMDIFF_OK);
        ck_assert_uint_eq(pages_with(P | X, Z), written + 100 - zero);
        ck_assert_uint_eq(pages_with(P | Z, X), zero);
    } else {
        fprintf(stderr, "real_stretches_match_arrays: no frame numbers (not root); stretches "
                        "unused, arrays only compared with themselves\n");
    }
    memdiff__plat_close(proc);
    munmap(p, (size_t)ps * n);
}
END_TEST

/* Short runs close together reach the sink as bitmaps (run_bits) and mean the same pages,
 * attributes and frames as run by run, at fast and standard depth: every other page written,
 * runs of three pages two apart, a run too long to gather, runs 300 pages apart (too far to
 * join), then pages written and read in turn. */
START_TEST(real_gathered_runs_match_one_by_one)
{
    long ps = sysconf(_SC_PAGESIZE);
    const size_t n = 6000;
    char *p = map_pages(ps, n, 0);
    size_t touched_pages = 0;
    for (size_t i = 0; i < n; i++) {
        int write = i < 2000   ? i % 2 == 0
                    : i < 3000 ? (i - 2000) % 5 < 3
                    : i < 3400 ? 1
                    : i < 4000 ? (i < 3600 || i >= 3900) && i % 5 == 0
                               : i % 4 == 0;
        if (write)
            p[i * (size_t)ps] = 1;
        else if (i >= 4000 && i % 4 == 2)
            (void)((volatile char *)p)[i * (size_t)ps];
        touched_pages += write || (i >= 4000 && i % 4 == 2);
    }
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    const uint64_t a = (uint64_t)(uintptr_t)p, e = a + (uint64_t)ps * n;
    const memdiff_depth depth[] = {MEMDIFF_DEPTH_FAST, MEMDIFF_DEPTH_STANDARD};
    for (size_t d = 0; d < 2; d++) {
        expect_sinks_match(proc, a, (uint64_t)ps, n, depth[d]);
        ck_assert_int_eq(walk_stretches(proc, a, e, depth[d]), MEMDIFF_OK);
        ck_assert_uint_eq(pages_with(P, 0), touched_pages);
        /* Three bitmaps: 1,000 runs of one page and 200 of three (ended by the run of 401
         * pages at 3,000, too long to gather), 39 pages five apart (ended by the gap of 304
         * pages at 3,596), then 20 more and what follows with the same attributes: the pages
         * read are the zero page's where the kernel maps it (other attributes: each run goes
         * alone, and the bitmap takes only page 4,000) and pages like the written ones where it
         * does not (all 1,000 runs from 4,000 on join). */
        ck_assert_uint_eq(rec->bitmaps, 3);
        ck_assert_uint_eq(rec->bitmap_runs, 1200 + 39 + (scn_zero_page_on_read() ? 21 : 1020));
    }
    memdiff__plat_close(proc);
    munmap(p, (size_t)ps * n);
}
END_TEST

/* A forked child (a copy of this process's memory) that waits until *release is closed, then
 * exits. */
static pid_t waiting_child(int *release)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        char b;
        close(fds[1]);
        (void)!read(fds[0], &b, 1);
        _exit(0);
    }
    close(fds[0]);
    *release = fds[1];
    return c;
}

/* The pages of a walk as recorded, kept: runs and frames (the recorder is overwritten by the
 * next walk). */
typedef struct kept_runs {
    recorded runs[MAX_RUNS];
    size_t count;
    uint64_t pfn[MAX_AUX];
} kept_runs;

static void keep_runs(kept_runs *k)
{
    memcpy(k->runs, rec->runs, rec->count * sizeof *rec->runs);
    k->count = rec->count;
    memcpy(k->pfn, rec->pfn, rec->aux * sizeof *rec->pfn);
}

/* Walks [a, a + n pages) at fast and standard depth run by run (a sink without bitmaps or
 * stretches) and through bitmaps and stretches: the same runs, run for run, with the same frames
 * (and as many as expected at each depth), the frames those /proc/self/pagemap names. */
static void expect_runs_match(memdiff__proc *proc, const memdiff__caps *caps, uint64_t a,
                              uint64_t ps, size_t n, const size_t expect_runs[2],
                              size_t touched_pages)
{
    const uint64_t e = a + ps * n;
    kept_runs *one = malloc(sizeof *one);
    ck_assert_ptr_nonnull(one);
    const memdiff_depth depth[] = {MEMDIFF_DEPTH_FAST, MEMDIFF_DEPTH_STANDARD};
    for (size_t d = 0; d < 2; d++) {
        ck_assert_int_eq(walk(proc, a, e, depth[d]), MEMDIFF_OK);
        keep_runs(one);
        ck_assert_int_eq(walk_stretches(proc, a, e, depth[d]), MEMDIFF_OK);
        ck_assert_uint_eq(one->count, expect_runs[d]);
        ck_assert_uint_eq(rec->count, expect_runs[d]);
        ck_assert_uint_gt(rec->bitmaps, 0);
        ck_assert_uint_eq(pages_with(P, 0), touched_pages);
        for (size_t r = 0; r < rec->count; r++) {
            const recorded *x = &one->runs[r], *y = &rec->runs[r];
            ck_assert_msg(x->start == y->start && x->n == y->n && x->attrs == y->attrs,
                          "depth %d run %zu: per run 0x%llx +%llu attrs 0x%x, gathered 0x%llx "
                          "+%llu attrs 0x%x",
                          (int)depth[d], r, (unsigned long long)x->start,
                          (unsigned long long)x->n, x->attrs, (unsigned long long)y->start,
                          (unsigned long long)y->n, y->attrs);
            for (uint64_t i = 0; i < x->n; i++)
                ck_assert_uint_eq(one->pfn[x->aux + i], pfn_of(r, (size_t)i));
        }
    }
    free(one);
    if (!(caps->sources & MEMDIFF_SRC_FRAMES)) {
        fprintf(stderr, "real_fragmented_runs_match_per_run: no frame numbers (not root): "
                        "runs compared without frames\n");
        return;
    }
    /* the frames of the last walk (standard) against pagemap read directly */
    int fd = open("/proc/self/pagemap", O_RDONLY);
    ck_assert_int_ge(fd, 0);
    uint64_t *pm = malloc(n * sizeof *pm);
    ck_assert_ptr_nonnull(pm);
    ck_assert_int_eq(pread(fd, pm, n * sizeof *pm, (off_t)(a / ps * 8)),
                     (ssize_t)(n * sizeof *pm));
    close(fd);
    size_t framed = 0;
    for (size_t r = 0; r < rec->count; r++)
        for (uint64_t i = 0; i < rec->runs[r].n; i++, framed++) {
            size_t page = (size_t)((rec->runs[r].start - a) / ps + i);
            ck_assert(pm[page] >> 63);
            ck_assert_uint_eq(pfn_of(r, (size_t)i), pm[page] & MEMDIFF__PM_PFN_MASK);
        }
    ck_assert_uint_eq(framed, touched_pages);
    free(pm);
}

/* The runs pages of kinds kind[0..n) make (0: not resident) at fast and standard depth: one a
 * stretch of one kind, where kind 3 (a page of its own, exclusive among shared ones) is kind 1
 * at fast depth, which has no exclusivity. */
static void runs_of(const unsigned char *kind, size_t n, size_t runs[2])
{
    runs[0] = runs[1] = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned k = kind[i], before = i ? kind[i - 1] : 0;
        runs[0] += k && (k == 3 ? 1u : k) != (before == 3 ? 1u : before);
        runs[1] += k && k != before;
    }
}

/* Fragmented memory, where the walker takes 64 pagemap entries at a time (standard, root) or the
 * scan's short ranges in a tight loop (fast) into the gathered bitmap, delivers the runs of the
 * run-by-run path (expect_runs_match). The memory: 1,000 pages every other one written; runs of
 * 1 to 70 pages with holes of 1 to 70 (in another order), one page in the middle of every fifth
 * run of three or more read instead of written; runs of 1 to 8 pages with holes of 1 to 3. Then
 * again with a child holding the pages and every seventh written page written again: the pages
 * shared with the child, no longer exclusively mapped, have the pagemap flags of the zero page
 * (which its frame alone tells apart), and the ones written again, copies of their own, end
 * runs of them inside a block. */
START_TEST(real_fragmented_runs_match_per_run)
{
    long ps = sysconf(_SC_PAGESIZE);
    const size_t n = 12000;
    char *p = map_pages(ps, n, 0);
    unsigned char *state = calloc(n, 1); /* 1 written, 2 read */
    ck_assert_ptr_nonnull(state);
    size_t at = 0;
    for (; at < 2000; at += 2)
        state[at] = 1;
    for (size_t len = 1; len <= 70; len++) {
        for (size_t k = 0; k < len; k++)
            state[at + k] = len >= 3 && len % 5 == 0 && k == len / 2 ? 2 : 1;
        at += len + (len * 37) % 70 + 1;
    }
    for (size_t k = 0; at + 8 < n; k++) {
        size_t len = k % 8 + 1;
        memset(state + at, 1, len);
        at += len + k % 3 + 1;
    }
    size_t touched_pages = 0;
    for (size_t i = 0; i < n; i++) {
        if (state[i] == 1)
            p[i * (size_t)ps] = 1;
        else if (state[i] == 2)
            (void)((volatile char *)p)[i * (size_t)ps];
        touched_pages += state[i] != 0;
    }
    /* A page read is the zero page where the kernel maps it (other attributes: a run of its
     * own), else a page like the written ones. */
    const int zero = scn_zero_page_on_read();
    for (size_t i = 0; i < n; i++)
        state[i] = state[i] == 2 && !zero ? 1 : state[i];
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    const uint64_t a = (uint64_t)(uintptr_t)p;
    size_t runs[2];
    runs_of(state, n, runs);
    expect_runs_match(proc, &caps, a, (uint64_t)ps, n, runs, touched_pages);
    int release;
    pid_t child = waiting_child(&release);
    for (size_t i = 3; i < n; i += 7)
        if (state[i] == 1) {
            p[i * (size_t)ps] = 2;
            state[i] = 3;
        }
    runs_of(state, n, runs);
    expect_runs_match(proc, &caps, a, (uint64_t)ps, n, runs, touched_pages);
    size_t again = 0;
    for (size_t i = 0; i < n; i++)
        again += state[i] == 3;
    ck_assert_uint_eq(pages_with(P | X, 0), again); /* the others are the child's too */
    close(release);
    ck_assert_int_eq(waitpid(child, NULL, 0), child);
    memdiff__plat_close(proc);
    free(state);
    munmap(p, (size_t)ps * n);
}
END_TEST

/* Deep depth puts each frame's facts on its own page: a mapping whose pages alternate in
 * stretches between frames shared with a forked child (map count 2) and copies the parent wrote
 * after the fork (map count 1), frames up and down as the allocator gives them. */
START_TEST(real_deep_facts_in_place)
{
    long ps = sysconf(_SC_PAGESIZE);
    const size_t n = 3000;
    char *p = map_pages(ps, n, 0);
    for (size_t i = 0; i < n; i++)
        p[i * (size_t)ps] = 1;
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        (void)!write(ready[1], "r", 1);
        for (;;)
            pause();
    }
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
#define COPIED(i) ((i) % 7 == 0 || ((i) >= 1000 && (i) < 1400) || (i) % 50 == 3)
    size_t copied = 0;
    for (size_t i = 0; i < n; i++)
        if (COPIED(i)) {
            p[i * (size_t)ps] = 2; /* copy on write: a frame of its own */
            copied++;
        }
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    if (caps.sources & MEMDIFF_SRC_MAP_COUNTS) {
        uint64_t a = (uint64_t)(uintptr_t)p;
        ck_assert_int_eq(walk(proc, a, a + (uint64_t)ps * n, MEMDIFF_DEPTH_DEEP), MEMDIFF_OK);
        int fc = open("/proc/kpagecount", O_RDONLY);
        ck_assert_int_ge(fc, 0);
        size_t pages = 0, ones = 0;
        for (size_t r = 0; r < rec->count; r++)
            for (uint64_t k = 0; k < rec->runs[r].n; k++, pages++) {
                size_t i = (size_t)((rec->runs[r].start - a) / (uint64_t)ps + k);
                uint64_t want = COPIED(i) ? 1 : 2, direct = 0;
                ck_assert_msg(mapcount_of(r, (size_t)k) == want,
                              "page %zu: map count %llu, want %llu", i,
                              (unsigned long long)mapcount_of(r, (size_t)k),
                              (unsigned long long)want);
                ck_assert_int_eq(pread(fc, &direct, 8, (off_t)(pfn_of(r, (size_t)k) * 8)), 8);
                ck_assert_uint_eq(direct, want);
                ck_assert_uint_ne(kflags_of(r, (size_t)k) & (1u << 12), 0); /* KPF_ANON */
                ones += want == 1;
            }
        close(fc);
        ck_assert_uint_eq(pages, n);
        ck_assert_uint_eq(ones, copied);
    } else {
        fprintf(stderr, "real_deep_facts_in_place: no kpagecount (not root); checked nothing\n");
    }
#undef COPIED
    memdiff__plat_close(proc);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(ready[0]);
    close(ready[1]);
    munmap(p, (size_t)ps * n);
}
END_TEST

/* Walks [a, a + n pages) at depth d unbroken, then with the scan's call number at (from 1)
 * refused with EINVAL: the same pages, attributes and frames either way. Returns whether the
 * second walk switched the scan off. */
static int walk_refused_at(uint64_t a, uint64_t ps, size_t n, memdiff_depth d, unsigned at,
                           size_t want_resident)
{
    unsigned *want = calloc(n, sizeof *want), *got = calloc(n, sizeof *got);
    uint64_t *wf = calloc(n, sizeof *wf), *gf = calloc(n, sizeof *gf);
    ck_assert(want && got && wf && gf);
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    ck_assert_int_eq(walk(proc, a, a + ps * n, d), MEMDIFF_OK);
    per_page(a, ps, n, want, wf);
    ck_assert(!proc->scan_refused);
    proc->scan_refuse_at_call = at;
    ck_assert_int_eq(walk(proc, a, a + ps * n, d), MEMDIFF_OK);
    per_page(a, ps, n, got, gf);
    size_t resident = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(want[i] == got[i] && wf[i] == gf[i],
                      "depth %d, call %u refused: page %zu attrs 0x%x/0x%x frame 0x%llx/0x%llx", d,
                      at, i, want[i], got[i], (unsigned long long)wf[i], (unsigned long long)gf[i]);
        resident += got[i] != 0;
    }
    ck_assert_uint_eq(resident, want_resident);
    int off = proc->scan_refused;
    memdiff__plat_close(proc);
    free(want);
    free(got);
    free(wf);
    free(gf);
    return off;
}

/* A kernel that refuses PAGEMAP_SCAN with EINVAL partway through a walk (simulated: the n-th
 * call fails): the walk goes on with pagemap from where the scan stopped, delivers what an
 * unbroken walk does, and uses no scan from then on. Fast depth: 10,000 pages, every other one
 * written (5,000 ranges, more than one call's vector holds). Standard depth scans only sparse
 * memory: 160,000 pages, one in 32 written (5,000 ranges again). */
START_TEST(real_scan_refused_midway)
{
    long ps = sysconf(_SC_PAGESIZE);
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    memdiff__plat_close(proc);
    if (!(caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN)) {
        fprintf(stderr, "real_scan_refused_midway: no PAGEMAP_SCAN here; checked nothing\n");
        return;
    }
    const size_t n = 10000, sparse = 160000;
    char *p = map_pages(ps, n, 0), *q = map_pages(ps, sparse, MAP_NORESERVE);
    for (size_t i = 0; i < n; i += 2)
        p[i * (size_t)ps] = 1;
    for (size_t i = 0; i < sparse; i += 32)
        q[i * (size_t)ps] = 1;
    /* Each walk makes at least two calls: the first refused, or the second (mid-walk). */
    for (unsigned at = 1; at <= 2; at++) {
        ck_assert(walk_refused_at((uint64_t)(uintptr_t)p, (uint64_t)ps, n, MEMDIFF_DEPTH_FAST, at,
                                  n / 2));
        ck_assert(walk_refused_at((uint64_t)(uintptr_t)q, (uint64_t)ps, sparse,
                                  MEMDIFF_DEPTH_STANDARD, at, sparse / 32));
    }
    munmap(p, (size_t)ps * n);
    munmap(q, (size_t)ps * sparse);
}
END_TEST

/* A fast snapshot opens without asking for frames (MEMDIFF__OPEN_NO_FRAMES: no capget, no read
 * fault and pagemap read of its own page for the zero page's frame) where the scan names the
 * zero page. A walk that must fall back to pagemap (the kernel refuses the scan) learns the
 * zero page's frame then, the one a plain open learns, and reads the pages as an unbroken walk
 * does: 8 pages, 3 written, 1 only read (the zero page where the kernel maps one), 4 untouched. */
START_TEST(fast_open_leaves_frames_unasked)
{
    long ps = sysconf(_SC_PAGESIZE);
    memdiff__caps plain_caps, caps;
    memdiff__proc *plain = open_self(&plain_caps);
    const uint64_t zero = plain->zero_pfn;
    memdiff__plat_close(plain);
    memdiff__open_args args = {0, NULL, NULL, MEMDIFF__OPEN_NO_DEEP | MEMDIFF__OPEN_NO_FRAMES,
                               1};
    memdiff__proc *proc = NULL;
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, &caps), MEMDIFF_OK);
    if (!(caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN)) {
        /* No scan to name the zero page: frames are asked as ever. */
        ck_assert_int_eq(proc->frames_unasked, 0);
        ck_assert_uint_eq(caps.sources & MEMDIFF_SRC_FRAMES,
                          plain_caps.sources & MEMDIFF_SRC_FRAMES);
        memdiff__plat_close(proc);
        fprintf(stderr, "fast_open_leaves_frames_unasked: no PAGEMAP_SCAN here; checked the "
                        "open alone\n");
        return;
    }
    ck_assert_int_eq(proc->frames_unasked, 1);
    ck_assert_uint_eq(caps.sources & MEMDIFF_SRC_FRAMES, 0);
    ck_assert_uint_eq(proc->zero_pfn, 0);
    ck_assert_ptr_nonnull(strstr(caps.pfn_why, "fast depth"));

    enum { N = 8 };
    char *p = map_pages(ps, N, 0);
    p[0] = p[2 * ps] = p[5 * ps] = 1;
    ck_assert_int_eq(*(volatile char *)(p + 7 * ps), 0);
    const uint64_t a = (uint64_t)(uintptr_t)p;
    unsigned want[N], got[N];
    uint64_t wf[N], gf[N];
    ck_assert_int_eq(walk(proc, a, a + (uint64_t)ps * N, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    per_page(a, (uint64_t)ps, N, want, wf);
    ck_assert_int_eq(proc->frames_unasked, 1); /* the scan told all */
    proc->scan_refuse_at_call = 1;
    ck_assert_int_eq(walk(proc, a, a + (uint64_t)ps * N, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    per_page(a, (uint64_t)ps, N, got, gf);
    ck_assert(proc->scan_refused);
    ck_assert_int_eq(proc->frames_unasked, 0);
    ck_assert_uint_eq(proc->zero_pfn, zero);
    size_t resident = 0;
    for (size_t i = 0; i < N; i++) {
        /* Without frames (no CAP_SYS_ADMIN) pagemap cannot tell the zero page: page 7's ZERO
         * is compared only where the plain open learned its frame. */
        unsigned mask = i == 7 && !zero ? ~(unsigned)MEMDIFF_PAGE_ZERO : ~0u;
        ck_assert_msg((want[i] & mask) == (got[i] & mask), "page %zu: 0x%x, 0x%x after the refusal",
                      i, want[i], got[i]);
        resident += got[i] != 0;
    }
    ck_assert_uint_eq(resident, 4);
    memdiff__plat_close(proc);
    munmap(p, (size_t)ps * N);
}
END_TEST

/* Every page the last walk delivered has the map count kpagecount gives for its frame now. */
static void expect_counts_read(void)
{
    int fc = open("/proc/kpagecount", O_RDONLY);
    ck_assert_int_ge(fc, 0);
    for (size_t r = 0; r < rec->count; r++)
        for (uint64_t k = 0; k < rec->runs[r].n; k++) {
            uint64_t direct = 0;
            ck_assert_int_eq(pread(fc, &direct, 8, (off_t)(pfn_of(r, (size_t)k) * 8)), 8);
            ck_assert_uint_eq(mapcount_of(r, (size_t)k), direct);
        }
    close(fc);
}

/* A transparent huge page, where the kernel grants one: every depth must call the same pages
 * huge (fast and standard from PAGEMAP_SCAN, deep from kpageflags too). */
/* A transparent huge page and 512 small pages behind it, in one batch: the huge page's pages
 * are huge at every depth, the others not, whether the walk decodes page by page or in
 * stretches (the standard snapshot's way, where the scan's ranges mark the huge stretch). */
START_TEST(real_huge_page)
{
    const size_t huge = 2u << 20;
    char *raw = mmap(NULL, huge * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(raw, MAP_FAILED);
    char *p = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
    madvise(p, huge, MADV_HUGEPAGE);
    madvise(p + huge, huge, MADV_NOHUGEPAGE);
    memset(p, 1, 2 * huge);
    uint64_t a = (uint64_t)(uintptr_t)p, e = a + 2 * huge;
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    ck_assert_int_eq(walk(proc, a, e, MEMDIFF_DEPTH_FAST), MEMDIFF_OK);
    uint64_t n = pages_with(P | MEMDIFF_PAGE_HUGE, 0);
    if (n == 0 || !(caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN)) {
        fprintf(stderr, "real_huge_page: no THP granted or no PAGEMAP_SCAN; checked nothing\n");
    } else {
        ck_assert_uint_eq(n, huge / 4096);
        ck_assert_uint_eq(pages_with(P, MEMDIFF_PAGE_HUGE), huge / 4096);
        ck_assert_int_eq(walk(proc, a, e, MEMDIFF_DEPTH_STANDARD), MEMDIFF_OK);
        ck_assert_uint_eq(pages_with(P | X | MEMDIFF_PAGE_HUGE, 0), n);
        ck_assert_uint_eq(pages_with(P | X, MEMDIFF_PAGE_HUGE), huge / 4096);
        ck_assert_int_eq(walk_stretches(proc, a, e, MEMDIFF_DEPTH_STANDARD), MEMDIFF_OK);
        ck_assert_uint_eq(pages_with(P | X | MEMDIFF_PAGE_HUGE, 0), n);
        ck_assert_uint_eq(pages_with(P | X, MEMDIFF_PAGE_HUGE), huge / 4096);
        expect_sinks_match(proc, a, 4096, 2 * huge / 4096, MEMDIFF_DEPTH_STANDARD);
        if (caps.sources & MEMDIFF_SRC_PAGE_FLAGS) {
            ck_assert_int_eq(walk(proc, a, a + huge, MEMDIFF_DEPTH_DEEP), MEMDIFF_OK);
            ck_assert_uint_eq(pages_with(P | X | MEMDIFF_PAGE_HUGE, 0), n);
            ck_assert_uint_ne(kflags_of(0, 0) & (1u << 22), 0); /* KPF_THP */
            /* Exclusively mapped, but a large folio's pages: their counts are read. */
            expect_counts_read();
        }
    }
    memdiff__plat_close(proc);
    munmap(raw, huge * 3);
}
END_TEST

START_TEST(real_unmapped_range_reports_nothing)
{
    long ps = sysconf(_SC_PAGESIZE);
    char *p = map_sixteen(ps);
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    uint64_t a = (uint64_t)(uintptr_t)p;
    /* Walk once first: the backend maps its scratch buffers on first use, and a new mapping
     * may land in the hole this test is about to make. */
    for (memdiff_depth d = MEMDIFF_DEPTH_FAST; d <= MEMDIFF_DEPTH_DEEP; d++)
        ck_assert_int_eq(walk(proc, a, a + (uint64_t)ps * 16, d), MEMDIFF_OK);
    munmap(p, (size_t)ps * 16);
    for (memdiff_depth d = MEMDIFF_DEPTH_FAST; d <= MEMDIFF_DEPTH_DEEP; d++) {
        ck_assert_int_eq(walk(proc, a, a + (uint64_t)ps * 16, d), MEMDIFF_OK);
        ck_assert_uint_eq(rec->count, 0);
    }
    memdiff__plat_close(proc);
}
END_TEST

/* An unprivileged caller: no frame numbers, and the reason is given. Children report through
 * their exit status (Check's assertions belong to the test process). */
START_TEST(unprivileged_caller)
{
    if (geteuid() != 0)
        return; /* already unprivileged: real_touched_pages covers it */
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(10);
        /* setuid makes the process non-dumpable, which hands its /proc files to root. */
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        memdiff__arena a = MEMDIFF__ARENA_INIT;
        memdiff__open_args args = {0, NULL, NULL, 0, 1};
        memdiff__proc *proc;
        memdiff__caps caps;
        if (memdiff__plat_open(&args, &a, &proc, &caps) != MEMDIFF_OK)
            _exit(11);
        if (caps.sources & (MEMDIFF_SRC_FRAMES | MEMDIFF_SRC_PAGE_FLAGS | MEMDIFF_SRC_MAP_COUNTS))
            _exit(12);
        if (!caps.pfn_why || !strstr(caps.pfn_why, "CAP_SYS_ADMIN") || !caps.deep_why)
            _exit(13);
        if (!(caps.sources & MEMDIFF_SRC_PAGES))
            _exit(14);
        long ps = sysconf(_SC_PAGESIZE);
        char *p = map_sixteen(ps);
        uint64_t s = (uint64_t)(uintptr_t)p;
        memdiff__page_sink sink = {on_run, rec, NULL, NULL};
        rec->count = rec->aux = 0;
        if (memdiff__plat_pages(proc, s, s + (uint64_t)ps * 16, MEMDIFF_DEPTH_STANDARD, &sink))
            _exit(15);
        if (pages_with(P | X, 0) != 5)
            _exit(16);
        for (size_t i = 0; i < rec->count; i++)
            if (rec->runs[i].has_pfn)
                _exit(17);
        memdiff__plat_close(proc);
        /* Another user's process: its memory map is not ours to read. */
        memdiff__open_args init = {1, NULL, NULL, 0, 1};
        if (memdiff__plat_open(&init, &a, &proc, &caps) != MEMDIFF_EACCES ||
            !strstr(memdiff_last_error(), "/proc/1/maps"))
            _exit(18);
        _exit(0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(c, &status, 0), c);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/* ---- the zero / huge page scan left out where meminfo allows (pagemap.c, pmd_free_now) --- */

START_TEST(meminfo_pmd_free_needs_both_fields_zero)
{
    static const struct {
        const char *text;
        int want;
    } cases[] = {
        {"MemTotal:  8000 kB\nAnonHugePages:         0 kB\nShmemHugePages:  2048 kB\n"
         "HugePages_Total:   0\nHugetlb:               0 kB",
         1},
        {"AnonHugePages:      2048 kB\nHugetlb:               0 kB\n", 0},
        {"AnonHugePages:         0 kB\nHugetlb:         1048576 kB\n", 0},
        {"AnonHugePages:         0 kB\nHugePages_Total:       0\n", 0}, /* no Hugetlb line */
        {"ShmemHugePages:        0 kB\nHugetlb:               0 kB\n", 0}, /* no AnonHugePages */
        {"AnonHugePages:  kB\nHugetlb:               0 kB\n", 0},         /* no figure */
        {"XAnonHugePages:        0 kB\nHugetlb:               0 kB\n", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(memdiff__linux_meminfo_pmd_free(cases[i].text, strlen(cases[i].text)) ==
                          cases[i].want,
                      "case %zu", i);
}
END_TEST

/* A check in a child that cannot use Check's assertions: says which failed, returns 1. */
#define NEED(c)                                                                                \
    do {                                                                                       \
        if (!(c)) {                                                                            \
            fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #c);                    \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

/* Runs body without CAP_SYS_ADMIN (pagemap without frame numbers): as nobody in a child when
 * the test runs as root, else in the test process itself. */
static void unprivileged(int (*body)(void))
{
    if (geteuid() != 0) {
        ck_assert_int_eq(body(), 0);
        return;
    }
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(10);
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); /* setuid handed our /proc files to root */
        _exit(body());
    }
    int status = 0;
    ck_assert_int_eq(waitpid(c, &status, 0), c);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
}

#define MEMINFO_NONE "AnonHugePages:         0 kB\nHugetlb:               0 kB\n"
#define MEMINFO_THP "AnonHugePages:      2048 kB\nHugetlb:               0 kB\n"

/* A proc root whose self is the real one and whose meminfo says what the test wants. */
static int meminfo_tree(char dir[64])
{
    strcpy(dir, "/tmp/memdiff-pmd-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/self", dir);
    return symlink("/proc/self", path);
}

static int put_meminfo(const char *dir, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/meminfo", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static void remove_meminfo_tree(const char *dir)
{
    char path[128];
    snprintf(path, sizeof path, "%s/self", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/meminfo", dir);
    unlink(path);
    rmdir(dir);
}

/* The walk of map_sixteen's pages in [s, e) with every scan refused (a scan asked turns
 * scan_refused on, and the walk goes on without it); 0 when it delivered the 5 pages, all
 * exclusively mapped unless shared. */
static int walk_sixteen(const char *root, unsigned flags, uint64_t s, uint64_t e, int shared,
                        memdiff__arena *a, memdiff__proc **out)
{
    memdiff__open_args args = {0, root, NULL, flags, 1};
    memdiff__caps caps;
    NEED(memdiff__plat_open(&args, a, out, &caps) == MEMDIFF_OK);
    NEED(!(caps.sources & MEMDIFF_SRC_FRAMES));
    (*out)->scan_refuse_at_call = 1;
    NEED(walk(*out, s, e, MEMDIFF_DEPTH_STANDARD) == MEMDIFF_OK);
    NEED(pages_with(P, F | Z | S) == 5);
    NEED(pages_with(P | X, 0) == (shared ? 0u : 5u));
    return 0;
}

static int pmd_free_body(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff__open_args live = {0, NULL, NULL, 0, 1};
    memdiff__proc *proc;
    memdiff__caps caps;
    NEED(memdiff__plat_open(&live, &a, &proc, &caps) == MEMDIFF_OK);
    memdiff__plat_close(proc);
    if (!(caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN)) {
        fprintf(stderr, "walk_leaves_out_scan_where_meminfo_allows: no PAGEMAP_SCAN; checked "
                        "nothing\n");
        return 0;
    }
    char dir[64];
    NEED(meminfo_tree(dir) == 0);
    NEED(put_meminfo(dir, MEMINFO_NONE) == 0);
    char *p = map_sixteen(ps);
    uint64_t s = (uint64_t)(uintptr_t)p, e = s + (uint64_t)ps * 16;
    memdiff_process_totals t;

    /* No huge page in the system, 5 exclusively mapped anonymous pages: no scan asked. */
    NEED(walk_sixteen(dir, 0, s, e, 0, &a, &proc) == 0);
    NEED(!proc->scan_refused);
    NEED(proc->meminfo_pmd_free == 1 && proc->pmd_free_relied);
    NEED(memdiff__plat_totals(proc, &t) == MEMDIFF_OK);
    /* A huge page since: the totals say the snapshot must be taken again. */
    NEED(put_meminfo(dir, MEMINFO_THP) == 0);
    NEED(memdiff__plat_totals(proc, &t) == MEMDIFF_ECHANGED);
    NEED(strstr(memdiff_last_error(), "/meminfo: PMD-mapped or hugetlb pages appeared") != NULL);
    memdiff__plat_close(proc);

    /* Where meminfo tells of huge pages, the scan is asked (and refused here). */
    NEED(walk_sixteen(dir, 0, s, e, 0, &a, &proc) == 0);
    NEED(proc->scan_refused && proc->meminfo_pmd_free == -1 && !proc->pmd_free_relied);
    NEED(memdiff__plat_totals(proc, &t) == MEMDIFF_OK);
    memdiff__plat_close(proc);

    /* Taken again without shortcuts, whatever meminfo says. */
    NEED(put_meminfo(dir, MEMINFO_NONE) == 0);
    NEED(walk_sixteen(dir, MEMDIFF__OPEN_EXACT, s, e, 0, &a, &proc) == 0);
    NEED(proc->scan_refused && !proc->pmd_free_relied);
    memdiff__plat_close(proc);

    /* Pages a child shares since fork (copy on write) are not exclusively mapped: such a page
     * could be the zero page, so its batch is asked about. */
    pid_t c = fork();
    NEED(c >= 0);
    if (c == 0) {
        pause();
        _exit(0);
    }
    int rc = walk_sixteen(dir, 0, s, e, 1, &a, &proc);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    NEED(rc == 0);
    NEED(proc->scan_refused && !proc->pmd_free_relied);
    memdiff__plat_close(proc);

    memdiff__arena_release(&a);
    munmap(p, (size_t)ps * 16);
    remove_meminfo_tree(dir);
    return 0;
}

/* Without frame numbers nothing in a pagemap entry tells a huge page's or the zero page's pages
 * from others: a batch of exclusively mapped anonymous pages goes without the scan that would,
 * only while meminfo says the system has no PMD-mapped anonymous or hugetlb page. */
START_TEST(walk_leaves_out_scan_where_meminfo_allows)
{
    unprivileged(pmd_free_body);
}
END_TEST

/* Answers the opens of <dir>/meminfo (meminfo_path) through the backend's open hook:
 * MEMINFO_NONE to the first, MEMINFO_THP to every later one, each a new memory file (a regular
 * file, as /proc/meminfo is) holding the text; meminfo_served counts them. Any other path
 * opens as usual; maps_opened counts those of <dir>/self/maps (maps_path). A failed step makes
 * meminfo_served negative, which the test reports. */
static char meminfo_path[128], maps_path[128];
static int meminfo_served, maps_opened;

static int serve_meminfo(const char *path, int flags)
{
    maps_opened += strcmp(path, maps_path) == 0;
    if (strcmp(path, meminfo_path) != 0 || flags != O_RDONLY)
        return MEMDIFF__LINUX_OPEN_PASS;
    const char *text = meminfo_served == 0 ? MEMINFO_NONE : MEMINFO_THP;
    int fd = memfd_create("meminfo", MFD_CLOEXEC);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
        lseek(fd, 0, SEEK_SET) != 0) {
        meminfo_served = -1000;
        if (fd >= 0)
            close(fd);
        errno = EIO;
        return -1;
    }
    meminfo_served++;
    return fd;
}

static int retake_body(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    char dir[64];
    NEED(meminfo_tree(dir) == 0);
    snprintf(meminfo_path, sizeof meminfo_path, "%s/meminfo", dir);
    snprintf(maps_path, sizeof maps_path, "%s/self/maps", dir);
    meminfo_served = maps_opened = 0;
    memdiff__linux_open_hook = serve_meminfo;
    char *p = map_sixteen(ps);
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.fixture_root = dir;
    memdiff_snapshot *snap = NULL;
    int rc = memdiff_snapshot_take(&o, &snap);
    memdiff__linux_open_hook = NULL;
    NEED(rc == MEMDIFF_OK);
    /* Read by the first batch that went without the scan, then by the totals (a huge page):
     * the snapshot taken again read it no more. */
    NEED(meminfo_served == 2);
    NEED(maps_opened == 2); /* taken twice: one read of maps a take */
    memdiff_snapshot_info info;
    NEED(memdiff_snapshot_get_info(snap, &info) == MEMDIFF_OK);
    NEED(info.depth == MEMDIFF_DEPTH_STANDARD && !(info.sources & MEMDIFF_SRC_FRAMES));
    NEED(info.attempts == 2);
    memdiff_region r;
    NEED(memdiff_snapshot_find(snap, (uint64_t)(uintptr_t)p, &r) == MEMDIFF_OK);
    memdiff_snapshot_free(snap);
    munmap(p, (size_t)ps * 16);
    remove_meminfo_tree(dir);
    return 0;
}

/* A huge page that appears between the walk and the totals: the snapshot is taken again without
 * the shortcut, and comes out whole, with no error for the caller. */
START_TEST(snapshot_taken_again_when_huge_pages_appear)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_self(&caps);
    memdiff__plat_close(proc);
    if (!(caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN)) {
        fprintf(stderr, "snapshot_taken_again_when_huge_pages_appear: no PAGEMAP_SCAN; checked "
                        "nothing\n");
        return;
    }
    unprivileged(retake_body);
}
END_TEST

static int huge_body(void)
{
    const size_t huge = 2u << 20;
    char *raw = mmap(NULL, huge * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    NEED(raw != MAP_FAILED);
    char *p = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
    madvise(p, huge, MADV_HUGEPAGE);
    madvise(p + huge, huge, MADV_NOHUGEPAGE);
    memset(p, 1, 2 * huge);
    uint64_t a = (uint64_t)(uintptr_t)p, e = a + 2 * huge;
    memdiff__arena ar = MEMDIFF__ARENA_INIT;
    memdiff__open_args args = {0, NULL, NULL, 0, 1};
    memdiff__proc *proc;
    memdiff__caps caps;
    NEED(memdiff__plat_open(&args, &ar, &proc, &caps) == MEMDIFF_OK);
    NEED(!(caps.sources & MEMDIFF_SRC_FRAMES));
    NEED(walk(proc, a, e, MEMDIFF_DEPTH_FAST) == MEMDIFF_OK);
    uint64_t n = pages_with(P | MEMDIFF_PAGE_HUGE, 0);
    if (n == 0 || !(caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN)) {
        fprintf(stderr, "unprivileged_huge_page: no THP granted or no PAGEMAP_SCAN; checked "
                        "nothing\n");
    } else {
        /* The huge page is in meminfo's AnonHugePages: the scan is asked and finds it. */
        NEED(n == huge / 4096);
        NEED(walk(proc, a, e, MEMDIFF_DEPTH_STANDARD) == MEMDIFF_OK);
        NEED(pages_with(P | X | MEMDIFF_PAGE_HUGE, 0) == n);
        NEED(pages_with(P | X, MEMDIFF_PAGE_HUGE) == huge / 4096);
        NEED(proc->meminfo_pmd_free == -1 && !proc->pmd_free_relied); /* meminfo counts it */
    }
    memdiff__plat_close(proc);
    memdiff__arena_release(&ar);
    munmap(raw, huge * 3);
    return 0;
}

/* A transparent huge page seen without frame numbers: its pages are huge at standard depth too,
 * and the 512 small pages behind it are not. */
START_TEST(unprivileged_huge_page)
{
    unprivileged(huge_body);
}
END_TEST

START_TEST(exited_process)
{
    int release;
    pid_t c = waiting_child(&release);
    memdiff__open_args args = {c, NULL, NULL, 0, 1};
    memdiff__proc *proc;
    memdiff__caps caps;
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, &caps), MEMDIFF_OK);
    ck_assert_int_eq(caps.pid, c);
    memdiff__plat_region *r;
    size_t n;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &n), MEMDIFF_OK);
    ck_assert_uint_gt(n, 0);
    size_t stack = n;
    for (size_t i = 0; i < n; i++)
        if (r[i].hint == MEMDIFF__HINT_MAIN_STACK)
            stack = i;
    ck_assert_uint_lt(stack, n);
    ck_assert_int_eq(walk(proc, r[stack].start, r[stack].end, MEMDIFF_DEPTH_STANDARD), MEMDIFF_OK);
    ck_assert_uint_gt(pages_with(P, 0), 0);

    close(release);
    ck_assert_int_eq(waitpid(c, NULL, 0), c);
    for (memdiff_depth d = MEMDIFF_DEPTH_FAST; d <= MEMDIFF_DEPTH_STANDARD; d++)
        ck_assert_int_eq(walk(proc, r[stack].start, r[stack].end, d), MEMDIFF_ESRCH);
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &n), MEMDIFF_ESRCH);
    memdiff__plat_thread *th;
    ck_assert_int_eq(memdiff__plat_threads(proc, &arena, &th, &n), MEMDIFF_ESRCH);
    memdiff_process_totals t;
    ck_assert_int_eq(memdiff__plat_totals(proc, &t), MEMDIFF_ESRCH);
    memdiff__plat_close(proc);

    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, &caps), MEMDIFF_ESRCH);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "/maps"));
}
END_TEST

Suite *linux_pages_suite(void)
{
    Suite *s = suite_create("linux_pages");
    TCase *tc = tcase_create("Fixture");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, fixture_caps_and_totals);
    tcase_add_test(tc, fixture_fast);
    tcase_add_test(tc, fixture_standard);
    tcase_add_test(tc, fixture_deep);
    tcase_add_test(tc, bad_ranges);
    tcase_add_test(tc, fixture_snapshot);
    tcase_add_test(tc, runs_carry_across_batches);
    tcase_add_test(tc, stretches_match_arrays_fixture);
    tcase_add_test(tc, fixture_deep_facts_follow_frames);
    tcase_add_test(tc, fixture_deep_counts_from_pagemap);
    tcase_add_test(tc, recorded_stretches_match_arrays);
    /* Check's 4 s default: a sanitizer build walking the 70,000-page fixtures on a loaded
     * machine took longer (stretches_match_arrays_fixture). */
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("Kernel");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, real_touched_pages);
    tcase_add_test(tc, real_zero_page);
    tcase_add_test(tc, open_without_deep_leaves_kpage_files);
    tcase_add_test(tc, read_ahead_takes_whole_regions_behind);
    tcase_add_test(tc, read_ahead_takes_the_rest_of_its_mapping);
    tcase_add_test(tc, read_ahead_dropped_with_a_new_region_list);
    tcase_add_test(tc, scan_ahead_serves_small_regions_behind);
    tcase_add_test(tc, walk_takes_presence_windows_of_small_regions);
    tcase_add_test(tc, chunk_look_ahead_serves_the_walk);
    tcase_add_test(tc, standard_walk_takes_presence_entries);
    tcase_add_test(tc, scan_ahead_dropped_with_a_new_region_list);
    tcase_add_test(tc, presence_answers_from_one_scan);
    tcase_add_test(tc, real_stretches_match_arrays);
    tcase_add_test(tc, real_gathered_runs_match_one_by_one);
    tcase_add_test(tc, real_fragmented_runs_match_per_run);
    tcase_add_test(tc, real_deep_facts_in_place);
    tcase_add_test(tc, real_scan_refused_midway);
    tcase_add_test(tc, fast_open_leaves_frames_unasked);
    tcase_add_test(tc, presence_windows_kept);
    tcase_add_test(tc, presence_dropped_with_a_new_region_list);
    tcase_add_test(tc, real_huge_page);
    tcase_add_test(tc, real_unmapped_range_reports_nothing);
    tcase_add_test(tc, unprivileged_caller);
    tcase_add_test(tc, meminfo_pmd_free_needs_both_fields_zero);
    tcase_add_test(tc, walk_leaves_out_scan_where_meminfo_allows);
    tcase_add_test(tc, snapshot_taken_again_when_huge_pages_appear);
    tcase_add_test(tc, unprivileged_huge_page);
    tcase_add_test(tc, exited_process);
    suite_add_tcase(s, tc);
    return s;
}
