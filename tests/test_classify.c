/*
 * test_classify.c - the portable classification rules over synthetic fact tables: every
 * category, the splits at heap / own / module boundaries, labels and allocation units.
 */
#include <string.h>

#include "internal.h"
#include "suites.h"

#define KB(x) ((uint64_t)(x) * 1024)
#define PG 4096u

static memdiff__plat_region R(uint64_t start, uint64_t end, unsigned prot, unsigned flags,
                              uint64_t inode, uint64_t offset, memdiff__hint hint,
                              const char *path, const char *name)
{
    memdiff__plat_region r;
    memset(&r, 0, sizeof r);
    r.start = start;
    r.end = end;
    r.prot = prot;
    r.flags = flags | (inode ? MEMDIFF_REGION_FILE : 0);
    r.inode = inode;
    r.dev = inode ? 0x801 : 0;
    r.offset = offset;
    r.hint = hint;
    r.path = path;
    r.name = name;
    return r;
}

enum { RO = MEMDIFF_PROT_READ, RW = MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE,
       RX = MEMDIFF_PROT_READ | MEMDIFF_PROT_EXEC, SH = MEMDIFF_REGION_SHARED };

typedef struct expect {
    uint64_t start, end;
    memdiff_category cat;
    const char *label;
} expect;

static memdiff__arena arena;
static memdiff__strtab *table;

static void setup(void)
{
    memdiff__arena init = MEMDIFF__ARENA_INIT;
    arena = init;
    table = NULL;
}

static void teardown(void)
{
    memdiff__arena_release(&arena);
}

static void check(const memdiff__facts *f, const expect *e, size_t n)
{
    memdiff__region *out = NULL;
    size_t count = 0;
    ck_assert_int_eq(memdiff__classify(f, &arena, &table, &out, &count), MEMDIFF_OK);
    for (size_t i = 0; i < count && i < n; i++) {
        ck_assert_msg(out[i].start == e[i].start && out[i].end == e[i].end,
                      "region %zu: got 0x%llx-0x%llx, want 0x%llx-0x%llx", i,
                      (unsigned long long)out[i].start, (unsigned long long)out[i].end,
                      (unsigned long long)e[i].start, (unsigned long long)e[i].end);
        ck_assert_msg(out[i].category == e[i].cat, "region %zu (0x%llx): category %s, want %s",
                      i, (unsigned long long)out[i].start, memdiff_category_name(out[i].category),
                      memdiff_category_name(e[i].cat));
        ck_assert_str_eq(out[i].label, e[i].label);
    }
    ck_assert_uint_eq(count, n);
}

/* A process laid out like a small Linux program. */
START_TEST(every_category)
{
    memdiff__plat_region regions[] = {
        R(0x400000, 0x401000, RO, 0, 11, 0, MEMDIFF__HINT_NONE, "/usr/bin/prog", ""),
        R(0x401000, 0x403000, RX, 0, 11, 0x1000, MEMDIFF__HINT_NONE, "/usr/bin/prog", ""),
        R(0x403000, 0x404000, RW, 0, 11, 0x3000, MEMDIFF__HINT_NONE, "/usr/bin/prog", ""),
        /* bss tail merged with an unrelated anonymous mapping after it */
        R(0x404000, 0x408000, RW, 0, 0, 0, MEMDIFF__HINT_NONE, "", ""),
        R(0x500000, 0x540000, RW, 0, 0, 0, MEMDIFF__HINT_BRK_HEAP, "[heap]", ""),
        R(0x600000, 0x610000, RW, 0, 12, 0x2000, MEMDIFF__HINT_NONE, "/data/file name.bin", ""),
        R(0x700000, 0x708000, RW, SH, 0, 0, MEMDIFF__HINT_NONE, "", ""),
        R(0x708000, 0x710000, RW, SH | MEMDIFF__RF_DELETED, 9, 0, MEMDIFF__HINT_NONE, "/dev/zero",
          ""),
        R(0x710000, 0x711000, RW, SH, 13, 0, MEMDIFF__HINT_MEMFD, "/memfd:pool", ""),
        R(0x720000, 0x721000, RW, SH, 14, 0, MEMDIFF__HINT_NONE, "/dev/shm/q", ""),
        R(0x730000, 0x731000, RW, SH, 15, 0, MEMDIFF__HINT_SYSV_SHM, "/SYSV0000002a", ""),
        /* an anonymous region holding an mmapped malloc chunk, then plain memory */
        R(0x800000, 0x840000, RW, 0, 0, 0, MEMDIFF__HINT_NONE, "", ""),
        R(0x900000, 0x901000, RW, 0, 0, 0, MEMDIFF__HINT_ANON_NAME, "", "my cache"),
        R(0x910000, 0x920000, RW, 0, 0, 0, MEMDIFF__HINT_ANON_NAME, "", "memdiff"),
        /* anonymous memory with one of memdiff's chunks inside (naming unavailable) */
        R(0x930000, 0x960000, RW, 0, 0, 0, MEMDIFF__HINT_NONE, "", ""),
        R(0xa00000, 0xa80000, RW, 0, 0, 0, MEMDIFF__HINT_NONE, "", ""), /* thread 77 */
        R(0xb00000, 0xb21000, RW, 0, 0, 0, MEMDIFF__HINT_MAIN_STACK, "[stack]", ""),
        R(0xc00000, 0xc02000, RO, 0, 0, 0, MEMDIFF__HINT_VVAR, "[vvar]", ""),
        R(0xc02000, 0xc04000, RX, 0, 0, 0, MEMDIFF__HINT_VDSO, "[vdso]", ""),
        R(0xd00000, 0xd01000, RX, 0, 0, 0, MEMDIFF__HINT_VSYSCALL, "[vsyscall]", ""),
        R(0xe00000, 0xe01000, RW, 0, 0, 0, MEMDIFF__HINT_OTHER, "", "[uprobes]"),
    };
    size_t n = sizeof regions / sizeof regions[0];

    memdiff__plat_segment segs[] = {
        {0x400000, 0x401000, MEMDIFF__SEG_HEADERS}, {0x401000, 0x403000, MEMDIFF__SEG_TEXT},
        {0x403000, 0x404000, MEMDIFF__SEG_DATA},    {0x404000, 0x406000, MEMDIFF__SEG_BSS},
    };
    memdiff__plat_module mod = {"/usr/bin/prog", 0x400000, segs, 4};
    memdiff__plat_heap heaps[] = {
        {0x500000, 0x540000, MEMDIFF__HEAP_BRK, 0x500000, "[heap]"},
        {0x800000, 0x822000, MEMDIFF__HEAP_MMAP_CHUNK, 0x800000, "malloc mmap chunk"},
    };
    memdiff__plat_thread threads[] = {{1000, 0, 0, 0}, {77, 0xa7f000, 0, 0}};
    memdiff__range own[] = {{0x940000, 0x950000}};
    memdiff__facts f;
    memset(&f, 0, sizeof f);
    f.pid = 1000;
    f.regions = regions;
    f.region_count = n;
    f.threads = threads;
    f.thread_count = 2;
    f.modules = &mod;
    f.module_count = 1;
    f.heaps = heaps;
    f.heap_count = 2;
    f.own = own;
    f.own_count = 1;

    const expect e[] = {
        {0x400000, 0x401000, MEMDIFF_CAT_IMAGE, "/usr/bin/prog"},
        {0x401000, 0x403000, MEMDIFF_CAT_IMAGE, "/usr/bin/prog"},
        {0x403000, 0x404000, MEMDIFF_CAT_IMAGE, "/usr/bin/prog"},
        {0x404000, 0x406000, MEMDIFF_CAT_IMAGE, "/usr/bin/prog"}, /* bss, split off */
        {0x406000, 0x408000, MEMDIFF_CAT_PRIVATE, "anonymous"},
        {0x500000, 0x540000, MEMDIFF_CAT_HEAP, "[heap]"},
        {0x600000, 0x610000, MEMDIFF_CAT_MAPPED_FILE, "/data/file name.bin"},
        {0x700000, 0x708000, MEMDIFF_CAT_SHARED, "shared anonymous"},
        {0x708000, 0x710000, MEMDIFF_CAT_SHARED, "shared anonymous"}, /* as Linux shows it */
        {0x710000, 0x711000, MEMDIFF_CAT_SHARED, "/memfd:pool"},
        {0x720000, 0x721000, MEMDIFF_CAT_SHARED, "/dev/shm/q"},
        {0x730000, 0x731000, MEMDIFF_CAT_SHARED, "/SYSV0000002a"},
        {0x800000, 0x822000, MEMDIFF_CAT_HEAP, "malloc mmap chunk"},
        {0x822000, 0x840000, MEMDIFF_CAT_PRIVATE, "anonymous"},
        {0x900000, 0x901000, MEMDIFF_CAT_PRIVATE, "[anon:my cache]"},
        {0x910000, 0x920000, MEMDIFF_CAT_OWN, "memdiff"},
        {0x930000, 0x940000, MEMDIFF_CAT_PRIVATE, "anonymous"},
        {0x940000, 0x950000, MEMDIFF_CAT_OWN, "memdiff"},
        {0x950000, 0x960000, MEMDIFF_CAT_PRIVATE, "anonymous"},
        {0xa00000, 0xa80000, MEMDIFF_CAT_STACK, "thread 77"},
        {0xb00000, 0xb21000, MEMDIFF_CAT_STACK, "thread 1000"},
        {0xc00000, 0xc02000, MEMDIFF_CAT_SPECIAL, "[vvar]"},
        {0xc02000, 0xc04000, MEMDIFF_CAT_SPECIAL, "[vdso]"},
        {0xd00000, 0xd01000, MEMDIFF_CAT_SPECIAL, "[vsyscall]"},
        {0xe00000, 0xe01000, MEMDIFF_CAT_UNKNOWN, "[uprobes]"},
    };
    check(&f, e, sizeof e / sizeof e[0]);
}
END_TEST

/* The module's regions are one allocation unit; the merged file regions keep file offsets. */
START_TEST(units_and_offsets)
{
    memdiff__plat_region regions[] = {
        R(0x400000, 0x401000, RO, 0, 11, 0, MEMDIFF__HINT_NONE, "/lib/a.so", ""),
        R(0x401000, 0x402000, RX, 0, 11, 0x1000, MEMDIFF__HINT_NONE, "/lib/a.so", ""),
        R(0x600000, 0x602000, RO, 0, 12, 0x4000, MEMDIFF__HINT_NONE, "/f", ""),
        R(0x602000, 0x604000, RW, 0, 12, 0x6000, MEMDIFF__HINT_NONE, "/f", ""),
    };
    memdiff__plat_segment segs[] = {{0x400000, 0x402000, MEMDIFF__SEG_TEXT}};
    memdiff__plat_module mod = {"/lib/a.so", 0x400000, segs, 1};
    memdiff__facts f;
    memset(&f, 0, sizeof f);
    f.pid = 1;
    f.regions = regions;
    f.region_count = 4;
    f.modules = &mod;
    f.module_count = 1;
    memdiff__region *out = NULL;
    size_t count = 0;
    ck_assert_int_eq(memdiff__classify(&f, &arena, &table, &out, &count), MEMDIFF_OK);
    ck_assert_uint_eq(count, 4); /* different protections stay separate regions */
    ck_assert_uint_eq(out[0].unit, 0x400000);
    ck_assert_uint_eq(out[1].unit, 0x400000);
    ck_assert_ptr_eq(out[0].label, out[1].label); /* interned */
    ck_assert_uint_eq(out[2].unit, 0x600000 - 0x4000); /* one mmap split by mprotect */
    ck_assert_uint_eq(out[3].unit, out[2].unit);
    ck_assert_uint_eq(out[3].offset, 0x6000);
    ck_assert_str_eq(out[3].path, "/f");
}
END_TEST

/* A self snapshot finds the calling thread's stack from an address on it. */
START_TEST(calling_thread_stack)
{
    memdiff__plat_region regions[] = {
        R(0x10000, 0x20000, RW, 0, 0, 0, MEMDIFF__HINT_NONE, "", ""),
    };
    memdiff__plat_thread threads[] = {{4321, 0, 0, 0}}; /* running: no sp from the OS */
    memdiff__facts f;
    memset(&f, 0, sizeof f);
    f.pid = 1;
    f.self = 1;
    f.self_tid = 4321;
    f.self_stack_hint = 0x1f000;
    f.regions = regions;
    f.region_count = 1;
    f.threads = threads;
    f.thread_count = 1;
    const expect e[] = {{0x10000, 0x20000, MEMDIFF_CAT_STACK, "thread 4321"}};
    check(&f, e, 1);
}
END_TEST

START_TEST(unsorted_regions_are_refused)
{
    memdiff__plat_region regions[] = {
        R(0x20000, 0x30000, RW, 0, 0, 0, MEMDIFF__HINT_NONE, "", ""),
        R(0x10000, 0x28000, RW, 0, 0, 0, MEMDIFF__HINT_NONE, "", ""),
    };
    memdiff__facts f;
    memset(&f, 0, sizeof f);
    f.regions = regions;
    f.region_count = 2;
    memdiff__region *out = (memdiff__region *)1;
    size_t count = 9;
    ck_assert_int_eq(memdiff__classify(&f, &arena, &table, &out, &count), MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "not ascending"));
}
END_TEST

Suite *classify_suite(void)
{
    Suite *s = suite_create("classify");
    TCase *tc = tcase_create("Core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, every_category);
    tcase_add_test(tc, units_and_offsets);
    tcase_add_test(tc, calling_thread_stack);
    tcase_add_test(tc, unsorted_regions_are_refused);
    suite_add_tcase(s, tc);
    return s;
}
