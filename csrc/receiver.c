/* A receiving thread of the client: the stream's bytes, or a request's round trip (rr), counted for the main
 * thread to read at the window's edges. */
#include "receiver.h"

#include "clock.h"
#include "transfer.h"

#include <stdbool.h>
#include <stddef.h>

/* Publishes the receiver's counts for the main thread to read at the window's edges. */
static void publish(struct receiver *r)
{
    atomic_store_explicit(&r->mapped, r->io.mapped, memory_order_relaxed);
    atomic_store_explicit(&r->copied, r->io.copied, memory_order_relaxed);
    atomic_store_explicit(&r->copybuf, r->io.copybuf, memory_order_relaxed);
    atomic_store_explicit(&r->calls, r->io.calls, memory_order_relaxed);
    atomic_store_explicit(&r->bytes, r->io.position, memory_order_relaxed);
}

static void receive_stream(struct receiver *r)
{
    for (;;) {
        size_t got = receive_some(&r->io, r->io.capacity);
        if (got == 0) {
            if (atomic_load_explicit(r->phase, memory_order_relaxed) == PHASE_STOP)
                return;
            die("the server closed a connection during the run");
        }
        publish(r);
    }
}

/* Receives one whole response; false when the stream ended first. */
static bool receive_response(struct receiver *r, size_t size)
{
    for (size_t got = 0; got < size;) {
        size_t more = receive_some(&r->io, size - got);
        if (more == 0)
            return false;
        got += more;
    }
    return true;
}

static void receive_rr(struct receiver *r)
{
    size_t size = r->opt->size;
    for (uint64_t seq = 0;; seq++) {
        int phase = atomic_load_explicit(r->phase, memory_order_relaxed);
        if (phase == PHASE_STOP)
            break;
        uint64_t request = seq, start = now_ns();
        if (send_all(r->fd, &request, sizeof request) != IO_OK || !receive_response(r, size)) {
            if (atomic_load_explicit(r->phase, memory_order_relaxed) == PHASE_STOP)
                break;
            die("the server closed a connection during the run");
        }
        uint64_t elapsed = now_ns() - start;
        if (phase == PHASE_MEASURE)
            histogram_record(r->latency, elapsed);
        publish(r);
    }
}

void *receiver_main(void *arg)
{
    struct receiver *r = arg;
    if (r->opt->mode == MODE_RR)
        receive_rr(r);
    else
        receive_stream(r);
    return NULL;
}
