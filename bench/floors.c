/*
 * floors.c - the kernel's cost for the facts memdiff reports, read as directly as Linux allows
 * (Documentation/admin-guide/mm/pagemap.rst), and the peer approach (smaps). Written here on
 * their own, sharing no code with memdiff, so that a slow path in memdiff cannot hide in a floor.
 *
 * Buffers are static: the benchmark is one thread (floor_pagemap_two_threads starts its second
 * inside the call, with a buffer of its own), and nothing here should allocate while it is being
 * timed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/types.h>

#include "bench.h"

/* PAGEMAP_SCAN (Linux 6.7, include/uapi/linux/fs.h), restated for older headers. */
#define SCAN_PRESENT (1 << 3)
#define SCAN_SWAPPED (1 << 4)
#define SCAN_FILE (1 << 2)
#define SCAN_PFNZERO (1 << 5)
#define SCAN_HUGE (1 << 6)

struct scan_region {
    __u64 start, end, categories;
};

struct scan_arg {
    __u64 size, flags, start, end, walk_end, vec, vec_len, max_pages;
    __u64 category_inverted, category_mask, category_anyof_mask, return_mask;
};

#define SCAN_IOCTL _IOWR('f', 16, struct scan_arg)

#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_PFN ((UINT64_C(1) << 55) - 1)
#define PM_EXCLUSIVE (UINT64_C(1) << 56) /* mapped once: its map count is 1 */

#define BATCH 65536u      /* pagemap entries per pread: 512 KiB */
#define SCAN_VEC 16384u   /* ranges per PAGEMAP_SCAN call */
#define MAX_RANGES 65536u /* regions of a target */

static uint64_t pm[BATCH];
static uint64_t pm_second[BATCH]; /* floor_pagemap_two_threads' second thread */
static uint64_t frame_buf[BATCH];
static struct scan_region vec[SCAN_VEC];
static bench_range ranges[MAX_RANGES];
static char maps_text[4 << 20];

static unsigned page_shift(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    unsigned s = 0;
    while ((1L << s) < ps)
        s++;
    return s;
}

static int open_proc(pid_t pid, const char *name)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno != ENOENT && errno != ESRCH) /* gone: the caller says so, or skips it */
        fprintf(stderr, "memdiff_bench: open %s: %s\n", path, strerror(errno));
    return fd;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Parses "start-end" at the beginning of a maps or smaps header line; returns the position after
 * it, or NULL when the line is not a header. */
static const char *parse_range(const char *p, const char *end, uint64_t *lo, uint64_t *hi)
{
    uint64_t v = 0;
    int d, digits = 0;
    while (p < end && (d = hexval(*p)) >= 0) {
        v = v << 4 | (uint64_t)d;
        p++;
        digits++;
    }
    if (!digits || p == end || *p != '-')
        return NULL;
    *lo = v;
    p++;
    v = 0;
    digits = 0;
    while (p < end && (d = hexval(*p)) >= 0) {
        v = v << 4 | (uint64_t)d;
        p++;
        digits++;
    }
    if (!digits || p == end || *p != ' ')
        return NULL;
    *hi = v;
    return p;
}

int bench_read_maps(pid_t pid, bench_range *out, size_t cap, size_t *count)
{
    int fd = open_proc(pid, "maps");
    if (fd < 0)
        return -1;
    size_t len = 0;
    ssize_t r;
    while (len < sizeof maps_text &&
           (r = read(fd, maps_text + len, sizeof maps_text - len)) != 0) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        len += (size_t)r;
    }
    close(fd);
    size_t n = 0;
    const char *p = maps_text, *end = maps_text + len;
    while (p < end && n < cap) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            nl = end;
        if (parse_range(p, nl, &out[n].start, &out[n].end))
            n++;
        p = nl + 1;
    }
    *count = n;
    return 0;
}

size_t bench_mappings(pid_t pid)
{
    size_t n = 0;
    return bench_read_maps(pid, ranges, MAX_RANGES, &n) ? 0 : n;
}

static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* Calls each(entries, n, ctx) for every batch of pagemap entries over every region. */
typedef int (*batch_fn)(const uint64_t *entries, size_t n, void *ctx);

/* The regions of pid into ranges[0..*nr) and its pagemap, open: the fd, or -1. */
static int open_target(pid_t pid, size_t *nr)
{
    if (bench_read_maps(pid, ranges, MAX_RANGES, nr))
        return -1;
    return open_proc(pid, "pagemap");
}

/* Pagemap entries of pages [page, last) in batches into buf, each batch to each (may be NULL):
 * the sum of what each returned, or -1. */
static int64_t read_span(int fd, uint64_t *buf, uint64_t page, uint64_t last, batch_fn each,
                         void *ctx)
{
    int64_t total = 0;
    while (page < last) {
        size_t n = last - page < BATCH ? (size_t)(last - page) : BATCH;
        ssize_t r = pread_full(fd, buf, n * 8, page * 8);
        if (r < 0)
            return -1;
        if (r == 0)
            break; /* above the user address space: [vsyscall] */
        if (each) {
            int64_t c = each(buf, (size_t)r / 8, ctx);
            if (c < 0)
                return -1;
            total += c;
        }
        page += n;
    }
    return total;
}

static int64_t pagemap_walk(pid_t pid, batch_fn each, void *ctx)
{
    size_t nr;
    int fd = open_target(pid, &nr);
    if (fd < 0)
        return -1;
    unsigned shift = page_shift();
    int64_t total = 0;
    for (size_t i = 0; i < nr && total >= 0; i++) {
        int64_t c = read_span(fd, pm, ranges[i].start >> shift, ranges[i].end >> shift, each, ctx);
        total = c < 0 ? -1 : total + c;
    }
    close(fd);
    return total;
}

static int count_present(const uint64_t *e, size_t n, void *ctx)
{
    (void)ctx;
    int c = 0;
    for (size_t i = 0; i < n; i++)
        c += (int)(e[i] >> 63);
    return c;
}

int64_t floor_pagemap(pid_t pid, int count)
{
    return pagemap_walk(pid, count ? count_present : NULL, NULL);
}

/* The upper halves of the large regions, read by the second thread. */
typedef struct halves {
    int fd;
    size_t nr;
    unsigned shift;
    int failed;
} halves;

#define HALVED_PAGES BATCH /* regions of at least this many pages are read half and half */

static void *upper_halves(void *arg)
{
    halves *h = arg;
    for (size_t i = 0; i < h->nr; i++) {
        uint64_t page = ranges[i].start >> h->shift, last = ranges[i].end >> h->shift;
        if (last - page >= HALVED_PAGES &&
            read_span(h->fd, pm_second, page + (last - page) / 2, last, NULL, NULL) < 0)
            h->failed = 1;
    }
    return NULL;
}

int64_t floor_pagemap_two_threads(pid_t pid)
{
    size_t nr;
    int fd = open_target(pid, &nr);
    if (fd < 0)
        return -1;
    halves h = {fd, nr, page_shift(), 0};
    pthread_t second;
    if (pthread_create(&second, NULL, upper_halves, &h) != 0) {
        close(fd);
        return -1;
    }
    int failed = 0;
    for (size_t i = 0; i < nr; i++) {
        uint64_t page = ranges[i].start >> h.shift, last = ranges[i].end >> h.shift;
        if (last - page >= HALVED_PAGES)
            last = page + (last - page) / 2;
        if (read_span(fd, pm, page, last, NULL, NULL) < 0)
            failed = 1;
    }
    pthread_join(second, NULL);
    close(fd);
    return failed || h.failed ? -1 : 0;
}

int64_t floor_scan(pid_t pid)
{
    size_t nr;
    int fd = open_target(pid, &nr);
    if (fd < 0)
        return -1;
    unsigned shift = page_shift();
    int64_t present = 0;
    for (size_t i = 0; i < nr; i++) {
        uint64_t cur = ranges[i].start, end = ranges[i].end;
        while (cur < end) {
            struct scan_arg a;
            memset(&a, 0, sizeof a);
            a.size = sizeof a;
            a.start = cur;
            a.end = end;
            a.vec = (uint64_t)(uintptr_t)vec;
            a.vec_len = SCAN_VEC;
            a.category_anyof_mask = SCAN_PRESENT | SCAN_SWAPPED;
            a.return_mask = SCAN_PRESENT | SCAN_SWAPPED;
            int n = ioctl(fd, SCAN_IOCTL, &a);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EFAULT)
                    break; /* [vsyscall]: above the range the scan accepts */
                int e = errno;
                close(fd);
                return e == ENOTTY || e == EINVAL ? -2 : -1;
            }
            for (int k = 0; k < n; k++)
                if (vec[k].categories & SCAN_PRESENT)
                    present += (int64_t)((vec[k].end - vec[k].start) >> shift);
            /* Restart at the later of walk_end and the end of the last range returned. */
            uint64_t next = a.walk_end;
            if (n > 0 && vec[n - 1].end > next)
                next = vec[n - 1].end;
            if (n == 0 || next <= cur)
                break;
            cur = next;
        }
    }
    close(fd);
    return present;
}

/* ---- frames ------------------------------------------------------------------------------ */

typedef struct frame_list {
    uint64_t *v;
    size_t n, cap;
    int shared_only;
} frame_list;

static int collect_frames(const uint64_t *e, size_t n, void *ctx)
{
    frame_list *l = ctx;
    for (size_t i = 0; i < n; i++) {
        if (!(e[i] & PM_PRESENT) || !(e[i] & PM_PFN) || (l->shared_only && e[i] & PM_EXCLUSIVE))
            continue;
        if (l->n == l->cap) {
            size_t cap = l->cap ? l->cap * 2 : 65536;
            uint64_t *v = realloc(l->v, cap * sizeof *v);
            if (!v)
                return -1;
            l->v = v;
            l->cap = cap;
        }
        l->v[l->n++] = e[i] & PM_PFN;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int bench_frame_runs_prepare(pid_t pid, int shared_only, bench_frame_runs *out)
{
    memset(out, 0, sizeof *out);
    frame_list l = {NULL, 0, 0, shared_only};
    if (pagemap_walk(pid, collect_frames, &l) < 0) {
        free(l.v);
        return -1;
    }
    qsort(l.v, l.n, sizeof *l.v, cmp_u64);
    out->first = malloc((l.n ? l.n : 1) * sizeof *out->first);
    out->count = malloc((l.n ? l.n : 1) * sizeof *out->count);
    if (!out->first || !out->count) {
        free(l.v);
        bench_frame_runs_free(out);
        return -1;
    }
    for (size_t i = 0; i < l.n; i++) {
        if (i > 0 && l.v[i] == l.v[i - 1])
            continue;
        out->frames++;
        if (out->n && out->first[out->n - 1] + out->count[out->n - 1] == l.v[i]) {
            out->count[out->n - 1]++;
        } else {
            out->first[out->n] = l.v[i];
            out->count[out->n] = 1;
            out->n++;
        }
    }
    free(l.v);
    return 0;
}

void bench_frame_runs_free(bench_frame_runs *r)
{
    free(r->first);
    free(r->count);
    memset(r, 0, sizeof *r);
}

/* kpageflags (open as ff; -1: not read) and kpagecount (fc) over each run of frames; frames
 * read, or -1. */
static int64_t kpage_runs(int ff, int fc, const bench_frame_runs *runs)
{
    int64_t frames = 0;
    for (size_t i = 0; i < runs->n; i++) {
        uint64_t f = runs->first[i], left = runs->count[i];
        while (left) {
            size_t n = left < BATCH ? (size_t)left : BATCH;
            if ((ff >= 0 && pread_full(ff, frame_buf, n * 8, f * 8) < 0) ||
                pread_full(fc, frame_buf, n * 8, f * 8) < 0)
                return -1;
            frames += (int64_t)n;
            f += n;
            left -= n;
        }
    }
    return frames;
}

int64_t floor_kpage_sorted_set(const pid_t *pids, const bench_frame_runs *runs, size_t n,
                               int with_flags, size_t *gone)
{
    int ff = with_flags ? open("/proc/kpageflags", O_RDONLY | O_CLOEXEC) : -1;
    int fc = open("/proc/kpagecount", O_RDONLY | O_CLOEXEC);
    int64_t frames = (ff >= 0 || !with_flags) && fc >= 0 ? 0 : -1;
    *gone = 0;
    for (size_t i = 0; frames >= 0 && i < n; i++) {
        if (floor_pagemap(pids[i], 0) < 0) {
            /* Exited: skipped, as a system snapshot counts it exited. */
            if (kill(pids[i], 0) < 0 && errno == ESRCH) {
                ++*gone;
                continue;
            }
            frames = -1;
            break;
        }
        int64_t got = kpage_runs(ff, fc, &runs[i]);
        frames = got < 0 ? -1 : frames + got;
    }
    if (ff >= 0)
        close(ff);
    if (fc >= 0)
        close(fc);
    return frames;
}

int64_t floor_pagemap_set(const pid_t *pids, size_t n, size_t *gone)
{
    *gone = 0;
    for (size_t i = 0; i < n; i++) {
        if (floor_pagemap(pids[i], 0) >= 0)
            continue;
        if (kill(pids[i], 0) < 0 && errno == ESRCH)
            ++*gone; /* exited: skipped, as a system snapshot counts it exited */
        else
            return -1;
    }
    return 0;
}

int64_t floor_kpage_runs(const bench_frame_runs *runs, int with_flags)
{
    int ff = with_flags ? open("/proc/kpageflags", O_RDONLY | O_CLOEXEC) : -1;
    int fc = open("/proc/kpagecount", O_RDONLY | O_CLOEXEC);
    int64_t frames = (ff >= 0 || !with_flags) && fc >= 0 ? kpage_runs(ff, fc, runs) : -1;
    if (ff >= 0)
        close(ff);
    if (fc >= 0)
        close(fc);
    return frames;
}

static int cmp_run(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

int bench_frame_runs_union(const bench_frame_runs *in, size_t n, bench_frame_runs *out)
{
    memset(out, 0, sizeof *out);
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += in[i].n;
    uint64_t *pairs = malloc((total ? total : 1) * 2 * sizeof *pairs);
    out->first = malloc((total ? total : 1) * sizeof *out->first);
    out->count = malloc((total ? total : 1) * sizeof *out->count);
    if (!pairs || !out->first || !out->count) {
        free(pairs);
        bench_frame_runs_free(out);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < in[i].n; r++, k++) {
            pairs[2 * k] = in[i].first[r];
            pairs[2 * k + 1] = in[i].count[r];
        }
    qsort(pairs, total, 2 * sizeof *pairs, cmp_run);
    for (size_t r = 0; r < total; r++) {
        uint64_t first = pairs[2 * r], end = first + pairs[2 * r + 1];
        uint64_t *last_end = out->n ? &out->count[out->n - 1] : NULL;
        if (last_end && out->first[out->n - 1] + *last_end >= first) {
            uint64_t cur_end = out->first[out->n - 1] + *last_end;
            if (end > cur_end)
                *last_end = end - out->first[out->n - 1];
            continue;
        }
        out->first[out->n] = first;
        out->count[out->n++] = end - first;
    }
    for (size_t r = 0; r < out->n; r++)
        out->frames += out->count[r];
    free(pairs);
    return 0;
}

int64_t floor_kpage_sorted(pid_t pid, const bench_frame_runs *runs)
{
    size_t gone;
    int64_t frames = floor_kpage_sorted_set(&pid, runs, 1, 1, &gone);
    return gone ? -1 : frames;
}

int64_t floor_kpageflags_all(void)
{
    int ff = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
    if (ff < 0)
        return -1;
    int64_t frames = 0;
    for (;;) {
        ssize_t r = pread_full(ff, frame_buf, sizeof frame_buf, (uint64_t)frames * 8);
        if (r < 0) {
            frames = -1;
            break;
        }
        frames += r / 8;
        if ((size_t)r < sizeof frame_buf)
            break; /* the end: max_pfn */
    }
    close(ff);
    return frames;
}

typedef struct each_ctx {
    int ff, fc;
    int64_t frames;
} each_ctx;

static int read_each(const uint64_t *e, size_t n, void *ctx)
{
    each_ctx *c = ctx;
    for (size_t i = 0; i < n; i++) {
        if (!(e[i] & PM_PRESENT) || !(e[i] & PM_PFN))
            continue;
        uint64_t pfn = e[i] & PM_PFN, flags, count;
        if (pread(c->ff, &flags, 8, (off_t)(pfn * 8)) != 8 ||
            pread(c->fc, &count, 8, (off_t)(pfn * 8)) != 8)
            return -1;
        c->frames++;
    }
    return 0;
}

int64_t floor_kpage_each(pid_t pid)
{
    each_ctx c = {open("/proc/kpageflags", O_RDONLY | O_CLOEXEC),
                  open("/proc/kpagecount", O_RDONLY | O_CLOEXEC), 0};
    int64_t rc = -1;
    if (c.ff >= 0 && c.fc >= 0)
        rc = pagemap_walk(pid, read_each, &c) < 0 ? -1 : c.frames;
    if (c.ff >= 0)
        close(c.ff);
    if (c.fc >= 0)
        close(c.fc);
    return rc;
}

/* ---- the peer: smaps --------------------------------------------------------------------- */

/* The fields psutil's memory_maps() and pmap -X keep, per region. */
static const char *const smaps_keys[] = {
    "Size",          "KernelPageSize", "MMUPageSize",    "Rss",           "Pss",
    "Pss_Dirty",     "Pss_Anon",       "Pss_File",       "Pss_Shmem",     "Shared_Clean",
    "Shared_Dirty",  "Private_Clean",  "Private_Dirty",  "Referenced",    "Anonymous",
    "KSM",           "LazyFree",       "AnonHugePages",  "ShmemPmdMapped", "FilePmdMapped",
    "Shared_Hugetlb", "Private_Hugetlb", "Swap",          "SwapPss",       "Locked",
};
#define NKEYS (sizeof smaps_keys / sizeof smaps_keys[0])
#define KEY_RSS 3
#define KEY_ANON_HUGE 17

typedef struct smaps_region {
    uint64_t start, end;
    uint64_t field[NKEYS];
} smaps_region;

typedef struct smaps_parse {
    smaps_region cur;
    int have;
    uint64_t rss_kb, anon_huge_kb;
    size_t regions;
} smaps_parse;

static void smaps_end_region(smaps_parse *s)
{
    if (s->have) {
        s->rss_kb += s->cur.field[KEY_RSS];
        s->anon_huge_kb += s->cur.field[KEY_ANON_HUGE];
        s->regions++;
    }
    s->have = 0;
}

static void smaps_line(smaps_parse *s, const char *p, const char *end)
{
    uint64_t lo, hi;
    if (parse_range(p, end, &lo, &hi)) {
        smaps_end_region(s);
        memset(&s->cur, 0, sizeof s->cur);
        s->cur.start = lo;
        s->cur.end = hi;
        s->have = 1;
        return;
    }
    const char *colon = memchr(p, ':', (size_t)(end - p));
    if (!colon)
        return;
    size_t klen = (size_t)(colon - p);
    for (size_t k = 0; k < NKEYS; k++) {
        if (strlen(smaps_keys[k]) == klen && memcmp(smaps_keys[k], p, klen) == 0) {
            const char *q = colon + 1;
            while (q < end && *q == ' ')
                q++;
            uint64_t v = 0;
            while (q < end && *q >= '0' && *q <= '9')
                v = v * 10 + (uint64_t)(*q++ - '0');
            s->cur.field[k] = v;
            return;
        }
    }
    /* VmFlags and THPeligible: read past, as the peers do. */
}

static int64_t smaps_read(pid_t pid, smaps_parse *s)
{
    static char buf[1 << 16];
    memset(s, 0, sizeof *s);
    int fd = open_proc(pid, "smaps");
    if (fd < 0)
        return -1;
    size_t keep = 0;
    for (;;) {
        ssize_t r = read(fd, buf + keep, sizeof buf - keep);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            return -1;
        }
        size_t len = keep + (size_t)r;
        const char *p = buf, *end = buf + len;
        for (;;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl)
                break;
            smaps_line(s, p, nl);
            p = nl + 1;
        }
        keep = (size_t)(end - p);
        if (r == 0) {
            if (keep)
                smaps_line(s, p, end);
            break;
        }
        memmove(buf, p, keep);
    }
    close(fd);
    smaps_end_region(s);
    return (int64_t)s->rss_kb;
}

int64_t peer_smaps(pid_t pid)
{
    smaps_parse s;
    return smaps_read(pid, &s);
}

uint64_t bench_anon_huge(pid_t pid)
{
    smaps_parse s;
    if (smaps_read(pid, &s) < 0)
        return 0;
    return s.anon_huge_kb * 1024;
}
