/*
 * fuzz_load.c - libFuzzer target for the snapshot file loader (memdiff_snapshot_load).
 *
 * Each input is loaded twice: as it is, which mostly exercises the framing and the checksum,
 * and with its last four bytes replaced by the right CRC-32 of the rest, so that mutations reach
 * the section parsers behind the checksum instead of dying at it. A file that loads must also
 * behave: compared with itself it gives an empty diff, and it saves again (the writer accepts
 * whatever the loader accepts). Anything else aborts, which libFuzzer reports as a crash.
 *
 * Build: cmake -S . -B build-fuzz -DMEMDIFF_BUILD_FUZZ=ON -DCMAKE_C_COMPILER=clang
 * Run:   build-fuzz/tests/fuzz/memdiff_fuzz_load -max_total_time=60 CORPUS_DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_loaded(const memdiff_snapshot *s)
{
    memdiff_diff *d = NULL;
    if (memdiff_compare(s, s, MEMDIFF_COMPARE_VERBOSE, &d) != MEMDIFF_OK ||
        memdiff_diff_block_count(d) != 0)
        abort();
    memdiff_diff_free(d);
    FILE *sink = fopen("/dev/null", "wb");
    if (sink) {
        if (memdiff_snapshot_save(s, sink) != MEMDIFF_OK)
            abort();
        fclose(sink);
    }
    /* PSS per mapping (section 6): each figure on a mapping's first region, whole kB, its
     * mapping reaching past the region and no further than the next figure's; the total the
     * sum outside Own. */
    memdiff_snapshot_info in;
    memdiff_snapshot_get_info(s, &in);
    int mappings = (in.sources & MEMDIFF_SRC_PSS_MAPPINGS) != 0;
    uint64_t sum = 0, cover_end = 0;
    for (size_t i = 0; i < memdiff_snapshot_region_count(s); i++) {
        memdiff_region r;
        if (memdiff_snapshot_region(s, i, &r) != MEMDIFF_OK || strlen(r.label) > (1u << 30))
            abort();
        if (mappings && r.pss_end) {
            if (r.pss_end < r.end || r.start < cover_end || r.pss_bytes % 1024)
                abort();
            cover_end = r.pss_end;
        } else if (mappings && (r.pss_bytes || r.end > cover_end)) {
            abort();
        }
        if (mappings && r.category != MEMDIFF_CAT_OWN &&
            __builtin_add_overflow(sum, r.pss_bytes, &sum))
            abort();
    }
    if (mappings && sum != in.pss_bytes)
        abort();
}

static void load(const uint8_t *data, size_t size)
{
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return;
    memdiff_snapshot *s = NULL;
    int rc = memdiff_snapshot_load(f, &s);
    fclose(f);
    if (rc == MEMDIFF_OK)
        check_loaded(s);
    else if (rc != MEMDIFF_EFORMAT || s != NULL || !memdiff_last_error()[0])
        abort(); /* damage is EFORMAT with a detail, nothing else */
    memdiff_snapshot_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0; /* fmemopen refuses a zero size; the empty file is a unit test */
    load(data, size);
    if (size > 4) {
        uint8_t *copy = malloc(size);
        if (!copy)
            return 0;
        memcpy(copy, data, size);
        uint32_t crc = memdiff__crc32(0, copy, size - 4);
        for (int i = 0; i < 4; i++)
            copy[size - 4 + i] = (uint8_t)(crc >> (8 * i));
        load(copy, size);
        free(copy);
    }
    return 0;
}
