/*
 * threads.c - threads and their stacks, and the PEB: Toolhelp32's thread list, each thread's TEB
 * from NtQueryInformationThread(ThreadBasicInformation), and the stack range from the TEB.
 *
 * A stack is the allocation [DeallocationStack, StackBase): the TEB's NT_TIB.StackBase is its top,
 * NT_TIB.StackLimit the lowest committed page (it moves as the guard page does), and
 * DeallocationStack the start of the reservation. These TEB fields are not part of a documented
 * API but have kept their offsets since Windows NT; Wine lays its TEB out the same way.
 */
#include <string.h>

#include "win.h"

#include <tlhelp32.h>
#include <winternl.h>

/* TEB offsets (winternl.h names the struct, not these fields). */
#define TEB64_STACK_BASE 0x08
#define TEB64_DEALLOCATION_STACK 0x1478
#define TEB32_STACK_BASE 0x04
#define TEB32_DEALLOCATION_STACK 0xe0c
/* In a WOW64 process the 32-bit TEB follows the 64-bit one by two pages. */
#define WOW64_TEB32_OFFSET 0x2000

/* THREAD_BASIC_INFORMATION (ntddk; winternl.h lacks it). */
typedef struct thread_basic_information {
    NTSTATUS ExitStatus;
    PVOID TebBaseAddress;
    struct {
        HANDLE UniqueProcess, UniqueThread;
    } ClientId;
    ULONG_PTR AffinityMask;
    LONG Priority;
    LONG BasePriority;
} thread_basic_information;

typedef NTSTATUS(NTAPI *query_thread_fn)(HANDLE, ULONG, PVOID, ULONG, PULONG);
typedef NTSTATUS(NTAPI *query_process_fn)(HANDLE, ULONG, PVOID, ULONG, PULONG);

/* ntdll is in every process; looking the two queries up avoids linking ntdll.lib into programs
 * that link memdiff statically. */
static FARPROC ntdll_proc(const char *name)
{
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    return ntdll ? GetProcAddress(ntdll, name) : NULL;
}

/* Whether the target is a 32-bit process while we are 64-bit: its stacks are in its 32-bit TEB. */
static int target_is_wow64(HANDLE process)
{
#if defined(_WIN64)
    BOOL wow = FALSE;
    return IsWow64Process(process, &wow) && wow;
#else
    (void)process;
    return 0;
#endif
}

static void read_stack(HANDLE process, int wow64, memdiff__win_thread *t)
{
    if (sizeof(void *) == 8 && !wow64) {
        uint64_t base = 0, dealloc = 0;
        if (memdiff__win_read(process, t->teb + TEB64_STACK_BASE, &base, sizeof base) &&
            memdiff__win_read(process, t->teb + TEB64_DEALLOCATION_STACK, &dealloc, sizeof dealloc) &&
            dealloc < base) {
            t->stack_lo = dealloc;
            t->stack_hi = base;
        }
        return;
    }
    uint32_t base = 0, dealloc = 0;
    uint64_t teb32 = wow64 ? t->teb + WOW64_TEB32_OFFSET : t->teb;
    if (memdiff__win_read(process, teb32 + TEB32_STACK_BASE, &base, sizeof base) &&
        memdiff__win_read(process, teb32 + TEB32_DEALLOCATION_STACK, &dealloc, sizeof dealloc) &&
        dealloc < base) {
        t->stack_lo = dealloc;
        t->stack_hi = base;
    }
}

static void read_peb(memdiff__proc *proc)
{
    query_process_fn query = (query_process_fn)(void (*)(void))ntdll_proc("NtQueryInformationProcess");
    PROCESS_BASIC_INFORMATION pbi;
    memset(&pbi, 0, sizeof pbi);
    if (query && query(proc->process, 0 /* ProcessBasicInformation */, &pbi, sizeof pbi, NULL) >= 0)
        proc->peb = (uint64_t)(uintptr_t)pbi.PebBaseAddress;
}

int memdiff__win_read_threads(memdiff__proc *proc)
{
    if (proc->threads_read)
        return MEMDIFF_OK;
    proc->threads_read = 1;
    read_peb(proc);

    query_thread_fn query = (query_thread_fn)(void (*)(void))ntdll_proc("NtQueryInformationThread");
    HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
    if (snap == INVALID_HANDLE_VALUE)
        return memdiff__win_error(NULL, GetLastError(), "CreateToolhelp32Snapshot");
    int wow64 = target_is_wow64(proc->process);
    size_t cap = 0;
    int rc = MEMDIFF_OK;
    THREADENTRY32 te;
    te.dwSize = sizeof te;
    for (BOOL more = Thread32First(snap, &te); more; more = Thread32Next(snap, &te)) {
        if (te.th32OwnerProcessID != (DWORD)proc->pid)
            continue;
        HANDLE h = OpenThread(THREAD_QUERY_INFORMATION, FALSE, te.th32ThreadID);
        if (!h)
            h = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, te.th32ThreadID);
        if (!h && GetLastError() == ERROR_INVALID_PARAMETER)
            continue; /* exited since the snapshot */
        memdiff__win_thread *grown = memdiff__arena_room(proc->scratch, proc->threads, &cap,
                                                         proc->thread_count, sizeof *grown, 64);
        if (!grown) {
            rc = MEMDIFF_ENOMEM;
            if (h)
                CloseHandle(h);
            break;
        }
        proc->threads = grown;
        memdiff__win_thread *t = &proc->threads[proc->thread_count++];
        memset(t, 0, sizeof *t);
        t->tid = te.th32ThreadID;
        thread_basic_information tbi;
        memset(&tbi, 0, sizeof tbi);
        if (h && query && query(h, 0 /* ThreadBasicInformation */, &tbi, sizeof tbi, NULL) >= 0) {
            t->teb = (uint64_t)(uintptr_t)tbi.TebBaseAddress;
            if (t->teb)
                read_stack(proc->process, wow64, t);
        }
        if (h)
            CloseHandle(h);
    }
    CloseHandle(snap);
    return rc;
}

int memdiff__plat_threads(memdiff__proc *proc, memdiff__arena *arena,
                          memdiff__plat_thread **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    int rc = memdiff__win_read_threads(proc);
    if (rc)
        return rc;
    if (proc->thread_count == 0)
        return MEMDIFF_OK;
    memdiff__plat_thread *v = memdiff__arena_alloc(arena, proc->thread_count * sizeof *v);
    if (!v)
        return MEMDIFF_ENOMEM;
    for (size_t i = 0; i < proc->thread_count; i++) {
        v[i].tid = proc->threads[i].tid;
        v[i].sp = 0; /* reading it would need THREAD_GET_CONTEXT and a suspended thread */
        v[i].stack_lo = proc->threads[i].stack_lo;
        v[i].stack_hi = proc->threads[i].stack_hi;
    }
    *out = v;
    *count = proc->thread_count;
    return MEMDIFF_OK;
}
