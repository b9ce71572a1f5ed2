/*
 * test_optimizer.c - what an optimizing compiler does to a leak test, and memdiff_keep().
 *
 * This file alone is compiled with -O2 whatever the build type (tests/CMakeLists.txt), as a
 * user's release-mode test would be. The code under test below leaks: it writes memory and
 * loses it. GCC 12 and Clang 14 at -O1 and up see that nothing ever reads that memory and
 * delete the work: the malloc with the memset into it, and a loop's stores into a static array
 * that nothing reads. The leak then never happens and a test that bounds it passes. Each case is
 * measured twice, as written and with memdiff_keep() on the memory, which makes the compiler
 * assume the memory is read, so the allocation and the stores stay and the leak is seen.
 */
#include <stdlib.h>
#include <string.h>

#include "memdiff_check.h"
#include "scenario_util.h"
#include "suites.h"

#if UNDER_ASAN
#include <sanitizer/lsan_interface.h>
/* The leaks here are made on purpose: LeakSanitizer ignores what is allocated between these. */
#define LEAK_ON_PURPOSE_BEGIN() __lsan_disable()
#define LEAK_ON_PURPOSE_END() __lsan_enable()
#else
#define LEAK_ON_PURPOSE_BEGIN() ((void)0)
#define LEAK_ON_PURPOSE_END() ((void)0)
#endif

#define LEAK_BYTES (1024 * 1024)
#define TABLE_BYTES (256 * 1024)

/* The code under test, each a function of its own as a library's would be (noinline: the
 * compiler still sees through it, but the bracket stays around one call). */
__attribute__((noinline)) static void leak_lost(size_t n)
{
    char *p = malloc(n);
    if (p)
        memset(p, 0x5a, n); /* then the pointer is lost: a leak of n bytes */
}

__attribute__((noinline)) static void leak_kept(size_t n)
{
    char *p = malloc(n);
    if (p) {
        memset(p, 0x5a, n);
        memdiff_keep(p);
    }
}

/* Two tables that nothing reads: one kept, one not (keeping one would keep both). Aligned to
 * 64 KiB, the largest page size Linux has, so that each spans TABLE_BYTES / page size pages.
 * Nothing may take their addresses but memdiff_keep(): an address that escapes is a read the
 * compiler must allow for, and keeps the stores as memdiff_keep() does. */
static _Alignas(65536) char table_lost[TABLE_BYTES];
static _Alignas(65536) char table_kept[TABLE_BYTES];

__attribute__((noinline)) static void fill_lost(void)
{
    for (size_t i = 0; i < sizeof table_lost; i++)
        table_lost[i] = (char)i;
}

__attribute__((noinline)) static void fill_kept(void)
{
    for (size_t i = 0; i < sizeof table_kept; i++)
        table_kept[i] = (char)i;
    memdiff_keep(table_kept);
}

/* Net private bytes of all categories across one call of fn (leak_* take LEAK_BYTES). */
static int64_t net_private_of(void (*fn)(void))
{
    scn_page_in_program(); /* none of the program's own pages comes into the figure */
    memdiff_bracket *b = memdiff_ck_begin();
    LEAK_ON_PURPOSE_BEGIN();
    fn();
    LEAK_ON_PURPOSE_END();
    memdiff_diff *d = memdiff_ck_end(b);
    memdiff_figure f = {MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET_PRIVATE, NULL};
    int64_t v = 0;
    ck_assert_int_eq(memdiff_diff_figure(d, &f, &v), MEMDIFF_OK);
    memdiff_diff_free(d);
    return v;
}

static void call_leak_lost(void)
{
    leak_lost(LEAK_BYTES);
}

static void call_leak_kept(void)
{
    leak_kept(LEAK_BYTES);
}

/* 1 MiB is above glibc's mmap threshold (128 KiB): a mapping of its own, 1 MiB and malloc's
 * 16-byte header rounded up to 257 pages, every one written by the memset; nothing else in the
 * bracket is new (it settles the heap and warms memdiff up). Under ASan its allocator's
 * redzones and shadow come on top. */
START_TEST(kept_leak_is_seen)
{
    int64_t v = net_private_of(call_leak_kept);
    if (UNDER_ASAN)
        ck_assert_int_ge(v, LEAK_BYTES);
    else
        ck_assert_int_eq(v, LEAK_BYTES + 4096);
}
END_TEST

/* As written, the compiler deleted malloc and memset: not one page comes. Under ASan the
 * figures are not the program's alone (8,192 bytes of its allocator's here), and the table's
 * instrumented stores stay (303,104 bytes with their shadow): both cases are skipped there. */
START_TEST(lost_leak_is_optimized_away)
{
    if (UNDER_ASAN)
        return;
    ck_assert_int_eq(net_private_of(call_leak_lost), 0);
}
END_TEST

/* The tables are the test program's .bss: never written, they cost nothing; written, each of
 * the table's pages is new and private, and nothing else. */
START_TEST(kept_table_is_seen)
{
    int64_t v = net_private_of(fill_kept);
    if (UNDER_ASAN)
        ck_assert_int_ge(v, TABLE_BYTES);
    else
        ck_assert_int_eq(v, TABLE_BYTES);
}
END_TEST

START_TEST(lost_table_is_optimized_away)
{
    if (UNDER_ASAN)
        return;
    ck_assert_int_eq(net_private_of(fill_lost), 0);
}
END_TEST

Suite *optimizer_suite(void)
{
    Suite *s = suite_create("optimizer");
    TCase *tc = tcase_create("Keep");
    tcase_add_test(tc, kept_leak_is_seen);
    tcase_add_test(tc, lost_leak_is_optimized_away);
    tcase_add_test(tc, kept_table_is_seen);
    tcase_add_test(tc, lost_table_is_optimized_away);
    suite_add_tcase(s, tc);
    return s;
}
