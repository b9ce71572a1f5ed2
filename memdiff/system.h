/*
 * system.h - private to the system snapshot's core files (system.c takes one and hands out its
 * figures, system_compare.c compares two, system_write.c and system_read.c keep one in a file).
 * Not installed.
 *
 * A system snapshot is three arrays in its own arena, each of the public struct it hands out:
 * the processes by pid, the physical table's rows (kind, owner, process index) and the
 * reconciled figures. Strings point into the same arena. Per process it keeps figures only,
 * never pages: the physical table is where frames are, summed.
 */
#ifndef MEMDIFF_SYSTEM_H
#define MEMDIFF_SYSTEM_H

#include "internal.h"

struct memdiff_system {
    memdiff__arena arena;
    memdiff_system_info info; /* strings in arena */
    memdiff_sysproc *procs;   /* ascending pid */
    size_t nprocs;
    memdiff_phys_row *rows;   /* by kind, owner, process index */
    size_t nrows;
    memdiff_reconcile *rec;
    size_t nrec;
    int phys;                 /* the table was read (rows may still be 0 only if no frame) */
};

struct memdiff_system_diff {
    memdiff__arena arena;
    memdiff_system_info before, after; /* strings in arena */
    memdiff_sysproc_diff *procs;       /* by pid, then start time */
    size_t nprocs;
    memdiff_phys_row_diff *rows;       /* by kind, owner, pid, start time */
    size_t nrows;
    int phys_before, phys_after;
};

/* ---- system files (docs/file-format.md, "System files"): system_write.c -> system_read.c --
 * A 16-byte header (magic, version, byte-order marker), tagged sections (varint tag, varint
 * length, payload; tag 0 ends the list), a CRC-32 of every byte before it. */
#define MEMDIFF__SYS_HEADER 16u
#define MEMDIFF__SYS_BOM 0x0A0B0C0Du
#define MEMDIFF__SYS_MAX_FILE ((uint64_t)1 << 30) /* files larger are refused */
#define MEMDIFF__SYS_MAX_STRING 65536u             /* bytes of one string at most */
/* A loaded system snapshot takes at most LOAD_FACTOR x the file's size + LOAD_FLOOR. */
#define MEMDIFF__SYS_LOAD_FACTOR 4u
#define MEMDIFF__SYS_LOAD_FLOOR ((uint64_t)1 << 20)
enum {
    MEMDIFF__SYS_TAG_END = 0,
    MEMDIFF__SYS_TAG_INFO = 1,
    MEMDIFF__SYS_TAG_PROCS = 2,
    MEMDIFF__SYS_TAG_ROWS = 3,
    MEMDIFF__SYS_TAG_RECONCILE = 4,
    MEMDIFF__SYS_TAG_KNOWN_MAX = MEMDIFF__SYS_TAG_RECONCILE
};
extern const unsigned char memdiff__sys_magic[8];

/* The system snapshot of the file p[0..n) (system_read.c): every check of
 * memdiff_system_load(). */
int memdiff__system_decode(const unsigned char *p, size_t n, memdiff_system **out);

/* A new, empty system snapshot in its own arena, or NULL (MEMDIFF_ENOMEM, detail set). */
memdiff_system *memdiff__system_new(void);

/* A NUL-terminated copy of s in the snapshot's arena ("" for NULL); NULL when out of memory. */
const char *memdiff__system_str(memdiff_system *s, const char *str);

/* Whether rows a and b name the same table row (kind, owner and, for a process, its pid and
 * start time); and their order (system.c). */
int memdiff__phys_row_cmp(memdiff_frame_kind ka, memdiff_frame_owner oa, int pa, uint64_t sa,
                          memdiff_frame_kind kb, memdiff_frame_owner ob, int pb, uint64_t sb);

/* Sets each row's process identity (pid, start_ticks) from its process index, and the counts of
 * processes by state in info, from the arrays: after taking and after loading. */
void memdiff__system_tally(memdiff_system *s);

/* Testing hook: fn (NULL: none) is called with each process's pid after the snapshot has
 * listed and named it and before it reads its memory (tests end a process there). */
void memdiff__system_test_hook(void (*fn)(int pid));

#endif /* MEMDIFF_SYSTEM_H */
