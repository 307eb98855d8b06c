/* epoll: one thread waits on every connection at once with a level-triggered
 * epoll instance: the kernel keeps the interest list and hands back only the
 * connections that are ready.  Connections never block it (loop_connection.c). */
#include "errors.h"
#include "model.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

const char *const MODEL_NAME = "epoll";
const unsigned MODEL_MAX_CONNECTIONS = 0;

#define EVENTS 64

static void watch(int epoll_fd, int op, int fd, uint32_t events, void *data)
{
    struct epoll_event event = {.events = events, .data.ptr = data};
    if (epoll_ctl(epoll_fd, op, fd, &event) != 0)
        die_errno("epoll_ctl");
}

void model_serve(const struct model_config *config)
{
    int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0)
        die_errno("epoll_create1");
    struct loop_connection *connections = calloc(config->connections, sizeof *connections);
    if (!connections)
        die("out of memory");
    watch(epoll_fd, EPOLL_CTL_ADD, config->listen_fd, EPOLLIN, NULL); /* NULL: the listener */
    unsigned accepted = 0;
    for (;;) {
        struct epoll_event events[EVENTS];
        int ready = epoll_wait(epoll_fd, events, EVENTS, -1);
        if (ready < 0) {
            if (errno == EINTR)
                continue;
            die_errno("epoll_wait");
        }
        for (int i = 0; i < ready; i++) {
            struct loop_connection *c = events[i].data.ptr;
            if (!c) {
                c = &connections[accepted++];
                loop_connection_open(c, accept_connection(config));
                watch(epoll_fd, EPOLL_CTL_ADD, c->fd, EPOLLIN, c);
                if (accepted == config->connections && epoll_ctl(epoll_fd, EPOLL_CTL_DEL, config->listen_fd, NULL))
                    die_errno("epoll_ctl");
                continue;
            }
            bool writing = events[i].events & EPOLLOUT;
            switch (loop_connection_serve(c, config)) {
            case LOOP_CLOSED: /* closing removes it from the interest list */
                if (close(c->fd) != 0)
                    die_errno("close");
                break;
            case LOOP_WAIT_WRITE:
                if (!writing)
                    watch(epoll_fd, EPOLL_CTL_MOD, c->fd, EPOLLOUT, c);
                break;
            case LOOP_WAIT_READ:
                if (writing)
                    watch(epoll_fd, EPOLL_CTL_MOD, c->fd, EPOLLIN, c);
                break;
            }
        }
    }
}
