/*
 * system.c - the whole machine (issue 26): 200 processes the benchmark starts, measured side by
 * side by smem, by the floors (floors.c) and by a memdiff system snapshot, interleaved and
 * repeated like the per-process targets (memdiff_bench.c).
 *
 * The processes: small shells blocked in `read`, one python3 holding 200 MiB of bytes objects,
 * and this program re-executed with several threads. Every one carries SYS_MARK in its command
 * line, so that smem's process filter (-P, a regex over name and command line) picks exactly
 * them; smem reads /proc/PID/smaps of each process it keeps (and cmdline of every process, to
 * filter), in Python, as its users run it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "memdiff.h"

#define SYS_PROCS 200
#define SYS_SHELLS (SYS_PROCS - 2) /* and python3, and the threads */
#define SYS_MARK "memdiff-bench-system"
/* smem's own command line holds its -P argument: "[s]" matches "s" but not itself. */
#define SYS_SMEM_FILTER "memdiff-bench-[s]ystem"
#define SYS_PY_MIB 200
#define SYS_THREADS 8
#define SYS_THREADS_BYTES ((size_t)16 << 20)

/* What is timed. "The 200": the processes started here; "every process": all that /proc lists
 * (the 200, this program, and whatever else runs), as a system snapshot reads them. */
enum {
    S_SMEM,
    S_SMEM_ALL,
    S_FLOOR_PSS,
    S_FLOOR_PSS_ALL,
    S_FLOOR_UNION_ALL,
    S_FLOOR_KPAGE_ALL,
    S_FLOOR_PHYS,
    S_MEMDIFF,
    S_MEMDIFF_PHYS,
    S_MEMDIFF_FULL,
    S_COUNT
};

static const char *const s_names[S_COUNT] = {
    "smem, the 200",
    "smem, every process",
    "floor PSS, the 200",
    "floor PSS, every process",
    "floor PSS once, every process",
    "floor kpage, every process",
    "floor: kpageflags, all frames",
    "memdiff system, no physical table",
    "memdiff system: physical table (phys_ns)",
    "memdiff system with physical table",
};

/* Processes and, prepared before the timing, their frames as sorted runs: all of them, and
 * those not exclusively mapped (whose map count PSS needs). */
typedef struct proc_list {
    pid_t *pids;
    bench_frame_runs *runs, *shared;
    size_t n, cap;
} proc_list;

typedef struct sys_set {
    pid_t children[SYS_PROCS];
    size_t nchildren;
    proc_list started; /* the 200, with their frames */
    proc_list all;     /* every process /proc listed once they were ready, but kernel threads */
    bench_frame_runs shared_union; /* all's shared frames, each once */
    int hold;          /* the write end of every child's stdin: closing it lets them all exit */
} sys_set;

/* Adds pid to l with its frame runs: 0, 1 when its frames cannot be read (gone, or not ours to
 * read), -1 out of memory. */
static int list_add(proc_list *l, pid_t pid)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        pid_t *p = realloc(l->pids, cap * sizeof *p);
        if (p)
            l->pids = p;
        bench_frame_runs *r = p ? realloc(l->runs, cap * sizeof *r) : NULL;
        if (r)
            l->runs = r;
        bench_frame_runs *sh = r ? realloc(l->shared, cap * sizeof *sh) : NULL;
        if (!sh)
            return -1;
        l->shared = sh;
        l->cap = cap;
    }
    if (bench_frame_runs_prepare(pid, 0, &l->runs[l->n]))
        return 1;
    if (bench_frame_runs_prepare(pid, 1, &l->shared[l->n])) {
        bench_frame_runs_free(&l->runs[l->n]);
        return 1;
    }
    l->pids[l->n++] = pid;
    return 0;
}

static void list_free(proc_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        bench_frame_runs_free(&l->runs[i]);
        bench_frame_runs_free(&l->shared[i]);
    }
    free(l->pids);
    free(l->runs);
    free(l->shared);
    memset(l, 0, sizeof *l);
}

static size_t list_frames(const proc_list *l, int shared, size_t *runs)
{
    size_t frames = 0;
    *runs = 0;
    for (size_t i = 0; i < l->n; i++) {
        frames += (shared ? l->shared : l->runs)[i].frames;
        *runs += (shared ? l->shared : l->runs)[i].n;
    }
    return frames;
}

/* ---- the processes ------------------------------------------------------------------------ */

/* The threaded child (argv[1] BENCH_THREADS_ARG): SYS_THREADS threads blocked, 16 MiB written,
 * "\n" on stdout when ready, then blocks on stdin until its end. */
static void *thread_idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

_Noreturn void bench_threads_main(void)
{
    char *p = mmap(NULL, SYS_THREADS_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        _exit(1);
    memset(p, 1, SYS_THREADS_BYTES);
    for (int i = 0; i < SYS_THREADS; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, thread_idle, NULL))
            _exit(1);
    }
    if (write(1, "\n", 1) != 1)
        _exit(1);
    char c;
    ssize_t r;
    while ((r = read(0, &c, 1)) != 0 && !(r < 0 && errno != EINTR)) {
    }
    _exit(0);
}

/* fork + exec of file (on PATH unless it holds a '/') with argv, stdin the hold pipe and stdout
 * the ready pipe. 0 or -1. */
static int spawn(pid_t *pids, size_t *n, const char *file, char *const argv[], int hold_rd,
                 int ready_wr)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("memdiff_bench: fork");
        return -1;
    }
    if (pid == 0) {
        if (dup2(hold_rd, 0) < 0 || dup2(ready_wr, 1) < 0)
            _exit(126);
        execvp(file, argv);
        _exit(127);
    }
    pids[(*n)++] = pid;
    return 0;
}

static void sys_stop(sys_set *set)
{
    if (set->hold >= 0)
        close(set->hold);
    set->hold = -1;
    for (size_t i = 0; i < set->nchildren; i++) {
        int st;
        while (waitpid(set->children[i], &st, 0) < 0 && errno == EINTR) {
        }
    }
    set->nchildren = 0;
    list_free(&set->started);
    list_free(&set->all);
    bench_frame_runs_free(&set->shared_union);
}

/* Starts the SYS_PROCS processes and waits until each has said it is ready. 0 or -1. */
static int sys_start(sys_set *set)
{
    memset(set, 0, sizeof *set);
    set->hold = -1;
    int hold[2], ready[2];
    if (pipe2(hold, O_CLOEXEC) || pipe2(ready, O_CLOEXEC)) {
        perror("memdiff_bench: pipe");
        return -1;
    }
    set->hold = hold[1];
    char py[256];
    snprintf(py, sizeof py,
             "import os, sys\n"
             "held = [bytes([i & 255]) * (1 << 20) for i in range(%d)]\n"
             "os.write(1, b'\\n')\n"
             "sys.stdin.buffer.read()\n",
             SYS_PY_MIB);
    char *const shell[] = {"sh", "-c", "echo; read x", SYS_MARK, NULL};
    char *const python[] = {"python3", "-c", py, SYS_MARK, NULL};
    char *const threads[] = {SYS_MARK, BENCH_THREADS_ARG, NULL};
    int rc = 0;
    fflush(NULL);
    for (int i = 0; !rc && i < SYS_SHELLS; i++)
        rc = spawn(set->children, &set->nchildren, "sh", shell, hold[0], ready[1]);
    if (!rc)
        rc = spawn(set->children, &set->nchildren, "python3", python, hold[0], ready[1]);
    /* This program again, SYS_MARK its argv[0]. */
    if (!rc)
        rc = spawn(set->children, &set->nchildren, "/proc/self/exe", threads, hold[0], ready[1]);
    close(hold[0]);
    close(ready[1]);
    /* One "\n" from each; EOF first means a child died before it was ready. */
    size_t got = 0;
    char buf[256];
    while (!rc && got < set->nchildren) {
        ssize_t r = read(ready[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            fprintf(stderr, "memdiff_bench: system: %zu of %zu processes became ready\n", got,
                    set->nchildren);
            rc = -1;
            break;
        }
        for (ssize_t k = 0; k < r; k++)
            got += buf[k] == '\n';
    }
    close(ready[0]);
    if (rc)
        sys_stop(set);
    return rc;
}

/* Every process /proc lists now, into set->all with its frames (kernel threads, with no maps,
 * and processes not readable or gone meanwhile are left out). 0 or -1. */
static int list_all(sys_set *set)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    struct dirent *e;
    int rc = 0;
    while (rc >= 0 && (e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        bench_range one;
        size_t nr = 0;
        if (*end || pid <= 0 || bench_read_maps((pid_t)pid, &one, 1, &nr) || nr == 0)
            continue;
        rc = list_add(&set->all, (pid_t)pid);
    }
    closedir(d);
    return rc < 0 ? -1 : 0;
}

/* ---- smem ----------------------------------------------------------------------------------- */

static int smem_installed(void)
{
    const char *path = getenv("PATH");
    char buf[4096];
    for (const char *p = path ? path : ""; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(buf, sizeof buf, "%.*s/smem", (int)len, p);
        if (access(buf, X_OK) == 0)
            return 1;
        p += len + (p[len] == ':');
    }
    return 0;
}

/* smem's per-process table (its default columns: pid, user, command, swap, USS, PSS, RSS) of the
 * marked processes (every process: all), without its header line. Returns the lines it printed
 * when count (else 0), or -1. posix_spawn, not fork: a fork between two snapshots would leave
 * this process's pages copy-on-write, and the next snapshot would pay a fault for each page of
 * scratch the library keeps between snapshots (720 of them here, 8 ms), a cost of the benchmark,
 * not of memdiff. */
static int run_smem(int all, int count)
{
    int out[2];
    if (pipe2(out, O_CLOEXEC))
        return -1;
    int null = count ? -1 : open("/dev/null", O_WRONLY | O_CLOEXEC);
    fflush(NULL);
    posix_spawn_file_actions_t fa;
    pid_t pid;
    char *const filtered[] = {"smem", "-H", "-P", SYS_SMEM_FILTER, NULL};
    char *const every[] = {"smem", "-H", NULL};
    int rc = posix_spawn_file_actions_init(&fa);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(&fa, count ? out[1] : null, 1);
    if (!rc)
        rc = posix_spawnp(&pid, "smem", &fa, NULL, all ? every : filtered, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        close(out[0]);
        close(out[1]);
        if (null >= 0)
            close(null);
        return -1;
    }
    close(out[1]);
    if (null >= 0)
        close(null);
    int lines = 0;
    char buf[4096];
    ssize_t r;
    while ((r = read(out[0], buf, sizeof buf)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        for (ssize_t k = 0; k < r; k++)
            lines += buf[k] == '\n';
    }
    close(out[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? lines : -1;
}

/* ---- memdiff -------------------------------------------------------------------------------- */

/* A system snapshot, with or without the physical table; ms of the whole take, or of its
 * physical table alone (phys: info.phys_ns, the library's own clock around that part), or -1.
 * processes: the processes it read. */
static double run_memdiff(int with_phys, int phys, size_t *processes)
{
    memdiff_system_options o = MEMDIFF_SYSTEM_OPTIONS_INIT;
    o.flags = with_phys ? 0 : MEMDIFF_SYSTEM_NO_PHYS;
    memdiff_system *sys = NULL;
    double t0 = bench_now_ms();
    int rc = memdiff_system_take(&o, &sys);
    double ms = bench_now_ms() - t0;
    memdiff_system_info info;
    if (rc || memdiff_system_get_info(sys, &info)) {
        fprintf(stderr, "memdiff_bench: system snapshot: %s\n", memdiff_last_error());
        memdiff_system_free(sys);
        return -1;
    }
    memdiff_system_free(sys);
    if (processes)
        *processes = info.processes_read;
    if (phys && !info.phys_frames)
        return -1; /* no table: not privileged */
    return phys ? (double)info.phys_ns / 1e6 : ms;
}

/* ---- the measurement ------------------------------------------------------------------------ */

static int floor_set(const proc_list *l, int shared, int exact)
{
    size_t gone;
    int64_t frames = floor_kpage_sorted_set(l->pids, shared ? l->shared : l->runs, l->n,
                                            !shared, &gone);
    return frames < 0 || (exact && gone) ? -1 : 0;
}

static double run_one(sys_set *set, int m)
{
    double t0 = bench_now_ms();
    switch (m) {
    case S_SMEM:
    case S_SMEM_ALL:
        if (run_smem(m == S_SMEM_ALL, 0) < 0)
            return -1;
        break;
    case S_FLOOR_PSS:
        if (floor_set(&set->started, 1, 1))
            return -1;
        break;
    case S_FLOOR_PSS_ALL:
    case S_FLOOR_KPAGE_ALL:
        if (floor_set(&set->all, m == S_FLOOR_PSS_ALL, 0))
            return -1;
        break;
    case S_FLOOR_UNION_ALL: {
        size_t gone;
        if (floor_pagemap_set(set->all.pids, set->all.n, &gone) < 0 ||
            floor_kpage_runs(&set->shared_union, 0) < 0)
            return -1;
        break;
    }
    case S_FLOOR_PHYS:
        if (floor_kpageflags_all() < 0)
            return -1;
        break;
    case S_MEMDIFF:
        return run_memdiff(0, 0, NULL);
    case S_MEMDIFF_PHYS:
        return run_memdiff(1, 1, NULL);
    case S_MEMDIFF_FULL:
        return run_memdiff(1, 0, NULL);
    }
    return bench_now_ms() - t0;
}

static void ratio_row(const double *samples, const double *med, int reps, int a, int b,
                      double limit, const char *note)
{
    if (med[a] < 0 || med[b] < 0)
        return;
    bench_ratio_row("system", s_names[a], med[a], s_names[b], med[b],
                    bench_paired_ratio(samples + a * reps, samples + b * reps, reps), limit,
                    note);
}

/* What the timed runs leave out of the tables: set up once, before them. */
typedef struct sys_facts {
    size_t frames, runs, shared_frames, shared_runs; /* the 200's, summed per process */
    size_t all_frames, all_runs;                       /* every process's */
    int64_t phys_frames;                               /* kpageflags' length */
    int smem_lines;                                    /* smem -P's processes, -1 not run */
    size_t memdiff_read;                               /* processes memdiff read */
} sys_facts;

static void print_system(const sys_set *set, const sys_facts *f, const double *samples,
                         const double *med, int reps)
{
    printf("### System (%d processes: %d shells, python3 holding %d MiB, one with %d threads)\n\n",
           SYS_PROCS, SYS_SHELLS, SYS_PY_MIB, SYS_THREADS + 1);
    printf("The 200 map %zu frames in %zu runs (per process, summed), %zu of them not exclusive "
           "in %zu runs; every process: %zu listed with maps (%zu frames, %zu runs), %zu read by "
           "memdiff; %" PRId64 " physical frames; smem: %s.\n\n",
           f->frames, f->runs, f->shared_frames, f->shared_runs, set->all.n, f->all_frames,
           f->all_runs, f->memdiff_read, f->phys_frames,
           f->smem_lines < 0 ? "not run" : "-P picked exactly the 200");
    printf("Floor PSS: maps + pagemap + kpagecount of the frames not exclusively mapped, per "
           "process; floor PSS once: each process's maps + pagemap, then kpagecount of those "
           "frames of all processes, each once (%zu frames in %zu runs); floor kpage: maps + "
           "pagemap + kpageflags and kpagecount of every frame, per process.\n\n",
           set->shared_union.frames, set->shared_union.n);
    printf("| measurement | median ms |\n|---|---|\n");
    for (int m = 0; m < S_COUNT; m++)
        if (med[m] >= 0)
            printf("| %s | %.3f |\n", s_names[m], med[m]);
        else
            printf("| %s | - |\n", s_names[m]);
    printf("\n| target | memdiff | ms | against | ms | ratio | target | met |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    ratio_row(samples, med, reps, S_MEMDIFF, S_SMEM_ALL, 0.2, NULL);
    ratio_row(samples, med, reps, S_MEMDIFF, S_FLOOR_PSS_ALL, 1.2, NULL);
    ratio_row(samples, med, reps, S_MEMDIFF, S_FLOOR_UNION_ALL, 0, "(frames once)");
    ratio_row(samples, med, reps, S_MEMDIFF, S_FLOOR_KPAGE_ALL, 0, "(every frame's flags)");
    ratio_row(samples, med, reps, S_MEMDIFF_PHYS, S_FLOOR_PHYS, 1.2, NULL);
    ratio_row(samples, med, reps, S_FLOOR_PSS, S_SMEM, 0, "(floor: no target)");
    ratio_row(samples, med, reps, S_FLOOR_PSS_ALL, S_SMEM_ALL, 0, "(floor: no target)");
    ratio_row(samples, med, reps, S_FLOOR_UNION_ALL, S_SMEM_ALL, 0, "(floor: no target)");
}

int bench_system(int reps)
{
    sys_set *set = calloc(1, sizeof *set);
    double *samples = malloc((size_t)reps * S_COUNT * sizeof *samples);
    double *v = malloc((size_t)reps * sizeof *v);
    if (!set || !samples || !v) {
        perror("memdiff_bench: malloc");
        exit(1);
    }
    fprintf(stderr, "memdiff_bench: system: starting %d processes...\n", SYS_PROCS);
    if (sys_start(set)) {
        free(set);
        free(samples);
        free(v);
        return 1;
    }
    int enabled[S_COUNT];
    for (int m = 0; m < S_COUNT; m++)
        enabled[m] = 1;
    sys_facts f;
    memset(&f, 0, sizeof f);
    for (size_t i = 0; i < set->nchildren; i++)
        enabled[S_FLOOR_PSS] &= list_add(&set->started, set->children[i]) == 0;
    f.frames = list_frames(&set->started, 0, &f.runs);
    f.shared_frames = list_frames(&set->started, 1, &f.shared_runs);
    /* No frame numbers without CAP_SYS_ADMIN: no kpage floors. */
    enabled[S_FLOOR_PSS] &= f.frames > 0;
    enabled[S_FLOOR_PSS_ALL] = enabled[S_FLOOR_KPAGE_ALL] = enabled[S_FLOOR_UNION_ALL] =
        enabled[S_FLOOR_PSS] && list_all(set) == 0 &&
        bench_frame_runs_union(set->all.shared, set->all.n, &set->shared_union) == 0;
    f.all_frames = list_frames(&set->all, 0, &f.all_runs);
    f.phys_frames = floor_kpageflags_all();
    enabled[S_FLOOR_PHYS] = f.phys_frames > 0;
    f.smem_lines = -1;
    if (!smem_installed()) {
        fprintf(stderr, "memdiff_bench: system: smem not installed\n");
        enabled[S_SMEM] = enabled[S_SMEM_ALL] = 0;
    } else if ((f.smem_lines = run_smem(0, 1)) != (int)set->nchildren) {
        fprintf(stderr, "memdiff_bench: system: smem listed %d processes, not %zu\n",
                f.smem_lines, set->nchildren);
        enabled[S_SMEM] = 0;
    }
    if (run_memdiff(0, 0, &f.memdiff_read) < 0)
        enabled[S_MEMDIFF] = enabled[S_MEMDIFF_PHYS] = enabled[S_MEMDIFF_FULL] = 0;
    for (int i = 0; i < reps * S_COUNT; i++)
        samples[i] = -1;
    uint64_t rng = UINT64_C(0x9e3779b97f4a7c15);
    for (int rep = 0; rep < reps; rep++) {
        int order[S_COUNT];
        bench_shuffle(order, S_COUNT, &rng);
        for (int j = 0; j < S_COUNT; j++) {
            int m = order[j];
            if (!enabled[m])
                continue;
            double ms = run_one(set, m);
            if (ms < 0)
                enabled[m] = 0;
            else
                samples[m * reps + rep] = ms;
        }
    }
    double med[S_COUNT];
    for (int m = 0; m < S_COUNT; m++) {
        int n = 0;
        for (int rep = 0; rep < reps; rep++)
            if (samples[m * reps + rep] >= 0)
                v[n++] = samples[m * reps + rep];
        med[m] = n ? bench_median(v, n) : -1;
    }
    print_system(set, &f, samples, med, reps);
    sys_stop(set);
    free(set);
    free(samples);
    free(v);
    return 0;
}
