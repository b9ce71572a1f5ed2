/*
 * show.c - memdiff show: a snapshot file, or live processes, as text or JSON: the library's
 * memdiff_snapshot_report_text and memdiff_snapshot_report_json, one report per process.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_JSON = 1, OPT_REGIONS, OPT_DEPTH, OPT_NO_HEADER, OPT_PSS };

typedef struct show_args {
    int help, json, regions, no_header;
    memdiff_depth depth;
    unsigned snapshot_flags; /* --pss: MEMDIFF_SNAPSHOT_SMAPS_PSS */
    cli_view view;
    cli_select sel;
} show_args;

static int on_opt(void *ctx, int id, const char *v)
{
    show_args *a = ctx;
    int rc = cli_view_opt(&a->view, "show", id, v);
    if (rc != 1)
        return rc;
    if (cli_select_opt(&a->sel, id, v) == 0)
        return 0;
    if (id == CLI_OPT_HELP)
        a->help = 1;
    else if (id == OPT_JSON)
        a->json = 1;
    else if (id == OPT_REGIONS)
        a->regions = 1;
    else if (id == OPT_NO_HEADER)
        a->no_header = 1;
    else if (id == OPT_PSS)
        a->snapshot_flags |= MEMDIFF_SNAPSHOT_SMAPS_PSS;
    else if (cli_parse_depth(v, &a->depth))
        return cli_usage_error("show", "bad depth '%s' (fast, standard or deep)", v);
    return 0;
}

static int show_one(const show_args *a, const memdiff_snapshot *s, int lines)
{
    memdiff_report_options ro = cli_view_report(&a->view);
    ro.flags |= (a->regions ? MEMDIFF_REPORT_REGIONS : 0) |
                (a->no_header ? MEMDIFF_REPORT_NO_HEADER : 0) | (lines ? MEMDIFF_REPORT_LINE : 0);
    /* Several processes in JSON: one document per line (JSON Lines). */
    int rc = a->json ? memdiff_snapshot_report_json(s, stdout, &ro)
                     : memdiff_snapshot_report_text(s, stdout, &ro);
    return rc ? cli_error("show", rc, "cannot write the report") : 0;
}

/* Live processes: every snapshot taken before anything is printed, so that an error (a process
 * that exits meanwhile) comes before any output. */
static int show_processes(const show_args *a, const char *const *words, int nwords)
{
    int *pids, n;
    int rc = cli_select_pids("show", &a->sel, words, nwords, 1, 1, &pids, &n);
    if (rc)
        return rc;
    memdiff_snapshot **snaps = calloc((size_t)n, sizeof *snaps);
    if (!snaps) {
        free(pids);
        fputs("memdiff show: out of memory\n", stderr);
        return CLI_EXIT_ERROR;
    }
    for (int i = 0; i < n && !rc; i++)
        rc = cli_take("show", pids[i], a->depth, a->snapshot_flags, &snaps[i]);
    for (int i = 0; i < n && !rc; i++) {
        if (i && !a->json)
            fputc('\n', stdout); /* a table per process, apart */
        rc = show_one(a, snaps[i], n > 1);
    }
    for (int i = 0; i < n; i++)
        memdiff_snapshot_free(snaps[i]);
    free(snaps);
    free(pids);
    return rc;
}

int cli_cmd_show(int argc, char **argv)
{
    static const cli_opt opts[] = {{"json", 0, 0, OPT_JSON},
                                   {"regions", 'r', 0, OPT_REGIONS},
                                   {"depth", 'd', 1, OPT_DEPTH},
                                   {"pss", 0, 0, OPT_PSS},
                                   {"no-header", 0, 0, OPT_NO_HEADER},
                                   CLI_VIEW_OPTS,
                                   CLI_SELECT_OPTS,
                                   {NULL, 0, 0, 0}};
    show_args a;
    memset(&a, 0, sizeof a);
    a.depth = MEMDIFF_DEPTH_STANDARD;
    cli_view_init(&a.view);
    const char *pos[64];
    int npos = 0;
    int rc = cli_parse("show", argc, argv, opts, on_opt, &a, pos, 64, &npos);
    if (rc)
        return rc;
    if (a.help) {
        cli_help("show", stdout);
        return CLI_EXIT_OK;
    }
    /* One word that is not a process (docs/cli.md, "Choosing processes") is a file. */
    int named = a.sel.name || a.sel.exact;
    if (npos == 1 && !named && cli_is_system_file(pos[0])) {
        if (a.regions || a.view.report.sort != MEMDIFF_SORT_ADDRESS || a.view.report.categories)
            return cli_usage_error("show", "a system snapshot has no regions or categories; its "
                                           "processes sort by pid, rss, pss, uss or swap");
        rc = cli_system_show(pos[0], &a.view, a.json, a.no_header);
        if (rc)
            return rc;
        goto flush;
    }
    if ((rc = cli_view_no_system_sort(&a.view, "show")))
        return rc;
    if (npos == 1 && !named && !cli_word_is_process(pos[0])) {
        memdiff_snapshot *s = NULL;
        rc = cli_load_snapshot(pos[0], &s);
        if (rc)
            return cli_error("show", rc, "cannot load the snapshot");
        rc = show_one(&a, s, 0);
        memdiff_snapshot_free(s);
    } else {
        if (npos == 0 && !named)
            return cli_usage_error("show", "expected a snapshot file or processes");
        for (int i = 0; i < npos; i++) {
            if (!cli_word_is_process(pos[i]))
                return cli_usage_error("show", "'%s' is neither a process nor the only word: "
                                               "show takes one file, or processes", pos[i]);
        }
        rc = show_processes(&a, pos, npos);
    }
    if (rc)
        return rc;
flush:
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "memdiff show: cannot write the output\n");
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}
