/* poll: one thread waits on every connection at once with poll(): no descriptor
 * limit of its own, but the whole array goes to the kernel and back on every call.
 * Connections never block it (loop_connection.c). */
#include "errors.h"
#include "model.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

const char *const MODEL_NAME = "poll";
const unsigned MODEL_MAX_CONNECTIONS = 0;

void model_serve(const struct model_config *config)
{
    /* Slot 0 is the listener until every connection is accepted; slot i > 0 is connections[i]. */
    struct pollfd *watched = calloc(config->connections + 1, sizeof *watched);
    struct loop_connection *connections = calloc(config->connections + 1, sizeof *connections);
    if (!watched || !connections)
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
            if (watched[i].revents & (POLLIN | POLLOUT | POLLHUP | POLLERR)) {
                enum loop_wait next = loop_connection_serve(&connections[i], config);
                if (next == LOOP_CLOSED) {
                    if (close(watched[i].fd) != 0)
                        die_errno("close");
                    count--;
                    watched[i] = watched[count];
                    connections[i] = connections[count];
                    continue;
                }
                watched[i].events = next == LOOP_WAIT_WRITE ? POLLOUT : POLLIN;
            }
            i++;
        }
        if (watched[0].revents & POLLIN) {
            loop_connection_open(&connections[count], accept_connection(config));
            watched[count] = (struct pollfd){.fd = connections[count].fd, .events = POLLIN};
            count++;
            if (++accepted == config->connections)
                watched[0].fd = -1; /* poll ignores negative descriptors */
        }
    }
}
