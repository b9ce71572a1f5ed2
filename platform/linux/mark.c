/*
 * mark.c - the mark channel (memdiff_mark, memdiff_mark_listen): UNIX datagram sockets.
 *
 * A recorder that starts the program makes a socketpair and leaves one end open in the child,
 * whose number it puts in MEMDIFF_MARK_FD; one that attaches to a running pid binds the
 * abstract-namespace name "memdiff-mark-PID", which the program finds with no environment at
 * all. Datagrams keep each mark whole (threads cannot interleave) and the kernel stamps them
 * with the sender's pid (SCM_CREDENTIALS), which the attached recorder checks: anyone may send
 * to an abstract name. Nothing here allocates: a mark may be sent from code measuring its heap.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "linux.h"

#define MARK_ENV "MEMDIFF_MARK_FD"

enum { CHANNEL_UNKNOWN = -2, CHANNEL_NAME = -1, CHANNEL_OFF = -3 };

/* The inherited descriptor, looked up once per process: the environment is read at the first
 * mark only (getenv is not free, and the variable is the recorder's, set before exec). */
static _Atomic int channel = CHANNEL_UNKNOWN;
/* The socket marks to the abstract name go out on, made at the first such mark. */
static _Atomic int name_socket = -1;

static int is_dgram_socket(int fd)
{
    int type = 0;
    socklen_t len = sizeof type;
    struct sockaddr_un addr;
    socklen_t alen = sizeof addr;
    /* An inherited variable may name a descriptor the program reused for something else (a
     * grandchild of the recorder): only a UNIX datagram socket is written to. */
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_DGRAM &&
           getsockname(fd, (struct sockaddr *)&addr, &alen) == 0 && addr.sun_family == AF_UNIX;
}

static int resolve_channel(void)
{
    const char *v = getenv(MARK_ENV);
    if (!v || !v[0])
        return CHANNEL_NAME;
    if (strcmp(v, "off") == 0)
        return CHANNEL_OFF;
    long fd = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9' || fd > 1000000)
            return CHANNEL_NAME;
        fd = fd * 10 + (*p - '0');
    }
    return is_dgram_socket((int)fd) ? (int)fd : CHANNEL_NAME;
}

static void mark_name(int pid, struct sockaddr_un *addr, socklen_t *len)
{
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    /* Abstract namespace (unix(7)): sun_path[0] is NUL, the name is the bytes after it, no
     * terminator; nothing appears in the file system and nothing is left behind. */
    int n = snprintf(addr->sun_path + 1, sizeof addr->sun_path - 1, "memdiff-mark-%d", pid);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int send_to_name(const void *msg, size_t len)
{
    int s = atomic_load(&name_socket);
    if (s < 0) {
        s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
            return 0;
        int expected = -1;
        if (!atomic_compare_exchange_strong(&name_socket, &expected, s)) {
            close(s);
            s = expected;
        }
    }
    struct sockaddr_un addr;
    socklen_t alen;
    mark_name((int)getpid(), &addr, &alen);
    /* Never waits: whoever bound the name may not be reading (a recorder must not stall the
     * program it watches). No recorder: ECONNREFUSED, the one system call a mark costs. */
    ssize_t r;
    do
        r = sendto(s, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&addr, alen);
    while (r < 0 && errno == EINTR);
    return r == (ssize_t)len;
}

int memdiff__plat_mark_send(const void *msg, size_t len)
{
    int fd = atomic_load_explicit(&channel, memory_order_relaxed);
    if (fd == CHANNEL_UNKNOWN) {
        fd = resolve_channel();
        atomic_store(&channel, fd);
    }
    if (fd == CHANNEL_OFF)
        return 0;
    if (fd == CHANNEL_NAME)
        return send_to_name(msg, len);
    /* The recorder that started us drains the channel at every poll: waiting for room keeps a
     * burst of marks whole instead of dropping some. */
    ssize_t r;
    do
        r = send(fd, msg, len, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    return r == (ssize_t)len;
}

static int pass_credentials(int fd)
{
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
}

int memdiff__plat_mark_listen(int pid, memdiff__mark_chan *out)
{
    out->fd = out->child_fd = -1;
    out->pid = pid;
    if (pid == 0) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0)
            return memdiff__linux_fail(errno, "socketpair", "for marks");
        if (pass_credentials(sv[0]) != 0) {
            int e = errno;
            close(sv[0]);
            close(sv[1]);
            return memdiff__linux_fail(e, "setsockopt SO_PASSCRED", "for marks");
        }
        out->fd = sv[0];
        out->child_fd = sv[1];
        return MEMDIFF_OK;
    }
    struct sockaddr_un addr;
    socklen_t alen;
    mark_name(pid, &addr, &alen);
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return memdiff__linux_fail(errno, "socket", "for marks");
    if (pass_credentials(s) != 0 || bind(s, (struct sockaddr *)&addr, alen) != 0) {
        int e = errno;
        close(s);
        if (e == EADDRINUSE)
            return memdiff__set_error(MEMDIFF_EIO, "marks of pid %d: the name @memdiff-mark-%d "
                                                   "is bound already (another recorder)",
                                      pid, pid);
        return memdiff__linux_fail(e, "bind", "@memdiff-mark");
    }
    out->fd = s;
    return MEMDIFF_OK;
}

int memdiff__plat_mark_recv(memdiff__mark_chan *chan, uint64_t timeout_ns, void *buf, size_t cap,
                            size_t *len, int *sender)
{
    for (int waited = 0;;) {
        struct iovec iov = {buf, cap};
        union {
            char space[CMSG_SPACE(sizeof(struct ucred))];
            struct cmsghdr align;
        } control;
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = control.space;
        mh.msg_controllen = sizeof control.space;
        ssize_t r = recvmsg(chan->fd, &mh, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return memdiff__linux_fail(errno, "recvmsg", "marks");
            if (waited || timeout_ns == 0)
                return 0;
            struct pollfd p = {chan->fd, POLLIN, 0};
            struct timespec ts = {(time_t)(timeout_ns / 1000000000u),
                                  (long)(timeout_ns % 1000000000u)};
            waited = 1;
            if (ppoll(&p, 1, &ts, NULL) < 0 && errno != EINTR)
                return memdiff__linux_fail(errno, "ppoll", "marks");
            continue;
        }
        int from = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
                c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
                struct ucred cred;
                memcpy(&cred, CMSG_DATA(c), sizeof cred);
                from = (int)cred.pid;
            }
        /* Anyone can send to an abstract name: only the attached process's marks count. */
        if (chan->pid > 0 && from != chan->pid)
            continue;
        *len = (size_t)r < cap ? (size_t)r : cap;
        *sender = from;
        return 1;
    }
}

void memdiff__plat_mark_close(memdiff__mark_chan *chan)
{
    if (chan->fd >= 0)
        close(chan->fd);
    if (chan->child_fd >= 0)
        close(chan->child_fd);
    chan->fd = chan->child_fd = -1;
}
