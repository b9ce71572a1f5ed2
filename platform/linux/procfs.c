/*
 * procfs.c - the backend's file plumbing: paths under the proc root, the one open every file
 * goes through, whole-file and small-file reads without stdio, full preads, status fields, and
 * the one errno → status translation.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "linux.h"

/* The "errno" of a file of the wrong type: NOT_REG + (st_mode's S_IFMT >> 12), above every
 * real errno (the kernel's end at 4095), so that the detail can name the type. */
#define NOT_REG 0x10000
#define NOT_REG_END (NOT_REG + (S_IFMT >> 12))

memdiff__linux_open_hook_fn memdiff__linux_open_hook;

int memdiff__linux_status(int err)
{
    switch (err) {
    case ENOENT:
    case ESRCH:
        return MEMDIFF_ESRCH;
    case EACCES:
    case EPERM:
        return MEMDIFF_EACCES;
    case ENOMEM:
        return MEMDIFF_ENOMEM;
    default: /* the wrong type of file (NOT_REG) too: nothing the caller may be refused */
        return MEMDIFF_EIO;
    }
}

const char *memdiff__linux_errno_text(int err)
{
    /* Not strerror(): glibc translates its text through gettext, which may allocate while
     * loading a message catalog, and a snapshot must not touch the heap it measures. */
    static _Thread_local char other[32];
    switch (err) {
    case ENOENT: return "No such file or directory";
    case ESRCH: return "No such process";
    case EACCES: return "Permission denied";
    case EPERM: return "Operation not permitted";
    case ENOMEM: return "Cannot allocate memory";
    case EIO: return "Input/output error";
    case EINVAL: return "Invalid argument";
    case EFAULT: return "Bad address";
    case ENOTTY: return "Inappropriate ioctl for device";
    case EBADF: return "Bad file descriptor";
    case ENOSYS: return "Function not implemented";
    case EOPNOTSUPP: return "Operation not supported";
    case ENAMETOOLONG: return "File name too long";
    case ENOTDIR: return "Not a directory";
    case EMFILE: return "Too many open files";
    case ENFILE: return "Too many open files in system";
    case ELOOP: return "Too many levels of symbolic links";
    case EFBIG: return "File too large";
    case NOT_REG + (S_IFIFO >> 12): return "a FIFO, not a regular file";
    case NOT_REG + (S_IFCHR >> 12): return "a character device, not a regular file";
    case NOT_REG + (S_IFBLK >> 12): return "a block device, not a regular file";
    case NOT_REG + (S_IFSOCK >> 12): return "a socket, not a regular file";
    case NOT_REG + (S_IFLNK >> 12): return "a symbolic link, not a regular file";
    case NOT_REG + (S_IFDIR >> 12): return "a directory, not a regular file";
    }
    if (err > NOT_REG && err <= NOT_REG_END)
        return "not a regular file";
    snprintf(other, sizeof other, "errno %d", err);
    return other;
}

int memdiff__linux_fail(int err, const char *what, const char *path)
{
    return memdiff__set_error(memdiff__linux_status(err), "%s %s: %s", what, path,
                              memdiff__linux_errno_text(err));
}

int memdiff__linux_path(char *buf, size_t size, const char *dir, const char *name)
{
    int n = snprintf(buf, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size)
        return memdiff__set_error(MEMDIFF_EINVAL, "path too long: %s/%s", dir, name);
    return MEMDIFF_OK;
}

int memdiff__linux_open(const char *path, int flags)
{
    struct stat st;
    return memdiff__linux_open_stat(path, flags, (flags & O_DIRECTORY) ? NULL : &st);
}

int memdiff__linux_open_stat(const char *path, int flags, struct stat *st)
{
    memdiff__linux_open_hook_fn hook = memdiff__linux_open_hook;
    int fd = hook ? hook(path, flags) : MEMDIFF__LINUX_OPEN_PASS;
    /* O_NONBLOCK: a FIFO's open would wait for a writer; O_NOCTTY: a terminal must not become
     * ours. Neither changes how a regular or /proc file reads. No final symlink: no /proc or
     * /sys file the backend reads is one, so one found there is not the file meant. */
    const int fd_opened_here = fd == MEMDIFF__LINUX_OPEN_PASS;
    if (fd_opened_here) {
        do
            fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
        while (fd < 0 && errno == EINTR);
    }
    if (fd < 0)
        return -1;
    if (!st && (flags & O_DIRECTORY) && fd_opened_here)
        return fd; /* the open itself refuses anything but a directory */
    /* The type before anything reads from (or writes to) it: a device or FIFO put where a file
     * was expected (a fixture tree, a mount over it) is refused, not read. */
    struct stat own;
    if (!st)
        st = &own;
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    unsigned want = (flags & O_DIRECTORY) ? S_IFDIR : S_IFREG;
    if ((st->st_mode & S_IFMT) != want) {
        close(fd);
        errno = want == S_IFDIR ? ENOTDIR : NOT_REG + (int)((st->st_mode & S_IFMT) >> 12);
        return -1;
    }
    return fd;
}

int memdiff__linux_reopen(const memdiff__proc *proc, int path_fd, const struct stat *was)
{
    char path[PATH_MAX];
    struct stat now;
    if (snprintf(path, sizeof path, "%s/self/fd/%d", proc->proc_root, path_fd) >= (int)sizeof path)
        return -1;
    /* Following the magic link: it names the inode path_fd holds, whatever the path it was
     * found by names by now. */
    int fd;
    do
        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    if (fstat(fd, &now) != 0 || !S_ISREG(now.st_mode) || now.st_ino != was->st_ino ||
        now.st_dev != was->st_dev) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Whether text[0..n) ends with the line of x86-64's gate VMA: no mapping follows it (linux.h,
 * MEMDIFF__LINUX_READ_MAPS), and no user mapping starts at its address. */
static int ends_with_gate(const char *text, size_t n)
{
    static const char gate[] = "ffffffffff600000-";
    const size_t glen = sizeof gate - 1;
    if (n < glen + 1 || text[n - 1] != '\n')
        return 0;
    size_t i = n - 1; /* the start of the last line */
    while (i > 0 && text[i - 1] != '\n')
        i--;
    return n - i > glen && memcmp(text + i, gate, glen) == 0;
}

int memdiff__linux_read_file(memdiff__arena *arena, const char *path, char **buf, size_t *cap,
                             size_t *len, int how)
{
    *len = 0;
    int fd = memdiff__linux_open(path, 0);
    if (fd < 0)
        return memdiff__linux_fail(errno, "open", path);
    size_t n = 0;
    for (;;) {
        /* Keep room for the terminating NUL and for a large read: /proc seq files hand out
         * at most a page or so per read, regular fixture files everything at once. The first
         * buffer is carved from the arena's reserved room where it has some (most files fit
         * it); a file that outgrows it moves once to a mapping that then grows in place. */
        if (!*buf || *cap - n < 4096 + 1) {
            size_t ncap = *cap ? *cap * 2 : 64 * 1024;
            if (ncap > MEMDIFF__LINUX_TEXT_MAX) {
                close(fd);
                return memdiff__linux_fail(EFBIG, "read", path);
            }
            char *p = *buf ? memdiff__arena_grow(arena, *buf, *cap, ncap)
                           : memdiff__arena_alloc_raw(arena, ncap); /* read before use */
            if (!p) {
                close(fd);
                return memdiff__set_error(MEMDIFF_ENOMEM, "reading %s: out of memory", path);
            }
            *buf = p;
            *cap = ncap;
        }
        ssize_t r = read(fd, *buf + n, *cap - n - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            return memdiff__linux_fail(e, "read", path);
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (how == MEMDIFF__LINUX_READ_RECORD && (size_t)r < *cap - (n - (size_t)r) - 1)
            break; /* short: the record was all there was (see linux.h) */
        if (how == MEMDIFF__LINUX_READ_MAPS && ends_with_gate(*buf, n))
            break;
    }
    close(fd);
    (*buf)[n] = '\0';
    *len = n;
    return MEMDIFF_OK;
}

ssize_t memdiff__linux_read_small(const char *path, char *buf, size_t size)
{
    if (size == 0)
        return -EINVAL;
    int fd = memdiff__linux_open(path, 0);
    if (fd < 0)
        return -errno;
    size_t n = 0;
    while (n < size - 1) {
        ssize_t r = read(fd, buf + n, size - 1 - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if ((size_t)r < size - 1 - (n - (size_t)r))
            break; /* short: the record was all there was (see linux.h) */
    }
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

ssize_t memdiff__linux_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t n = 0;
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return -EINVAL;
    while (n < len) {
        ssize_t r = pread64(fd, (char *)buf + n, len - n, (off64_t)(off + n));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    return (ssize_t)n;
}

int memdiff__linux_status_find(const char *text, size_t len, const char *key, int base,
                               uint64_t *value)
{
    size_t klen = strlen(key);
    *value = 0;
    size_t i = 0;
    while (i < len) {
        const char *line = text + i;
        const char *nl = memchr(line, '\n', len - i);
        size_t llen = nl ? (size_t)(nl - line) : len - i;
        if (llen > klen && memcmp(line, key, klen) == 0 && line[klen] == ':') {
            uint64_t v = 0;
            size_t j = klen + 1;
            while (j < llen && (line[j] == ' ' || line[j] == '\t'))
                j++;
            size_t first = j;
            for (; j < llen; j++) {
                unsigned c = (unsigned char)line[j], d;
                if (c >= '0' && c <= '9')
                    d = c - '0';
                else if (base == 16 && c >= 'a' && c <= 'f')
                    d = c - 'a' + 10;
                else if (base == 16 && c >= 'A' && c <= 'F')
                    d = c - 'A' + 10;
                else
                    break;
                if (v > (UINT64_MAX - d) / (uint64_t)base)
                    return 0; /* not a figure the kernel would print */
                v = v * (uint64_t)base + d;
            }
            *value = v;
            return j > first;
        }
        i += llen + 1;
    }
    return 0;
}

uint64_t memdiff__linux_status_field(const char *text, size_t len, const char *key, int base)
{
    uint64_t v;
    memdiff__linux_status_find(text, len, key, base, &v);
    return v;
}

int memdiff__linux_status_alive(const char *text, size_t len)
{
    const char *end = text + len, *st = NULL;
    for (const char *line = text; !st && line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        if ((size_t)(end - line) > 6 && memcmp(line, "State:", 6) == 0)
            st = line + 6;
        line = nl ? nl + 1 : end;
    }
    while (st && st < end && (*st == ' ' || *st == '\t'))
        st++;
    if (!st || st == end || *st == 'Z' || *st == 'X' || *st == 'x')
        return 0;
    return memdiff__linux_status_field(text, len, "VmSize", 10) > 0;
}

int memdiff__linux_meminfo_pmd_free(const char *text, size_t len)
{
    uint64_t anon_huge, hugetlb;
    return memdiff__linux_status_find(text, len, "AnonHugePages", 10, &anon_huge) &&
           memdiff__linux_status_find(text, len, "Hugetlb", 10, &hugetlb) && anon_huge == 0 &&
           hugetlb == 0;
}

int memdiff__linux_pmd_free(const memdiff__proc *proc)
{
    char path[PATH_MAX], buf[8192];
    if (memdiff__linux_path(path, sizeof path, proc->proc_root, "meminfo"))
        return 0;
    ssize_t n = memdiff__linux_read_small(path, buf, sizeof buf);
    /* meminfo is about 1.5 KiB: a text that fills the buffer may have lost the fields. */
    return n > 0 && (size_t)n < sizeof buf - 1 && memdiff__linux_meminfo_pmd_free(buf, (size_t)n);
}

int memdiff__linux_swap_free(const memdiff__proc *proc)
{
    char path[PATH_MAX], buf[8192];
    uint64_t swap_total;
    if (memdiff__linux_path(path, sizeof path, proc->proc_root, "meminfo"))
        return 0;
    ssize_t n = memdiff__linux_read_small(path, buf, sizeof buf);
    return n > 0 && (size_t)n < sizeof buf - 1 &&
           memdiff__linux_status_find(buf, (size_t)n, "SwapTotal", 10, &swap_total) &&
           swap_total == 0;
}

uint64_t memdiff__linux_dev(dev_t dev)
{
    return ((uint64_t)major(dev) << 32) | (uint64_t)minor(dev);
}

void memdiff__linux_status_totals(const char *text, size_t len, memdiff_process_totals *out)
{
    static const struct {
        const char *key;
        size_t offset;
    } fields[] = {
        {"VmSize", offsetof(memdiff_process_totals, vm_size)},
        {"VmRSS", offsetof(memdiff_process_totals, vm_rss)},
        {"VmHWM", offsetof(memdiff_process_totals, vm_hwm)},
        {"RssAnon", offsetof(memdiff_process_totals, rss_anon)},
        {"RssFile", offsetof(memdiff_process_totals, rss_file)},
        {"RssShmem", offsetof(memdiff_process_totals, rss_shmem)},
        {"VmPTE", offsetof(memdiff_process_totals, vm_pte)},
        {"VmSwap", offsetof(memdiff_process_totals, vm_swap)},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        /* proc.rst: these fields are in kB (KiB). */
        uint64_t kb = memdiff__linux_status_field(text, len, fields[i].key, 10);
        uint64_t *slot = (uint64_t *)((char *)out + fields[i].offset);
        *slot = kb * 1024;
    }
}

int memdiff__linux_parse_id(const char *s, int64_t max, int64_t *out)
{
    int64_t v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (max - 9) / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return v > 0 ? 0 : -1;
}

struct dirent64_raw {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

#define DENTS_BUF (32 * 1024)

int memdiff__linux_list_ids(int fd, const char *path, memdiff__arena *arena, int64_t max,
                            size_t whole, int64_t **out, size_t *count)
{
    char *buf = memdiff__arena_alloc_raw(arena, DENTS_BUF); /* getdents64 fills it */
    int64_t *ids = NULL;
    size_t n = 0, cap = 0;
    *out = NULL;
    *count = 0;
    if (!buf)
        return MEMDIFF_ENOMEM;
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, DENTS_BUF);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return memdiff__linux_fail(errno, "getdents64", path);
        if (got == 0)
            break;
        for (long off = 0; off < got;) {
            const struct dirent64_raw *d = (const struct dirent64_raw *)(buf + off);
            if (d->d_reclen == 0 || off + d->d_reclen > got)
                break;
            off += d->d_reclen;
            int64_t id;
            if (memdiff__linux_parse_id(d->d_name, max, &id))
                continue;
            int64_t *v = memdiff__arena_room(arena, ids, &cap, n, sizeof *v, 256);
            if (!v)
                return MEMDIFF_ENOMEM;
            ids = v;
            ids[n++] = id;
        }
        if (whole && n == whole)
            break; /* the read that would only say "end" is saved */
    }
    *out = ids;
    *count = n;
    return MEMDIFF_OK;
}
