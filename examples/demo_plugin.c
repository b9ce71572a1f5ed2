/*
 * demo_plugin.c - a small shared library the demo loads and unloads. Built twice, as
 * libmemdiff_demo_old.so and libmemdiff_demo_new.so, so that one module leaves and one arrives
 * between the demo's two snapshots.
 */
#include <stddef.h>

#define PLUGIN_BSS_BYTES (128 * 1024)

/* Zero-initialised: lives in .bss, the anonymous tail after the module's file-backed data. */
static volatile char plugin_bss[PLUGIN_BSS_BYTES];

__attribute__((visibility("default"))) size_t demo_plugin_touch(size_t page_size);

/* Writes one byte in every page of the bss array; returns how many pages that was. */
size_t demo_plugin_touch(size_t page_size)
{
    size_t pages = 0;
    for (size_t off = 0; off < PLUGIN_BSS_BYTES; off += page_size, pages++)
        plugin_bss[off] = 1;
    return pages;
}
