/*
 * memdiff_check.h - memory assertions for the Check unit-test framework, on memdiff's assertion
 * core (memdiff.h: memdiff_check(), memdiff_check_label(), memdiff_leak_slope()). Header only:
 * include it in a test file and link memdiff and Check (pkg-config check memdiff).
 *
 *     static void lookup_many(void *cache) { ... the code under test ... }
 *
 *     START_TEST(lookups_do_not_leak)
 *     {
 *         struct cache *c = cache_new();
 *         lookup_many(c);                             // warm up: first-call costs go here
 *         memdiff_bracket *b = memdiff_ck_begin();
 *         lookup_many(c);
 *         memdiff_diff *diff = memdiff_ck_end(b);
 *         ck_assert_memdiff_net_private_le(diff, 0);
 *         memdiff_diff_free(diff);
 *         cache_free(c);
 *     }
 *     END_TEST
 *
 *     START_TEST(lookups_retain_nothing_per_call)
 *     {
 *         ck_assert_memdiff_slope_le(lookup_many, cache, 256, 64); // <= 64 bytes per call
 *     }
 *     END_TEST
 *
 * A failing assertion fails the test through ck_assert_msg(), at the line of the assertion, with
 * a message that states the figure and the bound and lists the blocks behind the figure, largest
 * first, with their labels (see memdiff_check() in memdiff.h):
 *
 *     check_example.c:97:F:leaky:lookups_do_not_leak:0: memdiff check failed: net private
 *     bytes in all categories = +69,632, want <= 0
 *       filter: image file pages ignored
 *       blocks, largest first (1 of 1):
 *         +69,632  heap  new  [heap]  0x5581e1d8c000-0x5581e1da0000
 *
 * Messages are cut (whole lines, then "...") to MEMDIFF_CK_MSG_SIZE bytes, under Check's own cap
 * on a message (4 KiB by default; the CK_MAX_MSG_SIZE environment variable changes it).
 *
 * The named assertions (all but ck_assert_memdiff() and ck_assert_memdiff_slope(), which take a
 * filter) leave out what MEMDIFF_CK_FILTER leaves out: by default image pages of the page cache
 * (code paged in on a first call; MEMDIFF_FILTER_IGNORE_IMAGE_FILE). Define MEMDIFF_CK_FILTER to
 * a `const memdiff_filter *` expression (NULL: nothing left out) before including this header to
 * change that, e.g. to ignore a test runner linked as a shared library ("libcheck").
 *
 * Check's fork mode (the default) runs each test in a child process of its own, so no earlier
 * test's memory is in the figures. In CK_FORK=no mode a failed assertion leaves the test with a
 * longjmp: a diff not yet freed then stays allocated (in memdiff's own storage, category Own).
 */
#ifndef MEMDIFF_CHECK_H
#define MEMDIFF_CHECK_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>

#include "memdiff.h"

#ifndef MEMDIFF_CK_MSG_SIZE
#define MEMDIFF_CK_MSG_SIZE 3072
#endif

/* The filter of the named assertions: image pages of the page cache left out. */
static inline const memdiff_filter *memdiff_ck_default_filter(void)
{
    static const memdiff_filter filter = {0, MEMDIFF_FILTER_IGNORE_IMAGE_FILE, NULL};
    return &filter;
}

#ifndef MEMDIFF_CK_FILTER
#define MEMDIFF_CK_FILTER memdiff_ck_default_filter()
#endif

/* ---- brackets ----------------------------------------------------------------------------
 * memdiff_ck_begin() begins a bracket on the calling process (memdiff_bracket_begin() with the
 * default options: standard depth, heap settled, memdiff warmed up); memdiff_ck_end(bracket)
 * ends it, frees it and returns the diff, which the test frees with memdiff_diff_free(). Either
 * fails the test when memdiff cannot take a snapshot.
 * MEMDIFF_CK_BRACKET_BEGIN() / MEMDIFF_CK_BRACKET_END(diff) are the same as statements, once per
 * block: END declares `memdiff_diff *diff`. */

static inline memdiff_bracket *memdiff_ck_begin_at_(const char *file, int line)
{
    memdiff_bracket *bracket = NULL;
    int rc = memdiff_bracket_begin(NULL, &bracket);
    if (rc != MEMDIFF_OK)
        ck_abort_msg("%s:%d: memdiff_bracket_begin: %s: %s", file, line,
                     memdiff_status_name(rc), memdiff_last_error());
    return bracket;
}

static inline memdiff_diff *memdiff_ck_end_at_(memdiff_bracket *bracket, const char *file,
                                               int line)
{
    memdiff_diff *diff = NULL;
    int rc = memdiff_bracket_end(bracket, &diff);
    memdiff_bracket_free(bracket);
    if (rc != MEMDIFF_OK)
        ck_abort_msg("%s:%d: memdiff_bracket_end: %s: %s", file, line, memdiff_status_name(rc),
                     memdiff_last_error());
    return diff;
}

#define memdiff_ck_begin() memdiff_ck_begin_at_(__FILE__, __LINE__)
#define memdiff_ck_end(bracket) memdiff_ck_end_at_((bracket), __FILE__, __LINE__)

#define MEMDIFF_CK_BRACKET_BEGIN() memdiff_bracket *memdiff_ck_bracket_ = memdiff_ck_begin()
#define MEMDIFF_CK_BRACKET_END(diff) memdiff_diff *diff = memdiff_ck_end(memdiff_ck_bracket_)

/* ---- figures -----------------------------------------------------------------------------
 * ck_assert_memdiff(diff, filter, category, measure, OP, bound): the figure (measure over the
 * blocks of category, or MEMDIFF_CAT_ALL, that filter keeps; filter NULL: all) OP bound, where
 * OP is one of <= < == != >= >. E.g.
 *     ck_assert_memdiff(diff, NULL, MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_NET, <=, 4096);
 */

static inline int memdiff_ck_check_(const memdiff_diff *diff, const memdiff_filter *filter,
                                    memdiff_category category, memdiff_measure measure,
                                    const char *op, int64_t bound, char *msg, size_t msg_size)
{
    memdiff_cmp cmp;
    if (memdiff_cmp_parse(op, &cmp) != MEMDIFF_OK) {
        snprintf(msg, msg_size, "ck_assert_memdiff: '%s' is not one of <= < == != >= >", op);
        return MEMDIFF_EINVAL;
    }
    const memdiff_figure figure = {category, measure, filter};
    return memdiff_check(diff, &figure, cmp, bound, msg, msg_size);
}

#define ck_assert_memdiff(diff, filter, category, measure, OP, bound)                          \
    do {                                                                                       \
        char memdiff_ck_msg_[MEMDIFF_CK_MSG_SIZE];                                             \
        int memdiff_ck_rc_ = memdiff_ck_check_((diff), (filter), (category), (measure), #OP,   \
                                               (int64_t)(bound), memdiff_ck_msg_,              \
                                               sizeof memdiff_ck_msg_);                        \
        ck_assert_msg(memdiff_ck_rc_ == 1, "%s", memdiff_ck_msg_);                             \
    } while (0)

/* Net bytes (new - freed) in all categories <= bound. */
#define ck_assert_memdiff_net_le(diff, bound) \
    ck_assert_memdiff(diff, MEMDIFF_CK_FILTER, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET, <=, bound)

/* Net private bytes (new private - freed) in all categories <= bound: what a leak leaves. */
#define ck_assert_memdiff_net_private_le(diff, bound)                                      \
    ck_assert_memdiff(diff, MEMDIFF_CK_FILTER, MEMDIFF_CAT_ALL, MEMDIFF_MEASURE_NET_PRIVATE, \
                      <=, bound)

/* New bytes in category (or MEMDIFF_CAT_ALL) <= bound. */
#define ck_assert_memdiff_new_le(diff, category, bound) \
    ck_assert_memdiff(diff, MEMDIFF_CK_FILTER, category, MEMDIFF_MEASURE_NEW, <=, bound)

/* No new pages in category (or MEMDIFF_CAT_ALL). */
#define ck_assert_memdiff_no_new(diff, category) \
    ck_assert_memdiff(diff, MEMDIFF_CK_FILTER, category, MEMDIFF_MEASURE_NEW, ==, 0)

/* ---- labelled blocks ---------------------------------------------------------------------
 * ck_assert_memdiff_block(diff, substring): a block whose label contains substring got new
 * pages. ck_assert_memdiff_block_min(diff, category, substring, min_new): the blocks of category
 * (or MEMDIFF_CAT_ALL) whose label contains substring got min_new new bytes or more together.
 * A failure lists the matching blocks, or when none matches, the largest blocks there. */

static inline int memdiff_ck_block_min_(const memdiff_diff *diff, memdiff_category category,
                                        const char *substring, int64_t min_new, char *msg,
                                        size_t msg_size)
{
    const memdiff_figure figure = {category, MEMDIFF_MEASURE_NEW, NULL};
    return memdiff_check_label(diff, &figure, substring, MEMDIFF_MATCH_SUBSTRING, min_new, msg,
                               msg_size);
}

#define ck_assert_memdiff_block_min(diff, category, substring, min_new)                      \
    do {                                                                                    \
        char memdiff_ck_msg_[MEMDIFF_CK_MSG_SIZE];                                          \
        int memdiff_ck_rc_ = memdiff_ck_block_min_((diff), (category), (substring),         \
                                                   (int64_t)(min_new), memdiff_ck_msg_,     \
                                                   sizeof memdiff_ck_msg_);                 \
        ck_assert_msg(memdiff_ck_rc_ == 1, "%s", memdiff_ck_msg_);                          \
    } while (0)

#define ck_assert_memdiff_block(diff, substring) \
    ck_assert_memdiff_block_min(diff, MEMDIFF_CAT_ALL, substring, 1)

/* ---- leak slopes -------------------------------------------------------------------------
 * ck_assert_memdiff_slope(fn, arg, options, OP, bound): runs memdiff_leak_slope(fn, arg,
 * options) (options NULL: MEMDIFF_SLOPE_OPTIONS_INIT) and asserts "bytes per call OP bound";
 * a failure shows the slope, the first and last figures and the blocks that grew over all calls.
 * ck_assert_memdiff_slope_le(fn, arg, iterations, bound): the default options with iterations
 * calls, net bytes in all categories under MEMDIFF_CK_FILTER, slope <= bound bytes per call.
 * fn is a void (*)(void *). */

static inline int memdiff_ck_slope_(void (*fn)(void *), void *arg,
                                    const memdiff_slope_options *options, const char *op,
                                    int64_t bound, char *msg, size_t msg_size)
{
    memdiff_cmp cmp;
    memdiff_slope slope;
    memdiff_diff *diff = NULL;
    if (memdiff_cmp_parse(op, &cmp) != MEMDIFF_OK) {
        snprintf(msg, msg_size, "ck_assert_memdiff_slope: '%s' is not one of <= < == != >= >",
                 op);
        return MEMDIFF_EINVAL;
    }
    int rc = memdiff_leak_slope(fn, arg, options, &slope, &diff);
    if (rc != MEMDIFF_OK) {
        snprintf(msg, msg_size, "memdiff_leak_slope: %s: %s", memdiff_status_name(rc),
                 memdiff_last_error());
        return rc;
    }
    rc = memdiff_check_slope(&slope, diff, cmp, bound, msg, msg_size);
    memdiff_diff_free(diff);
    return rc;
}

static inline int memdiff_ck_slope_le_(void (*fn)(void *), void *arg, unsigned iterations,
                                       int64_t bound, char *msg, size_t msg_size)
{
    memdiff_slope_options options = MEMDIFF_SLOPE_OPTIONS_INIT;
    options.iterations = iterations;
    options.figure.filter = MEMDIFF_CK_FILTER;
    return memdiff_ck_slope_(fn, arg, &options, "<=", bound, msg, msg_size);
}

#define ck_assert_memdiff_slope(fn, arg, options, OP, bound)                                 \
    do {                                                                                     \
        char memdiff_ck_msg_[MEMDIFF_CK_MSG_SIZE];                                           \
        int memdiff_ck_rc_ = memdiff_ck_slope_((fn), (arg), (options), #OP, (int64_t)(bound), \
                                               memdiff_ck_msg_, sizeof memdiff_ck_msg_);     \
        ck_assert_msg(memdiff_ck_rc_ == 1, "%s", memdiff_ck_msg_);                           \
    } while (0)

#define ck_assert_memdiff_slope_le(fn, arg, iterations, bound)                               \
    do {                                                                                     \
        char memdiff_ck_msg_[MEMDIFF_CK_MSG_SIZE];                                           \
        int memdiff_ck_rc_ = memdiff_ck_slope_le_((fn), (arg), (iterations), (int64_t)(bound), \
                                                  memdiff_ck_msg_, sizeof memdiff_ck_msg_);  \
        ck_assert_msg(memdiff_ck_rc_ == 1, "%s", memdiff_ck_msg_);                           \
    } while (0)

#endif /* MEMDIFF_CHECK_H */
