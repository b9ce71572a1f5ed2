/*
 * wintest.h - the Windows test program's tiny harness (Check is not cross-installed, so the
 * Windows tests are plain C). Each test is a function; CHECK records a failure and goes on,
 * REQUIRE records one and leaves the test. main.c runs them and prints "N passed, N failed".
 */
#ifndef MEMDIFF_WINTEST_H
#define MEMDIFF_WINTEST_H

#include <stdint.h>
#include <stdio.h>

#include "memdiff.h"

extern int wintest_failures; /* failed checks in the running test */

void wintest_fail(const char *file, int line, const char *fmt, ...)
#if defined(__MINGW_PRINTF_FORMAT)
    __attribute__((format(__MINGW_PRINTF_FORMAT, 3, 4)))
#endif
    ;

#define CHECK(cond)                                                                   \
    ((cond) ? 1 : (wintest_fail(__FILE__, __LINE__, "%s", #cond), 0))
#define CHECK_EQ(a, b)                                                                \
    ((uint64_t)(a) == (uint64_t)(b)                                                   \
         ? 1                                                                          \
         : (wintest_fail(__FILE__, __LINE__, "%s == %s: %llu != %llu", #a, #b,        \
                         (unsigned long long)(a), (unsigned long long)(b)),           \
            0))
#define CHECK_STR(a, b) check_str(__FILE__, __LINE__, #a, (a), (b))
#define REQUIRE(cond)                                                                 \
    do {                                                                              \
        if (!CHECK(cond))                                                             \
            return;                                                                   \
    } while (0)
#define REQUIRE_OK(call)                                                              \
    do {                                                                              \
        int rc_ = (call);                                                             \
        if (rc_ != MEMDIFF_OK) {                                                      \
            wintest_fail(__FILE__, __LINE__, "%s: %s (%s)", #call,                    \
                         memdiff_status_name(rc_), memdiff_last_error());             \
            return;                                                                   \
        }                                                                             \
    } while (0)

/* Case-insensitive equality (Windows paths), NULL-safe. */
int check_str(const char *file, int line, const char *expr, const char *got, const char *want);

/* 1 under Wine (ntdll exports wine_get_version). */
int wintest_under_wine(void);

uint64_t wintest_page(void);

/* Copies into *out the first block of diff whose span contains addr with the given category;
 * returns 1, or 0 when there is none. */
int wintest_block_at(const memdiff_diff *diff, uint64_t addr, memdiff_category category,
                     memdiff_block *out);

/* Prints the diff's text report to stdout (when a scenario fails, to see why). */
void wintest_dump(const memdiff_diff *diff);

/* The test lists, one per file. */
typedef struct wintest_case {
    const char *name;
    void (*fn)(void);
} wintest_case;

extern const wintest_case wintest_decode_cases[];
extern const wintest_case wintest_scenario_cases[];
extern const wintest_case wintest_process_cases[];
extern const wintest_case wintest_refset_cases[];
extern const wintest_case wintest_files_cases[];

#endif /* MEMDIFF_WINTEST_H */
