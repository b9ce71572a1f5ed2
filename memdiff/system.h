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

#endif /* MEMDIFF_SYSTEM_H */
