/* fixture_tree.c - expanding a recorded /proc tree; see fixture_tree.h. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_tree.h"

static const char *walk_src, *walk_dst;
static char *walk_err;
static size_t walk_err_size;

static int fail(const char *what, const char *path)
{
    snprintf(walk_err, walk_err_size, "%s %s: %s", what, path, strerror(errno ? errno : EINVAL));
    return -1;
}

/* "index count value step" (hex) lines: entry index + k holds value + k * step. */
static int expand_runs(const char *from, const char *to)
{
    FILE *in = fopen(from, "r");
    if (!in)
        return fail("open", from);
    int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        fclose(in);
        return fail("create", to);
    }
    char line[256];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, in)) {
        unsigned long long index, count, value, step;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%llx %llx %llx %llx", &index, &count, &value, &step) != 4) {
            errno = EINVAL;
            rc = fail("malformed run in", from);
            break;
        }
        for (unsigned long long k = 0; k < count && rc == 0; k++) {
            uint64_t e = value + k * step; /* little endian, as the kernel's files on x86 */
            unsigned char b[8];
            for (int i = 0; i < 8; i++)
                b[i] = (unsigned char)(e >> (8 * i));
            if (pwrite(fd, b, 8, (off_t)((index + k) * 8)) != 8)
                rc = fail("write", to);
        }
    }
    fclose(in);
    if (close(fd) != 0 && rc == 0)
        rc = fail("close", to);
    return rc;
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return fail("open", from);
    FILE *out = fopen(to, "wb");
    if (!out) {
        fclose(in);
        return fail("create", to);
    }
    char buf[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            rc = fail("write", to);
    fclose(in);
    if (fclose(out) != 0 && rc == 0)
        rc = fail("close", to);
    return rc;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    char to[PATH_MAX];
    const char *rel = path + strlen(walk_src);
    if (snprintf(to, sizeof to, "%s%s", walk_dst, rel) >= (int)sizeof to)
        return fail("path too long:", path);
    if (type == FTW_D)
        return mkdir(to, 0755) == 0 || errno == EEXIST ? 0 : fail("mkdir", to);
    if (type != FTW_F)
        return 0;
    size_t len = strlen(to);
    if (len > 5 && strcmp(to + len - 5, ".runs") == 0) {
        to[len - 5] = '\0';
        return expand_runs(path, to);
    }
    return copy_file(path, to);
}

char *fixture_tree_expand(const char *src, char *err, size_t err_size)
{
    char tmpl[] = "/tmp/memdiff-fixture-XXXXXX";
    if (!mkdtemp(tmpl)) {
        snprintf(err, err_size, "mkdtemp: %s", strerror(errno));
        return NULL;
    }
    walk_src = src;
    walk_dst = tmpl;
    walk_err = err;
    walk_err_size = err_size;
    err[0] = '\0';
    if (nftw(src, visit, 16, FTW_PHYS) != 0) {
        if (!err[0])
            snprintf(err, err_size, "walk %s: %s", src, strerror(errno));
        char *p = strdup(tmpl);
        fixture_tree_remove(p);
        return NULL;
    }
    return strdup(tmpl);
}

static int unlink_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

void fixture_tree_remove(char *path)
{
    if (path && strncmp(path, "/tmp/memdiff-fixture-", 21) == 0)
        nftw(path, unlink_one, 16, FTW_DEPTH | FTW_PHYS);
    free(path);
}
