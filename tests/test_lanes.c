/*
 * test_lanes.c - a snapshot of another process read on more than one thread (lanes.c) stores
 * exactly what a snapshot read on the calling thread alone stores: the same runs, bitmaps and
 * frame facts, byte for byte (compared in the storage itself, internal.h).
 *
 * The target is lanes_target.c, exec'd and stopped (SIGSTOP) so that its pages hold still, and
 * static, so that they stay private or shared too (a dynamic one's libc pages turned private to
 * shared as this process first ran the lanes' code: 1 to 18 pages in 7 runs of 20). It has one
 * anonymous mapping of LANES_MIB MiB (MADV_NOHUGEPAGE), large enough for lanes (at least 65536
 * pages: four of the scan's chunks, eight of pagemap's; the walk reads the plan's first chunk
 * itself, timed), in three parts: every page written; every other page; runs of 1 to 70 pages
 * with gaps of 1 to 9 (a fixed cycle), so that chunk edges fall inside runs of every kind. The
 * lanes' chunk edges are not the single thread's batch edges: if the walk's output depended on
 * where reads are cut, the two would differ here.
 *
 * Deep depth's kernel flags (referenced, active) change between two snapshots of a stopped
 * process as the LRU ages its pages, and with them deep's run attributes, so deep is compared
 * by its regions' page counts and its frames, not by its run records.
 * Without CAP_SYS_ADMIN pagemap gives no frames; the test runs as root in CI.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "linux.h"
#include "suites.h"

enum { LANES_MIB = 768 }; /* lanes_target.c's */

static pid_t target_pid = -1;

/* Starts lanes_target (arg NULL: its LANES_MIB MiB; "small": nothing), waits until its memory
 * is written, then stops it. */
static pid_t start_target(const char *arg)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        execl(MEMDIFF_LANES_TARGET, "lanes_target", arg, (char *)NULL);
        _exit(127);
    }
    target_pid = pid;
    char c;
    close(fds[1]);
    ck_assert_int_eq(read(fds[0], &c, 1), 1);
    close(fds[0]);
    ck_assert_int_eq(kill(pid, SIGSTOP), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, WUNTRACED), pid);
    ck_assert(WIFSTOPPED(st));
    return pid;
}

/* Lanes start only where processors are idle (/proc/loadavg's running tasks): the tests say
 * how many are, so that what they expect does not follow the load of the machine. */
static void idle_machine(void)
{
    memdiff__linux_lanes_test_idle(64);
    memdiff__linux_lanes_test_worth(1);
}

static void stop_target(void)
{
    if (target_pid > 0) {
        kill(target_pid, SIGKILL);
        waitpid(target_pid, NULL, 0);
        target_pid = -1;
    }
}

static memdiff_snapshot *take(pid_t pid, memdiff_depth depth, unsigned threads)
{
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = pid;
    o.depth = depth;
    o.threads = threads;
    memdiff_snapshot *s = NULL;
    int rc = memdiff_snapshot_take(&o, &s);
    ck_assert_msg(rc == MEMDIFF_OK, "snapshot on %u threads: %s", threads, memdiff_last_error());
    return s;
}

static void same_seq(const memdiff__seq *a, const memdiff__seq *b, const char *what)
{
    ck_assert_msg(a->present == b->present && a->n == b->n && a->segs == b->segs &&
                      a->lits == b->lits,
                  "%s: %llu values in %zu segments and %zu literals against %llu in %zu and %zu",
                  what, (unsigned long long)a->n, a->segs, a->lits, (unsigned long long)b->n,
                  b->segs, b->lits);
    if (a->segs) {
        ck_assert_msg(!memcmp(a->at, b->at, a->segs * sizeof *a->at), "%s: segment starts", what);
        ck_assert_msg(!memcmp(a->base, b->base, a->segs * sizeof *a->base), "%s: segment bases",
                      what);
    }
    if (a->lits)
        ck_assert_msg(!memcmp(a->lit, b->lit, a->lits * sizeof *a->lit), "%s: literals", what);
}

/* The two snapshots store the same bytes: regions' page counts and run indexes, the run
 * records, the bitmaps, and the frame facts; deep (runs_too 0): the page counts, frames and map
 * counts. */
static void same_storage(const memdiff_snapshot *a, const memdiff_snapshot *b, int runs_too)
{
    ck_assert_uint_eq(a->region_count, b->region_count);
    for (size_t i = 0; i < a->region_count; i++) {
        const memdiff__region *x = &a->regions[i], *y = &b->regions[i];
        ck_assert_msg(x->start == y->start && x->end == y->end &&
                          x->resident_pages == y->resident_pages &&
                          x->private_pages == y->private_pages &&
                          (!runs_too ||
                           (x->run_first == y->run_first && x->run_records == y->run_records &&
                            x->bits_first == y->bits_first && x->run_count == y->run_count)),
                      "region %zu (0x%llx): %llu resident pages in %zu records against %llu in "
                      "%zu",
                      i, (unsigned long long)x->start, (unsigned long long)x->resident_pages,
                      x->run_records, (unsigned long long)y->resident_pages, y->run_records);
    }
    ck_assert_uint_eq(a->aux_count, b->aux_count);
    if (!runs_too) {
        /* deep: how a run's values are cut into segments follows the runs; the frames not (map
         * counts do change: the vDSO's pages are mapped by processes that come and go) */
        ck_assert_uint_eq(a->frames.n, b->frames.n);
        for (uint64_t k = 0; k < a->frames.n; k++)
            ck_assert_msg(memdiff__seq_get(&a->frames, k) == memdiff__seq_get(&b->frames, k),
                          "page %llu of the runs: frame differs", (unsigned long long)k);
        return;
    }
    same_seq(&a->frames, &b->frames, "frames");
    same_seq(&a->mapcount, &b->mapcount, "map counts");
    ck_assert_uint_eq(a->run_records, b->run_records);
    ck_assert_uint_eq(a->run_words, b->run_words);
    ck_assert_uint_eq(a->run_count, b->run_count);
    ck_assert_msg(!memcmp(a->runs, b->runs, a->run_records * sizeof *a->runs), "run records");
    ck_assert_msg(!memcmp(a->run_bits, b->run_bits, a->run_words * sizeof *a->run_bits),
                  "run bitmaps");
}

static void compare_threads(memdiff_depth depth)
{
    pid_t pid = start_target(NULL);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (int round = 0; round < 3; round++) {
        memdiff_snapshot *one = take(pid, depth, 1), *two = take(pid, depth, 2);
        memdiff_snapshot_info i1, i2;
        ck_assert_int_eq(memdiff_snapshot_get_info(one, &i1), MEMDIFF_OK);
        ck_assert_int_eq(memdiff_snapshot_get_info(two, &i2), MEMDIFF_OK);
        ck_assert_uint_eq(i1.threads, 1);
        ck_assert_uint_eq(i1.attempts, 1); /* a stopped process: nothing changes under it */
        ck_assert_uint_eq(i2.attempts, 1);
        /* Two where the machine has two processors (sched_getaffinity: CI's has 2). */
        if (cpus >= 2)
            ck_assert_uint_eq(i2.threads, 2);
        /* 384 MiB: a third resident, a sixth, and half of the last third or so. */
        ck_assert_uint_gt(i1.resident_bytes, (uint64_t)LANES_MIB << 20 >> 1);
        ck_assert_uint_eq(i1.resident_bytes, i2.resident_bytes);
        ck_assert_uint_eq(i1.private_bytes, i2.private_bytes);
        same_storage(one, two, depth != MEMDIFF_DEPTH_DEEP);
        memdiff_snapshot_free(one);
        memdiff_snapshot_free(two);
    }
    stop_target();
}

START_TEST(fast_stores_the_same)
{
    compare_threads(MEMDIFF_DEPTH_FAST);
}
END_TEST

START_TEST(standard_stores_the_same)
{
    compare_threads(MEMDIFF_DEPTH_STANDARD);
}
END_TEST

START_TEST(deep_stores_the_same)
{
    compare_threads(MEMDIFF_DEPTH_DEEP);
}
END_TEST

/* threads 0 is as many as the processors the caller may run on, at most 4; 5 and more are 4. */
START_TEST(threads_zero_is_the_processors)
{
    pid_t pid = start_target(NULL);
    cpu_set_t set;
    CPU_ZERO(&set);
    ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
    unsigned cpus = (unsigned)CPU_COUNT(&set), want = cpus < 4 ? cpus : 4;
    memdiff_snapshot *s = take(pid, MEMDIFF_DEPTH_STANDARD, 0);
    memdiff_snapshot_info in;
    ck_assert_int_eq(memdiff_snapshot_get_info(s, &in), MEMDIFF_OK);
    ck_assert_uint_eq(in.threads, want);
    memdiff_snapshot_free(s);
    s = take(pid, MEMDIFF_DEPTH_STANDARD, 64);
    ck_assert_int_eq(memdiff_snapshot_get_info(s, &in), MEMDIFF_OK);
    ck_assert_uint_eq(in.threads, want);
    memdiff_snapshot_free(s);
    /* Pinned to one processor, the default reads on the calling thread alone. */
    CPU_ZERO(&set);
    CPU_SET(sched_getcpu(), &set);
    ck_assert_int_eq(sched_setaffinity(0, sizeof set, &set), 0);
    s = take(pid, MEMDIFF_DEPTH_STANDARD, 0);
    ck_assert_int_eq(memdiff_snapshot_get_info(s, &in), MEMDIFF_OK);
    ck_assert_uint_eq(in.threads, 1);
    memdiff_snapshot_free(s);
    stop_target();
}
END_TEST

/* The caller's own address space is read on the calling thread alone, whatever is asked: a
 * lane's stack would be a page of it. So is a process that shares it (vfork: CLONE_VM). */
START_TEST(own_address_space_reads_alone)
{
    size_t len = (size_t)320 << 20;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    (void)madvise(m, len, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < len; i += 4096)
        m[i] = 1;
    memdiff_snapshot *s = take(0, MEMDIFF_DEPTH_STANDARD, 4);
    memdiff_snapshot_info in;
    ck_assert_int_eq(memdiff_snapshot_get_info(s, &in), MEMDIFF_OK);
    ck_assert_uint_eq(in.threads, 1);
    memdiff_snapshot_free(s);
    s = take(getpid(), MEMDIFF_DEPTH_FAST, 4);
    ck_assert_int_eq(memdiff_snapshot_get_info(s, &in), MEMDIFF_OK);
    ck_assert_uint_eq(in.threads, 1);
    memdiff_snapshot_free(s);
    munmap(m, len);
}
END_TEST

/* Whether lanes may start: the processors online less the tasks runnable at this moment other
 * than the caller's own thread (/proc/loadavg's fourth field), at most as many as asked; the
 * averages before it are not looked at; a real-time caller's lanes wait for no normal task. The
 * texts are /proc/loadavg's, as read on Linux 6.18. */
START_TEST(idle_processors_from_tasks_running_now)
{
    ck_assert_uint_eq(memdiff__linux_lanes_idle("0.00 0.01 0.05 1/86 4242\n", 2, 2, 0), 2);
    /* a minute of the caller's own lanes behind it: still two */
    ck_assert_uint_eq(memdiff__linux_lanes_idle("1.91 1.18 1.30 1/86 4242\n", 2, 2, 0), 2);
    ck_assert_uint_eq(memdiff__linux_lanes_idle("0.10 0.01 0.05 2/86 4242\n", 2, 2, 0), 1);
    ck_assert_uint_eq(memdiff__linux_lanes_idle("7.90 7.00 6.00 9/210 4242\n", 2, 2, 0), 1);
    ck_assert_uint_eq(memdiff__linux_lanes_idle("2.00 2.00 2.00 3/300 4242\n", 8, 4, 0), 4);
    ck_assert_uint_eq(memdiff__linux_lanes_idle("6.00 6.00 6.00 6/300 4242\n", 8, 4, 0), 3);
    ck_assert_uint_eq(memdiff__linux_lanes_idle("0.00 0.00 0.00 0/300 4242\n", 8, 4, 0), 4);
    /* unreadable: as asked */
    ck_assert_uint_eq(memdiff__linux_lanes_idle(NULL, 2, 2, 0), 2);
    ck_assert_uint_eq(memdiff__linux_lanes_idle("garbage", 2, 2, 0), 2);
    ck_assert_uint_eq(memdiff__linux_lanes_idle("1.00 1.00 1.00 x/86 1\n", 2, 2, 0), 2);
    /* a real-time caller: normal tasks runnable do not count (the kernel threads its SCHED_FIFO
     * thread holds off read 2/84 where the same loop at SCHED_OTHER reads 1/84) */
    ck_assert_uint_eq(memdiff__linux_lanes_idle("0.50 0.50 0.50 2/84 4242\n", 2, 2, 1), 2);
    ck_assert_uint_eq(memdiff__linux_lanes_idle("7.90 7.00 6.00 9/210 4242\n", 2, 2, 1), 2);
}
END_TEST

/* Snapshots of the target with the lanes' seam `set` at `alone` (one thread expected), then at
 * `two` (two where the machine has them): they store the same. */
static void alone_then_two(memdiff_depth depth, void (*set)(int), int alone, int two)
{
    pid_t pid = start_target(NULL);
    set(alone);
    memdiff_snapshot *one = take(pid, depth, 2);
    memdiff_snapshot_info in;
    ck_assert_int_eq(memdiff_snapshot_get_info(one, &in), MEMDIFF_OK);
    ck_assert_uint_eq(in.threads, 1);
    set(two);
    memdiff_snapshot *both = take(pid, depth, 2);
    ck_assert_int_eq(memdiff_snapshot_get_info(both, &in), MEMDIFF_OK);
    if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
        ck_assert_uint_eq(in.threads, 2);
    same_storage(one, both, 1);
    memdiff_snapshot_free(one);
    memdiff_snapshot_free(both);
    stop_target();
}

/* A busy machine (no processor idle but the caller's) reads on the calling thread alone, and
 * stores the same. */
START_TEST(busy_machine_reads_alone)
{
    alone_then_two(MEMDIFF_DEPTH_STANDARD, memdiff__linux_lanes_test_idle, 1, 2);
}
END_TEST

/* ---- when the lanes exit ------------------------------------------------------------------ */

static int count_run(void *ctx, uint64_t start, uint64_t npages, unsigned attrs,
                     const uint64_t *pfn)
{
    (void)start, (void)attrs, (void)pfn;
    *(uint64_t *)ctx += npages;
    return MEMDIFF_OK;
}

/* Threads of this process: its task directory's link count less two (proc(5)). */
static long own_threads(void)
{
    struct stat st;
    ck_assert_int_eq(stat("/proc/self/task", &st), 0);
    return (long)st.st_nlink - 2;
}

/* Until this process has `want` threads again, for at most two seconds: whether it has. */
static int threads_back_to(long want)
{
    for (int i = 0; i < 2000 && own_threads() != want; i++)
        usleep(1000);
    return own_threads() == want;
}

/* Lanes are told to exit when the walk has passed the last region large enough for them, not
 * when the process is closed: the rest of the snapshot (the small regions above, modules,
 * heaps, totals) does not wait for them to be joined. A walk after that (a pass again) starts
 * new lanes, and reads the same pages. */
START_TEST(lanes_exit_after_the_last_large_region)
{
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        return; /* lanes need a second processor */
    pid_t pid = start_target(NULL);
    memdiff__arena arena = MEMDIFF__ARENA_INIT;
    memdiff__open_args args = {pid, NULL, NULL, MEMDIFF__OPEN_NO_DEEP, 2};
    memdiff__caps caps;
    memdiff__proc *proc = NULL;
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, &caps), MEMDIFF_OK);
    memdiff__plat_region *r;
    size_t nr, big = 0;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &nr), MEMDIFF_OK);
    for (size_t i = 1; i < nr; i++)
        if (r[i].end - r[i].start > r[big].end - r[big].start)
            big = i;
    ck_assert_uint_eq(r[big].end - r[big].start, (uint64_t)LANES_MIB << 20);
    const long alone = own_threads();
    uint64_t first = 0, again = 0;
    memdiff__page_sink sink = {count_run, &first, NULL, NULL};
    ck_assert_int_eq(memdiff__plat_pages(proc, r[big].start, r[big].end, MEMDIFF_DEPTH_STANDARD,
                                         &sink),
                     MEMDIFF_OK);
    ck_assert_uint_eq(memdiff__plat_pages_threads(proc), 2);
    ck_assert_msg(threads_back_to(alone), "the lane is still running after the last large "
                                          "region: %ld threads, %ld before",
                  own_threads(), alone);
    sink.ctx = &again;
    ck_assert_int_eq(memdiff__plat_pages(proc, r[big].start, r[big].end, MEMDIFF_DEPTH_STANDARD,
                                         &sink),
                     MEMDIFF_OK);
    ck_assert_uint_eq(memdiff__plat_pages_threads(proc), 2);
    ck_assert_uint_gt(first, (uint64_t)LANES_MIB << 20 >> 12 >> 1);
    ck_assert_uint_eq(again, first);
    ck_assert(threads_back_to(alone));
    memdiff__plat_close(proc);
    memdiff__arena_release(&arena);
    stop_target();
}
END_TEST

/* At fast depth the walk scans a large region's first pages itself, timed, before any lane
 * starts: a region not worth lanes (here by the test's say-so; in use huge pages or an empty
 * reservation, whose scan costs a few us where small pages cost tens) starts none, and costs no
 * clone(). */
START_TEST(fast_starts_no_lane_where_not_worth_it)
{
    alone_then_two(MEMDIFF_DEPTH_FAST, memdiff__linux_lanes_test_worth, 0, 1);
}
END_TEST

/* A small process is read on the calling thread alone: no region of 256 MiB or more. */
START_TEST(small_process_reads_alone)
{
    pid_t pid = start_target("small");
    memdiff_snapshot *s = take(pid, MEMDIFF_DEPTH_STANDARD, 2);
    memdiff_snapshot_info in;
    ck_assert_int_eq(memdiff_snapshot_get_info(s, &in), MEMDIFF_OK);
    ck_assert_uint_eq(in.threads, 1);
    memdiff_snapshot_free(s);
    stop_target();
}
END_TEST

Suite *lanes_suite(void)
{
    Suite *s = suite_create("lanes");
    TCase *tc = tcase_create("lanes");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, idle_machine, stop_target);
    tcase_add_test(tc, fast_stores_the_same);
    tcase_add_test(tc, standard_stores_the_same);
    tcase_add_test(tc, deep_stores_the_same);
    tcase_add_test(tc, threads_zero_is_the_processors);
    tcase_add_test(tc, own_address_space_reads_alone);
    tcase_add_test(tc, small_process_reads_alone);
    tcase_add_test(tc, lanes_exit_after_the_last_large_region);
    tcase_add_test(tc, fast_starts_no_lane_where_not_worth_it);
    tcase_add_test(tc, busy_machine_reads_alone);
    tcase_add_test(tc, idle_processors_from_tasks_running_now);
    suite_add_tcase(s, tc);
    return s;
}
