/*
 * radix.c - the sort of frame numbers shared by deep's kernel page facts (kflags.c) and the
 * page_idle bits (refs.c): a batch of frames in a few linear passes, without allocation.
 */
#include <string.h>

#include "linux.h"

uint64_t *memdiff__linux_radix_sort(uint64_t *a, uint64_t *tmp, size_t n, unsigned from)
{
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++)
        max |= a[i];
    uint32_t count[2048];
    for (unsigned shift = from; shift < 64 && (max >> shift); shift += 11) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++)
            count[(a[i] >> shift) & 2047]++;
        uint32_t sum = 0;
        for (size_t d = 0; d < 2048; d++) {
            uint32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp[count[(a[i] >> shift) & 2047]++] = a[i];
        uint64_t *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}
