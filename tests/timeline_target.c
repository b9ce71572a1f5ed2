/*
 * timeline_target.c - a program with known phases for the timeline suite (test_timeline.c):
 *
 *   mark "begin"; map and write 64 MiB; mark "allocated"; unmap half; mark "freed half"; exit 7
 *
 * Given a FILE (the report tests, report_record.c), before the exit it also maps FILE privately,
 * reads one byte per page and marks "mapped file": the file's pages in the mapped-file category.
 *
 * After each mark it waits for one byte on stdin, so that the recorder takes its snapshot while
 * the phase holds. The 64 MiB are private anonymous memory between two PROT_NONE guard pages (a
 * VMA of its own: the kernel merges equal neighbours) with small pages (MADV_NOHUGEPAGE), so
 * that the change is exactly 16,384 pages of 4 KiB and then 8,192 fewer. Marks reach the
 * recorder through MEMDIFF_MARK_FD.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memdiff.h"

#define SIZE ((size_t)64 << 20)

static void wait_go(void)
{
    char c;
    if (read(0, &c, 1) != 1)
        _exit(2);
}

static void mark(const char *label)
{
    if (memdiff_mark(label) != 1) {
        fprintf(stderr, "timeline_target: mark \"%s\" not sent: %s\n", label,
                memdiff_last_error());
        _exit(3);
    }
}

/* One store per page. Not instrumented: under AddressSanitizer a store also reads the shadow of
 * its address, other pages that would count. */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, noinline))
#endif
static void touch(volatile char *p, size_t n, size_t ps)
{
    for (size_t i = 0; i < n; i += ps)
        p[i] = 1;
}

/* FILE mapped and every page read; its size, or -1. */
static long map_file(const char *path, size_t ps)
{
    int fd = open(path, O_RDONLY);
    off_t n = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
    if (n <= 0)
        return -1;
    volatile char *p = mmap(NULL, (size_t)n, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    char sum = 0;
    for (off_t i = 0; i < n; i += (off_t)ps)
        sum += p[i];
    (void)sum;
    return (long)n;
}

int main(int argc, char **argv)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    mark("begin");
    wait_go();
    char *r = mmap(NULL, SIZE + 2 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED || mprotect(r + ps, SIZE, PROT_READ | PROT_WRITE) != 0)
        return 4;
    char *p = r + ps;
    (void)madvise(p, SIZE, MADV_NOHUGEPAGE);
    touch(p, SIZE, ps);
    mark("allocated");
    wait_go();
    if (munmap(p + SIZE / 2, SIZE / 2) != 0)
        return 5;
    mark("freed half");
    wait_go();
    if (argc > 1) {
        if (map_file(argv[1], ps) < 0)
            return 6;
        mark("mapped file");
        wait_go();
    }
    return 7;
}
