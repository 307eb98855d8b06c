/* zero_copy: sendmsg(MSG_ZEROCOPY) with the 8-entry iovec (one entry with --layout contiguous).  The kernel pins
 * the pages instead of copying them and later reports, on the socket's error
 * queue, which sends it no longer needs (and whether it copied them anyway).
 * A ring of messages lets sends proceed while earlier ones are in flight; a
 * slot is never written again before the completion that covers it. */
#include "zc_notify.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const VARIANT_NAME = "zero_copy";
const bool SENDS_FROM_FILE = false;

#define COMPLETION_STALL_S 5.0
#define FINAL_WAIT_S 2.0

struct sender {
    int fd;
    bool verify;
    struct zc_ring ring;
    struct zc_completions zc;
    struct sender_counters counters;
};

/* Waits until every id below target has completed; false on timeout. */
static bool wait_completed(struct sender *s, uint64_t target, double timeout_s)
{
    uint64_t deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
    while (s->zc.completed_below < target) {
        if (zc_reap(s->fd, &s->zc))
            continue;
        uint64_t now = now_ns();
        if (now >= deadline)
            return false;
        /* POLLERR signals a non-empty error queue; events = 0 asks for nothing else. */
        struct pollfd p = {.fd = s->fd, .events = 0};
        int ready = poll(&p, 1, (int)((deadline - now) / 1000000ULL) + 1);
        if (ready < 0 && errno != EINTR)
            die_errno("poll");
        if (ready > 0 && !(p.revents & POLLERR)) {
            /* Only a hang-up is pending: back off instead of spinning. */
            struct timespec pause = {0, 200 * 1000};
            nanosleep(&pause, NULL);
        }
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
    zc_ring_init(&s->ring, config->size, config->zc_inflight, config->layout, config->distinct);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    size_t slot = (size_t)(seq % s->ring.slots);
    if (s->zc.completed_below < s->ring.ready_at[slot] &&
        !wait_completed(s, s->ring.ready_at[slot], COMPLETION_STALL_S))
        die("zero-copy completions stalled for %.0f s", COMPLETION_STALL_S);
    struct message *m = &s->ring.message[slot];
    if (s->verify)
        message_fill(m, seq);
    struct iovec iov[FIELD_COUNT];
    size_t entries = (size_t)message_iov(m, iov);
    zc_message_pinned(&s->zc, iov, entries);
    uint64_t calls = 0;
    enum io_status status = sendmsg_all(s->fd, iov, entries, MSG_ZEROCOPY, on_enobufs, s, &calls);
    zc_sent(&s->zc, calls);
    s->ring.ready_at[slot] = s->counters.zc_sends; /* the id after this message's last send */
    return status;
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    /* Completions still missing after the bound stay visible as sends > completed. */
    wait_completed(s, s->counters.zc_sends, FINAL_WAIT_S);
    *counters = s->counters;
    zc_ring_free(&s->ring);
    free(s);
}
