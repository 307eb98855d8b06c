/* uring_send_zc: the 8-field message through io_uring IORING_OP_SENDMSG_ZC.
 * Like zero_copy, the kernel pins the fields' pages instead of copying them;
 * unlike it, each send completes twice on the ring: first its result, then a
 * notification once the kernel no longer needs the pages, which
 * IORING_SEND_ZC_REPORT_USAGE makes say whether it copied them anyway.  A
 * ring of messages lets sends proceed while earlier ones are pinned; a slot is
 * written again only after its last notification. */
#include "clock.h"
#include "connection.h"
#include "uring.h"
#include "zc_notify.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <unistd.h>

const char *const VARIANT_NAME = "uring_send_zc";
const bool SENDS_FROM_FILE = false;

#define QUEUE_DEPTH 64
#define FINAL_WAIT_S 2.0

struct slot {
    struct message message;
    struct iovec iov[FIELD_COUNT];
    struct msghdr mh;
    struct iovec part[FIELD_COUNT];
    struct msghdr piece; /* what one request sends of mh; must outlive it: the kernel may read it when it issues */
    unsigned pending; /* completions (result or notification) still to come */
};

struct sender {
    int fd;
    bool verify;
    struct io_uring ring;
    size_t count;
    struct slot *slots;
    struct zc_completions zc;
    struct sender_counters counters;
};

static void prep_send(struct io_uring *ring, int fd, struct msghdr *mh, uint64_t slot)
{
    struct io_uring_sqe *sqe = uring_sqe(ring);
    io_uring_prep_sendmsg_zc(sqe, fd, mh, MSG_NOSIGNAL);
    sqe->ioprio |= IORING_SEND_ZC_REPORT_USAGE;
    io_uring_sqe_set_data64(sqe, slot);
}

/* A zero-copy send over a loopback TCP connection: does the kernel accept the usage report? */
static const char *report_usage_unavailable(void)
{
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), client = -1, server = -1;
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 ||
        listen(listener, 1) != 0 || getsockname(listener, (struct sockaddr *)&address, &length) != 0)
        return "cannot open a loopback socket to try a zero-copy send (is lo up?)";
    client = connect_within("127.0.0.1", ntohs(address.sin_port), 1.0);
    server = accept_within(listener, 1.0);
    struct io_uring ring;
    uring_init(&ring, 2);
    char byte = 'x';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    prep_send(&ring, server, &mh, 0);
    uring_submit(&ring);
    struct io_uring_cqe *cqe = uring_next(&ring);
    int result = cqe->res;
    bool notification_due = cqe->flags & IORING_CQE_F_MORE;
    io_uring_cqe_seen(&ring, cqe);
    if (notification_due)
        io_uring_cqe_seen(&ring, uring_next(&ring));
    io_uring_queue_exit(&ring);
    if (close(client) != 0 || close(server) != 0 || close(listener) != 0)
        die_errno("close");
    if (result == -EINVAL)
        return "the kernel refuses IORING_SEND_ZC_REPORT_USAGE (it needs Linux 6.2 or newer)";
    if (result < 0)
        return "a zero-copy send through io_uring failed on loopback";
    return NULL;
}

const char *sender_unavailable(void)
{
    const char *why = uring_opcode_unavailable(IORING_OP_SENDMSG_ZC, "IORING_OP_SENDMSG_ZC");
    return why ? why : report_usage_unavailable();
}

/* Takes one completion: a send's result (returned through *result) or a notification. */
static void take(struct sender *s, struct io_uring_cqe *cqe, int *result, bool *have_result)
{
    struct slot *slot = &s->slots[io_uring_cqe_get_data64(cqe)];
    if (cqe->flags & IORING_CQE_F_NOTIF) {
        zc_notified(&s->zc, 1, ((uint32_t)cqe->res & IORING_NOTIF_USAGE_ZC_COPIED) != 0);
        slot->pending--;
    } else if (cqe->flags & IORING_CQE_F_MORE) {
        /* The kernel took the pages: a notification will say when it lets them go. */
        zc_sent(&s->zc, 1);
        slot->pending--;
        *result = cqe->res;
        *have_result = true;
    } else {
        slot->pending -= 2; /* refused outright: no notification follows */
        *result = cqe->res;
        *have_result = true;
    }
    io_uring_cqe_seen(&s->ring, cqe);
}

static void reap(struct sender *s, int *result, bool *have_result)
{
    take(s, uring_next(&s->ring), result, have_result);
}

/* Waits until nothing of SLOT is pending, at most until deadline_ns; false if it had to give up. */
static bool drain(struct sender *s, struct slot *slot, uint64_t deadline_ns)
{
    int ignored;
    bool ignored_result;
    while (slot->pending > 0) {
        uint64_t now = now_ns();
        struct io_uring_cqe *cqe = now < deadline_ns ? uring_next_within(&s->ring, (double)(deadline_ns - now) / 1e9)
                                                     : NULL;
        if (!cqe)
            return false;
        take(s, cqe, &ignored, &ignored_result);
    }
    return true;
}

static uint64_t stall_deadline(void)
{
    return now_ns() + (uint64_t)(URING_STALL_S * 1e9);
}

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    s->fd = config->fd;
    s->verify = config->verify;
    zc_completions_init(&s->zc, &s->counters);
    uring_init(&s->ring, QUEUE_DEPTH);
    s->count = zc_ring_slots(config->size, config->zc_inflight, config->distinct);
    s->slots = calloc_or_die(s->count, sizeof *s->slots);
    for (size_t i = 0; i < s->count; i++)
        message_alloc(&s->slots[i].message, config->size, config->layout);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    size_t index = (size_t)(seq % s->count);
    struct slot *slot = &s->slots[index];
    if (!drain(s, slot, stall_deadline()))
        die("zero-copy notifications stalled for %.0f s", URING_STALL_S);
    if (s->verify)
        message_fill(&slot->message, seq);
    slot->mh = (struct msghdr){.msg_iov = slot->iov, .msg_iovlen = (size_t)message_iov(&slot->message, slot->iov)};
    zc_message_pinned(&s->zc, slot->iov, slot->mh.msg_iovlen);
    /* One send in flight at a time keeps the stream in order, short sends included;
     * notifications of earlier sends arrive meanwhile. */
    while (slot->mh.msg_iovlen > 0) {
        slot->piece = msg_piece(&slot->mh, slot->part);
        prep_send(&s->ring, s->fd, &slot->piece, index);
        slot->pending += 2; /* its result and its notification */
        uring_submit(&s->ring);
        int sent = 0;
        bool have_result = false;
        while (!have_result)
            reap(s, &sent, &have_result);
        if (sent >= 0) {
            iov_advance(&slot->mh, (size_t)sent);
            continue;
        }
        if (sent == -ENOBUFS) {
            /* Out of option memory for pinned pages: notifications free it. */
            s->counters.zc_enobufs++;
            for (size_t i = 0; i < s->count; i++)
                if (i != index && !drain(s, &s->slots[i], stall_deadline()))
                    die("zero-copy notifications stalled for %.0f s under ENOBUFS", URING_STALL_S);
            continue;
        }
        if (send_failure(-sent, "io_uring sendmsg_zc") == IO_PEER_CLOSED)
            return IO_PEER_CLOSED;
    }
    return IO_OK;
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    /* Notifications still missing after the bound stay visible as sends > completed. */
    uint64_t deadline = now_ns() + (uint64_t)(FINAL_WAIT_S * 1e9);
    for (size_t i = 0; i < s->count && drain(s, &s->slots[i], deadline); i++)
        continue;
    *counters = s->counters;
    io_uring_queue_exit(&s->ring);
    for (size_t i = 0; i < s->count; i++)
        message_free(&s->slots[i].message);
    free(s->slots);
    free(s);
}
