/*
 * system.c - the whole machine: memdiff system (every process and, where privileged, every
 * physical frame), and system files where diff and show take them (docs/cli.md, "memdiff
 * system"). The reports are the library's (memdiff_system_report_text and kin); the tool
 * chooses the processes (--user, --name) and evaluates --fail-on of a system diff.
 */
#define _GNU_SOURCE /* fopencookie (glibc), for system files on standard input */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <pwd.h>
#include <regex.h>
#endif

#include "cli.h"

#define MAX_CONDS 32

enum { OPT_JSON = 1, OPT_OUTPUT, OPT_USER, OPT_NAME, OPT_NO_HEADER, OPT_NO_PHYS, OPT_QUIET };

typedef struct sys_args {
    int help, json, no_header, no_phys, quiet;
    const char *output;
    const char *user; /* --user: a name or a uid */
    const char *name; /* --name: an extended regex */
    cli_view view;
} sys_args;

static int on_opt(void *ctx, int id, const char *v)
{
    sys_args *a = ctx;
    int rc = cli_view_opt(&a->view, "system", id, v);
    if (rc != 1)
        return rc;
    switch (id) {
    case CLI_OPT_HELP:
        a->help = 1;
        break;
    case OPT_JSON:
        a->json = 1;
        break;
    case OPT_OUTPUT:
        a->output = v;
        break;
    case OPT_USER:
        a->user = v;
        break;
    case OPT_NAME:
        a->name = v;
        break;
    case OPT_NO_HEADER:
        a->no_header = 1;
        break;
    case OPT_NO_PHYS:
        a->no_phys = 1;
        break;
    case OPT_QUIET:
        a->quiet = 1;
        break;
    }
    return 0;
}

/* --user's uid: digits are a uid, anything else a user name. 0, or CLI_EXIT_ERROR after a
 * message. */
static int user_id(const char *user, uint32_t *uid)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(user, &end, 10);
    if (user[0] >= '0' && user[0] <= '9' && !*end && !errno && v <= UINT32_MAX) {
        *uid = (uint32_t)v;
        return 0;
    }
#ifndef _WIN32
    struct passwd *pw = getpwnam(user);
    if (pw) {
        *uid = (uint32_t)pw->pw_uid;
        return 0;
    }
#endif
    return cli_usage_error("system", "--user '%s': no such user (a user name or a uid)", user);
}

/* The processes --user and --name choose, as indexes for the report's select (all when neither
 * is given: *select NULL). 0 or CLI_EXIT_ERROR after a message. */
static int choose(const sys_args *a, const memdiff_system *s, size_t **select, size_t *n)
{
    *select = NULL;
    *n = 0;
    if (!a->user && !a->name)
        return 0;
    uint32_t uid = 0;
    if (a->user && user_id(a->user, &uid))
        return CLI_EXIT_ERROR;
#ifdef _WIN32
    if (a->name)
        return cli_usage_error("system", "--name needs POSIX regular expressions: not on "
                                         "Windows");
#else
    regex_t re;
    int rc = a->name ? regcomp(&re, a->name, REG_EXTENDED | REG_NOSUB) : 0;
    if (rc) {
        char why[200];
        regerror(rc, &re, why, sizeof why);
        return cli_usage_error("system", "bad --name '%s': %s", a->name, why);
    }
#endif
    size_t count = memdiff_system_process_count(s);
    size_t *list = malloc((count ? count : 1) * sizeof *list);
    for (size_t i = 0; list && i < count; i++) {
        memdiff_sysproc p;
        if (memdiff_system_process(s, i, &p) != MEMDIFF_OK || (a->user && p.uid != uid))
            continue;
#ifndef _WIN32
        /* The name as ps shows it, escaped as every name the tool prints. */
        if (a->name && regexec(&re, p.name, 0, NULL, 0) != 0)
            continue;
#endif
        list[(*n)++] = i;
    }
#ifndef _WIN32
    if (a->name)
        regfree(&re);
#endif
    if (!list) {
        fputs("memdiff system: out of memory\n", stderr);
        return CLI_EXIT_ERROR;
    }
    *select = list;
    return 0;
}

/* "memdiff system: 243 processes (240 read), physical table 6,553,600 frames -> FILE". */
static void summary(const memdiff_system *s, const char *path)
{
    memdiff_system_info i;
    char b[32];
    memdiff_system_get_info(s, &i);
    printf("memdiff system: %zu processes (%zu read, %zu unreadable, %zu exited), ", i.processes,
           i.processes_read, i.processes_unreadable, i.processes_exited);
    if (i.phys_frames)
        printf("physical table of %s frames", cli_fmt_uint(b, i.phys_frames));
    else
        fputs("no physical table", stdout);
    fputs(" -> ", stdout);
    cli_put_text(stdout, path);
    fputc('\n', stdout);
    if (i.degraded) {
        fputs("memdiff system: physical table left out: ", stdout);
        cli_put_text(stdout, i.degraded);
        fputc('\n', stdout);
    }
}

int cli_cmd_system(int argc, char **argv)
{
    static const cli_opt opts[] = {{"json", 0, 0, OPT_JSON},
                                   {"output", 'o', 1, OPT_OUTPUT},
                                   {"user", 'u', 1, OPT_USER},
                                   {"name", 0, 1, OPT_NAME},
                                   {"no-header", 0, 0, OPT_NO_HEADER},
                                   {"no-phys", 0, 0, OPT_NO_PHYS},
                                   {"quiet", 'q', 0, OPT_QUIET},
                                   {"sort", 0, 1, CLI_OPT_SORT},
                                   {"top", 0, 1, CLI_OPT_TOP},
                                   {"human", 'H', 0, CLI_OPT_HUMAN},
                                   {"color", 0, 1, CLI_OPT_COLOR},
                                   {"width", 'w', 1, CLI_OPT_WIDTH},
                                   {NULL, 0, 0, 0}};
    sys_args a;
    memset(&a, 0, sizeof a);
    cli_view_init(&a.view);
    const char *pos[1];
    int npos = 0;
    int rc = cli_parse("system", argc, argv, opts, on_opt, &a, pos, 0, &npos);
    if (rc)
        return rc;
    if (a.help) {
        cli_help("system", stdout);
        return CLI_EXIT_OK;
    }
    if (a.view.report.sort != MEMDIFF_SORT_ADDRESS)
        return cli_usage_error("system", "--sort: pid, rss, pss, uss or swap");
    if (a.output && !a.output[0])
        return cli_usage_error("system", "-o: empty path");
    memdiff_system_options so = MEMDIFF_SYSTEM_OPTIONS_INIT;
    so.flags = a.no_phys ? MEMDIFF_SYSTEM_NO_PHYS : 0;
    memdiff_system *s = NULL;
    rc = memdiff_system_take(&so, &s);
    if (rc)
        return cli_error("system", rc, "cannot take a system snapshot");
    size_t *select = NULL, nselect = 0;
    rc = choose(&a, s, &select, &nselect);
    if (!rc && a.output) {
        int save = memdiff_system_save_file(s, a.output);
        if (save) {
            fprintf(stderr, "memdiff system: -o ");
            cli_put_text(stderr, a.output);
            fprintf(stderr, ": %s\n", cli_detail(save));
            rc = CLI_EXIT_ERROR;
        } else if (!a.quiet && !a.json) {
            summary(s, a.output);
        }
    }
    if (!rc && (!a.output || a.json)) {
        memdiff_system_report_options ro = cli_view_system_report(&a.view);
        ro.flags |= a.no_header ? MEMDIFF_REPORT_NO_HEADER : 0;
        ro.select = select;
        ro.select_count = nselect;
        int w = a.json ? memdiff_system_report_json(s, stdout, &ro)
                       : memdiff_system_report_text(s, stdout, &ro);
        if (w)
            rc = cli_error("system", w, "cannot write the report");
    }
    free(select);
    memdiff_system_free(s);
    return rc;
}

/* ---- system files in show and diff ------------------------------------------------------- */

/* Standard input, for a loader: its first bytes were read to tell its kind (stdin_head), and a
 * pipe cannot be rewound, so the stream given out returns them before the rest (fopencookie:
 * glibc; elsewhere standard input is taken for a snapshot file, as before system files). */
static struct {
    unsigned char head[16];
    size_t len, pos;
    int read;
} in_head;

static void stdin_head(void)
{
    if (!in_head.read) {
        in_head.read = 1;
        in_head.len = fread(in_head.head, 1, sizeof in_head.head, stdin);
    }
}

#if defined(__GLIBC__)
static ssize_t head_then_stdin(void *cookie, char *buf, size_t size)
{
    (void)cookie;
    if (in_head.pos < in_head.len) {
        size_t n = in_head.len - in_head.pos < size ? in_head.len - in_head.pos : size;
        memcpy(buf, in_head.head + in_head.pos, n);
        in_head.pos += n;
        return (ssize_t)n;
    }
    size_t n = fread(buf, 1, size, stdin);
    return n == 0 && ferror(stdin) ? -1 : (ssize_t)n;
}

FILE *cli_stdin(void)
{
    if (!in_head.read)
        return stdin;
    cookie_io_functions_t io = {head_then_stdin, NULL, NULL, NULL};
    return fopencookie(NULL, "rb", io);
}

static int stdin_may_be_sniffed(void)
{
    return 1;
}
#else
FILE *cli_stdin(void)
{
    return stdin;
}

static int stdin_may_be_sniffed(void)
{
    return 0;
}
#endif

void cli_stdin_done(FILE *f)
{
    if (f && f != stdin)
        fclose(f);
}

int cli_is_system_file(const char *path)
{
    if (strcmp(path, "-") == 0) {
        if (!stdin_may_be_sniffed())
            return 0;
        stdin_head();
        return in_head.len >= 8 && memdiff_system_file_sniff(in_head.head, in_head.len) == 1;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0; /* the loader says why */
    unsigned char head[16];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return n >= 8 && memdiff_system_file_sniff(head, n) == 1;
}

static int load(const char *cmd, const char *path, memdiff_system **out)
{
    int rc;
    if (strcmp(path, "-") == 0) {
        FILE *in = cli_stdin();
        rc = in ? memdiff_system_load(in, out) : MEMDIFF_ENOMEM;
        cli_stdin_done(in);
    } else {
        rc = memdiff_system_load_file(path, out);
    }
    if (rc) {
        fprintf(stderr, "memdiff %s: cannot load the system snapshot ", cmd);
        cli_put_text(stderr, path);
        fprintf(stderr, ": %s\n", cli_detail(rc));
        return CLI_EXIT_ERROR;
    }
    return 0;
}

int cli_system_show(const char *path, const cli_view *view, int json, int no_header)
{
    memdiff_system *s = NULL;
    int rc = load("show", path, &s);
    if (rc)
        return rc;
    memdiff_system_report_options ro = cli_view_system_report(view);
    ro.flags |= no_header ? MEMDIFF_REPORT_NO_HEADER : 0;
    rc = json ? memdiff_system_report_json(s, stdout, &ro)
              : memdiff_system_report_text(s, stdout, &ro);
    memdiff_system_free(s);
    return rc ? cli_error("show", rc, "cannot write the report") : CLI_EXIT_OK;
}

/* --fail-on of a system diff: "MEASURE OP SIZE", MEASURE the change of the processes' sum of
 * rss, pss, uss, swap, anon, file or shmem; the count of processes started, exited, grew or
 * shrank; or phys.KIND, the change of the physical table's frames of that kind (or phys.total). */
typedef struct sys_cond {
    const char *text;
    int measure;               /* a column below, or -1 for phys */
    memdiff_frame_kind kind;   /* phys: the kind, MEMDIFF_FRAME_ALL for total */
    memdiff_cmp cmp;
    int64_t bound;
} sys_cond;

static const char *const measures[] = {"rss", "pss", "uss", "swap", "anon", "file", "shmem",
                                       "started", "exited", "grew", "shrank"};
#define NMEASURES (int)(sizeof measures / sizeof measures[0])
#define FIRST_COUNT 7 /* measures from here are counts of processes */

static int parse_sys_cond(const char *text, sys_cond *c, char *err, size_t errlen)
{
    size_t lhs;
    if (cli_split_cond(text, &lhs, &c->cmp, &c->bound, err, errlen))
        return -1;
    c->text = text;
    if (lhs > 5 && strncmp(text, "phys.", 5) == 0) {
        c->measure = -1;
        for (int k = 0; k <= MEMDIFF_FRAME_KIND_COUNT; k++) {
            const char *name = k == MEMDIFF_FRAME_KIND_COUNT
                                   ? "total"
                                   : memdiff_frame_kind_name((memdiff_frame_kind)k);
            if (strlen(name) == lhs - 5 && strncmp(text + 5, name, lhs - 5) == 0) {
                c->kind = (memdiff_frame_kind)k;
                return 0;
            }
        }
        snprintf(err, errlen, "unknown kind '%.*s' (anon, file-active, slab, free, ... or total: "
                 "man memdiff)", (int)(lhs - 5), text + 5);
        return -1;
    }
    for (int m = 0; m < NMEASURES; m++) {
        if (strlen(measures[m]) == lhs && strncmp(text, measures[m], lhs) == 0) {
            c->measure = m;
            return 0;
        }
    }
    snprintf(err, errlen, "unknown measure '%.*s' of a system diff (rss, pss, uss, swap, anon, "
             "file, shmem, started, exited, grew, shrank, phys.KIND)", (int)lhs, text);
    return -1;
}

/* The figure c measures in d: 0, or -1 (no physical table on a side) with why in err. */
static int sys_figure(const memdiff_system_diff *d, const sys_cond *c, int64_t *v, char *err,
                      size_t errlen)
{
    *v = 0;
    if (c->measure < 0) {
        uint64_t before, after;
        if (memdiff_system_diff_phys_bytes(d, c->kind, MEMDIFF_OWNER_ALL, &before, &after)) {
            snprintf(err, errlen, "%s", cli_detail(MEMDIFF_ENOTSUP));
            return -1;
        }
        *v = (int64_t)(after - before);
        return 0;
    }
    if (c->measure >= FIRST_COUNT) {
        static const memdiff_sysproc_change changes[] = {
            MEMDIFF_SYSCHG_STARTED, MEMDIFF_SYSCHG_EXITED, MEMDIFF_SYSCHG_GREW,
            MEMDIFF_SYSCHG_SHRANK};
        *v = (int64_t)memdiff_system_diff_changed(d, changes[c->measure - FIRST_COUNT]);
        return 0;
    }
    size_t n = memdiff_system_diff_process_count(d);
    for (size_t i = 0; i < n; i++) {
        memdiff_sysproc_diff p;
        if (memdiff_system_diff_process(d, i, &p) || p.change == MEMDIFF_SYSCHG_UNKNOWN)
            continue;
        const int64_t f[] = {p.rss_bytes,      p.pss_bytes,      p.uss_bytes,     p.swap_bytes,
                             p.rss_anon_bytes, p.rss_file_bytes, p.rss_shmem_bytes};
        *v += f[c->measure];
    }
    return 0;
}

static int holds(memdiff_cmp cmp, int64_t v, int64_t bound)
{
    switch (cmp) {
    case MEMDIFF_CMP_GT:
        return v > bound;
    case MEMDIFF_CMP_GE:
        return v >= bound;
    case MEMDIFF_CMP_LT:
        return v < bound;
    case MEMDIFF_CMP_LE:
        return v <= bound;
    case MEMDIFF_CMP_EQ:
        return v == bound;
    case MEMDIFF_CMP_NE:
        return v != bound;
    }
    return 0;
}

static int check_conds(const memdiff_system_diff *d, const sys_cond *conds, int n)
{
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < n; i++) {
        int64_t v;
        char err[200], buf[32];
        if (sys_figure(d, &conds[i], &v, err, sizeof err)) {
            fprintf(stderr, "memdiff diff: cannot evaluate --fail-on %s: the physical table is "
                            "not in both snapshots\n", conds[i].text);
            return CLI_EXIT_ERROR; /* never a pass */
        }
        if (!holds(conds[i].cmp, v, conds[i].bound))
            continue;
        int count = conds[i].measure >= FIRST_COUNT;
        fprintf(stderr, "memdiff diff: --fail-on %s holds: %s%s\n", conds[i].text,
                cli_fmt_int(buf, v, !count), count ? " processes" : " bytes");
        rc = CLI_EXIT_MATCH;
    }
    return rc;
}

int cli_system_diff(const char *path_a, const char *path_b, const cli_view *view, int json,
                    int force, int no_header, const char *const *fail_on, int nfail)
{
    sys_cond conds[MAX_CONDS];
    for (int i = 0; i < nfail && i < MAX_CONDS; i++) {
        char err[200];
        if (parse_sys_cond(fail_on[i], &conds[i], err, sizeof err))
            return cli_usage_error("diff", "bad --fail-on '%s': %s", fail_on[i], err);
    }
    memdiff_system *before = NULL, *after = NULL;
    int rc = load("diff", path_a, &before);
    if (!rc)
        rc = load("diff", path_b, &after);
    memdiff_system_diff *d = NULL;
    if (!rc) {
        int c = memdiff_system_compare(before, after, force ? MEMDIFF_COMPARE_FORCE : 0, &d);
        if (c == MEMDIFF_EMISMATCH && !force) {
            fprintf(stderr, "memdiff diff: cannot compare: %s; use --force to compare them "
                            "anyway\n", cli_detail(c));
            rc = CLI_EXIT_ERROR;
        } else if (c) {
            rc = cli_error("diff", c, "cannot compare");
        }
    }
    if (!rc) {
        memdiff_system_report_options ro = cli_view_system_report(view);
        ro.flags |= no_header ? MEMDIFF_REPORT_NO_HEADER : 0;
        int w = json ? memdiff_system_diff_report_json(d, stdout, &ro)
                     : memdiff_system_diff_report_text(d, stdout, &ro);
        rc = w ? cli_error("diff", w, "cannot write the report")
               : check_conds(d, conds, nfail < MAX_CONDS ? nfail : MAX_CONDS);
    }
    memdiff_system_diff_free(d);
    memdiff_system_free(after);
    memdiff_system_free(before);
    return rc;
}
