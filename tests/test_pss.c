/*
 * test_pss.c - PSS per mapping against the kernel's own figure, /proc/PID/smaps "Pss", on
 * processes the tests did not write (python3, /bin/sh), held still with SIGSTOP, at both
 * sources: smaps per mapping (MEMDIFF_SNAPSHOT_SMAPS_PSS, standard depth, and deep degraded as
 * nobody) and map counts (deep, as root). Also a self snapshot's total, a mapping changed during
 * the snapshot, and the figures through a snapshot file.
 *
 * The rule (docs/api.md, "PSS"): with MEMDIFF_SRC_PSS_MAPPINGS the first region of each mapping
 * has pss_end = the mapping's end and pss_bytes = smaps' Pss kB * 1024, every later region of it
 * pss_bytes 0 and pss_end 0; with MEMDIFF_SRC_PSS (map counts) every region has pss_end = end,
 * and the k regions of a mapping sum to S bytes with smaps' kB in [S / 1024, (S + k - 1) / 1024]
 * (each region's sum of page_size / map count in 1/4096 bytes is rounded down once:
 * test_agreement.c). A stopped process's own pages do not change, but pages it shares (libc, the
 * page cache) change map counts whenever another process maps or unmaps them: a round counts only
 * when smaps read before and after the snapshot agree, and rounds are repeated until one does.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "scenario_util.h"
#include "smaps.h"
#include "suites.h"

#define ROUNDS 40

/* python3 with mmapped malloc chunks (200 kB, above glibc's 128 kB threshold) that the kernel
 * merges into shared anonymous VMAs with other memory: mappings memdiff splits into regions. */
static const char PYTHON_SCRIPT[] =
    "import json, sys\n"
    "keep = [bytearray(200000) for i in range(24)]\n"
    "doc = json.dumps({'n': len(keep)})\n"
    "sys.stdout.write('ready\\n')\n"
    "sys.stdout.flush()\n"
    "sys.stdin.read()\n";

typedef struct target {
    pid_t pid;
    int in_fd; /* its stdin: closing it ends the target */
} target;

/* Starts argv with its stdin on a pipe, waits for its "ready" line and stops it (SIGSTOP).
 * NULL, or what went wrong. */
static const char *target_start(target *t, char *const argv[])
{
    int from;
    t->in_fd = -1;
    pid_t pid = t->pid = scn_spawn_piped(argv, &t->in_fd, &from);
    if (pid < 0)
        return "pipe or fork failed";
    char line[64];
    ssize_t n = read(from, line, sizeof line - 1);
    close(from);
    if (n < 5 || strncmp(line, "ready", 5) != 0)
        return "the target exited before it was ready";
    int st;
    if (kill(pid, SIGSTOP) != 0 || waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st))
        return "cannot stop the target";
    return NULL;
}

static void target_end(target *t)
{
    if (t->pid <= 0)
        return;
    close(t->in_fd);
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
    t->pid = -1;
}

static const char *python_path(void)
{
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : NULL;
}

static int same_smaps(const smaps *a, const smaps *b)
{
    if (a->count != b->count)
        return 0;
    for (size_t i = 0; i < a->count; i++)
        if (!smaps_vma_equal(&a->vma[i], &b->vma[i]))
            return 0;
    return 1;
}

/* What one comparison found. */
typedef struct outcome {
    size_t mappings; /* smaps mappings compared */
    size_t split;    /* of them, holding more than one memdiff region */
    uint64_t pss;    /* smaps' Pss summed, bytes */
} outcome;

/* Holds snapshot s against smaps v (read before and after it, equal): per mapping, by the rule
 * of the source s has. NULL or the first disagreement (static storage). */
static const char *compare(const memdiff_snapshot *s, const smaps *v, outcome *o)
{
    static char msg[512];
    memdiff_snapshot_info in;
    memdiff_snapshot_get_info(s, &in);
    int per_page = (in.sources & MEMDIFF_SRC_PSS) != 0;
    size_t n = memdiff_snapshot_region_count(s), k = 0;
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < v->count; i++) {
        const smaps_vma *m = &v->vma[i];
        uint64_t sum = 0;
        size_t regions = 0;
        for (; k < n; k++) {
            memdiff_region r;
            memdiff_snapshot_region(s, k, &r);
            if (r.start >= m->end)
                break;
            if (r.start < m->start || r.end > m->end) {
                snprintf(msg, sizeof msg, "region 0x%llx-0x%llx crosses mapping 0x%llx-0x%llx",
                         (unsigned long long)r.start, (unsigned long long)r.end,
                         (unsigned long long)m->start, (unsigned long long)m->end);
                return msg;
            }
            /* Per page: each region's own figure. Per mapping: the first region's, to the
             * mapping's end; the later ones none. */
            uint64_t want_end = per_page ? r.end : r.start == m->start ? m->end : 0;
            if (r.pss_end != want_end || (!per_page && r.start != m->start && r.pss_bytes)) {
                snprintf(msg, sizeof msg,
                         "region 0x%llx-0x%llx of mapping 0x%llx-0x%llx: pss_end 0x%llx, want "
                         "0x%llx; pss %llu",
                         (unsigned long long)r.start, (unsigned long long)r.end,
                         (unsigned long long)m->start, (unsigned long long)m->end,
                         (unsigned long long)r.pss_end, (unsigned long long)want_end,
                         (unsigned long long)r.pss_bytes);
                return msg;
            }
            sum += r.pss_bytes;
            regions++;
        }
        uint64_t kb = m->pss / 1024;
        int ok = per_page ? sum / 1024 <= kb && kb <= (sum + (regions ? regions - 1 : 0)) / 1024
                          : sum == m->pss;
        if (!ok || !regions) {
            snprintf(msg, sizeof msg,
                     "mapping 0x%llx-0x%llx %s: smaps Pss %llu bytes, memdiff %llu over %zu "
                     "regions (%s)",
                     (unsigned long long)m->start, (unsigned long long)m->end, m->name,
                     (unsigned long long)m->pss, (unsigned long long)sum, regions,
                     per_page ? "map counts" : "smaps per mapping");
            return msg;
        }
        o->mappings++;
        o->split += regions > 1;
        o->pss += m->pss;
    }
    if (k != n)
        return "a memdiff region lies in no smaps mapping";
    /* The total: every mapping's figure (a process of the test's: no Own). Per page, each
     * region rounds down by less than a byte. */
    if (per_page ? in.pss_bytes > o->pss + 1024 * o->mappings || in.pss_bytes + n < o->pss / 1024
                 : in.pss_bytes != o->pss) {
        snprintf(msg, sizeof msg, "snapshot PSS %llu bytes, smaps' sum %llu",
                 (unsigned long long)in.pss_bytes, (unsigned long long)o->pss);
        return msg;
    }
    return NULL;
}

/* Rounds of smaps / snapshot / smaps of pid until one is stable, then compare(). want_sources:
 * the PSS source the snapshot must have. NULL or what went wrong. */
static const char *agree(int pid, memdiff_depth depth, unsigned flags, unsigned want_sources,
                         outcome *o)
{
    static char msg[768];
    for (int round = 0; round < ROUNDS; round++) {
        smaps a, b;
        memset(o, 0, sizeof *o); /* a round that compares nothing leaves it empty */
        memdiff_options opt = MEMDIFF_OPTIONS_INIT;
        opt.pid = pid;
        opt.depth = depth;
        opt.flags = flags;
        memdiff_snapshot *s = NULL;
        if (smaps_read(pid, &a) != 0)
            return "cannot read smaps";
        int rc = memdiff_snapshot_take(&opt, &s);
        if (rc) {
            smaps_free(&a);
            snprintf(msg, sizeof msg, "snapshot: %s: %s", memdiff_status_name(rc),
                     memdiff_last_error());
            return msg;
        }
        if (smaps_read(pid, &b) != 0) {
            smaps_free(&a);
            memdiff_snapshot_free(s);
            return "cannot read smaps";
        }
        memdiff_snapshot_info in;
        memdiff_snapshot_get_info(s, &in);
        const char *err = NULL;
        unsigned got = in.sources & (MEMDIFF_SRC_PSS | MEMDIFF_SRC_PSS_MAPPINGS);
        if (got != want_sources) {
            snprintf(msg, sizeof msg, "%s snapshot: PSS sources 0x%x, want 0x%x",
                     memdiff_depth_name(in.depth), got, want_sources);
            err = msg;
        } else if (same_smaps(&a, &b)) {
            err = compare(s, &a, o);
            if (!err) {
                printf("pss: pid %d, %s%s: %zu mappings agree (%zu split), %llu bytes, round %d\n",
                       pid, memdiff_depth_name(in.depth),
                       want_sources & MEMDIFF_SRC_PSS ? " (map counts)" : " (smaps)", o->mappings,
                       o->split, (unsigned long long)o->pss, round);
                fflush(stdout);
            } else if (round + 1 < ROUNDS) {
                err = NULL; /* a shared page may have changed its map count in between */
                o->mappings = 0;
            }
        }
        smaps_free(&a);
        smaps_free(&b);
        memdiff_snapshot_free(s);
        if (err || o->mappings)
            return err;
    }
    return "smaps never stable across a snapshot";
}

/* The PSS sources a snapshot of depth with the option must have here: map counts need deep and
 * CAP_SYS_ADMIN (kpagecount; pagemap's frame numbers). */
static unsigned expected_source(memdiff_depth depth)
{
    memdiff_snapshot *s = NULL;
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.depth = depth;
    ck_assert_int_eq(memdiff_snapshot_take(&o, &s), MEMDIFF_OK);
    memdiff_snapshot_info in;
    memdiff_snapshot_get_info(s, &in);
    memdiff_snapshot_free(s);
    return (in.sources & MEMDIFF_SRC_MAP_COUNTS) ? MEMDIFF_SRC_PSS : MEMDIFF_SRC_PSS_MAPPINGS;
}

/* What a snapshot report would list of s: with PSS per mapping, regions keep their figures, and
 * blocks and categories have none (a mapping's regions may be of several); NULL or what is
 * wrong. */
static const char *report_lists_no_split(const memdiff_snapshot *s)
{
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    memdiff__snap_block *b = NULL;
    memdiff__snap_sum sums[MEMDIFF_CAT_COUNT];
    size_t n = 0;
    const char *err = NULL;
    uint64_t regions_pss = 0;
    memdiff__report_snapshot_sums(s, sums);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++)
        if (sums[c].pss_bytes)
            err = "a category has PSS per mapping";
    if (!err && memdiff__report_snapshot_blocks(s, &o, &scratch, &b, &n) == MEMDIFF_OK) {
        for (size_t i = 0; i < n; i++)
            if (b[i].r.pss_bytes || b[i].r.pss_end)
                err = "a block has PSS per mapping";
    }
    o.flags = MEMDIFF_REPORT_REGIONS;
    if (!err && memdiff__report_snapshot_blocks(s, &o, &scratch, &b, &n) == MEMDIFF_OK) {
        for (size_t i = 0; i < n; i++)
            regions_pss += b[i].r.pss_bytes;
        memdiff_snapshot_info in;
        memdiff_snapshot_get_info(s, &in);
        if (regions_pss != in.pss_bytes)
            err = "the regions listed do not carry the snapshot's PSS";
    }
    memdiff__arena_release(&scratch);
    return err;
}

/* Both sources on a started target: smaps at standard depth; deep (map counts as root, smaps
 * where deep degrades). Then without the option below deep: no PSS at all. */
static const char *agree_target(char *const argv[], int want_split)
{
    static char msg[1024];
    target t;
    const char *err = target_start(&t, argv);
    outcome o;
    if (!err)
        err = agree(t.pid, MEMDIFF_DEPTH_STANDARD, MEMDIFF_SNAPSHOT_SMAPS_PSS,
                    MEMDIFF_SRC_PSS_MAPPINGS, &o);
    if (!err && want_split && o.split == 0)
        err = "no mapping held several regions: the split rule went untested";
    if (!err) {
        memdiff_options opt = MEMDIFF_OPTIONS_INIT;
        opt.pid = t.pid;
        opt.flags = MEMDIFF_SNAPSHOT_SMAPS_PSS;
        memdiff_snapshot *s = NULL;
        ck_assert_int_eq(memdiff_snapshot_take(&opt, &s), MEMDIFF_OK);
        err = report_lists_no_split(s);
        memdiff_snapshot_free(s);
    }
    if (!err)
        err = agree(t.pid, MEMDIFF_DEPTH_DEEP, MEMDIFF_SNAPSHOT_SMAPS_PSS,
                    expected_source(MEMDIFF_DEPTH_DEEP), &o);
    if (!err) {
        memdiff_options opt = MEMDIFF_OPTIONS_INIT;
        opt.pid = t.pid;
        memdiff_snapshot *s = NULL;
        memdiff_snapshot_info in;
        memdiff_region r;
        ck_assert_int_eq(memdiff_snapshot_take(&opt, &s), MEMDIFF_OK);
        memdiff_snapshot_get_info(s, &in);
        memdiff_snapshot_region(s, 0, &r);
        if ((in.sources & (MEMDIFF_SRC_PSS | MEMDIFF_SRC_PSS_MAPPINGS)) || in.pss_bytes ||
            r.pss_bytes || r.pss_end)
            err = "a standard snapshot without the option has PSS";
        memdiff_snapshot_free(s);
    }
    target_end(&t);
    if (!err)
        return NULL;
    snprintf(msg, sizeof msg, "%s: %s", argv[0], err);
    return msg;
}

static char *const SHELL[] = {(char *)"/bin/sh", (char *)"-c", (char *)"echo ready; read line",
                              NULL};

START_TEST(shell_pss_per_mapping)
{
    const char *err = agree_target(SHELL, 0);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
}
END_TEST

START_TEST(python_pss_per_mapping)
{
    if (!python_path()) {
        printf("pss: no /usr/bin/python3; skipped\n");
        return;
    }
    char *const argv[] = {(char *)python_path(), (char *)"-c", (char *)PYTHON_SCRIPT, NULL};
    const char *err = agree_target(argv, 1);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
}
END_TEST

/* As nobody, deep degrades (no CAP_SYS_ADMIN): the smaps source still gives every mapping. */
static const char *as_nobody(void *arg)
{
    (void)arg;
    const char *err = agree_target(SHELL, 0);
    if (err || !python_path())
        return err;
    char *const argv[] = {(char *)python_path(), (char *)"-c", (char *)PYTHON_SCRIPT, NULL};
    return agree_target(argv, 1);
}

START_TEST(unprivileged_pss_per_mapping)
{
    ck_assert_uint_eq(expected_source(MEMDIFF_DEPTH_DEEP) == MEMDIFF_SRC_PSS, geteuid() == 0);
    const char *err = scn_as_nobody(as_nobody, NULL);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
}
END_TEST

/* A self snapshot's PSS is smaps' sum less memdiff's own storage (its Own regions). */
START_TEST(self_total_excludes_own)
{
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.flags = MEMDIFF_SNAPSHOT_SMAPS_PSS;
    memdiff_snapshot *warm = NULL;
    ck_assert_int_eq(memdiff_snapshot_take(&o, &warm), MEMDIFF_OK);
    memdiff_snapshot_free(warm);
    for (int round = 0; round < ROUNDS; round++) {
        smaps a, b;
        memdiff_snapshot *s = NULL;
        ck_assert_int_eq(smaps_read(getpid(), &a), 0);
        ck_assert_int_eq(memdiff_snapshot_take(&o, &s), MEMDIFF_OK);
        ck_assert_int_eq(smaps_read(getpid(), &b), 0);
        int stable = same_smaps(&a, &b);
        uint64_t sum = 0, own_pss = 0;
        size_t own = 0, n = memdiff_snapshot_region_count(s);
        for (size_t i = 0; i < a.count; i++) {
            int is_own = 0;
            for (size_t k = 0; k < n; k++) {
                memdiff_region r;
                memdiff_snapshot_region(s, k, &r);
                is_own |= r.category == MEMDIFF_CAT_OWN && r.start < a.vma[i].end &&
                          a.vma[i].start < r.end;
            }
            if (is_own) {
                own++;
                own_pss += a.vma[i].pss;
            } else {
                sum += a.vma[i].pss;
            }
        }
        memdiff_snapshot_info in;
        memdiff_snapshot_get_info(s, &in);
        memdiff_snapshot_free(s);
        smaps_free(&a);
        smaps_free(&b);
        ck_assert_uint_eq(in.sources & MEMDIFF_SRC_PSS_MAPPINGS, MEMDIFF_SRC_PSS_MAPPINGS);
        ck_assert_uint_gt(own, 0); /* the storage of the snapshot and of the warm-up */
        if (!stable || in.pss_bytes != sum) {
            printf("pss: self round %d: %s, snapshot %llu, smaps %llu\n", round,
                   stable ? "stable" : "smaps changed", (unsigned long long)in.pss_bytes,
                   (unsigned long long)sum);
            fflush(stdout);
            continue; /* the test's own stdio between the readings, or a shared page */
        }
        printf("pss: self: %llu bytes in smaps' sum, %llu in %zu Own mappings left out\n",
               (unsigned long long)sum, (unsigned long long)own_pss, own);
        fflush(stdout);
        return;
    }
    ck_abort_msg("a self snapshot's PSS never equalled smaps' sum without Own");
}
END_TEST

/* ---- a mapping that changes between the region list and smaps ---------------------------- */

static char *changing;

static void unmap_half(void)
{
    munmap(changing + 4 * scn_page(), 4 * scn_page());
}

/* The hook runs after the region list was read and before smaps is: the region keeps 8 pages,
 * smaps' mapping 4. The figure is smaps' (4 private pages) on the region, and the snapshot
 * says one mapping changed. */
START_TEST(changed_mapping_is_noted)
{
    size_t ps = scn_page();
    changing = scn_map(8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(changing, 1, 8 * ps);
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.flags = MEMDIFF_SNAPSHOT_SMAPS_PSS;
    memdiff_snapshot *s = NULL;
    memdiff__test_while_taking(unmap_half);
    int rc = memdiff_snapshot_take(&o, &s);
    memdiff__test_while_taking(NULL);
    ck_assert_int_eq(rc, MEMDIFF_OK);
    memdiff_snapshot_info in;
    memdiff_region r;
    memdiff_snapshot_get_info(s, &in);
    ck_assert_int_eq(memdiff_snapshot_find(s, (uintptr_t)changing, &r), MEMDIFF_OK);
    ck_assert_uint_eq(r.start, (uintptr_t)changing);
    ck_assert_uint_eq(r.end, (uintptr_t)changing + 8 * ps);
    ck_assert_uint_eq(r.pss_end, r.end);
    ck_assert_uint_eq(r.pss_bytes, 4 * ps);
    ck_assert_ptr_nonnull(in.degraded);
    ck_assert_msg(strstr(in.degraded, "PSS per mapping: 1 mapping changed") != NULL, "%s",
                  in.degraded);
    memdiff_snapshot_free(s);
    munmap(changing - ps, 5 * ps); /* the guard before it and the half left */
    munmap(changing + 8 * ps, ps);
}
END_TEST

START_TEST(unknown_flags_refused)
{
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    memdiff_snapshot *s = NULL;
    ck_assert_uint_eq(o.flags, 0);
    o.flags = 0x2u;
    ck_assert_int_eq(memdiff_snapshot_take(&o, &s), MEMDIFF_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(memdiff_last_error(), "memdiff_snapshot_take: unknown flags 0x2");
}
END_TEST

/* ---- snapshot files --------------------------------------------------------------------- */

/* The file's bytes (malloc'd) into *len. */
static unsigned char *save_bytes(const memdiff_snapshot *s, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(memdiff_snapshot_save(s, f), MEMDIFF_OK);
    fclose(f);
    return (unsigned char *)buf;
}

static int load_bytes(const unsigned char *p, size_t len, memdiff_snapshot **out)
{
    FILE *f = fmemopen((void *)p, len, "rb");
    ck_assert_ptr_nonnull(f);
    int rc = memdiff_snapshot_load(f, out);
    fclose(f);
    return rc;
}

static size_t varint_at(const unsigned char *p, size_t *pos)
{
    size_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        unsigned char c = p[(*pos)++];
        v |= (size_t)(c & 0x7F) << shift;
        if (!(c & 0x80))
            return v;
    }
}

static size_t put_varint(unsigned char *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n] = (unsigned char)(v & 0x7F);
        v >>= 7;
        p[n] |= v ? 0x80 : 0;
        n++;
    } while (v);
    return n;
}

/* file with section 6's payload replaced by pay[0..npay), the checksum redone (malloc'd). */
static unsigned char *with_pss_section(const unsigned char *file, size_t len,
                                       const unsigned char *pay, size_t npay, size_t *outlen)
{
    unsigned char *o = malloc(len + npay + 32);
    size_t pos = 16, w = 16;
    memcpy(o, file, 16);
    for (;;) {
        size_t tag = varint_at(file, &pos);
        if (tag == 0)
            break;
        size_t n = varint_at(file, &pos);
        w += put_varint(o + w, tag);
        if (tag == 6) {
            w += put_varint(o + w, npay);
            memcpy(o + w, pay, npay);
            w += npay;
        } else {
            w += put_varint(o + w, n);
            memcpy(o + w, file + pos, n);
            w += n;
        }
        pos += n;
    }
    o[w++] = 0;
    uint32_t crc = memdiff__crc32(0, o, w);
    for (int i = 0; i < 4; i++)
        o[w++] = (unsigned char)(crc >> (8 * i));
    *outlen = w;
    return o;
}

static void expect_refused(const unsigned char *file, size_t len, const unsigned char *pay,
                           size_t npay, const char *detail)
{
    size_t n;
    unsigned char *bad = with_pss_section(file, len, pay, npay, &n);
    memdiff_snapshot *s = NULL;
    ck_assert_int_eq(load_bytes(bad, n, &s), MEMDIFF_EFORMAT);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(memdiff_last_error(), detail) != NULL, "%s: %s", detail,
                  memdiff_last_error());
    free(bad);
}

/* Every region's figure and the total survive save and load; a 1.0 reader's view (the section
 * dropped) has no PSS; broken sections are refused. */
START_TEST(pss_survives_save_and_load)
{
    target t;
    const char *err = target_start(&t, SHELL);
    ck_assert_msg(err == NULL, "%s", err);
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = t.pid;
    o.flags = MEMDIFF_SNAPSHOT_SMAPS_PSS;
    memdiff_snapshot *s = NULL, *l = NULL;
    ck_assert_int_eq(memdiff_snapshot_take(&o, &s), MEMDIFF_OK);
    target_end(&t);
    size_t len;
    unsigned char *file = save_bytes(s, &len);
    ck_assert_uint_eq(file[10], 1); /* format 1.1 */
    ck_assert_int_eq(load_bytes(file, len, &l), MEMDIFF_OK);
    memdiff_snapshot_info a, b;
    memdiff_snapshot_get_info(s, &a);
    memdiff_snapshot_get_info(l, &b);
    ck_assert_uint_eq(b.sources, a.sources);
    ck_assert_uint_ne(a.pss_bytes, 0);
    ck_assert_uint_eq(b.pss_bytes, a.pss_bytes);
    size_t n = memdiff_snapshot_region_count(s), carriers = 0;
    ck_assert_uint_eq(memdiff_snapshot_region_count(l), n);
    for (size_t i = 0; i < n; i++) {
        memdiff_region x, y;
        memdiff_snapshot_region(s, i, &x);
        memdiff_snapshot_region(l, i, &y);
        ck_assert_uint_eq(y.pss_bytes, x.pss_bytes);
        ck_assert_uint_eq(y.pss_end, x.pss_end);
        carriers += x.pss_end != 0;
    }
    memdiff_snapshot_free(l);

    /* The section: count, then per carrier region delta, pages to its end, kB. */
    unsigned char pay[64];
    size_t np = 0;
    memdiff_region r0, r1;
    memdiff_snapshot_region(s, 0, &r0);
    memdiff_snapshot_region(s, 1, &r1);
    uint64_t pages0 = (r0.pss_end - r0.start) / a.page_size;
    /* One carrier for the first mapping only: later regions lie in no mapping. */
    np = put_varint(pay, 1);
    np += put_varint(pay + np, 0);
    np += put_varint(pay + np, pages0);
    np += put_varint(pay + np, 0);
    if (carriers > 1)
        expect_refused(file, len, pay, np, "lies in no PSS mapping");
    /* The first region must carry one. */
    np = put_varint(pay, 1);
    np += put_varint(pay + np, 1);
    np += put_varint(pay + np, 1);
    np += put_varint(pay + np, 0);
    expect_refused(file, len, pay, np, "PSS region 1 out of range (at most 0)");
    /* A mapping that ends inside its region. */
    np = put_varint(pay, 1);
    np += put_varint(pay + np, 0);
    np += put_varint(pay + np, 0);
    np += put_varint(pay + np, 0);
    expect_refused(file, len, pay, np, "ends inside its region");
    /* 2^42 kB. */
    np = put_varint(pay, 1);
    np += put_varint(pay + np, 0);
    np += put_varint(pay + np, pages0);
    np += put_varint(pay + np, (uint64_t)1 << 42);
    expect_refused(file, len, pay, np, "PSS kB 4398046511104 out of range");
    /* No mappings; a count the bytes cannot hold. */
    np = put_varint(pay, 0);
    expect_refused(file, len, pay, np, "a PSS section without mappings");
    np = put_varint(pay, 1000);
    expect_refused(file, len, pay, np, "announces 1000 mappings");
    (void)r1;

    /* A 1.0 reader skips section 6: the same file without it loads with no PSS. */
    size_t pos = 16, w = 16;
    unsigned char *old = malloc(len);
    memcpy(old, file, 16);
    for (;;) {
        size_t at = pos, tag = varint_at(file, &pos);
        if (tag == 0)
            break;
        size_t sz = varint_at(file, &pos);
        if (tag != 6) {
            memcpy(old + w, file + at, pos - at + sz);
            w += pos - at + sz;
        }
        pos += sz;
    }
    old[w++] = 0;
    uint32_t crc = memdiff__crc32(0, old, w);
    for (int i = 0; i < 4; i++)
        old[w++] = (unsigned char)(crc >> (8 * i));
    ck_assert_int_eq(load_bytes(old, w, &l), MEMDIFF_OK);
    memdiff_snapshot_get_info(l, &b);
    ck_assert_uint_eq(b.sources & (MEMDIFF_SRC_PSS | MEMDIFF_SRC_PSS_MAPPINGS), 0);
    ck_assert_uint_eq(b.pss_bytes, 0);
    memdiff_snapshot_free(l);
    free(old);
    free(file);
    memdiff_snapshot_free(s);
}
END_TEST

Suite *pss_suite(void)
{
    Suite *s = suite_create("pss");
    TCase *tc = tcase_create("Foreign");
    tcase_set_timeout(tc, 120); /* deep snapshots of python3; sanitizer builds are slower */
    tcase_add_test(tc, shell_pss_per_mapping);
    tcase_add_test(tc, python_pss_per_mapping);
    tcase_add_test(tc, unprivileged_pss_per_mapping);
    suite_add_tcase(s, tc);
    tc = tcase_create("Self");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, self_total_excludes_own);
    tcase_add_test(tc, changed_mapping_is_noted);
    tcase_add_test(tc, unknown_flags_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("File");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, pss_survives_save_and_load);
    suite_add_tcase(s, tc);
    return s;
}
