/* Single-core memory copy bandwidth: the ceiling for any path that copies.
 * Copies a buffer far larger than the last-level cache; prints the best of
 * several runs as JSON. */
#include "clock.h"
#include "errors.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const char USAGE[] =
    "usage: memcpy_bandwidth [MIB 1..4096] [RUNS 1..100]\n"
    "Single-core memcpy bandwidth: copies a buffer of MIB MiB (default 256) RUNS times (default 7) on the CPU it\n"
    "runs on. Prints one JSON object: buffer_mib, runs and memcpy_gbps (the best run).\n"
    "docs/reference/programs.md lists the keys.\n";

int main(int argc, char **argv)
{
    help_if_asked(argc, argv, USAGE);
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
    int runs = argc > 2 ? atoi(argv[2]) : 7;
    if (mib < 1 || mib > 4096 || runs < 1 || runs > 100)
        die_usage("usage: memcpy_bandwidth [MIB 1..4096] [RUNS 1..100] (see --help)");
    size_t bytes = mib << 20;
    /* Huge pages where the kernel offers them: whether a run got them or not
     * otherwise halves or doubles the result from one process to the next. */
    const size_t huge = 2u << 20;
    char *from = aligned_alloc(huge, bytes), *to = aligned_alloc(huge, bytes);
    if (!from || !to)
        die("out of memory for %zu MiB", mib);
    if (madvise(from, bytes, MADV_HUGEPAGE) != 0 || madvise(to, bytes, MADV_HUGEPAGE) != 0)
        fprintf(stderr, "copylab: note: no transparent huge pages; the figure may vary between runs\n");
    /* Touch both buffers so page faults stay out of the timed copies. */
    memset(from, 1, bytes);
    memset(to, 2, bytes);
    double best = 0;
    for (int i = 0; i < runs; i++) {
        uint64_t start = now_ns();
        memcpy(to, from, bytes);
        double gbps = (double)bytes * 8.0 / (double)(now_ns() - start);
        if (gbps > best)
            best = gbps;
        /* Keep the copy observable so it cannot be optimised away. */
        from[(size_t)i % bytes] = to[bytes - 1 - (size_t)i];
    }
    struct json j;
    json_begin(&j);
    json_u64(&j, "buffer_mib", mib);
    json_u64(&j, "runs", (uint64_t)runs);
    json_f64(&j, "memcpy_gbps", best);
    json_end(&j);
    free(from);
    free(to);
    return 0;
}
