/*
 * report.h - memdiff report's model of a timeline (report.c builds it) and its charts
 * (report_svg.c draws them): what the HTML page and the static SVG both show.
 */
#ifndef MEMDIFF_CLI_REPORT_H
#define MEMDIFF_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memdiff.h"

/* A poll: the process's own figures (VmRSS, VmHWM). Times are seconds since the timeline's
 * start, for drawing only: the page's exact figures are bytes. */
typedef struct rp_sample {
    double t;
    uint64_t vm_rss, vm_hwm;
} rp_sample;

typedef struct rp_mark {
    double t;
    char *label; /* escaped as memdiff prints text (memdiff_escape_text), malloc()ed */
} rp_mark;

typedef struct rp_snap {
    double t;
    unsigned cause;                  /* MEMDIFF_CAUSE_* */
    uint64_t resident;               /* every category but Own */
    uint64_t cat[MEMDIFF_CAT_COUNT]; /* resident bytes per category (Own's stays 0) */
} rp_snap;

/* One sample of memdiff wss --profile --json. */
typedef struct rp_wss {
    double span_s;
    uint64_t rss, pss, referenced;
} rp_wss;

typedef struct rp_model {
    rp_sample *samples;
    size_t nsamples;
    rp_mark *marks;
    size_t nmarks;
    rp_snap *snaps;
    size_t nsnaps;
    size_t peak;  /* the snapshot with the most resident bytes (0 when there is none) */
    double t_end; /* the last record's time (> 0) */
    rp_wss *wss;  /* the --wss profile, or NULL */
    size_t nwss;
} rp_model;

/* The categories the charts stack, bottom first (Own is outside every total). */
extern const memdiff_category rp_stack_order[MEMDIFF_CAT_COUNT - 1];

/* text (escaped already, or a fixed name) for XML and HTML: & < > " ' as entities. */
void rp_put_xml(FILE *out, const char *text);

/* The resident memory chart: stacked categories at the snapshots, VmRSS and VmHWM, the peak
 * and the marks. standalone: an SVG file of its own (with the XML declaration). */
void rp_svg_timeline(FILE *out, const rp_model *m, int standalone);

/* The working-set profile (memdiff wss --profile --json): referenced, RSS and PSS against the
 * span measured, on a log2 axis. */
void rp_svg_wss(FILE *out, const rp_model *m);

#endif
