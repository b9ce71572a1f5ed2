/*
 * test_manual.c - what a user of the installed memdiff command reads besides its output: the man
 * page (docs/memdiff.1) renders without a warning and documents every command and every long
 * option the commands' --help prints; the bash completion (memdiff/cli/completion.bash), sourced
 * in a real bash, offers commands, each command's options (every one --help prints), the
 * values of options, snapshot files and pids; --help names the man page; --version and -V print
 * the library's and the file format's versions.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memdiff.h"
#include "scenario_util.h"
#include "suites.h"

static char out[1 << 17];

/* Runs the shell command (stderr with stdout when it says 2>&1); its output in out, its exit
 * status returned. */
#define run(...) scn_sh(out, sizeof out, __VA_ARGS__)

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char buf[1 << 17];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    ck_assert_uint_lt(n, sizeof buf - 1);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The commands the tool's help lists under "commands:" ("snap", "diff", ...), "help" left out;
 * NUL-separated in names, their count returned. */
static int commands(char *names, size_t size)
{
    ck_assert_int_eq(run("'%s' --help", MEMDIFF_CLI_PATH), 0);
    const char *p = strstr(out, "\ncommands:\n");
    ck_assert_ptr_nonnull(p);
    p += strlen("\ncommands:\n");
    int n = 0;
    size_t o = 0;
    while (p[0] == ' ' && p[1] == ' ' && islower((unsigned char)p[2])) {
        const char *w = p + 2, *e = w;
        while (islower((unsigned char)*e))
            e++;
        if ((size_t)(e - w) != 4 || strncmp(w, "help", 4) != 0) {
            ck_assert_uint_lt(o + (size_t)(e - w) + 1, size);
            memcpy(names + o, w, (size_t)(e - w));
            o += (size_t)(e - w);
            names[o++] = '\0';
            n++;
        }
        p = strchr(p, '\n');
        ck_assert_ptr_nonnull(p);
        p++;
        while (p[0] == ' ' && p[1] == ' ' && p[2] == ' ') /* a continued line */
            p = strchr(p, '\n') + 1;
    }
    return n;
}

/* The long options "memdiff help CMD" prints, each "--name" once, NUL-separated into opts; their
 * count. */
static int long_options(const char *cmd, char *opts, size_t size)
{
    ck_assert_int_eq(run("'%s' help %s", MEMDIFF_CLI_PATH, cmd), 0);
    int n = 0;
    size_t o = 0;
    for (const char *p = out; (p = strstr(p, "--")) != NULL;) {
        const char *e = p + 2;
        while (islower((unsigned char)*e) || isdigit((unsigned char)*e) || *e == '-')
            e++;
        size_t len = (size_t)(e - p);
        int letter = islower((unsigned char)p[2]);
        int seen = 0;
        for (size_t q = 0; q < o; q += strlen(opts + q) + 1)
            if (strlen(opts + q) == len && strncmp(opts + q, p, len) == 0)
                seen = 1;
        if (letter && !seen) {
            ck_assert_uint_lt(o + len + 1, size);
            memcpy(opts + o, p, len);
            o += len;
            opts[o++] = '\0';
            n++;
        }
        p = e;
    }
    return n;
}

/* Whether the roff text has the option (or word) opt, its hyphens written \- as roff wants
 * them, and not only as the start of a longer one ("--no" in "--no-header"). */
static int roff_has(const char *roff, const char *opt)
{
    char want[128];
    size_t o = 0;
    for (const char *c = opt; *c && o + 3 < sizeof want; c++) {
        if (*c == '-')
            want[o++] = '\\';
        want[o++] = *c;
    }
    want[o] = '\0';
    for (const char *p = roff; (p = strstr(p, want)) != NULL; p += o) {
        const char *e = p + o;
        if (!isalnum((unsigned char)*e) && !(e[0] == '\\' && e[1] == '-'))
            return 1;
    }
    return 0;
}

START_TEST(man_page_renders_without_warnings)
{
    /* -ww: every warning groff knows; -z: no output, only the diagnostics. */
    int rc = run("groff -man -ww -z '%s' 2>&1", MEMDIFF_MAN_PAGE);
    ck_assert_msg(rc == 0 && out[0] == '\0', "groff: exit %d:\n%.3000s", rc, out);
    /* And rendered as man shows it: the sections a manual page has, in this order. */
    ck_assert_int_eq(run("groff -man -Tutf8 -P-cbou '%s' 2>&1", MEMDIFF_MAN_PAGE), 0);
    static const char *const sections[] = {"NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS",
                                           "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES",
                                           "EXAMPLES", "SEE ALSO"};
    const char *at = out;
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n%s\n", sections[i]);
        const char *s = strstr(at, line);
        ck_assert_msg(s != NULL, "no section %s (after the one before) in:\n%.3000s", sections[i],
                      out);
        at = s;
    }
    ck_assert_ptr_nonnull(strstr(at, "pmap(1)"));
    ck_assert_ptr_nonnull(strstr(at, "smem(8)"));
    ck_assert_ptr_nonnull(strstr(at, "proc(5)"));
}
END_TEST

/* Every command the tool lists, and every long option any command's help prints, is in the
 * man page: an option added to the code and not to the manual fails here. */
START_TEST(man_page_documents_every_option)
{
    const char *roff = slurp(MEMDIFF_MAN_PAGE);
    char names[256], opts[2048];
    int ncmd = commands(names, sizeof names);
    ck_assert_int_ge(ncmd, 5); /* snap, diff, show, watch, wss at least */
    ck_assert(roff_has(roff, "--help") && roff_has(roff, "--version") && roff_has(roff, "-V"));
    int checked = 0;
    for (const char *c = names; ncmd-- > 0; c += strlen(c) + 1) {
        char heading[300];
        snprintf(heading, sizeof heading, "\n.B %s\n", c); /* in the SYNOPSIS */
        ck_assert_msg(strstr(roff, heading) != NULL, "command %s not in the man page", c);
        int n = long_options(c, opts, sizeof opts);
        ck_assert_int_ge(n, 1);
        for (const char *o = opts; n-- > 0; o += strlen(o) + 1, checked++)
            ck_assert_msg(roff_has(roff, o), "memdiff %s %s: not in docs/memdiff.1", c, o);
    }
    ck_assert_int_ge(checked, 20); /* 0.2's five commands print 24 */
    /* The check itself: an option that is not there is found missing. */
    ck_assert(!roff_has(roff, "--frobnicate"));
    ck_assert(!roff_has(roff, "--no"));
}
END_TEST

START_TEST(help_names_the_man_page)
{
    char names[256];
    int ncmd = commands(names, sizeof names);
    ck_assert_int_eq(run("'%s' --help 2>&1", MEMDIFF_CLI_PATH), 0);
    ck_assert_msg(strstr(out, "man memdiff") != NULL && strstr(out, "docs/") == NULL, "%.3000s",
                  out);
    for (const char *c = names; ncmd-- > 0; c += strlen(c) + 1) {
        ck_assert_int_eq(run("'%s' %s --help 2>&1", MEMDIFF_CLI_PATH, c), 0);
        ck_assert_msg(strstr(out, "man memdiff") != NULL, "memdiff %s --help:\n%s", c, out);
        ck_assert_msg(strstr(out, "docs/") == NULL, "memdiff %s --help names docs/:\n%s", c, out);
    }
}
END_TEST

START_TEST(version_names_library_and_file_format)
{
    char want[128];
    /* The library's version as linked (memdiff_version()) is the header's: one build. */
    snprintf(want, sizeof want, "memdiff %s (snapshot file format %d.%d)\n", memdiff_version(),
             MEMDIFF_FILE_VERSION_MAJOR, MEMDIFF_FILE_VERSION_MINOR);
    ck_assert_str_eq(memdiff_version(), MEMDIFF_VERSION_STRING);
    ck_assert_int_eq(run("'%s' --version 2>&1", MEMDIFF_CLI_PATH), 0);
    ck_assert_str_eq(out, want);
    ck_assert_int_eq(run("'%s' -V 2>&1", MEMDIFF_CLI_PATH), 0);
    ck_assert_str_eq(out, want);
    ck_assert_int_eq(run("'%s' -V 2>/dev/null", MEMDIFF_CLI_PATH), 0);
    ck_assert_str_eq(out, want); /* on stdout */
    ck_assert_int_eq(run("'%s' -v 2>&1", MEMDIFF_CLI_PATH), 2); /* -v is not -V */
}
END_TEST

/* ---- bash completion ------------------------------------------------------------------------ */

static char tmp[64];

static void setup(void)
{
    strcpy(tmp, "/tmp/memdiff_manual_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "test_manual: could not remove %s\n", tmp);
}

/* COMPREPLY for the words of a command line, the last one being completed (words: a bash
 * array's elements, quoted for bash), as "[a] [b] ...". A plain bash, not interactive: no
 * bash-completion package, no user's rc file. */
static const char *complete(const char *words)
{
    int rc = run("cd '%s' && bash --norc --noprofile -c 'source \"$0\"; COMP_WORDS=(%s); "
                 "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _memdiff; "
                 "printf \"[%%s] \" \"${COMPREPLY[@]}\"' '%s' 2>&1",
                 tmp, words, MEMDIFF_COMPLETION);
    ck_assert_msg(rc == 0, "bash: exit %d: %s", rc, out);
    return out;
}

#define ASSERT_COMPLETES(words, want)                                                          \
    do {                                                                                       \
        const char *got_ = complete(words);                                                    \
        ck_assert_msg(strcmp(got_, want) == 0, "memdiff %s<TAB>: got \"%s\", want \"%s\"",     \
                      words, got_, want);                                                      \
    } while (0)

START_TEST(completion_offers_commands_options_and_values)
{
    ASSERT_COMPLETES("memdiff \"\"", "[snap] [diff] [show] [watch] [wss] [record] [run] [report] "
                                     "[system] [help] [--help] [-h] [--version] [-V] ");
    ASSERT_COMPLETES("memdiff di", "[diff] ");
    ASSERT_COMPLETES("memdiff help w", "[watch] [wss] ");
    ASSERT_COMPLETES("memdiff diff --so", "[--sort] ");
    /* show and diff take system files too, whose processes sort by their figures. */
    ASSERT_COMPLETES("memdiff show --sort \"\"", "[size] [net] [address] [name] [pid] [rss] [pss] "
                                               "[uss] [swap] ");
    ASSERT_COMPLETES("memdiff system --sort p", "[pid] [pss] ");
    ASSERT_COMPLETES("memdiff snap 1 --depth d", "[deep] ");
    ASSERT_COMPLETES("memdiff watch 1 -d \"\"", "[fast] [standard] [deep] ");
    ASSERT_COMPLETES("memdiff watch 1 --baseline f", "[first] ");
    /* A category list: the last item completed, the ones before kept. */
    ASSERT_COMPLETES("memdiff show --category image,s", "[image,stack] [image,shared] "
                                                        "[image,special] ");
    /* bash splits "--color=al" at '=' (COMP_WORDBREAKS): words "--color", "=", "al". */
    ASSERT_COMPLETES("memdiff diff --col", "[--color=] ");
    ASSERT_COMPLETES("memdiff diff --color = \"\"", "[auto] [always] [never] ");
    ASSERT_COMPLETES("memdiff diff --color = al", "[always] ");
    /* wss's options are its own: no report options there. */
    ASSERT_COMPLETES("memdiff wss --c", "[--count] [--cumulative] ");
    /* record and run: their options, then after "--" the command's words. */
    ASSERT_COMPLETES("memdiff record --th", "[--threshold] ");
    ASSERT_COMPLETES("memdiff run --no", "[--no-ptrace] ");
    ASSERT_COMPLETES("memdiff run -- memdiff_no_such_comman", "[] ");
    ASSERT_COMPLETES("memdiff frob \"\"", "[] ");
}
END_TEST

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* text's "[word] " items, sorted, into one string: compgen lists files in directory order. */
static void sorted_items(const char *text, char *buf, size_t size)
{
    char copy[4096];
    const char *item[64];
    size_t n = 0;
    ck_assert_uint_lt(strlen(text), sizeof copy);
    strcpy(copy, text);
    for (char *p = copy; (p = strchr(p, '[')) != NULL && n < 64;) {
        item[n++] = p;
        p = strstr(p, "] ");
        ck_assert_ptr_nonnull(p);
        p[1] = '\0';
        p += 2;
    }
    qsort(item, n, sizeof item[0], by_string);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s ", item[i]);
}

/* As ASSERT_COMPLETES, in any order. */
#define ASSERT_COMPLETES_ANY_ORDER(words, want)                                                \
    do {                                                                                       \
        char got_[4096], want_[4096];                                                          \
        sorted_items(complete(words), got_, sizeof got_);                                      \
        sorted_items(want, want_, sizeof want_);                                               \
        ck_assert_msg(strcmp(got_, want_) == 0, "memdiff %s<TAB>: got \"%s\", want \"%s\"",     \
                      words, got_, want_);                                                     \
    } while (0)

START_TEST(completion_offers_files_and_pids)
{
    char cmd[256], words[128], want[128];
    snprintf(cmd, sizeof cmd, "cd '%s' && touch a.mds 'b c.mds' notes.txt rec.mdt && mkdir dir",
             tmp);
    ck_assert_int_eq(system(cmd), 0);
    /* diff: snapshot files (a name with a space kept whole) and directories, not other files. */
    ASSERT_COMPLETES_ANY_ORDER("memdiff diff \"\"", "[a.mds] [b c.mds] [dir] ");
    ASSERT_COMPLETES("memdiff diff a.mds b", "[b c.mds] ");
    /* report: timeline files and directories. */
    ASSERT_COMPLETES_ANY_ORDER("memdiff report \"\"", "[rec.mdt] [dir] ");
    /* snap -o: any file. */
    ASSERT_COMPLETES("memdiff snap 1 -o n", "[notes.txt] ");
    /* A pid: this process's, among those whose id starts the same. */
    snprintf(words, sizeof words, "memdiff snap %d", (int)getpid());
    snprintf(want, sizeof want, "[%d]", (int)getpid());
    ck_assert_msg(strstr(complete(words), want) != NULL, "%s<TAB>: %s", words, out);
    snprintf(words, sizeof words, "memdiff show %d", (int)getpid());
    ck_assert_msg(strstr(complete(words), want) != NULL, "%s<TAB>: %s", words, out);
    /* A process name: this process's, as /proc/PID/comm has it. */
    char comm[64] = "";
    FILE *f = fopen("/proc/self/comm", "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(comm, sizeof comm, f));
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    snprintf(words, sizeof words, "memdiff watch --exact %.6s", comm);
    snprintf(want, sizeof want, "[%s]", comm);
    ck_assert_msg(strstr(complete(words), want) != NULL, "%s<TAB>: %s", words, out);
}
END_TEST

/* Every long option a command's --help prints is offered after "memdiff CMD --". */
START_TEST(completion_knows_every_option)
{
    char names[256], opts[2048], words[300], want[2100];
    int ncmd = commands(names, sizeof names);
    for (const char *c = names; ncmd-- > 0; c += strlen(c) + 1) {
        int n = long_options(c, opts, sizeof opts);
        snprintf(words, sizeof words, "memdiff %s --", c);
        char offered[sizeof out];
        strcpy(offered, complete(words));
        for (const char *o = opts; n-- > 0; o += strlen(o) + 1) {
            snprintf(want, sizeof want, "[%s]", o);
            if (strcmp(o, "--color") == 0)
                snprintf(want, sizeof want, "[%s", o); /* offered as "--color=" */
            ck_assert_msg(strstr(offered, want) != NULL, "memdiff %s %s: not completed (%s)", c,
                          o, offered);
        }
    }
}
END_TEST

Suite *manual_suite(void)
{
    Suite *s = suite_create("manual");
    TCase *tc = tcase_create("man page and help");
    tcase_add_test(tc, man_page_renders_without_warnings);
    tcase_add_test(tc, man_page_documents_every_option);
    tcase_add_test(tc, help_names_the_man_page);
    tcase_add_test(tc, version_names_library_and_file_format);
    suite_add_tcase(s, tc);
    tc = tcase_create("bash completion");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, completion_offers_commands_options_and_values);
    tcase_add_test(tc, completion_offers_files_and_pids);
    tcase_add_test(tc, completion_knows_every_option);
    suite_add_tcase(s, tc);
    return s;
}
