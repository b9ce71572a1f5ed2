/*
 * bench.h - memdiff_bench's parts: targets (child processes with known memory), the floors (the
 * kernel's cost for the same facts, read as directly as Linux allows, written here independently
 * of memdiff), and the peer (reading smaps, as pmap and psutil do).
 *
 * Every floor takes the target's pid and reads its regions from /proc/PID/maps itself, as a
 * minimal tool would; memdiff reads maps too, so both sides pay for it.
 */
#ifndef MEMDIFF_BENCH_H
#define MEMDIFF_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- timing (memdiff_bench.c) ------------------------------------------------------------ */

double bench_now_ms(void); /* CLOCK_MONOTONIC */

/* The median of v[0..n) (sorts v). */
double bench_median(double *v, int n);

/* order[0..n) a permutation of 0..n-1, shuffled from *rng (xorshift64, advanced). */
void bench_shuffle(int *order, int n, uint64_t *rng);

/* The median over repetitions of a[rep] / b[rep], those where both were measured (a >= 0,
 * b > 0); 0 when none. */
double bench_paired_ratio(const double *a, const double *b, int n);

/* A row of a ratio table: target, a and its median, b and its median, the paired ratio, and the
 * issue's limit (met or not) or, limit 0, a note in the target column. */
void bench_ratio_row(const char *target, const char *a, double a_ms, const char *b, double b_ms,
                     double ratio, double limit, const char *note);

/* ---- targets (target.c) ----------------------------------------------------------------- */

typedef enum bench_kind {
    BENCH_DENSE,  /* every page of the mapping touched */
    BENCH_ALT,    /* every other page touched */
    BENCH_THP,    /* every page touched, madvise(MADV_HUGEPAGE), 2 MiB aligned */
    BENCH_SPARSE, /* a reservation with touched_bytes spread over it in 16 MiB pieces */
    BENCH_RUNS,   /* half the pages touched, in runs of random length: resident runs and gaps
                     geometric with mean 4 pages, from a fixed seed (the same layout each run) */
    BENCH_PYTHON  /* a python3 interpreter holding bytes objects until its VmRSS reaches
                     map_bytes (not this program: a process the benchmark did not write, with
                     its many mappings) */
} bench_kind;

typedef struct bench_target_spec {
    const char *name;
    bench_kind kind;
    uint64_t map_bytes;     /* size of the mapping */
    uint64_t touched_bytes; /* BENCH_SPARSE: how much of it is touched */
} bench_target_spec;

typedef struct bench_target {
    pid_t pid;
    int release_fd;       /* closing it lets the child exit */
    uint64_t rss_bytes;   /* VmRSS once built */
    uint64_t anon_huge;   /* AnonHugePages summed over smaps */
    uint64_t map_start;   /* the mapping (as the child reports it) */
    uint64_t map_bytes;
} bench_target;

/* Starts the target: fork, exec of this program (a clean address space, not a copy of the
 * benchmark's), memory built, then the child blocks on a pipe. Returns 0 or -1 (message
 * printed). */
int bench_target_start(const bench_target_spec *spec, bench_target *out);

/* The python3 the python3 target runs: $MEMDIFF_BENCH_PYTHON, else /usr/bin/python3 where it
 * can be run, else "python3" as PATH finds it. */
const char *bench_python(void);

/* Releases the child and reaps it. */
void bench_target_stop(bench_target *t);

/* The child's side: called by main when argv[1] is BENCH_TARGET_ARG. Never returns. */
#define BENCH_TARGET_ARG "--internal-target"
void bench_target_main(int argc, char **argv);

/* ---- recording (recording.c) ------------------------------------------------------------- */

/* `memdiff record` of spec's target at 20 polls/s (recorder CPU, timeline growth) and `memdiff
 * run` of the churn command against it alone, in pairs; cli: the memdiff program, self: this
 * one. Prints the results; 0 or -1. */
int bench_recording(const char *cli, const char *self, const bench_target_spec *spec, int pairs);

/* The churn command's side (argv[1] BENCH_CHURN_ARG): maps and touches 4 GiB in 1 MiB steps,
 * unmaps them, exits 0. Never returns. */
#define BENCH_CHURN_ARG "--internal-churn"
void bench_churn_main(void);

/* ---- the whole machine (system.c) -------------------------------------------------------- */

/* 200 processes started (shells, python3 with 200 MiB, one with threads), then smem, the floors
 * and memdiff's system snapshot on them, reps interleaved repetitions; prints the tables. 0 or
 * 1. */
int bench_system(int reps);

/* The threaded child's side (argv[1] BENCH_THREADS_ARG). Never returns. */
#define BENCH_THREADS_ARG "--internal-threads"
_Noreturn void bench_threads_main(void);

/* ---- regions and floors (floors.c) ------------------------------------------------------ */

typedef struct bench_range {
    uint64_t start, end;
} bench_range;

/* The regions of pid from /proc/PID/maps, into ranges[0..*count) (at most cap). 0 or -1. */
int bench_read_maps(pid_t pid, bench_range *ranges, size_t cap, size_t *count);
/* The number of mappings of pid (lines of its maps), or 0 when unread. */
size_t bench_mappings(pid_t pid);

/* Batched pagemap: 512 KiB preads over every region. Returns the present pages when count is
 * nonzero (0 otherwise: the timed floor only reads), -1 on error. */
int64_t floor_pagemap(pid_t pid, int count);

/* floor_pagemap on two threads: a second thread reads the upper half of each region of 64K
 * pages or more while this one reads the lower halves and the small regions (the thread is
 * started and joined inside the call, as memdiff's lanes are inside a snapshot). 0, or -1. */
int64_t floor_pagemap_two_threads(pid_t pid);

/* PAGEMAP_SCAN for present or swapped pages over every region; returns the present pages (-1
 * on error, -2 when the kernel has no PAGEMAP_SCAN). */
int64_t floor_scan(pid_t pid);

/* The frames of pid's present pages, sorted, unique, as runs of consecutive frames: prepared
 * once, outside the timings, for floor_kpage_sorted. */
typedef struct bench_frame_runs {
    uint64_t *first; /* first frame of each run */
    uint64_t *count; /* frames in each run */
    size_t n;
    size_t frames;   /* total */
} bench_frame_runs;

/* shared_only: the frames pagemap does not call exclusively mapped (bit 56) alone, those whose
 * map count PSS needs. */
int bench_frame_runs_prepare(pid_t pid, int shared_only, bench_frame_runs *out);
void bench_frame_runs_free(bench_frame_runs *r);

/* Batched pagemap, then kpageflags and kpagecount read per run of consecutive frames (at most
 * 512 KiB per pread). The frame runs come from bench_frame_runs_prepare: the sort is not timed,
 * so this is the kernel's cost alone. Returns frames read, -1 on error. */
int64_t floor_kpage_sorted(pid_t pid, const bench_frame_runs *runs);

/* floor_kpage_sorted over n processes, runs[i] the frame runs of pids[i], kpageflags (unless
 * !with_flags) and kpagecount opened once: the floor of per-process PSS (and kernel page flags)
 * of a set of processes. A process that exited is skipped and counted in *gone. Returns frames
 * read, -1 on error. */
int64_t floor_kpage_sorted_set(const pid_t *pids, const bench_frame_runs *runs, size_t n,
                               int with_flags, size_t *gone);

/* Batched pagemap of n processes (an exited one skipped, counted in *gone): the part of a
 * system snapshot that reads each process. 0, -1 on error. */
int64_t floor_pagemap_set(const pid_t *pids, size_t n, size_t *gone);

/* kpagecount (and kpageflags with with_flags) over runs, once each: frames read, -1 on error. */
int64_t floor_kpage_runs(const bench_frame_runs *runs, int with_flags);

/* The union of n sets of frame runs, sorted, overlaps merged: the frames of several processes,
 * each once. 0 or -1. */
int bench_frame_runs_union(const bench_frame_runs *in, size_t n, bench_frame_runs *out);

/* /proc/kpageflags read once over every frame, 512 KiB a pread, up to the end (max_pfn): the
 * floor of a physical-memory table. Returns frames read, -1 on error. */
int64_t floor_kpageflags_all(void);

/* Batched pagemap, then one 8-byte pread of kpageflags and one of kpagecount per present page,
 * in page order (Android libmeminfo's way). Returns frames read, -1 on error. */
int64_t floor_kpage_each(pid_t pid);

/* The peer: /proc/PID/smaps read and parsed completely (every field of every region, as
 * psutil's memory_maps() and pmap -X do). Returns Rss summed in kB, -1 on error. */
int64_t peer_smaps(pid_t pid);

/* AnonHugePages summed over pid's smaps, in bytes. */
uint64_t bench_anon_huge(pid_t pid);

/* ---- snapshot storage (storage.c: the one part that knows memdiff's internals) ----------- */

struct memdiff_snapshot;

typedef struct bench_storage {
    uint64_t run_bytes; /* the page runs as stored (records and bitmaps), frame facts excluded */
    uint64_t aux_bytes; /* per-page frame numbers, kernel flags, map counts */
    uint64_t runs;      /* runs of pages with identical attributes */
} bench_storage;

void bench_storage_of(const struct memdiff_snapshot *s, bench_storage *out);

#endif /* MEMDIFF_BENCH_H */
