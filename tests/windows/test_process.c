/*
 * test_process.c - snapshots of another process (the test program started again with --child),
 * and of processes that do not exist or have exited.
 *
 * The child allocates 64 pages, writes CHILD_FIRST of them, prints the address and waits for a
 * line on stdin: "more" writes CHILD_MORE further pages, "exit" ends it.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <stdlib.h>
#include <string.h>

#include "win.h"
#include "wintest.h"

#define CHILD_FIRST 21
#define CHILD_MORE 9

int wintest_child_main(int argc, char **argv);

int wintest_child_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    size_t pg = (size_t)wintest_page();
    char *v = VirtualAlloc(NULL, 64 * pg, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    if (!v)
        return 2;
    for (size_t i = 0; i < CHILD_FIRST; i++)
        v[i * pg] = 1;
    printf("%llx\n", (unsigned long long)(uintptr_t)v);
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "more", 4) == 0) {
            for (size_t i = 0; i < CHILD_MORE; i++)
                v[(CHILD_FIRST + i) * pg] = 1;
            printf("ok\n");
            fflush(stdout);
        } else {
            break;
        }
    }
    return 0;
}

typedef struct child {
    PROCESS_INFORMATION pi;
    HANDLE to, from; /* our ends of its stdin and stdout */
    uint64_t addr;
} child;

static int read_line(HANDLE h, char *buf, size_t size)
{
    size_t n = 0;
    while (n + 1 < size) {
        DWORD got = 0;
        if (!ReadFile(h, buf + n, 1, &got, NULL) || got == 0)
            return 0;
        if (buf[n] == '\n')
            break;
        n++;
    }
    buf[n] = '\0';
    return 1;
}

static int say(child *c, const char *line)
{
    DWORD w;
    return WriteFile(c->to, line, (DWORD)strlen(line), &w, NULL) && w == strlen(line);
}

static int start_child(child *c)
{
    memset(c, 0, sizeof *c);
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    HANDLE in_r, in_w, out_r, out_w;
    if (!CreatePipe(&in_r, &in_w, &sa, 0))
        return 0;
    if (!CreatePipe(&out_r, &out_w, &sa, 0))
        return 0;
    SetHandleInformation(in_w, HANDLE_FLAG_INHERIT, 0);
    SetHandleInformation(out_r, HANDLE_FLAG_INHERIT, 0);
    WCHAR exe[MAX_PATH], cmd[MAX_PATH + 16];
    GetModuleFileNameW(NULL, exe, MAX_PATH);
    swprintf(cmd, MAX_PATH + 16, L"\"%ls\" --child", exe);
    STARTUPINFOW si;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = in_r;
    si.hStdOutput = out_w;
    si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
    BOOL ok = CreateProcessW(exe, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &c->pi);
    CloseHandle(in_r);
    CloseHandle(out_w);
    c->to = in_w;
    c->from = out_r;
    char line[64];
    if (!ok || !read_line(c->from, line, sizeof line))
        return 0;
    c->addr = strtoull(line, NULL, 16);
    return c->addr != 0;
}

static void end_child(child *c)
{
    if (c->to) {
        say(c, "exit\n");
        CloseHandle(c->to);
    }
    if (c->pi.hProcess) {
        WaitForSingleObject(c->pi.hProcess, 10000);
        CloseHandle(c->pi.hProcess);
        CloseHandle(c->pi.hThread);
    }
    if (c->from)
        CloseHandle(c->from);
    memset(c, 0, sizeof *c);
}

static int snap_pid(int pid, memdiff_snapshot **out)
{
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = pid;
    return memdiff_snapshot_take(&o, out);
}

/* Whether the working-set calls answer for another process here. Wine 8 does not implement
 * NtQueryVirtualMemory(MemoryWorkingSetExInformation) for other processes (measured: the call
 * fails), so memdiff refuses such a snapshot with a clear status rather than report no pages. */
static int remote_working_set(HANDLE process)
{
    PSAPI_WORKING_SET_EX_INFORMATION one;
    memset(&one, 0, sizeof one);
    return QueryWorkingSetEx(process, &one, sizeof one) != 0;
}

static void test_other_process(void)
{
    const uint64_t pg = wintest_page();
    child c;
    memdiff_snapshot *a = NULL, *b = NULL;
    memdiff_diff *d = NULL;
    if (!CHECK(start_child(&c))) {
        end_child(&c);
        return;
    }
    int pid = (int)c.pi.dwProcessId;
    HANDLE probe = OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ, FALSE, (DWORD)pid);
    int supported = probe && remote_working_set(probe);
    if (probe)
        CloseHandle(probe);
    int rc = snap_pid(pid, &a);
    if (!supported) {
        /* Under Wine: no working set of another process, so no snapshot, and a reason. */
        CHECK(wintest_under_wine());
        CHECK_EQ(rc, (uint64_t)MEMDIFF_ENOTSUP);
        CHECK(a == NULL);
        CHECK(strstr(memdiff_last_error(), "QueryWorkingSetEx") != NULL);
        printf("    other processes: %s\n", memdiff_last_error());
        end_child(&c);
        return;
    }
    if (!CHECK_EQ(rc, MEMDIFF_OK)) {
        printf("    %s\n", memdiff_last_error());
        goto out;
    }
    memdiff_snapshot_info in;
    memdiff_snapshot_get_info(a, &in);
    CHECK_EQ(in.pid, pid);
    memdiff_region r;
    if (CHECK(memdiff_snapshot_find(a, c.addr, &r) == MEMDIFF_OK)) {
        CHECK_EQ(r.category, MEMDIFF_CAT_PRIVATE);
        CHECK_EQ(r.resident_bytes, CHILD_FIRST * pg);
    }
    char line[16];
    if (!CHECK(say(&c, "more\n") && read_line(c.from, line, sizeof line)))
        goto out;
    if (!CHECK_EQ(snap_pid(pid, &b), MEMDIFF_OK) || !CHECK_EQ(memdiff_compare(a, b, 0, &d), 0))
        goto out;
    memdiff_block blk;
    if (CHECK(wintest_block_at(d, c.addr, MEMDIFF_CAT_PRIVATE, &blk)))
        CHECK_EQ(blk.totals.new_bytes, CHILD_MORE * pg);
out:
    end_child(&c);
    memdiff_diff_free(d);
    memdiff_snapshot_free(b);
    memdiff_snapshot_free(a);
}

/* The backend's facts about another process, one function at a time. Where the working set
 * of another process cannot be read (Wine), memdiff__plat_open refuses and the process is
 * opened here as it would have opened it, so that the region walk, threads, modules, heaps and
 * totals of another process are still exercised. */
static void test_other_process_facts(void)
{
    const uint64_t pg = wintest_page();
    child c;
    if (!CHECK(start_child(&c))) {
        end_child(&c);
        return;
    }
    memdiff__arena scratch = MEMDIFF__ARENA_INIT;
    memdiff__proc *proc = NULL;
    memdiff__caps caps;
    memdiff__open_args args = {(int)c.pi.dwProcessId, NULL, NULL, 0, 1};
    int rc = memdiff__plat_open(&args, &scratch, &proc, &caps);
    if (rc == MEMDIFF_ENOTSUP) {
        proc = memdiff__arena_alloc(&scratch, sizeof *proc);
        REQUIRE(proc != NULL);
        proc->process = OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ, FALSE,
                                    c.pi.dwProcessId);
        proc->pid = (int)c.pi.dwProcessId;
        proc->scratch = &scratch;
        proc->page_size = (uint32_t)pg;
        rc = proc->process ? MEMDIFF_OK : MEMDIFF_EACCES;
    }
    if (!CHECK_EQ(rc, MEMDIFF_OK))
        goto out;

    char exe[MAX_PATH * 3];
    WCHAR wexe[MAX_PATH];
    GetModuleFileNameW(NULL, wexe, MAX_PATH);
    WideCharToMultiByte(CP_UTF8, 0, wexe, -1, exe, (int)sizeof exe, NULL, NULL);

    memdiff__plat_region *regions = NULL;
    size_t nregions = 0;
    if (!CHECK_EQ(memdiff__plat_regions(proc, &scratch, &regions, &nregions), MEMDIFF_OK))
        goto out;
    int found = 0, image = 0, peb_teb = 0;
    for (size_t i = 0; i < nregions; i++) {
        const memdiff__plat_region *r = &regions[i];
        CHECK(i == 0 || r->start >= regions[i - 1].end);
        if (r->start == c.addr) {
            found = 1;
            CHECK_EQ(r->end, c.addr + 64 * pg);
            CHECK_EQ(r->alloc_base, c.addr);
            CHECK_EQ(r->prot, MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE);
            CHECK_EQ(r->flags, 0);
            CHECK_EQ(r->hint, MEMDIFF__HINT_NONE);
        }
        if (r->hint == MEMDIFF__HINT_IMAGE && _stricmp(r->path, exe) == 0) {
            image++;
            CHECK(r->flags == MEMDIFF_REGION_FILE && r->inode != 0);
        }
        peb_teb += r->hint == MEMDIFF__HINT_PEB_TEB;
    }
    CHECK(found);
    CHECK(image >= 2); /* headers and sections */
    CHECK(peb_teb >= 1);

    memdiff__plat_thread *threads = NULL;
    size_t nthreads = 0;
    if (CHECK_EQ(memdiff__plat_threads(proc, &scratch, &threads, &nthreads), MEMDIFF_OK)) {
        int main_thread = 0;
        for (size_t i = 0; i < nthreads; i++) {
            if (threads[i].tid == (int64_t)c.pi.dwThreadId) {
                main_thread = 1;
                CHECK(threads[i].stack_hi > threads[i].stack_lo && threads[i].stack_lo != 0);
            }
        }
        CHECK(main_thread);
    }

    memdiff__plat_module *mods = NULL;
    size_t nmods = 0;
    if (CHECK_EQ(memdiff__plat_modules(proc, &scratch, regions, nregions, &mods, &nmods),
                 MEMDIFF_OK)) {
        int self = 0;
        for (size_t i = 0; i < nmods; i++) {
            if (_stricmp(mods[i].path, exe) == 0) {
                self = 1;
                CHECK(mods[i].segment_count >= 3);
                CHECK_EQ(mods[i].segments[0].kind, MEMDIFF__SEG_HEADERS);
                CHECK_EQ(mods[i].segments[0].start, mods[i].base);
            }
        }
        CHECK(self);
        CHECK(nmods >= 3); /* the exe, ntdll, kernel32 at least */
    }

    memdiff__plat_heap *heaps = NULL;
    size_t nheaps = 0;
    if (CHECK_EQ(memdiff__plat_heaps(proc, &scratch, regions, nregions, &heaps, &nheaps),
                 MEMDIFF_OK)) {
        int process_heap = 0;
        for (size_t i = 0; i < nheaps; i++)
            process_heap |= strcmp(heaps[i].label, "process heap") == 0;
        CHECK(process_heap);
        printf("    other process: %zu regions, %zu threads, %zu modules, %zu heaps\n", nregions,
               nthreads, nmods, nheaps);
    }

    memdiff_process_totals t;
    if (CHECK_EQ(memdiff__plat_totals(proc, &t), MEMDIFF_OK)) {
        CHECK(t.vm_rss >= CHILD_FIRST * pg);
        CHECK(t.vm_size >= 64 * pg);
    }
out:
    memdiff__plat_close(proc);
    memdiff__arena_release(&scratch);
    end_child(&c);
}

/* A pid nobody has, and a process that has exited (still held, and then released). */
static void test_dead_processes(void)
{
    memdiff_snapshot *s = NULL;
    CHECK_EQ(snap_pid(0x7ffffff0, &s), (uint64_t)MEMDIFF_ESRCH);
    CHECK(s == NULL);
    CHECK(strstr(memdiff_last_error(), "OpenProcess") != NULL);

    child c;
    if (!CHECK(start_child(&c))) {
        end_child(&c);
        return;
    }
    int pid = (int)c.pi.dwProcessId;
    say(&c, "exit\n");
    CHECK(WaitForSingleObject(c.pi.hProcess, 10000) == WAIT_OBJECT_0);
    /* Our handle keeps the process object: OpenProcess may succeed on a process that exited. */
    CHECK_EQ(snap_pid(pid, &s), (uint64_t)MEMDIFF_ESRCH);
    CHECK(s == NULL);
    CHECK(memdiff__win_error(c.pi.hProcess, ERROR_ACCESS_DENIED, "x") == MEMDIFF_ESRCH);
    end_child(&c);
    CHECK_EQ(snap_pid(pid, &s), (uint64_t)MEMDIFF_ESRCH);
    CHECK(s == NULL);
}

const wintest_case wintest_process_cases[] = {
    {"other_process", test_other_process},
    {"other_process_facts", test_other_process_facts},
    {"dead_processes", test_dead_processes},
    {NULL, NULL},
};
