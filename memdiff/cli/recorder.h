/*
 * recorder.h - the recorder that `memdiff record` and `memdiff run` share (recorder.c): start a
 * command or attach to a pid, poll its totals at an interval, take snapshots when memory moved
 * (docs/cli.md "record"), write them to a timeline file, and keep the snapshots `run` reports.
 * POSIX only (fork, ptrace, signals).
 */
#ifndef MEMDIFF_CLI_RECORDER_H
#define MEMDIFF_CLI_RECORDER_H

#include "cli.h"

/* Options both commands take. */
enum {
    REC_OPT_OUTPUT = 200, REC_OPT_INTERVAL, REC_OPT_DEPTH, REC_OPT_PSS, REC_OPT_THRESHOLD,
    REC_OPT_NO_PTRACE, REC_OPT_QUIET, REC_OPT_JSON
};

/* The option table entries of those options but --json (run's only). */
#define REC_OPTS                                                                                \
    {"output", 'o', 1, REC_OPT_OUTPUT}, {"interval", 'i', 1, REC_OPT_INTERVAL},               \
        {"depth", 'd', 1, REC_OPT_DEPTH}, {"pss", 0, 0, REC_OPT_PSS},                         \
        {"threshold", 't', 1, REC_OPT_THRESHOLD}, {"no-ptrace", 0, 0, REC_OPT_NO_PTRACE},     \
        {"quiet", 'q', 0, REC_OPT_QUIET}

typedef struct rec_config {
    const char *cmd;      /* "record" or "run": the messages' prefix */
    const char *output;   /* timeline file, or NULL: none written */
    uint64_t interval_ns; /* between polls (default 100 ms) */
    memdiff_depth depth;
    unsigned snapshot_flags;  /* --pss: MEMDIFF_SNAPSHOT_SMAPS_PSS */
    int64_t threshold_bytes;  /* --threshold SIZE; 0: threshold_pct of the last snapshot */
    unsigned threshold_pct;   /* default 5, with a floor of REC_THRESHOLD_FLOOR */
    int no_ptrace;            /* --no-ptrace: no stop at exit */
    int forward_stop;         /* run: SIGTERM goes on to the command, SIGINT is ignored (the
                                 terminal sends it to the command too), as time(1) does */
    int quiet;
    int json; /* --json: the summary as one JSON line */
    int help; /* --help */
} rec_config;

#define REC_THRESHOLD_FLOOR ((int64_t)4 << 20)

void rec_config_init(rec_config *c, const char *cmd);

/* Takes option id with its value into c (--help and --json too): 0, CLI_EXIT_ERROR after a
 * usage error, 1 when id is none of the recorder's. */
int rec_config_opt(rec_config *c, int id, const char *value);

/* What a recording ended with, for run's summary. */
typedef struct rec_result {
    int pid;                  /* the process recorded */
    memdiff_exit_how how;     /* how the process ended (DETACHED: the recorder was stopped) */
    int code;                 /* exit status or signal */
    int exit_stopped;         /* 1: the last snapshot was taken at the exit stop (ptrace) */
    const char *no_stop_why;  /* else: why not (static text), NULL when not asked for */
    uint64_t start_ns, end_ns;
    memdiff_process_totals last_totals; /* the last sample (vm_hwm: the peak) */
    memdiff_snapshot *peak;   /* the recorded snapshot with the most resident, or NULL */
    memdiff_snapshot *last;   /* the last recorded snapshot (may be peak), or NULL */
    size_t samples, snapshots, marks;
    uint64_t file_bytes;
} rec_result;

/* Records pid (> 0: attach, not stopping it) or argv (a command started here) as c says.
 * Returns 0 with *res filled (free with rec_result_free), 127/126 when the command could not
 * be run, CLI_EXIT_ERROR after a message (writing failed: the file keeps every record before). */
int rec_record(const rec_config *c, int pid, char *const *argv, rec_result *res);

void rec_result_free(rec_result *res);

/* The index of the "--" that starts a command in argv[1..argc), or argc (record.c). */
int rec_split_command(int argc, char **argv);

/* "exited with status 7", "was killed by signal 9", "vanished", ... (record.c). */
const char *rec_how_text(const rec_result *res, char *buf, size_t size);

/* The fields run's and record's JSON summaries share, from "{" to the last shared member
 * ("version" .. "marks"; docs/json-report.md "Run summary"), written as the library writes its
 * documents: counts beyond 2^53 as strings, durations as seconds (recorder.c). */
void rec_json_head(FILE *out, const char *kind, const rec_result *res);

/* s as a JSON member "key":"..." (with "key_hex" when s is not UTF-8), escaped as the
 * library's writer does (docs/json-report.md "Conventions"); the library has no public entry
 * point for it (recorder.c). */
void rec_json_string(FILE *out, const char *key, const char *s);

/* "key":v, a number up to 2^53, else a string of digits (recorder.c). */
void rec_json_uint(FILE *out, const char *key, uint64_t v);

#endif
