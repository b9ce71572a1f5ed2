/*
 * report_fmt.c - what the text reports of diffs (report_text.c) and of snapshots
 * (report_snapshot_text.c) format alike: numbers with thousands separators or in binary units
 * (MEMDIFF_REPORT_HUMAN), columns counted as a terminal shows them, labels cut from the left to
 * a width, ANSI colours (MEMDIFF_REPORT_COLOR), UTC times, and why PSS is unknown.
 *
 * Columns: the text these functions measure is escaped first (escape.c), so it is printable;
 * each character takes one column, East Asian wide ones two. Colour sequences take none: they
 * are written around cells, never inside the text that is measured.
 */
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "internal.h"

int memdiff__report_width(const memdiff_report_options *o)
{
    if (o->width == 0)
        return 0;
    return o->width < MEMDIFF__WIDTH_MIN ? MEMDIFF__WIDTH_MIN
           : o->width > INT_MAX          ? INT_MAX
                                         : (int)o->width;
}

/* ---- numbers ------------------------------------------------------------------------------- */

const char *memdiff__fmt_count(char buf[MEMDIFF__NUM_MAX], uint64_t v, char sign)
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, v);
    char *p = buf;
    if (sign && v)
        *p++ = sign;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            *p++ = ',';
        *p++ = digits[i];
    }
    *p = '\0';
    return buf;
}

/* v in the largest binary unit it reaches, rounded half up to one decimal: "1.5 MiB". Below
 * 1 KiB as bytes ("512 B"). Integer arithmetic: every uint64_t is formatted without a double's
 * rounding (r * 10 < 10 * 2^60 fits). */
static void fmt_human(char *p, size_t size, uint64_t v)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (v < 1024) {
        snprintf(p, size, "%" PRIu64 " B", v);
        return;
    }
    int k = 0;
    uint64_t unit = 1024;
    while (k < 5 && v / unit >= 1024) {
        unit <<= 10;
        k++;
    }
    uint64_t q = v / unit, r = v % unit;
    uint64_t tenths = q * 10 + (r * 10 + unit / 2) / unit;
    if (tenths >= 10240 && k < 5) { /* 1023.95 KiB and more round to 1.0 MiB */
        unit <<= 10;
        k++;
        q = v / unit;
        r = v % unit;
        tenths = q * 10 + (r * 10 + unit / 2) / unit;
    }
    snprintf(p, size, "%" PRIu64 ".%u %s", tenths / 10, (unsigned)(tenths % 10), units[k]);
}

const char *memdiff__fmt_bytes(char buf[MEMDIFF__NUM_MAX], uint64_t v, char sign, unsigned flags)
{
    if (!(flags & MEMDIFF_REPORT_HUMAN))
        return memdiff__fmt_count(buf, v, sign);
    char *p = buf;
    if (sign && v)
        *p++ = sign;
    fmt_human(p, MEMDIFF__NUM_MAX - 1, v);
    return buf;
}

const char *memdiff__fmt_amount(char buf[MEMDIFF__NUM_MAX], uint64_t v, char sign,
                                unsigned flags)
{
    memdiff__fmt_bytes(buf, v, sign, flags);
    if (!(flags & MEMDIFF_REPORT_HUMAN))
        strcat(buf, " bytes"); /* 27 characters at most before: room left */
    return buf;
}

/* ---- columns ------------------------------------------------------------------------------- */

/* Columns of the code point c: 2 for East Asian wide and full-width forms (the ranges of
 * Unicode's EastAsianWidth W and F that terminals draw wide), else 1. */
static int cp_cols(uint32_t c)
{
    return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF && c != 0x303F) ||
                   (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
                   (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
                   (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
                   (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD)
               ? 2
               : 1;
}

/* Bytes of the unit at s (an escape "\xNN" or "\\", or one character) and its columns. */
static size_t unit_at(const char *s, int *cols)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] == '\\' && u[1] == 'x' && u[2] && u[3]) {
        *cols = 4;
        return 4;
    }
    if (u[0] == '\\' && u[1] == '\\') {
        *cols = 2;
        return 2;
    }
    size_t n = memdiff__utf8_len(u, strnlen(s, 4));
    if (n <= 1) {
        *cols = 1;
        return 1;
    }
    uint32_t c = u[0] & (0xFFu >> (n + 1));
    for (size_t i = 1; i < n; i++)
        c = c << 6 | (u[i] & 0x3Fu);
    *cols = cp_cols(c);
    return n;
}

int memdiff__text_cols(const char *s)
{
    int total = 0, cols;
    while (*s) {
        s += unit_at(s, &cols);
        total += cols;
    }
    return total;
}

void memdiff__put_pad(FILE *out, int n)
{
    for (; n > 0; n--)
        fputc(' ', out);
}

void memdiff__put_cell(FILE *out, unsigned flags, const char *text, int width, const char *sgr)
{
    int pad = (width < 0 ? -width : width) - memdiff__text_cols(text);
    if (width > 0)
        memdiff__put_pad(out, pad);
    int color = sgr && (flags & MEMDIFF_REPORT_COLOR);
    if (color)
        fputs(sgr, out);
    fputs(text, out);
    if (color)
        fputs(MEMDIFF__SGR_RESET, out);
    if (width < 0)
        memdiff__put_pad(out, pad);
}

const char *memdiff__sgr_of(const char *signed_text)
{
    return signed_text[0] == '+' ? MEMDIFF__SGR_GROW
           : signed_text[0] == '-' ? MEMDIFF__SGR_SHRINK
                                   : NULL;
}

#define ELLIPSIS "\xe2\x80\xa6" /* U+2026 in UTF-8: one column */

/* text escaped, in small (512 bytes) when it fits, else in scratch; NULL when out of memory. */
static char *escaped(memdiff__arena *scratch, const char *text, char small[512])
{
    size_t n = memdiff_escape_text(NULL, 0, text);
    char *buf = n < 512 ? small : memdiff__arena_alloc_raw(scratch, n + 1);
    if (buf)
        memdiff_escape_text(buf, n + 1, text);
    return buf;
}

int memdiff__put_label(FILE *out, memdiff__arena *scratch, const char *label, int cols)
{
    if (cols <= 0) {
        memdiff__put_text(out, label);
        return MEMDIFF_OK;
    }
    char small[512];
    const char *buf = escaped(scratch, label, small);
    if (!buf)
        return MEMDIFF_ENOMEM;
    int have = memdiff__text_cols(buf);
    const char *p = buf;
    if (have > cols) {
        /* The end of a path names the file: keep it, whole escapes and characters only, and
         * whole path components where one fits ("…/lib/libfoo.so", not "…r/lib/libfoo.so"). */
        int c;
        while (*p && have > cols - 1) {
            p += unit_at(p, &c);
            have -= c;
        }
        const char *slash = *p && *p != '/' ? strchr(p, '/') : NULL;
        if (slash)
            p = slash;
        fputs(ELLIPSIS, out);
    }
    fputs(p, out);
    return MEMDIFF_OK;
}

int memdiff__label_fits(memdiff__arena *scratch, const char *label, int cols)
{
    if (cols <= 0)
        return 1;
    char small[512];
    const char *buf = escaped(scratch, label, small);
    if (!buf)
        return 1; /* memdiff__put_label reports it */
    if (memdiff__text_cols(buf) <= cols)
        return 1;
    const char *slash = strrchr(buf, '/');
    return slash && memdiff__text_cols(slash) <= cols - 1;
}

int memdiff__put_wrapped(FILE *out, memdiff__arena *scratch, const char *lead, const char *text,
                         const char *tail, int indent, int width)
{
    fputs(lead, out);
    return memdiff__put_wrapped_at(out, scratch, memdiff__text_cols(lead), text, tail, indent,
                                   width);
}

int memdiff__put_wrapped_at(FILE *out, memdiff__arena *scratch, int at, const char *text,
                            const char *tail, int indent, int width)
{
    char small[512];
    const char *buf = escaped(scratch, text, small);
    if (!buf)
        return MEMDIFF_ENOMEM;
    int tail_cols = memdiff__text_cols(tail), c;
    for (const char *p = buf; *p;) {
        /* The next word with the spaces before it, on this line if it fits (the tail after the
         * last word too), else on the next; a word wider than a line is cut where it ends. */
        const char *w = p + strspn(p, " "), *e = w;
        int wc = 0;
        while (*e && *e != ' ') {
            e += unit_at(e, &c);
            wc += c;
        }
        int need = (int)(w - p) + wc + (e[strspn(e, " ")] == '\0' ? tail_cols : 0);
        if (width > 0 && at > indent && at + need > width) {
            fputc('\n', out);
            memdiff__put_pad(out, indent);
            at = indent;
            p = w;
        }
        while (p < e) {
            size_t len = unit_at(p, &c);
            if (width > 0 && at > indent && at + c > width) {
                fputc('\n', out);
                memdiff__put_pad(out, indent);
                at = indent;
            }
            fwrite(p, 1, len, out);
            at += c;
            p += len;
        }
    }
    fputs(tail, out);
    return MEMDIFF_OK;
}

/* ---- addresses ----------------------------------------------------------------------------- */

int memdiff__hex_digits(uint64_t v)
{
    int n = 1;
    while (v >>= 4)
        n++;
    return n;
}

int memdiff__range_digits(int digits, uint64_t end)
{
    /* x86-64's vsyscall page (0xffffffffff600000) sits above user space: for its one line, every
     * other would take 8 columns more. Its line sticks out instead (memdiff__range_extra). */
    return end >> 48 ? digits : MEMDIFF__MAX(digits, memdiff__hex_digits(end));
}

int memdiff__range_extra(int digits, uint64_t end)
{
    int d = memdiff__hex_digits(end);
    return d > digits ? 2 * (d - digits) : 0;
}

/* ---- tables -------------------------------------------------------------------------------- */

void memdiff__put_table(FILE *out, unsigned flags, int width, const memdiff__table *t)
{
    int w[MEMDIFF__TABLE_COLS], nw = MEMDIFF__MAX(12, memdiff__text_cols(t->corner));
    for (int r = 0; r < t->nrows; r++)
        nw = MEMDIFF__MAX(nw, memdiff__text_cols(t->names[r]));
    for (int i = 0; i < t->ncols; i++) {
        w[i] = memdiff__text_cols(t->heads[i]);
        for (int r = 0; r < t->nrows; r++)
            w[i] = MEMDIFF__MAX(w[i], memdiff__text_cols(t->cells[r][i]));
    }
    /* A table wider than the report continues below with the columns that did not fit, each
     * part with the row names again. */
    for (int first = 0, end; first < t->ncols; first = end) {
        int used = nw;
        for (end = first; end < t->ncols; end++) {
            if (width && end > first && used + 2 + w[end] > width)
                break;
            used += 2 + w[end];
        }
        if (first)
            fputc('\n', out);
        memdiff__put_cell(out, flags, t->corner, -nw, MEMDIFF__SGR_HEAD);
        for (int i = first; i < end; i++) {
            fputs("  ", out);
            memdiff__put_cell(out, flags, t->heads[i], w[i], MEMDIFF__SGR_HEAD);
        }
        fputc('\n', out);
        for (int r = 0; r < t->nrows; r++) {
            fprintf(out, "%-*s", nw, t->names[r]);
            for (int i = first; i < end; i++) {
                const char *cell = t->cells[r][i];
                fputs("  ", out);
                memdiff__put_cell(out, flags, cell, w[i],
                                  (t->signed_cols >> i) & 1u ? memdiff__sgr_of(cell) : NULL);
            }
            fputc('\n', out);
        }
    }
}

/* ---- times and PSS ------------------------------------------------------------------------- */

/* Civil date from days since 1970-01-01 (Howard Hinnant's algorithm): no gmtime, which is
 * neither thread-safe nor available as gmtime_r everywhere. */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void memdiff__put_time(FILE *out, uint64_t ns)
{
    uint64_t secs = ns / 1000000000u;
    int64_t y;
    unsigned mo, d;
    civil_from_days((int64_t)(secs / 86400), &y, &mo, &d);
    unsigned sod = (unsigned)(secs % 86400);
    fprintf(out, "%04" PRId64 "-%02u-%02u %02u:%02u:%02u.%03u UTC", y, mo, d, sod / 3600,
            sod / 60 % 60, sod % 60, (unsigned)(ns / 1000000u % 1000u));
}

const char *memdiff__pss_unknown(const memdiff_snapshot_info *info)
{
    /* PSS comes from the map counts of deep depth (docs/api.md, "PSS"), or per mapping from
     * smaps when the snapshot asked for it (which says nothing here: the caller's words differ,
     * an option to memdiff_snapshot_take() or memdiff's --pss). */
    if (info->depth < MEMDIFF_DEPTH_DEEP)
        return "needs deep depth: map counts, CAP_SYS_ADMIN";
    return "no map counts: needs CAP_SYS_ADMIN";
}

/* ---- names of bits -------------------------------------------------------------------------- */

const char *memdiff__bit_names(char *buf, size_t size, unsigned bits,
                               const char *(*name)(unsigned bit))
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned b = 1; b && used < size; b <<= 1) {
        const char *n = (bits & b) ? name(b) : NULL;
        if (n)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? " " : "", n);
    }
    return buf;
}
