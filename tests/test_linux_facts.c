/* test_linux_facts.c - what the Linux backend finds besides pages: threads and their stack
 * pointers, loaded modules and their segments, glibc's heaps, process totals, and the OS
 * helpers. On this process (things the test creates itself) and on a constructed tree. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "linux.h"
#include "scenario_util.h"
#include "suites.h"

/* glibc's own allocator, reached past any interposed malloc (AddressSanitizer replaces malloc,
 * and this suite must see glibc's arenas and mmapped chunks under it too). */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);

static memdiff__arena arena;

static void setup(void)
{
    memdiff__arena a = MEMDIFF__ARENA_INIT;
    arena = a;
}

static void teardown(void)
{
    memdiff__arena_release(&arena);
}

/* Process pid (0: this one) under the proc root (NULL: the live /proc), on one thread. */
static memdiff__proc *open_pid(int pid, const char *root, memdiff__caps *caps)
{
    memdiff__open_args args = {pid, root, NULL, 0, 1};
    memdiff__proc *proc = NULL;
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, caps), MEMDIFF_OK);
    return proc;
}

static memdiff__proc *open_root(const char *root, memdiff__caps *caps)
{
    return open_pid(0, root, caps);
}

static const memdiff__plat_region *region_at(const memdiff__plat_region *r, size_t n, uint64_t a)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].start <= a && a < r[i].end)
            return &r[i];
    return NULL;
}

/* ---- threads ---------------------------------------------------------------------------- */

typedef struct blocked {
    int ready[2], wait[2];
    pid_t tid;
} blocked;

static void *block_on_pipe(void *arg)
{
    blocked *b = arg;
    char c = 1;
    b->tid = gettid();
    (void)!write(b->ready[1], &c, 1);
    (void)!read(b->wait[0], &c, 1);
    return NULL;
}

START_TEST(threads_of_this_process)
{
    blocked b;
    ck_assert_int_eq(pipe(b.ready), 0);
    ck_assert_int_eq(pipe(b.wait), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, block_on_pipe, &b), 0);
    char c;
    ck_assert_int_eq(read(b.ready[0], &c, 1), 1);

    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    ck_assert_uint_ne(caps.sources & MEMDIFF_SRC_THREADS, 0);
    memdiff__plat_region *r;
    size_t nr;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &nr), MEMDIFF_OK);
    /* The thread may still be on its way into read(): "running" has no stack pointer. */
    const memdiff__plat_thread *found = NULL;
    int seen_main = 0;
    for (int attempt = 0; attempt < 200 && !(found && found->sp); attempt++) {
        memdiff__plat_thread *th;
        size_t n;
        ck_assert_int_eq(memdiff__plat_threads(proc, &arena, &th, &n), MEMDIFF_OK);
        ck_assert_uint_ge(n, 2);
        found = NULL;
        for (size_t i = 0; i < n; i++) {
            if (th[i].tid == b.tid)
                found = &th[i];
            if (th[i].tid == getpid()) {
                seen_main = 1;
                ck_assert_uint_eq(th[i].sp, 0); /* the main thread's stack is [stack] */
            }
            ck_assert_uint_eq(th[i].stack_lo, 0);
            ck_assert_uint_eq(th[i].stack_hi, 0);
        }
        if (!found || !found->sp)
            usleep(10 * 1000);
    }
    ck_assert(seen_main);
    ck_assert_ptr_nonnull(found);
    ck_assert_uint_ne(found->sp, 0);
    const memdiff__plat_region *s = region_at(r, nr, found->sp);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->prot, MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE);
    ck_assert_uint_eq(s->inode, 0);

    memdiff__plat_close(proc);
    ck_assert_int_eq(write(b.wait[1], &c, 1), 1);
    pthread_join(t, NULL);
}
END_TEST

/* A single-threaded process: its one thread is the process id, listed from the task
 * directory's link count alone, and (the main thread) without a stack pointer, which the
 * other threads' syscall files give: [stack] is its stack. A shell blocked in read. */
START_TEST(threads_of_a_single_threaded_process)
{
    char *const argv[] = {"/bin/sh", "-c", "echo r; read x", NULL};
    int to_child, from_child;
    pid_t child = scn_spawn_piped(argv, &to_child, &from_child);
    ck_assert_int_gt(child, 0);
    char c;
    ck_assert_int_eq(read(from_child, &c, 1), 1); /* exec'd: the shell has started */
    memdiff__caps caps;
    memdiff__proc *proc = open_pid(child, NULL, &caps);
    memdiff__plat_thread *th;
    size_t n;
    ck_assert_int_eq(memdiff__plat_threads(proc, &arena, &th, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(th[0].tid, child);
    ck_assert_uint_eq(th[0].sp, 0);
    memdiff__plat_close(proc);

    /* The snapshot still names [stack] the main thread's. */
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = child;
    memdiff_snapshot *snap = NULL;
    ck_assert_int_eq(memdiff_snapshot_take(&o, &snap), MEMDIFF_OK);
    char want[32];
    snprintf(want, sizeof want, "thread %d", (int)child);
    size_t stacks = 0;
    for (size_t i = 0; i < memdiff_snapshot_region_count(snap); i++) {
        memdiff_region r;
        ck_assert_int_eq(memdiff_snapshot_region(snap, i, &r), MEMDIFF_OK);
        if (r.category == MEMDIFF_CAT_STACK) {
            ck_assert_str_eq(r.label, want);
            stacks++;
        }
    }
    ck_assert_uint_eq(stacks, 1);
    memdiff_snapshot_free(snap);
    close(to_child); /* end of input: the shell's read returns, and it exits */
    ck_assert_int_eq(waitpid(child, NULL, 0), child);
    close(from_child);
}
END_TEST

START_TEST(threads_in_fixture)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_root(MEMDIFF_TEST_FIXTURES "/facts", &caps);
    memdiff__plat_thread *th;
    size_t n;
    ck_assert_int_eq(memdiff__plat_threads(proc, &arena, &th, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 3);
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (th[i].tid == 100) {
            ck_assert_uint_eq(th[i].sp, 0); /* running */
            seen |= 1;
        } else if (th[i].tid == 101) {
            ck_assert_uint_eq(th[i].sp, 0x7ffff0020000ull);
            seen |= 2;
        } else if (th[i].tid == 102) {
            ck_assert_uint_eq(th[i].sp, 0x7ffff001f000ull);
            seen |= 4;
        }
    }
    ck_assert_int_eq(seen, 7);
    memdiff__plat_close(proc);
}
END_TEST

/* ---- modules --------------------------------------------------------------------------- */

static const memdiff__plat_module *module_named(const memdiff__plat_module *m, size_t n,
                                                const char *part)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(m[i].path, part))
            return &m[i];
    return NULL;
}

static int has_kind(const memdiff__plat_module *m, memdiff__seg_kind kind)
{
    for (size_t i = 0; i < m->segment_count; i++)
        if (m->segments[i].kind == kind)
            return 1;
    return 0;
}

typedef struct main_bss {
    uint64_t start, end;
    int done;
} main_bss;

/* The main executable's bss beyond its last file page, from the loader's program headers. */
static int find_main_bss(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    main_bss *b = arg;
    if (b->done++)
        return 1;
    uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD)
            continue;
        uint64_t fe = (p->p_vaddr + p->p_filesz + ps - 1) / ps * ps;
        uint64_t me = (p->p_vaddr + p->p_memsz + ps - 1) / ps * ps;
        if (me > fe) {
            b->start = info->dlpi_addr + fe;
            b->end = info->dlpi_addr + me;
        }
    }
    return 1;
}

START_TEST(modules_of_this_process)
{
    void *h = dlopen("libm.so.6", RTLD_NOW);
    ck_assert_ptr_nonnull(h);
    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    memdiff__plat_region *r;
    size_t nr;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &nr), MEMDIFF_OK);
    memdiff__plat_module *m;
    size_t n;
    ck_assert_int_eq(memdiff__plat_modules(proc, &arena, r, nr, &m, &n), MEMDIFF_OK);
    ck_assert_uint_ge(n, 3);

    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_gt(m[i].segment_count, 0);
        ck_assert_uint_eq(m[i].base, m[i].segments[0].start);
        for (size_t k = 0; k < m[i].segment_count; k++) {
            const memdiff__plat_segment *s = &m[i].segments[k];
            ck_assert_uint_lt(s->start, s->end);
            if (k > 0)
                ck_assert_uint_ge(s->start, m[i].segments[k - 1].end);
            /* every segment lies in mapped memory */
            for (uint64_t a = s->start; a < s->end;) {
                const memdiff__plat_region *reg = region_at(r, nr, a);
                ck_assert_msg(reg != NULL, "%s: segment 0x%llx-0x%llx not mapped at 0x%llx",
                              m[i].path, (unsigned long long)s->start,
                              (unsigned long long)s->end, (unsigned long long)a);
                a = reg->end;
            }
        }
        ck_assert_ptr_null(strstr(m[i].path, "vdso"));
    }
    const memdiff__plat_module *libm = module_named(m, n, "libm.so.6");
    ck_assert_ptr_nonnull(libm);
    ck_assert(has_kind(libm, MEMDIFF__SEG_TEXT));
    ck_assert(has_kind(libm, MEMDIFF__SEG_DATA));
    ck_assert_ptr_nonnull(module_named(m, n, "ld-linux"));
    ck_assert_ptr_nonnull(module_named(m, n, "libc.so.6"));

    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(len, 0);
    exe[len] = '\0';
    const memdiff__plat_module *main_mod = module_named(m, n, exe);
    ck_assert_ptr_nonnull(main_mod);
    ck_assert(has_kind(main_mod, MEMDIFF__SEG_TEXT));
    main_bss bss = {0, 0, 0};
    dl_iterate_phdr(find_main_bss, &bss);
    if (bss.end > bss.start) {
        int ok = 0;
        for (size_t k = 0; k < main_mod->segment_count; k++)
            if (main_mod->segments[k].kind == MEMDIFF__SEG_BSS &&
                main_mod->segments[k].start == bss.start && main_mod->segments[k].end == bss.end)
                ok = 1;
        ck_assert_msg(ok, "main executable's bss 0x%llx-0x%llx not found",
                      (unsigned long long)bss.start, (unsigned long long)bss.end);
    }
    memdiff__plat_close(proc);
    dlclose(h);
}
END_TEST

static void expect_segment(const memdiff__plat_module *m, size_t i, uint64_t start, uint64_t end,
                           memdiff__seg_kind kind)
{
    ck_assert_uint_gt(m->segment_count, i);
    ck_assert_msg(m->segments[i].start == start && m->segments[i].end == end &&
                      m->segments[i].kind == kind,
                  "%s segment %zu: 0x%llx-0x%llx kind %d", m->path, i,
                  (unsigned long long)m->segments[i].start,
                  (unsigned long long)m->segments[i].end, (int)m->segments[i].kind);
}

START_TEST(modules_in_fixture)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_root(MEMDIFF_TEST_FIXTURES "/facts", &caps);
    memdiff__plat_region *r;
    size_t nr;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &nr), MEMDIFF_OK);
    memdiff__plat_module *m;
    size_t n;
    ck_assert_int_eq(memdiff__plat_modules(proc, &arena, r, nr, &m, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(m[0].path, "/opt/app/bin/app");
    ck_assert_uint_eq(m[0].base, 0x400000);
    ck_assert_uint_eq(m[0].segment_count, 5);
    expect_segment(&m[0], 0, 0x400000, 0x401000, MEMDIFF__SEG_HEADERS);
    expect_segment(&m[0], 1, 0x401000, 0x405000, MEMDIFF__SEG_TEXT);
    expect_segment(&m[0], 2, 0x405000, 0x406000, MEMDIFF__SEG_RODATA);
    expect_segment(&m[0], 3, 0x406000, 0x407000, MEMDIFF__SEG_DATA);
    expect_segment(&m[0], 4, 0x407000, 0x409000, MEMDIFF__SEG_BSS);
    ck_assert_str_eq(m[1].path, "/lib/libfoo.so.1");
    ck_assert_uint_eq(m[1].segment_count, 5);
    expect_segment(&m[1], 0, 0x7f0000010000ull, 0x7f0000012000ull, MEMDIFF__SEG_HEADERS);
    expect_segment(&m[1], 1, 0x7f0000012000ull, 0x7f0000020000ull, MEMDIFF__SEG_TEXT);
    expect_segment(&m[1], 2, 0x7f0000020000ull, 0x7f0000030000ull, MEMDIFF__SEG_OTHER);
    expect_segment(&m[1], 3, 0x7f0000030000ull, 0x7f0000031000ull, MEMDIFF__SEG_RODATA);
    expect_segment(&m[1], 4, 0x7f0000031000ull, 0x7f0000032000ull, MEMDIFF__SEG_DATA);

    memdiff__plat_heap *h;
    ck_assert_int_eq(memdiff__plat_heaps(proc, &arena, r, nr, &h, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 1); /* no memory to read: only what maps names */
    ck_assert_int_eq(h[0].kind, MEMDIFF__HEAP_BRK);
    ck_assert_uint_eq(h[0].start, 0xa00000);
    ck_assert_uint_eq(h[0].end, 0xa21000);
    ck_assert_str_eq(h[0].label, "[heap]");

    /* This tree records no status: the figures are missing, which is no error. */
    ck_assert_uint_eq(caps.sources & MEMDIFF_SRC_PROCESS_TOTALS, 0);
    memdiff_process_totals t;
    ck_assert_int_eq(memdiff__plat_totals(proc, &t), MEMDIFF_OK);
    ck_assert_uint_eq(t.vm_rss, 0);
    memdiff__plat_close(proc);

    /* Nor does the pages tree record task/: no threads, no error. */
    proc = open_root(MEMDIFF_TEST_FIXTURES "/pages", &caps);
    memdiff__plat_thread *th;
    ck_assert_int_eq(memdiff__plat_threads(proc, &arena, &th, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 0);
    memdiff__plat_close(proc);
}
END_TEST

/* ---- heaps ----------------------------------------------------------------------------- */

static void *malloc_in_thread(void *arg)
{
    (void)arg;
    return __libc_malloc(1000);
}

static const memdiff__plat_heap *heap_at(const memdiff__plat_heap *h, size_t n, const void *p)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    for (size_t i = 0; i < n; i++)
        if (h[i].start <= a && a < h[i].end)
            return &h[i];
    return NULL;
}

/* proc's heaps, from its region list read now: *n of them. */
static const memdiff__plat_heap *heaps_now(memdiff__proc *proc, size_t *n)
{
    memdiff__plat_region *r;
    size_t nr;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &nr), MEMDIFF_OK);
    memdiff__plat_heap *h;
    ck_assert_int_eq(memdiff__plat_heaps(proc, &arena, r, nr, &h, n), MEMDIFF_OK);
    return h;
}

START_TEST(heaps_of_this_process)
{
    void *small = __libc_malloc(100);
    void *big = __libc_malloc(1 << 20);
    pthread_t t;
    void *in_arena = NULL;
    ck_assert_int_eq(pthread_create(&t, NULL, malloc_in_thread, NULL), 0);
    ck_assert_int_eq(pthread_join(t, &in_arena), 0);
    ck_assert_ptr_nonnull(small);
    ck_assert_ptr_nonnull(big);
    ck_assert_ptr_nonnull(in_arena);

    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    ck_assert_uint_ne(caps.sources & MEMDIFF_SRC_HEAPS, 0);
    size_t n;
    const memdiff__plat_heap *h = heaps_now(proc, &n);
    for (size_t i = 1; i < n; i++)
        ck_assert_uint_ge(h[i].start, h[i - 1].end);

    const memdiff__plat_heap *c = heap_at(h, n, big);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->kind, MEMDIFF__HEAP_MMAP_CHUNK);
    ck_assert_uint_eq(c->id, c->start);
    ck_assert_str_eq(c->label, "malloc mmap chunk");
    ck_assert_uint_ge(c->end - c->start, 1 << 20);

    const memdiff__plat_heap *a = heap_at(h, n, in_arena);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(a->kind, MEMDIFF__HEAP_ARENA);
    ck_assert_uint_eq(a->start % (64u << 20), 0);
    ck_assert_uint_gt(a->id, a->start);
    ck_assert_ptr_nonnull(strstr(a->label, "malloc arena 0x"));

    /* A small request in the main thread comes from the brk heap, when glibc has one. */
    const memdiff__plat_heap *b = heap_at(h, n, small);
    if (b)
        ck_assert_int_eq(b->kind, MEMDIFF__HEAP_BRK);
    memdiff__plat_close(proc);
    __libc_free(big);
    __libc_free(small);
    __libc_free(in_arena);
}
END_TEST

/* Whether an arena heap is found at a 64 MiB boundary h: a heap_info there (a first heap: its
 * arena right behind it, 2 pages read-write of 2), in a read-write mapping from a page below h
 * (so that h is its last aligned address, not its start) to 2 pages above, followed by
 * PROT_NONE up to `reserved` bytes from h. */
static int heap_found_at_boundary(size_t reserved)
{
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE), max = (size_t)64 << 20;
    unsigned char *g = mmap(NULL, 2 * max, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(g, MAP_FAILED);
    unsigned char *h = (unsigned char *)(((uintptr_t)g + max) & ~(uintptr_t)(max - 1));
    ck_assert_int_eq(mprotect(h - ps, 3 * ps, PROT_READ | PROT_WRITE), 0);
    if (h + reserved < g + 2 * max)
        ck_assert_int_eq(munmap(h + reserved, (size_t)(g + 2 * max - (h + reserved))), 0);
    h[-(ptrdiff_t)ps] = 1;
    uint64_t info[4] = {(uint64_t)(uintptr_t)(h + 48), 0, 2 * ps, 2 * ps};
    memcpy(h, info, sizeof info);
    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    size_t n;
    const memdiff__plat_heap *hp = heaps_now(proc, &n);
    const memdiff__plat_heap *a = heap_at(hp, n, h);
    if (a) {
        ck_assert_int_eq(a->kind, MEMDIFF__HEAP_ARENA);
        ck_assert_uint_eq(a->start, (uint64_t)(uintptr_t)h);
        ck_assert_uint_eq(a->end, (uint64_t)(uintptr_t)h + max);
    }
    memdiff__plat_close(proc);
    munmap(g, 2 * max);
    return a != NULL;
}

/* A live heap keeps its whole reservation of HEAP_MAX_SIZE mapped (glibc's arena.c): a heap_info
 * at a boundary with 64 MiB of mappings from it is an arena, the same bytes where the mappings
 * end 32 MiB from it are not (and are not read). */
START_TEST(arena_only_where_its_reservation_is_whole)
{
    if (sizeof(void *) != 8)
        return; /* HEAP_MAX_SIZE is 1 MiB on 32-bit */
    ck_assert_int_eq(heap_found_at_boundary((size_t)64 << 20), 1);
    ck_assert_int_eq(heap_found_at_boundary((size_t)32 << 20), 0);
}
END_TEST

/* The kernel merges a chunk's mapping with a newer anonymous mapping placed right below it. The
 * layout is built by hand so that it is exact: one mapping of 32 pages whose upper 16 hold an
 * mmapped-chunk header (prev_size 0, size 16 pages | IS_MMAPPED) and are resident, and whose
 * lower 16 are other memory with only 4 pages resident. */
START_TEST(chunk_behind_other_memory_in_one_mapping)
{
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *m = mmap(NULL, 32 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    for (size_t i = 0; i < 4; i++)
        m[i * ps] = 1;
    size_t header[2] = {0, (16 * ps) | 2u};
    memcpy(m + 16 * ps, header, sizeof header);
    for (size_t i = 17; i < 32; i++)
        m[i * ps] = 1;

    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    size_t n;
    const memdiff__plat_heap *h = heaps_now(proc, &n);
    const memdiff__plat_heap *c = heap_at(h, n, m + 20 * ps);
    if (caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN) {
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(c->kind, MEMDIFF__HEAP_MMAP_CHUNK);
        ck_assert_uint_eq(c->start, (uint64_t)(uintptr_t)(m + 16 * ps));
        ck_assert_uint_eq(c->end, (uint64_t)(uintptr_t)(m + 32 * ps));
    } else {
        ck_assert_ptr_null(c); /* without the scan this is the documented blind spot */
    }
    ck_assert_ptr_null(heap_at(h, n, m)); /* the other memory is no chunk */
    memdiff__plat_close(proc);
    munmap(m, 32 * ps);
}
END_TEST

/* Whether the chunk search finds a chunk behind other memory: a mapping of its own (between
 * PROT_NONE pages) holds `before` resident pages of other memory, stride pages apart (each holds
 * 1, no header), `gap` absent pages, then a chunk of 16 resident pages (prev_size 0, size 16
 * pages | IS_MMAPPED). 1 when it finds exactly that chunk, 0 when none there; the memory before
 * it is never a chunk. */
static int chunk_found_after(memdiff__proc *proc, size_t before, size_t stride, size_t gap)
{
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    const size_t at = (before - 1) * stride + 1 + gap, pages = at + 16;
    unsigned char *g = mmap(NULL, (pages + 2) * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(g, MAP_FAILED);
    unsigned char *m = g + ps, *chunk = m + at * ps;
    ck_assert_int_eq(mprotect(m, pages * ps, PROT_READ | PROT_WRITE), 0);
    for (size_t i = 0; i < before; i++)
        m[i * stride * ps] = 1;
    size_t header[2] = {0, (16 * ps) | 2u};
    memcpy(chunk, header, sizeof header);
    for (size_t i = 1; i < 16; i++)
        chunk[i * ps] = 1;
    memdiff__plat_region *r;
    size_t nr, n;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &nr), MEMDIFF_OK);
    const memdiff__plat_region *mine = region_at(r, nr, (uint64_t)(uintptr_t)m);
    ck_assert_ptr_nonnull(mine);
    ck_assert_uint_eq(mine->start, (uint64_t)(uintptr_t)m);
    ck_assert_uint_eq(mine->end, (uint64_t)(uintptr_t)(m + pages * ps));
    memdiff__plat_heap *h;
    ck_assert_int_eq(memdiff__plat_heaps(proc, &arena, r, nr, &h, &n), MEMDIFF_OK);
    const memdiff__plat_heap *c = heap_at(h, n, chunk);
    if (c) {
        ck_assert_int_eq(c->kind, MEMDIFF__HEAP_MMAP_CHUNK);
        ck_assert_uint_eq(c->start, (uint64_t)(uintptr_t)chunk);
        ck_assert_uint_eq(c->end, (uint64_t)(uintptr_t)(chunk + 16 * ps));
    }
    ck_assert_ptr_null(heap_at(h, n, m)); /* the memory before it is no chunk */
    munmap(g, (pages + 2) * ps);
    return c != NULL;
}

static int chunk_found_behind(memdiff__proc *proc, size_t before, size_t stride)
{
    return chunk_found_after(proc, before, stride, 1);
}

/* The chunk search gives up on a region after MEMDIFF__LINUX_CHUNK_MISSES resident islands that
 * hold no chunk header: a chunk merged behind that many islands of other memory (one-page islands,
 * every other page) is found, one behind one island more is not (it stays Private). */
START_TEST(chunk_search_gives_up_after_its_misses)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    const int scan = (caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN) != 0;
    ck_assert_int_eq(chunk_found_behind(proc, MEMDIFF__LINUX_CHUNK_MISSES, 2), scan);
    ck_assert_int_eq(chunk_found_behind(proc, MEMDIFF__LINUX_CHUNK_MISSES + 1, 2), 0);
    memdiff__plat_close(proc);
}
END_TEST

/* The islands are tried in order of the hole before them, longest first: a chunk behind 20
 * islands of other memory (every other page) is found when two absent pages come before it, the
 * longest hole there; behind one absent page, as long as every other hole, it is the 21st in
 * address order, past the misses allowed, and is not. */
START_TEST(chunk_search_tries_the_longest_hole_first)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    const int scan = (caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN) != 0;
    const size_t before = 2 * MEMDIFF__LINUX_CHUNK_MISSES + 4;
    ck_assert_int_eq(chunk_found_after(proc, before, 2, 2), scan);
    ck_assert_int_eq(chunk_found_after(proc, before, 2, 1), 0);
    memdiff__plat_close(proc);
}
END_TEST

/* A chain of chunks back to back in a mapping of more than 1024 pages (where presence windows
 * are 64 pages a question), each chunk with its second page absent, then other memory and a
 * chunk behind it: after the second chunk the presence of the next 16 chunks comes from one scan
 * for their holes (memdiff__linux_presence_ahead). Every chunk is found with its exact bounds,
 * and nothing the search looked at was faulted in: the absent pages are still absent
 * (mincore). */
START_TEST(chunk_chain_found_without_faulting_pages_in)
{
    enum { CHAIN = 40, CHUNK = 32, OTHER = 10, LAST = 4 };
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    const size_t other = CHAIN * CHUNK, last = other + OTHER, pages = last + LAST;
    unsigned char *g = mmap(NULL, (pages + 2) * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(g, MAP_FAILED);
    unsigned char *m = g + ps;
    ck_assert_int_eq(mprotect(m, pages * ps, PROT_READ | PROT_WRITE), 0);
    for (size_t k = 0; k < CHAIN; k++) {
        size_t header[2] = {0, (CHUNK * ps) | 2u};
        memcpy(m + k * CHUNK * ps, header, sizeof header);
        for (size_t i = 2; i < CHUNK; i++)
            m[(k * CHUNK + i) * ps] = 1; /* page 1 of each chunk stays absent */
    }
    m[other * ps] = 1; /* other memory: its first page resident, then 9 absent */
    size_t header[2] = {0, (LAST * ps) | 2u};
    memcpy(m + last * ps, header, sizeof header);

    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    memdiff__plat_region *r;
    size_t nr, n;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &nr), MEMDIFF_OK);
    const memdiff__plat_region *mine = region_at(r, nr, (uint64_t)(uintptr_t)m);
    ck_assert_ptr_nonnull(mine);
    ck_assert_uint_eq(mine->end - mine->start, pages * ps);
    memdiff__plat_heap *h;
    ck_assert_int_eq(memdiff__plat_heaps(proc, &arena, r, nr, &h, &n), MEMDIFF_OK);
    for (size_t k = 0; k < CHAIN; k++) {
        const memdiff__plat_heap *c = heap_at(h, n, m + k * CHUNK * ps);
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(c->kind, MEMDIFF__HEAP_MMAP_CHUNK);
        ck_assert_uint_eq(c->start, (uint64_t)(uintptr_t)(m + k * CHUNK * ps));
        ck_assert_uint_eq(c->end, (uint64_t)(uintptr_t)(m + (k + 1) * CHUNK * ps));
    }
    ck_assert_ptr_null(heap_at(h, n, m + other * ps));
    const memdiff__plat_heap *c = heap_at(h, n, m + last * ps);
    if (caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN) {
        ck_assert_ptr_nonnull(c);
        ck_assert_uint_eq(c->start, (uint64_t)(uintptr_t)(m + last * ps));
        ck_assert_uint_eq(c->end, (uint64_t)(uintptr_t)(m + pages * ps));
    }
    memdiff__plat_close(proc);
    unsigned char vec[CHAIN * CHUNK + OTHER + LAST];
    ck_assert_int_eq(mincore(m, pages * ps, vec), 0);
    for (size_t i = 0; i < pages; i++) {
        int written = i < other ? i % CHUNK != 1 : i == other || i == last;
        ck_assert_msg((vec[i] & 1) == written, "page %zu: resident %d, written %d", i, vec[i] & 1,
                      written);
    }
    munmap(g, (pages + 2) * ps);
}
END_TEST

/* The chunk search looks past a resident island of fewer than MEMDIFF__LINUX_ISLAND_PAGES pages
 * for a chunk behind it, and not past one that long. */
START_TEST(chunk_search_looks_past_islands_up_to_a_bound)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    const int scan = (caps.sources & MEMDIFF__SRC_PAGEMAP_SCAN) != 0;
    ck_assert_int_eq(chunk_found_behind(proc, MEMDIFF__LINUX_ISLAND_PAGES - 1, 1), scan);
    ck_assert_int_eq(chunk_found_behind(proc, MEMDIFF__LINUX_ISLAND_PAGES, 1), 0);
    memdiff__plat_close(proc);
}
END_TEST

/* A chunk header in memory a module's segments cover (its .bss) is not read: the image outranks
 * a heap there. The module is made up (proc's list, which memdiff__plat_modules fills), over a
 * mapping of 16 pages that holds a real header (prev_size 0, size 16 pages | IS_MMAPPED): found
 * while no module covers the mapping, or while two segments leave a page of it uncovered; not
 * while one segment or two back to back cover it whole. */
START_TEST(no_chunk_read_in_a_module)
{
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    /* Between two PROT_NONE pages, so that the mapping is a region of its own. */
    unsigned char *g = mmap(NULL, 18 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(g, MAP_FAILED);
    unsigned char *m = g + ps;
    ck_assert_int_eq(mprotect(m, 16 * ps, PROT_READ | PROT_WRITE), 0);
    size_t header[2] = {0, (16 * ps) | 2u};
    memcpy(m, header, sizeof header);
    const uint64_t lo = (uint64_t)(uintptr_t)m, hi = lo + 16 * ps;
    static const struct {
        uint64_t cut;          /* where the first segment ends (pages) */
        uint64_t gap;          /* pages between the two segments */
        int found;             /* whether the chunk is reported */
    } cases[] = {{16, 0, 0}, {8, 0, 0}, {8, 1, 1}, {0, 0, 1}};
    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memdiff__plat_region *r;
        size_t nr, n;
        ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &nr), MEMDIFF_OK);
        const memdiff__plat_region *mine = region_at(r, nr, lo);
        ck_assert_ptr_nonnull(mine);
        ck_assert_uint_eq(mine->start, lo);
        ck_assert_uint_eq(mine->end, hi);
        memdiff__plat_segment seg[2] = {
            {lo, lo + cases[k].cut * ps, MEMDIFF__SEG_BSS},
            {lo + (cases[k].cut + cases[k].gap) * ps, hi, MEMDIFF__SEG_BSS}};
        memdiff__plat_module mod = {"made-up", lo, seg, cases[k].cut == 16 ? 1u : 2u};
        proc->modules = cases[k].cut ? &mod : NULL;
        proc->module_count = cases[k].cut ? 1 : 0;
        proc->modules_read = proc->regions_read;
        memdiff__plat_heap *h;
        ck_assert_int_eq(memdiff__plat_heaps(proc, &arena, r, nr, &h, &n), MEMDIFF_OK);
        const memdiff__plat_heap *c = heap_at(h, n, m);
        ck_assert_msg((c != NULL) == cases[k].found, "case %zu: chunk %s", k,
                      c ? "found" : "not found");
        if (c) {
            ck_assert_int_eq(c->kind, MEMDIFF__HEAP_MMAP_CHUNK);
            ck_assert_uint_eq(c->start, lo);
            ck_assert_uint_eq(c->end, hi);
        }
    }
    proc->modules = NULL;
    memdiff__plat_close(proc);
    munmap(g, 18 * ps);
}
END_TEST

/* A kernel thread has no user address space: its snapshot is refused, not returned empty. */
START_TEST(kernel_thread_is_refused)
{
    /* kthreadd is pid 2 wherever the kernel's threads are visible (Kthread: 1 in its status). */
    char buf[4096];
    FILE *f = fopen("/proc/2/status", "r");
    int kthread = 0;
    while (f && fgets(buf, sizeof buf, f))
        if (strncmp(buf, "Kthread:", 8) == 0)
            kthread = atoi(buf + 8) == 1;
    if (f)
        fclose(f);
    if (!kthread) {
        fprintf(stderr, "kernel_thread_is_refused: pid 2 is no kernel thread here; skipped\n");
        return;
    }
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = 2;
    memdiff_snapshot *s = (memdiff_snapshot *)1;
    ck_assert_int_eq(memdiff_snapshot_take(&o, &s), MEMDIFF_ENOTSUP);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "kernel thread"));
}
END_TEST

/* ---- totals and OS helpers ---------------------------------------------------------------- */

START_TEST(totals_of_this_process)
{
    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    memdiff_process_totals t;
    ck_assert_int_eq(memdiff__plat_totals(proc, &t), MEMDIFF_OK);
    ck_assert_uint_gt(t.vm_rss, 0);
    ck_assert_uint_ge(t.vm_size, t.vm_rss);
    ck_assert_uint_ge(t.vm_hwm, t.vm_rss);
    ck_assert_uint_gt(t.vm_pte, 0);
    ck_assert_uint_eq(t.vm_rss % 1024, 0);
    memdiff__plat_close(proc);
}
END_TEST

START_TEST(os_helpers)
{
    uint32_t ps = memdiff__os_page_size();
    ck_assert_uint_eq(ps, (uint32_t)sysconf(_SC_PAGESIZE));
    unsigned char *p = memdiff__os_alloc(ps * 2);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq((uintptr_t)p % ps, 0);
    for (uint32_t i = 0; i < ps * 2; i++)
        ck_assert_uint_eq(p[i], 0);
    p[0] = 1;
    memdiff__os_free(p, ps * 2);

    ck_assert_uint_gt(memdiff__os_time_ns(), UINT64_C(1577836800) * 1000000000u); /* > 2020 */
    char host[256];
    struct utsname u;
    memdiff__os_hostname(host, sizeof host);
    ck_assert_int_eq(uname(&u), 0);
    ck_assert_str_eq(host, u.nodename);
    char tiny[3];
    memdiff__os_hostname(tiny, sizeof tiny);
    ck_assert_uint_le(strlen(tiny), 2);
    ck_assert_int_eq(memdiff__os_thread_id(), getpid()); /* Check runs a test in a main thread */

    memdiff__caps caps;
    memdiff__proc *proc = open_root(NULL, &caps);
    memdiff__plat_region *r;
    size_t nr;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &nr), MEMDIFF_OK);
    const memdiff__plat_region *s = region_at(r, nr, memdiff__os_stack_hint());
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->hint, MEMDIFF__HINT_MAIN_STACK);
    memdiff__plat_close(proc);

    memdiff__open_args bad = {-5, NULL, NULL, 0, 1};
    ck_assert_int_eq(memdiff__plat_open(&bad, &arena, &proc, &caps), MEMDIFF_EINVAL);
    memdiff__plat_close(NULL);
}
END_TEST

Suite *linux_facts_suite(void)
{
    Suite *s = suite_create("linux_facts");
    TCase *tc = tcase_create("Process");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, threads_of_this_process);
    tcase_add_test(tc, threads_of_a_single_threaded_process);
    tcase_add_test(tc, modules_of_this_process);
    tcase_add_test(tc, heaps_of_this_process);
    tcase_add_test(tc, arena_only_where_its_reservation_is_whole);
    tcase_add_test(tc, no_chunk_read_in_a_module);
    tcase_add_test(tc, chunk_behind_other_memory_in_one_mapping);
    tcase_add_test(tc, chunk_search_gives_up_after_its_misses);
    tcase_add_test(tc, chunk_search_looks_past_islands_up_to_a_bound);
    tcase_add_test(tc, chunk_search_tries_the_longest_hole_first);
    tcase_add_test(tc, chunk_chain_found_without_faulting_pages_in);
    tcase_add_test(tc, kernel_thread_is_refused);
    tcase_add_test(tc, totals_of_this_process);
    tcase_add_test(tc, os_helpers);
    suite_add_tcase(s, tc);
    tc = tcase_create("Fixture");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, threads_in_fixture);
    tcase_add_test(tc, modules_in_fixture);
    suite_add_tcase(s, tc);
    return s;
}
