/*
 * smaps.h - a test-side parser of /proc/PID/smaps (Documentation/filesystems/proc.rst, "smaps"),
 * the kernel's own per-mapping accounting that the agreement suite holds memdiff's figures
 * against. Tests may use stdio and malloc freely; this is not library code.
 */
#ifndef MEMDIFF_TEST_SMAPS_H
#define MEMDIFF_TEST_SMAPS_H

#include <stddef.h>
#include <stdint.h>

/* One mapping. Figures are in bytes (smaps prints kB: KiB). */
typedef struct smaps_vma {
    uint64_t start, end;
    char perms[5];
    char *name;      /* as printed after the inode field, or "" */
    uint64_t rss, pss, shared_clean, shared_dirty, private_clean, private_dirty, swap;
    uint64_t anon_huge; /* AnonHugePages */
    char vmflags[160];  /* "rd wr mr mw me ac" */
} smaps_vma;

typedef struct smaps {
    smaps_vma *vma;
    size_t count;
} smaps;

/* Parses the smaps file at path. 0, or -errno (the file cannot be read) / -EINVAL (a line this
 * parser does not understand). */
int smaps_read_file(const char *path, smaps *out);

/* smaps_read_file("/proc/<pid>/smaps"). */
int smaps_read(int pid, smaps *out);

void smaps_free(smaps *s);

/* Whether the VmFlags line holds the two-letter flag (e.g. "pf": VM_PFNMAP). */
int smaps_has_flag(const smaps_vma *v, const char *flag);

/* Whether two readings of one mapping agree in range and in every figure. */
int smaps_vma_equal(const smaps_vma *a, const smaps_vma *b);

/* The mapping holding addr, or NULL. */
const smaps_vma *smaps_find(const smaps *s, uint64_t addr);

#endif
