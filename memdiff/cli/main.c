/*
 * main.c - the memdiff command-line tool: snapshot a running process into a file, diff two
 * files, show one, or watch a live process for growth. docs/memdiff.1 is its manual (man
 * memdiff), docs/cli.md its guide.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Choosing processes (select.c), in the help of every command that takes them. */
#define PROC_OPTIONS                                                                            \
    "      --name REGEX   processes whose name (as ps shows it) matches the extended REGEX\n"  \
    "      --exact NAME   processes whose name is NAME (pgrep -x)\n"

/* How text reports look (view.c), in the help of diff, show and watch. */
#define VIEW_OPTIONS                                                                            \
    "      --sort KEY     blocks by size, net, address (default) or name; the processes of\n"  \
    "                     system snapshots by pid (default), rss, pss, uss or swap\n"         \
    "      --top N        the first N blocks only\n"                                          \
    "      --category C   rows and blocks of these categories only (heap,stack,...)\n"        \
    "  -H, --human        sizes in KiB, MiB, GiB with one decimal\n"                           \
    "      --color WHEN   auto (default: a terminal and NO_COLOR unset), always or never\n"   \
    "  -w, --width N      lines fit N (>= 80) columns (default 100; 0: no limit)\n"

static const char tool_help[] =
    "usage: memdiff COMMAND [ARGS...]\n"
    "\n"
    "Page-level snapshots of a process's address space, kept in files and compared.\n"
    "\n"
    "commands:\n"
    "  snap PROC -o FILE [--depth D]     snapshot processes into files\n"
    "  diff A B [--verbose] [--json]     where memory went between snapshot files A and B\n"
    "  show FILE|PROC [--json] [--regions]  a snapshot, or live processes: totals, blocks\n"
    "  watch PROC --interval T [--count N]  periodic diffs of a live process (leak hunting)\n"
    "  wss PROC [--interval T] [--count N] [--cumulative|--profile]\n"
    "                                    working-set size of a live process (wss.pl)\n"
    "  record PROC|-- COMMAND -o FILE    a timeline of memory over time (polls, snapshots)\n"
    "  run [OPTIONS] -- COMMAND          run a command; its memory at the peak and at exit\n"
    "  report FILE --html OUT [--svg OUT]  a timeline as an HTML page or an SVG chart\n"
    "  system [-o FILE] [--sort K] [--top N]  every process and physical page of the machine\n"
    "  help [COMMAND]                    this text, or a command's\n"
    "\n"
    "PROC: pids, self (memdiff itself; snap and show only), --name REGEX, --exact NAME.\n"
    "\n"
    "options:\n"
    "  --help, -h      show help (after a command: that command's)\n"
    "  --version, -V   show the version of memdiff and of its snapshot file format\n"
    "\n"
    "exit status: 0 ok, 1 a --fail-on condition held, 2 usage error or failure; run: the\n"
    "command's; record and run: 127 (126) when the command is not found (not executable).\n"
    "The manual: man memdiff.\n";

static const char snap_help[] =
    "usage: memdiff snap PID... | self | --name REGEX | --exact NAME  -o FILE [--depth D]\n"
    "                    [--pss] [--quiet] [--json]\n"
    "\n"
    "Takes a snapshot of each process and writes it to FILE (\"-\": standard output). The file\n"
    "is written beside FILE and renamed over it when complete. FILE must not exist yet or be\n"
    "a regular file: a directory, device, FIFO, socket or symbolic link is refused. With\n"
    "several processes FILE must hold %p, replaced by each pid (%% for a %).\n"
    "\n"
    "  -o, --output FILE  where to write the snapshot (required)\n"
    "  -d, --depth D      fast, standard (default) or deep; a depth the caller may not use is\n"
    "                     degraded and the snapshot records why\n"
    "      --pss          without map counts (below deep, or deep not allowed), PSS per\n"
    "                     mapping from /proc/PID/smaps (costs about a page walk more)\n"
    "  -q, --quiet        print nothing on success\n"
    "      --json         print the snapshot written as a JSON object, without its blocks\n"
    "                     (not with -o -)\n"
    PROC_OPTIONS
    "\n"
    "Reading another process needs the right to ptrace it (same user, or root).\n"
    "The manual: man memdiff.\n";

static const char diff_help[] =
    "usage: memdiff diff A B [--verbose] [--json] [--force] [--fail-on EXPR]...\n"
    "\n"
    "Compares snapshot files A (before) and B (after) and prints where memory went: new,\n"
    "freed, net, per category, per block (\"-\" reads one of them from standard input).\n"
    "\n"
    "  -v, --verbose      blocks are runs of pages with equal attributes, with the attributes\n"
    "      --json         the report as one JSON object\n"
    "      --no-header    leave out the snapshot header lines\n"
    "  -f, --force        compare snapshots of different processes or hosts\n"
    "      --fail-on EXPR exit 1 when EXPR holds; may be repeated\n"
    VIEW_OPTIONS
    "\n"
    "EXPR is [SCOPE.]MEASURE OP SIZE: SCOPE a category (image, heap, stack, mapped-file,\n"
    "shared, private, special, own, unknown) or total (the default); MEASURE new, freed, net,\n"
    "net-private (new private - freed: what a leak leaves), private (new private bytes),\n"
    "shared (new shared bytes) or replaced; OP >, >=, <, <=, ==, !=; SIZE bytes with an\n"
    "optional K, M, G, T suffix (binary). Examples: 'net>1M', 'heap.net>0',\n"
    "'private.new>=512K', 'total.freed>10M', 'net-private>0'. The manual: man memdiff.\n";

static const char show_help[] =
    "usage: memdiff show FILE | PID... | self | --name REGEX | --exact NAME\n"
    "                    [--json] [--regions] [--depth D] [--pss]\n"
    "\n"
    "Prints a snapshot file (\"-\": standard input), or snapshots of live processes, one report\n"
    "each: the header (process, host, time, depth, sources), resident, private, shared, swapped\n"
    "and PSS (where known) per category, and the blocks (adjacent regions with one category and\n"
    "label). A word that names an existing file is a file; else digits or self are a process.\n"
    "\n"
    "      --json         as JSON (several processes: one object per line)\n"
    "  -r, --regions      every region rather than blocks\n"
    "  -d, --depth D      depth of a live snapshot: fast, standard (default) or deep\n"
    "      --pss          live snapshots: PSS per mapping where there are no map counts\n"
    "      --no-header    leave out the header lines\n"
    PROC_OPTIONS
    VIEW_OPTIONS
    "\n"
    "The manual: man memdiff.\n";

static const char watch_help[] =
    "usage: memdiff watch PID | --name REGEX | --exact NAME  --interval T [--count N]\n"
    "                     [--baseline first|previous]\n"
    "                     [--depth D] [--pss] [--verbose|--brief|--json] [--fail-on EXPR]...\n"
    "\n"
    "Snapshots one process every T and prints the diff of each snapshot against the previous\n"
    "one (or the first). Stops after N diffs, when the process exits (exit 2), when a\n"
    "--fail-on condition holds (exit 1), or on Ctrl-C (exit 0).\n"
    "\n"
    "  -i, --interval T   time between snapshots: 500ms, 2s, 1.5s, 1m (required)\n"
    "  -n, --count N      number of diffs (default: until stopped)\n"
    "  -b, --baseline B   previous (default) or first\n"
    "  -d, --depth D      fast, standard (default) or deep\n"
    "      --pss          PSS per mapping where there are no map counts (see memdiff snap)\n"
    "  -v, --verbose      verbose diffs (runs of pages with equal attributes)\n"
    "      --brief        one line per diff of plain numbers: the resident and private size,\n"
    "                     the net change and the categories that changed\n"
    "      --json         one JSON object per diff on one line (JSON Lines): absolute sizes\n"
    "                     per category with their change\n"
    "      --no-header    leave out the snapshot header lines of each report\n"
    "      --fail-on EXPR stop with exit 1 when EXPR holds for a diff (see memdiff diff --help)\n"
    PROC_OPTIONS
    VIEW_OPTIONS
    "\n"
    "The manual: man memdiff.\n";

static const char wss_help[] =
    "usage: memdiff wss PID | --name REGEX | --exact NAME  [--interval T] [--count N]\n"
    "                   [--cumulative | --profile] [--times] [--json]\n"
    "\n"
    "Measures the working-set size of one process as Brendan Gregg's wss.pl does: clears its\n"
    "pages' referenced bits (/proc/PID/clear_refs), sleeps T, and sums what smaps calls\n"
    "Referenced. Each line: Est(s), the estimated span measured (from the middle of clearing\n"
    "to the middle of reading), then RSS, PSS and Ref (the working set) in MiB.\n"
    "\n"
    "  -i, --interval T   sleep per sample: 1ms, 500ms, 2s (default 1s; with --profile 1ms)\n"
    "  -n, --count N      samples (default 1; --cumulative: until Ctrl-C; --profile: 10)\n"
    "  -C, --cumulative   clear once, then show the growing working set every T\n"
    "  -P, --profile      clear once, then read after T, 2T, 4T, 8T... (power-of-two steps)\n"
    "  -t, --times        also show Slp(s), the time slept, and Dur(s), clear to end of read\n"
    "      --json         one JSON object per sample on one line (JSON Lines), no header\n"
    PROC_OPTIONS
    "\n"
    "The header comes with the first sample: an error is never printed after it.\n"
    "Clearing referenced bits disturbs the kernel's page aging for the process and needs the\n"
    "process's owner or root. The manual: man memdiff.\n";

/* The recorder's options (recorder.c), in the help of record and run. */
#define RECORDER_OPTIONS                                                                        \
    "  -i, --interval T   time between polls of the totals: 100ms (default), 50ms, 1s\n"      \
    "  -d, --depth D      depth of the snapshots: fast, standard (default) or deep\n"         \
    "      --pss          snapshots: PSS per mapping where there are no map counts\n"         \
    "  -t, --threshold S  a snapshot when resident memory moved by more than S since the last\n" \
    "                     one, or VmHWM rose by more than S over the last peak: a size (8M)\n" \
    "                     or a percentage (default 5%, at least 4 MiB)\n"                      \
    "      --no-ptrace    do not stop the command at its exit for a last snapshot\n"         \
    "  -q, --quiet        no summary on stderr\n"

static const char record_help[] =
    "usage: memdiff record PID | --name REGEX | --exact NAME  -o FILE [options]\n"
    "       memdiff record -o FILE [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Records one process's memory over time into the timeline FILE (man memdiff, FILES):\n"
    "its totals (VmRSS, VmHWM, RssAnon, ...) every T, and a snapshot at the start, when\n"
    "memory moved beyond the threshold, at each new peak, at each mark the program sends\n"
    "(memdiff_mark()), on SIGUSR1 to the recorder, and at exit. A running PID is not stopped;\n"
    "a COMMAND is started with the mark channel and stopped at its exit for a last snapshot\n"
    "(ptrace, where allowed). Ends when the process exits, or on Ctrl-C or SIGTERM (the\n"
    "process runs on). Every record is whole on disk when written.\n"
    "\n"
    "  -o, --output FILE  the timeline file (required; replaced when it exists)\n"
    "      --json         the summary as one JSON object on one line (on stderr)\n"
    RECORDER_OPTIONS
    PROC_OPTIONS
    "\n"
    "exit status: 0 recorded, 2 error (a write error keeps every record before it), 127\n"
    "COMMAND not found, 126 not executable. The manual: man memdiff.\n";

static const char run_help[] =
    "usage: memdiff run [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND, records its memory as memdiff record does, and when it exits prints on\n"
    "stderr its peak resident size (VmHWM), what its memory was made of at the snapshot with\n"
    "the most resident and just before exit (categories and largest blocks), and what changed\n"
    "between them. COMMAND's stdin, stdout and stderr are its own; Ctrl-C goes to COMMAND,\n"
    "SIGTERM to memdiff is passed on to it.\n"
    "\n"
    "  -o, --output FILE  also keep the timeline in FILE (default: none written)\n"
    "      --json         the summary as one JSON object on one line (on stderr)\n"
    RECORDER_OPTIONS
    VIEW_OPTIONS
    "(run's blocks: --sort size --top 10 unless given)\n"
    "\n"
    "exit status: COMMAND's (128+N when killed by signal N), 127 not found, 126 not\n"
    "executable, 2 error. The manual: man memdiff.\n";
static const char report_help[] =
    "usage: memdiff report FILE [--html OUT.html] [--svg OUT.svg] [--wss WSS.jsonl] [--top N]\n"
    "\n"
    "Draws a timeline file (memdiff record): resident memory stacked by category at the\n"
    "snapshots, with the polled VmRSS and VmHWM as lines, the peak and the marks. The HTML page\n"
    "is one self-contained file (no network): hover for the figures, pick two snapshots for\n"
    "their diff by category and their largest blocks (start -> peak first). Diffs are exact\n"
    "(memdiff_compare) for every pair up to 40 snapshots; beyond, for consecutive snapshots\n"
    "and start, peak and end. At least one of --html and --svg (\"-\": standard output).\n"
    "\n"
    "      --html OUT     the HTML page\n"
    "      --svg OUT      the chart alone as an SVG file\n"
    "      --wss FILE     add a working-set profile: the JSON Lines of memdiff wss in profile\n"
    "                     mode\n"
    "      --top N        blocks per diff in the page (default 10, the largest new + freed)\n"
    "\n"
    "A corrupt or cut timeline: exit 2 naming the record and its offset (a file cut inside its\n"
    "last record is shown up to there, with a warning). The manual: man memdiff.\n";

static const char system_help[] =
    "usage: memdiff system [-o FILE] [--sort pid|rss|pss|uss|swap] [--top N] [--user U]\n"
    "                      [--name REGEX] [--json] [--no-phys] [-H] [--color WHEN] [-w N]\n"
    "\n"
    "Every process of the machine the caller may read, with its RSS, PSS, USS and swap (and the\n"
    "anonymous, file and shmem part of its RSS), and, where privileged (root: CAP_SYS_ADMIN),\n"
    "the physical table: every physical page by kind (anon, file-active, slab, free...) and\n"
    "owner (one process, shared, unread, unmapped, kernel, free), checked against\n"
    "/proc/meminfo. Unprivileged: the caller's own processes, exact (smaps_rollup); the others\n"
    "counted as unreadable, and the physical table left out with the reason. A figure shown\n"
    "with ~ is an estimate, a dash unknown. Processes unreadable or exiting are never errors.\n"
    "memdiff diff A B of two system files: processes started, exited, grew, shrank, and the\n"
    "physical table's change; memdiff show FILE prints one.\n"
    "\n"
    "  -o, --output FILE  save the system snapshot to FILE (a line of summary instead of the\n"
    "                     report, which --json still prints)\n"
    "      --sort KEY     processes by pid (default), or largest first by rss, pss, uss, swap\n"
    "      --top N        the first N processes only (sums stay the whole machine's)\n"
    "  -u, --user U       the processes of user U (a name or a uid) only\n"
    "      --name REGEX   the processes whose name (as ps shows it) matches REGEX only\n"
    "      --json         the report as one JSON object (\"kind\": \"system\")\n"
    "      --no-phys      no physical table, even where it could be read (faster)\n"
    "      --no-header    leave out the header lines\n"
    "  -q, --quiet        with -o: no summary line\n"
    "  -H, --human        sizes in KiB, MiB, GiB with one decimal\n"
    "      --color WHEN   auto (default), always or never\n"
    "  -w, --width N      lines fit N (>= 80) columns (default 100; 0: no limit)\n"
    "\n"
    "memdiff diff of system files fails on conditions MEASURE OP SIZE, MEASURE the change of\n"
    "the processes' sum of rss, pss, uss, swap, anon, file or shmem, the count of processes\n"
    "started, exited, grew or shrank, or phys.KIND (phys.anon, phys.slab, phys.free,\n"
    "phys.total...): the change of the physical table's bytes of that kind. Examples:\n"
    "'pss>100M', 'started>0', 'phys.slab>64M'. The manual: man memdiff.\n";

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"snap", cli_cmd_snap, snap_help},
    {"diff", cli_cmd_diff, diff_help},
    {"show", cli_cmd_show, show_help},
    {"watch", cli_cmd_watch, watch_help},
    {"wss", cli_cmd_wss, wss_help},
    {"record", cli_cmd_record, record_help},
    {"run", cli_cmd_run, run_help},
    {"report", cli_cmd_report, report_help},
    {"system", cli_cmd_system, system_help},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

int cli_help(const char *cmd, FILE *out)
{
    if (!cmd) {
        fputs(tool_help, out);
        return 0;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(cmd, commands[i].name) == 0) {
            fputs(commands[i].help, out);
            return 0;
        }
    }
    return -1;
}

void cli_put_text(FILE *out, const char *text)
{
    char small[256];
    size_t n = memdiff_escape_text(small, sizeof small, text);
    char *big = n < sizeof small ? NULL : malloc(n + 1);
    if (big)
        memdiff_escape_text(big, n + 1, text);
    /* Out of memory: the part that fitted, marked as cut. */
    fputs(big ? big : small, out);
    if (n >= sizeof small && !big)
        fputs("...", out);
    free(big);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    /* The message quotes the arguments it refuses: escaped like any text from outside. */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "memdiff%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    cli_put_text(stderr, msg);
    fprintf(stderr, "\nTry 'memdiff %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
    return CLI_EXIT_ERROR;
}

const char *cli_detail(int status)
{
    const char *detail = memdiff_last_error();
    /* The library's details start with the function that failed ("memdiff_compare: ..."): an
     * API name means nothing to someone at the command line. */
    if (strncmp(detail, "memdiff_", 8) == 0) {
        size_t n = strspn(detail + 8, "abcdefghijklmnopqrstuvwxyz_");
        if (strncmp(detail + 8 + n, ": ", 2) == 0)
            detail += 8 + n + 2;
    }
    return detail[0] ? detail : memdiff_strerror(status);
}

int cli_error(const char *cmd, int status, const char *what)
{
    const char *detail = cli_detail(status);
    fprintf(stderr, "memdiff %s: %s: %s\n", cmd, what, detail);
    return CLI_EXIT_ERROR;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(tool_help, stderr);
        return CLI_EXIT_ERROR;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        cli_help(NULL, stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("memdiff %s (snapshot file format %d.%d)\n", memdiff_version(),
               MEMDIFF_FILE_VERSION_MAJOR, MEMDIFF_FILE_VERSION_MINOR);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc > 3)
            return cli_usage_error("help", "one command at most");
        if (cli_help(argc == 3 ? argv[2] : NULL, stdout) != 0)
            return cli_usage_error(NULL, "no command '%s'", argv[2]);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    if (cmd[0] == '-')
        return cli_usage_error(NULL, "unknown option '%s'", cmd);
    return cli_usage_error(NULL, "unknown command '%s'", cmd);
}
