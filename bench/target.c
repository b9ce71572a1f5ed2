/*
 * target.c - the processes the benchmark measures. Each target is this program re-executed in a
 * child (fork + exec of /proc/self/exe): a fresh address space holding only the program, libc and
 * the target's mapping, not a copy-on-write image of the benchmark's own buffers. The child builds
 * its memory, reports "ready" on one pipe and blocks reading another until the benchmark closes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define HUGE_2M ((uint64_t)2 << 20)
#define SPARSE_PIECE ((uint64_t)16 << 20)

static uint64_t status_kb(pid_t pid, const char *key)
{
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strstr(buf, key);
    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

int bench_target_start(const bench_target_spec *spec, bench_target *out)
{
    memset(out, 0, sizeof *out);
    out->release_fd = -1;
    int ready[2], hold[2];
    if (pipe2(ready, O_CLOEXEC) || pipe2(hold, O_CLOEXEC)) {
        perror("pipe");
        return -1;
    }
    char kind[16], map[32], touched[32], rfd[16], hfd[16];
    snprintf(kind, sizeof kind, "%d", (int)spec->kind);
    snprintf(map, sizeof map, "%" PRIu64, spec->map_bytes);
    snprintf(touched, sizeof touched, "%" PRIu64, spec->touched_bytes);
    snprintf(rfd, sizeof rfd, "%d", ready[1]);
    snprintf(hfd, sizeof hfd, "%d", hold[0]);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        /* The child's ends survive exec; the benchmark's ends do not (O_CLOEXEC). */
        fcntl(ready[1], F_SETFD, 0);
        fcntl(hold[0], F_SETFD, 0);
        char *args[] = {"memdiff_bench", BENCH_TARGET_ARG, kind, map, touched, rfd, hfd, NULL};
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(ready[1]);
    close(hold[0]);
    char line[128];
    ssize_t n = 0, r;
    while ((r = read(ready[0], line + n, sizeof line - 1 - (size_t)n)) > 0)
        n += r;
    close(ready[0]);
    line[n] = '\0';
    out->pid = pid;
    out->release_fd = hold[1];
    if (sscanf(line, "ok %" SCNx64 " %" SCNu64, &out->map_start, &out->map_bytes) != 2) {
        fprintf(stderr, "memdiff_bench: target %s failed to start: %s\n", spec->name,
                n ? line : "(no answer)");
        bench_target_stop(out);
        return -1;
    }
    out->rss_bytes = status_kb(pid, "VmRSS:") * 1024;
    out->anon_huge = bench_anon_huge(pid);
    return 0;
}

void bench_target_stop(bench_target *t)
{
    if (t->release_fd >= 0)
        close(t->release_fd);
    t->release_fd = -1;
    if (t->pid > 0) {
        int st;
        while (waitpid(t->pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
    t->pid = 0;
}

static void say(int fd, const char *msg)
{
    size_t len = strlen(msg);
    while (len) {
        ssize_t w = write(fd, msg, len);
        if (w <= 0)
            break;
        msg += w;
        len -= (size_t)w;
    }
}

static _Noreturn void fail(int fd, const char *what)
{
    char msg[160];
    snprintf(msg, sizeof msg, "error %s: %s", what, strerror(errno));
    say(fd, msg);
    _exit(1);
}

/* BENCH_PYTHON: python3 in this process's place, adding bytes objects of 1 MiB (written, so
 * resident) until its resident set (VmRSS) reaches map_bytes, answering on the same pipes. */
static _Noreturn void exec_python(uint64_t map_bytes, int ready, int hold)
{
    char script[640];
    snprintf(script, sizeof script,
             "import os\n"
             "def rss():\n"
             "    with open('/proc/self/status') as f:\n"
             "        return next(int(l.split()[1]) for l in f if l.startswith('VmRSS:')) << 10\n"
             "held = []\n"
             "while rss() < %" PRIu64 ":\n"
             "    held.append(bytes([len(held) & 255]) * (1 << 20))\n"
             "os.write(%d, b'ok 0 %" PRIu64 "')\n"
             "os.close(%d)\n"
             "while os.read(%d, 1):\n"
             "    pass\n",
             map_bytes, ready, map_bytes, ready, hold);
    const char *python = bench_python();
    char *args[] = {"python3", "-c", script, NULL};
    execvp(python, args);
    fail(ready, "exec python3");
}

const char *bench_python(void)
{
    const char *chosen = getenv("MEMDIFF_BENCH_PYTHON");
    if (chosen && *chosen)
        return chosen;
    /* The system's interpreter where there is one (a clean Debian machine's: one binary with
     * libpython in it, some 40 mappings), not whichever a PATH finds first (a pyenv build maps
     * libpython and its modules apart: some 100): the floors of a small process follow its
     * mappings, memdiff's fixed costs do not. */
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

void bench_target_main(int argc, char **argv)
{
    if (argc != 7)
        _exit(2);
    bench_kind kind = (bench_kind)atoi(argv[2]);
    uint64_t map_bytes = strtoull(argv[3], NULL, 10);
    uint64_t touched = strtoull(argv[4], NULL, 10);
    int ready = atoi(argv[5]), hold = atoi(argv[6]);
    long page = sysconf(_SC_PAGESIZE);
    if (kind == BENCH_PYTHON)
        exec_python(map_bytes, ready, hold);

    /* THP wants 2 MiB alignment: map a bit more and start at the first boundary. */
    uint64_t extra = kind == BENCH_THP ? HUGE_2M : 0;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    char *base = mmap(NULL, map_bytes + extra, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (base == MAP_FAILED)
        fail(ready, "mmap");
    char *p = base;
    if (kind == BENCH_THP) {
        p = (char *)(((uintptr_t)base + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1));
        if (p != base)
            munmap(base, (size_t)(p - base));
        munmap(p + map_bytes, (size_t)(base + map_bytes + extra - (p + map_bytes)));
        if (madvise(p, map_bytes, MADV_HUGEPAGE))
            fail(ready, "madvise(MADV_HUGEPAGE)");
    } else {
        /* Keep a THP=always kernel from backing these with huge pages: they are the 4 KiB
         * cases. */
        (void)madvise(p, map_bytes, MADV_NOHUGEPAGE);
    }
    switch (kind) {
    case BENCH_DENSE:
    case BENCH_THP:
        for (uint64_t off = 0; off < map_bytes; off += (uint64_t)page)
            p[off] = 1;
        break;
    case BENCH_ALT:
        for (uint64_t off = 0; off < map_bytes; off += 2 * (uint64_t)page)
            p[off] = 1;
        break;
    case BENCH_RUNS: {
        /* Geometric lengths with mean 4 (p = 1/4): the number of trials to the first success,
         * from xorshift64 with a fixed seed. Resident runs and gaps alike, so half the pages. */
        uint64_t x = UINT64_C(0x9e3779b97f4a7c15), pages = map_bytes / (uint64_t)page, i = 0;
        int resident = 1;
        while (i < pages) {
            uint64_t len = 1;
            for (;;) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if ((x & 3) == 0)
                    break;
                len++;
            }
            for (uint64_t k = 0; k < len && i < pages; k++, i++)
                if (resident)
                    p[i * (uint64_t)page] = 1;
            resident = !resident;
        }
        break;
    }
    case BENCH_PYTHON: /* exec'd above */
        break;
    case BENCH_SPARSE: {
        uint64_t pieces = touched / SPARSE_PIECE;
        uint64_t stride = pieces ? map_bytes / pieces : map_bytes;
        for (uint64_t k = 0; k < pieces; k++)
            for (uint64_t off = 0; off < SPARSE_PIECE; off += (uint64_t)page)
                p[k * stride + off] = 1;
        break;
    }
    }
    char msg[96];
    snprintf(msg, sizeof msg, "ok %" PRIx64 " %" PRIu64, (uint64_t)(uintptr_t)p, map_bytes);
    say(ready, msg);
    close(ready);
    for (;;) {
        char c;
        ssize_t r = read(hold, &c, 1);
        if (r == 0 || (r < 0 && errno != EINTR))
            _exit(0);
    }
}
