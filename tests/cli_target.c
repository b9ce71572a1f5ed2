/*
 * cli_target.c - the process the cli suite snapshots: reads one-byte commands on stdin and
 * answers each on stdout. 'a' allocates and touches 8 MiB with malloc; 'd' answers at once and
 * does the same 300 ms later (to grow while memdiff watches); 'f' frees; 'q' or EOF exits.
 *
 * A program of its own, built without sanitizers, rather than a fork of the test: the 8 MiB must
 * come from glibc's malloc (a heap to memdiff), not from a sanitizer's allocator.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define TARGET_BYTES ((size_t)8 << 20)

static void answer(char c)
{
    if (write(1, &c, 1) != 1)
        _exit(1);
}

int main(void)
{
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama: let memdiff read us */
#endif
    char *block = NULL;
    char c;
    answer('r');
    while (read(0, &c, 1) == 1 && c != 'q') {
        if (c == 'd') {
            answer(c);
            struct timespec t = {0, 300 * 1000 * 1000};
            nanosleep(&t, NULL);
        }
        if ((c == 'a' || c == 'd') && !block) {
            block = malloc(TARGET_BYTES);
            if (!block)
                return 1;
            memset(block, 0x5a, TARGET_BYTES);
        } else if (c == 'f') {
            free(block);
            block = NULL;
        }
        if (c != 'd')
            answer(c);
    }
    return 0;
}
