/*
 * escape.c - the one way memdiff turns bytes it does not control (host names from files, paths
 * and labels from a target's maps, detail messages that embed them) into text for a terminal.
 *
 * A target names its own files and a snapshot file names its own host: either can hold ESC
 * sequences that retitle or repaint the operator's terminal, a newline that forges a report
 * line, or a C1 control (0x9B is CSI on terminals that take 8-bit controls, and U+009B, C2 9B
 * in UTF-8, on those that decode first). The rule, also in docs/cli.md ("Text output"):
 *
 *   - a byte of a C0 control (0x00-0x1F, so ESC, newline, CR, tab) or DEL (0x7F): \xNN;
 *   - a byte that does not belong to valid UTF-8 (a stray continuation byte such as a lone 0x9B,
 *     an overlong form, a surrogate, a code point beyond U+10FFFF, a truncated sequence): \xNN,
 *     byte by byte;
 *   - a C1 control written as UTF-8 (U+0080-U+009F, C2 80 - C2 9F): \xc2\xNN;
 *   - a backslash: "\\" when what follows could otherwise be read as an escape (another
 *     backslash, an "x", an escaped byte, or the end of the text), else itself, so that Windows
 *     paths read as they are;
 *   - every other byte, and every other valid UTF-8 character, as it is.
 *
 * NN is two lowercase hex digits. Read back: "\\" is a backslash, "\xNN" the byte NN, any other
 * backslash itself; the escaped text is one line of printable characters.
 */
#include <string.h>

#include "base/escape.h"
#include "memdiff.h"

/* Whether the text at s[0..n) (n >= 1) starts with a byte written as \xNN; *len: the bytes of
 * its first character (1 when escaped). */
static int starts_escaped(const unsigned char *s, size_t n, size_t *len)
{
    *len = memdiff__utf8_len(s, n);
    if (*len == 0 || s[0] < 0x20 || s[0] == 0x7F || (*len == 2 && s[0] == 0xC2 && s[1] < 0xA0)) {
        *len = 1;
        return 1;
    }
    return 0;
}

/* The output for the start of s[0..n) (n >= 1) into unit (at most 4 bytes, no NUL); returns
 * its length, *used: the input bytes it stands for. */
static size_t escape_unit(const unsigned char *s, size_t n, char unit[4], size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    size_t next;
    if (starts_escaped(s, n, used)) {
        unit[0] = '\\';
        unit[1] = 'x';
        unit[2] = hex[s[0] >> 4];
        unit[3] = hex[s[0] & 15];
        return 4;
    }
    if (s[0] == '\\' &&
        (n == 1 || s[1] == '\\' || s[1] == 'x' || starts_escaped(s + 1, n - 1, &next))) {
        unit[0] = unit[1] = '\\';
        return 2;
    }
    memcpy(unit, s, *used);
    return *used;
}

size_t memdiff_escape_text(char *buf, size_t size, const char *text)
{
    const unsigned char *p = (const unsigned char *)(text ? text : "");
    size_t n = strlen((const char *)p), total = 0, written = 0;
    int room = buf != NULL && size > 0;
    while (n > 0) {
        char unit[4];
        size_t used, len = escape_unit(p, n, unit, &used);
        /* Whole units only, and none after the first that did not fit: a cut output never ends
         * in half an escape or half a character, and never skips text. */
        if (room && written + len < size) {
            memcpy(buf + written, unit, len);
            written += len;
        } else {
            room = 0;
        }
        total += len;
        p += used;
        n -= used;
    }
    if (buf && size > 0)
        buf[written] = '\0';
    return total;
}

void memdiff__put_text(FILE *out, const char *text)
{
    const unsigned char *p = (const unsigned char *)(text ? text : "");
    size_t n = strlen((const char *)p);
    while (n > 0) {
        char unit[4];
        size_t used, len = escape_unit(p, n, unit, &used);
        fwrite(unit, 1, len, out);
        p += used;
        n -= used;
    }
}
