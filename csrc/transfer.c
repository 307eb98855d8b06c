/* Moving bytes over a connected socket in full: EINTR and short transfers are retried, and a peer that
 * went away is a status (the normal end of a session), never an error. */
#include "transfer.h"

#include "errors.h"
#include "limits.h"

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

static size_t datagram_bytes, datagram_tail;

void use_datagrams(size_t bytes, size_t tail)
{
    datagram_bytes = bytes;
    datagram_tail = tail;
}

size_t send_piece(size_t left)
{
    return !datagram_bytes || left <= datagram_bytes + datagram_tail ? left : datagram_bytes;
}

struct msghdr msg_piece(const struct msghdr *mh, struct iovec part[FIELD_COUNT])
{
    struct msghdr piece = *mh;
    if (!datagram_bytes)
        return piece;
    size_t all = 0, n = 0;
    for (size_t i = 0; i < mh->msg_iovlen; i++)
        all += mh->msg_iov[i].iov_len;
    size_t left = send_piece(all);
    for (; n < mh->msg_iovlen && n < FIELD_COUNT && left > 0; n++) {
        part[n] = mh->msg_iov[n];
        if (part[n].iov_len > left)
            part[n].iov_len = left;
        left -= part[n].iov_len;
    }
    piece.msg_iov = part;
    piece.msg_iovlen = n;
    return piece;
}

enum io_status sendmsg_all(int fd, struct iovec *iov, int iovcnt, int flags,
                           void (*on_enobufs)(void *ctx), void *ctx, uint64_t *calls)
{
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
    struct iovec part[FIELD_COUNT];
    while (mh.msg_iovlen > 0) {
        struct msghdr piece = msg_piece(&mh, part);
        ssize_t sent = sendmsg(fd, &piece, flags | MSG_NOSIGNAL);
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
        ssize_t sent = send(fd, p, send_piece(len), MSG_NOSIGNAL);
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
