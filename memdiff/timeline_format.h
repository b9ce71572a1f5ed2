/*
 * timeline_format.h - timeline files: what the writer (timeline_write.c) and the reader
 * (timeline_read.c) share, private to them. docs/timeline-format.md is the specification.
 *
 * Layout: a 16-byte header (magic "MEMDIFFT", version, byte-order marker), then records back to
 * back to the end of the file. A record is its kind (1 byte), its payload's length (varint), a
 * CRC-32 of those bytes (4), the payload, and a CRC-32 of everything before it in the record (4).
 * The head has a checksum of its own so that a damaged length is named as damage, not taken for
 * a record the file ends inside (which is what a writer stopped mid-record leaves: "torn").
 * Every payload begins with the record's time as a zigzag varint step from the previous record's
 * time (mod 2^64), so that a reader follows the clock across kinds it does not know.
 *
 * The writer and the reader share this header and the CRC-32 (file_common.c); neither calls the
 * other. Snapshots inside are snapshot files (file_write.c encodes, file_read.c decodes).
 */
#ifndef MEMDIFF_TIMELINE_FORMAT_H
#define MEMDIFF_TIMELINE_FORMAT_H

#include "internal.h"

#define TL_HEADER_SIZE 16u
#define TL_BYTE_ORDER_MARK 0x0A0B0C0Du

static const unsigned char tl_magic[8] = {'M', 'E', 'M', 'D', 'I', 'F', 'F', 'T'};

/* Record kinds. 0 is never valid (a zero-filled tail is damage, not a record); kinds above
 * TL_KIND_KNOWN_MAX belong to newer minor versions and are skipped. */
enum {
    TL_KIND_HEADER = 1,
    TL_KIND_SAMPLE = 2,
    TL_KIND_SNAPSHOT = 3,
    TL_KIND_MARK = 4,
    TL_KIND_EXIT = 5,
    TL_KIND_KNOWN_MAX = TL_KIND_EXIT
};

/* A record's payload is at most this long (a snapshot file may be 4 GiB; the timeline keeps
 * one record's length in 32 bits). */
#define TL_PAYLOAD_MAX ((uint64_t)UINT32_MAX)
/* Kind, a length varint of at most 5 bytes (32 bits), head CRC. */
#define TL_HEAD_MAX 10u
#define TL_CRC_SIZE 4u

/* Limits on the strings of a record: host and each argument, their number, a mark's label. */
#define TL_STRING_MAX ((uint64_t)65536)
#define TL_ARGS_MAX 65536u
#define TL_LABEL_MAX ((uint64_t)MEMDIFF_MARK_LABEL_MAX)

static inline uint64_t tl_zigzag(uint64_t step)
{
    /* step is a difference mod 2^64 read as signed: small back-steps stay small. */
    return (step << 1) ^ (0 - (step >> 63));
}

static inline uint64_t tl_unzigzag(uint64_t v)
{
    return (v >> 1) ^ (0 - (v & 1));
}

/* The sample's figures, in the order of their bits in the change mask (memdiff_process_totals'
 * fields, which are all uint64_t). */
#define TL_SAMPLE_FIELDS 8u

/* How a snapshot record's snapshot is stored. */
#define TL_SNAPSHOT_FILE 0u /* a whole snapshot file (docs/file-format.md) */

/* The smallest snapshot file: header, end tag, checksum (the reader refuses less at open, so
 * that its index of snapshot records stays below half the file's size). */
#define TL_SNAPSHOT_MIN 21u

#endif
