/*
 * maps.c - the region list from /proc/PID/maps (Documentation/filesystems/proc.rst, "maps").
 *
 * A line is "start-end perms offset major:minor inode", then, when the mapping has a name,
 * padding spaces and the name up to the newline. A file name may hold spaces, brackets and
 * " (deleted)" text; the kernel escapes only a newline, as "\012" (seq_path with "\n"), which is
 * decoded here as a newline; as a name may spell those four bytes too, paths.c then checks the
 * readings against the file itself. The text comes from a file the process can change while
 * it is read, or from a fixture: every field is bounds-checked against len and a malformed
 * line is an error, never a guess.
 */
#include <sched.h>
#include <string.h>

#include "linux.h"

typedef struct cursor {
    const char *p, *end;
} cursor;

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* At least one and at most max_digits hex digits. */
static int take_hex(cursor *c, unsigned max_digits, uint64_t *out)
{
    uint64_t v = 0;
    unsigned n = 0;
    while (c->p < c->end && hexval((unsigned char)*c->p) >= 0) {
        if (++n > max_digits)
            return -1;
        v = v << 4 | (uint64_t)hexval((unsigned char)*c->p);
        c->p++;
    }
    *out = v;
    return n ? 0 : -1;
}

static int take_dec(cursor *c, uint64_t *out)
{
    uint64_t v = 0;
    unsigned n = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned d = (unsigned)(*c->p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
        n++;
        c->p++;
    }
    *out = v;
    return n ? 0 : -1;
}

static int take_char(cursor *c, char ch)
{
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 0;
    }
    return -1;
}

static int starts_with(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

static int equals(const char *s, size_t len, const char *word)
{
    return len == strlen(word) && memcmp(s, word, len) == 0;
}

/* Names the kernel puts in brackets instead of a path (proc.rst, and mm's arch_vma_name /
 * vma name callbacks): [heap], [stack], [vdso], [vvar], [vvar_vclock], [vsyscall],
 * [anon:NAME] (PR_SET_VMA_ANON_NAME), [anon_shmem:NAME], and others such as [uprobes]. */
static void bracket_hint(const char *in, size_t n, memdiff__hint *hint, const char **name,
                         size_t *name_len)
{
    *name = "";
    *name_len = 0;
    if (equals(in, n, "heap")) {
        *hint = MEMDIFF__HINT_BRK_HEAP;
    } else if (equals(in, n, "stack")) {
        *hint = MEMDIFF__HINT_MAIN_STACK;
    } else if (equals(in, n, "vdso")) {
        *hint = MEMDIFF__HINT_VDSO;
    } else if (equals(in, n, "vvar") || equals(in, n, "vvar_vclock")) {
        *hint = MEMDIFF__HINT_VVAR;
    } else if (equals(in, n, "vsyscall")) {
        *hint = MEMDIFF__HINT_VSYSCALL;
    } else if (starts_with(in, n, "anon:")) {
        *hint = MEMDIFF__HINT_ANON_NAME;
        *name = in + 5;
        *name_len = n - 5;
    } else if (starts_with(in, n, "anon_shmem:")) {
        *hint = MEMDIFF__HINT_ANON_NAME;
        *name = in + 11;
        *name_len = n - 11;
    } else {
        *hint = MEMDIFF__HINT_OTHER;
        *name = in;
        *name_len = n;
    }
}

/* "/SYSV" and exactly eight hex digits: shm_file names a SysV segment "SYSV%08x" by its key. */
static int is_sysv_name(const char *s, size_t n)
{
    if (n != 13 || !starts_with(s, n, "/SYSV"))
        return 0;
    for (size_t i = 5; i < 13; i++)
        if (hexval((unsigned char)s[i]) < 0)
            return 0;
    return 1;
}

/* Each \012 of p[0..len) as a newline, in place; the new length. */
static size_t decode_newlines(char *p, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '\\' && len - i >= 4 && memcmp(p + i + 1, "012", 3) == 0) {
            p[o++] = '\n';
            i += 3;
        } else {
            p[o++] = p[i];
        }
    }
    p[o] = '\0';
    return o;
}

/* One line, without its newline. On failure *why says what was wrong. *escaped is set when
 * the path had the kernel's escape. */
static int parse_line(const char *line, size_t len, memdiff__arena *arena, memdiff__plat_region *r,
                      const char **why, int *escaped)
{
    cursor c = {line, line + len};
    uint64_t major, minor;
    memset(r, 0, sizeof *r);
    r->path = "";
    r->name = "";

    if (memchr(line, '\0', len)) {
        *why = "NUL byte in line";
        return -1;
    }
    if (take_hex(&c, 16, &r->start) || take_char(&c, '-') || take_hex(&c, 16, &r->end)) {
        *why = "bad address range";
        return -1;
    }
    if (r->start >= r->end) {
        *why = "range start is not below its end";
        return -1;
    }
    /* Linux's smallest page is 4 KiB: anything else is not a mapping the kernel printed. */
    if ((r->start | r->end) & 0xfff) {
        *why = "range is not page aligned";
        return -1;
    }
    if (take_char(&c, ' ') || c.end - c.p < 5) {
        *why = "missing permissions";
        return -1;
    }
    const char *perm = c.p;
    if ((perm[0] != 'r' && perm[0] != '-') || (perm[1] != 'w' && perm[1] != '-') ||
        (perm[2] != 'x' && perm[2] != '-') || (perm[3] != 's' && perm[3] != 'p')) {
        *why = "bad permissions";
        return -1;
    }
    r->prot = (perm[0] == 'r' ? MEMDIFF_PROT_READ : 0) | (perm[1] == 'w' ? MEMDIFF_PROT_WRITE : 0) |
              (perm[2] == 'x' ? MEMDIFF_PROT_EXEC : 0);
    if (perm[3] == 's')
        r->flags |= MEMDIFF_REGION_SHARED;
    c.p += 4;
    if (take_char(&c, ' ') || take_hex(&c, 16, &r->offset)) {
        *why = "bad offset";
        return -1;
    }
    if (take_char(&c, ' ') || take_hex(&c, 8, &major) || take_char(&c, ':') ||
        take_hex(&c, 8, &minor)) {
        *why = "bad device";
        return -1;
    }
    r->dev = major << 32 | minor;
    if (take_char(&c, ' ') || take_dec(&c, &r->inode)) {
        *why = "bad inode";
        return -1;
    }
    if (r->inode != 0)
        r->flags |= MEMDIFF_REGION_FILE;
    if (c.p < c.end && *c.p != ' ') {
        *why = "garbage after inode";
        return -1;
    }
    /* Padding, then the name. A real path is absolute and a bracket name starts with '[', so
     * no name begins with a space: all leading spaces are padding. */
    while (c.p < c.end && *c.p == ' ')
        c.p++;
    const char *path = c.p;
    size_t plen = (size_t)(c.end - c.p);
    if (plen == 0)
        return 0;

    const char *name = "";
    size_t name_len = 0;
    if (plen >= 2 && path[0] == '[' && path[plen - 1] == ']') {
        bracket_hint(path + 1, plen - 2, &r->hint, &name, &name_len);
        plen = 0;
    } else {
        static const char deleted[] = " (deleted)";
        size_t dlen = sizeof deleted - 1;
        if (plen > dlen && memcmp(path + plen - dlen, deleted, dlen) == 0) {
            plen -= dlen;
            r->flags |= MEMDIFF__RF_DELETED;
        }
        if (is_sysv_name(path, plen))
            r->hint = MEMDIFF__HINT_SYSV_SHM;
        else if (starts_with(path, plen, "/memfd:"))
            r->hint = MEMDIFF__HINT_MEMFD;
    }
    if (plen) {
        char *p = memdiff__arena_strndup(arena, path, plen);
        if (!p)
            return -2;
        /* Only a name with a backslash pays for the decoding. */
        if (memchr(p, '\\', plen) && decode_newlines(p, plen) != plen)
            *escaped = 1;
        r->path = p;
    }
    if (name_len) {
        char *n = memdiff__arena_strndup(arena, name, name_len);
        if (!n)
            return -2;
        r->name = n;
    }
    return 0;
}

int memdiff__linux_parse_maps(const char *text, size_t len, memdiff__arena *arena,
                              memdiff__plat_region **out, size_t *count, size_t *escaped)
{
    *out = NULL;
    *count = 0;
    size_t lines = 0, nesc = 0;
    for (const char *p = text, *end = text + len; p < end; p++) {
        p = memchr(p, '\n', (size_t)(end - p));
        if (!p)
            break;
        lines++;
    }
    if (len > 0 && text[len - 1] != '\n')
        lines++; /* a last line cut off before its newline */
    if (lines > SIZE_MAX / sizeof(memdiff__plat_region) - 1)
        return memdiff__set_error(MEMDIFF_ENOMEM, "maps: %zu lines", lines);

    memdiff__plat_region *regions = memdiff__arena_alloc(arena, (lines + 1) * sizeof *regions);
    if (!regions)
        return MEMDIFF_ENOMEM;
    size_t n = 0, pos = 0, lineno = 0;
    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t llen = nl ? (size_t)(nl - line) : len - pos;
        const char *why = NULL;
        int esc = 0;
        lineno++;
        int rc = parse_line(line, llen, arena, &regions[n], &why, &esc);
        if (rc == -2)
            return MEMDIFF_ENOMEM;
        if (rc < 0)
            return memdiff__set_error(MEMDIFF_EFORMAT, "maps line %zu: %s: \"%.*s\"", lineno,
                                      why, (int)(llen > 120 ? 120 : llen), line);
        if (n > 0 && regions[n].start < regions[n - 1].end)
            return memdiff__set_error(MEMDIFF_EFORMAT,
                                      "maps line %zu: region 0x%llx-0x%llx overlaps or precedes "
                                      "the one before it (ending at 0x%llx)",
                                      lineno, (unsigned long long)regions[n].start,
                                      (unsigned long long)regions[n].end,
                                      (unsigned long long)regions[n - 1].end);
        n++;
        nesc += (size_t)esc;
        pos += llen + (nl ? 1 : 0);
    }
    *out = regions;
    *count = n;
    if (escaped)
        *escaped = nesc;
    return MEMDIFF_OK;
}

#define MAPS_READ_TRIES 8

int memdiff__plat_regions(memdiff__proc *proc, memdiff__arena *arena,
                          memdiff__plat_region **out, size_t *count)
{
    size_t len = 0, escaped = 0;
    *out = NULL;
    *count = 0;
    int rc = MEMDIFF_OK;
    /* The kernel prints maps one read() at a time and finds where to go on by address: a
     * mapping made or removed between two reads can make the text overlap or go backwards (seen
     * with four threads mapping and unmapping). Such a text is no format error of the kernel's:
     * read it again. A text that stays malformed (a broken fixture) fails after a few tries. */
    for (int attempt = 0; attempt < MAPS_READ_TRIES; attempt++) {
        if (attempt > 0)
            sched_yield();
        rc = memdiff__linux_read_proc(
            proc, "maps", proc->live ? MEMDIFF__LINUX_READ_MAPS : MEMDIFF__LINUX_READ_ALL, &len);
        if (rc)
            return rc;
        rc = memdiff__linux_parse_maps(proc->text, len, arena, out, count, &escaped);
        if (rc != MEMDIFF_EFORMAT)
            break;
    }
    if (!rc && escaped)
        rc = memdiff__linux_resolve_escapes(proc, arena, *out, *count);
    if (!rc) {
        proc->regions = *out; /* the page walk asks a region's kind (walk.h) */
        proc->region_count = *count;
        proc->regions_read++; /* a new pass: nothing read or scanned ahead holds for it */
    }
    return rc;
}

/* ---- the region list of the page walk ------------------------------------------------- */

static int anon_shared_name(const memdiff__plat_region *r)
{
    return r->hint == MEMDIFF__HINT_SYSV_SHM || r->hint == MEMDIFF__HINT_MEMFD ||
           r->hint == MEMDIFF__HINT_ANON_NAME ||
           ((r->flags & MEMDIFF__RF_DELETED) && strcmp(r->path, "/dev/zero") == 0);
}

size_t memdiff__linux_region_holding(const memdiff__proc *p, uint64_t start, uint64_t end)
{
    size_t lo = 0, hi = p->region_count;
    while (lo < hi) { /* the first region that ends above start */
        size_t mid = lo + (hi - lo) / 2;
        if (p->regions[mid].end <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->region_count && p->regions[lo].start <= start && p->regions[lo].end >= end
               ? lo
               : p->region_count;
}

/* Device mappings (VM_PFNMAP) have pages without a struct page, which pagemap does not call
 * file pages: only shared memory the kernel names as such is MEMDIFF__FILE_ALWAYS. */
memdiff__file_rule memdiff__linux_region_file_rule(const memdiff__proc *p, uint64_t start,
                                                   uint64_t end)
{
    size_t lo = memdiff__linux_region_holding(p, start, end);
    if (lo == p->region_count)
        return MEMDIFF__FILE_ASK;
    const memdiff__plat_region *r = &p->regions[lo];
    if (r->flags & MEMDIFF_REGION_SHARED)
        return anon_shared_name(r) ? MEMDIFF__FILE_ALWAYS : MEMDIFF__FILE_ASK;
    if (r->inode != 0)
        return MEMDIFF__FILE_ASK;
    switch (r->hint) {
    case MEMDIFF__HINT_NONE:
    case MEMDIFF__HINT_BRK_HEAP:
    case MEMDIFF__HINT_MAIN_STACK:
    case MEMDIFF__HINT_ANON_NAME:
        return MEMDIFF__FILE_NEVER;
    default:
        return MEMDIFF__FILE_ASK; /* vdso, vvar, vsyscall, other special mappings */
    }
}
