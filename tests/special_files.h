/*
 * special_files.h - what a save may find at its output path, made in a test's own temporary
 * directory (never in /dev): nothing, a regular file, directories, a FIFO, a socket, symbolic
 * links and a character device. For the library's and the CLI's saving tests alike.
 */
#ifndef MEMDIFF_TEST_SPECIAL_FILES_H
#define MEMDIFF_TEST_SPECIAL_FILES_H

#include <stddef.h>

typedef enum sf_kind {
    SF_MISSING,       /* nothing: saving creates the file */
    SF_REGULAR,       /* a regular file: saving replaces it */
    SF_EMPTY_DIR,
    SF_FULL_DIR,      /* a directory holding one file */
    SF_FIFO,
    SF_SOCKET,        /* a bound AF_UNIX socket */
    SF_LINK_REGULAR,  /* a symbolic link to a regular file beside it */
    SF_LINK_DANGLING, /* a symbolic link to nothing */
    SF_CHAR_DEVICE,   /* mknod of /dev/null's numbers (1, 3): root only */
    SF_COUNT
} sf_kind;

/* The name the kind is made under in its directory, and what a refusal says of it ("is a FIFO,
 * not a regular file"), NULL for the kinds saving accepts. */
typedef struct sf_info {
    const char *name;
    const char *refusal;
} sf_info;

extern const sf_info sf_kinds[SF_COUNT];

/* Makes kind k at dir/sf_kinds[k].name (and what it needs beside it). Returns 0, or -1 with a
 * reason in why when this process may not make it (a character device without CAP_MKNOD); the
 * test fails on any other error. */
int sf_make(const char *dir, sf_kind k, char *why, size_t why_size);

/* What is at path, in words that change when anything about it changes: type, inode, device
 * numbers, size, link target, the content of a regular file or a link's target, the entries of a
 * directory. For "nothing was touched" checks. */
void sf_state(const char *path, char *buf, size_t size);

/* The number of entries in dir (a temporary left behind shows as one more). */
int sf_entries(const char *dir);

#endif
