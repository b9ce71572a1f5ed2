/*
 * system.c - system snapshots on Windows: not yet (MEMDIFF_ENOTSUP). The whole machine's
 * physical pages would come from NtQuerySystemInformation (SystemSuperfetchInformation, as WPA's
 * Resident Set view reads them), which needs SeProfileSingleProcessPrivilege; files of system
 * snapshots taken elsewhere load and compare here like any other.
 */
#include <string.h>

#include "win.h"

static int unsupported(void)
{
    return memdiff__set_error(MEMDIFF_ENOTSUP, "system snapshots are not supported on Windows "
                                               "yet");
}

int memdiff__plat_sys_open(const char *proc_root, memdiff__arena *arena, memdiff__sys **out,
                           memdiff__sys_caps *caps)
{
    (void)proc_root;
    (void)arena;
    *out = NULL;
    memset(caps, 0, sizeof *caps);
    return unsupported();
}

void memdiff__plat_sys_close(memdiff__sys *sys)
{
    (void)sys;
}

int memdiff__plat_sys_pids(memdiff__sys *sys, memdiff__arena *arena, int **out, size_t *count)
{
    (void)sys;
    (void)arena;
    *out = NULL;
    *count = 0;
    return unsupported();
}

int memdiff__plat_sys_ident(memdiff__sys *sys, int pid, memdiff__arena *arena,
                            memdiff__sys_ident *out)
{
    (void)sys;
    (void)pid;
    (void)arena;
    memset(out, 0, sizeof *out);
    return unsupported();
}

int memdiff__plat_sys_rollup(memdiff__sys *sys, int pid, memdiff__arena *scratch,
                             memdiff__sys_usage *out)
{
    (void)sys;
    (void)pid;
    (void)scratch;
    memset(out, 0, sizeof *out);
    return unsupported();
}

int memdiff__plat_sys_status(memdiff__sys *sys, int pid, memdiff__arena *scratch,
                             memdiff__sys_status *out)
{
    (void)sys;
    (void)pid;
    (void)scratch;
    memset(out, 0, sizeof *out);
    return unsupported();
}

int memdiff__plat_sys_mapcounts(memdiff__sys *sys, uint64_t *key, size_t n, unsigned shift,
                                uint64_t *counts)
{
    (void)sys;
    (void)key;
    (void)n;
    (void)shift;
    (void)counts;
    return unsupported();
}

int memdiff__plat_sys_frames(memdiff__sys *sys, uint64_t first, size_t n, unsigned char *klass,
                             size_t *got)
{
    (void)sys;
    (void)first;
    (void)n;
    (void)klass;
    *got = 0;
    return unsupported();
}

int memdiff__plat_sys_meminfo(memdiff__sys *sys, memdiff__sys_meminfo *out)
{
    (void)sys;
    memset(out, 0, sizeof *out);
    return unsupported();
}
