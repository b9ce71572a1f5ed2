/*
 * timeline_read.c - reading timeline files (memdiff_timeline_open, _next, _snapshot).
 * docs/timeline-format.md is the specification; timeline_format.h holds what the writer shares.
 *
 * Open trusts nothing and checks all: the 16-byte header before anything else is read, then
 * record by record as the bytes arrive (the buffer grows with what the stream holds, never with
 * a length a record claims): the head's checksum before its length is believed, the record's
 * checksum before a field is read, then every field against the bytes left and its range. A file
 * that ends inside a record is torn (a writer stopped mid-record), which is a state, not an
 * error; damage anywhere is MEMDIFF_EFORMAT naming the record's index and offset. Iteration
 * decodes again what open checked, with the same function, so it cannot disagree.
 *
 * Memory: the file's bytes (in a buffer that doubles: under 2 x its size), an index of 16
 * bytes per snapshot record (35 bytes at least on disk; the array doubles too), the header's
 * strings (an empty argument: 1 byte on disk, a pointer and an aligned copy here; 65,536 of them
 * at most): at most 4 x the file's size + 2 MiB (memdiff_timeline_info.storage_bytes). A
 * recorded snapshot is loaded only when asked for, under the snapshot loader's own bound. No
 * malloc: everything is in the reader's arena.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "timeline_format.h"

#define READ_CHUNK ((size_t)64 * 1024)
#define READ_PIECE ((size_t)1 << 20)

typedef struct snap_ref {
    uint64_t offset; /* the record's */
    uint64_t index;  /* the record's index */
} snap_ref;

struct memdiff_timeline {
    memdiff__arena arena; /* holds this struct and everything below */
    FILE *in;             /* while open reads; NULL after */
    int ended;
    unsigned char *p;     /* the file's bytes read so far */
    size_t n, cap;
    snap_ref *snaps;
    size_t snaps_cap;
    const char **argv;
    memdiff_timeline_info info;
    size_t first;         /* offset of the first record after the header record */
    /* iteration */
    size_t pos, rec;
    uint64_t time;
    memdiff_process_totals totals;
    size_t snap_no;
    char label[TL_LABEL_MAX + 1];
};

/* A cursor over one record's payload, and what a message says of the record. */
typedef struct cursor {
    const unsigned char *p;
    size_t pos, end;
    size_t rec;
    uint64_t offset;
    unsigned kind;
} cursor;

static const char *kind_name(unsigned kind)
{
    static const char *const names[] = {"kind 0", "header", "sample", "snapshot", "mark", "exit"};
    return kind <= TL_KIND_KNOWN_MAX ? names[kind] : "record of a newer kind";
}

static int damaged(const cursor *c, const char *fmt, const char *what)
{
    return memdiff__set_error(MEMDIFF_EFORMAT, "timeline: record %zu (%s) at offset %llu: %s%s",
                              c->rec, kind_name(c->kind), (unsigned long long)c->offset, fmt,
                              what);
}

static int get_varint(cursor *c, const char *field, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (c->pos == c->end)
            return damaged(c, "payload ends inside the ", field);
        unsigned char b = c->p[c->pos++];
        if (shift == 63 && b > 1)
            return damaged(c, "number too large: ", field);
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            break;
    }
    *out = v;
    return MEMDIFF_OK;
}

static int get_bounded(cursor *c, const char *field, uint64_t min, uint64_t max, uint64_t *out)
{
    int rc = get_varint(c, field, out);
    if (!rc && (*out < min || *out > max))
        rc = damaged(c, "out of range: ", field);
    return rc;
}

/* A string of at most max bytes without NUL: *s points into the file, *len its length. */
static int get_string(cursor *c, const char *field, uint64_t max, const unsigned char **s,
                      size_t *len)
{
    uint64_t n;
    int rc = get_bounded(c, field, 0, max, &n);
    if (rc)
        return rc;
    if (n > c->end - c->pos)
        return damaged(c, "longer than its record: ", field);
    if (memchr(c->p + c->pos, 0, (size_t)n))
        return damaged(c, "a NUL byte inside: ", field);
    *s = c->p + c->pos;
    *len = (size_t)n;
    c->pos += (size_t)n;
    return MEMDIFF_OK;
}

/* Iteration state a record moves: the clock, the last sample's figures. */
typedef struct tl_state {
    uint64_t time;
    memdiff_process_totals totals;
} tl_state;

static int decode_sample(cursor *c, tl_state *st)
{
    uint64_t mask;
    int rc = get_varint(c, "change mask", &mask);
    uint64_t *f[TL_SAMPLE_FIELDS] = {&st->totals.vm_size,  &st->totals.vm_rss,
                                     &st->totals.vm_hwm,   &st->totals.rss_anon,
                                     &st->totals.rss_file, &st->totals.rss_shmem,
                                     &st->totals.vm_pte,   &st->totals.vm_swap};
    for (unsigned i = 0; !rc && i < 64; i++) {
        if (!(mask & ((uint64_t)1 << i)))
            continue;
        uint64_t step;
        rc = get_varint(c, "figure's change", &step);
        if (!rc && i < TL_SAMPLE_FIELDS)
            *f[i] += tl_unzigzag(step); /* mod 2^64, as written */
    }
    return rc;
}

/* The snapshot record's fields; *at and *len locate its snapshot file in the file. */
static int decode_snapshot(cursor *c, unsigned *cause, uint64_t *encoding, size_t *at,
                           size_t *len)
{
    uint64_t v, n;
    int rc = get_bounded(c, "cause", 0, UINT_MAX, &v);
    if (!rc)
        rc = get_varint(c, "encoding", encoding);
    if (!rc)
        rc = get_varint(c, "snapshot's length", &n);
    if (rc)
        return rc;
    if (n > c->end - c->pos)
        return damaged(c, "longer than its record: ", "the snapshot");
    if (*encoding == TL_SNAPSHOT_FILE && n < TL_SNAPSHOT_MIN)
        return damaged(c, "shorter than any snapshot file: ", "the snapshot");
    *cause = (unsigned)v;
    *at = c->pos;
    *len = (size_t)n;
    c->pos += (size_t)n;
    return MEMDIFF_OK;
}

/* Decodes the payload of a record that is not the header, moving st, filling out (may be NULL;
 * its label goes to label_buf). */
static int decode(cursor *c, tl_state *st, memdiff_timeline_record *out, char *label_buf)
{
    uint64_t step;
    int rc = get_varint(c, "time", &step);
    if (rc)
        return rc;
    st->time += tl_unzigzag(step); /* mod 2^64, as written */
    memdiff_timeline_record r;
    memset(&r, 0, sizeof r);
    r.label = "";
    uint64_t v;
    switch (c->kind) {
    case TL_KIND_HEADER:
        return damaged(c, "", "a second header record");
    case TL_KIND_SAMPLE:
        rc = decode_sample(c, st);
        break;
    case TL_KIND_SNAPSHOT: {
        uint64_t encoding;
        size_t at, len;
        rc = decode_snapshot(c, &r.cause, &encoding, &at, &len);
        break;
    }
    case TL_KIND_MARK: {
        const unsigned char *s = NULL;
        size_t len = 0;
        rc = get_bounded(c, "pid", 0, INT_MAX, &v);
        r.pid = (int)v;
        if (!rc)
            rc = get_string(c, "label", TL_LABEL_MAX, &s, &len);
        if (!rc && label_buf) {
            memcpy(label_buf, s, len);
            label_buf[len] = '\0';
            r.label = label_buf;
        }
        break;
    }
    case TL_KIND_EXIT:
        rc = get_bounded(c, "how", MEMDIFF_EXIT_STATUS, MEMDIFF_EXIT_DETACHED, &v);
        r.exit_how = (memdiff_exit_how)v;
        if (!rc)
            rc = get_varint(c, "code", &v);
        if (!rc) {
            int64_t code = (int64_t)tl_unzigzag(v);
            if (code < INT_MIN || code > INT_MAX)
                rc = damaged(c, "out of range: ", "code");
            r.exit_code = (int)code;
        }
        break;
    default:
        break; /* a newer kind: its time counts, the rest is skipped */
    }
    if (rc || !out)
        return rc;
    r.kind = (memdiff_record_kind)c->kind;
    r.index = c->rec;
    r.offset = c->offset;
    r.time_ns = st->time;
    r.totals = st->totals;
    *out = r;
    return MEMDIFF_OK;
}

/* ---- reading the stream ------------------------------------------------------------------ */

/* Makes the first want bytes of the file available, or as many as there are. */
static int fill(memdiff_timeline *t, uint64_t want)
{
    const uint64_t limit = SIZE_MAX / 4;
    if (want > limit)
        want = limit;
    while (t->in && !t->ended && t->n < want) {
        if (t->n == t->cap) {
            size_t ncap = t->cap ? t->cap * 2 : READ_CHUNK;
            if ((uint64_t)ncap > limit)
                return memdiff__set_error(MEMDIFF_EFORMAT, "timeline: larger than %llu bytes",
                                          (unsigned long long)limit);
            unsigned char *v = memdiff__arena_grow_raw(&t->arena, t->p, t->cap, ncap);
            if (!v)
                return memdiff__set_error(MEMDIFF_ENOMEM, "timeline: out of memory reading "
                                                          "%zu bytes",
                                          t->n);
            t->p = v;
            t->cap = ncap;
        }
        size_t piece = MEMDIFF__MIN(t->cap - t->n, READ_PIECE);
        piece = (size_t)MEMDIFF__MIN((uint64_t)piece, want - t->n);
        size_t got = fread(t->p + t->n, 1, piece, t->in);
        t->n += got;
        if (got < piece) {
            if (ferror(t->in))
                return memdiff__set_error(MEMDIFF_EIO, "timeline: read error after %zu bytes: "
                                                       "%s",
                                          t->n, strerror(errno));
            t->ended = 1;
        }
    }
    return MEMDIFF_OK;
}

static unsigned get_le(const unsigned char *p, unsigned bytes)
{
    unsigned v = 0;
    for (unsigned i = bytes; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

static int check_header(memdiff_timeline *t)
{
    int rc = fill(t, TL_HEADER_SIZE);
    if (rc)
        return rc;
    if (t->n == 0)
        return memdiff__set_error(MEMDIFF_EFORMAT, "timeline: empty file");
    if (memcmp(t->p, tl_magic, MEMDIFF__MIN(t->n, sizeof tl_magic)) != 0) {
        if (t->n >= 8 && memcmp(t->p, "MEMDIFF\0", 8) == 0)
            return memdiff__set_error(MEMDIFF_EFORMAT, "timeline: a snapshot file, not a "
                                                       "timeline (memdiff_snapshot_load reads "
                                                       "it)");
        return memdiff__set_error(MEMDIFF_EFORMAT, "timeline: not a memdiff timeline (bad "
                                                   "magic)");
    }
    if (t->n < TL_HEADER_SIZE)
        return memdiff__set_error(MEMDIFF_EFORMAT, "timeline: truncated in its 16-byte header "
                                                   "(%zu bytes)",
                                  t->n);
    unsigned bom = get_le(t->p + 12, 4), major = get_le(t->p + 8, 2);
    if (bom != TL_BYTE_ORDER_MARK)
        return memdiff__set_error(MEMDIFF_EFORMAT, "timeline: byte-order marker 0x%08X, not "
                                                   "0x0A0B0C0D%s",
                                  bom,
                                  bom == 0x0D0C0B0Au ? " (written big-endian)" : "");
    if (major != MEMDIFF_TIMELINE_VERSION_MAJOR)
        return memdiff__set_error(MEMDIFF_EFORMAT, "timeline: format version %u.%u is not "
                                                   "supported (this memdiff reads version %u.x)",
                                  major, get_le(t->p + 10, 2), MEMDIFF_TIMELINE_VERSION_MAJOR);
    t->info.version_major = major;
    t->info.version_minor = get_le(t->p + 10, 2);
    return MEMDIFF_OK;
}

/* A string of the header, copied NUL-terminated into the arena. */
static int header_string(memdiff_timeline *t, cursor *c, const char *field, const char **out)
{
    const unsigned char *s = NULL;
    size_t len = 0;
    int rc = get_string(c, field, TL_STRING_MAX, &s, &len);
    if (rc)
        return rc;
    *out = memdiff__arena_strndup(&t->arena, (const char *)s, len);
    return *out ? MEMDIFF_OK : memdiff__set_error(MEMDIFF_ENOMEM, "timeline: out of memory");
}

static int decode_header(memdiff_timeline *t, cursor *c, tl_state *st)
{
    uint64_t step, pid, ps, interval, argc;
    int rc = get_varint(c, "time", &step);
    if (!rc)
        rc = get_bounded(c, "pid", 0, INT_MAX, &pid);
    if (!rc)
        rc = get_bounded(c, "page size", 512, (uint64_t)1 << 30, &ps);
    if (!rc && (ps & (ps - 1)))
        rc = damaged(c, "not a power of two: ", "page size");
    if (!rc)
        rc = get_varint(c, "interval", &interval);
    if (!rc)
        rc = header_string(t, c, "host", &t->info.host);
    if (!rc)
        rc = get_bounded(c, "argument count", 0, TL_ARGS_MAX, &argc);
    if (!rc && argc > c->end - c->pos)
        rc = damaged(c, "more than its record holds: ", "argument count");
    if (rc)
        return rc;
    t->argv = memdiff__arena_alloc(&t->arena, ((size_t)argc + 1) * sizeof *t->argv);
    if (!t->argv)
        return memdiff__set_error(MEMDIFF_ENOMEM, "timeline: out of memory");
    for (size_t i = 0; !rc && i < argc; i++)
        rc = header_string(t, c, "argument", &t->argv[i]);
    st->time = tl_unzigzag(step);
    t->info.pid = (int)pid;
    t->info.page_size = (uint32_t)ps;
    t->info.start_ns = st->time;
    t->info.interval_ns = interval;
    t->info.argv = t->argv;
    return rc;
}

/* The record at pos: its kind, and its payload as a cursor. 0 with *total = 0: the file ends
 * inside it (torn). Damage: MEMDIFF_EFORMAT. Needs the bytes in t (fill first). */
static int frame(const memdiff_timeline *t, size_t pos, size_t rec, cursor *c, size_t *total)
{
    *total = 0;
    memset(c, 0, sizeof *c);
    c->p = t->p;
    c->rec = rec;
    c->offset = pos;
    c->kind = t->p[pos];
    if (c->kind == 0)
        return damaged(c, "", "kind 0 is no record (zero bytes where a record should be)");
    size_t at = pos + 1;
    uint64_t len = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (at == t->n)
            return MEMDIFF_OK;
        unsigned char b = t->p[at++];
        len |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            break;
        if (shift == 28)
            return damaged(c, "", "the length takes more than 5 bytes");
    }
    if (t->n - at < TL_CRC_SIZE)
        return MEMDIFF_OK;
    uint32_t stored = get_le(t->p + at, 4), computed = memdiff__crc32(0, t->p + pos, at - pos);
    if (stored != computed)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "timeline: record %zu at offset %zu: head checksum mismatch "
                                  "(stored 0x%08X, computed 0x%08X): the file is corrupt",
                                  rec, pos, stored, computed);
    at += TL_CRC_SIZE;
    if (len > TL_PAYLOAD_MAX)
        return damaged(c, "", "the length is over 4 GiB");
    if (t->n - at < len + TL_CRC_SIZE)
        return MEMDIFF_OK;
    size_t end = at + (size_t)len;
    stored = get_le(t->p + end, 4);
    computed = memdiff__crc32(0, t->p + pos, end - pos);
    if (stored != computed)
        return memdiff__set_error(MEMDIFF_EFORMAT,
                                  "timeline: record %zu (%s) at offset %zu: checksum mismatch "
                                  "(stored 0x%08X, computed 0x%08X over %zu bytes): the file "
                                  "is corrupt",
                                  rec, kind_name(c->kind), pos, stored, computed, end - pos);
    c->pos = at;
    c->end = end;
    *total = end + TL_CRC_SIZE - pos;
    return MEMDIFF_OK;
}

static int read_all(memdiff_timeline *t)
{
    int rc = check_header(t);
    size_t pos = TL_HEADER_SIZE;
    tl_state st;
    memset(&st, 0, sizeof st);
    for (size_t rec = 0; !rc; rec++) {
        rc = fill(t, (uint64_t)pos + TL_HEAD_MAX);
        if (rc || t->n == pos)
            break;
        cursor c;
        size_t total;
        rc = frame(t, pos, rec, &c, &total);
        if (!rc && total == 0) {
            /* The head was whole: the rest of the record may still be coming in. */
            rc = fill(t, (uint64_t)pos + TL_HEAD_MAX + TL_PAYLOAD_MAX + TL_CRC_SIZE);
            if (!rc)
                rc = frame(t, pos, rec, &c, &total);
        }
        if (rc)
            break;
        if (total == 0) {
            if (rec == 0)
                return memdiff__set_error(MEMDIFF_EFORMAT, "timeline: truncated in its header "
                                                           "record (offset %zu, %zu bytes): "
                                                           "nothing was recorded",
                                          pos, t->n - pos);
            t->info.torn = 1;
            t->info.torn_offset = pos;
            break;
        }
        if (rec == 0) {
            if (c.kind != TL_KIND_HEADER)
                return damaged(&c, "", "the first record must be the header");
            rc = decode_header(t, &c, &st);
            t->first = pos + total;
        } else {
            rc = decode(&c, &st, NULL, NULL);
            switch (c.kind) {
            case TL_KIND_SAMPLE: t->info.samples++; break;
            case TL_KIND_MARK: t->info.marks++; break;
            case TL_KIND_EXIT: t->info.exits++; break;
            case TL_KIND_SNAPSHOT: {
                snap_ref *v = memdiff__arena_room(&t->arena, t->snaps, &t->snaps_cap,
                                                  t->info.snapshots, sizeof *v, 16);
                if (!v)
                    return memdiff__set_error(MEMDIFF_ENOMEM, "timeline: out of memory");
                t->snaps = v;
                v[t->info.snapshots].offset = pos;
                v[t->info.snapshots].index = rec;
                t->info.snapshots++;
                break;
            }
            default: t->info.skipped++; break;
            }
        }
        pos += total;
        t->info.records = rec + 1;
    }
    t->info.complete_bytes = pos;
    t->info.file_bytes = t->n;
    if (!rc && t->info.records == 0)
        rc = memdiff__set_error(MEMDIFF_EFORMAT, "timeline: ends after its 16-byte header, "
                                                 "before the header record: nothing was "
                                                 "recorded");
    return rc;
}

static int open_stream(FILE *in, const char *path, memdiff_timeline **out)
{
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff_timeline *t = memdiff__arena_alloc(&a, sizeof *t);
    if (!t) {
        memdiff__arena_release(&a);
        return memdiff__set_error(MEMDIFF_ENOMEM, "timeline: out of memory");
    }
    t->arena = a;
    t->in = in;
    int rc = read_all(t);
    t->in = NULL;
    if (rc) {
        if (path) {
            char why[600];
            snprintf(why, sizeof why, "%s", memdiff__last_error_raw());
            memdiff__set_error(rc, "%s: %s", path, why);
        }
        memdiff_timeline_free(t);
        return rc;
    }
    t->info.storage_bytes = memdiff__arena_footprint(&t->arena);
    memdiff_timeline_rewind(t);
    *out = t;
    return MEMDIFF_OK;
}

int memdiff_timeline_open_stream(FILE *stream, memdiff_timeline **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_open_stream: out is NULL");
    *out = NULL;
    if (!stream)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_open_stream: NULL stream");
    return open_stream(stream, NULL, out);
}

int memdiff_timeline_open(const char *path, memdiff_timeline **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_open: out is NULL");
    *out = NULL;
    if (!path)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_open: path is NULL");
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return memdiff__file_open_error("open", path, errno);
    int rc = open_stream(f, path, out);
    fclose(f);
    return rc;
}

void memdiff_timeline_free(memdiff_timeline *timeline)
{
    if (!timeline)
        return;
    memdiff__arena a = timeline->arena;
    memdiff__arena_release(&a);
}

int memdiff_timeline_get_info(const memdiff_timeline *timeline, memdiff_timeline_info *out)
{
    if (!timeline || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_get_info: NULL argument");
    *out = timeline->info;
    return MEMDIFF_OK;
}

void memdiff_timeline_rewind(memdiff_timeline *t)
{
    if (!t)
        return;
    t->pos = t->first;
    t->rec = 1;
    t->time = t->info.start_ns;
    memset(&t->totals, 0, sizeof t->totals);
    t->snap_no = 0;
}

int memdiff_timeline_next(memdiff_timeline *t, memdiff_timeline_record *out)
{
    if (!t || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_next: NULL argument");
    while (t->pos < t->info.complete_bytes) {
        cursor c;
        size_t total;
        int rc = frame(t, t->pos, t->rec, &c, &total);
        if (!rc && total == 0)
            rc = memdiff__set_error(MEMDIFF_EFORMAT, "timeline: record %zu changed", t->rec);
        tl_state st = {t->time, t->totals};
        if (!rc)
            rc = decode(&c, &st, out, t->label);
        if (rc)
            return rc; /* open checked this record: only a bug gets here */
        t->pos += total;
        t->rec++;
        t->time = st.time;
        t->totals = st.totals;
        if (c.kind > TL_KIND_KNOWN_MAX)
            continue;
        if (c.kind == TL_KIND_SNAPSHOT)
            out->snapshot = t->snap_no++;
        return 1;
    }
    return 0;
}

int memdiff_timeline_snapshot(const memdiff_timeline *t, size_t index, memdiff_snapshot **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_snapshot: out is NULL");
    *out = NULL;
    if (!t)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_snapshot: NULL timeline");
    if (index >= t->info.snapshots)
        return memdiff__set_error(MEMDIFF_ERANGE, "timeline: snapshot %zu of %zu", index,
                                  t->info.snapshots);
    const snap_ref *ref = &t->snaps[index];
    cursor c;
    size_t total, at = 0, len = 0;
    uint64_t step, encoding = 0;
    unsigned cause;
    int rc = frame(t, (size_t)ref->offset, (size_t)ref->index, &c, &total);
    if (!rc)
        rc = get_varint(&c, "time", &step);
    if (!rc)
        rc = decode_snapshot(&c, &cause, &encoding, &at, &len);
    if (!rc && encoding != TL_SNAPSHOT_FILE)
        return memdiff__set_error(MEMDIFF_ENOTSUP, "timeline: record %zu at offset %llu: the "
                                                   "snapshot is stored as encoding %llu, which "
                                                   "this version cannot read",
                                  (size_t)ref->index, (unsigned long long)ref->offset,
                                  (unsigned long long)encoding);
    if (!rc)
        rc = memdiff__snapshot_decode(t->p + at, len, out);
    if (rc == MEMDIFF_EFORMAT) {
        char why[600];
        snprintf(why, sizeof why, "%s", memdiff__last_error_raw());
        memdiff__set_error(rc, "timeline: record %zu (snapshot %zu) at offset %llu: the "
                               "snapshot file from offset %zu: %s",
                           (size_t)ref->index, index, (unsigned long long)ref->offset, at, why);
    }
    return rc;
}
