/* zero_copy: sendmsg(MSG_ZEROCOPY) with the 8-entry iovec.  The kernel pins
 * the pages instead of copying them and later reports, on the socket's error
 * queue, which sends it no longer needs (and whether it copied them anyway).
 * A ring of messages lets sends proceed while earlier ones are in flight; a
 * slot is never written again before the completion that covers it. */
#include "copylab.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const VARIANT_NAME = "zero_copy";
const bool SENDS_FROM_FILE = false;

#define MAX_PENDING_RANGES 256
#define COMPLETION_STALL_S 5.0
#define FINAL_WAIT_S 2.0

struct id_range {
    uint64_t low, high; /* inclusive */
};

struct sender {
    int fd;
    bool verify;
    size_t slots;
    struct message *ring;
    uint64_t *slot_ready_at; /* the slot is free once completed_below >= this */
    uint64_t next_id;         /* id the kernel gives the next successful send */
    uint64_t completed_below; /* every id below it has completed */
    struct id_range pending[MAX_PENDING_RANGES]; /* completions that came early */
    unsigned pending_count;
    struct sender_counters counters;
};

/* Notification ids are 32 bits in the kernel; widen them near the watermark. */
static uint64_t widen_id(const struct sender *s, uint32_t id)
{
    return s->completed_below + (uint32_t)(id - (uint32_t)s->completed_below);
}

static void advance_watermark(struct sender *s)
{
    bool moved = true;
    while (moved) {
        moved = false;
        for (unsigned i = 0; i < s->pending_count; i++) {
            if (s->pending[i].low == s->completed_below) {
                s->completed_below = s->pending[i].high + 1;
                s->pending[i] = s->pending[--s->pending_count];
                moved = true;
                break;
            }
        }
    }
}

static void record_completion(void *ctx, uint32_t low, uint32_t high, bool copied)
{
    struct sender *s = ctx;
    struct id_range range;
    range.low = widen_id(s, low);
    range.high = range.low + (uint32_t)(high - low);
    uint64_t sends = range.high - range.low + 1;
    s->counters.zc_notifications++;
    s->counters.zc_completed += sends;
    if (copied)
        s->counters.zc_copied += sends;
    if (s->pending_count == MAX_PENDING_RANGES)
        die("more than %d zero-copy completions arrived out of order", MAX_PENDING_RANGES);
    s->pending[s->pending_count++] = range;
    advance_watermark(s);
}

static unsigned reap_completions(struct sender *s)
{
    return zc_reap(s->fd, record_completion, s);
}

/* Waits until every id below target has completed; false on timeout. */
static bool wait_completed(struct sender *s, uint64_t target, double timeout_s)
{
    uint64_t deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
    while (s->completed_below < target) {
        if (reap_completions(s))
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
    s->counters.zc_enobufs++;
    /* Out of option memory: completions free it; wait for at least one. */
    uint64_t outstanding_until = s->next_id;
    if (reap_completions(s) == 0 && s->completed_below < outstanding_until &&
        !wait_completed(s, s->completed_below + 1, COMPLETION_STALL_S))
        die("zero-copy completions stalled for %.0f s under ENOBUFS", COMPLETION_STALL_S);
    if (s->completed_below >= outstanding_until) {
        struct timespec pause = {0, 100 * 1000};
        nanosleep(&pause, NULL);
    }
}

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    s->fd = config->fd;
    s->verify = config->verify;
    s->counters.zero_copy = true;
    zc_enable(s->fd);
    s->slots = zc_ring_slots(config->size);
    s->ring = calloc_or_die(s->slots, sizeof *s->ring);
    s->slot_ready_at = calloc_or_die(s->slots, sizeof *s->slot_ready_at);
    for (size_t i = 0; i < s->slots; i++)
        message_alloc(&s->ring[i], config->size, config->align_fields);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    size_t slot = (size_t)(seq % s->slots);
    if (s->completed_below < s->slot_ready_at[slot] &&
        !wait_completed(s, s->slot_ready_at[slot], COMPLETION_STALL_S))
        die("zero-copy completions stalled for %.0f s", COMPLETION_STALL_S);
    struct message *m = &s->ring[slot];
    if (s->verify)
        message_fill(m, seq);
    struct iovec iov[FIELD_COUNT];
    message_iov(m, iov);
    uint64_t calls = 0;
    enum io_status status = sendmsg_all(s->fd, iov, FIELD_COUNT, MSG_ZEROCOPY, on_enobufs, s, &calls);
    s->next_id += calls;
    s->counters.zc_sends += calls;
    s->slot_ready_at[slot] = s->next_id;
    return status;
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    /* Completions still missing after the bound stay visible as sends > completed. */
    wait_completed(s, s->next_id, FINAL_WAIT_S);
    *counters = s->counters;
    for (size_t i = 0; i < s->slots; i++)
        message_free(&s->ring[i]);
    free(s->ring);
    free(s->slot_ready_at);
    free(s);
}
