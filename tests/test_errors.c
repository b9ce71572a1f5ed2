/* test_errors.c - the status list, its names and strings, and thread-local details. */
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "suites.h"

START_TEST(every_status_has_a_name_and_text)
{
#define CHECK_STATUS(name, code, text)                                      \
    ck_assert_str_eq(memdiff_status_name(code), "MEMDIFF_" #name);          \
    ck_assert_str_eq(memdiff_strerror(code), text);                         \
    ck_assert_int_eq(MEMDIFF_##name, code);
    MEMDIFF_STATUS_MAP(CHECK_STATUS)
#undef CHECK_STATUS
    ck_assert_str_eq(memdiff_status_name(-999), "MEMDIFF_UNKNOWN");
    ck_assert_str_eq(memdiff_strerror(42), "unknown status");
}
END_TEST

static void *set_in_thread(void *arg)
{
    (void)arg;
    memdiff__set_error(MEMDIFF_EIO, "detail from another thread");
    return NULL;
}

START_TEST(details_are_per_thread)
{
    ck_assert_int_eq(memdiff__set_error(MEMDIFF_ESRCH, "no process %d", 42), MEMDIFF_ESRCH);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, set_in_thread, NULL), 0);
    pthread_join(t, NULL);
    ck_assert_str_eq(memdiff_last_error(), "no process 42");
}
END_TEST

/* One version everywhere: the library at run time, the header at compile time, and the CMake
 * project the build came from (configuring also refuses a header that disagrees). */
START_TEST(version_is_the_projects)
{
    ck_assert_str_eq(memdiff_version(), MEMDIFF_TEST_PROJECT_VERSION);
    ck_assert_str_eq(MEMDIFF_VERSION_STRING, MEMDIFF_TEST_PROJECT_VERSION);
    char parts[32];
    snprintf(parts, sizeof parts, "%d.%d.%d", MEMDIFF_VERSION_MAJOR, MEMDIFF_VERSION_MINOR,
             MEMDIFF_VERSION_PATCH);
    ck_assert_str_eq(parts, MEMDIFF_TEST_PROJECT_VERSION);
}
END_TEST

START_TEST(enum_names)
{
    ck_assert_str_eq(memdiff_category_name(MEMDIFF_CAT_MAPPED_FILE), "mapped-file");
    ck_assert_str_eq(memdiff_category_name(MEMDIFF_CAT_OWN), "own");
    ck_assert_str_eq(memdiff_category_name((memdiff_category)99), "invalid");
    /* MEMDIFF_CAT_ALL is a category every function taking one accepts: it has a name (0.1 said
     * "invalid"), and the value past it is out of range. */
    ck_assert_str_eq(memdiff_category_name(MEMDIFF_CAT_ALL), "all");
    ck_assert_str_eq(memdiff_category_name((memdiff_category)(MEMDIFF_CAT_ALL + 1)), "invalid");
    ck_assert_str_eq(memdiff_depth_name(MEMDIFF_DEPTH_DEEP), "deep");
    ck_assert_str_eq(memdiff_change_name(MEMDIFF_CHANGE_BECAME_SHARED), "became-shared");
    memdiff_options o;
    memset(&o, 0xff, sizeof o);
    memdiff_options_init(&o);
    ck_assert_int_eq(o.pid, 0);
    ck_assert_int_eq(o.depth, MEMDIFF_DEPTH_STANDARD);
    ck_assert_ptr_null(o.fixture_root);
    memdiff_options_init(NULL);
}
END_TEST

START_TEST(bad_arguments_are_refused_not_crashed)
{
    memdiff_snapshot *s = (memdiff_snapshot *)1;
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.depth = (memdiff_depth)7;
    ck_assert_int_eq(memdiff_snapshot_take(&o, &s), MEMDIFF_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "depth"));
    o.depth = MEMDIFF_DEPTH_STANDARD;
    o.pid = -5;
    ck_assert_int_eq(memdiff_snapshot_take(&o, &s), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_snapshot_take(NULL, NULL), MEMDIFF_EINVAL);
    memdiff_snapshot_info info;
    ck_assert_int_eq(memdiff_snapshot_get_info(NULL, &info), MEMDIFF_EINVAL);
    ck_assert_uint_eq(memdiff_snapshot_region_count(NULL), 0);
    memdiff_snapshot_free(NULL);
    memdiff_diff_free(NULL);
    /* The 0.2 diff accessors and the bracket refuse NULL the same way. */
    memdiff_totals t;
    ck_assert_int_eq(memdiff_diff_totals(NULL, MEMDIFF_CAT_ALL, &t), MEMDIFF_EINVAL);
    memdiff_block b;
    ck_assert_int_eq(memdiff_diff_block(NULL, 0, &b), MEMDIFF_EINVAL);
    memdiff_diff_info di;
    ck_assert_int_eq(memdiff_diff_get_info(NULL, &di), MEMDIFF_EINVAL);
    memdiff_diff *d = (memdiff_diff *)1;
    ck_assert_int_eq(memdiff_bracket_end(NULL, &d), MEMDIFF_EINVAL);
    memdiff_bracket_free(NULL);
}
END_TEST

Suite *errors_suite(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("Core");
    tcase_add_test(tc, every_status_has_a_name_and_text);
    tcase_add_test(tc, details_are_per_thread);
    tcase_add_test(tc, version_is_the_projects);
    tcase_add_test(tc, enum_names);
    tcase_add_test(tc, bad_arguments_are_refused_not_crashed);
    suite_add_tcase(s, tc);
    return s;
}
