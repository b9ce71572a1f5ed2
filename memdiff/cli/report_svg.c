/*
 * report_svg.c - the charts of memdiff report as SVG: resident memory stacked by category over
 * time with VmRSS and VmHWM as lines, the peak and the marks; and the working-set profile. The
 * same SVG is the --svg file and the picture inside the HTML page, whose script adds hovering
 * and picking on the points drawn here (their data-* attributes carry the exact figures).
 *
 * Readable without colour: each category has a fill pattern of its own (hatching of different
 * directions, dots, crossing lines) and its name written on its band and in the legend; the
 * colours are Okabe and Ito's palette, which stays distinct under the common colour blindnesses.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

const memdiff_category rp_stack_order[MEMDIFF_CAT_COUNT - 1] = {
    MEMDIFF_CAT_IMAGE,  MEMDIFF_CAT_HEAP,    MEMDIFF_CAT_STACK,   MEMDIFF_CAT_MAPPED_FILE,
    MEMDIFF_CAT_SHARED, MEMDIFF_CAT_PRIVATE, MEMDIFF_CAT_SPECIAL, MEMDIFF_CAT_UNKNOWN};

/* Per category: fill, the darker ink of its pattern, and the pattern's strokes in an 8x8 tile. */
static const struct {
    const char *fill, *ink, *path;
} look[MEMDIFF_CAT_COUNT] = {
    [MEMDIFF_CAT_IMAGE] = {"#9fd3f3", "#1f6f9f", "M0,8 L8,0 M-2,2 L2,-2 M6,10 L10,6"},
    [MEMDIFF_CAT_HEAP] = {"#f5c76a", "#9a6400", "M0,0 L8,8 M6,-2 L10,2 M-2,6 L2,10"},
    [MEMDIFF_CAT_STACK] = {"#7fd1b9", "#00664a", "M0,2 L8,2 M0,6 L8,6"},
    [MEMDIFF_CAT_MAPPED_FILE] = {"#f3ec9a", "#6d6500", "M2,2 h1.5 v1.5 h-1.5 z M6,6 h1.5 v1.5 h-1.5 z"},
    [MEMDIFF_CAT_SHARED] = {"#cfa6c4", "#7a2f66", "M0,8 L8,0 M0,0 L8,8"},
    [MEMDIFF_CAT_PRIVATE] = {"#80b3d9", "#004d80", "M2,0 L2,8 M6,0 L6,8"},
    [MEMDIFF_CAT_SPECIAL] = {"#eba27a", "#8a3600", "M0,4 L2,2 L4,4 L6,2 L8,4"},
    [MEMDIFF_CAT_OWN] = {"#dddddd", "#666666", ""},
    [MEMDIFF_CAT_UNKNOWN] = {"#d0d0d0", "#555555", "M4,0 L4,8 M0,4 L8,4"},
};

#define MIB (1024.0 * 1024.0)

/* The chart's frame: the plot inside margins that hold the axes, the legend at the right. */
enum { W = 960, H = 440, LEFT = 72, RIGHT = 210, TOP = 34, BOTTOM = 52 };
#define PW ((double)(W - LEFT - RIGHT))
#define PH ((double)(H - TOP - BOTTOM))

void rp_put_xml(FILE *out, const char *text)
{
    for (const char *p = text; *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*p, out);
        }
    }
}

/* A tick step of 1, 2 or 5 times a power of ten that gives at most `most` steps up to max. */
static double nice_step(double max, int most)
{
    if (!(max > 0))
        return 1;
    double raw = max / most, p = pow(10, floor(log10(raw)));
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

/* A tick step for bytes: a nice number of MiB (or of KiB below a MiB, GiB above a GiB). */
static double size_step(double max, int most)
{
    double unit = max >= 4096 * MIB ? 1024 * MIB : max >= 4 * MIB ? MIB : 1024;
    return nice_step(max / unit, most) * unit;
}

/* A size for an axis or a label: MiB below a GiB, with as many decimals as the step needs. */
static void put_size(FILE *out, double bytes, double step)
{
    if (step >= 1024 * MIB)
        fprintf(out, "%g GiB", bytes / (1024 * MIB));
    else if (step >= MIB)
        fprintf(out, "%g MiB", bytes / MIB);
    else
        fprintf(out, "%g KiB", bytes / 1024);
}

static void defs(FILE *out)
{
    fputs("<defs>\n", out);
    for (size_t k = 0; k < MEMDIFF_CAT_COUNT - 1; k++) {
        memdiff_category c = rp_stack_order[k];
        fprintf(out,
                "<pattern id=\"pat-%s\" patternUnits=\"userSpaceOnUse\" width=\"8\" "
                "height=\"8\"><rect width=\"8\" height=\"8\" fill=\"%s\"/>"
                "<path d=\"%s\" stroke=\"%s\" stroke-width=\"1.2\" fill=\"%s\"/></pattern>\n",
                memdiff_category_name(c), look[c].fill, look[c].path, look[c].ink, look[c].ink);
    }
    fputs("</defs>\n", out);
}

static void open_svg(FILE *out, int standalone, const char *id, const char *title)
{
    if (standalone)
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" viewBox=\"0 0 %d %d\" "
            "width=\"%d\" height=\"%d\" role=\"img\" aria-labelledby=\"%s-title\" "
            "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
            "<title id=\"%s-title\">%s</title>\n",
            id, W, H, W, H, id, id, title);
    /* Halos keep a label readable over the patterns. */
    fputs("<style>.halo{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}"
          "</style>\n",
          out);
    fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
}

static double x_of(double t, double t_end)
{
    return LEFT + (t_end > 0 ? t / t_end : 0) * PW;
}

static double y_of(double bytes, double ymax)
{
    return TOP + PH - bytes / ymax * PH;
}

/* The grid lines and labels of a byte axis from 0 to ymax. */
static void size_axis(FILE *out, double ymax, double ystep)
{
    fputs("<g class=\"grid\" stroke=\"#bbb\" stroke-width=\"1\">\n", out);
    for (double v = 0; v <= ymax + ystep / 1e6; v += ystep)
        fprintf(out, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", LEFT, LEFT + PW,
                y_of(v, ymax), y_of(v, ymax));
    fputs("</g>\n<g class=\"size-labels\" fill=\"#222\">\n", out);
    for (double v = 0; v <= ymax + ystep / 1e6; v += ystep) {
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LEFT - 6,
                y_of(v, ymax) + 4);
        put_size(out, v, ystep);
        fputs("</text>\n", out);
    }
    fputs("</g>\n", out);
}

static void axes(FILE *out, double t_end, double ymax, double ystep, const char *xunit)
{
    size_axis(out, ymax, ystep);
    fputs("<g class=\"ticks\" fill=\"#222\">\n", out);
    double xstep = nice_step(t_end, 8);
    for (double t = 0; t <= t_end + xstep / 1e6; t += xstep)
        fprintf(out,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n"
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#222\"/>\n",
                x_of(t, t_end), TOP + PH + 18, t, x_of(t, t_end), x_of(t, t_end), TOP + PH,
                TOP + PH + 5);
    fprintf(out,
            "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n"
            "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#222\"/>\n"
            "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%.1f\" stroke=\"#222\"/>\n</g>\n",
            LEFT + PW / 2, H - 10, xunit, LEFT, LEFT + PW, TOP + PH, TOP + PH, LEFT, LEFT, TOP,
            TOP + PH);
}

static void legend_swatch(FILE *out, int row, const char *fill, const char *stroke,
                          const char *dash, const char *name)
{
    double y = TOP + 4 + row * 22;
    double x = LEFT + PW + 16;
    if (fill)
        fprintf(out,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"14\" fill=\"%s\" "
                "stroke=\"#333\"/>\n",
                x, y, fill);
    else
        fprintf(out,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2.5\" stroke-dasharray=\"%s\"/>\n",
                x, x + 22, y + 7, y + 7, stroke, dash);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 30, y + 11, name);
}

/* Which categories hold any resident byte at any snapshot: the others are not drawn. */
static int drawn(const rp_model *m, memdiff_category c)
{
    for (size_t i = 0; i < m->nsnaps; i++)
        if (m->snaps[i].cat[c])
            return 1;
    return 0;
}

/* Each band's name where it is widest: the middle of the segment between two snapshots whose
 * band is tallest there (segments at least 70 px wide), else at its tallest snapshot; only
 * where the band is tall enough for the text. Drawn after every band, so none covers them.
 * below: the stack's top at each snapshot (every band summed). */
static void band_labels(FILE *out, const rp_model *m, double *below, double ymax)
{
    size_t n = m->nsnaps;
    for (size_t i = 0; i < n; i++)
        below[i] = 0;
    fputs("<g class=\"band-labels\">\n", out);
    for (size_t k = 0; k < MEMDIFF_CAT_COUNT - 1; k++) {
        memdiff_category c = rp_stack_order[k];
        if (!drawn(m, c))
            continue;
        double best_h = 0, x = 0, y = 0;
        const char *anchor = "middle";
        for (size_t i = 0; i + 1 < n; i++) {
            double x0 = x_of(m->snaps[i].t, m->t_end), x1 = x_of(m->snaps[i + 1].t, m->t_end);
            double h = ((double)m->snaps[i].cat[c] + (double)m->snaps[i + 1].cat[c]) / 2;
            if (x1 - x0 >= 70 && h > best_h) {
                best_h = h;
                x = (x0 + x1) / 2;
                y = (below[i] + below[i + 1]) / 2 + h / 2;
            }
        }
        if (best_h == 0) {
            size_t b = 0;
            for (size_t i = 1; i < n; i++)
                if (m->snaps[i].cat[c] > m->snaps[b].cat[c])
                    b = i;
            best_h = (double)m->snaps[b].cat[c];
            x = x_of(m->snaps[b].t, m->t_end);
            y = below[b] + best_h / 2;
            /* At the last snapshot, right of it when the plot has room (about 7 px a letter):
             * beside the band rather than over the one below it. */
            double room = LEFT + PW - x - 8, need = 7.0 * (double)strlen(memdiff_category_name(c));
            anchor = b == 0 || (b + 1 == n && room >= need) ? "start"
                     : b + 1 == n                          ? "end"
                                                           : "middle";
            x += b == 0 || (b + 1 == n && room >= need) ? 8 : b + 1 == n ? -8 : 0;
        }
        if (best_h / ymax * PH >= 14)
            fprintf(out,
                    "<text class=\"halo band-label\" x=\"%.1f\" y=\"%.1f\" "
                    "text-anchor=\"%s\" font-weight=\"bold\">%s</text>\n",
                    x, y_of(y, ymax) + 4, anchor, memdiff_category_name(c));
        for (size_t i = 0; i < n; i++)
            below[i] += (double)m->snaps[i].cat[c];
    }
    fputs("</g>\n", out);
}

static void stacked_areas(FILE *out, const rp_model *m, double ymax)
{
    size_t n = m->nsnaps;
    double *below = calloc(n, sizeof *below);
    if (!below)
        return; /* out of memory: the lines and points are still drawn */
    fputs("<g class=\"areas\">\n", out);
    for (size_t k = 0; k < MEMDIFF_CAT_COUNT - 1; k++) {
        memdiff_category c = rp_stack_order[k];
        if (!drawn(m, c))
            continue;
        const char *name = memdiff_category_name(c);
        fprintf(out, "<path class=\"area\" data-category=\"%s\" fill=\"url(#pat-%s)\" "
                     "stroke=\"%s\" stroke-width=\"1\" d=\"", name, name, look[c].ink);
        for (size_t i = 0; i < n; i++)
            fprintf(out, "%s%.1f,%.1f", i ? " L" : "M", x_of(m->snaps[i].t, m->t_end),
                    y_of(below[i] + (double)m->snaps[i].cat[c], ymax));
        for (size_t i = n; i-- > 0;)
            fprintf(out, " L%.1f,%.1f", x_of(m->snaps[i].t, m->t_end), y_of(below[i], ymax));
        fputs(" Z\"/>\n", out);
        for (size_t i = 0; i < n; i++)
            below[i] += (double)m->snaps[i].cat[c];
    }
    fputs("</g>\n", out);
    band_labels(out, m, below, ymax);
    free(below);
}

static void sample_line(FILE *out, const rp_model *m, double ymax, int hwm)
{
    if (m->nsamples < 1)
        return;
    fprintf(out,
            "<polyline class=\"line\" data-series=\"%s\" fill=\"none\" stroke=\"%s\" "
            "stroke-width=\"2\" stroke-dasharray=\"%s\" points=\"",
            hwm ? "vm_hwm" : "vm_rss", hwm ? "#b00000" : "#000", hwm ? "7 4" : "none");
    for (size_t i = 0; i < m->nsamples; i++) {
        const rp_sample *s = &m->samples[i];
        fprintf(out, "%s%.1f,%.1f", i ? " " : "", x_of(s->t, m->t_end),
                y_of((double)(hwm ? s->vm_hwm : s->vm_rss), ymax));
    }
    fputs("\"/>\n", out);
}

static void marks(FILE *out, const rp_model *m)
{
    fputs("<g class=\"marks\">\n", out);
    for (size_t i = 0; i < m->nmarks; i++) {
        double x = x_of(m->marks[i].t, m->t_end);
        fprintf(out,
                "<g class=\"mark\" data-mark=\"%zu\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" "
                "y2=\"%.1f\" stroke=\"#444\" stroke-dasharray=\"2 3\"/>"
                "<text class=\"halo\" x=\"%.1f\" y=\"%d\" transform=\"rotate(90 %.1f %d)\" "
                "font-size=\"11\">",
                i, x, x, TOP, TOP + PH, x + 3, TOP + 4, x + 3, TOP + 4);
        rp_put_xml(out, m->marks[i].label);
        fputs("</text></g>\n", out);
    }
    fputs("</g>\n", out);
}

static void snapshot_points(FILE *out, const rp_model *m, double ymax)
{
    fputs("<g class=\"points\">\n", out);
    for (size_t i = 0; i < m->nsnaps; i++) {
        const rp_snap *s = &m->snaps[i];
        fprintf(out,
                "<circle class=\"snap-point%s\" data-snapshot=\"%zu\" data-resident=\"%llu\" "
                "cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#fff\" stroke=\"#000\" "
                "stroke-width=\"2\"",
                i == m->peak ? " peak" : "", i, (unsigned long long)s->resident,
                x_of(s->t, m->t_end), y_of((double)s->resident, ymax));
        for (size_t k = 0; k < MEMDIFF_CAT_COUNT - 1; k++)
            fprintf(out, " data-%s=\"%llu\"", memdiff_category_name(rp_stack_order[k]),
                    (unsigned long long)s->cat[rp_stack_order[k]]);
        fprintf(out, "><title>snapshot %zu</title></circle>\n", i);
    }
    if (m->nsnaps) {
        const rp_snap *p = &m->snaps[m->peak];
        double x = x_of(p->t, m->t_end), y = y_of((double)p->resident, ymax);
        fprintf(out,
                "<path class=\"peak\" d=\"M%.1f,%.1f l-6,-10 h12 z\" fill=\"#000\"/>"
                "<text class=\"halo\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                "font-weight=\"bold\">peak ",
                x, y - 8, x - 10, y - 12);
        fprintf(out, "%.1f MiB</text>\n", (double)p->resident / MIB);
    }
    fputs("</g>\n", out);
}

void rp_svg_timeline(FILE *out, const rp_model *m, int standalone)
{
    double max = 1;
    for (size_t i = 0; i < m->nsamples; i++) {
        max = fmax(max, (double)m->samples[i].vm_hwm);
        max = fmax(max, (double)m->samples[i].vm_rss);
    }
    for (size_t i = 0; i < m->nsnaps; i++)
        max = fmax(max, (double)m->snaps[i].resident);
    /* Room above the highest point for the peak's label. */
    double ystep = size_step(max * 1.12, 6);
    double ymax = ceil(max * 1.12 / ystep) * ystep;
    open_svg(out, standalone, "timeline",
             "Resident memory over time, stacked by category, with VmRSS and VmHWM");
    defs(out);
    axes(out, m->t_end, ymax, ystep, "seconds since the recording began");
    if (m->nsnaps >= 2)
        stacked_areas(out, m, ymax);
    sample_line(out, m, ymax, 1);
    sample_line(out, m, ymax, 0);
    marks(out, m);
    snapshot_points(out, m, ymax);

    int row = 0;
    fputs("<g class=\"legend\">\n", out);
    legend_swatch(out, row++, NULL, "#000", "none", "VmRSS (polls)");
    legend_swatch(out, row++, NULL, "#b00000", "7 4", "VmHWM (peak RSS)");
    for (size_t k = MEMDIFF_CAT_COUNT - 1; k-- > 0;) {
        memdiff_category c = rp_stack_order[k];
        if (m->nsnaps < 2 || !drawn(m, c))
            continue;
        char fill[64];
        snprintf(fill, sizeof fill, "url(#pat-%s)", memdiff_category_name(c));
        legend_swatch(out, row++, fill, NULL, NULL, memdiff_category_name(c));
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444\">"
                 "circles: snapshots</text>\n</g>\n",
            LEFT + PW + 16, TOP + 18 + row * 22.0);
    fputs("</svg>\n", out);
}

void rp_svg_wss(FILE *out, const rp_model *m)
{
    double max = 1, lo = INFINITY, hi = 0;
    for (size_t i = 0; i < m->nwss; i++) {
        max = fmax(max, (double)m->wss[i].rss);
        max = fmax(max, (double)m->wss[i].referenced);
        if (m->wss[i].span_s > 0) {
            lo = fmin(lo, m->wss[i].span_s);
            hi = fmax(hi, m->wss[i].span_s);
        }
    }
    if (!(lo < INFINITY)) {
        lo = 1e-3;
        hi = 1;
    }
    double l0 = floor(log2(lo)), l1 = fmax(ceil(log2(hi)), l0 + 1);
    double ystep = size_step(max * 1.05, 6), ymax = ceil(max * 1.05 / ystep) * ystep;
    open_svg(out, 0, "wss-svg", "Working-set size against the time measured");
    size_axis(out, ymax, ystep);
    fputs("<g fill=\"#222\">\n", out);
    for (double e = l0; e <= l1; e++) {
        double t = pow(2, e);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                LEFT + (e - l0) / (l1 - l0) * PW, TOP + PH + 18);
        /* Powers of two of a second read better in ms with three digits: 3.91 ms, 125 ms. */
        fprintf(out, t < 1 ? "%.3g ms</text>\n" : "%.3g s</text>\n", t < 1 ? t * 1e3 : t);
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">time measured (Est(s), "
                 "log scale)</text>\n</g>\n",
            LEFT + PW / 2, H - 10);
    static const struct {
        const char *series, *stroke, *dash, *name;
    } lines[] = {{"referenced", "#0072b2", "none", "referenced (WSS)"},
                 {"rss", "#000", "7 4", "RSS"},
                 {"pss", "#d55e00", "2 3", "PSS"}};
    for (size_t k = 0; k < 3; k++) {
        fprintf(out,
                "<polyline data-series=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                "stroke-dasharray=\"%s\" points=\"",
                lines[k].series, lines[k].stroke, lines[k].dash);
        for (size_t i = 0; i < m->nwss; i++) {
            const rp_wss *w = &m->wss[i];
            double v = (double)(k == 0 ? w->referenced : k == 1 ? w->rss : w->pss);
            double e = log2(w->span_s > 0 ? w->span_s : lo);
            fprintf(out, "%s%.1f,%.1f", i ? " " : "", LEFT + (e - l0) / (l1 - l0) * PW,
                    y_of(v, ymax));
        }
        fputs("\"/>\n", out);
        legend_swatch(out, (int)k, NULL, lines[k].stroke, lines[k].dash, lines[k].name);
    }
    for (size_t i = 0; i < m->nwss; i++) {
        const rp_wss *w = &m->wss[i];
        double e = log2(w->span_s > 0 ? w->span_s : lo);
        fprintf(out,
                "<rect class=\"wss-point\" data-span-s=\"%.9f\" data-referenced=\"%llu\" "
                "x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"#0072b2\"/>\n",
                w->span_s, (unsigned long long)w->referenced,
                LEFT + (e - l0) / (l1 - l0) * PW - 3.5, y_of((double)w->referenced, ymax) - 3.5);
    }
    fprintf(out, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#222\"/>\n"
                 "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%.1f\" stroke=\"#222\"/>\n</svg>\n",
            LEFT, LEFT + PW, TOP + PH, TOP + PH, LEFT, LEFT, TOP, TOP + PH);
}
