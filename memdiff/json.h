/*
 * json.h - the one JSON writer of the library (json.c): every JSON memdiff writes (diffs,
 * snapshots, watch ticks, wss samples; docs/json-report.md) goes through it, so that strings,
 * numbers and times follow one set of rules:
 *
 * - strings: valid UTF-8 as it is, quote and backslash escaped, control characters and DEL as
 *   \b \f \n \r \t or \u00XX, every byte outside valid UTF-8 as \ufffd; a keyed string that held
 *   such a byte gets a sibling "<key>_hex" with its exact bytes in lowercase hex;
 * - unsigned and signed counts: a JSON number when |v| <= 2^53 (exact as a double, so in jq and
 *   JavaScript), else a string of decimal digits;
 * - addresses: "0x..." lowercase hex strings;
 * - times: "<key>": RFC 3339 in UTC with nanoseconds, "<key>_s": seconds as a number (null both
 *   when unknown).
 *
 * Pretty output puts each member of a multi-line container on its own line, indented by two
 * spaces a level; an inline container (and everything in it) stays on one line. With one_line
 * every container is inline and separators carry no spaces (JSON Lines). No allocation, no
 * locale: the output of one input is always the same bytes. Write errors stay in the stream.
 */
#ifndef MEMDIFF_JSON_H
#define MEMDIFF_JSON_H

#include <stdint.h>
#include <stdio.h>

#define MEMDIFF__JSON_DEPTH 8

typedef struct memdiff__json {
    FILE *out;
    int one_line;
    int depth;                        /* open containers */
    int inline_from;                  /* depth from which containers are inline; 0: none */
    char close[MEMDIFF__JSON_DEPTH];  /* '}' or ']' of each open container */
    int members[MEMDIFF__JSON_DEPTH]; /* members written in each */
} memdiff__json;

/* The schema version every document carries (docs/json-report.md). */
#define MEMDIFF__JSON_SCHEMA_VERSION 3

/* Starts a document on out; one_line: MEMDIFF_REPORT_LINE. */
void memdiff__json_init(memdiff__json *j, FILE *out, int one_line);

/* Opens the document's object with its first members, "version" and "kind". */
void memdiff__json_document(memdiff__json *j, const char *kind);

/* After a document: a stream reports write errors late (buffered), so out is flushed before
 * asking. MEMDIFF_OK, or MEMDIFF_EIO with who in the detail. */
int memdiff__json_finish(FILE *out, const char *who);

/* Opens an object ('{') or array ('['): a member named key of the open object, or (key NULL)
 * the document or an element of the open array. inline_: all of it on one line. */
void memdiff__json_open(memdiff__json *j, const char *key, char bracket, int inline_);

/* Closes the innermost container; closing the document ends it with a newline. */
void memdiff__json_close(memdiff__json *j);

/* Members (key NULL: an array element). */
void memdiff__json_string(memdiff__json *j, const char *key, const char *s); /* NULL: null */
void memdiff__json_null(memdiff__json *j, const char *key);
void memdiff__json_bool(memdiff__json *j, const char *key, int v);
void memdiff__json_uint(memdiff__json *j, const char *key, uint64_t v);
void memdiff__json_int(memdiff__json *j, const char *key, int64_t v);
void memdiff__json_address(memdiff__json *j, const char *key, uint64_t v);
/* A duration in ns as seconds, a JSON number written exactly ("1.500000000"). */
void memdiff__json_seconds(memdiff__json *j, const char *key, uint64_t ns);
/* ns since the Unix epoch (0: unknown): "<key>" RFC 3339, "<key>_s" seconds; both null when 0. */
void memdiff__json_time(memdiff__json *j, const char *key, uint64_t ns);
/* An array of the names of the bits set in bits (names(bit) NULL for unknown bits: left out). */
void memdiff__json_names(memdiff__json *j, const char *key, unsigned bits,
                         const char *(*names)(unsigned bit));

/* The RFC 3339 form of ns since the epoch, "2026-11-26T12:34:56.123456789Z", into buf (at
 * least 48 bytes). */
void memdiff__json_rfc3339(char *buf, uint64_t ns);

#endif /* MEMDIFF_JSON_H */
