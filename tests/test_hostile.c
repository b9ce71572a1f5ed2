/* test_hostile.c - targets that try to hang or misdirect the Linux backend, and a proc root
 * that lacks what it is asked for.
 *
 * A process may mount over the path of a file it has mapped, in a user and mount namespace of
 * its own (no privilege needed), and memdiff's module probe reads a module's ELF headers from
 * <proc>/PID/root/<path> when they are not resident in memory. A FIFO there would block a plain
 * open forever, a device's open would touch the device. The target here maps a small ELF image
 * (its headers never touched, so never resident), covers it with a FIFO or a character device
 * and waits; every depth's snapshot must finish (an alarm turns a hang into a failure), succeed,
 * and attribute the module by the fallback rule (its regions alone), as for a file it cannot
 * read. The image's program headers say more than its regions do: a bss page behind the
 * executable one, which the regions alone do not give (the last region is not writable). So
 * the page behind is Image when the headers were read, Private when they were not, and the
 * uncovered file, the control, shows the first. A file on FUSE is not even looked up (a FUSE
 * server that stops answering hangs the lookup): the target puts its image on a tmpfs of its
 * own, a device of major 0 as FUSE's, which the probe reads, and which, shown as FUSE in the
 * target's mountinfo through the backend's open hook, it does not touch. */
#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "linux.h"
#include "memdiff.h"
#include "scenario_util.h"
#include "suites.h"

/* A check of a scenario, which runs as root and, in a child, as nobody: returns what failed. */
#define NEED(c)                                                                                \
    do {                                                                                       \
        if (!(c))                                                                              \
            return failed(__LINE__, #c);                                                       \
    } while (0)

static char message[512];

static const char *failed(int line, const char *what)
{
    snprintf(message, sizeof message, "test_hostile.c:%d: failed: %s", line, what);
    return message;
}

/* What a snapshot may take at most, per depth: the target has a few dozen mappings. */
#define SNAPSHOT_SECONDS 20

/* What the target does to its module's file: nothing; a FIFO or a character device mounted
 * over its path; the file on a tmpfs of its own (a device of major 0, as FUSE's), shown as
 * such or, through the open hook, as FUSE in the target's mountinfo. */
typedef enum cover { COVER_NONE, COVER_FIFO, COVER_CHR, COVER_TMPFS, COVER_FUSE } cover;

static const char *const cover_name[] = {"nothing", "a FIFO", "a character device",
                                         "a tmpfs", "a tmpfs shown as FUSE"};

/* COVER_FUSE: the target's mountinfo path, and the opens of its module's file through its
 * root. */
static char fake_mountinfo[64], module_path[128];
static int module_opens;

/* The open hook: <proc>/PID/mountinfo with " - tmpfs " made " - fuse.hostile " (a memory
 * file), other paths as usual, those of <proc>/PID/root/<module> counted. */
static int fuse_claim(const char *path, int flags)
{
    module_opens += strcmp(path, module_path) == 0;
    if (!fake_mountinfo[0] || strcmp(path, fake_mountinfo) != 0)
        return MEMDIFF__LINUX_OPEN_PASS;
    static char text[1 << 16];
    int in = open(path, flags | O_CLOEXEC), out = memfd_create("mountinfo", MFD_CLOEXEC);
    size_t n = 0;
    ssize_t got = 1;
    while (in >= 0 && got > 0 && n < sizeof text - 1)
        if ((got = read(in, text + n, sizeof text - 1 - n)) > 0)
            n += (size_t)got;
    if (in >= 0)
        close(in);
    if (n == 0 || got < 0 || out < 0) {
        if (out >= 0)
            close(out);
        errno = EIO;
        return -1;
    }
    text[n] = '\0';
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *tmpfs = strstr(line, " - tmpfs ");
        if (dprintf(out, "%.*s%s%s\n", tmpfs ? (int)(tmpfs - line) : (int)strlen(line), line,
                    tmpfs ? " - fuse.hostile " : "", tmpfs ? tmpfs + 9 : "") < 0)
            break;
        line = nl ? nl + 1 : NULL;
    }
    lseek(out, 0, SEEK_SET);
    return out;
}

/* A 2-page ELF image whose program headers load page 0 read-only and page 1 executable with a
 * zero-filled page behind it (memsz two pages): what the probe reads when it reads the file. */
static int write_image(const char *path, size_t ps)
{
    unsigned char *img = calloc(2, ps);
    if (!img)
        return -1;
    Elf64_Ehdr *e = (Elf64_Ehdr *)img;
    memcpy(e->e_ident, ELFMAG, SELFMAG);
    e->e_ident[EI_CLASS] = ELFCLASS64;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    e->e_ident[EI_DATA] = ELFDATA2LSB;
#else
    e->e_ident[EI_DATA] = ELFDATA2MSB;
#endif
    e->e_ident[EI_VERSION] = EV_CURRENT;
    e->e_type = ET_DYN;
    e->e_version = EV_CURRENT;
    e->e_phoff = sizeof *e;
    e->e_ehsize = sizeof *e;
    e->e_phentsize = sizeof(Elf64_Phdr);
    e->e_phnum = 2;
    Elf64_Phdr ph[2] = {
        {PT_LOAD, PF_R, 0, 0, 0, ps, ps, ps},
        {PT_LOAD, PF_R | PF_X, ps, ps, ps, ps, 2 * ps, ps},
    };
    memcpy(img + sizeof *e, ph, sizeof ph);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int ok = fd >= 0 && write(fd, img, 2 * ps) == (ssize_t)(2 * ps);
    if (fd >= 0 && close(fd) != 0)
        ok = 0;
    free(img);
    return ok ? 0 : -1;
}

static int write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Root of a new user namespace with a mount namespace of its own whose mounts do not propagate
 * back; 0, or -1 with the reason in why (the kernel refuses unprivileged namespaces). */
static int own_namespaces(char *why, size_t size)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    char map[64];
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        snprintf(why, size, "unshare(CLONE_NEWUSER | CLONE_NEWNS): %s", strerror(errno));
        return -1;
    }
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
    if (write_text("/proc/self/uid_map", map) != 0 ||
        write_text("/proc/self/setgroups", "deny") != 0) {
        snprintf(why, size, "uid_map: %s", strerror(errno));
        return -1;
    }
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
    if (write_text("/proc/self/gid_map", map) != 0) {
        snprintf(why, size, "gid_map: %s", strerror(errno));
        return -1;
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        snprintf(why, size, "private mounts: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* The target (a child): maps dir/lib.so as a module would be, page 0 read-only and page 1
 * executable, then a private rw page right behind (written: resident), each a VMA of its own
 * (a PROT_NONE guard page after), covers the file's path with c and reports "ok <address>\n",
 * or "skip <reason>\n", on fd; then waits to be killed. A FIFO is watched for opens on the
 * inotify descriptor watch, which the test reads: an open that waits for a writer would never
 * finish, one that does not (O_NONBLOCK) is reported (IN_OPEN), one that only looks (O_PATH)
 * is not. */
static void target(cover c, const char *dir, int fd, int watch)
{
    char lib[64], fifo[64], line[256];
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    snprintf(lib, sizeof lib, "%s/lib.so", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    const char *over = c == COVER_FIFO ? fifo : "/dev/null";
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a test ended by its alarm leaves no target behind */
    line[0] = '\0'; /* own_namespaces says why it failed there */
    if (c != COVER_NONE && own_namespaces(line, sizeof line) == 0 && c >= COVER_TMPFS &&
        mount("tmpfs", dir, "tmpfs", 0, "size=64k") != 0)
        snprintf(line, sizeof line, "mount tmpfs on %s: %s", dir, strerror(errno));
    if (line[0]) {
        dprintf(fd, "skip %s\n", line);
        _exit(0);
    }
    if (write_image(lib, ps) != 0)
        _exit(11);
    char *base = mmap(NULL, 4 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int lfd = open(lib, O_RDONLY | O_CLOEXEC);
    if (base == MAP_FAILED || lfd < 0 ||
        mmap(base, ps, PROT_READ, MAP_PRIVATE | MAP_FIXED, lfd, 0) == MAP_FAILED ||
        mmap(base + ps, ps, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, lfd, (off_t)ps) ==
            MAP_FAILED ||
        mmap(base + 2 * ps, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
             -1, 0) == MAP_FAILED)
        _exit(12);
    close(lfd);
    base[2 * ps] = 1;
    if (c == COVER_FIFO && mkfifo(fifo, 0600) != 0)
        _exit(14);
    if ((c == COVER_FIFO || c == COVER_CHR) && mount(over, lib, NULL, MS_BIND, NULL) != 0) {
        dprintf(fd, "skip bind mount of %s over %s: %s\n", over, lib, strerror(errno));
        _exit(0);
    }
    if (c == COVER_FIFO && inotify_add_watch(watch, lib, IN_OPEN) < 0)
        _exit(16);
    if (dprintf(fd, "ok %llx\n", (unsigned long long)(uintptr_t)base) <= 0)
        _exit(17);
    for (;;)
        pause();
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_hostile: a snapshot did not finish in time (hang)\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(98);
    _exit(99);
}

/* The whole scenario for the cover *arg, as the calling user: NULL when every check held (or
 * the kernel refused the namespaces, said on stderr), else what failed. */
static const char *scenario(void *arg)
{
    cover c = *(const cover *)arg;
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    char dir[] = "/tmp/memdiff-hostile-XXXXXX", lib[64], fifo[64];
    NEED(mkdtemp(dir) != NULL);
    snprintf(lib, sizeof lib, "%s/lib.so", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    int fds[2], watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    NEED(watch >= 0);
    NEED(pipe2(fds, O_CLOEXEC) == 0);
    pid_t pid = fork();
    NEED(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        target(c, dir, fds[1], watch);
    }
    close(fds[1]);
    char line[256];
    ssize_t n = read(fds[0], line, sizeof line - 1);
    line[n > 0 ? n : 0] = '\0';
    const char *err = NULL;
    unsigned long long base = 0;
    int skipped = strncmp(line, "skip ", 5) == 0;
    if (skipped)
        fprintf(stderr, "test_hostile: %s as uid %u: skipped, %s", cover_name[c],
                (unsigned)getuid(), line + 5);
    else if (sscanf(line, "ok %llx", &base) != 1)
        err = failed(__LINE__, "the target did not start");
    static const memdiff_depth depths[] = {MEMDIFF_DEPTH_FAST, MEMDIFF_DEPTH_STANDARD,
                                           MEMDIFF_DEPTH_DEEP};
    /* The hook counts the module's lookups on a tmpfs too, where they happen: the count is
     * of the right path. */
    snprintf(fake_mountinfo, sizeof fake_mountinfo, "/proc/%d/mountinfo", (int)pid);
    if (c != COVER_FUSE)
        fake_mountinfo[0] = '\0';
    snprintf(module_path, sizeof module_path, "/proc/%d/root%s", (int)pid, lib);
    module_opens = 0;
    if (c >= COVER_TMPFS)
        memdiff__linux_open_hook = fuse_claim;
    for (size_t i = 0; !err && !skipped && i < sizeof depths / sizeof depths[0]; i++) {
        memdiff_options o = MEMDIFF_OPTIONS_INIT;
        o.pid = pid;
        o.depth = depths[i];
        memdiff_snapshot *snap = NULL;
        void (*was)(int) = signal(SIGALRM, on_alarm);
        alarm(SNAPSHOT_SECONDS);
        int took = memdiff_snapshot_take(&o, &snap);
        alarm(0);
        signal(SIGALRM, was);
        if (took != MEMDIFF_OK) {
            snprintf(message, sizeof message, "%s, depth %d: %s (%s)", cover_name[c],
                     (int)depths[i], memdiff_status_name(took), memdiff_last_error());
            err = message;
            break;
        }
        memdiff_region r[3];
        for (int k = 0; k < 3 && !err; k++)
            if (memdiff_snapshot_find(snap, base + (uint64_t)k * ps, &r[k]) != MEMDIFF_OK)
                err = failed(__LINE__, "a page of the target is in no region");
        /* The module's regions are Image, labelled with the file's path, either way; the page
         * behind is the headers' bss when the file was read (nothing covers it), else
         * anonymous memory of nobody's (the fallback rule). */
        memdiff_category want = c == COVER_NONE || c == COVER_TMPFS ? MEMDIFF_CAT_IMAGE
                                                                    : MEMDIFF_CAT_PRIVATE;
        if (!err && (r[0].category != MEMDIFF_CAT_IMAGE || r[1].category != MEMDIFF_CAT_IMAGE ||
                     strcmp(r[0].label, lib) != 0 || strcmp(r[1].label, lib) != 0 ||
                     r[2].category != want)) {
            snprintf(message, sizeof message, "%s, depth %d: the pages are %s '%s', %s '%s', "
                     "%s '%s'; want image, image, %s", cover_name[c], (int)depths[i],
                     memdiff_category_name(r[0].category), r[0].label,
                     memdiff_category_name(r[1].category), r[1].label,
                     memdiff_category_name(r[2].category), r[2].label,
                     memdiff_category_name(want));
            err = message;
        }
        memdiff_snapshot_free(snap);
    }
    memdiff__linux_open_hook = NULL;
    /* A file FUSE serves is not even looked up: the lookup itself would ask the server. */
    if (!err && c == COVER_FUSE && !skipped && module_opens != 0)
        err = failed(__LINE__, "the file of a FUSE-served module was looked up");
    if (!err && c == COVER_TMPFS && !skipped && module_opens == 0)
        err = failed(__LINE__, "the file of a module on a tmpfs was not looked up");
    /* Not even opened without waiting: the probe looks at the path, never opens it. */
    char ev[sizeof(struct inotify_event) + 64];
    if (!err && c == COVER_FIFO && !skipped && read(watch, ev, sizeof ev) > 0)
        err = failed(__LINE__, "the FIFO over the module was opened");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fds[0]);
    close(watch);
    unlink(fifo);
    unlink(lib);
    rmdir(dir);
    return err;
}

/* scenario(c) as the test's user (root in CI) and as nobody, the target's own user then: both
 * may read the target, and neither may hang or misread. */
static void both_users(cover c)
{
    const char *err = scenario(&c);
    ck_assert_msg(err == NULL, "%s", err);
    if (geteuid() != 0)
        return;
    err = scn_as_nobody(scenario, &c);
    ck_assert_msg(err == NULL, "as nobody: %s", err);
}

START_TEST(module_file_read_when_uncovered)
{
    both_users(COVER_NONE);
}
END_TEST

START_TEST(module_covered_by_fifo)
{
    both_users(COVER_FIFO);
}
END_TEST

START_TEST(module_covered_by_char_device)
{
    both_users(COVER_CHR);
}
END_TEST

START_TEST(module_on_tmpfs_read)
{
    both_users(COVER_TMPFS);
}
END_TEST

START_TEST(module_on_fuse_not_looked_up)
{
    both_users(COVER_FUSE);
}
END_TEST

/* ---- a proc mounted with subset=pid (Linux 5.8) as the proc root ------------------------ */

static const char *subset_pid_body(void)
{
    char dir[] = "/tmp/memdiff-subset-XXXXXX", path[64];
    NEED(unshare(CLONE_NEWNS) == 0);
    NEED(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
    NEED(mkdtemp(dir) != NULL);
    if (mount("proc", dir, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid") != 0) {
        fprintf(stderr, "proc_subset_pid_names_missing_file: mount -o subset=pid: %s; skipped\n",
                strerror(errno));
        rmdir(dir);
        return NULL;
    }
    snprintf(path, sizeof path, "%s/kpageflags", dir);
    NEED(access(path, F_OK) != 0 && errno == ENOENT); /* what subset=pid leaves out */
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.depth = MEMDIFF_DEPTH_DEEP;
    o.fixture_root = dir;
    memdiff_snapshot *snap = NULL;
    int rc = memdiff_snapshot_take(&o, &snap);
    memdiff_snapshot_info info;
    const char *err = NULL;
    if (rc != MEMDIFF_OK || memdiff_snapshot_get_info(snap, &info) != MEMDIFF_OK) {
        err = failed(__LINE__, "a snapshot through the subset=pid proc");
    } else if (!(info.sources & MEMDIFF_SRC_FRAMES)) {
        fprintf(stderr, "proc_subset_pid_names_missing_file: no frame numbers here; checked "
                        "the snapshot only\n");
    } else {
        /* Frames are read (root): what deep lacks is the file, not a capability. */
        char want[128];
        snprintf(want, sizeof want, "%s is not present (is proc mounted with subset=pid?)",
                 path);
        if (info.depth != MEMDIFF_DEPTH_STANDARD || !info.degraded ||
            strcmp(info.degraded, want) != 0) {
            snprintf(message, sizeof message, "depth %d, degraded '%s'; want 1, '%s'",
                     (int)info.depth, info.degraded ? info.degraded : "(null)", want);
            err = message;
        }
    }
    memdiff_snapshot_free(snap);
    umount2(dir, MNT_DETACH);
    rmdir(dir);
    return err;
}

/* /proc/kpageflags is missing from a proc mounted with subset=pid: deep depth is degraded with
 * that reason, not with a missing CAP_SYS_ADMIN the caller holds. */
START_TEST(proc_subset_pid_names_missing_file)
{
    if (geteuid() != 0) {
        fprintf(stderr, "proc_subset_pid_names_missing_file: mounting proc needs root; "
                        "skipped\n");
        return;
    }
    /* In a child: the mount namespace it makes is left with it. */
    fflush(NULL);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        const char *err = subset_pid_body();
        if (err && write(fds[1], err, strlen(err)) < 0)
            _exit(2);
        _exit(err ? 1 : 0);
    }
    close(fds[1]);
    char text[512];
    ssize_t n = read(fds[0], text, sizeof text - 1);
    text[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int status = 0;
    ck_assert_int_eq(waitpid(p, &status, 0), p);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, text);
}
END_TEST

/* A process that exec's again and again: a snapshot that meets an exec reads its regions from
 * one address space and pagemap, opened when the snapshot began, from the one before, which
 * reads as empty: every page "not resident". It must be taken again on the new program
 * (MEMDIFF_ECHANGED, once more), or fail with a status; never succeed with the pages of no
 * address space. Every snapshot that succeeds has resident pages (a running /bin/sh has its
 * stack and image pages resident) and runs for them. Without the check, 23 of 800 snapshots
 * (fast and standard) read 0 resident bytes here; with it none, and 206 fail with ECHANGED:
 * a program that exec's every millisecond meets the retake too. The regions can also be listed
 * from the new address space before its program is mapped (one page of stack at the top, which
 * then moves) or from the old one once torn down (none), and no page be found at all: the core
 * takes those again too (1 such snapshot in about 5,000 before, none in 200,000 after). */
START_TEST(snapshot_racing_exec_is_taken_again)
{
    char dir[] = "/tmp/memdiff-exec-XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/again", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("#!/bin/sh\nexec \"$0\"\n", f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(path, 0700), 0);
    fflush(NULL);
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        execl(path, path, (char *)NULL);
        _exit(127);
    }
    int empty = 0, taken = 0, failed = 0;
    for (int depth = MEMDIFF_DEPTH_FAST; depth <= MEMDIFF_DEPTH_STANDARD; depth++) {
        for (int i = 0; i < 400; i++) {
            memdiff_options o = MEMDIFF_OPTIONS_INIT;
            o.pid = p;
            o.depth = (memdiff_depth)depth;
            memdiff_snapshot *s = NULL;
            int rc = memdiff_snapshot_take(&o, &s);
            if (rc != MEMDIFF_OK) {
                ck_assert_msg(rc == MEMDIFF_ECHANGED || rc == MEMDIFF_ESRCH, "%s: %s",
                              memdiff_status_name(rc), memdiff_last_error());
                failed++;
                continue;
            }
            memdiff_snapshot_info info;
            ck_assert_int_eq(memdiff_snapshot_get_info(s, &info), MEMDIFF_OK);
            taken++;
            empty += info.resident_bytes == 0 || info.run_count == 0;
            memdiff_snapshot_free(s);
        }
    }
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    unlink(path);
    rmdir(dir);
    fprintf(stderr, "snapshot_racing_exec_is_taken_again: %d taken, %d failed, %d empty\n",
            taken, failed, empty);
    ck_assert_int_gt(taken, 400);
    ck_assert_int_eq(empty, 0);
}
END_TEST

/* An exec at a known point. The target blocks in `read`; the snapshot's hook (after attribution,
 * before the page walk) lets it go and waits until its exec closed the other pipe's write end.
 * The first take then walks the regions it listed with the address space they came from torn
 * down: whatever it read before, and nothing after. It must not pass that off as the process:
 * the snapshot is taken again (attempts 2), of the program exec'd (sleep). Two targets: a shell,
 * small enough that every mapping of it lies in the presence windows attribution scans (which at
 * fast depth also serve the walk, so that nothing is read after the exec but the totals), and a
 * fork of this program holding a 1 MiB malloc chunk, which the walk scans after the exec (the
 * kernel answers ESRCH). */
static int exec_go = -1, exec_done = -1;

static void exec_now(void)
{
    memdiff__test_while_taking(NULL); /* once */
    char c = '\n', d; /* a line for the shell's read */
    ck_assert_int_eq(write(exec_go, &c, 1), 1);
    ck_assert_int_eq(read(exec_done, &d, 1), 0); /* EOF: the exec closed its end */
}

static void exec_during_snapshot(int shell, memdiff_depth depth)
{
    int go[2], done[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(done), 0);
    fflush(NULL);
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        dup2(go[0], 0);
        dup2(done[1], 3);
        close(go[0]);
        close(go[1]);
        close(done[0]);
        close(done[1]);
        if (shell)
            execl("/bin/sh", "sh", "-c", "read x; exec sleep 30 3>&-", (char *)NULL);
        char *m = malloc(1 << 20), c;
        if (!m || fcntl(3, F_SETFD, FD_CLOEXEC) != 0)
            _exit(126);
        memset(m, 1, 1 << 20);
        if (read(0, &c, 1) != 1)
            _exit(125);
        execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    close(go[0]);
    close(done[1]);
    exec_go = go[1];
    exec_done = done[0];
    char exe[64], link[PATH_MAX] = "";
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)p);
    for (int i = 0; shell && i < 2000; i++) { /* until the child is the shell */
        ssize_t n = readlink(exe, link, sizeof link - 1);
        link[n > 0 ? n : 0] = 0;
        if (n > 0 && strstr(link, "memdiff_tests") == NULL)
            break;
        usleep(1000);
    }
    ck_assert_ptr_null(strstr(link, "memdiff_tests"));
    usleep(20000); /* loaded, its memory written, in read() */
    memdiff_options o = MEMDIFF_OPTIONS_INIT;
    o.pid = p;
    o.depth = depth;
    memdiff_snapshot *snap = NULL;
    memdiff__test_while_taking(exec_now);
    int rc = memdiff_snapshot_take(&o, &snap);
    memdiff__test_while_taking(NULL);
    ck_assert_msg(rc == MEMDIFF_OK, "%s: %s", memdiff_status_name(rc), memdiff_last_error());
    memdiff_snapshot_info info;
    ck_assert_int_eq(memdiff_snapshot_get_info(snap, &info), MEMDIFF_OK);
    int sleep_image = 0;
    memdiff_region r;
    for (size_t i = 0; memdiff_snapshot_region(snap, i, &r) == MEMDIFF_OK; i++)
        sleep_image = sleep_image || (r.label && strstr(r.label, "sleep"));
    ck_assert_msg(sleep_image && info.attempts == 2,
                  "%s, depth %d: attempts %u, a region of the program exec'd: %d",
                  shell ? "shell" : "fork", depth, info.attempts, sleep_image);
    memdiff_snapshot_free(snap);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    close(go[1]);
    close(done[0]);
}

START_TEST(exec_between_attribution_and_walk_is_taken_again)
{
    for (int shell = 0; shell <= 1; shell++)
        for (int depth = MEMDIFF_DEPTH_FAST; depth <= MEMDIFF_DEPTH_STANDARD; depth++)
            exec_during_snapshot(shell, (memdiff_depth)depth);
}
END_TEST

Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    TCase *tc = tcase_create("Module probe");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, module_file_read_when_uncovered);
    tcase_add_test(tc, module_covered_by_fifo);
    tcase_add_test(tc, module_covered_by_char_device);
    tcase_add_test(tc, module_on_tmpfs_read);
    tcase_add_test(tc, module_on_fuse_not_looked_up);
    suite_add_tcase(s, tc);
    tc = tcase_create("Proc root");
    tcase_add_test(tc, proc_subset_pid_names_missing_file);
    suite_add_tcase(s, tc);
    tc = tcase_create("Races");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, snapshot_racing_exec_is_taken_again);
    tcase_add_test(tc, exec_between_attribution_and_walk_is_taken_again);
    suite_add_tcase(s, tc);
    return s;
}
