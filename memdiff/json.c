/*
 * json.c - the library's one JSON writer (json.h says the rules; docs/json-report.md, the schema
 * docs/schema/memdiff.schema.json). Strings are labels and paths a process chose: a file name
 * may hold any byte but NUL, so the writer never assumes UTF-8 and keeps the exact bytes
 * recoverable (the "_hex" sibling) while the string itself stays valid UTF-8 JSON (RFC 8259).
 */
#include <inttypes.h>
#include <string.h>

#include "base/error.h"
#include "base/escape.h"
#include "json.h"
#include "memdiff.h"

/* Beyond this a double (jq, JavaScript) no longer holds every integer: 2^53. */
#define EXACT_MAX (UINT64_C(1) << 53)

void memdiff__json_init(memdiff__json *j, FILE *out, int one_line)
{
    memset(j, 0, sizeof *j);
    j->out = out;
    j->one_line = one_line;
}

static int is_inline(const memdiff__json *j)
{
    return j->one_line || (j->inline_from && j->depth >= j->inline_from);
}

/* The separator and indentation before a member, and its key. */
static void begin_member(memdiff__json *j, const char *key, const char *suffix)
{
    if (j->depth > 0) {
        int n = j->members[j->depth - 1]++;
        if (is_inline(j)) {
            if (n)
                fputs(j->one_line ? "," : ", ", j->out);
        } else {
            fputs(n ? ",\n" : "\n", j->out);
            for (int i = 0; i < j->depth; i++)
                fputs("  ", j->out);
        }
    }
    if (key) {
        fprintf(j->out, "\"%s%s\":", key, suffix ? suffix : "");
        if (!j->one_line)
            fputc(' ', j->out);
    }
}

void memdiff__json_open(memdiff__json *j, const char *key, char bracket, int inline_)
{
    begin_member(j, key, NULL);
    fputc(bracket, j->out);
    if (j->depth == MEMDIFF__JSON_DEPTH)
        return; /* a writer bug; the tests' schema check would see the broken document */
    if (inline_ && !j->inline_from)
        j->inline_from = j->depth + 1;
    j->close[j->depth] = bracket == '{' ? '}' : ']';
    j->members[j->depth] = 0;
    j->depth++;
}

void memdiff__json_close(memdiff__json *j)
{
    if (j->depth == 0)
        return;
    int had = j->members[j->depth - 1];
    int was_inline = is_inline(j);
    j->depth--;
    if (!was_inline && had) {
        fputc('\n', j->out);
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->out);
    }
    fputc(j->close[j->depth], j->out);
    if (j->inline_from > j->depth)
        j->inline_from = 0;
    if (j->depth == 0)
        fputc('\n', j->out);
}

/* The bytes of s as a JSON string's content: the one escaping routine. Returns whether every
 * byte was part of valid UTF-8 (else some were written as \ufffd). */
static int put_escaped(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    int exact = 1;
    fputc('"', out);
    while (n > 0) {
        size_t len = memdiff__utf8_len(p, n);
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\b':
            fputs("\\b", out);
            break;
        case '\f':
            fputs("\\f", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            if (len == 0) {
                fputs("\\ufffd", out);
                exact = 0;
            } else if (*p < 0x20 || *p == 0x7F) {
                fprintf(out, "\\u%04x", *p);
            } else {
                fwrite(p, 1, len, out);
            }
        }
        if (len == 0)
            len = 1;
        p += len;
        n -= len;
    }
    fputc('"', out);
    return exact;
}

void memdiff__json_string(memdiff__json *j, const char *key, const char *s)
{
    if (!s) {
        memdiff__json_null(j, key);
        return;
    }
    begin_member(j, key, NULL);
    if (put_escaped(j->out, s) || !key)
        return;
    /* Not UTF-8 (a file name in Latin-1, a cut sequence): the exact bytes beside it. */
    begin_member(j, key, "_hex");
    fputc('"', j->out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        fprintf(j->out, "%02x", *p);
    fputc('"', j->out);
}

void memdiff__json_null(memdiff__json *j, const char *key)
{
    begin_member(j, key, NULL);
    fputs("null", j->out);
}

void memdiff__json_bool(memdiff__json *j, const char *key, int v)
{
    begin_member(j, key, NULL);
    fputs(v ? "true" : "false", j->out);
}

void memdiff__json_uint(memdiff__json *j, const char *key, uint64_t v)
{
    begin_member(j, key, NULL);
    fprintf(j->out, v <= EXACT_MAX ? "%" PRIu64 : "\"%" PRIu64 "\"", v);
}

void memdiff__json_int(memdiff__json *j, const char *key, int64_t v)
{
    begin_member(j, key, NULL);
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    fprintf(j->out, mag <= EXACT_MAX ? "%" PRId64 : "\"%" PRId64 "\"", v);
}

void memdiff__json_address(memdiff__json *j, const char *key, uint64_t v)
{
    begin_member(j, key, NULL);
    fprintf(j->out, "\"0x%" PRIx64 "\"", v);
}

void memdiff__json_document(memdiff__json *j, const char *kind)
{
    memdiff__json_open(j, NULL, '{', 0);
    memdiff__json_uint(j, "version", MEMDIFF__JSON_SCHEMA_VERSION);
    memdiff__json_string(j, "kind", kind);
}

int memdiff__json_finish(FILE *out, const char *who)
{
    if (fflush(out) != 0 || ferror(out))
        return memdiff__set_error(MEMDIFF_EIO, "%s: writing the report failed", who);
    return MEMDIFF_OK;
}

void memdiff__json_seconds(memdiff__json *j, const char *key, uint64_t ns)
{
    begin_member(j, key, NULL);
    fprintf(j->out, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

/* Days since 1970-01-01 as a proleptic Gregorian date (H. Hinnant's civil_from_days): no
 * gmtime, which is neither thread-safe nor the same function on every OS. */
static void civil(uint64_t days, uint64_t *y, unsigned *m, unsigned *d)
{
    uint64_t z = days + 719468u;
    uint64_t era = z / 146097u;
    uint64_t doe = z - era * 146097u;
    uint64_t yoe = (doe - doe / 1460u + doe / 36524u - doe / 146096u) / 365u;
    uint64_t doy = doe - (365u * yoe + yoe / 4u - yoe / 100u);
    uint64_t mp = (5u * doy + 2u) / 153u;
    *d = (unsigned)(doy - (153u * mp + 2u) / 5u + 1u);
    *m = (unsigned)(mp < 10u ? mp + 3u : mp - 9u);
    *y = yoe + era * 400u + (*m <= 2u);
}

void memdiff__json_rfc3339(char *buf, uint64_t ns)
{
    uint64_t s = ns / 1000000000u, y;
    unsigned m, d;
    civil(s / 86400u, &y, &m, &d);
    unsigned sod = (unsigned)(s % 86400u);
    /* y < 2600: 2^64 ns after the epoch is in 2554. */
    snprintf(buf, 48, "%04u-%02u-%02uT%02u:%02u:%02u.%09uZ", (unsigned)y, m, d, sod / 3600u,
             sod / 60u % 60u, sod % 60u, (unsigned)(ns % 1000000000u));
}

void memdiff__json_time(memdiff__json *j, const char *key, uint64_t ns)
{
    if (ns == 0) {
        memdiff__json_null(j, key);
        begin_member(j, key, "_s");
        fputs("null", j->out);
        return;
    }
    char buf[48];
    memdiff__json_rfc3339(buf, ns);
    begin_member(j, key, NULL);
    fprintf(j->out, "\"%s\"", buf);
    begin_member(j, key, "_s");
    fprintf(j->out, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

void memdiff__json_names(memdiff__json *j, const char *key, unsigned bits,
                         const char *(*names)(unsigned bit))
{
    memdiff__json_open(j, key, '[', 1);
    for (unsigned bit = 1; bit != 0; bit <<= 1) {
        const char *name = (bits & bit) ? names(bit) : NULL;
        if (name)
            memdiff__json_string(j, NULL, name);
    }
    memdiff__json_close(j);
}
