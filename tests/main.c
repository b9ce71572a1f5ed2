/*
 * main.c - the test runner: all suites, or the one named on the command line (ctest runs one
 * suite per test). Check's fork mode stays on, so each test runs in a process of its own and
 * page counts of one test cannot leak into another.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        Suite *(*make)(void);
    } all[] = {
#define MEMDIFF_TEST_ENTRY(name) {#name, name##_suite},
        MEMDIFF_TEST_SUITES(MEMDIFF_TEST_ENTRY)
#undef MEMDIFF_TEST_ENTRY
    };
    SRunner *runner = NULL;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (argc > 1 && strcmp(argv[1], all[i].name) != 0)
            continue;
        if (!runner)
            runner = srunner_create(all[i].make());
        else
            srunner_add_suite(runner, all[i].make());
    }
    if (!runner) {
        fprintf(stderr, "memdiff_tests: no suite named '%s'\n", argc > 1 ? argv[1] : "");
        return 2;
    }
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
