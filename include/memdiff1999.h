/*
 * memdiff1999.h - Matt Pietrek's MemDiff API (Microsoft Systems Journal, November 1999, "Under
 * the Hood") over memdiff, for Windows. Header only: include it instead of the article's
 * memdiff.h and link memdiff; code written against the article compiles and works:
 *
 *     HANDLE h1 = MDTakeSnapshot(GetCurrentProcess());
 *     suspect_code();
 *     HANDLE h2 = MDTakeSnapshot(GetCurrentProcess());
 *     MDCompareSnapshot(h1, h2, GetStdHandle(STD_OUTPUT_HANDLE), FALSE);
 *     MDFreeSnapshot(h1);
 *     MDFreeSnapshot(h2);
 *
 * The article's functions, as it declared them (extern "C", __stdcall):
 *     HANDLE MDTakeSnapshot(HANDLE hProcess);
 *     BOOL   MDCompareSnapshot(HANDLE hSnapshot1, HANDLE hSnapshot2, HANDLE hReportFile,
 *                              bool fVerbose);
 *     BOOL   MDFreeSnapshot(HANDLE hSnapshot);
 * Here they are static inline functions (no calling convention to match, nothing to export);
 * fVerbose is a BOOL, which C++ callers passing true / false convert to. A snapshot "HANDLE" is
 * a memdiff_snapshot pointer: not a kernel handle, never to be passed to CloseHandle.
 *
 * What differs from the 1999 implementation, for the better:
 *  - A snapshot is the whole address space classified at snapshot time (module, heap, stack,
 *    mapped file...), not the raw QueryWorkingSet list attributed at compare time.
 *  - A snapshot may be compared any number of times (MemDiff refused a second compare).
 *  - hProcess may name another process: it needs PROCESS_QUERY_INFORMATION access (memdiff
 *    opens its own handle by the process id with PROCESS_QUERY_INFORMATION | PROCESS_VM_READ).
 *  - The report is memdiff's text report (memdiff_report_text), written to hReportFile with
 *    CRLF line ends as MemDiff wrote them. On failure the reason is in memdiff_last_error().
 *
 * Windows only; docs/windows.md describes where the figures come from.
 */
#ifndef MEMDIFF1999_H
#define MEMDIFF1999_H

#ifndef _WIN32
#error "memdiff1999.h is MemDiff's Windows API; elsewhere use memdiff.h"
#endif

#include <windows.h>

#include <fcntl.h>
#include <io.h>
#include <stdint.h>
#include <stdio.h>
#ifndef __cplusplus
#include <stdbool.h> /* the article's callers pass false / true */
#endif

#include "memdiff.h"

/* A snapshot of the process hProcess names (GetCurrentProcess() for the calling one), at
 * memdiff's default (standard) depth. NULL on failure. */
static inline HANDLE MDTakeSnapshot(HANDLE hProcess)
{
    DWORD pid = GetProcessId(hProcess);
    if (pid == 0)
        return NULL;
    memdiff_options options = MEMDIFF_OPTIONS_INIT;
    options.pid = pid == GetCurrentProcessId() ? 0 : (int)pid;
    memdiff_snapshot *snapshot = NULL;
    if (memdiff_snapshot_take(&options, &snapshot) != MEMDIFF_OK)
        return NULL;
    return (HANDLE)snapshot;
}

/* Writes the difference hSnapshot1 -> hSnapshot2 to hReportFile (a file, pipe or console
 * handle with write access): by allocation unit, or with fVerbose by runs of pages with
 * identical attributes. The snapshots stay valid. FALSE on failure. */
static inline BOOL MDCompareSnapshot(HANDLE hSnapshot1, HANDLE hSnapshot2, HANDLE hReportFile,
                                     BOOL fVerbose)
{
    if (!hSnapshot1 || !hSnapshot2 || !hReportFile || hReportFile == INVALID_HANDLE_VALUE)
        return FALSE;
    memdiff_diff *diff = NULL;
    if (memdiff_compare((const memdiff_snapshot *)hSnapshot1,
                        (const memdiff_snapshot *)hSnapshot2,
                        fVerbose ? MEMDIFF_COMPARE_VERBOSE : 0u, &diff) != MEMDIFF_OK)
        return FALSE;
    /* The report writer takes a FILE *: give it one over a duplicate of the caller's handle,
     * in text mode (CRLF), so that closing the stream closes our duplicate, not their handle. */
    HANDLE dup = NULL;
    BOOL ok = DuplicateHandle(GetCurrentProcess(), hReportFile, GetCurrentProcess(), &dup, 0,
                              FALSE, DUPLICATE_SAME_ACCESS);
    FILE *out = NULL;
    if (ok) {
        int fd = _open_osfhandle((intptr_t)dup, _O_WRONLY | _O_TEXT);
        if (fd == -1)
            CloseHandle(dup);
        else if (!(out = _fdopen(fd, "w")))
            _close(fd);
    }
    ok = out != NULL && memdiff_report_text(diff, out, 0) == MEMDIFF_OK;
    if (out && fclose(out) != 0)
        ok = FALSE;
    memdiff_diff_free(diff);
    return ok;
}

/* Releases a snapshot from MDTakeSnapshot. FALSE for NULL. */
static inline BOOL MDFreeSnapshot(HANDLE hSnapshot)
{
    if (!hSnapshot)
        return FALSE;
    memdiff_snapshot_free((memdiff_snapshot *)hSnapshot);
    return TRUE;
}

#endif /* MEMDIFF1999_H */
