/*
 * agreement_target.c - memdiff_agreement_target, a process with memory of every category, held
 * still for the agreement and faults suites (test_agreement.c, test_faults.c).
 *
 * Usage: memdiff_agreement_target DIR [MODULE]
 *   DIR     a directory on a disk file system, for the file the target maps (created, unlinked
 *           again when the target exits)
 *   MODULE  a shared library to dlopen (the tests pass libmemdiff_plain_testlib.so)
 *
 * The target lays out its memory, prints one line per feature to stdout,
 *     "<name> 0x<start> 0x<end>\n"
 * then "ready <pid>\n", and blocks reading stdin until end of file. Its two extra threads block
 * reading a pipe and its copy-on-write child blocks reading another, so every thread sits in a
 * system call, where /proc/PID/task/TID/syscall shows its stack pointer, and no page changes
 * while the test compares. It is built without sanitizers even in a sanitizer build: its heaps
 * must be glibc's (AddressSanitizer replaces malloc, docs/categories.md), and the figures it is
 * compared on must be those of a plain program.
 *
 * Why each feature is laid out as it is:
 *  - Mappings that must stay distinct sit between PROT_NONE guard pages of their own reservation
 *    (the kernel merges adjacent anonymous mappings with equal flags) and carry MADV_NOHUGEPAGE,
 *    except the two regions that exist to get huge pages.
 *  - "cow" is touched before the fork and 4 of its 16 pages are written by the child afterwards:
 *    12 pages stay mapped by both processes (shared, Pss halved), 4 are the parent's alone.
 *  - "zero" is read, never written: every page maps the shared zero page (mm/memory.c
 *    do_anonymous_page), which smaps leaves out of Rss (vm_normal_page() returns NULL for it);
 *    on a kernel that maps no zero page (a PVM guest booted with pvm_no_zero_page=1), pages of
 *    the target's own.
 *  - "thp" and "hugezero" are 2 MiB aligned with MADV_HUGEPAGE: a write fault maps a
 *    transparent huge page, a read fault the huge zero page (when the kernel has THP enabled for
 *    madvised regions, and transparent_hugepage/use_zero_page).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define HUGE_SIZE ((size_t)2 << 20)

static size_t page;
static int thread_pipe[2];
static int arena_ready[2];
static char file_path[PATH_MAX];

static void die(const char *what)
{
    fprintf(stderr, "agreement_target: %s: %s\n", what, strerror(errno));
    if (file_path[0])
        unlink(file_path);
    exit(2);
}

static void report(const char *name, const void *start, size_t len)
{
    printf("%s 0x%llx 0x%llx\n", name, (unsigned long long)(uintptr_t)start,
           (unsigned long long)((uintptr_t)start + len));
}

/* npages mapped with (prot, flags, fd) between two PROT_NONE guard pages. */
static char *guarded(size_t npages, int prot, int flags, int fd)
{
    char *r = mmap(NULL, (npages + 2) * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED)
        die("reserve");
    char *p = mmap(r + page, npages * page, prot, flags | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED)
        die("mmap");
    if (!(flags & MAP_SHARED))
        (void)madvise(p, npages * page, MADV_NOHUGEPAGE);
    return p;
}

/* len bytes at a HUGE_SIZE boundary, MADV_HUGEPAGE, inside a reservation of len + HUGE_SIZE. */
static char *huge_aligned(size_t len)
{
    char *r = mmap(NULL, len + HUGE_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED)
        die("reserve huge");
    char *p = (char *)(((uintptr_t)r + HUGE_SIZE - 1) & ~(uintptr_t)(HUGE_SIZE - 1));
    if (mprotect(p, len, PROT_READ | PROT_WRITE) != 0)
        die("mprotect huge");
    (void)madvise(p, len, MADV_HUGEPAGE);
    return p;
}

static void write_pages(char *p, size_t first, size_t count)
{
    for (size_t i = first; i < first + count; i++)
        ((volatile char *)p)[i * page] = (char)(i + 1);
}

static unsigned read_pages(const char *p, size_t first, size_t count)
{
    unsigned sum = 0;
    for (size_t i = first; i < first + count; i++)
        sum += (unsigned char)((const volatile char *)p)[i * page];
    return sum;
}

/* A thread that allocates from its own malloc arena (glibc gives a second thread a new arena
 * while arenas are fewer than 8 x cores), reports the block, then blocks reading a pipe. */
static void *arena_thread(void *arg)
{
    (void)arg;
    char *block = malloc(96 * 1024); /* below the mmap threshold (128 KiB): from the arena heap */
    if (!block)
        die("malloc in thread");
    memset(block, 0x5a, 96 * 1024);
    report("arena_block", block, 96 * 1024);
    fflush(stdout);
    (void)!write(arena_ready[1], "r", 1);
    char b;
    (void)!read(thread_pipe[0], &b, 1);
    free(block);
    return NULL;
}

static void *idle_thread(void *arg)
{
    (void)arg;
    char b;
    (void)!read(thread_pipe[0], &b, 1);
    return NULL;
}

/* Waits (up to 10 s) until every thread but the calling one is blocked in read(2): a thread's
 * stack pointer shows in task/TID/syscall only while it is blocked in the kernel. */
static void wait_threads_blocked(void)
{
    for (int tries = 0; tries < 10000; tries++) {
        int waiting = 0;
        DIR *d = opendir("/proc/self/task");
        if (!d)
            die("opendir task");
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char path[300], text[64] = "";
            if (e->d_name[0] == '.' || atoi(e->d_name) == (int)getpid())
                continue;
            snprintf(path, sizeof path, "/proc/self/task/%s/syscall", e->d_name);
            FILE *f = fopen(path, "r");
            if (f) {
                if (!fgets(text, sizeof text, f))
                    text[0] = '\0';
                fclose(f);
            }
            if (strtol(text, NULL, 10) != SYS_read || strncmp(text, "running", 7) == 0)
                waiting++;
        }
        closedir(d);
        if (!waiting)
            return;
        usleep(1000);
    }
    errno = ETIMEDOUT;
    die("threads never blocked in read");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: memdiff_agreement_target DIR [MODULE]\n");
        return 2;
    }
    page = (size_t)sysconf(_SC_PAGESIZE);
    setvbuf(stdout, NULL, _IOLBF, 0);

    /* The copy-on-write region comes first, then the child that shares it. */
    char *cow = guarded(16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    write_pages(cow, 0, 16);
    int child_pipe[2], child_ready[2];
    if (pipe(child_pipe) != 0 || pipe(child_ready) != 0)
        die("pipe");
    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(child_pipe[1]);
        close(child_ready[0]);
        write_pages(cow, 12, 4);
        (void)!write(child_ready[1], "r", 1);
        char b;
        (void)!read(child_pipe[0], &b, 1);
        _exit(0);
    }
    close(child_pipe[0]);
    close(child_ready[1]);
    char b;
    if (read(child_ready[0], &b, 1) != 1)
        die("child");
    report("cow", cow, 16 * page);
    printf("cow_child %d\n", (int)child);

    /* Image: a module loaded at run time, its .bss partly written. */
    if (argc > 2) {
        void *h = dlopen(argv[2], RTLD_NOW);
        if (!h) {
            fprintf(stderr, "agreement_target: dlopen %s: %s\n", argv[2], dlerror());
            return 2;
        }
        void *(*bss)(void) = (void *(*)(void))dlsym(h, "memdiff_testlib_bss");
        void (*touch)(size_t, size_t) =
            (void (*)(size_t, size_t))dlsym(h, "memdiff_testlib_touch_bss");
        if (!bss || !touch)
            die("dlsym");
        touch(page, 3);
        report("module_bss", bss(), 64 * 1024);
    }

    /* Heap: the brk heap (small blocks), an mmapped chunk (above the mmap threshold). */
    char *small = malloc(64 * 1024);
    char *chunk = malloc(4 << 20);
    if (!small || !chunk)
        die("malloc");
    memset(small, 1, 64 * 1024);
    memset(chunk, 1, 2 << 20); /* half of it */
    report("brk_block", small, 64 * 1024);
    report("mmap_chunk", chunk, 4 << 20);

    /* Threads: one with a malloc arena of its own, one idle. */
    if (pipe(thread_pipe) != 0 || pipe(arena_ready) != 0)
        die("pipe");
    pthread_t t1, t2;
    if (pthread_create(&t1, NULL, arena_thread, NULL) != 0 ||
        pthread_create(&t2, NULL, idle_thread, NULL) != 0)
        die("pthread_create");

    /* Mapped file: 64 pages on disk, 8 of them read through the mapping. */
    snprintf(file_path, sizeof file_path, "%s/memdiff-agreement-%d.dat", argv[1], (int)getpid());
    int fd = open(file_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die("create file");
    char *buf = calloc(1, page);
    if (!buf)
        die("calloc");
    for (size_t i = 0; i < 64; i++) {
        memset(buf, (int)(i + 1), page);
        if (write(fd, buf, page) != (ssize_t)page)
            die("write file");
    }
    free(buf);
    char *file = guarded(64, PROT_READ, MAP_PRIVATE, fd);
    unsigned sum = 0;
    for (size_t i = 0; i < 8; i++)
        sum += read_pages(file, i * 8, 1);
    report("file", file, 64 * page);

    /* Shared memory: anonymous, memfd, SysV. */
    char *shanon = guarded(8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1);
    write_pages(shanon, 0, 5);
    report("shared_anon", shanon, 8 * page);
    int mfd = memfd_create("memdiff-agreement", 0);
    if (mfd < 0 || ftruncate(mfd, (off_t)(8 * page)) != 0)
        die("memfd");
    char *memfd = guarded(8, PROT_READ | PROT_WRITE, MAP_SHARED, mfd);
    write_pages(memfd, 0, 3);
    report("memfd", memfd, 8 * page);
    int shmid = shmget(IPC_PRIVATE, 8 * page, IPC_CREAT | 0600);
    if (shmid < 0)
        die("shmget");
    char *sysv = shmat(shmid, NULL, 0);
    if (sysv == (void *)-1)
        die("shmat");
    shmctl(shmid, IPC_RMID, NULL); /* gone when the target detaches, whatever happens */
    write_pages(sysv, 0, 4);
    report("sysv", sysv, 8 * page);

    /* Private anonymous: partly written; read only (the zero page); written then discarded. */
    char *priv = guarded(32, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    write_pages(priv, 0, 10);
    report("private", priv, 32 * page);
    char *zero = guarded(16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    sum += read_pages(zero, 0, 16);
    report("zero", zero, 16 * page);
    char *dontneed = guarded(16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    write_pages(dontneed, 0, 16);
    if (madvise(dontneed + 4 * page, 6 * page, MADV_DONTNEED) != 0)
        die("MADV_DONTNEED");
    report("dontneed", dontneed, 16 * page);

    /* Huge pages: one written (a THP), one read (the huge zero page). */
    char *thp = huge_aligned(HUGE_SIZE);
    thp[0] = 1;
    report("thp", thp, HUGE_SIZE);
    char *hugezero = huge_aligned(HUGE_SIZE);
    sum += (unsigned char)((volatile char *)hugezero)[0];
    report("hugezero", hugezero, HUGE_SIZE);

    /* The arena thread's line comes before "ready", and so do both threads' blocking. */
    if (read(arena_ready[0], &b, 1) != 1)
        die("arena thread");
    wait_threads_blocked();
    printf("checksum %u\n", sum & 1u); /* keeps the reads from being optimised away */
    printf("ready %d\n", (int)getpid());
    fflush(stdout);

    /* Hold still until the test closes stdin. */
    while (read(0, &b, 1) > 0) {
    }
    if (write(thread_pipe[1], "xx", 2) != 2 || write(child_pipe[1], "x", 1) != 1)
        die("release");
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    waitpid(child, NULL, 0);
    unlink(file_path);
    shmdt(sysv);
    free(chunk);
    free(small);
    return 0;
}
