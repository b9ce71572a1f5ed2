/*
 * options.c - the tool's argument parsing: options of a command, pids, depths, durations, sizes,
 * and the --fail-on conditions; number formatting shared by the commands.
 *
 * Our own small parser rather than getopt_long: it is the same on every system, knows
 * "--opt=value" and options after positional words, and reports errors with the command's name.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_opt *find_long(const cli_opt *opts, const char *name, size_t len)
{
    for (const cli_opt *o = opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

static const cli_opt *find_short(const cli_opt *opts, char c)
{
    for (const cli_opt *o = opts; o->name; o++)
        if (o->short_name && o->short_name == c)
            return o;
    return NULL;
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts,
              int (*on_opt)(void *ctx, int id, const char *value), void *ctx, const char **pos,
              int max_pos, int *npos)
{
    int options_end = 0;
    *npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const cli_opt *o = NULL;
        const char *value = NULL;
        if (options_end || a[0] != '-' || a[1] == '\0') {
            if (*npos == max_pos)
                return cli_usage_error(cmd, "unexpected argument '%s'", a);
            pos[(*npos)++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options_end = 1;
            continue;
        }
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            if (len == 4 && strncmp(name, "help", 4) == 0) {
                int rc = on_opt(ctx, CLI_OPT_HELP, NULL);
                if (rc)
                    return rc;
                continue;
            }
            o = find_long(opts, name, len);
            if (!o)
                return cli_usage_error(cmd, "unknown option '--%.*s'", (int)len, name);
            if (eq && !o->has_arg)
                return cli_usage_error(cmd, "option '--%s' takes no value", o->name);
            value = eq ? eq + 1 : NULL;
        } else {
            if (a[1] == 'h' && a[2] == '\0') {
                int rc = on_opt(ctx, CLI_OPT_HELP, NULL);
                if (rc)
                    return rc;
                continue;
            }
            o = find_short(opts, a[1]);
            if (!o)
                return cli_usage_error(cmd, "unknown option '-%c'", a[1]);
            if (a[2] != '\0') {
                if (!o->has_arg)
                    return cli_usage_error(cmd, "option '-%c' takes no value", a[1]);
                value = a + 2;
            }
        }
        if (o->has_arg && !value) {
            if (i + 1 == argc)
                return cli_usage_error(cmd, "option '--%s' needs a value", o->name);
            value = argv[++i];
        }
        int rc = on_opt(ctx, o->id, value);
        if (rc)
            return rc;
    }
    return 0;
}

/* A whole decimal number in [lo, hi]. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    if (!isdigit((unsigned char)s[0]))
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_pid(const char *s, int *pid)
{
    long v;
    if (parse_long(s, 1, INT_MAX, &v))
        return -1;
    *pid = (int)v;
    return 0;
}

int cli_parse_count(const char *s, int *n)
{
    return cli_parse_pid(s, n);
}

int cli_parse_depth(const char *s, memdiff_depth *depth)
{
    static const memdiff_depth all[] = {MEMDIFF_DEPTH_FAST, MEMDIFF_DEPTH_STANDARD,
                                        MEMDIFF_DEPTH_DEEP};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(s, memdiff_depth_name(all[i])) == 0) {
            *depth = all[i];
            return 0;
        }
    }
    return -1;
}

/* A non-negative decimal number with an optional fraction, then a unit looked up in units
 * (suffix -> multiplier); "" is the unit of a bare number. */
typedef struct unit {
    const char *suffix;
    double scale;
} unit;

static int parse_scaled(const char *s, const unit *units, double *out)
{
    if (!isdigit((unsigned char)s[0]) && s[0] != '.')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v))
        return -1;
    for (const unit *u = units; u->suffix; u++) {
        if (strcmp(end, u->suffix) == 0) {
            *out = v * u->scale;
            return 0;
        }
    }
    return -1;
}

int cli_parse_duration(const char *s, uint64_t *ns)
{
    static const unit units[] = {{"", 1e9},  {"s", 1e9},     {"ms", 1e6}, {"us", 1e3},
                                 {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}, {NULL, 0}};
    double v;
    if (parse_scaled(s, units, &v) || v < 1e6 || v > 86400e9) /* 1 ms .. 1 day */
        return -1;
    *ns = (uint64_t)v;
    return 0;
}

int cli_parse_size(const char *s, int64_t *bytes)
{
    static const unit units[] = {
        {"", 1.0},   {"B", 1.0},   {"K", 0x1p10}, {"KB", 0x1p10}, {"KiB", 0x1p10},
        {"M", 0x1p20}, {"MB", 0x1p20}, {"MiB", 0x1p20}, {"G", 0x1p30}, {"GB", 0x1p30},
        {"GiB", 0x1p30}, {"T", 0x1p40}, {"TB", 0x1p40}, {"TiB", 0x1p40}, {NULL, 0}};
    int neg = 0;
    if (*s == '-' || *s == '+')
        neg = *s++ == '-';
    double v;
    if (parse_scaled(s, units, &v) || v >= 0x1p62)
        return -1;
    int64_t whole = (int64_t)(v + 0.5); /* sizes like 1.5K are whole bytes */
    *bytes = neg ? -whole : whole;
    return 0;
}

/* ---- --fail-on -------------------------------------------------------------------------- */

/* The command line's words for the measures of memdiff_diff_figure(). */
static const struct {
    const char *word;
    memdiff_measure measure;
} measures[] = {
    {"new", MEMDIFF_MEASURE_NEW},         {"freed", MEMDIFF_MEASURE_FREED},
    {"net", MEMDIFF_MEASURE_NET},         {"net-private", MEMDIFF_MEASURE_NET_PRIVATE},
    {"private", MEMDIFF_MEASURE_PRIVATE}, {"shared", MEMDIFF_MEASURE_SHARED},
    {"replaced", MEMDIFF_MEASURE_REPLACED},
};

static int lookup_measure(const char *s, size_t len, memdiff_measure *out)
{
    for (size_t m = 0; m < sizeof measures / sizeof measures[0]; m++) {
        if (strlen(measures[m].word) == len && strncmp(measures[m].word, s, len) == 0) {
            *out = measures[m].measure;
            return 0;
        }
    }
    return -1;
}

int cli_lookup_category(const char *s, size_t len, memdiff_category *out)
{
    if (len == 5 && strncmp(s, "total", 5) == 0) {
        *out = MEMDIFF_CAT_ALL;
        return 0;
    }
    for (int c = 0; c < MEMDIFF_CAT_COUNT; c++) {
        const char *name = memdiff_category_name((memdiff_category)c);
        if (strlen(name) == len && strncmp(name, s, len) == 0) {
            *out = (memdiff_category)c;
            return 0;
        }
    }
    return -1;
}

int cli_split_cond(const char *text, size_t *lhs, memdiff_cmp *cmp, int64_t *bound, char *err,
                   size_t errlen)
{
    const char *p = text;
    while (*p && strchr("<>=!", *p) == NULL)
        p++;
    if (!*p) {
        snprintf(err, errlen, "no comparison (>, >=, <, <=, ==, !=)");
        return -1;
    }
    size_t lhs_len = (size_t)(p - text);
    while (lhs_len && isspace((unsigned char)text[lhs_len - 1]))
        lhs_len--;
    /* The operator: one character, or two when the second is '='; a lone '=' means '=='. */
    char op[3] = {p[0], p[1] == '=' ? '=' : '\0', '\0'};
    const char *rhs = p + strlen(op);
    if (strcmp(op, "=") == 0)
        op[1] = '=';
    if (memdiff_cmp_parse(op, cmp) != MEMDIFF_OK) {
        snprintf(err, errlen, "unknown comparison at '%s'", p);
        return -1;
    }
    while (isspace((unsigned char)*rhs))
        rhs++;
    if (cli_parse_size(rhs, bound)) {
        snprintf(err, errlen, "bad size '%s' (e.g. 0, 4096, 512K, 1.5M, 2G)", rhs);
        return -1;
    }
    *lhs = lhs_len;
    return 0;
}

int cli_parse_cond(const char *text, cli_cond *c, char *err, size_t errlen)
{
    size_t lhs_len;
    if (cli_split_cond(text, &lhs_len, &c->cmp, &c->bound, err, errlen))
        return -1;
    /* "heap.net": a category and a measure; "net" alone: the total. ("private" is both a
     * category and a measure: alone it is the measure, new private bytes of the total.) */
    const char *dot = memchr(text, '.', lhs_len);
    const char *mname = dot ? dot + 1 : text;
    size_t mlen = dot ? lhs_len - (size_t)(dot + 1 - text) : lhs_len;
    c->category = MEMDIFF_CAT_ALL;
    if (dot && cli_lookup_category(text, (size_t)(dot - text), &c->category)) {
        snprintf(err, errlen, "unknown category '%.*s' (image, heap, stack, mapped-file, shared, "
                 "private, special, own, unknown, total)", (int)(dot - text), text);
        return -1;
    }
    if (lookup_measure(mname, mlen, &c->measure)) {
        snprintf(err, errlen, "unknown measure '%.*s' (new, freed, net, net-private, private, "
                 "shared, replaced)", (int)mlen, mname);
        return -1;
    }
    c->text = text;
    return 0;
}

int cli_check_conds(const char *cmd, const cli_cond *conds, int n, const memdiff_diff *diff)
{
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < n; i++) {
        const cli_cond *c = &conds[i];
        int64_t v = 0;
        /* memdiff_check() answers whether "figure OP bound" holds; --fail-on fails when it does.
         * A condition that cannot be evaluated is an error, never a pass. */
        const memdiff_figure figure = {c->category, c->measure, NULL};
        int holds = memdiff_check(diff, &figure, c->cmp, c->bound, NULL, 0);
        if (holds < 0)
            return cli_error(cmd, holds, "cannot evaluate --fail-on");
        if (holds != 1)
            continue;
        memdiff_diff_figure(diff, &figure, &v);
        char buf[32];
        int with_sign =
            c->measure == MEMDIFF_MEASURE_NET || c->measure == MEMDIFF_MEASURE_NET_PRIVATE;
        fprintf(stderr, "memdiff %s: --fail-on %s holds: %s %s = %s bytes\n", cmd, c->text,
                c->category == MEMDIFF_CAT_ALL ? "total" : memdiff_category_name(c->category),
                memdiff_measure_name(c->measure), cli_fmt_int(buf, v, with_sign));
        rc = CLI_EXIT_MATCH;
    }
    return rc;
}

/* ---- formatting ------------------------------------------------------------------------- */

const char *cli_fmt_uint(char *buf, uint64_t v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    int o = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = '\0';
    return buf;
}

const char *cli_fmt_int(char *buf, int64_t v, int with_sign)
{
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char *p = buf;
    if (v < 0)
        *p++ = '-';
    else if (with_sign && v > 0)
        *p++ = '+';
    cli_fmt_uint(p, mag);
    return buf;
}
