/*
 * system_target.c - the process the cli_system suite measures with memdiff system: named
 * argv[1] (/proc/PID/comm, what --name matches), it writes argv[2] pages of an anonymous
 * mapping of its own, answers 'r' on stdout, and for each 'g' on stdin writes argv[3] pages
 * more and answers 'g'; EOF exits.
 *
 * Linked statically: it maps no shared library, so that no other process starting or exiting
 * moves its PSS between memdiff's reading and the test's reading of smaps_rollup; and it is
 * exec'd, not a fork of the test, whose copy-on-write pages would be shared with the test
 * until one of them writes.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#define MAX_PAGES 4096

static void answer(char c)
{
    if (write(1, &c, 1) != 1)
        _exit(1);
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    prctl(PR_SET_NAME, argv[1], 0, 0, 0);
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama: let memdiff read us */
#endif
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = strtoul(argv[2], NULL, 10), grow = strtoul(argv[3], NULL, 10), used = 0;
    char *m = mmap(NULL, MAX_PAGES * (size_t)page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1;
    /* 4 KiB pages, one fault each: a THP=always kernel would back 512 at a time. */
    madvise(m, MAX_PAGES * (size_t)page, MADV_NOHUGEPAGE);
    for (; used < pages && used < MAX_PAGES; used++)
        m[used * (size_t)page] = 1;
    answer('r');
    char c;
    while (read(0, &c, 1) == 1) {
        for (size_t k = 0; c == 'g' && k < grow && used < MAX_PAGES; k++, used++)
            m[used * (size_t)page] = 1;
        answer(c);
    }
    return 0;
}
