/*
 * test_nomalloc.c - memdiff_nomalloc_test: taking snapshots and comparing them never call
 * malloc (memdiff.h: memdiff's storage comes from its own mmap'd arena, so that a snapshot does
 * not disturb the heap it measures).
 *
 * The program defines the C library's allocation functions itself. The linker exports them from
 * the executable because libc.so refers to them, so every call, from memdiff or from inside the
 * C library on memdiff's behalf (opendir, fopen, qsort, strerror...), comes here; glibc supports
 * this replacement (glibc manual, "Replacing malloc") and the definitions forward to its
 * __libc_* entry points. While `counting` is on, every call is counted and its caller recorded.
 * The first snapshot is counted too: lazy one-time allocations of the C library on memdiff's
 * behalf are allocations all the same.
 *
 * Not Check: its fork mode allocates around the test. Prints one line per check and a closing
 * "N passed, N failed"; exits non-zero on failure. Not built with sanitizers (their allocator).
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memdiff.h"

/* Tests only (platform/linux/lanes.c): processors taken as idle when lanes start. */
void memdiff__linux_lanes_test_idle(int idle);
void memdiff__linux_lanes_test_worth(int worth);

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

#define INTERPOSE __attribute__((visibility("default")))

enum { MAX_CALLERS = 16 };

static atomic_int counting;
static atomic_ulong calls;
static atomic_ulong null_frees;
static void *callers[MAX_CALLERS];
static const char *caller_fn[MAX_CALLERS];

static void count(const char *fn, void *caller)
{
    if (!atomic_load_explicit(&counting, memory_order_relaxed))
        return;
    unsigned long n = atomic_fetch_add(&calls, 1);
    if (n < MAX_CALLERS) {
        callers[n] = caller;
        caller_fn[n] = fn;
    }
}

INTERPOSE void *malloc(size_t size)
{
    count("malloc", __builtin_return_address(0));
    return __libc_malloc(size);
}

INTERPOSE void *calloc(size_t n, size_t size)
{
    count("calloc", __builtin_return_address(0));
    return __libc_calloc(n, size);
}

INTERPOSE void *realloc(void *p, size_t size)
{
    count("realloc", __builtin_return_address(0));
    return __libc_realloc(p, size);
}

INTERPOSE void *reallocarray(void *p, size_t n, size_t size)
{
    count("reallocarray", __builtin_return_address(0));
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n * size);
}

/* free(NULL) does nothing to the heap and is not counted, only noted: glibc's strerror() makes
 * one (through dcgettext) on memdiff's error paths. */
INTERPOSE void free(void *p)
{
    if (p)
        count("free", __builtin_return_address(0));
    else if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add(&null_frees, 1);
    __libc_free(p);
}

INTERPOSE void *memalign(size_t alignment, size_t size)
{
    count("memalign", __builtin_return_address(0));
    return __libc_memalign(alignment, size);
}

INTERPOSE void *aligned_alloc(size_t alignment, size_t size)
{
    count("aligned_alloc", __builtin_return_address(0));
    return __libc_memalign(alignment, size);
}

INTERPOSE int posix_memalign(void **out, size_t alignment, size_t size)
{
    count("posix_memalign", __builtin_return_address(0));
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0)
        return EINVAL;
    void *p = __libc_memalign(alignment, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

INTERPOSE void *valloc(size_t size)
{
    count("valloc", __builtin_return_address(0));
    return __libc_valloc(size);
}

INTERPOSE void *pvalloc(size_t size)
{
    count("pvalloc", __builtin_return_address(0));
    return __libc_pvalloc(size);
}

/* ---- the checks ------------------------------------------------------------------------ */

static int passed, failed;

static void start_counting(void)
{
    atomic_store(&calls, 0);
    atomic_store(&null_frees, 0);
    memset(callers, 0, sizeof callers);
    atomic_store(&counting, 1);
}

static unsigned long stop_counting(void)
{
    atomic_store(&counting, 0);
    return atomic_load(&calls);
}

static void report(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s - ", ok ? "ok" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok)
        passed++;
    else
        failed++;
}

/* Reports a counted section: ok when memdiff's calls succeeded and nothing was allocated. */
static void expect_no_calls(const char *what, int rc, int want_rc)
{
    unsigned long n = stop_counting();
    if (rc != want_rc) {
        report(0, "%s: %s (%s), want %s", what, memdiff_status_name(rc), memdiff_last_error(),
               memdiff_status_name(want_rc));
        return;
    }
    unsigned long nulls = atomic_load(&null_frees);
    report(n == 0, "%s: %lu allocator call%s", what, n, n == 1 ? "" : "s");
    if (nulls)
        printf("    (and %lu free(NULL), which allocates and releases nothing)\n", nulls);
    for (unsigned long i = 0; i < n && i < MAX_CALLERS; i++) {
        Dl_info info;
        memset(&info, 0, sizeof info);
        (void)dladdr(callers[i], &info);
        printf("    %s from %p: %s+0x%lx (%s)\n", caller_fn[i], callers[i],
               info.dli_fname ? info.dli_fname : "?",
               (unsigned long)((char *)callers[i] - (char *)info.dli_fbase),
               info.dli_sname ? info.dli_sname : "?");
    }
}

static void control(void)
{
    start_counting();
    char *s = strdup("counted");
    unsigned long n = stop_counting();
    free(s);
    report(n >= 1, "control: strdup while counting is counted (%lu call%s)", n,
           n == 1 ? "" : "s");
}

static void depth_round(memdiff_depth depth, char *mem, size_t len)
{
    char what[128];
    memdiff_snapshot *a = NULL, *b = NULL;
    memdiff_diff *d = NULL, *v = NULL;
    memdiff_snapshot_info info;
    const char *name = memdiff_depth_name(depth);

    start_counting();
    int rc = memdiff_snapshot_self(depth, &a);
    snprintf(what, sizeof what, "snapshot at %s depth", name);
    expect_no_calls(what, rc, MEMDIFF_OK);

    memset(mem, (int)depth + 1, len); /* something to tell apart */
    char *heap = malloc(3 * 4096);
    memset(heap, 1, 3 * 4096);

    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.depth = depth;
    o.flags = MEMDIFF_SNAPSHOT_SMAPS_PSS; /* smaps read and matched where there is no deep */
    start_counting();
    rc = memdiff_snapshot_take(&o, &b);
    snprintf(what, sizeof what, "second snapshot at %s depth (memdiff_snapshot_take, PSS per "
             "mapping)", name);
    expect_no_calls(what, rc, MEMDIFF_OK);

    if (a && b) {
        start_counting();
        rc = memdiff_compare(a, b, 0, &d);
        snprintf(what, sizeof what, "compare at %s depth", name);
        expect_no_calls(what, rc, MEMDIFF_OK);
        start_counting();
        rc = memdiff_compare(a, b, MEMDIFF_COMPARE_VERBOSE, &v);
        snprintf(what, sizeof what, "verbose compare at %s depth", name);
        expect_no_calls(what, rc, MEMDIFF_OK);

        start_counting();
        memdiff_totals t;
        memdiff_region reg;
        memdiff_block blk;
        memdiff_diff_info di;
        rc = memdiff_snapshot_get_info(b, &info);
        if (!rc)
            rc = memdiff_snapshot_find(b, (uintptr_t)mem, &reg);
        for (int c = 0; !rc && d && c <= MEMDIFF_CAT_ALL; c++)
            rc = memdiff_diff_totals(d, (memdiff_category)c, &t);
        if (!rc && d)
            rc = memdiff_diff_get_info(d, &di);
        for (size_t i = 0; !rc && v && i < memdiff_diff_block_count(v); i++)
            rc = memdiff_diff_block(v, i, &blk);
        snprintf(what, sizeof what, "accessors at %s depth", name);
        expect_no_calls(what, rc, MEMDIFF_OK);
        if (!rc && depth != info.depth)
            printf("    (%s depth requested, %s obtained: %s)\n", name,
                   memdiff_depth_name(info.depth), info.degraded ? info.degraded : "");
    }

    start_counting();
    memdiff_diff_free(v);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    snprintf(what, sizeof what, "freeing at %s depth", name);
    expect_no_calls(what, MEMDIFF_OK, MEMDIFF_OK);
    free(heap);
}

/* A reference-set bracket (its resets, the peak, smaps per mapping) and a working-set-size run
 * (smaps_rollup), which go through the backend's own reads. The bracket is on the calling
 * process with the default options, so begin and end also settle the heap (malloc_trim, which
 * works inside glibc's allocator and calls none of the functions above) and begin warms memdiff
 * up with a snapshot of its own: all of it counted. */
static void refset_round(char *mem, size_t len)
{
    memdiff_bracket_options bo = MEMDIFF_BRACKET_OPTIONS_INIT;
    bo.flags = MEMDIFF_BRACKET_REFSET;
    memdiff_bracket *br = NULL;
    memdiff_diff *d = NULL;
    start_counting();
    int rc = memdiff_bracket_begin(&bo, &br);
    expect_no_calls("reference-set bracket: begin", rc, MEMDIFF_OK);
    memset(mem, 7, len);
    memdiff_refset_info in;
    start_counting();
    rc = br ? memdiff_bracket_get_info(br, &in) : MEMDIFF_EINVAL;
    if (!rc)
        rc = memdiff_bracket_end(br, &d);
    expect_no_calls("reference-set bracket: its info, then end", rc, MEMDIFF_OK);
    memdiff_impact m;
    memdiff_diff_info di;
    memdiff_block blk;
    start_counting();
    rc = d ? MEMDIFF_OK : MEMDIFF_EINVAL;
    for (int c = 0; !rc && c <= MEMDIFF_CAT_ALL; c++)
        rc = memdiff_diff_impact(d, (memdiff_category)c, &m);
    if (!rc)
        rc = memdiff_diff_get_info(d, &di);
    for (size_t i = 0; !rc && i < memdiff_diff_block_count(d); i++)
        rc = memdiff_diff_block(d, i, &blk);
    memdiff_diff_free(d);
    memdiff_bracket_free(br);
    expect_no_calls("reference-set accessors and freeing", rc, MEMDIFF_OK);

    memdiff_wss_options o = MEMDIFF_WSS_OPTIONS_INIT;
    o.mode = MEMDIFF_WSS_PROFILE;
    o.count = 3;
    memdiff_wss_sample s[3];
    size_t n = 0;
    start_counting();
    rc = memdiff_wss_measure(&o, s, 3, &n);
    expect_no_calls("working-set size, 3 profile steps", rc, MEMDIFF_OK);
}

/* Another process, and one that has exited: other code paths of the backend (and the error
 * path's detail message). */
static void other_processes(void)
{
    int fds[2];
    if (pipe(fds) != 0) {
        report(0, "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    /* 768 MiB, every page written, then every other one dropped in the last 64 MiB: regions
     * large enough for the lanes (lanes.c: at least 256 MiB), dense and not. */
    size_t big = (size_t)768 << 20, ps = (size_t)sysconf(_SC_PAGESIZE);
    pid_t pid = fork();
    if (pid == 0) {
        char *m = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            _exit(1);
        for (size_t i = 0; i < big; i += ps)
            m[i] = 1;
        for (size_t i = big - ((size_t)64 << 20); i < big; i += 2 * ps)
            (void)madvise(m + i, ps, MADV_DONTNEED);
        char c = 'r';
        if (write(fds[1], &c, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char c;
    if (pid < 0 || read(fds[0], &c, 1) != 1) {
        report(0, "fork: %s", strerror(errno));
        return;
    }
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = pid;
    memdiff_snapshot *s = NULL;
    start_counting();
    int rc = memdiff_snapshot_take(&o, &s);
    memdiff_snapshot_free(s);
    expect_no_calls("snapshot of a child process by pid", rc, MEMDIFF_OK);
    /* Read on two threads where the machine has two processors (taken as idle, whatever the
     * load): lanes start without malloc (clone on memdiff's own stack, not pthread_create,
     * whose thread block is calloc'd). */
    memdiff__linux_lanes_test_idle(64);
    memdiff__linux_lanes_test_worth(1);
    const memdiff_depth depths[] = {MEMDIFF_DEPTH_FAST, MEMDIFF_DEPTH_STANDARD,
                                    MEMDIFF_DEPTH_DEEP};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        char what[128];
        memdiff_snapshot_info info;
        o.depth = depths[i];
        o.threads = 2;
        s = NULL;
        start_counting();
        rc = memdiff_snapshot_take(&o, &s);
        if (!rc)
            rc = memdiff_snapshot_get_info(s, &info);
        memdiff_snapshot_free(s);
        snprintf(what, sizeof what, "snapshot of a child's 768 MiB on up to 2 threads, %s depth",
                 memdiff_depth_name(depths[i]));
        expect_no_calls(what, rc, MEMDIFF_OK);
        if (!rc && sysconf(_SC_NPROCESSORS_ONLN) >= 2)
            report(info.threads == 2, "%s: read on %u threads", what, info.threads);
    }
    o.depth = MEMDIFF_DEPTH_STANDARD;
    o.threads = 0;

    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    s = NULL;
    start_counting();
    rc = memdiff_snapshot_take(&o, &s);
    expect_no_calls("snapshot of an exited process (MEMDIFF_ESRCH)", rc, MEMDIFF_ESRCH);
    close(fds[0]);
    close(fds[1]);
}

/* A program's marks: memdiff_mark() runs in the code it measures, with and without a recorder
 * (the first mark looks the environment up and makes its socket: counted too). */
static void marks(void)
{
    start_counting();
    int rc = memdiff_mark("no recorder");
    expect_no_calls("memdiff_mark, no recorder (first mark)", rc, 0);
    memdiff_mark_listener *l = NULL;
    if (memdiff_mark_listen(getpid(), &l) != MEMDIFF_OK) {
        report(0, "memdiff_mark_listen: %s", memdiff_last_error());
        return;
    }
    start_counting();
    rc = memdiff_mark("a recorder listens");
    expect_no_calls("memdiff_mark, a recorder listening", rc, 1);
    memdiff_mark_listener_free(l);
}

/* The whole machine: a system snapshot (with the physical table where privileged, and as the
 * caller can) and the compare of two. */
static void system_round(void)
{
    memdiff_system *a = NULL, *b = NULL;
    memdiff_system_diff *d = NULL;
    start_counting();
    int rc = memdiff_system_take(NULL, &a);
    expect_no_calls("system snapshot", rc, MEMDIFF_OK);
    memdiff_system_options o = MEMDIFF_SYSTEM_OPTIONS_INIT;
    o.flags = MEMDIFF_SYSTEM_ROLLUP | MEMDIFF_SYSTEM_NO_PHYS;
    start_counting();
    rc = memdiff_system_take(&o, &b);
    expect_no_calls("system snapshot from smaps_rollup", rc, MEMDIFF_OK);
    if (a && b) {
        start_counting();
        rc = memdiff_system_compare(a, b, 0, &d);
        expect_no_calls("system compare", rc, MEMDIFF_OK);
    }
    memdiff_system_diff_free(d);
    memdiff_system_free(b);
    memdiff_system_free(a);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    control();
    size_t len = 16 * (size_t)sysconf(_SC_PAGESIZE);
    char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        report(0, "mmap: %s", strerror(errno));
    } else {
        const memdiff_depth depths[] = {MEMDIFF_DEPTH_STANDARD, MEMDIFF_DEPTH_FAST,
                                        MEMDIFF_DEPTH_DEEP};
        for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++)
            depth_round(depths[i], mem, len);
        refset_round(mem, len);
        munmap(mem, len);
    }
    other_processes();
    system_round();
    marks();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
