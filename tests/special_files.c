/*
 * special_files.c - see special_files.h.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <check.h>

#include "special_files.h"

const sf_info sf_kinds[SF_COUNT] = {
    [SF_MISSING] = {"missing", NULL},
    [SF_REGULAR] = {"regular", NULL},
    [SF_EMPTY_DIR] = {"emptydir", "is a directory, not a regular file"},
    [SF_FULL_DIR] = {"fulldir", "is a directory, not a regular file"},
    [SF_FIFO] = {"fifo", "is a FIFO, not a regular file"},
    [SF_SOCKET] = {"socket", "is a socket, not a regular file"},
    [SF_LINK_REGULAR] = {"link", "is a symbolic link, not a regular file"},
    [SF_LINK_DANGLING] = {"dangling", "is a symbolic link, not a regular file"},
    [SF_CHAR_DEVICE] = {"null", "is a character device, not a regular file"},
};

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "create %s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

int sf_make(const char *dir, sf_kind k, char *why, size_t why_size)
{
    char path[512], other[sizeof path + 16];
    snprintf(path, sizeof path, "%s/%s", dir, sf_kinds[k].name);
    switch (k) {
    case SF_MISSING:
    case SF_COUNT:
        break;
    case SF_REGULAR:
        put_file(path, "old contents\n");
        break;
    case SF_EMPTY_DIR:
        ck_assert_int_eq(mkdir(path, 0755), 0);
        break;
    case SF_FULL_DIR:
        ck_assert_int_eq(mkdir(path, 0755), 0);
        snprintf(other, sizeof other, "%s/inside", path);
        put_file(other, "inside\n");
        break;
    case SF_FIFO:
        ck_assert_int_eq(mkfifo(path, 0644), 0);
        break;
    case SF_SOCKET: {
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        ck_assert_uint_lt(strlen(path), sizeof sa.sun_path);
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(bind(fd, (const struct sockaddr *)&sa, sizeof sa), 0);
        close(fd); /* the socket file stays */
        break;
    }
    case SF_LINK_REGULAR:
        snprintf(other, sizeof other, "%s/link-target", dir);
        put_file(other, "the link's target\n");
        ck_assert_int_eq(symlink("link-target", path), 0);
        break;
    case SF_LINK_DANGLING:
        ck_assert_int_eq(symlink("nowhere", path), 0);
        break;
    case SF_CHAR_DEVICE:
        if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) != 0) {
            snprintf(why, why_size, "mknod %s: %s (needs root with CAP_MKNOD)", path,
                     strerror(errno));
            return -1;
        }
        break;
    }
    return 0;
}

static size_t append_content(const char *path, char *buf, size_t size, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return n;
    n += (size_t)snprintf(buf + n, size - n, " content=");
    if (n < size)
        n += fread(buf + n, 1, size - n - 1, f);
    buf[n < size ? n : size - 1] = '\0';
    fclose(f);
    return strlen(buf);
}

void sf_state(const char *path, char *buf, size_t size)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        snprintf(buf, size, "absent (%s)", strerror(errno));
        return;
    }
    size_t n = (size_t)snprintf(buf, size, "mode=%o ino=%llu rdev=%llu size=%lld",
                                (unsigned)st.st_mode, (unsigned long long)st.st_ino,
                                (unsigned long long)st.st_rdev, (long long)st.st_size);
    if (S_ISLNK(st.st_mode)) {
        char target[256];
        ssize_t len = readlink(path, target, sizeof target - 1);
        target[len > 0 ? len : 0] = '\0';
        n += (size_t)snprintf(buf + n, size - n, " -> %s", target);
        n = append_content(path, buf, size, n); /* through the link, when it leads somewhere */
    } else if (S_ISREG(st.st_mode)) {
        n = append_content(path, buf, size, n);
    } else if (S_ISDIR(st.st_mode)) {
        n += (size_t)snprintf(buf + n, size - n, " entries=%d", sf_entries(path));
    }
    (void)n;
}

int sf_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "opendir %s: %s", dir, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}
