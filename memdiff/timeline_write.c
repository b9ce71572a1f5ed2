/*
 * timeline_write.c - writing timeline files (memdiff_timeline_create and the adds).
 * docs/timeline-format.md is the specification; timeline_format.h holds what the reader shares.
 *
 * Append-only and flushed per record: each add encodes its record whole, writes it and flushes
 * the stream before it returns, so that a recorder killed at any moment leaves every record it
 * added readable and at most one record torn. After a write fails (a full disk) the writer adds
 * nothing more: bytes after a torn record could only be read as damage.
 *
 * Storage: the writer's struct and its record buffer live in its own arena; a snapshot record is
 * assembled in a scratch arena released after the write. It never calls malloc (stdio does, in
 * fopen).
 */
#include <errno.h>
#include <string.h>

#include "timeline_format.h"

typedef memdiff__wbuf tbuf;

struct memdiff_timeline_writer {
    memdiff__arena arena; /* holds this struct and its buffers */
    FILE *f;
    int own_file;         /* f was opened by create (path), closed by close */
    int failed;           /* the first write error; every later add returns it */
    tbuf pay, rec;        /* a small record's payload and its framing, reused */
    uint64_t bytes;       /* complete records written, the file header included */
    size_t records;
    uint64_t last_time;   /* the previous record's time (0 before the header) */
    memdiff_process_totals last; /* the previous sample's figures (0 before the first) */
    char path[512];       /* for messages: the path, or "timeline stream" */
};

static void put_string(tbuf *b, const char *s, size_t len)
{
    memdiff__wbuf_varint(b, len);
    memdiff__wbuf_put(b, s, len);
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Writes bytes and flushes; on failure the writer is failed for good. */
static int write_out(memdiff_timeline_writer *w, const void *p, size_t n, const char *what)
{
    errno = 0;
    if (n && fwrite(p, 1, n, w->f) != n)
        w->failed = MEMDIFF_EIO;
    else if (fflush(w->f) != 0)
        w->failed = MEMDIFF_EIO;
    if (!w->failed)
        return MEMDIFF_OK;
    return memdiff__set_error(MEMDIFF_EIO,
                              "%s: writing %s (record %zu at offset %llu) failed: %s; the file "
                              "holds the %zu records before it whole (%llu bytes), and perhaps "
                              "part of this one, which readers report as torn",
                              w->path, what, w->records, (unsigned long long)w->bytes,
                              errno ? strerror(errno) : "stream error", w->records,
                              (unsigned long long)w->bytes);
}

/* Frames payload[0..n) as a record of kind into rec and appends it: kind, length, head CRC,
 * payload, record CRC (timeline_format.h). One buffer, one write: a short write can only tear
 * it. */
static int emit(memdiff_timeline_writer *w, tbuf *rec, unsigned kind,
                const unsigned char *payload, size_t n, const char *what)
{
    if (w->failed)
        return memdiff__set_error(w->failed, "%s: an earlier write failed; nothing more is "
                                             "added",
                                  w->path);
    if ((uint64_t)n > TL_PAYLOAD_MAX)
        return memdiff__set_error(MEMDIFF_EINVAL, "%s: a %s record of %zu bytes is over the "
                                                  "format's 4 GiB",
                                  w->path, what, n);
    unsigned char head[TL_HEAD_MAX];
    head[0] = (unsigned char)kind;
    unsigned hl = 1 + memdiff__varint_encode(head + 1, n);
    put_le32(head + hl, memdiff__crc32(0, head, hl));
    hl += 4;
    rec->len = 0;
    memdiff__wbuf_put(rec, head, hl);
    memdiff__wbuf_put(rec, payload, n);
    memdiff__wbuf_put(rec, head, TL_CRC_SIZE); /* room for the CRC */
    if (rec->failed) {
        int rc = rec->failed;
        rec->failed = 0;
        return rc;
    }
    put_le32(rec->p + rec->len - TL_CRC_SIZE, memdiff__crc32(0, rec->p, rec->len - TL_CRC_SIZE));
    int rc = write_out(w, rec->p, rec->len, what);
    if (!rc) {
        w->bytes += rec->len;
        w->records++;
    }
    return rc;
}

/* The writer's payload buffer, emptied, beginning with the record's time step. */
static tbuf *small_payload(memdiff_timeline_writer *w, uint64_t time_ns)
{
    w->pay.len = 0;
    w->pay.failed = 0;
    memdiff__wbuf_varint(&w->pay, tl_zigzag(time_ns - w->last_time));
    return &w->pay;
}

/* Appends the record whose payload small_payload() began. */
static int finish(memdiff_timeline_writer *w, unsigned kind, uint64_t time_ns, const char *what)
{
    if (w->pay.failed)
        return w->pay.failed;
    int rc = emit(w, &w->rec, kind, w->pay.p, w->pay.len, what);
    if (!rc)
        w->last_time = time_ns;
    return rc;
}

static int header_record(memdiff_timeline_writer *w, const memdiff_timeline_header *h)
{
    char host[256];
    const char *hs = h->host;
    if (!hs) {
        memdiff__os_hostname(host, sizeof host);
        hs = host;
    }
    size_t argc = 0;
    for (; h->argv && h->argv[argc]; argc++)
        if (strnlen(h->argv[argc], TL_STRING_MAX + 1) > TL_STRING_MAX)
            return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_create: argument %zu "
                                                      "is longer than 64 KiB",
                                      argc);
    if (argc > TL_ARGS_MAX)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_create: more than %u "
                                                  "arguments",
                                  TL_ARGS_MAX);
    if (strnlen(hs, TL_STRING_MAX + 1) > TL_STRING_MAX)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_create: host name longer "
                                                  "than 64 KiB");
    if (h->pid < 0)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_create: pid %d", h->pid);
    uint32_t ps = h->page_size ? h->page_size : memdiff__os_page_size();
    if (ps < 512 || ps > (1u << 30) || (ps & (ps - 1)))
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_create: page size %u is "
                                                  "not a power of two in [512, 1 GiB]",
                                  (unsigned)ps);
    uint64_t start = h->start_ns ? h->start_ns : memdiff__os_time_ns();

    unsigned char fh[TL_HEADER_SIZE];
    memcpy(fh, tl_magic, sizeof tl_magic);
    fh[8] = MEMDIFF_TIMELINE_VERSION_MAJOR;
    fh[9] = 0;
    fh[10] = MEMDIFF_TIMELINE_VERSION_MINOR;
    fh[11] = 0;
    put_le32(fh + 12, TL_BYTE_ORDER_MARK);
    int rc = write_out(w, fh, sizeof fh, "the file header");
    if (rc)
        return rc;
    w->bytes = TL_HEADER_SIZE;

    tbuf *b = small_payload(w, start);
    memdiff__wbuf_varint(b, (uint64_t)h->pid);
    memdiff__wbuf_varint(b, ps);
    memdiff__wbuf_varint(b, h->interval_ns);
    put_string(b, hs, strlen(hs));
    memdiff__wbuf_varint(b, argc);
    for (size_t i = 0; i < argc; i++)
        put_string(b, h->argv[i], strlen(h->argv[i]));
    return finish(w, TL_KIND_HEADER, start, "the header record");
}

static int create(FILE *f, int own, const char *name, const memdiff_timeline_header *header,
                  memdiff_timeline_writer **out)
{
    memdiff_timeline_header defaults = MEMDIFF_TIMELINE_HEADER_INIT;
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff_timeline_writer *w = memdiff__arena_alloc(&a, sizeof *w);
    if (!w) {
        memdiff__arena_release(&a);
        if (own)
            fclose(f);
        return memdiff__set_error(MEMDIFF_ENOMEM, "memdiff_timeline_create: out of memory");
    }
    w->arena = a;
    w->pay.arena = w->rec.arena = &w->arena; /* the struct never moves: the pointer holds */
    w->f = f;
    w->own_file = own;
    snprintf(w->path, sizeof w->path, "%s", name);
    int rc = header_record(w, header ? header : &defaults);
    if (rc) {
        char why[600];
        snprintf(why, sizeof why, "%s", memdiff__last_error_raw());
        memdiff_timeline_close(w);
        return memdiff__set_error(rc, "%s", why);
    }
    *out = w;
    return MEMDIFF_OK;
}

int memdiff_timeline_create(const char *path, const memdiff_timeline_header *header,
                            memdiff_timeline_writer **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_create: out is NULL");
    *out = NULL;
    if (!path || !path[0])
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_create: %s path",
                                  path ? "empty" : "NULL");
    int rc = memdiff__check_save_target(path);
    if (rc)
        return rc;
    errno = 0;
    FILE *f = fopen(path, "wb");
    if (!f)
        return memdiff__file_open_error("create", path, errno);
    return create(f, 1, path, header, out);
}

int memdiff_timeline_create_stream(FILE *stream, const memdiff_timeline_header *header,
                                   memdiff_timeline_writer **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_create_stream: out is NULL");
    *out = NULL;
    if (!stream)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_create_stream: stream is "
                                                  "NULL");
    return create(stream, 0, "timeline stream", header, out);
}

int memdiff_timeline_add_sample(memdiff_timeline_writer *w, uint64_t time_ns,
                                const memdiff_process_totals *totals)
{
    if (!w || !totals)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_add_sample: NULL argument");
    const uint64_t now[TL_SAMPLE_FIELDS] = {totals->vm_size,  totals->vm_rss,   totals->vm_hwm,
                                            totals->rss_anon, totals->rss_file, totals->rss_shmem,
                                            totals->vm_pte,   totals->vm_swap};
    const uint64_t was[TL_SAMPLE_FIELDS] = {w->last.vm_size,  w->last.vm_rss,   w->last.vm_hwm,
                                            w->last.rss_anon, w->last.rss_file, w->last.rss_shmem,
                                            w->last.vm_pte,   w->last.vm_swap};
    unsigned mask = 0;
    for (unsigned i = 0; i < TL_SAMPLE_FIELDS; i++)
        if (now[i] != was[i])
            mask |= 1u << i;
    tbuf *b = small_payload(w, time_ns);
    memdiff__wbuf_varint(b, mask);
    for (unsigned i = 0; i < TL_SAMPLE_FIELDS; i++)
        if (mask & (1u << i))
            memdiff__wbuf_varint(b, tl_zigzag(now[i] - was[i]));
    int rc = finish(w, TL_KIND_SAMPLE, time_ns, "a sample");
    if (!rc)
        w->last = *totals;
    return rc;
}

int memdiff_timeline_add_snapshot(memdiff_timeline_writer *w, const memdiff_snapshot *snapshot,
                                  unsigned cause)
{
    if (!w || !snapshot)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_add_snapshot: NULL argument");
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    const unsigned char *file;
    size_t n;
    int rc = memdiff__snapshot_encode(snapshot, &scratch, &file, &n);
    if (!rc) {
        uint64_t t = snapshot->info.time_ns;
        tbuf b = {&scratch, NULL, 0, 0, 0}, rec = b;
        memdiff__wbuf_varint(&b, tl_zigzag(t - w->last_time));
        memdiff__wbuf_varint(&b, cause);
        memdiff__wbuf_varint(&b, TL_SNAPSHOT_FILE);
        memdiff__wbuf_varint(&b, n);
        memdiff__wbuf_put(&b, file, n);
        rc = b.failed ? b.failed : emit(w, &rec, TL_KIND_SNAPSHOT, b.p, b.len, "a snapshot");
        if (!rc)
            w->last_time = t;
    }
    memdiff__arena_release(&scratch);
    return rc;
}

int memdiff_timeline_add_mark(memdiff_timeline_writer *w, uint64_t time_ns, int pid,
                              const char *label)
{
    if (!w || !label)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_add_mark: NULL argument");
    tbuf *b = small_payload(w, time_ns);
    memdiff__wbuf_varint(b, pid > 0 ? (uint64_t)pid : 0);
    put_string(b, label, strnlen(label, MEMDIFF_MARK_LABEL_MAX));
    return finish(w, TL_KIND_MARK, time_ns, "a mark");
}

int memdiff_timeline_add_exit(memdiff_timeline_writer *w, uint64_t time_ns, memdiff_exit_how how,
                              int code)
{
    if (!w)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_add_exit: NULL writer");
    if (how < MEMDIFF_EXIT_STATUS || how > MEMDIFF_EXIT_DETACHED)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_timeline_add_exit: how %d",
                                  (int)how);
    tbuf *b = small_payload(w, time_ns);
    memdiff__wbuf_varint(b, (uint64_t)how);
    memdiff__wbuf_varint(b, tl_zigzag((uint64_t)(int64_t)code));
    return finish(w, TL_KIND_EXIT, time_ns, "the exit record");
}

uint64_t memdiff_timeline_writer_bytes(const memdiff_timeline_writer *w)
{
    return w ? w->bytes : 0;
}

int memdiff_timeline_close(memdiff_timeline_writer *w)
{
    if (!w)
        return MEMDIFF_OK;
    int rc = w->failed;
    errno = 0;
    if (w->own_file) {
        if (fclose(w->f) != 0 && !rc)
            rc = memdiff__set_error(MEMDIFF_EIO, "%s: closing failed: %s", w->path,
                                    errno ? strerror(errno) : "stream error");
    } else if (!rc && fflush(w->f) != 0) {
        rc = memdiff__set_error(MEMDIFF_EIO, "%s: flushing failed: %s", w->path,
                                errno ? strerror(errno) : "stream error");
    }
    if (w->failed)
        memdiff__set_error(rc, "%s: an earlier write failed; the file ends with the last "
                               "record written whole (%llu bytes)",
                           w->path, (unsigned long long)w->bytes);
    memdiff__arena a = w->arena;
    memdiff__arena_release(&a);
    return rc;
}
