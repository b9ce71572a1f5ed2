/*
 * proc.c - opening a process: which sources the caller may read, decided once; process totals;
 * reading process memory without disturbing it; telling an exited process from a quiet one.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux.h"

#define CAP_SYS_ADMIN_BIT 21 /* include/uapi/linux/capability.h */
/* Under 2 MiB: with THP "always", a huge page would be zeroed whole for the few pages used. */
#define SCRATCH_ROOM ((size_t)1536 * 1024)

static const char PFN_WHY[] = "frame numbers need CAP_SYS_ADMIN (pagemap hides them since Linux 4.2)";
static const char PFN_HIDDEN_WHY[] = "frame numbers are hidden: pagemap needs CAP_SYS_ADMIN in the "
                                     "initial user namespace";
static const char NOT_ASKED_WHY[] = "frame numbers are not read at fast depth";
static const char DEEP_WHY[] = "kernel page flags and map counts need CAP_SYS_ADMIN "
                               "(/proc/kpageflags, /proc/kpagecount)";

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void memdiff__plat_close(memdiff__proc *proc)
{
    if (!proc)
        return;
    memdiff__linux_lanes_stop(proc); /* before the file its threads read is closed */
    close_fd(&proc->pagemap_fd);
    close_fd(&proc->mem_fd);
    close_fd(&proc->kpageflags_fd);
    close_fd(&proc->kpagecount_fd);
    close_fd(&proc->idle_fd);
}

static int open_in(const char *dir, const char *name, int flags)
{
    char path[PATH_MAX];
    if (memdiff__linux_path(path, sizeof path, dir, name))
        return -1;
    return memdiff__linux_open(path, flags);
}

/* Whether <dir>/name opens (flags: 0 or O_DIRECTORY). */
static int has_entry(const char *dir, const char *name, int flags)
{
    int fd = open_in(dir, name, flags);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* Opens <proc_root>/name (kpageflags, kpagecount) for a caller that reads frame numbers, so
 * holds CAP_SYS_ADMIN: a failure then has another cause, which *why (DEEP_WHY until then) gets,
 * in the proc's scratch arena. A proc mounted with subset=pid (Linux 5.8) shows the process
 * directories and self only: that is where a live proc root lacks the files. */
static int open_kpage(memdiff__proc *proc, const char *name, const char **why)
{
    char path[PATH_MAX], text[PATH_MAX + 128];
    if (memdiff__linux_path(path, sizeof path, proc->proc_root, name))
        return -1;
    int fd = memdiff__linux_open(path, 0);
    if (fd >= 0 || *why != DEEP_WHY)
        return fd; /* the first cause is said */
    int e = errno;
    if (e == ENOENT)
        snprintf(text, sizeof text, "%s is not present (is proc mounted with subset=pid?)", path);
    else
        snprintf(text, sizeof text, "kernel page flags and map counts are unavailable: open %s: %s",
                 path, memdiff__linux_errno_text(e));
    const char *s = memdiff__arena_strndup(proc->scratch, text, strlen(text));
    if (s)
        *why = s;
    return -1;
}

/* Whether the task is a kernel thread: PF_KTHREAD (0x00200000) in the flags field of stat, the
 * ninth (proc.rst, "stat"; include/linux/sched.h). */
static int kernel_thread(const memdiff__proc *proc)
{
    char path[PATH_MAX], buf[1024];
    if (memdiff__linux_path(path, sizeof path, proc->dir, "stat"))
        return 0;
    ssize_t n = memdiff__linux_read_small(path, buf, sizeof buf);
    const char *p = NULL;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == ')')
            p = buf + i + 1; /* comm may hold ')': the last one ends it */
    if (!p)
        return 0;
    for (int field = 3; field <= 9; field++) {
        while (*p == ' ')
            p++;
        if (field == 9)
            return (strtoull(p, NULL, 10) & 0x00200000u) != 0;
        while (*p && *p != ' ')
            p++;
    }
    return 0;
}

/* PAGEMAP_SCAN exists from Linux 6.7 on pagemap files only. Probing a one-page range at address
 * 0 (never mapped) costs one ioctl; any failure (ENOTTY on older kernels and on fixture files,
 * EINVAL, EOPNOTSUPP) just means the pagemap read path is used instead. */
static int probe_scan(int fd, uint32_t page_size)
{
    struct page_region vec[1];
    struct pm_scan_arg arg;
    memset(&arg, 0, sizeof arg);
    arg.size = sizeof arg;
    arg.start = 0;
    arg.end = page_size;
    arg.vec = (uint64_t)(uintptr_t)vec;
    arg.vec_len = 1;
    arg.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED;
    arg.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_FILE | PAGE_IS_PFNZERO |
                      PAGE_IS_HUGE;
    return ioctl(fd, PAGEMAP_SCAN, &arg) >= 0;
}

/* Whether the live kernel has answered a probe_scan: it has PAGEMAP_SCAN from then on, so one
 * probe a process, not one a snapshot (a later call that fails still falls back: scan.c,
 * scan_refused). A fixture tree's pagemap is probed every time. */
static atomic_int live_scan_works;

static int scan_works(const memdiff__proc *proc)
{
    if (proc->live && atomic_load_explicit(&live_scan_works, memory_order_relaxed))
        return 1;
    if (!probe_scan(proc->pagemap_fd, proc->page_size))
        return 0;
    if (proc->live)
        atomic_store_explicit(&live_scan_works, 1, memory_order_relaxed);
    return 1;
}

/* Whether the caller holds CAP_SYS_ADMIN: on the live system from capget(2), one syscall where
 * reading status costs three and the kernel's formatting of every field; else from the caller's
 * own status under the proc root (<root>/self/status), so that a fixture tree can state it. */
static int caller_has_sys_admin(const char *proc_root, int live)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    if (live && syscall(SYS_capget, &h, d) == 0)
        return (d[CAP_SYS_ADMIN_BIT / 32].effective >> (CAP_SYS_ADMIN_BIT % 32)) & 1;
    char path[PATH_MAX], buf[4096];
    if (snprintf(path, sizeof path, "%s/self/status", proc_root) >= (int)sizeof path)
        return 0;
    ssize_t n = memdiff__linux_read_small(path, buf, sizeof buf);
    if (n <= 0)
        return 0;
    uint64_t capeff = memdiff__linux_status_field(buf, (size_t)n, "CapEff", 16);
    return (capeff >> CAP_SYS_ADMIN_BIT) & 1;
}

/* The frame of the shared zero page (zero_pfn() keeps the live system's): a read fault on a
 * private anonymous page maps the zero page (mm/memory.c do_anonymous_page), and our own pagemap
 * then names its frame. This is the one place memdiff maps a page to learn something. Returns 1
 * with *pfn set, 0 when unknown (no such pagemap under the proc root, e.g. a fixture tree), -1
 * when the entry is present but its frame reads 0: frame numbers are hidden from this caller.
 *
 * Some kernels never map the zero page: mm_forbids_zeropage() (s390 KVM hosts), a PVM guest
 * booted with pvm_no_zero_page=1. There the read fault allocates a page of our own, which
 * pagemap marks exclusive (bit 56: mapped once; the zero page, not a normal page, never is).
 * Its frame is no zero page, and it goes back to the allocator at the munmap below, to become
 * anyone's page: taken for the zero page, it would hide a page that is really resident. Then 1
 * with *pfn 0: frames are shown, and there is no zero page to tell. */
static int learn_zero_pfn(const char *proc_root, uint32_t page_size, uint64_t *pfn)
{
    char path[PATH_MAX];
    *pfn = 0;
    if (snprintf(path, sizeof path, "%s/self/pagemap", proc_root) >= (int)sizeof path)
        return 0;
    void *p = mmap(NULL, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    (void)*(volatile const char *)p;
    int result = 0;
    int fd = memdiff__linux_open(path, 0);
    if (fd >= 0) {
        uint64_t e = 0;
        if (memdiff__linux_pread_full(fd, &e, sizeof e, (uint64_t)(uintptr_t)p / page_size * 8) ==
                sizeof e &&
            (e & MEMDIFF__PM_PRESENT)) {
            *pfn = e & MEMDIFF__PM_PFN_MASK;
            result = *pfn ? 1 : -1;
            if (e & MEMDIFF__PM_EXCLUSIVE)
                *pfn = 0;
        }
        close(fd);
    }
    munmap(p, page_size);
    return result;
}

/* The zero page's frame once learned from the live /proc: it is fixed at boot (mm/memory.c,
 * zero_pfn), so one process learns it once; NO_ZERO_PAGE once learned that the kernel maps
 * none. A fixture tree's is never cached. Relaxed: the value is the whole message, and a thread
 * that still reads 0 just learns it again. */
#define NO_ZERO_PAGE UINT64_MAX
static _Atomic uint64_t live_zero_pfn;

/* Whether pagemap shows this caller frame numbers, told by its own entry for a page it has
 * just written (path, on its stack or in its fake frame: resident either way): 1 yes, -1 no
 * (present, frame 0), 0 cannot tell. Through the process's pagemap when that is the caller's,
 * so one pread. */
static int frames_shown(const memdiff__proc *proc, const char *proc_root)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/self/pagemap", proc_root) >= (int)sizeof path)
        return 0;
    int fd = proc->self ? proc->pagemap_fd : memdiff__linux_open(path, 0);
    if (fd < 0)
        return 0;
    uint64_t e = 0;
    ssize_t r = memdiff__linux_pread_full(fd, &e, sizeof e,
                                          (uint64_t)(uintptr_t)path / proc->page_size * 8);
    if (fd != proc->pagemap_fd)
        close(fd);
    if (r != (ssize_t)sizeof e || !(e & MEMDIFF__PM_PRESENT))
        return 0;
    return (e & MEMDIFF__PM_PFN_MASK) ? 1 : -1;
}

/* learn_zero_pfn, with the live system's frame kept once known. Whether pagemap shows frames
 * depends on the caller's credentials when it opened the file (a capability dropped, a user
 * namespace entered since), so a cached frame is used only after frames_shown() says they
 * are shown, which costs no mapping and no fault. */
static int zero_pfn(const memdiff__proc *proc, const char *proc_root, int live, int shown_now,
                    uint64_t *pfn)
{
    uint64_t z = live ? atomic_load_explicit(&live_zero_pfn, memory_order_relaxed) : 0;
    if (z) {
        int shown = shown_now ? 1 : frames_shown(proc, proc_root);
        if (shown != 0) {
            *pfn = shown > 0 && z != NO_ZERO_PAGE ? z : 0;
            return shown;
        }
    }
    int r = learn_zero_pfn(proc_root, proc->page_size, pfn);
    if (r > 0 && live)
        atomic_store_explicit(&live_zero_pfn, *pfn ? *pfn : NO_ZERO_PAGE, memory_order_relaxed);
    return r;
}

void memdiff__linux_learn_zero_page(memdiff__proc *proc)
{
    if (!proc->frames_unasked)
        return;
    proc->frames_unasked = 0;
    uint64_t z = 0;
    if (proc->pagemap_fd >= 0 && caller_has_sys_admin(proc->proc_root, proc->live) &&
        zero_pfn(proc, proc->proc_root, proc->live, 0, &z) > 0)
        proc->zero_pfn = z;
}

int memdiff__plat_open(const memdiff__open_args *args, memdiff__arena *scratch,
                       memdiff__proc **out, memdiff__caps *caps)
{
    *out = NULL;
    memset(caps, 0, sizeof *caps);
    if (args->pid < 0)
        return memdiff__set_error(MEMDIFF_EINVAL, "open: invalid pid %d", args->pid);
    /* One mapping for the scratch buffers of a snapshot instead of one each (the page walk's batch
     * buffers, the /proc text buffer, the thread and module lists: about 1 MiB at standard
     * depth), its pages touched only as used. Deep's larger block, and a text buffer that
     * outgrows its first 64 KiB, map their own. */
    if (memdiff__arena_reserve(scratch, SCRATCH_ROOM))
        return MEMDIFF_ENOMEM;
    memdiff__proc *proc = memdiff__arena_alloc(scratch, sizeof *proc);
    if (!proc)
        return MEMDIFF_ENOMEM;
    proc->pagemap_fd = proc->mem_fd = proc->kpageflags_fd = proc->kpagecount_fd = -1;
    proc->idle_fd = -1;
    proc->meminfo_pmd_free = args->flags & MEMDIFF__OPEN_EXACT ? -1 : 0;
    memdiff__linux_lanes_setup(proc, args->threads);
    proc->scratch = scratch;
    const char *proc_root = args->proc_root ? args->proc_root : "/proc";
    proc->live = args->proc_root == NULL;
    char fixture_sys[PATH_MAX];
    const char *sys_root = args->sys_root ? args->sys_root : "/sys";
    if (!args->sys_root && args->proc_root) {
        /* A fixture tree: its /sys is <root>/sys (memdiff_options.fixture_root). */
        int rc = memdiff__linux_path(fixture_sys, sizeof fixture_sys, args->proc_root, "sys");
        if (rc)
            return rc;
        sys_root = fixture_sys;
    }
    proc->proc_root = memdiff__arena_strndup(scratch, proc_root, strlen(proc_root));
    proc->sys_root = memdiff__arena_strndup(scratch, sys_root, strlen(sys_root));
    if (!proc->proc_root || !proc->sys_root)
        return MEMDIFF_ENOMEM;
    proc->page_size = memdiff__os_page_size();
    while ((UINT32_C(1) << proc->page_shift) < proc->page_size)
        proc->page_shift++;

    int n;
    if (args->pid == 0) {
        proc->pid = (int)getpid();
        proc->self = 1;
        n = snprintf(proc->dir, sizeof proc->dir, "%s/self", proc_root);
    } else {
        proc->pid = args->pid;
        proc->self = args->pid == (int)getpid();
        n = snprintf(proc->dir, sizeof proc->dir, "%s/%d", proc_root, args->pid);
    }
    if (n < 0 || (size_t)n >= sizeof proc->dir)
        return memdiff__set_error(MEMDIFF_EINVAL, "open: proc root too long: %s", proc_root);

    /* maps decides whether the process can be read at all: its open does the ptrace access
     * check (PTRACE_MODE_READ), so ENOENT/ESRCH and EACCES come out distinct. pagemap's open
     * makes the same check (both go through proc_mem_open(), fs/proc/base.c), so a pagemap
     * that opens says maps would, and maps is asked only when pagemap refuses (or a tree has
     * none): its error, as ever, is the one reported. */
    unsigned src = MEMDIFF_SRC_REGIONS | MEMDIFF_SRC_MODULES;
    proc->pagemap_fd = open_in(proc->dir, "pagemap", 0);
    if (proc->pagemap_fd < 0) {
        char path[PATH_MAX];
        int rc = memdiff__linux_path(path, sizeof path, proc->dir, "maps");
        if (rc)
            return rc;
        int fd = memdiff__linux_open(path, 0);
        if (fd < 0)
            return memdiff__linux_fail(errno, "open", path);
        close(fd);
        if (kernel_thread(proc)) {
            /* pagemap's open takes the process's mm: a kernel thread has none (its maps is
             * empty), and a snapshot of it would be an empty one passed off as complete. The
             * open fails with ESRCH for root and EACCES for another user, whose ptrace check
             * comes first. */
            return memdiff__set_error(MEMDIFF_ENOTSUP,
                                      "process %d has no user address space (a kernel thread)",
                                      proc->pid);
        }
    } else {
        src |= MEMDIFF_SRC_PAGES;
        if (scan_works(proc))
            src |= MEMDIFF__SRC_PAGEMAP_SCAN;
    }
    proc->mem_fd = args->flags & MEMDIFF__OPEN_NO_MEM ? -1 : open_in(proc->dir, "mem", 0);
    if (proc->mem_fd >= 0)
        src |= MEMDIFF_SRC_HEAPS;
    /* Every process directory of the live /proc has status and task (fs/proc/base.c,
     * tgid_base_stuff); only a fixture tree may have left them out, which these opens tell. */
    const int live = proc->live;
    if (live || has_entry(proc->dir, "status", 0))
        src |= MEMDIFF_SRC_PROCESS_TOTALS;
    if (live || has_entry(proc->dir, "task", O_DIRECTORY))
        src |= MEMDIFF_SRC_THREADS;

    caps->pfn_why = PFN_WHY;
    if ((args->flags & MEMDIFF__OPEN_NO_FRAMES) && (src & MEMDIFF__SRC_PAGEMAP_SCAN)) {
        /* Fast depth: the scan names the zero page; frames are neither stored nor asked. */
        proc->frames_unasked = 1;
        /* presence windows then also serve the walk: the calling process's own memory goes on
         * changing between attribution and the walk (its stack), another's is read as at once */
        proc->presence_walk = !proc->self;
        caps->pfn_why = NOT_ASKED_WHY;
    } else if (proc->pagemap_fd >= 0 && caller_has_sys_admin(proc_root, live)) {
        int z = zero_pfn(proc, proc_root, live, (args->flags & MEMDIFF__OPEN_FRAMES_SHOWN) != 0,
                         &proc->zero_pfn);
        if (z < 0) {
            /* CapEff can show CAP_SYS_ADMIN held in a user namespace (a container), while
             * pagemap wants it in the initial one: trust what pagemap shows. */
            caps->pfn_why = PFN_HIDDEN_WHY;
        } else {
            src |= MEMDIFF_SRC_FRAMES;
            caps->pfn_why = NULL;
        }
    }
    /* The walk reads pagemap (standard, deep): presence windows are read from it too, and the
     * walk takes their entries. Not for the calling process, whose stack moves in between. */
    proc->presence_pagemap = live && !proc->self && !proc->presence_walk && proc->pagemap_fd >= 0;
    caps->deep_why = DEEP_WHY;
    if ((src & MEMDIFF_SRC_FRAMES) && !(args->flags & MEMDIFF__OPEN_NO_DEEP)) {
        proc->kpageflags_fd = open_kpage(proc, "kpageflags", &caps->deep_why);
        proc->kpagecount_fd = open_kpage(proc, "kpagecount", &caps->deep_why);
        if (proc->kpageflags_fd >= 0)
            src |= MEMDIFF_SRC_PAGE_FLAGS;
        if (proc->kpagecount_fd >= 0)
            src |= MEMDIFF_SRC_MAP_COUNTS;
        if (proc->kpageflags_fd >= 0 && proc->kpagecount_fd >= 0)
            caps->deep_why = NULL;
    }

    proc->sources = src;
    caps->page_size = proc->page_size;
    caps->pid = proc->pid;
    caps->sources = src;
    *out = proc;
    return MEMDIFF_OK;
}

int memdiff__plat_totals(memdiff__proc *proc, memdiff_process_totals *out)
{
    char path[PATH_MAX];
    size_t len = 0;
    memset(out, 0, sizeof *out);
    /* A batch went without the zero / huge page scan because meminfo said the system had no
     * page it could find (pagemap.c, memdiff__linux_pmd_free_now): that must still hold, or a
     * huge page may have appeared where the walk had yet to come. */
    if (proc->pmd_free_relied && !memdiff__linux_pmd_free(proc))
        return memdiff__set_error(MEMDIFF_ECHANGED,
                                  "%s/meminfo: PMD-mapped or hugetlb pages appeared during the "
                                  "snapshot, which read some pages as if there were none",
                                  proc->proc_root);
    /* The address space the pagemap file was opened on must still be there: a process that
     * exec'd during the snapshot left its region list, and whatever was read of it before, from
     * the one torn down, and the rest read empty (pagemap_read() reads nothing once that mm is
     * gone). One entry tells. */
    uint64_t e;
    if (proc->live && !proc->self && proc->pagemap_fd >= 0 && proc->region_count > 0 &&
        memdiff__linux_pread_full(proc->pagemap_fd, &e, sizeof e,
                                  (proc->regions[0].start >> proc->page_shift) * 8) == 0)
        return memdiff__linux_space_gone(proc, "read");
    int rc = memdiff__linux_path(path, sizeof path, proc->dir, "status");
    if (rc)
        return rc;
    if (!(proc->sources & MEMDIFF_SRC_PROCESS_TOTALS)) {
        /* Not in this tree (a fixture): missing figures are 0. A process that has exited
         * since the open is still an error. */
        return memdiff__linux_alive(proc)
                   ? MEMDIFF_OK
                   : memdiff__set_error(MEMDIFF_ESRCH, "%s: the process has exited", path);
    }
    rc = memdiff__linux_read_file(proc->scratch, path, &proc->text, &proc->text_cap, &len,
                                  MEMDIFF__LINUX_READ_RECORD);
    if (rc)
        return rc;
    memdiff__linux_status_totals(proc->text, len, out);
    /* The core reads totals last: a process that still has its memory now had it during every
     * read before (see memdiff__linux_alive), so nothing read was torn down half-way. The
     * status just read tells as much in the common case, without ten more syscalls. */
    if (!memdiff__linux_status_alive(proc->text, len) && !memdiff__linux_alive(proc))
        return memdiff__set_error(MEMDIFF_ESRCH, "%s: the process exited during the snapshot",
                                  proc->dir);
    return MEMDIFF_OK;
}

int memdiff__linux_alive(memdiff__proc *proc)
{
    if (proc->self)
        return 1;
    char path[PATH_MAX], buf[1024];
    ssize_t n = memdiff__linux_path(path, sizeof path, proc->dir, "stat")
                    ? -ENOENT
                    : memdiff__linux_read_small(path, buf, sizeof buf);
    if (n <= 0) {
        if (n != -ENOENT && n != -ESRCH)
            return 0;
        /* A fixture tree need not record stat: the directory tells a process that is gone.
         * (A stat that reads says the directory is there, hence this order.) */
        int fd = memdiff__linux_open(proc->dir, O_DIRECTORY);
        if (fd < 0)
            return 0;
        close(fd);
        return 1;
    }
    /* proc.rst "stat": "pid (comm) state ..."; comm may hold ')' so take the last one. */
    const char *rp = NULL;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == ')')
            rp = buf + i;
    if (!rp || rp + 2 >= buf + n)
        return 1;
    if (rp[2] == 'Z' || rp[2] == 'X' || rp[2] == 'x')
        return 0;
    /* An exiting task drops its memory (exit_mm: task->mm = NULL, then exit_mmap tears the
     * pages down) well before it turns zombie. statm reads all zeros once task->mm is NULL
     * (proc_pid_statm), and a user process always maps something: size 0 means exiting. While
     * the task still holds its mm, mm_users > 0 and exit_mmap cannot have begun. */
    if (memdiff__linux_path(path, sizeof path, proc->dir, "statm"))
        return 1;
    n = memdiff__linux_read_small(path, buf, sizeof buf);
    if (n <= 0)
        return n == -ENOENT || n == -ESRCH ? 1 : 0; /* nor statm */
    return !(buf[0] == '0' && buf[1] == ' ');
}

int memdiff__linux_space_gone(memdiff__proc *p, const char *how)
{
    if (!memdiff__linux_alive(p))
        return memdiff__set_error(MEMDIFF_ESRCH, "%s %s/pagemap: the process has exited", how,
                                  p->dir);
    if (!p->live)
        return MEMDIFF_OK; /* a fixture's pagemap file may end before its regions do */
    return memdiff__set_error(MEMDIFF_ECHANGED,
                              "%s %s/pagemap: the address space it was opened on is gone (the "
                              "process exec'd a program during the snapshot)",
                              how, p->dir);
}

int memdiff__linux_read_proc(memdiff__proc *proc, const char *name, int how, size_t *len)
{
    char path[PATH_MAX];
    *len = 0;
    int rc = memdiff__linux_path(path, sizeof path, proc->dir, name);
    if (!rc)
        rc = memdiff__linux_read_file(proc->scratch, path, &proc->text, &proc->text_cap, len, how);
    if (rc)
        return rc;
    /* An exited process (a zombie too) has empty files; so has a kernel thread. */
    if (*len == 0 && !memdiff__linux_alive(proc))
        return memdiff__set_error(MEMDIFF_ESRCH, "read %s: the process has exited", path);
    return MEMDIFF_OK;
}
