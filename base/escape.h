/*
 * escape.h - text memdiff does not control (paths, labels, host names, details that embed
 * them) made safe for a terminal (base/escape.c): the error setter escapes every detail with
 * it, the reports every label.
 */
#ifndef MEMDIFF_BASE_ESCAPE_H
#define MEMDIFF_BASE_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Length of the valid UTF-8 sequence at s[0..n) (1 for ASCII), or 0 when s starts with a byte
 * that does not begin one (stray continuation, overlong form, surrogate, beyond U+10FFFF).
 * utf8.c. */
size_t memdiff__utf8_len(const unsigned char *s, size_t n);

/* text escaped as memdiff_escape_text() does, written to out (escape.c): labels, paths and
 * host names in the text report. Write errors are left in the stream for the caller. */
void memdiff__put_text(FILE *out, const char *text);

#endif /* MEMDIFF_BASE_ESCAPE_H */
