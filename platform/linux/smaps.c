/*
 * smaps.c - figures per mapping from /proc/PID/smaps (Documentation/filesystems/proc.rst,
 * "smaps"): Rss and Referenced for reference-set brackets and working-set sizes (refs.c resets
 * them), Pss for snapshots that ask for PSS per mapping (MEMDIFF_SNAPSHOT_SMAPS_PSS).
 *
 * smaps is the only file that gives Pss per VMA: smaps_rollup sums it over the process, and
 * neither maps, PROCMAP_QUERY (6.11) nor pagemap carry it. The kernel walks each VMA's page
 * tables to print it (fs/proc/task_mmu.c, smaps_account()), asking every page's map count, and
 * prints the sum of page_size / map count rounded down to whole kB. The text is read whole,
 * bounded by MEMDIFF__LINUX_TEXT_MAX, through memdiff__linux_read_proc.
 */
#include <stddef.h>
#include <string.h>

#include "linux.h"

/* A "Key:   123 kB" line of smaps: the value in bytes into the usage field the key names. */
static void usage_field(const char *line, size_t len, memdiff__plat_usage *u)
{
    static const struct {
        const char *key;
        size_t offset;
    } keys[] = {
        {"Rss", offsetof(memdiff__plat_usage, rss)},
        {"Pss", offsetof(memdiff__plat_usage, pss)},
        {"Referenced", offsetof(memdiff__plat_usage, referenced)},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        size_t k = strlen(keys[i].key);
        if (len > k && memcmp(line, keys[i].key, k) == 0 && line[k] == ':') {
            uint64_t *slot = (uint64_t *)((char *)u + keys[i].offset);
            *slot += memdiff__linux_status_field(line, len, keys[i].key, 10) * 1024;
            return;
        }
    }
}

/* A mapping's header line ("start-end perms ..."): 1 with the range, else 0 (a field line). */
static int header_line(const char *line, size_t len, uint64_t *start, uint64_t *end)
{
    uint64_t v[2] = {0, 0};
    size_t i = 0;
    for (int f = 0; f < 2; f++) {
        size_t digits = 0;
        for (; i < len; i++, digits++) {
            unsigned c = (unsigned char)line[i], d;
            if (c >= '0' && c <= '9')
                d = c - '0';
            else if (c >= 'a' && c <= 'f')
                d = c - 'a' + 10;
            else
                break;
            v[f] = v[f] << 4 | d;
        }
        if (digits == 0 || digits > 16 || i >= len || line[i] != (f == 0 ? '-' : ' '))
            return 0;
        i++;
    }
    *start = v[0];
    *end = v[1];
    return 1;
}

/* Parses smaps (or smaps_rollup) text: per mapping into out[] when out is not NULL, and into
 * *total always. Returns the number of mappings. */
static size_t parse_smaps(const char *text, size_t len, memdiff__plat_usage *out,
                          memdiff__plat_usage *total)
{
    size_t n = 0;
    memdiff__plat_usage *cur = NULL;
    for (size_t i = 0; i < len;) {
        const char *line = text + i;
        const char *nl = memchr(line, '\n', len - i);
        size_t llen = nl ? (size_t)(nl - line) : len - i;
        uint64_t s, e;
        if (header_line(line, llen, &s, &e)) {
            cur = out ? &out[n] : NULL;
            if (cur) {
                memset(cur, 0, sizeof *cur);
                cur->start = s;
                cur->end = e;
            }
            n++;
        } else if (n > 0) {
            usage_field(line, llen, total);
            if (cur)
                usage_field(line, llen, cur);
        }
        i += llen + 1;
    }
    return n;
}

int memdiff__plat_refs_usage(memdiff__proc *proc, memdiff__arena *arena,
                             memdiff__plat_usage **out, size_t *count)
{
    size_t len = 0;
    *out = NULL;
    *count = 0;
    int rc = memdiff__linux_read_proc(proc, "smaps", MEMDIFF__LINUX_READ_ALL, &len);
    if (rc)
        return rc;
    memdiff__plat_usage total;
    memset(&total, 0, sizeof total);
    size_t n = parse_smaps(proc->text, len, NULL, &total);
    memdiff__plat_usage *v = memdiff__arena_alloc(arena, (n ? n : 1) * sizeof *v);
    if (!v)
        return MEMDIFF_ENOMEM;
    parse_smaps(proc->text, len, v, &total);
    *out = v;
    *count = n;
    return MEMDIFF_OK;
}

int memdiff__plat_refs_total(memdiff__proc *proc, memdiff__plat_usage *out)
{
    size_t len = 0;
    memset(out, 0, sizeof *out);
    /* smaps_rollup (4.14) sums in the kernel: one header line, the fields once. A missing file
     * of a live process (an older kernel, a fixture tree) sends us to smaps. */
    int rc = memdiff__linux_read_proc(proc, "smaps_rollup", MEMDIFF__LINUX_READ_ALL, &len);
    if (rc == MEMDIFF_ESRCH && memdiff__linux_alive(proc))
        rc = memdiff__linux_read_proc(proc, "smaps", MEMDIFF__LINUX_READ_ALL, &len);
    if (rc)
        return rc;
    parse_smaps(proc->text, len, NULL, out);
    return MEMDIFF_OK;
}

int memdiff__plat_mapping_pss(memdiff__proc *proc, memdiff__arena *arena,
                              memdiff__plat_usage **out, size_t *count)
{
    /* smaps' Pss is the kernel's own sum per VMA, exact to its kB: the usage read as is. */
    return memdiff__plat_refs_usage(proc, arena, out, count);
}
