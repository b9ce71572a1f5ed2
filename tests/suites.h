/* suites.h - one Check suite per concern, one file per suite; main.c runs them. */
#ifndef MEMDIFF_TEST_SUITES_H
#define MEMDIFF_TEST_SUITES_H

#include <check.h>

/* X(name): the suite `name` is built by Suite *name##_suite(void) in tests/test_<name>.c. */
#define MEMDIFF_TEST_SUITES(X) \
    X(arena)                   \
    X(errors)                  \
    X(linux_maps)              \
    X(linux_pages)             \
    X(linux_facts)             \
    X(classify)                \
    X(compare)                 \
    X(report)                  \
    X(file_format)             \
    X(runs)                    \
    X(cli)                     \
    X(scenarios)               \
    X(agreement)               \
    X(faults)                  \
    X(assert)                  \
    X(noise)                   \
    X(refset)                  \
    X(wss)                     \
    X(escape)                  \
    X(hostile)                 \
    X(moving_pages)            \
    X(cow)                     \
    X(optimizer)               \
    X(manual)                  \
    X(names)                   \
    X(json)                    \
    X(timeline)               \
    X(record)                 \
    X(pss)                    \
    X(lanes)                  \
    X(system)                 \
    X(cli_system)

/* UNDER_ASAN: 1 in an AddressSanitizer build (gcc or clang), whose shadow mappings make some
 * measurements slow or meaningless. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define MEMDIFF_TEST_DECLARE(name) Suite *name##_suite(void);
MEMDIFF_TEST_SUITES(MEMDIFF_TEST_DECLARE)
#undef MEMDIFF_TEST_DECLARE

#endif
