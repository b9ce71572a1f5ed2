/*
 * system.c - the whole machine for system snapshots: the process list (getdents64 of the proc
 * root), who each process is (stat, cmdline), its figures where the caller may not see frames
 * (smaps_rollup), what its status says after it was read, map counts of frames (kpagecount),
 * every frame's class (kpageflags) and the kernel's own accounting (meminfo, zoneinfo).
 *
 * Frame classes follow the flags of fs/proc/page.c (stable_page_flags) and
 * Documentation/admin-guide/mm/pagemap.rst; the precedence is memdiff_frame_kind's order
 * (docs/api.md, "The physical table"). A free block of the buddy allocator: pagemap.rst says
 * BUDDY marks its first page only, but since is_free_buddy_page() entered stable_page_flags
 * every page of a free block with no references reads BUDDY (checked on Linux 6.18: an
 * order-10 block reads 0x408 then 1023 x 0x400), so no block order is guessed here; pages on
 * the per-CPU free lists are not in the buddy lists and read as no flags (kernel).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux.h"

#define KPF_DIRTY 4
#define KPF_LRU 5
#define KPF_ACTIVE 6
#define KPF_SLAB 7
#define KPF_WRITEBACK 8
#define KPF_BUDDY 10
#define KPF_MMAP 11
#define KPF_ANON 12
#define KPF_SWAPBACKED 14
#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16
#define KPF_HUGE 17
#define KPF_UNEVICTABLE 18
#define KPF_HWPOISON 19
#define KPF_NOPAGE 20
#define KPF_KSM 21
#define KPF_THP 22
#define KPF_OFFLINE 23
#define KPF_ZERO_PAGE 24
#define KPF_PGTABLE 26
#define KPF_RESERVED 32 /* include/linux/kernel-page-flags.h: the kernel-hacking bits */
#define KPF_MLOCKED 33
#define BIT(b) (UINT64_C(1) << (b))

#define CAP_SYS_ADMIN_BIT 21
/* kpagecount: frames this close share one pread (the gap read costs less than a syscall). */
#define COUNT_GAP 64u
#define COUNT_SPAN 65536u /* entries of one pread at most */

static const char PHYS_ROOT_WHY[] = "the physical table needs CAP_SYS_ADMIN to read "
                                    "/proc/kpageflags and frame numbers";

struct memdiff__sys {
    const char *root;
    int kpageflags_fd, kpagecount_fd;
    uint32_t page_size;
    memdiff__arena *arena;
    char *text; /* whole-file reads, reused */
    size_t text_cap;
    uint64_t *flags; /* kpageflags batch */
    size_t flags_cap;
    uint64_t *counts, *tmp; /* kpagecount span, radix scratch */
    size_t counts_cap, tmp_cap;
};

void memdiff__plat_sys_close(memdiff__sys *sys)
{
    if (!sys)
        return;
    if (sys->kpageflags_fd >= 0)
        close(sys->kpageflags_fd);
    if (sys->kpagecount_fd >= 0)
        close(sys->kpagecount_fd);
    sys->kpageflags_fd = sys->kpagecount_fd = -1;
}

static int read_text(memdiff__sys *sys, const char *path, size_t *len, int one_record)
{
    return memdiff__linux_read_file(sys->arena, path, &sys->text, &sys->text_cap, len,
                                    one_record);
}

static int sys_admin(const char *root, int live)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    if (live)
        return syscall(SYS_capget, &h, d) == 0 &&
               ((d[CAP_SYS_ADMIN_BIT / 32].effective >> (CAP_SYS_ADMIN_BIT % 32)) & 1);
    char path[PATH_MAX], buf[4096];
    if (memdiff__linux_path(path, sizeof path, root, "self/status"))
        return 0;
    ssize_t n = memdiff__linux_read_small(path, buf, sizeof buf);
    return n > 0 && (memdiff__linux_status_field(buf, (size_t)n, "CapEff", 16) >>
                     CAP_SYS_ADMIN_BIT) & 1;
}

/* Whether pagemap shows this caller frame numbers: its own entry for a page it just wrote. */
static int frames_shown(const char *root, uint32_t page_size)
{
    char path[PATH_MAX];
    if (memdiff__linux_path(path, sizeof path, root, "self/pagemap"))
        return 0;
    int fd = memdiff__linux_open(path, 0);
    if (fd < 0)
        return 0;
    uint64_t e = 0;
    ssize_t r = memdiff__linux_pread_full(fd, &e, sizeof e,
                                          (uint64_t)(uintptr_t)path / page_size * 8);
    close(fd);
    return r == (ssize_t)sizeof e && (e & MEMDIFF__PM_PRESENT) && (e & MEMDIFF__PM_PFN_MASK);
}

/* The number of entries kpageflags has: reads past the last return nothing (fs/proc/page.c,
 * max_dump_pfn), so a doubling, then a halving search of one-entry reads finds the end. */
static uint64_t frame_count(int fd)
{
    uint64_t e, lo = 0, hi = 1;
    while (hi < (UINT64_C(1) << 52) && memdiff__linux_pread_full(fd, &e, 8, hi * 8) == 8) {
        lo = hi;
        hi *= 2;
    }
    if (memdiff__linux_pread_full(fd, &e, 8, 0) != 8)
        return 0;
    while (hi - lo > 1) { /* entry lo exists, entry hi does not */
        uint64_t mid = lo + (hi - lo) / 2;
        if (memdiff__linux_pread_full(fd, &e, 8, mid * 8) == 8)
            lo = mid;
        else
            hi = mid;
    }
    return lo + 1;
}

/* hidepid= or subset=pid on the proc mount at root (mountinfo's super options, field 11 on). */
static const char *hidden_why(memdiff__sys *sys)
{
    char path[PATH_MAX];
    size_t len;
    if (memdiff__linux_path(path, sizeof path, sys->root, "self/mountinfo") ||
        read_text(sys, path, &len, 0))
        return NULL;
    for (char *line = sys->text, *end = sys->text + len; line < end;) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t ll = nl ? (size_t)(nl - line) : (size_t)(end - line);
        /* "id parent maj:min root mountpoint options ... - fstype source superoptions" */
        const char *f = line;
        for (int k = 0; k < 4 && f; k++) {
            f = memchr(f, ' ', ll - (size_t)(f - line));
            if (f)
                f++;
        }
        size_t rl = strlen(sys->root);
        if (f && (size_t)(line + ll - f) > rl && memcmp(f, sys->root, rl) == 0 && f[rl] == ' ') {
            const char *dash = NULL;
            for (const char *q = f; q + 3 <= line + ll; q++)
                if (q[0] == ' ' && q[1] == '-' && q[2] == ' ') {
                    dash = q;
                    break;
                }
            char opts[512];
            size_t ol = dash ? MEMDIFF__MIN((size_t)(line + ll - dash), sizeof opts - 1) : 0;
            memcpy(opts, dash ? dash : "", ol);
            opts[ol] = '\0';
            if (strstr(opts, "subset=pid"))
                return "/proc is mounted with subset=pid";
            /* hidepid=1 (noaccess) lists every process, unreadable ones so: not hidden. */
            const char *h = strstr(opts, "hidepid=");
            if (h && (h[8] == '2' || h[8] == '4' || strncmp(h + 8, "invisible", 9) == 0 ||
                      strncmp(h + 8, "ptraceable", 10) == 0))
                return "/proc is mounted with hidepid=: processes the caller may not read are "
                       "not listed";
        }
        line = nl ? nl + 1 : end;
    }
    return NULL;
}

static void boot_facts(memdiff__sys *sys, memdiff__sys_caps *caps)
{
    char path[PATH_MAX], buf[64];
    size_t len;
    caps->boot_id = "";
    if (!memdiff__linux_path(path, sizeof path, sys->root, "sys/kernel/random/boot_id")) {
        ssize_t n = memdiff__linux_read_small(path, buf, sizeof buf);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
            n--;
        if (n > 0) {
            const char *s = memdiff__arena_strndup(sys->arena, buf, (size_t)n);
            if (s)
                caps->boot_id = s;
        }
    }
    if (!memdiff__linux_path(path, sizeof path, sys->root, "stat") &&
        !read_text(sys, path, &len, 0)) {
        for (size_t i = 0; i + 6 < len; i++)
            if ((i == 0 || sys->text[i - 1] == '\n') && memcmp(sys->text + i, "btime ", 6) == 0) {
                caps->boot_time_s = strtoull(sys->text + i + 6, NULL, 10);
                break;
            }
    }
    long hz = sysconf(_SC_CLK_TCK);
    caps->clock_ticks = hz > 0 ? (uint32_t)hz : 100u;
}

int memdiff__plat_sys_open(const char *proc_root, memdiff__arena *arena, memdiff__sys **out,
                           memdiff__sys_caps *caps)
{
    *out = NULL;
    memset(caps, 0, sizeof *caps);
    memdiff__sys *sys = memdiff__arena_alloc(arena, sizeof *sys);
    const char *root = proc_root ? proc_root : "/proc";
    if (!sys || !(sys->root = memdiff__arena_strndup(arena, root, strlen(root))))
        return MEMDIFF_ENOMEM;
    sys->arena = arena;
    sys->kpageflags_fd = sys->kpagecount_fd = -1;
    sys->page_size = memdiff__os_page_size();
    caps->page_size = sys->page_size;
    boot_facts(sys, caps);
    caps->hidden = hidden_why(sys);
    int live = proc_root == NULL;
    if (!sys_admin(root, live) || !frames_shown(root, sys->page_size)) {
        caps->phys_why = PHYS_ROOT_WHY;
        *out = sys;
        return MEMDIFF_OK;
    }
    caps->frames = 1;
    char path[PATH_MAX], why[PATH_MAX + 96];
    int rc = memdiff__linux_path(path, sizeof path, root, "kpagecount");
    if (rc)
        return rc;
    sys->kpagecount_fd = memdiff__linux_open(path, 0);
    caps->mapcounts = sys->kpagecount_fd >= 0;
    if ((rc = memdiff__linux_path(path, sizeof path, root, "kpageflags")))
        return rc;
    sys->kpageflags_fd = memdiff__linux_open(path, 0);
    if (sys->kpageflags_fd < 0) {
        snprintf(why, sizeof why, "open %s: %s", path, memdiff__linux_errno_text(errno));
        caps->phys_why = memdiff__arena_strndup(arena, why, strlen(why));
        if (!caps->phys_why)
            return MEMDIFF_ENOMEM;
    } else {
        caps->max_frame = frame_count(sys->kpageflags_fd);
        if (!caps->max_frame)
            caps->phys_why = "/proc/kpageflags reads empty";
    }
    *out = sys;
    return MEMDIFF_OK;
}

int memdiff__plat_sys_pids(memdiff__sys *sys, memdiff__arena *arena, int **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    int fd = memdiff__linux_open(sys->root, O_RDONLY | O_DIRECTORY);
    if (fd < 0) { /* no process list is no missing process: EACCES or EIO, never ESRCH */
        int e = errno;
        return memdiff__set_error(e == EACCES || e == EPERM ? MEMDIFF_EACCES : MEMDIFF_EIO,
                                  "open %s: %s", sys->root, memdiff__linux_errno_text(e));
    }
    int64_t *ids = NULL;
    size_t n = 0;
    int rc = memdiff__linux_list_ids(fd, sys->root, arena, INT32_MAX, 0, &ids, &n);
    close(fd);
    if (rc)
        return rc;
    int *pids = n ? memdiff__arena_alloc_raw(arena, n * sizeof *pids) : NULL;
    if (n && !pids)
        return MEMDIFF_ENOMEM;
    for (size_t i = 0; i < n; i++)
        pids[i] = (int)ids[i]; /* at most INT32_MAX */
    /* /proc lists processes by ascending pid already (proc_pid_readdir walks the pid idr):
     * an insertion sort costs one pass then, and stays right for a tree listed otherwise. */
    for (size_t i = 1; i < n; i++) {
        int v = pids[i];
        size_t j = i;
        for (; j > 0 && pids[j - 1] > v; j--)
            pids[j] = pids[j - 1];
        pids[j] = v;
    }
    *out = pids;
    *count = n;
    return MEMDIFF_OK;
}

static int proc_file(const memdiff__sys *sys, int pid, const char *name, char *path, size_t size)
{
    int n = snprintf(path, size, "%s/%d/%s", sys->root, pid, name);
    if (n < 0 || (size_t)n >= size)
        return memdiff__set_error(MEMDIFF_EINVAL, "proc root too long: %s", sys->root);
    return MEMDIFF_OK;
}

static int small_error(ssize_t n, const char *path)
{
    return memdiff__linux_fail(n < 0 ? (int)-n : ESRCH, "read", path);
}

int memdiff__plat_sys_ident(memdiff__sys *sys, int pid, memdiff__arena *arena,
                            memdiff__sys_ident *out)
{
    memset(out, 0, sizeof *out);
    out->name = out->args = "";
    char path[PATH_MAX], buf[2048];
    int rc = proc_file(sys, pid, "stat", path, sizeof path);
    if (rc)
        return rc;
    ssize_t n = memdiff__linux_read_small(path, buf, sizeof buf);
    if (n <= 0)
        return small_error(n, path);
    /* proc.rst "stat": "pid (comm) state ppid ... flags(9) ... starttime(22)"; comm may hold
     * ')' and spaces: it ends at the last ')'. */
    const char *open = memchr(buf, '(', (size_t)n), *close_p = NULL;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == ')')
            close_p = buf + i;
    if (!open || !close_p || close_p < open || close_p + 2 >= buf + n)
        return memdiff__set_error(MEMDIFF_EFORMAT, "%s: no \"(comm) state\"", path);
    out->name = memdiff__arena_strndup(arena, open + 1, (size_t)(close_p - open - 1));
    if (!out->name)
        return MEMDIFF_ENOMEM;
    const char *p = close_p + 2;
    char state = *p;
    out->zombie = state == 'Z' || state == 'X' || state == 'x';
    uint64_t field[23] = {0};
    for (int f = 3; f <= 22 && *p; f++) {
        while (*p == ' ')
            p++;
        field[f] = strtoull(p, NULL, 10);
        while (*p && *p != ' ')
            p++;
    }
    out->ppid = (int)field[4];
    out->kernel_thread = (field[9] & 0x00200000u) != 0; /* PF_KTHREAD */
    out->start_ticks = field[22];
    if (out->kernel_thread || out->zombie)
        return MEMDIFF_OK;
    char *args = memdiff__arena_alloc_raw(arena, MEMDIFF__SYS_ARGS_MAX + 1);
    if (!args)
        return MEMDIFF_ENOMEM;
    if ((rc = proc_file(sys, pid, "cmdline", path, sizeof path)))
        return rc;
    n = memdiff__linux_read_small(path, args, MEMDIFF__SYS_ARGS_MAX + 1);
    if (n < 0 && (n == -ENOENT || n == -ESRCH))
        return small_error(n, path);
    out->args = args;
    out->args_len = n > 0 ? (size_t)n : 0;
    return MEMDIFF_OK;
}

/* <root>/<pid>/name read whole into sys->text. */
static int read_proc_text(memdiff__sys *sys, int pid, const char *name, char *path, size_t size,
                          size_t *len, int one_record)
{
    int rc = proc_file(sys, pid, name, path, size);
    return rc ? rc : read_text(sys, path, len, one_record);
}

int memdiff__plat_sys_status(memdiff__sys *sys, int pid, memdiff__arena *scratch,
                             memdiff__sys_status *out)
{
    (void)scratch;
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    size_t len = 0;
    int rc = read_proc_text(sys, pid, "status", path, sizeof path, &len, 1);
    if (rc)
        return rc;
    out->uid = (uint32_t)memdiff__linux_status_field(sys->text, len, "Uid", 10);
    out->rss_file = memdiff__linux_status_field(sys->text, len, "RssFile", 10) * 1024;
    out->rss_shmem = memdiff__linux_status_field(sys->text, len, "RssShmem", 10) * 1024;
    out->swap = memdiff__linux_status_field(sys->text, len, "VmSwap", 10) * 1024;
    if (!memdiff__linux_status_alive(sys->text, len))
        return memdiff__set_error(MEMDIFF_ESRCH, "%s: the process exited while it was read",
                                  path);
    return MEMDIFF_OK;
}

int memdiff__plat_sys_rollup(memdiff__sys *sys, int pid, memdiff__arena *scratch,
                             memdiff__sys_usage *out)
{
    (void)scratch;
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    size_t len = 0;
    int rc = read_proc_text(sys, pid, "smaps_rollup", path, sizeof path, &len, 0);
    if (rc)
        return rc;
    uint64_t rss, pss, pc, pd, swap, swap_pss, anon;
    const char *t = sys->text;
    /* An exiting process's smaps_rollup is empty: no mm to walk. */
    if (!memdiff__linux_status_find(t, len, "Rss", 10, &rss))
        return memdiff__set_error(MEMDIFF_ESRCH, "%s: empty (the process exited)", path);
    memdiff__linux_status_find(t, len, "Pss", 10, &pss);
    memdiff__linux_status_find(t, len, "Private_Clean", 10, &pc);
    memdiff__linux_status_find(t, len, "Private_Dirty", 10, &pd);
    memdiff__linux_status_find(t, len, "Anonymous", 10, &anon);
    int has_swap = memdiff__linux_status_find(t, len, "Swap", 10, &swap);
    int has_swap_pss = memdiff__linux_status_find(t, len, "SwapPss", 10, &swap_pss);
    out->rss = rss * 1024;
    out->pss = pss * 1024;
    out->uss = (pc + pd) * 1024;
    out->anon = anon * 1024;
    out->swap = has_swap ? swap * 1024 : 0;
    out->swap_pss = has_swap_pss ? swap_pss * 1024 : 0;
    out->exact = MEMDIFF_SYSPROC_EXACT_RSS | MEMDIFF_SYSPROC_EXACT_PSS |
                 MEMDIFF_SYSPROC_EXACT_USS | MEMDIFF_SYSPROC_EXACT_ANON |
                 (has_swap ? MEMDIFF_SYSPROC_EXACT_SWAP : 0u) |
                 (has_swap_pss ? MEMDIFF_SYSPROC_EXACT_SWAP_PSS : 0u);
    return MEMDIFF_OK;
}

/* Grows *buf (of *cap entries) to n entries at least. */
static int room(memdiff__sys *sys, uint64_t **buf, size_t *cap, size_t n)
{
    if (n <= *cap)
        return MEMDIFF_OK;
    size_t want = MEMDIFF__MAX(n, (size_t)4096);
    uint64_t *v = memdiff__arena_grow_raw(sys->arena, *buf, *cap * sizeof **buf,
                                          want * sizeof **buf);
    if (!v)
        return MEMDIFF_ENOMEM;
    *buf = v;
    *cap = want;
    return MEMDIFF_OK;
}

int memdiff__plat_sys_mapcounts(memdiff__sys *sys, uint64_t *key, size_t n, unsigned shift,
                                uint64_t *counts)
{
    if (sys->kpagecount_fd < 0)
        return memdiff__set_error(MEMDIFF_ENOTSUP, "/proc/kpagecount is not open");
    if (!n)
        return MEMDIFF_OK;
    int rc = room(sys, &sys->tmp, &sys->tmp_cap, n);
    if (!rc)
        rc = room(sys, &sys->counts, &sys->counts_cap, COUNT_SPAN);
    if (rc)
        return rc;
    uint64_t *sorted = memdiff__linux_radix_sort(key, sys->tmp, n, shift);
    if (sorted != key)
        memcpy(key, sorted, n * sizeof *key);
#define FRAME_OF(k) (key[k] >> shift)
    for (size_t i = 0; i < n;) {
        /* One pread for frames [FRAME_OF(i), FRAME_OF(j - 1)] while gaps stay small. */
        size_t j = i + 1;
        while (j < n && FRAME_OF(j) - FRAME_OF(j - 1) <= COUNT_GAP &&
               FRAME_OF(j) - FRAME_OF(i) < COUNT_SPAN)
            j++;
        uint64_t first = FRAME_OF(i), span = FRAME_OF(j - 1) - first + 1;
        ssize_t got = memdiff__linux_pread_full(sys->kpagecount_fd, sys->counts,
                                                (size_t)span * 8, first * 8);
        if (got < 0)
            return memdiff__linux_fail((int)-got, "read", "/proc/kpagecount");
        size_t have = (size_t)got / 8;
        for (size_t k = i; k < j; k++)
            counts[k] = FRAME_OF(k) - first < have ? sys->counts[FRAME_OF(k) - first] : 0;
        i = j;
    }
#undef FRAME_OF
    return MEMDIFF_OK;
}

/* One frame's class from its kpageflags entry: the first kind of memdiff_frame_kind's order
 * that its flags name. */
static unsigned classify(uint64_t f)
{
    unsigned facts = (f & BIT(KPF_MMAP) ? MEMDIFF__FRAME_MAPPED : 0u) |
                     (f & BIT(KPF_ANON) ? MEMDIFF__FRAME_ANON : 0u) |
                     ((f & (BIT(KPF_SWAPBACKED) | BIT(KPF_ANON))) == BIT(KPF_SWAPBACKED)
                          ? MEMDIFF__FRAME_SHMEM
                          : 0u);
    unsigned kind;
    if (f & BIT(KPF_NOPAGE))
        return MEMDIFF__FRAME_HOLE;
    if (f & (BIT(KPF_RESERVED) | BIT(KPF_OFFLINE) | BIT(KPF_HWPOISON)))
        kind = MEMDIFF_FRAME_RESERVED;
    else if (f & BIT(KPF_BUDDY))
        kind = MEMDIFF_FRAME_FREE;
    else if (f & BIT(KPF_SLAB))
        kind = MEMDIFF_FRAME_SLAB;
    else if (f & BIT(KPF_PGTABLE))
        kind = MEMDIFF_FRAME_PAGE_TABLE;
    else if (f & BIT(KPF_ZERO_PAGE))
        kind = MEMDIFF_FRAME_ZERO;
    else if (f & BIT(KPF_HUGE))
        kind = MEMDIFF_FRAME_HUGETLB;
    else if (f & BIT(KPF_KSM))
        kind = MEMDIFF_FRAME_KSM;
    else if (f & (BIT(KPF_UNEVICTABLE) | BIT(KPF_MLOCKED)))
        kind = MEMDIFF_FRAME_UNEVICTABLE;
    else if (f & BIT(KPF_ANON))
        kind = f & BIT(KPF_THP) ? MEMDIFF_FRAME_ANON_THP : MEMDIFF_FRAME_ANON;
    else if (f & BIT(KPF_SWAPBACKED))
        kind = MEMDIFF_FRAME_SHMEM;
    else if (!(f & (BIT(KPF_LRU) | BIT(KPF_MMAP))))
        /* No page cache page stays off every LRU list unmapped for long: one that is counts
         * as kernel memory. */
        kind = f & (BIT(KPF_COMPOUND_HEAD) | BIT(KPF_COMPOUND_TAIL)) ? MEMDIFF__FRAME_KERNEL_LARGE
                                                                     : MEMDIFF_FRAME_KERNEL;
    else if (f & BIT(KPF_WRITEBACK))
        kind = MEMDIFF_FRAME_WRITEBACK;
    else if (f & BIT(KPF_DIRTY))
        kind = MEMDIFF_FRAME_DIRTY;
    else if (f & BIT(KPF_ACTIVE))
        kind = MEMDIFF_FRAME_FILE_ACTIVE;
    else
        kind = MEMDIFF_FRAME_FILE_INACTIVE;
    return kind | facts;
}

int memdiff__plat_sys_frames(memdiff__sys *sys, uint64_t first, size_t n, unsigned char *klass,
                             size_t *got)
{
    *got = 0;
    if (sys->kpageflags_fd < 0)
        return memdiff__set_error(MEMDIFF_ENOTSUP, "/proc/kpageflags is not open");
    int rc = room(sys, &sys->flags, &sys->flags_cap, n);
    if (rc)
        return rc;
    ssize_t r = memdiff__linux_pread_full(sys->kpageflags_fd, sys->flags, n * 8, first * 8);
    if (r < 0)
        return memdiff__linux_fail((int)-r, "read", "/proc/kpageflags");
    size_t have = (size_t)r / 8;
    /* Neighbours mostly share their flags (free blocks, kernel memory, a file's pages): the
     * last answer is kept, and most frames cost a compare. */
    uint64_t last = have ? sys->flags[0] + 1 : 0;
    unsigned char c = 0;
    for (size_t i = 0; i < have; i++) {
        uint64_t f = sys->flags[i];
        if (f != last) {
            last = f;
            c = (unsigned char)classify(f);
        }
        klass[i] = c;
    }
    *got = have;
    return MEMDIFF_OK;
}

/* Sums every "<key> N" of a zoneinfo text (key with its leading blanks skipped). */
static uint64_t zone_sum(const char *t, size_t len, const char *key)
{
    size_t kl = strlen(key);
    uint64_t sum = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(t + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - t) : len;
        size_t j = i;
        while (j < end && t[j] == ' ')
            j++;
        if (end - j > kl && memcmp(t + j, key, kl) == 0 &&
            (t[j + kl] == ' ' || t[j + kl] == ':')) {
            j += kl + 1;
            while (j < end && (t[j] == ' ' || t[j] == ':'))
                j++;
            sum += strtoull(t + j, NULL, 10);
        }
        i = end + 1;
    }
    return sum;
}

int memdiff__plat_sys_meminfo(memdiff__sys *sys, memdiff__sys_meminfo *out)
{
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    size_t len;
    int rc = memdiff__linux_path(path, sizeof path, sys->root, "meminfo");
    if (!rc)
        rc = read_text(sys, path, &len, 0);
    if (rc)
        return rc;
    const char *t = sys->text;
#define KB(key) (memdiff__linux_status_field(t, len, key, 10) * 1024)
    out->mem_total = KB("MemTotal");
    out->mem_free = KB("MemFree");
    out->buffers = KB("Buffers");
    out->cached = KB("Cached");
    out->swap_cached = KB("SwapCached");
    out->anon_pages = KB("AnonPages");
    out->shmem = KB("Shmem");
    out->slab = KB("Slab");
    out->page_tables = KB("PageTables");
    out->sec_page_tables = KB("SecPageTables");
    out->kernel_stack = KB("KernelStack");
    out->unevictable = KB("Unevictable");
    out->mlocked = KB("Mlocked");
    out->hugetlb = KB("Hugetlb");
#undef KB
    if (memdiff__linux_path(path, sizeof path, sys->root, "zoneinfo") ||
        read_text(sys, path, &len, 0))
        return MEMDIFF_OK; /* no zone figures: their bounds stay 0 */
    t = sys->text;
    uint64_t ps = sys->page_size;
    out->zone_managed = zone_sum(t, len, "managed") * ps;
    out->zone_spanned = zone_sum(t, len, "spanned") * ps;
    out->zone_present = zone_sum(t, len, "present") * ps;
    out->zone_free = zone_sum(t, len, "nr_free_pages") * ps;
    out->pcp = zone_sum(t, len, "count") * ps;
    out->drift = zone_sum(t, len, "vm stats threshold") * ps;
    return MEMDIFF_OK;
}
