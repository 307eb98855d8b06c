/* A receiving thread of the client: one a connection, reading the stream or timing round trips (receiver.c). */
#ifndef COPYLAB_RECEIVER_H
#define COPYLAB_RECEIVER_H

#include "errors.h"
#include "histogram.h"
#include "options.h"
#include "receive.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

enum phase { PHASE_WARMUP, PHASE_MEASURE, PHASE_STOP };

struct receiver {
    pthread_t thread;
    int fd;
    const struct options *opt;
    _Atomic int *phase;
    struct receiver_io io;
    struct histogram *latency; /* rr only */
    /* Read by the main thread at the window's edges. */
    _Alignas(CACHELINE) _Atomic uint64_t bytes;
    _Atomic uint64_t mapped, copied, copybuf; /* receive mmap: mapped, recv()'d, copied inside the call */
    _Atomic uint64_t calls;          /* receive system calls */
    _Alignas(CACHELINE) char pad;
};

/* The thread's body (pthread_create's start routine): receives until the phase turns to PHASE_STOP. */
void *receiver_main(void *arg);

#endif
