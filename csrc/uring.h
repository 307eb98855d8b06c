/* io_uring plumbing shared by the senders that submit through a ring. */
#ifndef COPYLAB_URING_H
#define COPYLAB_URING_H

#include "errors.h"

#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>

/* Kernel 6.2 UAPI, newer than Debian 12's liburing headers: ask each zero-copy
 * notification to say whether the kernel copied the data after all. */
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

#define URING_STALL_S 5.0

/* NULL when a ring can be set up and runs OPCODE; otherwise why not. */
static inline const char *uring_opcode_unavailable(int opcode, const char *name)
{
    static char why[160];
    struct io_uring ring;
    int err = io_uring_queue_init(2, &ring, 0);
    if (err < 0) {
        snprintf(why, sizeof why, "io_uring_setup: %s (kernel.io_uring_disabled?)", strerror(-err));
        return why;
    }
    struct io_uring_probe *probe = io_uring_get_probe_ring(&ring);
    bool supported = probe && io_uring_opcode_supported(probe, opcode);
    if (probe)
        io_uring_free_probe(probe);
    io_uring_queue_exit(&ring);
    if (supported)
        return NULL;
    snprintf(why, sizeof why, "this kernel's io_uring does not offer %s", name);
    return why;
}

static inline void uring_init(struct io_uring *ring, unsigned entries)
{
    int err = io_uring_queue_init(entries, ring, 0);
    if (err < 0)
        die("io_uring_setup: %s", strerror(-err));
}

/* The next completion, or NULL when none comes within seconds. */
static inline struct io_uring_cqe *uring_next_within(struct io_uring *ring, double seconds)
{
    long long ns = (long long)(seconds * 1e9);
    struct __kernel_timespec limit = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    for (;;) {
        struct io_uring_cqe *cqe;
        int err = io_uring_wait_cqe_timeout(ring, &cqe, &limit);
        if (err == 0)
            return cqe;
        if (err == -ETIME)
            return NULL;
        if (err != -EINTR)
            die("io_uring_wait_cqe: %s", strerror(-err));
    }
}

/* The next completion; dies when none comes within URING_STALL_S. */
static inline struct io_uring_cqe *uring_next(struct io_uring *ring)
{
    struct io_uring_cqe *cqe = uring_next_within(ring, URING_STALL_S);
    if (!cqe)
        die("io_uring completions stalled for %.0f s: the peer stopped reading", URING_STALL_S);
    return cqe;
}

/* A free submission entry, flushing the queue to the kernel when it is full. */
static inline struct io_uring_sqe *uring_sqe(struct io_uring *ring)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe) {
        int err = io_uring_submit(ring);
        if (err < 0)
            die("io_uring_submit: %s", strerror(-err));
        sqe = io_uring_get_sqe(ring);
        if (!sqe)
            die("io_uring: no free submission entry");
    }
    return sqe;
}

static inline void uring_submit(struct io_uring *ring)
{
    for (;;) {
        int err = io_uring_submit(ring);
        if (err >= 0)
            return;
        if (err != -EINTR)
            die("io_uring_submit: %s", strerror(-err));
    }
}

#endif
