/*
 * file_read.c - snapshot files: loading (memdiff_snapshot_load, memdiff_snapshot_load_file), and
 * the parse the writer (file_write.c) runs on its own output. The layout and the constants the
 * writer shares are in file_format.h.
 *
 * Loading trusts nothing: the framing is walked before anything else (truncation is named with
 * the section it cut), the checksum is verified before any field is interpreted, and then every
 * count is checked against the bytes that remain before anything is allocated, every index
 * against its table, every enum against its range. Alignment, order and non-overlap of regions
 * and runs need no check: deltas in pages cannot express anything else, only overflow can go
 * wrong, and that is checked. Derived figures (per-region page counts, the info's byte totals)
 * are not stored but recomputed from the runs, so a file cannot contradict itself.
 *
 * Reading is bounded: the 16-byte header is checked before anything else is read, the stream is
 * read section by section as the frame announces them and no further than the checksum, and the
 * buffer grows with the bytes that arrive, not with lengths the file claims. Memory is bounded
 * too: a loaded snapshot takes at most 2.75 x the file's size (LOAD_FLOOR at least) in its arrays
 * (checked before and while they are filled).
 *
 * Storage: loading reads the stream into a scratch arena and builds the snapshot in its own
 * arena; it never calls malloc.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "file_format.h"

#define MAX_FILE_BYTES ((uint64_t)4 << 30)
#define READ_CHUNK ((size_t)64 * 1024)

static const char *const section_names[TAG_KNOWN_MAX + 1] = {
    "section list", "info section", "string table", "region table", "run table", "aux arrays",
    "PSS section",
};

#define KNOWN_PROT (MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE | MEMDIFF_PROT_EXEC)
#define KNOWN_REGION_FLAGS (MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE | MEMDIFF__RF_DELETED)
#define KNOWN_PAGE_ATTRS 0xFFFu /* MEMDIFF_PAGE_PRESENT .. MEMDIFF_PAGE_ACCESSED */

/* Minimum encoded sizes, for checking counts before allocating. */
#define MIN_STRING_BYTES 1u /* length varint */
#define MIN_REGION_BYTES 12u
#define MIN_RUN_BYTES 5u
#define MIN_PSS_BYTES 3u

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static unsigned get_le(const unsigned char *p, unsigned bytes)
{
    unsigned v = 0;
    for (unsigned i = bytes; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

/* A cursor over one section (or the section list) of the whole file p. */
typedef struct reader {
    const unsigned char *p;
    size_t pos, end;
    const char *what;
} reader;

static int truncated(const reader *r, uint64_t need)
{
    return memdiff__set_error(MEMDIFF_EFORMAT,
                              "snapshot file: truncated in the %s (need %llu byte%s at offset "
                              "%zu, %zu left)",
                              r->what, (unsigned long long)need, need == 1 ? "" : "s", r->pos,
                              r->end - r->pos);
}

static int get_varint(reader *r, uint64_t *out)
{
    uint64_t v = 0;
    size_t start = r->pos;
    for (unsigned shift = 0;; shift += 7) {
        if (r->pos == r->end)
            return truncated(r, 1);
        unsigned char c = r->p[r->pos++];
        if (shift == 63 && c > 1)
            return memdiff__set_error(MEMDIFF_EFORMAT,
                                      "snapshot file: number too large in the %s at offset %zu",
                                      r->what, start);
        v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80))
            break;
    }
    *out = v;
    return MEMDIFF_OK;
}

/* A varint that must be <= max. */
static int get_bounded(reader *r, uint64_t max, const char *field, uint64_t *out)
{
    size_t at = r->pos;
    int rc = get_varint(r, out);
    if (!rc && *out > max)
        rc = memdiff__set_error(MEMDIFF_EFORMAT,
                                "snapshot file: %s %llu out of range (at most %llu) in the %s "
                                "at offset %zu",
                                field, (unsigned long long)*out, (unsigned long long)max,
                                r->what, at);
    return rc;
}

/* An element count, checked against the bytes left (each element takes at least min_each) and
 * against what an allocation of elem_size bytes each can hold, before anything is allocated. */
static int get_count(reader *r, size_t min_each, size_t elem_size, const char *unit, size_t *out)
{
    size_t at = r->pos;
    uint64_t n;
    int rc = get_varint(r, &n);
    if (rc)
        return rc;
    size_t left = r->end - r->pos;
    if (n > left / min_each || n > SIZE_MAX / elem_size)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "snapshot file: the %s announces %llu %s at offset %zu, but "
                                  "only %zu bytes follow (at least %zu per entry)",
                                  r->what, (unsigned long long)n, unit, at, left, min_each);
    *out = (size_t)n;
    return MEMDIFF_OK;
}

typedef struct section {
    size_t off, len;
    int present;
} section;

#define READ_PIECE ((size_t)1 << 20)
#define TRAILING_PROBE ((size_t)64 * 1024) /* bytes read past the end to say how many follow */

static uint64_t file_limit(void)
{
    return MEMDIFF__MIN(MAX_FILE_BYTES, (uint64_t)(SIZE_MAX / 2));
}

/* Makes the first want bytes of the file available in src->p, or as many as there are. */
static int fill(memdiff__file_source *src, uint64_t want)
{
    const uint64_t limit = file_limit();
    if (want > limit + 1)
        want = limit + 1; /* one byte more than allowed says that there is too much */
    while (src->in && !src->ended && src->n < want) {
        if (src->n == src->cap) {
            size_t ncap = src->cap ? src->cap * 2 : READ_CHUNK;
            if ((uint64_t)ncap > limit + 1)
                ncap = (size_t)limit + 1;
            unsigned char *v = memdiff__arena_grow_raw(src->arena, src->p, src->cap, ncap);
            if (!v)
                return memdiff__set_error(MEMDIFF_ENOMEM, "snapshot file: out of memory reading "
                                                          "%zu bytes",
                                          src->n);
            src->p = v;
            src->cap = ncap;
        }
        size_t piece = MEMDIFF__MIN(src->cap - src->n, READ_PIECE);
        piece = (size_t)MEMDIFF__MIN((uint64_t)piece, want - src->n);
        size_t got = fread(src->p + src->n, 1, piece, src->in);
        src->n += got;
        if (got < piece) {
            if (ferror(src->in))
                return memdiff__set_error(MEMDIFF_EIO, "snapshot file: read error after %zu "
                                                       "bytes: %s",
                                          src->n, strerror(errno));
            src->ended = 1;
        }
    }
    if (src->n > limit)
        return memdiff__set_error(MEMDIFF_EFORMAT, "snapshot file: larger than %llu bytes: "
                                                   "refused",
                                  (unsigned long long)limit);
    return MEMDIFF_OK;
}

/* A reader over what src holds, from pos; bytes [pos, pos + want) read first where they exist. */
static int frame_reader(memdiff__file_source *src, size_t pos, uint64_t want, const char *what,
                        reader *r)
{
    int rc = fill(src, pos + want);
    reader v = {src->p, pos, src->n, what};
    *r = v;
    return rc;
}

typedef struct loader {
    const unsigned char *p;
    memdiff_snapshot *s;
    section sec[TAG_KNOWN_MAX + 1];
    size_t file_bytes;     /* header to checksum */
    const char **strings;
    size_t nstrings;
    size_t string_bytes;   /* the strings' copy in the snapshot, terminators included */
    size_t region_bytes;   /* the snapshot's region array */
    uint64_t budget;       /* memory the loaded snapshot may take, 2.75 x file_bytes,
                              LOAD_FLOOR at least; UINT64_MAX for the writer's own check */
} loader;

static reader section_reader(const loader *l, unsigned tag)
{
    reader r = {l->p, l->sec[tag].off, l->sec[tag].off + l->sec[tag].len, section_names[tag]};
    return r;
}

/* Bytes the snapshot being loaded holds in use, and the loader's tables beside it: what the
 * bound of docs/file-format.md ("Memory") is about. Counted from the arrays, not from the
 * arenas' mappings, so that the answer is the same for the writer's check and every load. */
static uint64_t loaded_bytes(const loader *l)
{
    const memdiff_snapshot *s = l->s;
    return (uint64_t)l->nstrings * sizeof(char *) + l->string_bytes + l->region_bytes +
           memdiff__runs_bytes(s) + memdiff__seq_bytes(&s->frames) +
           memdiff__seq_bytes(&s->kflags) + memdiff__seq_bytes(&s->mapcount);
}

/* Refuses to go on when the snapshot (with more bytes about to be allocated) would pass its
 * bound: a valid file can describe far more than it holds (a region takes 12 bytes on disk and
 * 136 in memory, an empty string 1 and 8), and the writer pads what it writes so that its files
 * never do (see encode). */
static int within_budget(const loader *l, uint64_t more, const char *what, size_t index)
{
    uint64_t need = loaded_bytes(l) + more;
    if (need <= l->budget)
        return MEMDIFF_OK;
    return memdiff__set_error(MEMDIFF_EFORMAT,
                              "snapshot file: loading it would take more than %llu bytes of "
                              "memory (2.75 x its %zu bytes, %d MiB at least) at %s %zu: refused "
                              "(memdiff does not write such files)",
                              (unsigned long long)l->budget, l->file_bytes,
                              (int)(LOAD_FLOOR >> 20), what, index);
}

/* Magic, version, byte order (the 16-byte header, before anything else is read); then the
 * section list down to the checksum, each section's length checked against the file limit and
 * the bytes that are there, and the checksum verified before any section is interpreted. */
static int parse_frame(loader *l, memdiff__file_source *src)
{
    reader hdr;
    int rc = frame_reader(src, 0, HEADER_SIZE, "header", &hdr);
    if (rc)
        return rc;
    const unsigned char *p = src->p;
    size_t n = src->n;
    if (n == 0)
        return memdiff__set_error(MEMDIFF_EFORMAT, "snapshot file: empty");
    if (memcmp(p, magic, MEMDIFF__MIN(n, sizeof magic)) != 0)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "snapshot file: not a memdiff snapshot (bad magic)");
    if (n < HEADER_SIZE)
        return truncated(&hdr, HEADER_SIZE);
    unsigned major = get_le(p + 8, 2), minor = get_le(p + 10, 2), bom = get_le(p + 12, 4);
    /* The marker first: a writer that wrote native big-endian numbers also garbled the version. */
    if (bom != BYTE_ORDER_MARK)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "snapshot file: byte-order marker 0x%08x at offset 12, "
                                  "expected 0x%08x (%s)",
                                  bom, BYTE_ORDER_MARK,
                                  bom == 0x0D0C0B0Au ? "written big-endian by a broken writer"
                                                     : "corrupt header");
    if (major != MEMDIFF_FILE_VERSION_MAJOR)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "snapshot file: format version %u.%u is not supported (this "
                                  "memdiff reads version %d.x)",
                                  major, minor, MEMDIFF_FILE_VERSION_MAJOR);

    size_t pos = HEADER_SIZE;
    uint64_t prev = 0;
    reader r;
    for (;;) {
        size_t at = pos;
        uint64_t tag, len;
        /* Two varints of at most 10 bytes each. */
        if ((rc = frame_reader(src, pos, 20, section_names[TAG_END], &r)) ||
            (rc = get_varint(&r, &tag)))
            return rc;
        if (tag == TAG_END) {
            pos = r.pos;
            break;
        }
        if (tag <= prev)
            return memdiff__set_error(MEMDIFF_EFORMAT,
                                      "snapshot file: section %llu at offset %zu is out of order "
                                      "or repeated (after section %llu)",
                                      (unsigned long long)tag, at, (unsigned long long)prev);
        if ((rc = get_varint(&r, &len)))
            return rc;
        const char *what = tag <= TAG_KNOWN_MAX ? section_names[tag] : "unknown section";
        if (len > file_limit() - r.pos)
            return memdiff__set_error(MEMDIFF_EFORMAT,
                                      "snapshot file: the %s at offset %zu announces %llu bytes, "
                                      "past the %llu bytes a file may hold",
                                      what, at, (unsigned long long)len,
                                      (unsigned long long)file_limit());
        if ((rc = frame_reader(src, r.pos, len, what, &r)))
            return rc;
        if (len > r.end - r.pos)
            return truncated(&r, len);
        if (tag <= TAG_KNOWN_MAX) {
            l->sec[tag].off = r.pos;
            l->sec[tag].len = (size_t)len;
            l->sec[tag].present = 1;
        }
        pos = r.pos + (size_t)len;
        prev = tag;
    }
    if ((rc = frame_reader(src, pos, 4 + TRAILING_PROBE, "checksum", &r)))
        return rc;
    l->p = p = src->p;
    n = src->n;
    if (n - pos < 4)
        return truncated(&r, 4);
    uint32_t stored = (uint32_t)get_le(p + pos, 4);
    uint32_t computed = memdiff__crc32(0, p, pos);
    if (stored != computed)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "snapshot file: checksum mismatch (stored 0x%08x, computed "
                                  "0x%08x over %zu bytes): the file is corrupt",
                                  (unsigned)stored, (unsigned)computed, pos);
    if (pos + 4 != n)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "snapshot file: %s%zu bytes of trailing data after the "
                                  "checksum at offset %zu",
                                  src->in && !src->ended ? "at least " : "", n - pos - 4, pos);
    for (unsigned tag = TAG_INFO; tag <= TAG_RUNS; tag++)
        if (!l->sec[tag].present)
            return memdiff__set_error(MEMDIFF_EFORMAT, "snapshot file: no %s",
                                      section_names[tag]);
    l->file_bytes = n;
    return MEMDIFF_OK;
}

/* The string table, copied whole into the snapshot (each string NUL-terminated, in one block:
 * never more bytes than the section holds), with a table of pointers for the indices. Only the
 * host name, the degraded reason and each region's label and path refer to strings, and the
 * writer stores each distinct string once, so a table longer than that is refused: 100 MB of
 * empty strings would otherwise be 800 MB of pointers (and were 2.4 GB, each string copied on
 * its own). */
static int parse_strings(loader *l)
{
    reader r = section_reader(l, TAG_STRINGS), regs = section_reader(l, TAG_REGIONS);
    int rc = get_count(&r, MIN_STRING_BYTES, sizeof(char *), "strings", &l->nstrings);
    if (rc)
        return rc;
    uint64_t nregions;
    if (!get_varint(&regs, &nregions) && nregions <= UINT32_MAX &&
        l->nstrings > 2 * nregions + 2)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "snapshot file: the string table holds %zu strings, but only "
                                  "%llu can be referred to (host, degraded reason, and a label "
                                  "and a path for each of %llu regions)",
                                  l->nstrings, (unsigned long long)(2 * nregions + 2),
                                  (unsigned long long)nregions);
    /* A first pass for the lengths: one block for all the strings. */
    size_t start = r.pos, total = 0;
    for (size_t i = 0; i < l->nstrings; i++) {
        uint64_t len;
        if ((rc = get_varint(&r, &len)))
            return rc;
        if (len > r.end - r.pos)
            return truncated(&r, len);
        const unsigned char *str = r.p + r.pos;
        if (memchr(str, '\0', (size_t)len))
            return memdiff__set_error(MEMDIFF_EFORMAT,
                                      "snapshot file: string %zu at offset %zu contains a NUL "
                                      "byte",
                                      i, r.pos);
        r.pos += (size_t)len;
        total += (size_t)len + 1; /* <= the section: each length takes at least a byte */
    }
    if ((rc = within_budget(l, total + l->nstrings * sizeof(char *), "string", 0)))
        return rc;
    l->strings = memdiff__arena_alloc_raw(&l->s->arena, MEMDIFF__MAX(l->nstrings, 1) *
                                                            sizeof(char *));
    char *copy = memdiff__arena_alloc_raw(&l->s->arena, MEMDIFF__MAX(total, 1));
    if (!l->strings || !copy)
        return MEMDIFF_ENOMEM;
    l->string_bytes = total;
    r.pos = start;
    for (size_t i = 0; i < l->nstrings; i++) {
        uint64_t len;
        get_varint(&r, &len); /* read once already */
        memcpy(copy, r.p + r.pos, (size_t)len);
        copy[len] = '\0';
        l->strings[i] = copy;
        copy += len + 1;
        r.pos += (size_t)len;
    }
    return MEMDIFF_OK;
}

static int get_string(reader *r, const loader *l, const char *field, const char **out)
{
    uint64_t i;
    if (l->nstrings == 0)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "snapshot file: %s at offset %zu refers to an empty string "
                                  "table",
                                  field, r->pos);
    int rc = get_bounded(r, l->nstrings - 1, field, &i);
    if (!rc)
        *out = l->strings[i];
    return rc;
}

static int parse_info(loader *l)
{
    reader r = section_reader(l, TAG_INFO);
    memdiff_snapshot_info *in = &l->s->info;
    uint64_t v[8];
    int rc = get_bounded(&r, INT_MAX, "pid", &v[0]);
    if (!rc)
        rc = get_bounded(&r, MEMDIFF_DEPTH_DEEP, "requested depth", &v[1]);
    if (!rc)
        rc = get_bounded(&r, MEMDIFF_DEPTH_DEEP, "depth", &v[2]);
    if (!rc)
        rc = get_bounded(&r, UINT_MAX, "sources", &v[3]);
    size_t at = r.pos;
    if (!rc)
        rc = get_bounded(&r, (uint64_t)1 << 30, "page size", &v[4]);
    if (!rc && (v[4] < 512 || (v[4] & (v[4] - 1))))
        rc = memdiff__set_error(MEMDIFF_EFORMAT,
                                "snapshot file: page size %llu at offset %zu is not a power of "
                                "two in [512, 1 GiB]",
                                (unsigned long long)v[4], at);
    if (!rc)
        rc = get_varint(&r, &in->time_ns);
    if (!rc)
        rc = get_string(&r, l, "host name", &in->host);
    if (!rc)
        rc = get_bounded(&r, l->nstrings, "degraded reason", &v[5]);
    if (rc)
        return rc;
    in->pid = (int)v[0];
    in->depth_requested = (memdiff_depth)v[1];
    in->depth = (memdiff_depth)v[2];
    /* 0.1 also wrote MEMDIFF__SRC_PAGEMAP_SCAN, how the pages were read: no source to report.
     * PSS per mapping is known from its section alone (parse_pss). */
    in->sources = (unsigned)v[3] & ~(MEMDIFF__SRC_PAGEMAP_SCAN | MEMDIFF_SRC_PSS_MAPPINGS);
    in->page_size = (uint32_t)v[4];
    in->degraded = v[5] ? l->strings[v[5] - 1] : NULL;
    memdiff_process_totals *t = &in->totals;
    uint64_t *totals[8] = {&t->vm_size,  &t->vm_rss,    &t->vm_hwm, &t->rss_anon,
                           &t->rss_file, &t->rss_shmem, &t->vm_pte, &t->vm_swap};
    for (int i = 0; i < 8 && !rc; i++)
        rc = get_varint(&r, totals[i]);
    return rc; /* bytes after the known fields: added by a newer minor version, skipped */
}

/* base + npages pages, or an error when that passes the top of the address space. */
static int add_pages(const reader *r, const char *what, size_t index, uint64_t base,
                     uint64_t npages, uint64_t ps, uint64_t *out)
{
    if (npages > (UINT64_MAX - base) / ps)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "snapshot file: %s %zu ends past the top of the address space "
                                  "(in the %s before offset %zu)",
                                  what, index, r->what, r->pos);
    *out = base + npages * ps;
    return MEMDIFF_OK;
}

static int parse_regions(loader *l)
{
    reader r = section_reader(l, TAG_REGIONS);
    memdiff_snapshot *s = l->s;
    uint64_t ps = s->info.page_size, prev_end = 0, mapped = 0;
    size_t n = 0;
    int rc = get_count(&r, MIN_REGION_BYTES, sizeof(memdiff__region), "regions", &n);
    if (!rc && n > UINT32_MAX)
        rc = memdiff__set_error(MEMDIFF_EFORMAT, "snapshot file: %zu regions (at most 2^32 - 1)",
                                n);
    if (!rc)
        rc = within_budget(l, (uint64_t)n * sizeof *s->regions, "region", 0);
    if (rc)
        return rc;
    s->regions = memdiff__arena_alloc(&s->arena, n * sizeof *s->regions);
    if (!s->regions)
        return MEMDIFF_ENOMEM;
    l->region_bytes = n * sizeof *s->regions;
    for (size_t i = 0; i < n; i++) {
        memdiff__region *g = &s->regions[i];
        uint64_t gap, npages, v[4];
        rc = get_varint(&r, &gap);
        if (!rc)
            rc = get_varint(&r, &npages);
        if (!rc && npages == 0)
            rc = memdiff__set_error(MEMDIFF_EFORMAT,
                                    "snapshot file: region %zu is empty (offset %zu)", i, r.pos);
        if (!rc)
            rc = add_pages(&r, "region", i, prev_end, gap, ps, &g->start);
        if (!rc)
            rc = add_pages(&r, "region", i, g->start, npages, ps, &g->end);
        /* Every byte total of a snapshot (resident, private, swapped...) and of a diff of two
         * (new, freed, net: signed) is at most what its regions map: kept below 2^63, none of
         * those sums can overflow. An address space that large exists nowhere. */
        if (!rc && (mapped += npages) > (uint64_t)INT64_MAX / ps)
            rc = memdiff__set_error(MEMDIFF_EFORMAT,
                                    "snapshot file: the regions up to region %zu map %llu pages "
                                    "of %llu bytes, more than 2^63 - 1 bytes: refused (totals "
                                    "and differences of them would overflow)",
                                    i, (unsigned long long)mapped, (unsigned long long)ps);
        if (!rc)
            rc = get_varint(&r, &g->offset);
        if (!rc)
            rc = get_varint(&r, &g->dev);
        if (!rc)
            rc = get_varint(&r, &g->inode);
        if (!rc)
            rc = get_bounded(&r, KNOWN_PROT, "region protection", &v[0]);
        if (!rc)
            rc = get_varint(&r, &v[1]);
        if (!rc && (v[1] & ~(uint64_t)KNOWN_REGION_FLAGS))
            rc = memdiff__set_error(MEMDIFF_EFORMAT,
                                    "snapshot file: region %zu has unknown flags 0x%llx", i,
                                    (unsigned long long)v[1]);
        if (!rc)
            rc = get_bounded(&r, MEMDIFF__HINT_OTHER, "region hint", &v[2]);
        if (!rc)
            rc = get_bounded(&r, MEMDIFF_CAT_COUNT - 1, "region category", &v[3]);
        if (!rc)
            rc = get_string(&r, l, "region label", &g->label);
        if (!rc)
            rc = get_string(&r, l, "region path", &g->path);
        uint64_t unit;
        if (!rc)
            rc = get_varint(&r, &unit);
        if (rc)
            return rc;
        g->prot = (unsigned)v[0];
        g->flags = (unsigned)v[1];
        g->hint = (memdiff__hint)v[2];
        g->category = (memdiff_category)v[3];
        g->unit = g->start + (uint64_t)unzigzag(unit);
        prev_end = g->end;
        s->region_count = i + 1;
    }
    return MEMDIFF_OK;
}

/* PSS per mapping (1.1): the regions that carry a mapping's figure, in ascending order, each
 * with the end of its mapping and the figure in kB. The first region carries one, and every
 * other region carries one or lies inside the mapping of the carrier before it (mapping_pss.c
 * puts every region in one); mappings do not overlap; a figure is below 2^42 kB (4 PiB), so
 * that no sum of figures in 1/4096 bytes overflows. Map counts, where present, give PSS per
 * page instead: a file with both is no file memdiff writes. */
static int parse_pss(loader *l)
{
    memdiff_snapshot *s = l->s;
    if (!l->sec[TAG_PSS].present)
        return MEMDIFF_OK;
    reader r = section_reader(l, TAG_PSS);
    uint64_t ps = s->info.page_size, cover_end = 0;
    size_t n = 0, at = 0, pos = r.pos;
    int rc = get_count(&r, MIN_PSS_BYTES, 1, "mappings", &n);
    if (!rc && (s->info.sources & MEMDIFF_SRC_MAP_COUNTS))
        rc = memdiff__set_error(MEMDIFF_EFORMAT, "snapshot file: PSS per mapping in a snapshot "
                                                 "with map counts (offset %zu)",
                                pos);
    if (!rc && n == 0)
        rc = memdiff__set_error(MEMDIFF_EFORMAT, "snapshot file: a PSS section without mappings "
                                                 "(offset %zu)",
                                pos);
    for (size_t k = 0; !rc && k < n; k++) {
        uint64_t delta, pages, kb, end = 0;
        pos = r.pos;
        /* The first carrier is region 0; each later one comes after the one before. */
        rc = get_bounded(&r, k ? s->region_count - 1 - at : 0, "PSS region", &delta);
        if (!rc && k && delta == 0)
            rc = memdiff__set_error(MEMDIFF_EFORMAT, "snapshot file: PSS mapping %zu repeats "
                                                     "region %zu (offset %zu)",
                                    k, at, pos);
        if (!rc)
            rc = get_varint(&r, &pages);
        if (!rc)
            rc = get_bounded(&r, ((uint64_t)1 << 42) - 1, "PSS kB", &kb);
        if (rc)
            break;
        size_t i = at + (size_t)delta;
        memdiff__region *g = &s->regions[i];
        rc = add_pages(&r, "PSS mapping", k, g->start, pages, ps, &end);
        for (size_t j = at + 1; !rc && j < i; j++)
            if (s->regions[j].end > cover_end)
                rc = memdiff__set_error(MEMDIFF_EFORMAT, "snapshot file: region %zu lies in no "
                                                         "PSS mapping (offset %zu)",
                                        j, pos);
        if (!rc && (end < g->end || g->start < cover_end))
            rc = memdiff__set_error(MEMDIFF_EFORMAT,
                                    "snapshot file: PSS mapping %zu (region %zu, %llu pages) "
                                    "ends inside its region or overlaps the one before (offset "
                                    "%zu)",
                                    k, i, (unsigned long long)pages, pos);
        if (rc)
            break;
        g->pss_end = cover_end = end;
        g->pss_fixed = kb << 22; /* kB in 1/4096 bytes */
        at = i;
    }
    for (size_t j = at + 1; !rc && j < s->region_count; j++)
        if (s->regions[j].end > cover_end)
            rc = memdiff__set_error(MEMDIFF_EFORMAT,
                                    "snapshot file: region %zu lies in no PSS mapping", j);
    if (!rc)
        s->info.sources |= MEMDIFF_SRC_PSS_MAPPINGS;
    return rc; /* bytes after the known fields: added by a newer minor version, skipped */
}

static int parse_aux(loader *l)
{
    memdiff_snapshot *s = l->s;
    if (!l->sec[TAG_AUX].present)
        return MEMDIFF_OK;
    reader r = section_reader(l, TAG_AUX);
    uint64_t mask;
    int rc = get_bounded(&r, AUX_PFN | AUX_KFLAGS | AUX_MAPCOUNT, "aux array mask", &mask);
    if (rc)
        return rc;
    unsigned arrays = (mask & 1) + ((mask >> 1) & 1) + ((mask >> 2) & 1);
    if (arrays == 0)
        return memdiff__set_error(MEMDIFF_EFORMAT, "snapshot file: aux section without arrays");
    size_t n = 0;
    if ((rc = get_count(&r, arrays, sizeof(uint64_t), "pages of per-page data", &n)))
        return rc;
    /* Each array in the mask, in order, into the snapshot's stretches (seq.c) a chunk at a
     * time; frame numbers are stored as signed deltas. */
    memdiff__seq *dst[3] = {&s->frames, &s->kflags, &s->mapcount};
    for (unsigned k = 0; k < 3; k++) {
        if (!(mask & (1u << k)))
            continue;
        uint64_t chunk[512], prev = 0;
        for (size_t i = 0; i < n;) {
            size_t m = MEMDIFF__MIN(n - i, sizeof chunk / sizeof chunk[0]);
            for (size_t j = 0; j < m; j++) {
                uint64_t v;
                if ((rc = get_varint(&r, &v)))
                    return rc;
                chunk[j] = k == 0 ? (prev += (uint64_t)unzigzag(v)) : v;
            }
            if ((rc = memdiff__seq_append(&s->arena, dst[k], chunk, m)) ||
                (rc = within_budget(l, 0, "per-page value", i)))
                return rc;
            i += m;
        }
        if (n == 0 && (rc = memdiff__seq_append(&s->arena, dst[k], NULL, 0)))
            return rc;
    }
    s->aux_count = n;
    return MEMDIFF_OK;
}

static int parse_runs(loader *l)
{
    reader r = section_reader(l, TAG_RUNS);
    memdiff_snapshot *s = l->s;
    uint64_t ps = s->info.page_size, prev_end = 0, next_aux = 0, region = 0;
    size_t n = 0;
    int rc = get_count(&r, MIN_RUN_BYTES, sizeof(memdiff__run_rec), "runs", &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        memdiff__run run, *u = &run;
        uint64_t gap, end = 0, attrs = 0, dregion = 0, aux = 0;
        size_t at = r.pos;
        rc = get_varint(&r, &gap);
        if (!rc)
            rc = get_varint(&r, &u->npages);
        if (!rc && u->npages == 0)
            rc = memdiff__set_error(MEMDIFF_EFORMAT,
                                    "snapshot file: run %zu at offset %zu is empty", i, at);
        if (!rc)
            rc = add_pages(&r, "run", i, prev_end, gap, ps, &u->start);
        if (!rc)
            rc = add_pages(&r, "run", i, u->start, u->npages, ps, &end);
        if (!rc)
            rc = get_varint(&r, &attrs);
        if (!rc && (attrs & ~(uint64_t)KNOWN_PAGE_ATTRS))
            rc = memdiff__set_error(MEMDIFF_EFORMAT,
                                    "snapshot file: run %zu has unknown page attributes 0x%llx",
                                    i, (unsigned long long)attrs);
        if (!rc)
            rc = get_varint(&r, &dregion);
        if (!rc)
            rc = get_varint(&r, &aux);
        if (rc)
            return rc;
        if (dregion >= s->region_count - region || s->region_count == 0)
            return memdiff__set_error(MEMDIFF_EFORMAT,
                                      "snapshot file: run %zu (offset %zu) refers to region "
                                      "%llu+%llu of %zu",
                                      i, at, (unsigned long long)region,
                                      (unsigned long long)dregion, s->region_count);
        region += dregion;
        memdiff__region *g = &s->regions[region];
        if (u->start < g->start || end > g->end)
            return memdiff__set_error(MEMDIFF_EFORMAT,
                                      "snapshot file: run %zu [0x%llx, 0x%llx) lies outside its "
                                      "region %llu [0x%llx, 0x%llx)",
                                      i, (unsigned long long)u->start, (unsigned long long)end,
                                      (unsigned long long)region, (unsigned long long)g->start,
                                      (unsigned long long)g->end);
        u->attrs = (uint32_t)attrs;
        u->region = (uint32_t)region;
        u->aux = MEMDIFF__NO_AUX;
        if (aux != RUN_AUX_NONE) {
            u->aux = aux == RUN_AUX_NEXT ? next_aux : aux - RUN_AUX_AT;
            if (u->aux > s->aux_count || u->npages > s->aux_count - u->aux)
                return memdiff__set_error(MEMDIFF_EFORMAT,
                                          "snapshot file: run %zu has per-page data [%llu, "
                                          "+%llu) beyond the %zu pages of the aux arrays",
                                          i, (unsigned long long)u->aux,
                                          (unsigned long long)u->npages, s->aux_count);
            next_aux = u->aux + u->npages;
        }
        /* Stored as a snapshot stores them (runs.c), counted into the region the same way. */
        rc = memdiff__runs_append(s, u->region, u->start, u->npages, u->attrs, u->aux);
        if (!rc && i % 1024 == 1023)
            rc = within_budget(l, 0, "run", i);
        if (rc)
            return rc;
        prev_end = end;
    }
    return MEMDIFF_OK;
}

/* The limits behind bounded: within_budget; what *used receives: loaded_bytes. */
int memdiff__file_parse(memdiff__file_source *src, memdiff_snapshot *s, int bounded,
                        uint64_t *used)
{
    loader l;
    memset(&l, 0, sizeof l);
    l.s = s;
    int rc = parse_frame(&l, src);
    uint64_t budget = (uint64_t)l.file_bytes * LOAD_NUM / LOAD_DEN;
    l.budget = !bounded ? UINT64_MAX : budget > LOAD_FLOOR ? budget : LOAD_FLOOR;
    if (!rc)
        rc = parse_strings(&l);
    if (!rc)
        rc = parse_info(&l);
    if (!rc)
        rc = parse_regions(&l);
    if (!rc)
        rc = parse_aux(&l);
    if (!rc)
        rc = parse_runs(&l);
    if (!rc)
        rc = parse_pss(&l);
    if (!rc)
        rc = within_budget(&l, 0, "byte", l.file_bytes);
    if (used)
        *used = loaded_bytes(&l);
    if (rc == MEMDIFF_ENOMEM)
        memdiff__set_error(rc, "snapshot file: out of memory");
    if (rc)
        return rc;
    memdiff__snapshot_tally(s);
    return MEMDIFF_OK;
}

/* A snapshot from src: from a stream (load) or a buffer (memdiff__snapshot_decode). */
static int load_from(memdiff__file_source *src, memdiff_snapshot **out)
{
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    int rc = MEMDIFF_OK;
    memdiff_snapshot *s = memdiff__arena_alloc(&a, sizeof *s);
    if (!s)
        rc = MEMDIFF_ENOMEM;
    else
        s->arena = a; /* the snapshot lives inside its own arena, as a taken one does */
    if (!rc)
        rc = memdiff__file_parse(src, s, 1, NULL);
    if (rc) {
        memdiff_snapshot_free(s);
        return rc;
    }
    s->info.storage_bytes = memdiff__arena_footprint(&s->arena);
    *out = s;
    return MEMDIFF_OK;
}

int memdiff_snapshot_load(FILE *in, memdiff_snapshot **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_load: out is NULL");
    *out = NULL;
    if (!in)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_load: in is NULL");
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    memdiff__file_source src = {in, &scratch, NULL, 0, 0, 0};
    int rc = load_from(&src, out);
    memdiff__arena_release(&scratch);
    return rc;
}

int memdiff__snapshot_decode(const unsigned char *p, size_t n, memdiff_snapshot **out)
{
    *out = NULL;
    memdiff__file_source src = {NULL, NULL, (unsigned char *)p, n, n, 1};
    return load_from(&src, out);
}

int memdiff__load_file(const char *path, const char *api, int (*load)(FILE *in, void *out),
                       void *out)
{
    if (!path)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: path is NULL", api);
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return memdiff__file_open_error("open", path, errno);
    int rc = load(f, out);
    fclose(f);
    if (rc) {
        char why[400];
        snprintf(why, sizeof why, "%s", memdiff__last_error_raw());
        memdiff__set_error(rc, "%s: %s", path, why);
    }
    return rc;
}

static int load_snapshot(FILE *in, void *out)
{
    return memdiff_snapshot_load(in, out);
}

int memdiff_snapshot_load_file(const char *path, memdiff_snapshot **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_load_file: out is NULL");
    *out = NULL;
    return memdiff__load_file(path, "memdiff_snapshot_load_file", load_snapshot, out);
}
