/*
 * run.c - `memdiff run -- COMMAND`: runs a command under the recorder (recorder.c) and, when it
 * exits, prints on stderr what its memory was made of at the peak and just before exit and what
 * changed between them. The command's own output is left alone; the exit status is its own.
 */
#define _GNU_SOURCE /* open_memstream */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder.h"

#define RUN_MAX_WORDS 1

typedef struct run_args {
    rec_config rec;
    cli_view view;
    int have_sort, have_top;
} run_args;

static int on_run_opt(void *ctx, int id, const char *value)
{
    run_args *a = ctx;
    int rc = rec_config_opt(&a->rec, id, value);
    if (rc != 1)
        return rc;
    a->have_sort |= id == CLI_OPT_SORT;
    a->have_top |= id == CLI_OPT_TOP;
    rc = cli_view_opt(&a->view, "run", id, value);
    return rc == 1 ? cli_usage_error("run", "unexpected option") : rc;
}

static double secs_at(const rec_result *res, const memdiff_snapshot *s)
{
    memdiff_snapshot_info i;
    memdiff_snapshot_get_info(s, &i);
    return (double)(i.time_ns - res->start_ns) / 1e9;
}

static uint64_t resident(const memdiff_snapshot *s)
{
    memdiff_snapshot_info i;
    memdiff_snapshot_get_info(s, &i);
    return i.resident_bytes;
}

static void text_summary(const run_args *a, const rec_result *res, char **command)
{
    memdiff_report_options o = cli_view_report_for(&a->view, stderr);
    o.flags |= MEMDIFF_REPORT_NO_HEADER;
    char how[64], n1[32], n2[32];
    fputs("==== memdiff run: '", stderr);
    cli_put_text(stderr, command[0]);
    fprintf(stderr, "' (pid %d) %s after %.3f s\n", res->pid,
            rec_how_text(res, how, sizeof how), (double)(res->end_ns - res->start_ns) / 1e9);
    fprintf(stderr, "==== peak resident (VmHWM): %s bytes; %zu polls every %.0f ms, %zu "
                    "snapshots, %zu marks\n",
            cli_fmt_uint(n1, res->last_totals.vm_hwm), res->samples,
            (double)a->rec.interval_ns / 1e6, res->snapshots, res->marks);
    if (!res->peak) {
        fputs("==== no snapshot was recorded\n", stderr);
        return;
    }
    fprintf(stderr, "\n==== at the peak: the snapshot with the most resident, +%.3f s, "
                    "resident %s bytes\n",
            secs_at(res, res->peak), cli_fmt_uint(n1, resident(res->peak)));
    memdiff_snapshot_report_text(res->peak, stderr, &o);
    if (res->exit_stopped)
        fprintf(stderr, "\n==== just before exit: at the exit stop, +%.3f s, resident %s "
                        "bytes\n",
                secs_at(res, res->last), cli_fmt_uint(n2, resident(res->last)));
    else
        fprintf(stderr, "\n==== before exit: the last recorded snapshot, +%.3f s, resident %s "
                        "bytes (no exit stop: %s)\n",
                secs_at(res, res->last), cli_fmt_uint(n2, resident(res->last)),
                res->no_stop_why ? res->no_stop_why : "the process was not stopped at exit");
    if (res->last == res->peak) {
        fputs("the same snapshot as at the peak\n", stderr);
        return;
    }
    memdiff_snapshot_report_text(res->last, stderr, &o);
    memdiff_diff *d = NULL;
    int rc = memdiff_compare(res->peak, res->last, 0, &d);
    fputs("\n==== from the peak to exit\n", stderr);
    if (rc)
        fprintf(stderr, "cannot compare: %s\n", cli_detail(rc));
    else
        memdiff_report_text(d, stderr, &o);
    memdiff_diff_free(d);
}

/* A library JSON writer's object as one line without its newline, into out. */
static int put_json(FILE *out, int (*write)(const void *, FILE *, const memdiff_report_options *),
                    const void *what, const memdiff_report_options *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return -1;
    int rc = write(what, m, o);
    fclose(m);
    while (len && (buf[len - 1] == '\n'))
        len--;
    if (rc == 0)
        fwrite(buf, 1, len, out);
    else
        fputs("null", out);
    free(buf);
    return rc;
}

static int snap_json(const void *s, FILE *f, const memdiff_report_options *o)
{
    return memdiff_snapshot_report_json(s, f, o);
}

static int diff_json(const void *d, FILE *f, const memdiff_report_options *o)
{
    return memdiff_report_json(d, f, o);
}

static void json_summary(const run_args *a, const rec_result *res)
{
    memdiff_report_options o = a->view.report;
    o.flags = (o.flags & ~(MEMDIFF_REPORT_COLOR | MEMDIFF_REPORT_HUMAN)) | MEMDIFF_REPORT_LINE;
    rec_json_head(stderr, "run", res);
    fprintf(stderr, ",\"exit_stop\":%s,\"peak\":", res->exit_stopped ? "true" : "false");
    if (res->peak)
        put_json(stderr, snap_json, res->peak, &o);
    else
        fputs("null", stderr);
    fputs(",\"exit_snapshot\":", stderr);
    if (res->last)
        put_json(stderr, snap_json, res->last, &o);
    else
        fputs("null", stderr);
    fputs(",\"growth\":", stderr);
    memdiff_diff *d = NULL;
    if (res->peak && res->last && memdiff_compare(res->peak, res->last, 0, &d) == 0)
        put_json(stderr, diff_json, d, &o);
    else
        fputs("null", stderr);
    memdiff_diff_free(d);
    fputs("}\n", stderr);
}

int cli_cmd_run(int argc, char **argv)
{
    static const cli_opt opts[] = {REC_OPTS, {"json", 0, 0, REC_OPT_JSON}, CLI_VIEW_OPTS,
                                   {NULL, 0, 0, 0}};
    run_args a;
    memset(&a, 0, sizeof a);
    rec_config_init(&a.rec, "run");
    a.rec.forward_stop = 1;
    cli_view_init(&a.view);
    int split = rec_split_command(argc, argv);
    const char *pos[RUN_MAX_WORDS];
    int npos = 0;
    int rc = cli_parse("run", split, argv, opts, on_run_opt, &a, pos, 0, &npos);
    if (rc)
        return rc;
    if (a.rec.help) {
        cli_help("run", stdout);
        return CLI_EXIT_OK;
    }
    if (split >= argc - 1)
        return cli_usage_error("run", "no command (memdiff run [options] -- COMMAND [ARGS])");
    if ((rc = cli_view_no_system_sort(&a.view, "run")))
        return rc;
    if (!a.have_sort)
        a.view.report.sort = MEMDIFF_SORT_SIZE;
    if (!a.have_top)
        a.view.report.top = 10;
    char **command = argv + split + 1;
    rec_result res;
    if ((rc = rec_record(&a.rec, 0, command, &res)) != 0)
        return rc;
    if (a.rec.json)
        json_summary(&a, &res);
    else if (!a.rec.quiet)
        text_summary(&a, &res, command);
    rec_result_free(&res);
    /* The command's status, as a shell gives it. */
    if (res.how == MEMDIFF_EXIT_SIGNAL)
        return 128 + res.code;
    return res.how == MEMDIFF_EXIT_STATUS ? res.code : CLI_EXIT_ERROR;
}
