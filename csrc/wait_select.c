/* select: one thread waits on every connection at once with select(), whose
 * descriptor sets hold only descriptors below FD_SETSIZE and are rebuilt and
 * scanned whole on every call.  Connections never block it (loop_connection.c). */
#include "errors.h"
#include "limits.h"
#include "model.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/select.h>
#include <unistd.h>

const char *const MODEL_NAME = "select";
/* Room below FD_SETSIZE for the process's own descriptors (stdio, listener, control, perf fifos). */
_Static_assert(SELECT_MAX_CONNECTIONS + 16 <= FD_SETSIZE, "select's limit leaves the server no descriptors");
const unsigned MODEL_MAX_CONNECTIONS = SELECT_MAX_CONNECTIONS;

void model_serve(const struct model_config *config)
{
    struct loop_connection *connections = calloc(config->connections, sizeof *connections);
    bool *writing = calloc(config->connections, sizeof *writing);
    if (!connections || !writing)
        die("out of memory");
    unsigned open = 0, accepted = 0;
    for (;;) {
        fd_set readable, writable;
        FD_ZERO(&readable);
        FD_ZERO(&writable);
        int highest = -1;
        if (accepted < config->connections) {
            FD_SET(config->listen_fd, &readable);
            highest = config->listen_fd;
        }
        for (unsigned i = 0; i < open; i++) {
            FD_SET(connections[i].fd, writing[i] ? &writable : &readable);
            highest = connections[i].fd > highest ? connections[i].fd : highest;
        }
        if (select(highest + 1, &readable, &writable, NULL, NULL) < 0) {
            if (errno == EINTR)
                continue;
            die_errno("select");
        }
        if (accepted < config->connections && FD_ISSET(config->listen_fd, &readable)) {
            int fd = accept_connection(config);
            if (fd >= FD_SETSIZE)
                die("descriptor %d is beyond select's FD_SETSIZE (%d)", fd, FD_SETSIZE);
            loop_connection_open(&connections[open], fd);
            writing[open++] = false;
            accepted++;
        }
        for (unsigned i = 0; i < open;) {
            int fd = connections[i].fd;
            if (FD_ISSET(fd, &readable) || FD_ISSET(fd, &writable)) {
                enum loop_wait next = loop_connection_serve(&connections[i], config);
                if (next == LOOP_CLOSED) {
                    if (close(fd) != 0)
                        die_errno("close");
                    open--;
                    connections[i] = connections[open];
                    writing[i] = writing[open];
                    continue;
                }
                writing[i] = next == LOOP_WAIT_WRITE;
            }
            i++;
        }
    }
}
