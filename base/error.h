/*
 * error.h - the detail message behind every negative status (base/error.c): core and backends
 * record it here, memdiff_last_error() hands it out.
 */
#ifndef MEMDIFF_BASE_ERROR_H
#define MEMDIFF_BASE_ERROR_H

#include "base/attrs.h"

/* Records a detail message for memdiff_last_error() and returns status, so a backend can write
 * `return memdiff__set_error(MEMDIFF_ESRCH, "open %s: %s", path, strerror(e));`. */
int memdiff__set_error(int status, const char *fmt, ...) MEMDIFF__PRINTF(2, 3);

/* The last detail as it was formatted, not escaped: for text that is escaped again when it is
 * printed (a degraded note), so that it is escaped once. */
const char *memdiff__last_error_raw(void);

/* Sets the error for a file operation (what: "open", "create", "rename to", ...) on path that
 * failed with errno e: MEMDIFF_EACCES for a permission or a read-only file system, MEMDIFF_EIO
 * otherwise. The snapshot file code and the POSIX backend's file services both report this
 * way. */
int memdiff__file_open_error(const char *what, const char *path, int e);

#endif /* MEMDIFF_BASE_ERROR_H */
