/* How fast this CPU runs right now: the time of a fixed chain of dependent multiplications, and of
 * copying a buffer that fits the last-level cache but not the private ones.
 *
 *   speed_probe
 *
 * A guest's virtual CPU can run at half speed for seconds when the host gives its physical core to
 * someone else (a busy hyperthread sibling, frequency limits), and its copies slow down when other
 * guests fill the shared cache and memory bus: invisible inside the guest, where the thread is on its
 * CPU the whole time. Timing the same work before and after a trial tells at which speed the trial
 * probably ran. Prints JSON: the median of REPEATS runs of each, and the share of their wall time the
 * thread was on a CPU (below 1: another process took it). */
#include "clock.h"
#include "errors.h"
#include "json.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ITERATIONS 400000u
#define REPEATS 5
#define COPY_BYTES (2u << 20)

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const char USAGE[] =
    "usage: speed_probe\n"
    "How fast this CPU runs now: times a chain of dependent multiplications and a 2 MiB copy, 5 times each.\n"
    "Prints one JSON object: ns_per_iteration, copy_ns_per_byte (medians) and on_cpu (the share of the wall\n"
    "time the thread was on a CPU). docs/reference/programs.md lists the keys.\n";

int main(int argc, char **argv)
{
    help_if_asked(argc, argv, USAGE);
    if (argc != 1)
        die_usage("usage: speed_probe (no arguments; see --help)");
    /* Page-aligned: a destination a few bytes past its source can take a slow copy path on some CPUs. */
    char *from = page_alloc_or_die(COPY_BYTES), *to = page_alloc_or_die(COPY_BYTES);
    memset(from, 1, COPY_BYTES);
    memcpy(to, from, COPY_BYTES);
    double ns[REPEATS], copy[REPEATS], wall_total = 0, cpu_total = 0;
    uint64_t x = 1;
    for (int r = 0; r < REPEATS; r++) {
        double wall = clock_ns(CLOCK_MONOTONIC), cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        for (unsigned i = 0; i < ITERATIONS; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL; /* each step waits for the last */
            __asm__ __volatile__("" : "+r"(x));
        }
        double middle = clock_ns(CLOCK_MONOTONIC);
        memcpy(to, from, COPY_BYTES);
        __asm__ __volatile__("" : : "r"(to) : "memory");
        double end = clock_ns(CLOCK_MONOTONIC);
        wall_total += end - wall;
        cpu_total += clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
        ns[r] = (middle - wall) / ITERATIONS;
        copy[r] = (end - middle) / COPY_BYTES;
    }
    qsort(ns, REPEATS, sizeof ns[0], by_value);
    qsort(copy, REPEATS, sizeof copy[0], by_value);
    struct json j;
    json_begin(&j);
    json_f64(&j, "ns_per_iteration", ns[REPEATS / 2]);
    json_f64(&j, "copy_ns_per_byte", copy[REPEATS / 2]);
    json_f64(&j, "on_cpu", cpu_total / wall_total);
    json_end(&j);
    free(from);
    free(to);
    return 0;
}
