/* smaps.c - a test-side /proc/PID/smaps parser; see smaps.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smaps.h"

static int field(const char *line, const char *key, uint64_t *slot)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0 || line[n] != ':')
        return 0;
    unsigned long long kb = 0;
    if (sscanf(line + n + 1, "%llu kB", &kb) == 1)
        *slot = (uint64_t)kb * 1024;
    return 1;
}

/* "start-end perms offset dev inode   name": the header line of a mapping. */
static int header(const char *line, smaps_vma *v)
{
    unsigned long long s, e;
    int pos = 0;
    if (sscanf(line, "%llx-%llx %4s %*x %*x:%*x %*u%n", &s, &e, v->perms, &pos) != 3 ||
        pos == 0)
        return 0;
    const char *name = line + pos;
    while (*name == ' ')
        name++;
    size_t len = strcspn(name, "\n");
    v->start = s;
    v->end = e;
    v->name = strndup(name, len);
    return v->name != NULL;
}

int smaps_read_file(const char *path, smaps *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    char *line = NULL;
    size_t cap = 0, room = 0;
    int rc = 0;
    while (getline(&line, &cap, f) > 0) {
        smaps_vma *v = out->count ? &out->vma[out->count - 1] : NULL;
        smaps_vma fresh;
        memset(&fresh, 0, sizeof fresh);
        if (header(line, &fresh)) {
            if (out->count == room) {
                room = room ? room * 2 : 64;
                smaps_vma *nv = realloc(out->vma, room * sizeof *nv);
                if (!nv) {
                    free(fresh.name);
                    rc = -ENOMEM;
                    break;
                }
                out->vma = nv;
            }
            out->vma[out->count++] = fresh;
            continue;
        }
        if (!v) {
            rc = -EINVAL;
            break;
        }
        if (strncmp(line, "VmFlags:", 8) == 0) {
            snprintf(v->vmflags, sizeof v->vmflags, "%s", line + 8);
            v->vmflags[strcspn(v->vmflags, "\n")] = '\0';
            continue;
        }
        (void)(field(line, "Rss", &v->rss) || field(line, "Pss", &v->pss) ||
               field(line, "Shared_Clean", &v->shared_clean) ||
               field(line, "Shared_Dirty", &v->shared_dirty) ||
               field(line, "Private_Clean", &v->private_clean) ||
               field(line, "Private_Dirty", &v->private_dirty) || field(line, "Swap", &v->swap) ||
               field(line, "AnonHugePages", &v->anon_huge));
    }
    free(line);
    fclose(f);
    if (rc)
        smaps_free(out);
    return rc;
}

int smaps_read(int pid, smaps *out)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/smaps", pid);
    return smaps_read_file(path, out);
}

void smaps_free(smaps *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->vma[i].name);
    free(s->vma);
    s->vma = NULL;
    s->count = 0;
}

int smaps_has_flag(const smaps_vma *v, const char *flag)
{
    size_t n = strlen(flag);
    for (const char *p = v->vmflags; (p = strstr(p, flag)) != NULL; p += n)
        if ((p == v->vmflags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

int smaps_vma_equal(const smaps_vma *a, const smaps_vma *b)
{
    return a->start == b->start && a->end == b->end && a->rss == b->rss && a->pss == b->pss &&
           a->shared_clean == b->shared_clean && a->shared_dirty == b->shared_dirty &&
           a->private_clean == b->private_clean && a->private_dirty == b->private_dirty &&
           a->swap == b->swap && a->anon_huge == b->anon_huge;
}

const smaps_vma *smaps_find(const smaps *s, uint64_t addr)
{
    for (size_t i = 0; i < s->count; i++)
        if (s->vma[i].start <= addr && addr < s->vma[i].end)
            return &s->vma[i];
    return NULL;
}
