/*
 * file_format.h - snapshot files: what the writer (file_write.c) and the reader (file_read.c)
 * share, private to them. docs/file-format.md is the specification; the two files follow it
 * section by section.
 *
 * Layout: a 16-byte header (magic, version, byte-order marker), tagged sections (tag, length,
 * payload; tag 0 ends the list), then a CRC-32 of every byte before it. Numbers inside sections
 * are LEB128 varints, addresses are page deltas from the previous region or run, so a run costs
 * 5-8 bytes whatever the address width and run-length data stays run-length.
 *
 * Calls go one way: file_write.c -> file_read.c (the writer reads its own output back, so that
 * the loader's checks define a valid snapshot) -> file_common.c (the CRC-32), which the writer
 * calls too. The reader never calls the writer.
 */
#ifndef MEMDIFF_FILE_FORMAT_H
#define MEMDIFF_FILE_FORMAT_H

#include <stdio.h>

#include "internal.h"

#define HEADER_SIZE 16u
#define BYTE_ORDER_MARK 0x0A0B0C0Du

/* The bound on a loaded snapshot's arrays (docs/file-format.md, "Memory"): LOAD_NUM / LOAD_DEN
 * (2.75) times the file's size, or LOAD_FLOOR where that is more (the structures that a small
 * file needs whatever its size). The reader refuses a file that passes it; the writer pads a
 * file that would otherwise pass it, so every file memdiff writes loads. The file's own bytes
 * are held while it is parsed, and the arena's growth copies and bookkeeping come on top
 * (measured up to 0.12 x the file's size): a load peaks below 4 x the file's size for a file of
 * LOAD_FLOOR / 2.75 or more. */
#define LOAD_NUM 11
#define LOAD_DEN 4
#define LOAD_FLOOR ((uint64_t)16 << 20)

static const unsigned char magic[8] = {'M', 'E', 'M', 'D', 'I', 'F', 'F', '\0'};

/* Section tags, in the order they must appear. Unknown tags (a newer minor version) are
 * skipped. */
enum {
    TAG_END = 0,
    TAG_INFO = 1,
    TAG_STRINGS = 2,
    TAG_REGIONS = 3,
    TAG_RUNS = 4,
    TAG_AUX = 5,
    TAG_PSS = 6, /* 1.1: PSS per mapping (MEMDIFF_SRC_PSS_MAPPINGS) */
    TAG_KNOWN_MAX = TAG_PSS
};


/* AUX section: which per-page arrays follow. */
#define AUX_PFN 0x1u
#define AUX_KFLAGS 0x2u
#define AUX_MAPCOUNT 0x4u

/* Run aux tags: no per-page data, data right after the previous run's, or an explicit index. */
#define RUN_AUX_NONE 0u
#define RUN_AUX_NEXT 1u
#define RUN_AUX_AT 2u

/* Where the bytes of a file come from: a stream read as the frame is walked (load), or a buffer
 * that holds them all (the writer checking its own output; in NULL). Reading goes no further
 * than the frame says the file goes, in pieces of at most READ_PIECE (file_read.c), and the
 * buffer grows with the bytes that arrive, never with a length the file announces: /dev/zero or
 * a 20 GiB sparse file cost 16 bytes (bad magic), a section that claims 4 GiB costs what the
 * stream holds. */
typedef struct memdiff__file_source {
    FILE *in;
    memdiff__arena *arena;
    unsigned char *p;
    size_t n, cap;
    int ended; /* in has no more bytes */
} memdiff__file_source;

/* Builds s (whose arena receives everything) from the file src gives (file_read.c). bounded:
 * refuse a file whose snapshot would take more than its bound; *used (may be NULL) receives
 * what it took. */
int memdiff__file_parse(memdiff__file_source *src, memdiff_snapshot *s, int bounded,
                        uint64_t *used);

#endif
