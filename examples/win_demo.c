/*
 * win_demo.c - MemDiffDemo on Windows, written against MemDiff's 1999 API (memdiff1999.h) the
 * way the MSJ article's demo was, then the same difference through memdiff's own API. Between
 * two snapshots it
 *   - destroys a heap it filled before the first snapshot,
 *   - loads and frees a DLL (its pages go, what it made the system load may stay),
 *   - commits and touches VirtualAlloc'd memory,
 *   - creates a heap and allocates from it,
 *   - maps a pagefile-backed section and touches it,
 *   - starts a thread that touches its stack and waits,
 * then prints the MemDiff report, normal and verbose, and the per-category totals.
 *
 * Usage: memdiff_win_demo [dll-to-load]   (default: dbghelp.dll)
 */
#include <windows.h>

#include <stdio.h>
#include <string.h>

#include "memdiff1999.h"

#define PAGE 4096u
#define VALLOC_PAGES 10
#define SECTION_PAGES 6
#define STACK_PAGES 16

static HANDLE stack_done, stack_release;

/* Touches STACK_PAGES pages of a local array, then blocks until released, so that the second
 * snapshot sees its stack with those pages resident. */
static DWORD WINAPI stack_worker(LPVOID arg)
{
    (void)arg;
    volatile char buf[STACK_PAGES * PAGE];
    for (size_t i = 0; i < sizeof buf; i += PAGE)
        buf[i] = 1;
    SetEvent(stack_done);
    WaitForSingleObject(stack_release, INFINITE);
    return buf[0];
}

static void print_category_totals(HANDLE h1, HANDLE h2)
{
    memdiff_diff *diff = NULL;
    if (memdiff_compare((const memdiff_snapshot *)h1, (const memdiff_snapshot *)h2, 0, &diff) !=
        MEMDIFF_OK) {
        fprintf(stderr, "memdiff_win_demo: compare: %s\n", memdiff_last_error());
        return;
    }
    printf("\nThe same difference through memdiff's API (net bytes per category):\n");
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        memdiff_totals t;
        memdiff_diff_totals(diff, (memdiff_category)c, &t);
        if (t.new_bytes || t.freed_bytes)
            printf("  %-12s %+12lld\n", memdiff_category_name((memdiff_category)c),
                   (long long)t.net_bytes);
    }
    memdiff_diff_free(diff);
}

int main(int argc, char **argv)
{
    const char *dll = argc > 1 ? argv[1] : "dbghelp.dll";

    /* A heap filled before the first snapshot and destroyed after it: shows up as freed. */
    HANDLE heap1 = HeapCreate(0, 0, 0);
    HeapAlloc(heap1, HEAP_ZERO_MEMORY, 0x7000);

    HANDLE h1 = MDTakeSnapshot(GetCurrentProcess());
    if (!h1) {
        fprintf(stderr, "memdiff_win_demo: snapshot: %s\n", memdiff_last_error());
        return 1;
    }

    HeapDestroy(heap1);

    HMODULE module = LoadLibraryA(dll);
    if (module)
        FreeLibrary(module);
    else
        printf("(could not load %s: error %lu)\n", dll, GetLastError());

    char *p = VirtualAlloc(NULL, VALLOC_PAGES * PAGE, MEM_COMMIT, PAGE_READWRITE);
    if (p)
        memset(p, 0, VALLOC_PAGES * PAGE); /* Touch it! */

    HANDLE heap2 = HeapCreate(0, 0, 0);
    HeapAlloc(heap2, HEAP_ZERO_MEMORY, 0x1234);

    HANDLE section =
        CreateFileMappingA(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE, 0, SECTION_PAGES * PAGE,
                           NULL);
    void *view = section ? MapViewOfFile(section, FILE_MAP_WRITE, 0, 0, 0) : NULL;
    if (view)
        memset(view, 0, SECTION_PAGES * PAGE);

    stack_done = CreateEventA(NULL, TRUE, FALSE, NULL);
    stack_release = CreateEventA(NULL, TRUE, FALSE, NULL);
    DWORD tid = 0;
    HANDLE thread = CreateThread(NULL, 0, stack_worker, NULL, 0, &tid);
    WaitForSingleObject(stack_done, INFINITE);

    HANDLE h2 = MDTakeSnapshot(GetCurrentProcess());
    if (!h2) {
        fprintf(stderr, "memdiff_win_demo: snapshot: %s\n", memdiff_last_error());
        return 1;
    }

    printf("The demo: destroyed a heap of 0x7000 bytes, loaded and freed %s, touched %u\n"
           "VirtualAlloc'd pages, created a heap with a 0x1234-byte block, touched %u pages of\n"
           "a pagefile-backed section, and thread %lu touched %u pages of its stack.\n\n",
           dll, VALLOC_PAGES, SECTION_PAGES, (unsigned long)tid, STACK_PAGES);
    fflush(stdout);

    HANDLE out = GetStdHandle(STD_OUTPUT_HANDLE);
    MDCompareSnapshot(h1, h2, out, FALSE);
    printf("\nVerbose:\n");
    fflush(stdout);
    MDCompareSnapshot(h1, h2, out, TRUE);
    print_category_totals(h1, h2);

    SetEvent(stack_release);
    WaitForSingleObject(thread, INFINITE);
    CloseHandle(thread);
    MDFreeSnapshot(h1);
    MDFreeSnapshot(h2);
    return 0;
}
