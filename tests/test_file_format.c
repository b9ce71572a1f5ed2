/*
 * test_file_format.c - snapshot files: every field survives a round trip, a diff of loaded copies
 * equals the diff of the originals, and every kind of damage is refused with EFORMAT and a
 * precise detail, never a crash (the suite also runs under ASan + UBSan in CI).
 *
 * Hand-made files come from a small encoder of our own written from docs/file-format.md, not
 * from the library's writer, so that the specification is tested as well as the code.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "special_files.h"
#include "suites.h"

/* ---- helpers ---------------------------------------------------------------------------- */

typedef struct membuf {
    char *p;
    size_t n;
} membuf;

static membuf save_mem(const memdiff_snapshot *s)
{
    membuf b = {NULL, 0};
    FILE *f = open_memstream(&b.p, &b.n);
    ck_assert_ptr_nonnull(f);
    int rc = memdiff_snapshot_save(s, f);
    ck_assert_msg(rc == MEMDIFF_OK, "save: %s", memdiff_last_error());
    fclose(f);
    return b;
}

static int load_mem(const void *p, size_t n, memdiff_snapshot **out)
{
    /* fmemopen refuses a zero size: an empty stream is /dev/null. */
    FILE *f = n ? fmemopen((void *)p, n, "rb") : fopen("/dev/null", "rb");
    ck_assert_ptr_nonnull(f);
    int rc = memdiff_snapshot_load(f, out);
    fclose(f);
    return rc;
}

static memdiff_snapshot *round_trip(const memdiff_snapshot *s)
{
    membuf b = save_mem(s);
    memdiff_snapshot *t = NULL;
    int rc = load_mem(b.p, b.n, &t);
    ck_assert_msg(rc == MEMDIFF_OK, "load: %s", memdiff_last_error());
    free(b.p);
    return t;
}

/* A snapshot with every field the format carries set to something unusual: all categories and
 * hints, a deleted file, a degraded depth, aux data on some runs only and out of sequence. */
static memdiff_snapshot *synthetic(void)
{
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff_snapshot *s = memdiff__arena_alloc(&a, sizeof *s);
    ck_assert_ptr_nonnull(s);
    s->arena = a;
    memdiff__arena *ar = &s->arena;
    const uint64_t P = 4096;
    static const struct {
        uint64_t start, pages;
        memdiff_category cat;
        memdiff__hint hint;
        unsigned prot, flags;
        const char *label, *path;
    } regs[] = {
        {0x400000, 4, MEMDIFF_CAT_IMAGE, MEMDIFF__HINT_NONE, 5, 2, "/usr/bin/p", "/usr/bin/p"},
        {0x404000, 2, MEMDIFF_CAT_IMAGE, MEMDIFF__HINT_NONE, 3, 2, "/usr/bin/p", "/usr/bin/p"},
        {0x1000000, 64, MEMDIFF_CAT_HEAP, MEMDIFF__HINT_BRK_HEAP, 3, 0, "[heap]", ""},
        {0x7f0000000000, 16, MEMDIFF_CAT_SHARED, MEMDIFF__HINT_MEMFD, 3, 0x103, "memfd:blob",
         "/memfd:blob"},
        {0x7f0000100000, 8, MEMDIFF_CAT_OWN, MEMDIFF__HINT_ANON_NAME, 3, 0, "memdiff", ""},
        {0x7ffd00000000, 32, MEMDIFF_CAT_STACK, MEMDIFF__HINT_MAIN_STACK, 3, 0, "thread 77", ""},
        {0xffffffffff600000, 1, MEMDIFF_CAT_SPECIAL, MEMDIFF__HINT_VSYSCALL, 4, 0, "[vsyscall]",
         ""},
    };
    s->region_count = sizeof regs / sizeof regs[0];
    s->regions = memdiff__arena_alloc(ar, s->region_count * sizeof *s->regions);
    memdiff__strtab *tab = NULL;
    for (size_t i = 0; i < s->region_count; i++) {
        memdiff__region *g = &s->regions[i];
        g->start = regs[i].start;
        g->end = regs[i].start + regs[i].pages * P;
        g->offset = i == 1 ? 0x4000 : 0;
        g->dev = regs[i].flags & 2 ? 0x801 : 0;
        g->inode = regs[i].flags & 2 ? 123456789 + i : 0;
        g->prot = regs[i].prot;
        g->flags = regs[i].flags;
        g->hint = regs[i].hint;
        g->category = regs[i].cat;
        g->label = memdiff__intern(&tab, ar, regs[i].label);
        g->path = memdiff__intern(&tab, ar, regs[i].path);
        g->unit = i == 1 ? regs[0].start : i == 2 ? 7 : g->start; /* unit below start too */
    }
    static const struct {
        uint64_t start, npages;
        unsigned attrs;
        uint32_t region;
        uint64_t aux;
    } runs[] = {
        {0x400000, 3, MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_FILE, 0, 0},
        {0x404000, 1, MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE, 1, MEMDIFF__NO_AUX},
        {0x1000000, 10, MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE, 2, 3},
        {0x100a000, 2, MEMDIFF_PAGE_SWAPPED, 2, MEMDIFF__NO_AUX},
        {0x1010000, 5, MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_ZERO, 2, 20}, /* out of sequence */
        {0x7f0000000000, 16, MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_FILE | 0x780, 3, 13},
        {0x7f0000100000, 8, MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE, 4, MEMDIFF__NO_AUX},
        {0x7ffd0001f000, 1, MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE | 0x60, 5, 29},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
        ck_assert_int_eq(memdiff__runs_append(s, runs[i].region, runs[i].start, runs[i].npages,
                                              runs[i].attrs, runs[i].aux),
                         MEMDIFF_OK);
    s->aux_count = 31;
    uint64_t pfn[31], kflags[31], mapcount[31];
    for (size_t i = 0; i < s->aux_count; i++) {
        pfn[i] = i % 7 == 3 ? 0 : 0x123400 + i * (i % 3 ? 1 : 1000); /* up and down */
        kflags[i] = (uint64_t)1 << (i % 64);
        mapcount[i] = i % 4;
    }
    ck_assert_int_eq(memdiff__seq_append(ar, &s->frames, pfn, s->aux_count), MEMDIFF_OK);
    ck_assert_int_eq(memdiff__seq_append(ar, &s->kflags, kflags, s->aux_count), MEMDIFF_OK);
    ck_assert_int_eq(memdiff__seq_append(ar, &s->mapcount, mapcount, s->aux_count), MEMDIFF_OK);
    memdiff_snapshot_info *in = &s->info;
    in->pid = 77;
    in->depth_requested = MEMDIFF_DEPTH_DEEP;
    in->depth = MEMDIFF_DEPTH_STANDARD;
    in->sources = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_FRAMES |
                  MEMDIFF_SRC_PROCESS_TOTALS;
    in->degraded = memdiff__arena_strndup(ar, "kernel page flags: needs CAP_SYS_ADMIN", 38);
    in->page_size = (uint32_t)P;
    in->time_ns = UINT64_C(1763770000123456789);
    in->host = memdiff__arena_strndup(ar, "build-host.example", 18);
    in->totals.vm_size = UINT64_MAX;
    in->totals.vm_rss = 1;
    in->totals.vm_hwm = 123456789012;
    in->totals.rss_anon = 4096;
    in->totals.rss_file = 8192;
    in->totals.rss_shmem = 65536;
    in->totals.vm_pte = 12288;
    in->totals.vm_swap = 8192;
    memdiff__snapshot_tally(s);
    in->storage_bytes = memdiff__arena_footprint(ar);
    return s;
}

static void assert_same_snapshot(const memdiff_snapshot *a, const memdiff_snapshot *b)
{
    const memdiff_snapshot_info *x = &a->info, *y = &b->info;
    ck_assert_int_eq(x->pid, y->pid);
    ck_assert_int_eq(x->depth_requested, y->depth_requested);
    ck_assert_int_eq(x->depth, y->depth);
    ck_assert_uint_eq(x->sources, y->sources);
    ck_assert_int_eq(!x->degraded, !y->degraded);
    if (x->degraded)
        ck_assert_str_eq(x->degraded, y->degraded);
    ck_assert_uint_eq(x->page_size, y->page_size);
    ck_assert_uint_eq(x->time_ns, y->time_ns);
    ck_assert_str_eq(x->host, y->host);
    ck_assert_uint_eq(x->region_count, y->region_count);
    ck_assert_uint_eq(x->run_count, y->run_count);
    ck_assert_uint_eq(x->resident_bytes, y->resident_bytes);
    ck_assert_uint_eq(x->private_bytes, y->private_bytes);
    ck_assert_uint_eq(x->shared_bytes, y->shared_bytes);
    ck_assert_uint_eq(x->swapped_bytes, y->swapped_bytes);
    /* Not stored: recomputed from the pages of Own regions, which a snapshot taken now does
     * not read (it has the arena's count instead), so those give 0 (file-format.md). */
    uint64_t own_pages = 0;
    for (size_t i = 0; i < a->region_count; i++)
        if (a->regions[i].category == MEMDIFF_CAT_OWN)
            own_pages += a->regions[i].resident_pages;
    ck_assert_uint_eq(y->own_bytes, own_pages * x->page_size);
    ck_assert_mem_eq(&x->totals, &y->totals, sizeof x->totals);

    ck_assert_uint_eq(a->region_count, b->region_count);
    for (size_t i = 0; i < a->region_count; i++) {
        const memdiff__region *g = &a->regions[i], *h = &b->regions[i];
        ck_assert_uint_eq(g->start, h->start);
        ck_assert_uint_eq(g->end, h->end);
        ck_assert_uint_eq(g->offset, h->offset);
        ck_assert_uint_eq(g->dev, h->dev);
        ck_assert_uint_eq(g->inode, h->inode);
        ck_assert_uint_eq(g->prot, h->prot);
        ck_assert_uint_eq(g->flags, h->flags);
        ck_assert_int_eq(g->hint, h->hint);
        ck_assert_int_eq(g->category, h->category);
        ck_assert_str_eq(g->label, h->label);
        ck_assert_str_eq(g->path, h->path);
        ck_assert_uint_eq(g->unit, h->unit);
        ck_assert_uint_eq(g->run_count, h->run_count);
        ck_assert_uint_eq(g->resident_pages, h->resident_pages);
        ck_assert_uint_eq(g->private_pages, h->private_pages);
        ck_assert_uint_eq(g->swapped_pages, h->swapped_pages);
    }
    ck_assert_uint_eq(a->run_count, b->run_count);
    memdiff__runs_iter ia, ib;
    memdiff__run u_, v_;
    const memdiff__run *u = &u_, *v = &v_;
    memdiff__runs_begin(a, &ia);
    memdiff__runs_begin(b, &ib);
    for (size_t i = 0; i < a->run_count; i++) {
        ck_assert(memdiff__runs_next(&ia, &u_));
        ck_assert(memdiff__runs_next(&ib, &v_));
        ck_assert_uint_eq(u->start, v->start);
        ck_assert_uint_eq(u->npages, v->npages);
        ck_assert_uint_eq(u->attrs, v->attrs);
        ck_assert_uint_eq(u->region, v->region);
        ck_assert_uint_eq(u->aux, v->aux);
    }
    ck_assert(!memdiff__runs_next(&ia, &u_) && !memdiff__runs_next(&ib, &v_));
    ck_assert_uint_eq(a->aux_count, b->aux_count);
    const memdiff__seq *xa[3] = {&a->frames, &a->kflags, &a->mapcount};
    const memdiff__seq *ya[3] = {&b->frames, &b->kflags, &b->mapcount};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(xa[k]->present, ya[k]->present);
        for (size_t i = 0; xa[k]->present && i < a->aux_count; i++)
            ck_assert_uint_eq(memdiff__seq_get(xa[k], i), memdiff__seq_get(ya[k], i));
    }
}

static void assert_empty_diff(const memdiff_snapshot *a, const memdiff_snapshot *b)
{
    memdiff_diff *d = NULL;
    ck_assert_int_eq(memdiff_compare(a, b, 0, &d), MEMDIFF_OK);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 0);
    memdiff_totals t, zero;
    memset(&zero, 0, sizeof zero);
    ck_assert_int_eq(memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &t), MEMDIFF_OK);
    ck_assert_mem_eq(&t, &zero, sizeof t);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        ck_assert_int_eq(memdiff_diff_totals(d, (memdiff_category)c, &t), MEMDIFF_OK);
        ck_assert_mem_eq(&t, &zero, sizeof t);
    }
    memdiff_diff_free(d);
}

static void assert_same_diff(const memdiff_diff *d1, const memdiff_diff *d2)
{
    memdiff_totals t1, t2;
    memdiff_diff_totals(d1, MEMDIFF_CAT_ALL, &t1);
    memdiff_diff_totals(d2, MEMDIFF_CAT_ALL, &t2);
    ck_assert_mem_eq(&t1, &t2, sizeof t1);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        memdiff_diff_totals(d1, (memdiff_category)c, &t1);
        memdiff_diff_totals(d2, (memdiff_category)c, &t2);
        ck_assert_mem_eq(&t1, &t2, sizeof t1);
    }
    ck_assert_uint_eq(memdiff_diff_block_count(d1), memdiff_diff_block_count(d2));
    for (size_t i = 0; i < memdiff_diff_block_count(d1); i++) {
        memdiff_block x, y;
        ck_assert_int_eq(memdiff_diff_block(d1, i, &x), MEMDIFF_OK);
        ck_assert_int_eq(memdiff_diff_block(d2, i, &y), MEMDIFF_OK);
        ck_assert_uint_eq(x.start, y.start);
        ck_assert_uint_eq(x.end, y.end);
        ck_assert_int_eq(x.category, y.category);
        ck_assert_str_eq(x.label, y.label);
        ck_assert_int_eq(x.change, y.change);
        ck_assert_uint_eq(x.presence, y.presence);
        ck_assert_mem_eq(&x.totals, &y.totals, sizeof x.totals);
        ck_assert_uint_eq(x.attrs_before, y.attrs_before);
        ck_assert_uint_eq(x.attrs_after, y.attrs_after);
    }
}

/* ---- round trips ------------------------------------------------------------------------ */

START_TEST(crc32_matches_the_standard)
{
    ck_assert_uint_eq(memdiff__crc32(0, "123456789", 9), 0xCBF43926u);
    ck_assert_uint_eq(memdiff__crc32(memdiff__crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
    ck_assert_uint_eq(memdiff__crc32(0, "", 0), 0);
}
END_TEST

START_TEST(synthetic_round_trip_keeps_every_field)
{
    memdiff_snapshot *s = synthetic();
    memdiff_snapshot *t = round_trip(s);
    assert_same_snapshot(s, t);
    assert_empty_diff(s, t);
    assert_empty_diff(t, s);
    /* The encoding is canonical: saving the loaded copy gives the same bytes. */
    membuf b1 = save_mem(s), b2 = save_mem(t);
    ck_assert_uint_eq(b1.n, b2.n);
    ck_assert_mem_eq(b1.p, b2.p, b1.n);
    memdiff_snapshot_info info;
    memdiff_snapshot_get_info(t, &info);
    ck_assert_uint_eq(info.storage_bytes, memdiff__arena_footprint(&t->arena));
    free(b1.p);
    free(b2.p);
    memdiff_snapshot_free(t);
    memdiff_snapshot_free(s);
}
END_TEST

START_TEST(empty_snapshot_round_trips)
{
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff_snapshot *s = memdiff__arena_alloc(&a, sizeof *s);
    s->arena = a;
    s->info.page_size = 65536;
    s->info.host = "";
    memdiff_snapshot *t = round_trip(s);
    assert_same_snapshot(s, t);
    ck_assert_int_eq(t->frames.present, 0);
    memdiff_snapshot_free(t);
    memdiff_snapshot_free(s);
}
END_TEST

static void self_round_trip(memdiff_depth depth)
{
    memdiff_snapshot *s = NULL;
    ck_assert_int_eq(memdiff_snapshot_self(depth, &s), MEMDIFF_OK);
    membuf b = save_mem(s);
    memdiff_snapshot *t = NULL;
    ck_assert_int_eq(load_mem(b.p, b.n, &t), MEMDIFF_OK);
    assert_same_snapshot(s, t);
    assert_empty_diff(s, t);
    memdiff_snapshot_info i, j;
    memdiff_snapshot_get_info(s, &i);
    memdiff_snapshot_get_info(t, &j);
    fprintf(stderr,
            "file_format: self snapshot at %s depth: %zu regions, %zu runs, %zu aux pages; file "
            "%zu bytes; in memory %llu bytes (loaded copy %llu)\n",
            memdiff_depth_name(i.depth), i.region_count, i.run_count, s->aux_count, b.n,
            (unsigned long long)i.storage_bytes, (unsigned long long)j.storage_bytes);
    ck_assert_uint_lt(b.n, i.storage_bytes);
    /* taken once (nothing a shortcut rested on changes in the caller's own snapshot); how it was
     * taken is not kept in the file */
    ck_assert_uint_eq(i.attempts, 1);
    ck_assert_uint_eq(i.threads, 1);
    ck_assert_uint_eq(j.attempts, 0);
    ck_assert_uint_eq(j.threads, 0);
    free(b.p);
    memdiff_snapshot_free(t);
    memdiff_snapshot_free(s);
}

START_TEST(self_round_trip_standard)
{
    self_round_trip(MEMDIFF_DEPTH_STANDARD);
}
END_TEST

START_TEST(self_round_trip_deep)
{
    self_round_trip(MEMDIFF_DEPTH_DEEP); /* frames, flags and counts when run as root */
}
END_TEST

START_TEST(self_round_trip_fast)
{
    self_round_trip(MEMDIFF_DEPTH_FAST);
}
END_TEST

START_TEST(diff_of_loaded_copies_equals_diff_in_memory)
{
    memdiff_depth depth = (memdiff_depth)_i;
    memdiff_snapshot *a = NULL, *b = NULL;
    ck_assert_int_eq(memdiff_snapshot_self(depth, &a), MEMDIFF_OK);
    size_t len = 4u << 20;
    /* The heap is never read: an optimizer may drop malloc, memset and free altogether (GCC
     * does at -O2 once assert_same_diff is not inlined), and the diff would lose its heap
     * block. The empty asm that may read all memory through heap keeps all three. */
    char *heap = malloc(len);
    ck_assert_ptr_nonnull(heap);
    memset(heap, 0x5a, len);
    __asm__ volatile("" : : "r"(heap) : "memory");
    unsigned char *anon = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                               -1, 0);
    ck_assert_ptr_ne(anon, MAP_FAILED);
    for (size_t i = 0; i < len; i += 8192)
        anon[i] = 1;
    ck_assert_int_eq(memdiff_snapshot_self(depth, &b), MEMDIFF_OK);
    memdiff_snapshot *la = round_trip(a), *lb = round_trip(b);
    for (unsigned flags = 0; flags <= MEMDIFF_COMPARE_VERBOSE; flags++) {
        memdiff_diff *d1 = NULL, *d2 = NULL;
        ck_assert_int_eq(memdiff_compare(a, b, flags, &d1), MEMDIFF_OK);
        ck_assert_int_eq(memdiff_compare(la, lb, flags, &d2), MEMDIFF_OK);
        assert_same_diff(d1, d2);
        memdiff_totals t;
        memdiff_diff_totals(d2, MEMDIFF_CAT_ALL, &t);
        ck_assert_uint_ge(t.new_bytes, len + len / 2); /* the heap block and half the mapping */
        memdiff_diff_free(d1);
        memdiff_diff_free(d2);
    }
    munmap(anon, len);
    free(heap);
    memdiff_snapshot_free(la);
    memdiff_snapshot_free(lb);
    memdiff_snapshot_free(a);
    memdiff_snapshot_free(b);
}
END_TEST

START_TEST(files_by_path)
{
    char dir[] = "/tmp/memdiff_ff_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/snap.mds", dir);
    memdiff_snapshot *s = synthetic(), *t = NULL;
    ck_assert_int_eq(memdiff_snapshot_save_file(s, path), MEMDIFF_OK);
    ck_assert_int_eq(memdiff_snapshot_save_file(s, path), MEMDIFF_OK); /* replaces */
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    mode_t mask = umask(0);
    umask(mask);
    ck_assert_uint_eq(st.st_mode & 0777, 0666 & ~mask);
    ck_assert_int_eq(memdiff_snapshot_load_file(path, &t), MEMDIFF_OK);
    assert_same_snapshot(s, t);
    memdiff_snapshot_free(t);

    /* Nothing is left beside the file: the temporary was renamed. */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 1", dir);
    ck_assert_int_eq(system(cmd), 0);

    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.mds", dir);
    ck_assert_int_eq(memdiff_snapshot_load_file(missing, &t), MEMDIFF_EIO);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), missing));

    /* A bad file: the detail starts with its path. */
    FILE *f = fopen(path, "wb");
    fputs("MEMDIFF", f);
    fclose(f);
    ck_assert_int_eq(memdiff_snapshot_load_file(path, &t), MEMDIFF_EFORMAT);
    ck_assert_ptr_eq(strstr(memdiff_last_error(), path), memdiff_last_error());
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "truncated in the header"));

    /* A directory that cannot be written: the old file stays. */
    char sub[300];
    snprintf(sub, sizeof sub, "%s/nodir/x.mds", dir);
    ck_assert_int_ne(memdiff_snapshot_save_file(s, sub), MEMDIFF_OK);
    memdiff_snapshot_free(s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Saving to each kind of thing a path can name: a new path and a regular file are written (the
 * file replaced whole); everything else is refused before anything is written, with the path
 * and its kind named, and is left exactly as it was (no temporary left beside it either). */
START_TEST(save_refuses_all_but_regular_files)
{
    sf_kind k = (sf_kind)_i;
    char dir[] = "/tmp/memdiff_save_XXXXXX", path[300], why[300], before[2048], after[2048];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/%s", dir, sf_kinds[k].name);
    if (sf_make(dir, k, why, sizeof why) != 0) {
        fprintf(stderr, "save_refuses_all_but_regular_files(%s): skipped: %s\n",
                sf_kinds[k].name, why);
        rmdir(dir);
        return;
    }
    sf_state(path, before, sizeof before);
    int entries = sf_entries(dir);
    memdiff_snapshot *s = synthetic(), *t = NULL;
    int rc = memdiff_snapshot_save_file(s, path);
    if (sf_kinds[k].refusal) {
        char want[600];
        snprintf(want, sizeof want, "%s: %s", path, sf_kinds[k].refusal);
        ck_assert_msg(rc == MEMDIFF_EINVAL, "%s: status %d (%s)", path, rc, memdiff_last_error());
        ck_assert_str_eq(memdiff_last_error(), want);
        sf_state(path, after, sizeof after);
        ck_assert_str_eq(after, before);
        ck_assert_int_eq(sf_entries(dir), entries);
    } else {
        ck_assert_msg(rc == MEMDIFF_OK, "%s: %s", path, memdiff_last_error());
        struct stat st;
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISREG(st.st_mode));
        ck_assert_int_eq(sf_entries(dir), entries + (k == SF_MISSING)); /* no temporary */
        ck_assert_int_eq(memdiff_snapshot_load_file(path, &t), MEMDIFF_OK);
        assert_same_snapshot(s, t);
        memdiff_snapshot_free(t);
    }
    memdiff_snapshot_free(s);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(bad_arguments_and_streams)
{
    memdiff_snapshot *s = synthetic(), *t = (memdiff_snapshot *)1;
    ck_assert_int_eq(memdiff_snapshot_save(NULL, stdout), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_snapshot_save(s, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_snapshot_load(NULL, &t), MEMDIFF_EINVAL);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(memdiff_snapshot_load(stdin, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_snapshot_save_file(s, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_snapshot_save_file(s, ""), MEMDIFF_EINVAL);
    ck_assert_str_eq(memdiff_last_error(), "memdiff_snapshot_save_file: empty path");
    ck_assert_int_eq(memdiff_snapshot_load_file(NULL, &t), MEMDIFF_EINVAL);

    FILE *full = fopen("/dev/full", "wb");
    if (full) {
        ck_assert_int_eq(memdiff_snapshot_save(s, full), MEMDIFF_EIO);
        ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "write failed"));
        fclose(full);
    }
    FILE *wo = fopen("/dev/null", "wb"); /* write-only: reading fails */
    ck_assert_int_eq(memdiff_snapshot_load(wo, &t), MEMDIFF_EIO);
    fclose(wo);

    /* A snapshot that breaks the data model is not written. */
    FILE *sink = fopen("/dev/null", "wb");
    s->regions[3].category = (memdiff_category)42;
    ck_assert_int_eq(memdiff_snapshot_save(s, sink), MEMDIFF_EINVAL);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "region category 42 out of range"));
    s->regions[3].category = MEMDIFF_CAT_SHARED;
    s->regions[3].start = s->regions[2].end - 4096; /* overlaps the heap */
    ck_assert_int_eq(memdiff_snapshot_save(s, sink), MEMDIFF_EINVAL);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "overlaps"));
    fclose(sink);
    memdiff_snapshot_free(s);
}
END_TEST

START_TEST(other_process_or_host_refused_unless_forced)
{
    memdiff_snapshot *a = synthetic(), *b = round_trip(a);
    memdiff_diff *d = NULL;
    b->info.pid = 78;
    ck_assert_int_eq(memdiff_compare(a, b, 0, &d), MEMDIFF_EMISMATCH);
    ck_assert_ptr_null(d);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "before: pid 77 on host "
                                                       "'build-host.example'; after: pid 78"));
    ck_assert_int_eq(memdiff_compare(a, b, MEMDIFF_COMPARE_VERBOSE, &d), MEMDIFF_EMISMATCH);
    ck_assert_int_eq(memdiff_compare(a, b, MEMDIFF_COMPARE_FORCE, &d), MEMDIFF_OK);
    ck_assert_uint_eq(memdiff_diff_block_count(d), 0);
    memdiff_diff_free(d);

    b->info.pid = 77;
    b->info.host = "elsewhere";
    ck_assert_int_eq(memdiff_compare(b, a, 0, &d), MEMDIFF_EMISMATCH);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "pid 77 on host 'elsewhere'"));
    ck_assert_int_eq(
        memdiff_compare(b, a, MEMDIFF_COMPARE_FORCE | MEMDIFF_COMPARE_VERBOSE, &d), MEMDIFF_OK);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}
END_TEST

/* ---- damaged files ---------------------------------------------------------------------- */

static membuf synthetic_file(void)
{
    memdiff_snapshot *s = synthetic();
    membuf b = save_mem(s);
    memdiff_snapshot_free(s);
    return b;
}

START_TEST(empty_file)
{
    memdiff_snapshot *t = (memdiff_snapshot *)1;
    ck_assert_int_eq(load_mem("", 0, &t), MEMDIFF_EFORMAT);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(memdiff_last_error(), "snapshot file: empty");
}
END_TEST

START_TEST(truncated_at_every_offset)
{
    membuf b = synthetic_file();
    for (size_t n = 1; n < b.n; n++) {
        memdiff_snapshot *t = (memdiff_snapshot *)1;
        int rc = load_mem(b.p, n, &t);
        ck_assert_msg(rc == MEMDIFF_EFORMAT, "truncated to %zu of %zu: %d", n, b.n, rc);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(memdiff_last_error(), "truncated in the "), "at %zu: %s", n,
                      memdiff_last_error());
    }
    /* The section is named: the last byte lost is the checksum's. */
    memdiff_snapshot *t = NULL;
    load_mem(b.p, b.n - 1, &t);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "truncated in the checksum (need 4 bytes"));
    free(b.p);
}
END_TEST

START_TEST(truncated_real_snapshot)
{
    memdiff_snapshot *s = NULL;
    ck_assert_int_eq(memdiff_snapshot_self(MEMDIFF_DEPTH_DEEP, &s), MEMDIFF_OK);
    membuf b = save_mem(s);
    memdiff_snapshot_free(s);
    for (size_t n = 0; n < b.n; n += 1 + n / 64) {
        memdiff_snapshot *t = NULL;
        ck_assert_int_eq(load_mem(b.p, n, &t), MEMDIFF_EFORMAT);
    }
    free(b.p);
}
END_TEST

START_TEST(every_byte_flipped)
{
    membuf b = synthetic_file();
    static const unsigned char masks[] = {0x01, 0x80, 0xFF, 0x10};
    for (size_t i = 0; i < b.n; i++) {
        for (size_t m = 0; m < sizeof masks; m++) {
            b.p[i] ^= (char)masks[m];
            memdiff_snapshot *t = (memdiff_snapshot *)1;
            int rc = load_mem(b.p, b.n, &t);
            ck_assert_msg(rc == MEMDIFF_EFORMAT, "byte %zu ^ 0x%02x: %d", i, masks[m], rc);
            ck_assert_ptr_null(t);
            b.p[i] ^= (char)masks[m];
        }
    }
    /* Past the header, a damaged byte is the checksum's to find (or the framing's, when it is
     * a section tag or length). */
    b.p[b.n / 2] ^= 4;
    memdiff_snapshot *t = NULL;
    load_mem(b.p, b.n, &t);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "checksum mismatch"));
    free(b.p);
}
END_TEST

START_TEST(trailing_data_refused)
{
    membuf b = synthetic_file();
    char *p = malloc(b.n + 3);
    memcpy(p, b.p, b.n);
    memcpy(p + b.n, "xyz", 3);
    memdiff_snapshot *t = NULL;
    ck_assert_int_eq(load_mem(p, b.n + 3, &t), MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "3 bytes of trailing data"));
    free(p);
    /* A stream is read at most 64 KiB past the snapshot's end: more than that is "at least". */
    size_t more = 1 << 20;
    p = calloc(1, b.n + more);
    memcpy(p, b.p, b.n);
    ck_assert_int_eq(load_mem(p, b.n + more, &t), MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "at least 65536 bytes of trailing data"));
    free(p);
    free(b.p);
}
END_TEST

/* ---- hand-made files: one field wrong at a time, checksum valid ------------------------- */

/* The fields of a one-region, one-run file, as docs/file-format.md lays them out. */
typedef struct tfile {
    uint64_t major, minor, bom;
    uint64_t pid, depth_req, depth, sources, page_size, time_ns, host, degraded;
    uint64_t nstrings;
    uint64_t str2_len; /* the third string is "p\0th" cut to this length */
    uint64_t nregions;
    uint64_t r_gap, r_pages, r_offset, r_dev, r_inode, r_prot, r_flags, r_hint, r_cat, r_label,
        r_path, r_unit;
    uint64_t nruns;
    uint64_t u_gap, u_pages, u_attrs, u_region, u_aux;
    uint64_t aux_mask, aux_count; /* aux_mask 0: no aux section */
    uint64_t info_tag, strings_tag, runs_tag, extra_tag; /* extra_tag: an unknown section */
    uint64_t omit_runs, trailing_info_field, huge_varint;
} tfile;

static const tfile valid = {
    .major = 1, .bom = 0x0A0B0C0D, .pid = 4242, .depth_req = 1, .depth = 1, .sources = 0x43,
    .page_size = 4096, .time_ns = 1, .host = 0, .nstrings = 3, .str2_len = 1, .nregions = 1,
    .r_gap = 16, .r_pages = 8, .r_prot = 3, .r_cat = MEMDIFF_CAT_HEAP, .r_label = 1, .r_path = 2,
    .nruns = 1, .u_gap = 17, .u_pages = 2, .u_attrs = MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE,
    .info_tag = 1, .strings_tag = 2, .runs_tag = 4,
};

typedef struct tbuf {
    unsigned char p[1024];
    size_t n;
} tbuf;

static void tbytes(tbuf *b, const void *p, size_t n)
{
    ck_assert_uint_le(b->n + n, sizeof b->p);
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

/* v as a LEB128 varint into out; its length. */
static size_t varint(unsigned char out[10], uint64_t v)
{
    size_t n = 0;
    do {
        out[n++] = (unsigned char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

static void tvar(tbuf *b, uint64_t v)
{
    unsigned char tmp[10];
    tbytes(b, tmp, varint(tmp, v));
}

static void tle(tbuf *b, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        unsigned char c = (unsigned char)(v >> (8 * i));
        tbytes(b, &c, 1);
    }
}

static void tsection(tbuf *out, uint64_t tag, const tbuf *payload)
{
    tvar(out, tag);
    tvar(out, payload->n);
    tbytes(out, payload->p, payload->n);
}

static tbuf tencode(const tfile *f)
{
    tbuf out = {{0}, 0}, info = out, str = out, reg = out, run = out, aux = out;
    tvar(&info, f->pid);
    tvar(&info, f->depth_req);
    tvar(&info, f->depth);
    tvar(&info, f->sources);
    tvar(&info, f->page_size);
    if (f->huge_varint) /* 2^64 and more: ten bytes, the last too large */
        tbytes(&info, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10);
    else
        tvar(&info, f->time_ns);
    tvar(&info, f->host);
    tvar(&info, f->degraded);
    for (int i = 0; i < 8; i++)
        tvar(&info, (uint64_t)i * 4096);
    if (f->trailing_info_field)
        tvar(&info, 99); /* a field of a newer minor version */

    tvar(&str, f->nstrings);
    tvar(&str, 4);
    tbytes(&str, "host", 4);
    tvar(&str, 5);
    tbytes(&str, "label", 5);
    tvar(&str, f->str2_len);
    tbytes(&str, "p\0th", f->str2_len);

    tvar(&reg, f->nregions);
    const uint64_t r[12] = {f->r_gap,  f->r_pages, f->r_offset, f->r_dev,   f->r_inode, f->r_prot,
                            f->r_flags, f->r_hint, f->r_cat,    f->r_label, f->r_path,  f->r_unit};
    for (int i = 0; i < 12; i++)
        tvar(&reg, r[i]);

    tvar(&run, f->nruns);
    const uint64_t u[5] = {f->u_gap, f->u_pages, f->u_attrs, f->u_region, f->u_aux};
    for (int i = 0; i < 5; i++)
        tvar(&run, u[i]);

    tbytes(&out, "MEMDIFF\0", 8);
    tle(&out, f->major, 2);
    tle(&out, f->minor, 2);
    tle(&out, f->bom, 4);
    tsection(&out, f->info_tag, &info);
    tsection(&out, f->strings_tag, &str);
    tsection(&out, 3, &reg);
    if (!f->omit_runs)
        tsection(&out, f->runs_tag, &run);
    if (f->aux_mask) {
        tvar(&aux, f->aux_mask);
        tvar(&aux, f->aux_count);
        for (unsigned k = 0; k < 3; k++)
            for (uint64_t i = 0; (f->aux_mask >> k & 1) && i < f->aux_count && i < 16; i++)
                tvar(&aux, 2 - i % 2); /* frames: zigzag deltas +1, -1 */
        tsection(&out, 5, &aux);
    }
    if (f->extra_tag)
        tsection(&out, f->extra_tag, &info);
    tvar(&out, 0);
    tle(&out, memdiff__crc32(0, out.p, out.n), 4);
    return out;
}

static memdiff__run first_run(const memdiff_snapshot *s)
{
    memdiff__runs_iter it;
    memdiff__run r;
    memset(&r, 0, sizeof r);
    memdiff__runs_begin(s, &it);
    ck_assert(memdiff__runs_next(&it, &r));
    return r;
}

START_TEST(hand_made_valid_file_loads)
{
    tfile f = valid;
    tbuf b = tencode(&f);
    memdiff_snapshot *t = NULL;
    ck_assert_msg(load_mem(b.p, b.n, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    ck_assert_int_eq(t->info.pid, 4242);
    ck_assert_str_eq(t->info.host, "host");
    ck_assert_uint_eq(t->region_count, 1);
    ck_assert_uint_eq(t->regions[0].start, 16 * 4096);
    ck_assert_str_eq(t->regions[0].label, "label");
    ck_assert_str_eq(t->regions[0].path, "p");
    ck_assert_uint_eq(first_run(t).start, 17 * 4096);
    ck_assert_uint_eq(t->info.resident_bytes, 2 * 4096);
    ck_assert_uint_eq(t->info.private_bytes, 2 * 4096);
    memdiff_snapshot_free(t);

    /* A newer minor version: unknown sections and trailing fields are skipped. */
    f.minor = 7;
    f.extra_tag = 9;
    f.trailing_info_field = 1;
    b = tencode(&f);
    ck_assert_msg(load_mem(b.p, b.n, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_snapshot_free(t);

    /* Per-page data in sequence. */
    f = valid;
    f.aux_mask = 7;
    f.aux_count = 2;
    f.u_aux = 1;
    b = tencode(&f);
    ck_assert_msg(load_mem(b.p, b.n, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    ck_assert_uint_eq(first_run(t).aux, 0);
    ck_assert_uint_eq(memdiff__seq_get(&t->frames, 0), 1);
    ck_assert_uint_eq(memdiff__seq_get(&t->frames, 1), 0);
    ck_assert_uint_eq(memdiff__seq_get(&t->kflags, 0), 2);
    ck_assert_uint_eq(memdiff__seq_get(&t->mapcount, 1), 1);
    memdiff_snapshot_free(t);
}
END_TEST

#define FIELD(name) offsetof(tfile, name)

static const struct corruption {
    size_t field;
    uint64_t value;
    const char *expect;
} corruptions[] = {
    {FIELD(major), 2, "format version 2.0 is not supported (this memdiff reads version 1.x)"},
    {FIELD(major), 0, "format version 0.0 is not supported"},
    {FIELD(bom), 0x0D0C0B0A, "written big-endian by a broken writer"},
    {FIELD(bom), 0, "byte-order marker 0x00000000 at offset 12"},
    {FIELD(pid), (uint64_t)1 << 31, "pid 2147483648 out of range"},
    {FIELD(depth_req), 3, "requested depth 3 out of range"},
    {FIELD(depth), 9, "depth 9 out of range"},
    {FIELD(page_size), 3000, "page size 3000 at offset"},
    {FIELD(page_size), 256, "page size 256 at offset"},
    {FIELD(page_size), 0, "page size 0 at offset"},
    {FIELD(page_size), (uint64_t)1 << 31, "page size 2147483648 out of range"},
    {FIELD(host), 3, "host name 3 out of range (at most 2)"},
    {FIELD(degraded), 4, "degraded reason 4 out of range"},
    {FIELD(nstrings), (uint64_t)1 << 40, "string table announces 1099511627776 strings"},
    {FIELD(nstrings), 4, "truncated in the string table"},
    {FIELD(str2_len), 4, "string 2 at offset"},
    {FIELD(nregions), (uint64_t)1 << 60, "region table announces 1152921504606846976 regions"},
    {FIELD(nregions), 10000000, "region table announces 10000000 regions"},
    {FIELD(nregions), 0, "the string table holds 3 strings, but only 2 can be referred to (host, "
                         "degraded reason, and a label and a path for each of 0 regions)"},
    {FIELD(r_pages), 0, "region 0 is empty"},
    {FIELD(r_pages), (uint64_t)1 << 51, "the regions up to region 0 map 2251799813685248 pages of "
                                        "4096 bytes, more than 2^63 - 1 bytes: refused"},
    {FIELD(r_gap), UINT64_MAX / 4096, "region 0 ends past the top of the address space"},
    {FIELD(r_prot), 8, "region protection 8 out of range"},
    {FIELD(r_flags), 4, "region 0 has unknown flags 0x4"},
    {FIELD(r_hint), MEMDIFF__HINT_OTHER + 1, "region hint 12 out of range"},
    {FIELD(r_cat), MEMDIFF_CAT_COUNT, "region category 9 out of range"},
    {FIELD(r_label), 3, "region label 3 out of range"},
    {FIELD(r_path), 1000, "region path 1000 out of range"},
    {FIELD(nruns), (uint64_t)1 << 33, "run table announces 8589934592 runs"},
    {FIELD(u_pages), 0, "run 0 at offset"},
    {FIELD(u_gap), 15, "run 0 [0xf000, 0x11000) lies outside its region 0 [0x10000, 0x18000)"},
    {FIELD(u_pages), 8, "lies outside its region"},
    {FIELD(u_region), 1, "refers to region 0+1 of 1"},
    {FIELD(u_attrs), 0x1000, "run 0 has unknown page attributes 0x1000"},
    {FIELD(u_aux), 1, "run 0 has per-page data [0, +2) beyond the 0 pages"},
    {FIELD(u_aux), 2 + 5, "beyond the 0 pages of the aux arrays"},
    {FIELD(u_gap), UINT64_MAX / 4096 - 1, "run 0 ends past the top"},
    {FIELD(aux_mask), 8, "aux array mask 8 out of range"},
    {FIELD(aux_count), (uint64_t)1 << 50, "aux arrays announces 1125899906842624 pages"},
    {FIELD(info_tag), 2, "section 2 at offset"},
    {FIELD(strings_tag), 1, "out of order or repeated (after section 1)"},
    {FIELD(runs_tag), 3, "section 3 at offset"},
    {FIELD(omit_runs), 1, "snapshot file: no run table"},
    {FIELD(huge_varint), 1, "number too large in the info section"},
};

START_TEST(each_corruption_has_its_message)
{
    const struct corruption *c = &corruptions[_i];
    tfile f = valid;
    memcpy((char *)&f + c->field, &c->value, sizeof c->value);
    if (c->field == FIELD(aux_count) || c->field == FIELD(aux_mask))
        f.aux_mask = f.aux_mask ? f.aux_mask : 1;
    tbuf b = tencode(&f);
    memdiff_snapshot *t = (memdiff_snapshot *)1;
    int rc = load_mem(b.p, b.n, &t);
    ck_assert_msg(rc == MEMDIFF_EFORMAT, "case %d: status %d (%s)", _i, rc, memdiff_last_error());
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(memdiff_last_error(), c->expect), "case %d: expected '%s', got '%s'", _i,
                  c->expect, memdiff_last_error());
    ck_assert_msg(strncmp(memdiff_last_error(), "snapshot file: ", 15) == 0, "%s",
                  memdiff_last_error());
}
END_TEST

START_TEST(huge_counts_allocate_nothing)
{
    /* Every allocation fails from now on: a count refused before allocating still says EFORMAT;
     * one that allocated first would say ENOMEM. (The read buffer and the snapshot's first
     * chunk are allowed: two OS allocations; strings and small tables fit that chunk.) */
    tfile f = valid;
    f.nregions = 100000000;
    tbuf b = tencode(&f);
    FILE *in = fmemopen(b.p, b.n, "rb");
    memdiff__test_fail_alloc_after(3);
    memdiff_snapshot *t = NULL;
    int rc = memdiff_snapshot_load(in, &t);
    memdiff__test_fail_alloc_after(0);
    fclose(in);
    ck_assert_msg(rc == MEMDIFF_EFORMAT, "%d: %s", rc, memdiff_last_error());
}
END_TEST

START_TEST(allocation_failure_at_every_step)
{
    membuf b = synthetic_file();
    int failed = 0;
    for (long n = 1; n < 64; n++) {
        memdiff_snapshot *t = NULL;
        memdiff__test_fail_alloc_after(n);
        int rc = load_mem(b.p, b.n, &t);
        memdiff__test_fail_alloc_after(0);
        if (rc == MEMDIFF_OK) {
            memdiff_snapshot_free(t);
            break;
        }
        ck_assert_int_eq(rc, MEMDIFF_ENOMEM);
        ck_assert_ptr_null(t);
        failed++;
    }
    ck_assert_int_gt(failed, 0);
    free(b.p);
}
END_TEST

/* ---- hostile inputs: bounded time and memory -------------------------------------------- */

/* Runs "memdiff show path" (the real CLI); its exit status, its peak resident set in bytes
 * (wait4's ru_maxrss) and its wall time, its stderr in err. */
static int show_child(const char *path, long *maxrss, double *secs, char *err, size_t err_size)
{
    char errpath[] = "/tmp/memdiff_show_err_XXXXXX";
    int efd = mkstemp(errpath);
    ck_assert_int_ge(efd, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(efd, 2);
        execl(MEMDIFF_CLI_PATH, "memdiff", "show", path, (char *)NULL);
        _exit(127);
    }
    int st;
    struct rusage ru;
    ck_assert_int_eq(wait4(pid, &st, 0, &ru), pid);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    *maxrss = ru.ru_maxrss * 1024L; /* Linux: kilobytes */
    ssize_t n = pread(efd, err, err_size - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    close(efd);
    unlink(errpath);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}


/* A growing buffer for large hand-made files (tbuf holds 1 KiB). */
typedef struct gbuf {
    unsigned char *p;
    size_t n, cap;
} gbuf;

static void gbytes(gbuf *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void gvar(gbuf *b, uint64_t v)
{
    unsigned char tmp[10];
    gbytes(b, tmp, varint(tmp, v));
}

static void gsection(gbuf *out, uint64_t tag, gbuf *payload)
{
    gvar(out, tag);
    gvar(out, payload->n);
    gbytes(out, payload->p, payload->n);
    free(payload->p);
    memset(payload, 0, sizeof *payload);
}

/* Valid files (checksum right, every field in range, per docs/file-format.md) that describe far
 * more memory than they hold, each with count of its smallest element. */
enum {
    AMP_EMPTY_STRINGS, /* count empty strings (1 byte each; 8-24 in memory) */
    AMP_TINY_REGIONS,  /* count one-page regions (12 bytes each; 136 in memory) */
    AMP_MAX_STRINGS,   /* count tiny regions, each with a label and a path of its own: the most
                          strings a file may have */
    AMP_TINY_RUNS,     /* count one-page runs of alternating attributes (5 bytes; 32) */
    AMP_LITERAL_AUX,   /* count map counts 0, 1, 0, 1... (1 byte; 8 and more) */
    AMP_KINDS
};

static const char *const amp_names[AMP_KINDS] = {"empty strings", "tiny regions", "maximal strings",
                                                 "tiny runs", "literal aux"};

static gbuf amplifier(int kind, uint64_t count)
{
    gbuf out = {NULL, 0, 0}, info = out, str = out, reg = out, run = out, aux = out;
    const uint64_t info_v[7] = {4242, 1, 1, 0x43, 4096, 1, 0}; /* ... host 0, degraded none */
    for (int i = 0; i < 7; i++)
        gvar(&info, info_v[i]);
    gvar(&info, 0);
    for (int i = 0; i < 8; i++)
        gvar(&info, 0);

    uint64_t nregions = kind == AMP_TINY_REGIONS || kind == AMP_MAX_STRINGS ? count : 1;
    uint64_t nstrings = kind == AMP_EMPTY_STRINGS ? count
                        : kind == AMP_MAX_STRINGS ? 2 * count + 2
                                                  : 1;
    gvar(&str, nstrings);
    for (uint64_t i = 0; i < nstrings; i++) {
        if (kind == AMP_MAX_STRINGS) {
            char s[24];
            int len = snprintf(s, sizeof s, "%llx", (unsigned long long)i);
            gvar(&str, (uint64_t)len);
            gbytes(&str, s, (size_t)len);
        } else {
            gvar(&str, 0);
        }
    }
    uint64_t pages = kind == AMP_TINY_RUNS || kind == AMP_LITERAL_AUX ? count : 1;
    gvar(&reg, nregions);
    for (uint64_t i = 0; i < nregions; i++) {
        /* gap, size, offset, dev, inode, prot, flags, hint, category, label, path, unit */
        uint64_t label = kind == AMP_MAX_STRINGS ? 2 + 2 * i : 0;
        const uint64_t r[12] = {1, pages, 0, 0, 0, 3, 0, 0, MEMDIFF_CAT_PRIVATE, label,
                                kind == AMP_MAX_STRINGS ? label + 1 : 0, 0};
        for (int k = 0; k < 12; k++)
            gvar(&reg, r[k]);
    }
    uint64_t nruns = kind == AMP_TINY_RUNS ? count : kind == AMP_LITERAL_AUX ? 1 : 0;
    gvar(&run, nruns);
    for (uint64_t i = 0; i < nruns; i++) {
        unsigned attrs = MEMDIFF_PAGE_PRESENT | (i % 2 ? MEMDIFF_PAGE_PRIVATE : 0);
        /* gap (the region starts a page in), npages, attrs, region, aux */
        const uint64_t u[5] = {i == 0, kind == AMP_LITERAL_AUX ? count : 1, attrs, 0,
                               kind == AMP_LITERAL_AUX};
        for (int k = 0; k < 5; k++)
            gvar(&run, u[k]);
    }
    if (kind == AMP_LITERAL_AUX) {
        gvar(&aux, 4); /* map counts only */
        gvar(&aux, count);
        for (uint64_t i = 0; i < count; i++)
            gvar(&aux, i % 2);
    }
    gbytes(&out, "MEMDIFF\0\1\0\0\0\x0d\x0c\x0b\x0a", 16);
    gsection(&out, 1, &info);
    gsection(&out, 2, &str);
    gsection(&out, 3, &reg);
    gsection(&out, 4, &run);
    if (kind == AMP_LITERAL_AUX)
        gsection(&out, 5, &aux);
    gvar(&out, 0);
    uint32_t crc = memdiff__crc32(0, out.p, out.n);
    unsigned char le[4] = {(unsigned char)crc, (unsigned char)(crc >> 8),
                           (unsigned char)(crc >> 16), (unsigned char)(crc >> 24)};
    gbytes(&out, le, 4);
    return out;
}

/* /dev/zero, /dev/urandom (read, never written) and a 20 GiB sparse file (ftruncate in a temporary
 * directory) are refused after their first 16 bytes: within 2 s and 8 MiB of what showing a tiny
 * file costs (the loader used to read 4 GiB of each, ~4.2 GB resident for ~15 s, before looking
 * at the magic). So is a valid header followed by a section that announces 2^48 bytes. */
START_TEST(hostile_streams_fail_fast)
{
    char dir[] = "/tmp/memdiff_big_XXXXXX", sparse[300], huge[300], err[1024];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sparse, sizeof sparse, "%s/sparse.mds", dir);
    int fd = open(sparse, O_CREAT | O_WRONLY, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)20 << 30), 0);
    close(fd);
    snprintf(huge, sizeof huge, "%s/huge-section.mds", dir);
    FILE *f = fopen(huge, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite("MEMDIFF\0\1\0\0\0\x0d\x0c\x0b\x0a", 1, 16, f);
    fwrite("\x01\x80\x80\x80\x80\x80\x80\x40", 1, 8, f); /* tag 1, length 2^48 */
    fclose(f);
    ck_assert_int_eq(truncate(huge, (off_t)8 << 30), 0); /* and 8 GiB of zeros to read */

    /* What showing a tiny valid file costs (a sanitizer build maps much more than a plain one). */
    char tiny[300];
    snprintf(tiny, sizeof tiny, "%s/tiny.mds", dir);
    gbuf g = amplifier(AMP_TINY_REGIONS, 1);
    f = fopen(tiny, "wb");
    ck_assert_uint_eq(fwrite(g.p, 1, g.n, f), g.n);
    fclose(f);
    free(g.p);
    long base;
    double base_secs;
    ck_assert_msg(show_child(tiny, &base, &base_secs, err, sizeof err) == 0, "%s", err);

    const struct {
        const char *path, *expect;
    } cases[] = {
        {"/dev/zero", "/dev/zero: snapshot file: not a memdiff snapshot (bad magic)"},
        {"/dev/urandom", "/dev/urandom: snapshot file: not a memdiff snapshot (bad magic)"},
        {sparse, "sparse.mds: snapshot file: not a memdiff snapshot (bad magic)"},
        {huge, "snapshot file: the info section at offset 16 announces 281474976710656 bytes, "
               "past the 4294967296 bytes a file may hold"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long rss;
        double secs;
        int rc = show_child(cases[i].path, &rss, &secs, err, sizeof err);
        ck_assert_msg(rc == 2, "%s: exit %d: %s", cases[i].path, rc, err);
        ck_assert_msg(strstr(err, cases[i].expect), "%s: %s", cases[i].path, err);
        ck_assert_msg(rss < base + (8L << 20), "%s: peak RSS %ld bytes (tiny file: %ld)",
                      cases[i].path, rss, base);
        ck_assert_msg(secs < base_secs + 2.0, "%s: %.2f s", cases[i].path, secs);
        fprintf(stderr, "file_format: show %s: refused in %.3f s, peak RSS %ld KiB (tiny file "
                        "%ld KiB)\n",
                cases[i].path, secs, rss >> 10, base >> 10);
    }
    /* Through the library too, each load entry point. */
    memdiff_snapshot *t = NULL;
    ck_assert_int_eq(memdiff_snapshot_load_file(sparse, &t), MEMDIFF_EFORMAT);
    FILE *z = fopen("/dev/zero", "rb");
    ck_assert_int_eq(memdiff_snapshot_load(z, &t), MEMDIFF_EFORMAT);
    ck_assert_str_eq(memdiff_last_error(), "snapshot file: not a memdiff snapshot (bad magic)");
    fclose(z);
    unlink(sparse);
    unlink(huge);
    unlink(tiny);
    rmdir(dir);
}
END_TEST

/* The bound of docs/file-format.md, "Memory": a loaded snapshot's arrays take at most 2.75 x
 * its file's size (16 MiB at least), and the file's bytes are held while it is parsed: the peak
 * of "memdiff show" above what showing a tiny file costs is at most 4 x the file's size, or the
 * file + 17 MiB for a small one. Each amplifier is made
 * large enough (8 to 30 MB) that the old loader's 6x to 24x would pass the bound several times
 * over; those that stay within it must load (a small one of each kind, too). */
START_TEST(amplifying_files_stay_within_the_bound)
{
    static const uint64_t big[AMP_KINDS] = {10000000, 2000000, 1000000, 4000000, 8000000};
    static const uint64_t small[AMP_KINDS] = {2, 50000, 20000, 200000, 500000};
    int kind = _i / 2, is_small = _i % 2;
    uint64_t count = is_small ? small[kind] : big[kind];
    char dir[] = "/tmp/memdiff_amp_XXXXXX", path[300], tiny[300], err[1024];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/amp.mds", dir);
    snprintf(tiny, sizeof tiny, "%s/tiny.mds", dir);
    gbuf g = amplifier(kind, count), t = amplifier(AMP_TINY_REGIONS, 1);
    FILE *f = fopen(path, "wb");
    ck_assert_uint_eq(fwrite(g.p, 1, g.n, f), g.n);
    fclose(f);
    f = fopen(tiny, "wb");
    ck_assert_uint_eq(fwrite(t.p, 1, t.n, f), t.n);
    fclose(f);
    size_t size = g.n;
    /* Freed before the children are forked: a child's peak RSS counts what it shared with its
     * parent before exec. */
    free(g.p);
    free(t.p);

    long base, rss;
    double secs;
    ck_assert_msg(show_child(tiny, &base, &secs, err, sizeof err) == 0, "%s", err);
    int rc = show_child(path, &rss, &secs, err, sizeof err);
    /* 4 x the file's size; a small file's arrays may take 16 MiB whatever its size, plus the
     * file's bytes while it is parsed and a MiB of arena bookkeeping. */
    long floor_bound = (long)size + (17L << 20);
    long bound = base + (4 * (long)size > floor_bound ? 4 * (long)size : floor_bound);
    fprintf(stderr, "file_format: %s x %llu: %zu bytes: exit %d, %.2f s, peak RSS %ld KiB "
                    "(tiny file %ld KiB; bound %ld KiB)%s%s",
            amp_names[kind], (unsigned long long)count, size, rc, secs, rss >> 10, base >> 10,
            bound >> 10, rc ? ": " : "\n", rc ? err : "");
    ck_assert_msg(rss <= bound, "%s: peak RSS %ld > %ld", amp_names[kind], rss, bound);
    if (is_small) {
        ck_assert_msg(rc == 0, "%s x %llu: %s", amp_names[kind], (unsigned long long)count, err);
    } else {
        ck_assert_int_eq(rc, 2);
        ck_assert_msg(strstr(err, kind == AMP_EMPTY_STRINGS
                                      ? "the string table holds 10000000 strings, but only 4 can "
                                        "be referred to"
                                      : "of memory (2.75 x its "),
                      "%s", err);
    }
    unlink(path);
    unlink(tiny);
    rmdir(dir);
}
END_TEST

/* Every file memdiff writes loads: a snapshot of many tiny regions, which would take more than
 * its bound in memory, is written with zero bytes at the end of its run table (skipped by
 * readers) to make the file as large as the bound asks. 200,000 one-page regions take 27 MB in
 * memory and 12 bytes each on disk (2.4 MB); the padded file holds at least 27 MB / 2.75. */
START_TEST(written_files_always_load)
{
    const size_t n = 200000;
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff_snapshot *s = memdiff__arena_alloc(&a, sizeof *s);
    ck_assert_ptr_nonnull(s);
    s->arena = a;
    s->regions = memdiff__arena_alloc(&s->arena, n * sizeof *s->regions);
    ck_assert_ptr_nonnull(s->regions);
    memdiff__strtab *tab = NULL;
    const char *empty = memdiff__intern(&tab, &s->arena, "");
    for (size_t i = 0; i < n; i++) {
        memdiff__region *g = &s->regions[i];
        g->start = (2 * i + 1) * 4096;
        g->end = g->start + 4096;
        g->prot = 3;
        g->category = MEMDIFF_CAT_PRIVATE;
        g->label = g->path = empty;
        g->unit = g->start;
    }
    s->region_count = n;
    s->info.page_size = 4096;
    s->info.host = empty;
    memdiff__snapshot_tally(s);

    membuf b = save_mem(s);
    uint64_t memory = n * sizeof(memdiff__region);
    uint64_t least = memory * 4 / 11;
    ck_assert_msg(b.n >= least, "file %zu bytes, bound asks for %llu", b.n,
                  (unsigned long long)least);
    ck_assert_uint_lt(b.n, least + 64); /* padded just enough */
    memdiff_snapshot *t = NULL;
    ck_assert_msg(load_mem(b.p, b.n, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    assert_same_snapshot(s, t);
    memdiff_snapshot_free(t);

    /* The same regions in a file without padding are refused: the padding is what makes it
     * load. */
    gbuf g = amplifier(AMP_TINY_REGIONS, n);
    ck_assert_uint_lt(g.n, least);
    ck_assert_int_eq(load_mem(g.p, g.n, &t), MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "of memory (2.75 x its "));
    free(g.p);
    free(b.p);
    memdiff_snapshot_free(s);
}
END_TEST

Suite *file_format_suite(void)
{
    Suite *s = suite_create("file_format");
    TCase *tc = tcase_create("Round trip");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, crc32_matches_the_standard);
    tcase_add_test(tc, synthetic_round_trip_keeps_every_field);
    tcase_add_test(tc, empty_snapshot_round_trips);
    tcase_add_test(tc, self_round_trip_standard);
    tcase_add_test(tc, self_round_trip_deep);
    tcase_add_test(tc, self_round_trip_fast);
    tcase_add_loop_test(tc, diff_of_loaded_copies_equals_diff_in_memory, MEMDIFF_DEPTH_FAST,
                        MEMDIFF_DEPTH_DEEP + 1);
    tcase_add_test(tc, files_by_path);
    tcase_add_loop_test(tc, save_refuses_all_but_regular_files, 0, SF_COUNT);
    tcase_add_test(tc, other_process_or_host_refused_unless_forced);
    suite_add_tcase(s, tc);

    tc = tcase_create("Damage");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, empty_file);
    tcase_add_test(tc, truncated_at_every_offset);
    tcase_add_test(tc, truncated_real_snapshot);
    tcase_add_test(tc, every_byte_flipped);
    tcase_add_test(tc, trailing_data_refused);
    tcase_add_test(tc, hand_made_valid_file_loads);
    tcase_add_loop_test(tc, each_corruption_has_its_message, 0,
                        (int)(sizeof corruptions / sizeof corruptions[0]));
    tcase_add_test(tc, huge_counts_allocate_nothing);
    suite_add_tcase(s, tc);

    tc = tcase_create("Hostile");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, hostile_streams_fail_fast);
    tcase_add_loop_test(tc, amplifying_files_stay_within_the_bound, 0, 2 * AMP_KINDS);
    tcase_add_test(tc, written_files_always_load);
    suite_add_tcase(s, tc);

    tc = tcase_create("Errors");
    tcase_add_test(tc, bad_arguments_and_streams);
    tcase_add_test(tc, allocation_failure_at_every_step);
    suite_add_tcase(s, tc);
    return s;
}
