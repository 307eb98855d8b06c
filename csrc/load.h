/* The load client's connections and driver threads, shared by its two ways of
 * offering load: closed loop (load_client.c: one request outstanding per
 * connection) and open loop (load_open.c: requests on a schedule). */
#ifndef COPYLAB_LOAD_H
#define COPYLAB_LOAD_H

#include "histogram.h"
#include "options.h"
#include "usage.h"

#include <pthread.h>

/* A round trip begun in the window is waited for this long after it: its latency counts. */
#define DRAIN_S 2.0

enum phase { PHASE_WARMUP, PHASE_MEASURE, PHASE_STOP };

/* A request of the open loop not yet answered: when it was due, and whether that was in the window. */
struct scheduled {
    uint64_t at_ns;
    bool measured;
};

struct connection {
    int fd;
    size_t received; /* of the response now arriving */
    _Atomic uint64_t completed;
    /* closed loop: the one request outstanding */
    uint64_t started_ns;
    bool measured; /* the round trip started inside the window */
    /* open loop: the requests outstanding, oldest first (a ring), and the bytes of them not yet sent */
    struct scheduled *outstanding;
    unsigned first, waiting, capacity;
    size_t unsent;
    bool writing; /* waiting for the socket to take the unsent bytes */
};

struct driver {
    pthread_t thread;
    struct connection *connections; /* every threads-th connection, from its first */
    unsigned count, stride;
    size_t size;
    bool verify;
    _Atomic int *phase;
    _Atomic uint64_t *window_end_ns; /* CLOCK_MONOTONIC when the window closed, set before PHASE_STOP */
    unsigned in_window; /* round trips begun in the window and not yet answered */
    struct histogram latency;
    /* open loop */
    double rate;              /* requests per second this thread offers */
    unsigned unanswered;      /* requests of the window still unanswered DRAIN_S after it */
    struct histogram lag;     /* how late each request of the window was issued against its schedule */
};

static inline struct connection *driven(const struct driver *d, unsigned i)
{
    return &d->connections[(size_t)i * d->stride];
}

/* Checks COUNT response bytes that begin OFFSET bytes into a response: every response is the pattern of
 * message 0, and a byte that differs ends the run (load.c). */
void verify_response(const char *bytes, size_t count, size_t offset, const struct connection *c);
/* The open loop's thread (load_open.c). */
void *drive_open(void *arg);
/* Under open load, ends the run saying the limit was the client's when it did not keep up with the rate. */
void check_client_kept_up(const struct options *opt, double seconds, const struct usage *used,
                          const struct histogram *lag, const struct histogram *latency);

#endif
