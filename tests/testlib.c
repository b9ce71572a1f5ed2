/*
 * testlib.c - libmemdiff_testlib.so, the module the scenarios dlopen: a .bss array whose pages
 * nothing touches until memdiff_testlib_touch_bss() writes them, and an initialised .data array.
 *
 * The .bss array is aligned to 64 KiB, the largest common page size, so that on every page size
 * it fills whole pages that hold nothing else: no other variable, and not the partial page at the
 * end of the file-backed data that the dynamic loader zeroes when it maps the module (elf(5),
 * glibc elf/dl-map-segments.h). Its pages are therefore untouched until the test writes them.
 * Both arrays are static and reached through functions, so that no relocation writes near them.
 */
#include <stddef.h>

#define TESTLIB_API __attribute__((visibility("default")))

TESTLIB_API void *memdiff_testlib_bss(void);
TESTLIB_API size_t memdiff_testlib_bss_size(void);
TESTLIB_API const void *memdiff_testlib_data(void);
TESTLIB_API size_t memdiff_testlib_data_size(void);
TESTLIB_API void memdiff_testlib_touch_bss(size_t page_size, size_t npages);

static char bss_array[64 * 1024] __attribute__((aligned(65536)));

static char data_array[32 * 1024] = {1, 2, 3, 4, 5, 6, 7, 8};

void *memdiff_testlib_bss(void)
{
    return bss_array;
}

size_t memdiff_testlib_bss_size(void)
{
    return sizeof bss_array;
}

const void *memdiff_testlib_data(void)
{
    return data_array;
}

size_t memdiff_testlib_data_size(void)
{
    return sizeof data_array;
}

/* Writes one byte in each of the first npages pages of the .bss array. npages = 0 runs the same
 * code without writing: the test calls it so before its first snapshot, so that the page of code
 * (and whatever fault-around maps next to it) is already resident. */
void memdiff_testlib_touch_bss(size_t page_size, size_t npages)
{
    volatile char *p = bss_array;
    for (size_t i = 0; i < npages && i * page_size < sizeof bss_array; i++)
        p[i * page_size] = 1;
}
