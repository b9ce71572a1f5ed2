/*
 * file_format.c - snapshot files: save and load. docs/file-format.md is the specification; this
 * file follows it section by section.
 *
 * Layout: a 16-byte header (magic, version, byte-order marker), tagged sections (tag, length,
 * payload; tag 0 ends the list), then a CRC-32 of every byte before it. Numbers inside sections
 * are LEB128 varints, addresses are page deltas from the previous region or run, so a run costs
 * 5-8 bytes whatever the address width and run-length data stays run-length.
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
 * (checked before and while they are filled); the writer pads a file that would otherwise pass
 * that, so every file memdiff writes loads.
 *
 * Storage: loading reads the stream into a scratch arena and builds the snapshot in its own
 * arena; saving encodes into a scratch arena. Neither calls malloc.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "uthash_arena.h"

#define HEADER_SIZE 16u
#define BYTE_ORDER_MARK 0x0A0B0C0Du
#define MAX_FILE_BYTES ((uint64_t)4 << 30)
#define READ_CHUNK ((size_t)64 * 1024)

/* The bound on a loaded snapshot's arrays (docs/file-format.md, "Memory"): LOAD_NUM / LOAD_DEN
 * (2.75) times the file's size, or LOAD_FLOOR where that is more (the structures that a small
 * file needs whatever its size). The file's own bytes are held while it is parsed, and the
 * arena's growth copies and bookkeeping come on top (measured up to 0.12 x the file's size): a
 * load peaks below 4 x the file's size for a file of LOAD_FLOOR / 2.75 or more. */
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
    TAG_KNOWN_MAX = TAG_AUX
};

static const char *const section_names[TAG_KNOWN_MAX + 1] = {
    "section list", "info section", "string table", "region table", "run table", "aux arrays",
};

/* AUX section: which per-page arrays follow. */
#define AUX_PFN 0x1u
#define AUX_KFLAGS 0x2u
#define AUX_MAPCOUNT 0x4u

/* Run aux tags: no per-page data, data right after the previous run's, or an explicit index. */
#define RUN_AUX_NONE 0u
#define RUN_AUX_NEXT 1u
#define RUN_AUX_AT 2u

#define KNOWN_PROT (MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE | MEMDIFF_PROT_EXEC)
#define KNOWN_REGION_FLAGS (MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE | MEMDIFF__RF_DELETED)
#define KNOWN_PAGE_ATTRS 0xFFFu /* MEMDIFF_PAGE_PRESENT .. MEMDIFF_PAGE_ACCESSED */

/* Minimum encoded sizes, for checking counts before allocating. */
#define MIN_STRING_BYTES 1u /* length varint */
#define MIN_REGION_BYTES 12u
#define MIN_RUN_BYTES 5u

/* Where the bytes of a file come from: a stream read as the frame is walked (load), or a buffer
 * that holds them all (the writer checking its own output; in NULL). Reading goes no further
 * than the frame says the file goes, in pieces of at most READ_PIECE, and the buffer grows with
 * the bytes that arrive, never with a length the file announces: /dev/zero or a 20 GiB sparse
 * file cost 16 bytes (bad magic), a section that claims 4 GiB costs what the stream holds. */
typedef struct source {
    FILE *in;
    memdiff__arena *arena;
    unsigned char *p;
    size_t n, cap;
    int ended; /* in has no more bytes */
} source;

/* ---- CRC-32 ----------------------------------------------------------------------------- */

/* Nibble-table CRC-32 (polynomial 0xEDB88320 reflected): 16 constants instead of 256, no
 * initialisation to race on, fast enough (hundreds of MB/s) for files of a few MB. */
uint32_t memdiff__crc32(uint32_t crc, const void *data, size_t n)
{
    static const uint32_t table[16] = {
        0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
        0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
        0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
    };
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        crc = (crc >> 4) ^ table[crc & 15u];
        crc = (crc >> 4) ^ table[crc & 15u];
    }
    return ~crc;
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

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

/* =============================================================================================
 * Writing
 * =========================================================================================== */

typedef struct wbuf {
    memdiff__arena *arena;
    unsigned char *p;
    size_t len, cap;
    int failed; /* MEMDIFF_ENOMEM once an append could not grow the buffer */
} wbuf;

static void put_bytes(wbuf *b, const void *data, size_t n)
{
    if (b->failed)
        return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->failed = memdiff__set_error(MEMDIFF_ENOMEM, "snapshot file: too large");
                return;
            }
            cap *= 2;
        }
        unsigned char *p = memdiff__arena_grow(b->arena, b->p, b->cap, cap);
        if (!p) {
            b->failed = MEMDIFF_ENOMEM;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_le(wbuf *b, uint32_t v, unsigned bytes)
{
    unsigned char tmp[4];
    for (unsigned i = 0; i < bytes; i++)
        tmp[i] = (unsigned char)(v >> (8 * i));
    put_bytes(b, tmp, bytes);
}

static void put_varint(wbuf *b, uint64_t v)
{
    unsigned char tmp[10];
    unsigned n = 0;
    do {
        tmp[n] = (unsigned char)(v & 0x7F);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    put_bytes(b, tmp, n);
}

/* The string table being built: each distinct string once, in order of first use. */
typedef struct strent {
    const char *str;
    uint64_t index;
    UT_hash_handle hh;
} strent;

typedef struct writer {
    const memdiff_snapshot *s;
    memdiff__arena *scratch;
    strent *strings; /* uthash head */
    const char **order;
    size_t nstrings, order_cap;
    wbuf out;
} writer;

static int string_index(writer *w, const char *str, uint64_t *index)
{
    if (!str)
        str = "";
    size_t len = strlen(str);
    strent *e = NULL;
    HASH_FIND(hh, w->strings, str, len, e);
    if (e) {
        *index = e->index;
        return MEMDIFF_OK;
    }
    const char **v = memdiff__arena_room(w->scratch, (void *)w->order, &w->order_cap,
                                         w->nstrings, sizeof *v, 256);
    if (!v)
        return MEMDIFF_ENOMEM;
    w->order = v;
    e = memdiff__arena_alloc(w->scratch, sizeof *e);
    if (!e)
        return MEMDIFF_ENOMEM;
    e->str = str;
    e->index = w->nstrings;
    memdiff__uthash_arena = w->scratch;
    memdiff__uthash_oom = 0;
    HASH_ADD_KEYPTR(hh, w->strings, e->str, len, e);
    if (memdiff__uthash_oom)
        return memdiff__set_error(MEMDIFF_ENOMEM, "snapshot file: out of memory");
    w->order[w->nstrings++] = str;
    *index = e->index;
    return MEMDIFF_OK;
}

static int encode_info(writer *w, wbuf *b)
{
    const memdiff_snapshot_info *in = &w->s->info;
    uint64_t host, degraded = 0;
    int rc = string_index(w, in->host, &host);
    if (!rc && in->degraded) {
        rc = string_index(w, in->degraded, &degraded);
        degraded++;
    }
    if (rc)
        return rc;
    put_varint(b, (uint64_t)(unsigned)in->pid);
    put_varint(b, (uint64_t)in->depth_requested);
    put_varint(b, (uint64_t)in->depth);
    put_varint(b, in->sources);
    put_varint(b, in->page_size);
    put_varint(b, in->time_ns);
    put_varint(b, host);
    put_varint(b, degraded);
    const memdiff_process_totals *t = &in->totals;
    const uint64_t totals[8] = {t->vm_size,   t->vm_rss,    t->vm_hwm, t->rss_anon,
                                t->rss_file,  t->rss_shmem, t->vm_pte, t->vm_swap};
    for (int i = 0; i < 8; i++)
        put_varint(b, totals[i]);
    return b->failed;
}

static int encode_regions(writer *w, wbuf *b)
{
    const memdiff_snapshot *s = w->s;
    uint64_t ps = s->info.page_size, prev_end = 0;
    put_varint(b, s->region_count);
    for (size_t i = 0; i < s->region_count; i++) {
        const memdiff__region *r = &s->regions[i];
        if (r->start % ps || r->end % ps || r->end <= r->start || r->start < prev_end)
            return memdiff__set_error(MEMDIFF_EINVAL,
                                      "memdiff_snapshot_save: region %zu [0x%llx, 0x%llx) is "
                                      "empty, not page aligned, or overlaps the one before",
                                      i, (unsigned long long)r->start,
                                      (unsigned long long)r->end);
        uint64_t label, path;
        int rc = string_index(w, r->label, &label);
        if (!rc)
            rc = string_index(w, r->path, &path);
        if (rc)
            return rc;
        put_varint(b, (r->start - prev_end) / ps);
        put_varint(b, (r->end - r->start) / ps);
        put_varint(b, r->offset);
        put_varint(b, r->dev);
        put_varint(b, r->inode);
        put_varint(b, r->prot);
        put_varint(b, r->flags);
        put_varint(b, (uint64_t)r->hint);
        put_varint(b, (uint64_t)r->category);
        put_varint(b, label);
        put_varint(b, path);
        put_varint(b, zigzag((int64_t)(r->unit - r->start))); /* usually small: the unit is
                                                                  a nearby address */
        prev_end = r->end;
    }
    return b->failed;
}

static int encode_runs(writer *w, wbuf *b)
{
    const memdiff_snapshot *s = w->s;
    uint64_t ps = s->info.page_size, prev_end = 0, next_aux = 0;
    uint32_t prev_region = 0;
    put_varint(b, s->run_count);
    memdiff__runs_iter it;
    memdiff__run run;
    const memdiff__run *u = &run;
    size_t i = 0;
    for (memdiff__runs_begin(s, &it); memdiff__runs_next(&it, &run); i++) {
        if (u->start % ps || u->npages == 0 || u->start < prev_end || u->region < prev_region)
            return memdiff__set_error(MEMDIFF_EINVAL,
                                      "memdiff_snapshot_save: run %zu at 0x%llx is empty, not "
                                      "page aligned, or out of order",
                                      i, (unsigned long long)u->start);
        put_varint(b, (u->start - prev_end) / ps);
        put_varint(b, u->npages);
        put_varint(b, u->attrs);
        put_varint(b, u->region - prev_region);
        if (u->aux == MEMDIFF__NO_AUX) {
            put_varint(b, RUN_AUX_NONE);
        } else {
            put_varint(b, u->aux == next_aux ? RUN_AUX_NEXT : RUN_AUX_AT + u->aux);
            next_aux = u->aux + u->npages;
        }
        prev_end = u->start + u->npages * ps;
        prev_region = u->region;
    }
    if (i != s->run_count)
        return memdiff__set_error(MEMDIFF_EINVAL,
                                  "memdiff_snapshot_save: %zu runs stored, %zu counted", i,
                                  s->run_count);
    return b->failed;
}

/* The values [0, n) of q, page by page (they are stored as stretches in memory, seq.c); frame
 * numbers as zigzag deltas from the previous page's (neighbouring pages' frames are often
 * neighbours: huge pages, fresh allocations; a delta is usually one byte where the frame number
 * would be three or four), flags and counts as they are. */
static void put_seq(wbuf *b, const memdiff__seq *q, uint64_t n, int deltas)
{
    uint64_t prev = 0;
    memdiff__seq_iter it;
    memdiff__seq_seek(q, 0, &it);
    for (uint64_t i = 0; i < n;) {
        uint64_t base;
        int step;
        uint64_t len = memdiff__seq_peek(&it, n - i, &base, &step);
        for (uint64_t k = 0; k < len; k++) {
            uint64_t v = base + (uint64_t)((int64_t)step * (int64_t)k);
            put_varint(b, deltas ? zigzag((int64_t)(v - prev)) : v);
            prev = v;
        }
        memdiff__seq_skip(&it, len);
        i += len;
    }
}

static int encode_aux(writer *w, wbuf *b)
{
    const memdiff_snapshot *s = w->s;
    unsigned mask = (s->frames.present ? AUX_PFN : 0) | (s->kflags.present ? AUX_KFLAGS : 0) |
                    (s->mapcount.present ? AUX_MAPCOUNT : 0);
    put_varint(b, mask);
    put_varint(b, s->aux_count);
    if (s->frames.present)
        put_seq(b, &s->frames, s->aux_count, 1);
    if (s->kflags.present)
        put_seq(b, &s->kflags, s->aux_count, 0);
    if (s->mapcount.present)
        put_seq(b, &s->mapcount, s->aux_count, 0);
    return b->failed;
}

static int parse(source *src, memdiff_snapshot *s, int bounded, uint64_t *used);

static const unsigned char zeros[4096];

/* The file from its sections into w->out, pad zero bytes at the end of the run table, then read
 * back as the loader would (never write what cannot be read back: the loader's checks are the
 * definition of a valid snapshot), *used set to the memory the loaded copy takes. */
static int assemble(writer *w, const wbuf *const *secs, size_t pad, uint64_t *used)
{
    wbuf *out = &w->out;
    put_bytes(out, magic, sizeof magic);
    put_le(out, MEMDIFF_FILE_VERSION_MAJOR, 2);
    put_le(out, MEMDIFF_FILE_VERSION_MINOR, 2);
    put_le(out, BYTE_ORDER_MARK, 4);
    for (unsigned tag = TAG_INFO; tag <= TAG_KNOWN_MAX; tag++) {
        const wbuf *sec = secs[tag];
        size_t extra = tag == TAG_RUNS ? pad : 0;
        if (tag == TAG_AUX && !sec->len)
            continue;
        put_varint(out, tag);
        put_varint(out, sec->len + extra);
        put_bytes(out, sec->p, sec->len);
        for (size_t n = 0; n < extra; n += sizeof zeros)
            put_bytes(out, zeros, MEMDIFF__MIN(sizeof zeros, extra - n));
    }
    put_varint(out, TAG_END);
    if (!out->failed)
        put_le(out, memdiff__crc32(0, out->p, out->len), 4);
    if (out->failed)
        return out->failed;

    memdiff_snapshot check;
    memset(&check, 0, sizeof check);
    source src = {NULL, NULL, out->p, out->len, out->len, 1};
    int rc = parse(&src, &check, pad > 0, used);
    memdiff__arena_release(&check.arena);
    if (rc == MEMDIFF_EFORMAT) {
        char why[400];
        snprintf(why, sizeof why, "%s", memdiff_last_error());
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_save: the snapshot breaks "
                                                  "the data model: %s", why);
    }
    return rc;
}

static int encode(writer *w)
{
    uint32_t ps = w->s->info.page_size;
    if (ps < 512 || ps > (1u << 30) || (ps & (ps - 1)))
        return memdiff__set_error(MEMDIFF_EINVAL,
                                  "memdiff_snapshot_save: page size %u is not a power of two in "
                                  "[512, 1 GiB]",
                                  (unsigned)ps);
    wbuf info = {w->scratch, NULL, 0, 0, 0}, regions = info, runs = info, aux = info,
         strings = info;
    int rc = encode_info(w, &info);
    if (!rc)
        rc = encode_regions(w, &regions);
    if (!rc)
        rc = encode_runs(w, &runs);
    if (!rc && w->s->aux_count &&
        (w->s->frames.present || w->s->kflags.present || w->s->mapcount.present))
        rc = encode_aux(w, &aux);
    if (rc)
        return rc;
    put_varint(&strings, w->nstrings);
    for (size_t i = 0; i < w->nstrings; i++) {
        size_t len = strlen(w->order[i]);
        put_varint(&strings, len);
        put_bytes(&strings, w->order[i], len);
    }
    if (strings.failed)
        return strings.failed;

    const wbuf *secs[TAG_KNOWN_MAX + 1] = {NULL, &info, &strings, &regions, &runs, &aux};
    uint64_t used = 0;
    rc = assemble(w, secs, 0, &used);
    /* A file must load within its bound (2.75 x its size, LOAD_FLOOR at least); one that
     * describes more memory than that (many tiny regions, runs of alternating attributes) gets
     * zero bytes at the end of its run table, which readers skip as they skip the fields of a
     * newer minor version. The memory a file takes does not depend on those bytes, so one more
     * assembly settles it (16 bytes spare for the longer length varint). */
    uint64_t want = used > LOAD_FLOOR ? (used * LOAD_DEN + LOAD_NUM - 1) / LOAD_NUM : 0;
    if (!rc && want > w->out.len) {
        size_t pad = (size_t)(want - w->out.len) + 16;
        w->out.len = 0;
        rc = assemble(w, secs, pad, &used);
    }
    return rc;
}

int memdiff_snapshot_save(const memdiff_snapshot *snapshot, FILE *out)
{
    if (!snapshot || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_save: NULL argument");
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    writer w;
    memset(&w, 0, sizeof w);
    w.s = snapshot;
    w.scratch = &scratch;
    w.out.arena = &scratch;
    int rc = encode(&w);
    if (!rc) {
        errno = 0;
        if (fwrite(w.out.p, 1, w.out.len, out) != w.out.len || fflush(out) != 0)
            rc = memdiff__set_error(MEMDIFF_EIO, "snapshot file: write failed: %s",
                                    errno ? strerror(errno) : "stream error");
    }
    memdiff__arena_release(&scratch);
    return rc;
}

static int open_error(const char *what, const char *path, int e)
{
    return memdiff__set_error(e == EACCES || e == EPERM || e == EROFS ? MEMDIFF_EACCES
                                                                      : MEMDIFF_EIO,
                              "%s %s: %s", what, path, strerror(e));
}

/* What stands at a path that memdiff will not write over, as the error message names it. */
static const char *kind_name(memdiff__path_kind kind)
{
    switch (kind) {
    case MEMDIFF__PATH_DIRECTORY:
        return "a directory";
    case MEMDIFF__PATH_SYMLINK:
        return "a symbolic link";
    case MEMDIFF__PATH_CHAR_DEVICE:
        return "a character device";
    case MEMDIFF__PATH_BLOCK_DEVICE:
        return "a block device";
    case MEMDIFF__PATH_FIFO:
        return "a FIFO";
    case MEMDIFF__PATH_SOCKET:
        return "a socket";
    default:
        return "not a file of a known type";
    }
}

/* Saving replaces nothing but a regular file. rename() would replace a device node, a FIFO, a
 * socket or a symbolic link (/dev/stdout is one) with the new file, so their type is checked
 * first; a symbolic link is refused whatever it names (also when it names a regular file): the
 * link itself would be replaced, and writing through it instead would let whoever can make
 * links in a shared directory choose what memdiff overwrites. */
static int check_target(const char *path)
{
    memdiff__path_kind kind;
    int rc = memdiff__os_path_kind(path, &kind);
    if (rc || kind == MEMDIFF__PATH_NONE || kind == MEMDIFF__PATH_REGULAR)
        return rc;
    return memdiff__set_error(MEMDIFF_EINVAL, "%s: is %s, not a regular file", path,
                              kind_name(kind));
}

int memdiff_snapshot_save_file(const memdiff_snapshot *snapshot, const char *path)
{
    if (!snapshot || !path)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_save_file: NULL argument");
    if (!path[0])
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_save_file: empty path");
    int rc = check_target(path);
    if (rc)
        return rc;
    /* A name of our own beside the target: same directory, so the rename stays in one file
     * system and is atomic. "x" (C11) refuses to reuse an existing name, a symbolic link
     * included. */
    static _Atomic unsigned long counter;
    char tmp[4096];
    FILE *f = NULL;
    for (int attempt = 0; !f && attempt < 16; attempt++) {
        int len = snprintf(tmp, sizeof tmp, "%s.tmp-%llx-%lx", path,
                           (unsigned long long)memdiff__os_time_ns(), counter++);
        if (len < 0 || (size_t)len >= sizeof tmp)
            return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_save_file: path too "
                                                      "long");
        errno = 0;
        f = fopen(tmp, "wbx");
        if (!f && errno != EEXIST)
            return open_error("create", tmp, errno);
    }
    if (!f)
        return memdiff__set_error(MEMDIFF_EIO, "create %s: no unused temporary name", tmp);
    rc = memdiff_snapshot_save(snapshot, f);
    errno = 0;
    if (fclose(f) != 0 && !rc)
        rc = memdiff__set_error(MEMDIFF_EIO, "write %s: %s", tmp, strerror(errno));
    /* Checked again: writing took time, and the path may have changed meanwhile. What is left
     * is a window of one system call, and only the path's own directory entry is at stake
     * there (a rename never writes through a link). The old file is never removed first: a
     * rename that fails leaves path as it was. */
    if (!rc)
        rc = check_target(path);
    if (!rc)
        rc = memdiff__os_replace_file(tmp, path);
    if (rc)
        remove(tmp);
    return rc;
}

/* =============================================================================================
 * Reading
 * =========================================================================================== */

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
static int fill(source *src, uint64_t want)
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
static int frame_reader(source *src, size_t pos, uint64_t want, const char *what, reader *r)
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
static int parse_frame(loader *l, source *src)
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
    in->sources = (unsigned)v[3];
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

/* Builds s (whose arena receives everything) from the file src gives. bounded: refuse a file
 * whose snapshot would take more than its bound (within_budget); *used (may be NULL) receives
 * what it took (loaded_bytes). */
static int parse(source *src, memdiff_snapshot *s, int bounded, uint64_t *used)
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

int memdiff_snapshot_load(FILE *in, memdiff_snapshot **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_load: out is NULL");
    *out = NULL;
    if (!in)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_load: in is NULL");
    memdiff__arena scratch = MEMDIFF__ARENA_INIT, a = MEMDIFF__ARENA_INIT;
    source src = {in, &scratch, NULL, 0, 0, 0};
    int rc = MEMDIFF_OK;
    memdiff_snapshot *s = memdiff__arena_alloc(&a, sizeof *s);
    if (!s)
        rc = MEMDIFF_ENOMEM;
    else
        s->arena = a; /* the snapshot lives inside its own arena, as a taken one does */
    if (!rc)
        rc = parse(&src, s, 1, NULL);
    memdiff__arena_release(&scratch);
    if (rc) {
        memdiff_snapshot_free(s);
        return rc;
    }
    s->info.storage_bytes = memdiff__arena_footprint(&s->arena);
    *out = s;
    return MEMDIFF_OK;
}

int memdiff_snapshot_load_file(const char *path, memdiff_snapshot **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_load_file: out is NULL");
    *out = NULL;
    if (!path)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_load_file: path is NULL");
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return open_error("open", path, errno);
    int rc = memdiff_snapshot_load(f, out);
    fclose(f);
    if (rc) {
        char why[400];
        snprintf(why, sizeof why, "%s", memdiff_last_error());
        memdiff__set_error(rc, "%s: %s", path, why);
    }
    return rc;
}
