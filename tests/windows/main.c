/*
 * main.c - runs the Windows tests (all, or those whose name contains argv[1]) and prints
 * "N passed, N failed" as its last line; exits non-zero when a test failed.
 *
 *     memdiff_wintests [name-part]
 *     memdiff_wintests --child ...   (the helper process of the other-process tests)
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "wintest.h"

int wintest_failures;

int wintest_child_main(int argc, char **argv); /* test_process.c */

void wintest_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("    FAIL %s:%d: ", file, line);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    wintest_failures++;
}

int check_str(const char *file, int line, const char *expr, const char *got, const char *want)
{
    if (got && want && _stricmp(got, want) == 0)
        return 1;
    wintest_fail(file, line, "%s: \"%s\" != \"%s\"", expr, got ? got : "(null)",
                 want ? want : "(null)");
    return 0;
}

int wintest_under_wine(void)
{
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    return ntdll && GetProcAddress(ntdll, "wine_get_version") != NULL;
}

uint64_t wintest_page(void)
{
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwPageSize;
}

int wintest_block_at(const memdiff_diff *diff, uint64_t addr, memdiff_category category,
                     memdiff_block *out)
{
    for (size_t i = 0; i < memdiff_diff_block_count(diff); i++) {
        if (memdiff_diff_block(diff, i, out) != MEMDIFF_OK)
            break;
        if (out->category == category && out->start <= addr && addr < out->end)
            return 1;
    }
    return 0;
}

void wintest_dump(const memdiff_diff *diff)
{
    printf("    --- report ---\n");
    memdiff_report_options o = MEMDIFF_REPORT_OPTIONS_INIT;
    o.flags = MEMDIFF_REPORT_NO_HEADER;
    memdiff_report_text(diff, stdout, &o);
    printf("    --- end ---\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return wintest_child_main(argc, argv);
    const char *only = argc > 1 ? argv[1] : NULL;
    const wintest_case *lists[] = {wintest_decode_cases, wintest_scenario_cases,
                                   wintest_process_cases, wintest_refset_cases,
                                   wintest_files_cases};
    int passed = 0, failed = 0;
    printf("memdiff Windows tests%s\n", wintest_under_wine() ? " (under Wine)" : "");
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        for (const wintest_case *c = lists[l]; c->name; c++) {
            if (only && !strstr(c->name, only))
                continue;
            wintest_failures = 0;
            printf("  %s\n", c->name);
            fflush(stdout);
            c->fn();
            if (wintest_failures)
                failed++;
            else
                passed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
