/*
 * names.c - file names: GetMappedFileNameW's NT paths made DOS paths, UTF-16 made UTF-8, and a
 * file identity for the compare.
 */
#include <string.h>

#include "win.h"

char *memdiff__win_utf8(memdiff__arena *arena, const WCHAR *s, size_t n)
{
    int wn = n == (size_t)-1 ? -1 : (int)n;
    if (wn == 0)
        return memdiff__arena_strndup(arena, "", 0);
    int len = WideCharToMultiByte(CP_UTF8, 0, s, wn, NULL, 0, NULL, NULL);
    if (len <= 0) {
        memdiff__win_error(NULL, GetLastError(), "WideCharToMultiByte");
        return NULL;
    }
    char *out = memdiff__arena_alloc(arena, (size_t)len + 1);
    if (!out)
        return NULL;
    WideCharToMultiByte(CP_UTF8, 0, s, wn, out, len, NULL, NULL);
    out[len] = '\0'; /* with n == -1 the count included the NUL already: harmless */
    return out;
}

static WCHAR fold(WCHAR c)
{
    return c >= L'a' && c <= L'z' ? (WCHAR)(c - L'a' + L'A') : c;
}

/* Whether s starts with prefix (ASCII case folded), prefix_len units long. */
static int starts_with(const WCHAR *s, size_t len, const WCHAR *prefix, size_t prefix_len)
{
    if (len < prefix_len)
        return 0;
    for (size_t i = 0; i < prefix_len; i++) {
        if (fold(s[i]) != fold(prefix[i]))
            return 0;
    }
    return 1;
}

/* Replaces path[0..cut) with repl (never longer than cut). */
static void replace_prefix(WCHAR *path, size_t *len, size_t cut, const WCHAR *repl,
                           size_t repl_len)
{
    memmove(path + repl_len, path + cut, (*len - cut + 1) * sizeof *path); /* NUL too */
    memcpy(path, repl, repl_len * sizeof *path);
    *len -= cut - repl_len;
}

/* The drive letters and the NT devices they name, read once per proc: QueryDosDevice is cheap,
 * but a snapshot asks for hundreds of names. */
static void read_drives(memdiff__proc *proc)
{
    DWORD mask = GetLogicalDrives();
    proc->drive_count = 0;
    for (int i = 0; i < 26; i++) {
        if (!(mask & (1u << i)))
            continue;
        memdiff__win_drive *d = &proc->drives[proc->drive_count];
        WCHAR name[3] = {(WCHAR)(L'A' + i), L':', 0};
        DWORD n = QueryDosDeviceW(name, d->device, sizeof d->device / sizeof d->device[0]);
        if (n == 0)
            continue;
        d->letter = name[0];
        d->device_len = wcslen(d->device);
        if (d->device_len > 0)
            proc->drive_count++;
    }
    proc->drives_read = 1;
}

void memdiff__win_dos_path(memdiff__proc *proc, WCHAR *path, size_t *len)
{
    static const WCHAR unc[] = L"\\\\";
    /* "\??\C:\x" (how Wine answers, and object-manager paths) and "\\?\C:\x" (Win32 long
     * paths): the DOS path follows the prefix; "\??\UNC\server\share" is a network path. */
    if (starts_with(path, *len, L"\\??\\", 4) || starts_with(path, *len, L"\\\\?\\", 4)) {
        if (starts_with(path + 4, *len - 4, L"UNC\\", 4))
            replace_prefix(path, len, 8, unc, 2);
        else
            replace_prefix(path, len, 4, L"", 0);
        return;
    }
    /* Network redirectors: "\Device\Mup\server\share\f" is "\\server\share\f". */
    if (starts_with(path, *len, L"\\Device\\Mup\\", 12)) {
        replace_prefix(path, len, 12, unc, 2);
        return;
    }
    if (!proc->drives_read)
        read_drives(proc);
    for (size_t i = 0; i < proc->drive_count; i++) {
        const memdiff__win_drive *d = &proc->drives[i];
        if (starts_with(path, *len, d->device, d->device_len) &&
            (path[d->device_len] == L'\\' || path[d->device_len] == 0)) {
            WCHAR drive[2] = {d->letter, L':'};
            replace_prefix(path, len, d->device_len, drive, 2);
            return;
        }
    }
}

/* FNV-1a over the UTF-8 bytes, ASCII case folded. */
static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'a' && c <= 'z')
            c = (unsigned char)(c - 'a' + 'A');
        h ^= c;
        h *= UINT64_C(1099511628211);
    }
    return h ? h : 1; /* 0 means "anonymous" to the core */
}

void memdiff__win_file_id(const char *path, uint64_t *dev, uint64_t *inode)
{
    size_t n = strlen(path);
    if (n == 0) {
        *dev = *inode = 0;
        return;
    }
    /* The volume: "C:", or "\\server\share" for network paths. */
    size_t vol = n;
    if (n >= 2 && path[1] == ':') {
        vol = 2;
    } else if (n >= 2 && path[0] == '\\' && path[1] == '\\') {
        const char *share = strchr(path + 2, '\\');
        const char *end = share ? strchr(share + 1, '\\') : NULL;
        vol = end ? (size_t)(end - path) : n;
    }
    *dev = hash(path, vol);
    *inode = hash(path, n);
}

const char *memdiff__win_mapped_name(memdiff__proc *proc, memdiff__arena *arena, uint64_t addr)
{
    if (!proc->name_buf) {
        proc->name_buf =
            memdiff__arena_alloc(proc->scratch, MEMDIFF__WIN_NAME_MAX * sizeof(WCHAR));
        if (!proc->name_buf)
            return NULL;
    }
    /* Fails for anonymous memory and for pagefile-backed sections (no file): both unnamed. */
    DWORD n = GetMappedFileNameW(proc->process, (LPVOID)(uintptr_t)addr, proc->name_buf,
                                 MEMDIFF__WIN_NAME_MAX);
    if (n == 0 || n >= MEMDIFF__WIN_NAME_MAX)
        return "";
    size_t len = n;
    proc->name_buf[len] = 0;
    memdiff__win_dos_path(proc, proc->name_buf, &len);
    return memdiff__win_utf8(arena, proc->name_buf, len);
}
