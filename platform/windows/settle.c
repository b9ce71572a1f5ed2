/*
 * settle.c - memdiff__os_settle_heap() for the Windows backend: HeapCompact on every process heap
 * (the CRT's malloc allocates from the process heap), which coalesces free blocks and decommits
 * the large free ones.
 */
#include "win.h"

void memdiff__os_settle_heap(void)
{
    /* No allocation here: a fixed array; heaps past it (rare) stay as they are. */
    HANDLE heaps[64];
    DWORD n = GetProcessHeaps(sizeof heaps / sizeof heaps[0], heaps);
    if (n > sizeof heaps / sizeof heaps[0])
        n = sizeof heaps / sizeof heaps[0];
    for (DWORD i = 0; i < n; i++)
        (void)HeapCompact(heaps[i], 0);
}
