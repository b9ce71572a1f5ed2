/*
 * scenario_util.h - helpers for the real-process scenarios (test_scenarios.c): memory laid out so
 * that the kernel cannot blur the page counts, snapshots and diffs that fail the test loudly, and
 * the lookups the scenarios assert on. Public API of memdiff only.
 */
#ifndef MEMDIFF_SCENARIO_UTIL_H
#define MEMDIFF_SCENARIO_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memdiff.h"

/* Any category, for scn_block_at(). */
#define SCN_ANY_CATEGORY ((memdiff_category)-1)

/* The page size, from sysconf(_SC_PAGESIZE). */
size_t scn_page(void);

/* Every readable page of this test program's own mappings, read once (not under ASan): the
 * library is linked into it, so which of its pages a measured path touches first moves with
 * any change anywhere, and a first touch maps pages into the figure. */
void scn_page_in_program(void);

/* npages of memory mapped with (prot, flags, fd, offset), between two PROT_NONE guard pages of
 * one private anonymous reservation. The guards keep the mapping a VMA of its own: the kernel
 * merges adjacent anonymous mappings with equal flags (memdiff's own chunks among them when the
 * kernel cannot name them, CONFIG_ANON_VMA_NAME), which would fold other memory into the block
 * under test. MADV_NOHUGEPAGE keeps a THP=always kernel from backing 512 pages per fault. */
void *scn_map(size_t npages, int prot, int flags, int fd, off_t offset);

/* This process's pagemap entry for addr's page (Documentation/admin-guide/mm/pagemap.rst); the
 * test fails when it cannot be read. */
uint64_t scn_pagemap_entry(const void *addr);

/* Whether a read fault on private anonymous memory maps the shared zero page here (1) or a page
 * of the process's own (0). Linux maps the zero page (mm/memory.c, do_anonymous_page) unless
 * mm_forbids_zeropage() (s390 KVM hosts) or the kernel is patched not to: a PVM guest booted
 * with pvm_no_zero_page=1, as this project's CI machines are. Told from the test's own pagemap,
 * without privilege and without memdiff: the page a read fault mapped is exclusively mapped
 * (bit 56, Linux 4.2) exactly when it is a page of the process's own. Asked once. */
int scn_zero_page_on_read(void);

/* Unmaps a scn_map() mapping and its guards. */
void scn_unmap(void *p, size_t npages);

/* Snapshots and diffs that fail the test with memdiff's detail message on error. */
memdiff_snapshot *scn_snap(memdiff_depth depth);
memdiff_diff *scn_compare(const memdiff_snapshot *a, const memdiff_snapshot *b, unsigned flags);

/* The blocks below are copies (memdiff_diff_block() copies into the caller's struct) kept in
 * SCN_BLOCK_SLOTS slots of this module, reused in turn: a pointer stays valid for the next
 * SCN_BLOCK_SLOTS - 1 lookups, and its label while the diff lives. No test holds more than a
 * few at once. */
#define SCN_BLOCK_SLOTS 32

/* Block index of d; the test fails when memdiff_diff_block() does. */
const memdiff_block *scn_block(const memdiff_diff *d, size_t index);

/* The first block whose [start, end) contains addr and whose category is cat (or any category
 * with SCN_ANY_CATEGORY); the test fails, with the diff's blocks listed, when there is none. */
const memdiff_block *scn_block_at(const memdiff_diff *d, uintptr_t addr, memdiff_category cat);

/* The first block containing addr in category cat, or NULL. */
const memdiff_block *scn_find_block(const memdiff_diff *d, uintptr_t addr, memdiff_category cat);

/* In a verbose diff (one outcome per block, every page of the span changed the same way): how
 * many pages of [lo, hi) are new. Fails the test on a verbose block that breaks that rule. */
uint64_t scn_verbose_new_pages(const memdiff_diff *d, uintptr_t lo, uintptr_t hi);

/* "0x...-0x... private 'anonymous' new presence=3 new=13p (13p private) freed=0p ..." */
const char *scn_block_str(const memdiff_block *b);

/* The text report of d in a malloc'd string (free it); for failure messages and debugging. */
char *scn_report(const memdiff_diff *d, unsigned flags);

/* Fails the test unless every field of x and y is equal. */
void scn_assert_totals_eq(const memdiff_totals *x, const memdiff_totals *y, const char *what);

/* Waits (up to 10 s) until thread tid of this process is blocked in system call sysno, read
 * from /proc/self/task/TID/syscall: memdiff finds a thread's stack from the stack pointer the
 * kernel shows there, which it shows only for a thread blocked in the kernel. */
void scn_wait_blocked(pid_t tid, long sysno);

/* Runs fn(arg) in a forked child that dropped to uid and gid 65534 (nobody) and made itself
 * dumpable again (credentials changes clear the flag, and /proc/self files of a non-dumpable
 * process belong to root: proc(5)); when the test does not run as root, as the caller's user.
 * fn returns NULL on success or a message. Returns NULL when the child succeeded, else the
 * message (static storage, overwritten by the next call). */
const char *scn_as_nobody(const char *(*fn)(void *arg), void *arg);

/* Reads fd to its end (a child's message through a pipe) into buf, NUL-terminated and cut at
 * size - 1 bytes, and closes fd. Returns the length. */
size_t scn_read_message(int fd, char *buf, size_t size);

/* Runs fn(arg) in a forked child after drop() (NULL: done; else why it failed, which fails the
 * child). Returns as scn_as_nobody(), which is this with a drop to nobody. */
const char *scn_in_child(const char *(*drop)(void), const char *(*fn)(void *arg), void *arg);

/* Runs the shell command fmt (sh -c, through popen), its standard output into out (cut at
 * size - 1 bytes, NUL-terminated). Returns its exit status, -1 when it did not exit. */
int scn_sh(char *out, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Starts argv[0] (execv) in a child that dies with the caller (PR_SET_PDEATHSIG), its stdin
 * and stdout on pipes: *to_child writes to its stdin (closing it ends a reader of stdin),
 * *from_child reads its stdout. Returns its pid, or -1 when a pipe or the fork failed. */
pid_t scn_spawn_piped(char *const argv[], int *to_child, int *from_child);

/* A directory for temporary files on a disk file system (not tmpfs, whose pages are shmem and
 * behave otherwise): $TMPDIR, /tmp or /var/tmp, resolved with realpath(). */
const char *scn_disk_tmpdir(void);

/* The net bytes of category cat (MEMDIFF_CAT_ALL: all) between recorded snapshots a and b of
 * timeline t (memdiff_timeline_snapshot, memdiff_compare); fails the test on any error. */
int64_t scn_timeline_net(const memdiff_timeline *t, size_t a, size_t b, memdiff_category cat);

#endif
