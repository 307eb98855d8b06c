/* Copy cost by working-set size, like lmbench's bw_mem: for each working set
 * (source + destination bytes) given, the median over RUNS of the time one
 * byte takes to copy with memcpy, buffers hot (already copied once), on
 * whatever CPU the caller pinned us to.  Prints JSON. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SIZES 32
#define MAX_RUNS 51
/* Bytes copied per timed run: enough that the clock's resolution does not matter. */
#define BYTES_PER_RUN (32u << 20)

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse(const char *text, unsigned long low, unsigned long high, unsigned long *value)
{
    char *end;
    errno = 0;
    *value = strtoul(text, &end, 10);
    return errno == 0 && *end == '\0' && end != text && *value >= low && *value <= high;
}

/* Median ns per byte copying HALF bytes from one buffer to another, RUNS times. */
static int measure(size_t half, int runs, double *ns_per_byte)
{
    char *from = malloc(half), *to = malloc(half);
    if (!from || !to) {
        free(from);
        free(to);
        return -1;
    }
    memset(from, 1, half);
    memcpy(to, from, half); /* hot: both buffers faulted in and cached where they fit */
    size_t rounds = BYTES_PER_RUN / half ? BYTES_PER_RUN / half : 1;
    double samples[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        double start = now_ns();
        for (size_t i = 0; i < rounds; i++) {
            memcpy(to, from, half);
            __asm__ __volatile__("" : : "r"(to) : "memory"); /* every copy happens, in order */
        }
        samples[r] = (now_ns() - start) / ((double)rounds * (double)half);
    }
    qsort(samples, (size_t)runs, sizeof samples[0], by_value);
    *ns_per_byte = samples[runs / 2];
    free(from);
    free(to);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long runs, sizes[MAX_SIZES];
    int count = argc - 2;
    if (argc < 3 || count > MAX_SIZES || !parse(argv[1], 1, MAX_RUNS, &runs)) {
        fprintf(stderr, "copylab: error: usage: copy_cost RUNS(1..%d) WORKING_SET_BYTES... (at most %d)\n",
                MAX_RUNS, MAX_SIZES);
        return 2;
    }
    for (int i = 0; i < count; i++) {
        if (!parse(argv[i + 2], 256, 4ul << 30, &sizes[i])) {
            fprintf(stderr, "copylab: error: working set %s is not a byte count from 256 to 4 GiB\n", argv[i + 2]);
            return 2;
        }
    }
    printf("{\"runs\": %lu, \"points\": [", runs);
    for (int i = 0; i < count; i++) {
        double ns;
        if (measure(sizes[i] / 2, (int)runs, &ns) != 0) {
            fprintf(stderr, "copylab: error: out of memory for a %lu-byte working set\n", sizes[i]);
            return 1;
        }
        printf("%s{\"working_set_bytes\": %lu, \"ns_per_byte\": %.5f}", i ? ", " : "", sizes[i], ns);
    }
    printf("]}\n");
    return 0;
}
