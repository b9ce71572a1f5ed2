/*
 * test_scenarios.c - memory the test itself creates between two snapshots of its own process,
 * found in the right category, under the right label, with exact page counts.
 *
 * Exactness: every scenario writes (never only reads) one byte per page it counts, into memory
 * nothing else touches, and takes its "before" snapshot after all setup calls, so that the
 * allocator's own header pages are resident on both sides. Where Wine's answer differs from
 * Windows' (Linux fault-around on file reads) the expectation says so.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <malloc.h>
#include <psapi.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "memdiff1999.h"
#include "wintest.h"

static memdiff_snapshot *snap_at(memdiff_depth depth)
{
    memdiff_snapshot *s = NULL;
    int rc = memdiff_snapshot_self(depth, &s);
    if (rc != MEMDIFF_OK)
        wintest_fail(__FILE__, __LINE__, "snapshot: %s (%s)", memdiff_status_name(rc),
                     memdiff_last_error());
    return s;
}

static memdiff_snapshot *snap(void)
{
    return snap_at(MEMDIFF_DEPTH_STANDARD);
}

static memdiff_diff *diff_of(const memdiff_snapshot *a, const memdiff_snapshot *b, unsigned flags)
{
    memdiff_diff *d = NULL;
    int rc = memdiff_compare(a, b, flags, &d);
    if (rc != MEMDIFF_OK)
        wintest_fail(__FILE__, __LINE__, "compare: %s (%s)", memdiff_status_name(rc),
                     memdiff_last_error());
    return d;
}

static uint64_t addr(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/* The block of a category at an address of the diff, copied into *blk: 1. When there is none,
 * a failure is recorded and the report printed, to see where the pages went instead: 0. */
static int block_in(const memdiff_diff *d, uint64_t at, memdiff_category cat, memdiff_block *blk)
{
    if (wintest_block_at(d, at, cat, blk))
        return 1;
    wintest_fail(__FILE__, __LINE__, "no %s block at 0x%llx", memdiff_category_name(cat),
                 (unsigned long long)at);
    wintest_dump(d);
    return 0;
}

/* Writes one byte into each of count pages from base, stride pages apart. */
static void write_pages(char *base, int count, int stride, char value)
{
    uint64_t pg = wintest_page();
    for (int i = 0; i < count; i++)
        ((volatile char *)base)[(uint64_t)(stride * i) * pg] = value;
}

/* A file path as the backend names it: the DOS form of the file's final path. */
static void dos_path_of(HANDLE file, char *out, size_t size)
{
    WCHAR w[MAX_PATH * 2];
    DWORD n = GetFinalPathNameByHandleW(file, w, MAX_PATH * 2, FILE_NAME_NORMALIZED);
    const WCHAR *p = w;
    if (n >= 4 && wcsncmp(w, L"\\\\?\\", 4) == 0)
        p += 4;
    if (n == 0 || !WideCharToMultiByte(CP_UTF8, 0, p, -1, out, (int)size, NULL, NULL))
        out[0] = '\0';
}

/* ---- VirtualAlloc: 64 pages reserved and committed, 13 touched --------------------------- */

static void private_scenario(memdiff_depth depth)
{
    const uint64_t pg = wintest_page();
    memdiff_snapshot *a = snap_at(depth), *b = NULL, *c = NULL;
    memdiff_diff *d = NULL, *dv = NULL, *df = NULL;
    char *v = VirtualAlloc(NULL, 64 * pg, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    if (!CHECK(a && v))
        goto out;
    write_pages(v, 13, 2, 1); /* every other page: 13 runs of one page */
    if (!CHECK((b = snap_at(depth)) != NULL) || !CHECK((d = diff_of(a, b, 0)) != NULL))
        goto out;

    memdiff_block blk;
    if (!block_in(d, addr(v), MEMDIFF_CAT_PRIVATE, &blk))
        goto out;
    CHECK_STR(blk.label, "anonymous");
    CHECK_EQ(blk.change, MEMDIFF_CHANGE_NEW);
    CHECK_EQ(blk.presence, MEMDIFF_IN_AFTER);
    CHECK_EQ(blk.totals.new_bytes, 13 * pg);
    CHECK_EQ(blk.totals.new_private_bytes, 13 * pg);
    memdiff_totals t;
    memdiff_diff_totals(d, MEMDIFF_CAT_PRIVATE, &t);
    CHECK_EQ(t.new_bytes, 13 * pg); /* nothing else private appeared */
    CHECK_EQ(t.freed_bytes, 0);

    memdiff_region r;
    if (CHECK(memdiff_snapshot_find(b, addr(v) + 5 * pg, &r) == MEMDIFF_OK)) {
        CHECK_EQ(r.category, MEMDIFF_CAT_PRIVATE);
        CHECK_EQ(r.start, addr(v));
        CHECK_EQ(r.end, addr(v) + 64 * pg);
        CHECK_EQ(r.resident_bytes, 13 * pg);
        CHECK_EQ(r.private_bytes, 13 * pg);
        CHECK_EQ(r.prot, MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE);
    }

    /* Verbose: one block per run of pages with identical attributes. */
    if (CHECK((dv = diff_of(a, b, MEMDIFF_COMPARE_VERBOSE)) != NULL)) {
        size_t n = 0;
        for (size_t i = 0; i < memdiff_diff_block_count(dv); i++) {
            memdiff_block x;
            if (!CHECK_EQ(memdiff_diff_block(dv, i, &x), MEMDIFF_OK))
                break;
            if (x.start >= addr(v) && x.end <= addr(v) + 64 * pg) {
                n++;
                CHECK_EQ(x.end - x.start, pg);
                CHECK_EQ(x.attrs_after, MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE);
            }
        }
        CHECK_EQ(n, 13);
    }

    VirtualFree(v, 0, MEM_RELEASE);
    v = NULL;
    if (CHECK((c = snap_at(depth)) != NULL) && CHECK((df = diff_of(b, c, 0)) != NULL)) {
        if (block_in(df, r.start, MEMDIFF_CAT_PRIVATE, &blk)) {
            CHECK_EQ(blk.change, MEMDIFF_CHANGE_FREED);
            CHECK_EQ(blk.presence, MEMDIFF_IN_BEFORE);
            CHECK_EQ(blk.totals.freed_unmapped_bytes, 13 * pg);
            CHECK_EQ(blk.totals.net_bytes, -(int64_t)(13 * pg));
        }
    }
out:
    if (v)
        VirtualFree(v, 0, MEM_RELEASE);
    memdiff_diff_free(df);
    memdiff_diff_free(dv);
    memdiff_diff_free(d);
    memdiff_snapshot_free(c);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}

static void test_private_standard(void)
{
    private_scenario(MEMDIFF_DEPTH_STANDARD);
}

static void test_private_fast(void)
{
    private_scenario(MEMDIFF_DEPTH_FAST);
}

/* ---- HeapCreate: a 1 MiB block written through ---------------------------------------------- */

static void test_heap_create(void)
{
    const uint64_t pg = wintest_page();
    const size_t size = 1u << 20;
    HANDLE heap = HeapCreate(0, 0, 0);
    char *p = heap ? HeapAlloc(heap, 0, size) : NULL;
    memdiff_snapshot *a = NULL, *b = NULL, *c = NULL;
    memdiff_diff *d = NULL, *df = NULL;
    if (!CHECK(p != NULL))
        goto out;
    char label[64];
    snprintf(label, sizeof label, "heap 0x%llx", (unsigned long long)(uintptr_t)heap);
    /* HeapAlloc wrote the block's header into the block's first page: resident before. */
    uint64_t first = addr(p) / pg, last = (addr(p) + size - 1) / pg;
    uint64_t want = last - first; /* pages [first + 1, last] become resident */
    a = snap();
    memset(p, 0x5a, size);
    b = snap();
    if (!CHECK(a && b) || !CHECK((d = diff_of(a, b, 0)) != NULL))
        goto out;
    memdiff_block blk;
    if (!block_in(d, addr(p) + pg, MEMDIFF_CAT_HEAP, &blk))
        goto out;
    CHECK_STR(blk.label, label);
    CHECK_EQ(blk.change, MEMDIFF_CHANGE_NEW);
    CHECK_EQ(blk.totals.new_bytes, want * pg);
    CHECK_EQ(blk.totals.new_private_bytes, want * pg);
    memdiff_region r;
    if (CHECK(memdiff_snapshot_find(b, addr(p), &r) == MEMDIFF_OK)) {
        CHECK_EQ(r.category, MEMDIFF_CAT_HEAP);
        CHECK_STR(r.label, label);
        CHECK_EQ(r.resident_bytes, (want + 1) * pg);
    }

    HeapDestroy(heap);
    heap = NULL;
    if (CHECK((c = snap()) != NULL) && CHECK((df = diff_of(b, c, 0)) != NULL)) {
        if (block_in(df, addr(p) + pg, MEMDIFF_CAT_HEAP, &blk)) {
            CHECK_STR(blk.label, label);
            CHECK_EQ(blk.presence, MEMDIFF_IN_BEFORE);
            CHECK(blk.totals.freed_unmapped_bytes >= (want + 1) * pg);
        }
    }
out:
    if (heap)
        HeapDestroy(heap);
    memdiff_diff_free(df);
    memdiff_diff_free(d);
    memdiff_snapshot_free(c);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}

/* The heaps every process has, named as such. */
static void test_heap_labels(void)
{
    void *m = malloc(64);
    memdiff_snapshot *s = snap();
    memdiff_region r;
    if (CHECK(s && m)) {
        if (CHECK(memdiff_snapshot_find(s, addr(GetProcessHeap()), &r) == MEMDIFF_OK)) {
            CHECK_EQ(r.category, MEMDIFF_CAT_HEAP);
            CHECK(strncmp(r.label, "process heap", 12) == 0);
        }
        if (CHECK(memdiff_snapshot_find(s, addr(m), &r) == MEMDIFF_OK)) {
            CHECK_EQ(r.category, MEMDIFF_CAT_HEAP);
            CHECK(strstr(r.label, "CRT heap") != NULL); /* the heap malloc uses */
        }
    }
    memdiff_snapshot_free(s);
    free(m);
}

/* ---- a thread's stack --------------------------------------------------------------------- */

/* Wine 8 makes the top 241 pages (964 KiB) of every new thread's stack resident before the
 * thread runs (measured); Windows only the pages the thread uses. The pages written lie below
 * both, in a stack whose first 2 MiB CreateThread is asked to commit. */
#define STACK_TOUCHED 11
#define STACK_GAP_PAGES 300
#define STACK_COMMIT (2u << 20)

typedef struct stack_ctx {
    HANDLE ready, go[3];
    volatile uintptr_t sp;
    volatile uintptr_t lowest; /* the lowest page written */
} stack_ctx;

static DWORD WINAPI stack_thread(LPVOID arg)
{
    stack_ctx *c = arg;
    volatile char here = 0;
    c->sp = (uintptr_t)&here;
    /* A first round trip, so that the second runs on stack pages already resident. */
    SetEvent(c->ready);
    WaitForSingleObject(c->go[0], INFINITE);
    SetEvent(c->ready);
    WaitForSingleObject(c->go[1], INFINITE); /* the "before" snapshot is taken here */
    /* Pages well below the stack pointer, inside the committed stack: written without moving
     * the stack pointer, so nothing else lands there. */
    uintptr_t pg = (uintptr_t)wintest_page();
    uintptr_t top = (c->sp & ~(pg - 1)) - STACK_GAP_PAGES * pg;
    MEMORY_BASIC_INFORMATION m;
    if (VirtualQuery((void *)(top - (STACK_TOUCHED - 1) * pg), &m, sizeof m) &&
        m.State == MEM_COMMIT && (m.Protect & 0xff) == PAGE_READWRITE) {
        for (int i = 0; i < STACK_TOUCHED; i++)
            *(volatile char *)(top - (uintptr_t)i * pg) = 1;
        c->lowest = top - (STACK_TOUCHED - 1) * pg;
    }
    SetEvent(c->ready);
    WaitForSingleObject(c->go[2], INFINITE); /* the "after" snapshot is taken here */
    return (DWORD)here;
}

static void test_thread_stack(void)
{
    const uint64_t pg = wintest_page();
    stack_ctx c;
    memset(&c, 0, sizeof c);
    c.ready = CreateEventW(NULL, FALSE, FALSE, NULL);
    for (int i = 0; i < 3; i++)
        c.go[i] = CreateEventW(NULL, FALSE, FALSE, NULL);
    DWORD tid = 0;
    HANDLE t = CreateThread(NULL, STACK_COMMIT, stack_thread, &c, 0, &tid);
    memdiff_snapshot *a = NULL, *b = NULL;
    memdiff_diff *d = NULL;
    REQUIRE(t != NULL);
    WaitForSingleObject(c.ready, INFINITE);
    SetEvent(c.go[0]);
    WaitForSingleObject(c.ready, INFINITE);
    Sleep(20); /* let it block in WaitForSingleObject */
    a = snap();
    SetEvent(c.go[1]);
    WaitForSingleObject(c.ready, INFINITE);
    Sleep(20);
    b = snap();
    SetEvent(c.go[2]);
    WaitForSingleObject(t, INFINITE);

    char label[32];
    snprintf(label, sizeof label, "thread %lu", (unsigned long)tid);
    if (CHECK(a && b && c.lowest) && CHECK((d = diff_of(a, b, 0)) != NULL)) {
        memdiff_block blk;
        if (block_in(d, c.lowest, MEMDIFF_CAT_STACK, &blk)) {
            CHECK_STR(blk.label, label);
            CHECK_EQ(blk.totals.new_bytes, STACK_TOUCHED * pg);
            CHECK_EQ(blk.totals.new_private_bytes, STACK_TOUCHED * pg);
            CHECK_EQ(blk.totals.freed_bytes, 0);
        }
        memdiff_region r;
        if (CHECK(memdiff_snapshot_find(a, c.sp, &r) == MEMDIFF_OK)) {
            CHECK_EQ(r.category, MEMDIFF_CAT_STACK);
            CHECK_STR(r.label, label);
        }
    }
    CloseHandle(t);
    CloseHandle(c.ready);
    for (int i = 0; i < 3; i++)
        CloseHandle(c.go[i]);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}

/* ---- mapped files ------------------------------------------------------------------------- */

/* A file of npages pages next to the test program, open for reading and writing. */
static HANDLE make_file(const WCHAR *name, size_t npages, char *dos, size_t dos_size)
{
    WCHAR path[MAX_PATH];
    DWORD n = GetModuleFileNameW(NULL, path, MAX_PATH);
    WCHAR *slash = n ? wcsrchr(path, L'\\') : NULL;
    if (!slash)
        return INVALID_HANDLE_VALUE;
    wcscpy(slash + 1, name);
    HANDLE f = CreateFileW(path, GENERIC_READ | GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                           FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, NULL);
    if (f == INVALID_HANDLE_VALUE)
        return f;
    static char page[65536];
    memset(page, 'm', sizeof page);
    size_t pg = (size_t)wintest_page();
    for (size_t i = 0; i < npages; i++) {
        DWORD w;
        if (!WriteFile(f, page, (DWORD)pg, &w, NULL) || w != pg) {
            CloseHandle(f);
            return INVALID_HANDLE_VALUE;
        }
    }
    dos_path_of(f, dos, dos_size);
    return f;
}

static void test_mapped_file_write(void)
{
    const uint64_t pg = wintest_page();
    char path[MAX_PATH * 3];
    HANDLE f = make_file(L"memdiff_wintest_write.dat", 32, path, sizeof path);
    REQUIRE(f != INVALID_HANDLE_VALUE);
    HANDLE m = CreateFileMappingW(f, NULL, PAGE_READWRITE, 0, 0, NULL);
    char *view = m ? MapViewOfFile(m, FILE_MAP_WRITE, 0, 0, 0) : NULL;
    memdiff_snapshot *a = NULL, *b = NULL, *c = NULL;
    memdiff_diff *d = NULL, *df = NULL;
    if (!CHECK(view != NULL) || !CHECK(path[0] != '\0'))
        goto out;
    a = snap();
    write_pages(view, 7, 4, 'w');
    b = snap();
    if (!CHECK(a && b) || !CHECK((d = diff_of(a, b, 0)) != NULL))
        goto out;
    memdiff_block blk;
    if (!block_in(d, addr(view), MEMDIFF_CAT_MAPPED_FILE, &blk))
        goto out;
    CHECK_STR(blk.label, path);
    CHECK_EQ(blk.change, MEMDIFF_CHANGE_NEW);
    CHECK_EQ(blk.presence, MEMDIFF_IN_BEFORE | MEMDIFF_IN_AFTER);
    CHECK_EQ(blk.totals.new_bytes, 7 * pg);
    CHECK_EQ(blk.totals.new_shared_bytes, 7 * pg); /* page-cache pages: shareable */
    memdiff_region r;
    if (CHECK(memdiff_snapshot_find(b, addr(view), &r) == MEMDIFF_OK)) {
        CHECK_EQ(r.category, MEMDIFF_CAT_MAPPED_FILE);
        CHECK_EQ(r.flags, MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE);
        CHECK_STR(r.path, path);
        CHECK_EQ(r.end - r.start, 32 * pg);
        CHECK_EQ(r.resident_bytes, 7 * pg);
        CHECK_EQ(r.private_bytes, 0);
    }
    UnmapViewOfFile(view);
    view = NULL;
    if (CHECK((c = snap()) != NULL) && CHECK((df = diff_of(b, c, 0)) != NULL)) {
        if (block_in(df, r.start, MEMDIFF_CAT_MAPPED_FILE, &blk)) {
            CHECK_STR(blk.label, path);
            CHECK_EQ(blk.totals.freed_unmapped_bytes, 7 * pg);
        }
    }
out:
    if (view)
        UnmapViewOfFile(view);
    if (m)
        CloseHandle(m);
    CloseHandle(f);
    memdiff_diff_free(df);
    memdiff_diff_free(d);
    memdiff_snapshot_free(c);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}

/* Reading a view: Windows adds the page read to the working set (its read-ahead goes to the
 * standby list, not the working set). Wine maps views with Linux mmap, and Linux maps the
 * page-cache pages around a read fault too ("fault-around", 64 KiB by default): one read per
 * 64 KiB window makes the whole window resident. */
static void test_mapped_file_read(void)
{
    const uint64_t pg = wintest_page();
    const uint64_t window = 65536 / pg;
    char path[MAX_PATH * 3];
    HANDLE f = make_file(L"memdiff_wintest_read.dat", 4 * window, path, sizeof path);
    REQUIRE(f != INVALID_HANDLE_VALUE);
    HANDLE m = CreateFileMappingW(f, NULL, PAGE_READONLY, 0, 0, NULL);
    const char *view = m ? MapViewOfFile(m, FILE_MAP_READ, 0, 0, 0) : NULL;
    memdiff_snapshot *a = NULL, *b = NULL;
    memdiff_diff *d = NULL;
    if (!CHECK(view != NULL))
        goto out;
    a = snap();
    volatile int sum = 0;
    for (uint64_t i = 0; i < 4; i++)
        sum += view[i * window * pg];
    b = snap();
    if (!CHECK(a && b && sum == 4 * 'm') || !CHECK((d = diff_of(a, b, 0)) != NULL))
        goto out;
    memdiff_block blk;
    if (!block_in(d, addr(view), MEMDIFF_CAT_MAPPED_FILE, &blk))
        goto out;
    CHECK_STR(blk.label, path);
    uint64_t want = wintest_under_wine() ? 4 * window : 4;
    CHECK_EQ(blk.totals.new_bytes, want * pg);
    CHECK_EQ(blk.totals.new_shared_bytes, want * pg);
out:
    if (view)
        UnmapViewOfFile(view);
    if (m)
        CloseHandle(m);
    CloseHandle(f);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}

/* A view of a pagefile-backed section: shared memory without a file. */
static void test_pagefile_section(void)
{
    const uint64_t pg = wintest_page();
    HANDLE m = CreateFileMappingW(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE, 0,
                                  (DWORD)(16 * pg), NULL);
    char *view = m ? MapViewOfFile(m, FILE_MAP_WRITE, 0, 0, 0) : NULL;
    memdiff_snapshot *a = NULL, *b = NULL;
    memdiff_diff *d = NULL;
    if (!CHECK(view != NULL))
        goto out;
    a = snap();
    write_pages(view, 5, 3, 's');
    b = snap();
    if (!CHECK(a && b) || !CHECK((d = diff_of(a, b, 0)) != NULL))
        goto out;
    memdiff_block blk;
    if (!block_in(d, addr(view), MEMDIFF_CAT_SHARED, &blk))
        goto out;
    CHECK_STR(blk.label, "shared anonymous");
    CHECK_EQ(blk.totals.new_bytes, 5 * pg);
    CHECK_EQ(blk.totals.new_shared_bytes, 5 * pg);
out:
    if (view)
        UnmapViewOfFile(view);
    if (m)
        CloseHandle(m);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}

/* ---- a DLL loaded, used and freed ----------------------------------------------------------- */

typedef char *(*touch_fn)(size_t *size);

static uint64_t image_bytes(const memdiff_diff *d, const char *path, int freed, unsigned *presence,
                            size_t *blocks)
{
    uint64_t sum = 0;
    *blocks = 0;
    for (size_t i = 0; i < memdiff_diff_block_count(d); i++) {
        memdiff_block x;
        if (!CHECK_EQ(memdiff_diff_block(d, i, &x), MEMDIFF_OK))
            break;
        if (x.category != MEMDIFF_CAT_IMAGE || _stricmp(x.label, path) != 0)
            continue;
        sum += freed ? x.totals.freed_bytes : x.totals.new_bytes;
        *presence = x.presence;
        (*blocks)++;
    }
    return sum;
}

static void test_dll_load_unload(void)
{
    const uint64_t pg = wintest_page();
    WCHAR wpath[MAX_PATH];
    DWORD n = GetModuleFileNameW(NULL, wpath, MAX_PATH);
    WCHAR *slash = n ? wcsrchr(wpath, L'\\') : NULL;
    REQUIRE(slash != NULL);
    wcscpy(slash + 1, L"memdiff_testdll.dll");
    memdiff_snapshot *a = NULL, *b = NULL, *c = NULL;
    memdiff_diff *d = NULL, *df = NULL;
    HMODULE mod = NULL;

    a = snap();
    mod = LoadLibraryW(wpath);
    touch_fn touch = mod ? (touch_fn)(void (*)(void))GetProcAddress(mod, "memdiff_testdll_touch")
                         : NULL;
    if (!CHECK(a && touch))
        goto out;
    size_t bss_size = 0;
    char *bss = touch(&bss_size);
    char path[MAX_PATH * 3];
    WCHAR loaded[MAX_PATH];
    GetModuleFileNameW(mod, loaded, MAX_PATH);
    WideCharToMultiByte(CP_UTF8, 0, loaded, -1, path, (int)sizeof path, NULL, NULL);
    MODULEINFO mi;
    REQUIRE(GetModuleInformation(GetCurrentProcess(), mod, &mi, sizeof mi));
    b = snap();
    if (!CHECK(b) || !CHECK((d = diff_of(a, b, 0)) != NULL))
        goto out;

    /* The image: one block (its allocation unit is the load address), new in the after
     * snapshot, with at least the .bss pages the call wrote and at most the whole image. */
    unsigned presence = 0;
    size_t blocks = 0;
    uint64_t loaded_bytes = image_bytes(d, path, 0, &presence, &blocks);
    CHECK_EQ(blocks, 1);
    CHECK_EQ(presence, MEMDIFF_IN_AFTER);
    CHECK(loaded_bytes >= bss_size);
    CHECK(loaded_bytes <= (mi.SizeOfImage + pg - 1) / pg * pg);
    /* Which image pages the loader made resident is the loader's business (Wine reads some
     * sections into memory and maps others); asked page by page right now, the working set must
     * agree with the snapshot, since nothing has touched the image since. */
    uint64_t counted = 0;
    for (uint64_t o = 0; o < mi.SizeOfImage; o += pg) {
        PSAPI_WORKING_SET_EX_INFORMATION e;
        e.VirtualAddress = (char *)mi.lpBaseOfDll + o;
        if (QueryWorkingSetEx(GetCurrentProcess(), &e, sizeof e) && e.VirtualAttributes.Valid)
            counted += pg;
    }
    CHECK_EQ(loaded_bytes, counted);
    memdiff_region r;
    if (CHECK(memdiff_snapshot_find(b, addr(bss), &r) == MEMDIFF_OK)) {
        CHECK_EQ(r.category, MEMDIFF_CAT_IMAGE); /* .bss is the module's */
        CHECK_STR(r.label, path);
        CHECK(r.prot & MEMDIFF_PROT_WRITE);
    }
    if (CHECK(memdiff_snapshot_find(b, addr(mi.lpBaseOfDll), &r) == MEMDIFF_OK)) {
        CHECK_EQ(r.category, MEMDIFF_CAT_IMAGE);
        CHECK_STR(r.path, path);
        CHECK_EQ(r.prot, MEMDIFF_PROT_READ); /* the PE headers */
    }
    if (wintest_failures)
        wintest_dump(d);

    FreeLibrary(mod);
    mod = NULL;
    /* Everything the image had resident goes with it. */
    if (CHECK((c = snap()) != NULL) && CHECK((df = diff_of(b, c, 0)) != NULL)) {
        uint64_t freed = image_bytes(df, path, 1, &presence, &blocks);
        CHECK_EQ(blocks, 1);
        CHECK_EQ(presence, MEMDIFF_IN_BEFORE);
        CHECK_EQ(freed, loaded_bytes);
        CHECK(memdiff_snapshot_find(c, addr(bss), &r) != MEMDIFF_OK ||
              r.category != MEMDIFF_CAT_IMAGE);
    }
    printf("    dll: %llu pages resident after load (image %lu pages)\n",
           (unsigned long long)(loaded_bytes / pg), (unsigned long)(mi.SizeOfImage / pg));
out:
    if (mod)
        FreeLibrary(mod);
    memdiff_diff_free(df);
    memdiff_diff_free(d);
    memdiff_snapshot_free(c);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}

/* ---- what a snapshot of the test program says about itself ------------------------------- */

/* NtCurrentTeb() reads gs:[0x30] through an inline that GCC 12's -Warray-bounds misjudges
 * (a false positive on mingw-w64's __readgsqword). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
static uint64_t current_teb(void)
{
    return addr(NtCurrentTeb());
}
#pragma GCC diagnostic pop

static void test_self_facts(void)
{
    volatile char local = 0;
    memdiff_snapshot *s = snap();
    REQUIRE(s != NULL);
    memdiff_snapshot_info in;
    REQUIRE_OK(memdiff_snapshot_get_info(s, &in));
    CHECK_EQ(in.pid, GetCurrentProcessId());
    CHECK_EQ(in.depth, MEMDIFF_DEPTH_STANDARD);
    CHECK(in.degraded == NULL);
    const unsigned want = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_PROCESS_TOTALS |
                          MEMDIFF_SRC_THREADS | MEMDIFF_SRC_MODULES | MEMDIFF_SRC_HEAPS;
    CHECK_EQ(in.sources, want);
    CHECK_EQ(in.page_size, wintest_page());
    CHECK(in.totals.vm_rss > 0);
    CHECK(in.totals.vm_hwm >= in.totals.vm_rss);
    CHECK(in.totals.vm_size >= in.resident_bytes);
    CHECK(in.own_bytes > 0);
    char host[MAX_COMPUTERNAME_LENGTH + 1];
    DWORD hn = sizeof host;
    if (GetComputerNameA(host, &hn))
        CHECK_STR(in.host, host);

    memdiff_region r;
    char exe[MAX_PATH * 3];
    WCHAR wexe[MAX_PATH];
    GetModuleFileNameW(NULL, wexe, MAX_PATH);
    WideCharToMultiByte(CP_UTF8, 0, wexe, -1, exe, (int)sizeof exe, NULL, NULL);
    if (CHECK(memdiff_snapshot_find(s, addr((void *)(uintptr_t)test_self_facts), &r) ==
              MEMDIFF_OK)) {
        CHECK_EQ(r.category, MEMDIFF_CAT_IMAGE);
        CHECK_STR(r.label, exe);
        CHECK(r.prot & MEMDIFF_PROT_EXEC);
        CHECK(r.resident_bytes > 0);
    }
    char me[32];
    snprintf(me, sizeof me, "thread %lu", (unsigned long)GetCurrentThreadId());
    if (CHECK(memdiff_snapshot_find(s, addr((const void *)&local), &r) == MEMDIFF_OK)) {
        CHECK_EQ(r.category, MEMDIFF_CAT_STACK);
        CHECK_STR(r.label, me);
    }
    if (CHECK(memdiff_snapshot_find(s, current_teb(), &r) == MEMDIFF_OK)) {
        CHECK_EQ(r.category, MEMDIFF_CAT_SPECIAL);
        CHECK(strstr(r.label, "TEB") != NULL);
    }
    HMODULE k32 = GetModuleHandleW(L"kernel32.dll");
    if (CHECK(k32 && memdiff_snapshot_find(s, addr(k32), &r) == MEMDIFF_OK)) {
        CHECK_EQ(r.category, MEMDIFF_CAT_IMAGE);
        CHECK(strstr(r.label, "kernel32.dll") || strstr(r.label, "KERNEL32.DLL"));
    }
    memdiff_snapshot_free(s);

    /* Deep depth degrades, and says why. */
    s = snap_at(MEMDIFF_DEPTH_DEEP);
    REQUIRE(s != NULL);
    REQUIRE_OK(memdiff_snapshot_get_info(s, &in));
    CHECK_EQ(in.depth_requested, MEMDIFF_DEPTH_DEEP);
    CHECK_EQ(in.depth, MEMDIFF_DEPTH_STANDARD);
    CHECK(in.degraded && strstr(in.degraded, "Windows exposes no") != NULL);
    memdiff_snapshot_free(s);

    /* Fixture roots are Linux's (recorded /proc and /sys trees): refused, not ignored. */
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.fixture_root = "C:\\fixture";
    CHECK_EQ(memdiff_snapshot_take(&o, &s), (uint64_t)MEMDIFF_ENOTSUP);
    CHECK(s == NULL);
}

/* ---- a snapshot does not disturb the heaps it measures ------------------------------------ */

typedef struct heap_census {
    size_t heaps, blocks;
    uint64_t bytes;
} heap_census;

/* Busy blocks and bytes in every heap of the process, counted with HeapWalk (which allocates
 * nothing). The heap handles go to a static array: no heap is touched to count them. */
static heap_census census(void)
{
    static HANDLE heaps[256];
    heap_census c = {0, 0, 0};
    DWORD n = GetProcessHeaps(256, heaps);
    c.heaps = n;
    for (DWORD i = 0; i < n && i < 256; i++) {
        if (!HeapLock(heaps[i]))
            continue;
        PROCESS_HEAP_ENTRY e;
        memset(&e, 0, sizeof e);
        while (HeapWalk(heaps[i], &e)) {
            if (e.wFlags & PROCESS_HEAP_ENTRY_BUSY) {
                c.blocks++;
                c.bytes += e.cbData;
            }
        }
        HeapUnlock(heaps[i]);
    }
    return c;
}

/* memdiff takes its storage from VirtualAlloc, and the backend's Win32 calls (Toolhelp,
 * GetMappedFileName, EnumProcessModulesEx, HeapWalk...) must leave no block behind either:
 * after a warm-up (first calls may initialise something once), a snapshot, a compare and a
 * report to a file leave every heap with the same blocks. */
static void test_heaps_undisturbed(void)
{
    memdiff_snapshot *a = snap(), *b = NULL;
    memdiff_diff *d = NULL;
    memdiff_snapshot_free(a);
    a = NULL;
    heap_census before = census();
    a = snap();
    b = snap();
    if (CHECK(a && b))
        d = diff_of(a, b, MEMDIFF_COMPARE_VERBOSE);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
    heap_census after = census();
    CHECK_EQ(after.heaps, before.heaps);
    CHECK_EQ(after.blocks, before.blocks);
    CHECK_EQ(after.bytes, before.bytes);
}

/* ---- snapshots taken from several threads at once ----------------------------------------- */

#define CONCURRENT_THREADS 4
#define CONCURRENT_ROUNDS 3

static DWORD WINAPI snapshot_thread(LPVOID arg)
{
    volatile LONG *failures = arg;
    for (int i = 0; i < CONCURRENT_ROUNDS; i++) {
        memdiff_snapshot *s = NULL;
        memdiff_region r;
        volatile char here = 0;
        char me[32];
        snprintf(me, sizeof me, "thread %lu", (unsigned long)GetCurrentThreadId());
        /* Each finds its own stack, whatever the others are doing (HeapLock, HeapWalk...). */
        if (memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &s) != MEMDIFF_OK ||
            memdiff_snapshot_find(s, addr((const void *)&here), &r) != MEMDIFF_OK ||
            r.category != MEMDIFF_CAT_STACK || strcmp(r.label, me) != 0)
            InterlockedIncrement(failures);
        memdiff_snapshot_free(s);
    }
    return 0;
}

static void test_concurrent_snapshots(void)
{
    volatile LONG failures = 0;
    HANDLE t[CONCURRENT_THREADS];
    for (int i = 0; i < CONCURRENT_THREADS; i++)
        t[i] = CreateThread(NULL, 0, snapshot_thread, (LPVOID)&failures, 0, NULL);
    for (int i = 0; i < CONCURRENT_THREADS; i++) {
        if (CHECK(t[i] != NULL)) {
            WaitForSingleObject(t[i], INFINITE);
            CloseHandle(t[i]);
        }
    }
    CHECK_EQ(failures, 0);
}

/* ---- MemDiff's 1999 API ------------------------------------------------------------------- */

static void test_memdiff1999(void)
{
    const uint64_t pg = wintest_page();
    WCHAR path[MAX_PATH];
    DWORD n = GetModuleFileNameW(NULL, path, MAX_PATH);
    WCHAR *slash = n ? wcsrchr(path, L'\\') : NULL;
    REQUIRE(slash != NULL);
    wcscpy(slash + 1, L"memdiff_wintest_1999.txt");
    HANDLE report = CreateFileW(path, GENERIC_READ | GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                                FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, NULL);
    REQUIRE(report != INVALID_HANDLE_VALUE);

    /* As the article's demo does it. */
    HANDLE h1 = MDTakeSnapshot(GetCurrentProcess());
    PVOID p = VirtualAlloc(0, 3 * pg, MEM_COMMIT, PAGE_READWRITE);
    if (p)
        memset(p, 0, 3 * pg); /* Touch it! */
    HANDLE h2 = MDTakeSnapshot(GetCurrentProcess());
    CHECK(h1 != NULL && h2 != NULL && p != NULL);
    CHECK(MDCompareSnapshot(h1, h2, report, false));
    CHECK(MDCompareSnapshot(h1, h2, report, TRUE)); /* snapshots outlive a compare */
    CHECK(!MDCompareSnapshot(NULL, h2, report, FALSE));
    CHECK(!MDCompareSnapshot(h1, h2, INVALID_HANDLE_VALUE, FALSE));
    CHECK(MDTakeSnapshot(NULL) == NULL);
    CHECK(MDFreeSnapshot(h1));
    CHECK(MDFreeSnapshot(h2));
    CHECK(!MDFreeSnapshot(NULL));
    VirtualFree(p, 0, MEM_RELEASE);

    /* The report landed in the file, CRLF-terminated, with the 3 pages in it, twice. */
    static char text[65536];
    DWORD got = 0;
    SetFilePointer(report, 0, NULL, FILE_BEGIN);
    ReadFile(report, text, sizeof text - 1, &got, NULL);
    text[got] = '\0';
    CloseHandle(report);
    CHECK(got > 0);
    CHECK(strstr(text, "\r\n") != NULL);
    /* 3 pages, as the reports print byte counts (thousands separated), in both reports. */
    char bytes[64];
    unsigned long long b3 = 3 * pg;
    snprintf(bytes, sizeof bytes, "%llu,%03llu", b3 / 1000, b3 % 1000);
    const char *second = strstr(text, "Category");
    second = second ? strstr(second + 1, "Category") : NULL;
    CHECK(second != NULL);
    const char *in_first = strstr(text, bytes);
    CHECK(in_first && (!second || in_first < second));
    CHECK(second && strstr(second, bytes) != NULL);
    if (wintest_failures)
        printf("%s\n", text);
}

const wintest_case wintest_scenario_cases[] = {
    {"private_standard", test_private_standard},
    {"private_fast", test_private_fast},
    {"heap_create", test_heap_create},
    {"heap_labels", test_heap_labels},
    {"thread_stack", test_thread_stack},
    {"mapped_file_write", test_mapped_file_write},
    {"mapped_file_read", test_mapped_file_read},
    {"pagefile_section", test_pagefile_section},
    {"dll_load_unload", test_dll_load_unload},
    {"self_facts", test_self_facts},
    {"heaps_undisturbed", test_heaps_undisturbed},
    {"concurrent_snapshots", test_concurrent_snapshots},
    {"memdiff1999", test_memdiff1999},
    {NULL, NULL},
};
