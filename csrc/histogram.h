/* Log-linear latency histogram (relative error < 1%), one per thread (histogram.c). */
#ifndef COPYLAB_HISTOGRAM_H
#define COPYLAB_HISTOGRAM_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) << HIST_SUB_BITS)
struct histogram {
    uint64_t count, sum_ns, max_ns;
    uint64_t bucket[HIST_BUCKETS];
};
void histogram_record(struct histogram *h, uint64_t ns);
void histogram_merge(struct histogram *into, const struct histogram *from);
double histogram_percentile_ns(const struct histogram *h, double percentile);

#endif
