/*
 * fuzz_timeline.c - libFuzzer target for the timeline reader (memdiff_timeline_open_stream,
 * _next, _snapshot; docs/timeline-format.md).
 *
 * Each input is opened twice: as it is, which mostly exercises the file header and the records'
 * checksums, and with every record's head and record CRC-32 made right, so that mutations reach
 * the field decoders and the embedded snapshot files behind them. An input that opens must
 * behave: the reader's memory within its stated bound (4 x the file + 2 MiB), iteration handing
 * out every record open counted, in offset order, and each recorded snapshot loading (or failing
 * with a detail) and comparing with the one before. Anything else aborts, which libFuzzer
 * reports as a crash.
 *
 * Build: cmake -S . -B build-fuzz -DMEMDIFF_BUILD_FUZZ=ON -DCMAKE_C_COMPILER=clang
 * Run:   build-fuzz/tests/fuzz/memdiff_fuzz_timeline -max_total_time=30 CORPUS_DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_opened(memdiff_timeline *t)
{
    memdiff_timeline_info info;
    if (memdiff_timeline_get_info(t, &info) != MEMDIFF_OK)
        abort();
    if (info.storage_bytes > 4 * info.file_bytes + (2u << 20))
        abort(); /* the bound memdiff.h states */
    if (info.complete_bytes > info.file_bytes || info.records == 0 ||
        (info.torn && info.torn_offset != info.complete_bytes))
        abort();
    memdiff_timeline_record r;
    size_t n = 0, snaps = 0;
    uint64_t last_offset = 0;
    int rc;
    while ((rc = memdiff_timeline_next(t, &r)) == 1) {
        if (r.offset <= last_offset || r.offset >= info.complete_bytes || !r.label)
            abort();
        last_offset = r.offset;
        if (r.kind == MEMDIFF_RECORD_SNAPSHOT && r.snapshot != snaps++)
            abort();
        if (r.kind == MEMDIFF_RECORD_MARK && strlen(r.label) > MEMDIFF_MARK_LABEL_MAX)
            abort();
        n++;
    }
    if (rc != 0 || n + 1 + info.skipped != info.records || snaps != info.snapshots ||
        n != info.samples + info.snapshots + info.marks + info.exits)
        abort();
    memdiff_snapshot *prev = NULL;
    for (size_t i = 0; i < info.snapshots; i++) {
        memdiff_snapshot *s = NULL;
        rc = memdiff_timeline_snapshot(t, i, &s);
        if (rc != MEMDIFF_OK) {
            if ((rc != MEMDIFF_EFORMAT && rc != MEMDIFF_ENOTSUP && rc != MEMDIFF_ENOMEM) || s ||
                !memdiff_last_error()[0])
                abort();
            continue;
        }
        if (prev) {
            memdiff_diff *d = NULL;
            rc = memdiff_compare(prev, s, MEMDIFF_COMPARE_FORCE, &d);
            if (rc != MEMDIFF_OK && rc != MEMDIFF_EMISMATCH && rc != MEMDIFF_ERANGE &&
                rc != MEMDIFF_ENOMEM)
                abort();
            memdiff_diff_free(d);
        }
        memdiff_snapshot_free(prev);
        prev = s;
    }
    memdiff_snapshot_free(prev);
    if (memdiff_timeline_snapshot(t, info.snapshots, &prev) != MEMDIFF_ERANGE)
        abort();
}

static void open_bytes(const uint8_t *data, size_t size)
{
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return;
    memdiff_timeline *t = NULL;
    int rc = memdiff_timeline_open_stream(f, &t);
    fclose(f);
    if (rc == MEMDIFF_OK)
        check_opened(t);
    else if (rc != MEMDIFF_EFORMAT || t != NULL || !memdiff_last_error()[0])
        abort(); /* damage is EFORMAT with a detail, nothing else */
    memdiff_timeline_free(t);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Makes every record's checksums right, walking the frame as the format states. */
static void fix_checksums(uint8_t *p, size_t n)
{
    size_t pos = 16;
    while (pos < n) {
        size_t at = pos + 1;
        uint64_t len = 0;
        unsigned shift = 0;
        while (at < n && shift < 35) {
            uint8_t b = p[at++];
            len |= (uint64_t)(b & 0x7F) << shift;
            shift += 7;
            if (!(b & 0x80))
                break;
        }
        if (n - at < 4)
            return;
        put_le32(p + at, memdiff__crc32(0, p + pos, at - pos));
        at += 4;
        if (len > UINT32_MAX || n - at < len + 4)
            return;
        put_le32(p + at + len, memdiff__crc32(0, p + pos, at + len - pos));
        pos = at + (size_t)len + 4;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0; /* fmemopen refuses a zero size; the empty file is a unit test */
    open_bytes(data, size);
    uint8_t *copy = malloc(size);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    fix_checksums(copy, size);
    open_bytes(copy, size);
    free(copy);
    return 0;
}
