/* Moving bytes over a connected socket in full: EINTR and short transfers are retried, and a peer that
 * went away is a status (the normal end of a session), never an error. */
#include "copylab.h"

#include <errno.h>
#include <string.h>

bool peer_gone(int err)
{
    return err == EPIPE || err == ECONNRESET || err == ENOTCONN;
}

enum io_status send_failure(int err, const char *call)
{
    if (err == EINTR)
        return IO_OK;
    if (peer_gone(err))
        return IO_PEER_CLOSED;
    if (err == EAGAIN || err == EWOULDBLOCK)
        die("send timed out: the peer stopped reading");
    die("%s: %s", call, strerror(err));
}

void iov_advance(struct msghdr *mh, size_t sent)
{
    while (mh->msg_iovlen > 0 && sent >= mh->msg_iov->iov_len) {
        sent -= mh->msg_iov->iov_len;
        mh->msg_iov++;
        mh->msg_iovlen--;
    }
    if (mh->msg_iovlen > 0) {
        mh->msg_iov->iov_base = (char *)mh->msg_iov->iov_base + sent;
        mh->msg_iov->iov_len -= sent;
    }
}

enum io_status sendmsg_all(int fd, struct iovec *iov, int iovcnt, int flags,
                           void (*on_enobufs)(void *ctx), void *ctx, uint64_t *calls)
{
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
    while (mh.msg_iovlen > 0) {
        ssize_t sent = sendmsg(fd, &mh, flags | MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == ENOBUFS && on_enobufs) {
                on_enobufs(ctx);
                continue;
            }
            if (send_failure(errno, "sendmsg") == IO_PEER_CLOSED)
                return IO_PEER_CLOSED;
            continue;
        }
        if (calls)
            (*calls)++;
        /* A short send: skip what went out, continue with the rest. */
        iov_advance(&mh, (size_t)sent);
    }
    return IO_OK;
}

enum io_status send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t sent = send(fd, p, len, MSG_NOSIGNAL);
        if (sent < 0) {
            if (send_failure(errno, "send") == IO_PEER_CLOSED)
                return IO_PEER_CLOSED;
            continue;
        }
        p += sent;
        len -= (size_t)sent;
    }
    return IO_OK;
}

enum io_status recv_exact(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t got = recv(fd, p, len, 0);
        if (got == 0)
            return IO_PEER_CLOSED;
        if (got < 0) {
            if (errno == EINTR)
                continue;
            if (peer_gone(errno))
                return IO_PEER_CLOSED;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                die("receive timed out: the peer stopped sending");
            die_errno("recv");
        }
        p += got;
        len -= (size_t)got;
    }
    return IO_OK;
}
