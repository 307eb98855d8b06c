/* A connection an event loop serves without ever blocking on it (select, poll,
 * epoll): its socket is non-blocking, and what has arrived of a request and
 * what has left of a response are kept here, so that a slow connection holds
 * only itself back and the loop says which way it waits next. */
#include "errors.h"
#include "model.h"
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>

void loop_connection_open(struct loop_connection *c, int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
        die_errno("fcntl O_NONBLOCK");
    *c = (struct loop_connection){.fd = fd};
}

/* Sends what the socket takes of the responses owed; false when it would block. */
static bool send_owed(struct loop_connection *c, const struct model_config *config, enum loop_wait *ended)
{
    while (c->owed) {
        ssize_t sent = send(c->fd, config->response + c->sent, config->size - c->sent, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            *ended = LOOP_WAIT_WRITE;
            return false;
        }
        if (sent < 0 && (errno == EPIPE || errno == ECONNRESET)) {
            *ended = LOOP_CLOSED;
            return false;
        }
        if (sent < 0)
            die_errno("send");
        c->sent += (size_t)sent;
        if (c->sent == config->size) {
            c->sent = 0;
            c->owed--;
        }
    }
    return true;
}

enum loop_wait loop_connection_serve(struct loop_connection *c, const struct model_config *config)
{
    enum loop_wait ended = LOOP_WAIT_READ;
    for (;;) {
        if (!send_owed(c, config, &ended))
            return ended;
        char arrived[256];
        ssize_t got = recv(c->fd, arrived, sizeof arrived, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return LOOP_WAIT_READ;
        if (got == 0 || (got < 0 && errno == ECONNRESET))
            return LOOP_CLOSED;
        if (got < 0)
            die_errno("recv");
        size_t bytes = c->request_bytes + (size_t)got;
        c->owed += bytes / REQUEST_SIZE;
        c->request_bytes = bytes % REQUEST_SIZE;
    }
}
