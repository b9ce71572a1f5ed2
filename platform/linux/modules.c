/*
 * modules.c - loaded ELF modules and their segments, from the region list and the modules' own
 * program headers.
 *
 * A module starts at a file-backed region with file offset 0 whose first bytes are an ELF
 * header. Its program headers (elf(5)) give each PT_LOAD's extent, so the bss tail past the
 * file data and the gaps the loader leaves (---p) are attributed to the module even though maps
 * shows them as anonymous or inaccessible. The header bytes come from process memory when the
 * page is resident, else from the file itself (<dir>/root/<path>, opened only when it is a
 * regular file with the same device and inode: see open_module_file), so that looking never
 * faults a page into the process. The first bytes of every module whose first page is resident
 * come in one process_vm_readv ahead of the rest (read_ahead). When neither can be read (a
 * fixture tree, a file replaced or covered since it was mapped), the module is the run of
 * contiguous regions of the file, with an adjacent anonymous rw region after a writable last one
 * taken as its bss.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "linux.h"

#define MAX_PHNUM 256
#define MAX_PHOFF (64 * 1024)
/* First bytes of an image read at once: the ELF header and 17 64-bit program headers behind it
 * (glibc's libraries and programs have 10 to 14), inside the first page of any page size. */
#define HEAD_BYTES 1024u
#define MAX_SPAN (UINT64_C(1) << 40) /* no module spans a terabyte */

typedef struct load {
    uint64_t vaddr, offset, filesz, memsz;
    uint32_t flags;
} load;

/* Reads a module's file bytes: from memory where the first region maps them, else from the
 * file. */
typedef struct reader {
    memdiff__proc *proc;
    const memdiff__plat_region *first; /* the region at file offset 0 */
    const unsigned char *head;         /* its first HEAD_BYTES, read ahead; or NULL */
    int fd;                            /* -2: not tried yet, -1: unavailable */
    memdiff__linux_mounts *mounts; /* the process's mountinfo, read once per listing */
} reader;

static int same_file(const memdiff__plat_region *a, const memdiff__plat_region *b)
{
    return a->inode != 0 && a->inode == b->inode && a->dev == b->dev;
}

/* The module's file as the process sees it, or -1 (unavailable: the caller falls back to the
 * regions). The path is the process's to change since it mapped the file: it may have mounted a
 * FIFO or a device over it in a mount namespace of its own, which a plain open would wait on or
 * touch. So the path is looked at (memdiff__linux_open_mapped: nothing is opened), and only the
 * very file mapped (same device and inode, a regular file) is opened, through its fd
 * (memdiff__linux_reopen). */
static int open_module_file(reader *r)
{
    const memdiff__plat_region *f = r->first;
    if (f->flags & MEMDIFF__RF_DELETED)
        return -1;
    struct stat st;
    int at = memdiff__linux_open_mapped(r->proc, f->path, f->dev, f->inode, r->mounts, &st);
    if (at < 0)
        return -1;
    int fd = memdiff__linux_reopen(r->proc, at, &st);
    close(at);
    return fd;
}

static int read_at(reader *r, uint64_t off, void *buf, size_t len)
{
    const memdiff__plat_region *f = r->first;
    if (r->head && off <= HEAD_BYTES && len <= HEAD_BYTES - off) {
        memcpy(buf, r->head + off, len);
        return 0;
    }
    if (off <= f->end - f->start && len <= f->end - f->start - off &&
        memdiff__linux_read_mem(r->proc, f->start + off, buf, len) == MEMDIFF_OK)
        return 0;
    if (r->fd == -2) {
        r->fd = open_module_file(r);
        /* One page of headers is all we read: no read-ahead into the page cache. */
        if (r->fd >= 0)
            posix_fadvise(r->fd, 0, 0, POSIX_FADV_RANDOM);
    }
    if (r->fd >= 0 && memdiff__linux_pread_full(r->fd, buf, len, off) == (ssize_t)len)
        return 0;
    return -1;
}

/* The PT_LOAD entries of the ELF image, in ascending vaddr. 0, or -1 when it is not an ELF
 * image this code can read (bad magic, other byte order, absurd sizes). */
static int read_loads(reader *r, unsigned char *ph, load *loads, size_t *nload)
{
    union {
        unsigned char ident[EI_NIDENT];
        Elf64_Ehdr e64;
        Elf32_Ehdr e32;
    } h;
    /* The header and, where they follow it closely as linkers put them, the program headers
     * come in one read of the image's first bytes (two syscalls a module fewer); a short image
     * or file gets the header alone. */
    unsigned char head[HEAD_BYTES];
    size_t have = sizeof head;
    *nload = 0;
    if (read_at(r, 0, head, sizeof head)) {
        have = sizeof h.e64;
        if (read_at(r, 0, head, have))
            return -1;
    }
    memcpy(&h, head, sizeof h.e64);
    if (memcmp(h.ident, ELFMAG, SELFMAG) != 0 || h.ident[EI_VERSION] != EV_CURRENT)
        return -1;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (h.ident[EI_DATA] != ELFDATA2LSB)
        return -1;
#else
    if (h.ident[EI_DATA] != ELFDATA2MSB)
        return -1;
#endif
    int is64 = h.ident[EI_CLASS] == ELFCLASS64;
    if (!is64 && h.ident[EI_CLASS] != ELFCLASS32)
        return -1;
    unsigned type = is64 ? h.e64.e_type : h.e32.e_type;
    uint64_t phoff = is64 ? h.e64.e_phoff : h.e32.e_phoff;
    unsigned phnum = is64 ? h.e64.e_phnum : h.e32.e_phnum;
    unsigned phentsize = is64 ? h.e64.e_phentsize : h.e32.e_phentsize;
    if ((type != ET_EXEC && type != ET_DYN) || phnum == 0 || phnum > MAX_PHNUM ||
        phentsize != (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)) || phoff > MAX_PHOFF)
        return -1;

    size_t bytes = (size_t)phnum * phentsize;
    if (phoff <= have && bytes <= have - phoff)
        memcpy(ph, head + phoff, bytes);
    else if (read_at(r, phoff, ph, bytes))
        return -1;
    size_t n = 0;
    for (unsigned i = 0; i < phnum; i++) {
        load l;
        uint32_t type_i;
        if (is64) {
            Elf64_Phdr p;
            memcpy(&p, ph + (size_t)i * phentsize, sizeof p);
            type_i = p.p_type;
            l = (load){p.p_vaddr, p.p_offset, p.p_filesz, p.p_memsz, p.p_flags};
        } else {
            Elf32_Phdr p;
            memcpy(&p, ph + (size_t)i * phentsize, sizeof p);
            type_i = p.p_type;
            l = (load){p.p_vaddr, p.p_offset, p.p_filesz, p.p_memsz, p.p_flags};
        }
        if (type_i != PT_LOAD)
            continue;
        /* elf(5): loadable segments are sorted by p_vaddr; filesz never exceeds memsz. */
        if (l.filesz > l.memsz || l.memsz > MAX_SPAN || l.vaddr > UINT64_MAX - MAX_SPAN ||
            (n > 0 && l.vaddr < loads[n - 1].vaddr))
            return -1;
        loads[n++] = l;
    }
    *nload = n;
    return n ? 0 : -1;
}

/* ---- segment lists ------------------------------------------------------------------------ */

static void sort_segments(memdiff__plat_segment *s, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        memdiff__plat_segment x = s[i];
        size_t j = i;
        while (j > 0 && s[j - 1].start > x.start) {
            s[j] = s[j - 1];
            j--;
        }
        s[j] = x;
    }
}

/* Sorted, then clipped so that none overlaps the one before; empty ones dropped. */
static size_t normalize(memdiff__plat_segment *s, size_t n)
{
    sort_segments(s, n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        memdiff__plat_segment x = s[i];
        if (k > 0 && x.start < s[k - 1].end)
            x.start = s[k - 1].end;
        if (x.start < x.end)
            s[k++] = x;
    }
    return k;
}

/* Adds the parts of same-file regions inside [base, end) that no segment covers (the gaps the
 * loader leaves between segments) as OTHER. seg[0..n) is normalized; room is seg's capacity. */
static size_t add_gaps(memdiff__plat_segment *seg, size_t n, size_t room,
                       const memdiff__plat_region *regions, size_t region_count, size_t first,
                       uint64_t base, uint64_t end)
{
    size_t k = n;
    for (size_t i = first; i < region_count && regions[i].start < end; i++) {
        const memdiff__plat_region *r = &regions[i];
        if (!same_file(r, &regions[first]))
            continue;
        uint64_t a = r->start > base ? r->start : base;
        uint64_t b = r->end < end ? r->end : end;
        uint64_t cur = a;
        for (size_t j = 0; j < n && cur < b; j++) {
            if (seg[j].end <= cur || seg[j].start >= b)
                continue;
            if (seg[j].start > cur && k < room)
                seg[k++] = (memdiff__plat_segment){cur, seg[j].start, MEMDIFF__SEG_OTHER};
            cur = seg[j].end;
        }
        if (cur < b && k < room)
            seg[k++] = (memdiff__plat_segment){cur, b, MEMDIFF__SEG_OTHER};
    }
    return normalize(seg, k);
}

/* ---- building modules ---------------------------------------------------------------------- */

typedef struct builder {
    memdiff__proc *proc;
    memdiff__arena *arena;
    const memdiff__plat_region *regions;
    size_t region_count;
    memdiff__plat_segment *seg; /* scratch */
    size_t seg_cap;
    load loads[MAX_PHNUM];
    unsigned char ph[MAX_PHNUM * sizeof(Elf64_Phdr)]; /* raw program headers */
    memdiff__linux_mounts mounts;
    const unsigned char **head; /* per region: its first HEAD_BYTES, read ahead; or NULL */
} builder;

/* Whether regions[i] may start a module: a file's first page with code mapped near it. */
static int code_follows(const builder *b, size_t i);

static int may_start_module(const builder *b, size_t i)
{
    const memdiff__plat_region *r = &b->regions[i];
    return r->inode != 0 && r->offset == 0 && r->end - r->start >= HEAD_BYTES &&
           code_follows(b, i);
}

/* The first HEAD_BYTES of each region that may start a module and whose first page is resident,
 * in one process_vm_readv instead of a pread each (python3 maps some 20 modules: 18 reads of
 * 2.7 us). It pins the pages it reads (FOLL_PIN, read-only); for a page of the file that copies
 * nothing (gup_must_unshare, include/linux/mm.h: only anonymous pages shared copy-on-write are
 * unshared, and a module's first page is the file's unless the process wrote it). Live processes
 * only: it takes a pid of the caller's namespace. Whatever it cannot read is read one module at a
 * time as before. */
static void read_ahead(builder *b)
{
    enum { IOV = 64 };
    memdiff__proc *p = b->proc;
    size_t want = 0;
    for (size_t i = 0; p->live && p->mem_fd >= 0 && i < b->region_count; i++)
        want += (size_t)may_start_module(b, i);
    if (!want)
        return;
    unsigned char *heads = memdiff__arena_alloc_raw(p->scratch, want * HEAD_BYTES);
    b->head = memdiff__arena_alloc(p->scratch, b->region_count * sizeof *b->head);
    if (!heads || !b->head) {
        b->head = NULL;
        return;
    }
    struct iovec local[IOV], remote[IOV];
    size_t idx[IOV], n = 0;
    for (size_t i = 0; i < b->region_count; i++) {
        if (may_start_module(b, i) && memdiff__linux_page_present(p, b->regions[i].start) == 1) {
            local[n] = (struct iovec){heads, HEAD_BYTES};
            remote[n] = (struct iovec){(void *)(uintptr_t)b->regions[i].start, HEAD_BYTES};
            idx[n++] = i;
            heads += HEAD_BYTES;
        }
        if (n < IOV && i + 1 < b->region_count)
            continue;
        /* A failed element ends the transfer there (process_vm_readv(2): no element is split):
         * those behind it are tried again. */
        for (size_t from = 0; from < n;) {
            ssize_t got = process_vm_readv(p->pid, local + from, (unsigned long)(n - from),
                                           remote + from, (unsigned long)(n - from), 0);
            size_t whole = got > 0 ? (size_t)got / HEAD_BYTES : 0;
            for (size_t k = 0; k < whole; k++)
                b->head[idx[from + k]] = local[from + k].iov_base;
            if (got < 0 && (errno == EPERM || errno == ENOSYS || errno == ESRCH))
                return;
            from += whole + 1;
        }
        n = 0;
    }
}

/* Segments of the module at regions[i] from its program headers; 0 and *end set, or -1. */
static int from_elf(builder *b, size_t i, size_t *nseg, uint64_t *end)
{
    const memdiff__plat_region *first = &b->regions[i];
    reader r = {b->proc, first, b->head ? b->head[i] : NULL, -2, &b->mounts};
    size_t nload;
    int ok = read_loads(&r, b->ph, b->loads, &nload);
    if (r.fd >= 0)
        close(r.fd);
    if (ok)
        return -1;
    uint64_t ps = b->proc->page_size;
    uint64_t mask = ps - 1;
    const load *l0 = &b->loads[0];
    if ((l0->offset & ~mask) != 0)
        return -1; /* the first segment does not map the file's start: not this region */
    uint64_t bias = first->start - (l0->vaddr & ~mask);
    uint64_t lo = first->start, hi = first->start;
    size_t n = 0;
    for (size_t k = 0; k < nload; k++) {
        const load *l = &b->loads[k];
        uint64_t s = bias + (l->vaddr & ~mask);
        uint64_t fe = bias + ((l->vaddr + l->filesz + mask) & ~mask);
        uint64_t me = bias + ((l->vaddr + l->memsz + mask) & ~mask);
        if (s < lo || me < s || me - lo > MAX_SPAN)
            return -1;
        memdiff__seg_kind kind;
        if (l->flags & PF_X)
            kind = MEMDIFF__SEG_TEXT;
        else if (l->flags & PF_W)
            kind = MEMDIFF__SEG_DATA;
        else if (k == 0)
            kind = MEMDIFF__SEG_HEADERS; /* ELF and program headers, dynamic-link tables */
        else
            kind = MEMDIFF__SEG_RODATA;
        if (l->filesz == 0) /* nothing from the file: all of it is zero-fill memory */
            fe = s;
        if (fe > s)
            b->seg[n++] = (memdiff__plat_segment){s, fe, kind};
        if (me > fe)
            b->seg[n++] = (memdiff__plat_segment){fe, me, MEMDIFF__SEG_BSS};
        if (me > hi)
            hi = me;
    }
    n = normalize(b->seg, n);
    n = add_gaps(b->seg, n, b->seg_cap, b->regions, b->region_count, i, lo, hi);
    *nseg = n;
    *end = hi;
    return 0;
}

static memdiff__seg_kind kind_of_region(const memdiff__plat_region *r, int first)
{
    if (r->prot & MEMDIFF_PROT_EXEC)
        return MEMDIFF__SEG_TEXT;
    if (r->prot & MEMDIFF_PROT_WRITE)
        return MEMDIFF__SEG_DATA;
    if (r->prot & MEMDIFF_PROT_READ)
        return first ? MEMDIFF__SEG_HEADERS : MEMDIFF__SEG_RODATA;
    return MEMDIFF__SEG_OTHER;
}

/* Without headers: the contiguous regions of the file from regions[i]. */
static void from_regions(builder *b, size_t i, size_t *nseg, uint64_t *end)
{
    const memdiff__plat_region *R = b->regions;
    size_t j = i, n = 0;
    while (j < b->region_count && (j == i || (R[j].start == R[j - 1].end && same_file(&R[j], &R[i])))) {
        b->seg[n++] = (memdiff__plat_segment){R[j].start, R[j].end, kind_of_region(&R[j], j == i)};
        j++;
    }
    /* The loader maps bss as anonymous memory right behind the last, writable file page, or
     * behind the PROT_NONE rest of the module's reservation that an aligned bss leaves after
     * that page (a ---p region of the same file). */
    size_t w = j - 1;
    while (w > i && R[w].prot == 0)
        w--;
    if (j < b->region_count && R[j].start == R[j - 1].end && (R[w].prot & MEMDIFF_PROT_WRITE) &&
        R[j].inode == 0 && !(R[j].flags & MEMDIFF_REGION_SHARED) &&
        R[j].prot == (MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE) && R[j].hint == MEMDIFF__HINT_NONE)
        b->seg[n++] = (memdiff__plat_segment){R[j].start, R[j].end, MEMDIFF__SEG_BSS};
    *nseg = n;
    *end = b->seg[n - 1].end;
}

/* Whether the file has an executable region in [start, end): a module is code that was loaded,
 * not an ELF file a program maps to read (a symbolizer reading its own binary). */
static int has_code(const builder *b, size_t i, uint64_t end)
{
    for (size_t k = i; k < b->region_count && b->regions[k].start < end; k++)
        if (same_file(&b->regions[k], &b->regions[i]) && (b->regions[k].prot & MEMDIFF_PROT_EXEC))
            return 1;
    return 0;
}

/* Whether an executable region of region i's file follows within the next few regions: the
 * loader maps a module's segments back to back (headers, text, rodata, data, bss), so a window
 * of a few regions suffices and the check stays linear in the number of regions. */
static int code_follows(const builder *b, size_t i)
{
    enum { WINDOW = 8 };
    for (size_t k = i; k < b->region_count && k < i + WINDOW; k++)
        if (same_file(&b->regions[k], &b->regions[i]) && (b->regions[k].prot & MEMDIFF_PROT_EXEC))
            return 1;
    return 0;
}

int memdiff__plat_modules(memdiff__proc *proc, memdiff__arena *arena,
                          const memdiff__plat_region *regions, size_t region_count,
                          memdiff__plat_module **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    size_t candidates = 0;
    for (size_t i = 0; i < region_count; i++)
        if (regions[i].inode != 0 && regions[i].offset == 0)
            candidates++;
    memdiff__plat_module *mods = memdiff__arena_alloc(arena, (candidates ? candidates : 1) *
                                                                 sizeof *mods);
    if (!mods)
        return MEMDIFF_ENOMEM;
    if (candidates == 0) {
        *out = mods;
        return MEMDIFF_OK;
    }
    builder *b = memdiff__arena_alloc(proc->scratch, sizeof *b);
    if (!b)
        return MEMDIFF_ENOMEM;
    b->proc = proc;
    b->arena = arena;
    b->mounts = (memdiff__linux_mounts){NULL, 0, 0, 0};
    b->regions = regions;
    b->region_count = region_count;
    b->seg_cap = 2 * MAX_PHNUM + 2 * region_count + 4;
    b->seg = memdiff__arena_alloc_raw(proc->scratch, b->seg_cap * sizeof *b->seg); /* counted */
    if (!b->seg)
        return MEMDIFF_ENOMEM;

    read_ahead(b);
    size_t m = 0;
    const memdiff__plat_region *last = NULL; /* first region of the last module found */
    uint64_t last_end = 0;
    for (size_t i = 0; i < region_count; i++) {
        const memdiff__plat_region *r = &regions[i];
        if (r->inode == 0 || r->offset != 0)
            continue;
        if (last && same_file(r, last) && r->start < last_end)
            continue; /* part of that module already */
        /* Only a file with code mapped near its first page can be a loaded module. Deciding
         * that first keeps the ELF probe off data files: reading one whose first page is not
         * resident would go to the file and fill the page cache (with read-ahead), and the
         * process's next read fault would then map those cached pages too (fault-around). */
        if (!code_follows(b, i))
            continue;
        size_t nseg = 0;
        uint64_t end = 0;
        if (from_elf(b, i, &nseg, &end) != 0)
            from_regions(b, i, &nseg, &end);
        if (nseg == 0 || !has_code(b, i, end))
            continue;
        memdiff__plat_module *mod = &mods[m];
        mod->base = r->start;
        mod->path = memdiff__arena_strndup(arena, r->path, strlen(r->path));
        mod->segments = memdiff__arena_alloc(arena, nseg * sizeof *mod->segments);
        if (!mod->path || !mod->segments)
            return MEMDIFF_ENOMEM;
        memcpy(mod->segments, b->seg, nseg * sizeof *mod->segments);
        mod->segment_count = nseg;
        m++;
        last = r;
        last_end = end;
    }
    *out = mods;
    *count = m;
    proc->modules = mods;
    proc->module_count = m;
    proc->modules_read = proc->regions_read;
    return MEMDIFF_OK;
}

int memdiff__linux_module_covers(const memdiff__proc *p, uint64_t start, uint64_t end)
{
    if (!p->modules || p->modules_read != p->regions_read)
        return 0;
    for (size_t m = 0; m < p->module_count; m++) {
        /* Segments are sorted and apart (normalize): one pass follows them from start. */
        const memdiff__plat_module *mod = &p->modules[m];
        uint64_t cur = start;
        for (size_t k = 0; k < mod->segment_count && cur < end; k++)
            if (mod->segments[k].start <= cur && cur < mod->segments[k].end)
                cur = mod->segments[k].end;
        if (cur >= end)
            return 1;
    }
    return 0;
}
