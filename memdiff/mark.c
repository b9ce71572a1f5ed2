/*
 * mark.c - marks (memdiff_mark) and the recorder's end of their channel (memdiff_mark_listen).
 * The channel itself is the backend's (platform.h, memdiff__plat_mark_*); this file owns the
 * datagram's layout, which both ends share (docs/api.md, "Marks"):
 *
 *   byte 0     version, 1
 *   bytes 1-8  the sender's wall clock, ns since the Unix epoch, little-endian
 *   bytes 9-   the label, at most MEMDIFF_MARK_LABEL_MAX bytes, no terminator
 *
 * The time is the sender's: the recorder reads marks at its next poll, up to an interval later.
 * memdiff_poll, the recorder's other cheap call, is here too: both stand for the backend's
 * calls of memory over time.
 */
#include <string.h>

#include "internal.h"

#define MARK_VERSION 1u
#define MARK_HEAD 9u

_Static_assert(MARK_HEAD + MEMDIFF_MARK_LABEL_MAX == MEMDIFF__MARK_MSG_MAX,
               "platform.h's datagram size is the header and the longest label");

int memdiff_mark(const char *label)
{
    if (!label)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_mark: label is NULL");
    unsigned char msg[MEMDIFF__MARK_MSG_MAX];
    size_t n = strnlen(label, MEMDIFF_MARK_LABEL_MAX);
    uint64_t t = memdiff__os_time_ns();
    msg[0] = MARK_VERSION;
    for (unsigned i = 0; i < 8; i++)
        msg[1 + i] = (unsigned char)(t >> (8 * i));
    memcpy(msg + MARK_HEAD, label, n);
    return memdiff__plat_mark_send(msg, MARK_HEAD + n);
}

struct memdiff_mark_listener {
    memdiff__arena arena; /* holds this struct */
    memdiff__mark_chan chan;
    unsigned char msg[MEMDIFF__MARK_MSG_MAX];
    char label[MEMDIFF_MARK_LABEL_MAX + 1];
};

int memdiff_mark_listen(int pid, memdiff_mark_listener **out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_mark_listen: out is NULL");
    *out = NULL;
    if (pid < 0)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_mark_listen: pid %d", pid);
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    memdiff_mark_listener *l = memdiff__arena_alloc(&a, sizeof *l);
    if (!l) {
        memdiff__arena_release(&a);
        return memdiff__set_error(MEMDIFF_ENOMEM, "memdiff_mark_listen: out of memory");
    }
    l->arena = a;
    int rc = memdiff__plat_mark_listen(pid, &l->chan);
    if (rc) {
        memdiff__arena_release(&a);
        return rc;
    }
    *out = l;
    return MEMDIFF_OK;
}

int memdiff_mark_listener_child_fd(const memdiff_mark_listener *listener)
{
    return listener ? listener->chan.child_fd : -1;
}

int memdiff_mark_receive(memdiff_mark_listener *l, uint64_t timeout_ns, memdiff_mark_msg *out)
{
    if (!l || !out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_mark_receive: NULL argument");
    for (;;) {
        size_t n = 0;
        int sender = 0;
        int rc = memdiff__plat_mark_recv(&l->chan, timeout_ns, l->msg, sizeof l->msg, &n,
                                         &sender);
        if (rc <= 0)
            return rc;
        timeout_ns = 0; /* one came: what follows is only what is already queued */
        if (n < MARK_HEAD || l->msg[0] != MARK_VERSION)
            continue; /* not a mark of this version: nothing to put on a timeline */
        uint64_t t = 0;
        for (unsigned i = 8; i-- > 0;)
            t = (t << 8) | l->msg[1 + i];
        size_t len = n - MARK_HEAD;
        memcpy(l->label, l->msg + MARK_HEAD, len);
        l->label[len] = '\0'; /* a NUL inside ends the label early: labels are C strings */
        out->time_ns = t;
        out->pid = sender;
        out->label = l->label;
        return 1;
    }
}

void memdiff_mark_listener_free(memdiff_mark_listener *listener)
{
    if (!listener)
        return;
    memdiff__plat_mark_close(&listener->chan);
    memdiff__arena a = listener->arena;
    memdiff__arena_release(&a);
}

int memdiff_poll(int pid, memdiff_process_totals *out)
{
    if (!out)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_poll: out is NULL");
    memset(out, 0, sizeof *out);
    if (pid < 0)
        return memdiff__set_error(MEMDIFF_EINVAL, "memdiff_poll: pid %d", pid);
    return memdiff__plat_poll(pid, out);
}
