/*
 * system_write.c - a system snapshot into a system file (docs/file-format.md, "System files"):
 * header, the info, processes, physical-table and reconciliation sections, CRC-32. The writer
 * loads its own output back (system_read.c) before it hands it out, so that the loader's checks
 * define a valid file and every file written loads.
 */
#include <errno.h>
#include <string.h>

#include "system.h"

static void put_u(memdiff__wbuf *b, uint64_t v)
{
    memdiff__wbuf_varint(b, v);
}

static void put_i(memdiff__wbuf *b, int64_t v)
{
    memdiff__wbuf_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); /* zigzag */
}

/* A string: varint length, bytes. NULL (an absent string) is length 0 after a 0 flag. */
static void put_s(memdiff__wbuf *b, const char *s)
{
    size_t n = strlen(s ? s : "");
    if (n > MEMDIFF__SYS_MAX_STRING)
        n = MEMDIFF__SYS_MAX_STRING; /* longer strings are never made: a guard */
    put_u(b, n);
    memdiff__wbuf_put(b, s ? s : "", n);
}

static void put_opt(memdiff__wbuf *b, const char *s)
{
    put_u(b, s != NULL);
    if (s)
        put_s(b, s);
}

static void encode_info(memdiff__wbuf *b, const memdiff_system *s)
{
    const memdiff_system_info *in = &s->info;
    put_u(b, in->time_ns);
    put_u(b, in->duration_ns);
    put_u(b, in->processes_ns);
    put_u(b, in->phys_ns);
    put_s(b, in->host);
    put_u(b, in->page_size);
    put_s(b, in->boot_id);
    put_u(b, in->boot_time_s);
    put_u(b, in->clock_ticks);
    put_u(b, in->sources);
    put_u(b, (uint64_t)in->privileged);
    put_u(b, in->kernel_threads);
    put_opt(b, in->hidden);
    put_opt(b, in->degraded);
    put_u(b, (uint64_t)s->phys);
    put_u(b, in->phys_hole_frames);
    put_u(b, in->phys_conflict_frames);
}

static void encode_procs(memdiff__wbuf *b, const memdiff_system *s)
{
    put_u(b, s->nprocs);
    for (size_t i = 0; i < s->nprocs; i++) {
        const memdiff_sysproc *p = &s->procs[i];
        put_u(b, (uint64_t)p->pid);
        put_u(b, (uint64_t)p->ppid);
        put_u(b, p->uid);
        put_u(b, p->start_ticks);
        put_s(b, p->name);
        put_s(b, p->cmdline);
        put_u(b, (uint64_t)p->state);
        put_i(b, p->error);
        put_s(b, p->why);
        put_u(b, p->exact);
        const uint64_t v[8] = {p->rss_bytes,      p->pss_bytes,      p->uss_bytes,
                               p->swap_bytes,     p->swap_pss_bytes, p->rss_anon_bytes,
                               p->rss_file_bytes, p->rss_shmem_bytes};
        for (size_t k = 0; k < 8; k++)
            put_u(b, v[k]);
    }
}

static void encode_rows(memdiff__wbuf *b, const memdiff_system *s)
{
    put_u(b, s->nrows);
    for (size_t i = 0; i < s->nrows; i++) {
        const memdiff_phys_row *r = &s->rows[i];
        put_u(b, (uint64_t)r->kind);
        put_u(b, (uint64_t)r->owner);
        put_u(b, r->owner == MEMDIFF_OWNER_PROCESS ? (uint64_t)r->process : 0);
        put_u(b, r->frames);
    }
}

static void encode_reconcile(memdiff__wbuf *b, const memdiff_system *s)
{
    put_u(b, s->nrec);
    for (size_t i = 0; i < s->nrec; i++) {
        const memdiff_reconcile *r = &s->rec[i];
        put_s(b, r->name);
        put_s(b, r->rule);
        put_u(b, r->table_bytes);
        put_u(b, r->kernel_bytes);
        put_u(b, r->bound_bytes);
        put_u(b, (uint64_t)r->within);
    }
}

static void put_le(memdiff__wbuf *b, uint32_t v, unsigned bytes)
{
    unsigned char t[4];
    for (unsigned i = 0; i < bytes; i++)
        t[i] = (unsigned char)(v >> (8 * i));
    memdiff__wbuf_put(b, t, bytes);
}

/* The whole file of s into out (in scratch). */
static int encode(const memdiff_system *s, memdiff__arena *scratch, memdiff__wbuf *out)
{
    memdiff__wbuf f = {scratch, NULL, 0, 0, 0};
    memdiff__wbuf_put(&f, memdiff__sys_magic, sizeof memdiff__sys_magic);
    put_le(&f, MEMDIFF_SYSTEM_FILE_VERSION_MAJOR, 2);
    put_le(&f, MEMDIFF_SYSTEM_FILE_VERSION_MINOR, 2);
    put_le(&f, MEMDIFF__SYS_BOM, 4);
    void (*const enc[])(memdiff__wbuf *, const memdiff_system *) = {encode_info, encode_procs,
                                                                      encode_rows,
                                                                      encode_reconcile};
    for (unsigned tag = 1; tag <= MEMDIFF__SYS_TAG_KNOWN_MAX; tag++) {
        memdiff__wbuf sec = {scratch, NULL, 0, 0, 0};
        enc[tag - 1](&sec, s);
        if (sec.failed)
            return sec.failed;
        put_u(&f, tag);
        put_u(&f, sec.len);
        memdiff__wbuf_put(&f, sec.p, sec.len);
    }
    put_u(&f, MEMDIFF__SYS_TAG_END);
    if (f.failed)
        return f.failed;
    put_le(&f, memdiff__crc32(0, f.p, f.len), 4);
    *out = f;
    return f.failed;
}

int memdiff_system_save(const memdiff_system *system, FILE *out)
{
    if (!system || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_save: NULL argument");
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    memdiff__wbuf f;
    int rc = encode(system, &scratch, &f);
    memdiff_system *check = NULL;
    if (!rc)
        rc = memdiff__system_decode(f.p, f.len, &check);
    memdiff_system_free(check);
    if (!rc) {
        errno = 0;
        if (fwrite(f.p, 1, f.len, out) != f.len || fflush(out) != 0)
            rc = memdiff__set_error(MEMDIFF_EIO, "system file: write failed: %s",
                                    errno ? strerror(errno) : "stream error");
    }
    memdiff__arena_release(&scratch);
    return rc;
}

static int save(const void *system, FILE *out)
{
    return memdiff_system_save(system, out);
}

int memdiff_system_save_file(const memdiff_system *system, const char *path)
{
    return memdiff__save_file_atomic(path, "memdiff_system_save_file", save, system);
}
