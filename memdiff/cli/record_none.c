/*
 * record_none.c - `memdiff record` and `memdiff run` where there is no recorder (Windows: it
 * needs fork, ptrace and POSIX signals; recorder.c).
 */
#include "cli.h"

static int none(const char *cmd, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "memdiff %s: not available on this system (Linux only)\n", cmd);
    return CLI_EXIT_ERROR;
}

int cli_cmd_record(int argc, char **argv)
{
    return none("record", argc, argv);
}

int cli_cmd_run(int argc, char **argv)
{
    return none("run", argc, argv);
}
