/* MSG_ZEROCOPY on a socket (turning it on, sizing the ring in flight, reading completions from the socket's
 * error queue) and the completion accounting every zero-copy sender shares, so that zero_copy, zc_contiguous
 * and uring_send_zc count notifications, completed and copied sends the same way. */
#include "clock.h"
#include "errors.h"
#include "zc_notify.h"

#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long a sender waits for the completion that frees the ring slot it needs before it gives up, and for the
 * completions still missing when it ends. */
#define ZC_STALL_S 5.0
#define ZC_FINAL_WAIT_S 2.0

void zc_enable(int fd)
{
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) != 0)
        die("the kernel refuses SO_ZEROCOPY: %s", strerror(errno));
}

size_t zc_ring_slots(size_t size, size_t in_flight, size_t distinct)
{
    const size_t most = 1024; /* tiny messages: bound the ring's bookkeeping, not its bytes */
    size_t slots = in_flight / size;
    slots = slots < 2 ? 2 : slots > most ? most : slots;
    return distinct > slots ? distinct : slots;
}

void zc_ring_init(struct zc_ring *ring, size_t size, size_t in_flight, enum layout layout, size_t distinct)
{
    ring->slots = zc_ring_slots(size, in_flight, distinct);
    ring->message = messages_alloc(ring->slots, size, layout);
    ring->ready_at = calloc_or_die(ring->slots, sizeof *ring->ready_at);
}

void zc_ring_free(struct zc_ring *ring)
{
    messages_free(ring->message, ring->slots);
    free(ring->ready_at);
    *ring = (struct zc_ring){0};
}

void zc_completions_init(struct zc_completions *zc, struct sender_counters *counters)
{
    *zc = (struct zc_completions){.counters = counters, .page_size = (uintptr_t)sysconf(_SC_PAGESIZE)};
    counters->zero_copy = true;
}

void zc_message_pinned(struct zc_completions *zc, const struct iovec *iov, size_t entries)
{
    const uintptr_t page = zc->page_size;
    zc->counters->zc_messages++;
    for (size_t i = 0; i < entries; i++) {
        if (iov[i].iov_len == 0)
            continue;
        uintptr_t first = (uintptr_t)iov[i].iov_base / page;
        uintptr_t last = ((uintptr_t)iov[i].iov_base + iov[i].iov_len - 1) / page;
        zc->counters->zc_page_pins += last - first + 1;
    }
}

void zc_sent(struct zc_completions *zc, uint64_t sends)
{
    zc->counters->zc_sends += sends;
}

void zc_notified(struct zc_completions *zc, uint64_t sends, bool copied)
{
    zc->counters->zc_notifications++;
    zc->counters->zc_completed += sends;
    if (copied)
        zc->counters->zc_copied += sends;
}

/* Notification ids are 32 bits in the kernel; widen them near the watermark. */
static uint64_t widen_id(const struct zc_completions *zc, uint32_t id)
{
    return zc->completed_below + (uint32_t)(id - (uint32_t)zc->completed_below);
}

static void advance_watermark(struct zc_completions *zc)
{
    bool moved = true;
    while (moved) {
        moved = false;
        for (unsigned i = 0; i < zc->pending_count; i++) {
            if (zc->pending[i].low == zc->completed_below) {
                zc->completed_below = zc->pending[i].high + 1;
                zc->pending[i] = zc->pending[--zc->pending_count];
                moved = true;
                break;
            }
        }
    }
}

/* Sends LOW to HIGH (32-bit ids, inclusive) completed, COPIED if the kernel copied them. */
static void record_range(struct zc_completions *zc, uint32_t low, uint32_t high, bool copied)
{
    struct zc_id_range range;
    range.low = widen_id(zc, low);
    range.high = range.low + (uint32_t)(high - low);
    zc_notified(zc, range.high - range.low + 1, copied);
    if (zc->pending_count == ZC_MAX_PENDING_RANGES)
        die("more than %d zero-copy completions arrived out of order", ZC_MAX_PENDING_RANGES);
    zc->pending[zc->pending_count++] = range;
    advance_watermark(zc);
}

unsigned zc_reap(int fd, struct zc_completions *zc)
{
    unsigned notifications = 0;
    for (;;) {
        char control[CMSG_SPACE(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in6))];
        struct msghdr mh = {.msg_control = control, .msg_controllen = sizeof control};
        if (recvmsg(fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return notifications;
            die_errno("recvmsg MSG_ERRQUEUE");
        }
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
            bool is_error = (cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
                            (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR);
            if (!is_error)
                continue;
            const struct sock_extended_err *err = (const void *)CMSG_DATA(cm);
            if (err->ee_origin != SO_EE_ORIGIN_ZEROCOPY || err->ee_errno != 0)
                die("unexpected socket error on the error queue: %s", strerror(err->ee_errno));
            record_range(zc, err->ee_info, err->ee_data, (err->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0);
            notifications++;
        }
    }
}

void zc_wait_for_optmem(int fd, struct zc_completions *zc)
{
    zc->counters->zc_enobufs++;
    if (zc_reap(fd, zc) > 0)
        return;
    /* Bounded, not until a completion: waiting for one made zero_copy slower than its reference zc_contiguous at
     * 1 KiB (./inv bench compares the two: docs/performance.md). */
    struct pollfd p = {.fd = fd, .events = 0};
    if (poll(&p, 1, 1) < 0 && errno != EINTR)
        die_errno("poll");
}

/* Waits until every id below TARGET has completed; false on timeout. */
static bool wait_completed(struct zc_sender *s, uint64_t target, double timeout_s)
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
    struct zc_sender *s = ctx;
    zc_wait_for_optmem(s->fd, &s->zc);
}

void zc_sender_init(struct zc_sender *s, const struct sender_config *config, enum layout layout, unsigned reap_every)
{
    *s = (struct zc_sender){.fd = config->fd, .verify = config->verify, .reap_every = reap_every};
    zc_completions_init(&s->zc, &s->counters);
    zc_enable(s->fd);
    zc_ring_init(&s->ring, config->size, config->zc_inflight, layout, config->distinct);
}

enum io_status zc_sender_send(struct zc_sender *s, uint64_t seq)
{
    size_t slot = (size_t)(seq % s->ring.slots);
    if (s->zc.completed_below < s->ring.ready_at[slot] && !wait_completed(s, s->ring.ready_at[slot], ZC_STALL_S))
        die("zero-copy completions stalled for %.0f s", ZC_STALL_S);
    struct message *m = &s->ring.message[slot];
    if (s->verify)
        message_fill(m, seq);
    struct iovec iov[FIELD_COUNT];
    int entries = message_iov(m, iov);
    zc_message_pinned(&s->zc, iov, (size_t)entries);
    uint64_t calls = 0;
    enum io_status status = sendmsg_all(s->fd, iov, entries, MSG_ZEROCOPY, on_enobufs, s, &calls);
    zc_sent(&s->zc, calls);
    s->ring.ready_at[slot] = s->counters.zc_sends; /* the id after this message's last send */
    if (s->reap_every && seq % s->reap_every == s->reap_every - 1)
        zc_reap(s->fd, &s->zc);
    return status;
}

void zc_sender_finish(struct zc_sender *s, struct sender_counters *counters)
{
    wait_completed(s, s->counters.zc_sends, ZC_FINAL_WAIT_S);
    *counters = s->counters;
    zc_ring_free(&s->ring);
}
