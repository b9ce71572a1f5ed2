/*
 * storage.c - exact bytes of a snapshot's page-run storage, from memdiff's internal layout
 * (memdiff/internal.h). info.storage_bytes counts whole arena chunks; this counts what the runs
 * themselves take, to hold the representation to its bits-per-page targets.
 */
#include "internal.h"

#include "bench.h"

void bench_storage_of(const struct memdiff_snapshot *s, bench_storage *out)
{
    out->run_bytes = memdiff__runs_bytes(s);
    out->aux_bytes = memdiff__seq_bytes(&s->frames) + memdiff__seq_bytes(&s->kflags) +
                     memdiff__seq_bytes(&s->mapcount);
    out->runs = s->run_count;
}
