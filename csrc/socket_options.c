/* What copylab sets on its TCP sockets and reads back from them: the congestion control and the buffer sizes
 * a sweep holds fixed (--congestion-control, --socket-buffer), Nagle's algorithm, I/O timeouts, and what
 * TCP_INFO says about a connection.  Both ends print what they read back, so a trial that ran on another
 * transport than the one asked for is seen to. */
#include "socket_options.h"

#include "errors.h"
#include "limits.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <time.h>

static const char *congestion_control;

void use_congestion_control(const char *name)
{
    congestion_control = name;
}

static uint64_t socket_buffer;

void use_socket_buffer(uint64_t bytes)
{
    if (bytes && bytes < SMALLEST_SOCKET_BUFFER)
        die_usage("--socket-buffer: %llu is below the %d bytes the kernel grants as asked (0 leaves the buffers to "
                  "the kernel)",
                  (unsigned long long)bytes, SMALLEST_SOCKET_BUFFER);
    socket_buffer = bytes;
}

uint64_t socket_buffer_in_use(void)
{
    return socket_buffer;
}

static int buffer_size(int fd, int name)
{
    int bytes;
    socklen_t len = sizeof bytes;
    if (getsockopt(fd, SOL_SOCKET, name, &bytes, &len) != 0)
        die_errno("getsockopt");
    return bytes;
}

/* The forcing option passes over net.core.[rw]mem_max where the caller may administer the network namespace
 * (root, or the user namespace that owns it); elsewhere the capped one is all there is, and a buffer the kernel
 * cut short would measure another transport than the one asked for. */
static void set_buffer(int fd, int forced, int capped, const char *which, const char *cap)
{
    int bytes = (int)socket_buffer;
    if (setsockopt(fd, SOL_SOCKET, forced, &bytes, sizeof bytes) != 0) {
        if (errno != EPERM)
            die_errno("setsockopt SO_*BUFFORCE");
        if (setsockopt(fd, SOL_SOCKET, capped, &bytes, sizeof bytes) != 0)
            die_errno("setsockopt SO_*BUF");
    }
    int held = buffer_size(fd, capped);
    if ((uint64_t)held != 2 * socket_buffer)
        die_usage("--socket-buffer %llu: the kernel holds a %s buffer of %d bytes, not twice that (without "
                  "CAP_NET_ADMIN /proc/sys/net/core/%s caps it)",
                  (unsigned long long)socket_buffer, which, held, cap);
}

struct socket_buffers socket_buffers_of(int fd)
{
    return (struct socket_buffers){(uint64_t)buffer_size(fd, SO_SNDBUF), (uint64_t)buffer_size(fd, SO_RCVBUF)};
}

void socket_options_apply(int fd)
{
    int one = 1;
    /* Requests, responses and the control connection's messages must not wait for Nagle (stream_data). */
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        die_errno("setsockopt TCP_NODELAY");
    /* Set before listen() or connect(): accepted connections inherit the listener's. */
    if (congestion_control &&
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion_control, (socklen_t)strlen(congestion_control)) != 0)
        die_usage("--congestion-control %s: %s", congestion_control,
                  errno == ENOENT   ? "the kernel offers no such algorithm (/proc/sys/net/ipv4/"
                                      "tcp_available_congestion_control lists those it does)"
                  : errno == EPERM ? "not allowed without CAP_NET_ADMIN (/proc/sys/net/ipv4/"
                                     "tcp_allowed_congestion_control lists those that are)"
                                   : strerror(errno));
    /* Set before listen() or connect(), as the window scale is chosen from the receive buffer then. */
    if (socket_buffer) {
        set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF, "send", "wmem_max");
        set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, "receive", "rmem_max");
    }
}

void send_buffer_apply(int fd)
{
    if (socket_buffer)
        set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF, "send", "wmem_max");
}

void set_io_timeout(int fd, double seconds)
{
    struct timeval tv = {.tv_sec = (time_t)seconds,
                         .tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6)};
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
        die_errno("setsockopt SO_SNDTIMEO/SO_RCVTIMEO");
}

void stream_data(int fd)
{
    int zero = 0;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero) != 0)
        die_errno("setsockopt TCP_NODELAY");
}

void congestion_control_of(int fd, char name[CONGESTION_NAME_BYTES])
{
    socklen_t len = CONGESTION_NAME_BYTES;
    memset(name, 0, CONGESTION_NAME_BYTES);
    if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0)
        die_errno("getsockopt TCP_CONGESTION");
    name[CONGESTION_NAME_BYTES - 1] = '\0';
}

struct tcp_report tcp_report(int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0)
        die_errno("getsockopt TCP_INFO");
    return (struct tcp_report){.retransmits = info.tcpi_total_retrans, .srtt_us = info.tcpi_rtt};
}
