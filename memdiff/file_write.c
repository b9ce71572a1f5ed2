/*
 * file_write.c - snapshot files: saving (memdiff_snapshot_save, memdiff_snapshot_save_file).
 * The layout and the constants the reader shares are in file_format.h.
 *
 * Never write what cannot be read back: the file is assembled in memory and read back by the
 * loader (file_read.c) before a byte goes out, so the loader's checks are the definition of a
 * valid snapshot. A file that would load into more than its bound (2.75 x its size, LOAD_FLOOR
 * at least) is padded, so that every file memdiff writes loads.
 *
 * Storage: saving encodes into a scratch arena; it never calls malloc.
 */
#include <errno.h>
#include <string.h>

#include "file_format.h"
#include "uthash_arena.h"

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

typedef memdiff__wbuf wbuf;

static void put_le(wbuf *b, uint32_t v, unsigned bytes)
{
    unsigned char tmp[4];
    for (unsigned i = 0; i < bytes; i++)
        tmp[i] = (unsigned char)(v >> (8 * i));
    memdiff__wbuf_put(b, tmp, bytes);
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
    memdiff__wbuf_varint(b, (uint64_t)(unsigned)in->pid);
    memdiff__wbuf_varint(b, (uint64_t)in->depth_requested);
    memdiff__wbuf_varint(b, (uint64_t)in->depth);
    /* PSS is no fact read but a sum of the map counts (MEMDIFF_SRC_PSS): the loader sums it
     * again, so the file says map counts. PSS per mapping is told by its own section, which a
     * 1.0 reader skips: the bit would only tell it of figures it does not have. */
    memdiff__wbuf_varint(b, in->sources & ~(unsigned)(MEMDIFF_SRC_PSS | MEMDIFF_SRC_PSS_MAPPINGS));
    memdiff__wbuf_varint(b, in->page_size);
    memdiff__wbuf_varint(b, in->time_ns);
    memdiff__wbuf_varint(b, host);
    memdiff__wbuf_varint(b, degraded);
    const memdiff_process_totals *t = &in->totals;
    const uint64_t totals[8] = {t->vm_size,   t->vm_rss,    t->vm_hwm, t->rss_anon,
                                t->rss_file,  t->rss_shmem, t->vm_pte, t->vm_swap};
    for (int i = 0; i < 8; i++)
        memdiff__wbuf_varint(b, totals[i]);
    return b->failed;
}

static int encode_regions(writer *w, wbuf *b)
{
    const memdiff_snapshot *s = w->s;
    uint64_t ps = s->info.page_size, prev_end = 0;
    memdiff__wbuf_varint(b, s->region_count);
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
        memdiff__wbuf_varint(b, (r->start - prev_end) / ps);
        memdiff__wbuf_varint(b, (r->end - r->start) / ps);
        memdiff__wbuf_varint(b, r->offset);
        memdiff__wbuf_varint(b, r->dev);
        memdiff__wbuf_varint(b, r->inode);
        memdiff__wbuf_varint(b, r->prot);
        memdiff__wbuf_varint(b, r->flags);
        memdiff__wbuf_varint(b, (uint64_t)r->hint);
        memdiff__wbuf_varint(b, (uint64_t)r->category);
        memdiff__wbuf_varint(b, label);
        memdiff__wbuf_varint(b, path);
        /* usually small: the unit is a nearby address */
        memdiff__wbuf_varint(b, zigzag((int64_t)(r->unit - r->start)));
        prev_end = r->end;
    }
    return b->failed;
}

static int encode_runs(writer *w, wbuf *b)
{
    const memdiff_snapshot *s = w->s;
    uint64_t ps = s->info.page_size, prev_end = 0, next_aux = 0;
    uint32_t prev_region = 0;
    memdiff__wbuf_varint(b, s->run_count);
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
        memdiff__wbuf_varint(b, (u->start - prev_end) / ps);
        memdiff__wbuf_varint(b, u->npages);
        memdiff__wbuf_varint(b, u->attrs);
        memdiff__wbuf_varint(b, u->region - prev_region);
        if (u->aux == MEMDIFF__NO_AUX) {
            memdiff__wbuf_varint(b, RUN_AUX_NONE);
        } else {
            memdiff__wbuf_varint(b, u->aux == next_aux ? RUN_AUX_NEXT : RUN_AUX_AT + u->aux);
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
            memdiff__wbuf_varint(b, deltas ? zigzag((int64_t)(v - prev)) : v);
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
    memdiff__wbuf_varint(b, mask);
    memdiff__wbuf_varint(b, s->aux_count);
    if (s->frames.present)
        put_seq(b, &s->frames, s->aux_count, 1);
    if (s->kflags.present)
        put_seq(b, &s->kflags, s->aux_count, 0);
    if (s->mapcount.present)
        put_seq(b, &s->mapcount, s->aux_count, 0);
    return b->failed;
}

/* PSS per mapping: the regions that carry a mapping's figure (pss_end set), each as its index
 * (from the previous one's), the pages to pss_end and the figure in kB (smaps' unit: whole). */
static int encode_pss(writer *w, wbuf *b)
{
    const memdiff_snapshot *s = w->s;
    uint64_t ps = s->info.page_size;
    size_t n = 0, prev = 0;
    for (size_t i = 0; i < s->region_count; i++)
        n += s->regions[i].pss_end != 0;
    memdiff__wbuf_varint(b, n);
    for (size_t i = 0; i < s->region_count; i++) {
        const memdiff__region *r = &s->regions[i];
        uint64_t bytes = r->pss_fixed >> 12;
        if (!r->pss_end)
            continue;
        if (r->pss_end < r->end || (r->pss_end - r->start) % ps || bytes % 1024 ||
            (r->pss_fixed & 4095))
            return memdiff__set_error(MEMDIFF_EINVAL,
                                      "memdiff_snapshot_save: region %zu's PSS per mapping "
                                      "(%llu bytes to 0x%llx) is no whole kB of a mapping "
                                      "that begins it",
                                      i, (unsigned long long)bytes,
                                      (unsigned long long)r->pss_end);
        memdiff__wbuf_varint(b, i - prev);
        memdiff__wbuf_varint(b, (r->pss_end - r->start) / ps);
        memdiff__wbuf_varint(b, bytes / 1024);
        prev = i;
    }
    return b->failed;
}

static const unsigned char zeros[4096];

/* The file from its sections into w->out, pad zero bytes at the end of the run table, then read
 * back as the loader would (never write what cannot be read back: the loader's checks are the
 * definition of a valid snapshot), *used set to the memory the loaded copy takes. */
static int assemble(writer *w, const wbuf *const *secs, size_t pad, uint64_t *used)
{
    wbuf *out = &w->out;
    memdiff__wbuf_put(out, magic, sizeof magic);
    put_le(out, MEMDIFF_FILE_VERSION_MAJOR, 2);
    put_le(out, MEMDIFF_FILE_VERSION_MINOR, 2);
    put_le(out, BYTE_ORDER_MARK, 4);
    for (unsigned tag = TAG_INFO; tag <= TAG_KNOWN_MAX; tag++) {
        const wbuf *sec = secs[tag];
        size_t extra = tag == TAG_RUNS ? pad : 0;
        if ((tag == TAG_AUX || tag == TAG_PSS) && !sec->len)
            continue;
        memdiff__wbuf_varint(out, tag);
        memdiff__wbuf_varint(out, sec->len + extra);
        memdiff__wbuf_put(out, sec->p, sec->len);
        for (size_t n = 0; n < extra; n += sizeof zeros)
            memdiff__wbuf_put(out, zeros, MEMDIFF__MIN(sizeof zeros, extra - n));
    }
    memdiff__wbuf_varint(out, TAG_END);
    if (!out->failed)
        put_le(out, memdiff__crc32(0, out->p, out->len), 4);
    if (out->failed)
        return out->failed;

    memdiff_snapshot check;
    memset(&check, 0, sizeof check);
    memdiff__file_source src = {NULL, NULL, out->p, out->len, out->len, 1};
    int rc = memdiff__file_parse(&src, &check, pad > 0, used);
    memdiff__arena_release(&check.arena);
    if (rc == MEMDIFF_EFORMAT) {
        char why[400];
        snprintf(why, sizeof why, "%s", memdiff__last_error_raw());
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
         strings = info, pss = info;
    int rc = encode_info(w, &info);
    if (!rc)
        rc = encode_regions(w, &regions);
    if (!rc)
        rc = encode_runs(w, &runs);
    if (!rc && w->s->aux_count &&
        (w->s->frames.present || w->s->kflags.present || w->s->mapcount.present))
        rc = encode_aux(w, &aux);
    if (!rc && (w->s->info.sources & MEMDIFF_SRC_PSS_MAPPINGS))
        rc = encode_pss(w, &pss);
    if (rc)
        return rc;
    memdiff__wbuf_varint(&strings, w->nstrings);
    for (size_t i = 0; i < w->nstrings; i++) {
        size_t len = strlen(w->order[i]);
        memdiff__wbuf_varint(&strings, len);
        memdiff__wbuf_put(&strings, w->order[i], len);
    }
    if (strings.failed)
        return strings.failed;

    const wbuf *secs[TAG_KNOWN_MAX + 1] = {NULL, &info, &strings, &regions, &runs, &aux, &pss};
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

int memdiff__snapshot_encode(const memdiff_snapshot *snapshot, memdiff__arena *scratch,
                             const unsigned char **p, size_t *n)
{
    writer w;
    memset(&w, 0, sizeof w);
    w.s = snapshot;
    w.scratch = scratch;
    w.out.arena = scratch;
    int rc = encode(&w);
    *p = rc ? NULL : w.out.p;
    *n = rc ? 0 : w.out.len;
    return rc;
}

int memdiff_snapshot_save(const memdiff_snapshot *snapshot, FILE *out)
{
    if (!snapshot || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_snapshot_save: NULL argument");
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    const unsigned char *p;
    size_t n;
    int rc = memdiff__snapshot_encode(snapshot, &scratch, &p, &n);
    if (!rc) {
        errno = 0;
        if (fwrite(p, 1, n, out) != n || fflush(out) != 0)
            rc = memdiff__set_error(MEMDIFF_EIO, "snapshot file: write failed: %s",
                                    errno ? strerror(errno) : "stream error");
    }
    memdiff__arena_release(&scratch);
    return rc;
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
int memdiff__check_save_target(const char *path)
{
    memdiff__path_kind kind;
    int rc = memdiff__os_path_kind(path, &kind);
    if (rc || kind == MEMDIFF__PATH_NONE || kind == MEMDIFF__PATH_REGULAR)
        return rc;
    return memdiff__set_error(MEMDIFF_EINVAL, "%s: is %s, not a regular file", path,
                              kind_name(kind));
}

/* The temporary file beside path could not be created: what failed is path's directory (missing,
 * not a directory, not writable), so the detail names that, never the temporary name the caller
 * did not choose. */
static int create_error(const char *path, int e)
{
    const char *slash = memdiff__os_last_separator(path);
    int dir_len = !slash ? 1 : slash == path ? 1 : (int)(slash - path);
    const char *dir = slash ? path : ".";
    return memdiff__set_error(e == EACCES || e == EPERM || e == EROFS ? MEMDIFF_EACCES
                                                                      : MEMDIFF_EIO,
                              "%s: cannot create a file in directory %.*s: %s", path, dir_len,
                              dir, strerror(e));
}

int memdiff__save_file_atomic(const char *path, const char *api,
                              int (*write)(const void *object, FILE *out), const void *object)
{
    if (!object || !path)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: NULL argument", api);
    if (!path[0])
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: empty path", api);
    int rc = memdiff__check_save_target(path);
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
            return memdiff__set_error(MEMDIFF_EINVAL, "%s: path too long", api);
        errno = 0;
        f = fopen(tmp, "wbx");
        if (!f && errno != EEXIST)
            return create_error(path, errno);
    }
    if (!f)
        return memdiff__set_error(MEMDIFF_EIO, "create %s: no unused temporary name", tmp);
    rc = write(object, f);
    errno = 0;
    if (fclose(f) != 0 && !rc)
        rc = memdiff__set_error(MEMDIFF_EIO, "write %s: %s", tmp, strerror(errno));
    /* Checked again: writing took time, and the path may have changed meanwhile. What is left
     * is a window of one system call, and only the path's own directory entry is at stake
     * there (a rename never writes through a link). The old file is never removed first: a
     * rename that fails leaves path as it was. */
    if (!rc)
        rc = memdiff__check_save_target(path);
    if (!rc)
        rc = memdiff__os_replace_file(tmp, path);
    if (rc)
        remove(tmp);
    return rc;
}

static int save_snapshot(const void *snapshot, FILE *out)
{
    return memdiff_snapshot_save(snapshot, out);
}

int memdiff_snapshot_save_file(const memdiff_snapshot *snapshot, const char *path)
{
    return memdiff__save_file_atomic(path, "memdiff_snapshot_save_file", save_snapshot,
                                     snapshot);
}
