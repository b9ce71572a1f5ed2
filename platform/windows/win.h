/*
 * win.h - private to the Windows backend (platform/windows/). Not installed.
 *
 * Named win.h, not windows.h: this folder is on the library's include path, and a header called
 * windows.h here would shadow the SDK's <windows.h> for every file of the library.
 *
 * The backend reads a process through documented Win32 calls (VirtualQueryEx, QueryWorkingSet,
 * QueryWorkingSetEx, GetMappedFileNameW, EnumProcessModulesEx, ReadProcessMemory, HeapWalk,
 * Toolhelp32, GetProcessMemoryInfo) plus two ntdll queries resolved at run time
 * (NtQueryInformationProcess / NtQueryInformationThread, for the PEB and TEB addresses). It never
 * calls malloc or HeapAlloc: buffers come from the scratch arena, so that a snapshot does not
 * disturb the heaps it measures. docs/windows.md says where every figure comes from.
 */
#ifndef MEMDIFF_WIN_H
#define MEMDIFF_WIN_H

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <psapi.h>
#include <stddef.h>
#include <stdint.h>

#include "platform.h"

/* What the working-set calls tell about a page, folded into MEMDIFF_PAGE_* by the decoders. */
#define MEMDIFF__WIN_REGION_FILE 0x1u /* the page belongs to MEM_IMAGE or MEM_MAPPED memory */

/* The longest NT path (UNICODE_STRING counts bytes in a USHORT), in UTF-16 units. */
#define MEMDIFF__WIN_NAME_MAX 32768u

/* Batch size for QueryWorkingSetEx: one call asks for this many pages (64 KiB of entries). */
#define MEMDIFF__WIN_EX_BATCH 4096u

/* One VirtualQueryEx answer, kept for the page walk (which needs the type and state of the
 * memory at an address) and for totals. */
typedef struct memdiff__win_region {
    uint64_t start, end;
    uint64_t alloc_base;
    DWORD state;   /* MEM_COMMIT, MEM_RESERVE */
    DWORD type;    /* MEM_IMAGE, MEM_MAPPED, MEM_PRIVATE */
    DWORD protect;
} memdiff__win_region;

/* A thread as Toolhelp and its TEB describe it. */
typedef struct memdiff__win_thread {
    DWORD tid;
    uint64_t teb;                /* 0 when it could not be read */
    uint64_t stack_lo, stack_hi; /* DeallocationStack, StackBase; 0, 0 when unknown */
} memdiff__win_thread;

/* A DOS drive and the NT device it names ("C:" and "\Device\HarddiskVolume3"). */
typedef struct memdiff__win_drive {
    WCHAR letter;
    WCHAR device[128];
    size_t device_len;
} memdiff__win_drive;

/* A working-set entry reduced to what a page run needs: its address and MEMDIFF_PAGE_* attrs. */
typedef struct memdiff__win_page {
    uint64_t addr;
    unsigned attrs;
} memdiff__win_page;

struct memdiff__proc {
    HANDLE process;    /* GetCurrentProcess() for self, else from OpenProcess */
    int pid;
    int self;
    memdiff__arena *scratch;
    uint32_t page_size;
    int use_qws;       /* QueryWorkingSet works for this process */
    int use_qws_ex;    /* QueryWorkingSetEx works for this process */

    memdiff__win_region *regions; /* from memdiff__plat_regions, ascending */
    size_t region_count;
    size_t region_cursor;         /* the page walk's position in regions */

    memdiff__win_thread *threads; /* read once, by the first of regions / threads */
    size_t thread_count;
    int threads_read;
    uint64_t peb;                 /* 0 when unknown */

    memdiff__win_drive drives[26];
    size_t drive_count;
    int drives_read;

    /* The whole working set (QueryWorkingSet), read at the first memdiff__plat_pages call and
     * sorted by address; later calls serve their ranges from it. */
    memdiff__win_page *ws;
    size_t ws_count;
    size_t ws_cursor;
    int ws_read;

    PSAPI_WORKING_SET_EX_INFORMATION *ex; /* MEMDIFF__WIN_EX_BATCH entries */

    WCHAR *name_buf;                      /* MEMDIFF__WIN_NAME_MAX units, for file names */

    PSAPI_WORKING_SET_INFORMATION *refs_ws; /* refset.c: QueryWorkingSet buffer, reused by */
    size_t refs_ws_entries;                 /* every working-set-size sample (its capacity) */
};

/* ---- error.c ------------------------------------------------------------------------------ */

/* The one translation of a Win32 error into a memdiff status. Sets the detail message to
 * "<what>: <system text> (error N)" and returns the status. When process is not NULL and the
 * process has exited, the status is MEMDIFF_ESRCH whatever err says: a call on a dead process
 * fails with whatever the call happened to hit. */
int memdiff__win_error(HANDLE process, DWORD err, const char *fmt, ...)
#if defined(__MINGW_PRINTF_FORMAT)
    __attribute__((format(__MINGW_PRINTF_FORMAT, 3, 4))) /* mingw's C99 printf, as vsnprintf */
#endif
    ;

/* The same detail for a status the caller decides (the error code alone would mislead: Wine
 * answers ERROR_INVALID_PARAMETER for a query it does not implement). ESRCH still wins when the
 * process has exited. */
int memdiff__win_error_as(int status, HANDLE process, DWORD err, const char *fmt, ...)
#if defined(__MINGW_PRINTF_FORMAT)
    __attribute__((format(__MINGW_PRINTF_FORMAT, 4, 5)))
#endif
    ;

/* ---- proc.c ------------------------------------------------------------------------------- */

/* Reads n bytes at addr of the process (ReadProcessMemory); 1 when all were read. A failure is
 * not an error to the callers: the structure is left out (a module unloaded meanwhile). */
int memdiff__win_read(HANDLE process, uint64_t addr, void *buf, size_t n);

/* ---- names.c ------------------------------------------------------------------------------ */

/* s (UTF-16, n units or NUL-terminated when n is (size_t)-1) as UTF-8 in arena; NULL on
 * failure (detail set). */
char *memdiff__win_utf8(memdiff__arena *arena, const WCHAR *s, size_t n);

/* An NT path as GetMappedFileNameW returns it ("\Device\HarddiskVolume3\x\y.dll",
 * "\??\C:\x\y.dll", "\Device\Mup\server\share\f") rewritten in place as a DOS path
 * ("C:\x\y.dll", "\\server\share\f"). Paths it cannot map are left as they are. len is updated. */
void memdiff__win_dos_path(memdiff__proc *proc, WCHAR *path, size_t *len);

/* A file identity for memdiff__plat_region.dev / inode: a hash of the volume and of the whole
 * path, ASCII case folded (Windows paths are case-insensitive). Equal for equal paths, which is
 * what the compare needs to tell "same file still mapped" from "another file mapped here". */
void memdiff__win_file_id(const char *path, uint64_t *dev, uint64_t *inode);

/* The DOS path of the file mapped at addr, as UTF-8 in arena; "" (static) for anonymous memory
 * and pagefile-backed sections. NULL only on allocation failure. */
const char *memdiff__win_mapped_name(memdiff__proc *proc, memdiff__arena *arena, uint64_t addr);

/* ---- threads.c ---------------------------------------------------------------------------- */

/* Reads the thread list (Toolhelp32), each thread's TEB and stack range, and the PEB address,
 * once per proc. Threads that exit meanwhile are left out. */
int memdiff__win_read_threads(memdiff__proc *proc);

/* ---- pages.c (pure decoders, exercised by tests/windows on synthetic buffers) ------------- */

/* Decodes a QueryWorkingSet buffer: entries[0..n) are PSAPI_WORKING_SET_BLOCK.Flags values
 * (Protection 0-4, ShareCount 5-7, Shared 8, VirtualPage 12-63). Writes pages sorted by
 * address into out (room for n) and returns how many; entries above max_addr (page-table and
 * system pages some Windows versions list) are dropped. region_flags_at is asked for the
 * MEMDIFF__WIN_REGION_* flags of each page; ctx is passed through. */
size_t memdiff__win_decode_ws(const ULONG_PTR *entries, size_t n, uint64_t max_addr,
                              unsigned (*region_flags_at)(void *ctx, uint64_t addr), void *ctx,
                              memdiff__win_page *out);

/* The MEMDIFF_PAGE_* attrs of one PSAPI_WORKING_SET_EX_BLOCK.Flags value (Valid 0,
 * ShareCount 1-3, Win32Protection 4-14, Shared 15, Locked 22, LargePage 23, Bad 31), or 0 when
 * the page is not valid (not in the working set). region_flags: MEMDIFF__WIN_REGION_*. */
unsigned memdiff__win_decode_ws_ex(ULONG_PTR flags, unsigned region_flags);

/* The MEMDIFF_PAGE_* attrs of a QueryWorkingSet entry's Shared / ShareCount bits. */
unsigned memdiff__win_decode_ws_entry(ULONG_PTR flags, unsigned region_flags);

#endif /* MEMDIFF_WIN_H */
