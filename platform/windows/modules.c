/*
 * modules.c - loaded modules (EnumProcessModulesEx, GetModuleFileNameExW, GetModuleInformation)
 * and their segments: the PE headers and every section from the section table, read from the
 * process's memory with ReadProcessMemory (Microsoft PE/COFF specification, "Section Table").
 */
#include <string.h>

#include "win.h"

/* A section's kind from its characteristics, not its name: linkers name sections freely
 * (.text, CODE, .rdata, .data, .bss, .tls, .CRT, .pdata...), the flags say what the loader did. */
static memdiff__seg_kind kind_of(const IMAGE_SECTION_HEADER *s)
{
    DWORD c = s->Characteristics;
    if (c & (IMAGE_SCN_MEM_EXECUTE | IMAGE_SCN_CNT_CODE))
        return MEMDIFF__SEG_TEXT;
    if (c & IMAGE_SCN_MEM_WRITE) {
        /* Only uninitialised data and nothing from the file: .bss. */
        if (s->SizeOfRawData == 0 && (c & IMAGE_SCN_CNT_UNINITIALIZED_DATA))
            return MEMDIFF__SEG_BSS;
        return MEMDIFF__SEG_DATA;
    }
    if (c & IMAGE_SCN_MEM_READ)
        return MEMDIFF__SEG_RODATA;
    return MEMDIFF__SEG_OTHER;
}

/* Reads the module's section table and fills its segments. A module whose headers cannot be
 * read (unloaded meanwhile, or not a PE image) keeps one segment: the whole image. */
static int read_segments(memdiff__proc *proc, memdiff__arena *arena, memdiff__plat_module *mod,
                         uint64_t size_of_image)
{
    uint64_t ps = proc->page_size;
    IMAGE_DOS_HEADER dos;
    DWORD sig = 0;
    IMAGE_FILE_HEADER fh;
    WORD magic = 0;
    uint64_t nt = 0;
    int ok = memdiff__win_read(proc->process, mod->base, &dos, sizeof dos) &&
             dos.e_magic == IMAGE_DOS_SIGNATURE && dos.e_lfanew > 0 &&
             (uint64_t)dos.e_lfanew < size_of_image;
    if (ok) {
        nt = mod->base + (uint64_t)dos.e_lfanew;
        ok = memdiff__win_read(proc->process, nt, &sig, sizeof sig) && sig == IMAGE_NT_SIGNATURE &&
             memdiff__win_read(proc->process, nt + sizeof sig, &fh, sizeof fh) &&
             memdiff__win_read(proc->process, nt + sizeof sig + sizeof fh, &magic, sizeof magic);
    }
    /* SizeOfHeaders sits at the same offset in PE32 and PE32+ optional headers (60). */
    DWORD size_of_headers = 0;
    if (ok)
        ok = (magic == IMAGE_NT_OPTIONAL_HDR32_MAGIC || magic == IMAGE_NT_OPTIONAL_HDR64_MAGIC) &&
             memdiff__win_read(proc->process, nt + sizeof sig + sizeof fh + 60, &size_of_headers,
                      sizeof size_of_headers);
    size_t nsec = ok ? fh.NumberOfSections : 0;
    IMAGE_SECTION_HEADER *sec = NULL;
    if (nsec > 0) {
        sec = memdiff__arena_alloc(proc->scratch, nsec * sizeof *sec);
        if (!sec)
            return MEMDIFF_ENOMEM;
        uint64_t table = nt + sizeof sig + sizeof fh + fh.SizeOfOptionalHeader;
        if (!memdiff__win_read(proc->process, table, sec, nsec * sizeof *sec))
            nsec = 0;
    }

    mod->segments = memdiff__arena_alloc(arena, (nsec + 1) * sizeof *mod->segments);
    if (!mod->segments)
        return MEMDIFF_ENOMEM;
    uint64_t image_end = mod->base + (size_of_image + ps - 1) / ps * ps;
    if (!ok || nsec == 0) {
        mod->segments[0].start = mod->base;
        mod->segments[0].end = image_end;
        mod->segments[0].kind = MEMDIFF__SEG_OTHER;
        mod->segment_count = 1;
        return MEMDIFF_OK;
    }
    size_t n = 0;
    uint64_t pos = mod->base;
    uint64_t hdr_end = mod->base + ((uint64_t)size_of_headers + ps - 1) / ps * ps;
    if (hdr_end > mod->base && hdr_end <= image_end) {
        mod->segments[n++] = (memdiff__plat_segment){mod->base, hdr_end, MEMDIFF__SEG_HEADERS};
        pos = hdr_end;
    }
    /* Sections are sorted by address (the PE format requires it) and mapped page by page: round
     * each to pages, and clip where a low section alignment lets two sections share a page. */
    for (size_t i = 0; i < nsec; i++) {
        uint64_t vsize = sec[i].Misc.VirtualSize ? sec[i].Misc.VirtualSize : sec[i].SizeOfRawData;
        uint64_t start = mod->base + sec[i].VirtualAddress / ps * ps;
        uint64_t end = mod->base + ((uint64_t)sec[i].VirtualAddress + vsize + ps - 1) / ps * ps;
        if (start < pos)
            start = pos;
        if (end > image_end)
            end = image_end;
        if (end <= start)
            continue;
        mod->segments[n++] = (memdiff__plat_segment){start, end, kind_of(&sec[i])};
        pos = end;
    }
    mod->segment_count = n;
    return MEMDIFF_OK;
}

int memdiff__plat_modules(memdiff__proc *proc, memdiff__arena *arena,
                          const memdiff__plat_region *regions, size_t region_count,
                          memdiff__plat_module **out, size_t *count)
{
    (void)regions;
    (void)region_count;
    *out = NULL;
    *count = 0;

    /* The module list may grow between the sizing call and the reading call: retry. */
    HMODULE *mods = NULL;
    DWORD cap_bytes = 0, need = 256 * sizeof(HMODULE);
    for (int tries = 0; need > cap_bytes && tries < 8; tries++) {
        cap_bytes = need + 64 * sizeof(HMODULE);
        mods = memdiff__arena_alloc(proc->scratch, cap_bytes);
        if (!mods)
            return MEMDIFF_ENOMEM;
        if (!EnumProcessModulesEx(proc->process, mods, cap_bytes, &need, LIST_MODULES_ALL))
            return memdiff__win_error(proc->process, GetLastError(),
                                      "EnumProcessModulesEx(pid %d)", proc->pid);
    }
    size_t n = need / sizeof(HMODULE);
    if (n * sizeof(HMODULE) > cap_bytes)
        n = cap_bytes / sizeof(HMODULE);
    if (n == 0)
        return MEMDIFF_OK;

    memdiff__plat_module *v = memdiff__arena_alloc(arena, n * sizeof *v);
    if (!v)
        return MEMDIFF_ENOMEM;
    if (!proc->name_buf) {
        proc->name_buf =
            memdiff__arena_alloc(proc->scratch, MEMDIFF__WIN_NAME_MAX * sizeof(WCHAR));
        if (!proc->name_buf)
            return MEMDIFF_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        MODULEINFO mi;
        /* A module unloaded since the list was read: left out. */
        if (!GetModuleInformation(proc->process, mods[i], &mi, sizeof mi))
            continue;
        DWORD len = GetModuleFileNameExW(proc->process, mods[i], proc->name_buf,
                                         MEMDIFF__WIN_NAME_MAX);
        if (len == 0 || len >= MEMDIFF__WIN_NAME_MAX)
            continue;
        size_t wlen = len;
        proc->name_buf[wlen] = 0;
        memdiff__win_dos_path(proc, proc->name_buf, &wlen); /* "\\?\C:\..." long paths */
        memdiff__plat_module *m = &v[k];
        memset(m, 0, sizeof *m);
        m->path = memdiff__win_utf8(arena, proc->name_buf, wlen);
        if (!m->path)
            return MEMDIFF_ENOMEM;
        m->base = (uint64_t)(uintptr_t)mi.lpBaseOfDll;
        int rc = read_segments(proc, arena, m, mi.SizeOfImage);
        if (rc)
            return rc;
        k++;
    }
    *out = v;
    *count = k;
    return MEMDIFF_OK;
}
