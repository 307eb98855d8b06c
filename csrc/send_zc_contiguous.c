/* zc_contiguous: the reference for zero_copy, the way a minimal MSG_ZEROCOPY benchmark sends: each message one
 * contiguous buffer, read the error queue only every 32 sends.  It keeps as many bytes of distinct messages in
 * flight as zero_copy does (--zc-inflight): a buffer the kernel still holds is never the next one sent, as any
 * sender whose bytes change must do.  Resending one cache-hot buffer instead is no bound: at 1 KiB the receiver
 * then copies out of 1 KiB of memory where zero_copy's ring spans 256 KiB (README, Performance). */
#include "zc_notify.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

const char *const VARIANT_NAME = "zc_contiguous";
const bool SENDS_FROM_FILE = false;
const bool VARIANT_ONE_BUFFER = true;

#define STALL_S 5.0
/* Like the kernel selftest msg_zerocopy, read the error queue only every so many sends: the kernel merges
 * the notifications of consecutive sends meanwhile, and each read is a system call. */
#define REAP_EVERY 32

struct sender {
    int fd;
    bool verify;
    struct zc_ring ring; /* contiguous messages */
    struct zc_completions zc;
    struct sender_counters counters;
};

/* Waits, bounded, until every send below TARGET has completed. */
static bool wait_completed(struct sender *s, uint64_t target, double timeout_s)
{
    uint64_t deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
    while (s->zc.completed_below < target) {
        if (zc_reap(s->fd, &s->zc))
            continue;
        uint64_t now = now_ns();
        if (now >= deadline)
            return false;
        struct pollfd p = {.fd = s->fd, .events = 0};
        if (poll(&p, 1, 1) < 0 && errno != EINTR)
            die_errno("poll");
    }
    return true;
}

static void on_enobufs(void *ctx)
{
    struct sender *s = ctx;
    zc_wait_for_optmem(s->fd, &s->zc);
}

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    s->fd = config->fd;
    s->verify = config->verify;
    zc_completions_init(&s->zc, &s->counters);
    zc_enable(s->fd);
    zc_ring_init(&s->ring, config->size, config->zc_inflight, LAYOUT_CONTIGUOUS, config->distinct);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    size_t slot = (size_t)(seq % s->ring.slots);
    if (s->zc.completed_below < s->ring.ready_at[slot] && !wait_completed(s, s->ring.ready_at[slot], STALL_S))
        die("zero-copy completions stalled for %.0f s", STALL_S);
    struct message *m = &s->ring.message[slot];
    if (s->verify)
        message_fill(m, seq);
    struct iovec iov = {.iov_base = m->block, .iov_len = m->size};
    zc_message_pinned(&s->zc, &iov, 1);
    uint64_t calls = 0;
    enum io_status status = sendmsg_all(s->fd, &iov, 1, MSG_ZEROCOPY, on_enobufs, s, &calls);
    zc_sent(&s->zc, calls);
    s->ring.ready_at[slot] = s->counters.zc_sends;
    if (seq % REAP_EVERY == REAP_EVERY - 1)
        zc_reap(s->fd, &s->zc);
    return status;
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    wait_completed(s, s->counters.zc_sends, 2.0); /* completions still missing stay visible as sends > completed */
    *counters = s->counters;
    zc_ring_free(&s->ring);
    free(s);
}
