/*
 * cli.h - the memdiff command-line tool's own declarations, shared by its files. The tool is
 * built on the public API (memdiff.h) only, like any program a user writes.
 */
#ifndef MEMDIFF_CLI_H
#define MEMDIFF_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "memdiff.h"

/* Exit statuses (docs/cli.md). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_MATCH 1 /* a --fail-on condition held */
#define CLI_EXIT_ERROR 2 /* usage error, or an operation failed */

/* ---- messages (main.c) ------------------------------------------------------------------ */

/* "memdiff CMD: message" (escaped) and a pointer to --help on stderr; returns CLI_EXIT_ERROR. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* "memdiff CMD: what: <cli_detail(status)>" on stderr (the detail comes
 * escaped from the library); returns CLI_EXIT_ERROR. */
int cli_error(const char *cmd, int status, const char *what);

/* memdiff_last_error() without the library function's name in front, or the status text when
 * there is no detail: the words an error message of the tool ends with. */
const char *cli_detail(int status);

/* text as memdiff_escape_text() writes it (docs/cli.md, "Text output"), to out: every host name,
 * label, path and note that came from a target or a file goes through here. */
void cli_put_text(FILE *out, const char *text);

/* Prints the help of a command ("snap", "diff", ...; NULL: the tool's) to out. 0, or -1 when
 * there is no such command. */
int cli_help(const char *cmd, FILE *out);

/* ---- options (options.c) ---------------------------------------------------------------- */

typedef struct cli_opt {
    const char *name; /* long name without "--" */
    char short_name;  /* 0 when none */
    int has_arg;
    int id;
} cli_opt;

#define CLI_OPT_HELP (-1)

/* Parses argv[1..argc) of a command: options from the table (opts ends with a zeroed entry;
 * --help is always known and reported as CLI_OPT_HELP), "--opt=value", "--opt value", "-o value",
 * "-ovalue", "--" to end options; other words are positional ("-" alone is one). on_opt gets each
 * option in order; it returns 0 or an exit status. Returns 0, CLI_EXIT_ERROR after printing a
 * usage error, or what on_opt returned. */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts,
              int (*on_opt)(void *ctx, int id, const char *value), void *ctx, const char **pos,
              int max_pos, int *npos);

/* A process id: a decimal number in [1, INT_MAX]. 0 or -1. */
int cli_parse_pid(const char *s, int *pid);

/* "fast", "standard", "deep". 0 or -1. */
int cli_parse_depth(const char *s, memdiff_depth *depth);

/* A duration: "500ms", "2s", "1.5s", "1m", a bare number is seconds; > 0 and at most a day.
 * 0 or -1. */
int cli_parse_duration(const char *s, uint64_t *ns);

/* A byte count: "512", "4K", "1.5M", "2G", "1T" (binary: K = 1024; "KB", "KiB" alike), with an
 * optional sign. 0 or -1. */
int cli_parse_size(const char *s, int64_t *bytes);

/* A count: a decimal number in [1, INT_MAX]. 0 or -1. */
int cli_parse_count(const char *s, int *n);

/* ---- --fail-on conditions (options.c) --------------------------------------------------- */

/* "[SCOPE.]MEASURE OP SIZE": SCOPE a category name or "total" (the default), MEASURE one of
 * new, freed, net, net-private, private, shared, replaced; OP one of > >= < <= == != (= is ==);
 * e.g. "net>1M", "heap.net>0", "private.new>=512K". Evaluated with memdiff_check(). */
typedef struct cli_cond {
    const char *text;
    memdiff_category category; /* MEMDIFF_CAT_ALL for the total */
    memdiff_measure measure;
    memdiff_cmp cmp;
    int64_t bound;
} cli_cond;

/* A category by name (s[0..len)), or "total" as MEMDIFF_CAT_ALL. 0 or -1. */
int cli_lookup_category(const char *s, size_t len, memdiff_category *out);

/* Parses text into c; on failure writes why into err and returns -1. */
int cli_parse_cond(const char *text, cli_cond *c, char *err, size_t errlen);

/* The parts every condition has, "LHS OP SIZE": *lhs the length of LHS (spaces trimmed), the
 * comparison and the size. 0, or -1 with why in err. */
int cli_split_cond(const char *text, size_t *lhs, memdiff_cmp *cmp, int64_t *bound, char *err,
                   size_t errlen);


/* Checks every condition against the diff and reports the ones that hold on stderr
 * ("memdiff diff: --fail-on heap.net>1M holds: heap net = +8,392,704 bytes").
 * Returns CLI_EXIT_MATCH when any holds, else CLI_EXIT_OK. */
int cli_check_conds(const char *cmd, const cli_cond *conds, int n, const memdiff_diff *diff);

/* ---- formatting (options.c) ------------------------------------------------------------- */

/* v with thousands separators ("4,902,912"); sign shown when with_sign. buf of 32 bytes. */
const char *cli_fmt_int(char *buf, int64_t v, int with_sign);
const char *cli_fmt_uint(char *buf, uint64_t v);

/* ---- how reports look: --sort, --top, --category, --human, --color, --width (view.c) ----- */

enum {
    CLI_OPT_SORT = 100, CLI_OPT_TOP, CLI_OPT_CATEGORY, CLI_OPT_HUMAN, CLI_OPT_COLOR,
    CLI_OPT_WIDTH
};

/* The option table entries of those options, for a command's table. */
#define CLI_VIEW_OPTS                                                                           \
    {"sort", 0, 1, CLI_OPT_SORT}, {"top", 0, 1, CLI_OPT_TOP},                                 \
        {"category", 0, 1, CLI_OPT_CATEGORY}, {"human", 'H', 0, CLI_OPT_HUMAN},               \
        {"color", 0, 1, CLI_OPT_COLOR}, {"width", 'w', 1, CLI_OPT_WIDTH}

typedef struct cli_view {
    memdiff_report_options report; /* width 100 unless --width */
    int color;                     /* -1 auto (the default), 0 never, 1 always */
    int system_sort;               /* --sort pid, rss, pss, uss or swap (a memdiff_system_sort,
                                      for system snapshots); -1 when none of them was given */
} cli_view;

void cli_view_init(cli_view *v);

/* Takes option id (one of CLI_OPT_SORT...) with its value into v: 0, or CLI_EXIT_ERROR after a
 * usage error of cmd; 1 when id is none of them. */
int cli_view_opt(cli_view *v, const char *cmd, int id, const char *value);

/* The report options for stdout: colour when asked, or in auto when stdout is a terminal and
 * NO_COLOR is unset or empty. */
memdiff_report_options cli_view_report(const cli_view *v);

/* The same for a report written to out (run's summary goes to stderr). */
memdiff_report_options cli_view_report_for(const cli_view *v, FILE *out);

/* The options of a system report for stdout: the flags, width and top of cli_view_report(),
 * the order of --sort (by pid unless a system sort was given). */
memdiff_system_report_options cli_view_system_report(const cli_view *v);

/* A usage error when --sort named a system sort (pid, rss...) for a report of a snapshot or a
 * diff of snapshots, else 0. */
int cli_view_no_system_sort(const cli_view *v, const char *cmd);

/* ---- processes: pids, self, --name (select.c) ------------------------------------------- */

/* What names the processes of a command: its words (pids, "self") and --name / --exact. */
typedef struct cli_select {
    const char *name;  /* --name REGEX, or NULL */
    const char *exact; /* --exact NAME, or NULL */
} cli_select;

enum { CLI_OPT_NAME = 120, CLI_OPT_EXACT };

#define CLI_SELECT_OPTS {"name", 0, 1, CLI_OPT_NAME}, {"exact", 0, 1, CLI_OPT_EXACT}

/* Takes --name or --exact into s: 0; 1 when id is neither. */
int cli_select_opt(cli_select *s, int id, const char *value);

/* The processes words[0..nwords) and s name, in the order given (--name's and --exact's in pid
 * order), each
 * once, into a new array *pids (free()) of *n. A word is a pid or "self" (this memdiff process,
 * refused with a message unless allow_self). One is the most when !many. 0, or CLI_EXIT_ERROR
 * after a message on stderr (nothing matches, several where one is needed, a pid with no
 * process, a bad regex). */
int cli_select_pids(const char *cmd, const cli_select *s, const char *const *words, int nwords,
                    int many, int allow_self, int **pids, int *n);

/* Whether word names a process rather than a file for show: "self", or all digits and no file
 * of that name. */
int cli_word_is_process(const char *word);

/* ---- commands (commands.c, show.c) ------------------------------------------------------ */

/* A snapshot of pid at depth (memdiff_options.flags: flags) into *out: 0, or CLI_EXIT_ERROR
 * after "memdiff CMD: cannot snapshot pid N: why" on stderr. */
int cli_take(const char *cmd, int pid, memdiff_depth depth, unsigned flags,
             memdiff_snapshot **out);

int cli_cmd_snap(int argc, char **argv);
int cli_cmd_diff(int argc, char **argv);
int cli_cmd_watch(int argc, char **argv);
int cli_cmd_show(int argc, char **argv);
int cli_cmd_wss(int argc, char **argv); /* wss.c */
int cli_cmd_record(int argc, char **argv); /* record.c */
int cli_cmd_run(int argc, char **argv);    /* run.c */
int cli_cmd_report(int argc, char **argv); /* report.c */
int cli_cmd_system(int argc, char **argv); /* system.c */

/* ---- system files (system.c) ------------------------------------------------------------ */

/* Whether path is a system snapshot file (its magic): 1, else 0 (also when unreadable: the
 * loader of snapshot files then says why). */
int cli_is_system_file(const char *path);

/* Standard input as a loader reads it: whole, the bytes cli_is_system_file("-") read to tell its
 * kind included. Give it back with cli_stdin_done. NULL when no stream can be made. */
FILE *cli_stdin(void);
void cli_stdin_done(FILE *f);

/* A snapshot file, path "-" standard input (cli_stdin): a status, *out set on success
 * (commands.c). */
int cli_load_snapshot(const char *path, memdiff_snapshot **out);

/* memdiff show of a system file: its report, as view says. An exit status. */
int cli_system_show(const char *path, const cli_view *view, int json, int no_header);

/* memdiff diff of two system files: their diff's report and the --fail-on texts evaluated
 * (docs/cli.md, "memdiff system"). An exit status. */
int cli_system_diff(const char *path_a, const char *path_b, const cli_view *view, int json,
                    int force, int no_header, const char *const *fail_on, int nfail);

#endif
