/*
 * commands.c - memdiff snap, diff and watch.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _WIN32
#include <windows.h>
#endif

#include "cli.h"

#define MAX_CONDS 32

/* ---- snap ------------------------------------------------------------------------------- */

enum { OPT_OUTPUT = 1, OPT_DEPTH, OPT_QUIET, OPT_VERBOSE, OPT_JSON, OPT_FORCE, OPT_FAIL_ON,
       OPT_NO_HEADER, OPT_INTERVAL, OPT_COUNT, OPT_BASELINE, OPT_BRIEF, OPT_PSS };

/* Options of snap, diff and watch, parsed into one struct: each command's table says which of
 * them it knows. */
typedef struct args {
    const char *cmd;
    int help;
    const char *output;
    memdiff_depth depth;
    int quiet, verbose, json, force, no_header, brief;
    unsigned snapshot_flags; /* --pss: MEMDIFF_SNAPSHOT_SMAPS_PSS */
    cli_cond conds[MAX_CONDS];
    int nconds;
    const char *fail_on[MAX_CONDS]; /* diff: the texts, parsed once the files' kind is known */
    int nfail_on;
    uint64_t interval_ns;
    int count;
    int baseline_first;
    uint64_t first_ns; /* watch: when the first snapshot began */
    cli_view view;
    cli_select sel;
} args;

static int on_opt(void *ctx, int id, const char *v)
{
    args *a = ctx;
    char err[200];
    int rc = cli_view_opt(&a->view, a->cmd, id, v);
    if (rc != 1)
        return rc;
    if (cli_select_opt(&a->sel, id, v) == 0)
        return 0;
    switch (id) {
    case CLI_OPT_HELP:
        a->help = 1;
        return 0;
    case OPT_OUTPUT:
        a->output = v;
        return 0;
    case OPT_DEPTH:
        if (cli_parse_depth(v, &a->depth))
            return cli_usage_error(a->cmd, "bad depth '%s' (fast, standard or deep)", v);
        return 0;
    case OPT_QUIET:
        a->quiet = 1;
        return 0;
    case OPT_VERBOSE:
        a->verbose = 1;
        return 0;
    case OPT_JSON:
        a->json = 1;
        return 0;
    case OPT_FORCE:
        a->force = 1;
        return 0;
    case OPT_NO_HEADER:
        a->no_header = 1;
        return 0;
    case OPT_PSS:
        a->snapshot_flags |= MEMDIFF_SNAPSHOT_SMAPS_PSS;
        return 0;
    case OPT_BRIEF:
        a->brief = 1;
        return 0;
    case OPT_FAIL_ON:
        if (a->nconds == MAX_CONDS || a->nfail_on == MAX_CONDS)
            return cli_usage_error(a->cmd, "at most %d --fail-on conditions", MAX_CONDS);
        if (strcmp(a->cmd, "diff") == 0) {
            /* Snapshot files and system files measure different things. */
            a->fail_on[a->nfail_on++] = v;
            return 0;
        }
        if (cli_parse_cond(v, &a->conds[a->nconds], err, sizeof err))
            return cli_usage_error(a->cmd, "bad --fail-on '%s': %s", v, err);
        a->nconds++;
        return 0;
    case OPT_INTERVAL:
        if (cli_parse_duration(v, &a->interval_ns))
            return cli_usage_error(a->cmd, "bad interval '%s' (e.g. 500ms, 2s, 1.5s, 1m; from "
                                           "1ms to 1 day)", v);
        return 0;
    case OPT_COUNT:
        if (cli_parse_count(v, &a->count))
            return cli_usage_error(a->cmd, "bad count '%s' (a number from 1)", v);
        return 0;
    case OPT_BASELINE:
        if (strcmp(v, "first") != 0 && strcmp(v, "previous") != 0)
            return cli_usage_error(a->cmd, "bad baseline '%s' (first or previous)", v);
        a->baseline_first = strcmp(v, "first") == 0;
        return 0;
    }
    return cli_usage_error(a->cmd, "internal error: option %d", id);
}

/* Parses a command's arguments, min_pos to max_pos words into pos (*npos); returns -1 when the
 * command should go on, else an exit status (help printed: 0; usage error: 2). */
static int parse_args(args *a, const char *cmd, int argc, char **argv, const cli_opt *opts,
                      const char **pos, int min_pos, int max_pos, int *npos,
                      const char *pos_names)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->depth = MEMDIFF_DEPTH_STANDARD;
    cli_view_init(&a->view);
    *npos = 0;
    int rc = cli_parse(cmd, argc, argv, opts, on_opt, a, pos, max_pos, npos);
    if (rc)
        return rc;
    if (a->help) {
        cli_help(cmd, stdout);
        return CLI_EXIT_OK;
    }
    if (*npos < min_pos || *npos > max_pos)
        return cli_usage_error(cmd, "expected %s", pos_names);
    return -1;
}

/* Words a command takes as processes: at most this many (--name has no limit). */
#define MAX_WORDS 64

int cli_take(const char *cmd, int pid, memdiff_depth depth, unsigned flags,
             memdiff_snapshot **out)
{
    memdiff_options o;
    memdiff_options_init(&o);
    o.pid = pid;
    o.depth = depth;
    o.flags = flags;
    int rc = memdiff_snapshot_take(&o, out);
    if (rc) {
        char what[64];
        snprintf(what, sizeof what, "cannot snapshot pid %d", pid);
        return cli_error(cmd, rc, what);
    }
    return 0;
}

/* "-o PATH: is a directory, not a regular file": the library's detail names the path first
 * where it is about the path itself, else it names the file it was creating or renaming. */
static int save_error(int status, const char *path)
{
    if (!path)
        return cli_error("snap", status, "cannot write the snapshot to standard output");
    const char *detail = cli_detail(status);
    size_t n = strlen(path);
    if (strncmp(detail, path, n) == 0 && strncmp(detail + n, ": ", 2) == 0)
        detail += n + 2;
    fprintf(stderr, "memdiff snap: -o %s: %s\n", path, detail);
    if (status == MEMDIFF_EINVAL && strstr(detail, "not a regular file"))
        fprintf(stderr, "memdiff snap: -o writes only regular files (never over or through a "
                        "symbolic link); -o - writes to standard output\n");
    return CLI_EXIT_ERROR;
}

/* -o's path for pid: "%p" replaced by the pid, "%%" by "%"; -1 when it does not fit. */
static int output_path(const char *tmpl, int pid, char *buf, size_t size)
{
    size_t used = 0;
    for (const char *p = tmpl; *p; p++) {
        int n;
        if (p[0] == '%' && p[1] == 'p') {
            n = snprintf(buf + used, size - used, "%d", pid);
            p++;
        } else {
            n = snprintf(buf + used, size - used, "%c", p[0]);
            p += p[0] == '%' && p[1] == '%';
        }
        if (n < 0 || (size_t)n >= size - used)
            return -1;
        used += (size_t)n;
    }
    return 0;
}

static int snap_one(const args *a, int pid, const char *output)
{
    memdiff_snapshot *s = NULL;
    int rc = cli_take("snap", pid, a->depth, a->snapshot_flags, &s);
    if (rc)
        return rc;
    int to_stdout = strcmp(output, "-") == 0;
    rc = to_stdout ? memdiff_snapshot_save(s, stdout) : memdiff_snapshot_save_file(s, output);
    if (rc) {
        memdiff_snapshot_free(s);
        return save_error(rc, to_stdout ? NULL : output);
    }
    if (a->json) {
        /* The summary of what was written: the snapshot's header and figures, no blocks. */
        memdiff_report_options ro = MEMDIFF_REPORT_OPTIONS_INIT;
        ro.flags = MEMDIFF_REPORT_NO_BLOCKS;
        rc = memdiff_snapshot_report_json(s, stdout, &ro);
        memdiff_snapshot_free(s);
        return rc ? cli_error("snap", rc, "cannot write the summary") : CLI_EXIT_OK;
    }
    if (!a->quiet) {
        memdiff_snapshot_info i;
        memdiff_snapshot_get_info(s, &i);
        FILE *msg = to_stdout ? stderr : stdout;
        char b1[32];
        fprintf(msg, "memdiff snap: pid %d at %s depth: %zu regions, %zu runs, %s bytes resident "
                "-> ", i.pid, memdiff_depth_name(i.depth), i.region_count, i.run_count,
                cli_fmt_uint(b1, i.resident_bytes));
        cli_put_text(msg, to_stdout ? "standard output" : output);
        fputc('\n', msg);
        if (i.degraded) {
            fprintf(msg, "memdiff snap: %s depth requested, %s obtained: ",
                    memdiff_depth_name(i.depth_requested), memdiff_depth_name(i.depth));
            cli_put_text(msg, i.degraded);
            fputc('\n', msg);
        }
    }
    memdiff_snapshot_free(s);
    return CLI_EXIT_OK;
}

int cli_cmd_snap(int argc, char **argv)
{
    static const cli_opt opts[] = {{"output", 'o', 1, OPT_OUTPUT},
                                   {"depth", 'd', 1, OPT_DEPTH},
                                   {"quiet", 'q', 0, OPT_QUIET},
                                   {"json", 0, 0, OPT_JSON},
                                   {"pss", 0, 0, OPT_PSS},
                                   CLI_SELECT_OPTS,
                                   {NULL, 0, 0, 0}};
    args a;
    const char *pos[MAX_WORDS];
    int npos;
    int rc = parse_args(&a, "snap", argc, argv, opts, pos, 0, MAX_WORDS, &npos,
                        "processes: pids, self, or --name REGEX");
    if (rc >= 0)
        return rc;
    if (!a.output)
        return cli_usage_error("snap", "no output file (-o FILE)");
    if (!a.output[0])
        return cli_usage_error("snap", "-o: empty path (give a file, or - for standard output)");
    if (a.json && strcmp(a.output, "-") == 0)
        return cli_usage_error("snap", "--json: standard output holds the snapshot (-o -); "
                                       "write it to a file, or show it with memdiff show --json");
    int *pids, n;
    if ((rc = cli_select_pids("snap", &a.sel, pos, npos, 1, 1, &pids, &n)))
        return rc;
    /* Several processes, several files: one FILE would hold only the last. */
    if (n > 1 && (strcmp(a.output, "-") == 0 || !strstr(a.output, "%p"))) {
        fprintf(stderr, "memdiff snap: %d processes match, and -o %s holds one snapshot; put %%p "
                        "in FILE for each pid (-o 'snap-%%p.mds')\n", n, a.output);
        free(pids);
        return CLI_EXIT_ERROR;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        char path[4096];
        if (output_path(a.output, pids[i], path, sizeof path)) {
            rc = cli_usage_error("snap", "-o: path too long");
            break;
        }
        rc = snap_one(&a, pids[i], path);
    }
    free(pids);
    return rc;
}

/* ---- diff ------------------------------------------------------------------------------- */

/* One line per tick for scripts (watch --brief, docs/cli.md): name-value pairs of plain
 * numbers, no separators: the after snapshot's absolute sizes, then the diff's, then the net
 * change of each category that changed, named as --fail-on names it ("heap.net": a category
 * "private" must not read as the private size). */
static void brief_line(const memdiff_diff *d, unsigned tick, uint64_t first_ns, FILE *out)
{
    memdiff_diff_info di;
    memdiff_totals t;
    memdiff_diff_get_info(d, &di);
    memdiff_diff_totals(d, MEMDIFF_CAT_ALL, &t);
    const memdiff_snapshot_info *a = &di.after;
    fprintf(out, "tick %u elapsed %.3f resident %llu private %llu", tick,
            (double)(a->time_ns - first_ns) / 1e9, (unsigned long long)a->resident_bytes,
            (unsigned long long)a->private_bytes);
    if (a->sources & MEMDIFF_SRC_PSS)
        fprintf(out, " pss %llu", (unsigned long long)a->pss_bytes);
    fprintf(out, " net %lld new %llu freed %llu", (long long)t.net_bytes,
            (unsigned long long)t.new_bytes, (unsigned long long)t.freed_bytes);
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        if (c == MEMDIFF_CAT_OWN || memdiff_diff_totals(d, (memdiff_category)c, &t) ||
            (t.new_bytes == 0 && t.freed_bytes == 0))
            continue;
        fprintf(out, " %s.net %lld", memdiff_category_name((memdiff_category)c),
                (long long)t.net_bytes);
    }
    fputc('\n', out);
}

/* Compares and reports: diff's report, or (tick > 0) watch's tick. */
static int compare_and_report(const args *a, const memdiff_snapshot *before,
                              const memdiff_snapshot *after, unsigned tick)
{
    unsigned flags = (a->verbose ? MEMDIFF_COMPARE_VERBOSE : 0) |
                     (a->force ? MEMDIFF_COMPARE_FORCE : 0);
    memdiff_diff *d = NULL;
    int rc = memdiff_compare(before, after, flags, &d);
    if (rc == MEMDIFF_EMISMATCH && !a->force && strcmp(a->cmd, "diff") == 0) {
        /* The library's detail says what differs; how to go on anyway is the tool's to say. */
        fprintf(stderr, "memdiff %s: cannot compare: %s; use --force to compare them anyway\n",
                a->cmd, cli_detail(rc));
        return CLI_EXIT_ERROR;
    }
    if (rc)
        return cli_error(a->cmd, rc, "cannot compare");
    memdiff_report_options ro = cli_view_report(&a->view);
    ro.flags |= a->no_header ? MEMDIFF_REPORT_NO_HEADER : 0;
    if (a->json && tick) /* JSON Lines: one record a tick, its totals without blocks */
        ro.flags |= MEMDIFF_REPORT_LINE | MEMDIFF_REPORT_NO_BLOCKS;
    if (a->brief)
        brief_line(d, tick, a->first_ns, stdout);
    else if (a->json && tick)
        rc = memdiff_watch_report_json(d, after, tick, stdout, &ro);
    else if (a->json)
        rc = memdiff_report_json(d, stdout, &ro);
    else
        rc = memdiff_report_text(d, stdout, &ro);
    if (rc) {
        memdiff_diff_free(d);
        return cli_error(a->cmd, rc, "cannot write the report");
    }
    rc = cli_check_conds(a->cmd, a->conds, a->nconds, d);
    memdiff_diff_free(d);
    return rc;
}

int cli_load_snapshot(const char *path, memdiff_snapshot **out)
{
    if (strcmp(path, "-") != 0)
        return memdiff_snapshot_load_file(path, out);
    FILE *in = cli_stdin();
    int rc = in ? memdiff_snapshot_load(in, out) : MEMDIFF_ENOMEM;
    cli_stdin_done(in);
    return rc;
}

static int load(const char *cmd, const char *path, memdiff_snapshot **out)
{
    int rc = cli_load_snapshot(path, out);
    if (rc) {
        char what[300];
        snprintf(what, sizeof what, "cannot load %s", strcmp(path, "-") ? "a snapshot" : "stdin");
        return cli_error(cmd, rc, what);
    }
    return 0;
}

/* A diff reads from before to after: with the files given the other way round, what was freed
 * reads as new. Still reported (comparing a later state back to an earlier one can be what the
 * user wants), but said on stderr. */
static void warn_reversed(const memdiff_snapshot *before, const memdiff_snapshot *after,
                          const char *name_b, const char *name_a)
{
    memdiff_snapshot_info b, a;
    memdiff_snapshot_get_info(before, &b);
    memdiff_snapshot_get_info(after, &a);
    if (!b.time_ns || !a.time_ns || a.time_ns >= b.time_ns)
        return;
    uint64_t ms = (b.time_ns - a.time_ns) / 1000000u;
    fputs("memdiff diff: warning: ", stderr);
    cli_put_text(stderr, strcmp(name_a, "-") ? name_a : "standard input");
    fprintf(stderr, " (after) was taken %llu.%03u s before ", (unsigned long long)(ms / 1000),
            (unsigned)(ms % 1000));
    cli_put_text(stderr, strcmp(name_b, "-") ? name_b : "standard input");
    fputs(" (before): the report reads backwards in time\n", stderr);
}

int cli_cmd_diff(int argc, char **argv)
{
    static const cli_opt opts[] = {{"verbose", 'v', 0, OPT_VERBOSE},
                                   {"json", 0, 0, OPT_JSON},
                                   {"force", 'f', 0, OPT_FORCE},
                                   {"fail-on", 0, 1, OPT_FAIL_ON},
                                   {"no-header", 0, 0, OPT_NO_HEADER},
                                   CLI_VIEW_OPTS,
                                   {NULL, 0, 0, 0}};
    args a;
    const char *pos[2];
    int npos;
    int rc = parse_args(&a, "diff", argc, argv, opts, pos, 2, 2, &npos, "two snapshot files");
    if (rc >= 0)
        return rc;
    if (strcmp(pos[0], "-") == 0 && strcmp(pos[1], "-") == 0)
        return cli_usage_error("diff", "standard input can hold only one of the snapshots");
    int sys_a = cli_is_system_file(pos[0]), sys_b = cli_is_system_file(pos[1]);
    if (sys_a != sys_b) {
        fprintf(stderr, "memdiff diff: ");
        cli_put_text(stderr, sys_a ? pos[0] : pos[1]);
        fprintf(stderr, " is a system snapshot (memdiff system -o), ");
        cli_put_text(stderr, sys_a ? pos[1] : pos[0]);
        fprintf(stderr, " is not: a diff compares two of one kind\n");
        return CLI_EXIT_ERROR;
    }
    if (sys_a) {
        if (a.verbose)
            return cli_usage_error("diff", "--verbose: system snapshots hold no pages");
        if (a.view.report.sort != MEMDIFF_SORT_ADDRESS || a.view.report.categories)
            return cli_usage_error("diff", "system snapshots sort by pid, rss, pss, uss or "
                                           "swap, and have no categories");
        return cli_system_diff(pos[0], pos[1], &a.view, a.json, a.force, a.no_header,
                               a.fail_on, a.nfail_on);
    }
    if ((rc = cli_view_no_system_sort(&a.view, "diff")))
        return rc;
    for (int i = 0; i < a.nfail_on; i++) {
        char err[200];
        if (cli_parse_cond(a.fail_on[i], &a.conds[a.nconds++], err, sizeof err))
            return cli_usage_error("diff", "bad --fail-on '%s': %s", a.fail_on[i], err);
    }
    memdiff_snapshot *before = NULL, *after = NULL;
    rc = load("diff", pos[0], &before);
    if (!rc)
        rc = load("diff", pos[1], &after);
    if (!rc)
        warn_reversed(before, after, pos[0], pos[1]);
    if (!rc)
        rc = compare_and_report(&a, before, after, 0);
    memdiff_snapshot_free(after);
    memdiff_snapshot_free(before);
    return rc;
}

/* ---- watch ------------------------------------------------------------------------------ */

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Sleeps ns or until interrupted; 0 when the full time passed. */
static int sleep_ns(uint64_t ns)
{
#ifdef _WIN32
    /* Sleep() does not return early for Ctrl-C: nap in slices and look at the flag. */
    for (uint64_t ms = ns / 1000000u; ms > 0 && !interrupted;) {
        DWORD nap = ms > 100 ? 100 : (DWORD)ms;
        Sleep(nap);
        ms -= nap;
    }
#else
    struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (!interrupted && nanosleep(&t, &t) != 0) {
        if (errno != EINTR)
            return -1;
    }
#endif
    return interrupted ? -1 : 0;
}

int cli_cmd_watch(int argc, char **argv)
{
    static const cli_opt opts[] = {{"interval", 'i', 1, OPT_INTERVAL},
                                   {"count", 'n', 1, OPT_COUNT},
                                   {"baseline", 'b', 1, OPT_BASELINE},
                                   {"depth", 'd', 1, OPT_DEPTH},
                                   {"verbose", 'v', 0, OPT_VERBOSE},
                                   {"fail-on", 0, 1, OPT_FAIL_ON},
                                   {"no-header", 0, 0, OPT_NO_HEADER},
                                   {"brief", 0, 0, OPT_BRIEF},
                                   {"json", 0, 0, OPT_JSON},
                                   {"pss", 0, 0, OPT_PSS},
                                   CLI_VIEW_OPTS,
                                   CLI_SELECT_OPTS,
                                   {NULL, 0, 0, 0}};
    args a;
    const char *pos[MAX_WORDS];
    int npos;
    int rc = parse_args(&a, "watch", argc, argv, opts, pos, 0, MAX_WORDS, &npos,
                        "a process: a pid or --name REGEX");
    if (rc >= 0)
        return rc;
    if (!a.interval_ns)
        return cli_usage_error("watch", "no interval (--interval T)");
    if (a.json && a.brief)
        return cli_usage_error("watch", "--json and --brief exclude each other");
    if ((rc = cli_view_no_system_sort(&a.view, "watch")))
        return rc;
    int *pids, npids;
    if ((rc = cli_select_pids("watch", &a.sel, pos, npos, 0, 0, &pids, &npids)))
        return rc;
    int pid = pids[0];
    free(pids);

    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
    memdiff_snapshot *base = NULL, *cur = NULL;
    if ((rc = cli_take("watch", pid, a.depth, a.snapshot_flags, &base)))
        return rc;
    memdiff_snapshot_info first;
    memdiff_snapshot_get_info(base, &first);
    a.first_ns = first.time_ns;
    for (int n = 1; rc == CLI_EXIT_OK && (a.count == 0 || n <= a.count); n++) {
        if (sleep_ns(a.interval_ns))
            break; /* Ctrl-C: a normal end of watching */
        if ((rc = cli_take("watch", pid, a.depth, a.snapshot_flags, &cur)))
            break;
        memdiff_snapshot_info now;
        memdiff_snapshot_get_info(cur, &now);
        char of[32] = "";
        if (a.count)
            snprintf(of, sizeof of, " of %d", a.count);
        double elapsed = (double)(now.time_ns - first.time_ns) / 1e9;
        if (!a.brief && !a.json) {
            char res[32], priv[32];
            /* Two lines: with a long pid, count and time one would pass 100 columns. */
            printf("%s==== memdiff watch: pid %d, diff %d%s, +%.3f s, against the %s snapshot\n"
                   "==== resident %s bytes (private %s)\n",
                   n > 1 ? "\n" : "", pid, n, of, elapsed,
                   a.baseline_first ? "first" : "previous", cli_fmt_uint(res, now.resident_bytes),
                   cli_fmt_uint(priv, now.private_bytes));
        }
        rc = compare_and_report(&a, base, cur, (unsigned)n);
        fflush(stdout);
        if (a.baseline_first) {
            memdiff_snapshot_free(cur);
        } else {
            memdiff_snapshot_free(base);
            base = cur;
        }
        cur = NULL;
    }
    memdiff_snapshot_free(base);
    return rc;
}
