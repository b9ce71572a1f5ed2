/*
 * cli_target.c - the process the cli suite snapshots: reads one-byte commands on stdin and
 * answers each on stdout. 'a' allocates and touches 8 MiB with malloc; 'd' answers at once and
 * does the same 300 ms later (to grow while memdiff watches); 'f' frees; 'm' maps the file named
 * by $MEMDIFF_CLI_TARGET_MAP (which it first fills with 64 MiB) and from then on, while it waits
 * for the next command, reads one more of its pages every 20 ms, and drops them all (MADV_DONTNEED)
 * once it has read the last (5 s on): two snapshots more than 20 ms apart see that mapping
 * change; 'q' or EOF exits. $MEMDIFF_CLI_TARGET_NAME, when set, becomes its process name
 * (/proc/PID/comm) before it answers 'r'.
 *
 * A program of its own, built without sanitizers, rather than a fork of the test: the 8 MiB must
 * come from glibc's malloc (a heap to memdiff), not from a sanitizer's allocator.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define TARGET_BYTES ((size_t)8 << 20)

static void answer(char c)
{
    if (write(1, &c, 1) != 1)
        _exit(1);
}

#define MAP_BYTES ((size_t)64 << 20) /* 256 reads of MAP_STRIDE: 5 s before it repeats */

/* The file of 'm', filled and mapped read-only; NULL when it cannot be. */
static const volatile char *map_file(void)
{
    const char *path = getenv("MEMDIFF_CLI_TARGET_MAP");
    int fd = path ? open(path, O_RDWR | O_CREAT | O_TRUNC, 0600) : -1;
    if (fd < 0)
        return NULL;
    static char chunk[1 << 16];
    memset(chunk, 'm', sizeof chunk);
    for (size_t done = 0; done < MAP_BYTES; done += sizeof chunk) {
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) {
            close(fd);
            return NULL;
        }
    }
    void *p = mmap(NULL, MAP_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* The kernel maps up to fault_around_bytes (64 KiB by default) of cached file pages at a read
 * fault: pages read are that far apart, or a read would map nothing new. */
#define MAP_STRIDE ((size_t)256 << 10)

/* Waits for stdin to be readable, changing the mapping every 20 ms meanwhile. */
static void wait_touching(const volatile char *map, size_t *touched)
{
    struct pollfd in = {0, POLLIN, 0};
    while (map && poll(&in, 1, 20) == 0) {
        if (*touched == MAP_BYTES / MAP_STRIDE) {
            madvise((void *)(uintptr_t)map, MAP_BYTES, MADV_DONTNEED);
            *touched = 0;
        } else {
            (void)map[*touched * MAP_STRIDE];
            ++*touched;
        }
    }
}

int main(void)
{
    const volatile char *map = NULL;
    size_t touched = 0;
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama: let memdiff read us */
#endif
    /* A name of the test's choosing (memdiff --name finds us by it): set before answering. */
    const char *name = getenv("MEMDIFF_CLI_TARGET_NAME");
    if (name)
        prctl(PR_SET_NAME, name, 0, 0, 0);
    char *block = NULL;
    char c;
    answer('r');
    for (;;) {
        wait_touching(map, &touched);
        if (read(0, &c, 1) != 1 || c == 'q')
            break;
        if (c == 'm' && !map && !(map = map_file()))
            return 1;
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
