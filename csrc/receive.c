/* The client's side of the stream, in the receive mode under test:
 *   copy      recv() into the client's buffer (the receiver's copy);
 *   truncate  recv(MSG_TRUNC): TCP discards the bytes without copying them
 *             to user space; with --verify they are first looked at with
 *             MSG_PEEK (a copy), so verified runs measure more than plain ones;
 *   mmap      TCP_ZEROCOPY_RECEIVE maps whole, page-aligned payload pages into
 *             a region mapped on the socket and, given a copy buffer (Linux
 *             5.11+, as neper's tcp_stream -z), copies what cannot be mapped
 *             (a partial page, less than a page queued) in the same call; what
 *             is left is read with recv(); the three are counted apart.
 * Every byte that arrives, mapped or copied, can be checked against the pattern. */
#include "receive.h"

#include "errors.h"
#include "options.h"
#include "pattern.h"
#include "transfer.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STREAM_CHUNK (256u << 10)
#define MAP_BYTES (2u << 20)
#define IDLE_TIMEOUT_MS 10000

/* linux/tcp.h's struct tcp_zerocopy_receive (glibc's stops at recv_skip_hint): the copy buffer is Linux 5.11's. */
struct zerocopy_receive {
    uint64_t address;
    uint32_t length, recv_skip_hint, inq;
    int32_t err;
    uint64_t copybuf_address;
    int32_t copybuf_len;
    uint32_t flags;
    uint64_t msg_control, msg_controllen;
    uint32_t msg_flags, reserved;
};

void receiver_io_open(struct receiver_io *io, int fd, const struct options *opt, uint64_t period)
{
    *io = (struct receiver_io){
        .fd = fd, .mode = opt->receive, .verify = opt->verify, .size = opt->size, .period = period,
        /* rr reads one response at a time; stream drains whatever has arrived. */
        .capacity = opt->mode == MODE_RR ? (size_t)opt->size : STREAM_CHUNK,
    };
    /* Page-aligned, as the standard tools' buffers are: malloc's 16-byte header would put the buffer 16 bytes
     * past a page boundary, and on CPUs with FSRM the kernel's copy_to_user (rep movsb) then runs several times
     * slower whenever the socket's data sit at the same offset within their pages: a cost of the harness, not of
     * the sending paths the study compares. */
    io->buffer = page_alloc_or_die(io->capacity);
    if (io->mode == RECEIVE_MMAP) {
        io->map_bytes = MAP_BYTES;
        io->map = mmap(NULL, io->map_bytes, PROT_READ, MAP_SHARED, fd, 0);
        if (io->map == MAP_FAILED)
            die("cannot map the socket for TCP_ZEROCOPY_RECEIVE: %s", strerror(errno));
    }
}

void receiver_io_close(struct receiver_io *io)
{
    if (io->map && munmap(io->map, io->map_bytes) != 0)
        die_errno("munmap");
    free(io->buffer);
    io->buffer = NULL;
    io->map = NULL;
}

/* Counts the bytes of data[0..len) that differ from the pattern AHEAD bytes past the current position. */
static void check_ahead(struct receiver_io *io, uint64_t ahead, const uint8_t *data, size_t len)
{
    if (!io->verify)
        return;
    uint64_t at = io->position + ahead, seq = at / io->size, offset = at % io->size;
    uint64_t wrong = 0;
    for (size_t i = 0; i < len; i++) {
        uint64_t message = io->period ? seq % io->period : seq;
        wrong += data[i] != pattern_byte(message, offset);
        if (++offset == io->size) {
            offset = 0;
            seq++;
        }
    }
    io->mismatches += wrong;
}

/* The same at the current position. */
static void check(struct receiver_io *io, const uint8_t *data, size_t len)
{
    check_ahead(io, 0, data, len);
}

/* recv() that survives EINTR; 0 when the peer closed the stream. */
static size_t recv_some(struct receiver_io *io, size_t len, int flags)
{
    for (;;) {
        ssize_t got = recv(io->fd, io->buffer, len, flags);
        io->calls++;
        if (got >= 0)
            return (size_t)got;
        if (errno == EINTR)
            continue;
        if (peer_gone(errno))
            return 0;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            die("receive timed out: the peer stopped sending");
        die_errno("recv");
    }
}

static size_t receive_truncated(struct receiver_io *io, size_t want)
{
    if (!io->verify)
        return recv_some(io, want, MSG_TRUNC);
    size_t seen = recv_some(io, want, MSG_PEEK);
    check(io, io->buffer, seen);
    /* Discard exactly what was checked: MSG_TRUNC never takes more than asked. */
    for (size_t discarded = 0; discarded < seen;) {
        size_t got = recv_some(io, seen - discarded, MSG_TRUNC);
        if (got == 0)
            die("the stream ended inside data already received");
        discarded += got;
    }
    return seen;
}

/* Waits until the socket has data or ended; false on the idle timeout. */
static bool wait_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
        int ready = poll(&p, 1, IDLE_TIMEOUT_MS);
        if (ready > 0)
            return true;
        if (ready == 0)
            return false;
        if (errno != EINTR)
            die_errno("poll");
    }
}

static size_t receive_mapped(struct receiver_io *io, size_t want)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t whole_pages = (want < io->map_bytes ? want : io->map_bytes) / page * page;
    for (bool waited = false; whole_pages > 0;) {
        struct zerocopy_receive zc = {.address = (uint64_t)(uintptr_t)io->map, .length = (uint32_t)whole_pages,
                                      .copybuf_address = (uint64_t)(uintptr_t)io->buffer,
                                      .copybuf_len = (int32_t)io->capacity};
        socklen_t len = sizeof zc;
        io->calls++;
        if (getsockopt(io->fd, IPPROTO_TCP, TCP_ZEROCOPY_RECEIVE, &zc, &len) != 0) {
            if (errno == EINTR)
                continue;
            if (peer_gone(errno))
                return 0;
            die("TCP_ZEROCOPY_RECEIVE: %s", strerror(errno));
        }
        if (zc.err && peer_gone(-zc.err))
            return 0;
        if (zc.err || zc.copybuf_len < 0)
            die("TCP_ZEROCOPY_RECEIVE: %s", strerror(zc.err ? -zc.err : -zc.copybuf_len));
        if (zc.length > 0 || zc.copybuf_len > 0) {
            /* The mapped pages come first in the stream, then what the call copied. */
            check(io, io->map, zc.length);
            check_ahead(io, zc.length, io->buffer, (size_t)zc.copybuf_len);
            /* Unmap now rather than at the next call: the pages go back to the socket's memory. */
            if (zc.length > 0 && madvise(io->map, zc.length, MADV_DONTNEED) != 0)
                die_errno("madvise");
            io->mapped += zc.length;
            io->copybuf += (uint64_t)zc.copybuf_len;
            return zc.length + (size_t)zc.copybuf_len;
        }
        if (zc.recv_skip_hint > 0) {
            size_t got = recv_some(io, zc.recv_skip_hint < want ? zc.recv_skip_hint : want, 0);
            check(io, io->buffer, got);
            io->copied += got;
            return got;
        }
        /* Nothing queued yet: wait for data once, then let recv() tell data from the end. */
        if (waited)
            break;
        if (!wait_readable(io->fd))
            die("receive timed out: the peer stopped sending");
        waited = true;
    }
    size_t got = recv_some(io, want, 0);
    check(io, io->buffer, got);
    io->copied += got;
    return got;
}

size_t receive_some(struct receiver_io *io, size_t want)
{
    if (want > io->capacity)
        want = io->capacity;
    size_t got;
    switch (io->mode) {
    case RECEIVE_TRUNCATE:
        got = receive_truncated(io, want);
        break;
    case RECEIVE_MMAP:
        got = receive_mapped(io, want);
        break;
    default:
        got = recv_some(io, want, 0);
        check(io, io->buffer, got);
    }
    io->position += got;
    return got;
}
