/*
 * mark.c - polls and the mark channel on Windows. The poll is GetProcessMemoryInfo, the same
 * figures as memdiff__plat_totals without opening the process for reading. Marks have no
 * channel here yet: memdiff_mark() says no recorder listens, a listener is MEMDIFF_ENOTSUP.
 */
#include <string.h>

#include "win.h"

int memdiff__plat_poll(int pid, memdiff_process_totals *out)
{
    memset(out, 0, sizeof *out);
    HANDLE process = pid > 0 ? OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid)
                             : GetCurrentProcess();
    if (!process)
        return memdiff__win_error(NULL, GetLastError(), "OpenProcess(pid %d)", pid);
    PROCESS_MEMORY_COUNTERS pmc;
    memset(&pmc, 0, sizeof pmc);
    pmc.cb = sizeof pmc;
    int rc = MEMDIFF_OK;
    DWORD code = 0;
    if (!GetProcessMemoryInfo(process, &pmc, sizeof pmc))
        rc = memdiff__win_error(process, GetLastError(), "GetProcessMemoryInfo(pid %d)", pid);
    else if (pid > 0 && GetExitCodeProcess(process, &code) && code != STILL_ACTIVE)
        rc = memdiff__set_error(MEMDIFF_ESRCH, "pid %d has exited", pid);
    /* As memdiff__plat_totals: the working set and its peak; no split, no swap figure. */
    out->vm_rss = pmc.WorkingSetSize;
    out->vm_hwm = pmc.PeakWorkingSetSize;
    if (pid > 0)
        CloseHandle(process);
    if (rc)
        memset(out, 0, sizeof *out);
    return rc;
}

int memdiff__plat_mark_send(const void *msg, size_t len)
{
    (void)msg;
    (void)len;
    return 0;
}

int memdiff__plat_mark_listen(int pid, memdiff__mark_chan *out)
{
    out->fd = out->child_fd = -1;
    out->pid = pid;
    return memdiff__set_error(MEMDIFF_ENOTSUP, "marks: no channel on Windows yet");
}

int memdiff__plat_mark_recv(memdiff__mark_chan *chan, uint64_t timeout_ns, void *buf, size_t cap,
                            size_t *len, int *sender)
{
    (void)chan;
    (void)timeout_ns;
    (void)buf;
    (void)cap;
    *len = 0;
    *sender = 0;
    return memdiff__set_error(MEMDIFF_ENOTSUP, "marks: no channel on Windows yet");
}

void memdiff__plat_mark_close(memdiff__mark_chan *chan)
{
    chan->fd = chan->child_fd = -1;
}
