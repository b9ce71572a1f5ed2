/*
 * fixture_tree.h - expands a recorded /proc tree (tests/fixtures/recorded/, README there) into a
 * temporary directory: files are copied, and each NAME.runs file (the compact form of a sparse
 * binary file such as pagemap or kpageflags) becomes NAME, written with pwrite at its offsets so
 * that the file is sparse and as large as its last entry needs.
 */
#ifndef MEMDIFF_TEST_FIXTURE_TREE_H
#define MEMDIFF_TEST_FIXTURE_TREE_H

#include <stddef.h>

/* A new directory under /tmp holding the expanded copy of the tree at src, as a malloc'd path;
 * NULL on failure, with the reason in err. */
char *fixture_tree_expand(const char *src, char *err, size_t err_size);

/* Removes the expanded tree and frees path. NULL is allowed. */
void fixture_tree_remove(char *path);

#endif
