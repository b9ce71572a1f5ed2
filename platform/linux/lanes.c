/*
 * lanes.c - a large region's pages read on more than one core (walk.h, "Lanes").
 *
 * The kernel's share of a snapshot is the pread of pagemap (or the PAGEMAP_SCAN ioctl) over
 * every page; memdiff's is decoding and storing what it read. On a machine with several cores
 * both can go on at once: threads of memdiff's own (lanes) read the chunks of a region ahead
 * of the walk, and the walk (on the calling thread, which reads chunks too while it would wait)
 * takes them in address order as if it had read them itself. The walk's decisions do not change,
 * so the snapshot stores exactly the bytes a walk on one thread stores (tests/test_lanes.c).
 *
 * Where: only in a snapshot of another process (an address space that is not the caller's:
 * kcmp(KCMP_VM)), on the live system, in a region of at least LANES_MIN_CHUNKS chunks; pagemap
 * while the walk reads it in dense batches, the scan at fast depth. Anything out of the way - a
 * read that came back short or failed, a scan that filled its vector, found swapped pages or
 * failed - is left to the walk, which does that chunk the way it always does.
 *
 * How, without malloc and without surprising the caller: a lane is a clone() sharing the
 * address space, files and signal handlers (a thread of the process, as sanitizers' own helper
 * threads are), on a stack from the snapshot's scratch arena, with every signal blocked, using no
 * thread-local storage (it has none of its own): raw system calls only (pread64, ioctl, futex),
 * no errno, no C library call. pthread_create would allocate (the thread's DTV: calloc) in the
 * process the caller may be measuring. Lanes start once the first plan of a snapshot is out (a
 * lane started before it would sleep, and cost a wake), exit once the walk has passed the last
 * region large enough for a plan (memdiff__linux_lanes_walked: the rest of the snapshot does
 * not wait for them), and are joined when the process is closed: no thread of memdiff's
 * outlives the call. Other
 * architectures than x86-64 and AArch64 walk on one thread.
 *
 * Scheduling: one 64-bit claim word holds the plan's generation, the highest chunk that may be
 * claimed (the slots free) and the next chunk to claim; a lane or the walk takes a chunk with a
 * compare-and-swap, so a plan cancelled or replaced under a lane cannot hand it a chunk of
 * another. A slot's state word is the futex the walk sleeps on when its next chunk is being read;
 * lanes sleep on the plan's wake word.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>

#include "linux.h"

#if defined(__x86_64__) || defined(__aarch64__)
#define LANES_SUPPORTED 1
#else
#define LANES_SUPPORTED 0
#endif

#define CHUNK_PAGES MEMDIFF__LINUX_LANES_CHUNK /* the largest chunk: a slot's room */
/* pagemap's chunks are half that: 32 MiB, about 0.2 to 0.5 ms of the kernel's work each. The
 * threads finish a plan within a chunk of each other, and a plan of 1 GiB has only 16 chunks of
 * 64 MiB. Paired against 64 MiB chunks, standard: 1 GiB 0.969 to 0.994 in five runs, 4 GiB
 * 0.988 and 1.003, 1 GiB every other page 0.997 and 1.001. A scan's chunk costs a fifth of
 * pagemap's, and at fast 32 MiB read 1.011 and 1.003 (1 GiB): its chunks stay 64 MiB. */
#define PAGEMAP_CHUNK_PAGES (CHUNK_PAGES / 2)
/* Pages that cost the kernel less than this a CHUNK_PAGES (a first chunk timed: in proportion) are
 * not worth a lane's: starting the lanes (tens of us), a claim and a wake each would cost more
 * than reading them on the walk's thread. */
#define LANES_WORTH_NS 40000u
#define LANES_MIN_CHUNKS 4u   /* a region of fewer chunks is read on the calling thread */
#define LANES_MIN_PAGES ((uint64_t)LANES_MIN_CHUNKS * CHUNK_PAGES)
#define SCAN_CAP 8192u        /* ranges a chunk's scan may return: alternate pages of a chunk */
#define SLOTS 8u              /* chunks claimed and not yet taken by the walk */
#define STACK_BYTES 65536u    /* a lane's stack: its loop and the system calls' frames */

/* the claim word: gen (24 bits) | limit (20) | next (20) */
#define NEXT_OF(c) ((size_t)((c) & 0xFFFFFu))
#define LIMIT_OF(c) ((size_t)(((c) >> 20) & 0xFFFFFu))
#define GEN_OF(c) ((c) >> 40)
#define CLAIM(gen, limit, next) (((uint64_t)(gen) << 40) | ((uint64_t)(limit) << 20) | (next))
#define CHUNKS_MAX 0xFFFFFu

enum { SLOT_FREE, SLOT_CLAIMED, SLOT_WAITED, SLOT_DONE };

struct lane_slot {
    _Atomic uint32_t state; /* SLOT_*; the futex the walk waits on (SLOT_WAITED) */
    int64_t result;         /* pagemap: bytes read; scan: ranges; or -errno */
    uint64_t walk_end;      /* scan: the kernel's walk_end */
    int plain;              /* scan: memdiff__linux_lanes_scan's verdict on the ranges */
};

struct memdiff__linux_lanes {
    int fd;               /* the process's pagemap */
    unsigned want;        /* lanes asked for, the calling thread included (>= 2) */
    unsigned started;     /* lane threads running */
    int failed;           /* a lane could not be started: the walk reads alone */
    int retired;          /* told to exit (memdiff__linux_lanes_walked), not yet joined */
    int probing;          /* the plan's first chunk is read by the walk, timed; no lane yet */
    unsigned char *stacks;
    _Atomic int tids[MEMDIFF__LINUX_LANES_MAX]; /* 0 once a lane has exited (CLEARTID) */
    _Atomic uint32_t wake;                      /* futex: bumped when work or quit is posted */
    _Atomic uint32_t sleepers;                  /* lanes in (or going into) their futex wait */
    _Atomic int quit;
    _Atomic uint64_t claim;
    /* the plan, written before its generation is published, read-only while it lasts */
    int mode; /* MEMDIFF__LANES_PAGEMAP or _SCAN */
    size_t chunk; /* pages a chunk: PAGEMAP_CHUNK_PAGES or CHUNK_PAGES */
    uint64_t start, end;
    unsigned shift;
    size_t nchunks;
    uint64_t anyof, ret;
    /* the walk's side */
    size_t taken;          /* chunks [0, taken) released */
    uint64_t pos;          /* pagemap: the address the walk reads next */
    int ended;             /* the plan stopped serving (the walk went its own way) */
    uint64_t *entries;     /* SLOTS chunks of pagemap entries */
    struct page_region *ranges; /* SLOTS chunks' scan vectors */
    struct lane_slot slots[SLOTS];
};

#define LANE_CODE MEMDIFF__LINUX_LANE_CODE

/* ---- raw system calls: a lane has no thread-local storage, hence no errno ----------------- */

#if defined(__x86_64__)
LANE_CODE static inline long raw_syscall(long n, long a, long b, long c, long d, long e, long f)
{
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#elif defined(__aarch64__)
LANE_CODE static inline long raw_syscall(long n, long a, long b, long c, long d, long e, long f)
{
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ volatile("svc 0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    return x0;
}
#else
LANE_CODE static inline long raw_syscall(long n, long a, long b, long c, long d, long e, long f)
{
    (void)n, (void)a, (void)b, (void)c, (void)d, (void)e, (void)f;
    return -ENOSYS;
}
#endif

LANE_CODE static void futex_wait(_Atomic uint32_t *word, uint32_t seen)
{
    raw_syscall(SYS_futex, (long)word, FUTEX_WAIT_PRIVATE, (long)seen, 0, 0, 0);
}

/* A lane's exit wakes the tid word as a shared futex (CLONE_CHILD_CLEARTID). */
static void futex_wait_shared(_Atomic int *word, int seen)
{
    raw_syscall(SYS_futex, (long)word, FUTEX_WAIT, (long)seen, 0, 0, 0);
}

LANE_CODE static void futex_wake(_Atomic uint32_t *word, int n)
{
    raw_syscall(SYS_futex, (long)word, FUTEX_WAKE_PRIVATE, n, 0, 0, 0);
}

/* ---- one chunk, by whichever thread claimed it -------------------------------------------- */

LANE_CODE static uint64_t chunk_start(const struct memdiff__linux_lanes *L, size_t i)
{
    return L->start + ((uint64_t)i * L->chunk << L->shift);
}

LANE_CODE static uint64_t chunk_end(const struct memdiff__linux_lanes *L, size_t i)
{
    uint64_t e = chunk_start(L, i + 1);
    return e < L->end ? e : L->end;
}

/* Reads chunk i of the plan into its slot and marks it done. Raw calls only (a lane's code). */
LANE_CODE static void do_chunk(struct memdiff__linux_lanes *L, size_t i)
{
    struct lane_slot *s = &L->slots[i % SLOTS];
    uint64_t lo = chunk_start(L, i), hi = chunk_end(L, i);
    if (L->mode == MEMDIFF__LANES_PAGEMAP) {
        unsigned char *buf = (unsigned char *)(L->entries + (size_t)(i % SLOTS) * CHUNK_PAGES);
        size_t want = (size_t)((hi - lo) >> L->shift) * 8, got = 0;
        long r = 0;
        while (got < want) {
            r = raw_syscall(SYS_pread64, L->fd, (long)(buf + got), (long)(want - got),
                            (long)((lo >> L->shift) * 8 + got), 0, 0);
            if (r == -EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        s->result = r < 0 ? r : (int64_t)got;
    } else {
        struct pm_scan_arg arg;
        struct page_region *vec = L->ranges + (size_t)(i % SLOTS) * SCAN_CAP;
        long r;
        do {
            arg.size = sizeof arg;
            arg.flags = 0;
            arg.walk_end = 0;
            arg.max_pages = 0;
            arg.category_inverted = 0;
            arg.category_mask = 0;
            arg.start = lo;
            arg.end = hi;
            arg.vec = (uint64_t)(uintptr_t)vec;
            arg.vec_len = SCAN_CAP;
            arg.category_anyof_mask = L->anyof;
            arg.return_mask = L->ret;
            r = raw_syscall(SYS_ioctl, L->fd, (long)PAGEMAP_SCAN, (long)&arg, 0, 0, 0);
        } while (r == -EINTR);
        s->result = r;
        s->walk_end = arg.walk_end;
        /* Checked here, while this processor's cache holds the ranges: the walk, which would
         * make the pass itself, decodes them only (a fragmented chunk: 8192 ranges). */
        int moving = 0;
        s->plain = r >= 0 && memdiff__linux_ranges_plain(
                                 vec, (size_t)(r < (long)SCAN_CAP ? r : (long)SCAN_CAP), lo, hi,
                                 ((uint64_t)1 << L->shift) - 1, L->ret & ~(uint64_t)PAGE_IS_GUARD,
                                 &moving)
                       ? 1 + moving
                       : 0;
    }
    if (atomic_exchange_explicit(&s->state, SLOT_DONE, memory_order_acq_rel) == SLOT_WAITED)
        futex_wake(&s->state, 1);
}

/* Claims the plan's next chunk if one may be claimed: its index, or (size_t)-1. */
LANE_CODE static size_t try_claim(struct memdiff__linux_lanes *L)
{
    uint64_t c = atomic_load_explicit(&L->claim, memory_order_acquire);
    while (NEXT_OF(c) < LIMIT_OF(c)) {
        if (atomic_compare_exchange_weak_explicit(&L->claim, &c, c + 1, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            size_t i = NEXT_OF(c);
            atomic_store_explicit(&L->slots[i % SLOTS].state, SLOT_CLAIMED, memory_order_relaxed);
            return i;
        }
    }
    return (size_t)-1;
}

/* A lane: claims and reads chunks until told to quit. */
LANE_CODE static int lane_main(void *arg)
{
    struct memdiff__linux_lanes *L = arg;
    for (;;) {
        uint32_t seen = atomic_load_explicit(&L->wake, memory_order_acquire);
        if (atomic_load_explicit(&L->quit, memory_order_acquire))
            return 0;
        size_t i = try_claim(L);
        if (i != (size_t)-1) {
            do_chunk(L, i);
            continue;
        }
        atomic_fetch_add_explicit(&L->sleepers, 1, memory_order_acq_rel);
        if (atomic_load_explicit(&L->wake, memory_order_acquire) == seen)
            futex_wait(&L->wake, seen);
        atomic_fetch_sub_explicit(&L->sleepers, 1, memory_order_acq_rel);
    }
}

static void wake_lanes(struct memdiff__linux_lanes *L)
{
    atomic_fetch_add_explicit(&L->wake, 1, memory_order_acq_rel);
    if (atomic_load_explicit(&L->sleepers, memory_order_acquire))
        futex_wake(&L->wake, INT32_MAX);
}

/* ---- starting and stopping -------------------------------------------------------------- */

/* Whether the process's address space is another than the caller's: lanes never read the
 * caller's own (their stacks would be pages of it). kcmp answers for a thread id or a vfork()
 * child too; where it cannot, the answer is no. */
static int other_address_space(const memdiff__proc *p)
{
    if (p->self)
        return 0;
    long r = syscall(SYS_kcmp, (long)getpid(), (long)p->pid, KCMP_VM, 0L, 0L);
    return r > 0;
}

/* Processors a lane may take. A lane that waits for a processor makes the walk wait for its
 * chunk: on a busy machine lanes cost time. /proc/loadavg's fourth field counts the tasks
 * runnable at this moment, the caller's own thread among them; the processors online less the
 * others are idle now. Averages look back: the one-minute load counted a program's own lanes
 * against it (a minute of snapshots on two threads raised it past 1.5 on two processors, and the
 * next snapshots read on one), and so does CPU pressure (/proc/pressure/cpu, "some avg10": 10%
 * during a loop of such snapshots, 25 to 45% during a benchmark run at SCHED_FIFO). At this
 * moment no lane of the caller's runs: lanes are joined before a snapshot returns. A kernel
 * worker caught running costs one snapshot its lanes, no more. A caller at a real-time policy
 * (SCHED_FIFO, SCHED_RR) passes it to its lanes (clone), which then wait for no task of the
 * normal class: those runnable (the kernel threads its own processor holds off among them) are
 * not counted. */
static _Atomic int idle_override = -1;

void memdiff__linux_lanes_test_idle(int idle)
{
    atomic_store(&idle_override, idle);
}

unsigned memdiff__linux_lanes_idle(const char *loadavg, long online, unsigned want, int realtime)
{
    if (realtime)
        return want;
    /* "1.52 0.58 0.59 3/210 4242": runnable / all tasks, then the last pid */
    const char *f = loadavg;
    for (int k = 0; f && k < 3; k++) {
        f = strchr(f, ' ');
        f = f ? f + 1 : NULL;
    }
    char *end;
    long running = f ? strtol(f, &end, 10) : -1;
    if (!f || end == f || *end != '/' || running < 0 || online < 1)
        return want; /* unread: as asked, capped by the processors the caller may run on */
    long idle = online - (running > 1 ? running - 1 : 0);
    return idle < 1 ? 1u : idle < (long)want ? (unsigned)idle : want;
}

static unsigned idle_processors(const memdiff__proc *p, unsigned want)
{
    int forced = atomic_load(&idle_override);
    if (forced >= 0)
        return forced < 1 ? 1u : (unsigned)forced < want ? (unsigned)forced : want;
    char path[PATH_MAX], load[256];
    ssize_t n = memdiff__linux_path(path, sizeof path, p->proc_root, "loadavg")
                    ? -1
                    : memdiff__linux_read_small(path, load, sizeof load);
    int policy = sched_getscheduler(0);
    return memdiff__linux_lanes_idle(n > 0 ? load : NULL, sysconf(_SC_NPROCESSORS_ONLN), want,
                                     policy == SCHED_FIFO || policy == SCHED_RR);
}

static int start_lanes(memdiff__proc *p, struct memdiff__linux_lanes *L)
{
    /* Lanes started again after a join take the stacks of those before them. */
    if (!L->stacks)
        L->stacks = memdiff__arena_alloc_raw(p->scratch, (size_t)(L->want - 1) * STACK_BYTES);
    if (!L->stacks)
        return MEMDIFF_ENOMEM;
    /* Every signal blocked in the new threads: they inherit the mask of this one, set for the
     * clone only (the raw call: glibc's keeps its own two signals open). */
    uint64_t all = ~UINT64_C(0), old = 0;
    raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8, 0, 0);
    const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                      CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    for (unsigned k = 0; k + 1 < L->want; k++) {
        unsigned char *top = L->stacks + (size_t)(k + 1) * STACK_BYTES;
        int tid = clone(lane_main, top, flags, L, (pid_t *)&L->tids[k], NULL,
                        (pid_t *)&L->tids[k]);
        if (tid <= 0)
            break;
        L->started++;
    }
    raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
    if (!L->started)
        L->failed = 1;
    return MEMDIFF_OK;
}

int memdiff__linux_lanes_setup(memdiff__proc *p, unsigned want)
{
    if (want > MEMDIFF__LINUX_LANES_MAX)
        want = MEMDIFF__LINUX_LANES_MAX;
    p->lanes_want = want;
    return MEMDIFF_OK;
}

static _Atomic int worth_override = -1;

void memdiff__linux_lanes_test_worth(int worth)
{
    atomic_store(&worth_override, worth);
}

int memdiff__linux_lanes_worth(uint64_t pages, uint64_t ns)
{
    int forced = atomic_load(&worth_override);
    if (forced >= 0)
        return forced;
    return pages && ns >= (uint64_t)LANES_WORTH_NS * pages / CHUNK_PAGES;
}

/* Whether p may be read on lanes at all, from what p knows: no system call. */
static int lanes_allowed(const memdiff__proc *p)
{
    return LANES_SUPPORTED && p->lanes_want != 1 && p->live && !p->lanes_refused &&
           !p->scan_refuse_at_call && p->pagemap_fd >= 0;
}

int memdiff__linux_lanes_may(const memdiff__proc *p, uint64_t start, uint64_t end)
{
    return lanes_allowed(p) && !(p->lanes && p->lanes->failed) &&
           ((end - start) >> p->page_shift) >= LANES_MIN_PAGES;
}

/* The lanes of p, started on first use; NULL where the walk reads alone. */
static struct memdiff__linux_lanes *lanes_of(memdiff__proc *p)
{
    if (p->lanes)
        return p->lanes->failed ? NULL : p->lanes;
    if (!lanes_allowed(p))
        return NULL;
    /* As many as asked (0: all), never more than the processors the caller may run on: asked
     * here, for a region worth it, not in every snapshot. */
    unsigned cpus = memdiff__os_cpu_count();
    unsigned want = p->lanes_want && p->lanes_want < cpus ? p->lanes_want : cpus;
    want = idle_processors(p, MEMDIFF__MIN(want, MEMDIFF__LINUX_LANES_MAX));
    if (want < 2 || !other_address_space(p)) {
        p->lanes_refused = 1;
        return NULL;
    }
    struct memdiff__linux_lanes *L = memdiff__arena_alloc(p->scratch, sizeof *L);
    if (!L) {
        p->lanes_refused = 1;
        return NULL;
    }
    L->fd = p->pagemap_fd;
    L->want = want;
    L->shift = p->page_shift;
    L->ended = 1;
    p->lanes = L;
    return L; /* the threads start with the first plan (memdiff__linux_lanes_plan) */
}

/* Until chunk's slot s is done (a chunk claimed may show its slot free for a moment: the claim
 * comes first). */
static void wait_done(struct lane_slot *s)
{
    for (;;) {
        uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == SLOT_DONE)
            return;
        if (st == SLOT_CLAIMED &&
            !atomic_compare_exchange_strong_explicit(&s->state, &st, SLOT_WAITED,
                                                     memory_order_acq_rel, memory_order_acquire))
            continue;
        futex_wait(&s->state, SLOT_WAITED); /* at once unless SLOT_WAITED */
    }
}

/* Stops the plan: no chunk claimed from now on, and those claimed are read to the end (their
 * slots' buffers are about to be reused). */
static void drain(struct memdiff__linux_lanes *L)
{
    uint64_t c = atomic_load_explicit(&L->claim, memory_order_acquire);
    while (!atomic_compare_exchange_weak_explicit(&L->claim, &c,
                                                  CLAIM(GEN_OF(c), 0, NEXT_OF(c)),
                                                  memory_order_acq_rel, memory_order_acquire))
        ;
    for (size_t i = L->taken; i < NEXT_OF(c); i++)
        wait_done(&L->slots[i % SLOTS]);
    L->ended = 1;
}

/* Tells the lanes to exit once the chunks claimed are read; no plan is served from then on. */
static void retire(struct memdiff__linux_lanes *L)
{
    drain(L);
    atomic_store_explicit(&L->quit, 1, memory_order_release);
    wake_lanes(L);
    L->retired = 1;
}

/* Until every lane told to exit has exited (its tid cleared: CLONE_CHILD_CLEARTID). */
static void join(struct memdiff__linux_lanes *L)
{
    for (unsigned k = 0; k < L->started; k++) {
        int t;
        while ((t = atomic_load_explicit(&L->tids[k], memory_order_acquire)) != 0)
            futex_wait_shared(&L->tids[k], t);
    }
}

void memdiff__linux_lanes_stop(memdiff__proc *p)
{
    struct memdiff__linux_lanes *L = p->lanes;
    if (!L)
        return;
    if (L->started) {
        if (!L->retired)
            retire(L);
        join(L);
    }
    p->lanes_used = memdiff__plat_pages_threads(p);
    L->started = 0;
    p->lanes = NULL;
}

/* Whether a region above end is large enough for a plan (memdiff__linux_lanes_plan's test). */
static int plan_above(const memdiff__proc *p, uint64_t end)
{
    for (size_t i = p->region_count; i-- > 0 && p->regions[i].end > end;)
        if (((p->regions[i].end - MEMDIFF__MAX(p->regions[i].start, end)) >> p->page_shift) >=
            LANES_MIN_PAGES)
            return 1;
    return 0;
}

void memdiff__linux_lanes_walked(memdiff__proc *p, uint64_t end)
{
    struct memdiff__linux_lanes *L = p->lanes;
    if (L && L->started && !L->retired && !plan_above(p, end))
        retire(L);
}

unsigned memdiff__plat_pages_threads(const memdiff__proc *p)
{
    if (p->lanes)
        return p->lanes->started && p->lanes_plans ? p->lanes->started + 1 : 1;
    return p->lanes_used ? p->lanes_used : 1;
}

/* ---- plans ------------------------------------------------------------------------------- */

int memdiff__linux_lanes_plan(memdiff__proc *p, int mode, uint64_t start, uint64_t end,
                              uint64_t anyof, uint64_t ret)
{
    /* A region of LANES_MIN_CHUNKS chunks; at fast depth the rest of one after the pages the
     * walk scanned first (memdiff__linux_lanes_may took the whole region's measure). */
    if (((end - start) >> p->page_shift) <
        LANES_MIN_PAGES - (mode == MEMDIFF__LANES_SCAN ? MEMDIFF__LINUX_LANES_PROBE : 0u))
        return 0;
    struct memdiff__linux_lanes *L = lanes_of(p);
    if (!L)
        return 0;
    if (L->retired) { /* a walk again after the last plan (a new pass): new lanes */
        join(L);
        L->started = 0;
        L->retired = 0;
        atomic_store_explicit(&L->quit, 0, memory_order_relaxed);
    }
    if (mode == MEMDIFF__LANES_PAGEMAP && !L->entries &&
        !(L->entries = memdiff__arena_alloc_raw(p->scratch,
                                                (size_t)SLOTS * CHUNK_PAGES * sizeof *L->entries)))
        return 0;
    if (mode == MEMDIFF__LANES_SCAN && !L->ranges &&
        !(L->ranges = memdiff__arena_alloc_raw(p->scratch,
                                               (size_t)SLOTS * SCAN_CAP * sizeof *L->ranges)))
        return 0;
    drain(L);
    uint64_t pages = (end - start) >> p->page_shift;
    const size_t chunk = mode == MEMDIFF__LANES_PAGEMAP ? PAGEMAP_CHUNK_PAGES : CHUNK_PAGES;
    uint64_t n = (pages + chunk - 1) / chunk;
    if (n > CHUNKS_MAX) {
        n = CHUNKS_MAX;
        end = start + ((n * chunk) << p->page_shift);
    }
    L->mode = mode;
    L->chunk = chunk;
    L->start = start;
    L->end = end;
    L->nchunks = (size_t)n;
    L->anyof = anyof;
    L->ret = ret;
    L->taken = 0;
    L->pos = start;
    L->ended = 0;
    L->probing = 1;
    for (unsigned k = 0; k < SLOTS; k++)
        atomic_store_explicit(&L->slots[k].state, SLOT_FREE, memory_order_relaxed);
    uint64_t c = atomic_load_explicit(&L->claim, memory_order_acquire);
    atomic_store_explicit(&L->claim, CLAIM(GEN_OF(c) + 1, MEMDIFF__MIN(n, SLOTS), 0),
                          memory_order_release);
    if (L->started) {
        wake_lanes(L);
    } else if (start_lanes(p, L) || !L->started) {
        /* Started once the plan is out: a new lane finds its first chunk, not a wait and a
         * wake. None started: the plan ends before anything of it is claimed. */
        L->failed = 1;
        drain(L);
        return 0;
    }
    p->lanes_plans++;
    return 1;
}

/* The plan's first chunk was read by the walk in ns (the lanes reading the next ones): where
 * chunks cost less than handing them over, the plan ends, and the walk reads the rest of the
 * region alone. */
static void probed(memdiff__proc *p, struct memdiff__linux_lanes *L, uint64_t ns)
{
    (void)p;
    L->probing = 0;
    if (!memdiff__linux_lanes_worth(L->chunk, ns))
        drain(L);
}

void memdiff__linux_lanes_cancel(memdiff__proc *p)
{
    struct memdiff__linux_lanes *L = p->lanes;
    if (L && !L->ended)
        drain(L);
}

/* Chunk i of the plan (the next the walk takes), read: by a lane, or by this thread, which reads
 * the next unclaimed chunk rather than wait. NULL if the plan cannot give it (none does). */
static struct lane_slot *take_chunk(struct memdiff__linux_lanes *L, size_t i)
{
    struct lane_slot *s = &L->slots[i % SLOTS];
    for (;;) {
        uint64_t c = atomic_load_explicit(&L->claim, memory_order_acquire);
        if (NEXT_OF(c) <= i && LIMIT_OF(c) <= i)
            return NULL;
        if (NEXT_OF(c) > i &&
            atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_DONE)
            return s;
        size_t j = try_claim(L); /* i itself when unclaimed, else one behind it */
        if (j != (size_t)-1) {
            do_chunk(L, j);
            continue;
        }
        if (NEXT_OF(c) > i) {
            wait_done(s);
            return s;
        }
    }
}

/* Claims chunk i if it is the next to claim. */
static int claim_exactly(struct memdiff__linux_lanes *L, size_t i)
{
    uint64_t c = atomic_load_explicit(&L->claim, memory_order_acquire);
    while (NEXT_OF(c) == i && i < LIMIT_OF(c))
        if (atomic_compare_exchange_weak_explicit(&L->claim, &c, c + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return 1;
    return 0;
}

/* The walk is done with chunk i: its slot may take chunk i + SLOTS. */
static void release_chunk(struct memdiff__linux_lanes *L, size_t i)
{
    atomic_store_explicit(&L->slots[i % SLOTS].state, SLOT_FREE, memory_order_relaxed);
    L->taken = i + 1;
    if (L->ended)
        return; /* drained: no chunk is claimed again */
    uint64_t c = atomic_load_explicit(&L->claim, memory_order_acquire);
    size_t limit = (size_t)MEMDIFF__MIN((uint64_t)L->nchunks, (uint64_t)L->taken + SLOTS);
    while (LIMIT_OF(c) < limit &&
           !atomic_compare_exchange_weak_explicit(&L->claim, &c,
                                                  CLAIM(GEN_OF(c), limit, NEXT_OF(c)),
                                                  memory_order_acq_rel, memory_order_acquire))
        ;
    wake_lanes(L);
}

size_t memdiff__linux_lanes_pagemap(memdiff__proc *p, uint64_t addr, uint64_t *dst, size_t n)
{
    struct memdiff__linux_lanes *L = p->lanes;
    if (!L || L->ended || L->mode != MEMDIFF__LANES_PAGEMAP)
        return 0;
    if (addr != L->pos || addr >= L->end) {
        drain(L); /* the walk went elsewhere */
        return 0;
    }
    size_t done = 0;
    while (done < n && !L->ended) {
        uint64_t at = addr + ((uint64_t)done << L->shift);
        if (at >= L->end)
            break;
        size_t i = (size_t)(((at - L->start) >> L->shift) / L->chunk);
        uint64_t lo = chunk_start(L, i), hi = chunk_end(L, i);
        size_t whole = (size_t)((hi - lo) >> L->shift);
        uint64_t t0 = L->probing ? memdiff__os_monotonic_ns() : 0;
        if (at == lo && n - done >= whole && claim_exactly(L, i)) {
            /* Not claimed yet and wanted whole: read where the walk wants it, no copy. */
            ssize_t r =
                memdiff__linux_pread_full(L->fd, dst + done, whole * 8, (lo >> L->shift) * 8);
            release_chunk(L, i);
            if (r != (ssize_t)(whole * 8)) {
                drain(L); /* read again by the walk, which sees why */
                break;
            }
            done += whole;
            if (t0)
                probed(p, L, memdiff__os_monotonic_ns() - t0);
            continue;
        }
        struct lane_slot *s = take_chunk(L, i);
        if (!s || s->result != (int64_t)(((hi - lo) >> L->shift) * 8)) {
            drain(L); /* short or failed: the walk reads it itself, and sees why */
            break;
        }
        size_t off = (size_t)((at - lo) >> L->shift);
        size_t take = (size_t)MEMDIFF__MIN((uint64_t)(n - done), ((hi - at) >> L->shift));
        memcpy(dst + done, L->entries + (size_t)(i % SLOTS) * CHUNK_PAGES + off,
               take * sizeof *dst);
        done += take;
        if (at + ((uint64_t)take << L->shift) == hi)
            release_chunk(L, i);
        if (t0)
            probed(p, L, memdiff__os_monotonic_ns() - t0);
    }
    L->pos = addr + ((uint64_t)done << L->shift);
    if (L->pos >= L->end)
        L->ended = 1;
    return done;
}

int memdiff__linux_lanes_scan(memdiff__proc *p, size_t i, const struct page_region **ranges,
                              uint64_t *lo, uint64_t *hi, uint64_t *walk_end, int *plain)
{
    struct memdiff__linux_lanes *L = p->lanes;
    uint64_t t0 = L->probing ? memdiff__os_monotonic_ns() : 0;
    struct lane_slot *s = take_chunk(L, i);
    if (t0)
        probed(p, L, memdiff__os_monotonic_ns() - t0);
    *lo = chunk_start(L, i);
    *hi = chunk_end(L, i);
    *ranges = L->ranges + (size_t)(i % SLOTS) * SCAN_CAP;
    *walk_end = s ? s->walk_end : 0;
    *plain = s ? s->plain : 0;
    if (!s)
        return -EAGAIN;
    return s->result < 0 ? (int)s->result : (int)MEMDIFF__MIN(s->result, (int64_t)SCAN_CAP);
}

void memdiff__linux_lanes_scan_done(memdiff__proc *p, size_t i)
{
    struct memdiff__linux_lanes *L = p->lanes;
    release_chunk(L, i);
    if (i + 1 >= L->nchunks)
        L->ended = 1;
}

size_t memdiff__linux_lanes_chunks(const memdiff__proc *p)
{
    return p->lanes ? p->lanes->nchunks : 0;
}

int memdiff__linux_lanes_active(const memdiff__proc *p)
{
    return p->lanes && !p->lanes->ended;
}
