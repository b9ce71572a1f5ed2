/*
 * record_target.c - a program with known phases for the record suite (test_record.c), run under
 * `memdiff record` and `memdiff run`:
 *
 *   print RECORD_TARGET_LINE; mark "begin"; map and write 64 MiB; mark "allocated"; unmap
 *   half; mark "freed half"; map FILE and read every page; mark "mapped"; exit 7
 *
 * usage: record_target [--wait] FILE. With --wait it reads one byte from stdin after each mark,
 * so that the recorder's snapshot at the mark sees the phase whole. The 64 MiB are private
 * anonymous memory with small pages between two PROT_NONE guard pages mapped from FILE: a
 * block of its own in a report (a neighbour of another category and label), so the change is
 * exactly 16,384 pages of 4 KiB, then 8,192 fewer. FILE is then mapped whole, read only. Without a recorder's channel the marks go nowhere (memdiff_mark() returns 0).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memdiff.h"

#define SIZE ((size_t)64 << 20)
#define RECORD_TARGET_LINE "record_target: phases begin, allocated, freed half, mapped\n"

static int wait;

/* LeakSanitizer (a sanitizer build) stops the world at exit with ptrace, which a traced process
 * cannot: it would end with status 1 under memdiff's exit stop. This program leaks by design. */
const char *__asan_default_options(void);
#if defined(__clang__) || defined(__GNUC__)
__attribute__((visibility("default"), used)) /* the runtime looks it up by name */
#endif
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}

static void mark(const char *label)
{
    if (memdiff_mark(label) < 0)
        _exit(3);
    char c;
    if (wait && read(0, &c, 1) != 1)
        _exit(2);
}

#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address, noinline))
#endif
static unsigned touch(volatile char *p, size_t n, size_t ps, int write)
{
    unsigned sum = 0;
    for (size_t i = 0; i < n; i += ps) {
        if (write)
            p[i] = 1;
        else
            sum += (unsigned char)p[i];
    }
    return sum;
}

int main(int argc, char **argv)
{
    int a = 1;
    if (a < argc && strcmp(argv[a], "--wait") == 0) {
        wait = 1;
        a++;
    }
    if (a + 1 != argc)
        return 64;
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    int fd = open(argv[a], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0)
        return 6;
    fputs(RECORD_TARGET_LINE, stdout);
    fflush(stdout);
    mark("begin");
    char *r = mmap(NULL, SIZE + 2 * ps, PROT_NONE, MAP_PRIVATE, fd, 0);
    if (r == MAP_FAILED)
        return 4;
    char *p = mmap(r + ps, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                   -1, 0);
    if (p != r + ps)
        return 4;
    (void)madvise(p, SIZE, MADV_NOHUGEPAGE);
    touch(p, SIZE, ps, 1);
    mark("allocated");
    if (munmap(p + SIZE / 2, SIZE / 2) != 0)
        return 5;
    mark("freed half");
    char *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f == MAP_FAILED)
        return 6;
    (void)madvise(f, (size_t)st.st_size, MADV_NOHUGEPAGE);
    volatile unsigned sum = touch(f, (size_t)st.st_size, ps, 0);
    (void)sum;
    mark("mapped");
    return 7;
}
