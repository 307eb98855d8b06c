/* zc_contiguous: the reference for zero_copy, the way a minimal MSG_ZEROCOPY benchmark sends: one contiguous
 * buffer, sent again and again while earlier sends are in flight.  It keeps as many bytes in flight as
 * zero_copy does (--zc-inflight), so the two differ only in zero_copy's ring of separate messages, and reads
 * the error queue every 32 sends to keep it short.  Its bytes never change, so sending the buffer again
 * before an earlier send completed sends the same bytes; with --verify every message carries its own
 * pattern, so it then waits, like zero_copy, before rewriting it. */
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
    struct message message; /* contiguous: its block is the buffer sent */
    size_t window;          /* messages in flight at most */
    uint64_t *sent_until;   /* per message modulo window: the send id after its last send */
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
    s->counters.zc_enobufs++;
    if (zc_reap(s->fd, &s->zc) == 0) {
        struct pollfd p = {.fd = s->fd, .events = 0};
        if (poll(&p, 1, 1) < 0 && errno != EINTR)
            die_errno("poll");
    }
}

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    s->fd = config->fd;
    s->verify = config->verify;
    zc_completions_init(&s->zc, &s->counters);
    zc_enable(s->fd);
    message_alloc(&s->message, config->size, LAYOUT_CONTIGUOUS);
    s->window = zc_ring_slots(config->size, config->zc_inflight);
    s->sent_until = calloc_or_die(s->window, sizeof *s->sent_until);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    uint64_t *slot = &s->sent_until[seq % s->window];
    uint64_t must_complete = s->verify ? s->counters.zc_sends : *slot;
    if (s->zc.completed_below < must_complete && !wait_completed(s, must_complete, STALL_S))
        die("zero-copy completions stalled for %.0f s", STALL_S);
    if (s->verify)
        message_fill(&s->message, seq);
    struct iovec iov = {.iov_base = s->message.block, .iov_len = s->message.size};
    uint64_t calls = 0;
    enum io_status status = sendmsg_all(s->fd, &iov, 1, MSG_ZEROCOPY, on_enobufs, s, &calls);
    zc_sent(&s->zc, calls);
    *slot = s->counters.zc_sends;
    if (seq % REAP_EVERY == REAP_EVERY - 1)
        zc_reap(s->fd, &s->zc);
    return status;
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    wait_completed(s, s->counters.zc_sends, 2.0); /* completions still missing stay visible as sends > completed */
    *counters = s->counters;
    message_free(&s->message);
    free(s->sent_until);
    free(s);
}
