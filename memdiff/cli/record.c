/*
 * record.c - `memdiff record`: a timeline file of one process's memory over time, attached to a
 * running pid or of a command started here (the recorder itself is recorder.c).
 */
#include <stdlib.h>
#include <string.h>

#include "recorder.h"

#define RECORD_MAX_WORDS 64

int rec_split_command(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0)
            return i;
    return argc;
}

typedef struct record_args {
    rec_config rec;
    cli_select sel;
} record_args;

static int on_record_opt(void *ctx, int id, const char *value)
{
    record_args *a = ctx;
    int rc = rec_config_opt(&a->rec, id, value);
    if (rc != 1)
        return rc;
    if (cli_select_opt(&a->sel, id, value) == 0)
        return 0;
    return cli_usage_error("record", "unexpected option");
}

const char *rec_how_text(const rec_result *res, char *buf, size_t size)
{
    switch (res->how) {
    case MEMDIFF_EXIT_STATUS:
        snprintf(buf, size, "exited with status %d", res->code);
        break;
    case MEMDIFF_EXIT_SIGNAL:
        snprintf(buf, size, "was killed by signal %d", res->code);
        break;
    case MEMDIFF_EXIT_VANISHED:
        snprintf(buf, size, "vanished");
        break;
    default:
        snprintf(buf, size, "still runs (recording stopped)");
        break;
    }
    return buf;
}

int cli_cmd_record(int argc, char **argv)
{
    static const cli_opt opts[] = {REC_OPTS, {"json", 0, 0, REC_OPT_JSON}, CLI_SELECT_OPTS,
                                   {NULL, 0, 0, 0}};
    record_args a;
    memset(&a, 0, sizeof a);
    rec_config_init(&a.rec, "record");
    int split = rec_split_command(argc, argv);
    const char *pos[RECORD_MAX_WORDS];
    int npos = 0;
    int rc = cli_parse("record", split, argv, opts, on_record_opt, &a, pos, RECORD_MAX_WORDS,
                       &npos);
    if (rc)
        return rc;
    if (a.rec.help) {
        cli_help("record", stdout);
        return CLI_EXIT_OK;
    }
    char **command = split < argc ? argv + split + 1 : NULL;
    if (command && !command[0])
        return cli_usage_error("record", "no command after --");
    if (!a.rec.output)
        return cli_usage_error("record", "no timeline file (-o FILE)");
    int pid = 0;
    if (command) {
        if (npos || a.sel.name || a.sel.exact)
            return cli_usage_error("record", "a process or a command, not both");
    } else {
        if (!npos && !a.sel.name && !a.sel.exact)
            return cli_usage_error("record", "a process (PID, --name, --exact) or -- COMMAND");
        int *pids, n;
        if ((rc = cli_select_pids("record", &a.sel, pos, npos, 0, 0, &pids, &n)))
            return rc;
        pid = pids[0];
        free(pids);
    }
    rec_result res;
    if ((rc = rec_record(&a.rec, pid, command, &res)) != 0)
        return rc;
    if (a.rec.json) {
        /* On stderr: a recorded command shares stdout, its output must stay its own. */
        rec_json_head(stderr, "record", &res);
        fputc(',', stderr);
        rec_json_string(stderr, "timeline", a.rec.output);
        fputc(',', stderr);
        rec_json_uint(stderr, "file_bytes", res.file_bytes);
        fputs("}\n", stderr);
    } else if (!a.rec.quiet) {
        char how[64], bytes[32];
        fprintf(stderr,
                "memdiff record: pid %d %s after %.3f s; %zu samples, %zu snapshots, %zu marks; "
                "%s bytes in ",
                res.pid, rec_how_text(&res, how, sizeof how),
                (double)(res.end_ns - res.start_ns) / 1e9, res.samples, res.snapshots,
                res.marks, cli_fmt_uint(bytes, res.file_bytes));
        cli_put_text(stderr, a.rec.output);
        fputc('\n', stderr);
    }
    rec_result_free(&res);
    return CLI_EXIT_OK;
}
