/* poll: one thread waits on every connection at once with poll(): no descriptor
 * limit of its own, but the whole array goes to the kernel and back on every call. */
#include "model.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

const char *const MODEL_NAME = "poll";
const unsigned MODEL_MAX_CONNECTIONS = 0;

void model_serve(const struct model_config *config)
{
    /* Slot 0 is the listener until every connection is accepted. */
    struct pollfd *watched = calloc(config->connections + 1, sizeof *watched);
    if (!watched)
        die("out of memory");
    watched[0] = (struct pollfd){.fd = config->listen_fd, .events = POLLIN};
    unsigned count = 1, accepted = 0;
    for (;;) {
        if (poll(watched, count, -1) < 0) {
            if (errno == EINTR)
                continue;
            die_errno("poll");
        }
        for (unsigned i = 1; i < count;) {
            if ((watched[i].revents & (POLLIN | POLLHUP | POLLERR)) && !answer_request(watched[i].fd, config)) {
                if (close(watched[i].fd) != 0)
                    die_errno("close");
                watched[i] = watched[--count];
                continue;
            }
            i++;
        }
        if (watched[0].revents & POLLIN) {
            watched[count++] = (struct pollfd){.fd = accept_connection(config), .events = POLLIN};
            if (++accepted == config->connections)
                watched[0].fd = -1; /* poll ignores negative descriptors */
        }
    }
}
