/*
 * check_example.c - memory assertions in a Check suite (memdiff_check.h), on a realistic leak.
 *
 * The code under test is a memo cache in front of an expensive lookup: it keeps each key it
 * sees (strdup) with the computed value. The first version never evicts, so a workload of
 * ever-new keys (session ids) grows it on every call; the fixed version holds at most
 * CACHE_CAPACITY entries and frees the oldest one's key when it makes room.
 *
 *     memdiff_check_example fixed    # the fixed cache: every test passes
 *     memdiff_check_example leaky    # the cache that never evicts: two tests fail, naming
 *                                    # the heap as the block that grew
 *
 * ctest runs both: the fixed one must pass, the leaky one must print the failure messages
 * (docs/testing-with-memdiff.md shows them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memdiff_check.h>

/* ---- the code under test: a memo cache ------------------------------------------------- */

enum { CACHE_BUCKETS = 1024, CACHE_CAPACITY = 256 };

typedef struct entry {
    struct entry *next;  /* in its bucket */
    struct entry *older; /* insertion order, for eviction */
    struct entry *newer;
    char *key;
    long value;
} entry;

typedef struct cache {
    entry *buckets[CACHE_BUCKETS];
    entry *oldest, *newest;
    size_t count;
    int evicts; /* the fix */
} cache;

static unsigned long hash(const char *s)
{
    unsigned long h = 5381;
    while (*s)
        h = h * 33 + (unsigned char)*s++;
    return h;
}

static long expensive_lookup(const char *key)
{
    return (long)hash(key) % 1000003;
}

static void unlink_entry(cache *c, entry *e)
{
    entry **p = &c->buckets[hash(e->key) % CACHE_BUCKETS];
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    c->count--;
    free(e->key);
    free(e);
}

static long cache_get(cache *c, const char *key)
{
    unsigned long b = hash(key) % CACHE_BUCKETS;
    for (entry *e = c->buckets[b]; e; e = e->next) {
        if (strcmp(e->key, key) == 0)
            return e->value;
    }
    if (c->evicts && c->count == CACHE_CAPACITY)
        unlink_entry(c, c->oldest);
    entry *e = malloc(sizeof *e);
    if (!e || !(e->key = strdup(key))) {
        free(e);
        return expensive_lookup(key); /* no room: answer uncached */
    }
    e->value = expensive_lookup(key);
    e->next = c->buckets[b];
    c->buckets[b] = e;
    e->older = c->newest;
    e->newer = NULL;
    if (c->newest)
        c->newest->newer = e;
    else
        c->oldest = e;
    c->newest = e;
    c->count++;
    return e->value;
}

static cache *cache_new(int evicts)
{
    cache *c = calloc(1, sizeof *c);
    if (c)
        c->evicts = evicts;
    return c;
}

static void cache_free(cache *c)
{
    while (c && c->oldest)
        unlink_entry(c, c->oldest);
    free(c);
}

/* ---- the workload: requests for sessions never seen before ----------------------------- */

static int evicting; /* set by main: which cache the suite tests */
static cache *under_test;
static unsigned long next_session;

static void setup(void)
{
    under_test = cache_new(evicting);
    ck_assert_ptr_nonnull(under_test);
}

static void teardown(void)
{
    cache_free(under_test);
    under_test = NULL;
}

/* One batch of requests: 100 new sessions. void (*)(void *), as the slope helper calls it. */
static void serve_requests(void *arg)
{
    char key[64];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "session-%012lu", next_session++);
        (void)cache_get(arg, key);
    }
}

/* ---- the tests -------------------------------------------------------------------------- */

/* Once the cache is full, serving more requests must leave nothing behind. */
START_TEST(requests_leave_nothing_behind)
{
    for (int i = 0; i < 4; i++) /* warm up: fill the cache to capacity */
        serve_requests(under_test);
    memdiff_bracket *bracket = memdiff_ck_begin();
    for (int i = 0; i < 20; i++)
        serve_requests(under_test);
    memdiff_diff *diff = memdiff_ck_end(bracket); /* frees the bracket */
    ck_assert_memdiff_net_private_le(diff, 0);
    memdiff_diff_free(diff);
}
END_TEST

/* What a batch of requests retains, over 64 batches: nothing, give or take a page. */
START_TEST(requests_retain_nothing_per_call)
{
    for (int i = 0; i < 4; i++)
        serve_requests(under_test);
    ck_assert_memdiff_slope_le(serve_requests, under_test, 64, 64);
}
END_TEST

/* Filling the cache does allocate, on the heap: the positive assertion on a labelled block. */
START_TEST(filling_the_cache_uses_the_heap)
{
    MEMDIFF_CK_BRACKET_BEGIN();
    for (int i = 0; i < 3; i++)
        serve_requests(under_test);
    MEMDIFF_CK_BRACKET_END(diff);
    ck_assert_memdiff_block_min(diff, MEMDIFF_CAT_HEAP, "heap", 8192);
    ck_assert_memdiff_no_new(diff, MEMDIFF_CAT_SHARED);
    memdiff_diff_free(diff);
}
END_TEST

/* A control: a leak made on purpose inside a bracket must show, or passing tests prove nothing.
 * Nothing reads the buffer, so an optimizing compiler (GCC and Clang at -O1 and up) deletes its
 * malloc, memset and free altogether, and this test fails, unless memdiff_keep() tells it that
 * the buffer is read there (docs/testing-with-memdiff.md, "The optimizer"). */
START_TEST(a_leak_made_on_purpose_shows)
{
    enum { LEAK_BYTES = 256 * 1024 }; /* above malloc's mmap threshold: a mapping of its own */
    MEMDIFF_CK_BRACKET_BEGIN();
    char *leak = malloc(LEAK_BYTES);
    if (leak)
        memset(leak, 0x5a, LEAK_BYTES);
    memdiff_keep(leak);
    MEMDIFF_CK_BRACKET_END(diff);
    free(leak);
    ck_assert_memdiff(diff, MEMDIFF_CK_FILTER, MEMDIFF_CAT_HEAP, MEMDIFF_MEASURE_NET_PRIVATE, >=,
                      LEAK_BYTES);
    memdiff_diff_free(diff);
}
END_TEST

static Suite *cache_suite(void)
{
    Suite *s = suite_create(evicting ? "fixed" : "leaky");
    TCase *tc = tcase_create("memory");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, requests_leave_nothing_behind);
    tcase_add_test(tc, requests_retain_nothing_per_call);
    tcase_add_test(tc, filling_the_cache_uses_the_heap);
    tcase_add_test(tc, a_leak_made_on_purpose_shows);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "fixed") != 0 && strcmp(argv[1], "leaky") != 0)) {
        fprintf(stderr, "usage: %s fixed|leaky\n", argv[0]);
        return 2;
    }
    evicting = strcmp(argv[1], "fixed") == 0;
    SRunner *runner = srunner_create(cache_suite());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
