/*
 * demo.c - MemDiffDemo for today. Between two snapshots of its own address space it
 *   - churns the heap: small blocks (some freed) and large ones (served by mmap, one freed),
 *   - dlclose()s one shared library and dlopen()s another, touching the new one's .bss,
 *   - maps anonymous memory and touches part of it,
 *   - maps a file and reads part of it,
 *   - starts a thread that touches its stack,
 * then prints what it did and memdiff's report, normal and verbose. Compare the two: every
 * action shows up in its category with the size the demo states.
 *
 * Usage: memdiff_demo [--json]
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memdiff.h"

#define SMALL_BLOCKS 2000
#define ANON_PAGES 256
#define ANON_TOUCHED 100
#define FILE_PAGES 64
#define FILE_READ 16
#define STACK_PAGES 16

static size_t page;

static int check(int status, const char *what)
{
    if (status != MEMDIFF_OK) {
        fprintf(stderr, "memdiff_demo: %s: %s (%s)\n", what, memdiff_strerror(status),
                memdiff_last_error());
        exit(EXIT_FAILURE);
    }
    return status;
}

/* The plugins are built next to the demo; find them from the demo's own path. */
static void plugin_path(char *buf, size_t size, const char *argv0, const char *which)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(self, sizeof self, "%s", argv0);
        n = (ssize_t)strlen(self);
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(buf, size, "%s/libmemdiff_demo_%s.so", slash ? self : ".", which);
}

/* The thread's stack work: touch STACK_PAGES pages of a local array, then wait until the
 * second snapshot is taken, so that its stack pointer is readable while it blocks. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int touched, release;

__attribute__((noinline)) static void touch_stack(void)
{
    volatile char frame[STACK_PAGES * 4096];
    for (size_t off = 0; off < sizeof frame; off += 4096)
        frame[off] = 1;
    pthread_mutex_lock(&lock);
    touched = 1;
    pthread_cond_broadcast(&cond);
    while (!release)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
}

static void *thread_main(void *arg)
{
    (void)arg;
    touch_stack();
    return NULL;
}

int main(int argc, char **argv)
{
    int json = argc > 1 && strcmp(argv[1], "--json") == 0;
    page = (size_t)sysconf(_SC_PAGESIZE);
    char old_path[4200], new_path[4200];
    plugin_path(old_path, sizeof old_path, argv[0], "old");
    plugin_path(new_path, sizeof new_path, argv[0], "new");

    /* Before the first snapshot: a plugin that will be unloaded, with its bss touched. */
    void *old_plugin = dlopen(old_path, RTLD_NOW | RTLD_LOCAL);
    if (!old_plugin) {
        fprintf(stderr, "memdiff_demo: dlopen %s: %s\n", old_path, dlerror());
        return EXIT_FAILURE;
    }
    size_t (*touch_old)(size_t) = (size_t(*)(size_t))dlsym(old_plugin, "demo_plugin_touch");
    size_t old_pages = touch_old ? touch_old(page) : 0;

    /* A file to map later, written now so that writing it is not part of the bracket. */
    char file_path[] = "/tmp/memdiff_demo_XXXXXX";
    int fd = mkstemp(file_path);
    if (fd < 0 || ftruncate(fd, (off_t)(FILE_PAGES * page)) != 0) {
        perror("memdiff_demo: temp file");
        return EXIT_FAILURE;
    }

    memdiff_snapshot *before = NULL, *after = NULL;
    check(memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &before), "first snapshot");

    /* 1. Heap churn: small blocks, every other one freed; three large ones, one freed. */
    static void *small[SMALL_BLOCKS];
    size_t small_kept = 0;
    for (int i = 0; i < SMALL_BLOCKS; i++) {
        size_t size = 64 + (size_t)(i % 16) * 64;
        small[i] = malloc(size);
        if (small[i])
            memset(small[i], 0xab, size);
    }
    for (int i = 0; i < SMALL_BLOCKS; i += 2) {
        free(small[i]);
        small[i] = NULL;
    }
    for (int i = 1; i < SMALL_BLOCKS; i += 2)
        small_kept += 64 + (size_t)(i % 16) * 64;
    size_t large_size[3] = {1u << 20, 2u << 20, 512u << 10};
    void *large[3];
    for (int i = 0; i < 3; i++) {
        large[i] = malloc(large_size[i]);
        if (large[i])
            memset(large[i], 0xcd, large_size[i]);
    }
    free(large[2]);
    large[2] = NULL;

    /* 2. Modules: the old plugin leaves, a new one arrives and touches its bss. */
    dlclose(old_plugin);
    void *new_plugin = dlopen(new_path, RTLD_NOW | RTLD_LOCAL);
    size_t new_pages = 0;
    if (new_plugin) {
        size_t (*touch_new)(size_t) =
            (size_t(*)(size_t))dlsym(new_plugin, "demo_plugin_touch");
        new_pages = touch_new ? touch_new(page) : 0;
    }

    /* 3. Anonymous memory: map ANON_PAGES, touch ANON_TOUCHED. */
    char *anon = mmap(NULL, ANON_PAGES * page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (anon == MAP_FAILED) {
        perror("memdiff_demo: mmap");
        return EXIT_FAILURE;
    }
    for (size_t i = 0; i < ANON_TOUCHED; i++)
        anon[i * page] = 1;

    /* 4. A file mapping: map FILE_PAGES, read FILE_READ. MADV_RANDOM turns off read-ahead, so
     * each read fault brings exactly one page into the page cache and into our page tables
     * (fault-around maps only neighbours already cached: mm/filemap.c filemap_map_pages). */
    char *file = mmap(NULL, FILE_PAGES * page, PROT_READ, MAP_PRIVATE, fd, 0);
    if (file == MAP_FAILED) {
        perror("memdiff_demo: mmap file");
        return EXIT_FAILURE;
    }
    madvise(file, FILE_PAGES * page, MADV_RANDOM);
    unsigned sum = 0;
    for (size_t i = 0; i < FILE_READ; i++)
        sum += (unsigned char)((volatile char *)file)[i * page];

    /* 5. A thread touching its stack, kept alive (blocked) until the second snapshot. */
    pthread_t thread;
    if (pthread_create(&thread, NULL, thread_main, NULL) != 0) {
        fprintf(stderr, "memdiff_demo: pthread_create failed\n");
        return EXIT_FAILURE;
    }
    pthread_mutex_lock(&lock);
    while (!touched)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);

    check(memdiff_snapshot_self(MEMDIFF_DEPTH_STANDARD, &after), "second snapshot");

    pthread_mutex_lock(&lock);
    release = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    pthread_join(thread, NULL);

    memdiff_diff *diff = NULL, *verbose = NULL;
    check(memdiff_compare(before, after, 0, &diff), "compare");
    /* The same two snapshots again: snapshots are reusable. */
    check(memdiff_compare(before, after, MEMDIFF_COMPARE_VERBOSE, &verbose), "verbose compare");

    if (json) {
        check(memdiff_report_json(diff, stdout, 0), "JSON report");
    } else {
        printf("What the demo did between the snapshots (page size %zu):\n", page);
        printf("  heap:   %d small blocks, every other one freed (%zu bytes kept); large blocks of"
               " %zu and %zu bytes kept, one of %zu bytes freed\n",
               SMALL_BLOCKS, small_kept, large_size[0], large_size[1], large_size[2]);
        printf("  image:  dlclose %s (%zu bss pages touched before)\n", old_path, old_pages);
        printf("          dlopen  %s, %zu bss pages touched\n", new_path, new_pages);
        printf("  anon:   mapped %d pages at %p, touched %d (%zu bytes)\n", ANON_PAGES,
               (void *)anon, ANON_TOUCHED, ANON_TOUCHED * page);
        printf("  file:   mapped %d pages of %s, read %d (%zu bytes, checksum %u)\n", FILE_PAGES,
               file_path, FILE_READ, FILE_READ * page, sum);
        printf("  stack:  a thread touched %d pages of its stack\n\n", STACK_PAGES);
        check(memdiff_report_text(diff, stdout, 0), "text report");
        printf("\n---- verbose (MEMDIFF_COMPARE_VERBOSE: runs of pages with equal attributes)\n\n");
        memdiff_report_options no_header = MEMDIFF_REPORT_OPTIONS_INIT;
        no_header.flags = MEMDIFF_REPORT_NO_HEADER;
        check(memdiff_report_text(verbose, stdout, &no_header), "verbose report");
    }

    memdiff_diff_free(verbose);
    memdiff_diff_free(diff);
    memdiff_snapshot_free(after);
    memdiff_snapshot_free(before);
    munmap(file, FILE_PAGES * page);
    munmap(anon, ANON_PAGES * page);
    close(fd);
    unlink(file_path);
    for (int i = 0; i < SMALL_BLOCKS; i++)
        free(small[i]);
    free(large[0]);
    free(large[1]);
    if (new_plugin)
        dlclose(new_plugin);
    return EXIT_SUCCESS;
}
