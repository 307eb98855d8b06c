/* Setting up TCP connections within a bound (listening, accepting, connecting with retries while the
 * server starts) and the descriptor limit they live under; what is set on each socket is socket_options.c's. */
#include "clock.h"
#include "connection.h"
#include "errors.h"
#include "socket_options.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
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

static int tcp_socket(int family)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die_errno("socket");
    socket_options_apply(fd);
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
        if (close(fd) != 0)
            die_errno("close");
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
