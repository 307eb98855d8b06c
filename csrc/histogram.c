/* A log-linear latency histogram, one per thread and merged at the end: fixed memory and an O(1) record
 * on the round-trip path, and a relative error under 1%. */

#include "histogram.h"

#include <math.h>

static unsigned bucket_of(uint64_t ns)
{
    if (ns < (1ULL << HIST_SUB_BITS))
        return (unsigned)ns;
    unsigned exponent = 63u - (unsigned)__builtin_clzll(ns);
    unsigned shift = exponent - HIST_SUB_BITS;
    unsigned sub = (unsigned)(ns >> shift) - (1u << HIST_SUB_BITS);
    return ((shift + 1) << HIST_SUB_BITS) + sub;
}

static double bucket_midpoint(unsigned index)
{
    if (index < (1u << HIST_SUB_BITS))
        return (double)index;
    unsigned shift = (index >> HIST_SUB_BITS) - 1;
    uint64_t sub = index & ((1u << HIST_SUB_BITS) - 1);
    double low = (double)((sub + (1u << HIST_SUB_BITS)) << shift);
    return low + (double)(1ULL << shift) / 2.0;
}

void histogram_record(struct histogram *h, uint64_t ns)
{
    h->count++;
    h->sum_ns += ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
    h->bucket[bucket_of(ns)]++;
}

void histogram_merge(struct histogram *into, const struct histogram *from)
{
    into->count += from->count;
    into->sum_ns += from->sum_ns;
    if (from->max_ns > into->max_ns)
        into->max_ns = from->max_ns;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        into->bucket[i] += from->bucket[i];
}

double histogram_percentile_ns(const struct histogram *h, double percentile)
{
    if (h->count == 0)
        return NAN;
    uint64_t rank = (uint64_t)ceil(percentile / 100.0 * (double)h->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank) {
            double mid = bucket_midpoint(i);
            return mid > (double)h->max_ns ? (double)h->max_ns : mid;
        }
    }
    return (double)h->max_ns;
}
