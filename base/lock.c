/*
 * lock.c - the one lock of memdiff's storage (lock.h).
 */
#include <signal.h>
#include <stdatomic.h>

#include "base/error.h"
#include "base/lock.h"
#include "memdiff.h"

static atomic_flag the_lock = ATOMIC_FLAG_INIT;
static void (*_Atomic while_locked)(void);

/* Whether this thread holds the lock or is about to spin for it: a signal handler that
 * interrupted it there and called memdiff would otherwise spin forever on a lock that its own
 * thread holds. Set before spinning, so that no instant is left uncovered. */
static _Thread_local volatile sig_atomic_t holding;

int memdiff__lock_reentered(void)
{
    if (!holding)
        return 0;
    memdiff__set_error(MEMDIFF_EBUSY, "arena: called again on a thread that is inside memdiff's "
                                      "allocator (from a signal handler?); memdiff is not "
                                      "async-signal-safe");
    return 1;
}

int memdiff__lock(void)
{
    if (memdiff__lock_reentered())
        return -1;
    holding = 1;
    atomic_signal_fence(memory_order_seq_cst);
    while (atomic_flag_test_and_set_explicit(&the_lock, memory_order_acquire)) {
    }
    void (*hook)(void) = atomic_load_explicit(&while_locked, memory_order_relaxed);
    if (hook)
        hook();
    return 0;
}

void memdiff__unlock(void)
{
    atomic_flag_clear_explicit(&the_lock, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    holding = 0;
}

int memdiff__arena_busy(void)
{
    return holding != 0;
}

void memdiff__test_while_locked(void (*fn)(void))
{
    atomic_store(&while_locked, fn);
}
