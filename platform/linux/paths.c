/*
 * paths.c - a mapped file's path as the process sees it: looked up without opening anything
 * and without asking a file system a process serves, and the kernel's escape in
 * /proc/PID/maps resolved against the file itself.
 *
 * show_map_vma (fs/proc/task_mmu.c) prints a mapped file's path with seq_path(m, path, "\n"),
 * and mangle_path (fs/seq_file.c) writes each byte of that set as a backslash and three octal
 * digits: a newline becomes the four bytes \012 and nothing else is escaped, a backslash
 * included. So \012 in maps is either a newline or those four bytes of the name; a name with k
 * of them has 2^k readings. maps.c decodes every one as a newline (names with a newline are
 * more common than names spelling \012) and memdiff__linux_resolve_escapes then picks the
 * reading that names the very file mapped, by device and inode.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux.h"

/* Readings tried per path: all of them up to this many escapes (64 lookups at most, for names
 * nobody has by accident), else only "all newlines" and "all \012". */
#define MAX_ESCAPES_ENUMERATED 6u
/* Lookups per region list: a process that maps thousands of files named so cannot make a
 * snapshot of it look paths up for minutes. Past it, paths keep every \012 a newline. */
#define MAX_LOOKUPS 4096u

/* Whether the field at *p (up to end) is the decimal number v followed by stop; moves *p past
 * both. */
static int field_is(const char **p, const char *end, uint64_t v, char stop)
{
    uint64_t n = 0;
    const char *q = *p;
    while (q < end && *q >= '0' && *q <= '9' && n <= UINT64_MAX / 10)
        n = n * 10 + (uint64_t)(*q++ - '0');
    int ok = q > *p && q < end && *q == stop && n == v;
    *p = q + 1;
    return ok;
}

int memdiff__linux_served_by_a_process(memdiff__proc *proc, uint64_t dev,
                                       memdiff__linux_mounts *m)
{
    if ((dev >> 32) != 0)
        return 0;
    if (m->state == 0) {
        char path[PATH_MAX];
        m->state = -1;
        if (!memdiff__linux_path(path, sizeof path, proc->dir, "mountinfo") &&
            !memdiff__linux_read_file(proc->scratch, path, &m->text, &m->cap, &m->len,
                                      MEMDIFF__LINUX_READ_ALL))
            m->state = 1;
    }
    if (m->state < 0)
        return 1;
    /* proc.rst "mountinfo": ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [TAGS...] - TYPE ... */
    const char *line = m->text, *end = m->text + m->len;
    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end, *p = line;
        for (int k = 0; k < 2 && p < le; k++) {
            while (p < le && *p != ' ')
                p++;
            p++;
        }
        if (p < le && field_is(&p, le, dev >> 32, ':') && field_is(&p, le, dev & UINT32_MAX, ' ')) {
            const char *sep = NULL;
            for (const char *q = p; q + 2 < le && !sep; q++)
                if (q[0] == ' ' && q[1] == '-' && q[2] == ' ')
                    sep = q + 3;
            return !sep || (le - sep >= 4 && memcmp(sep, "fuse", 4) == 0);
        }
        line = le + 1;
    }
    return 1; /* no mount has the device: not a file to look for */
}

int memdiff__linux_open_mapped(memdiff__proc *proc, const char *path, uint64_t dev,
                               uint64_t inode, memdiff__linux_mounts *m, struct stat *st)
{
    char full[PATH_MAX];
    if (path[0] != '/' || memdiff__linux_served_by_a_process(proc, dev, m))
        return -1;
    /* Through the process's root, so that a process in another mount namespace is read right. */
    if (snprintf(full, sizeof full, "%s/root%s", proc->dir, path) >= (int)sizeof full)
        return -1;
    int at = memdiff__linux_open_stat(full, O_PATH, st);
    if (at < 0)
        return -1;
    if ((uint64_t)st->st_ino != inode || memdiff__linux_dev(st->st_dev) != dev) {
        close(at);
        return -1;
    }
    return at;
}

/* Whether the reading of decoded (len bytes, k newlines) that spells the newlines whose bit is
 * set in mask (all of them when all) as \012 names the file of region r; into buf then. */
static int reading_is_the_file(memdiff__proc *proc, const memdiff__plat_region *r,
                               const char *decoded, size_t len, uint64_t mask, int all,
                               memdiff__linux_mounts *m, char *buf, size_t size)
{
    size_t o = 0;
    unsigned i = 0;
    for (size_t j = 0; j < len; j++) {
        if (o + 5 > size)
            return 0;
        if (decoded[j] == '\n' && (all || (mask >> i++ & 1))) {
            memcpy(buf + o, "\\012", 4);
            o += 4;
        } else {
            buf[o++] = decoded[j];
        }
    }
    buf[o] = '\0';
    struct stat st;
    int fd = memdiff__linux_open_mapped(proc, buf, r->dev, r->inode, m, &st);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* The path of r, whose decoded path holds k newlines: the first reading that names the file,
 * the decoded one first; the decoded one when none does. 0, or -2 out of memory. */
static int resolve(memdiff__proc *proc, memdiff__arena *arena, memdiff__plat_region *r,
                   unsigned k, memdiff__linux_mounts *m, unsigned *budget)
{
    char buf[PATH_MAX];
    size_t len = strlen(r->path);
    if (r->inode == 0 || (r->flags & MEMDIFF__RF_DELETED))
        return 0; /* nothing to look up: a deleted file's name names another file or none */
    int enumerate = k <= MAX_ESCAPES_ENUMERATED;
    uint64_t full = enumerate ? (UINT64_C(1) << k) - 1 : 0;
    uint64_t tries = enumerate ? full + 1 : 2;
    /* Order: all newlines, all \012, then the mixed readings. */
    for (uint64_t t = 0; t < tries && *budget > 0; t++) {
        uint64_t mask = t == 0 ? 0 : t == 1 ? full : t - 1;
        --*budget;
        int all = !enumerate && t == 1;
        if (!reading_is_the_file(proc, r, r->path, len, mask, all, m, buf, sizeof buf))
            continue;
        if (mask == 0 && !all)
            return 0;
        char *p = memdiff__arena_strndup(arena, buf, strlen(buf));
        if (!p)
            return -2;
        r->path = p;
        return 0;
    }
    return 0;
}

int memdiff__linux_resolve_escapes(memdiff__proc *proc, memdiff__arena *arena,
                                   memdiff__plat_region *regions, size_t count)
{
    memdiff__linux_mounts m = {NULL, 0, 0, 0};
    unsigned budget = MAX_LOOKUPS;
    const memdiff__plat_region *last = NULL; /* the last region resolved */
    const char *last_decoded = NULL;
    for (size_t i = 0; i < count; i++) {
        memdiff__plat_region *r = &regions[i];
        unsigned k = 0;
        for (const char *p = r->path; (p = strchr(p, '\n')) != NULL; p++)
            k++;
        if (k == 0)
            continue;
        /* A file's regions follow one another: one lookup for all of them. */
        if (last && last->dev == r->dev && last->inode == r->inode && last->flags == r->flags &&
            strcmp(last_decoded, r->path) == 0) {
            r->path = last->path;
            continue;
        }
        const char *decoded = r->path;
        if (resolve(proc, arena, r, k, &m, &budget) != 0)
            return memdiff__set_error(MEMDIFF_ENOMEM, "maps: out of memory");
        last = r;
        last_decoded = decoded;
    }
    return MEMDIFF_OK;
}
