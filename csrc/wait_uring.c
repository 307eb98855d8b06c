/* uring: one thread drives every connection through one io_uring.  A multishot
 * accept takes the connections, a multishot receive per connection lands its
 * requests in buffers the kernel picks from a provided buffer ring, and the
 * responses go out as send requests on the same ring: while the ring is busy,
 * one io_uring_enter() serves many connections and no call waits on one. */
#include "errors.h"
#include "model.h"
#include "session.h"
#include "transfer.h"
#include "uring.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

const char *const MODEL_NAME = "uring";
const unsigned MODEL_MAX_CONNECTIONS = 0;

#define RING_ENTRIES 1024
#define BUFFER_COUNT 1024 /* a power of two, as a buffer ring's size must be */
#define BUFFER_SIZE 256
#define BUFFER_GROUP 0

enum operation { OP_ACCEPT = 1, OP_RECEIVE, OP_SEND, OP_CANCEL };

struct connection {
    int fd;               /* -1 once the peer closed */
    size_t request_bytes; /* of the request now arriving */
    uint64_t owed;        /* requests received and not yet answered */
    size_t sent;          /* of the response now leaving */
    bool sending;         /* one send in flight at a time keeps the responses in order */
};

struct server {
    struct io_uring ring;
    struct io_uring_buf_ring *buffers;
    char *pool;
    struct connection *connections;
    unsigned accepted;
    const struct model_config *config;
};

static uint64_t tag(enum operation op, unsigned index)
{
    return (uint64_t)op << 32 | index;
}

static void arm_receive(struct server *s, unsigned index)
{
    struct io_uring_sqe *sqe = uring_sqe(&s->ring);
    io_uring_prep_recv_multishot(sqe, s->connections[index].fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BUFFER_GROUP;
    io_uring_sqe_set_data64(sqe, tag(OP_RECEIVE, index));
}

static void send_rest(struct server *s, unsigned index)
{
    struct connection *c = &s->connections[index];
    struct io_uring_sqe *sqe = uring_sqe(&s->ring);
    io_uring_prep_send(sqe, c->fd, s->config->response + c->sent, s->config->size - c->sent, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, tag(OP_SEND, index));
    c->sending = true;
}

static void give_back(struct server *s, unsigned buffer)
{
    io_uring_buf_ring_add(s->buffers, s->pool + (size_t)buffer * BUFFER_SIZE, BUFFER_SIZE, (unsigned short)buffer,
                          io_uring_buf_ring_mask(BUFFER_COUNT), 0);
    io_uring_buf_ring_advance(s->buffers, 1);
}

static void closed(struct connection *c)
{
    if (c->fd >= 0 && close(c->fd) != 0)
        die_errno("close");
    c->fd = -1;
}

static void on_accept(struct server *s, const struct io_uring_cqe *cqe)
{
    if (cqe->res == -ECANCELED && s->accepted == s->config->connections)
        return; /* withdrawn once every connection was in (below) */
    if (cqe->res < 0)
        die("multishot accept: %s", strerror(-cqe->res));
    if (s->accepted == s->config->connections)
        die("a connection beyond the %u the client announced", s->config->connections);
    unsigned index = s->accepted++;
    s->connections[index] = (struct connection){.fd = cqe->res};
    arm_receive(s, index);
    connection_taken(s->config);
    if ((cqe->flags & IORING_CQE_F_MORE) && s->accepted == s->config->connections) {
        /* Every connection is in: withdraw the accept.  Left armed, it would hold the listening socket past the
         * process's end, until the kernel has torn the ring down, and keep the port from the next server. */
        struct io_uring_sqe *sqe = uring_sqe(&s->ring);
        io_uring_prep_cancel64(sqe, tag(OP_ACCEPT, 0), 0);
        io_uring_sqe_set_data64(sqe, tag(OP_CANCEL, 0));
    }
    if (!(cqe->flags & IORING_CQE_F_MORE) && s->accepted < s->config->connections) {
        struct io_uring_sqe *sqe = uring_sqe(&s->ring);
        io_uring_prep_multishot_accept(sqe, s->config->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        io_uring_sqe_set_data64(sqe, tag(OP_ACCEPT, 0));
    }
}

static void on_receive(struct server *s, unsigned index, const struct io_uring_cqe *cqe)
{
    struct connection *c = &s->connections[index];
    if (cqe->flags & IORING_CQE_F_BUFFER)
        give_back(s, cqe->flags >> IORING_CQE_BUFFER_SHIFT);
    if (c->fd < 0)
        return;
    if (cqe->res == 0 || cqe->res == -ECONNRESET) { /* the session's end */
        closed(c);
        return;
    }
    if (cqe->res < 0 && cqe->res != -ENOBUFS)
        die("multishot receive: %s", strerror(-cqe->res));
    if (cqe->res > 0) {
        size_t arrived = c->request_bytes + (size_t)cqe->res;
        c->owed += arrived / REQUEST_SIZE;
        c->request_bytes = arrived % REQUEST_SIZE;
        if (c->owed && !c->sending)
            send_rest(s, index);
    }
    /* Out of buffers (ENOBUFS) or otherwise done, the receive ends: arm it again. */
    if (!(cqe->flags & IORING_CQE_F_MORE) && c->fd >= 0)
        arm_receive(s, index);
}

static void on_send(struct server *s, unsigned index, const struct io_uring_cqe *cqe)
{
    struct connection *c = &s->connections[index];
    c->sending = false;
    if (c->fd < 0)
        return;
    if (cqe->res == -EPIPE || cqe->res == -ECONNRESET) {
        closed(c);
        return;
    }
    if (cqe->res < 0)
        die("send: %s", strerror(-cqe->res));
    c->sent += (size_t)cqe->res;
    if (c->sent == s->config->size) {
        c->sent = 0;
        c->owed--;
    }
    if (c->owed)
        send_rest(s, index);
}

static void setup(struct server *s, const struct model_config *config)
{
    *s = (struct server){.config = config};
    struct io_uring_params params = {.flags = IORING_SETUP_CQSIZE, .cq_entries = 4 * RING_ENTRIES};
    int err = io_uring_queue_init_params(RING_ENTRIES, &s->ring, &params);
    if (err < 0)
        die("io_uring_queue_init: %s", strerror(-err));
    size_t ring_bytes = BUFFER_COUNT * sizeof(struct io_uring_buf);
    s->buffers = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s->buffers == MAP_FAILED)
        die_errno("mmap");
    struct io_uring_buf_reg registration = {
        .ring_addr = (uint64_t)(uintptr_t)s->buffers, .ring_entries = BUFFER_COUNT, .bgid = BUFFER_GROUP};
    err = io_uring_register_buf_ring(&s->ring, &registration, 0);
    if (err < 0)
        die("io_uring_register_buf_ring: %s", strerror(-err));
    io_uring_buf_ring_init(s->buffers);
    s->pool = page_alloc_or_die((size_t)BUFFER_COUNT * BUFFER_SIZE);
    for (unsigned i = 0; i < BUFFER_COUNT; i++)
        give_back(s, i);
    s->connections = calloc(config->connections, sizeof *s->connections);
    if (!s->connections)
        die("out of memory");
}

void model_serve(const struct model_config *config)
{
    static struct server s;
    setup(&s, config);
    struct io_uring_sqe *sqe = uring_sqe(&s.ring);
    io_uring_prep_multishot_accept(sqe, config->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, tag(OP_ACCEPT, 0));
    for (;;) {
        int err = io_uring_submit_and_wait(&s.ring, 1);
        if (err < 0 && err != -EINTR)
            die("io_uring_submit_and_wait: %s", strerror(-err));
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&s.ring, head, cqe)
        {
            uint64_t data = io_uring_cqe_get_data64(cqe);
            unsigned index = (unsigned)data;
            switch ((enum operation)(data >> 32)) {
            case OP_ACCEPT:
                on_accept(&s, cqe);
                break;
            case OP_RECEIVE:
                on_receive(&s, index, cqe);
                break;
            case OP_SEND:
                on_send(&s, index, cqe);
                break;
            case OP_CANCEL: /* whether it found the accept or it had ended already, nothing waits on it */
                break;
            }
            seen++;
        }
        io_uring_cq_advance(&s.ring, seen);
    }
}

/* A ring that takes a provided buffer ring and runs a multishot receive on a socket pair (kernel 6.0 on). */
const char *model_unavailable(void)
{
    static char why[160];
    const char *opcode = uring_opcode_unavailable(IORING_OP_RECV, "IORING_OP_RECV");
    if (opcode)
        return opcode;
    struct io_uring ring;
    int err = io_uring_queue_init(4, &ring, 0);
    if (err < 0) {
        snprintf(why, sizeof why, "io_uring_setup: %s", strerror(-err));
        return why;
    }
    struct io_uring_buf_ring *buffers = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffers == MAP_FAILED)
        die_errno("mmap");
    static char pool[64];
    struct io_uring_buf_reg registration = {.ring_addr = (uint64_t)(uintptr_t)buffers, .ring_entries = 1};
    err = io_uring_register_buf_ring(&ring, &registration, 0);
    int pair[2] = {-1, -1};
    const char *reason = NULL;
    if (err < 0) {
        snprintf(why, sizeof why, "this kernel's io_uring has no provided buffer rings (%s)", strerror(-err));
        reason = why;
    } else if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        die_errno("socketpair");
    } else {
        io_uring_buf_ring_init(buffers);
        io_uring_buf_ring_add(buffers, pool, sizeof pool, 0, io_uring_buf_ring_mask(1), 0);
        io_uring_buf_ring_advance(buffers, 1);
        struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
        io_uring_prep_recv_multishot(sqe, pair[0], NULL, 0, 0);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        if (send_all(pair[1], "x", 1) != IO_OK)
            die("send to a socket pair");
        struct io_uring_cqe *cqe;
        err = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &(struct __kernel_timespec){.tv_sec = 2}, NULL);
        if (err < 0 || cqe->res <= 0 || !(cqe->flags & IORING_CQE_F_MORE)) {
            snprintf(why, sizeof why, "this kernel's io_uring has no multishot receive (%s)",
                     strerror(err < 0 ? -err : cqe->res < 0 ? -cqe->res : EOPNOTSUPP));
            reason = why;
        }
    }
    for (int i = 0; i < 2; i++)
        if (pair[i] >= 0 && close(pair[i]) != 0)
            die_errno("close");
    io_uring_queue_exit(&ring);
    if (munmap(buffers, 4096) != 0)
        die_errno("munmap");
    return reason;
}
