/*
 * utf8.c - where valid UTF-8 ends: the escaping of foreign text (escape.c) and the JSON report
 * (memdiff/report_json.c) both pass valid characters through and treat every other byte alone.
 * A file of its own: in escape.c, the compiler inlines it where it hurts, and escaping took 10%
 * more instructions (callgrind, a detail message with a path).
 */
#include "base/escape.h"

size_t memdiff__utf8_len(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* beyond U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++) {
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    }
    return len;
}
