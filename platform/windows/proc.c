/*
 * proc.c - opening a process, what can be read of it, and its totals.
 */
#include <string.h>

#include "win.h"

/* Whether QueryWorkingSet answers for this process: asked with room for no entry, it fails with
 * ERROR_BAD_LENGTH when it works. Wine 8 fails it with ERROR_INVALID_PARAMETER. */
static int probe_qws(HANDLE process)
{
    PSAPI_WORKING_SET_INFORMATION one;
    if (QueryWorkingSet(process, &one, sizeof one))
        return 1;
    return GetLastError() == ERROR_BAD_LENGTH;
}

/* Whether QueryWorkingSetEx answers: one entry, for an address that is never mapped. */
static int probe_qws_ex(HANDLE process, DWORD *err)
{
    PSAPI_WORKING_SET_EX_INFORMATION one;
    memset(&one, 0, sizeof one);
    if (QueryWorkingSetEx(process, &one, sizeof one))
        return 1;
    *err = GetLastError();
    return 0;
}

int memdiff__plat_open(const memdiff__open_args *args, memdiff__arena *scratch,
                       memdiff__proc **out, memdiff__caps *caps)
{
    *out = NULL;
    if (args->proc_root || args->sys_root)
        return memdiff__set_error(MEMDIFF_ENOTSUP,
                                  "fixture_root: Windows reads the live process only, from no "
                                  "recorded tree");
    memdiff__proc *proc = memdiff__arena_alloc(scratch, sizeof *proc);
    if (!proc)
        return MEMDIFF_ENOMEM;
    proc->scratch = scratch;
    proc->page_size = memdiff__os_page_size();

    DWORD own = GetCurrentProcessId();
    if (args->pid == 0 || (DWORD)args->pid == own) {
        proc->process = GetCurrentProcess();
        proc->pid = (int)own;
        proc->self = 1;
    } else {
        /* The least rights that VirtualQueryEx, QueryWorkingSet(Ex), GetMappedFileName,
         * EnumProcessModulesEx, ReadProcessMemory and GetProcessMemoryInfo need. */
        proc->process = OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ, FALSE,
                                    (DWORD)args->pid);
        if (!proc->process)
            return memdiff__win_error(NULL, GetLastError(), "OpenProcess(%d)", args->pid);
        proc->pid = args->pid;
        DWORD code;
        /* A process that exited but whose object someone still holds opens fine. */
        if (GetExitCodeProcess(proc->process, &code) && code != STILL_ACTIVE) {
            CloseHandle(proc->process);
            return memdiff__set_error(MEMDIFF_ESRCH, "process %d has exited", args->pid);
        }
    }

    DWORD ex_err = 0;
    proc->use_qws = probe_qws(proc->process);
    proc->use_qws_ex = probe_qws_ex(proc->process, &ex_err);
    if (!proc->use_qws && !proc->use_qws_ex) {
        /* Without the working set there is no page to report: refuse rather than pass off an
         * empty snapshot. Wine 8 answers so for other processes. */
        int status = ex_err == ERROR_ACCESS_DENIED ? MEMDIFF_EACCES : MEMDIFF_ENOTSUP;
        int rc = memdiff__win_error_as(status, proc->process, ex_err,
                                       "QueryWorkingSet / QueryWorkingSetEx(pid %d): no "
                                       "working-set information",
                                       proc->pid);
        memdiff__plat_close(proc);
        return rc;
    }

    memset(caps, 0, sizeof *caps);
    caps->page_size = proc->page_size;
    caps->pid = proc->pid;
    /* MEMDIFF_SRC_PAGES stands for the working-set calls: per-page presence and sharing. */
    caps->sources = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_PAGES | MEMDIFF_SRC_PROCESS_TOTALS |
                    MEMDIFF_SRC_THREADS | MEMDIFF_SRC_MODULES | MEMDIFF_SRC_HEAPS;
    caps->pfn_why = "Windows exposes no physical frame numbers to user mode";
    caps->deep_why = "Windows exposes no per-frame kernel flags or map counts (the working "
                     "set's ShareCount only tells private from shared)";
    *out = proc;
    return MEMDIFF_OK;
}

unsigned memdiff__plat_pages_threads(const memdiff__proc *proc)
{
    (void)proc;
    return 1; /* the calling thread reads every page (memdiff_options.threads: Linux) */
}

void memdiff__plat_close(memdiff__proc *proc)
{
    if (proc && !proc->self && proc->process) {
        CloseHandle(proc->process);
        proc->process = NULL;
    }
}

int memdiff__win_read(HANDLE process, uint64_t addr, void *buf, size_t n)
{
    SIZE_T got = 0;
    return ReadProcessMemory(process, (LPCVOID)(uintptr_t)addr, buf, n, &got) && got == n;
}

int memdiff__plat_totals(memdiff__proc *proc, memdiff_process_totals *out)
{
    memset(out, 0, sizeof *out);
    PROCESS_MEMORY_COUNTERS_EX pmc;
    memset(&pmc, 0, sizeof pmc);
    pmc.cb = sizeof pmc;
    if (!GetProcessMemoryInfo(proc->process, (PROCESS_MEMORY_COUNTERS *)&pmc, sizeof pmc))
        return memdiff__win_error(proc->process, GetLastError(), "GetProcessMemoryInfo(pid %d)",
                                  proc->pid);
    /* The working set is the resident set; its peak is VmHWM. Windows has no resident split by
     * anonymous / file / shmem, no page-table figure and no swap figure per process:
     * PagefileUsage and PrivateUsage are the commit charge (memory promised, resident or
     * not), not pages in the paging file, so they are not passed off as vm_swap. */
    out->vm_rss = pmc.WorkingSetSize;
    out->vm_hwm = pmc.PeakWorkingSetSize;
    /* VmSize: all reserved and committed address space, from the region walk. */
    for (size_t i = 0; i < proc->region_count; i++)
        out->vm_size += proc->regions[i].end - proc->regions[i].start;
    return MEMDIFF_OK;
}
