/*
 * testdll.c - a DLL for the load / unload scenario: a .data page, and a .bss array that one call
 * touches, so that the loaded image has pages the test knows it made resident.
 */
#include <stddef.h>

#define TESTDLL_BSS_PAGES 8

__declspec(dllexport) char *memdiff_testdll_touch(size_t *size);

static char bss[TESTDLL_BSS_PAGES * 4096];
static volatile int data_word = 42;

/* Writes one byte per page of the .bss array and returns it. */
__declspec(dllexport) char *memdiff_testdll_touch(size_t *size)
{
    for (size_t i = 0; i < sizeof bss; i += 4096)
        bss[i] = (char)data_word;
    *size = sizeof bss;
    return bss;
}
