/*
 * test_agreement.c - memdiff's figures against the kernel's own accounting, /proc/PID/smaps, for
 * processes held still: the agreement target (every category), /bin/sh waiting in `read`, and
 * python3 after imports and allocations. Also snapshots of another process by pid: categories,
 * and the statuses of a missing, exited, zombie or forbidden process.
 *
 * The rule compared (fs/proc/task_mmu.c, Linux 6.x, CONFIG_PAGE_MAPCOUNT):
 *  - smaps_pte_entry()/smaps_pmd_entry() count a present entry only when vm_normal_page() (or
 *    vm_normal_page_pmd()) gives a page: never the shared zero page or the huge zero page, never
 *    a special entry of a VM_PFNMAP mapping ([vvar]). memdiff leaves zero pages out of resident
 *    too; [vvar] pages it counts as pagemap shows them (present), so for a mapping with VmFlags
 *    "pf" the test expects smaps Rss = 0 and memdiff = the pages pagemap shows present.
 *  - smaps_account(): a page is Private_* when its folio's refcount is 1 or its precise page
 *    mapcount is below 2, else Shared_*; pagemap's exclusive bit (PM_MMAP_EXCLUSIVE) is
 *    folio_precise_page_mapcount() == 1. The same test, so Private/Shared must match exactly.
 *  - Pss adds (PAGE_SIZE << 12) / mapcount per page (PAGE_SIZE << 12 when mapcount < 2) and
 *    prints sum >> 12 >> 10 kB. As root at deep depth memdiff has kpagecount per frame, which is
 *    folio_precise_page_mapcount(), and adds the same per region: memdiff_region.pss_bytes is
 *    the region's sum >> 12. A mapping of k regions sums k values each rounded down, so its sum
 *    S is below the kernel's sum >> 12 by 0 .. k - 1 bytes: smaps' kB is S / 1024 when k is 1,
 *    and (S + d) / 1024 for some d in [0, k - 1] otherwise.
 * "The same instant": smaps is read before and after each snapshot; a mapping is compared only
 * when both readings agree. The target's own pages do not change (it waits on a pipe), but pages
 * it shares with the rest of the machine (libc, page cache) change map counts whenever another
 * process starts or exits, so a mapping whose smaps shows shared pages is retried in a later round
 * when it disagrees; a mapping with nothing shared must agree at the first stable reading.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture_tree.h"
#include "internal.h"
#include "scenario_util.h"
#include "smaps.h"
#include "suites.h"

#define ROUNDS 60
#define MAX_FEATURES 32

/* ---- target processes ------------------------------------------------------------------- */

typedef struct feature {
    char name[32];
    uint64_t start, end;
} feature;

typedef struct target {
    pid_t pid;
    int in_fd;    /* its stdin: closing it releases the target */
    FILE *out;    /* its stdout */
    feature features[MAX_FEATURES];
    size_t feature_count;
    int cow_child;
} target;

/* Starts argv with pipes on stdin and stdout and reads its lines up to "ready". NULL, or what
 * went wrong (static storage). */
static const char *target_start(target *t, char *const argv[])
{
    static char msg[512];
    memset(t, 0, sizeof *t);
    int from;
    t->pid = scn_spawn_piped(argv, &t->in_fd, &from);
    if (t->pid < 0)
        return "pipe or fork failed";
    t->out = fdopen(from, "r");
    char line[512];
    while (t->out && fgets(line, sizeof line, t->out)) {
        feature f;
        int n = 0;
        unsigned long long s, e;
        if (strncmp(line, "ready", 5) == 0)
            return NULL;
        if (sscanf(line, "cow_child %d", &n) == 1) {
            t->cow_child = n;
        } else if (sscanf(line, "%31s 0x%llx 0x%llx", f.name, &s, &e) == 3 &&
                   t->feature_count < MAX_FEATURES) {
            f.start = s;
            f.end = e;
            t->features[t->feature_count++] = f;
        }
    }
    snprintf(msg, sizeof msg, "%s exited before it was ready", argv[0]);
    return msg;
}

static void target_stop(target *t)
{
    if (t->in_fd >= 0)
        close(t->in_fd);
    t->in_fd = -1;
    for (int i = 0; i < 5000; i++) {
        int st;
        pid_t r = waitpid(t->pid, &st, WNOHANG);
        if (r == t->pid || r < 0)
            break;
        if (i == 4999) {
            kill(t->pid, SIGKILL);
            waitpid(t->pid, &st, 0);
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (t->out)
        fclose(t->out);
    t->out = NULL;
}

static const feature *target_feature(const target *t, const char *name)
{
    for (size_t i = 0; i < t->feature_count; i++)
        if (strcmp(t->features[i].name, name) == 0)
            return &t->features[i];
    return NULL;
}

/* Where the agreement target and its module are run from: the build tree, or (for a child
 * dropped to nobody, who may not reach a build tree under a private directory) copies of them. */
static char target_path[4096] = MEMDIFF_AGREEMENT_TARGET;
static char testlib_path[4096] = MEMDIFF_AGREEMENT_TESTLIB;

/* Starts the agreement target, with or without the dlopen'd module. */
static const char *own_target_start(target *t, int with_module)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", access("/var/tmp", W_OK) == 0 ? "/var/tmp" : "/tmp");
    char *argv[] = {target_path, dir, with_module ? testlib_path : NULL, NULL};
    return target_start(t, argv);
}

static void copy_executable(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    ck_assert_msg(in && out, "copy %s to %s: %s", from, to, strerror(errno));
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    ck_assert_int_eq(fclose(out), 0);
    ck_assert_int_eq(chmod(to, 0755), 0);
}

static const char PYTHON_SCRIPT[] =
    "import sys, json, decimal, sqlite3, collections, re\n"
    "ints = list(range(1000000))\n"
    "blob = bytearray(50 * 1024 * 1024)\n"
    "for i in range(0, len(blob) // 2, 4096):\n"
    "    blob[i] = 1\n"
    "db = sqlite3.connect(':memory:')\n"
    "db.execute('create table t (x)')\n"
    "db.executemany('insert into t values (?)', ((i,) for i in range(10000)))\n"
    "doc = json.dumps({'sum': str(decimal.Decimal(sum(ints)) / 7)})\n"
    "sys.stdout.write('ready\\n')\n"
    "sys.stdout.flush()\n"
    "sys.stdin.read()\n";

static const char *python_path(void)
{
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : NULL;
}

/* ---- comparing with smaps ---------------------------------------------------------------- */

typedef struct agreement {
    size_t vmas;          /* mappings compared and agreeing */
    size_t regions;       /* memdiff regions inside them */
    size_t pss_vmas;      /* of vmas, with Pss compared too */
    size_t pfnmap;        /* of vmas, under the VM_PFNMAP rule */
    size_t retried;       /* of vmas, agreeing only in a later round (shared pages changed) */
    size_t rounds;
    char *why;            /* the first disagreement, or NULL */
    int hard;             /* why is a disagreement at a stable reading, not a lack of one */
} agreement;

static void disagree(agreement *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void disagree(agreement *a, const char *fmt, ...)
{
    if (a->why)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&a->why, fmt, ap) < 0)
        a->why = NULL;
    va_end(ap);
}

/* Pages of [start, end) that the pagemap file at path shows present, read by the test itself. */
static uint64_t pagemap_present(const char *path, uint64_t start, uint64_t end)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return UINT64_MAX;
    uint64_t ps = scn_page(), n = 0;
    for (uint64_t a = start; a < end; a += ps) {
        uint64_t e = 0;
        if (pread(fd, &e, sizeof e, (off_t)(a / ps * 8)) == (ssize_t)sizeof e && (e >> 63))
            n++;
    }
    close(fd);
    return n;
}

typedef struct figures {
    uint64_t resident, private_, shared, swapped;
    uint64_t pss;       /* memdiff_region.pss_bytes summed */
    size_t regions;
} figures;

/* memdiff's figures for the mapping v: its regions must tile it exactly. Returns 0, or -1 with
 * the reason recorded. *next is the index of the first region not before v. */
static int memdiff_figures(const memdiff_snapshot *s, const smaps_vma *v, size_t *next, figures *f,
                           agreement *a)
{
    memset(f, 0, sizeof *f);
    size_t n = memdiff_snapshot_region_count(s);
    size_t i = *next;
    memdiff_region r;
    while (i < n && memdiff_snapshot_region(s, i, &r) == MEMDIFF_OK && r.end <= v->start)
        i++;
    uint64_t pos = v->start;
    while (i < n && memdiff_snapshot_region(s, i, &r) == MEMDIFF_OK && r.start < v->end) {
        if (r.start != pos || r.end > v->end) {
            disagree(a, "memdiff region 0x%llx-0x%llx '%s' does not tile mapping 0x%llx-0x%llx %s",
                      (unsigned long long)r.start, (unsigned long long)r.end, r.label,
                      (unsigned long long)v->start, (unsigned long long)v->end, v->name);
            return -1;
        }
        f->resident += r.resident_bytes;
        f->private_ += r.private_bytes;
        f->shared += r.shared_bytes;
        f->swapped += r.swapped_bytes;
        f->pss += r.pss_bytes;
        f->regions++;
        pos = r.end;
        i++;
    }
    *next = i;
    if (pos != v->end) {
        disagree(a, "memdiff regions cover 0x%llx-0x%llx of mapping 0x%llx-0x%llx %s",
                  (unsigned long long)v->start, (unsigned long long)pos,
                  (unsigned long long)v->start, (unsigned long long)v->end, v->name);
        return -1;
    }
    return 0;
}

#define KB(x) ((unsigned long long)((x) / 1024))

/* Compares one mapping; 0 when it agrees, else -1 with the reason (in why, not yet recorded). */
static int compare_vma(const char *pagemap, const smaps_vma *v, const figures *f,
                       memdiff_depth depth, int with_pss, int *pfnmap, char *why, size_t size)
{
    uint64_t shared = v->shared_clean + v->shared_dirty;
    uint64_t priv = v->private_clean + v->private_dirty;
    *pfnmap = smaps_has_flag(v, "pf");
    if (*pfnmap) {
        /* VM_PFNMAP: vm_normal_page() gives no page, smaps counts nothing; memdiff counts what
         * pagemap shows present, none of it exclusive (pagemap's test needs a page too). */
        uint64_t present = pagemap_present(pagemap, v->start, v->end) * scn_page();
        if (v->rss != 0 || f->resident != present ||
            (depth > MEMDIFF_DEPTH_FAST && f->private_ != 0) || f->swapped != v->swap) {
            snprintf(why, size,
                     "VM_PFNMAP mapping 0x%llx-0x%llx %s: smaps Rss %llu kB (want 0); memdiff "
                     "resident %llu kB, pagemap present %llu kB, private %llu kB",
                     (unsigned long long)v->start, (unsigned long long)v->end, v->name,
                     KB(v->rss), KB(f->resident), KB(present), KB(f->private_));
            return -1;
        }
        return 0;
    }
    uint64_t pss_kb = f->pss / 1024; /* the regions' rounding: the comment at the top */
    int pss_ok = pss_kb == v->pss / 1024 || (f->pss + f->regions - 1) / 1024 == v->pss / 1024;
    /* Fast depth has no exclusivity: its private / shared split is an estimate (memdiff.h). */
    int split = depth > MEMDIFF_DEPTH_FAST;
    if (f->resident != v->rss || (split && (f->private_ != priv || f->shared != shared)) ||
        f->swapped != v->swap || (with_pss ? !pss_ok : f->pss != 0)) {
        snprintf(why, size,
                 "mapping 0x%llx-0x%llx %s %s: smaps Rss %llu Private %llu Shared %llu Swap %llu "
                 "Pss %llu kB; memdiff resident %llu private %llu shared %llu swapped %llu "
                 "pss %llu kB (%zu regions)",
                 (unsigned long long)v->start, (unsigned long long)v->end, v->perms, v->name,
                 KB(v->rss), KB(priv), KB(shared), KB(v->swap), KB(v->pss), KB(f->resident),
                 KB(f->private_), KB(f->shared), KB(f->swapped),
                 with_pss ? (unsigned long long)pss_kb : 0ull, f->regions);
        return -1;
    }
    return 0;
}

/* The run time of all the process's threads in ns (task/TID/schedstat, first field: the
 * scheduler's sum_exec_runtime; Documentation/scheduler/sched-stats.rst) and how many threads
 * there are; -1 when a thread is running right now. When both readings succeed and agree, no
 * thread ran meanwhile, so the process cannot have changed its own memory. (utime and stime
 * tick in 10 ms: too coarse.) */
static int quiet_mark(int pid, unsigned long long *runtime, char *threads)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", pid);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    unsigned long long sum = 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[400];
        unsigned long long ns = 0;
        snprintf(path, sizeof path, "%s/%s/schedstat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        int ok = f && fscanf(f, "%llu", &ns) == 1;
        if (f)
            fclose(f);
        /* A thread on a CPU now has run time not yet added up (the scheduler adds it at a
         * tick or a switch): its state, R, tells. */
        char buf[512] = "";
        snprintf(path, sizeof path, "%s/%s/stat", dir, e->d_name);
        f = fopen(path, "r");
        if (f) {
            size_t len = fread(buf, 1, sizeof buf - 1, f);
            buf[len] = '\0';
            fclose(f);
        }
        const char *rp = strrchr(buf, ')');
        if (!ok || !rp || rp[1] != ' ' || rp[2] == 'R') {
            closedir(d);
            return -1;
        }
        sum += ns;
        n++;
    }
    closedir(d);
    *runtime = sum;
    *threads = (char)n;
    return 0;
}

/* Rounds of smaps / snapshot / smaps until every mapping agreed at a stable reading, or until a
 * mapping that cannot change disagreed, or ROUNDS ran out. */
static void agree(int pid, memdiff_depth depth, agreement *a)
{
    memset(a, 0, sizeof *a);
    smaps first;
    if (smaps_read(pid, &first) != 0) {
        disagree(a, "cannot read /proc/%d/smaps", pid);
        return;
    }
    size_t total = first.count;
    uint64_t *done = calloc(total ? total : 1, sizeof *done); /* starts of agreed mappings */
    size_t ndone = 0;
    smaps_free(&first);
    char why[1024] = "", pagemap[64];
    snprintf(pagemap, sizeof pagemap, "/proc/%d/pagemap", pid);
    for (int round = 0; round < ROUNDS && ndone < total && !a->why; round++) {
        a->rounds++;
        smaps before, after;
        memdiff_snapshot *s = NULL;
        memdiff_options o = MEMDIFF_OPTIONS_INIT;
        o.pid = pid;
        o.depth = depth;
        unsigned long long t0 = 0, t1 = 1;
        char st0 = 0, st1 = 1;
        if (round > 0) {
            struct timespec ms = {0, 2000000}; /* let a process that ran settle again */
            nanosleep(&ms, NULL);
        }
        if (quiet_mark(pid, &t0, &st0) != 0) {
            snprintf(why, sizeof why, "the process was running at the start of the round");
            continue;
        }
        if (smaps_read(pid, &before) != 0) {
            disagree(a, "cannot read /proc/%d/smaps", pid);
            break;
        }
        int rc = memdiff_snapshot_take(&o, &s);
        if (rc != MEMDIFF_OK) {
            disagree(a, "snapshot of %d: %s: %s", pid, memdiff_status_name(rc),
                     memdiff_last_error());
            smaps_free(&before);
            break;
        }
        memdiff_snapshot_info info;
        memdiff_snapshot_get_info(s, &info);
        /* PSS is known exactly where map counts are: deep depth, and only there. */
        int with_pss = (info.sources & MEMDIFF_SRC_PSS) != 0;
        if (with_pss != (info.depth == MEMDIFF_DEPTH_DEEP))
            disagree(a, "%s snapshot of %d: MEMDIFF_SRC_PSS %s", memdiff_depth_name(info.depth),
                     pid, with_pss ? "set" : "not set");
        if (smaps_read(pid, &after) != 0 || after.count != before.count ||
            quiet_mark(pid, &t1, &st1) != 0 || t1 != t0 || st1 != st0) {
            snprintf(why, sizeof why, "the process ran during the round (or changed its maps)");
            smaps_free(&before);
            smaps_free(&after);
            memdiff_snapshot_free(s);
            continue; /* the mapping list changed: not this target, but retry */
        }
        size_t next = 0;
        for (size_t i = 0; i < before.count && !a->why; i++) {
            const smaps_vma *v = &before.vma[i];
            int seen = 0;
            for (size_t k = 0; k < ndone; k++)
                seen |= done[k] == v->start;
            figures f;
            if (memdiff_figures(s, v, &next, &f, a) != 0) {
                a->hard = 1;
                break;
            }
            if (seen)
                continue;
            if (!smaps_vma_equal(v, &after.vma[i])) {
                snprintf(why, sizeof why, "0x%llx-0x%llx %s: smaps changed across the snapshot",
                         (unsigned long long)v->start, (unsigned long long)v->end, v->name);
                continue;
            }
            int pfnmap = 0;
            if (compare_vma(pagemap, v, &f, depth, with_pss, &pfnmap, why, sizeof why) != 0) {
                /* Only pages shared with other processes can change while the target waits. */
                if (v->shared_clean + v->shared_dirty == 0 && v->pss == v->rss) {
                    disagree(a, "%s", why);
                    a->hard = 1;
                }
                continue;
            }
            if (ndone < total)
                done[ndone++] = v->start;
            a->vmas++;
            a->regions += f.regions;
            a->pss_vmas += with_pss && !pfnmap;
            a->pfnmap += pfnmap;
            a->retried += round > 0;
        }
        /* Every memdiff region belongs to a mapping smaps lists. */
        if (!a->why && next != memdiff_snapshot_region_count(s)) {
            memdiff_region r;
            memdiff_snapshot_region(s, next, &r);
            disagree(a, "memdiff region 0x%llx-0x%llx '%s' is in no smaps mapping",
                     (unsigned long long)r.start, (unsigned long long)r.end, r.label);
        }
        smaps_free(&before);
        smaps_free(&after);
        memdiff_snapshot_free(s);
    }
    if (!a->why && ndone < total)
        disagree(a, "%zu of %zu mappings never agreed in %d rounds; last: %s", total - ndone,
                  total, ROUNDS, why[0] ? why : "smaps never stable");
    free(done);
}

static void print_agreement(const char *what, const char *user, memdiff_depth depth,
                            const agreement *a)
{
    printf("agreement: %-22s %-6s %-8s %3zu mappings agree exactly (%zu memdiff regions; "
           "Pss in %zu; VM_PFNMAP rule %zu; %zu after a retry; %zu rounds)\n",
           what, user, memdiff_depth_name(depth), a->vmas, a->regions, a->pss_vmas, a->pfnmap,
           a->retried, a->rounds);
    fflush(stdout);
}

/* Agreement of one started target at the given depths; NULL or the first disagreement. */
static const char *agree_target(target *t, const char *what, const char *user,
                                const memdiff_depth *depths, size_t ndepths)
{
    static char msg[2048];
    for (size_t i = 0; i < ndepths; i++) {
        agreement a;
        agree(t->pid, depths[i], &a);
        if (a.why) {
            snprintf(msg, sizeof msg, "%s (%s, %s): %s", what, user,
                     memdiff_depth_name(depths[i]), a.why);
            free(a.why);
            return msg;
        }
        if (a.vmas == 0) {
            snprintf(msg, sizeof msg, "%s: no mapping compared", what);
            return msg;
        }
        print_agreement(what, user, depths[i], &a);
    }
    return NULL;
}

/* ---- agreement tests --------------------------------------------------------------------- */

static const memdiff_depth ROOT_DEPTHS[] = {MEMDIFF_DEPTH_FAST, MEMDIFF_DEPTH_STANDARD,
                                            MEMDIFF_DEPTH_DEEP};
static const memdiff_depth USER_DEPTHS[] = {MEMDIFF_DEPTH_STANDARD};

static const char *user_name(void)
{
    return geteuid() == 0 ? "root" : "user";
}

START_TEST(own_target_agrees)
{
    target t;
    const char *err = own_target_start(&t, 1);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
    err = agree_target(&t, "agreement_target", user_name(), ROOT_DEPTHS, 3);
    if (!err && t.cow_child > 0) {
        /* The copy-on-write child shares the target's pages: Shared and Pss from the other side. */
        target c = t;
        c.pid = t.cow_child;
        err = agree_target(&c, "agreement_target child", user_name(), ROOT_DEPTHS + 2, 1);
    }
    target_stop(&t);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
}
END_TEST

START_TEST(shell_agrees)
{
    char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)"echo ready $$; read line", NULL};
    target t;
    const char *err = target_start(&t, argv);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
    err = agree_target(&t, "/bin/sh (read)", user_name(), ROOT_DEPTHS, 3);
    target_stop(&t);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
}
END_TEST

START_TEST(python_agrees)
{
    const char *py = python_path();
    if (!py) {
        printf("agreement: no /usr/bin/python3; python target skipped\n");
        return;
    }
    char *argv[] = {(char *)py, (char *)"-c", (char *)PYTHON_SCRIPT, NULL};
    target t;
    const char *err = target_start(&t, argv);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
    err = agree_target(&t, "python3 (imports, 50 MB)", user_name(), ROOT_DEPTHS + 1, 2);
    target_stop(&t);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
}
END_TEST

/* Unprivileged: a child dropped to nobody starts each target as nobody and compares at standard
 * depth (no frame numbers, so no Pss). */
static const char *unprivileged_all(void *arg)
{
    (void)arg;
    target t;
    const char *err = own_target_start(&t, 1);
    if (err)
        return err;
    err = agree_target(&t, "agreement_target", "nobody", USER_DEPTHS, 1);
    target_stop(&t);
    if (err)
        return err;
    char *sh[] = {(char *)"/bin/sh", (char *)"-c", (char *)"echo ready $$; read line", NULL};
    if ((err = target_start(&t, sh)) != NULL)
        return err;
    err = agree_target(&t, "/bin/sh (read)", "nobody", USER_DEPTHS, 1);
    target_stop(&t);
    if (err || !python_path())
        return err;
    char *py[] = {(char *)python_path(), (char *)"-c", (char *)PYTHON_SCRIPT, NULL};
    if ((err = target_start(&t, py)) != NULL)
        return err;
    err = agree_target(&t, "python3 (imports, 50 MB)", "nobody", USER_DEPTHS, 1);
    target_stop(&t);
    return err;
}

START_TEST(unprivileged_agrees)
{
    if (geteuid() != 0) {
        printf("agreement: not root; the other tests ran unprivileged already\n");
        return;
    }
    char dir[] = "/tmp/memdiff-agreement-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chmod(dir, 0755), 0);
    snprintf(target_path, sizeof target_path, "%s/memdiff_agreement_target", dir);
    snprintf(testlib_path, sizeof testlib_path, "%s/libmemdiff_plain_testlib.so", dir);
    copy_executable(MEMDIFF_AGREEMENT_TARGET, target_path);
    copy_executable(MEMDIFF_AGREEMENT_TESTLIB, testlib_path);
    const char *err = scn_as_nobody(unprivileged_all, NULL);
    unlink(target_path);
    unlink(testlib_path);
    rmdir(dir);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
}
END_TEST

/* ---- another process by pid --------------------------------------------------------------- */

static memdiff_snapshot *snap_pid(int pid, memdiff_depth depth)
{
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = pid;
    o.depth = depth;
    memdiff_snapshot *s = NULL;
    int rc = memdiff_snapshot_take(&o, &s);
    ck_assert_msg(rc == MEMDIFF_OK, "snapshot of %d: %s: %s", pid, memdiff_status_name(rc),
                  memdiff_last_error());
    return s;
}

/* The region holding the feature's first byte, with its category and label checked, and its
 * resident / private page counts over the whole feature (which may span regions). */
static void expect_feature(const memdiff_snapshot *s, const target *t, const char *name,
                           memdiff_category cat, const char *label, long resident, long priv)
{
    const feature *f = target_feature(t, name);
    ck_assert_msg(f != NULL, "the target reported no '%s'", name);
    memdiff_region r;
    ck_assert_int_eq(memdiff_snapshot_find(s, f->start, &r), MEMDIFF_OK);
    ck_assert_msg(r.category == cat, "%s at 0x%llx: category %s, want %s ('%s')", name,
                  (unsigned long long)f->start, memdiff_category_name(r.category),
                  memdiff_category_name(cat), r.label);
    ck_assert_msg(strstr(r.label, label) != NULL, "%s: label '%s' lacks '%s'", name, r.label,
                  label);
    if (resident < 0)
        return;
    /* Pages inside the feature, from the snapshot's runs (a region may hold more than it). */
    uint64_t ps = scn_page(), res = 0, pv = 0;
    memdiff__runs_iter it;
    memdiff__run cur;
    const memdiff__run *run = &cur;
    for (memdiff__runs_begin(s, &it); memdiff__runs_next(&it, &cur);) {
        for (uint64_t p = 0; p < run->npages; p++) {
            uint64_t a = run->start + p * ps;
            if (a < f->start || a >= f->end || !memdiff__attrs_resident(run->attrs))
                continue;
            res++;
            pv += (run->attrs & MEMDIFF_PAGE_PRIVATE) != 0;
        }
    }
    ck_assert_msg(res == (uint64_t)resident && pv == (uint64_t)priv,
                  "%s: %llu resident (%llu private) pages, want %ld (%ld)", name,
                  (unsigned long long)res, (unsigned long long)pv, resident, priv);
}

/* How many threads listed in the task directory have a Stack region labelled with their tid. */
static size_t count_stacks(const memdiff_snapshot *s, const char *dir)
{
    size_t found = 0, n = memdiff_snapshot_region_count(s);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char label[300];
        snprintf(label, sizeof label, "thread %s", e->d_name);
        for (size_t i = 0; i < n; i++) {
            memdiff_region r;
            memdiff_snapshot_region(s, i, &r);
            if (r.category == MEMDIFF_CAT_STACK && strcmp(r.label, label) == 0) {
                found++;
                break;
            }
        }
    }
    closedir(d);
    return found;
}

/* Every category of another process, with exact page counts where the target fixes them. */
START_TEST(other_process_categories)
{
    target t;
    const char *err = own_target_start(&t, 1);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
    memdiff_snapshot *s = snap_pid(t.pid, MEMDIFF_DEPTH_STANDARD);
    memdiff_snapshot_info info;
    memdiff_snapshot_get_info(s, &info);
    ck_assert_int_eq(info.pid, t.pid);
    unsigned want = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_THREADS |
                    MEMDIFF_SRC_HEAPS | MEMDIFF_SRC_MODULES | MEMDIFF_SRC_PROCESS_TOTALS;
    ck_assert_msg((info.sources & want) == want, "sources 0x%x", info.sources);
    ck_assert_uint_gt(info.totals.vm_rss, 0);

    expect_feature(s, &t, "module_bss", MEMDIFF_CAT_IMAGE, "libmemdiff_plain_testlib.so", 3, 3);
    expect_feature(s, &t, "brk_block", MEMDIFF_CAT_HEAP, "[heap]", -1, -1);
    expect_feature(s, &t, "mmap_chunk", MEMDIFF_CAT_HEAP, "malloc mmap chunk", -1, -1);
    expect_feature(s, &t, "arena_block", MEMDIFF_CAT_HEAP, "malloc arena 0x", -1, -1);
    const feature *file = target_feature(&t, "file");
    ck_assert_ptr_nonnull(file);
    char path[64];
    snprintf(path, sizeof path, "memdiff-agreement-%d.dat", (int)t.pid);
    expect_feature(s, &t, "file", MEMDIFF_CAT_MAPPED_FILE, path, -1, -1);
    expect_feature(s, &t, "shared_anon", MEMDIFF_CAT_SHARED, "shared anonymous", 5, 5);
    expect_feature(s, &t, "memfd", MEMDIFF_CAT_SHARED, "/memfd:memdiff-agreement", 3, 3);
    expect_feature(s, &t, "sysv", MEMDIFF_CAT_SHARED, "/SYSV", 4, 4);
    expect_feature(s, &t, "private", MEMDIFF_CAT_PRIVATE, "anonymous", 10, 10);
    /* 16 pages read: the zero page, not resident; where the kernel maps no zero page
     * (scn_zero_page_on_read), 16 pages of the target's own. */
    const long zero = scn_zero_page_on_read() ? 0 : 16;
    expect_feature(s, &t, "zero", MEMDIFF_CAT_PRIVATE, "anonymous", zero, zero);
    expect_feature(s, &t, "dontneed", MEMDIFF_CAT_PRIVATE, "anonymous", 10, 10);
    /* 12 pages still shared with the copy-on-write child, 4 the child rewrote. */
    expect_feature(s, &t, "cow", MEMDIFF_CAT_PRIVATE, "anonymous", 16, 4);
    /* A transparent huge page: 512 resident pages of one folio (when the kernel gave one). The
     * huge region only read maps the huge zero page, not resident; where the kernel maps no
     * zero page, a huge page of its own or one small page, as a write would. */
    smaps sm;
    ck_assert_int_eq(smaps_read(t.pid, &sm), 0);
    long huge[2];
    for (int i = 0; i < 2; i++) {
        const feature *hf = target_feature(&t, i ? "hugezero" : "thp");
        const smaps_vma *tv = smaps_find(&sm, hf->start);
        ck_assert_ptr_nonnull(tv);
        huge[i] = (long)(tv->anon_huge / scn_page());
        huge[i] = huge[i] ? huge[i] : 1;
    }
    smaps_free(&sm);
    expect_feature(s, &t, "thp", MEMDIFF_CAT_PRIVATE, "anonymous", huge[0], huge[0]);
    const long hugezero = zero ? huge[1] : 0;
    expect_feature(s, &t, "hugezero", MEMDIFF_CAT_PRIVATE, "anonymous", hugezero, hugezero);
    /* main thread ([stack]), the arena thread and the idle thread */
    char task[64];
    snprintf(task, sizeof task, "/proc/%d/task", (int)t.pid);
    ck_assert_uint_eq(count_stacks(s, task), 3);
    memdiff_region r;
    int special = 0;
    for (size_t i = 0; i < memdiff_snapshot_region_count(s); i++) {
        memdiff_snapshot_region(s, i, &r);
        special |= r.category == MEMDIFF_CAT_SPECIAL && strcmp(r.label, "[vdso]") == 0;
    }
    ck_assert_msg(special, "no [vdso] region");
    memdiff_snapshot_free(s);
    target_stop(&t);
}
END_TEST

static int wait_state(pid_t pid, char want)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    for (int i = 0; i < 5000; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            const char *rp = strrchr(buf, ')');
            if (rp && rp[1] == ' ' && rp[2] == want)
                return 1;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}

static void expect_status(int pid, int status, const char *detail)
{
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = pid;
    memdiff_snapshot *s = (memdiff_snapshot *)&o; /* must be reset to NULL */
    int rc = memdiff_snapshot_take(&o, &s);
    ck_assert_msg(rc == status, "pid %d: %s (%s), want %s", pid, memdiff_status_name(rc),
                  memdiff_last_error(), memdiff_status_name(status));
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(memdiff_last_error(), detail) != NULL, "pid %d: detail '%s' lacks '%s'",
                  pid, memdiff_last_error(), detail);
}

static const char *read_init_as_nobody(void *arg)
{
    (void)arg;
    static char msg[512];
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = 1;
    memdiff_snapshot *s = NULL;
    int rc = memdiff_snapshot_take(&o, &s);
    if (rc == MEMDIFF_EACCES && s == NULL && strstr(memdiff_last_error(), "/proc/1/maps"))
        return NULL;
    snprintf(msg, sizeof msg, "pid 1 as nobody: %s (%s), want MEMDIFF_EACCES naming /proc/1/maps",
             memdiff_status_name(rc), memdiff_last_error());
    memdiff_snapshot_free(s);
    return msg;
}

/* Missing and exited processes are MEMDIFF_ESRCH, a zombie included (it has no memory left to
 * read: its maps read empty, and a snapshot of nothing would pass for an empty process); a
 * process the caller may not read is MEMDIFF_EACCES. Each with a detail naming the process. */
START_TEST(process_statuses)
{
    char name[32];
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0)
        _exit(0);
    ck_assert(wait_state(c, 'Z'));
    snprintf(name, sizeof name, "/proc/%d", (int)c);
    expect_status(c, MEMDIFF_ESRCH, name);
    ck_assert_int_eq(waitpid(c, NULL, 0), c);
    expect_status(c, MEMDIFF_ESRCH, name);
    const char *err = scn_as_nobody(read_init_as_nobody, NULL);
    ck_assert_msg(err == NULL, "%s", err ? err : "");
}
END_TEST

/* ---- every process on the machine -------------------------------------------------------- */

typedef struct sweep {
    int processes, ok, kernel, exited, denied, quiet, busy;
    size_t vmas, regions;
} sweep;

/* Snapshots every process in /proc: each one is OK, MEMDIFF_ESRCH (exited meanwhile),
 * MEMDIFF_ENOTSUP (a kernel thread) or MEMDIFF_EACCES (when allowed), with a detail; an OK one
 * is compared with smaps whenever the process stayed quiet (did not run) across a round, and
 * must then agree exactly. NULL, or what went wrong. */
static const char *sweep_machine(sweep *w, int eacces_ok)
{
    static char msg[2048];
    memset(w, 0, sizeof *w);
    DIR *d = opendir("/proc");
    if (!d)
        return "cannot list /proc";
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int pid = atoi(e->d_name);
        if (pid <= 0 || pid == (int)getpid())
            continue;
        w->processes++;
        memdiff_options o = MEMDIFF_OPTIONS_INIT;
        o.pid = pid;
        memdiff_snapshot *s = NULL;
        int rc = memdiff_snapshot_take(&o, &s);
        memdiff_snapshot_free(s);
        const char *detail = memdiff_last_error();
        if (rc == MEMDIFF_ENOTSUP && strstr(detail, "kernel thread")) {
            w->kernel++;
            continue;
        }
        if (rc == MEMDIFF_ESRCH && detail[0]) {
            w->exited++;
            continue;
        }
        if (rc == MEMDIFF_EACCES && eacces_ok && detail[0]) {
            w->denied++;
            continue;
        }
        if (rc != MEMDIFF_OK) {
            snprintf(msg, sizeof msg, "pid %d: %s (%s)", pid, memdiff_status_name(rc), detail);
            closedir(d);
            return msg;
        }
        w->ok++;
        agreement a;
        agree(pid, MEMDIFF_DEPTH_STANDARD, &a);
        if (a.hard) {
            snprintf(msg, sizeof msg, "pid %d: %s", pid, a.why);
            free(a.why);
            closedir(d);
            return msg;
        }
        if (a.why)
            w->busy++; /* it ran, or exited, in every round: not comparable */
        else
            w->quiet++;
        free(a.why);
        w->vmas += a.vmas;
        w->regions += a.regions;
    }
    closedir(d);
    return NULL;
}

static void print_sweep(const char *user, const sweep *w)
{
    printf("agreement: every process as %-6s %d processes: %d snapshots (%d agree exactly in %zu "
           "mappings, %zu regions; %d never held still), %d kernel threads, %d exited, "
           "%d denied\n", user, w->processes, w->ok, w->quiet, w->vmas, w->regions, w->busy,
           w->kernel, w->exited, w->denied);
    fflush(stdout);
}

static const char *sweep_as_nobody(void *arg)
{
    (void)arg;
    sweep w;
    const char *err = sweep_machine(&w, 1);
    if (!err)
        print_sweep("nobody", &w);
    return err;
}

/* Whatever runs on this machine: never a crash, a clean status for each process, and exact
 * agreement for each process that held still. As root, and as nobody (other users' processes
 * are then MEMDIFF_EACCES; root can be denied too, in a container whose init is not its own). */
START_TEST(every_process)
{
    sweep w;
    const char *err = sweep_machine(&w, 1); /* root may be denied too: pid 1 here */
    ck_assert_msg(err == NULL, "%s", err ? err : "");
    print_sweep(user_name(), &w);
    ck_assert_int_gt(w.ok, 0);
    if (geteuid() == 0) {
        err = scn_as_nobody(sweep_as_nobody, NULL);
        ck_assert_msg(err == NULL, "%s", err ? err : "");
    }
}
END_TEST

/* ---- the recorded tree (tests/fixtures/recorded/README.md) ------------------------------- */

#define RECORDED_PID 4194305

static void load_features(const char *path, target *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    char line[512];
    while (fgets(line, sizeof line, f)) {
        feature x;
        unsigned long long a, b;
        if (line[0] != '#' && sscanf(line, "%31s 0x%llx 0x%llx", x.name, &a, &b) == 3 &&
            t->feature_count < MAX_FEATURES) {
            x.start = a;
            x.end = b;
            t->features[t->feature_count++] = x;
        }
    }
    fclose(f);
}

static memdiff_snapshot *snap_tree(const char *root, memdiff_depth depth)
{
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = RECORDED_PID;
    o.fixture_root = root; /* /proc as root, /sys as root/sys */
    o.depth = depth;
    memdiff_snapshot *s = NULL;
    int rc = memdiff_snapshot_take(&o, &s);
    ck_assert_msg(rc == MEMDIFF_OK, "snapshot of the recorded tree (%s): %s: %s",
                  memdiff_depth_name(depth), memdiff_status_name(rc), memdiff_last_error());
    return s;
}

/* Resident pages of [start, end) that the snapshot's runs mark as the zero page (deep: from
 * kpageflags KPF_ZERO_PAGE). */
static uint64_t zero_pages(const memdiff_snapshot *s, uint64_t start, uint64_t end)
{
    uint64_t n = 0;
    memdiff__runs_iter it;
    memdiff__run cur;
    const memdiff__run *r = &cur;
    for (memdiff__runs_begin(s, &it); memdiff__runs_next(&it, &cur);) {
        if ((r->attrs & MEMDIFF_PAGE_ZERO) && (r->attrs & MEMDIFF_PAGE_PRESENT) &&
            r->start >= start && r->start < end)
            n += r->npages;
    }
    return n;
}

/* The recorded tree: the agreement target's /proc files from a real 6.18 kernel, read through
 * fixture_root. At deep depth (frames, kpageflags, kpagecount from the tree) every mapping agrees
 * with the smaps recorded at the same instant, Pss included. Standard and fast depth have no way
 * to tell the zero page in a tree (no PAGEMAP_SCAN on a plain file, and the zero page's frame is
 * learned from the live process): they count those entries as resident shared pages, exactly
 * as many as kpageflags marks KPF_ZERO_PAGE. Without a mem file the heaps cannot be read (only
 * [heap] is Heap), modules come from their regions, stacks from task/TID/syscall. */
START_TEST(recorded_tree)
{
    char err[512];
    char *root = fixture_tree_expand(MEMDIFF_TEST_FIXTURES "/recorded", err, sizeof err);
    ck_assert_msg(root != NULL, "%s", err);
    char path[4096];
    target t;
    snprintf(path, sizeof path, "%s/features.txt", root);
    load_features(path, &t);
    smaps sm;
    snprintf(path, sizeof path, "%s/%d/smaps", root, RECORDED_PID);
    ck_assert_int_eq(smaps_read_file(path, &sm), 0);
    char pagemap[4096];
    snprintf(pagemap, sizeof pagemap, "%s/%d/pagemap", root, RECORDED_PID);

    memdiff_snapshot *deep = snap_tree(root, MEMDIFF_DEPTH_DEEP);
    memdiff_snapshot_info info;
    memdiff_snapshot_get_info(deep, &info);
    ck_assert_int_eq(info.depth, MEMDIFF_DEPTH_DEEP);
    ck_assert_int_eq(info.pid, RECORDED_PID);
    unsigned want = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_FRAMES |
                    MEMDIFF_SRC_PAGE_FLAGS | MEMDIFF_SRC_MAP_COUNTS | MEMDIFF_SRC_THREADS |
                    MEMDIFF_SRC_PROCESS_TOTALS | MEMDIFF_SRC_MODULES | MEMDIFF_SRC_PSS;
    ck_assert_uint_eq(info.sources, want);
    ck_assert_uint_gt(info.totals.vm_rss, 0); /* from the recorded status */

    memdiff_snapshot *depths[3] = {snap_tree(root, MEMDIFF_DEPTH_FAST),
                                   snap_tree(root, MEMDIFF_DEPTH_STANDARD), deep};
    agreement a;
    memset(&a, 0, sizeof a);
    size_t next[3] = {0, 0, 0}, zero_vmas = 0;
    for (size_t i = 0; i < sm.count && !a.why; i++) {
        const smaps_vma *v = &sm.vma[i];
        figures f[3];
        for (int d = 0; d < 3; d++)
            ck_assert_int_eq(memdiff_figures(depths[d], v, &next[d], &f[d], &a), 0);
        int pfnmap = 0;
        char why[1024];
        ck_assert_msg(compare_vma(pagemap, v, &f[2], MEMDIFF_DEPTH_DEEP, 1, &pfnmap, why,
                                  sizeof why) == 0, "recorded tree, deep: %s", why);
        a.vmas++;
        a.regions += f[2].regions;
        a.pfnmap += pfnmap;
        a.pss_vmas += !pfnmap;
        uint64_t z = zero_pages(deep, v->start, v->end) * scn_page();
        zero_vmas += z > 0;
        for (int d = 0; d < 2; d++) {
            ck_assert_msg(f[d].resident == f[2].resident + z && f[d].swapped == f[2].swapped,
                          "%s 0x%llx %s: resident %llu, deep %llu + %llu zero",
                          memdiff_depth_name((memdiff_depth)d),
                          (unsigned long long)v->start, v->name, KB(f[d].resident),
                          KB(f[2].resident), KB(z));
        }
        ck_assert_msg(f[1].private_ == f[2].private_ && f[1].shared == f[2].shared + z,
                      "standard 0x%llx %s: private %llu shared %llu, deep %llu %llu + %llu zero",
                      (unsigned long long)v->start, v->name, KB(f[1].private_), KB(f[1].shared),
                      KB(f[2].private_), KB(f[2].shared), KB(z));
    }
    ck_assert_msg(a.why == NULL, "%s", a.why ? a.why : "");
    ck_assert_uint_eq(next[2], memdiff_snapshot_region_count(deep));
    ck_assert_uint_gt(zero_vmas, 0);
    print_agreement("recorded tree", "root", MEMDIFF_DEPTH_DEEP, &a);

    /* Classification, with the fallbacks a tree without mem leaves. */
    expect_feature(deep, &t, "module_bss", MEMDIFF_CAT_IMAGE, "libmemdiff_testlib", 3, 3);
    expect_feature(deep, &t, "brk_block", MEMDIFF_CAT_HEAP, "[heap]", -1, -1);
    expect_feature(deep, &t, "mmap_chunk", MEMDIFF_CAT_PRIVATE, "anonymous", -1, -1);
    expect_feature(deep, &t, "arena_block", MEMDIFF_CAT_PRIVATE, "anonymous", -1, -1);
    expect_feature(deep, &t, "file", MEMDIFF_CAT_MAPPED_FILE, "memdiff-agreement-", -1, -1);
    expect_feature(deep, &t, "shared_anon", MEMDIFF_CAT_SHARED, "shared anonymous", 5, 5);
    expect_feature(deep, &t, "memfd", MEMDIFF_CAT_SHARED, "/memfd:memdiff-agreement", 3, 3);
    expect_feature(deep, &t, "sysv", MEMDIFF_CAT_SHARED, "/SYSV", 4, 4);
    expect_feature(deep, &t, "private", MEMDIFF_CAT_PRIVATE, "anonymous", 10, 10);
    expect_feature(deep, &t, "zero", MEMDIFF_CAT_PRIVATE, "anonymous", 0, 0);
    expect_feature(depths[1], &t, "zero", MEMDIFF_CAT_PRIVATE, "anonymous", 16, 0);
    expect_feature(deep, &t, "dontneed", MEMDIFF_CAT_PRIVATE, "anonymous", 10, 10);
    expect_feature(deep, &t, "cow", MEMDIFF_CAT_PRIVATE, "anonymous", 16, 4);
    expect_feature(deep, &t, "thp", MEMDIFF_CAT_PRIVATE, "anonymous", 512, 512);
    expect_feature(deep, &t, "hugezero", MEMDIFF_CAT_PRIVATE, "anonymous", 0, 0);
    snprintf(path, sizeof path, "%s/%d/task", root, RECORDED_PID);
    ck_assert_uint_eq(count_stacks(deep, path), 3);

    /* page_idle/bitmap (constructed): one bit per frame, 64-bit little-endian words; the
     * "private" feature's written pages 0, 2, 4, 6, 8 are idle, 1, 3, 5, 7, 9 are not. */
    snprintf(path, sizeof path, "%s/sys/kernel/mm/page_idle/bitmap", root);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    const feature *priv = target_feature(&t, "private");
    ck_assert_ptr_nonnull(priv);
    int idle_seen = 0;
    memdiff__runs_iter it;
    memdiff__run cur;
    const memdiff__run *r = &cur;
    for (memdiff__runs_begin(deep, &it); memdiff__runs_next(&it, &cur);) {
        for (uint64_t k = 0; k < r->npages; k++) {
            uint64_t addr = r->start + k * scn_page();
            if (addr < priv->start || addr >= priv->end)
                continue;
            uint64_t pfn = memdiff__seq_get(&deep->frames, r->aux + k), word = 0;
            ck_assert_int_eq(pread(fd, &word, 8, (off_t)(pfn / 64 * 8)), 8);
            int idle = (int)((word >> (pfn % 64)) & 1);
            ck_assert_msg(idle == ((addr - priv->start) / scn_page() % 2 == 0),
                          "page %llu of 'private' (frame 0x%llx): idle bit %d",
                          (unsigned long long)((addr - priv->start) / scn_page()),
                          (unsigned long long)pfn, idle);
            idle_seen += idle;
        }
    }
    ck_assert_int_eq(idle_seen, 5);
    close(fd);
    for (int d = 0; d < 3; d++)
        memdiff_snapshot_free(depths[d]);
    smaps_free(&sm);
    fixture_tree_remove(root);
}
END_TEST

Suite *agreement_suite(void)
{
    Suite *s = suite_create("agreement");
    TCase *tc = tcase_create("Smaps");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, own_target_agrees);
    tcase_add_test(tc, shell_agrees);
    tcase_add_test(tc, python_agrees);
    tcase_add_test(tc, unprivileged_agrees);
    tcase_add_test(tc, every_process);
    suite_add_tcase(s, tc);
    tc = tcase_create("Pid");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, other_process_categories);
    tcase_add_test(tc, process_statuses);
    suite_add_tcase(s, tc);
    tc = tcase_create("Recorded");
    tcase_add_test(tc, recorded_tree);
    suite_add_tcase(s, tc);
    return s;
}
