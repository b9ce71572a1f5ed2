/* test_linux_maps.c - the /proc/PID/maps parser on constructed text, and on a real mapping of a
 * file with a hostile name. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"
#include "linux.h"
#include "suites.h"

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

static int parse(const char *text, memdiff__plat_region **r, size_t *n)
{
    return memdiff__linux_parse_maps(text, strlen(text), &arena, r, n, NULL);
}

/* Parses text, which must parse; the number of regions whose path had the kernel's escape. */
static size_t parse_escaped(const char *text, memdiff__plat_region **r, size_t *n)
{
    size_t escaped = 99;
    ck_assert_int_eq(memdiff__linux_parse_maps(text, strlen(text), &arena, r, n, &escaped),
                     MEMDIFF_OK);
    return escaped;
}

static void expect_format_error(const char *text, const char *line_tag)
{
    memdiff__plat_region *r = NULL;
    size_t n = 99;
    ck_assert_int_eq(parse(text, &r, &n), MEMDIFF_EFORMAT);
    ck_assert_ptr_null(r);
    ck_assert_uint_eq(n, 0);
    ck_assert_msg(strstr(memdiff_last_error(), line_tag) != NULL, "detail \"%s\" lacks \"%s\"",
                  memdiff_last_error(), line_tag);
}

START_TEST(ordinary_lines)
{
    const char *text =
        "55d0c0a00000-55d0c0a02000 r--p 00000000 fe:00 247134                     /usr/bin/cat\n"
        "55d0c0a02000-55d0c0a07000 r-xp 00002000 fe:00 247134                     /usr/bin/cat\n"
        "55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]\n"
        "7f1e2a000000-7f1e2a021000 rw-p 00000000 00:00 0 \n"
        "7f1e2b000000-7f1e2b100000 rw-s 00000000 00:01 2051                       /dev/zero (deleted)\n"
        "7ffc1a2b3000-7ffc1a2d4000 rw-p 00000000 00:00 0                          [stack]\n";
    memdiff__plat_region *r;
    size_t n;
    ck_assert_int_eq(parse(text, &r, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 6);

    ck_assert_uint_eq(r[0].start, 0x55d0c0a00000ull);
    ck_assert_uint_eq(r[0].end, 0x55d0c0a02000ull);
    ck_assert_uint_eq(r[0].prot, MEMDIFF_PROT_READ);
    ck_assert_uint_eq(r[0].flags, MEMDIFF_REGION_FILE);
    ck_assert_uint_eq(r[0].dev, 0xfeull << 32);
    ck_assert_uint_eq(r[0].inode, 247134);
    ck_assert_str_eq(r[0].path, "/usr/bin/cat");
    ck_assert_int_eq(r[0].hint, MEMDIFF__HINT_NONE);

    ck_assert_uint_eq(r[1].prot, MEMDIFF_PROT_READ | MEMDIFF_PROT_EXEC);
    ck_assert_uint_eq(r[1].offset, 0x2000);

    ck_assert_int_eq(r[2].hint, MEMDIFF__HINT_BRK_HEAP);
    ck_assert_str_eq(r[2].path, "");
    ck_assert_uint_eq(r[2].prot, MEMDIFF_PROT_READ | MEMDIFF_PROT_WRITE);
    ck_assert_uint_eq(r[2].flags, 0);

    ck_assert_str_eq(r[3].path, ""); /* trailing padding, no name */
    ck_assert_int_eq(r[3].hint, MEMDIFF__HINT_NONE);
    ck_assert_uint_eq(r[3].inode, 0);

    ck_assert_uint_eq(r[4].flags,
                      MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE | MEMDIFF__RF_DELETED);
    ck_assert_str_eq(r[4].path, "/dev/zero");
    ck_assert_uint_eq(r[4].dev, 1);

    ck_assert_int_eq(r[5].hint, MEMDIFF__HINT_MAIN_STACK);
}
END_TEST

START_TEST(paths_with_spaces_and_deleted_text)
{
    const char *text =
        "00400000-00401000 r--p 00000000 08:01 11   /home/u/my files/a b.so\n"
        "00401000-00402000 r--p 00000000 08:01 12   /tmp/x (deleted) y\n"
        "00402000-00403000 r--p 00000000 08:01 13   /tmp/z (deleted) (deleted)\n"
        "00403000-00404000 r--p 00000000 08:01 14   /tmp/[heap]\n"
        "00404000-00405000 r--p 00000000 08:01 15   /tmp/new\\012line\n";
    memdiff__plat_region *r;
    size_t n;
    ck_assert_uint_eq(parse_escaped(text, &r, &n), 1); /* the last line */
    ck_assert_uint_eq(n, 5);
    ck_assert_str_eq(r[0].path, "/home/u/my files/a b.so");
    ck_assert_uint_eq(r[0].flags & MEMDIFF__RF_DELETED, 0);
    ck_assert_str_eq(r[1].path, "/tmp/x (deleted) y"); /* not at the end: part of the name */
    ck_assert_uint_eq(r[1].flags & MEMDIFF__RF_DELETED, 0);
    ck_assert_str_eq(r[2].path, "/tmp/z (deleted)"); /* only one suffix is the kernel's */
    ck_assert_uint_ne(r[2].flags & MEMDIFF__RF_DELETED, 0);
    ck_assert_str_eq(r[3].path, "/tmp/[heap]"); /* a file, not the brk heap */
    ck_assert_int_eq(r[3].hint, MEMDIFF__HINT_NONE);
    ck_assert_uint_eq(r[3].flags, MEMDIFF_REGION_FILE);
    ck_assert_str_eq(r[4].path, "/tmp/new\nline"); /* the kernel's escape decoded */
}
END_TEST

/* Only the kernel's one escape, \012, is decoded; any other backslash is the name's (mangle_path
 * escapes only the bytes seq_path was given: a newline). */
START_TEST(only_the_newline_escape_is_decoded)
{
    const char *text =
        "00400000-00401000 r--p 00000000 08:01 11   /a\\012\\\\012\\0123\\n\\01\\\n"
        "00401000-00402000 r--p 00000000 08:01 12   /b\\11\\040\\x41\\\\ (deleted)\n"
        "00402000-00403000 r--p 00000000 08:01 13   /c\\01\n";
    memdiff__plat_region *r;
    size_t n;
    ck_assert_uint_eq(parse_escaped(text, &r, &n), 1);
    ck_assert_uint_eq(n, 3);
    /* "\\012" is a backslash, then an escaped newline; "\0123" a newline and "3"; "\n",
     * "\01" and a last backslash stay as they are. */
    ck_assert_str_eq(r[0].path, "/a\n\\\n\n3\\n\\01\\");
    ck_assert_str_eq(r[1].path, "/b\\11\\040\\x41\\\\");
    ck_assert_uint_ne(r[1].flags & MEMDIFF__RF_DELETED, 0);
    ck_assert_str_eq(r[2].path, "/c\\01");
}
END_TEST

START_TEST(bracket_names_and_shared_memory)
{
    const char *text =
        "10000000-10001000 rw-p 00000000 00:00 0   [anon:my name]\n"
        "10001000-10002000 rw-s 00000000 00:01 99  [anon_shmem:ring buf]\n"
        "10002000-10003000 rw-s 00000000 00:01 100 /memfd:pool (deleted)\n"
        "10003000-10004000 rw-s 00000000 00:01 101 /SYSV0000162e (deleted)\n"
        "10004000-10005000 rw-s 00000000 00:01 102 /SYSV12 (deleted)\n"
        "10005000-10006000 r--p 00000000 00:00 0   [vvar]\n"
        "10006000-10007000 r--p 00000000 00:00 0   [vvar_vclock]\n"
        "10007000-10008000 r-xp 00000000 00:00 0   [vdso]\n"
        "10008000-10009000 r-xp 00000000 00:00 0   [uprobes]\n"
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n";
    memdiff__plat_region *r;
    size_t n;
    ck_assert_int_eq(parse(text, &r, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 10);
    ck_assert_int_eq(r[0].hint, MEMDIFF__HINT_ANON_NAME);
    ck_assert_str_eq(r[0].name, "my name");
    ck_assert_str_eq(r[0].path, "");
    ck_assert_int_eq(r[1].hint, MEMDIFF__HINT_ANON_NAME);
    ck_assert_str_eq(r[1].name, "ring buf");
    ck_assert_uint_eq(r[1].flags, MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE);
    ck_assert_int_eq(r[2].hint, MEMDIFF__HINT_MEMFD);
    ck_assert_str_eq(r[2].path, "/memfd:pool");
    ck_assert_uint_ne(r[2].flags & MEMDIFF__RF_DELETED, 0);
    ck_assert_int_eq(r[3].hint, MEMDIFF__HINT_SYSV_SHM);
    ck_assert_str_eq(r[3].path, "/SYSV0000162e");
    ck_assert_int_eq(r[4].hint, MEMDIFF__HINT_NONE); /* not "SYSV%08x": an ordinary file */
    ck_assert_int_eq(r[5].hint, MEMDIFF__HINT_VVAR);
    ck_assert_int_eq(r[6].hint, MEMDIFF__HINT_VVAR);
    ck_assert_int_eq(r[7].hint, MEMDIFF__HINT_VDSO);
    ck_assert_int_eq(r[8].hint, MEMDIFF__HINT_OTHER);
    ck_assert_str_eq(r[8].name, "uprobes");
    ck_assert_int_eq(r[9].hint, MEMDIFF__HINT_VSYSCALL);
    ck_assert_uint_eq(r[9].start, 0xffffffffff600000ull);
    ck_assert_uint_eq(r[9].end, 0xffffffffff601000ull);
    ck_assert_uint_eq(r[9].prot, MEMDIFF_PROT_EXEC);
}
END_TEST

START_TEST(last_line_without_newline)
{
    memdiff__plat_region *r;
    size_t n;
    ck_assert_int_eq(parse("00400000-00401000 r--p 00000000 08:01 11 /a\n"
                           "00401000-00402000 rw-p 00000000 00:00 0",
                           &r, &n),
                     MEMDIFF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(r[1].end, 0x402000);
    ck_assert_str_eq(r[1].path, "");
    ck_assert_int_eq(parse("", &r, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 0);
}
END_TEST

/* The text ends exactly at a page followed by an inaccessible one: any read past len faults. */
START_TEST(honours_len_without_terminator)
{
    long ps = sysconf(_SC_PAGESIZE);
    char *mem = mmap(NULL, (size_t)ps * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    ck_assert_ptr_ne(mem, MAP_FAILED);
    ck_assert_int_eq(mprotect(mem + ps, (size_t)ps, PROT_NONE), 0);
    const char *lines[] = {
        "00400000-00401000 r--p 00000000 08:01 11 /path with space",
        "00400000-00401000 r--p 00000000 08:01 11",
        "00400000-00401000 r--p 00000000 08:01",
        "00400000-00401000 r--p 0000",
        "00400000-00401000 r",
        "00400000-004",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        size_t len = strlen(lines[i]);
        char *text = mem + ps - (long)len;
        memcpy(text, lines[i], len);
        memdiff__plat_region *r;
        size_t n;
        int rc = memdiff__linux_parse_maps(text, len, &arena, &r, &n, NULL);
        ck_assert_int_eq(rc, i < 2 ? MEMDIFF_OK : MEMDIFF_EFORMAT);
    }
    /* len shorter than the text: what follows is not looked at */
    const char *two = "00400000-00401000 r--p 00000000 08:01 11 /a\nGARBAGE";
    memdiff__plat_region *r;
    size_t n;
    ck_assert_int_eq(memdiff__linux_parse_maps(two, strlen(two) - 7, &arena, &r, &n, NULL),
                     MEMDIFF_OK);
    ck_assert_uint_eq(n, 1);
    munmap(mem, (size_t)ps * 2);
}
END_TEST

START_TEST(malformed_lines)
{
    const char *ok = "00400000-00401000 r--p 00000000 08:01 11 /a\n";
    char buf[512];
    static const char *bad[] = {
        "zz400000-00401000 r--p 00000000 08:01 11 /b",       /* bad hex */
        "00401000-00402000 r--p 00000000 08:01",             /* missing inode */
        "00401000-00402000 r--p",                            /* missing fields */
        "00403000-00402000 r--p 00000000 08:01 11 /b",       /* start > end */
        "00402000-00402000 r--p 00000000 08:01 11 /b",       /* empty */
        "00401000-00402000 rwxq 00000000 08:01 11 /b",       /* bad permissions */
        "00401000-00402000 r--p 00000000 0801 11 /b",        /* bad device */
        "00401000-00402000 r--p 00000000 08:01 1x /b",       /* bad inode */
        "00401000-00402000 r--p 00000000 08:01 99999999999999999999 /b", /* inode overflow */
        "10000000000401000-10000000000402000 r--p 00000000 08:01 11 /b", /* 17 digits */
        "00401001-00402000 r--p 00000000 08:01 11 /b",       /* not page aligned */
        "00400000-00402000 r--p 00000000 08:01 11 /b",       /* overlaps line 1 */
        "00300000-00301000 r--p 00000000 08:01 11 /b",       /* descending */
        "",                                                  /* empty line */
        "00401000-00402000\tr--p 00000000 08:01 11 /b",      /* tab separator */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(buf, sizeof buf, "%s%s\n%s", ok, bad[i], ok);
        expect_format_error(buf, "maps line 2");
    }
    static const char nul[] = "00400000-00401000 r--p 00000000 08:01 11 /a\0b\n";
    memdiff__plat_region *r;
    size_t n;
    ck_assert_int_eq(memdiff__linux_parse_maps(nul, sizeof nul - 1, &arena, &r, &n, NULL),
                     MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "maps line 1: NUL byte"));
}
END_TEST

START_TEST(huge_addresses)
{
    memdiff__plat_region *r;
    size_t n;
    ck_assert_int_eq(parse("7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n"
                           "fffffffffffff000-ffffffffffffffff rw-p ffffffffffff0000 ff:ff "
                           "18446744073709551615 /x\n",
                           &r, &n),
                     MEMDIFF_EFORMAT); /* end not page aligned */
    ck_assert_int_eq(parse("7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n"
                           "ffffffffffffe000-fffffffffffff000 rw-p ffffffffffff0000 fff:fffff "
                           "18446744073709551615 /x\n",
                           &r, &n),
                     MEMDIFF_OK);
    ck_assert_uint_eq(r[1].start, 0xffffffffffffe000ull);
    ck_assert_uint_eq(r[1].offset, 0xffffffffffff0000ull);
    ck_assert_uint_eq(r[1].inode, UINT64_MAX);
    ck_assert_uint_eq(r[1].dev, (0xfffull << 32) | 0xfffff);
}
END_TEST

/* The regions of this process (proc_root NULL) or of a fixture tree's "self". */
static void regions_of(const char *proc_root, memdiff__plat_region **r, size_t *n)
{
    memdiff__open_args args = {0, proc_root, NULL, 0, 1};
    memdiff__proc *proc;
    memdiff__caps caps;
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, &caps), MEMDIFF_OK);
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, r, n), MEMDIFF_OK);
    memdiff__plat_close(proc);
}

/* A new file at path, one page long, mapped shared and read-only. */
static void *map_new_file(const char *path, long ps)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    ck_assert_msg(fd >= 0, "cannot create %s", path);
    ck_assert_int_eq(ftruncate(fd, ps), 0);
    void *p = mmap(NULL, (size_t)ps, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    close(fd);
    return p;
}

START_TEST(fixture_regions)
{
    memdiff__open_args args = {0, MEMDIFF_TEST_FIXTURES "/pages", NULL, 0, 1};
    memdiff__proc *proc;
    memdiff__caps caps;
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, &caps), MEMDIFF_OK);
    memdiff__plat_region *r;
    size_t n;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &n), MEMDIFF_OK);
    ck_assert_uint_eq(n, 4);
    ck_assert_str_eq(r[0].path, "/usr/bin/fixture tool");
    ck_assert_uint_ne(r[0].flags & MEMDIFF__RF_DELETED, 0);
    ck_assert_uint_eq(r[2].flags, MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE);
    ck_assert_uint_eq(r[3].prot, 0);
    memdiff__plat_close(proc);

    memdiff__open_args missing = {0, MEMDIFF_TEST_FIXTURES "/no-such-tree", NULL, 0, 1};
    ck_assert_int_eq(memdiff__plat_open(&missing, &arena, &proc, &caps), MEMDIFF_ESRCH);
    ck_assert_ptr_null(proc);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "no-such-tree/self/maps"));
}
END_TEST

static const memdiff__plat_region *find_start(const memdiff__plat_region *r, size_t n,
                                              const void *p)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].start == (uint64_t)(uintptr_t)p)
            return &r[i];
    return NULL;
}

/* A file whose name holds spaces, " (deleted)", brackets and a newline, mapped for real: the
 * path is the name's bytes. */
START_TEST(hostile_names_in_real_maps)
{
    char dir[] = "/tmp/memdiff-maps-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char name1[256], name2[256], want1[256], want2[256];
    snprintf(name1, sizeof name1, "%s/a b (deleted) [x]\nline", dir);
    snprintf(want1, sizeof want1, "%s/a b (deleted) [x]\nline", dir);
    snprintf(name2, sizeof name2, "%s/[heap] gone", dir);
    snprintf(want2, sizeof want2, "%s/[heap] gone", dir);
    long ps = sysconf(_SC_PAGESIZE);
    void *maps[2];
    const char *names[2] = {name1, name2};
    for (int i = 0; i < 2; i++)
        maps[i] = map_new_file(names[i], ps);
    ck_assert_int_eq(unlink(name2), 0);

    memdiff__plat_region *r;
    size_t n;
    regions_of(NULL, &r, &n);

    const memdiff__plat_region *a = find_start(r, n, maps[0]);
    ck_assert_ptr_nonnull(a);
    ck_assert_str_eq(a->path, want1);
    ck_assert_int_eq(a->hint, MEMDIFF__HINT_NONE);
    ck_assert_uint_eq(a->flags, MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE);
    const memdiff__plat_region *b = find_start(r, n, maps[1]);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(b->path, want2);
    ck_assert_int_eq(b->hint, MEMDIFF__HINT_NONE);
    ck_assert_uint_eq(b->flags,
                      MEMDIFF_REGION_SHARED | MEMDIFF_REGION_FILE | MEMDIFF__RF_DELETED);

    munmap(maps[0], (size_t)ps);
    munmap(maps[1], (size_t)ps);
    unlink(name1);
    rmdir(dir);
}
END_TEST

/* Names the kernel's maps cannot tell apart: \012 is a newline or those four bytes. Each region's
 * path is the reading that names its file (by device and inode); a deleted file, which no
 * reading names any more, keeps every \012 decoded as a newline (docs/categories.md). */
START_TEST(escapes_resolved_against_the_file)
{
    char dir[] = "/tmp/memdiff-esc-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    static const char *const base[] = {
        "pair\nx",        /* a newline ...                                  */
        "pair\\012x",     /* ... and, beside it, the four bytes spelt out   */
        "mixed\\012a\nb", /* one of each: a reading neither all nor none    */
        "gone\\012y",     /* unlinked below: no reading names it            */
    };
    static const char *const want[] = {"pair\nx", "pair\\012x", "mixed\\012a\nb", "gone\ny"};
    enum { N = sizeof base / sizeof base[0] };
    char names[N][256];
    void *maps[N];
    long ps = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "%s/%s", dir, base[i]);
        maps[i] = map_new_file(names[i], ps);
    }
    ck_assert_int_eq(unlink(names[3]), 0);

    memdiff__plat_region *r;
    size_t n;
    regions_of(NULL, &r, &n);

    for (int i = 0; i < N; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, want[i]);
        const memdiff__plat_region *a = find_start(r, n, maps[i]);
        ck_assert_ptr_nonnull(a);
        ck_assert_msg(strcmp(a->path, path) == 0, "region %d: path \"%s\", want \"%s\"", i,
                      a->path, path);
        munmap(maps[i], (size_t)ps);
        if (i != 3)
            unlink(names[i]);
    }
    rmdir(dir);
}
END_TEST

/* The readings are looked up in the process's root (<dir>/root), not in the caller's: a fixture
 * tree whose root holds "/data/a\012b" spelt out, and whose maps names it by that file's device
 * and inode. The caller's / has no /data/a\012b, and the tree's root no "/data/a<newline>b", so
 * only a lookup under the tree's root finds the four bytes. Its mountinfo says the device is no
 * FUSE mount (when /tmp is a tmpfs, whose device has major 0). */
START_TEST(escapes_resolved_under_the_process_root)
{
    char tree[] = "/tmp/memdiff-root-XXXXXX", path[512], cmd[640];
    ck_assert_ptr_nonnull(mkdtemp(tree));
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/self/root/data' && cp '%s/pages/self/status' "
             "'%s/pages/self/pagemap' '%s/self/'", tree, MEMDIFF_TEST_FIXTURES,
             MEMDIFF_TEST_FIXTURES, tree);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/self/root/data/a\\012b", tree);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    close(fd);
    unsigned maj = major(st.st_dev), min = minor(st.st_dev);
    snprintf(path, sizeof path, "%s/self/maps", tree);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "00400000-00401000 r--s 00000000 %02x:%02x %llu   /data/a\\012b\n", maj, min,
            (unsigned long long)st.st_ino);
    fprintf(f, "00401000-00402000 r--s 00000000 %02x:%02x %llu   /data/c\\012d\n", maj, min,
            (unsigned long long)st.st_ino);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(path, sizeof path, "%s/self/mountinfo", tree);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "21 1 %u:%u / / rw,relatime shared:1 - ext4 /dev/root rw\n", maj, min);
    ck_assert_int_eq(fclose(f), 0);

    memdiff__plat_region *r;
    size_t n;
    regions_of(tree, &r, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(r[0].path, "/data/a\\012b"); /* the file under the tree's root */
    ck_assert_str_eq(r[1].path, "/data/c\nd");    /* no such file: the newline reading */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tree);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The open hook for the bounded lookups: counts the lookups of readings (under <dir>/root/) and
 * fails them when told to, as for a file renamed since. */
static unsigned lookups;
static int fail_lookups;

static int count_lookups(const char *path, int flags)
{
    if (!(flags & O_PATH) || !strstr(path, "/root/"))
        return MEMDIFF__LINUX_OPEN_PASS;
    lookups++;
    if (!fail_lookups)
        return MEMDIFF__LINUX_OPEN_PASS;
    errno = ENOENT;
    return -1;
}

/* This process's regions, read with the lookups counted (and failed when fail); their count. */
static unsigned counted_regions(int fail, memdiff__plat_region **r, size_t *n)
{
    lookups = 0;
    fail_lookups = fail;
    memdiff__linux_open_hook = count_lookups;
    regions_of(NULL, r, n);
    memdiff__linux_open_hook = NULL;
    return lookups;
}

/* A name with 7 escapes gets two lookups (all newlines, all \012), and keeps the newlines when
 * it is neither; every reading of up to 6 is tried; a region list gets 4096 lookups at most. */
START_TEST(lookups_are_bounded)
{
    char dir[] = "/tmp/memdiff-bound-XXXXXX", path[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    long ps = sysconf(_SC_PAGESIZE);
    /* Seven: three newlines and four \012, mixed. */
    snprintf(path, sizeof path, "%s/seven\n\\012\n\\012\n\\012\\012", dir);
    void *seven = map_new_file(path, ps);
    memdiff__plat_region *r;
    size_t n;
    ck_assert_uint_eq(counted_regions(0, &r, &n), 2);
    const memdiff__plat_region *a = find_start(r, n, seven);
    ck_assert_ptr_nonnull(a);
    ck_assert_str_eq(strrchr(a->path, '/'), "/seven\n\n\n\n\n\n\n");
    munmap(seven, (size_t)ps);
    unlink(path);

    /* 70 files of 6 escapes whose every lookup fails: 64 each, 4480 in all, cut at 4096. */
    enum { FILES = 70 };
    void *maps[FILES];
    for (int i = 0; i < FILES; i++) {
        snprintf(path, sizeof path, "%s/%02d\n\n\n\n\n\n", dir, i);
        maps[i] = map_new_file(path, ps);
    }
    ck_assert_uint_eq(counted_regions(1, &r, &n), 4096);
    for (int i = 0; i < FILES; i++) { /* and every path keeps its newlines */
        a = find_start(r, n, maps[i]);
        ck_assert_ptr_nonnull(a);
        snprintf(path, sizeof path, "%s/%02d\n\n\n\n\n\n", dir, i);
        ck_assert_str_eq(a->path, path);
        munmap(maps[i], (size_t)ps);
        unlink(path);
    }
    rmdir(dir);
}
END_TEST

/* The first read of a file comes back with 65535 bytes (the read buffer's first 64 KiB, less
 * the NUL): a file whose first 65535 bytes end with x86-64's gate line is read no further at
 * READ_MAPS (the kernel prints nothing after it), to the end at READ_ALL, and to the end at
 * READ_MAPS when that last line only holds the gate's address further on. */
static size_t read_constructed(const char *last_line, int how, char **text)
{
    char path[] = "/tmp/memdiff-gate-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    size_t first = 65535, ll = strlen(last_line);
    char *buf = malloc(first + 16);
    ck_assert_ptr_nonnull(buf);
    memset(buf, 'x', first - ll - 1);
    buf[first - ll - 1] = '\n';
    memcpy(buf + first - ll, last_line, ll);
    memcpy(buf + first, "after\n", 6);
    ck_assert_int_eq(write(fd, buf, first + 6), (ssize_t)(first + 6));
    close(fd);
    free(buf);
    char *out = NULL;
    size_t cap = 0, len = 0;
    ck_assert_int_eq(memdiff__linux_read_file(&arena, path, &out, &cap, &len, how), MEMDIFF_OK);
    unlink(path);
    *text = out;
    return len;
}

START_TEST(maps_read_ends_at_the_gate_line)
{
    static const char gate[] = "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0"
                               "                  [vsyscall]\n";
    static const char not_gate[] = "7f0000000000-7f0000001000 r--p 00000000 00:00 0 "
                                   "/tmp/ffffffffff600000-\n";
    char *text;
    ck_assert_uint_eq(read_constructed(gate, MEMDIFF__LINUX_READ_MAPS, &text), 65535);
    ck_assert_str_eq(text + 65535 - strlen(gate), gate);
    ck_assert_uint_eq(read_constructed(gate, MEMDIFF__LINUX_READ_ALL, &text), 65541);
    ck_assert_str_eq(text + 65535, "after\n");
    ck_assert_uint_eq(read_constructed(not_gate, MEMDIFF__LINUX_READ_MAPS, &text), 65541);
}
END_TEST

/* This process's region list, read live (where READ_MAPS applies), has every line of its maps
 * file read to the end, the gate VMA last where the kernel has one. */
START_TEST(live_maps_read_whole)
{
    memdiff__open_args args = {0, NULL, NULL, 0, 1};
    memdiff__proc *proc = NULL;
    memdiff__caps caps;
    ck_assert_int_eq(memdiff__plat_open(&args, &arena, &proc, &caps), MEMDIFF_OK);
    memdiff__plat_region *r;
    size_t n;
    ck_assert_int_eq(memdiff__plat_regions(proc, &arena, &r, &n), MEMDIFF_OK);
    /* The same file read to its end just after, into a buffer that maps nothing. */
    static char text[1 << 20];
    size_t len = 0, lines = 0;
    int fd = open("/proc/self/maps", O_RDONLY);
    ck_assert_int_ge(fd, 0);
    for (ssize_t got; (got = read(fd, text + len, sizeof text - 1 - len)) > 0;)
        len += (size_t)got;
    close(fd);
    text[len] = '\0';
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    ck_assert_uint_eq(n, lines);
    ck_assert_uint_gt(n, 0);
    if (strstr(text, "[vsyscall]"))
        ck_assert_uint_eq(r[n - 1].start, UINT64_C(0xffffffffff600000));
    memdiff__plat_close(proc);
}
END_TEST

Suite *linux_maps_suite(void)
{
    Suite *s = suite_create("linux_maps");
    TCase *tc = tcase_create("Parser");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, ordinary_lines);
    tcase_add_test(tc, paths_with_spaces_and_deleted_text);
    tcase_add_test(tc, only_the_newline_escape_is_decoded);
    tcase_add_test(tc, bracket_names_and_shared_memory);
    tcase_add_test(tc, last_line_without_newline);
    tcase_add_test(tc, honours_len_without_terminator);
    tcase_add_test(tc, huge_addresses);
    suite_add_tcase(s, tc);
    tc = tcase_create("Errors");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, malformed_lines);
    suite_add_tcase(s, tc);
    tc = tcase_create("Process");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, fixture_regions);
    tcase_add_test(tc, hostile_names_in_real_maps);
    tcase_add_test(tc, escapes_resolved_against_the_file);
    tcase_add_test(tc, escapes_resolved_under_the_process_root);
    tcase_add_test(tc, lookups_are_bounded);
    tcase_add_test(tc, maps_read_ends_at_the_gate_line);
    tcase_add_test(tc, live_maps_read_whole);
    suite_add_tcase(s, tc);
    return s;
}
