/* consumer.c - touches 10 pages between two snapshots and checks memdiff sees exactly 10 new
 * private pages in the block holding them. Built against the installed library. */
#define _GNU_SOURCE
#include <memdiff.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    /* Guard pages around the mapping keep the kernel from merging it with a neighbour. */
    char *g = mmap(NULL, 34 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g == MAP_FAILED)
        return 2;
    char *m = mmap(g + ps, 32 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                   -1, 0);
    memdiff_snapshot *a = NULL, *b = NULL;
    memdiff_diff *d = NULL;
    if (m == MAP_FAILED || memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &a) != MEMDIFF_OK)
        return 2;
    for (int i = 0; i < 10; i++)
        m[i * 3 * ps] = 1;
    if (memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &b) != MEMDIFF_OK ||
        memdiff_compare(a, b, 0, &d) != MEMDIFF_OK) {
        fprintf(stderr, "consumer: %s\n", memdiff_last_error());
        return 2;
    }
    uint64_t got = 0;
    for (size_t i = 0; i < memdiff_diff_block_count(d); i++) {
        memdiff_block k;
        if (memdiff_diff_block(d, i, &k) != MEMDIFF_OK) {
            fprintf(stderr, "consumer: %s\n", memdiff_last_error());
            return 2;
        }
        if (k.start <= (uintptr_t)m && (uintptr_t)m < k.end)
            got = k.totals.new_private_bytes;
    }
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    printf("consumer: %llu new private bytes, expected %zu\n", (unsigned long long)got, 10 * ps);
    return got == 10 * ps ? 0 : 1;
}
