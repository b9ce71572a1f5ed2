/*
 * lock.h - the one lock of memdiff's storage (base/lock.c): a spinlock over the arena's
 * process-wide lists (chunks, reservations, kept scratch), safe against memdiff being entered
 * again from a signal handler on a thread that holds it.
 */
#ifndef MEMDIFF_BASE_LOCK_H
#define MEMDIFF_BASE_LOCK_H

/* 0 with the lock held, or -1 (detail MEMDIFF_EBUSY) when this thread holds it already: memdiff
 * was called again from a signal handler that interrupted it inside the lock. Other threads
 * wait for it; holders never allocate or block. */
int memdiff__lock(void);

void memdiff__unlock(void);

/* Whether this thread holds the lock (detail set: MEMDIFF_EBUSY); 0 otherwise. */
int memdiff__lock_reentered(void);

/* Whether the calling thread is inside the lock, without setting a detail. */
int memdiff__arena_busy(void);

/* Testing hook: fn (NULL: none) is called each time the lock is taken, with it held; tests
 * raise signals there to enter memdiff again. */
void memdiff__test_while_locked(void (*fn)(void));

#endif /* MEMDIFF_BASE_LOCK_H */
