/* Setting up TCP connections within a bound (listening, accepting, connecting with retries while the
 * server starts), the limits and timeouts they live under, and what TCP_INFO says about one. */
#include "copylab.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct endpoint {
    struct sockaddr_storage addr;
    socklen_t len;
};

static void resolve(const char *address, uint16_t port, struct endpoint *ep)
{
    memset(ep, 0, sizeof *ep);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ep->addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ep->addr;
    if (inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        ep->len = sizeof *v4;
    } else if (inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        ep->len = sizeof *v6;
    } else {
        die_usage("'%s' is not an IPv4 or IPv6 address", address);
    }
}

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

static int tcp_socket(int family)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die_errno("socket");
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
    return fd;
}

int listen_on(const char *address, uint16_t port, unsigned backlog)
{
    struct endpoint ep;
    resolve(address, port, &ep);
    int fd = tcp_socket(ep.addr.ss_family);
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        die_errno("setsockopt SO_REUSEADDR");
    if (bind(fd, (struct sockaddr *)&ep.addr, ep.len) != 0)
        die("cannot bind %s port %u: %s", address, port, strerror(errno));
    if (listen(fd, (int)backlog) != 0)
        die_errno("listen");
    return fd;
}

void wait_fd(int fd, short events, double timeout_s, const char *what)
{
    struct pollfd p = {.fd = fd, .events = events};
    uint64_t deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline)
            die("%s timed out after %.1f s", what, timeout_s);
        int ms = (int)((deadline - now) / 1000000ULL) + 1;
        int ready = poll(&p, 1, ms);
        if (ready > 0)
            return;
        if (ready < 0 && errno != EINTR)
            die_errno("poll");
    }
}

int accept_within(int listen_fd, double timeout_s)
{
    for (;;) {
        wait_fd(listen_fd, POLLIN, timeout_s, "waiting for the client");
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (errno != EINTR && errno != ECONNABORTED)
            die_errno("accept");
    }
}

int connect_within(const char *address, uint16_t port, double timeout_s)
{
    struct endpoint ep;
    resolve(address, port, &ep);
    uint64_t deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
    for (;;) {
        int fd = tcp_socket(ep.addr.ss_family);
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
            die_errno("fcntl");
        int err = 0;
        if (connect(fd, (struct sockaddr *)&ep.addr, ep.len) != 0) {
            err = errno;
            if (err == EINPROGRESS || err == EINTR) {
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                uint64_t now = now_ns();
                int ms = now < deadline ? (int)((deadline - now) / 1000000ULL) + 1 : 0;
                int ready;
                do
                    ready = poll(&p, 1, ms);
                while (ready < 0 && errno == EINTR);
                socklen_t len = sizeof err;
                if (ready < 0)
                    die_errno("poll");
                err = ETIMEDOUT;
                if (ready > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                    die_errno("getsockopt SO_ERROR");
            }
        }
        if (err == 0) {
            if (fcntl(fd, F_SETFL, flags) != 0)
                die_errno("fcntl");
            return fd;
        }
        close(fd);
        /* The server may be a moment from listen(): retry refusals until the deadline. */
        if (err != ECONNREFUSED || now_ns() >= deadline)
            die("cannot connect to %s port %u: %s", address, port, strerror(err));
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

void raise_descriptor_limit(uint64_t needed, const char *why)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
        die_errno("getrlimit");
    if (limit.rlim_cur >= needed)
        return;
    rlim_t hard = limit.rlim_max;
    limit.rlim_cur = needed;
    /* Raising the hard limit too needs CAP_SYS_RESOURCE (root has it). */
    if (hard != RLIM_INFINITY && hard < needed)
        limit.rlim_max = needed;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
        die_usage("%s needs %llu descriptors and the limit (hard %llu) cannot be raised: %s "
                  "(raise it with ulimit -Hn or in limits.conf)",
                  why, (unsigned long long)needed, (unsigned long long)hard, strerror(errno));
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
