/*
 * test_timeline.c - memory over time: timeline files (docs/timeline-format.md), their writer and
 * reader, polls and marks. A real child with known phases (timeline_target.c) is recorded
 * through the API the way `memdiff record` will: a poll loop, marks from the child's
 * memdiff_mark(), a snapshot at each mark. Then the file itself: cut at every offset of its last
 * record (torn, the rest readable), every byte flipped (the damaged record named), an unchanged
 * sample's exact size, and a full disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "memdiff.h"
#include "scenario_util.h"
#include "suites.h"

#define MIB (INT64_C(1) << 20)
#define MS (UINT64_C(1000000))
#define TL_KIND_SAMPLE_FOR_TEST 2 /* docs/timeline-format.md: kind 2 is a sample */

extern char **environ;

static void temp_path(char *buf, size_t size, const char *name)
{
    char dir[] = "/tmp/memdiff-timeline-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(buf, size, "%s/%s", dir, name);
}

static void remove_temp(const char *path)
{
    unlink(path);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        rmdir(dir);
    }
}

static unsigned char *read_whole(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    ck_assert_int_ge(len, 0);
    rewind(f);
    unsigned char *p = malloc((size_t)len + 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(fread(p, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return p;
}

/* memdiff_timeline_open_stream() of p[0..n). */
static int open_bytes(const unsigned char *p, size_t n, memdiff_timeline **out)
{
    FILE *f = fmemopen((void *)p, n, "rb");
    ck_assert_ptr_nonnull(f);
    int rc = memdiff_timeline_open_stream(f, out);
    fclose(f);
    return rc;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- recording a real child ---------------------------------------------------------------- */

/* Starts the target with the listener's child end as MEMDIFF_MARK_FD and a pipe on its stdin;
 * *go receives the pipe's write end. */
static pid_t start_target(const memdiff_mark_listener *l, int *go)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    int child_fd = memdiff_mark_listener_child_fd(l);
    ck_assert_int_ge(child_fd, 0);
    char var[64];
    snprintf(var, sizeof var, "MEMDIFF_MARK_FD=%d", child_fd);
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + 2, sizeof *envp);
    ck_assert_ptr_nonnull(envp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "MEMDIFF_MARK_FD=", 16) != 0)
            envp[k++] = environ[i];
    envp[k++] = var;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* The recorder's end is close-on-exec; the child's must survive exec. */
        if (dup2(fds[0], 0) < 0 || fcntl(child_fd, F_SETFD, 0) != 0)
            _exit(126);
        close(fds[1]);
        char *argv[] = {(char *)MEMDIFF_TIMELINE_TARGET, NULL};
        execve(argv[0], argv, envp);
        _exit(127);
    }
    free(envp);
    close(fds[0]);
    *go = fds[1];
    return pid;
}

/* Records the target into path as `memdiff record -- TARGET` will: poll every 2 ms, at each mark
 * a sample and a snapshot, then the go byte; the exit status at the end. */
static void record_target(const char *path)
{
    memdiff_mark_listener *l = NULL;
    ck_assert_msg(memdiff_mark_listen(0, &l) == MEMDIFF_OK, "%s", memdiff_last_error());
    int go;
    pid_t pid = start_target(l, &go);
    const char *argv[] = {MEMDIFF_TIMELINE_TARGET, NULL};
    memdiff_timeline_header h = MEMDIFF_TIMELINE_HEADER_INIT;
    h.pid = pid;
    h.interval_ns = 2 * MS;
    h.argv = argv;
    memdiff_timeline_writer *w = NULL;
    ck_assert_msg(memdiff_timeline_create(path, &h, &w) == MEMDIFF_OK, "%s",
                  memdiff_last_error());
    int status = 0;
    for (;;) {
        memdiff_mark_msg m;
        int got = memdiff_mark_receive(l, 2 * MS, &m);
        ck_assert_int_ge(got, 0);
        memdiff_process_totals t;
        int rc = memdiff_poll(pid, &t);
        if (rc == MEMDIFF_ESRCH) {
            /* Exited (a zombie has no memory): what remains is its status. */
            ck_assert_int_eq(waitpid(pid, &status, 0), pid);
            break;
        }
        ck_assert_msg(rc == MEMDIFF_OK, "%s", memdiff_last_error());
        ck_assert_int_eq(memdiff_timeline_add_sample(w, now_ns(), &t), MEMDIFF_OK);
        if (got == 1) {
            ck_assert_int_eq(m.pid, pid);
            ck_assert_int_eq(memdiff_timeline_add_mark(w, m.time_ns, m.pid, m.label), MEMDIFF_OK);
            memdiff_options o = MEMDIFF_OPTIONS_INIT;
            o.pid = pid;
            memdiff_snapshot *s = NULL;
            ck_assert_msg(memdiff_snapshot_take(&o, &s) == MEMDIFF_OK, "%s",
                          memdiff_last_error());
            ck_assert_int_eq(memdiff_timeline_add_snapshot(w, s, MEMDIFF_CAUSE_MARK), MEMDIFF_OK);
            memdiff_snapshot_free(s);
            char c = 1;
            ck_assert_int_eq(write(go, &c, 1), 1);
        }
    }
    close(go);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(memdiff_timeline_add_exit(w, now_ns(), MEMDIFF_EXIT_STATUS,
                                               WEXITSTATUS(status)),
                     MEMDIFF_OK);
    ck_assert_int_eq(memdiff_timeline_close(w), MEMDIFF_OK);
    memdiff_mark_listener_free(l);
}

START_TEST(records_a_child_with_phases)
{
    char path[256];
    temp_path(path, sizeof path, "child.mdt");
    record_target(path);

    memdiff_timeline *t = NULL;
    ck_assert_msg(memdiff_timeline_open(path, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_timeline_info info;
    ck_assert_int_eq(memdiff_timeline_get_info(t, &info), MEMDIFF_OK);
    ck_assert_int_eq(info.torn, 0);
    ck_assert_uint_eq(info.snapshots, 3); /* one per mark */
    ck_assert_uint_eq(info.marks, 3);
    ck_assert_uint_eq(info.exits, 1);
    ck_assert_uint_eq(info.interval_ns, 2 * MS);
    ck_assert_str_eq(info.argv[0], MEMDIFF_TIMELINE_TARGET);
    ck_assert_ptr_null(info.argv[1]);
    ck_assert_uint_eq(info.page_size, (uint32_t)sysconf(_SC_PAGESIZE));

    /* Marks in order with their labels; each followed by its snapshot; the exit last. A mark's
     * time is the child's clock when it sent, before the recorder wrote it: the record's time
     * steps back, which the format carries (zigzag steps). */
    static const char *const labels[] = {"begin", "allocated", "freed half"};
    size_t nmarks = 0, nsnaps = 0, nexit = 0;
    uint64_t rss_at_mark[3] = {0}, hwm_at_mark[3] = {0};
    memdiff_timeline_record r;
    int last_was_mark = 0;
    while (memdiff_timeline_next(t, &r) == 1) {
        ck_assert_uint_eq(nexit, 0); /* nothing after the exit */
        if (r.kind == MEMDIFF_RECORD_MARK) {
            ck_assert_uint_lt(nmarks, 3);
            ck_assert_str_eq(r.label, labels[nmarks]);
            ck_assert_int_eq(r.pid, info.pid);
            rss_at_mark[nmarks] = r.totals.rss_anon; /* the sample polled just before */
            hwm_at_mark[nmarks] = r.totals.vm_hwm;
            nmarks++;
        } else if (r.kind == MEMDIFF_RECORD_SNAPSHOT) {
            ck_assert(last_was_mark);
            ck_assert_uint_eq(r.snapshot, nsnaps);
            ck_assert_uint_eq(r.cause, MEMDIFF_CAUSE_MARK);
            nsnaps++;
        } else if (r.kind == MEMDIFF_RECORD_EXIT) {
            ck_assert_int_eq(r.exit_how, MEMDIFF_EXIT_STATUS);
            ck_assert_int_eq(r.exit_code, 7);
            nexit++;
        }
        last_was_mark = r.kind == MEMDIFF_RECORD_MARK;
    }
    ck_assert_uint_eq(nmarks, 3);
    ck_assert_uint_eq(nsnaps, 3);
    ck_assert_uint_eq(nexit, 1);

    /* Exact, from the recorded snapshots: +16,384 pages, then -8,192 (timeline_target.c). */
    ck_assert_int_eq(scn_timeline_net(t, 0, 1, MEMDIFF_CAT_PRIVATE), 64 * MIB);
    ck_assert_int_eq(scn_timeline_net(t, 1, 2, MEMDIFF_CAT_PRIVATE), -32 * MIB);
    ck_assert_int_eq(scn_timeline_net(t, 0, 2, MEMDIFF_CAT_PRIVATE), 32 * MIB);

    /* The polls are the kernel's counters, which batch per CPU (mm_struct's rss_stat; a few
     * hundred KiB at most on this machine's CPU count): within 1 MiB of the same steps. */
    int64_t up = (int64_t)(rss_at_mark[1] - rss_at_mark[0]);
    int64_t down = (int64_t)(rss_at_mark[2] - rss_at_mark[1]);
    ck_assert_msg(up > 63 * MIB && up < 65 * MIB, "RssAnon rose by %lld", (long long)up);
    ck_assert_msg(down < -31 * MIB && down > -33 * MIB, "RssAnon fell by %lld", (long long)down);
    /* The peak stays after the free. VmHWM is the larger of the recorded high-water mark and
     * the resident count read now, both batched: it may dip by the batch between two reads. */
    ck_assert_uint_gt(hwm_at_mark[1], (uint64_t)(63 * MIB));
    ck_assert_uint_gt(hwm_at_mark[2], (uint64_t)(63 * MIB));

    memdiff_timeline_free(t);
    remove_temp(path);
}
END_TEST

/* ---- a file made here: its bytes, and where each record starts ---------------------------- */

typedef struct made {
    unsigned char *p;
    size_t n;
    size_t nrec;        /* records, the header included */
    uint64_t off[16];   /* record offsets; off[nrec] = n */
} made;

/* A small timeline: header, two samples, a mark, a snapshot of this process, an exit. */
static made make_file(void)
{
    char path[256];
    temp_path(path, sizeof path, "made.mdt");
    const char *argv[] = {"prog", "--flag", "", NULL};
    memdiff_timeline_header h = MEMDIFF_TIMELINE_HEADER_INIT;
    h.pid = getpid();
    h.start_ns = 1000 * MS;
    h.interval_ns = 50 * MS;
    h.argv = argv;
    memdiff_timeline_writer *w = NULL;
    ck_assert_int_eq(memdiff_timeline_create(path, &h, &w), MEMDIFF_OK);
    memdiff_process_totals tot = {100u << 20, 50u << 20, 60u << 20, 30u << 20, 20u << 20, 0, 1 << 16,
                                  0};
    ck_assert_int_eq(memdiff_timeline_add_sample(w, 1050 * MS, &tot), MEMDIFF_OK);
    tot.vm_rss += 4096;
    ck_assert_int_eq(memdiff_timeline_add_sample(w, 1100 * MS, &tot), MEMDIFF_OK);
    ck_assert_int_eq(memdiff_timeline_add_mark(w, 1090 * MS, 42, "phase 2"), MEMDIFF_OK);
    memdiff_snapshot *s = NULL;
    ck_assert_int_eq(memdiff_snapshot_self(MEMDIFF_DEPTH_FAST, &s), MEMDIFF_OK);
    ck_assert_int_eq(memdiff_timeline_add_snapshot(w, s, MEMDIFF_CAUSE_REQUEST), MEMDIFF_OK);
    memdiff_snapshot_free(s);
    ck_assert_int_eq(memdiff_timeline_add_exit(w, 2000 * MS, MEMDIFF_EXIT_SIGNAL, 9), MEMDIFF_OK);
    uint64_t bytes = memdiff_timeline_writer_bytes(w);
    ck_assert_int_eq(memdiff_timeline_close(w), MEMDIFF_OK);

    made m;
    memset(&m, 0, sizeof m);
    m.p = read_whole(path, &m.n);
    remove_temp(path);
    ck_assert_uint_eq(m.n, bytes);
    memdiff_timeline *t = NULL;
    ck_assert_int_eq(open_bytes(m.p, m.n, &t), MEMDIFF_OK);
    memdiff_timeline_record r;
    m.off[0] = 16; /* the header record follows the 16-byte file header */
    m.nrec = 1;
    while (memdiff_timeline_next(t, &r) == 1)
        m.off[m.nrec++] = r.offset;
    m.off[m.nrec] = m.n;
    ck_assert_uint_eq(m.nrec, 6);
    memdiff_timeline_free(t);
    return m;
}

START_TEST(round_trip)
{
    made m = make_file();
    memdiff_timeline *t = NULL;
    ck_assert_int_eq(open_bytes(m.p, m.n, &t), MEMDIFF_OK);
    memdiff_timeline_info info;
    memdiff_timeline_get_info(t, &info);
    ck_assert_int_eq(info.pid, getpid());
    ck_assert_uint_eq(info.start_ns, 1000 * MS);
    ck_assert_str_eq(info.argv[1], "--flag");
    ck_assert_str_eq(info.argv[2], "");
    ck_assert_ptr_null(info.argv[3]);
    ck_assert_uint_eq(info.records, 6);
    ck_assert_uint_eq(info.complete_bytes, m.n);
    /* The bound memdiff.h states, for this file. */
    ck_assert_uint_le(info.storage_bytes, 4 * info.file_bytes + (2u << 20));
    memdiff_timeline_record r;
    ck_assert_int_eq(memdiff_timeline_next(t, &r), 1);
    ck_assert_int_eq(r.kind, MEMDIFF_RECORD_SAMPLE);
    ck_assert_uint_eq(r.time_ns, 1050 * MS);
    ck_assert_uint_eq(r.totals.vm_rss, 50u << 20);
    ck_assert_uint_eq(r.totals.vm_pte, 1 << 16);
    ck_assert_int_eq(memdiff_timeline_next(t, &r), 1);
    ck_assert_uint_eq(r.totals.vm_rss, (50u << 20) + 4096);
    ck_assert_uint_eq(r.totals.vm_hwm, 60u << 20);
    ck_assert_int_eq(memdiff_timeline_next(t, &r), 1);
    ck_assert_int_eq(r.kind, MEMDIFF_RECORD_MARK);
    ck_assert_uint_eq(r.time_ns, 1090 * MS); /* a step back in time */
    ck_assert_str_eq(r.label, "phase 2");
    ck_assert_int_eq(r.pid, 42);
    ck_assert_int_eq(memdiff_timeline_next(t, &r), 1);
    ck_assert_int_eq(r.kind, MEMDIFF_RECORD_SNAPSHOT);
    ck_assert_uint_eq(r.cause, MEMDIFF_CAUSE_REQUEST);
    ck_assert_int_eq(memdiff_timeline_next(t, &r), 1);
    ck_assert_int_eq(r.kind, MEMDIFF_RECORD_EXIT);
    ck_assert_int_eq(r.exit_how, MEMDIFF_EXIT_SIGNAL);
    ck_assert_int_eq(r.exit_code, 9);
    ck_assert_uint_eq(r.time_ns, 2000 * MS);
    ck_assert_int_eq(memdiff_timeline_next(t, &r), 0);
    memdiff_snapshot *s = NULL;
    ck_assert_int_eq(memdiff_timeline_snapshot(t, 0, &s), MEMDIFF_OK);
    memdiff_snapshot_info si;
    memdiff_snapshot_get_info(s, &si);
    ck_assert_int_eq(si.pid, getpid());
    memdiff_snapshot_free(s);
    ck_assert_int_eq(memdiff_timeline_snapshot(t, 1, &s), MEMDIFF_ERANGE);
    memdiff_timeline_free(t);
    free(m.p);
}
END_TEST

START_TEST(torn_at_every_offset_of_the_last_record)
{
    made m = make_file();
    uint64_t last = m.off[m.nrec - 1];
    for (size_t cut = (size_t)last; cut < m.n; cut++) {
        memdiff_timeline *t = NULL;
        ck_assert_msg(open_bytes(m.p, cut, &t) == MEMDIFF_OK, "cut at %zu: %s", cut,
                      memdiff_last_error());
        memdiff_timeline_info info;
        memdiff_timeline_get_info(t, &info);
        ck_assert_int_eq(info.torn, cut > last);
        ck_assert_uint_eq(info.records, m.nrec - 1);
        ck_assert_uint_eq(info.complete_bytes, last);
        if (cut > last)
            ck_assert_uint_eq(info.torn_offset, last);
        ck_assert_uint_eq(info.exits, 0);
        ck_assert_uint_eq(info.snapshots, 1); /* the snapshot before stays readable */
        memdiff_snapshot *s = NULL;
        ck_assert_int_eq(memdiff_timeline_snapshot(t, 0, &s), MEMDIFF_OK);
        memdiff_snapshot_free(s);
        memdiff_timeline_free(t);
    }
    /* A file cut before the end of its header record holds nothing: that is an error, named. */
    for (size_t cut = 16; cut < m.off[1]; cut++) {
        memdiff_timeline *t = NULL;
        ck_assert_int_eq(open_bytes(m.p, cut, &t), MEMDIFF_EFORMAT);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(memdiff_last_error(), "header record"), "cut at %zu: %s", cut,
                      memdiff_last_error());
    }
    free(m.p);
}
END_TEST

START_TEST(flipped_byte_names_record_and_offset)
{
    made m = make_file();
    for (size_t i = 0; i < m.n; i++) {
        for (unsigned f = 0; f < 2; f++) {
            unsigned char was = m.p[i];
            m.p[i] ^= f ? 0xFF : 0x01;
            memdiff_timeline *t = NULL;
            int rc = open_bytes(m.p, m.n, &t);
            const char *err = memdiff_last_error();
            if (i == 10 || i == 11) {
                /* The minor version: a reader of the same major reads every minor. */
                ck_assert_int_eq(rc, MEMDIFF_OK);
            } else if (i < 16) {
                ck_assert_int_eq(rc, MEMDIFF_EFORMAT);
            } else {
                size_t k = 0;
                while (m.off[k + 1] <= i)
                    k++;
                char want[80];
                snprintf(want, sizeof want, "record %zu", k);
                char at[80];
                snprintf(at, sizeof at, "offset %llu", (unsigned long long)m.off[k]);
                ck_assert_msg(rc == MEMDIFF_EFORMAT && strstr(err, want) && strstr(err, at),
                              "byte %zu ^ %s: rc %d, \"%s\" (want %s, %s)", i,
                              f ? "0xFF" : "0x01", rc, err, want, at);
            }
            memdiff_timeline_free(t);
            m.p[i] = was;
        }
    }
    free(m.p);
}
END_TEST

START_TEST(unchanged_sample_size)
{
    char path[256];
    temp_path(path, sizeof path, "size.mdt");
    memdiff_timeline_writer *w = NULL;
    ck_assert_int_eq(memdiff_timeline_create(path, NULL, &w), MEMDIFF_OK);
    memdiff_process_totals tot;
    ck_assert_int_eq(memdiff_poll(0, &tot), MEMDIFF_OK);
    ck_assert_uint_gt(tot.vm_rss, 0);
    uint64_t t0 = now_ns();
    ck_assert_int_eq(memdiff_timeline_add_sample(w, t0, &tot), MEMDIFF_OK);
    uint64_t before = memdiff_timeline_writer_bytes(w);
    ck_assert_int_eq(memdiff_timeline_add_sample(w, t0 + 50 * MS, &tot), MEMDIFF_OK);
    /* kind 1 + length 1 + head CRC 4 + payload (time step 50 ms: zigzag 10^8 in a 4-byte
     * varint, change mask 0: 1 byte) + CRC 4 = 15 bytes, flushed to the file already. */
    ck_assert_uint_eq(memdiff_timeline_writer_bytes(w) - before, 15);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, memdiff_timeline_writer_bytes(w));
    /* At 1 s steps the time takes 5 bytes: 16. */
    before = memdiff_timeline_writer_bytes(w);
    ck_assert_int_eq(memdiff_timeline_add_sample(w, t0 + 1050 * MS, &tot), MEMDIFF_OK);
    ck_assert_uint_eq(memdiff_timeline_writer_bytes(w) - before, 16);
    ck_assert_int_eq(memdiff_timeline_close(w), MEMDIFF_OK);
    remove_temp(path);
}
END_TEST

START_TEST(full_disk)
{
    char path[256];
    temp_path(path, sizeof path, "full.mdt");
    memdiff_process_totals tot = {1 << 20, 1 << 20, 1 << 20, 0, 0, 0, 0, 0};
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* The file may grow to 3 unchanged samples after the first, and 7 bytes of a fourth: a
         * disk that fills in the middle of a record. */
        memdiff_timeline_writer *w = NULL;
        if (memdiff_timeline_create(path, NULL, &w) != MEMDIFF_OK ||
            memdiff_timeline_add_sample(w, 1000 * MS, &tot) != MEMDIFF_OK)
            _exit(10);
        uint64_t b1 = memdiff_timeline_writer_bytes(w);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {(rlim_t)(b1 + 3 * 15 + 7), (rlim_t)(b1 + 3 * 15 + 7)};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(11);
        for (int i = 1; i <= 3; i++)
            if (memdiff_timeline_add_sample(w, (1000 + 50 * (uint64_t)i) * MS, &tot) !=
                MEMDIFF_OK)
                _exit(12);
        int rc = memdiff_timeline_add_sample(w, 1200 * MS, &tot);
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", memdiff_last_error());
        int again = memdiff_timeline_add_sample(w, 1250 * MS, &tot);
        int closed = memdiff_timeline_close(w);
        if (write(fds[1], &b1, sizeof b1) != sizeof b1 || write(fds[1], msg, sizeof msg) !=
                                                              sizeof msg)
            _exit(13);
        _exit(rc == MEMDIFF_EIO && again == MEMDIFF_EIO && closed == MEMDIFF_EIO ? 0 : 14);
    }
    close(fds[1]);
    uint64_t b1 = 0;
    char msg[1024];
    ck_assert_int_eq(read(fds[0], &b1, sizeof b1), sizeof b1);
    ck_assert_int_eq(read(fds[0], msg, sizeof msg), sizeof msg);
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);
    /* The header record is 0, the first sample 1, three more 2-4: the fifth failed. */
    char want[128];
    snprintf(want, sizeof want, "record 5 at offset %llu", (unsigned long long)(b1 + 45));
    ck_assert_msg(strstr(msg, want) && strstr(msg, "File too large"), "%s", msg);

    memdiff_timeline *t = NULL;
    ck_assert_msg(memdiff_timeline_open(path, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_timeline_info info;
    memdiff_timeline_get_info(t, &info);
    ck_assert_uint_eq(info.records, 5);
    ck_assert_uint_eq(info.samples, 4);
    ck_assert_int_eq(info.torn, 1);
    ck_assert_uint_eq(info.torn_offset, b1 + 45);
    ck_assert_uint_eq(info.file_bytes, b1 + 45 + 7);
    memdiff_timeline_free(t);
    remove_temp(path);

    /* A stream that refuses every byte: the header cannot be written. */
    FILE *full = fopen("/dev/full", "wb");
    ck_assert_ptr_nonnull(full);
    memdiff_timeline_writer *w = NULL;
    ck_assert_int_eq(memdiff_timeline_create_stream(full, NULL, &w), MEMDIFF_EIO);
    ck_assert_ptr_null(w);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "No space left on device"));
    fclose(full);
}
END_TEST

/* Appends the CRC-32 of p[0..*n) as the format states (zlib's), bit by bit, as a reader of the
 * specification would write it. */
static void append_crc(unsigned char *p, size_t *n)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < *n; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0 - (crc & 1)));
    }
    crc = ~crc;
    for (int i = 0; i < 4; i++)
        p[(*n)++] = (unsigned char)(crc >> (8 * i));
}

START_TEST(bad_files)
{
    memdiff_timeline *t = NULL;
    static const unsigned char snap_magic[16] = {'M', 'E', 'M', 'D', 'I', 'F', 'F', 0, 1, 0, 0, 0,
                                                 0x0D, 0x0C, 0x0B, 0x0A};
    ck_assert_int_eq(open_bytes(snap_magic, sizeof snap_magic, &t), MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "a snapshot file, not a timeline"));
    unsigned char v2[16] = {'M', 'E', 'M', 'D', 'I', 'F', 'F', 'T', 2, 0, 0, 0,
                            0x0D, 0x0C, 0x0B, 0x0A};
    ck_assert_int_eq(open_bytes(v2, sizeof v2, &t), MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "version 2.0 is not supported"));
    /* Zeros where records should be (a file system that extended the file after a crash). */
    unsigned char zeros[64] = {'M', 'E', 'M', 'D', 'I', 'F', 'F', 'T', 1, 0, 0, 0,
                               0x0D, 0x0C, 0x0B, 0x0A};
    ck_assert_int_eq(open_bytes(zeros, sizeof zeros, &t), MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "record 0 (kind 0) at offset 16"));
    ck_assert_int_eq(memdiff_timeline_open("/nonexistent/x.mdt", &t), MEMDIFF_EIO);
    ck_assert_ptr_null(t);
    /* An endless stream is refused after its 16 bytes. */
    ck_assert_int_eq(memdiff_timeline_open("/dev/zero", &t), MEMDIFF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "/dev/zero: timeline: not a memdiff "
                                                       "timeline (bad magic)"));

    /* A record of a kind this version does not know is skipped; its time still counts. */
    made m = make_file();
    size_t at = (size_t)m.off[m.nrec - 1]; /* before the exit record */
    /* kind 77, payload: time step +1 s (zigzag 2e9), then 3 bytes of its own. */
    unsigned char rec[32];
    size_t n = 0;
    unsigned char payload[16];
    size_t pn = 0;
    uint64_t z = 2000000000u;
    do {
        payload[pn++] = (unsigned char)((z & 0x7F) | (z > 0x7F ? 0x80 : 0));
        z >>= 7;
    } while (z);
    payload[pn++] = 1;
    payload[pn++] = 2;
    payload[pn++] = 3;
    rec[n++] = 77;
    rec[n++] = (unsigned char)pn;
    append_crc(rec, &n); /* the head check */
    memcpy(rec + n, payload, pn);
    n += pn;
    append_crc(rec, &n); /* the record check */
    unsigned char *p = malloc(m.n + n);
    ck_assert_ptr_nonnull(p);
    memcpy(p, m.p, at);
    memcpy(p + at, rec, n);
    memcpy(p + at + n, m.p + at, m.n - at);
    ck_assert_msg(open_bytes(p, m.n + n, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_timeline_info info;
    memdiff_timeline_get_info(t, &info);
    ck_assert_uint_eq(info.skipped, 1);
    ck_assert_uint_eq(info.records, 7);
    memdiff_timeline_record r;
    size_t count = 0;
    while (memdiff_timeline_next(t, &r) == 1)
        count++;
    ck_assert_uint_eq(count, 5); /* the unknown one is not handed out */
    ck_assert_int_eq(r.kind, MEMDIFF_RECORD_EXIT);
    /* The exit's step (2000 ms less the snapshot's time) counts from the skipped record's time,
     * which stepped 1 s past the snapshot's: 3000 ms. A reader that ignored it would say 2000. */
    ck_assert_uint_eq(r.time_ns, 3000 * MS);
    memdiff_timeline_free(t);

    /* A record whose (checked) head announces 4 GiB - 1 and is followed by 3 bytes: torn, read
     * no further than the file goes, its announced length never allocated. */
    n = 0;
    rec[n++] = TL_KIND_SAMPLE_FOR_TEST;
    rec[n++] = 0xFF, rec[n++] = 0xFF, rec[n++] = 0xFF, rec[n++] = 0xFF, rec[n++] = 0x0F;
    append_crc(rec, &n);
    rec[n++] = 1, rec[n++] = 2, rec[n++] = 3;
    memcpy(p, m.p, at);
    memcpy(p + at, rec, n);
    ck_assert_msg(open_bytes(p, at + n, &t) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_timeline_get_info(t, &info);
    ck_assert_int_eq(info.torn, 1);
    ck_assert_uint_eq(info.torn_offset, at);
    ck_assert_uint_lt(info.storage_bytes, 4 * (at + n) + (2u << 20));
    memdiff_timeline_free(t);
    free(p);
    free(m.p);
}
END_TEST

/* ---- marks ---------------------------------------------------------------------------------- */

START_TEST(marks_without_recorder)
{
    /* Nobody has bound this process's name: the mark goes nowhere and says so. */
    unsetenv("MEMDIFF_MARK_FD");
    ck_assert_int_eq(memdiff_mark("nobody listens"), 0);
    ck_assert_int_eq(memdiff_mark(NULL), MEMDIFF_EINVAL);
}
END_TEST

START_TEST(marks_attached_by_pid)
{
    unsetenv("MEMDIFF_MARK_FD");
    memdiff_mark_listener *l = NULL;
    ck_assert_msg(memdiff_mark_listen(getpid(), &l) == MEMDIFF_OK, "%s", memdiff_last_error());
    memdiff_mark_listener *again = NULL;
    ck_assert_int_eq(memdiff_mark_listen(getpid(), &again), MEMDIFF_EIO); /* one recorder */
    ck_assert_ptr_nonnull(strstr(memdiff_last_error(), "another recorder"));
    ck_assert_int_eq(memdiff_mark_listener_child_fd(l), -1);
    memdiff_mark_msg m;
    ck_assert_int_eq(memdiff_mark_receive(l, 0, &m), 0);

    /* Another process writing to this pid's name in the mark layout is not this process. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int s = socket(AF_UNIX, SOCK_DGRAM, 0);
        struct sockaddr_un a;
        memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;
        int len = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "memdiff-mark-%d",
                           (int)getppid());
        unsigned char msg[12] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 'f', 'o', 'e'};
        ssize_t r = sendto(s, msg, sizeof msg, 0, (struct sockaddr *)&a,
                           (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len));
        _exit(r == sizeof msg ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* it was sent, and ... */

    uint64_t before = now_ns();
    ck_assert_int_eq(memdiff_mark("phase 1"), 1);
    char big[MEMDIFF_MARK_LABEL_MAX + 100];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(memdiff_mark(big), 1);
    ck_assert_int_eq(memdiff_mark_receive(l, 0, &m), 1); /* ... dropped: ours comes first */
    ck_assert_str_eq(m.label, "phase 1");
    ck_assert_int_eq(m.pid, getpid());
    ck_assert_uint_ge(m.time_ns, before);
    ck_assert_int_eq(memdiff_mark_receive(l, 0, &m), 1);
    ck_assert_uint_eq(strlen(m.label), MEMDIFF_MARK_LABEL_MAX); /* cut */
    ck_assert_int_eq(memdiff_mark_receive(l, 0, &m), 0);
    memdiff_mark_listener_free(l);
    /* The recorder gone, marks go nowhere again. */
    ck_assert_int_eq(memdiff_mark("after"), 0);
}
END_TEST

START_TEST(poll_errors)
{
    memdiff_process_totals t;
    ck_assert_int_eq(memdiff_poll(0, NULL), MEMDIFF_EINVAL);
    ck_assert_int_eq(memdiff_poll(-1, &t), MEMDIFF_EINVAL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    /* A zombie (not reaped yet) has no memory: gone, as far as a recorder cares. */
    siginfo_t si;
    ck_assert_int_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
    ck_assert_int_eq(memdiff_poll(pid, &t), MEMDIFF_ESRCH);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    ck_assert_int_eq(memdiff_poll(pid, &t), MEMDIFF_ESRCH);
    ck_assert_uint_eq(t.vm_rss, 0);
}
END_TEST

Suite *timeline_suite(void)
{
    Suite *s = suite_create("timeline");
    TCase *tc = tcase_create("Core");
    tcase_add_test(tc, records_a_child_with_phases);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, unchanged_sample_size);
    tcase_add_test(tc, marks_without_recorder);
    tcase_add_test(tc, marks_attached_by_pid);
    tcase_add_test(tc, poll_errors);
    suite_add_tcase(s, tc);
    TCase *bad = tcase_create("Errors");
    tcase_add_test(bad, torn_at_every_offset_of_the_last_record);
    tcase_add_test(bad, flipped_byte_names_record_and_offset);
    tcase_add_test(bad, full_disk);
    tcase_add_test(bad, bad_files);
    tcase_set_timeout(bad, 120);
    suite_add_tcase(s, bad);
    return s;
}
