/*
 * select.c - which processes a command acts on (docs/cli.md, "Choosing processes"): pids given
 * as words, "self", --name REGEX (an extended regex anywhere in the name, as pgrep) and --exact
 * NAME (the whole name, as pgrep -x), against the name the kernel keeps for each process
 * (/proc/PID/comm, at most 15 bytes).
 *
 * Every pid is checked before a command prints anything, so that an error never follows a
 * banner or a header on stdout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef _WIN32
#include <dirent.h>
#include <regex.h>
#include <signal.h>
#include <unistd.h>
#endif

#include "cli.h"

int cli_select_opt(cli_select *s, int id, const char *value)
{
    if (id == CLI_OPT_NAME)
        s->name = value;
    else if (id == CLI_OPT_EXACT)
        s->exact = value;
    else
        return 1;
    return 0;
}

static int all_digits(const char *w)
{
    return w[0] && strspn(w, "0123456789") == strlen(w);
}

int cli_word_is_process(const char *word)
{
    struct stat st;
    if (strcmp(word, "self") != 0 && !all_digits(word))
        return 0;
    /* A file of that name wins: "memdiff show 1234" shows ./1234 when there is one. */
    return stat(word, &st) != 0 && errno == ENOENT;
}

typedef struct pid_list {
    int *pids;
    int n, cap;
} pid_list;

/* Adds pid once; -1 when out of memory. */
static int add_pid(pid_list *l, int pid)
{
    for (int i = 0; i < l->n; i++)
        if (l->pids[i] == pid)
            return 0;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        int *p = realloc(l->pids, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        l->pids = p;
        l->cap = cap;
    }
    l->pids[l->n++] = pid;
    return 0;
}

#ifdef _WIN32

static int own_pid(void)
{
    return 0; /* memdiff_options.pid 0: the calling process */
}

static int exists(int pid)
{
    (void)pid;
    return 1; /* the library says so when it opens the process */
}

static int read_name(int pid, char *buf, size_t size)
{
    (void)pid;
    if (size)
        buf[0] = '\0';
    return -1;
}

static int add_named(const char *cmd, const char *pattern, int exact, pid_list *l)
{
    (void)pattern;
    (void)l;
    fprintf(stderr, "memdiff %s: %s needs /proc: it is for Linux only\n", cmd,
            exact ? "--exact" : "--name");
    return CLI_EXIT_ERROR;
}

#else

static int own_pid(void)
{
    return (int)getpid();
}

static int exists(int pid)
{
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* The process's name, as ps and pgrep show it; 0 or -1 (gone meanwhile). */
static int read_name(int pid, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static int by_value(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The processes whose name matches pattern: an extended regex anywhere in the name, or with
 * exact the whole name, byte for byte (--exact, pgrep -x). */
static int add_named(const char *cmd, const char *pattern, int exact, pid_list *l)
{
    regex_t re;
    int rc = exact ? 0 : regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char why[200];
        regerror(rc, &re, why, sizeof why);
        return cli_usage_error(cmd, "bad --name '%s': %s", pattern, why);
    }
    DIR *d = opendir("/proc");
    if (!d) {
        if (!exact)
            regfree(&re);
        fprintf(stderr, "memdiff %s: %s: cannot read /proc: %s\n", cmd,
                exact ? "--exact" : "--name", strerror(errno));
        return CLI_EXIT_ERROR;
    }
    int first = l->n, me = own_pid(), oom = 0, matched = 0;
    for (struct dirent *e; !oom && (e = readdir(d)) != NULL;) {
        int pid;
        char name[64];
        /* Not memdiff itself: its own name or command line never means the process to look
         * at (pgrep leaves itself out too). */
        if (!all_digits(e->d_name) || cli_parse_pid(e->d_name, &pid) || pid == me ||
            read_name(pid, name, sizeof name) ||
            (exact ? strcmp(name, pattern) != 0 : regexec(&re, name, 0, NULL, 0) != 0))
            continue;
        matched++;
        oom = add_pid(l, pid) != 0;
    }
    closedir(d);
    if (!exact)
        regfree(&re);
    if (oom) {
        fprintf(stderr, "memdiff %s: out of memory\n", cmd);
        return CLI_EXIT_ERROR;
    }
    if (matched == 0) {
        fprintf(stderr, "memdiff %s: no process is named %s'", cmd, exact ? "" : "like ");
        cli_put_text(stderr, pattern);
        fprintf(stderr, "' (%s matches the name ps shows, at most 15 characters)\n",
                exact ? "--exact" : "--name");
        return CLI_EXIT_ERROR;
    }
    qsort(l->pids + first, (size_t)(l->n - first), sizeof *l->pids, by_value);
    return 0;
}

#endif

/* "several processes match" with the first few of them, named: which to choose from. */
static int too_many(const char *cmd, const pid_list *l)
{
    fprintf(stderr, "memdiff %s: %d processes match, and %s takes one:", cmd, l->n, cmd);
    for (int i = 0; i < l->n && i < 8; i++) {
        char name[64];
        fprintf(stderr, "%s %d", i ? "," : "", l->pids[i]);
        if (read_name(l->pids[i], name, sizeof name) == 0) {
            fputs(" (", stderr);
            cli_put_text(stderr, name);
            fputc(')', stderr);
        }
    }
    fprintf(stderr, "%s; give one pid, or a --name that matches one\n", l->n > 8 ? ", ..." : "");
    return CLI_EXIT_ERROR;
}

int cli_select_pids(const char *cmd, const cli_select *s, const char *const *words, int nwords,
                    int many, int allow_self, int **pids, int *n)
{
    pid_list l = {NULL, 0, 0};
    int rc = 0;
    *pids = NULL;
    *n = 0;
    for (int i = 0; i < nwords && !rc; i++) {
        int pid;
        if (strcmp(words[i], "self") == 0) {
            if (!allow_self) {
                fprintf(stderr, "memdiff %s: 'self' would be this memdiff process, which "
                                "only sleeps between its measurements; give the pid of the "
                                "process to look at (e.g. $$ for the shell)\n", cmd);
                rc = CLI_EXIT_ERROR;
                break;
            }
            pid = own_pid();
        } else if (cli_parse_pid(words[i], &pid)) {
            rc = cli_usage_error(cmd, "bad process id '%s' (a pid, self, --name REGEX or "
                                      "--exact NAME)", words[i]);
            break;
        } else if (!exists(pid)) {
            fprintf(stderr, "memdiff %s: no process with pid %d\n", cmd, pid);
            rc = CLI_EXIT_ERROR;
            break;
        }
        if (add_pid(&l, pid)) {
            fprintf(stderr, "memdiff %s: out of memory\n", cmd);
            rc = CLI_EXIT_ERROR;
        }
    }
    if (!rc && s->name)
        rc = add_named(cmd, s->name, 0, &l);
    if (!rc && s->exact)
        rc = add_named(cmd, s->exact, 1, &l);
    if (!rc && l.n == 0)
        rc = cli_usage_error(cmd, "expected a process: a pid, self, --name REGEX or --exact "
                                  "NAME");
    if (!rc && !many && l.n > 1)
        rc = too_many(cmd, &l);
    if (rc) {
        free(l.pids);
        return rc;
    }
    *pids = l.pids;
    *n = l.n;
    return 0;
}
