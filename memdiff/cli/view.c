/*
 * view.c - how the tool's text and JSON reports look: --sort, --top, --category, -H/--human,
 * --color and --width of diff, show and watch, into the library's memdiff_report_options.
 */
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#include <io.h>
#define isatty _isatty
#define fileno _fileno
#else
#include <unistd.h>
#endif

#include "cli.h"

/* Lines of the text reports fit 100 columns unless --width says otherwise: a report pasted into
 * an issue or a mail reads without wrapping, and JSON keeps every label whole. */
#define DEFAULT_WIDTH 100

void cli_view_init(cli_view *v)
{
    static const memdiff_report_options defaults = MEMDIFF_REPORT_OPTIONS_INIT;
    v->report = defaults;
    v->report.width = DEFAULT_WIDTH;
    v->color = -1;
    v->system_sort = -1;
}

static int parse_categories(cli_view *v, const char *cmd, const char *list)
{
    unsigned set = 0;
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        memdiff_category c;
        if (cli_lookup_category(p, len, &c) || c == MEMDIFF_CAT_ALL)
            return cli_usage_error(cmd, "bad category '%.*s' in --category (image, heap, stack, "
                                        "mapped-file, shared, private, special, own, unknown)",
                                   (int)len, p);
        set |= 1u << c;
        if (!p[len])
            break;
        p += len + 1;
    }
    v->report.categories = set;
    return 0;
}

int cli_view_opt(cli_view *v, const char *cmd, int id, const char *value)
{
    static const char *const sorts[] = {"address", "size", "net", "name"};
    int n;
    switch (id) {
    case CLI_OPT_SORT:
        for (size_t i = 0; i < sizeof sorts / sizeof sorts[0]; i++) {
            if (strcmp(value, sorts[i]) == 0) {
                v->report.sort = (memdiff_sort)i;
                v->system_sort = -1;
                return 0;
            }
        }
        /* The processes of a system snapshot: which kind of file it is shows only later. */
        for (int k = MEMDIFF_SYSTEM_SORT_PID; k <= MEMDIFF_SYSTEM_SORT_SWAP; k++) {
            if (strcmp(value, memdiff_system_sort_name((memdiff_system_sort)k)) == 0) {
                v->system_sort = k;
                return 0;
            }
        }
        return cli_usage_error(cmd, "bad sort '%s' (size, net, address or name), or of system "
                                    "snapshots pid, rss, pss, uss or swap", value);
    case CLI_OPT_TOP:
        if (cli_parse_count(value, &n))
            return cli_usage_error(cmd, "bad --top '%s' (a number from 1)", value);
        v->report.top = (size_t)n;
        return 0;
    case CLI_OPT_CATEGORY:
        return parse_categories(v, cmd, value);
    case CLI_OPT_HUMAN:
        v->report.flags |= MEMDIFF_REPORT_HUMAN;
        return 0;
    case CLI_OPT_COLOR:
        if (strcmp(value, "auto") == 0)
            v->color = -1;
        else if (strcmp(value, "always") == 0)
            v->color = 1;
        else if (strcmp(value, "never") == 0)
            v->color = 0;
        else
            return cli_usage_error(cmd, "bad --color '%s' (auto, always or never)", value);
        return 0;
    case CLI_OPT_WIDTH:
        /* 0: no limit; below 80 columns the reports do not keep to a width (the fields of a
         * block line take up to 80 before its label). */
        if (strcmp(value, "0") == 0) {
            v->report.width = 0;
            return 0;
        }
        if (cli_parse_count(value, &n) || n < 80)
            return cli_usage_error(cmd, "bad --width '%s' (0 for no limit, or 80 columns and "
                                        "more)", value);
        v->report.width = (unsigned)n;
        return 0;
    }
    return 1;
}

memdiff_report_options cli_view_report(const cli_view *v)
{
    return cli_view_report_for(v, stdout);
}

memdiff_report_options cli_view_report_for(const cli_view *v, FILE *out)
{
    memdiff_report_options o = v->report;
    int color = v->color;
    if (color < 0) {
        /* https://no-color.org: set and not empty turns colour off. */
        const char *no = getenv("NO_COLOR");
        color = isatty(fileno(out)) && !(no && no[0]);
    }
    if (color)
        o.flags |= MEMDIFF_REPORT_COLOR;
    return o;
}

memdiff_system_report_options cli_view_system_report(const cli_view *v)
{
    memdiff_report_options r = cli_view_report(v);
    memdiff_system_report_options o = MEMDIFF_SYSTEM_REPORT_OPTIONS_INIT;
    o.flags = r.flags & (MEMDIFF_REPORT_HUMAN | MEMDIFF_REPORT_COLOR);
    o.width = r.width;
    o.top = r.top;
    o.sort = v->system_sort < 0 ? MEMDIFF_SYSTEM_SORT_PID : (memdiff_system_sort)v->system_sort;
    return o;
}

int cli_view_no_system_sort(const cli_view *v, const char *cmd)
{
    if (v->system_sort < 0)
        return 0;
    return cli_usage_error(cmd, "--sort %s is for system snapshots (memdiff system); blocks sort "
                                "by size, net, address or name",
                           memdiff_system_sort_name((memdiff_system_sort)v->system_sort));
}
