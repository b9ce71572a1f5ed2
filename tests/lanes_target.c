/*
 * lanes_target.c - the process test_lanes.c snapshots: a plain program (no sanitizer: its own
 * memory is what the test knows), exec'd, so that no page of it is shared copy-on-write with
 * the test, whose writes would make them private between two snapshots, and linked statically,
 * so that no page of it is a shared library's, which turns shared or private between two
 * snapshots as other processes map it and let it go.
 *
 * Without arguments it maps LANES_MIB MiB (MADV_NOHUGEPAGE) in three parts: every page written;
 * every other page; runs of 1 to 70 pages with gaps of 1 to 9 (a fixed cycle). Then, where the
 * kernel has them (Linux 6.13: MADV_GUARD_INSTALL), 4 guard pages every GUARD_EVERY MiB of the
 * first half, so that every chunk a lane scans there holds a range the walk must leave out
 * (PAGE_IS_GUARD): those chunks' ranges fail the lane's check, and the walk sorts them out
 * itself, while the chunks of the second half pass it.
 * "small" maps nothing. Then it writes 'r' to standard output and waits to be killed.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LANES_MIB 768
#define GUARD_EVERY 24 /* MiB: less than a lanes chunk (64 MiB), wherever its edges fall */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "small") != 0) {
        size_t ps = (size_t)sysconf(_SC_PAGESIZE), len = (size_t)LANES_MIB << 20;
        size_t third = len / 3 / ps * ps;
        char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return 1;
        (void)madvise(m, len, MADV_NOHUGEPAGE);
        for (size_t i = 0; i < third; i += ps)
            m[i] = 1;
        for (size_t i = third; i < 2 * third; i += 2 * ps)
            m[i] = 2;
        size_t at = 2 * third, k = 0;
        while (at < len) {
            size_t run = 1 + k % 70, gap = 1 + k % 9;
            for (size_t j = 0; j < run && at < len; j++, at += ps)
                m[at] = 3;
            at += gap * ps;
            k++;
        }
        for (size_t g = (size_t)GUARD_EVERY << 20; g < len / 2; g += (size_t)GUARD_EVERY << 20)
            (void)madvise(m + g + 8 * ps, 4 * ps, MADV_GUARD_INSTALL); /* EINVAL before 6.13 */
    }
    if (write(1, "r", 1) != 1)
        return 1;
    for (;;)
        pause();
}
