/* scenario_util.c - helpers for the real-process scenarios; see scenario_util.h. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scenario_util.h"
#include "suites.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

size_t scn_page(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

void *scn_map(size_t npages, int prot, int flags, int fd, off_t offset)
{
    size_t ps = scn_page();
    char *r = mmap(NULL, (npages + 2) * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_msg(r != MAP_FAILED, "reserve %zu pages: %s", npages + 2, strerror(errno));
    char *p = mmap(r + ps, npages * ps, prot, flags | MAP_FIXED, fd, offset);
    ck_assert_msg(p == r + ps, "map %zu pages: %s", npages, strerror(errno));
    if (!(flags & MAP_SHARED))
        (void)madvise(p, npages * ps, MADV_NOHUGEPAGE);
    return p;
}

uint64_t scn_pagemap_entry(const void *addr)
{
    size_t ps = scn_page();
    int fd = open("/proc/self/pagemap", O_RDONLY);
    ck_assert_msg(fd >= 0, "open /proc/self/pagemap: %s", strerror(errno));
    uint64_t e = 0;
    ck_assert_int_eq(pread(fd, &e, sizeof e, (off_t)((uintptr_t)addr / ps * 8)),
                     (ssize_t)sizeof e);
    close(fd);
    return e;
}

int scn_zero_page_on_read(void)
{
    static int known = -1;
    if (known >= 0)
        return known;
    size_t ps = scn_page();
    volatile char *p = mmap(NULL, ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_msg(p != MAP_FAILED, "map a page: %s", strerror(errno));
    (void)p[0];
    uint64_t e = scn_pagemap_entry((const void *)p);
    munmap((void *)p, ps);
    ck_assert_msg(e >> 63, "a page just read is not present: pagemap entry 0x%llx",
                  (unsigned long long)e);
    known = !(e >> 56 & 1);
    return known;
}

void scn_unmap(void *p, size_t npages)
{
    size_t ps = scn_page();
    ck_assert_int_eq(munmap((char *)p - ps, (npages + 2) * ps), 0);
}

memdiff_snapshot *scn_snap(memdiff_depth depth)
{
    memdiff_snapshot *s = NULL;
    int rc = memdiff_snapshot_self(depth, &s);
    ck_assert_msg(rc == MEMDIFF_OK, "snapshot (%s): %s: %s", memdiff_depth_name(depth),
                  memdiff_status_name(rc), memdiff_last_error());
    ck_assert_ptr_nonnull(s);
    return s;
}

memdiff_diff *scn_compare(const memdiff_snapshot *a, const memdiff_snapshot *b, unsigned flags)
{
    memdiff_diff *d = NULL;
    int rc = memdiff_compare(a, b, flags, &d);
    ck_assert_msg(rc == MEMDIFF_OK, "compare: %s: %s", memdiff_status_name(rc),
                  memdiff_last_error());
    ck_assert_ptr_nonnull(d);
    if (getenv("MEMDIFF_SCN_DEBUG")) {
        char *r = scn_report(d, 0);
        fprintf(stderr, "%s\n", r);
        free(r);
    }
    return d;
}

static char block_buf[512];

const char *scn_block_str(const memdiff_block *b)
{
    size_t ps = scn_page();
    const memdiff_totals *t = &b->totals;
    snprintf(block_buf, sizeof block_buf,
             "0x%llx-0x%llx %s '%s' %s presence=%u new=%llup (%llup private) "
             "freed=%llup (unmapped %llup, discarded %llup, swapped %llup) replaced=%llup "
             "became-private=%llup became-shared=%llup",
             (unsigned long long)b->start, (unsigned long long)b->end,
             memdiff_category_name(b->category), b->label, memdiff_change_name(b->change),
             b->presence, (unsigned long long)(t->new_bytes / ps),
             (unsigned long long)(t->new_private_bytes / ps),
             (unsigned long long)(t->freed_bytes / ps),
             (unsigned long long)(t->freed_unmapped_bytes / ps),
             (unsigned long long)(t->freed_discarded_bytes / ps),
             (unsigned long long)(t->freed_swapped_bytes / ps),
             (unsigned long long)(t->replaced_bytes / ps),
             (unsigned long long)(t->became_private_bytes / ps),
             (unsigned long long)(t->became_shared_bytes / ps));
    return block_buf;
}

static memdiff_block block_slots[SCN_BLOCK_SLOTS];
static unsigned block_next;

/* A slot for a copy: the one least recently handed out. */
static memdiff_block *keep_block(const memdiff_block *b)
{
    memdiff_block *slot = &block_slots[block_next++ % SCN_BLOCK_SLOTS];
    *slot = *b;
    return slot;
}

static void get_block(const memdiff_diff *d, size_t index, memdiff_block *out)
{
    int rc = memdiff_diff_block(d, index, out);
    ck_assert_msg(rc == MEMDIFF_OK, "memdiff_diff_block(%zu of %zu): %s: %s", index,
                  memdiff_diff_block_count(d), memdiff_status_name(rc), memdiff_last_error());
}

const memdiff_block *scn_block(const memdiff_diff *d, size_t index)
{
    memdiff_block b;
    get_block(d, index, &b);
    return keep_block(&b);
}

const memdiff_block *scn_find_block(const memdiff_diff *d, uintptr_t addr, memdiff_category cat)
{
    size_t n = memdiff_diff_block_count(d);
    for (size_t i = 0; i < n; i++) {
        memdiff_block b;
        get_block(d, i, &b);
        if (b.start <= addr && addr < b.end && (cat == SCN_ANY_CATEGORY || b.category == cat))
            return keep_block(&b);
    }
    return NULL;
}

const memdiff_block *scn_block_at(const memdiff_diff *d, uintptr_t addr, memdiff_category cat)
{
    const memdiff_block *b = scn_find_block(d, addr, cat);
    if (!b) {
        char *r = scn_report(d, 0);
        ck_abort_msg("no %s block contains 0x%llx; the diff:\n%s",
                     cat == SCN_ANY_CATEGORY ? "" : memdiff_category_name(cat),
                     (unsigned long long)addr, r);
    }
    return b;
}

uint64_t scn_verbose_new_pages(const memdiff_diff *d, uintptr_t lo, uintptr_t hi)
{
    size_t ps = scn_page();
    uint64_t pages = 0;
    size_t n = memdiff_diff_block_count(d);
    for (size_t i = 0; i < n; i++) {
        memdiff_block b;
        get_block(d, i, &b);
        if (b.end <= lo || b.start >= hi || b.change != MEMDIFF_CHANGE_NEW)
            continue;
        ck_assert_msg(b.totals.new_bytes == b.end - b.start,
                      "verbose block is not one run of new pages: %s", scn_block_str(&b));
        uint64_t s = b.start > lo ? b.start : lo, e = b.end < hi ? b.end : hi;
        pages += (e - s) / ps;
    }
    return pages;
}

char *scn_report(const memdiff_diff *d, unsigned flags)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    o.flags = flags;
    int rc = memdiff_report_text(d, f, &o);
    fclose(f);
    ck_assert_msg(rc == MEMDIFF_OK, "report: %s", memdiff_status_name(rc));
    return buf;
}

void scn_assert_totals_eq(const memdiff_totals *x, const memdiff_totals *y, const char *what)
{
#define SCN_FIELD_EQ(f)                                                                      \
    ck_assert_msg(x->f == y->f, "%s: " #f " %lld != %lld", what, (long long)x->f,            \
                  (long long)y->f)
    SCN_FIELD_EQ(new_bytes);
    SCN_FIELD_EQ(new_private_bytes);
    SCN_FIELD_EQ(new_shared_bytes);
    SCN_FIELD_EQ(freed_bytes);
    SCN_FIELD_EQ(freed_unmapped_bytes);
    SCN_FIELD_EQ(freed_discarded_bytes);
    SCN_FIELD_EQ(freed_swapped_bytes);
    SCN_FIELD_EQ(replaced_bytes);
    SCN_FIELD_EQ(became_private_bytes);
    SCN_FIELD_EQ(became_shared_bytes);
    SCN_FIELD_EQ(net_bytes);
#undef SCN_FIELD_EQ
}

void scn_wait_blocked(pid_t tid, long sysno)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    for (int i = 0; i < 10000; i++) {
        FILE *f = fopen(path, "r");
        ck_assert_msg(f != NULL, "open %s: %s", path, strerror(errno));
        char *got = fgets(line, sizeof line, f);
        fclose(f);
        if (got && strtol(line, NULL, 10) == sysno && strncmp(line, "running", 7) != 0)
            return;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    ck_abort_msg("thread %d never blocked in system call %ld (last: %s)", (int)tid, sysno, line);
}

size_t scn_read_message(int fd, char *buf, size_t size)
{
    size_t len = 0;
    ssize_t n;
    while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = '\0';
    close(fd);
    return len;
}

pid_t scn_spawn_piped(char *const argv[], int *to_child, int *from_child)
{
    int in[2], out[2];
    if (pipe(in) != 0)
        return -1;
    if (pipe(out) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        return -1;
    }
    *to_child = in[1];
    *from_child = out[0];
    return pid;
}

const char *scn_in_child(const char *(*drop)(void), const char *(*fn)(void *arg), void *arg)
{
    static char msg[4096];
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        const char *err = drop();
        if (!err)
            err = fn(arg);
        if (err && write(fds[1], err, strlen(err)) < 0)
            _exit(3);
        _exit(err ? 1 : 0);
    }
    close(fds[1]);
    size_t len = scn_read_message(fds[0], msg, sizeof msg);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return NULL;
    if (len == 0)
        snprintf(msg, sizeof msg, "child failed (wait status 0x%x)", (unsigned)status);
    return msg;
}

/* scn_as_nobody's drop: uid and gid 65534, dumpable again (setuid made /proc/self root's). */
static const char *drop_to_nobody(void)
{
    if (geteuid() != 0)
        return NULL; /* unprivileged already, and unable to change user */
    if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
        return "cannot drop to uid/gid 65534";
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
        return "cannot set the dumpable flag";
    if (geteuid() != 65534)
        return "still privileged after setuid";
    return NULL;
}

const char *scn_as_nobody(const char *(*fn)(void *arg), void *arg)
{
    return scn_in_child(drop_to_nobody, fn, arg);
}

const char *scn_disk_tmpdir(void)
{
    static char dir[PATH_MAX];
    const char *candidates[] = {getenv("TMPDIR"), "/tmp", "/var/tmp", MEMDIFF_TEST_BINARY_DIR};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        struct statfs st;
        if (!candidates[i] || !candidates[i][0] || !realpath(candidates[i], dir))
            continue;
        if (statfs(dir, &st) == 0 && st.f_type != TMPFS_MAGIC && access(dir, W_OK) == 0)
            return dir;
    }
    ck_abort_msg("no writable directory on a disk file system for the file-mapping scenario");
    return NULL;
}

int scn_sh(char *out, size_t size, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_msg(len >= 0 && (size_t)len < sizeof cmd, "command too long: %.200s", cmd);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    while (fgetc(p) != EOF) /* the rest, so that the command never blocks writing it */
        ;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int64_t scn_timeline_net(const memdiff_timeline *t, size_t a, size_t b, memdiff_category cat)
{
    memdiff_snapshot *sa = NULL, *sb = NULL;
    ck_assert_msg(memdiff_timeline_snapshot(t, a, &sa) == MEMDIFF_OK, "%s", memdiff_last_error());
    ck_assert_msg(memdiff_timeline_snapshot(t, b, &sb) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_diff *d = NULL;
    ck_assert_msg(memdiff_compare(sa, sb, 0, &d) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_totals tot;
    ck_assert_int_eq(memdiff_diff_totals(d, cat, &tot), MEMDIFF_OK);
    memdiff_diff_free(d);
    memdiff_snapshot_free(sb);
    memdiff_snapshot_free(sa);
    return tot.net_bytes;
}

/* Every readable page of this test program's own mappings, read once: the library is linked
 * into it, so which of its code pages the measured path touches first moves with any change
 * anywhere, and a first touch maps 16 pages at once (fault-around) into the figure. */
void scn_page_in_program(void)
{
    if (UNDER_ASAN)
        return; /* it would read the globals' redzones; the tolerances there are wide anyway */
    char self[512], line[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    FILE *f = fopen("/proc/self/maps", "r");
    if (len <= 0 || !f) {
        if (f)
            fclose(f);
        return;
    }
    self[len] = '\0';
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        int at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &at) < 3 || !at ||
            perms[0] != 'r' || strncmp(line + at, self, (size_t)len) != 0)
            continue;
        for (unsigned long p = lo; p < hi; p += scn_page())
            (void)*(volatile const char *)p;
    }
    fclose(f);
}
