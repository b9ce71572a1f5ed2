/*
 * json_target.c - the process json_schema_check.py measures (docs/json-report.md):
 *
 *   memdiff_json_target serve DIR   maps every file in DIR (names the test chose: newline,
 *                                   quote, backslash, ESC, invalid UTF-8), says "ready", then
 *                                   reads commands: g grows the heap by 4 MiB, q quits
 *   memdiff_json_target docs        writes the JSON documents only the library writes, one
 *                                   after the other: a reference-set bracket's diff (pretty and
 *                                   one line) and a snapshot of itself per region on one line
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memdiff.h"

static volatile unsigned char sink;

static int serve(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0)
            return 1;
        const unsigned char *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
            return 1;
        sink = p[0]; /* resident: the file shows as a block of its own */
        close(fd);
    }
    closedir(d);
    printf("ready\n");
    fflush(stdout);
    for (int c; (c = getchar()) != EOF && c != 'q';) {
        if (c != 'g')
            continue;
        char *grow = malloc(4u << 20);
        if (!grow)
            return 1;
        memset(grow, 1, 4u << 20); /* kept: the growth stays for the next snapshots */
        printf("ok\n");
        fflush(stdout);
    }
    return 0;
}

static int docs(void)
{
    memdiff_bracket_options bo = MEMDIFF_BRACKET_OPTIONS_INIT;
    bo.flags = MEMDIFF_BRACKET_REFSET;
    memdiff_bracket *b = NULL;
    memdiff_diff *d = NULL;
    if (memdiff_bracket_begin(&bo, &b) != MEMDIFF_OK)
        return 1;
    char *p = malloc(1u << 20);
    if (!p)
        return 1;
    memset(p, 1, 1u << 20);
    if (memdiff_bracket_end(b, &d) != MEMDIFF_OK)
        return 1;
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    int rc = memdiff_report_json(d, stdout, &o);
    o.flags = MEMDIFF_REPORT_LINE;
    rc |= memdiff_report_json(d, stdout, &o);
    memdiff_diff_free(d);
    memdiff_bracket_free(b);
    free(p);

    memdiff_options so;
    memdiff_options_init(&so);
    so.depth = MEMDIFF_DEPTH_DEEP;
    memdiff_snapshot *s = NULL;
    if (memdiff_snapshot_take(&so, &s) != MEMDIFF_OK)
        return 1;
    o.flags = MEMDIFF_REPORT_LINE | MEMDIFF_REPORT_REGIONS;
    rc |= memdiff_snapshot_report_json(s, stdout, &o);
    memdiff_snapshot_free(s);
    return rc != MEMDIFF_OK;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "serve") == 0)
        return serve(argv[2]);
    if (argc == 2 && strcmp(argv[1], "docs") == 0)
        return docs();
    fprintf(stderr, "usage: memdiff_json_target serve DIR | docs\n");
    return 2;
}
