/*
 * recording.c - what recording costs (memdiff_bench --record; docs/performance.md "Recording"):
 *
 *  - steady: `memdiff record PID -i 50ms` (20 polls per second) of a target whose memory does not
 *    change; the recorder's CPU (utime + stime from /proc/PID/stat) and the timeline's growth
 *    over a window that starts after the start snapshot;
 *  - run: the wall time of a command that maps and touches 4 GiB in 1 MiB steps and unmaps it
 *    again, alone and under `memdiff run`, alternately, in pairs; medians and the ratio.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define STEP ((size_t)1 << 20)
#define CHURN_BYTES ((size_t)4 << 30)

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of pid in seconds (proc(5): fields 14 and 15, after the ")" of comm). */
static double cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                     &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static pid_t spawn(char *const *argv)
{
    pid_t pid = fork();
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

void bench_churn_main(void)
{
    size_t n = CHURN_BYTES / STEP, ps = (size_t)sysconf(_SC_PAGESIZE);
    char **p = calloc(n, sizeof *p);
    if (!p)
        _exit(1);
    for (size_t i = 0; i < n; i++) {
        p[i] = mmap(NULL, STEP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p[i] == MAP_FAILED)
            _exit(1);
        for (size_t o = 0; o < STEP; o += ps)
            p[i][o] = 1;
    }
    for (size_t i = 0; i < n; i++)
        munmap(p[i], STEP);
    free(p);
    _exit(0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int steady(const char *cli, const bench_target_spec *spec, double window)
{
    bench_target t;
    if (bench_target_start(spec, &t))
        return -1;
    char pid[16], path[] = "/tmp/memdiff-bench-record-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    snprintf(pid, sizeof pid, "%d", (int)t.pid);
    char *argv[] = {(char *)cli, "record", pid, "-o", path, "-i", "50ms", "-q", NULL};
    pid_t rec = spawn(argv);
    nap(2.0); /* past the start snapshot */
    double c0 = cpu_s(rec), w0 = mono_s();
    long long b0 = file_size(path);
    nap(window);
    double c1 = cpu_s(rec), w1 = mono_s();
    long long b1 = file_size(path);
    kill(rec, SIGINT);
    int st;
    waitpid(rec, &st, 0);
    unlink(path);
    printf("record, steady: %s target (VmRSS %.0f MiB), 20 polls/s, %.1f s window:\n"
           "  recorder CPU %.3f s = %.2f%% of one CPU; timeline +%lld bytes = %.0f bytes/s\n",
           spec->name, (double)t.rss_bytes / 1048576.0, w1 - w0, c1 - c0,
           100.0 * (c1 - c0) / (w1 - w0), b1 - b0, (double)(b1 - b0) / (w1 - w0));
    bench_target_stop(&t);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static double timed(char *const *argv)
{
    double t0 = mono_s();
    pid_t pid = spawn(argv);
    int st;
    waitpid(pid, &st, 0);
    double t = mono_s() - t0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t : -1;
}

static int run_overhead(const char *cli, const char *self, int pairs)
{
    char *alone[] = {(char *)self, BENCH_CHURN_ARG, NULL};
    char *under[] = {(char *)cli, "run", "-q", "--", (char *)self, BENCH_CHURN_ARG, NULL};
    double a[64], b[64], r[64];
    if (pairs > 64)
        pairs = 64;
    for (int i = 0; i < pairs; i++) {
        /* Alternate which goes first: drift of the machine falls on both. */
        if (i % 2) {
            b[i] = timed(under);
            a[i] = timed(alone);
        } else {
            a[i] = timed(alone);
            b[i] = timed(under);
        }
        if (a[i] < 0 || b[i] < 0)
            return -1;
        r[i] = b[i] / a[i];
    }
    double ma = median(a, pairs), mb = median(b, pairs), mr = median(r, pairs);
    printf("run: map and touch 4 GiB in 1 MiB steps, then unmap, %d pairs:\n"
           "  alone %.3f s, under memdiff run %.3f s (medians); median ratio %.4f (+%.2f%%)\n",
           pairs, ma, mb, mr, 100.0 * (mr - 1.0));
    return 0;
}

int bench_recording(const char *cli, const char *self, const bench_target_spec *spec, int pairs)
{
    /* The churn command by its own path: under `memdiff run`, /proc/self/exe is memdiff. */
    char exe[4096];
    ssize_t n = readlink(self, exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    int rc = steady(cli, spec, 10.0);
    if (run_overhead(cli, exe, pairs) != 0)
        rc = -1;
    return rc;
}
