/* uring_send: the 8-field message through io_uring IORING_OP_SENDMSG.  The
 * copies are one_copy's (the kernel gathers the fields into socket buffers);
 * what differs is the interface: a submission and a completion on a ring
 * instead of a system call per message. */
#include "copy_sender.h"
#include "sender.h"
#include "uring.h"

#include <stdlib.h>

const char *const VARIANT_NAME = "uring_send";
const bool SENDS_FROM_FILE = false;

struct sender {
    struct copy_sender from;
    struct io_uring ring;
};

const char *sender_unavailable(void)
{
    return uring_opcode_unavailable(IORING_OP_SENDMSG, "IORING_OP_SENDMSG");
}

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    copy_sender_init(&s->from, config);
    uring_init(&s->ring, 4);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    struct message *m = copy_sender_message(&s->from, seq);
    struct iovec iov[FIELD_COUNT];
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)message_iov(m, iov)};
    struct iovec part[FIELD_COUNT];
    /* One request in flight: TCP must see the bytes in order, short sends included. */
    while (mh.msg_iovlen > 0) {
        struct msghdr piece = msg_piece(&mh, part);
        io_uring_prep_sendmsg(uring_sqe(&s->ring), s->from.fd, &piece, MSG_NOSIGNAL);
        uring_submit(&s->ring);
        struct io_uring_cqe *cqe = uring_next(&s->ring);
        int sent = cqe->res;
        io_uring_cqe_seen(&s->ring, cqe);
        if (sent >= 0) {
            iov_advance(&mh, (size_t)sent);
            continue;
        }
        if (send_failure(-sent, "io_uring sendmsg") == IO_PEER_CLOSED)
            return IO_PEER_CLOSED;
    }
    return IO_OK;
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    io_uring_queue_exit(&s->ring);
    copy_sender_finish(&s->from, counters);
    free(s);
}
