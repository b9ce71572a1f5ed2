/*
 * error.c - the Windows backend's one translation of Win32 errors into memdiff statuses.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "win.h"

/* Win32 error codes (winerror.h) to memdiff statuses. Everything else is MEMDIFF_EIO. */
static int status_of(DWORD err)
{
    switch (err) {
    case ERROR_INVALID_PARAMETER:
        /* OpenProcess's answer for a pid that does not exist (the backend passes no other
         * invalid parameters to the calls it translates). */
    case ERROR_INVALID_HANDLE:
        return MEMDIFF_ESRCH;
    case ERROR_ACCESS_DENIED:
    case ERROR_PRIVILEGE_NOT_HELD:
        return MEMDIFF_EACCES;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
    case ERROR_COMMITMENT_LIMIT:
    case ERROR_NO_SYSTEM_RESOURCES:
        return MEMDIFF_ENOMEM;
    case ERROR_PARTIAL_COPY: /* ReadProcessMemory over memory unmapped meanwhile */
    case ERROR_NOACCESS:
        return MEMDIFF_ECHANGED;
    case ERROR_NOT_SUPPORTED:
    case ERROR_CALL_NOT_IMPLEMENTED:
    case ERROR_INVALID_FUNCTION:
        return MEMDIFF_ENOTSUP;
    default:
        return MEMDIFF_EIO;
    }
}

static int exited(HANDLE process)
{
    DWORD code;
    /* GetExitCodeProcess needs only the PROCESS_QUERY_INFORMATION every handle here has (a wait
     * would need SYNCHRONIZE, which we do not ask for). A process that exits with code 259
     * (STILL_ACTIVE) looks alive: its next call fails again and is translated as usual. */
    return process && GetExitCodeProcess(process, &code) && code != STILL_ACTIVE;
}

#if defined(__MINGW_PRINTF_FORMAT)
__attribute__((format(__MINGW_PRINTF_FORMAT, 4, 0)))
#endif
static int report(int status, HANDLE process, DWORD err, const char *fmt, va_list ap)
{
    char what[256];
    vsnprintf(what, sizeof what, fmt, ap);

    if (exited(process))
        return memdiff__set_error(MEMDIFF_ESRCH, "%s: the process has exited", what);

    char text[256];
    DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, err,
                             MAKELANGID(LANG_NEUTRAL, SUBLANG_DEFAULT), text, sizeof text, NULL);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' ||
                     text[n - 1] == '.'))
        n--;
    text[n] = '\0';
    return memdiff__set_error(status, "%s: %s (error %lu)", what, n ? text : "unknown error",
                              (unsigned long)err);
}

int memdiff__win_error(HANDLE process, DWORD err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = report(status_of(err), process, err, fmt, ap);
    va_end(ap);
    return rc;
}

int memdiff__win_error_as(int status, HANDLE process, DWORD err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = report(status, process, err, fmt, ap);
    va_end(ap);
    return rc;
}
