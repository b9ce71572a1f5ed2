/*
 * test_decode.c - the backend's pure parts on synthetic input: working-set decoding (the
 * QueryWorkingSet path, which fails under Wine, is fed buffers laid out as the API returns
 * them), serving page ranges from the decoded set, NT paths made DOS paths, file identities,
 * UTF-8 names and the translation of Win32 errors.
 */
#include <string.h>

#include "win.h"
#include "wintest.h"

#define PG 0x1000u

/* PSAPI_WORKING_SET_BLOCK.Flags: VirtualPage << 12 | Shared << 8 | ShareCount << 5 | Protection */
static ULONG_PTR ws_entry(uint64_t addr, int shared, unsigned share_count, unsigned prot)
{
    return (ULONG_PTR)(addr | (shared ? 0x100u : 0u) | (share_count << 5) | prot);
}

typedef struct file_range {
    uint64_t start, end;
    uint64_t last_asked; /* the callback must be asked in ascending order */
    int out_of_order;
} file_range;

static unsigned flags_in(void *ctx, uint64_t addr)
{
    file_range *f = ctx;
    if (addr < f->last_asked)
        f->out_of_order = 1;
    f->last_asked = addr;
    return addr >= f->start && addr < f->end ? MEMDIFF__WIN_REGION_FILE : 0;
}

/* A buffer as QueryWorkingSet fills it: NumberOfEntries, then entries in working-set order
 * (not address order), with a page listed twice and pages above the user address space. */
static void test_decode_ws(void)
{
    ULONG_PTR buf[16];
    size_t n = 0;
    buf[n++] = 0; /* NumberOfEntries, set below */
    buf[n++] = ws_entry(0x10003000, 0, 0, PAGE_READWRITE);
    buf[n++] = ws_entry(0x20001000, 1, 1, PAGE_READONLY);
    buf[n++] = ws_entry(0x10001000, 0, 0, PAGE_READWRITE);
    buf[n++] = (ULONG_PTR)UINT64_C(0xfffff68000001000); /* a page-table page */
    buf[n++] = ws_entry(0x10002000, 0, 0, PAGE_READWRITE);
    buf[n++] = ws_entry(0x20000000, 1, 2, PAGE_EXECUTE_READ);
    buf[n++] = ws_entry(0x10002000, 0, 0, PAGE_READWRITE); /* listed twice */
    buf[n++] = ws_entry(0x7fffffff0000, 0, 0, PAGE_READWRITE); /* above max_addr */
    buf[0] = n - 1;
    PSAPI_WORKING_SET_INFORMATION *info = (PSAPI_WORKING_SET_INFORMATION *)buf;
    CHECK_EQ(info->NumberOfEntries, 8);
    CHECK_EQ(info->WorkingSetInfo[2].VirtualPage, 0x10001); /* the layout psapi.h declares */
    CHECK_EQ(info->WorkingSetInfo[1].Shared, 1);
    CHECK_EQ(info->WorkingSetInfo[1].ShareCount, 1);

    file_range f = {0x20000000, 0x20010000, 0, 0};
    memdiff__win_page out[16];
    size_t k = memdiff__win_decode_ws(&info->WorkingSetInfo[0].Flags, info->NumberOfEntries,
                                      UINT64_C(0x7ffffffeffff), flags_in, &f, out);
    REQUIRE(CHECK_EQ(k, 5));
    CHECK(!f.out_of_order);
    const uint64_t addrs[5] = {0x10001000, 0x10002000, 0x10003000, 0x20000000, 0x20001000};
    const unsigned priv = MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE;
    const unsigned file = MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_FILE;
    const unsigned attrs[5] = {priv, priv, priv, file, file};
    for (size_t i = 0; i < 5; i++) {
        CHECK_EQ(out[i].addr, addrs[i]);
        CHECK_EQ(out[i].attrs, attrs[i]);
    }
    /* Empty and all-dropped buffers. */
    CHECK_EQ(memdiff__win_decode_ws(&info->WorkingSetInfo[0].Flags, 0, UINT64_MAX, flags_in, &f,
                                    out),
             0);
    CHECK_EQ(memdiff__win_decode_ws(&info->WorkingSetInfo[0].Flags, 8, 0xfff, flags_in, &f, out),
             0);
}

/* A Shared page is shareable (a section's page), private otherwise; ShareCount does not decide. */
static void test_decode_ws_entry(void)
{
    CHECK_EQ(memdiff__win_decode_ws_entry(ws_entry(0x1000, 0, 0, PAGE_READWRITE), 0),
             MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE);
    CHECK_EQ(memdiff__win_decode_ws_entry(ws_entry(0x1000, 1, 1, PAGE_READONLY),
                                          MEMDIFF__WIN_REGION_FILE),
             MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_FILE);
    CHECK_EQ(memdiff__win_decode_ws_entry(ws_entry(0x1000, 1, 7, PAGE_READONLY), 0),
             MEMDIFF_PAGE_PRESENT);
    /* A copy-on-write image page already copied: private, though in a file region. */
    CHECK_EQ(memdiff__win_decode_ws_entry(ws_entry(0x1000, 0, 0, PAGE_READWRITE),
                                          MEMDIFF__WIN_REGION_FILE),
             MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE);
}

/* PSAPI_WORKING_SET_EX_BLOCK values, among them ones Wine 8 was measured to return. */
static void test_decode_ws_ex(void)
{
    PSAPI_WORKING_SET_EX_BLOCK b;
    b.Flags = 0;
    b.Valid = 1;
    b.ShareCount = 1;
    b.Win32Protection = PAGE_READONLY;
    b.Shared = 1;
    CHECK_EQ(b.Flags, 0x8023); /* the layout psapi.h declares: Wine's kernel32 text pages */
    const unsigned priv = MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE;
    CHECK_EQ(memdiff__win_decode_ws_ex(0, 0), 0);
    CHECK_EQ(memdiff__win_decode_ws_ex(0x41, 0), priv); /* touched VirtualAlloc page */
    CHECK_EQ(memdiff__win_decode_ws_ex(0x201, MEMDIFF__WIN_REGION_FILE), priv); /* Wine's exe */
    CHECK_EQ(memdiff__win_decode_ws_ex(0x8023, MEMDIFF__WIN_REGION_FILE),
             MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_FILE);
    CHECK_EQ(memdiff__win_decode_ws_ex(0x8043, 0), MEMDIFF_PAGE_PRESENT); /* pagefile section */
    CHECK_EQ(memdiff__win_decode_ws_ex(0x8000, MEMDIFF__WIN_REGION_FILE), 0); /* Invalid.Shared */
    b.Flags = 0;
    b.Valid = 1;
    b.LargePage = 1;
    b.Locked = 1;
    CHECK_EQ(memdiff__win_decode_ws_ex(b.Flags, 0), priv | MEMDIFF_PAGE_HUGE);
}

typedef struct run {
    uint64_t start, npages;
    unsigned attrs;
} run;

typedef struct runs {
    run v[16];
    size_t n;
} runs;

static int collect(void *ctx, uint64_t start, uint64_t npages, unsigned attrs,
                   const uint64_t *pfn)
{
    runs *r = ctx;
    if (pfn || r->n == 16)
        return MEMDIFF_EINVAL;
    r->v[r->n++] = (run){start, npages, attrs};
    return MEMDIFF_OK;
}

/* memdiff__plat_pages over a decoded whole working set: ranges served in ascending order, a
 * range asked again (searched back), runs split where attributes or contiguity change. */
static void test_pages_from_working_set(void)
{
    const unsigned priv = MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_PRIVATE;
    const unsigned file = MEMDIFF_PAGE_PRESENT | MEMDIFF_PAGE_FILE;
    memdiff__win_page ws[] = {
        {0x10001000, priv}, {0x10002000, priv}, {0x10003000, priv}, {0x10005000, priv},
        {0x20000000, file}, {0x20001000, file}, {0x20002000, priv},
    };
    memdiff__proc proc;
    memset(&proc, 0, sizeof proc);
    proc.page_size = PG;
    proc.use_qws = 1;
    proc.ws_read = 1;
    proc.ws = ws;
    proc.ws_count = sizeof ws / sizeof ws[0];
    runs r = {.n = 0};
    memdiff__page_sink sink = {collect, &r, NULL, NULL};

    REQUIRE_OK(memdiff__plat_pages(&proc, 0x10000000, 0x10010000, MEMDIFF_DEPTH_FAST, &sink));
    REQUIRE(CHECK_EQ(r.n, 2));
    CHECK_EQ(r.v[0].start, 0x10001000);
    CHECK_EQ(r.v[0].npages, 3);
    CHECK_EQ(r.v[0].attrs, priv);
    CHECK_EQ(r.v[1].start, 0x10005000);
    CHECK_EQ(r.v[1].npages, 1);

    r.n = 0; /* a region split by the classifier: two calls over one mapping */
    REQUIRE_OK(memdiff__plat_pages(&proc, 0x20000000, 0x20001000, MEMDIFF_DEPTH_FAST, &sink));
    REQUIRE_OK(memdiff__plat_pages(&proc, 0x20001000, 0x20010000, MEMDIFF_DEPTH_FAST, &sink));
    REQUIRE(CHECK_EQ(r.n, 3));
    CHECK_EQ(r.v[0].start, 0x20000000);
    CHECK_EQ(r.v[0].npages, 1);
    CHECK_EQ(r.v[1].start, 0x20001000);
    CHECK_EQ(r.v[1].attrs, file);
    CHECK_EQ(r.v[2].start, 0x20002000);
    CHECK_EQ(r.v[2].attrs, priv);

    r.n = 0; /* asked again, lower: found by searching back */
    REQUIRE_OK(memdiff__plat_pages(&proc, 0x10002000, 0x10004000, MEMDIFF_DEPTH_STANDARD, &sink));
    REQUIRE(CHECK_EQ(r.n, 1));
    CHECK_EQ(r.v[0].start, 0x10002000);
    CHECK_EQ(r.v[0].npages, 2);

    r.n = 0; /* nothing resident */
    REQUIRE_OK(memdiff__plat_pages(&proc, 0x30000000, 0x30010000, MEMDIFF_DEPTH_FAST, &sink));
    CHECK_EQ(r.n, 0);
}

static void dos(memdiff__proc *proc, const WCHAR *nt, const WCHAR *want)
{
    WCHAR buf[512];
    wcscpy(buf, nt);
    size_t len = wcslen(buf);
    memdiff__win_dos_path(proc, buf, &len);
    if (!CHECK(wcscmp(buf, want) == 0 && len == wcslen(want)))
        printf("    got \"%ls\", want \"%ls\"\n", buf, want);
}

static void test_dos_paths(void)
{
    memdiff__proc proc;
    memset(&proc, 0, sizeof proc);
    dos(&proc, L"\\??\\Z:\\tmp\\x.dat", L"Z:\\tmp\\x.dat"); /* Wine's answer */
    dos(&proc, L"\\\\?\\C:\\long\\path.dll", L"C:\\long\\path.dll");
    dos(&proc, L"\\??\\UNC\\srv\\share\\f.dat", L"\\\\srv\\share\\f.dat");
    dos(&proc, L"\\Device\\Mup\\srv\\share\\f.dat", L"\\\\srv\\share\\f.dat");
    dos(&proc, L"\\Device\\NoSuchDevice\\f.dat", L"\\Device\\NoSuchDevice\\f.dat");

    /* A volume device through the drive table QueryDosDevice gives. */
    WCHAR dev[256];
    REQUIRE(QueryDosDeviceW(L"C:", dev, 256) > 0);
    WCHAR nt[512], want[] = L"C:\\Windows\\System32\\ntdll.dll";
    swprintf(nt, 512, L"%ls\\Windows\\System32\\ntdll.dll", dev);
    dos(&proc, nt, want);
    CHECK(proc.drives_read);
    /* Another volume whose name merely starts with C:'s device ("...Volume1" / "...Volume17"). */
    swprintf(nt, 512, L"%ls7\\x.dll", dev);
    int taken = 0;
    for (size_t i = 0; i < proc.drive_count; i++)
        taken |= wcsncmp(proc.drives[i].device, nt, wcslen(dev) + 1) == 0;
    if (!taken) {
        WCHAR same[512];
        wcscpy(same, nt);
        dos(&proc, nt, same);
    }
}

static void test_file_id(void)
{
    uint64_t d1, i1, d2, i2, d3, i3;
    memdiff__win_file_id("C:\\Windows\\System32\\NTDLL.DLL", &d1, &i1);
    memdiff__win_file_id("c:\\windows\\system32\\ntdll.dll", &d2, &i2);
    CHECK_EQ(d1, d2); /* one file, named in another case */
    CHECK_EQ(i1, i2);
    memdiff__win_file_id("C:\\Windows\\System32\\kernel32.dll", &d3, &i3);
    CHECK_EQ(d1, d3); /* same volume */
    CHECK(i1 != i3);
    memdiff__win_file_id("D:\\Windows\\System32\\ntdll.dll", &d3, &i3);
    CHECK(d1 != d3);
    memdiff__win_file_id("\\\\srv\\share\\a.dat", &d1, &i1);
    memdiff__win_file_id("\\\\srv\\share\\b.dat", &d2, &i2);
    CHECK_EQ(d1, d2);
    CHECK(i1 != i2);
    memdiff__win_file_id("", &d1, &i1);
    CHECK_EQ(d1, 0);
    CHECK_EQ(i1, 0);
}

static void test_utf8(void)
{
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    const char *s = memdiff__win_utf8(&a, L"C:\\caf\u00e9\\\u65e5.dll", (size_t)-1);
    CHECK_STR(s, "C:\\caf\xc3\xa9\\\xe6\x97\xa5.dll");
    s = memdiff__win_utf8(&a, L"abcdef", 3);
    CHECK_STR(s, "abc");
    s = memdiff__win_utf8(&a, L"", 0);
    CHECK_STR(s, "");
    memdiff__arena_release(&a);
}

static void test_error_translation(void)
{
    struct {
        DWORD err;
        int status;
    } map[] = {
        {ERROR_ACCESS_DENIED, MEMDIFF_EACCES},       {ERROR_INVALID_PARAMETER, MEMDIFF_ESRCH},
        {ERROR_NOT_ENOUGH_MEMORY, MEMDIFF_ENOMEM},   {ERROR_PARTIAL_COPY, MEMDIFF_ECHANGED},
        {ERROR_CALL_NOT_IMPLEMENTED, MEMDIFF_ENOTSUP}, {ERROR_CRC, MEMDIFF_EIO},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        CHECK_EQ(memdiff__win_error(NULL, map[i].err, "what %d", 42), (uint64_t)map[i].status);
    memdiff__win_error(NULL, ERROR_ACCESS_DENIED, "OpenProcess(%d)", 7);
    const char *detail = memdiff_last_error();
    CHECK(strncmp(detail, "OpenProcess(7): ", 16) == 0);
    CHECK(strstr(detail, "(error 5)") != NULL);
    CHECK(strlen(detail) > strlen("OpenProcess(7):  (error 5)")); /* FormatMessage's text */
    /* A live process does not turn errors into ESRCH. */
    CHECK_EQ(memdiff__win_error(GetCurrentProcess(), ERROR_ACCESS_DENIED, "x"),
             (uint64_t)MEMDIFF_EACCES);
}

const wintest_case wintest_decode_cases[] = {
    {"decode_ws", test_decode_ws},
    {"decode_ws_entry", test_decode_ws_entry},
    {"decode_ws_ex", test_decode_ws_ex},
    {"pages_from_working_set", test_pages_from_working_set},
    {"dos_paths", test_dos_paths},
    {"file_id", test_file_id},
    {"utf8", test_utf8},
    {"error_translation", test_error_translation},
    {NULL, NULL},
};
