/*
 * poll.c - the cheap poll of a process's totals (memdiff__plat_poll): one read of
 * /proc/PID/status, no open process, no page read. A recorder calls it 20 times a second.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "linux.h"

int memdiff__plat_poll(int pid, memdiff_process_totals *out)
{
    memset(out, 0, sizeof *out);
    char path[64];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/status", pid);
    else
        snprintf(path, sizeof path, "/proc/self/status");
    /* status is about 1.5 KiB (proc.rst); 8 KiB leaves room for long group and cpu lists, and
     * the memory fields come before them. statm would be cheaper still, but has no peak
     * (VmHWM), no swap and no anon / file split: status is one read all the same. */
    char text[8192];
    ssize_t n = memdiff__linux_read_small(path, text, sizeof text);
    if (n < 0)
        return memdiff__linux_fail((int)-n, "read", path);
    uint64_t kb;
    /* A zombie's or an exiting task's status has no Vm lines: its memory is gone. */
    if (!memdiff__linux_status_find(text, (size_t)n, "VmSize", 10, &kb))
        return memdiff__set_error(MEMDIFF_ESRCH, "%s: the process has no memory (it has exited)",
                                  path);
    memdiff__linux_status_totals(text, (size_t)n, out);
    return MEMDIFF_OK;
}
