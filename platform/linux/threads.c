/*
 * threads.c - the process's threads and their stack pointers, from <dir>/task (getdents64, no
 * opendir: that would malloc) and task/<tid>/syscall (proc.rst: "syscall").
 *
 * The syscall file reads "nr a1 a2 a3 a4 a5 a6 sp pc" for a thread blocked in a system call,
 * "-1 sp pc" for one blocked outside any, and "running" for one on a CPU. The stack pointer is
 * the second-to-last field either way. The stack's extent is left to the core, which finds the
 * region holding sp (stack_lo / stack_hi stay 0: unknown).
 *
 * The main thread (tid = the process id) is listed without a stack pointer: its stack is the
 * mapping maps calls [stack] (the one holding mm->start_stack), which the core takes as the
 * main thread's whatever its sp. Not reading its syscall file saves four system calls a
 * snapshot; a single-threaded process (below) then costs one fstatat in all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux.h"

static uint64_t parse_hex_token(const char *s, size_t n, int *ok)
{
    uint64_t v = 0;
    *ok = 0;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s += 2;
        n -= 2;
    }
    if (n == 0 || n > 16)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned char)s[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return 0;
        v = v << 4 | d;
    }
    *ok = 1;
    return v;
}

/* The second-to-last whitespace-separated field of a syscall file, or 0 ("running", or a
 * format this code does not know). */
static uint64_t syscall_sp(const char *text, size_t len)
{
    const char *tok[2] = {NULL, NULL};
    size_t tlen[2] = {0, 0};
    size_t count = 0, i = 0;
    while (i < len) {
        while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t'))
            i++;
        if (i >= len)
            break;
        size_t s = i;
        while (i < len && text[i] != ' ' && text[i] != '\n' && text[i] != '\t')
            i++;
        tok[0] = tok[1];
        tlen[0] = tlen[1];
        tok[1] = text + s;
        tlen[1] = i - s;
        count++;
    }
    if (count < 3)
        return 0;
    int ok;
    uint64_t sp = parse_hex_token(tok[0], tlen[0], &ok);
    return ok ? sp : 0;
}

/* The tids listed in <dir>/task into the scratch arena.
 *
 * The live task directory's link count is 2 + the thread group's threads (proc_task_getattr,
 * fs/proc/base.c: signal->nr_threads, which counts an exited leader until the group's last
 * thread is reaped). One thread is then the leader itself, whose tid is the process id: a
 * single-threaded process costs one fstatat, not an open, a listing and a close. */
static int list_tids(memdiff__proc *proc, int64_t **out, size_t *count)
{
    char path[PATH_MAX];
    *out = NULL;
    *count = 0;
    int rc = memdiff__linux_path(path, sizeof path, proc->dir, "task");
    if (rc)
        return rc;
    struct stat st;
    size_t whole = 0;
    if (proc->live) {
        int r;
        do
            r = fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW);
        while (r != 0 && errno == EINTR);
        if (r != 0)
            return memdiff__linux_fail(errno, "stat", path);
        if (!S_ISDIR(st.st_mode))
            return memdiff__linux_fail(ENOTDIR, "stat", path);
        if (st.st_nlink == 3) {
            int64_t *one = memdiff__arena_alloc(proc->scratch, sizeof *one);
            if (!one)
                return MEMDIFF_ENOMEM;
            one[0] = proc->pid;
            *out = one;
            *count = 1;
            return MEMDIFF_OK;
        }
        /* A listing of that many is whole. Any other count (a listing cut short by a signal,
         * threads come or gone since) reads on. */
        whole = st.st_nlink > 2 ? (size_t)st.st_nlink - 2 : 0;
    }
    /* O_DIRECTORY: the open itself refuses anything but a directory. */
    int fd = memdiff__linux_open(path, O_DIRECTORY);
    if (fd < 0) {
        int e = errno;
        /* A live process always has task/; a tree that lacks it did not record threads. */
        if (e == ENOENT && memdiff__linux_alive(proc))
            return MEMDIFF_OK;
        return memdiff__linux_fail(e, "open", path);
    }
    rc = memdiff__linux_list_ids(fd, path, proc->scratch, INT64_MAX, whole, out, count);
    close(fd);
    return rc;
}

#define RUNNING_RETRIES 4

/* The stack pointer of thread tid from its syscall file: 0 when it is running or the file
 * cannot be read (it needs ptrace attach rights: the thread is then listed, stack unknown);
 * *exited when the thread is gone. */
static int read_sp(memdiff__proc *proc, int64_t tid, uint64_t *sp, int *exited)
{
    char path[PATH_MAX], text[512];
    if (snprintf(path, sizeof path, "%s/task/%lld/syscall", proc->dir, (long long)tid) >=
        (int)sizeof path)
        return memdiff__set_error(MEMDIFF_EINVAL, "path too long: %s/task", proc->dir);
    ssize_t len = memdiff__linux_read_small(path, text, sizeof text);
    *exited = len == -ENOENT || len == -ESRCH;
    *sp = len > 0 ? syscall_sp(text, (size_t)len) : 0;
    return MEMDIFF_OK;
}

int memdiff__plat_threads(memdiff__proc *proc, memdiff__arena *arena,
                          memdiff__plat_thread **out, size_t *count)
{
    int64_t *tids;
    size_t n;
    *out = NULL;
    *count = 0;
    int rc = list_tids(proc, &tids, &n);
    if (rc)
        return rc;
    memdiff__plat_thread *threads = memdiff__arena_alloc(arena, (n ? n : 1) * sizeof *threads);
    if (!threads)
        return MEMDIFF_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int exited = 0;
        uint64_t sp = 0;
        if (tids[i] != proc->pid) {
            rc = read_sp(proc, tids[i], &sp, &exited);
            if (rc)
                return rc;
        }
        if (exited)
            continue; /* the thread exited meanwhile */
        memdiff__plat_thread *t = &threads[k++];
        memset(t, 0, sizeof *t);
        t->tid = tids[i];
        t->sp = sp;
    }
    /* A thread reported "running" is often on its way into a wait (it released a lock and has
     * not reached futex() yet): give such threads the CPU a few times and ask again. The calling
     * thread of a self snapshot is always running; the core finds its stack itself. */
    int64_t me = proc->self ? (int64_t)syscall(SYS_gettid) : 0;
    for (int pass = 0; pass < RUNNING_RETRIES; pass++) {
        int pending = 0;
        for (size_t i = 0; i < k; i++)
            pending += threads[i].sp == 0 && threads[i].tid != me && threads[i].tid != proc->pid;
        if (!pending)
            break;
        sched_yield();
        for (size_t i = 0; i < k; i++) {
            if (threads[i].sp != 0 || threads[i].tid == me || threads[i].tid == proc->pid)
                continue;
            int exited = 0;
            rc = read_sp(proc, threads[i].tid, &threads[i].sp, &exited);
            if (rc)
                return rc;
        }
    }
    *out = threads;
    *count = k;
    return MEMDIFF_OK;
}
