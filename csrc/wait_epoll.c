/* epoll: one thread waits on every connection at once with a level-triggered
 * epoll instance: the kernel keeps the interest list and hands back only the
 * connections that are ready. */
#include "model.h"

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

const char *const MODEL_NAME = "epoll";
const unsigned MODEL_MAX_CONNECTIONS = 0;

#define EVENTS 64

static void watch(int epoll_fd, int fd)
{
    struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0)
        die_errno("epoll_ctl");
}

void model_serve(const struct model_config *config)
{
    int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0)
        die_errno("epoll_create1");
    watch(epoll_fd, config->listen_fd);
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
            int fd = events[i].data.fd;
            if (fd == config->listen_fd) {
                watch(epoll_fd, accept_connection(config));
                if (++accepted == config->connections && epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, NULL) != 0)
                    die_errno("epoll_ctl");
            } else if (!answer_request(fd, config)) {
                /* Closing removes it from the interest list. */
                if (close(fd) != 0)
                    die_errno("close");
            }
        }
    }
}
