/*
 * system_read.c - a system file into a system snapshot, trusting nothing: the header first
 * (magic, major version, byte-order marker), the checksum over the whole file before any field
 * is read, then each section with every count bounded by the bytes left (a process takes 18
 * bytes at least, a row 4, a reconciled figure 6), every enum, order and string checked, and
 * the memory the result takes bounded by MEMDIFF__SYS_LOAD_FACTOR x the file's size +
 * MEMDIFF__SYS_LOAD_FLOOR before it is allocated. Derived figures (the counts of processes by
 * state, the table's frame count, rows' bytes and process identities) are computed again, not
 * read.
 */
#include <errno.h>
#include <string.h>

#include "system.h"

#define READ_PIECE ((size_t)1 << 20)

/* Here, not in the writer: calls go writer -> reader only. */
const unsigned char memdiff__sys_magic[8] = {'M', 'E', 'M', 'D', 'S', 'Y', 'S', '\0'};

typedef struct rd {
    const unsigned char *p;
    size_t pos, end;
    const char *what; /* the section, for messages */
} rd;

static int bad(const rd *r, const char *why)
{
    return memdiff__set_error(MEMDIFF_EFORMAT, "system file: %s at byte %zu: %s", r->what,
                              r->pos, why);
}

static int get_u(rd *r, uint64_t *out)
{
    uint64_t v = 0;
    *out = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (r->pos >= r->end)
            return bad(r, "truncated");
        unsigned char c = r->p[r->pos++];
        if (shift == 63 && c > 1)
            return bad(r, "varint too large");
        v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return MEMDIFF_OK;
        }
    }
    return bad(r, "varint too long");
}

static int get_max(rd *r, uint64_t max, uint64_t *out)
{
    int rc = get_u(r, out);
    if (!rc && *out > max)
        return bad(r, "value out of range");
    return rc;
}

/* A count of records of at least min_each bytes each, bounded by the bytes left. */
static int get_count(rd *r, size_t min_each, size_t *out)
{
    uint64_t n;
    *out = 0;
    int rc = get_u(r, &n);
    if (rc)
        return rc;
    if (n > (r->end - r->pos) / min_each)
        return bad(r, "count larger than the bytes left allow");
    *out = (size_t)n;
    return MEMDIFF_OK;
}

static int get_s(rd *r, memdiff_system *s, const char **out)
{
    uint64_t n;
    int rc = get_max(r, MEMDIFF__SYS_MAX_STRING, &n);
    if (rc)
        return rc;
    if (n > r->end - r->pos)
        return bad(r, "string longer than the bytes left");
    if (memchr(r->p + r->pos, '\0', (size_t)n))
        return bad(r, "NUL inside a string");
    *out = memdiff__arena_strndup(&s->arena, (const char *)r->p + r->pos, (size_t)n);
    r->pos += (size_t)n;
    return *out ? MEMDIFF_OK : MEMDIFF_ENOMEM;
}

static int get_opt(rd *r, memdiff_system *s, const char **out)
{
    uint64_t has;
    int rc = get_max(r, 1, &has);
    *out = NULL;
    if (!rc && has)
        rc = get_s(r, s, out);
    return rc;
}

static int parse_info(rd *r, memdiff_system *s)
{
    memdiff_system_info *in = &s->info;
    uint64_t v[4], ps, ticks, src, priv, kthreads, phys;
    int rc = MEMDIFF_OK;
    for (int i = 0; !rc && i < 4; i++)
        rc = get_u(r, &v[i]);
    if (!rc)
        rc = get_s(r, s, &in->host);
    if (!rc)
        rc = get_u(r, &ps);
    if (!rc && (ps < 512 || ps > ((uint64_t)1 << 30) || (ps & (ps - 1))))
        return bad(r, "page size is no power of two in [512, 1 GiB]");
    if (!rc)
        rc = get_s(r, s, &in->boot_id);
    if (!rc)
        rc = get_u(r, &in->boot_time_s);
    if (!rc)
        rc = get_max(r, UINT32_MAX, &ticks);
    if (!rc)
        rc = get_max(r, UINT32_MAX, &src);
    if (!rc)
        rc = get_max(r, 1, &priv);
    if (!rc)
        rc = get_max(r, SIZE_MAX, &kthreads);
    if (!rc)
        rc = get_opt(r, s, &in->hidden);
    if (!rc)
        rc = get_opt(r, s, &in->degraded);
    if (!rc)
        rc = get_max(r, 1, &phys);
    if (!rc)
        rc = get_u(r, &in->phys_hole_frames);
    if (!rc)
        rc = get_u(r, &in->phys_conflict_frames);
    if (rc)
        return rc;
    in->time_ns = v[0];
    in->duration_ns = v[1];
    in->processes_ns = v[2];
    in->phys_ns = v[3];
    in->page_size = (uint32_t)ps;
    in->clock_ticks = (uint32_t)ticks;
    in->sources = (unsigned)src;
    in->privileged = (int)priv;
    in->kernel_threads = (size_t)kthreads;
    s->phys = (int)phys;
    return MEMDIFF_OK;
}

static int parse_procs(rd *r, memdiff_system *s)
{
    size_t n = 0;
    int rc = get_count(r, 18, &n);
    if (rc)
        return rc;
    s->procs = memdiff__arena_alloc(&s->arena, (n ? n : 1) * sizeof *s->procs);
    if (!s->procs)
        return MEMDIFF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        memdiff_sysproc *p = &s->procs[i];
        uint64_t pid, ppid, uid, state, err, exact, v[8];
        rc = get_max(r, INT32_MAX, &pid);
        if (!rc)
            rc = get_max(r, INT32_MAX, &ppid);
        if (!rc)
            rc = get_max(r, UINT32_MAX, &uid);
        if (!rc)
            rc = get_u(r, &p->start_ticks);
        if (!rc)
            rc = get_s(r, s, &p->name);
        if (!rc)
            rc = get_s(r, s, &p->cmdline);
        if (!rc)
            rc = get_max(r, MEMDIFF_SYSPROC_EXITED, &state);
        if (!rc)
            rc = get_max(r, 64, &err); /* zigzag of a status: -32 .. 0 */
        if (!rc)
            rc = get_s(r, s, &p->why);
        if (!rc)
            rc = get_max(r, 0x7F, &exact);
        for (size_t k = 0; !rc && k < 8; k++)
            rc = get_u(r, &v[k]);
        if (rc)
            return rc;
        if (pid == 0 || (i && (int)pid <= s->procs[i - 1].pid))
            return bad(r, "processes not in ascending pid order");
        int64_t status = (int64_t)(err >> 1) ^ -(int64_t)(err & 1);
        if (status > 0 || (state == MEMDIFF_SYSPROC_UNREADABLE) != (status != 0))
            return bad(r, "error status does not fit the state");
        p->pid = (int)pid;
        p->ppid = (int)ppid;
        p->uid = (uint32_t)uid;
        p->state = (memdiff_sysproc_state)state;
        p->error = (int)status;
        p->exact = (unsigned)exact;
        p->rss_bytes = v[0];
        p->pss_bytes = v[1];
        p->uss_bytes = v[2];
        p->swap_bytes = v[3];
        p->swap_pss_bytes = v[4];
        p->rss_anon_bytes = v[5];
        p->rss_file_bytes = v[6];
        p->rss_shmem_bytes = v[7];
        s->nprocs++;
    }
    return MEMDIFF_OK;
}

static int parse_rows(rd *r, memdiff_system *s)
{
    size_t n = 0;
    int rc = get_count(r, 4, &n);
    if (rc)
        return rc;
    if (n && !s->phys)
        return bad(r, "rows of a snapshot without a physical table");
    s->rows = memdiff__arena_alloc(&s->arena, (n ? n : 1) * sizeof *s->rows);
    if (!s->rows)
        return MEMDIFF_ENOMEM;
    uint64_t ps = s->info.page_size, total = 0;
    for (size_t i = 0; i < n; i++) {
        memdiff_phys_row *row = &s->rows[i];
        uint64_t kind, owner, proc, frames;
        rc = get_max(r, MEMDIFF_FRAME_KIND_COUNT - 1, &kind);
        if (!rc)
            rc = get_max(r, MEMDIFF_OWNER_COUNT - 1, &owner);
        if (!rc)
            rc = get_u(r, &proc);
        if (!rc)
            rc = get_u(r, &frames);
        if (rc)
            return rc;
        if (owner == MEMDIFF_OWNER_PROCESS ? proc >= s->nprocs : proc != 0)
            return bad(r, "row names no process of the file");
        if (owner == MEMDIFF_OWNER_PROCESS && s->procs[proc].state != MEMDIFF_SYSPROC_READ)
            return bad(r, "row of a process that was not read");
        if (frames == 0 || frames > UINT64_MAX / ps || total + frames < total)
            return bad(r, "frame count out of range");
        row->kind = (memdiff_frame_kind)kind;
        row->owner = (memdiff_frame_owner)owner;
        row->process = owner == MEMDIFF_OWNER_PROCESS ? (size_t)proc : (size_t)-1;
        if (i) {
            const memdiff_phys_row *q = &s->rows[i - 1];
            int order = q->kind != row->kind ? (q->kind < row->kind ? -1 : 1)
                        : q->owner != row->owner ? (q->owner < row->owner ? -1 : 1)
                        : q->process < row->process ? -1
                                                    : 1;
            if (order >= 0 || (q->kind == row->kind && q->owner == row->owner &&
                               q->process == row->process))
                return bad(r, "rows out of order or repeated");
        }
        row->frames = frames;
        row->bytes = frames * ps;
        total += frames;
        s->nrows++;
    }
    s->info.phys_frames = total;
    return MEMDIFF_OK;
}

static int parse_reconcile(rd *r, memdiff_system *s)
{
    size_t n = 0;
    int rc = get_count(r, 6, &n);
    if (rc)
        return rc;
    s->rec = memdiff__arena_alloc(&s->arena, (n ? n : 1) * sizeof *s->rec);
    if (!s->rec)
        return MEMDIFF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        memdiff_reconcile *c = &s->rec[i];
        uint64_t within;
        rc = get_s(r, s, &c->name);
        if (!rc)
            rc = get_s(r, s, &c->rule);
        if (!rc)
            rc = get_u(r, &c->table_bytes);
        if (!rc)
            rc = get_u(r, &c->kernel_bytes);
        if (!rc)
            rc = get_u(r, &c->bound_bytes);
        if (!rc)
            rc = get_max(r, 1, &within);
        if (rc)
            return rc;
        c->within = (int)within;
        s->nrec++;
    }
    return MEMDIFF_OK;
}

static unsigned get_le(const unsigned char *p, unsigned bytes)
{
    unsigned v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v |= (unsigned)p[i] << (8 * i);
    return v;
}

/* The memory the sections' records will take, against the bound, before any is allocated. */
static int within_budget(const unsigned char *p, size_t n, const size_t *off, const size_t *len)
{
    uint64_t budget = (uint64_t)n * MEMDIFF__SYS_LOAD_FACTOR + MEMDIFF__SYS_LOAD_FLOOR;
    static const size_t each[] = {0, 0, sizeof(memdiff_sysproc), sizeof(memdiff_phys_row),
                                  sizeof(memdiff_reconcile)};
    uint64_t need = 0;
    for (unsigned tag = MEMDIFF__SYS_TAG_PROCS; tag <= MEMDIFF__SYS_TAG_KNOWN_MAX; tag++) {
        if (!len[tag])
            continue;
        rd r = {p, off[tag], off[tag] + len[tag], "section"};
        uint64_t count;
        if (get_u(&r, &count))
            return MEMDIFF_EFORMAT;
        need += MEMDIFF__MIN(count, (uint64_t)len[tag]) * each[tag];
    }
    /* Strings take their bytes and a terminator: at most twice the file. */
    need += (uint64_t)n * 2;
    if (need > budget)
        return memdiff__set_error(MEMDIFF_EFORMAT, "system file: its records would take %llu "
                                                   "bytes of memory, over the bound of %llu",
                                  (unsigned long long)need, (unsigned long long)budget);
    return MEMDIFF_OK;
}

static int parse(const unsigned char *p, size_t n, memdiff_system *s)
{
    rd hdr = {p, 0, n, "header"};
    if (n < MEMDIFF__SYS_HEADER || memcmp(p, memdiff__sys_magic, 8) != 0)
        return bad(&hdr, n < 8 ? "too short for a system file" : "not a system file (magic)");
    if (get_le(p + 12, 4) != MEMDIFF__SYS_BOM)
        return bad(&hdr, "byte-order marker is not 0x0A0B0C0D");
    unsigned major = get_le(p + 8, 2);
    if (major != MEMDIFF_SYSTEM_FILE_VERSION_MAJOR)
        return memdiff__set_error(MEMDIFF_EFORMAT, "system file: version %u.%u, this library "
                                                   "reads %u.x",
                                  major, get_le(p + 10, 2), MEMDIFF_SYSTEM_FILE_VERSION_MAJOR);
    if (n < MEMDIFF__SYS_HEADER + 5)
        return bad(&hdr, "truncated after the header");
    uint32_t crc = (uint32_t)get_le(p + n - 4, 4);
    if (memdiff__crc32(0, p, n - 4) != crc)
        return memdiff__set_error(MEMDIFF_EFORMAT, "system file: checksum mismatch (damaged "
                                                   "or truncated)");
    size_t off[MEMDIFF__SYS_TAG_KNOWN_MAX + 1] = {0}, len[MEMDIFF__SYS_TAG_KNOWN_MAX + 1] = {0};
    rd r = {p, MEMDIFF__SYS_HEADER, n - 4, "section list"};
    uint64_t last = 0;
    for (;;) {
        uint64_t tag, l;
        int rc = get_u(&r, &tag);
        if (rc)
            return rc;
        if (tag == MEMDIFF__SYS_TAG_END)
            break;
        if (tag <= last)
            return bad(&r, "sections out of order");
        last = tag;
        if ((rc = get_u(&r, &l)))
            return rc;
        if (l > r.end - r.pos)
            return bad(&r, "section longer than the file");
        if (tag <= MEMDIFF__SYS_TAG_KNOWN_MAX) {
            off[tag] = r.pos;
            len[tag] = (size_t)l;
        } /* a newer minor's section: skipped */
        r.pos += (size_t)l;
    }
    if (r.pos != r.end)
        return bad(&r, "bytes after the end of the section list");
    for (unsigned tag = 1; tag <= MEMDIFF__SYS_TAG_KNOWN_MAX; tag++)
        if (!off[tag])
            return bad(&r, "a required section is missing");
    int rc = within_budget(p, n, off, len);
    static const char *const names[] = {"", "info", "processes", "physical table",
                                        "reconciliation"};
    int (*const parsers[])(rd *, memdiff_system *) = {NULL, parse_info, parse_procs,
                                                       parse_rows, parse_reconcile};
    for (unsigned tag = 1; !rc && tag <= MEMDIFF__SYS_TAG_KNOWN_MAX; tag++) {
        rd sec = {p, off[tag], off[tag] + len[tag], names[tag]};
        rc = parsers[tag](&sec, s); /* bytes left after the known fields: a newer minor's */
    }
    if (rc)
        return rc;
    memdiff__system_tally(s);
    s->info.storage_bytes = memdiff__arena_footprint(&s->arena);
    return MEMDIFF_OK;
}

int memdiff__system_decode(const unsigned char *p, size_t n, memdiff_system **out)
{
    *out = NULL;
    memdiff_system *s = memdiff__system_new();
    if (!s)
        return MEMDIFF_ENOMEM;
    int rc = parse(p, n, s);
    if (rc) {
        memdiff_system_free(s);
        return rc;
    }
    *out = s;
    return MEMDIFF_OK;
}

int memdiff_system_file_sniff(const void *head, size_t len)
{
    return head && len >= sizeof memdiff__sys_magic &&
           memcmp(head, memdiff__sys_magic, sizeof memdiff__sys_magic) == 0;
}

int memdiff_system_load(FILE *in, memdiff_system **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_load: out is NULL");
    *out = NULL;
    if (!in)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_load: in is NULL");
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    unsigned char *p = NULL;
    size_t n = 0, cap = 0;
    int rc = MEMDIFF_OK;
    for (;;) {
        if (n == cap) {
            if (cap > MEMDIFF__SYS_MAX_FILE) {
                rc = memdiff__set_error(MEMDIFF_EFORMAT, "system file: larger than %llu bytes: "
                                                         "refused",
                                        (unsigned long long)MEMDIFF__SYS_MAX_FILE);
                break;
            }
            size_t ncap = cap ? cap * 2 : 64 * 1024;
            unsigned char *v = memdiff__arena_grow_raw(&scratch, p, cap, ncap);
            if (!v) {
                rc = MEMDIFF_ENOMEM;
                break;
            }
            p = v;
            cap = ncap;
        }
        size_t want = MEMDIFF__MIN(cap - n, READ_PIECE);
        size_t got = fread(p + n, 1, want, in);
        n += got;
        if (got < want) {
            if (ferror(in))
                rc = memdiff__set_error(MEMDIFF_EIO, "system file: read error after %zu bytes: "
                                                     "%s",
                                        n, strerror(errno));
            break;
        }
        if (n == MEMDIFF__SYS_HEADER && memcmp(p, memdiff__sys_magic, 8) != 0)
            break; /* not a system file: said after 16 bytes, whatever follows */
    }
    if (!rc)
        rc = memdiff__system_decode(p, n, out);
    memdiff__arena_release(&scratch);
    return rc;
}

static int load(FILE *in, void *out)
{
    return memdiff_system_load(in, out);
}

int memdiff_system_load_file(const char *path, memdiff_system **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_system_load_file: out is NULL");
    *out = NULL;
    return memdiff__load_file(path, "memdiff_system_load_file", load, out);
}
