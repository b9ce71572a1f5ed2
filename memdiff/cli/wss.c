/*
 * wss.c - memdiff wss: the working-set size of a live process, the way Brendan Gregg's wss.pl
 * prints it (docs/cli.md, docs/reference-set.md): one line per sample with the estimated
 * measurement span, RSS, PSS and the referenced size, in MiB.
 */
#include <string.h>

#include "cli.h"

enum { OPT_INTERVAL = 1, OPT_COUNT, OPT_CUMULATIVE, OPT_PROFILE, OPT_TIMES, OPT_JSON };

typedef struct wss_args {
    int help;
    uint64_t interval_ns;
    int count;
    int times, json;
    memdiff_wss_options run; /* what memdiff_wss_run was given, for the JSON records */
    memdiff_wss_mode mode;
    int modes; /* how many of --cumulative, --profile were given */
} wss_args;

static int on_opt(void *ctx, int id, const char *v)
{
    wss_args *a = ctx;
    switch (id) {
    case CLI_OPT_HELP:
        a->help = 1;
        return 0;
    case OPT_INTERVAL:
        if (cli_parse_duration(v, &a->interval_ns))
            return cli_usage_error("wss", "bad interval '%s' (e.g. 1ms, 500ms, 2s; from 1ms to "
                                          "1 day)", v);
        return 0;
    case OPT_COUNT:
        if (cli_parse_count(v, &a->count))
            return cli_usage_error("wss", "bad count '%s' (a number from 1)", v);
        return 0;
    case OPT_CUMULATIVE:
    case OPT_PROFILE:
        a->mode = id == OPT_CUMULATIVE ? MEMDIFF_WSS_CUMULATIVE : MEMDIFF_WSS_PROFILE;
        a->modes++;
        return 0;
    case OPT_TIMES:
        a->times = 1;
        return 0;
    case OPT_JSON:
        a->json = 1;
        return 0;
    }
    return cli_usage_error("wss", "internal error: option %d", id);
}

static int print_sample(void *ctx, const memdiff_wss_sample *s)
{
    const wss_args *a = ctx;
    const double mib = 1024.0 * 1024.0;
    if (a->json) {
        memdiff_report_options ro = MEMDIFF_REPORT_OPTIONS_INIT;
        ro.flags = MEMDIFF_REPORT_LINE;
        return memdiff_wss_report_json(&a->run, s, stdout, &ro); /* it flushes */
    }
    if (a->times)
        printf("%-7.3f %-7.3f ", (double)s->slept_ns / 1e9, (double)s->duration_ns / 1e9);
    printf("%-7.3f %10.2f %10.2f %10.2f\n", (double)s->span_ns / 1e9, (double)s->rss_bytes / mib,
           (double)s->pss_bytes / mib, (double)s->referenced_bytes / mib);
    fflush(stdout);
    return 0;
}

int cli_cmd_wss(int argc, char **argv)
{
    static const cli_opt opts[] = {{"interval", 'i', 1, OPT_INTERVAL},
                                   {"count", 'n', 1, OPT_COUNT},
                                   {"cumulative", 'C', 0, OPT_CUMULATIVE},
                                   {"profile", 'P', 0, OPT_PROFILE},
                                   {"times", 't', 0, OPT_TIMES},
                                   {"json", 0, 0, OPT_JSON},
                                   {NULL, 0, 0, 0}};
    wss_args a;
    memset(&a, 0, sizeof a);
    const char *pos[1];
    int npos = 0;
    int rc = cli_parse("wss", argc, argv, opts, on_opt, &a, pos, 1, &npos);
    if (rc)
        return rc;
    if (a.help) {
        cli_help("wss", stdout);
        return CLI_EXIT_OK;
    }
    if (npos != 1)
        return cli_usage_error("wss", "expected a process id");
    int pid;
    if (cli_parse_pid(pos[0], &pid))
        return cli_usage_error("wss", "bad process id '%s'", pos[0]);
    if (a.modes > 1)
        return cli_usage_error("wss", "--cumulative and --profile exclude each other");

    memdiff_wss_options o = MEMDIFF_WSS_OPTIONS_INIT;
    o.pid = pid;
    o.mode = a.mode;
    o.interval_ns = a.interval_ns ? a.interval_ns
                                  : a.mode == MEMDIFF_WSS_PROFILE ? 1000000u : 1000000000u;
    /* wss.pl: one measurement; -C until stopped; -P as many steps as asked (here 10). */
    o.count = a.count ? (unsigned)a.count
                      : a.mode == MEMDIFF_WSS_INTERVAL ? 1u
                                                       : a.mode == MEMDIFF_WSS_PROFILE ? 10u : 0u;
    a.run = o;
    double secs = (double)o.interval_ns / 1e9;
    if (!a.json) { /* JSON Lines: records only, no banner */
        if (a.mode == MEMDIFF_WSS_PROFILE)
            printf("Watching PID %d page references grow, profile beginning with %g seconds, "
                   "%u steps...\n", pid, secs, o.count);
        else if (a.mode == MEMDIFF_WSS_CUMULATIVE)
            printf("Watching PID %d page references grow, output every %g seconds...\n", pid,
                   secs);
        else
            printf("Watching PID %d page references during %g seconds...\n", pid, secs);
        if (a.times)
            printf("%-7s %-7s ", "Slp(s)", "Dur(s)");
        printf("%-7s %10s %10s %10s\n", "Est(s)", "RSS(MB)", "PSS(MB)", "Ref(MB)");
    }
    fflush(stdout);
    rc = memdiff_wss_run(&o, print_sample, &a);
    if (rc) {
        char what[64];
        snprintf(what, sizeof what, "cannot measure pid %d", pid);
        return cli_error("wss", rc, what);
    }
    return CLI_EXIT_OK;
}
